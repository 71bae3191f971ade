//! Loading injector settings: Istio's files when given, otherwise the embedded default.

use std::path::Path;

use anyhow::{Context, Result};

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use outrigger_inject::config::defaults;
use outrigger_inject::config::{self, InjectorConfig, Snapshot};
use outrigger_inject::kube_inject::{self, InjectConfigShape};
use outrigger_inject::webhook::NativeMode;

/// Istio's configuration files, as `istioctl kube-inject` names its flags.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ConfigFiles {
    /// Injector config file (the `config` key of the istio-sidecar-injector ConfigMap).
    #[arg(long = "injectConfigFile", visible_alias = "inject-config-file")]
    pub inject_config_file: Option<std::path::PathBuf>,
    /// Injector values file (the `values` key of the istio-sidecar-injector ConfigMap).
    #[arg(long = "valuesFile", visible_alias = "values-file")]
    pub values_file: Option<std::path::PathBuf>,
    /// Mesh config file (the `mesh` key of the istio ConfigMap).
    #[arg(long = "meshConfigFile", visible_alias = "mesh-config-file")]
    pub mesh_config_file: Option<std::path::PathBuf>,
}

/// The `--native-sidecars` flag: Istio's `ENABLE_NATIVE_SIDECARS` values, read by the
/// library's parser into its [`NativeMode`].
pub fn native_mode_flag() -> impl TypedValueParser<Value = NativeMode> {
    PossibleValuesParser::new([
        PossibleValue::new("true")
            .help("Always native sidecars (init containers with `restartPolicy: Always`)"),
        PossibleValue::new("false").help("Never native sidecars"),
        PossibleValue::new("auto")
            .help("Decide from the cluster; offline this follows `ENABLE_NATIVE_SIDECARS`"),
    ])
    .map(|v| NativeMode::parse(&v).0)
}

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

/// Display name of an optional file (`(embedded)` when absent).
fn shown(p: Option<&Path>) -> String {
    p.map_or("(embedded)".into(), |p| p.display().to_string())
}

/// Build the snapshot for `outrigger inject` from istioctl-style flags. An injector config that
/// cannot add a sidecar is refused ([`workload::load_inject_config`]); a whole ConfigMap is read
/// through its `config` key (and its `values` key when no values file is given), with a note on
/// stderr. Templates without values (`--injectConfigFile` alone) get a warning: Istio's templates
/// then fail in ways that do not point at the missing file.
pub fn kube_inject_snapshot(
    inject_config: Option<&Path>,
    values: Option<&Path>,
    mesh: Option<&Path>,
) -> Result<Snapshot> {
    let mut configmap_values = None;
    let config = match inject_config {
        Some(p) => {
            let loaded = kube_inject::load_inject_config(&read(p)?)
                .with_context(|| format!("loading injector config {}", p.display()))?;
            match (loaded.shape, &loaded.values, values) {
                (InjectConfigShape::ConfigMap, Some(v), None) => {
                    eprintln!(
                        "note: {} is a whole ConfigMap; using its data.config and data.values keys",
                        p.display()
                    );
                    configmap_values = Some(v.clone());
                }
                (InjectConfigShape::ConfigMap, _, _) => eprintln!(
                    "note: {} is a whole ConfigMap; using its data.config key",
                    p.display()
                ),
                (InjectConfigShape::Templates, _, None) => eprintln!(
                    "warning: {} has templates but no --valuesFile was given: they render with \
                     empty .Values (pass the `values` key of the same ConfigMap with --valuesFile)",
                    p.display()
                ),
                _ => {}
            }
            loaded.config
        }
        None => InjectorConfig::parse_for_kube_inject(defaults::CONFIG)
            .context("loading the embedded default injector config")?,
    };
    let values_text = match values {
        Some(p) => read(p)?,
        None if inject_config.is_none() => defaults::VALUES.to_string(),
        None => configmap_values.unwrap_or_default(),
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
