//! Flags of `outrigger doctor`.

use std::path::PathBuf;
use std::time::Duration;

use crate::cli::defaults;

/// Output format of `outrigger doctor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DoctorOutput {
    /// One row per check: verdict, check, finding; the hint below a row that did not pass.
    Table,
    /// A JSON object: the checks (name, verdict, finding, hint) and the overall verdict.
    Json,
}

/// Flags of `outrigger doctor`: which install to examine, and where to probe it.
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// The kubeconfig file (default: KUBECONFIG, ~/.kube/config, or in-cluster).
    #[arg(long = "kubeconfig")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context (default: its current context).
    #[arg(long = "context")]
    pub context: Option<String>,
    /// The namespace outrigger is installed in.
    #[arg(long = "outrigger-namespace", value_name = "NAMESPACE", default_value = defaults::NAMESPACE)]
    pub namespace: String,
    /// Refused: `-n` is the workloads' namespace in every command; outrigger's own namespace is
    /// --outrigger-namespace (and the probe's, --probe-namespace).
    #[arg(short = 'n', long = "namespace", hide = true, value_name = "NAMESPACE")]
    pub refused_namespace: Option<String>,
    /// The MutatingWebhookConfiguration that routes pods to outrigger.
    #[arg(long = "webhook-config-name", default_value = defaults::WEBHOOK_CONFIG_NAME)]
    pub webhook_config_name: String,
    /// The Service in front of outrigger (in --outrigger-namespace).
    #[arg(long = "service", default_value = defaults::SERVICE)]
    pub service: String,
    /// The Deployment running `outrigger serve` (in --outrigger-namespace): its flags, environment and
    /// service account are read.
    #[arg(long = "deployment", default_value = defaults::SERVICE)]
    pub deployment: String,
    /// The Secret holding the serving certificate (in --outrigger-namespace).
    #[arg(long = "tls-secret", default_value = defaults::TLS_SECRET)]
    pub tls_secret: String,
    /// `--revision` (absent: the Deployment's).
    #[command(flatten)]
    pub revision: crate::cli::common::RevisionArg<crate::cli::common::revision_flags::Doctor>,
    /// The namespace of Istio's ConfigMaps; default: the Deployment's ISTIO_NAMESPACE, else
    /// istio-system.
    #[arg(short = 'i', long = "istioNamespace")]
    pub istio_namespace: Option<String>,
    /// Probe end to end: a server-side dry-run create (`dryRun=All`, nothing is stored) of a pod
    /// in this namespace, compared with what outrigger renders for it. Needs `create` on pods
    /// there. Without it the probe is reported as skipped.
    #[arg(long = "probe-namespace")]
    pub probe_namespace: Option<String>,
    /// Warn when the serving certificate or its CA expires within this duration.
    #[arg(long = "expiry-warning", default_value = "720h", value_parser = crate::cli::values::duration)]
    pub expiry_warning: Duration,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
    pub output: DoctorOutput,
}
