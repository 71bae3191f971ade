//! Re-injection from scratch: a previously injected pod is taken back to the pod it was before
//! injection ([`recover_pod`]) and injected with the given configuration ([`reinject_pod`]), so
//! nothing of the old sidecar stays behind (Istio's own re-injection merges the new templates
//! onto the old pod).
//!
//! A label or annotation that injection writes may also have been set by the user; the pod
//! alone cannot tell. [`recover_pod`] asks the configuration it will inject with: such an entry
//! is dropped when injecting the pod without it writes it back with the same value (so dropping
//! it changes nothing), and kept as the user's otherwise.

use serde_json::Value;

use crate::ingest::recover::{recover, Recovered};
use crate::inject::{inject_pod, InjectParams, Injected};
use crate::kube::pod::{map_object, object_mut};
use crate::Result;

/// The pod as it was before its previous injection, for injecting with `params` (see the module
/// documentation). A pod without a previous injection is returned as it is.
pub fn recover_pod(pod: &Value, params: &InjectParams<'_>) -> Result<Value> {
    Ok(recover_with(pod, params)?.0)
}

/// Inject `pod` with `params` after removing its previous injection completely
/// ([`recover_pod`]); a pod never injected is injected as [`inject_pod`] would.
pub fn reinject_pod(pod: &Value, params: &InjectParams<'_>) -> Result<Injected> {
    let (recovered, fresh) = recover_with(pod, params)?;
    match fresh {
        Some(injected) => Ok(injected),
        None => inject_pod(&recovered, params),
    }
}

/// [`recover_pod`], with the injection of the recovered pod when deciding what to keep already
/// made it: deciding injects the pod without the removed labels and annotations; when none of
/// them is put back, that pod is the recovered one and that injection is its injection
/// (injection is a function of the pod and `params`), so it is returned instead of being made
/// again.
fn recover_with(pod: &Value, params: &InjectParams<'_>) -> Result<(Value, Option<Injected>)> {
    let Recovered { mut pod, removed } = recover(pod)?;
    if removed.is_empty() {
        return Ok((pod, None));
    }
    let fresh = inject_pod(&pod, params)?;
    let mut kept = false;
    for r in removed {
        let written = fresh
            .pod
            .get("metadata")
            .and_then(|m| m.get(r.field.key()))
            .and_then(|m| m.get(&r.key));
        if written != Some(&r.value) {
            map_object(object_mut(&mut pod, "metadata"), r.field.key()).insert(r.key, r.value);
            kept = true;
        }
    }
    Ok((pod, (!kept).then_some(fresh)))
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::config::defaults;
    use crate::inject::normalize_pod;

    fn params(s: &crate::config::Snapshot) -> InjectParams<'_> {
        crate::testing::kube_inject_params(s, "", false)
    }

    fn normalized(mut pod: Value) -> Value {
        normalize_pod(&mut pod).expect("normalise");
        pod
    }

    /// A pod with everything injection rewrites: probes (HTTP, TCP, lifecycle), Prometheus
    /// annotations, a user definition of the proxy, labels the templates default.
    fn app_pod() -> Value {
        json!({
            "metadata": {
                "labels": {"app": "web", "version": "v2"},
                "annotations": {
                    "prometheus.io/scrape": "true",
                    "prometheus.io/port": "9090",
                    "prometheus.io/path": "/metrics"
                }
            },
            "spec": {
                "containers": [
                    {
                        "name": "web",
                        "image": "web:1",
                        "ports": [{"containerPort": 8080}],
                        "readinessProbe": {"httpGet": {"port": 8080, "path": "/ready", "scheme": "HTTPS"}},
                        "livenessProbe": {"tcpSocket": {"port": 8080}, "timeoutSeconds": 3},
                        "lifecycle": {"preStop": {"httpGet": {"port": 8080, "path": "/stop"}}}
                    },
                    {"name": "istio-proxy", "image": "example.com/proxy:1", "args": ["--custom"]}
                ],
                "volumes": [{"name": "data", "emptyDir": {}}]
            }
        })
    }

    #[test]
    fn recovers_the_pod_injection_started_from() {
        let s = defaults::snapshot().expect("defaults");
        let p = params(&s);
        let original = normalized(app_pod());
        let injected = inject_pod(&original, &p).expect("inject").pod;
        assert_ne!(injected, original);
        let recovered = recover_pod(&injected, &p).expect("recover");
        assert_eq!(normalized(recovered), original);
    }

    #[test]
    fn labels_and_annotations_the_user_set_are_kept() {
        let s = defaults::snapshot().expect("defaults");
        let p = params(&s);
        let mut pod = app_pod();
        pod["metadata"]["labels"]["security.istio.io/tlsMode"] = json!("disabled");
        pod["metadata"]["labels"]["service.istio.io/canonical-name"] = json!("shop");
        pod["metadata"]["annotations"]["kubectl.kubernetes.io/default-container"] =
            json!("istio-proxy");
        let original = normalized(pod);
        let injected = inject_pod(&original, &p).expect("inject").pod;
        let recovered = recover_pod(&injected, &p).expect("recover");
        assert_eq!(normalized(recovered), original);
    }

    #[test]
    fn reinjection_replaces_what_an_older_injection_left() {
        let s = defaults::snapshot().expect("defaults");
        let p = params(&s);
        let original = normalized(app_pod());
        let mut injected = inject_pod(&original, &p).expect("inject").pod;
        // What an older template added that the current one does not: a volume, a label.
        injected["spec"]["volumes"]
            .as_array_mut()
            .expect("volumes")
            .push(json!({"name": "old-istio-volume", "emptyDir": {}}));
        let status = injected["metadata"]["annotations"]["sidecar.istio.io/status"]
            .as_str()
            .expect("status")
            .replace("\"volumes\":[", "\"volumes\":[\"old-istio-volume\",");
        injected["metadata"]["annotations"]["sidecar.istio.io/status"] = json!(status);
        let fresh = inject_pod(&original, &p).expect("inject").pod;
        assert_eq!(reinject_pod(&injected, &p).expect("reinject").pod, fresh);
        // Istio's re-injection keeps the old volume.
        let istio = inject_pod(&injected, &p).expect("inject").pod;
        assert!(istio.to_string().contains("old-istio-volume"));
    }

    #[test]
    fn a_pod_never_injected_is_left_alone() {
        let s = defaults::snapshot().expect("defaults");
        let p = params(&s);
        let mut pod = normalized(app_pod());
        pod["metadata"]["labels"]["security.istio.io/tlsMode"] = json!("istio");
        assert_eq!(recover_pod(&pod, &p).expect("recover"), pod);
    }

    #[test]
    fn unreadable_overrides_are_an_error_naming_the_annotation() {
        let s = defaults::snapshot().expect("defaults");
        let p = params(&s);
        let mut pod = inject_pod(&normalized(app_pod()), &p).expect("inject").pod;
        pod["metadata"]["annotations"]["proxy.istio.io/overrides"] = json!("{not json");
        let e = recover_pod(&pod, &p).unwrap_err().to_string();
        assert!(
            e.starts_with("invalid proxy.istio.io/overrides annotation"),
            "{e}"
        );
    }
}
