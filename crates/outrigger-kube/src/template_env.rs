//! What the templates' `env` and `expandenv` functions may read of the process environment.
//!
//! istiod and istioctl hand their whole environment to whoever writes the templates. outrigger
//! passes the library an explicit map instead (the library never reads the environment): the
//! variables of [`DEFAULT_ALLOWED`], which Istio's own templates read, plus those named with
//! `--template-env NAME` (the value from this process's environment) or set with
//! `--template-env NAME=VALUE`. With `inject --kube`, where a ConfigMap author's templates run
//! in the user's shell, nothing else of the user's environment is exposed unless asked for.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use anyhow::{bail, Result};

/// Variables templates may always read: Istio's charts read `ENABLE_NATIVE_SIDECARS` (a feature
/// flag outrigger itself reads and acts on, so its value is no secret to the template).
pub const DEFAULT_ALLOWED: &[&str] = &["ENABLE_NATIVE_SIDECARS"];

static CURRENT: OnceLock<BTreeMap<String, String>> = OnceLock::new();

/// The template environment from the `--template-env` entries and `lookup` (the process
/// environment in production): allowed variables that are set, and the explicit values.
pub fn resolve(
    entries: &[String],
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<BTreeMap<String, String>> {
    let mut env = BTreeMap::new();
    let mut allow = |name: &str| {
        if let Some(v) = lookup(name) {
            env.insert(name.to_string(), v);
        }
    };
    for name in DEFAULT_ALLOWED {
        allow(name);
    }
    let mut explicit = Vec::new();
    for entry in entries {
        let (name, value) = match entry.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (entry.as_str(), None),
        };
        if name.is_empty() || name.contains(|c: char| c.is_whitespace()) {
            bail!("--template-env {entry:?}: expected NAME or NAME=VALUE");
        }
        match value {
            Some(v) => explicit.push((name.to_string(), v.to_string())),
            None => allow(name),
        }
    }
    env.extend(explicit);
    Ok(env)
}

/// Fix the template environment of this process from the `--template-env` entries (the first
/// call wins; commands call it once, before loading any configuration).
pub fn init(entries: &[String]) -> Result<()> {
    let env = resolve(entries, |k| std::env::var(k).ok())?;
    let _ = CURRENT.set(env);
    Ok(())
}

/// The template environment: as [`init`] fixed it, else the default allow-list's variables.
pub fn current() -> BTreeMap<String, String> {
    CURRENT
        .get_or_init(|| resolve(&[], |k| std::env::var(k).ok()).unwrap_or_default())
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake(k: &str) -> Option<String> {
        match k {
            "ENABLE_NATIVE_SIDECARS" => Some("true".into()),
            "HOME" => Some("/root".into()),
            "AWS_SECRET_ACCESS_KEY" => Some("hunter2".into()),
            _ => None,
        }
    }

    #[test]
    fn only_allowed_variables_are_passed() {
        let env = resolve(&[], fake).expect("valid");
        assert_eq!(
            env,
            BTreeMap::from([("ENABLE_NATIVE_SIDECARS".into(), "true".into())])
        );
        let env = resolve(&["HOME".into(), "UNSET".into(), "X=1=2".into()], fake).expect("valid");
        assert_eq!(
            env.keys().map(String::as_str).collect::<Vec<_>>(),
            ["ENABLE_NATIVE_SIDECARS", "HOME", "X"]
        );
        assert_eq!(env["X"], "1=2");
        assert!(!env.contains_key("AWS_SECRET_ACCESS_KEY"));
    }

    #[test]
    fn explicit_values_win_and_bad_entries_are_named() {
        let env = resolve(&["ENABLE_NATIVE_SIDECARS=false".into()], fake).expect("valid");
        assert_eq!(env["ENABLE_NATIVE_SIDECARS"], "false");
        let e = resolve(&["=x".into()], fake).unwrap_err().to_string();
        assert_eq!(e, "--template-env \"=x\": expected NAME or NAME=VALUE");
    }
}
