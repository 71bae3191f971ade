//! kube-apiserver's storing of a pod, modelled for tests of drift against a cluster and for the
//! binary's fake API server, on its own (not on the crate's `kube::defaults`, which it checks):
//! written again from the Kubernetes sources (1.29 to 1.34, newest gates), each step naming the
//! Go function it follows. The library's drift tests include it with `#[path]`, and so do the
//! binary's `drift --kube` tests and its fake API server (`tests/common/admission.rs`).
#![allow(dead_code)]

use serde_json::{json, Map, Value};

/// Where the ServiceAccount admission plugin mounts the token.
pub const TOKEN_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// The token volume these models name (the plugin's is random after `kube-api-access-`).
pub const TOKEN_VOLUME: &str = "kube-api-access-7xk2p";

/// Get or make the object `m[k]`.
fn obj<'a>(m: &'a mut Map<String, Value>, k: &str) -> &'a mut Map<String, Value> {
    let v = m.entry(k).or_insert_with(|| json!({}));
    if !v.is_object() {
        *v = json!({});
    }
    v.as_object_mut().expect("object")
}

/// Whether `v` is Go's zero value once decoded (absent, null, "", 0).
fn unset(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(Value::Number(n)) => n.as_f64() == Some(0.0),
        _ => false,
    }
}

fn fill(m: &mut Map<String, Value>, k: &str, v: Value) {
    if unset(m.get(k)) {
        m.insert(k.to_string(), v);
    }
}

/// Pointer fields: only absent or null is unset (0 and false are values).
fn fill_ptr(m: &mut Map<String, Value>, k: &str, v: Value) {
    if matches!(m.get(k), None | Some(Value::Null)) {
        m.insert(k.to_string(), v);
    }
}

fn each<'a>(m: &'a mut Map<String, Value>, k: &str) -> Vec<&'a mut Map<String, Value>> {
    match m.get_mut(k) {
        Some(Value::Array(a)) => a.iter_mut().filter_map(Value::as_object_mut).collect(),
        _ => Vec::new(),
    }
}

/// `SetObjectDefaults_Pod` (zz_generated.defaults.go) with 1.34's gates (PodLevelResources on,
/// ImageVolume off): what the API server does to every pod it decodes, before admission and
/// after each webhook's patch.
pub fn decode_defaults(pod: &mut Value) {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    // SetDefaults_Pod: requests from limits (containers, init containers).
    for list in ["containers", "initContainers"] {
        for c in each(spec, list) {
            let Some(limits) = c.get("resources").and_then(|r| r.get("limits")).cloned() else {
                continue;
            };
            let Some(limits) = limits.as_object().cloned() else {
                continue;
            };
            let requests = obj(obj(c, "resources"), "requests");
            for (k, v) in limits {
                requests.entry(k).or_insert(v);
            }
        }
    }
    // (PodLevelResources: only with spec.resources, which these pods do not set.)
    fill_ptr(spec, "enableServiceLinks", json!(true));
    if spec.get("hostNetwork") == Some(&json!(true)) {
        for list in ["containers", "initContainers"] {
            for c in each(spec, list) {
                for p in each(c, "ports") {
                    if unset(p.get("hostPort")) {
                        let cp = p.get("containerPort").cloned().unwrap_or(json!(0));
                        p.insert("hostPort".into(), cp);
                    }
                }
            }
        }
    }
    // SetDefaults_PodSpec.
    fill(spec, "dnsPolicy", json!("ClusterFirst"));
    fill(spec, "restartPolicy", json!("Always"));
    fill_ptr(spec, "securityContext", json!({}));
    fill_ptr(spec, "terminationGracePeriodSeconds", json!(30));
    fill(spec, "schedulerName", json!("default-scheduler"));
    for v in each(spec, "volumes") {
        // SetDefaults_Volume: AllPtrFieldsNil(&VolumeSource) -> EmptyDir.
        let has_source = v.iter().any(|(k, val)| k != "name" && !val.is_null());
        if !has_source {
            v.insert("emptyDir".into(), json!({}));
        }
        if let Some(h) = v.get_mut("hostPath").and_then(Value::as_object_mut) {
            fill_ptr(h, "type", json!(""));
        }
        for s in ["secret", "configMap", "downwardAPI", "projected"] {
            if let Some(src) = v.get_mut(s).and_then(Value::as_object_mut) {
                fill_ptr(src, "defaultMode", json!(420));
            }
        }
        let api_version = |items: Vec<&mut Map<String, Value>>| {
            for item in items {
                if let Some(f) = item.get_mut("fieldRef").and_then(Value::as_object_mut) {
                    fill(f, "apiVersion", json!("v1"));
                }
            }
        };
        if let Some(d) = v.get_mut("downwardAPI").and_then(Value::as_object_mut) {
            api_version(each(d, "items"));
        }
        if let Some(p) = v.get_mut("projected").and_then(Value::as_object_mut) {
            for s in each(p, "sources") {
                if let Some(t) = s
                    .get_mut("serviceAccountToken")
                    .and_then(Value::as_object_mut)
                {
                    fill_ptr(t, "expirationSeconds", json!(3600));
                }
                if let Some(d) = s.get_mut("downwardAPI").and_then(Value::as_object_mut) {
                    api_version(each(d, "items"));
                }
            }
        }
        if let Some(s) = v.get_mut("iscsi").and_then(Value::as_object_mut) {
            fill(s, "iscsiInterface", json!("default"));
        }
        if let Some(s) = v.get_mut("rbd").and_then(Value::as_object_mut) {
            fill(s, "pool", json!("rbd"));
            fill(s, "user", json!("admin"));
            fill(s, "keyring", json!("/etc/ceph/keyring"));
        }
        if let Some(s) = v.get_mut("azureDisk").and_then(Value::as_object_mut) {
            fill_ptr(s, "cachingMode", json!("ReadWrite"));
            fill_ptr(s, "kind", json!("Shared"));
            fill_ptr(s, "fsType", json!("ext4"));
            fill_ptr(s, "readOnly", json!(false));
        }
        if let Some(s) = v.get_mut("scaleIO").and_then(Value::as_object_mut) {
            fill(s, "storageMode", json!("ThinProvisioned"));
            fill(s, "fsType", json!("xfs"));
        }
        if let Some(s) = v
            .get_mut("ephemeral")
            .and_then(|e| e.get_mut("volumeClaimTemplate"))
            .and_then(|t| t.get_mut("spec"))
            .and_then(Value::as_object_mut)
        {
            fill_ptr(s, "volumeMode", json!("Filesystem"));
        }
    }
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        for c in each(spec, list) {
            // SetDefaults_Container: `latest` (named or implied by no tag and no digest) is
            // Always, anything else IfNotPresent.
            let image = c
                .get("image")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let last = image.split('@').next().unwrap_or("");
            let last = last.rsplit('/').next().unwrap_or("");
            let latest = match last.split_once(':') {
                Some((_, tag)) => tag == "latest",
                None => !image.contains('@') && !image.is_empty() && image == image.to_lowercase(),
            };
            fill(
                c,
                "imagePullPolicy",
                json!(if latest { "Always" } else { "IfNotPresent" }),
            );
            fill(c, "terminationMessagePath", json!("/dev/termination-log"));
            fill(c, "terminationMessagePolicy", json!("File"));
            for p in each(c, "ports") {
                fill(p, "protocol", json!("TCP"));
            }
            for e in each(c, "env") {
                if let Some(f) = e
                    .get_mut("valueFrom")
                    .and_then(|v| v.get_mut("fieldRef"))
                    .and_then(Value::as_object_mut)
                {
                    fill(f, "apiVersion", json!("v1"));
                }
            }
            for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
                let Some(p) = c.get_mut(probe).and_then(Value::as_object_mut) else {
                    continue;
                };
                fill(p, "timeoutSeconds", json!(1));
                fill(p, "periodSeconds", json!(10));
                fill(p, "successThreshold", json!(1));
                fill(p, "failureThreshold", json!(3));
                if let Some(g) = p.get_mut("httpGet").and_then(Value::as_object_mut) {
                    fill(g, "path", json!("/"));
                    fill(g, "scheme", json!("HTTP"));
                }
                if let Some(g) = p.get_mut("grpc").and_then(Value::as_object_mut) {
                    fill_ptr(g, "service", json!(""));
                }
            }
            if let Some(l) = c.get_mut("lifecycle").and_then(Value::as_object_mut) {
                for hook in ["postStart", "preStop"] {
                    if let Some(g) = l
                        .get_mut(hook)
                        .and_then(|h| h.get_mut("httpGet"))
                        .and_then(Value::as_object_mut)
                    {
                        fill(g, "path", json!("/"));
                        fill(g, "scheme", json!("HTTP"));
                    }
                }
            }
        }
    }
}

/// The ServiceAccount admission plugin (plugin/pkg/admission/serviceaccount/admission.go) on
/// create: `serviceAccountName: default`; unless automounting is off (the pod's
/// `automountServiceAccountToken`, else the account's), every init container and container
/// without a mount at the token path gets one of the token volume (an existing
/// `kube-api-access-*` volume, else `volume`, added when a container needed it).
pub fn service_account(pod: &mut Value, sa_automount: Option<bool>, volume: &str) {
    let spec = pod["spec"].as_object_mut().expect("spec");
    fill(spec, "serviceAccountName", json!("default"));
    let on = spec
        .get("automountServiceAccountToken")
        .and_then(Value::as_bool)
        .or(sa_automount)
        .unwrap_or(true);
    if !on {
        return;
    }
    let existing = spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v["name"].as_str())
        .find(|n| n.starts_with("kube-api-access-"))
        .map(str::to_string);
    let name = existing.clone().unwrap_or_else(|| volume.to_string());
    let mut needed = false;
    for list in ["initContainers", "containers"] {
        for c in each(spec, list) {
            let mounts = c.entry("volumeMounts").or_insert_with(|| json!([]));
            let mounts = mounts.as_array_mut().expect("mounts");
            if !mounts.iter().any(|m| m["mountPath"] == TOKEN_MOUNT_PATH) {
                mounts.push(json!({"name": name, "readOnly": true,
                    "mountPath": TOKEN_MOUNT_PATH}));
                needed = true;
            }
        }
    }
    if existing.is_none() && needed {
        let volumes = spec.entry("volumes").or_insert_with(|| json!([]));
        volumes.as_array_mut().expect("volumes").push(
            json!({"name": name, "projected": {"defaultMode": 420, "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt",
                           "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace",
                "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}),
        );
    }
}

/// DefaultTolerationSeconds (plugin/pkg/admission/defaulttolerationseconds/admission.go):
/// not-ready, then unreachable, `NoExecute` for 300 s, each unless already tolerated.
pub fn default_tolerations(pod: &mut Value) {
    let spec = pod["spec"].as_object_mut().expect("spec");
    for taint in [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ] {
        let tolerated = spec
            .get("tolerations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|t| {
                let key = t["key"].as_str().unwrap_or("");
                let effect = t["effect"].as_str().unwrap_or("");
                (key.is_empty() || key == taint) && (effect.is_empty() || effect == "NoExecute")
            });
        if !tolerated {
            let list = spec.entry("tolerations").or_insert_with(|| json!([]));
            list.as_array_mut()
                .expect("tolerations")
                .push(json!({"key": taint,
                "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}));
        }
    }
}

/// Priority (plugin/pkg/admission/priority/admission.go) in a cluster without PriorityClasses
/// of its own: no class gives priority 0 and `PreemptLowerPriority`; the system classes their
/// values.
pub fn priority(pod: &mut Value) {
    let spec = pod["spec"].as_object_mut().expect("spec");
    let value = match spec.get("priorityClassName").and_then(Value::as_str) {
        Some("system-node-critical") => 2_000_001_000,
        Some("system-cluster-critical") => 2_000_000_000,
        _ => 0,
    };
    spec.insert("priority".into(), json!(value));
    spec.insert("preemptionPolicy".into(), json!("PreemptLowerPriority"));
}

/// LimitRanger (plugin/pkg/admission/limitranger/admission.go) with one LimitRange's
/// `Container` defaults (`default` limits, `defaultRequest` requests, the LimitRange itself
/// defaulted: limits from max, requests from limits then min), with its annotation.
pub fn limit_ranger(pod: &mut Value, limit_range: &Value) {
    let mut limits = Map::new();
    let mut requests = Map::new();
    for item in limit_range["spec"]["limits"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if item["type"] != "Container" {
            continue;
        }
        let get = |k: &str| item[k].as_object().cloned().unwrap_or_default();
        let mut l = get("default");
        for (k, v) in get("max") {
            l.entry(k).or_insert(v);
        }
        let mut r = get("defaultRequest");
        for (k, v) in l.clone().into_iter().chain(get("min")) {
            r.entry(k).or_insert(v);
        }
        limits.extend(l);
        requests.extend(r);
    }
    let mut said = Vec::new();
    let spec = pod["spec"].as_object_mut().expect("spec");
    for (list, what) in [
        ("containers", "container"),
        ("initContainers", "init container"),
    ] {
        for c in each(spec, list) {
            let name = c["name"].as_str().unwrap_or("").to_string();
            let res = obj(c, "resources");
            let mut set = |kind: &str, from: &Map<String, Value>| {
                let into = obj(res, kind);
                let mut names: Vec<String> = from
                    .iter()
                    .filter(|(k, _)| !into.contains_key(*k))
                    .map(|(k, _)| k.clone())
                    .collect();
                for k in &names {
                    into.insert(k.clone(), from[k].clone());
                }
                names.sort();
                names
            };
            let l = set("limits", &limits);
            let r = set("requests", &requests);
            if res.get("limits").is_some_and(|l| l == &json!({})) {
                res.remove("limits");
            }
            if res.get("requests").is_some_and(|l| l == &json!({})) {
                res.remove("requests");
            }
            if !r.is_empty() {
                said.push(format!("{} request for {what} {name}", r.join(", ")));
            }
            if !l.is_empty() {
                said.push(format!("{} limit for {what} {name}", l.join(", ")));
            }
        }
    }
    if !said.is_empty() {
        let meta = pod["metadata"].as_object_mut().expect("metadata");
        obj(meta, "annotations").insert(
            "kubernetes.io/limit-ranger".into(),
            json!(format!("LimitRanger plugin set: {}", said.join("; "))),
        );
    }
}

/// What kube-apiserver does to a pod it stores, as a drift test's fixture: `before_webhook`
/// is the pod a webhook receives (decoded with defaults, then the ServiceAccount,
/// DefaultTolerationSeconds and Priority plugins), else the pod stored after it answered
/// (defaulted again; the in-tree plugins reinvoked, as a webhook asking for reinvocation
/// makes them: the token mounted in the injected containers; a LimitRange with a default
/// ephemeral-storage limit and request; then a node, managedFields, status and another
/// webhook's label).
pub fn as_apiserver_stores(pod: &mut Value, before_webhook: bool) {
    decode_defaults(pod);
    service_account(pod, None, TOKEN_VOLUME);
    if before_webhook {
        default_tolerations(pod);
        priority(pod);
        return;
    }
    limit_ranger(
        pod,
        &json!({"spec": {"limits": [{"type": "Container",
            "default": {"ephemeral-storage": "1Gi"}}]}}),
    );
    let spec = pod["spec"].as_object_mut().expect("spec");
    spec.insert("nodeName".into(), json!("node-3"));
    pod["metadata"]["managedFields"] = json!([{"manager": "kube-controller-manager",
        "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:labels": {".": {}}}}}]);
    pod["metadata"]["uid"] = json!("0d6e5d1e-4a8f-4f62-9d6f-1b7f8b7c1e3a");
    // Another webhook's label.
    pod["metadata"]["labels"]["policy.example/checked"] = json!("true");
    pod["status"] = json!({"phase": "Running", "podIP": "10.0.0.7"});
}
