//! Inputs shared by the criterion benches and the callgrind harness (`examples/profile.rs`), so
//! both measure the same pod with the same settings.
#![allow(dead_code)] // each bench and example takes some

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

/// The pod of a size class of `scripts/cpu-per-injection.sh` and the instruction counts
/// (`hello`: the pod of `scripts/load.sh`; `env-N`: N env vars in the one container;
/// `containers-N`: N containers of 10 env vars, a port and a probe each; `managedfields-KB`: KB
/// kilobytes of managedFields), a Deployment's pod as its ReplicaSet creates it and the API
/// server sends it; `None` for an unknown class.
pub fn class_pod(class: &str) -> Option<Value> {
    let num = |prefix: &str| class.strip_prefix(prefix)?.parse::<usize>().ok();
    let mut pod = if class == "hello" {
        json!({"metadata": {"labels": {"app": "hello"}},
               "spec": {"containers": [{"name": "hello", "image": "fake.docker.io/google-samples/hello-go-gke:1.0",
                        "ports": [{"name": "http", "containerPort": 80}], "resources": {}}]}})
    } else if let Some(n) = num("env-") {
        hello_pod(1, n, 0)
    } else if let Some(n) = num("containers-") {
        hello_pod(n, 10, 0)
    } else if let Some(kb) = num("managedfields-") {
        hello_pod(1, 0, kb * 1024)
    } else {
        return None;
    };
    pod["apiVersion"] = json!("v1");
    pod["kind"] = json!("Pod");
    let meta = &mut pod["metadata"];
    if let Some(m) = meta.as_object_mut() {
        m.remove("name");
    }
    meta["generateName"] = json!("hello-7d4f9-");
    meta["namespace"] = json!("default");
    meta["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "hello-7d4f9",
        "uid": "6b1e0f7e-0000-0000-0000-000000000000", "controller": true, "blockOwnerDeletion": true}]);
    // As the API server sends it: Go's encoding of the Pod type (fields in the struct's order,
    // empty ones omitted), so the webhook takes its path for pods in normal form.
    outrigger_inject::inject::normalize_pod(&mut pod).expect("a valid pod");
    Some(pod)
}

/// The AdmissionReview (`admission.k8s.io/v1`) creating `pod`.
pub fn admission_review(pod: Value) -> Value {
    json!({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1",
           "request": {"uid": "load-test", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                       "resource": {"group": "", "version": "v1", "resource": "pods"},
                       "namespace": "default", "operation": "CREATE", "object": pod}})
}

/// The webhook's inputs besides the review, as `outrigger serve` runs them with `s` (native
/// sidecars on, no cluster, the default revision and list bound).
pub fn webhook_context(s: &Snapshot) -> outrigger_inject::webhook::Context<'_> {
    use outrigger_inject::decide::native::{NativeMode, NoCluster};
    outrigger_inject::webhook::Context {
        snapshot: s,
        native_mode: NativeMode::Enabled,
        cluster: &NoCluster,
        openshift: false,
        compliance_policy: "",
        revision: outrigger_inject::webhook::REVISION,
        keep_metadata: false,
        max_list_entries: outrigger_inject::webhook::MAX_LIST_ENTRIES,
    }
}

/// The body of the AdmissionReview of size class `class` ([`class_pod`]); panics on an
/// unknown class.
pub fn class_review_body(class: &str) -> Vec<u8> {
    let pod = class_pod(class).unwrap_or_else(|| panic!("unknown size class {class:?}"));
    serde_json::to_vec(&admission_review(pod)).expect("encode review")
}
