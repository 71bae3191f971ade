//! `outrigger serve --metrics-port`: `/metrics` over plain HTTP on a port of its own, the same
//! exposition as the HTTPS endpoint, still answering while the webhook port is saturated; and
//! `outrigger_webhook_failure_policy` following the activation of the webhook configuration
//! against the fake API server (`common::kube_api`).

mod common;

use std::collections::BTreeSet;

use common::admission::{activated, start_outrigger};
use common::kube_api::{self, Cluster, FakeApi};
use common::server::start_embedded;
use common::*;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The address the server logged with a message starting with `prefix`.
fn logged_address(server: &Server, prefix: &str) -> Option<String> {
    server.logs.lock().expect("log lock").iter().find_map(|l| {
        let v: serde_json::Value = serde_json::from_str(l).ok()?;
        (v["message"].as_str()?.starts_with(prefix))
            .then(|| v["address"].as_str().map(str::to_string))?
    })
}

/// The metrics port's address (from the server's log).
fn metrics_addr(server: &Server) -> String {
    logged_address(server, "metrics listening").expect("the metrics port is logged")
}

/// A plain-HTTP/1.1 answer: status code, headers (lower-cased names), body.
struct Plain {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Plain {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// `GET path` over plain HTTP/1.1 to `addr`, with `Accept: accept` when given; the server
/// closes the connection after the answer.
async fn plain_get(addr: &str, path: &str, accept: Option<&str>) -> Plain {
    let mut tcp = tokio::net::TcpStream::connect(addr)
        .await
        .expect("connect to the metrics port");
    let accept = accept.map_or(String::new(), |a| format!("accept: {a}\r\n"));
    tcp.write_all(format!("GET {path} HTTP/1.1\r\nhost: x\r\n{accept}\r\n").as_bytes())
        .await
        .expect("send");
    let mut raw = String::new();
    tokio::time::timeout(EVENTUALLY, tcp.read_to_string(&mut raw))
        .await
        .expect("the metrics port closes the connection after one answer")
        .expect("read");
    let (head, body) = raw.split_once("\r\n\r\n").expect("a head");
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .expect("status line");
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_string()
    };
    Plain {
        status,
        headers,
        body,
    }
}

/// The payload of a chunked HTTP/1.1 body.
fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).expect("chunk size");
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        s = &rest[n + 2..];
    }
    out
}

/// The metric families of an exposition: its `# TYPE` lines.
fn families(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| l.starts_with("# TYPE "))
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metrics_port_serves_the_https_exposition_over_plain_http() {
    let (server, ca) = start_embedded("metrics-port", &["--metrics-port", "0"]);
    let addr = metrics_addr(&server);
    let c = H2::connect(server.addr, &ca).await.expect("TLS");
    let r = c
        .post(
            "/inject",
            review("admission.k8s.io/v1", "u1", "default", json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "p"}, "spec": {"containers": [{"name": "a", "image": "nginx"}]}})),
        )
        .await
        .expect("review");
    assert_eq!(r.status, 200);
    let openmetrics = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5";
    for accept in [None, Some(openmetrics)] {
        let headers: Vec<(&str, &str)> = accept.iter().map(|a| ("accept", *a)).collect();
        let https = c
            .get_with("/metrics", &headers)
            .await
            .expect("HTTPS /metrics");
        let plain = plain_get(&addr, "/metrics", accept).await;
        assert_eq!((https.status, plain.status), (200, 200), "{accept:?}");
        assert_eq!(
            plain.header("content-type"),
            https
                .headers
                .get("content-type")
                .and_then(|v| v.to_str().ok()),
            "{accept:?}"
        );
        let want = families(&https.text());
        assert!(
            want.iter()
                .any(|f| f.starts_with("# TYPE sidecar_injection_requests")),
            "{want:?}"
        );
        assert_eq!(families(&plain.body), want, "{accept:?}");
        // Counted by the same registry: the review above shows on both.
        assert_eq!(
            metric(&plain.body, "sidecar_injection_requests_total"),
            Some(1.0),
            "{}",
            plain.body
        );
    }
    // Nothing else is served there.
    for path in ["/healthz", "/readyz", "/inject", "/"] {
        assert_eq!(plain_get(&addr, path, None).await.status, 404, "{path}");
    }
}

/// Every handshake slot of the webhook port is held by clients that never finish a handshake:
/// the webhook port closes further connections at once, and the metrics port still answers
/// (and counts them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_saturated_webhook_port_does_not_crowd_out_the_metrics_port() {
    let (server, _) = start_embedded(
        "metrics-port-crowd",
        &[
            "--metrics-port",
            "0",
            "--max-handshakes",
            "4",
            "--max-handshakes-per-address",
            "4",
            "--handshake-timeout",
            "120s",
        ],
    );
    let addr = metrics_addr(&server);
    // Every slot of the handshake pool, from this one address.
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(
            tokio::net::TcpStream::connect(server.addr)
                .await
                .expect("connect"),
        );
    }
    let mut refused = tokio::net::TcpStream::connect(server.addr)
        .await
        .expect("connect");
    let mut buf = [0u8; 16];
    let closed = tokio::time::timeout(EVENTUALLY, refused.read(&mut buf))
        .await
        .expect("the webhook port closes a connection beyond its limit");
    assert!(matches!(closed, Ok(0) | Err(_)), "{closed:?}");
    let m = plain_get(&addr, "/metrics", None).await;
    assert_eq!(m.status, 200);
    assert!(
        metric(&m.body, "outrigger_connections_rejected_total").is_some_and(|v| v >= 1.0),
        "{}",
        m.body
    );
    drop(held);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_metrics_port_in_use_fails_start_up_naming_the_flag_and_off_serves_none() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = taken.local_addr().expect("addr").port().to_string();
    let dir = scratch("metrics-port-in-use");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_outrigger"))
        .args(["serve", "--address", "127.0.0.1", "--port", "0"])
        .args(["--metrics-port", &port, "--native-sidecars", "false"])
        .arg("--caBundleFile")
        .arg(dir.join("ca.pem"))
        .env_remove("RUST_LOG")
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("--metrics-port") && err.contains(&format!("127.0.0.1:{port}")),
        "{err}"
    );
    drop(taken);
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_outrigger"))
        .args(["serve", "--metrics-port", "on"])
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{err}");
    assert!(err.contains("nor `off`"), "{err}");
    // `off` (what the test harness passes): no metrics listener.
    let (server, _) = start_embedded("metrics-port-off", &["--metrics-port", "off"]);
    assert_eq!(logged_address(&server, "metrics listening"), None);
}

/// The failure policy of each entry of outrigger's webhook configuration in the metrics port's
/// exposition: `(Ignore, Fail)` gauge values per entry.
fn policy_gauges(text: &str, entries: &[String]) -> Vec<(Option<f64>, Option<f64>)> {
    let series = |entry: &str, policy: &str| {
        metric(
            text,
            &format!(
                "outrigger_webhook_failure_policy{{configuration=\"outrigger-sidecar-injector\",\
                 webhook=\"{entry}\",policy=\"{policy}\"}}"
            ),
        )
    };
    entries
        .iter()
        .map(|e| (series(e, "Ignore"), series(e, "Fail")))
        .collect()
}

/// The shipped configuration fails open: the gauge shows `Ignore` from start-up while the
/// replica is not ready (Istio's ConfigMaps missing), and `Fail` once the ready replica has
/// activated it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_failure_policy_gauge_shows_ignore_then_fail_across_activation() {
    let mut c = Cluster::default();
    for ns in ["outrigger", "kube-system", "istio-system"] {
        c.put(json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": ns, "uid": format!("{ns}-uid"), "resourceVersion": "2"}}));
    }
    c.put(kube_api::outrigger_deployment(2));
    let shipped = shipped_webhook_config();
    let entries: Vec<String> = shipped["webhooks"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|w| w["name"].as_str().expect("name").to_string())
        .collect();
    assert!(
        shipped["webhooks"]
            .as_array()
            .expect("entries")
            .iter()
            .all(|w| w["failurePolicy"] == "Ignore"),
        "the shipped configuration fails open"
    );
    c.put(shipped);
    let api = FakeApi::start(c);
    let server = start_outrigger(&api, "metrics-port-policy", &["--metrics-port", "0"]);
    let addr = metrics_addr(&server);
    let failing_open = vec![(Some(1.0), Some(0.0)); entries.len()];
    eventually("the gauge shows the shipped Ignore", || async {
        policy_gauges(&plain_get(&addr, "/metrics", None).await.body, &entries) == failing_open
    })
    .await;
    // Failing open while Fail is desired: what an alert looks for.
    let m = plain_get(&addr, "/metrics", None).await.body;
    for (policy, want) in [("Fail", 1.0), ("Ignore", 0.0)] {
        let series = format!(
            "outrigger_webhook_failure_policy_desired{{configuration=\"outrigger-sidecar-injector\",policy=\"{policy}\"}}"
        );
        assert_eq!(metric(&m, &series), Some(want), "{m}");
    }
    let ca = kube_api::secret_ca(&api, "Secret created");
    let h = H2::connect(server.addr, &ca).await.expect("TLS");
    assert_eq!(
        h.get("/readyz").await.expect("readyz").status,
        503,
        "not ready without Istio's ConfigMaps: nothing activated yet"
    );
    // Istio's ConfigMaps arrive (at versions past those the server's watches started from).
    {
        use outrigger_inject::config::defaults;
        let mut a = api.lock();
        a.put(kube_api::configmap(
            "istio-system",
            "istio-sidecar-injector",
            "30",
            &[("config", defaults::CONFIG), ("values", defaults::VALUES)],
        ));
        a.put(kube_api::configmap(
            "istio-system",
            "istio",
            "31",
            &[("mesh", defaults::MESH)],
        ));
    }
    activated(&api, "outrigger-sidecar-injector").await;
    let enforced = vec![(Some(0.0), Some(1.0)); entries.len()];
    eventually("the gauge shows Fail once activated", || async {
        policy_gauges(&plain_get(&addr, "/metrics", None).await.body, &entries) == enforced
    })
    .await;
}
