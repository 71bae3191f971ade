//! Where the injector configuration comes from: files given with istioctl's flags or
//! `--config-dir` ([`files`]; `serve` reads its watched files through the same
//! [`webhook_documents`]), the cluster's ConfigMaps with `--kube` ([`cluster`]), else the
//! embedded default; and the native-sidecar mode the flags and `ENABLE_NATIVE_SIDECARS` choose.

pub mod cluster;
pub mod files;
mod paths;

use anyhow::Result;
use outrigger_inject::config::Snapshot;
use outrigger_inject::decide::native::NativeMode;
use outrigger_inject::inject::Settings;
use outrigger_inject::kube_inject::KubeInjectOptions;

pub use files::{read_input, webhook_document, webhook_documents, webhook_snapshot, Input};
pub use paths::{ClusterSource, ConfigPaths, CONFIG_DIR_FILES};

/// The native-sidecar mode: the flag when given, else `ENABLE_NATIVE_SIDECARS` (`env`, unset is
/// `auto`) through the library's parser, with its warning for a value Istio does not know.
pub fn native_mode(flag: Option<NativeMode>, env: Option<&str>) -> (NativeMode, Option<String>) {
    match flag {
        Some(mode) => (mode, None),
        None => NativeMode::from_env(env),
    }
}

/// Whether the native-sidecar mode is auto: `--native-sidecars auto`, or without the flag
/// `ENABLE_NATIVE_SIDECARS` unset, empty or `auto` (Istio's default is auto). Against a cluster,
/// auto is judged per pod by its node; offline it is off.
pub fn native_auto(flag: Option<NativeMode>) -> bool {
    let env = std::env::var("ENABLE_NATIVE_SIDECARS").ok();
    let env = env.as_deref().filter(|v| !v.is_empty());
    native_mode(flag, env).0 == NativeMode::Auto
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

/// What `inject` and `drift` inject with: the configuration (the cluster's ConfigMaps with
/// `--kube`, else the files or the embedded default), the revision as the library takes it
/// (`default` is none) and Istio's `COMPLIANCE_POLICY`.
pub struct Setup {
    snapshot: Snapshot,
    revision: String,
    compliance: String,
}

impl Setup {
    /// Read the configuration as the flags say: from `cluster` with `--kube`, else from the
    /// files or the embedded default.
    pub fn load(
        cluster: Option<&ClusterSource>,
        files: &ConfigPaths,
        revision: &str,
    ) -> Result<Setup> {
        let files = &files.resolved()?;
        let snapshot = if let Some(cluster) = cluster {
            cluster::cluster_snapshot(cluster, files, revision)?
        } else {
            files::manifests_snapshot(
                files.inject_config_file.as_deref(),
                files.values_file.as_deref(),
                files.mesh_config_file.as_deref(),
                revision,
            )?
        };
        Ok(Setup {
            snapshot,
            revision: outrigger_inject::decide::selection::revision_suffix(revision).to_string(),
            compliance: std::env::var("COMPLIANCE_POLICY").unwrap_or_default(),
        })
    }

    /// The library's options for a run (`--native-sidecars` as given, `--reinject`).
    pub fn options(
        &self,
        native_sidecars: Option<NativeMode>,
        reinject: bool,
    ) -> KubeInjectOptions<'_> {
        KubeInjectOptions {
            settings: Settings {
                snapshot: &self.snapshot,
                native_sidecars: native_sidecars_offline(native_sidecars),
                revision: &self.revision,
                compliance_policy: &self.compliance,
            },
            reinject,
        }
    }
}
