//! Well-known names of Istio injection: containers, annotations and labels the pipeline, the
//! webhook and the binary read or write, and injection's defaults. One definition each; every
//! module uses these.

/// Name of the injected proxy container.
pub const PROXY_CONTAINER: &str = "istio-proxy";
/// Name of the iptables init container.
pub const INIT_CONTAINER: &str = "istio-init";
/// Name of the CNI validation init container.
pub const VALIDATION_CONTAINER: &str = "istio-validation";
/// Annotation recording a previous injection (written by injection).
pub const STATUS_ANNOTATION: &str = "sidecar.istio.io/status";
/// Annotation recording user overrides of injected containers.
pub const OVERRIDES_ANNOTATION: &str = "proxy.istio.io/overrides";
/// Per-pod ProxyConfig annotation.
pub const PROXY_CONFIG_ANNOTATION: &str = "proxy.istio.io/config";
/// Template selection annotation.
pub const TEMPLATES_ANNOTATION: &str = "inject.istio.io/templates";
/// Native sidecar override annotation.
pub const NATIVE_SIDECAR_ANNOTATION: &str = "sidecar.istio.io/nativeSidecar";
/// The per-pod injection label and annotation.
pub const INJECT_KEY: &str = "sidecar.istio.io/inject";
/// Namespace annotation holding an OpenShift UID range.
pub const OPENSHIFT_UID_RANGE: &str = "openshift.io/sa.scc.uid-range";
/// Namespace annotation holding OpenShift supplemental groups.
pub const OPENSHIFT_SUPPLEMENTAL_GROUPS: &str = "openshift.io/sa.scc.supplemental-groups";
/// Label the API server sets on every namespace with its name.
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";
/// Default proxy UID/GID.
pub const DEFAULT_PROXY_ID: i64 = 1337;
/// Default cluster ID.
pub const DEFAULT_CLUSTER_ID: &str = "Kubernetes";
/// The pod label naming its network (`topology.istio.io/network`).
pub const NETWORK_LABEL: &str = "topology.istio.io/network";
/// The proxy environment variable carrying the network.
pub const NETWORK_ENV: &str = "ISTIO_META_NETWORK";
/// The proxy environment variable carrying the cluster ID.
pub const CLUSTER_ID_ENV: &str = "ISTIO_META_CLUSTER_ID";
/// The proxy environment variable carrying the app probers for the agent (written by
/// `finish::probes`, read back by re-injection's recovery and by drift).
pub const APP_PROBERS_ENV: &str = "ISTIO_KUBE_APP_PROBERS";
/// The proxy environment variable carrying the user's Prometheus scrape configuration for the
/// agent (written by `finish::prometheus`, read back by re-injection's recovery).
pub const PROMETHEUS_ENV: &str = "ISTIO_PROMETHEUS_ANNOTATIONS";
/// Go type of a pod in the schema tables.
pub const POD_TYPE: &str = "corev1.Pod";
/// Istio's revision label: the control plane revision a pod or namespace asks for.
pub const REVISION_LABEL: &str = "istio.io/rev";
/// Annotation outrigger's webhook writes on every pod it injects (istiod never writes it), so
/// the two injectors' pods can be told apart (`decide::selection::injected_by_outrigger`).
pub const INJECTED_BY_ANNOTATION: &str = "outrigger.dev/injected-by";
/// Value of [`INJECTED_BY_ANNOTATION`].
pub const INJECTED_BY_VALUE: &str = "outrigger";
