//! Flags of `outrigger preview`.

use std::path::PathBuf;

use crate::cli::common::ClusterArgs;
use crate::cli::common::ConfigFiles;
use outrigger_inject::decide::native::NativeMode;

/// Output format of `outrigger preview`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PreviewOutput {
    /// One row per workload, its changed fields and preflight findings below it, then the
    /// changes counted by field.
    Table,
    /// One JSON object per workload, in a JSON array.
    Json,
}

/// The candidate configuration: a revision's ConfigMaps (with --kube) or the embedded default
/// made for a revision, and files that override either.
#[derive(Debug, Clone, Default, clap::Args)]
#[group(id = "candidate", required = true, multiple = true)]
pub struct CandidateArgs {
    /// The candidate's revision: with --kube its ConfigMaps (istio-sidecar-injector-REV and
    /// istio-REV, as --revision names them), else the embedded default made for REV; the
    /// candidate's pods are injected as REV (`default` means none).
    #[arg(
        id = "candidate_revision",
        long = "candidate-revision",
        value_name = "REV"
    )]
    pub revision: Option<String>,
    /// The candidate's injector config file (the `config` key of its istio-sidecar-injector
    /// ConfigMap).
    #[arg(
        id = "candidate_inject_config_file",
        long = "candidateInjectConfigFile",
        value_name = "FILE"
    )]
    pub inject_config_file: Option<PathBuf>,
    /// The candidate's values file (the `values` key of the same ConfigMap).
    #[arg(
        id = "candidate_values_file",
        long = "candidateValuesFile",
        value_name = "FILE"
    )]
    pub values_file: Option<PathBuf>,
    /// The candidate's mesh config file (the `mesh` key of its istio ConfigMap).
    #[arg(
        id = "candidate_mesh_config_file",
        long = "candidateMeshConfigFile",
        value_name = "FILE"
    )]
    pub mesh_config_file: Option<PathBuf>,
    /// The candidate's files in a directory, as --config-dir takes them (`config`, `values`,
    /// `mesh`); the candidate's file flags override their input.
    #[arg(
        id = "candidate_config_dir",
        long = "candidate-config-dir",
        value_name = "DIR"
    )]
    pub config_dir: Option<PathBuf>,
    /// Native sidecars under the candidate: true, false, or auto (default: as --native-sidecars).
    #[arg(id = "candidate_native_sidecars", value_name = "NATIVE_SIDECARS", long = "candidate-native-sidecars", value_parser = crate::cli::values::native_mode())]
    pub native_sidecars: Option<NativeMode>,
}

impl CandidateArgs {
    /// The candidate's files as the configuration flags take them.
    pub fn files(&self) -> ConfigFiles {
        ConfigFiles {
            inject_config_file: self.inject_config_file.clone(),
            values_file: self.values_file.clone(),
            mesh_config_file: self.mesh_config_file.clone(),
            config_dir: self.config_dir.clone(),
        }
    }
}

/// Flags of `outrigger preview`.
#[derive(Debug, clap::Args)]
pub struct PreviewArgs {
    /// Manifests whose workloads to preview (multi-document YAML); `-` reads standard input.
    /// Without it, --kube previews the cluster's workloads.
    #[arg(short = 'f', long = "filename", required_unless_present = "kube")]
    pub filename: Option<PathBuf>,
    /// Istio's configuration files: the configuration in force (default: the embedded one, or
    /// the cluster's ConfigMaps with --kube).
    #[command(flatten)]
    pub files: ConfigFiles,
    /// The candidate configuration.
    #[command(flatten)]
    pub candidate: CandidateArgs,
    /// With --kube: both configurations are read from the cluster's ConfigMaps (files override
    /// their input), the namespaces' Pod Security labels, LimitRanges and ResourceQuotas and
    /// the nodes' kubelet versions are checked, and without -f the workloads are read too.
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// With --kube and without -f: which namespaces are read (`-n`, `-A`) and how many objects
    /// a list request asks for (`--chunk-size`).
    #[command(flatten)]
    pub scope: crate::cli::common::ListScope,
    /// `--native-sidecars` of the configuration in force.
    #[command(flatten)]
    pub in_force: crate::cli::common::NativeSidecarsInForce,
    /// `--revision`: the revision in force.
    #[command(flatten)]
    pub revision: crate::cli::common::RevisionArg<crate::cli::common::revision_flags::Preview>,
    /// What decides whether a pod is injected (`--namespace-labels` with -f,
    /// `--selector-revision`, `--revision-tag`), as `check` takes it: with --namespace-labels a
    /// workload no webhook entry selects is previewed as not injected on both sides.
    #[command(flatten)]
    pub decision: crate::cli::common::DecisionArgs,
    /// What the templates may read of the environment, as `inject` and `check` take it.
    #[command(flatten)]
    pub env: crate::cli::common::TemplateEnvArgs,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
    pub output: PreviewOutput,
}
