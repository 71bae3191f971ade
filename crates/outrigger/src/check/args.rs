//! Flags of `outrigger check`.

use std::path::PathBuf;

use crate::cli::common::{ClusterTarget, ConfigFiles};

/// Output format of `outrigger check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CheckOutput {
    /// One line per workload (namespace, kind, name, verdict, reason, revision), then the
    /// warnings and the fixes, then the summary.
    Table,
    /// The long form, kubectl's `-o wide`: per workload the webhook entries, the injector's
    /// steps, the templates, the warnings and the fix.
    Wide,
    /// One JSON object per pod, in a JSON array.
    Json,
}

/// Flags of `outrigger check`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Pod or workload manifest (multi-document YAML or JSON); `-` reads standard input.
    #[arg(short = 'f', long = "filename")]
    pub filename: Option<PathBuf>,
    /// Namespace of the pods of manifests without one (a namespace written in the manifest wins);
    /// with --kube, the namespace to read.
    #[arg(short = 'n', long = "namespace")]
    pub namespace: Option<String>,
    /// Istio's configuration files.
    #[command(flatten)]
    pub files: ConfigFiles,
    /// What the templates may read of the environment.
    #[command(flatten)]
    pub env: crate::cli::common::TemplateEnvArgs,
    /// `--revision`: the revision of the webhook configuration evaluated.
    #[command(flatten)]
    pub revision: crate::cli::common::RevisionArg<crate::cli::common::revision_flags::Check>,
    /// What decides whether a pod is injected (`--namespace-labels` offline,
    /// `--selector-revision`, `--enable-namespaces-by-default`, `--revision-tag`), as `inject`,
    /// `drift` and `preview` take it.
    #[command(flatten)]
    pub decision: crate::cli::common::DecisionArgs,
    /// Read the namespace (and the pod given with --pod) from the cluster instead of a manifest.
    #[arg(long = "kube")]
    pub kube: bool,
    /// With --kube: the live pod to explain (default: a new pod without labels in the namespace).
    #[arg(long = "pod")]
    pub pod: Option<String>,
    /// With --kube: read the injector config from this ConfigMap (keys config and values) in
    /// --istioNamespace, as `inject --kube` names it.
    #[arg(long = "injectConfigMapName", requires = "kube")]
    pub inject_config_map_name: Option<String>,
    /// With --kube: which cluster, and the namespace of Istio's ConfigMaps.
    #[command(flatten)]
    pub target: ClusterTarget,
    /// Deprecated spelling of --injectConfigMapName NAME -i NAMESPACE: NAMESPACE/NAME.
    #[arg(
        long = "injectConfigMap",
        hide = true,
        conflicts_with = "inject_config_map_name"
    )]
    pub inject_config_map: Option<String>,
    /// With --kube: evaluate the selectors of this live MutatingWebhookConfiguration instead of
    /// the generated ones.
    #[arg(long = "webhook-config")]
    pub webhook_config: Option<String>,
    /// Output format (kubectl's `-o`).
    #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
    pub output: CheckOutput,
}
