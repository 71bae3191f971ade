//! Flags shared by several subcommands, and the flag groups the kube layer takes as they are.

use std::time::Duration;

use outrigger_inject::decide::selection::Revision;

use crate::cli::defaults;
use crate::config_source::{ClusterSource, ConfigPaths};
use crate::kube::inject_source::{DEFAULT_INJECT_CONFIG_MAP, DEFAULT_MESH_CONFIG_MAP};
use crate::kube::runtime::KubeSettings;

/// Istio's configuration files, as `istioctl kube-inject` names its flags.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ConfigFiles {
    /// Injector config file (the `config` key of the istio-sidecar-injector ConfigMap).
    #[arg(long = "injectConfigFile")]
    pub inject_config_file: Option<std::path::PathBuf>,
    /// Injector values file (the `values` key of the istio-sidecar-injector ConfigMap).
    #[arg(long = "valuesFile")]
    pub values_file: Option<std::path::PathBuf>,
    /// Mesh config file (the `mesh` key of the istio ConfigMap).
    #[arg(long = "meshConfigFile")]
    pub mesh_config_file: Option<std::path::PathBuf>,
    /// Directory holding the three inputs as files named after their ConfigMap keys: `config`,
    /// `values` (both required) and `mesh` (optional: else the embedded mesh config), as
    /// `kubectl get cm istio-sidecar-injector -o jsonpath='{.data.config}' > DIR/config` (and
    /// `{.data.values}`, and `kubectl get cm istio -o jsonpath='{.data.mesh}'`) write them. A
    /// file flag overrides its input.
    #[arg(long = "config-dir", value_name = "DIR")]
    pub config_dir: Option<std::path::PathBuf>,
}

impl ConfigFiles {
    /// The files as the configuration loader takes them.
    pub fn paths(&self) -> ConfigPaths {
        ConfigPaths {
            inject_config_file: self.inject_config_file.clone(),
            values_file: self.values_file.clone(),
            mesh_config_file: self.mesh_config_file.clone(),
            config_dir: self.config_dir.clone(),
        }
    }

    /// The files to read: the flags, with `--config-dir`'s files for the inputs not given
    /// ([`ConfigPaths::resolved`]).
    pub fn resolved(&self) -> anyhow::Result<ConfigPaths> {
        self.paths().resolved()
    }
}

/// Which cluster, and which namespace of it holds Istio's ConfigMaps, a `--kube` command reads:
/// the flags of `inject --kube` and `check --kube` (istioctl's `-i/--istioNamespace`, kubectl's
/// `--kubeconfig` and `--context`).
#[derive(Debug, Clone, clap::Args)]
pub struct ClusterTarget {
    /// With --kube: the namespace of Istio's ConfigMaps.
    #[arg(
        short = 'i',
        long = "istioNamespace",
        default_value = "istio-system",
        requires = "kube"
    )]
    pub istio_namespace: String,
    /// With --kube: the kubeconfig file (default: KUBECONFIG, ~/.kube/config, or in-cluster).
    #[arg(long = "kubeconfig", requires = "kube")]
    pub kubeconfig: Option<std::path::PathBuf>,
    /// With --kube: the kubeconfig context (default: its current context).
    #[arg(long = "context", requires = "kube")]
    pub context: Option<String>,
}

/// What decides, besides the pod and the injector's configuration, whether a pod of a manifest
/// is injected: the namespace as the webhooks see it and which webhook entries are evaluated.
/// `check`, `inject`, `drift` and `preview` take these flags alike and judge with the one
/// decision ([`crate::decision`]).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct DecisionArgs {
    /// Labels of the manifests' namespace, comma-separated KEY=VALUE (kubernetes.io/metadata.name
    /// is implied): each pod is judged as the webhook entries and the injector see it there, as
    /// `check` explains it. `inject` leaves a workload no entry selects as written, `drift`
    /// expects it not injected. Without it, `inject`, `drift` and `preview` inject every pod
    /// that does not opt out, as `istioctl kube-inject` does.
    #[arg(
        long = "namespace-labels",
        value_delimiter = ',',
        value_name = "KEY=VALUE",
        requires = "filename"
    )]
    pub namespace_labels: Vec<String>,
    /// The `istio.io/rev` value the evaluated webhook entries select, as webhook-config's
    /// (default `outrigger`, what deploy/base installs; `default` for the takeover's entries).
    #[arg(long = "selector-revision", value_parser = crate::cli::values::revision_name)]
    pub selector_revision: Option<String>,
    /// Evaluate the `auto.` entry too (webhook-config --enable-namespaces-by-default).
    #[arg(long = "enable-namespaces-by-default")]
    pub enable_namespaces_by_default: bool,
    /// Istio revision tag TAG pointing at REVISION (repeatable), as `istioctl tag set TAG
    /// --revision REVISION` makes it: a pod or namespace labelled `istio.io/rev: TAG` is on
    /// REVISION. With `drift --kube` the cluster's tags are read too (a flag wins).
    #[arg(long = "revision-tag", value_name = "TAG=REVISION", value_parser = revision_tag)]
    pub revision_tags: Vec<(String, String)>,
}

/// `TAG=REVISION`, both non-empty.
fn revision_tag(value: &str) -> Result<(String, String), String> {
    match value.split_once('=') {
        Some((tag, rev)) if !tag.is_empty() && !rev.is_empty() => {
            Ok((tag.to_string(), rev.to_string()))
        }
        _ => Err(format!("expected TAG=REVISION, got {value:?}")),
    }
}

/// `--native-sidecars` of the commands that judge pods against the configuration in force
/// (`drift`, `preview`).
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct NativeSidecarsInForce {
    /// Native sidecars in the configuration in force: true, false, or auto (default:
    /// ENABLE_NATIVE_SIDECARS, else auto, Istio's default; auto asks the nodes with --kube and
    /// is off offline).
    #[arg(long = "native-sidecars", value_parser = crate::cli::values::native_mode())]
    pub native_sidecars: Option<outrigger_inject::decide::native::NativeMode>,
}

/// What a `--kube` command lists, as kubectl's `-n`/`-A`/`--chunk-size` say it (`drift`'s pods,
/// `preview`'s workloads).
#[derive(Debug, Clone, clap::Args)]
pub struct ListScope {
    /// With --kube and without -f: the namespace whose objects are read (default: the
    /// kubeconfig context's).
    #[arg(
        short = 'n',
        long = "namespace",
        requires = "kube",
        conflicts_with = "all_namespaces"
    )]
    pub namespace: Option<String>,
    /// With --kube and without -f: read the objects of every namespace.
    #[arg(short = 'A', long = "all-namespaces", requires = "kube")]
    pub all_namespaces: bool,
    /// With --kube: objects read per list request (the API server's `limit`; `continue` pages
    /// on).
    #[arg(long = "chunk-size", default_value_t = 500, requires = "kube",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub chunk_size: u32,
}

impl ListScope {
    /// The namespace to list: `None` with `-A`, else `-n` or `context_default` (the kubeconfig
    /// context's namespace).
    pub fn namespace_or(&self, context_default: &str) -> Option<String> {
        (!self.all_namespaces).then(|| {
            self.namespace
                .clone()
                .unwrap_or_else(|| context_default.to_string())
        })
    }
}

/// The `--template-env` flag: what the templates' `env` and `expandenv` may read.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TemplateEnvArgs {
    /// Environment variables the templates' `env` and `expandenv` functions may read, besides
    /// ENABLE_NATIVE_SIDECARS: NAME (its value in this environment) or NAME=VALUE;
    /// comma-separated or repeated. Other variables read as unset.
    #[arg(
        long = "template-env",
        value_name = "NAME[=VALUE]",
        value_delimiter = ','
    )]
    pub template_env: Vec<String>,
}

/// Flags of `outrigger inject --kube`, as `istioctl kube-inject` names them.
#[derive(Debug, Clone, clap::Args)]
pub struct ClusterArgs {
    /// Read the injector config and values (ConfigMap --injectConfigMapName, keys `config` and
    /// `values`) and the mesh config (ConfigMap --meshConfigMapName, key `mesh`) from the
    /// cluster, as istioctl kube-inject does; --injectConfigFile, --valuesFile and
    /// --meshConfigFile still override their input.
    #[arg(long = "kube")]
    pub kube: bool,
    /// With --kube: the injector ConfigMap (`-REVISION` is appended to the default name).
    #[arg(
        long = "injectConfigMapName",
        default_value = DEFAULT_INJECT_CONFIG_MAP,
        requires = "kube"
    )]
    pub inject_config_map_name: String,
    /// With --kube: the mesh ConfigMap (`-REVISION` is appended to the default name).
    #[arg(
        long = "meshConfigMapName",
        default_value = DEFAULT_MESH_CONFIG_MAP,
        requires = "kube"
    )]
    pub mesh_config_map_name: String,
    /// With --kube: which cluster, and the namespace of Istio's ConfigMaps.
    #[command(flatten)]
    pub target: ClusterTarget,
}

impl ClusterArgs {
    /// The cluster to read the configuration from: `None` without `--kube`.
    pub fn source(&self) -> Option<ClusterSource> {
        self.kube.then(|| ClusterSource {
            inject_config_map_name: self.inject_config_map_name.clone(),
            mesh_config_map_name: self.mesh_config_map_name.clone(),
            istio_namespace: self.target.istio_namespace.clone(),
            kubeconfig: self.target.kubeconfig.clone(),
            context: self.target.context.clone(),
        })
    }
}

/// Kubernetes flags of `outrigger serve` (`--kube` and its group); the kube layer's runtime
/// takes what it needs of them ([`KubeArgs::settings`]).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct KubeArgs {
    /// Use the Kubernetes API (certificates in a Secret, caBundle sync, cluster facts).
    #[arg(long = "kube")]
    pub kube: bool,
    /// With --kube: the kubeconfig file (default: KUBECONFIG, ~/.kube/config, or in-cluster).
    #[arg(long = "kubeconfig", requires = "kube")]
    pub kubeconfig: Option<std::path::PathBuf>,
    /// With --kube: the kubeconfig context (default: its current context).
    #[arg(long = "context", requires = "kube")]
    pub context: Option<String>,
    /// How long start-up retries, with backoff, while the API server is unreachable.
    #[arg(long = "kube-connect-timeout", default_value = "30s", value_parser = crate::cli::values::duration)]
    pub connect_timeout: Duration,
    /// Secret (in the injector's namespace) holding the shared CA and serving certificate.
    #[arg(long = "tls-secret", default_value = defaults::TLS_SECRET)]
    pub tls_secret: String,
    /// MutatingWebhookConfiguration whose caBundle is kept in sync.
    #[arg(long = "webhook-config-name", default_value = defaults::WEBHOOK_CONFIG_NAME)]
    pub webhook_config_name: String,
    /// With --failure-policy-once-ready, --webhook-owned-by-namespace or
    /// --fail-open-without-deployment: how long /readyz must pass before the webhook
    /// configuration is activated (time for the kubelet's readiness probe to put this replica
    /// behind the Service).
    #[arg(long = "activation-delay", default_value = "10s", value_parser = crate::cli::values::duration)]
    pub activation_delay: Duration,
    /// Once this replica is ready (--activation-delay after /readyz first passes), set the failurePolicy of
    /// the injector's entries of --webhook-config-name to this value, and again whenever it
    /// differs (checked every 30 s). The shipped configuration fails open (Ignore) until then, so
    /// an install never blocks pods before a replica can answer.
    #[arg(long = "failure-policy-once-ready", value_parser = ["Fail", "Ignore"])]
    pub failure_policy_once_ready: Option<String>,
    /// Make --webhook-config-name owned by this replica's namespace (an ownerReference), so that
    /// deleting the namespace deletes the webhook configuration (the API server's garbage
    /// collector) instead of leaving one that calls a deleted Service.
    #[arg(long = "webhook-owned-by-namespace")]
    pub webhook_owned_by_namespace: bool,
    /// The Deployment (in this replica's namespace) that runs the replicas: while it is
    /// deleted, being deleted or scaled to zero, --webhook-config-name's injector entries are
    /// set to failurePolicy Ignore (by the periodic activation, and by every replica told to
    /// stop), so that pods are not refused by a webhook no replica answers. Needs get on that
    /// Deployment.
    #[arg(long = "fail-open-without-deployment", value_name = "NAME")]
    pub fail_open_without_deployment: Option<String>,
    /// Probe the admission path end to end every interval: a dry-run create of a plain pod in
    /// --probe-namespace through the API server, counted by outcome in
    /// outrigger_admission_probe_total (injected, not_injected, refused, error) and logged when
    /// not injected. Off by default; needs create on pods in that namespace.
    #[arg(long = "probe-interval", requires = "probe_namespace",
          value_parser = crate::cli::values::duration)]
    pub probe_interval: Option<Duration>,
    /// With --probe-interval: the namespace the probe pod is created in (dry run), one where
    /// this injector injects.
    #[arg(long = "probe-namespace", requires = "probe_interval")]
    pub probe_namespace: Option<String>,
    /// At start-up, name the other injecting webhook configurations (istiod's, revision tags)
    /// that select namespaces --webhook-config-name selects (log and metric). Needs list on
    /// mutatingwebhookconfigurations and namespaces.
    #[arg(long = "detect-overlaps")]
    pub detect_overlaps: bool,
    /// Never write the webhook configuration (cert-manager's CA injector or GitOps own caBundle).
    #[arg(long = "ca-bundle-managed-externally")]
    pub ca_bundle_managed_externally: bool,
    /// Read Istio's own ConfigMaps from the cluster: `istio-sidecar-injector[-REVISION]` (keys
    /// `config` and `values`) and `istio[-REVISION]` (key `mesh`) in --istioNamespace, watched
    /// and kept last good. Not ready while either is missing or unusable (never the embedded
    /// default).
    #[arg(long = "istio-configmaps", conflicts_with_all = ["inject_config_map", "mesh_config_map"])]
    pub istio_configmaps: bool,
    /// With --istio-configmaps: the namespace of Istio's ConfigMaps.
    #[arg(
        long = "istioNamespace",
        env = "ISTIO_NAMESPACE",
        default_value = "istio-system"
    )]
    pub istio_namespace: String,
    /// `--revision`: the revision served.
    #[command(flatten)]
    pub revision: RevisionArg<revision_flags::Serve>,
    /// Injector ConfigMap to watch, NAMESPACE/NAME (keys `config` and `values`).
    #[arg(long = "injectConfigMap")]
    pub inject_config_map: Option<String>,
    /// Mesh ConfigMap to watch, NAMESPACE/NAME (key `mesh`).
    #[arg(long = "meshConfigMap")]
    pub mesh_config_map: Option<String>,
    /// Record a Kubernetes Event on the pod's owner for every injection and skip.
    #[arg(long = "events")]
    pub events: bool,
    /// Keep drift's judgement of the pods this injector's webhook selects current from a watch
    /// of every pod (and namespace), exported as `outrigger_pods{namespace,state,cause}`:
    /// current, stale (by cause) and missing a sidecar (admitted while the webhook failed
    /// open). Needs list and watch on pods and namespaces cluster-wide
    /// (deploy/components/pod-watch).
    #[arg(long = "watch-pods")]
    pub watch_pods: bool,
}

/// What a command's `--revision` says of itself: its help and its default (`None`: absent
/// unless given). The flag is declared once ([`RevisionArg`]); each command names its words.
pub trait RevisionFlag: Clone + std::fmt::Debug + Send + Sync + 'static {
    /// The help line.
    const HELP: &'static str;
    /// The default value.
    const DEFAULT: Option<&'static str> = Some("");
}

/// `--revision`, the one declaration every command flattens: the control-plane revision
/// ([`Revision`], which carries the `""`/`default` rule), with the command's help and default
/// ([`RevisionFlag`]). Reads as the [`Revision`] given (or the empty one when a command without
/// a default was not given it: see [`RevisionArg::given`]).
#[derive(Debug, Clone, clap::Args)]
pub struct RevisionArg<F: RevisionFlag> {
    #[arg(long = "revision", help = F::HELP, default_value = F::DEFAULT)]
    revision: Option<Revision>,
    #[arg(skip)]
    flag: std::marker::PhantomData<F>,
}

/// The revision of a [`RevisionArg`] not given and without a default.
static NO_REVISION: Revision = Revision::EMPTY;

impl<F: RevisionFlag> Default for RevisionArg<F> {
    /// Not given (reads as `""`, the default revision).
    fn default() -> Self {
        RevisionArg {
            revision: None,
            flag: std::marker::PhantomData,
        }
    }
}

impl<F: RevisionFlag> RevisionArg<F> {
    /// The revision given on the command line (with a default, always).
    pub fn given(&self) -> Option<&Revision> {
        self.revision.as_ref()
    }
}

impl<F: RevisionFlag> std::ops::Deref for RevisionArg<F> {
    type Target = Revision;

    fn deref(&self) -> &Revision {
        self.revision.as_ref().unwrap_or(&NO_REVISION)
    }
}

/// The words of each command's `--revision` (kept as each command always printed them).
pub mod revision_flags {
    use super::RevisionFlag;

    macro_rules! flag {
        ($(#[$doc:meta])* $name:ident, $help:expr $(, $default:expr)?) => {
            $(#[$doc])*
            #[derive(Debug, Clone)]
            pub struct $name;
            impl RevisionFlag for $name {
                const HELP: &'static str = $help;
                $(const DEFAULT: Option<&'static str> = $default;)?
            }
        };
    }

    flag!(
        /// `inject --revision`.
        Inject,
        "Control plane revision (`default` means none). With --kube, the default ConfigMap \
         names get `-REVISION` appended, as istioctl does"
    );
    flag!(
        /// `check --revision`.
        Check,
        "Control plane revision of the webhook configuration to evaluate"
    );
    flag!(
        /// `drift --revision`.
        Drift,
        "Revision in force (`default` means none): pods injected by another are \
         `wrong-revision`"
    );
    flag!(
        /// `preview --revision`.
        Preview,
        "Revision in force (`default` means none); with --kube, the workloads its webhook \
         selects"
    );
    flag!(
        /// `webhook-config --revision`.
        WebhookConfig,
        "Control plane revision served by this injector (empty or `default`: the default \
         revision)"
    );
    flag!(
        /// `serve --revision` (the kube layer's).
        Serve,
        "The Istio control-plane revision this injector serves, as istiod's: written into the \
         templates' `.Revision` (the pods' `istio.io/rev` label) and the status annotation; \
         with --istio-configmaps, `-REVISION` is appended to the ConfigMaps' names \
         (`default`: none)",
        Some("default")
    );
    flag!(
        /// `doctor --revision` (no default: the Deployment's).
        Doctor,
        "The Istio revision outrigger serves (`default`: none); default: the Deployment's \
         `--revision`",
        None
    );
}
impl KubeArgs {
    /// What the kube layer's runtime takes of these flags.
    pub fn settings(&self) -> KubeSettings {
        KubeSettings {
            tls_secret: self.tls_secret.clone(),
            webhook_config_name: self.webhook_config_name.clone(),
            ca_bundle_managed_externally: self.ca_bundle_managed_externally,
            istio_configmaps: self.istio_configmaps,
            istio_namespace: self.istio_namespace.clone(),
            revision: self.revision.to_string(),
            inject_config_map: self.inject_config_map.clone(),
            mesh_config_map: self.mesh_config_map.clone(),
            events: self.events,
        }
    }
}
