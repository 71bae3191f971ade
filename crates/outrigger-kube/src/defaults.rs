//! The names `serve`, `webhook-config` and `deploy/base` agree on: where the injector runs, the
//! Service the API server calls, the objects it installs, the namespaces never sent to it.
//!
//! One place, so that a command run without flags produces exactly what the install expects
//! (`tests/deploy_manifests.rs` renders `deploy/base` and compares). Constants only: the
//! integration tests include this file as it is.

/// The namespace the injector is installed in (`deploy/base`), and `serve --namespace`'s default
/// without `POD_NAMESPACE`.
pub const NAMESPACE: &str = "outrigger";

/// The Service in front of the injector (in [`NAMESPACE`]); its DNS names are those of the
/// serving certificate (`outrigger.outrigger.svc`, ...).
pub const SERVICE: &str = "outrigger";

/// The MutatingWebhookConfiguration `webhook-config` prints and `serve --kube` keeps the
/// `caBundle` of.
pub const WEBHOOK_CONFIG_NAME: &str = "outrigger-sidecar-injector";

/// The Secret holding the serving certificate and CA with `serve --kube`.
pub const TLS_SECRET: &str = "outrigger-tls";

/// Namespaces no webhook entry sends to the injector (`kubernetes.io/metadata.name NotIn`): its
/// own (a pod of the injector must never wait for the injector) and the system's.
pub const EXCLUDED_NAMESPACES: [&str; 2] = [NAMESPACE, "kube-system"];

/// The serving certificate's DNS names for `service` in `namespace`, as the API server and
/// in-cluster clients call it.
pub fn service_dns_names(service: &str, namespace: &str) -> [String; 4] {
    [
        service.to_string(),
        format!("{service}.{namespace}"),
        format!("{service}.{namespace}.svc"),
        format!("{service}.{namespace}.svc.cluster.local"),
    ]
}

/// `timeoutSeconds` of every webhook entry `webhook-config` prints and `deploy/` ships: a hung
/// replica costs a pod creation this long, not the API server's default of 10 s.
pub const WEBHOOK_TIMEOUT_SECONDS: u8 = 5;

/// `serve --request-timeout`'s default: below [`WEBHOOK_TIMEOUT_SECONDS`], so the server answers
/// (or gives up) before the API server stops waiting.
pub const REQUEST_TIMEOUT: &str = "4s";
