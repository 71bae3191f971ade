//! Integration tests of `outrigger serve`: the real binary on 127.0.0.1, a real TLS client
//! (rustls, HTTP/2 and HTTP/1.1 by ALPN) trusting only the generated or given CA.

mod common;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::*;
use http_body_util::BodyExt;
use serde_json::{json, Value};

const V1: &str = "admission.k8s.io/v1";
const V1BETA1: &str = "admission.k8s.io/v1beta1";

const SELECTORS: &str = "neverInjectSelector:\n- matchLabels: {never: \"yes\"}\nalwaysInjectSelector:\n- matchLabels: {always: \"yes\"}\n";

/// Start a server whose config is `policy: <policy>` plus the selectors; returns it and its CA.
fn server_with_policy(
    name: &str,
    policy: &str,
    extra: &[&str],
) -> (Server, Vec<u8>, std::path::PathBuf) {
    let start_up = Outrigger::builder(name);
    let dir = start_up.dir().to_path_buf();
    std::fs::write(dir.join("config"), format!("policy: {policy}\n{SELECTORS}"))
        .expect("write config");
    let server = start_up
        .config_in(&dir)
        .generated_ca()
        // These configs have selectors and no templates: serve them as ready.
        .flag("--allow-empty-config")
        .quick_drain()
        .flags(extra)
        .start();
    let pem = server.ca();
    (server, pem, dir)
}

fn pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": name}},
           "spec": {"containers": [{"name": "app", "image": "nginx"}]}})
}

/// A request body fed by the test as it goes (the client is still sending when the server
/// could answer).
struct Streamed(tokio::sync::mpsc::Receiver<bytes::Bytes>);

impl hyper::body::Body for Streamed {
    type Data = bytes::Bytes;
    type Error = std::convert::Infallible;
    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<bytes::Bytes>, Self::Error>>> {
        self.0
            .poll_recv(cx)
            .map(|b| b.map(|b| Ok(hyper::body::Frame::data(b))))
    }
}

/// A POST to an unknown path (or a health route) is answered over HTTP/2 as over HTTP/1.1: the
/// server reads the body it does not use to its end and answers 404, instead of answering while
/// the client is still sending and resetting the stream (which curl reports as a failure).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_paths_answer_404_over_http2_and_http1() {
    use http_body_util::BodyExt;
    let (server, ca, _dir) = server_with_policy("notfound", "disabled", &[]);
    let c = H2::connect(server.addr, &ca).await.expect("h2 connection");
    for path in ["/nope", "/healthz"] {
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        tx.send(bytes::Bytes::from(vec![b' '; 1024]))
            .await
            .expect("queued");
        let client = c.clone();
        let answer = tokio::spawn(async move {
            client
                .request_with("POST", path, &[], Streamed(rx).boxed())
                .await
        });
        // Time for a server that answers early to answer and reset the stream.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let rest = tx.send(bytes::Bytes::from(vec![b' '; 100_000])).await;
        drop(tx);
        let answer = answer.await.expect("task").expect("an HTTP/2 answer");
        assert!(
            rest.is_ok(),
            "{path}: the stream was reset while the body was being sent"
        );
        let h1 = http1_request(server.addr, &ca, path, Some(vec![b' '; 101_024]))
            .await
            .expect("an HTTP/1.1 answer");
        assert_eq!(answer.status, h1.status, "{path}");
        assert_eq!(answer.text(), h1.text(), "{path}");
    }
    assert_eq!(c.get("/nope").await.expect("GET").status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_alpn_routes_and_health() {
    let (server, ca, _dir) = server_with_policy("routes", "disabled", &[]);
    let c = H2::connect(server.addr, &ca)
        .await
        .expect("h2 connection trusting the generated CA");
    let r = c.get("/healthz").await.unwrap();
    assert_eq!((r.status, r.text().as_str()), (200, "ok\n"));
    assert_eq!(c.get("/readyz").await.unwrap().status, 200);
    let m = metrics(&c).await;
    assert!(
        m.contains("# TYPE sidecar_injection_requests_total counter"),
        "{m}"
    );
    assert!(
        metric(&m, "outrigger_certificate_expiry_timestamp_seconds").is_some_and(|v| v > 1.7e9),
        "{m}"
    );
    assert_eq!(c.get("/injectX").await.unwrap().status, 404);
    assert_eq!(c.get("/nope").await.unwrap().status, 404);
    let r = c.get("//inject").await.unwrap();
    assert_eq!(r.status, 301);
    assert_eq!(
        r.headers.get("location").and_then(|v| v.to_str().ok()),
        Some("/inject")
    );
    assert_eq!(c.get("/inject/../inject").await.unwrap().status, 301);

    // HTTP/1.1 by ALPN, on the same port.
    let r = http1_request(server.addr, &ca, "/healthz", None)
        .await
        .expect("http/1.1");
    assert_eq!(r.status, 200);
    let r = http1_request(
        server.addr,
        &ca,
        "/inject",
        Some(review(V1, "h1", "ns", pod("p"))),
    )
    .await
    .unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["response"]["uid"], "h1");

    // TLS 1.2 works; a client that does not trust the CA fails the handshake.
    let tls12 = client_config(&[&ca], &[b"h2"], true);
    let c12 = H2::connect_with(server.addr, tls12)
        .await
        .expect("TLS 1.2 client");
    assert_eq!(c12.get("/healthz").await.unwrap().status, 200);
    let other = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let untrusting = client_config(&[other.cert.pem().as_bytes()], &[b"h2"], false);
    let err = H2::connect_with(server.addr, untrusting)
        .await
        .err()
        .expect("untrusted CA must fail");
    assert!(err.contains("tls"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v1_and_v1beta1_are_answered_in_their_version() {
    let (server, ca, _dir) = server_with_policy("versions", "disabled", &[]);
    let c = H2::connect(server.addr, &ca).await.unwrap();
    let r = c
        .post("/inject", review(V1, "uid-v1", "ns", pod("a")))
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(
        r.headers.get("content-type").and_then(|v| v.to_str().ok()),
        Some("application/json")
    );
    assert_eq!(
        r.text(),
        r#"{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","response":{"uid":"uid-v1","allowed":true}}"#
    );
    let r = c
        .post(
            "/inject/cluster/c1/net/n1",
            review(V1BETA1, "uid-b1", "ns", pod("b")),
        )
        .await
        .unwrap();
    assert_eq!(
        r.text(),
        r#"{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1beta1","response":{"uid":"uid-b1","allowed":true}}"#
    );
    let m = metrics(&c).await;
    assert_eq!(metric(&m, "sidecar_injection_requests_total"), Some(2.0));
    assert_eq!(metric(&m, "sidecar_injection_success_total"), Some(2.0));
    assert!(
        server.wait_log("uid-b1", Duration::from_secs(2)).await,
        "request UID must be logged"
    );
    let logs = server.log_text();
    let line = logs.lines().find(|l| l.contains("uid-b1")).unwrap();
    let v: Value = serde_json::from_str(line).expect("JSON log line");
    assert_eq!(
        (
            v["namespace"].as_str(),
            v["pod"].as_str(),
            v["outcome"].as_str()
        ),
        (Some("ns"), Some("b"), Some("skipped"))
    );
    assert_eq!(v["reason"], "policy_disabled");
    assert!(v["decision"].as_str().is_some_and(|d| !d.is_empty()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_skip_reason() {
    let (enabled, ca, _d1) = server_with_policy("skip-enabled", "enabled", &[]);
    let c = H2::connect(enabled.addr, &ca).await.unwrap();
    let cases = [
        (
            json!({"metadata": {"name": "h"}, "spec": {"hostNetwork": true, "containers": [{"name": "a"}]}}),
            "ns",
            "host_network",
        ),
        (pod("sys"), "kube-system", "ignored_namespace"),
        (
            json!({"metadata": {"name": "l", "labels": {"sidecar.istio.io/inject": "false"}}}),
            "ns",
            "label_disabled",
        ),
        (
            json!({"metadata": {"name": "a", "annotations": {"sidecar.istio.io/inject": "false"}}}),
            "ns",
            "annotation_disabled",
        ),
        (
            json!({"metadata": {"name": "n", "labels": {"never": "yes"}}}),
            "ns",
            "never_inject_selector",
        ),
    ];
    for (i, (p, ns, reason)) in cases.iter().enumerate() {
        let uid = format!("skip-{i}");
        let r = c
            .post("/inject", review(V1, &uid, ns, p.clone()))
            .await
            .unwrap();
        assert_eq!(r.status, 200, "{reason}");
        assert_eq!(
            r.json()["response"],
            json!({"uid": uid, "allowed": true}),
            "{reason}"
        );
    }
    let m = metrics(&c).await;
    for (_, _, reason) in &cases {
        let series = format!("sidecar_injection_skip_total{{reason=\"{reason}\"}}");
        assert_eq!(metric(&m, &series), Some(1.0), "{series} in\n{m}");
    }
    for (policy, want) in [("disabled", "policy_disabled"), ("bogus", "policy_invalid")] {
        let (s, ca, _d) = server_with_policy(&format!("skip-{policy}"), policy, &[]);
        let c = H2::connect(s.addr, &ca).await.unwrap();
        let p = json!({"metadata": {"name": "x", "labels": {"sidecar.istio.io/inject": if policy == "bogus" { "true" } else { "" }}}});
        let r = c.post("/inject", review(V1, "u", "ns", p)).await.unwrap();
        assert_eq!(r.json()["response"]["allowed"], true);
        let m = metrics(&c).await;
        assert_eq!(
            metric(
                &m,
                &format!("sidecar_injection_skip_total{{reason=\"{want}\"}}")
            ),
            Some(1.0),
            "{m}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_reviews_get_http_errors_or_refusals() {
    let (server, ca, _dir) = server_with_policy("bad", "enabled", &[]);
    let c = H2::connect(server.addr, &ca).await.unwrap();
    let r = c
        .request(
            "POST",
            "/inject",
            Some("application/json"),
            full(Bytes::new()),
        )
        .await
        .unwrap();
    assert_eq!((r.status, r.text().as_str()), (400, "no body found\n"));
    assert_eq!(
        r.headers
            .get("x-content-type-options")
            .and_then(|v| v.to_str().ok()),
        Some("nosniff")
    );
    let r = c
        .request(
            "POST",
            "/inject",
            Some("application/json; charset=utf-8"),
            full("{}"),
        )
        .await
        .unwrap();
    assert_eq!(
        (r.status, r.text().as_str()),
        (415, "invalid Content-Type, want `application/json`\n")
    );
    let r = c
        .request("POST", "/inject", None, full("{}"))
        .await
        .unwrap();
    assert_eq!(r.status, 415);
    let r = c
        .post("/inject", b"this is not json".to_vec())
        .await
        .unwrap();
    assert_eq!(r.status, 400);
    assert!(
        r.text()
            .starts_with("malformed AdmissionReview: couldn't get version/kind"),
        "{}",
        r.text()
    );
    let r = c
        .post("/inject", serde_json::to_vec(&pod("p")).unwrap())
        .await
        .unwrap();
    assert_eq!(r.status, 400);
    assert!(
        r.text()
            .contains("unsupported type :&TypeMeta{Kind:Pod,APIVersion:v1,}"),
        "{}",
        r.text()
    );
    let r = c
        .post(
            "/inject",
            br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#.to_vec(),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 400);
    assert!(r.text().contains("no request"), "{}", r.text());
    // A decodable review with a pod of the wrong shape is refused with allowed:false.
    let r = c
        .post("/inject", review(V1, "bad-pod", "ns", json!("a string")))
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!(v["response"]["uid"], "bad-pod");
    assert_eq!(v["response"]["allowed"], false);
    assert_eq!(v["response"]["status"]["metadata"], json!({}));
    assert!(v["response"]["status"]["message"]
        .as_str()
        .unwrap()
        .contains("cannot unmarshal string"));
    let m = metrics(&c).await;
    for reason in [
        "empty_body",
        "decode_error",
        "unsupported_type",
        "missing_request",
        "pod_decode",
    ] {
        assert_eq!(
            metric(
                &m,
                &format!("sidecar_injection_failure_total{{reason=\"{reason}\"}}")
            ),
            Some(1.0),
            "{reason}\n{m}"
        );
    }
    assert_eq!(
        metric(
            &m,
            "sidecar_injection_failure_total{reason=\"content_type\"}"
        ),
        Some(2.0)
    );
    assert_eq!(metric(&m, "sidecar_injection_requests_total"), Some(7.0));
    assert_eq!(
        metric(&m, "sidecar_injection_time_seconds_count"),
        Some(7.0)
    );
    // The server survived all of it.
    assert_eq!(c.get("/healthz").await.unwrap().status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_bodies_get_413() {
    let (server, ca, _dir) =
        server_with_policy("big", "disabled", &["--max-request-bytes", "65536"]);
    let c = H2::connect(server.addr, &ca).await.unwrap();
    let mut exact = review(V1, "exact", "ns", pod("p"));
    exact.resize(65536, b' ');
    let r = c.post("/inject", exact).await.unwrap();
    assert_eq!(
        r.status,
        200,
        "a body of exactly the limit is accepted: {}",
        r.text()
    );
    let mut over = review(V1, "over", "ns", pod("p"));
    over.resize(65537, b' ');
    let r = c.post("/inject", over.clone()).await.unwrap();
    assert_eq!(
        (r.status, r.text().as_str()),
        (413, "Request entity too large: limit is 65536\n")
    );
    // Without a content-length the limit applies while streaming.
    let chunks: VecDeque<Bytes> = over.chunks(20_000).map(Bytes::copy_from_slice).collect();
    let r = c
        .request(
            "POST",
            "/inject",
            Some("application/json"),
            Chunks(chunks).boxed(),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 413);
    let m = metrics(&c).await;
    assert_eq!(
        metric(
            &m,
            "sidecar_injection_failure_total{reason=\"body_too_large\"}"
        ),
        Some(2.0)
    );
    assert_eq!(c.get("/healthz").await.unwrap().status, 200);

    // The default limit is 3 MiB.
    let (server, ca, _dir) = server_with_policy("big-default", "disabled", &[]);
    let c = H2::connect(server.addr, &ca).await.unwrap();
    let mut body = review(V1, "three", "ns", pod("p"));
    body.resize(3 * 1024 * 1024, b' ');
    assert_eq!(c.post("/inject", body.clone()).await.unwrap().status, 200);
    body.push(b' ');
    let r = c.post("/inject", body).await.unwrap();
    assert_eq!(
        (r.status, r.text().as_str()),
        (413, "Request entity too large: limit is 3145728\n")
    );
}

/// Send reviews in a loop until `stop`; every answer must be `200` and `allowed: true`.
async fn load_loop(
    c: H2,
    stop: Arc<AtomicBool>,
    ok: Arc<AtomicU64>,
    failures: Arc<Mutex<Vec<String>>>,
) {
    let mut i = 0u64;
    while !stop.load(Ordering::Relaxed) {
        i += 1;
        let p = json!({"metadata": {"name": format!("p{i}"), "labels": {"never": "yes"}}, "spec": {"containers": [{"name": "a"}]}});
        match c
            .post("/inject", review(V1, &format!("u{i}"), "ns", p))
            .await
        {
            Ok(r) if r.status == 200 && r.json()["response"]["allowed"] == true => {
                ok.fetch_add(1, Ordering::Relaxed);
            }
            Ok(r) => {
                failures
                    .lock()
                    .unwrap()
                    .push(format!("status {} body {}", r.status, r.text()))
            }
            Err(e) => failures.lock().unwrap().push(e),
        }
    }
}

struct Load {
    stop: Arc<AtomicBool>,
    ok: Arc<AtomicU64>,
    failures: Arc<Mutex<Vec<String>>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    fn start(conns: &[H2], per_conn: usize) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let ok = Arc::new(AtomicU64::new(0));
        let failures = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for c in conns {
            for _ in 0..per_conn {
                tasks.push(tokio::spawn(load_loop(
                    c.clone(),
                    stop.clone(),
                    ok.clone(),
                    failures.clone(),
                )));
            }
        }
        Load {
            stop,
            ok,
            failures,
            tasks,
        }
    }

    /// Requests answered so far.
    fn answered(&self) -> u64 {
        self.ok.load(Ordering::Relaxed)
    }

    /// Wait until `n` more requests than now have been answered.
    async fn wait_more(&self, n: u64) {
        let target = self.answered() + n;
        eventually(&format!("{target} answered requests"), || async {
            self.answered() >= target
        })
        .await;
    }

    async fn finish(mut self) -> (u64, Vec<String>) {
        self.stop.store(true, Ordering::Relaxed);
        for t in std::mem::take(&mut self.tasks) {
            t.await.expect("load task");
        }
        let failures = self.failures.lock().unwrap().clone();
        (self.ok.load(Ordering::Relaxed), failures)
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// Send a probe pod (label `app: probe`) and read the skip reason from its JSON log line.
async fn probe_reason(server: &Server, c: &H2, uid: &str) -> String {
    let p = json!({"metadata": {"name": uid, "labels": {"app": "probe"}}});
    let r = c.post("/inject", review(V1, uid, "ns", p)).await.unwrap();
    assert_eq!(r.status, 200);
    let needle = format!("\"uid\":\"{uid}\"");
    assert!(
        server.wait_log(&needle, Duration::from_secs(2)).await,
        "no log line for {uid}"
    );
    let logs = server.log_text();
    let line = logs
        .lines()
        .find(|l| l.contains(&needle))
        .unwrap_or_default();
    let v: Value = serde_json::from_str(line).unwrap_or_default();
    v["reason"].as_str().unwrap_or("").to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_broken_then_fixed_while_requests_flow() {
    let dir = scratch("reload");
    let vol = dir.join("inject");
    let good1 = format!("policy: disabled\n{SELECTORS}");
    let good2 = "policy: disabled\nneverInjectSelector:\n- matchLabels: {app: probe}\n- matchLabels: {never: \"yes\"}\n";
    write_volume(&vol, 1, &[("config", good1.as_bytes()), ("values", b"{}")]);
    let server = Outrigger::in_dir(&dir)
        .config_in(&vol)
        .generated_ca()
        .start();
    let ca = server.ca();
    let c = H2::connect(server.addr, &ca).await.unwrap();
    let load = Load::start(std::slice::from_ref(&c), 4);
    load.wait_more(20).await;
    // Broken YAML: rejected, counted, old config keeps serving (policy disabled).
    write_volume(
        &vol,
        2,
        &[("config", b"policy: [unclosed\n"), ("values", b"{}")],
    );
    assert!(
        metric_reaches(
            &c,
            "outrigger_reloads_total{kind=\"config\",result=\"failure\"}",
            1.0,
            Duration::from_secs(5)
        )
        .await,
        "broken config must be rejected:\n{}",
        server.log_text()
    );
    assert_eq!(
        metric(
            &metrics(&c).await,
            "outrigger_reload_last_success{kind=\"config\"}"
        ),
        Some(0.0)
    );
    assert!(server
        .log_text()
        .contains("keeping the last good configuration"));
    assert_eq!(
        probe_reason(&server, &c, "probe-1").await,
        "policy_disabled",
        "old config still decides"
    );
    // Fixed: a never selector now matches the probe.
    write_volume(&vol, 3, &[("config", good2.as_bytes()), ("values", b"{}")]);
    assert!(
        metric_reaches(
            &c,
            "outrigger_reloads_total{kind=\"config\",result=\"success\"}",
            2.0,
            Duration::from_secs(5)
        )
        .await,
        "fixed config must load:\n{}",
        server.log_text()
    );
    assert_eq!(
        metric(
            &metrics(&c).await,
            "outrigger_reload_last_success{kind=\"config\"}"
        ),
        Some(1.0)
    );
    assert_eq!(
        probe_reason(&server, &c, "probe-2").await,
        "never_inject_selector",
        "new config decides"
    );
    load.wait_more(20).await;
    let (ok, failures) = load.finish().await;
    assert!(
        failures.is_empty(),
        "{} failed requests, first: {:?}",
        failures.len(),
        failures.first()
    );
    assert!(ok > 10, "load made only {ok} requests");
}

/// A whole ConfigMap (`kubectl get cm -o json`) named `name` with `data`.
fn configmap_json(name: &str, data: &[(&str, &str)]) -> Vec<u8> {
    let data: serde_json::Map<String, Value> = data
        .iter()
        .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
        .collect();
    serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "istio-system"}, "data": data}))
    .expect("json")
}

/// `serve --config-dir` reads the three files as every command does, and each file may be a
/// whole ConfigMap, at start-up and on reload; a reload that cannot be read (a ConfigMap without
/// the input's key) keeps the last good configuration and says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_dir_and_whole_configmaps_are_served_and_reloaded() {
    let dir = scratch("config-dir-reload");
    let vol = dir.join("istio");
    let good1 = format!("policy: disabled\n{SELECTORS}");
    let good2 = "policy: disabled\nneverInjectSelector:\n- matchLabels: {app: probe}\n";
    write_volume(&vol, 1, &[("config", good1.as_bytes()), ("values", b"{}")]);
    let vol_flag = vol.display().to_string();
    let server = Outrigger::in_dir(&dir)
        .flags(&["--config-dir", &vol_flag, "--allow-empty-config"])
        .generated_ca()
        .start();
    let ca = server.ca();
    let c = H2::connect(server.addr, &ca).await.unwrap();
    assert_eq!(
        probe_reason(&server, &c, "dir-1").await,
        "policy_disabled",
        "{}",
        server.log_text()
    );
    // Whole ConfigMaps in every file: the injector's for config and values, the mesh one.
    let injector = configmap_json(
        "istio-sidecar-injector",
        &[("config", good2), ("values", "{}")],
    );
    let mesh = configmap_json("istio", &[("mesh", "trustDomain: example.org\n")]);
    write_volume(
        &vol,
        2,
        &[
            ("config", &injector),
            ("values", &injector),
            ("mesh", &mesh),
        ],
    );
    assert!(
        metric_reaches(
            &c,
            "outrigger_reloads_total{kind=\"config\",result=\"success\"}",
            2.0,
            Duration::from_secs(10)
        )
        .await,
        "ConfigMaps must load:\n{}",
        server.log_text()
    );
    assert_eq!(
        probe_reason(&server, &c, "dir-2").await,
        "never_inject_selector",
        "the ConfigMap's config decides"
    );
    let logs = server.log_text();
    for key in ["data.config key", "data.values key", "data.mesh key"] {
        assert!(
            logs.contains(&format!("is a whole ConfigMap; using its {key}")),
            "{key}: {logs}"
        );
    }
    // The mesh ConfigMap given as the config: refused, named, the last good one kept.
    write_volume(
        &vol,
        3,
        &[("config", &mesh), ("values", &injector), ("mesh", &mesh)],
    );
    assert!(
        metric_reaches(
            &c,
            "outrigger_reloads_total{kind=\"config\",result=\"failure\"}",
            1.0,
            Duration::from_secs(10)
        )
        .await,
        "a ConfigMap without `config` must be refused:\n{}",
        server.log_text()
    );
    let logs = server.log_text();
    assert!(
        logs.contains("is a ConfigMap without the key \\\"config\\\" (its keys: mesh)")
            && logs.contains("keeping the last good configuration"),
        "{logs}"
    );
    assert_eq!(
        probe_reason(&server, &c, "dir-3").await,
        "never_inject_selector",
        "the last good configuration still decides"
    );
}

/// `serve --config-dir` without the values file stops at start-up, naming the file and the
/// kubectl line that writes it, as every command does.
#[test]
fn a_config_dir_without_values_fails_at_start_up_naming_it() {
    let dir = scratch("config-dir-no-values");
    std::fs::write(dir.join("config"), "policy: enabled\n").expect("write");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_outrigger"))
        .args([
            "serve",
            "--address",
            "127.0.0.1",
            "--port",
            "0",
            "--config-dir",
        ])
        .arg(&dir)
        .env_remove("RUST_LOG")
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "--config-dir {}: no file \"values\"",
            dir.display()
        )) && err.contains("hint: write it with `kubectl get cm istio-sidecar-injector"),
        "{err}"
    );
    assert!(!err.contains("listening"), "{err}");
}

fn gen_ca_and_leaf(cn: &str) -> (String, String, String) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.distinguished_name.push(DnType::CommonName, cn);
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    let cert = leaf
        .signed_by(&key, &rcgen::Issuer::from_params(&ca, &ca_key))
        .unwrap();
    (ca_cert.pem(), cert.pem(), key.serialize_pem())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn certificate_rotated_while_requests_flow() {
    let dir = scratch("rotate");
    std::fs::write(dir.join("config"), format!("policy: enabled\n{SELECTORS}")).unwrap();
    let (ca_a, cert_a, key_a) = gen_ca_and_leaf("CA A");
    let (ca_b, cert_b, key_b) = gen_ca_and_leaf("CA B");
    let tls = dir.join("tls");
    write_volume(
        &tls,
        1,
        &[
            ("tls.crt", cert_a.as_bytes()),
            ("tls.key", key_a.as_bytes()),
        ],
    );
    let server = Outrigger::in_dir(&dir)
        .config_in(&dir)
        .flag("--tlsCertFile")
        .flag(tls.join("tls.crt").display().to_string())
        .flag("--tlsKeyFile")
        .flag(tls.join("tls.key").display().to_string())
        .flag("--allow-empty-config")
        .start();
    assert!(!dir.join("ca.pem").exists());
    let both = client_config(&[ca_a.as_bytes(), ca_b.as_bytes()], &[b"h2"], false);
    let only_b = || client_config(&[ca_b.as_bytes()], &[b"h2"], false);
    assert!(
        H2::connect_with(server.addr, only_b()).await.is_err(),
        "B is not served yet"
    );

    // Requests over long-lived connections and over fresh connections (new handshakes).
    let c = H2::connect_with(server.addr, both.clone()).await.unwrap();
    let load = Load::start(std::slice::from_ref(&c), 2);
    let stop = Arc::new(AtomicBool::new(false));
    let fresh_failures = Arc::new(Mutex::new(Vec::<String>::new()));
    let fresh = {
        let (stop, fails, addr, cfg) = (
            stop.clone(),
            fresh_failures.clone(),
            server.addr,
            both.clone(),
        );
        tokio::spawn(async move {
            let mut n = 0u32;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let res = async {
                    let c = H2::connect_with(addr, cfg.clone()).await?;
                    let r = c
                        .post(
                            "/inject",
                            review(
                                V1,
                                &format!("f{n}"),
                                "ns",
                                json!({"metadata": {"labels": {"never": "yes"}}}),
                            ),
                        )
                        .await?;
                    if r.status == 200 {
                        Ok(())
                    } else {
                        Err(format!("status {}", r.status))
                    }
                }
                .await;
                if let Err(e) = res {
                    fails.lock().unwrap().push(e);
                }
            }
            n
        })
    };
    load.wait_more(20).await;
    write_volume(
        &tls,
        2,
        &[
            ("tls.crt", cert_b.as_bytes()),
            ("tls.key", key_b.as_bytes()),
        ],
    );
    assert!(
        holds_within(Duration::from_secs(5), || async {
            H2::connect_with(server.addr, only_b()).await.is_ok()
        })
        .await,
        "rotated certificate not served:\n{}",
        server.log_text()
    );
    // A broken rotation (key of A with cert of B) is rejected; B keeps serving.
    write_volume(
        &tls,
        3,
        &[
            ("tls.crt", cert_b.as_bytes()),
            ("tls.key", key_a.as_bytes()),
        ],
    );
    assert!(
        metric_reaches(
            &c,
            "outrigger_reloads_total{kind=\"certificate\",result=\"failure\"}",
            1.0,
            Duration::from_secs(5)
        )
        .await,
        "{}",
        server.log_text()
    );
    let cb = H2::connect_with(server.addr, only_b())
        .await
        .expect("B still served after a broken rotation");
    assert_eq!(cb.get("/readyz").await.unwrap().status, 200);
    load.wait_more(20).await;
    stop.store(true, Ordering::Relaxed);
    let handshakes = fresh.await.unwrap();
    let (ok, failures) = load.finish().await;
    assert!(failures.is_empty(), "{failures:?}");
    let fresh_failures = fresh_failures.lock().unwrap().clone();
    assert!(fresh_failures.is_empty(), "{fresh_failures:?}");
    assert!(ok > 5 && handshakes > 2, "ok={ok} handshakes={handshakes}");
    let m = metrics(&c).await;
    assert_eq!(
        metric(
            &m,
            "outrigger_reloads_total{kind=\"certificate\",result=\"success\"}"
        ),
        Some(2.0),
        "{m}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_under_load_fails_no_request() {
    let (mut server, ca, _dir) = server_with_policy(
        "sigterm",
        "enabled",
        &["--drain-delay", "1500ms", "--shutdown-grace", "5s"],
    );
    let conns = [
        H2::connect(server.addr, &ca).await.unwrap(),
        H2::connect(server.addr, &ca).await.unwrap(),
    ];
    let load = Load::start(&conns, 4);
    load.wait_more(20).await;
    server.sigterm();
    let t0 = Instant::now();
    // Not ready at once, while requests keep succeeding.
    let not_ready = holds_within(Duration::from_millis(1000), || async {
        conns[0].get("/readyz").await.map(|r| r.status) == Ok(503)
    })
    .await;
    assert!(not_ready, "readyz must fail during the drain");
    // The load keeps running until 1 s into the 1.5 s drain delay: requests sent during the
    // drain window must succeed. This sleep is the window under test, not a wait for an event.
    tokio::time::sleep(Duration::from_millis(1000).saturating_sub(t0.elapsed())).await;
    let (ok, failures) = load.finish().await;
    assert!(
        failures.is_empty(),
        "{} failed requests after SIGTERM, first: {:?}",
        failures.len(),
        failures.first()
    );
    assert!(ok > 20, "only {ok} requests");
    let status = server
        .wait_exit(Duration::from_secs(8))
        .expect("server exits after the drain");
    assert!(status.success(), "exit status {status}");
    assert!(server.log_text().contains("shutdown complete"));
}

fn apply_patch(pod: &Value, response: &Value) -> Value {
    use base64::Engine as _;
    let b64 = response["response"]["patch"].as_str().expect("patch");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .expect("base64 patch");
    let patch: json_patch::Patch = serde_json::from_slice(&bytes).expect("JSON patch");
    let mut doc = pod.clone();
    json_patch::patch(&mut doc, &patch).expect("patch applies");
    doc
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_default_injects_with_path_parameters() {
    let server = Outrigger::builder("embedded")
        .embedded_config()
        .generated_ca()
        .native_sidecars(false)
        .start();
    assert!(server.log_text().contains("embedded default configuration"));
    // Said at WARN: no configuration flag and nothing mounted at Istio's path.
    let warned = server.log_text().lines().any(|l| {
        l.contains(r#""level":"WARN""#)
            && l.contains("serving the embedded default configuration, not Istio's")
            && l.contains("/etc/istio/inject/config")
    });
    assert!(warned, "{}", server.log_text());
    let ca = server.ca();
    let c = H2::connect(server.addr, &ca).await.unwrap();
    let p = pod("hello");
    let r = c
        .post(
            "/inject/cluster/c1/net/n1/custom_env/foo",
            review(V1, "pp", "default", p.clone()),
        )
        .await
        .unwrap();
    let v = r.json();
    assert_eq!(v["response"]["patchType"], "JSONPatch");
    let injected = apply_patch(&p, &v);
    let containers: Vec<Value> = ["initContainers", "containers"]
        .iter()
        .flat_map(|l| injected["spec"][l].as_array().cloned().unwrap_or_default())
        .collect();
    let proxy = containers
        .iter()
        .find(|c| c["name"] == "istio-proxy")
        .expect("istio-proxy injected");
    let env = |name: &str| {
        proxy["env"]
            .as_array()
            .and_then(|e| e.iter().find(|x| x["name"] == name))
            .map(|x| x["value"].clone())
    };
    assert_eq!(env("ISTIO_META_CLUSTER_ID"), Some(json!("c1")));
    assert_eq!(env("ISTIO_META_NETWORK"), Some(json!("n1")));
    assert_eq!(env("CUSTOM_ENV"), Some(json!("foo")));
    assert_eq!(
        injected["metadata"]["labels"]["topology.istio.io/network"],
        "n1"
    );
    // Re-injecting the injected pod is idempotent.
    let again = c
        .post(
            "/inject/cluster/c1/net/n1/custom_env/foo",
            review(V1, "again", "default", injected.clone()),
        )
        .await
        .unwrap()
        .json();
    let twice = if again["response"]["patch"].is_string() {
        apply_patch(&injected, &again)
    } else {
        injected.clone()
    };
    assert_eq!(twice["spec"], injected["spec"]);
}

/// Duration flags use Go's `time.ParseDuration` grammar; a bad value is refused before the
/// server starts, naming the flag and Go's reason.
#[test]
fn duration_flags_follow_go_and_errors_name_the_flag() {
    let run = |flag: &str, value: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_outrigger"))
            .args(["serve", "--port", "0", &format!("{flag}={value}")])
            // Refused by the server right after parsing the flags: nothing starts.
            .args(["--max-request-bytes", "2", "--max-inflight-bytes", "1"])
            .output()
            .expect("runs")
    };
    for (flag, value) in [
        ("--request-timeout", "1.5s"),
        ("--idle-timeout", "1h30m"),
        ("--reload-debounce", "300ms"),
        ("--shutdown-grace", "2h"),
    ] {
        let out = run(flag, value);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("--max-inflight-bytes (1) must be at least"),
            "{flag} {value}: {err}"
        );
    }
    for (flag, value, reason) in [
        (
            "--request-timeout",
            "5",
            "time: missing unit in duration \"5\"",
        ),
        (
            "--drain-delay",
            "5d",
            "time: unknown unit \"d\" in duration \"5d\"",
        ),
        ("--idle-timeout", "-1s", "negative duration"),
    ] {
        let out = run(flag, value);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("invalid value '{value}' for '{flag}")) && err.contains(reason),
            "{flag} {value}: {err}"
        );
    }
}

/// Client mistakes (400, 404, 413, 415) are logged at `WARN`; server faults (504) at `ERROR`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_mistakes_log_at_warn_and_server_faults_at_error() {
    let (server, ca, _dir) = server_with_policy(
        "loglevels",
        "enabled",
        &[
            "--max-request-bytes",
            "1000",
            "--max-inflight-bytes",
            "100000",
            "--request-timeout",
            "300ms",
        ],
    );
    let c = H2::connect(server.addr, &ca).await.expect("connect");
    let r = c
        .request("POST", "/inject", Some("text/plain"), full("{}"))
        .await;
    assert_eq!(r.expect("415").status, 415);
    assert_eq!(c.get("/no-such-route").await.expect("404").status, 404);
    assert_eq!(
        c.post("/inject", Vec::new()).await.expect("400").status,
        400
    );
    assert_eq!(
        c.post("/inject", b"[1]".to_vec())
            .await
            .expect("400")
            .status,
        400
    );
    let r = c.post("/inject", vec![b' '; 2000]).await.expect("413");
    assert_eq!(r.status, 413);
    // A body that never arrives in full: the request deadline passes (504, the server gives up).
    let stalled = Stall(Some(Bytes::from_static(b"{\"kind\":")));
    let r = c.request("POST", "/inject", Some("application/json"), stalled.boxed());
    assert_eq!(r.await.expect("504").status, 504);
    let field = |k: &'static str, v: &'static str| move |l: &Value| l[k] == v;
    type Check = (&'static str, Box<dyn Fn(&Value) -> bool>, &'static str);
    let checks: Vec<Check> = vec![
        ("415", Box::new(field("reason", "content_type")), "WARN"),
        ("404", Box::new(field("message", "no such route")), "WARN"),
        (
            "400 empty",
            Box::new(field("message", "no body found")),
            "WARN",
        ),
        (
            "400 malformed",
            Box::new(field("outcome", "failed")),
            "WARN",
        ),
        ("413", Box::new(field("reason", "body_too_large")), "WARN"),
        (
            "504",
            Box::new(field("message", "request deadline exceeded")),
            "ERROR",
        ),
    ];
    for (what, matches, level) in checks {
        let matching = || -> Vec<Value> {
            server
                .log_text()
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .filter(|l| matches(l))
                .collect()
        };
        holds_within(Duration::from_secs(10), || async { !matching().is_empty() }).await;
        let lines = matching();
        assert!(
            !lines.is_empty(),
            "{what}: no log line:\n{}",
            server.log_text()
        );
        assert!(
            lines.iter().all(|l| l["level"] == level),
            "{what} not at {level}: {lines:?}"
        );
    }
}

/// A request body that sends one chunk and then never another (nor its end).
struct Stall(Option<Bytes>);

impl hyper::body::Body for Stall {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Self::Error>>> {
        match self.0.take() {
            Some(b) => std::task::Poll::Ready(Some(Ok(hyper::body::Frame::data(b)))),
            None => std::task::Poll::Pending,
        }
    }
}

/// A plain-HTTP request on the TLS port gets a readable `400`, not a TLS alert; TLS clients on
/// the same port are unaffected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_on_the_tls_port_gets_a_clear_400() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (server, ca, _dir) = server_with_policy("plainhttp", "enabled", &[]);
    for request in [
        "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n".to_string(),
        "POST /inject HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Content-Length: 2\r\n\r\n{}"
            .to_string(),
    ] {
        let mut tcp = tokio::net::TcpStream::connect(server.addr)
            .await
            .expect("connect");
        tcp.write_all(request.as_bytes()).await.expect("send");
        let mut answer = Vec::new();
        tokio::time::timeout(Duration::from_secs(10), tcp.read_to_end(&mut answer))
            .await
            .expect("answered and closed in time")
            .expect("read");
        let answer = String::from_utf8_lossy(&answer);
        assert!(
            answer.starts_with("HTTP/1.1 400 Bad Request\r\n"),
            "{answer:?}"
        );
        assert!(
            answer.ends_with(
                "\r\n\r\noutrigger serves HTTPS on this port; this was a plain HTTP request\n"
            ),
            "{answer:?}"
        );
        assert!(answer.contains("connection: close\r\n"), "{answer:?}");
    }
    let c = H2::connect(server.addr, &ca)
        .await
        .expect("TLS still served");
    assert_eq!(c.get("/healthz").await.expect("healthz").status, 200);
    let text = metrics(&c).await;
    assert_eq!(
        metric(
            &text,
            "outrigger_connections_closed_total{reason=\"plain_http\"}"
        ),
        Some(2.0),
        "{text}"
    );
}

/// A configuration path given that does not exist (or cannot be read) is never replaced by the
/// embedded default: `serve` stops at start-up naming it, before it listens.
#[test]
fn a_missing_config_path_fails_at_start_up_naming_it() {
    let dir = scratch("missing-config");
    let config = dir.join("no-such-config");
    for extra in [
        vec!["--injectConfigFile", config.to_str().expect("UTF-8")],
        // Only the values or mesh path given: the config path is Istio's mount path, absent
        // here, and the embedded default is not allowed either.
        vec!["--meshConfigFile", "/nonexistent/mesh"],
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_outrigger"))
            .args(["serve", "--address", "127.0.0.1", "--port", "0"])
            .args(&extra)
            .env_remove("RUST_LOG")
            .output()
            .expect("runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{extra:?}: {err}");
        let named = if extra[0] == "--injectConfigFile" {
            config.display().to_string()
        } else {
            "/etc/istio/inject/config".to_string()
        };
        assert!(
            err.contains(&format!(
                "injector config {named} does not exist (--injectConfigFile): the embedded default is \
                 served only when no configuration flag is given and /etc/istio/inject/config is \
                 absent"
            )),
            "{extra:?}: {err}"
        );
        assert!(!err.contains("listening"), "{err}");
    }
}

/// The generated CA file is written only once the port is bound: a server that cannot listen
/// leaves no fresh CA behind.
#[test]
fn the_ca_file_is_written_only_after_the_port_is_bound() {
    let dir = scratch("cabind");
    let ca = dir.join("ca.pem");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = taken.local_addr().expect("addr").port().to_string();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_outrigger"))
        .args(["serve", "--address", "127.0.0.1", "--port", &port])
        .arg("--caBundleFile")
        .arg(&ca)
        .arg("--allow-empty-config")
        .env_remove("RUST_LOG")
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains(&format!("listening on 127.0.0.1:{port}")),
        "{err}"
    );
    assert!(!ca.exists(), "a CA file was left behind: {err}");
    drop(taken);
}

/// `/metrics` answers OpenMetrics to a scraper that asks for it (as Prometheus does) and the
/// Prometheus text format 0.0.4 to everyone else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_negotiate_the_format_by_accept() {
    let (server, ca, _dir) = server_with_policy("metricsfmt", "enabled", &[]);
    let c = H2::connect(server.addr, &ca).await.expect("connect");
    assert_eq!(
        c.post("/inject", review(V1, "u1", "default", pod("a")))
            .await
            .expect("review")
            .status,
        200
    );
    let prometheus_accept =
        "application/openmetrics-text;version=1.0.0,application/openmetrics-text;\
                             version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
    let om = c
        .get_with("/metrics", &[("accept", prometheus_accept)])
        .await
        .expect("scrape");
    assert_eq!(
        om.headers["content-type"],
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    let om = om.text();
    assert!(om.ends_with("# EOF\n"), "{om}");
    assert!(
        om.contains("# TYPE sidecar_injection_requests counter\n"),
        "{om}"
    );
    assert_eq!(metric(&om, "sidecar_injection_requests_total"), Some(1.0));
    for accept in [None, Some("*/*"), Some("text/plain;version=0.0.4")] {
        let headers: Vec<(&str, &str)> = accept.iter().map(|a| ("accept", *a)).collect();
        let r = c.get_with("/metrics", &headers).await.expect("scrape");
        assert_eq!(r.status, 200);
        assert_eq!(
            r.headers["content-type"], "text/plain; version=0.0.4; charset=utf-8",
            "{accept:?}"
        );
        let text = r.text();
        assert!(!text.contains("# EOF"), "{text}");
        assert!(!text.contains("# UNIT"), "{text}");
        assert!(
            text.contains("# TYPE sidecar_injection_requests_total counter\n"),
            "{text}"
        );
        assert_eq!(metric(&text, "sidecar_injection_requests_total"), Some(1.0));
        assert!(
            text.contains("# TYPE sidecar_injection_time_seconds histogram\n"),
            "{text}"
        );
    }
}
