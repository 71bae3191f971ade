//! Istio's built-in defaults (`mesh.DefaultProxyConfig()`, `mesh.DefaultMeshConfig()` of
//! pkg/config/mesh/mesh.go) in canonical form.

use serde_json::{json, Value};

/// Default `configPath`.
pub const CONFIG_PATH: &str = "./etc/istio/proxy";
/// Default `binaryPath`.
pub const BINARY_PATH: &str = "/usr/local/bin/envoy";
/// Default `serviceCluster`.
pub const SERVICE_CLUSTER: &str = "istio-proxy";
/// Default `discoveryAddress`.
pub const DISCOVERY_ADDRESS: &str = "istiod.istio-system.svc:15012";
/// Default `drainDuration` in seconds.
pub const DRAIN_DURATION_SECS: i64 = 45;
/// Default `terminationDrainDuration` in seconds.
pub const TERMINATION_DRAIN_DURATION_SECS: i64 = 5;
/// Default `proxyAdminPort`.
pub const PROXY_ADMIN_PORT: i64 = 15000;
/// Default `statNameLength`.
pub const STAT_NAME_LENGTH: i64 = 189;
/// Default `statusPort`.
pub const STATUS_PORT: i64 = 15020;
/// Default `controlPlaneAuthPolicy`.
pub const CONTROL_PLANE_AUTH_POLICY: &str = "MUTUAL_TLS";

/// `mesh.DefaultProxyConfig()` in canonical form (declaration order).
pub fn proxy_config() -> Value {
    json!({
        "configPath": CONFIG_PATH,
        "binaryPath": BINARY_PATH,
        "serviceCluster": SERVICE_CLUSTER,
        "drainDuration": format!("{DRAIN_DURATION_SECS}s"),
        "discoveryAddress": DISCOVERY_ADDRESS,
        "proxyAdminPort": PROXY_ADMIN_PORT,
        "controlPlaneAuthPolicy": CONTROL_PLANE_AUTH_POLICY,
        "statNameLength": STAT_NAME_LENGTH,
        "statusPort": STATUS_PORT,
        "terminationDrainDuration": format!("{TERMINATION_DRAIN_DURATION_SECS}s"),
    })
}

/// `mesh.DefaultMeshConfig()` in canonical form (zero-valued defaults such as
/// `accessLogFile: ''`, `accessLogEncoding: TEXT` and empty lists are unset in proto3).
pub fn mesh_config() -> Value {
    json!({
        "proxyListenPort": 15001,
        "proxyInboundListenPort": 15006,
        "connectTimeout": "10s",
        "protocolDetectionTimeout": "0s",
        "ingressClass": "istio",
        "ingressService": "istio-ingressgateway",
        "ingressControllerMode": "STRICT",
        "enableTracing": true,
        "defaultConfig": proxy_config(),
        "outboundTrafficPolicy": {"mode": "ALLOW_ANY"},
        "inboundTrafficPolicy": {"mode": "PASSTHROUGH"},
        "enableAutoMtls": true,
        "trustDomain": "cluster.local",
        "defaultServiceExportTo": ["*"],
        "defaultVirtualServiceExportTo": ["*"],
        "defaultDestinationRuleExportTo": ["*"],
        "rootNamespace": "istio-system",
        "localityLbSetting": {"enabled": true},
        "dnsRefreshRate": "60s",
        "enablePrometheusMerge": true,
        "extensionProviders": [
            {"name": "prometheus", "prometheus": {}},
            {"name": "stackdriver", "stackdriver": {}},
            {"name": "envoy", "envoyFileAccessLog": {"path": "/dev/stdout"}},
        ],
        "defaultProviders": {},
    })
}
