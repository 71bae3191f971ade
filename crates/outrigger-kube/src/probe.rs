//! The admission path probed end to end: a server-side dry-run create (`?dryRun=All`:
//! admission runs, every mutating webhook the API server would call is called, nothing is
//! stored) of a plain pod, and whether it came back with a sidecar. `outrigger doctor` runs it
//! once with the user's credentials; `serve --probe-interval` runs it on an interval with the
//! server's own (which then need `create` on pods in the probe's namespace).

use ::kube::Client;
use serde_json::{json, Value};

/// The pod a probe creates (dry run): one container, nothing that opts out of injection.
pub fn probe_pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "labels": {"app": name}},
           "spec": {"containers": [{"name": "probe", "image": "registry.k8s.io/pause:3.10"}]}})
}

/// Whether `pod` carries a sidecar (Istio's status annotation or an `istio-proxy` container).
pub fn injected(pod: &Value) -> bool {
    pod["metadata"]["annotations"]["sidecar.istio.io/status"].is_string()
        || ["containers", "initContainers"].iter().any(|k| {
            pod["spec"][k]
                .as_array()
                .is_some_and(|cs| cs.iter().any(|c| c["name"] == "istio-proxy"))
        })
}

/// `POST /api/v1/namespaces/NS/pods?dryRun=All`: the admitted pod, or the refusal as the API
/// server's status code and message (code 0: no answer, the connection's error).
pub async fn dry_run_create(
    client: &Client,
    ns: &str,
    pod: &Value,
) -> Result<Value, (u16, String)> {
    let body = serde_json::to_vec(pod).map_err(|e| (0, e.to_string()))?;
    let req = hyper::Request::post(format!("/api/v1/namespaces/{ns}/pods?dryRun=All"))
        .header("content-type", "application/json")
        .body(body)
        .map_err(|e| (0, e.to_string()))?;
    match client.request::<Value>(req).await {
        Ok(v) => Ok(v),
        Err(::kube::Error::Api(s)) => Err((s.code, s.message)),
        Err(e) => Err((0, crate::report::chain(&crate::client::api_error(e)))),
    }
}
