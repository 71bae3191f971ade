//! kube-apiserver's storing of a pod, modelled for tests of drift against a cluster, on its own
//! (not on the crate's `kube::stored`, which it checks): the library's drift tests include it
//! with `#[path]`, and so do the binary's `drift --kube` tests.

use serde_json::{json, Value};

/// Where the ServiceAccount admission plugin mounts the token.
const TOKEN_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// What kube-apiserver does to a pod it stores, modelled independently of
/// outrigger-inject's `kube::stored` on `pkg/apis/core/v1/defaults.go`, the ServiceAccount and
/// LimitRanger admission plugins and the registry: `before_webhook` is the pod a webhook
/// receives, else the pod stored after it answered.
pub fn as_apiserver_stores(pod: &mut Value, before_webhook: bool) {
    let token = "kube-api-access-7xk2p";
    let spec = pod["spec"].as_object_mut().expect("spec");
    let volumes = spec.entry("volumes").or_insert_with(|| json!([]));
    let volumes = volumes.as_array_mut().expect("volumes");
    if !volumes.iter().any(|v| v["name"] == token) {
        volumes.push(
            json!({"name": token, "projected": {"defaultMode": 420, "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt",
                           "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace",
                "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}),
        );
    }
    for v in volumes.iter_mut() {
        for s in ["secret", "configMap", "downwardAPI", "projected"] {
            if let Some(src) = v.get_mut(s).and_then(Value::as_object_mut) {
                src.entry("defaultMode").or_insert(json!(420));
            }
        }
        if let Some(items) = v
            .pointer_mut("/downwardAPI/items")
            .and_then(Value::as_array_mut)
        {
            for it in items {
                if let Some(f) = it.get_mut("fieldRef").and_then(Value::as_object_mut) {
                    f.entry("apiVersion").or_insert(json!("v1"));
                }
            }
        }
    }
    for list in ["initContainers", "containers"] {
        for c in spec
            .get_mut(list)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            let c = c.as_object_mut().expect("container");
            let mounts = c.entry("volumeMounts").or_insert_with(|| json!([]));
            let mounts = mounts.as_array_mut().expect("mounts");
            if !mounts.iter().any(|m| m["mountPath"] == TOKEN_MOUNT_PATH) {
                mounts.push(json!({"name": token, "readOnly": true,
                    "mountPath": TOKEN_MOUNT_PATH}));
            }
            c.entry("terminationMessagePath")
                .or_insert(json!("/dev/termination-log"));
            c.entry("terminationMessagePolicy").or_insert(json!("File"));
            // `Always` for the `latest` tag or none (the tag follows the last `/`), unless a
            // digest pins the image.
            let image = c["image"].as_str().unwrap_or("");
            let tag = image.rsplit('/').next().and_then(|n| n.split_once(':'));
            let latest = !image.contains('@') && tag.is_none_or(|(_, t)| t == "latest");
            c.entry("imagePullPolicy").or_insert(json!(if latest {
                "Always"
            } else {
                "IfNotPresent"
            }));
            for p in c
                .get_mut("ports")
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                p.as_object_mut()
                    .expect("port")
                    .entry("protocol")
                    .or_insert(json!("TCP"));
            }
            for e in c
                .get_mut("env")
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                if let Some(f) = e.pointer_mut("/valueFrom/fieldRef") {
                    f.as_object_mut()
                        .expect("ref")
                        .entry("apiVersion")
                        .or_insert(json!("v1"));
                }
            }
            for probe in ["readinessProbe", "livenessProbe", "startupProbe"] {
                if let Some(p) = c.get_mut(probe).and_then(Value::as_object_mut) {
                    for (k, v) in [
                        ("timeoutSeconds", 1),
                        ("periodSeconds", 10),
                        ("successThreshold", 1),
                        ("failureThreshold", 3),
                    ] {
                        p.entry(k).or_insert(json!(v));
                    }
                    if let Some(g) = p.get_mut("httpGet").and_then(Value::as_object_mut) {
                        g.entry("scheme").or_insert(json!("HTTP"));
                        g.entry("path").or_insert(json!("/"));
                    }
                }
            }
            // A LimitRange with a default ephemeral-storage limit (and request).
            if !before_webhook {
                let r = c.entry("resources").or_insert_with(|| json!({}));
                for kind in ["limits", "requests"] {
                    let m = r
                        .as_object_mut()
                        .expect("resources")
                        .entry(kind)
                        .or_insert_with(|| json!({}));
                    m.as_object_mut()
                        .expect(kind)
                        .entry("ephemeral-storage")
                        .or_insert(json!("1Gi"));
                }
            }
        }
    }
    for (k, v) in [
        ("dnsPolicy", json!("ClusterFirst")),
        ("restartPolicy", json!("Always")),
        ("schedulerName", json!("default-scheduler")),
        ("serviceAccountName", json!("default")),
        ("terminationGracePeriodSeconds", json!(30)),
        ("enableServiceLinks", json!(true)),
        ("securityContext", json!({})),
        (
            "tolerations",
            json!([{"key": "node.kubernetes.io/not-ready",
                       "operator": "Exists", "effect": "NoExecute",
                       "tolerationSeconds": 300}]),
        ),
    ] {
        spec.entry(k).or_insert(v);
    }
    if !before_webhook {
        spec.insert("nodeName".into(), json!("node-3"));
        pod["metadata"]["managedFields"] = json!([{"manager": "kube-controller-manager",
            "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {".": {}}}}}]);
        pod["metadata"]["uid"] = json!("0d6e5d1e-4a8f-4f62-9d6f-1b7f8b7c1e3a");
        // Another webhook's label.
        pod["metadata"]["labels"]["policy.example/checked"] = json!("true");
        pod["status"] = json!({"phase": "Running", "podIP": "10.0.0.7"});
    }
}
