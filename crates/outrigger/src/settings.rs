//! Loading injector settings: Istio's files when given, otherwise the embedded default.

use std::path::Path;

use anyhow::{Context, Result};
use std::collections::BTreeMap;

use outrigger_inject::config::{self, InjectorConfig, Snapshot};
use outrigger_inject::{defaults, yaml};
use serde_json::Value;

/// Native-sidecar mode as Istio's `ENABLE_NATIVE_SIDECARS` / `--native-sidecars` understand it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum NativeMode {
    /// Always native sidecars (init containers with `restartPolicy: Always`).
    True,
    /// Never native sidecars.
    False,
    /// Decide from the cluster; offline this follows `ENABLE_NATIVE_SIDECARS`.
    Auto,
}

/// Offline native-sidecar decision: an explicit flag wins, else `ENABLE_NATIVE_SIDECARS=true`.
pub fn native_sidecars_offline(flag: Option<NativeMode>) -> bool {
    match flag {
        Some(NativeMode::True) => true,
        Some(NativeMode::False) => false,
        Some(NativeMode::Auto) | None => {
            std::env::var("ENABLE_NATIVE_SIDECARS").is_ok_and(|v| v == "true")
        }
    }
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

/// The injector config of `--injectConfigFile` (spec §11.1): when the file decodes as an injector
/// config with templates, those templates (a template that fails to parse is an error naming it);
/// otherwise the whole file is the single template `sidecar`.
///
/// Unlike `InjectorConfig::parse_for_kube_inject`, a broken template inside a valid config is
/// reported as such instead of silently re-parsing the whole file as one template (which gave
/// errors naming `sidecar` and a file line even when another template was broken).
fn kube_inject_config(text: &str) -> Result<InjectorConfig> {
    match config_templates(text) {
        Some(raw) => Ok(InjectorConfig::kube_inject(config::parse_templates(&raw)?)),
        None => Ok(InjectorConfig::parse_for_kube_inject(text)?),
    }
}

/// The `templates` map of `text` if it decodes as an injector config with at least one template.
fn config_templates(text: &str) -> Option<BTreeMap<String, String>> {
    let Ok(Value::Object(doc)) = yaml::from_str(text) else {
        return None;
    };
    let templates = doc
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("templates"))?
        .1
        .as_object()?;
    let raw: Option<BTreeMap<_, _>> = templates
        .iter()
        .map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
        .collect();
    raw.filter(|r| !r.is_empty())
}

/// Display name of an optional file (`(embedded)` when absent).
fn shown(p: Option<&Path>) -> String {
    p.map_or("(embedded)".into(), |p| p.display().to_string())
}

/// Build the snapshot for `outrigger inject` from istioctl-style flags.
pub fn kube_inject_snapshot(
    inject_config: Option<&Path>,
    values: Option<&Path>,
    mesh: Option<&Path>,
) -> Result<Snapshot> {
    let config = match inject_config {
        Some(p) => kube_inject_config(&read(p)?)
            .with_context(|| format!("loading injector config {}", p.display()))?,
        None => InjectorConfig::parse_for_kube_inject(defaults::CONFIG)
            .context("loading the embedded default injector config")?,
    };
    let values_text = match values {
        Some(p) => read(p)?,
        None if inject_config.is_none() => defaults::VALUES.to_string(),
        None => String::new(),
    };
    // Parsed here first so that an error names the values file alone.
    config::parse_values(&values_text)
        .with_context(|| format!("loading values {}", shown(values)))?;
    let mesh_text = match mesh {
        Some(p) => Some(read(p)?),
        None => Some(defaults::MESH.to_string()),
    };
    Snapshot::with_config(config, &values_text, mesh_text.as_deref())
        .with_context(|| format!("loading mesh config {}", shown(mesh)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_templates_only_for_configs_with_templates() {
        let t = config_templates("templates:\n  sidecar: 'a'\n  gw: b\n").expect("templates");
        assert_eq!(t.len(), 2);
        assert_eq!(t["sidecar"], "a");
        assert!(
            config_templates("Templates: {x: z}").is_some(),
            "keys match case-insensitively"
        );
        assert!(config_templates("templates: {}").is_none());
        assert!(config_templates("spec:\n  containers: []\n").is_none());
        assert!(config_templates("templates: {a: [1]}").is_none());
        assert!(config_templates("{{ if }}").is_none());
    }

    #[test]
    fn broken_template_in_a_config_is_named() {
        let text = "templates:\n  sidecar: 'ok'\n  gateway: |\n    a\n    {{ nosuchfunc }}\n";
        let err = format!(
            "{:#}",
            kube_inject_config(text).expect_err("broken template")
        );
        assert!(
            err.contains("\"gateway\"") && err.contains("gateway:2"),
            "{err}"
        );
    }
}
