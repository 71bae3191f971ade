//! `outrigger serve --kube` end to end against a small fake API server (plain HTTP on
//! 127.0.0.1): the certificate is bootstrapped into the Secret and served, the configuration
//! comes from the injector ConfigMap, and the requests made are exactly the expected ones.

mod common;

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use common::*;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};

/// Key of a fake answer whose body is sent verbatim (watch streams).
const RAW: &str = "__raw";

/// What the fake API server holds and saw.
#[derive(Default)]
struct Api {
    secret: Option<Value>,
    requests: Vec<String>,
    events: Vec<Value>,
    /// ConfigMap versions the first ConfigMap watch delivers (MODIFIED events, in order).
    updates: Vec<Value>,
    /// The ConfigMap as currently stored (`None`: [`configmap`]).
    current: Option<Value>,
    /// The MutatingWebhookConfiguration as stored (`None`: [`webhook_config`]).
    webhook: Option<Value>,
    /// The mesh ConfigMap `istio-system/istio` (`None`: absent).
    mesh: Option<Value>,
    /// Delete the mesh ConfigMap through its first watch (a DELETED event).
    delete_mesh: bool,
    /// Delete the injector ConfigMap through its first watch (after `updates`).
    delete_inject: bool,
    /// Secret watches answered so far (the first one ends with 410 Gone, as when the
    /// resourceVersion it started from was compacted away: the client must relist).
    secret_watches: usize,
    /// `"METHOD /path"` prefixes the fake's RBAC refuses with 403.
    forbidden: Vec<String>,
}

/// Whether a ConfigMap list or watch selects the mesh ConfigMap `istio`.
fn selects_mesh(query: &str) -> bool {
    query
        .split('&')
        .any(|kv| kv == "fieldSelector=metadata.name%3Distio")
}

/// The fake's Secret writes, checked as the API server checks them: a stale `resourceVersion`
/// is a 409 Conflict, a change of `type` is a 422 Invalid (a Secret's type is immutable).
fn write_secret(stored: &Value, incoming: &Value, merge: bool) -> Result<Value, (u16, Value)> {
    let rv = &incoming["metadata"]["resourceVersion"];
    if !rv.is_null() && rv != &stored["metadata"]["resourceVersion"] {
        return Err((409, status(409, "Conflict")));
    }
    let stored_type = stored["type"].as_str().unwrap_or("Opaque");
    if let Some(t) = incoming["type"].as_str() {
        if t != stored_type {
            let mut st = status(422, "Invalid");
            st["message"] = json!(format!(
                "Secret \"outrigger-tls\" is invalid: type: Invalid value: \"{t}\": field is immutable"
            ));
            return Err((422, st));
        }
    }
    let mut next = if merge {
        let mut next = stored.clone();
        json_patch::merge(&mut next, incoming);
        next
    } else {
        incoming.clone()
    };
    let bumped = stored["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0)
        + 1;
    next["metadata"]["resourceVersion"] = json!(bumped.to_string());
    next["type"] = json!(stored_type);
    Ok(next)
}

/// The CA bundle the server stored in the fake's Secret (`what` names the expectation).
fn secret_ca(api: &Arc<Mutex<Api>>, what: &str) -> Vec<u8> {
    let b64 = api
        .lock()
        .expect("lock")
        .secret
        .as_ref()
        .and_then(|s| {
            s.pointer("/data/ca-bundle.crt")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .expect(what);
    base64::engine::general_purpose::STANDARD
        .decode(b64)
        .expect("base64 CA")
}

const MWC: &str = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations";

fn webhook_config() -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "outrigger-sidecar-injector", "resourceVersion": "5"},
        "webhooks": [{"name": "namespace.sidecar-injector.istio.io", "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "clientConfig": {"service": {"name": "outrigger", "namespace": "outrigger"}}}]})
}

fn status(code: u16, reason: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "reason": reason, "code": code})
}

fn configmap() -> Value {
    let config = outrigger_inject::config::defaults::CONFIG.replacen(
        "policy: enabled",
        "policy: disabled",
        1,
    );
    assert_ne!(
        config,
        outrigger_inject::config::defaults::CONFIG,
        "policy replaced"
    );
    configmap_with(&config, "7")
}

fn configmap_with(config: &str, rv: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "istio-sidecar-injector", "namespace": "istio-system", "resourceVersion": rv},
        "data": {"config": config, "values": outrigger_inject::config::defaults::VALUES}})
}

async fn answer(api: Arc<Mutex<Api>>, req: Request<hyper::body::Incoming>) -> (u16, Value) {
    let method = req.method().to_string();
    let path = req.uri().path().to_string();
    let query = req.uri().query().unwrap_or("").to_string();
    let content_type = req
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    api.lock()
        .expect("lock")
        .requests
        .push(format!("{method} {path}"));
    let secret = "/api/v1/namespaces/outrigger/secrets";
    let request = format!("{method} {path}");
    if api
        .lock()
        .expect("lock")
        .forbidden
        .iter()
        .any(|f| request.starts_with(f.as_str()))
    {
        let mut st = status(403, "Forbidden");
        st["message"] = json!(format!("{request} is forbidden: User \"system:serviceaccount:outrigger:outrigger\" cannot do that"));
        return (403, st);
    }
    match (method.as_str(), path.as_str()) {
        ("GET", "/version") => (
            200,
            json!({"major": "1", "minor": "33", "gitVersion": "v1.33.0", "gitCommit": "x",
                   "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.24",
                   "compiler": "gc", "platform": "linux/amd64"}),
        ),
        ("GET", p) if p == format!("{secret}/outrigger-tls") => {
            match api.lock().expect("lock").secret.clone() {
                Some(s) => (200, s),
                None => (404, status(404, "NotFound")),
            }
        }
        ("POST", p) if p == secret => {
            let mut s: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let mut a = api.lock().expect("lock");
            if a.secret.is_some() {
                return (409, status(409, "AlreadyExists"));
            }
            s["metadata"]["resourceVersion"] = json!("1");
            a.secret = Some(s.clone());
            (201, s)
        }
        ("GET", "/api/v1/namespaces/istio-system/configmaps")
            if query.contains("watch=true") && selects_mesh(&query) =>
        {
            let deleted = {
                let mut a = api.lock().expect("lock");
                match (std::mem::take(&mut a.delete_mesh), a.mesh.clone()) {
                    (true, Some(mesh)) => Some(mesh),
                    _ => None,
                }
            };
            if let Some(mesh) = deleted {
                // The fake API server's latency before the event (part of the scenario).
                tokio::time::sleep(Duration::from_millis(300)).await;
                api.lock().expect("lock").mesh = None;
                let line = format!("{}\n", json!({"type": "DELETED", "object": mesh}));
                return (200, json!({ RAW: line }));
            }
            tokio::time::sleep(Duration::from_secs(3600)).await; // an open watch: no events
            (200, Value::Null)
        }
        ("GET", "/api/v1/namespaces/istio-system/configmaps") if selects_mesh(&query) => (
            200,
            json!({"apiVersion": "v1", "kind": "ConfigMapList",
                   "metadata": {"resourceVersion": "7"},
                   "items": api.lock().expect("lock").mesh.clone().into_iter().collect::<Vec<_>>()}),
        ),
        ("GET", "/api/v1/namespaces/istio-system/configmaps")
            if query.contains("watch=true") && api.lock().expect("lock").delete_inject =>
        {
            let current = {
                let mut a = api.lock().expect("lock");
                a.delete_inject = false;
                a.current.clone().unwrap_or_else(configmap)
            };
            // The fake API server's latency before the event (part of the scenario).
            tokio::time::sleep(Duration::from_millis(600)).await;
            let line = format!("{}\n", json!({"type": "DELETED", "object": current}));
            (200, json!({ RAW: line }))
        }
        ("PUT" | "PATCH", p) if p == format!("{secret}/outrigger-tls") => {
            // A merge of `data` is the same under both patch types the fake knows; other patch
            // types (JSON Patch, server-side apply) are not modelled and refused.
            if method == "PATCH"
                && !matches!(
                    content_type.as_str(),
                    "application/merge-patch+json" | "application/strategic-merge-patch+json"
                )
            {
                return (415, status(415, "UnsupportedMediaType"));
            }
            let incoming: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let mut a = api.lock().expect("lock");
            let Some(stored) = a.secret.clone() else {
                return (404, status(404, "NotFound"));
            };
            match write_secret(&stored, &incoming, method == "PATCH") {
                Ok(next) => {
                    a.secret = Some(next.clone());
                    (200, next)
                }
                Err(e) => e,
            }
        }
        ("GET", p) if p == secret && query.contains("watch=true") => {
            let first = {
                let mut a = api.lock().expect("lock");
                a.secret_watches += 1;
                a.secret_watches == 1
            };
            if first {
                let gone = json!({"type": "ERROR", "object": status(410, "Expired")});
                return (200, json!({ RAW: format!("{gone}\n") }));
            }
            // Deliver the next change of the Secret, if any within the watch's lifetime.
            let since = api.lock().expect("lock").secret.clone();
            for _ in 0..600 {
                tokio::time::sleep(Duration::from_millis(50)).await;
                let now = api.lock().expect("lock").secret.clone();
                if now != since {
                    let ev = match now {
                        Some(s) => json!({"type": "MODIFIED", "object": s}),
                        None => json!({"type": "DELETED", "object": since}),
                    };
                    return (200, json!({ RAW: format!("{ev}\n") }));
                }
            }
            (200, json!({ RAW: "" }))
        }
        ("GET", p) if p == secret => {
            assert!(
                query.contains("fieldSelector=metadata.name%3Doutrigger-tls"),
                "only the Secret of ours is listed: {query}"
            );
            let a = api.lock().expect("lock");
            let rv = a
                .secret
                .as_ref()
                .map(|s| s["metadata"]["resourceVersion"].clone())
                .unwrap_or(json!("1"));
            (
                200,
                json!({"apiVersion": "v1", "kind": "SecretList", "metadata": {"resourceVersion": rv},
                       "items": a.secret.iter().cloned().collect::<Vec<_>>()}),
            )
        }
        ("GET", "/api/v1/namespaces/istio-system/configmaps") if query.contains("watch=true") => {
            let updates = std::mem::take(&mut api.lock().expect("lock").updates);
            if let Some(last) = updates.last() {
                // The fake API server's latency before the event (part of the scenario).
                tokio::time::sleep(Duration::from_millis(300)).await;
                api.lock().expect("lock").current = Some(last.clone());
                let lines: String = updates
                    .iter()
                    .map(|cm| format!("{}\n", json!({"type": "MODIFIED", "object": cm})))
                    .collect();
                return (200, json!({ RAW: lines }));
            }
            tokio::time::sleep(Duration::from_secs(3600)).await; // an open watch: no events
            (200, Value::Null)
        }
        ("GET", MWC) if query.contains("watch=true") => {
            tokio::time::sleep(Duration::from_secs(3600)).await; // an open watch: no events
            (200, Value::Null)
        }
        ("GET", MWC) => {
            let mwc = api
                .lock()
                .expect("lock")
                .webhook
                .clone()
                .unwrap_or_else(webhook_config);
            (
                200,
                json!({"apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "MutatingWebhookConfigurationList",
                "metadata": {"resourceVersion": "5"}, "items": [mwc]}),
            )
        }
        ("GET", p) if p == format!("{MWC}/outrigger-sidecar-injector") => (
            200,
            api.lock()
                .expect("lock")
                .webhook
                .clone()
                .unwrap_or_else(webhook_config),
        ),
        ("PATCH", p) if p == format!("{MWC}/outrigger-sidecar-injector") => {
            let patch: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let mut a = api.lock().expect("lock");
            let mut mwc = a.webhook.clone().unwrap_or_else(webhook_config);
            for entry in patch["webhooks"].as_array().cloned().unwrap_or_default() {
                if let Some(hooks) = mwc["webhooks"].as_array_mut() {
                    for h in hooks.iter_mut().filter(|h| h["name"] == entry["name"]) {
                        h["clientConfig"]["caBundle"] = entry["clientConfig"]["caBundle"].clone();
                    }
                }
            }
            mwc["metadata"]["resourceVersion"] = json!("6");
            a.webhook = Some(mwc.clone());
            (200, mwc)
        }
        ("GET", "/api/v1/namespaces") if query.contains("watch=true") => {
            tokio::time::sleep(Duration::from_secs(3600)).await; // an open watch: no events
            (200, Value::Null)
        }
        ("GET", "/api/v1/namespaces") => (
            200,
            json!({"apiVersion": "v1", "kind": "NamespaceList", "metadata": {"resourceVersion": "4"},
                   "items": [{"metadata": {"name": "team", "resourceVersion": "4", "annotations": {
                       "openshift.io/sa.scc.uid-range": "1000620000/10000",
                       "openshift.io/sa.scc.supplemental-groups": "1000620000/10000"}}}]}),
        ),
        ("GET", "/api/v1/nodes") if query.contains("watch=true") => {
            // Keep the watch open: nothing changes.
            tokio::time::sleep(Duration::from_secs(3600)).await; // an open watch: no events
            (200, Value::Null)
        }
        ("GET", "/api/v1/namespaces/istio-system/configmaps") => (
            200,
            json!({"apiVersion": "v1", "kind": "ConfigMapList",
                   "metadata": {"resourceVersion": "7"},
                   "items": [api.lock().expect("lock").current.clone().unwrap_or_else(configmap)]}),
        ),
        ("GET", "/api/v1/nodes") => (
            200,
            json!({"apiVersion": "v1", "kind": "NodeList", "metadata": {"resourceVersion": "3"},
                   "items": [{"metadata": {"name": "n1", "resourceVersion": "3"},
                              "status": {"nodeInfo": {"kubeletVersion": "v1.33.2",
                                  "architecture": "", "bootID": "", "containerRuntimeVersion": "",
                                  "kernelVersion": "", "kubeProxyVersion": "", "machineID": "",
                                  "operatingSystem": "", "osImage": "", "systemUUID": ""}}}]}),
        ),
        ("POST", "/apis/events.k8s.io/v1/namespaces/team/events") => {
            let e: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            api.lock().expect("lock").events.push(e.clone());
            (201, e)
        }
        _ => (404, status(404, "NotFound")),
    }
}

/// Serve the fake API on a thread of its own; returns its port.
fn fake_api(api: Arc<Mutex<Api>>) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    listener.set_nonblocking(true).expect("nonblocking");
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                let api = api.clone();
                tokio::spawn(async move {
                    let svc = service_fn(move |req| {
                        let api = api.clone();
                        async move {
                            let (code, body) = answer(api, req).await;
                            let bytes = match body.get(RAW).and_then(Value::as_str) {
                                Some(raw) => raw.as_bytes().to_vec(),
                                None => serde_json::to_vec(&body).unwrap_or_default(),
                            };
                            let resp = Response::builder()
                                .status(code)
                                .header("content-type", "application/json")
                                .body(Full::new(Bytes::from(bytes)))
                                .expect("response");
                            Ok::<_, Infallible>(resp)
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tcp), svc)
                        .await;
                });
            }
        });
    });
    port
}

fn kubeconfig(dir: &std::path::Path, port: u16) -> std::path::PathBuf {
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:{port}\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\n    namespace: outrigger\ncurrent-context: x\n"
    );
    let path = dir.join("kubeconfig");
    std::fs::write(&path, text).expect("write kubeconfig");
    path
}

fn pod(name: &str, annotations: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "annotations": annotations},
           "spec": {"containers": [{"name": "app", "image": "nginx"}]}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn certificate_from_the_secret_and_configuration_from_the_configmap() {
    let api = Arc::new(Mutex::new(Api::default()));
    let port = fake_api(api.clone());
    let dir = scratch("kube-api");
    let kc = kubeconfig(&dir, port);
    let kc = kc.display().to_string();
    // Mounted files (policy enabled) are ignored when the configuration comes from the API.
    let mounted = dir.join("config");
    std::fs::write(&mounted, outrigger_inject::config::defaults::CONFIG).expect("write config");
    let server = Server::start(
        &[
            "--kube",
            "--namespace",
            "outrigger",
            "--dns-name",
            "localhost",
            "--ca-bundle-managed-externally",
            "--injectConfigMap",
            "istio-system/istio-sidecar-injector",
            "--native-sidecars",
            "false",
            "--injectConfig",
            &mounted.display().to_string(),
        ],
        &[
            ("NO_PROXY", "127.0.0.1,localhost"),
            ("no_proxy", "127.0.0.1,localhost"),
            ("KUBECONFIG", kc.as_str()),
            ("HOME", &dir.display().to_string()),
        ],
    );
    // The certificate served is the one the server stored in the Secret.
    let ca = secret_ca(&api, "Secret created with a CA bundle");
    let c = H2::connect(server.addr, &ca)
        .await
        .expect("TLS trusting only the Secret's CA");

    // policy: disabled from the ConfigMap (the embedded default would inject this pod).
    let plain = review("admission.k8s.io/v1", "u1", "team", pod("plain", json!({})));
    let r = c
        .request("POST", "/inject", Some("application/json"), full(plain))
        .await
        .expect("review");
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    assert_eq!(v["response"]["allowed"], true);
    assert!(v["response"].get("patch").is_none(), "not injected: {v}");
    let opted_in = review(
        "admission.k8s.io/v1",
        "u2",
        "team",
        pod("opted", json!({"sidecar.istio.io/inject": "true"})),
    );
    let r = c
        .request("POST", "/inject", Some("application/json"), full(opted_in))
        .await
        .expect("review");
    assert!(
        r.json()["response"]["patch"].is_string(),
        "opt-in injects: {}",
        r.text()
    );
    assert!(
        server
            .wait_log(
                "ConfigMap istio-system/istio-sidecar-injector",
                Duration::from_secs(1)
            )
            .await
    );
    // A change of the mounted file does not override the ConfigMap configuration.
    std::fs::write(
        &mounted,
        format!("{}\n", outrigger_inject::config::defaults::CONFIG),
    )
    .expect("rewrite");
    // Nothing must happen, so there is no event to wait for: give a file watch (debounce 100 ms)
    // ample time to have reacted if it wrongly existed.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let again = review(
        "admission.k8s.io/v1",
        "u3",
        "team",
        pod("plain2", json!({})),
    );
    let r = c
        .request("POST", "/inject", Some("application/json"), full(again))
        .await
        .expect("review");
    assert!(
        r.json()["response"].get("patch").is_none(),
        "still the ConfigMap's policy: {}",
        r.text()
    );
    assert!(
        !server.log_text().contains("configuration reloaded"),
        "{}",
        server.log_text()
    );

    let seen = api.lock().expect("lock").requests.clone();
    assert_eq!(
        seen.first().map(String::as_str),
        Some("GET /version"),
        "{seen:?}"
    );
    assert!(
        seen.contains(&"POST /api/v1/namespaces/outrigger/secrets".to_string()),
        "{seen:?}"
    );
    assert!(
        !seen
            .iter()
            .any(|s| s.contains("mutatingwebhookconfigurations") && !s.starts_with("GET ")),
        "caBundle managed externally: observed (read-only), never written: {seen:?}"
    );
    assert!(
        !seen
            .iter()
            .any(|s| s.contains("/nodes") || s.contains("/events")),
        "no node watch with native sidecars off, no Events without --events: {seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn native_sidecars_from_the_node_cache_and_events_for_each_outcome() {
    let api = Arc::new(Mutex::new(Api::default()));
    let port = fake_api(api.clone());
    let dir = scratch("kube-api-events");
    let kc = kubeconfig(&dir, port);
    let kc = kc.display().to_string();
    let server = Server::start(
        &[
            "--kube",
            "--namespace",
            "outrigger",
            "--dns-name",
            "localhost",
            "--events",
            "--native-sidecars",
            "auto",
            "--injectConfig",
            &dir.join("absent").display().to_string(),
        ],
        &[
            ("NO_PROXY", "127.0.0.1,localhost"),
            ("no_proxy", "127.0.0.1,localhost"),
            ("KUBECONFIG", kc.as_str()),
            ("HOME", &dir.display().to_string()),
            ("POD_NAME", "outrigger-0"),
        ],
    );
    let ca = secret_ca(&api, "Secret created");
    let c = H2::connect(server.addr, &ca).await.expect("TLS");
    let mut on_node = pod("web-abc", json!({}));
    on_node["spec"]["nodeName"] = json!("n1");
    on_node["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet",
        "name": "web-7d9f", "uid": "rs-1", "controller": true}]);
    let r = c
        .request(
            "POST",
            "/inject",
            Some("application/json"),
            full(review("admission.k8s.io/v1", "u1", "team", on_node)),
        )
        .await
        .expect("review");
    let patch = r.json()["response"]["patch"]
        .as_str()
        .map(str::to_string)
        .expect("injected");
    let patch = String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(patch)
            .expect("base64"),
    )
    .expect("utf-8");
    assert!(
        patch.contains(r#""restartPolicy":"Always""#),
        "native sidecar (kubelet 1.33 on n1)"
    );
    let skipped = pod("off", json!({"sidecar.istio.io/inject": "false"}));
    let r = c
        .request(
            "POST",
            "/inject",
            Some("application/json"),
            full(review("admission.k8s.io/v1", "u2", "team", skipped)),
        )
        .await
        .expect("review");
    assert!(r.json()["response"].get("patch").is_none());

    eventually("two Events recorded", || async {
        api.lock().expect("lock").events.len() >= 2
    })
    .await;
    let events = api.lock().expect("lock").events.clone();
    assert_eq!(events.len(), 2, "{events:?}");
    let injected = events
        .iter()
        .find(|e| e["reason"] == "SidecarInjected")
        .expect("injected Event");
    assert_eq!(injected["regarding"]["kind"], "ReplicaSet");
    assert_eq!(injected["regarding"]["name"], "web-7d9f");
    assert_eq!(injected["reportingController"], "outrigger");
    let skip = events
        .iter()
        .find(|e| e["reason"] == "SidecarInjectionSkipped")
        .expect("skip Event");
    assert_eq!(skip["regarding"]["kind"], "Pod", "no owner: the pod itself");
    assert!(
        skip["note"].as_str().is_some_and(|n| n.contains(':')),
        "{skip}"
    );
    // The caBundle of the webhook configuration carries the Secret's CA bundle (one patch).
    let stored = api
        .lock()
        .expect("lock")
        .webhook
        .clone()
        .expect("caBundle patched");
    let secret_bundle = api
        .lock()
        .expect("lock")
        .secret
        .as_ref()
        .and_then(|s| s.pointer("/data/ca-bundle.crt").cloned())
        .expect("bundle");
    assert_eq!(
        stored["webhooks"][0]["clientConfig"]["caBundle"],
        secret_bundle
    );
    let seen = api.lock().expect("lock").requests.clone();
    assert_eq!(
        seen.iter().filter(|s| s.starts_with("PATCH ")).count(),
        1,
        "caBundle written once, then found current: {seen:?}"
    );
    assert_eq!(
        seen.iter()
            .filter(|s| s.as_str() == "GET /api/v1/nodes")
            .count(),
        2,
        "one list and one watch of nodes, none per request: {seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configmap_changes_swap_in_and_broken_ones_keep_the_last_good() {
    let api = Arc::new(Mutex::new(Api::default()));
    {
        let mut a = api.lock().expect("lock");
        a.updates = vec![
            configmap_with("policy: [unclosed\n", "8"),
            configmap_with(outrigger_inject::config::defaults::CONFIG, "9"),
        ];
    }
    let port = fake_api(api.clone());
    let dir = scratch("kube-api-reload");
    let kc = kubeconfig(&dir, port);
    let kc = kc.display().to_string();
    let server = Server::start(
        &[
            "--kube",
            "--namespace",
            "outrigger",
            "--dns-name",
            "localhost",
            "--ca-bundle-managed-externally",
            "--injectConfigMap",
            "istio-system/istio-sidecar-injector",
            "--native-sidecars",
            "false",
        ],
        &[
            ("NO_PROXY", "127.0.0.1,localhost"),
            ("no_proxy", "127.0.0.1,localhost"),
            ("KUBECONFIG", kc.as_str()),
            ("HOME", &dir.display().to_string()),
        ],
    );
    let ca = secret_ca(&api, "Secret created");
    let c = H2::connect(server.addr, &ca).await.expect("TLS");
    // The watch delivers a broken version (rejected) then policy: enabled (swapped in).
    assert!(
        server
            .wait_log("configuration reloaded", Duration::from_secs(10))
            .await,
        "{}",
        server.log_text()
    );
    assert!(
        server
            .log_text()
            .contains("failed to read injection config from ConfigMap"),
        "{}",
        server.log_text()
    );
    let plain = review("admission.k8s.io/v1", "u1", "team", pod("plain", json!({})));
    let r = c
        .request("POST", "/inject", Some("application/json"), full(plain))
        .await
        .expect("review");
    assert!(
        r.json()["response"]["patch"].is_string(),
        "policy enabled now: {}",
        r.text()
    );
    let m = c
        .request("GET", "/metrics", None, full(Bytes::new()))
        .await
        .expect("metrics")
        .text();
    assert_eq!(
        metric(
            &m,
            r#"outrigger_reloads_total{kind="config",result="failure"}"#
        ),
        Some(1.0),
        "{m}"
    );
    assert_eq!(
        metric(
            &m,
            r#"outrigger_reloads_total{kind="config",result="success"}"#
        ),
        Some(2.0),
        "start-up + reload: {m}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openshift_proxy_ids_from_the_namespace_cache() {
    let api = Arc::new(Mutex::new(Api::default()));
    let port = fake_api(api.clone());
    let dir = scratch("kube-api-openshift");
    let kc = kubeconfig(&dir, port);
    let kc = kc.display().to_string();
    let server = Server::start(
        &[
            "--kube",
            "--namespace",
            "outrigger",
            "--dns-name",
            "localhost",
            "--ca-bundle-managed-externally",
            "--native-sidecars",
            "false",
        ],
        &[
            ("NO_PROXY", "127.0.0.1,localhost"),
            ("no_proxy", "127.0.0.1,localhost"),
            ("KUBECONFIG", kc.as_str()),
            ("HOME", &dir.display().to_string()),
            ("PLATFORM", "openshift"),
        ],
    );
    let ca = secret_ca(&api, "Secret created");
    let c = H2::connect(server.addr, &ca).await.expect("TLS");
    let mut patches = Vec::new();
    for ns in ["team", "unknown"] {
        let r = c
            .request(
                "POST",
                "/inject",
                Some("application/json"),
                full(review("admission.k8s.io/v1", "u1", ns, pod("p", json!({})))),
            )
            .await
            .expect("review");
        let patch = r.json()["response"]["patch"]
            .as_str()
            .map(str::to_string)
            .expect("injected");
        patches.push(
            String::from_utf8(
                base64::engine::general_purpose::STANDARD
                    .decode(patch)
                    .expect("base64"),
            )
            .expect("utf-8"),
        );
    }
    assert!(
        patches[0].contains("1000629999"),
        "UID/GID from the cached namespace: {}",
        patches[0]
    );
    assert!(
        !patches[1].contains("1000629999"),
        "unknown namespace: defaults"
    );
    let seen = api.lock().expect("lock").requests.clone();
    assert_eq!(
        seen.iter()
            .filter(|s| s.as_str() == "GET /api/v1/namespaces")
            .count(),
        2,
        "one list and one watch, none per request: {seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_configmaps_keep_the_last_good_configuration() {
    const MESH: &str = "defaultConfig:\n  proxyMetadata:\n    FAILSAFE_MARK: kept\n";
    let api = Arc::new(Mutex::new(Api::default()));
    {
        let mut a = api.lock().expect("lock");
        a.current = Some(configmap_with(
            outrigger_inject::config::defaults::CONFIG,
            "7",
        ));
        a.mesh = Some(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "istio", "namespace": "istio-system", "resourceVersion": "3"},
            "data": {"mesh": MESH}}));
        a.delete_mesh = true;
        a.delete_inject = true;
    }
    let port = fake_api(api.clone());
    let dir = scratch("kube-api-deleted");
    let kc = kubeconfig(&dir, port);
    let kc = kc.display().to_string();
    let server = Server::start(
        &[
            "--kube",
            "--namespace",
            "outrigger",
            "--dns-name",
            "localhost",
            "--ca-bundle-managed-externally",
            "--injectConfigMap",
            "istio-system/istio-sidecar-injector",
            "--meshConfigMap",
            "istio-system/istio",
            "--native-sidecars",
            "false",
        ],
        &[
            ("NO_PROXY", "127.0.0.1,localhost"),
            ("no_proxy", "127.0.0.1,localhost"),
            ("KUBECONFIG", kc.as_str()),
            ("HOME", &dir.display().to_string()),
        ],
    );
    let ca = secret_ca(&api, "Secret created");
    let c = H2::connect(server.addr, &ca).await.expect("TLS");
    // Both ConfigMaps are deleted through their watches: each is a failed reload, logged at
    // error level, and the configuration read at start-up (with its mesh) stays in force.
    for needle in [
        "update error: failed to read injection config from ConfigMap: no mesh ConfigMap found; keeping the last good configuration",
        "update error: failed to read injection config from ConfigMap: no ConfigMap found; keeping the last good configuration",
    ] {
        assert!(
            server.wait_log(needle, Duration::from_secs(10)).await,
            "{needle}:\n{}",
            server.log_text()
        );
    }
    assert!(api.lock().expect("lock").mesh.is_none(), "mesh deleted");
    let m = c
        .request("GET", "/metrics", None, full(Bytes::new()))
        .await
        .expect("metrics")
        .text();
    assert_eq!(
        metric(
            &m,
            r#"outrigger_reloads_total{kind="config",result="failure"}"#
        ),
        Some(2.0),
        "{m}"
    );
    let r = c
        .request(
            "POST",
            "/inject",
            Some("application/json"),
            full(review(
                "admission.k8s.io/v1",
                "u1",
                "team",
                pod("p", json!({})),
            )),
        )
        .await
        .expect("review");
    let patch = r.json()["response"]["patch"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| panic!("injected: {}", r.text()));
    let patch = String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(patch)
            .expect("base64"),
    )
    .expect("utf-8");
    assert!(
        patch.contains("FAILSAFE_MARK"),
        "the deleted mesh ConfigMap's settings stay in force: {patch}"
    );
    let r = c
        .request("GET", "/readyz", None, full(Bytes::new()))
        .await
        .expect("readyz");
    assert_eq!(r.status, 200);
}

#[test]
fn a_webhook_configuration_name_mismatch_fails_start_up_naming_it() {
    let api = Arc::new(Mutex::new(Api::default()));
    let port = fake_api(api.clone());
    let dir = scratch("kube-api-mismatch");
    let kc = kubeconfig(&dir, port);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_outrigger"))
        .args([
            "serve",
            "--kube",
            "--namespace",
            "outrigger",
            "--port",
            "0",
            "--native-sidecars",
            "false",
            "--webhook-config-name",
            "istio-sidecar-injector",
        ])
        .env("KUBECONFIG", &kc)
        .env("HOME", &dir)
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env("no_proxy", "127.0.0.1,localhost")
        .output()
        .expect("run outrigger");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "MutatingWebhookConfiguration \"istio-sidecar-injector\" not found: generate it with \
             `outrigger webhook-config --name istio-sidecar-injector` or pass --webhook-config-name"
        ),
        "{err}"
    );
}

/// A CA and a serving certificate for `localhost` it signed: (CA PEM, certificate PEM, key PEM).
fn issue(ca_name: &str) -> (String, String, String) {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
        KeyPair, KeyUsagePurpose,
    };
    let ca_key = KeyPair::generate().expect("key");
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("params");
    ca.distinguished_name.push(DnType::CommonName, ca_name);
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_pem = ca.self_signed(&ca_key).expect("CA").pem();
    let issuer = Issuer::from_ca_cert_pem(&ca_pem, ca_key).expect("issuer");
    let mut leaf = CertificateParams::new(vec!["localhost".to_string()]).expect("params");
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let key = KeyPair::generate().expect("key");
    let cert = leaf.signed_by(&key, &issuer).expect("leaf");
    (ca_pem, cert.pem(), key.serialize_pem())
}

/// The Secret cert-manager writes for a Certificate: type kubernetes.io/tls, no CA key.
fn cert_manager_secret(ca: &str, cert: &str, key: &str, rv: &str) -> Value {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
        "metadata": {"name": "outrigger-tls", "namespace": "outrigger", "resourceVersion": rv,
            "labels": {"controller.cert-manager.io/fao": "true"},
            "annotations": {"cert-manager.io/certificate-name": "outrigger",
                            "cert-manager.io/issuer-name": "ca-issuer"}},
        "data": {"tls.crt": b64(cert), "tls.key": b64(key), "ca.crt": b64(ca)}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cert_manager_secret_is_served_read_only_and_hot_reloaded() {
    let (ca1, cert1, key1) = issue("issuer-ca-1");
    let stored = cert_manager_secret(&ca1, &cert1, &key1, "10");
    let api = Arc::new(Mutex::new(Api {
        secret: Some(stored.clone()),
        ..Api::default()
    }));
    let port = fake_api(api.clone());
    let dir = scratch("kube-api-cert-manager");
    let kc = kubeconfig(&dir, port).display().to_string();
    let server = Server::start(
        &[
            "--kube",
            "--namespace",
            "outrigger",
            "--native-sidecars",
            "false",
        ],
        &[
            ("NO_PROXY", "127.0.0.1,localhost"),
            ("no_proxy", "127.0.0.1,localhost"),
            ("KUBECONFIG", kc.as_str()),
            ("HOME", &dir.display().to_string()),
        ],
    );
    // The issuer's certificate is served, and its ca.crt went into the caBundle.
    let c = H2::connect(server.addr, ca1.as_bytes())
        .await
        .expect("TLS trusting the issuer's CA");
    assert_eq!(c.get("/readyz").await.expect("readyz").status, 200);
    let bundle = api.lock().expect("lock").webhook.clone().expect("patched");
    let encoded = base64::engine::general_purpose::STANDARD.encode(&ca1);
    assert_eq!(
        bundle["webhooks"][0]["clientConfig"]["caBundle"],
        json!(encoded)
    );
    // The issuer renews: the Secret changes, the watch delivers it, new handshakes use it.
    let (ca2, cert2, key2) = issue("issuer-ca-2");
    api.lock().expect("lock").secret = Some(cert_manager_secret(&ca2, &cert2, &key2, "11"));
    let mut reloaded = false;
    for _ in 0..100 {
        if H2::connect(server.addr, ca2.as_bytes()).await.is_ok() {
            reloaded = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        reloaded,
        "the renewed certificate is served without a restart"
    );
    let a = api.lock().expect("lock");
    let writes: Vec<&String> = a
        .requests
        .iter()
        .filter(|r| r.contains("/secrets") && !r.starts_with("GET "))
        .collect();
    assert!(
        writes.is_empty(),
        "the issuer's Secret was written: {writes:?}"
    );
    assert!(
        a.secret_watches >= 2,
        "the Secret is watched and relisted after 410 Gone: {} watches",
        a.secret_watches
    );
    let s = a.secret.as_ref().expect("secret");
    assert_eq!(s["type"], "kubernetes.io/tls");
}

#[test]
fn an_rbac_denial_on_the_secret_fails_start_up_naming_it() {
    let api = Arc::new(Mutex::new(Api {
        forbidden: vec!["GET /api/v1/namespaces/outrigger/secrets/outrigger-tls".into()],
        ..Api::default()
    }));
    let port = fake_api(api);
    let dir = scratch("kube-api-forbidden");
    let kc = kubeconfig(&dir, port);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_outrigger"))
        .args(["serve", "--kube", "--namespace", "outrigger", "--port", "0"])
        .args(["--native-sidecars", "false"])
        .env("KUBECONFIG", &kc)
        .env("HOME", &dir)
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env("no_proxy", "127.0.0.1,localhost")
        .output()
        .expect("run outrigger");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("forbidden to get secrets \"outrigger-tls\""),
        "{err}"
    );
}

#[test]
fn the_fake_refuses_type_changes_and_stale_writes_as_the_api_server() {
    let stored = cert_manager_secret("ca", "c", "k", "10");
    let mut opaque = stored.clone();
    opaque["type"] = json!("Opaque");
    let (code, body) = write_secret(&stored, &opaque, false).expect_err("type is immutable");
    assert_eq!(code, 422);
    assert!(body["message"]
        .as_str()
        .is_some_and(|m| m.contains("field is immutable")));
    let stale = json!({"metadata": {"resourceVersion": "9"}, "data": {"x": "eA=="}});
    assert_eq!(
        write_secret(&stored, &stale, true).expect_err("stale").0,
        409
    );
    let fresh = json!({"metadata": {"resourceVersion": "10"}, "data": {"x": "eA=="}});
    let next = write_secret(&stored, &fresh, true).expect("merge");
    assert_eq!(next["metadata"]["resourceVersion"], "11");
    assert_eq!(
        next["metadata"]["annotations"],
        stored["metadata"]["annotations"]
    );
    assert_eq!(next["data"]["tls.crt"], stored["data"]["tls.crt"]);
    assert_eq!(next["type"], "kubernetes.io/tls");
}
