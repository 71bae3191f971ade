//! Inputs shared by the criterion benches and the callgrind harness (`examples/profile.rs`), so
//! both measure the same pod with the same settings.

#[path = "../../tests/inputs/mod.rs"]
mod inputs;

use outrigger_inject::config::Snapshot;
use outrigger_inject::inject::InjectParams;
use serde_json::{json, Value};

/// Istio's chart defaults from the conformance corpus when present, else the embedded default.
pub fn snapshot() -> Snapshot {
    match inputs::corpus().map(|root| root.join("settings/default")) {
        Some(dir) => {
            eprintln!(
                "bench settings: Istio chart defaults from {}",
                dir.display()
            );
            inputs::snapshot(&dir, &dir.join("mesh.yaml"), false).expect("snapshot")
        }
        None => {
            eprintln!("bench settings: embedded default (corpus not found)");
            outrigger_inject::config::defaults::snapshot().expect("embedded default")
        }
    }
}

/// The hello Deployment's pod with `containers` containers, `env_vars` env vars each and at
/// least `managed_fields_bytes` of managedFields.
pub fn hello_pod(containers: usize, env_vars: usize, managed_fields_bytes: usize) -> Value {
    let env: Vec<Value> = (0..env_vars)
        .map(|i| json!({"name": format!("VAR_{i}"), "value": format!("value-{i}")}))
        .collect();
    let containers: Vec<Value> = (0..containers)
        .map(|i| {
            json!({"name": format!("hello-{i}"), "image": "fake.docker.io/google-samples/hello-go-gke:1.0",
                   "ports": [{"name": "http", "containerPort": 80 + i, "protocol": "TCP"}],
                   "env": env, "readinessProbe": {"httpGet": {"path": "/ready", "port": 80 + i}}})
        })
        .collect();
    let mut managed = Vec::new();
    let mut size = 0;
    while size < managed_fields_bytes {
        let entry = json!({"manager": "kubectl", "operation": "Update", "apiVersion": "v1",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {(format!("f:label-{size}")): {}}},
            "f:spec": {"f:containers": {(format!("k:{{\"name\":\"c-{size}\"}}")): {".": {}, "f:image": {}, "f:name": {}}}}}});
        size += entry.to_string().len();
        managed.push(entry);
    }
    json!({"metadata": {"name": "hello", "namespace": "default", "labels": {"app": "hello"},
                        "managedFields": managed},
           "spec": {"containers": containers}})
}

/// Webhook-mode parameters for the hello Deployment, native sidecars on.
pub fn params(s: &Snapshot) -> InjectParams<'_> {
    inputs::hello_params(s, true)
}
