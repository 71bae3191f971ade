//! A pod as the API server stores it, for the parts injection writes: what kube-apiserver's
//! defaulting (`k8s.io/kubernetes/pkg/apis/core/v1/defaults.go`) and the `ServiceAccount`
//! admission plugin add to containers and volumes after a mutating webhook has answered.
//!
//! [`store_defaults`] applies them to a pod tree; it is idempotent, so applying it to a pod read
//! from the cluster changes nothing, and applying it to a freshly injected pod makes the two
//! comparable. Pod-level defaults (`dnsPolicy`, `schedulerName`, ...) are left alone: drift does
//! not compare them.

use serde_json::{json, Map, Value};

use crate::kube::pod::container_name;

/// Where the `ServiceAccount` admission plugin mounts the service-account token.
pub const TOKEN_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// The container lists of a pod spec.
const LISTS: [&str; 3] = ["initContainers", "containers", "ephemeralContainers"];

/// Apply the API server's container and volume defaults and the service-account token mount
/// to `pod` (`{metadata, spec}`).
pub fn store_defaults(pod: &mut Value) {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let token = token_mount(spec);
    for list in LISTS {
        for c in spec
            .get_mut(list)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            let Some(c) = c.as_object_mut() else { continue };
            if let Some(mount) = &token {
                add_token_mount(c, mount);
            }
            container_defaults(c);
        }
    }
    for v in spec
        .get_mut("volumes")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        if let Some(v) = v.as_object_mut() {
            volume_defaults(v);
        }
    }
}

/// The token mount the plugin gives every container: the mount at [`TOKEN_MOUNT_PATH`] of
/// some container, when the pod has that volume (none when automounting is off).
fn token_mount(spec: &Map<String, Value>) -> Option<Value> {
    let volumes = spec.get("volumes").and_then(Value::as_array)?;
    LISTS
        .iter()
        .filter_map(|l| spec.get(*l).and_then(Value::as_array))
        .flatten()
        .filter_map(|c| c.get("volumeMounts").and_then(Value::as_array))
        .flatten()
        .find(|m| {
            m.get("mountPath").and_then(Value::as_str) == Some(TOKEN_MOUNT_PATH)
                && volumes
                    .iter()
                    .any(|v| container_name(v) == container_name(m))
        })
        .cloned()
}

fn add_token_mount(c: &mut Map<String, Value>, mount: &Value) {
    let mounts = c.entry("volumeMounts").or_insert_with(|| json!([]));
    let Some(mounts) = mounts.as_array_mut() else {
        return;
    };
    if !mounts
        .iter()
        .any(|m| m.get("mountPath").and_then(Value::as_str) == Some(TOKEN_MOUNT_PATH))
    {
        mounts.push(mount.clone());
    }
}

/// Set `key` to `value` when absent.
fn default(m: &mut Map<String, Value>, key: &str, value: Value) {
    m.entry(key).or_insert(value);
}

/// `SetDefaults_Container`, `_ContainerPort`, `_EnvVar` (field references), `_Probe` and
/// `_HTTPGetAction`, `_LifecycleHandler`, and requests defaulted from limits
/// (`SetDefaults_Pod`).
fn container_defaults(c: &mut Map<String, Value>) {
    default(c, "terminationMessagePath", json!("/dev/termination-log"));
    default(c, "terminationMessagePolicy", json!("File"));
    if !c.contains_key("imagePullPolicy") {
        let image = c.get("image").and_then(Value::as_str).unwrap_or("");
        c.insert("imagePullPolicy".into(), json!(pull_policy(image)));
    }
    for p in c
        .get_mut("ports")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
    {
        default(p, "protocol", json!("TCP"));
    }
    for e in c
        .get_mut("env")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        if let Some(f) = e
            .pointer_mut("/valueFrom/fieldRef")
            .and_then(Value::as_object_mut)
        {
            default(f, "apiVersion", json!("v1"));
        }
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = c.get_mut(probe).and_then(Value::as_object_mut) {
            default(p, "timeoutSeconds", json!(1));
            default(p, "periodSeconds", json!(10));
            default(p, "successThreshold", json!(1));
            default(p, "failureThreshold", json!(3));
            handler_defaults(p);
        }
    }
    if let Some(l) = c.get_mut("lifecycle").and_then(Value::as_object_mut) {
        for hook in ["postStart", "preStop"] {
            if let Some(h) = l.get_mut(hook).and_then(Value::as_object_mut) {
                handler_defaults(h);
            }
        }
    }
    if let Some(r) = c.get_mut("resources").and_then(Value::as_object_mut) {
        if let Some(limits) = r.get("limits").and_then(Value::as_object).cloned() {
            let requests = r
                .entry("requests")
                .or_insert_with(|| json!({}))
                .as_object_mut();
            if let Some(requests) = requests {
                for (k, v) in limits {
                    requests.entry(k).or_insert(v);
                }
            }
        }
    }
}

/// `SetDefaults_HTTPGetAction`: path `/`, scheme `HTTP`.
fn handler_defaults(h: &mut Map<String, Value>) {
    if let Some(g) = h.get_mut("httpGet").and_then(Value::as_object_mut) {
        default(g, "path", json!("/"));
        default(g, "scheme", json!("HTTP"));
    }
}

/// `SetDefaults_Container`'s pull policy: `Always` for the `latest` tag or no tag (and no
/// digest), else `IfNotPresent`.
fn pull_policy(image: &str) -> &'static str {
    if image.contains('@') {
        return "IfNotPresent";
    }
    // The tag follows the last `:` after the last `/` (a `:` before it is a registry port).
    let last = image.rsplit('/').next().unwrap_or(image);
    match last.rsplit_once(':') {
        Some((_, "latest")) | None => "Always",
        Some(_) => "IfNotPresent",
    }
}

/// `SetDefaults_{Secret,ConfigMap,DownwardAPI,Projected}VolumeSource` (mode 0644) and
/// `SetDefaults_ServiceAccountTokenProjection` (one hour).
fn volume_defaults(v: &mut Map<String, Value>) {
    for source in ["secret", "configMap", "downwardAPI", "projected"] {
        if let Some(s) = v.get_mut(source).and_then(Value::as_object_mut) {
            default(s, "defaultMode", json!(420));
            field_refs(s.get_mut("items"));
        }
    }
    for s in v
        .get_mut("projected")
        .and_then(|p| p.get_mut("sources"))
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        if let Some(t) = s
            .get_mut("serviceAccountToken")
            .and_then(Value::as_object_mut)
        {
            default(t, "expirationSeconds", json!(3600));
        }
        if let Some(d) = s.get_mut("downwardAPI") {
            field_refs(d.get_mut("items"));
        }
    }
}

/// Field references of downward-API items: `apiVersion: v1`.
fn field_refs(items: Option<&mut Value>) {
    for i in items.and_then(Value::as_array_mut).into_iter().flatten() {
        if let Some(f) = i.get_mut("fieldRef").and_then(Value::as_object_mut) {
            default(f, "apiVersion", json!("v1"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pull_policy_follows_the_tag() {
        for (image, want) in [
            ("nginx", "Always"),
            ("nginx:latest", "Always"),
            ("nginx:1.27", "IfNotPresent"),
            ("registry:5000/nginx", "Always"),
            ("registry:5000/nginx:1", "IfNotPresent"),
            ("nginx@sha256:abcd", "IfNotPresent"),
        ] {
            assert_eq!(pull_policy(image), want, "{image}");
        }
    }

    #[test]
    fn defaults_fill_only_what_is_absent_and_are_idempotent() {
        let mut pod = json!({"spec": {
            "containers": [
                {"name": "app", "image": "app:1", "imagePullPolicy": "Never",
                 "volumeMounts": [{"name": "kube-api-access-x", "mountPath": TOKEN_MOUNT_PATH,
                                   "readOnly": true}],
                 "readinessProbe": {"httpGet": {"port": 80}, "periodSeconds": 5},
                 "resources": {"limits": {"cpu": "1"}, "requests": {"memory": "1Gi"}}},
                {"name": "side", "image": "side", "ports": [{"containerPort": 1}]}
            ],
            "volumes": [
                {"name": "kube-api-access-x", "projected": {"sources": [
                    {"serviceAccountToken": {"path": "token"}}]}},
                {"name": "cfg", "configMap": {"name": "c", "defaultMode": 256}}
            ]
        }});
        store_defaults(&mut pod);
        let once = pod.clone();
        store_defaults(&mut pod);
        assert_eq!(pod, once);
        let app = &pod["spec"]["containers"][0];
        assert_eq!(app["imagePullPolicy"], "Never");
        assert_eq!(
            app["readinessProbe"],
            json!({"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "periodSeconds": 5,
                   "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3})
        );
        assert_eq!(
            app["resources"]["requests"],
            json!({"memory": "1Gi", "cpu": "1"})
        );
        let side = &pod["spec"]["containers"][1];
        assert_eq!(side["imagePullPolicy"], "Always");
        assert_eq!(side["ports"][0]["protocol"], "TCP");
        assert_eq!(side["volumeMounts"], app["volumeMounts"]);
        let v = &pod["spec"]["volumes"];
        assert_eq!(v[0]["projected"]["defaultMode"], 420);
        assert_eq!(
            v[0]["projected"]["sources"][0]["serviceAccountToken"]["expirationSeconds"],
            3600
        );
        assert_eq!(v[1]["configMap"]["defaultMode"], 256);
    }

    #[test]
    fn no_token_volume_no_mount() {
        let mut pod = json!({"spec": {"containers": [
            {"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]}});
        store_defaults(&mut pod);
        assert!(pod["spec"]["containers"][1].get("volumeMounts").is_none());
    }
}
