//! Flags of `outrigger drift`.

use std::path::PathBuf;

use crate::cli::common::ClusterArgs;
use crate::cli::common::ConfigFiles;

/// Output format of `outrigger drift`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DriftOutput {
    /// One row per pod template, the differing fields below it.
    Table,
    /// One JSON object per pod template, in a JSON array.
    Json,
}

/// Flags of `outrigger drift`.
#[derive(Debug, clap::Args)]
pub struct DriftArgs {
    /// Manifests to examine (multi-document YAML, as `outrigger inject` writes them); `-` reads
    /// standard input. Without it, --kube examines the cluster's pods.
    #[arg(short = 'f', long = "filename", required_unless_present = "kube")]
    pub filename: Option<PathBuf>,
    /// Istio's configuration files: the configuration in force (default: the embedded one, or
    /// the cluster's ConfigMaps with --kube).
    #[command(flatten)]
    pub files: ConfigFiles,
    /// With --kube: the configuration in force is read from the cluster's ConfigMaps, as
    /// `inject --kube` reads it, and without -f the pods too.
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
    pub revision: crate::cli::common::RevisionArg<crate::cli::common::revision_flags::Drift>,
    /// What decides whether a pod is injected (`--namespace-labels`, `--selector-revision`,
    /// `--revision-tag`), as `check` takes it.
    #[command(flatten)]
    pub decision: crate::cli::common::DecisionArgs,
    /// What the templates may read of the environment, as `inject` and `check` take it.
    #[command(flatten)]
    pub env: crate::cli::common::TemplateEnvArgs,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
    pub output: DriftOutput,
    /// Restarting the drifted workloads.
    #[command(flatten)]
    pub restart: RestartArgs,
}

/// `--dry-run` of `drift --restart`, kubectl's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DryRun {
    /// Not a dry run: with --yes the workloads are restarted.
    None,
    /// The plan only; nothing is sent.
    Client,
    /// Each restart's patch is sent with `dryRun=All`: admitted and validated, never stored.
    Server,
}

/// Flags of `drift --kube --restart`.
#[derive(Debug, Clone, clap::Args)]
pub struct RestartArgs {
    /// With --kube: re-roll the drifted Deployments, StatefulSets and DaemonSets one at a time
    /// (the pod template annotation `kubectl.kubernetes.io/restartedAt`, as `kubectl rollout
    /// restart`), each after its PodDisruptionBudgets allow a disruption and once the one
    /// before has rolled out. Prints the plan only, unless --yes (or --dry-run=server, which
    /// has the API server judge each restart without storing it).
    #[arg(long = "restart", requires = "kube", conflicts_with = "filename")]
    pub restart: bool,
    /// With --restart: carry the plan out (without it nothing is changed).
    #[arg(long = "yes", requires = "restart")]
    pub yes: bool,
    /// With --restart, as kubectl's --dry-run: `none` restarts with --yes (else prints the
    /// plan), `client` only prints the plan, `server` sends each restart's patch with
    /// `dryRun=All` (the API server's admission and validation run, nothing is stored) and
    /// reports what it answered. A dry run changes nothing, with or without --yes.
    #[arg(
        long = "dry-run",
        value_enum,
        default_value = "none",
        requires = "restart"
    )]
    pub dry_run: DryRun,
    /// With --restart: how long to wait, for each workload, for its PodDisruptionBudgets to
    /// allow a disruption and then for its rollout to complete (Go duration: 90s, 5m, 1h).
    #[arg(long = "timeout", default_value = "5m", requires = "restart",
          value_parser = crate::cli::values::duration)]
    pub timeout: std::time::Duration,
    /// With --restart: how often the workload and its PodDisruptionBudgets are read while
    /// waiting.
    #[arg(long = "poll-interval", default_value = "2s", hide = true,
          value_parser = crate::cli::values::duration)]
    pub poll_interval: std::time::Duration,
}
