//! `serve --clientCaFile`: the TLS handshake requires a client certificate signed by the CA in
//! the file, optionally with an allowed name (`--client-allowed-names`); a client without one
//! is refused at the handshake, one with it is served; `--health-port` answers probes without a
//! certificate; the CA bundle is reloaded when its file changes. The real binary on 127.0.0.1.

mod common;

use common::client_ca::TestCa;
use common::server::start_embedded;
use common::*;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn skip_review(uid: &str) -> Vec<u8> {
    review(
        "admission.k8s.io/v1",
        uid,
        "ns",
        json!({"metadata": {"name": uid, "labels": {"sidecar.istio.io/inject": "false"}},
               "spec": {"containers": [{"name": "a", "image": "nginx"}]}}),
    )
}

/// A review over HTTP/2 with `cfg`; the status, or the error (handshake refusals show here:
/// with TLS 1.3 the client learns of the refusal on its first read).
async fn try_review(addr: std::net::SocketAddr, cfg: rustls::ClientConfig) -> Result<u16, String> {
    let c = H2::connect_with(addr, cfg).await?;
    c.post("/inject", skip_review("u")).await.map(|r| r.status)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_certificates_are_required_and_checked() {
    let dir = scratch("client-auth");
    let ca = TestCa::new("apiserver client CA");
    let other = TestCa::new("someone else");
    let ca_file = dir.join("client-ca.pem");
    std::fs::write(&ca_file, &ca.pem).unwrap();
    let (server, server_ca) = start_embedded(
        "client-auth-server",
        &[
            "--client-ca-file",
            &ca_file.display().to_string(),
            "--client-allowed-names",
            "kube-apiserver,apiserver.example",
            "--health-port",
            "0",
            "--reload-debounce",
            "50ms",
        ],
    );
    let addr = server.addr;
    let with = |(chain, key): &(String, String)| {
        client_config_with_cert(&[&server_ca], &[b"h2"], chain.as_bytes(), key.as_bytes())
    };
    // The API server's certificate (allowed by its common name) is served.
    let apiserver = ca.client("kube-apiserver", &[]);
    assert_eq!(try_review(addr, with(&apiserver)).await, Ok(200));
    // Allowed by a DNS name.
    let by_san = ca.client("webhook-client", &["apiserver.example"]);
    assert_eq!(try_review(addr, with(&by_san)).await, Ok(200));
    // No certificate: refused at the handshake.
    let none = try_review(addr, client_config(&[&server_ca], &[b"h2"], false)).await;
    assert!(none.is_err(), "{none:?}");
    // Signed by another CA, or by the right CA for a name not allowed: refused.
    let stranger = other.client("kube-apiserver", &[]);
    assert!(try_review(addr, with(&stranger)).await.is_err());
    let intruder = ca.client("intruder", &["intruder.example"]);
    assert!(try_review(addr, with(&intruder)).await.is_err());
    assert!(
        server
            .wait_log("none of its names is in --client-allowed-names", EVENTUALLY)
            .await
    );
    // Probes: plain HTTP on the health port, health endpoints only.
    let health = server
        .logs
        .lock()
        .unwrap()
        .iter()
        .find_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).ok()?;
            (v["message"]
                .as_str()?
                .starts_with("health endpoints listening"))
            .then(|| v["address"].as_str().map(str::to_string))?
        })
        .expect("health port logged");
    for (path, status) in [
        ("/readyz", "200"),
        ("/healthz", "200"),
        ("/inject", "404"),
        ("/metrics", "404"),
    ] {
        let mut tcp = tokio::net::TcpStream::connect(&health).await.unwrap();
        tcp.write_all(
            format!("GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
        let mut out = String::new();
        tcp.read_to_string(&mut out).await.unwrap();
        assert!(
            out.starts_with(&format!("HTTP/1.1 {status}")),
            "{path}: {out}"
        );
    }
    // The CA bundle is reloaded: after a swap to the other CA, its clients are served and the
    // first CA's are refused.
    std::fs::write(&ca_file, &other.pem).unwrap();
    assert!(
        holds_within(EVENTUALLY, || async {
            try_review(addr, with(&stranger)).await == Ok(200)
        })
        .await,
        "the reloaded bundle accepts the other CA's clients"
    );
    assert!(try_review(addr, with(&apiserver)).await.is_err());
    // A bundle that does not load keeps the one in force.
    std::fs::write(&ca_file, "not PEM\n").unwrap();
    assert!(
        server
            .wait_log("client CA bundle reload failed", EVENTUALLY)
            .await
    );
    assert_eq!(try_review(addr, with(&stranger)).await, Ok(200));
    let c = H2::connect_with(addr, with(&stranger)).await.unwrap();
    let m = metrics(&c).await;
    assert!(
        metric(
            &m,
            "outrigger_connections_closed_total{reason=\"client_certificate\"}"
        )
        .is_some_and(|v| v >= 4.0),
        "{m}"
    );
}

#[test]
fn allowed_names_need_a_client_ca() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_outrigger"))
        .args([
            "serve",
            "--port",
            "0",
            "--client-allowed-names",
            "kube-apiserver",
        ])
        .output()
        .expect("run outrigger");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--clientCaFile"), "{err}");
}
