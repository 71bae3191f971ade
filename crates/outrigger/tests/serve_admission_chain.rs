//! Pods created through the fake API server's mutating admission chain (`common::admission`,
//! kube-apiserver's webhook selection, TLS against the caBundle, timeouts, failurePolicy, JSON
//! patches, reinvocation, dryRun), with the real `outrigger serve --kube` behind its Service:
//! alone with the manifest deploy/ ships, beside an istiod-like injector and istiod's real
//! configurations rendered from Istio's chart (no overlap by default, a migration one namespace at
//! a time and back; the takeover's overlap), and against seeded faults.

#[path = "../../outrigger-go/tests/harness/absent.rs"]
mod absent;
mod common;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use common::admission::{activated, start_outrigger};
use common::kube_api::{self, configmap, Cluster, FakeApi};
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

/// Namespaces `outrigger`, `kube-system`, `istio-system` and `others`; Istio's ConfigMaps with
/// the embedded configuration.
fn cluster() -> Cluster {
    let mut c = Cluster::default();
    for ns in ["outrigger", "kube-system", "istio-system"] {
        c.put(namespace(ns, json!({})));
    }
    kube_api::put_istio_configmaps(&mut c);
    c.put(kube_api::outrigger_deployment(2));
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outrigger_alone_injects_through_the_admission_chain() {
    let mut c = cluster();
    c.put(namespace("apps", json!({"istio.io/rev": "outrigger"})));
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
        ["outrigger-sidecar-injector/rev.namespace.sidecar-injector.istio.io"]
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
            "Internal error occurred: failed calling webhook \"rev.namespace.sidecar-injector.istio.io\": "
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
    let mut istio = printed_webhook_config(&[
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

/// Whether outrigger's webhook injected `pod`: its marker (istiod never writes it).
fn marked(pod: &Value) -> bool {
    pod["metadata"]["annotations"]["outrigger.dev/injected-by"] == "outrigger"
}

/// Beside an istiod-like injector selecting `istio-injection=enabled`, the shipped
/// configuration (istio.io/rev=outrigger) shares no pod with it: the detector finds no overlap,
/// and namespaces move to outrigger one at a time and back, each pod reaching exactly one
/// injector. The takeover's configuration (`--selector-revision default`) beside the same
/// istiod does overlap: both are called for one pod, and the last one called wins.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn beside_istiod_the_default_never_overlaps_and_a_takeover_does() {
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
    assert!(
        server
            .wait_log(
                "no other injector selects this injector's namespaces",
                Duration::from_secs(5)
            )
            .await,
        "{}",
        server.log_text()
    );
    let a = api
        .create_pod("team-1", pod("istiods", json!({})), false)
        .await
        .expect("admitted");
    assert_eq!(
        a.calls,
        ["istio-sidecar-injector/namespace.sidecar-injector.istio.io"],
        "the shipped configuration never selects istiod's namespaces"
    );
    assert_eq!(istiod_calls.load(Ordering::SeqCst), 1);
    assert_eq!(
        proxy_image(&a.pod).as_deref(),
        Some("istiod.example/proxyv2")
    );
    assert!(!marked(&a.pod), "istiod never writes outrigger's marker");

    // Migrate one namespace at a time, then back; after each step every namespace gets exactly
    // one injector: 0 pods uninjected, 0 injected twice. The documented relabel: outrigger's
    // label, istiod's istio-injection removed, in one update.
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
            assert_eq!(marked(&a.pod), on_outrigger, "step {step}, {t}");
        }
    }
    assert_eq!((uninjected, twice, pods), (0, 0, 18));

    // The takeover beside the same istiod: both configurations select team-1.
    let mut takeover = printed_webhook_config(&[
        "--selector-revision",
        "default",
        "--failure-policy",
        "Ignore",
    ]);
    {
        let mut a = api.lock();
        let stored = a
            .get(
                "mutatingwebhookconfigurations",
                "",
                "outrigger-sidecar-injector",
            )
            .expect("installed");
        takeover["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"].clone();
        a.write(
            "mutatingwebhookconfigurations",
            "",
            "outrigger-sidecar-injector",
            &takeover,
            None,
        )
        .expect("replaced");
    }
    activated(&api, "outrigger-sidecar-injector").await;
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
    // Configurations run in name order: istiod's injected first, then outrigger injected again
    // over it (as istiod re-injects an injected pod): the last one wins, silently.
    assert_eq!(
        proxy_image(&a.pod).as_deref(),
        Some("docker.io/istio/proxyv2:1.28.0"),
        "outrigger's embedded values replaced istiod's proxy"
    );
    assert!(marked(&a.pod));
    assert_eq!(
        containers(&a.pod)
            .iter()
            .filter(|c| *c == "istio-proxy")
            .count(),
        1
    );
}

/// Istio's releases whose charts the migration tests render.
const ISTIO_RELEASES: [&str; 3] = ["1.24.6", "1.26.8", "1.28.10"];

/// istiod's MutatingWebhookConfigurations as Istio release `tag`'s own chart renders them
/// (`helm install istiod CHART -n istio-system` with `values`, Helm values as JSON), by
/// `tools/render_istiod_webhooks.py` (Helm's Go SDK from PyPI `helm-python-sdk`, offline).
/// `None`, with a notice, where the chart (Istio's corpus) or the SDK is missing; under CI
/// (`CI=true`) or with `OUTRIGGER_REQUIRE_TOOLS=1` that is a failure instead.
fn istiod_chart(tag: &str, values: &str) -> Option<Vec<Value>> {
    let chart = absent::corpus_dir()
        .join("releases")
        .join(tag)
        .join("chart/istio-discovery");
    let missing = |why: String| -> Option<Vec<Value>> {
        if absent::required("OUTRIGGER_REQUIRE_TOOLS") {
            panic!("{why}, and this run requires it (OUTRIGGER_REQUIRE_TOOLS=1 or CI=true)");
        }
        eprintln!("NOTICE: {why}; the test is skipped");
        None
    };
    if !chart.join("Chart.yaml").exists() {
        return missing(format!("Istio's chart not found at {}", chart.display()));
    }
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tools/render_istiod_webhooks.py"
    );
    let out = match std::process::Command::new("python3")
        .arg(script)
        .arg(&chart)
        .arg(values)
        .output()
    {
        Ok(out) => out,
        Err(e) => return missing(format!("python3 cannot run: {e}")),
    };
    if out.status.code() == Some(3) {
        return missing(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    assert!(
        out.status.success(),
        "rendering {tag}'s chart with {values}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let configs: Vec<Value> = serde_json::from_slice(&out.stdout).expect("JSON array");
    assert!(!configs.is_empty(), "{tag} {values}: no configuration");
    Some(configs)
}

/// Whether a pod with `pod` labels in a namespace with `ns` labels is labelled for outrigger, by
/// Istio's precedence (a namespace's `istio-injection` wins, then its `istio.io/rev`, then the
/// pod's) and not opted out.
fn labelled_for_outrigger(ns: &Value, pod: &Value) -> bool {
    let opted_out = pod["sidecar.istio.io/inject"] == "false";
    let asks = if ns.get("istio-injection").is_some() {
        false
    } else if let Some(rev) = ns.get("istio.io/rev") {
        rev == "outrigger"
    } else {
        pod["istio.io/rev"] == "outrigger"
    };
    asks && !opted_out
}

/// Over every combination of namespace labels (`istio-injection` absent/enabled/disabled ×
/// `istio.io/rev` absent/default/canary/other/outrigger) and pod labels (`istio.io/rev` the same
/// five × `sidecar.istio.io/inject` absent/true/false), as the API server selects: the shipped
/// configuration selects none that istiod's (1.24.6, 1.26.8, 1.28.10; the default revision, a
/// revision `canary` and revision tags `other` and `default`, rendered from Istio's chart)
/// selects, and selects every one labelled for outrigger, by exactly one entry. The takeover's
/// configuration beside the same istiod selects many combinations twice.
#[test]
fn the_default_install_never_overlaps_istiod() {
    let ours = shipped_webhook_config();
    let takeover = printed_webhook_config(&["--selector-revision", "default"]);
    let table = outrigger_inject::decide::selection::label_combinations();
    assert_eq!(table.len(), 225);
    for tag in ISTIO_RELEASES {
        let mut istiod = Vec::new();
        for values in [
            r#"{"revisionTags": ["other", "default"]}"#,
            r#"{"revision": "canary"}"#,
        ] {
            let Some(configs) = istiod_chart(tag, values) else {
                return;
            };
            istiod.extend(configs);
        }
        let names: Vec<&str> = istiod
            .iter()
            .map(|c| c["metadata"]["name"].as_str().unwrap_or(""))
            .collect();
        assert_eq!(
            names,
            [
                "istio-sidecar-injector",
                "istio-revision-tag-other",
                "istio-revision-tag-default",
                "istio-sidecar-injector-canary"
            ],
            "{tag}"
        );
        let (mut by_istiod, mut by_ours, mut both_takeover) = (0, 0, 0);
        for (ns, pod) in &table {
            let (ns, pod) = (Value::Object(ns.clone()), Value::Object(pod.clone()));
            let theirs = common::admission::selecting(&istiod, "apps", &ns, &pod);
            let mine = common::admission::selecting(std::slice::from_ref(&ours), "apps", &ns, &pod);
            let taken =
                common::admission::selecting(std::slice::from_ref(&takeover), "apps", &ns, &pod);
            by_istiod += usize::from(!theirs.is_empty());
            by_ours += usize::from(!mine.is_empty());
            both_takeover += usize::from(!theirs.is_empty() && !taken.is_empty());
            assert!(
                theirs.is_empty() || mine.is_empty(),
                "{tag}: namespace {ns}, pod {pod}: both {theirs:?} and {mine:?}"
            );
            assert_eq!(
                mine.len(),
                usize::from(labelled_for_outrigger(&ns, &pod)),
                "{tag}: namespace {ns}, pod {pod}: {mine:?}"
            );
        }
        eprintln!(
            "{tag}: of {} label combinations istiod selects {by_istiod}, the shipped \
             configuration {by_ours} (both: 0); the takeover beside istiod: {both_takeover} both",
            table.len()
        );
        assert!(by_istiod > 0 && by_ours > 0 && both_takeover > 0);
    }
}

/// Namespaces move from istiod to outrigger one at a time with the documented relabel, then
/// back, with istiod's real configurations (Istio 1.24.6, 1.26.8 and 1.28.10's chart: the default
/// revision and a revision tag `prod`) and an istiod stand-in behind istiod's Service: at every
/// step each pod is injected by exactly one injector, none is missed in a labelled namespace,
/// and after the rollback no new pod carries outrigger's marker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migration_to_outrigger_and_back_beside_istiods_chart() {
    let mut charts = Vec::new();
    for tag in ISTIO_RELEASES {
        let Some(configs) = istiod_chart(tag, r#"{"revisionTags": ["prod"]}"#) else {
            return;
        };
        charts.push((tag, configs));
    }
    // Namespaces labelled for istiod three ways: the legacy label, the default revision, a tag.
    let teams = [
        ("team-1", json!({"istio-injection": "enabled"})),
        ("team-2", json!({"istio.io/rev": "default"})),
        ("team-3", json!({"istio.io/rev": "prod"})),
    ];
    let mut c = cluster();
    for (t, labels) in &teams {
        c.put(namespace(t, labels.clone()));
    }
    c.put(shipped_webhook_config());
    let api = FakeApi::start(c);
    let (addr, ca, _) = toy_webhook("istiod.istio-system.svc", Behaviour::Istiod).await;
    api.lock()
        .endpoints
        .insert(("istio-system".into(), "istiod".into()), vec![addr]);
    let _server = start_outrigger(&api, "chain-migration", &[]);
    activated(&api, "outrigger-sidecar-injector").await;
    let mut installed: Vec<String> = Vec::new();
    let mut pods = 0;
    for (tag, configs) in charts {
        // istiod's webhooks of this release, with the stand-in's CA (istiod patches its own).
        {
            let mut a = api.lock();
            for name in installed.drain(..) {
                a.remove("mutatingwebhookconfigurations", "", &name);
            }
            for mut cfg in configs {
                for e in cfg["webhooks"].as_array_mut().expect("entries") {
                    assert_eq!(e["clientConfig"]["service"]["name"], "istiod", "{tag}: {e}");
                    e["clientConfig"]["caBundle"] = json!(B64.encode(&ca));
                }
                cfg["metadata"]["resourceVersion"] = json!("2");
                installed.push(cfg["metadata"]["name"].as_str().expect("name").to_string());
                a.put(cfg);
            }
        }
        // Forward one namespace at a time, then back (the rollback), each pod checked.
        let mut steps: Vec<(usize, bool)> = (0..teams.len()).map(|i| (i, true)).collect();
        steps.extend((0..teams.len()).map(|i| (i, false)));
        for (step, (moved, to_outrigger)) in steps.iter().enumerate() {
            let labels = if *to_outrigger {
                // kubectl label namespace T istio.io/rev=outrigger istio-injection- --overwrite
                json!({"istio.io/rev": "outrigger"})
            } else {
                teams[*moved].1.clone()
            };
            api.lock().put(namespace(teams[*moved].0, labels));
            for (i, (t, _)) in teams.iter().enumerate() {
                let on_outrigger = steps[..=step]
                    .iter()
                    .rev()
                    .find(|(n, _)| *n == i)
                    .is_some_and(|(_, o)| *o);
                let a = api
                    .create_pod(t, pod(&format!("{tag}-p{step}"), json!({})), false)
                    .await
                    .expect("admitted");
                pods += 1;
                assert_eq!(a.calls.len(), 1, "{tag} step {step}, {t}: {:?}", a.calls);
                let want = if on_outrigger {
                    "outrigger-sidecar-injector/"
                } else if i == 2 {
                    "istio-revision-tag-prod/"
                } else {
                    "istio-sidecar-injector/"
                };
                assert!(
                    a.calls[0].starts_with(want),
                    "{tag} step {step}, {t}: {:?}",
                    a.calls
                );
                assert!(
                    proxy_image(&a.pod).is_some(),
                    "{tag} step {step}, {t}: missed"
                );
                assert_eq!(marked(&a.pod), on_outrigger, "{tag} step {step}, {t}");
            }
        }
        // After the rollback (every namespace back on istiod), no new pod is outrigger's.
        for (t, _) in &teams {
            let a = api
                .create_pod(t, pod(&format!("{tag}-after"), json!({})), false)
                .await
                .expect("admitted");
            pods += 1;
            assert!(
                !marked(&a.pod) && proxy_image(&a.pod).is_some(),
                "{tag} {t}"
            );
        }
    }
    assert_eq!(pods, 3 * (6 * 3 + 3));
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

/// A pod with `spec` fields merged over the plain one.
fn pod_with(name: &str, labels: Value, annotations: Value, spec: Value) -> Value {
    let mut p = pod(name, labels);
    p["metadata"]["annotations"] = annotations;
    for (k, v) in spec.as_object().into_iter().flatten() {
        p["spec"][k] = v.clone();
    }
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn match_conditions_let_skipped_pods_through_while_the_injector_is_down() {
    let mut c = cluster();
    c.put(namespace("apps", json!({"istio.io/rev": "outrigger"})));
    // `webhook-config --match-conditions` under failurePolicy Fail, no replica yet.
    let mut cfg = printed_webhook_config(&["--match-conditions", "--failure-policy", "Fail"]);
    cfg["metadata"]["resourceVersion"] = json!("2");
    let entries = cfg["webhooks"].as_array().expect("entries");
    assert!(
        entries.iter().all(|e| e["matchConditions"]
            .as_array()
            .is_some_and(|m| m.len() == 3)),
        "{cfg}"
    );
    c.put(cfg);
    let api = FakeApi::start(c);
    let never_injected = || {
        [
            pod("label-out", json!({"sidecar.istio.io/inject": "false"})),
            pod_with(
                "annotation-out",
                json!({}),
                json!({"sidecar.istio.io/inject": "false"}),
                json!({}),
            ),
            pod_with("host", json!({}), Value::Null, json!({"hostNetwork": true})),
        ]
    };
    // The injector is down (no endpoints): the pods the conditions filter out are created,
    // never sent to it; any other pod is refused by failurePolicy Fail.
    for p in never_injected() {
        let name = p["metadata"]["name"].as_str().expect("name").to_string();
        let a = api
            .create_pod("apps", p, false)
            .await
            .unwrap_or_else(|e| panic!("{name}: refused while the injector is down: {e:?}"));
        assert!(a.calls.is_empty(), "{name}: {:?}", a.calls);
        assert_eq!(containers(&a.pod), ["app"], "{name}");
    }
    let e = api
        .create_pod("apps", pod("plain-down", json!({})), false)
        .await
        .expect_err("a pod to inject waits for the injector");
    assert_eq!(e.code, 500, "{}", e.message);
    assert!(e.message.contains("no ready endpoints"), "{}", e.message);

    // The injector comes up: injected pods are injected, the others still never reach it.
    let _server = start_outrigger(&api, "chain-match-conditions", &[]);
    activated(&api, "outrigger-sidecar-injector").await;
    let a = api
        .create_pod("apps", pod("plain-up", json!({})), false)
        .await
        .expect("admitted");
    assert_eq!(
        a.calls,
        ["outrigger-sidecar-injector/rev.namespace.sidecar-injector.istio.io"]
    );
    assert!(proxy_image(&a.pod).is_some(), "{:?}", containers(&a.pod));
    for mut p in never_injected() {
        let name = format!("{}-up", p["metadata"]["name"].as_str().expect("name"));
        p["metadata"]["name"] = json!(name);
        let a = api.create_pod("apps", p, false).await.expect("admitted");
        assert!(a.calls.is_empty(), "{name}: {:?}", a.calls);
        assert_eq!(containers(&a.pod), ["app"], "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn match_conditions_false_skips_and_errors_follow_the_failure_policy() {
    let mut c = cluster();
    c.put(namespace("apps", json!({})));
    let api = FakeApi::start(c);
    let (addr, ca, count) = toy_webhook("observe.hooks.svc", Behaviour::Observe).await;
    api.lock()
        .endpoints
        .insert(("hooks".into(), "observe".into()), vec![addr]);
    let calls = || count.load(Ordering::SeqCst);
    let configure = |conditions: Value, policy: &str| {
        api.lock().put(toy_config(
            "observe",
            "observe.hooks.example",
            ("hooks", "observe"),
            &ca,
            json!({"matchConditions": conditions, "failurePolicy": policy}),
        ))
    };
    let labelled = |name: &str| pod(name, json!({"team": "a"}));
    let by_label = json!({"name": "team-a", "expression": "object.metadata.labels['team'] == 'a'"});
    // `request` is the AdmissionRequest: its namespace and operation.
    let by_request = json!({"name": "create-in-apps",
        "expression": "request.operation == 'CREATE' && request.namespace == 'apps' && oldObject == null"});
    configure(json!([by_label, by_request]), "Fail");
    let a = api
        .create_pod("apps", labelled("t1"), false)
        .await
        .expect("called");
    assert_eq!(a.calls, ["observe/observe.hooks.example"]);
    assert_eq!(calls(), 1);
    let a = api
        .create_pod("apps", pod("t2", json!({"team": "b"})), false)
        .await
        .expect("skipped");
    assert!(a.calls.is_empty());
    assert_eq!(calls(), 1, "a false condition skips the call");

    // An evaluation error (a pod without the label: no such key) under Fail refuses the pod
    // with 403, naming the expression; under Ignore the webhook is skipped.
    let unguarded = json!({"name": "unguarded", "expression": "object.spec.nodeName == 'n1'"});
    configure(json!([by_request, unguarded]), "Fail");
    let e = api
        .create_pod("apps", pod("t3", json!({})), false)
        .await
        .expect_err("evaluation error under Fail");
    assert_eq!(e.code, 403, "{}", e.message);
    assert!(
        e.message.starts_with(
            "pods \"t3\" is forbidden: expression 'object.spec.nodeName == 'n1'' resulted in error: "
        ),
        "{}",
        e.message
    );
    let (status, body) = post_pod(&api, "apps", pod("t3-http", json!({}))).await;
    assert_eq!(
        (status, body["reason"].as_str()),
        (403, Some("Forbidden")),
        "{body}"
    );
    assert_eq!(calls(), 1, "never called on an error");
    configure(json!([by_request, unguarded]), "Ignore");
    let a = api
        .create_pod("apps", pod("t4", json!({})), false)
        .await
        .expect("Ignore skips");
    assert!(a.calls.is_empty());
    // A false condition wins over an error, whatever the failure policy; with no false and no
    // error the webhook is called.
    let never = json!({"name": "never", "expression": "request.namespace == 'elsewhere'"});
    configure(json!([unguarded, never]), "Fail");
    let a = api
        .create_pod("apps", pod("t5", json!({})), false)
        .await
        .expect("false wins over an error");
    assert!(a.calls.is_empty());
    // (`hostname`: a field the API server does not default, so absent is an error.)
    let two = json!({"name": "two", "expression": "object.spec.hostname == 'x'"});
    configure(json!([unguarded, two]), "Fail");
    let e = api
        .create_pod("apps", pod("t6", json!({})), false)
        .await
        .expect_err("two errors");
    assert!(
        e.message
            .starts_with("pods \"t6\" is forbidden: [expression 'object.spec.nodeName")
            && e.message.contains(", expression 'object.spec.hostname"),
        "errors aggregated as Go's: {}",
        e.message
    );
    let mut scheduled = pod("t7", json!({}));
    scheduled["spec"]["nodeName"] = json!("n1");
    scheduled["spec"]["hostname"] = json!("x");
    let a = api
        .create_pod("apps", scheduled, false)
        .await
        .expect("called");
    assert_eq!(a.calls, ["observe/observe.hooks.example"]);
    assert_eq!(calls(), 2);
}

#[test]
#[should_panic(expected = "the API server refuses more than 64")]
fn more_than_64_match_conditions_are_refused() {
    let list: Vec<Value> = (0..65)
        .map(|i| json!({"name": format!("c{i}"), "expression": "true"}))
        .collect();
    common::admission::conditions(
        "x.example",
        &json!({"matchConditions": list}),
        &json!({"object": {}, "oldObject": null}),
    );
}

/// A replica of outrigger as deploy/ runs it, not yet behind the Service (the endpoints
/// controller adds it once its readiness probe passes: [`behind_service_once_ready`]).
fn replica(api: &FakeApi, name: &str, extra: &[&str]) -> Server {
    Outrigger::builder(name)
        .kube(api)
        .flags(common::admission::DEPLOY_BASE_FLAGS)
        .flags(extra)
        .start()
}

/// Whether the replica's `/readyz` answers 200 (its CA from the shared Secret).
async fn ready(api: &FakeApi, server: &Server) -> bool {
    let Some(ca) = common::kube_api::stored_secret(api).and_then(|s| {
        s.pointer("/data/ca-bundle.crt")
            .and_then(Value::as_str)
            .and_then(|b| B64.decode(b).ok())
    }) else {
        return false;
    };
    match H2::connect(server.addr, &ca).await {
        Ok(c) => c.get("/readyz").await.is_ok_and(|r| r.status == 200),
        Err(_) => false,
    }
}

/// The kubelet's readiness probe and the endpoints controller: once the replica is ready, add
/// its address to Service `outrigger/outrigger`.
async fn behind_service_once_ready(api: &FakeApi, server: &Server) {
    eventually("the replica is ready", || ready(api, server)).await;
    api.lock()
        .endpoints
        .entry(("outrigger".into(), "outrigger".into()))
        .or_default()
        .push(server.addr);
}

/// Take the replica out of the Service (its pod is terminating).
fn out_of_service(api: &FakeApi, server: &Server) {
    if let Some(e) = api
        .lock()
        .endpoints
        .get_mut(&("outrigger".to_string(), "outrigger".to_string()))
    {
        e.retain(|a| *a != server.addr);
    }
}

/// The replica stopped as the kubelet stops its pod (SIGTERM; out of the Service's endpoints
/// 100 ms later, as the endpoints controller acts concurrently), waited for until it exits.
async fn stop_replica(api: &FakeApi, server: &mut Server) {
    server.sigterm();
    tokio::time::sleep(Duration::from_millis(100)).await;
    out_of_service(api, server);
    assert!(
        server.wait_exit(Duration::from_secs(20)).is_some(),
        "exited"
    );
}

/// The `failurePolicy` of every entry of outrigger's webhook configuration, which must exist.
fn entry_policies(api: &FakeApi) -> Vec<Value> {
    api.lock()
        .get(
            "mutatingwebhookconfigurations",
            "",
            "outrigger-sidecar-injector",
        )
        .and_then(|m| m["webhooks"].as_array().cloned())
        .expect("the configuration is there")
        .iter()
        .map(|e| e["failurePolicy"].clone())
        .collect()
}

/// One create of a loop of creates.
#[derive(Debug, PartialEq)]
struct Create {
    /// When it was sent.
    at: std::time::Instant,
    /// The `failurePolicy` of outrigger's first entry just before (None: no configuration).
    policy: Option<String>,
    /// `Ok(injected)`, or the refusal's message.
    outcome: Result<bool, String>,
}

/// Create pods in `ns`, one every 20 ms, until `stop`; each create is recorded in order.
fn create_continuously(
    api: &FakeApi,
    ns: &'static str,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> tokio::task::JoinHandle<Vec<Create>> {
    let api = api.clone();
    tokio::spawn(async move {
        let mut seen = Vec::new();
        let mut i = 0;
        while !stop.load(Ordering::SeqCst) {
            let policy = api
                .lock()
                .get(
                    "mutatingwebhookconfigurations",
                    "",
                    "outrigger-sidecar-injector",
                )
                .and_then(|m| {
                    m["webhooks"][0]["failurePolicy"]
                        .as_str()
                        .map(str::to_string)
                });
            let at = std::time::Instant::now();
            let outcome = api
                .create_pod(ns, pod(&format!("c{i}"), json!({})), false)
                .await
                .map(|a| proxy_image(&a.pod).is_some())
                .map_err(|e| e.message);
            seen.push(Create {
                at,
                policy,
                outcome,
            });
            i += 1;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        seen
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_update_refuses_and_misses_no_pod() {
    let mut c = cluster();
    c.put(namespace("apps", json!({"istio.io/rev": "outrigger"})));
    c.put(shipped_webhook_config());
    let api = FakeApi::start(c);
    let args = ["--activation-delay", "200ms", "--drain-delay", "1s"];
    // The Deployment's two replicas, behind the Service, the configuration activated (Fail).
    let mut old = Vec::new();
    for name in ["rollout-a1", "rollout-a2"] {
        let r = replica(&api, name, &args);
        behind_service_once_ready(&api, &r).await;
        old.push(r);
    }
    activated(&api, "outrigger-sidecar-injector").await;

    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let creates = create_continuously(&api, "apps", stop.clone());
    // maxSurge 1, maxUnavailable 0: a new replica, ready, behind the Service; then an old one
    // terminates (out of the Service while it drains; SIGTERM first, as the kubelet and the
    // endpoints controller act concurrently), and so on.
    let mut new = Vec::new();
    for (name, mut retired) in ["rollout-b1", "rollout-b2"].into_iter().zip(old) {
        let r = replica(&api, name, &args);
        behind_service_once_ready(&api, &r).await;
        new.push(r);
        // Drained and exited.
        stop_replica(&api, &mut retired).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::SeqCst);
    let seen = creates.await.expect("creates");
    let refused: Vec<_> = seen.iter().filter(|c| c.outcome.is_err()).collect();
    let uninjected = seen.iter().filter(|c| c.outcome == Ok(false)).count();
    assert!(seen.len() >= 20, "pods created: {}", seen.len());
    assert_eq!(refused.len(), 0, "refused: {refused:?}");
    assert_eq!(uninjected, 0, "of {} pods", seen.len());
    assert_eq!(
        api.lock().endpoints[&("outrigger".to_string(), "outrigger".to_string())],
        new.iter().map(|r| r.addr).collect::<Vec<_>>()
    );
}

/// An address that refuses connections (a port bound, then closed).
fn refusing_port() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr")
}

/// An address that accepts connections and never answers (a firewall dropping the traffic
/// after the handshake, or a hung process).
async fn black_hole() -> SocketAddr {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = l.local_addr().expect("addr");
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((tcp, _)) = l.accept().await {
            held.push(tcp);
        }
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_port_refuses_under_fail_and_admits_uninjected_under_ignore() {
    let mut c = cluster();
    c.put(namespace("apps", json!({"istio.io/rev": "outrigger"})));
    let api = FakeApi::start(c);
    let hole = black_hole().await;
    for (fault, addr, cause) in [
        ("refused", refusing_port(), "dial tcp"),
        ("dropped", hole, "context deadline exceeded"),
    ] {
        api.lock()
            .endpoints
            .insert(("outrigger".into(), "outrigger".into()), vec![addr]);
        for policy in ["Fail", "Ignore"] {
            let mut cfg = printed_webhook_config(&["--failure-policy", policy, "--timeout", "1"]);
            cfg["metadata"]["resourceVersion"] = json!("2");
            api.lock().put(cfg);
            let name = format!("{fault}-{}", policy.to_lowercase());
            let outcome = api.create_pod("apps", pod(&name, json!({})), false).await;
            match policy {
                "Fail" => {
                    let e = outcome.expect_err("Fail refuses");
                    assert_eq!(e.code, 500, "{fault}: {}", e.message);
                    assert!(
                        e.message.starts_with("Internal error occurred: failed calling webhook \"rev.namespace.sidecar-injector.istio.io\": ")
                            && e.message.contains(cause),
                        "{fault}: {}",
                        e.message
                    );
                    assert!(api.lock().get("pods", "apps", &name).is_none());
                }
                _ => {
                    let a = outcome.expect("Ignore admits");
                    assert_eq!(containers(&a.pod), ["app"], "{fault}: uninjected");
                    assert!(api.lock().get("pods", "apps", &name).is_some());
                }
            }
        }
    }
}

/// `kubectl kustomize deploy/base`, as documents in output order; `None` without kubectl.
fn rendered_base() -> Option<Vec<Value>> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy/base");
    let out = std::process::Command::new("kubectl")
        .args(["kustomize", dir])
        .output()
        .ok()?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    let docs = outrigger_go::yaml::split_documents(&text).expect("documents");
    Some(
        docs.iter()
            .map(|d| outrigger_go::yaml::from_str(d).expect("YAML"))
            .collect(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_apply_blocks_no_pod_and_deleting_the_install_leaves_nothing_that_blocks() {
    let Some(manifests) = rendered_base() else {
        // Without kubectl the test cannot run: a notice here, a failure where tools are
        // required (CI=true, OUTRIGGER_REQUIRE_TOOLS=1).
        assert!(
            !absent::required("OUTRIGGER_REQUIRE_TOOLS"),
            "kubectl not found, and this run requires it (OUTRIGGER_REQUIRE_TOOLS=1 or CI=true)"
        );
        eprintln!("NOTICE: kubectl not found; the fresh-apply test is skipped");
        return;
    };
    let mut c = cluster();
    c.remove("namespaces", "", "outrigger");
    c.remove("deployments", "outrigger", "outrigger");
    c.put(namespace("apps", json!({"istio.io/rev": "outrigger"})));
    let api = FakeApi::start(c);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Pods are created in a selected namespace from before the apply to after the activation.
    let creates = create_continuously(&api, "apps", stop.clone());
    tokio::time::sleep(Duration::from_millis(200)).await;

    // One `kubectl apply`: every document in the order kustomize renders them; the fake stores
    // what it serves, with the uid and resourceVersion the API server gives on create. The
    // Deployment is the replica started below; its Service is the fake's endpoints.
    let kinds: Vec<&str> = manifests
        .iter()
        .filter_map(|m| m["kind"].as_str())
        .collect();
    assert_eq!(
        kinds.last(),
        Some(&"MutatingWebhookConfiguration"),
        "kustomize orders the webhook configuration last: {kinds:?}"
    );
    {
        let mut a = api.lock();
        for (i, mut m) in manifests.into_iter().enumerate() {
            if !matches!(
                m["kind"].as_str(),
                Some(
                    "Namespace"
                        | "MutatingWebhookConfiguration"
                        | "ConfigMap"
                        | "Secret"
                        | "Deployment"
                )
            ) {
                continue;
            }
            m["metadata"]["uid"] = json!(format!("applied-{i}"));
            m["metadata"]["resourceVersion"] = json!("2");
            a.put(m);
        }
        let mwc = a
            .get(
                "mutatingwebhookconfigurations",
                "",
                "outrigger-sidecar-injector",
            )
            .expect("applied");
        assert!(
            mwc["webhooks"]
                .as_array()
                .is_some_and(|w| w.iter().all(|e| e["failurePolicy"] == "Ignore")),
            "shipped fail-open: {mwc}"
        );
    }
    // Image pull, then the replica starts; it is behind the Service once ready.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let delay = Duration::from_secs(2);
    // The replica cannot be ready before it is started: the bound the activation's delay runs
    // from (the moment this test sees it listening comes later than the moment it is).
    let launched = std::time::Instant::now();
    let mut server = replica(
        &api,
        "fresh-apply",
        &["--activation-delay", "2s", "--drain-delay", "1s"],
    );
    let listening = std::time::Instant::now();
    behind_service_once_ready(&api, &server).await;
    let ready = std::time::Instant::now();
    activated(&api, "outrigger-sidecar-injector").await;
    let active = std::time::Instant::now();
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::SeqCst);
    let seen = creates.await.expect("creates");

    let refused: Vec<&Create> = seen.iter().filter(|c| c.outcome.is_err()).collect();
    assert_eq!(
        refused,
        Vec::<&Create>::new(),
        "no pod is refused at any time"
    );
    // Pods created once the replica is behind the Service are injected; before, admitted
    // uninjected (fail-open): none waits.
    let after_ready: Vec<&Create> = seen.iter().filter(|c| c.at >= ready).collect();
    assert!(!after_ready.is_empty());
    assert!(
        after_ready.iter().all(|c| c.outcome == Ok(true)),
        "{after_ready:?}"
    );
    let before: Vec<&Create> = seen.iter().filter(|c| c.at < listening).collect();
    assert!(before.iter().all(|c| c.outcome == Ok(false)), "{before:?}");
    // The activation (Fail) follows readiness, never before the replica was ready for the
    // delay: every create sent before launch + delay saw no configuration or Ignore (a create
    // reads the policy just before its time is taken).
    let first_fail = seen
        .iter()
        .find(|c| c.policy.as_deref() == Some("Fail"))
        .expect("pods created after the activation");
    assert!(
        first_fail.at >= launched + delay,
        "activated before the delay: {:?} after the launch",
        first_fail.at - launched
    );
    assert!(seen
        .iter()
        .filter(|c| c.at < launched + delay)
        .all(|c| c.policy.as_deref() != Some("Fail")),);
    assert!(ready <= active);
    // Bounded by the delay: activated within it (plus a generous allowance for the check's
    // step and a loaded machine) of the replica being seen ready.
    assert!(
        active <= ready + delay + Duration::from_secs(10),
        "activated {:?} after readiness",
        active - ready
    );
    assert!(
        server
            .wait_log(
                "webhook configuration activated by a ready replica",
                Duration::from_secs(1)
            )
            .await
    );

    // Deleting the install: the namespace is terminating, the namespace controller deletes the
    // replica's pod (SIGTERM; out of the endpoints 100 ms later). Told to stop in a terminating
    // namespace, the replica sets the configuration back to fail open, so pods are created
    // (uninjected) while no replica answers, before the garbage collector has deleted it.
    let owners = api
        .lock()
        .get(
            "mutatingwebhookconfigurations",
            "",
            "outrigger-sidecar-injector",
        )
        .map(|m| m["metadata"]["ownerReferences"].clone())
        .expect("configuration");
    assert_eq!(owners[0]["kind"], "Namespace", "{owners}");
    {
        let mut a = api.lock();
        let ns = a.get_mut("namespaces", "", "outrigger").expect("namespace");
        ns["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        ns["status"] = json!({"phase": "Terminating"});
    }
    stop_replica(&api, &mut server).await;
    assert!(
        server
            .log_text()
            .contains("webhook configuration set to fail open"),
        "{}",
        server.log_text()
    );
    // Still there until the namespace is gone.
    let policies = entry_policies(&api);
    assert!(policies.iter().all(|p| p == "Ignore"), "{policies:?}");
    let a = api
        .create_pod("apps", pod("while-terminating", json!({})), false)
        .await
        .expect("not refused while the namespace terminates");
    assert_eq!(containers(&a.pod), ["app"]);
    // The namespace is gone: the garbage collector deletes the configuration (its owner is
    // gone); nothing calls the gone injector.
    let gone = api.lock().delete("namespaces", "", "outrigger");
    assert!(
        gone.iter()
            .any(|(r, _, n)| r == "mutatingwebhookconfigurations"
                && n == "outrigger-sidecar-injector"),
        "collected: {gone:?}"
    );
    let a = api
        .create_pod("apps", pod("after-delete", json!({})), false)
        .await
        .expect("nothing blocks");
    assert!(a.calls.is_empty(), "{:?}", a.calls);
}

/// `kubectl delete deployment -n outrigger outrigger` alone: the Deployment goes at once
/// (background propagation), then the garbage collector deletes its ReplicaSet and pods, whose
/// replicas are told to stop. The last replica sets the configuration back to fail open, so
/// pods are created (uninjected) instead of refused by a webhook no replica answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_only_the_deployment_fails_open_instead_of_refusing_pods() {
    let mut c = cluster();
    c.put(namespace("apps", json!({"istio.io/rev": "outrigger"})));
    c.put(shipped_webhook_config());
    let api = FakeApi::start(c);
    let mut server = start_outrigger(&api, "chain-deployment-deleted", &[]);
    activated(&api, "outrigger-sidecar-injector").await;
    let a = api
        .create_pod("apps", pod("before", json!({})), false)
        .await
        .expect("admitted");
    assert!(proxy_image(&a.pod).is_some(), "injected while it runs");

    let gone = api.lock().delete("deployments", "outrigger", "outrigger");
    assert_eq!(gone.len(), 1, "{gone:?}");
    stop_replica(&api, &mut server).await;
    assert!(
        server
            .log_text()
            .contains("Deployment deleted: webhook configuration set to fail open"),
        "{}",
        server.log_text()
    );
    // The configuration stays.
    let policies = entry_policies(&api);
    assert!(policies.iter().all(|p| p == "Ignore"), "{policies:?}");
    let a = api
        .create_pod("apps", pod("after", json!({})), false)
        .await
        .expect("not refused once no replica runs");
    assert_eq!(containers(&a.pod), ["app"]);
}

/// The value of the sample `name` on the replica's `/metrics` (0 when absent).
async fn replica_metric(api: &FakeApi, server: &Server, name: &str) -> f64 {
    let Some(ca) = common::kube_api::stored_secret(api).and_then(|s| {
        s.pointer("/data/ca-bundle.crt")
            .and_then(Value::as_str)
            .and_then(|b| B64.decode(b).ok())
    }) else {
        return 0.0;
    };
    let Ok(c) = H2::connect(server.addr, &ca).await else {
        return 0.0;
    };
    let Ok(r) = c.get("/metrics").await else {
        return 0.0;
    };
    metric(&String::from_utf8_lossy(&r.body), name).unwrap_or(0.0)
}

/// `--probe-interval`: each probe is a dry-run create through the API server's admission chain,
/// counted by outcome; none is stored. While the Service has no endpoints the webhook cannot
/// be called and `failurePolicy: Fail` refuses the probe pod: counted and logged as refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_interval_probe_counts_what_the_admission_path_does_to_a_pod() {
    let mut c = cluster();
    c.put(namespace(
        "outrigger-probe",
        json!({"istio.io/rev": "outrigger"}),
    ));
    c.put(shipped_webhook_config());
    let api = FakeApi::start(c);
    let server = start_outrigger(
        &api,
        "chain-probe",
        &[
            "--probe-interval",
            "200ms",
            "--probe-namespace",
            "outrigger-probe",
        ],
    );
    activated(&api, "outrigger-sidecar-injector").await;
    let injected = r#"outrigger_admission_probe_total{outcome="injected"}"#;
    let refused = r#"outrigger_admission_probe_total{outcome="refused"}"#;
    eventually("a probe pod came back injected", || async {
        replica_metric(&api, &server, injected).await >= 1.0
    })
    .await;
    assert!(
        replica_metric(
            &api,
            &server,
            "outrigger_admission_probe_last_injected_timestamp_seconds"
        )
        .await
            > 1.7e9
    );
    assert!(
        api.lock()
            .get("pods", "outrigger-probe", "outrigger-serve-probe")
            .is_none(),
        "dry runs store nothing"
    );
    assert!(
        api.requests()
            .iter()
            .any(|r| r == "POST /api/v1/namespaces/outrigger-probe/pods"),
        "{:?}",
        api.requests()
    );

    // The replica runs but is no longer behind the Service: nothing answers the API server's
    // call, and the entry's failurePolicy Fail refuses the pod.
    api.lock()
        .endpoints
        .remove(&("outrigger".to_string(), "outrigger".to_string()));
    eventually("a probe pod was refused", || async {
        replica_metric(&api, &server, refused).await >= 1.0
    })
    .await;
    assert!(
        server
            .log_text()
            .contains("admission probe: a dry-run pod in outrigger-probe was refused"),
        "{}",
        server.log_text()
    );
}

/// Istio's injector ConfigMap with `config` as given and the embedded values, at `rv`.
fn injector_configmap(config: &str, rv: &str) -> Value {
    configmap(
        "istio-system",
        "istio-sidecar-injector",
        rv,
        &[
            ("config", config),
            ("values", outrigger_inject::config::defaults::VALUES),
        ],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newer_istios_templates_are_named_and_never_block_every_pod() {
    // A template, which no probe pod uses, calls a Sprig function outrigger does not implement.
    let newer = format!(
        "{}\n  rare: |\n    metadata:\n      annotations:\n        id: {{{{ uuidv4 }}}}\n",
        outrigger_inject::config::defaults::CONFIG.trim_end()
    );
    let mut c = cluster();
    c.put(injector_configmap(&newer, "3"));
    c.put(namespace("apps", json!({"istio.io/rev": "outrigger"})));
    c.put(shipped_webhook_config());
    let api = FakeApi::start(c);
    let server = replica(&api, "newer-istio", &["--activation-delay", "200ms"]);
    // Not ready, naming the feature and the template; never behind the Service, never activated:
    // pods are created (uninjected), not refused.
    let why = holds_within(Duration::from_secs(10), || async {
        let Some(ca) = common::kube_api::stored_secret(&api).and_then(|s| {
            s.pointer("/data/ca-bundle.crt")
                .and_then(Value::as_str)
                .and_then(|b| B64.decode(b).ok())
        }) else {
            return false;
        };
        let Ok(c) = H2::connect(server.addr, &ca).await else {
            return false;
        };
        c.get("/readyz").await.is_ok_and(|r| {
            r.status == 503
                && r.text().contains(
                    "template \"rare\" line 3 calls Sprig function \"uuidv4\", which outrigger does not implement",
                )
        })
    })
    .await;
    assert!(why, "{}", server.log_text());
    tokio::time::sleep(Duration::from_millis(600)).await;
    let a = api
        .create_pod("apps", pod("while-unsupported", json!({})), false)
        .await
        .expect("admitted: the configuration still fails open");
    assert_eq!(containers(&a.pod), ["app"]);
    let policies = api
        .lock()
        .get(
            "mutatingwebhookconfigurations",
            "",
            "outrigger-sidecar-injector",
        )
        .map(|m| m["webhooks"].clone())
        .expect("configuration");
    assert!(
        policies
            .as_array()
            .is_some_and(|w| w.iter().all(|e| e["failurePolicy"] == "Ignore")),
        "a replica that is not ready never activates: {policies}"
    );

    // Istio's templates as outrigger knows them: ready, activated, injecting.
    api.lock().put(injector_configmap(
        outrigger_inject::config::defaults::CONFIG,
        "4",
    ));
    behind_service_once_ready(&api, &server).await;
    activated(&api, "outrigger-sidecar-injector").await;
    let a = api
        .create_pod("apps", pod("known", json!({})), false)
        .await
        .expect("admitted");
    assert!(proxy_image(&a.pod).is_some());

    // The newer templates as an update: refused by name, the last good configuration injects.
    api.lock().put(injector_configmap(&newer, "5"));
    assert!(
        server
            .wait_log("unsupported template feature", Duration::from_secs(10))
            .await
            && server
                .wait_log(
                    "keeping the last good configuration",
                    Duration::from_secs(10)
                )
                .await,
        "{}",
        server.log_text()
    );
    let a = api
        .create_pod("apps", pod("after-update", json!({})), false)
        .await
        .expect("admitted");
    assert!(proxy_image(&a.pod).is_some(), "the last good configuration");
    assert!(ready(&api, &server).await, "still ready");
}
