//! Loading injector settings: Istio's files when given, otherwise the embedded default.

use std::path::Path;

use anyhow::{Context, Result};

use outrigger_inject::config::defaults;
use outrigger_inject::config::inject_file::{self, InjectConfigShape};
use outrigger_inject::config::{self, InjectorConfig, Snapshot};
use outrigger_inject::decide::native::NativeMode;

/// The native-sidecar mode: the flag when given, else `ENABLE_NATIVE_SIDECARS` (`env`, unset is
/// `auto`) through the library's parser, with its warning for a value Istio does not know.
pub fn native_mode(flag: Option<NativeMode>, env: Option<&str>) -> (NativeMode, Option<String>) {
    match flag {
        Some(mode) => (mode, None),
        None => NativeMode::from_env(env),
    }
}

/// Offline native-sidecar decision: an explicit `true`/`false` wins, else (no flag or `auto`)
/// `ENABLE_NATIVE_SIDECARS=true` (`auto` and empty mean off offline). A value Istio does not know
/// is off, with a warning on stderr naming the variable and the accepted values.
pub fn native_sidecars_offline(flag: Option<NativeMode>) -> bool {
    let env = std::env::var("ENABLE_NATIVE_SIDECARS").ok();
    let flag = flag.filter(|m| *m != NativeMode::Auto);
    let (mode, warning) = native_mode(flag, env.as_deref().filter(|v| !v.is_empty()));
    if let Some(w) = warning {
        eprintln!("warning: {w} (accepted values: true, false, auto)");
    }
    mode == NativeMode::Enabled
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

/// Where one input of `outrigger inject` comes from: a file (read when needed), or text read
/// elsewhere (a ConfigMap key) with the name messages use for it.
#[derive(Debug, Clone, Copy)]
pub enum Input<'a> {
    /// A file given with a flag.
    File(&'a Path),
    /// Text and its name (`ConfigMap istio-system/istio key "mesh"`).
    Text {
        /// Name in messages.
        name: &'a str,
        /// The document.
        text: &'a str,
    },
}

impl Input<'_> {
    fn name(&self) -> String {
        match self {
            Input::File(p) => p.display().to_string(),
            Input::Text { name, .. } => name.to_string(),
        }
    }

    fn text(&self) -> Result<String> {
        match self {
            Input::File(p) => read(p),
            Input::Text { text, .. } => Ok(text.to_string()),
        }
    }
}

/// Display name of an optional input (`(embedded)` when absent).
fn shown(p: Option<Input<'_>>) -> String {
    p.map_or("(embedded)".into(), |p| p.name())
}

/// Build the snapshot for `outrigger inject` from istioctl-style flags. An injector config that
/// cannot add a sidecar is refused ([`inject_file::load_inject_config`]); a whole ConfigMap is read
/// through its `config` key (and its `values` key when no values file is given), with a note on
/// stderr. Templates without values (`--injectConfigFile` alone) get a warning: Istio's templates
/// then fail in ways that do not point at the missing file.
pub fn kube_inject_snapshot(
    inject_config: Option<&Path>,
    values: Option<&Path>,
    mesh: Option<&Path>,
) -> Result<Snapshot> {
    kube_inject_snapshot_from(
        inject_config.map(Input::File),
        values.map(Input::File),
        mesh.map(Input::File),
    )
}

/// [`kube_inject_snapshot`] from inputs that are files or text read from the cluster; an absent
/// input is the embedded default (values: the whole ConfigMap's, or none, when only the injector
/// config is given).
pub fn kube_inject_snapshot_from(
    inject_config: Option<Input<'_>>,
    values: Option<Input<'_>>,
    mesh: Option<Input<'_>>,
) -> Result<Snapshot> {
    let mut configmap_values = None;
    let config = match inject_config {
        Some(p) => {
            let loaded = inject_file::load_inject_config(&p.text()?)
                .with_context(|| format!("loading injector config {}", p.name()))?;
            match (loaded.shape, &loaded.values, values) {
                (InjectConfigShape::ConfigMap, Some(v), None) => {
                    eprintln!(
                        "note: {} is a whole ConfigMap; using its data.config and data.values keys",
                        p.name()
                    );
                    configmap_values = Some(v.clone());
                }
                (InjectConfigShape::ConfigMap, _, _) => eprintln!(
                    "note: {} is a whole ConfigMap; using its data.config key",
                    p.name()
                ),
                (InjectConfigShape::Templates, _, None) => eprintln!(
                    "warning: {} has templates but no --valuesFile was given: they render with \
                     empty .Values (pass the `values` key of the same ConfigMap with --valuesFile)",
                    p.name()
                ),
                _ => {}
            }
            loaded.config
        }
        None => InjectorConfig::parse_for_kube_inject(defaults::CONFIG)
            .context("loading the embedded default injector config")?,
    };
    let values_text = match values {
        Some(p) => p.text()?,
        None if inject_config.is_none() => defaults::VALUES.to_string(),
        None => configmap_values.unwrap_or_default(),
    };
    // Parsed here first so that an error names the values file alone.
    config::parse_values(&values_text)
        .with_context(|| format!("loading values {}", shown(values)))?;
    let mesh_text = match mesh {
        Some(p) => Some(p.text()?),
        None => Some(defaults::MESH.to_string()),
    };
    Snapshot::with_config(config, &values_text, mesh_text.as_deref())
        .map(|s| s.with_template_env(crate::template_env::current()))
        .with_context(|| format!("loading mesh config {}", shown(mesh)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broken_template_in_a_config_is_named() {
        let text = "templates:\n  sidecar: 'ok'\n  gateway: |\n    a\n    {{ nosuchfunc }}\n";
        let err = format!(
            "{:#}",
            InjectorConfig::parse_for_kube_inject(text).expect_err("broken template")
        );
        assert!(
            err.contains("\"gateway\"") && err.contains("gateway:2"),
            "{err}"
        );
    }
}
