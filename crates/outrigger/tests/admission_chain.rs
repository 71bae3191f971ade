//! Pods created through the fake API server's mutating admission chain (`common::admission`,
//! kube-apiserver's webhook selection, TLS against the caBundle, timeouts, failurePolicy, JSON
//! patches, reinvocation, dryRun), with the real `outrigger serve --kube` behind its Service:
//! alone with the manifest deploy/ ships, beside an istiod-like injector (overlap, then a
//! migration one namespace at a time and back), and against seeded faults.

mod common;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use common::kube_api::{configmap, serve_against, Cluster, FakeApi};
use common::*;
use http_body_util::{BodyExt, Full};
use serde_json::{json, Value};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

fn namespace(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": name, "uid": format!("uid-{name}"), "resourceVersion": "2", "labels": labels}})
}

fn pod(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels},
           "spec": {"containers": [{"name": "app", "image": "nginx"}]}})
}

/// Names of the pod's containers.
fn containers(pod: &Value) -> Vec<String> {
    pod["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str().map(str::to_string))
        .collect()
}

/// The image of the pod's `istio-proxy` container, if any.
fn proxy_image(pod: &Value) -> Option<String> {
    pod["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(
            pod["spec"]["initContainers"]
                .as_array()
                .into_iter()
                .flatten(),
        )
        .find(|c| c["name"] == "istio-proxy")
        .and_then(|c| c["image"].as_str().map(str::to_string))
}

/// A MutatingWebhookConfiguration as `outrigger webhook-config ARGS -o json` prints it.
fn webhook_config(args: &[&str]) -> Value {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_outrigger"))
        .arg("webhook-config")
        .args(args)
        .args(["-o", "json"])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

/// Namespaces `outrigger`, `kube-system`, `istio-system` and `others`; Istio's ConfigMaps with
/// the embedded configuration.
fn cluster() -> Cluster {
    let mut c = Cluster::default();
    for ns in ["outrigger", "kube-system", "istio-system"] {
        c.put(namespace(ns, json!({})));
    }
    c.put(configmap(
        "istio-system",
        "istio-sidecar-injector",
        "3",
        &[
            ("config", outrigger_inject::config::defaults::CONFIG),
            ("values", outrigger_inject::config::defaults::VALUES),
        ],
    ));
    c.put(configmap(
        "istio-system",
        "istio",
        "3",
        &[("mesh", outrigger_inject::config::defaults::MESH)],
    ));
    c
}

/// outrigger's server as deploy/ runs it (reading Istio's ConfigMaps, activating the webhook
/// configuration once ready), behind Service `outrigger/outrigger`.
fn start_outrigger(api: &FakeApi, name: &str, extra: &[&str]) -> Server {
    let mut args = vec![
        "--dns-name",
        "localhost",
        "--istio-configmaps",
        "--native-sidecars",
        "false",
        "--failure-policy-once-ready",
        "Fail",
        "--webhook-owned-by-namespace",
        "--activation-delay",
        "200ms",
    ];
    args.extend_from_slice(extra);
    let server = serve_against(api, name, &args, &[]);
    api.lock()
        .endpoints
        .insert(("outrigger".into(), "outrigger".into()), vec![server.addr]);
    server
}

/// Wait until the webhook configuration `name` has every entry at `policy`, with a caBundle.
async fn activated(api: &FakeApi, name: &str) {
    eventually("the webhook configuration activated", || async {
        let a = api.lock();
        a.get("mutatingwebhookconfigurations", "", name)
            .and_then(|m| m["webhooks"].as_array().cloned())
            .is_some_and(|w| {
                w.iter().all(|e| {
                    e["failurePolicy"] == "Fail" && e["clientConfig"]["caBundle"].is_string()
                })
            })
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outrigger_alone_injects_through_the_admission_chain() {
    let mut c = cluster();
    c.put(namespace("apps", json!({"istio-injection": "enabled"})));
    c.put(namespace("plain", json!({})));
    c.put(shipped_webhook_config());
    let api = FakeApi::start(c);
    let _server = start_outrigger(&api, "chain-alone", &[]);
    activated(&api, "outrigger-sidecar-injector").await;

    let a = api
        .create_pod("apps", pod("web", json!({})), false)
        .await
        .expect("admitted");
    assert_eq!(
        a.calls,
        ["outrigger-sidecar-injector/namespace.sidecar-injector.istio.io"]
    );
    assert!(
        proxy_image(&a.pod).is_some(),
        "injected: {:?}",
        containers(&a.pod)
    );
    assert!(api.lock().get("pods", "apps", "web").is_some(), "stored");
    // Selection: unlabelled namespace, the injector's own namespace, a pod opting out.
    for (ns, p) in [
        ("plain", pod("p", json!({}))),
        ("outrigger", pod("o", json!({}))),
        (
            "apps",
            pod("out", json!({"sidecar.istio.io/inject": "false"})),
        ),
    ] {
        let a = api.create_pod(ns, p, false).await.expect("admitted");
        assert!(a.calls.is_empty(), "{ns}: {:?}", a.calls);
        assert_eq!(containers(&a.pod), ["app"], "{ns}");
    }
    // Server-side dry run: injected, not stored (outrigger's entries have sideEffects None).
    let a = api
        .create_pod("apps", pod("dry", json!({})), true)
        .await
        .expect("dry run");
    assert!(proxy_image(&a.pod).is_some());
    assert!(
        api.lock().get("pods", "apps", "dry").is_none(),
        "not stored"
    );
    // Through the HTTP path as kubectl sends it.
    let (status, body) = post_pod(&api, "apps", pod("http", json!({}))).await;
    assert_eq!(status, 201, "{body}");
    assert!(proxy_image(&body).is_some());
    // No endpoints (every replica gone): failurePolicy Fail refuses the pod, naming the webhook.
    api.lock().endpoints.clear();
    let e = api
        .create_pod("apps", pod("late", json!({})), false)
        .await
        .expect_err("refused");
    assert_eq!(e.code, 500);
    assert!(
        e.message.starts_with(
            "Internal error occurred: failed calling webhook \"namespace.sidecar-injector.istio.io\": "
        ) && e.message.contains("no ready endpoints"),
        "{}",
        e.message
    );
}

/// POST a pod to the fake over HTTP/1.1: (status, body).
async fn post_pod(api: &FakeApi, ns: &str, pod: Value) -> (u16, Value) {
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", api.port))
        .await
        .expect("connect");
    let (mut send, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp))
        .await
        .expect("handshake");
    tokio::spawn(conn);
    let req = hyper::Request::post(format!("/api/v1/namespaces/{ns}/pods"))
        .header("host", "127.0.0.1")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(
            serde_json::to_vec(&pod).expect("JSON"),
        )))
        .expect("request");
    let resp = send.send_request(req).await.expect("response");
    let status = resp.status().as_u16();
    let body = resp.into_body().collect().await.expect("body").to_bytes();
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

/// What an in-test webhook does with each review.
#[derive(Clone, Copy)]
enum Behaviour {
    /// istiod's injector, in miniature: adds an `istio-proxy` container (image
    /// `istiod.example/proxyv2`) and `sidecar.istio.io/status`, unless already injected.
    Istiod,
    /// Allows without a patch (counts the calls).
    Observe,
    /// Adds the label `touched=yes` when absent.
    Label,
    /// Denies with a message.
    Deny,
    /// Answers after 3 s.
    Slow,
}

/// An HTTPS webhook server for `<name>.<ns>.svc` with a CA of its own: (its address, the CA
/// PEM, the number of reviews it answered).
async fn toy_webhook(host: &str, behaviour: Behaviour) -> (SocketAddr, String, Arc<AtomicUsize>) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().expect("key");
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("params");
    ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    let ca_cert = ca.self_signed(&ca_key).expect("CA");
    let key = KeyPair::generate().expect("key");
    let leaf = CertificateParams::new(vec![host.to_string()])
        .expect("params")
        .signed_by(&key, &Issuer::from_params(&ca, &ca_key))
        .expect("leaf");
    let certs = vec![leaf.der().clone()];
    let private = rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der()).expect("key");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(certs, private)
        .expect("cert");
    cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(cfg));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let count = Arc::new(AtomicUsize::new(0));
    let answered = count.clone();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                continue;
            };
            let acceptor = acceptor.clone();
            let answered = answered.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let svc = hyper::service::service_fn(
                    move |req: hyper::Request<hyper::body::Incoming>| {
                        let answered = answered.clone();
                        async move {
                            let body = req
                                .into_body()
                                .collect()
                                .await
                                .map(|b| b.to_bytes())
                                .unwrap_or_default();
                            let review: Value =
                                serde_json::from_slice(&body).unwrap_or(Value::Null);
                            answered.fetch_add(1, Ordering::SeqCst);
                            let answer = answer(behaviour, &review).await;
                            Ok::<_, Infallible>(hyper::Response::new(Full::new(Bytes::from(
                                answer.to_string(),
                            ))))
                        }
                    },
                );
                let _ = hyper_util::server::conn::auto::Builder::new(
                    hyper_util::rt::TokioExecutor::new(),
                )
                .serve_connection(hyper_util::rt::TokioIo::new(tls), svc)
                .await;
            });
        }
    });
    (addr, ca_cert.pem(), count)
}

async fn answer(behaviour: Behaviour, review: &Value) -> Value {
    let req = &review["request"];
    let pod = &req["object"];
    let mut response = json!({"uid": req["uid"], "allowed": true});
    let patch = match behaviour {
        Behaviour::Istiod => {
            let injected = pod["metadata"]["annotations"]["sidecar.istio.io/status"].is_string();
            (!injected).then(|| {
                let mut ops = vec![json!({"op": "add", "path": "/spec/containers/-",
                    "value": {"name": "istio-proxy", "image": "istiod.example/proxyv2"}})];
                if pod["metadata"]["annotations"].is_null() {
                    ops.push(json!({"op": "add", "path": "/metadata/annotations", "value": {}}));
                }
                ops.push(
                    json!({"op": "add", "path": "/metadata/annotations/sidecar.istio.io~1status",
                    "value": "{\"containers\":[\"istio-proxy\"]}"}),
                );
                Value::Array(ops)
            })
        }
        Behaviour::Observe => None,
        Behaviour::Label => {
            let touched = pod["metadata"]["labels"]["touched"] == "yes";
            (!touched).then(|| {
                let mut ops = Vec::new();
                if pod["metadata"]["labels"].is_null() {
                    ops.push(json!({"op": "add", "path": "/metadata/labels", "value": {}}));
                }
                ops.push(json!({"op": "add", "path": "/metadata/labels/touched", "value": "yes"}));
                Value::Array(ops)
            })
        }
        Behaviour::Deny => {
            response["allowed"] = json!(false);
            response["status"] = json!({"code": 403, "message": "nope"});
            None
        }
        Behaviour::Slow => {
            tokio::time::sleep(Duration::from_secs(3)).await;
            None
        }
    };
    if let Some(p) = patch {
        response["patchType"] = json!("JSONPatch");
        response["patch"] = json!(B64.encode(p.to_string()));
    }
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
}

/// A configuration `name` with one entry `hook` calling Service `ns/svc` at `path`.
fn toy_config(name: &str, hook: &str, svc: (&str, &str), ca: &str, extra: Value) -> Value {
    let mut entry = json!({"name": hook, "admissionReviewVersions": ["v1"], "sideEffects": "None",
        "failurePolicy": "Fail",
        "clientConfig": {"service": {"namespace": svc.0, "name": svc.1, "path": "/x", "port": 443},
            "caBundle": B64.encode(ca)},
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]});
    for (k, v) in extra.as_object().into_iter().flatten() {
        entry[k] = v.clone();
    }
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": name, "resourceVersion": "2"}, "webhooks": [entry]})
}

/// Istio's own configuration (`webhook-config --istio`) calling the istiod-like server.
async fn istiod_like(api: &FakeApi) -> Arc<AtomicUsize> {
    let (addr, ca, count) = toy_webhook("istiod.istio-system.svc", Behaviour::Istiod).await;
    let mut istio = webhook_config(&[
        "--istio",
        "--ca-bundle-file",
        &write_temp("istiod-ca.pem", &ca),
    ]);
    istio["metadata"]["resourceVersion"] = json!("2");
    let mut a = api.lock();
    a.put(istio);
    a.endpoints
        .insert(("istio-system".into(), "istiod".into()), vec![addr]);
    count
}

fn write_temp(name: &str, text: &str) -> String {
    let path = std::env::temp_dir().join(format!("outrigger-chain-{}-{name}", std::process::id()));
    std::fs::write(&path, text).expect("write");
    path.display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn beside_istiod_both_inject_then_a_revision_moves_namespaces_one_at_a_time() {
    let mut c = cluster();
    let teams = ["team-1", "team-2", "team-3"];
    for t in teams {
        c.put(namespace(t, json!({"istio-injection": "enabled"})));
    }
    c.put(shipped_webhook_config());
    let api = FakeApi::start(c);
    let istiod_calls = istiod_like(&api).await;
    let server = start_outrigger(&api, "chain-beside", &["--detect-overlaps"]);
    activated(&api, "outrigger-sidecar-injector").await;
    // At start-up the server named the overlap: log line and metric.
    assert!(
        server
            .wait_log(
                "another injector selects namespaces",
                Duration::from_secs(5)
            )
            .await,
        "{}",
        server.log_text()
    );
    let ca = common::kube_api::secret_ca(&api, "Secret created");
    let c = H2::connect(server.addr, &ca).await.expect("TLS");
    let m = metrics(&c).await;
    assert_eq!(
        metric(
            &m,
            r#"outrigger_overlapping_injector_namespaces{configuration="istio-sidecar-injector"}"#
        ),
        Some(3.0),
        "team-1..3: {m}"
    );

    // Overlap: both configurations select team-1, so both injectors are called for one pod.
    let a = api
        .create_pod("team-1", pod("both", json!({})), false)
        .await
        .expect("admitted");
    assert_eq!(
        a.calls,
        [
            "istio-sidecar-injector/namespace.sidecar-injector.istio.io",
            "outrigger-sidecar-injector/namespace.sidecar-injector.istio.io"
        ],
        "both injectors are called for the same pod"
    );
    assert_eq!(istiod_calls.load(Ordering::SeqCst), 1);
    // Configurations run in name order: istiod's injected first, then outrigger injected again
    // over it (as istiod re-injects an injected pod): the last one wins, silently.
    assert_eq!(
        proxy_image(&a.pod).as_deref(),
        Some("docker.io/istio/proxyv2:1.28.0"),
        "outrigger's embedded values replaced istiod's proxy"
    );
    assert_eq!(
        containers(&a.pod)
            .iter()
            .filter(|c| *c == "istio-proxy")
            .count(),
        1
    );

    // Coexistence: outrigger as revision `outrigger`, selected by istio.io/rev=outrigger only.
    let mut rev = webhook_config(&[
        "--revision",
        "outrigger",
        "--name",
        "outrigger-sidecar-injector",
        "--exclude-namespaces",
        "outrigger,kube-system",
    ]);
    {
        // A replacement the fake versions (a PUT with the stored resourceVersion).
        let mut a = api.lock();
        let stored = a
            .get(
                "mutatingwebhookconfigurations",
                "",
                "outrigger-sidecar-injector",
            )
            .expect("installed")["metadata"]["resourceVersion"]
            .clone();
        rev["metadata"]["resourceVersion"] = stored;
        a.write(
            "mutatingwebhookconfigurations",
            "",
            "outrigger-sidecar-injector",
            &rev,
            None,
        )
        .expect("replaced");
    }
    activated(&api, "outrigger-sidecar-injector").await;

    // Migrate one namespace at a time, then back; after each step every namespace gets exactly
    // one injector: 0 pods uninjected, 0 injected twice.
    let relabel = |ns: &str, to_outrigger: bool| {
        let labels = if to_outrigger {
            json!({"istio.io/rev": "outrigger"})
        } else {
            json!({"istio-injection": "enabled"})
        };
        api.lock().put(namespace(ns, labels));
    };
    let (mut uninjected, mut twice, mut pods) = (0, 0, 0);
    let mut steps: Vec<(&str, bool)> = teams.iter().map(|t| (*t, true)).collect();
    steps.extend(teams.iter().map(|t| (*t, false)));
    for (step, (moved, to_outrigger)) in steps.iter().enumerate() {
        relabel(moved, *to_outrigger);
        for t in teams {
            let on_outrigger = steps[..=step]
                .iter()
                .rev()
                .find(|(ns, _)| *ns == t)
                .is_some_and(|(_, o)| *o);
            let a = api
                .create_pod(t, pod(&format!("p{step}"), json!({})), false)
                .await
                .expect("admitted");
            pods += 1;
            let injectors = a.calls.len();
            twice += usize::from(injectors > 1);
            let image = proxy_image(&a.pod);
            uninjected += usize::from(image.is_none());
            let want = if on_outrigger {
                "outrigger-sidecar-injector/"
            } else {
                "istio-sidecar-injector/"
            };
            assert!(
                injectors == 1 && a.calls[0].starts_with(want),
                "step {step}, {t}: {:?}",
                a.calls
            );
            assert_eq!(
                image.as_deref() == Some("istiod.example/proxyv2"),
                !on_outrigger,
                "step {step}, {t}: {image:?}"
            );
        }
    }
    assert_eq!((uninjected, twice, pods), (0, 0, 18));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failure_policy_timeouts_trust_denials_reinvocation_and_dry_run() {
    let mut c = cluster();
    c.put(namespace("apps", json!({})));
    let api = FakeApi::start(c);
    let mut hooks = Vec::new();
    for (svc, behaviour) in [
        ("slow", Behaviour::Slow),
        ("deny", Behaviour::Deny),
        ("observe", Behaviour::Observe),
        ("label", Behaviour::Label),
    ] {
        let (addr, ca, count) = toy_webhook(&format!("{svc}.hooks.svc"), behaviour).await;
        api.lock()
            .endpoints
            .insert(("hooks".into(), svc.into()), vec![addr]);
        hooks.push((svc, ca, count));
    }
    let ca = |svc: &str| hooks.iter().find(|h| h.0 == svc).expect("hook").1.clone();
    let create = |name: &str| api.create_pod("apps", pod(name, json!({})), false);
    let put = |cfg: Value| api.lock().put(cfg);
    let drop_all = || {
        let mut a = api.lock();
        for cfg in a.all("mutatingwebhookconfigurations") {
            let name = cfg["metadata"]["name"].as_str().unwrap_or("").to_string();
            a.remove("mutatingwebhookconfigurations", "", &name);
        }
    };

    // timeoutSeconds: a webhook answering after 3 s with a 1 s timeout.
    put(toy_config(
        "slow",
        "slow.hooks.example",
        ("hooks", "slow"),
        &ca("slow"),
        json!({"timeoutSeconds": 1}),
    ));
    let e = create("t1").await.expect_err("Fail: refused");
    assert_eq!(e.code, 500);
    assert!(
        e.message
            .contains("failed calling webhook \"slow.hooks.example\"")
            && e.message.contains("context deadline exceeded"),
        "{}",
        e.message
    );
    put(toy_config(
        "slow",
        "slow.hooks.example",
        ("hooks", "slow"),
        &ca("slow"),
        json!({"timeoutSeconds": 1, "failurePolicy": "Ignore"}),
    ));
    let a = create("t2").await.expect("Ignore: admitted");
    assert_eq!(containers(&a.pod), ["app"]);
    drop_all();

    // A caBundle that does not hold the server's issuer: the TLS verification fails.
    put(toy_config(
        "observe",
        "observe.hooks.example",
        ("hooks", "observe"),
        &ca("deny"),
        json!({}),
    ));
    let e = create("c1").await.expect_err("untrusted");
    assert!(
        e.message
            .contains("failed calling webhook \"observe.hooks.example\"")
            && e.message.contains("tls"),
        "{}",
        e.message
    );
    drop_all();

    // A denial refuses whatever the failure policy, with the webhook's code and message.
    put(toy_config(
        "deny",
        "deny.hooks.example",
        ("hooks", "deny"),
        &ca("deny"),
        json!({"failurePolicy": "Ignore"}),
    ));
    let e = create("d1").await.expect_err("denied");
    assert_eq!(
        (e.code, e.message.as_str()),
        (
            403,
            "admission webhook \"deny.hooks.example\" denied the request: nope"
        )
    );
    drop_all();

    // Reinvocation: `a-observe` (IfNeeded) runs first; `b-label` then changes the pod, so
    // `a-observe` is called once more. Without a change, it is not.
    put(toy_config(
        "a-observe",
        "observe.hooks.example",
        ("hooks", "observe"),
        &ca("observe"),
        json!({"reinvocationPolicy": "IfNeeded"}),
    ));
    put(toy_config(
        "b-label",
        "label.hooks.example",
        ("hooks", "label"),
        &ca("label"),
        json!({}),
    ));
    let a = create("r1").await.expect("admitted");
    assert_eq!(
        a.calls,
        [
            "a-observe/observe.hooks.example",
            "b-label/label.hooks.example",
            "a-observe/observe.hooks.example"
        ]
    );
    assert_eq!(a.pod["metadata"]["labels"]["touched"], "yes");
    let a = api
        .create_pod("apps", pod("r2", json!({"touched": "yes"})), false)
        .await
        .expect("admitted");
    assert_eq!(
        a.calls,
        [
            "a-observe/observe.hooks.example",
            "b-label/label.hooks.example"
        ]
    );
    // Selection by objectSelector: a pod that does not match is not sent.
    put(toy_config(
        "b-label",
        "label.hooks.example",
        ("hooks", "label"),
        &ca("label"),
        json!({"objectSelector": {"matchExpressions": [{"key": "touched", "operator": "DoesNotExist"}]}}),
    ));
    let a = api
        .create_pod("apps", pod("r3", json!({"touched": "yes"})), false)
        .await
        .expect("admitted");
    assert_eq!(a.calls, ["a-observe/observe.hooks.example"]);
    drop_all();

    // dryRun: a webhook with side effects refuses a dry run; the admitted pod is not stored.
    put(toy_config(
        "observe",
        "observe.hooks.example",
        ("hooks", "observe"),
        &ca("observe"),
        json!({"sideEffects": "Some"}),
    ));
    let e = api
        .create_pod("apps", pod("dry", json!({})), true)
        .await
        .expect_err("dry run");
    assert_eq!(
        (e.code, e.message.as_str()),
        (
            400,
            "admission webhook \"observe.hooks.example\" does not support dry run"
        )
    );
    put(toy_config(
        "observe",
        "observe.hooks.example",
        ("hooks", "observe"),
        &ca("observe"),
        json!({"sideEffects": "NoneOnDryRun"}),
    ));
    api.create_pod("apps", pod("dry", json!({})), true)
        .await
        .expect("dry run");
    assert!(api.lock().get("pods", "apps", "dry").is_none());
    let observed = hooks
        .iter()
        .find(|h| h.0 == "observe")
        .expect("observe")
        .2
        .load(Ordering::SeqCst);
    assert_eq!(observed, 5, "reviews the observing webhook answered");
}
