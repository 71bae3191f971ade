//! Shared helpers of the server integration tests: start the real binary on 127.0.0.1
//! ([`server`]) and talk to it over TLS (HTTP/2 or HTTP/1.1 by ALPN) trusting only the CA the test was given; wait on
//! conditions ([`eventually`], [`holds_within`]); fake the Kubernetes API server ([`kube_api`]).
#![allow(dead_code)]

pub mod admission;
/// kube-apiserver's defaulting and in-tree admission plugins, modelled on their own.
#[path = "../../../outrigger-inject/tests/model/apiserver.rs"]
pub mod apiserver_model;
pub mod client_ca;
pub mod controllers;
pub mod kube_api;
pub mod rbac;
pub mod server;

pub use server::{Outrigger, Server};

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Frame};
use hyper::client::conn::{http1, http2};
use hyper::{HeaderMap, Request};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::ServerName;
use serde_json::{json, Value};

/// A fresh scratch directory for one test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("outrigger-it-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

/// A request body with no known length (no `content-length` header is sent).
pub struct Chunks(pub VecDeque<Bytes>);

impl Body for Chunks {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(self.0.pop_front().map(|b| Ok(Frame::data(b))))
    }
}

/// The request body type of the clients.
pub type ReqBody = BoxBody<Bytes, Infallible>;

/// A body with a known length.
pub fn full(b: impl Into<Bytes>) -> ReqBody {
    Full::new(b.into()).boxed()
}

/// A response.
#[derive(Debug)]
pub struct Resp {
    /// Status code.
    pub status: u16,
    /// Headers.
    pub headers: HeaderMap,
    /// Body.
    pub body: Bytes,
}

impl Resp {
    /// Body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("response is not JSON ({e}): {:?}", self.body))
    }
    /// Body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// The root store of a client: the certificates of the PEM bundles `cas`.
fn trusted(cas: &[&[u8]]) -> rustls::RootCertStore {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for pem in cas {
        for cert in rustls::pki_types::CertificateDer::pem_slice_iter(pem) {
            roots
                .add(cert.expect("CA PEM parses"))
                .expect("CA is a valid certificate");
        }
    }
    roots
}

/// TLS client config trusting only the given PEM CAs, with the given ALPN protocols.
pub fn client_config(cas: &[&[u8]], alpn: &[&[u8]], tls12_only: bool) -> rustls::ClientConfig {
    let roots = trusted(cas);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider);
    let builder = if tls12_only {
        builder.with_protocol_versions(&[&rustls::version::TLS12])
    } else {
        builder.with_safe_default_protocol_versions()
    }
    .expect("protocol versions");
    let mut cfg = builder.with_root_certificates(roots).with_no_client_auth();
    cfg.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    cfg
}

/// [`client_config`] presenting the client certificate `chain_pem` with its key `key_pem`.
pub fn client_config_with_cert(
    cas: &[&[u8]],
    alpn: &[&[u8]],
    chain_pem: &[u8],
    key_pem: &[u8],
) -> rustls::ClientConfig {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let roots = trusted(cas);
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(chain_pem)
        .map(|c| c.expect("certificate PEM parses"))
        .collect();
    let key = PrivateKeyDer::from_pem_slice(key_pem).expect("key PEM parses");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_root_certificates(roots)
        .with_client_auth_cert(chain, key)
        .expect("client certificate and key");
    cfg.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    cfg
}

/// A TCP connection to `addr` from the loopback address `local` (attackers in the tests sit on
/// 127.0.0.x addresses other than the API server's 127.0.0.1).
pub async fn tcp_from(
    local: std::net::IpAddr,
    addr: SocketAddr,
) -> Result<tokio::net::TcpStream, String> {
    let sock = tokio::net::TcpSocket::new_v4().map_err(|e| format!("socket: {e}"))?;
    sock.bind(SocketAddr::new(local, 0))
        .map_err(|e| format!("bind {local}: {e}"))?;
    let tcp = sock
        .connect(addr)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let _ = tcp.set_nodelay(true);
    Ok(tcp)
}

/// A TLS stream and its negotiated ALPN protocol.
pub type Tls = (
    tokio_rustls::client::TlsStream<tokio::net::TcpStream>,
    Option<Vec<u8>>,
);

/// Connect with TLS; returns the stream and the negotiated ALPN protocol.
pub async fn tls_connect(addr: SocketAddr, cfg: rustls::ClientConfig) -> Result<Tls, String> {
    let tcp = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let _ = tcp.set_nodelay(true);
    tls_over(tcp, cfg).await
}

/// TLS over an established TCP connection.
pub async fn tls_over(
    tcp: tokio::net::TcpStream,
    cfg: rustls::ClientConfig,
) -> Result<Tls, String> {
    let name = ServerName::try_from("localhost").expect("valid name");
    let tls = tokio_rustls::TlsConnector::from(Arc::new(cfg))
        .connect(name, tcp)
        .await
        .map_err(|e| format!("tls: {e}"))?;
    let alpn = tls.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
    Ok((tls, alpn))
}

/// An HTTP/2 client connection (cheap to clone; requests multiplex).
#[derive(Clone)]
pub struct H2 {
    send: http2::SendRequest<ReqBody>,
}

impl H2 {
    /// Connect trusting only `ca`.
    pub async fn connect(addr: SocketAddr, ca: &[u8]) -> Result<H2, String> {
        H2::connect_with(addr, client_config(&[ca], &[b"h2"], false)).await
    }

    /// Connect with a given TLS config (ALPN must offer h2).
    pub async fn connect_with(addr: SocketAddr, cfg: rustls::ClientConfig) -> Result<H2, String> {
        H2::handshake(tls_connect(addr, cfg).await?).await
    }

    /// HTTP/2 over an established TLS connection (its ALPN must be h2).
    pub async fn handshake((tls, alpn): Tls) -> Result<H2, String> {
        if alpn.as_deref() != Some(b"h2") {
            return Err(format!("ALPN negotiated {alpn:?}, want h2"));
        }
        let (send, conn) = http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
            .await
            .map_err(|e| format!("h2 handshake: {e}"))?;
        tokio::spawn(conn);
        Ok(H2 { send })
    }

    /// Send one request.
    pub async fn request(
        &self,
        method: &str,
        path: &str,
        content_type: Option<&str>,
        body: ReqBody,
    ) -> Result<Resp, String> {
        let headers: Vec<(&str, &str)> = content_type
            .map(|ct| ("content-type", ct))
            .into_iter()
            .collect();
        self.request_with(method, path, &headers, body).await
    }

    /// Send one request with the given request headers.
    pub async fn request_with(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: ReqBody,
    ) -> Result<Resp, String> {
        let mut b = Request::builder()
            .method(method)
            .uri(format!("https://localhost{path}"));
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        let req = b.body(body).map_err(|e| e.to_string())?;
        let mut send = self.send.clone();
        send.ready().await.map_err(|e| format!("not ready: {e}"))?;
        let resp = send
            .send_request(req)
            .await
            .map_err(|e| format!("send: {e}"))?;
        collect(resp).await
    }

    /// Whether the server closed the connection.
    pub fn is_closed(&self) -> bool {
        self.send.is_closed()
    }

    /// POST a JSON review to `path`.
    pub async fn post(&self, path: &str, body: Vec<u8>) -> Result<Resp, String> {
        self.request("POST", path, Some("application/json"), full(body))
            .await
    }

    /// GET `path`.
    pub async fn get(&self, path: &str) -> Result<Resp, String> {
        self.request("GET", path, None, full(Bytes::new())).await
    }

    /// GET `path` with extra request headers.
    pub async fn get_with(&self, path: &str, headers: &[(&str, &str)]) -> Result<Resp, String> {
        self.request_with("GET", path, headers, full(Bytes::new()))
            .await
    }
}

async fn collect(resp: hyper::Response<hyper::body::Incoming>) -> Result<Resp, String> {
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("body: {e}"))?
        .to_bytes();
    Ok(Resp {
        status,
        headers,
        body,
    })
}

/// One HTTP/1.1 request on a fresh connection negotiated with ALPN `http/1.1`.
pub async fn http1_request(
    addr: SocketAddr,
    ca: &[u8],
    path: &str,
    body: Option<Vec<u8>>,
) -> Result<Resp, String> {
    let (tls, alpn) = tls_connect(addr, client_config(&[ca], &[b"http/1.1"], false)).await?;
    if alpn.as_deref() != Some(b"http/1.1") {
        return Err(format!("ALPN negotiated {alpn:?}, want http/1.1"));
    }
    let (mut send, conn) = http1::handshake::<_, ReqBody>(TokioIo::new(tls))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    let mut b = Request::builder().uri(path).header("host", "localhost");
    let body = match body {
        Some(bytes) => {
            b = b.method("POST").header("content-type", "application/json");
            full(bytes)
        }
        None => full(Bytes::new()),
    };
    let resp = send
        .send_request(b.body(body).map_err(|e| e.to_string())?)
        .await
        .map_err(|e| e.to_string())?;
    collect(resp).await
}

/// An AdmissionReview request document.
pub fn review(api_version: &str, uid: &str, namespace: &str, pod: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "kind": "AdmissionReview",
        "apiVersion": api_version,
        "request": {"uid": uid, "namespace": namespace, "operation": "CREATE",
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "object": pod}
    }))
    .expect("serialisable")
}

/// Value of the first metrics line starting with `series` (exact series, then a space).
pub fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        l.strip_prefix(series)?
            .strip_prefix(' ')?
            .trim()
            .parse()
            .ok()
    })
}

/// Read `/metrics`.
pub async fn metrics(c: &H2) -> String {
    c.get("/metrics").await.expect("metrics request").text()
}

/// Write a ConfigMap-style volume: `dir/..<gen>/<files>`, `dir/..data -> ..<gen>`,
/// `dir/<file> -> ..data/<file>`; later calls swap `..data` atomically, like the kubelet.
pub fn write_volume(dir: &Path, generation: u32, files: &[(&str, &[u8])]) {
    use std::os::unix::fs::symlink;
    std::fs::create_dir_all(dir).expect("volume dir");
    let gen_dir = dir.join(format!("..gen_{generation}"));
    std::fs::create_dir_all(&gen_dir).expect("generation dir");
    for (name, contents) in files {
        std::fs::write(gen_dir.join(name), contents).expect("write volume file");
    }
    let tmp = dir.join("..data_tmp");
    let _ = std::fs::remove_file(&tmp);
    symlink(format!("..gen_{generation}"), &tmp).expect("symlink ..data_tmp");
    std::fs::rename(&tmp, dir.join("..data")).expect("swap ..data");
    for (name, _) in files {
        let link = dir.join(name);
        if std::fs::symlink_metadata(&link).is_err() {
            symlink(format!("..data/{name}"), &link).expect("symlink file");
        }
    }
}

/// Deadline of [`eventually`]: generous, so a loaded machine only makes a test slower.
pub const EVENTUALLY: Duration = Duration::from_secs(30);

/// Poll `cond` every 20 ms until it holds or `timeout` passes; whether it held. The one poll loop
/// of the tests: they wait on conditions (a counter reached, a log line seen, a file event
/// observed), not fixed sleeps. Use it directly when the deadline is part of what is tested or
/// the failure message needs state read after the wait; else [`eventually`].
pub async fn holds_within<F, Fut>(timeout: Duration, mut cond: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if cond().await {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Wait until `cond` holds; panics naming `what` after [`EVENTUALLY`].
pub async fn eventually<F, Fut>(what: &str, cond: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    assert!(
        holds_within(EVENTUALLY, cond).await,
        "timed out waiting for {what}"
    );
}

/// Wait until the metrics series `series` reaches `want` (at least), polling `/metrics`; whether
/// it did within `timeout`.
pub async fn metric_reaches(c: &H2, series: &str, want: f64, timeout: Duration) -> bool {
    holds_within(timeout, || async {
        metric(&metrics(c).await, series).is_some_and(|v| v >= want)
    })
    .await
}

/// The MutatingWebhookConfiguration deploy/base ships.
pub fn shipped_webhook_config() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../deploy/base/mutatingwebhook.yaml"
    );
    let text = std::fs::read_to_string(path).expect("deploy/base/mutatingwebhook.yaml");
    outrigger_go::yaml::from_str(&text).expect("YAML")
}

/// A MutatingWebhookConfiguration as `outrigger webhook-config ARGS -o json` prints it.
pub fn printed_webhook_config(args: &[&str]) -> Value {
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
