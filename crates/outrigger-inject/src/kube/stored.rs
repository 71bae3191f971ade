//! A pod as the API server stores it, for drift: kube-apiserver's defaulting of the whole pod
//! ([`crate::kube::defaults`], `SetObjectDefaults_Pod`) and the `ServiceAccount` admission
//! plugin's token mount ([`crate::kube::admission_plugins::service_account`]) where the pod
//! has the token volume.
//!
//! [`store_defaults`] is idempotent, so applying it to a pod read from the cluster changes
//! nothing, and applying it to a freshly injected pod makes the two comparable. The token mount
//! is given to every container when one container has it: the plugin runs before the webhooks,
//! and again after them only when a webhook asks for a reinvocation, so whether an injected
//! container has it depends on the cluster's webhooks, not on the injection.

use serde_json::{Map, Value};

use crate::kube::admission_plugins::add_mount;
pub use crate::kube::admission_plugins::TOKEN_MOUNT_PATH;
use crate::kube::defaults::{default_pod, Gates, NEWEST_MINOR};
use crate::kube::pod::container_name;

/// The container lists of a pod spec.
const LISTS: [&str; 3] = ["initContainers", "containers", "ephemeralContainers"];

/// Apply the API server's defaults of a pod ([`default_pod`], the newest supported release's
/// feature gates) and the service-account token mount to `pod` (`{metadata, spec}`).
pub fn store_defaults(pod: &mut Value) {
    default_pod(pod, Gates::for_minor(NEWEST_MINOR));
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let Some(token) = token_mount(spec) else {
        return;
    };
    for list in LISTS {
        for c in spec
            .get_mut(list)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
            .filter_map(Value::as_object_mut)
        {
            add_mount(c, &token);
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

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
