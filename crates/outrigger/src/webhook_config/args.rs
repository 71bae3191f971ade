//! Flags of `outrigger webhook-config`.

use std::path::PathBuf;

use crate::kube::webhook_object::{FailurePolicy, ReinvocationPolicy};

/// Output format of generated objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// YAML (sigs.k8s.io/yaml style, as `kubectl get -o yaml` prints).
    Yaml,
    /// Indented JSON.
    Json,
}

/// Flags of `outrigger webhook-config`.
#[derive(Debug, Clone, clap::Args)]
pub struct WebhookConfigArgs {
    /// `--revision`: the revision served.
    #[command(flatten)]
    pub revision:
        crate::cli::common::RevisionArg<crate::cli::common::revision_flags::WebhookConfig>,
    /// Revision tag: an `istio-revision-tag-TAG` object whose selectors match `istio.io/rev=TAG`
    /// and that routes to the revision's injector (as Istio's chart's revision tags).
    #[arg(long = "tag")]
    pub tag: Option<String>,
    /// The `istio.io/rev` value the entries select (default `outrigger`: only namespaces and pods
    /// labelled for outrigger, never istiod's). `default` takes over from istiod's default
    /// revision (`istio-injection=enabled`, `sidecar.istio.io/inject=true`): remove istiod's
    /// injector webhooks first (see docs/kubernetes.md). With --istio: the revision.
    #[arg(long = "selector-revision", conflicts_with = "tag")]
    pub selector_revision: Option<String>,
    /// Istio replacement: Istio's object names, Service and labels (istiod's injector must be off).
    #[arg(long = "istio")]
    pub istio: bool,
    /// Service in front of the injector, as NAMESPACE/NAME (default outrigger/outrigger;
    /// istio-system/istiod[-REVISION] with --istio).
    #[arg(long = "service", conflicts_with = "url")]
    pub service: Option<String>,
    /// Call the injector at this https:// URL (`clientConfig.url`) instead of a Service.
    #[arg(long = "url")]
    pub url: Option<String>,
    /// Service port the API server calls (1-65535).
    #[arg(long = "port", default_value_t = 443, value_parser = clap::value_parser!(u16).range(1..))]
    pub port: u16,
    /// HTTP path of the injection endpoint.
    #[arg(long = "path", default_value = "/inject")]
    pub path: String,
    /// Name of the MutatingWebhookConfiguration (default outrigger-sidecar-injector[-REVISION];
    /// Istio's chart naming with --istio).
    #[arg(long = "name")]
    pub name: Option<String>,
    /// PEM file whose certificates become the `caBundle` of every entry.
    #[arg(long = "ca-bundle-file")]
    pub ca_bundle_file: Option<PathBuf>,
    /// failurePolicy of every entry.
    #[arg(long = "failure-policy", value_enum, default_value = "Fail")]
    pub failure_policy: FailurePolicy,
    /// timeoutSeconds of every entry (1-30), above serve's --request-timeout (default 4s).
    #[arg(long = "timeout", default_value_t = crate::cli::defaults::WEBHOOK_TIMEOUT_SECONDS,
          value_parser = clap::value_parser!(u8).range(1..=30))]
    pub timeout: u8,
    /// reinvocationPolicy of every entry.
    #[arg(long = "reinvocation-policy", value_enum, default_value = "Never")]
    pub reinvocation_policy: ReinvocationPolicy,
    /// Also inject every pod of unlabelled namespaces (the chart's `auto.` entry; default revision only).
    #[arg(long = "enable-namespaces-by-default")]
    pub enable_namespaces_by_default: bool,
    /// Namespaces never sent to the injector (added to every entry's namespaceSelector),
    /// comma-separated; `""` for none. Default: the injector's namespace (that of --service,
    /// else outrigger) and kube-system, as deploy/base installs; none with --istio or --url.
    #[arg(long = "exclude-namespaces", value_delimiter = ',')]
    pub exclude_namespaces: Option<Vec<String>>,
    /// Add CEL matchConditions to every entry, so that pods the injector never injects (host
    /// network, kube-system and the other ignored namespaces, sidecar.istio.io/inject "false" as
    /// label or annotation) are not sent to it (Kubernetes 1.28 or later).
    #[arg(long = "match-conditions")]
    pub match_conditions: bool,
    /// Output format (kubectl's `-o`).
    #[arg(short = 'o', long = "output", value_enum, default_value = "yaml")]
    pub output: OutputFormat,
}
