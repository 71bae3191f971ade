//! Well-known names: the containers and annotations injection adds or reads, and its defaults.

/// Name of the proxy container.
pub const PROXY_CONTAINER: &str = "istio-proxy";
/// Name of the iptables init container.
pub const INIT_CONTAINER: &str = "istio-init";
/// Name of the CNI validation init container.
pub const VALIDATION_CONTAINER: &str = "istio-validation";
/// Annotation recording a previous injection.
pub const STATUS_ANNOTATION: &str = "sidecar.istio.io/status";
/// Annotation recording user overrides of injected containers.
pub const OVERRIDES_ANNOTATION: &str = "proxy.istio.io/overrides";
/// Per-pod ProxyConfig annotation.
pub const PROXY_CONFIG_ANNOTATION: &str = "proxy.istio.io/config";
/// Template selection annotation.
pub const TEMPLATES_ANNOTATION: &str = "inject.istio.io/templates";
/// Native sidecar override annotation.
pub const NATIVE_SIDECAR_ANNOTATION: &str = "sidecar.istio.io/nativeSidecar";
/// Default proxy UID/GID.
pub const DEFAULT_PROXY_ID: i64 = 1337;
/// Default cluster ID.
pub const DEFAULT_CLUSTER_ID: &str = "Kubernetes";
/// Go type of a pod in the schema tables.
pub const POD_TYPE: &str = "corev1.Pod";
