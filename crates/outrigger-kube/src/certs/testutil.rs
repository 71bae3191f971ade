//! Helpers shared by the certificate tests: the configuration, a fixed clock, and the objects
//! the fake API server answers with.

use k8s_openapi::api::core::v1::Secret;
use serde_json::{json, Value};
use time::OffsetDateTime;

use super::store::secret_object;
use super::{service_dns_names, CertBundle, CertConfig};

pub fn cfg(webhook: Option<&str>) -> CertConfig {
    CertConfig {
        namespace: "outrigger".into(),
        secret: "outrigger-tls".into(),
        dns_names: service_dns_names("outrigger", "outrigger"),
        webhook: webhook.map(str::to_string),
        observe: None,
    }
}

pub fn now() -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp(1_800_000_000).expect("valid time")
}

pub const SECRET_PATH: &str = "/api/v1/namespaces/outrigger/secrets/outrigger-tls";
pub const SECRETS_PATH: &str = "/api/v1/namespaces/outrigger/secrets?";

pub fn secret_json(bundle: &CertBundle, rv: &str) -> Value {
    let mut s = serde_json::to_value(secret_object(&cfg(None), bundle, Some(rv.into())))
        .expect("serialisable");
    s["apiVersion"] = json!("v1");
    s["kind"] = json!("Secret");
    s
}

/// The bundle in the `data` of a merge patch.
pub fn bundle_from_data(body: &Value) -> CertBundle {
    let secret = Secret {
        data: Some(serde_json::from_value(body["data"].clone()).expect("data map")),
        ..Secret::default()
    };
    CertBundle::from_secret(&secret).expect("valid bundle sent")
}

pub fn bundle_of(body: &Value) -> CertBundle {
    let secret: Secret = serde_json::from_value(body.clone()).expect("a Secret was sent");
    CertBundle::from_secret(&secret).expect("valid bundle sent")
}

pub fn mwc_json(ca: Option<&str>) -> Value {
    let cc = |ca: Option<&str>| match ca {
        Some(c) => {
            json!({"service": {"name": "outrigger", "namespace": "outrigger"}, "caBundle": c})
        }
        None => json!({"service": {"name": "outrigger", "namespace": "outrigger"}}),
    };
    let entry = |name: &str, ca: Option<&str>| json!({"name": name, "clientConfig": cc(ca), "sideEffects": "None", "admissionReviewVersions": ["v1"]});
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "outrigger-sidecar-injector", "resourceVersion": "5"},
        "webhooks": [
            entry("rev.namespace.sidecar-injector.istio.io", ca),
            entry("namespace.sidecar-injector.istio.io", None),
            entry("other.example.com", Some("b3RoZXI=")),
        ]
    })
}

pub const MWC_PATH: &str = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/outrigger-sidecar-injector";
