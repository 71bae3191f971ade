//! Fault tests of `outrigger serve` (the real binary on 127.0.0.1): graceful drain of HTTP/1.1
//! keep-alive connections (`Connection: close`, TLS `close_notify`), a second signal, a `413` the
//! client reads while still sending, connection timeouts, health at the connection cap, and the
//! bound on request bytes in flight. Timers are set short with the server's flags; waits poll a
//! condition up to a deadline.
//!
//! `scripts/faults.sh` runs the same scenarios at full size against the release binary and
//! measures memory.

mod common;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::server::start_embedded;
use common::*;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

const V1: &str = "admission.k8s.io/v1";

/// Start a server with the embedded default (policy enabled) and `extra` flags.
fn start(name: &str, extra: &[&str]) -> (Server, Vec<u8>) {
    start_embedded(name, extra)
}

/// A review of a pod that opts out of injection (cheap to answer).
fn skip_review(uid: &str) -> Vec<u8> {
    review(
        V1,
        uid,
        "ns",
        json!({"metadata": {"name": uid, "labels": {"sidecar.istio.io/inject": "false"}},
               "spec": {"containers": [{"name": "a", "image": "nginx"}]}}),
    )
}

/// How a connection ended, seen by a rustls client reading from it.
#[derive(Debug, PartialEq, Eq)]
enum End {
    /// TLS `close_notify`, then end of stream.
    CloseNotify,
    /// End of stream without `close_notify`.
    Eof,
    /// Another error (e.g. a reset).
    Error(String),
    /// Nothing within the wait.
    Open,
}

/// A minimal HTTP/1.1 client over rustls that shows what the server does with the connection.
struct RawH1 {
    tls: TlsStream<TcpStream>,
    buf: Vec<u8>,
}

/// A parsed HTTP/1.1 response.
#[derive(Debug)]
struct H1Resp {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl H1Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

impl RawH1 {
    async fn connect(addr: SocketAddr, ca: &[u8]) -> RawH1 {
        RawH1::try_connect(addr, ca).await.expect("TLS connection")
    }

    async fn try_connect(addr: SocketAddr, ca: &[u8]) -> Result<RawH1, String> {
        let (tls, alpn) = tls_connect(addr, client_config(&[ca], &[b"http/1.1"], false)).await?;
        if alpn.as_deref() != Some(&b"http/1.1"[..]) {
            return Err(format!("ALPN {alpn:?}"));
        }
        Ok(RawH1 {
            tls,
            buf: Vec::new(),
        })
    }

    /// Write a request head (and `body`, if any).
    async fn send(
        &mut self,
        method: &str,
        path: &str,
        extra: &str,
        body: &[u8],
    ) -> Result<(), String> {
        let head = format!(
            "{method} {path} HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{extra}\r\n",
            body.len()
        );
        self.tls
            .write_all(head.as_bytes())
            .await
            .map_err(|e| format!("write head: {e}"))?;
        self.tls
            .write_all(body)
            .await
            .map_err(|e| format!("write body: {e}"))?;
        self.tls.flush().await.map_err(|e| format!("flush: {e}"))
    }

    /// Read one response (bodies with `content-length`).
    async fn response(&mut self) -> Result<H1Resp, String> {
        let head_end = loop {
            if let Some(i) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i;
            }
            self.fill().await?;
        };
        let head = String::from_utf8_lossy(&self.buf[..head_end]).into_owned();
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("bad status line in {head:?}"))?;
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect();
        let len: usize = headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        self.buf.drain(..head_end + 4);
        while self.buf.len() < len {
            self.fill().await?;
        }
        let body = self.buf.drain(..len).collect();
        Ok(H1Resp {
            status,
            headers,
            body,
        })
    }

    async fn fill(&mut self) -> Result<(), String> {
        let mut chunk = [0u8; 16384];
        match self.tls.read(&mut chunk).await {
            Ok(0) => Err("connection closed".into()),
            Ok(n) => {
                self.buf.extend_from_slice(&chunk[..n]);
                Ok(())
            }
            Err(e) => Err(format!("read: {e}")),
        }
    }

    /// Wait up to `wait` for the server to end the connection.
    async fn end(&mut self, wait: Duration) -> End {
        let mut chunk = [0u8; 4096];
        match tokio::time::timeout(wait, self.tls.read(&mut chunk)).await {
            Err(_) => End::Open,
            Ok(Ok(0)) => End::CloseNotify,
            Ok(Ok(n)) => End::Error(format!("{n} unexpected bytes")),
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => End::Eof,
            Ok(Err(e)) => End::Error(e.to_string()),
        }
    }
}

/// Requests in a loop over HTTP/1.1 keep-alive connections, reconnecting when the server says
/// `Connection: close`, until `stop`; counts answers that carried `Connection: close`.
async fn h1_loop(
    addr: SocketAddr,
    ca: Vec<u8>,
    stop: Arc<AtomicBool>,
    ok: Arc<AtomicU64>,
    closes: Arc<AtomicU64>,
    failures: Arc<Mutex<Vec<String>>>,
) {
    let mut conn: Option<RawH1> = None;
    let mut i = 0;
    while !stop.load(Ordering::Relaxed) {
        i += 1;
        let c = match conn.as_mut() {
            Some(c) => c,
            None => match RawH1::try_connect(addr, &ca).await {
                Ok(c) => conn.insert(c),
                Err(e) => {
                    failures.lock().unwrap().push(e);
                    continue;
                }
            },
        };
        let res = async {
            c.send("POST", "/inject", "", &skip_review(&format!("h1-{i}")))
                .await?;
            c.response().await
        }
        .await;
        match res {
            Ok(r) if r.status == 200 => {
                ok.fetch_add(1, Ordering::Relaxed);
                if r.header("connection") == Some("close") {
                    closes.fetch_add(1, Ordering::Relaxed);
                    let mut c = conn.take().expect("connection");
                    let end = c.end(Duration::from_secs(5)).await;
                    if end != End::CloseNotify {
                        failures
                            .lock()
                            .unwrap()
                            .push(format!("after Connection: close: {end:?}"));
                    }
                }
            }
            Ok(r) => failures
                .lock()
                .unwrap()
                .push(format!("status {}", r.status)),
            Err(e) => {
                failures.lock().unwrap().push(e);
                conn = None;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drain_closes_http1_keepalive_connections_cleanly() {
    let (mut server, ca) = start(
        "drain-h1",
        &["--drain-delay", "1500ms", "--shutdown-grace", "5s"],
    );
    let addr = server.addr;
    // Two kept-open connections, used once before the signal.
    let mut idle = RawH1::connect(addr, &ca).await;
    let mut reused = RawH1::connect(addr, &ca).await;
    for (c, uid) in [(&mut idle, "a"), (&mut reused, "b")] {
        c.send("POST", "/inject", "", &skip_review(uid))
            .await
            .unwrap();
        let r = c.response().await.unwrap();
        assert_eq!(r.status, 200);
        assert_eq!(r.header("connection"), None, "keep-alive before the signal");
    }
    // Load over HTTP/1.1 and HTTP/2 through the drain.
    let stop = Arc::new(AtomicBool::new(false));
    let (ok, closes) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let failures = Arc::new(Mutex::new(Vec::new()));
    let h1_tasks: Vec<_> = (0..2)
        .map(|_| {
            tokio::spawn(h1_loop(
                addr,
                ca.clone(),
                stop.clone(),
                ok.clone(),
                closes.clone(),
                failures.clone(),
            ))
        })
        .collect();
    let h2 = H2::connect(addr, &ca).await.unwrap();
    eventually("20 answers under load before the signal", || async {
        ok.load(Ordering::Relaxed) >= 20
    })
    .await;
    server.sigterm();
    let t0 = Instant::now();
    assert!(
        holds_within(Duration::from_secs(1), || async {
            h2.get("/readyz").await.map(|r| r.status) == Ok(503)
        })
        .await,
        "readyz must fail during the drain"
    );
    // During the drain a kept-open connection is still served, with `Connection: close`, and
    // then closed with close_notify.
    reused
        .send("POST", "/inject", "", &skip_review("during"))
        .await
        .expect("a kept-open connection is still served during the drain");
    let r = reused.response().await.expect("answer during the drain");
    assert_eq!(r.status, 200);
    let v: serde_json::Value = serde_json::from_slice(&r.body).expect("JSON answer");
    assert_eq!(v["response"]["uid"], "during");
    assert_eq!(r.header("connection"), Some("close"));
    assert_eq!(reused.end(Duration::from_secs(5)).await, End::CloseNotify);
    // Stop the load before the listener closes (new connections would be refused then). This
    // sleep is the drain window under test (load runs until 1 s into it), not a wait for an event.
    tokio::time::sleep(Duration::from_millis(1000).saturating_sub(t0.elapsed())).await;
    stop.store(true, Ordering::Relaxed);
    for t in h1_tasks {
        t.await.unwrap();
    }
    let failures = failures.lock().unwrap().clone();
    assert!(
        failures.is_empty(),
        "{} failed: {:?}",
        failures.len(),
        failures.first()
    );
    assert!(ok.load(Ordering::Relaxed) > 10, "too few requests");
    assert!(
        closes.load(Ordering::Relaxed) > 0,
        "answers during the drain carry Connection: close"
    );
    // The connection left idle is closed with close_notify when the listener closes.
    assert_eq!(idle.end(Duration::from_secs(5)).await, End::CloseNotify);
    let status = server
        .wait_exit(Duration::from_secs(8))
        .expect("server exits after the drain");
    assert!(status.success(), "exit status {status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn second_signal_exits_at_once() {
    let (mut server, ca) = start("second-signal", &["--drain-delay", "60s"]);
    let c = H2::connect(server.addr, &ca).await.unwrap();
    server.sigterm();
    assert!(
        holds_within(Duration::from_secs(2), || async {
            c.get("/readyz").await.map(|r| r.status) == Ok(503)
        })
        .await
    );
    server.sigterm();
    let status = server
        .wait_exit(Duration::from_secs(5))
        .expect("a second signal ends the 60 s drain at once");
    assert!(!status.success(), "exit status {status}");
    assert!(server.log_text().contains("second signal"));
}

/// Send `body` with `content-length` over a fresh HTTP/1.1 connection, concurrently reading the
/// answer, as clients do.
async fn post_h1_concurrently(
    addr: SocketAddr,
    ca: &[u8],
    body: Vec<u8>,
) -> Result<H1Resp, String> {
    let c = RawH1::connect(addr, ca).await;
    let (mut rd, mut wr) = tokio::io::split(c.tls);
    let writer = tokio::spawn(async move {
        let head = format!(
            "POST /inject HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        wr.write_all(head.as_bytes()).await?;
        for chunk in body.chunks(64 * 1024) {
            wr.write_all(chunk).await?;
        }
        wr.flush().await?;
        Ok::<_, std::io::Error>(wr)
    });
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16384];
    let resp = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..i]).into_owned();
            let status: u16 = head
                .split(' ')
                .nth(1)
                .and_then(|s| s.parse().ok())
                .ok_or("bad status line")?;
            let headers = head
                .split("\r\n")
                .skip(1)
                .filter_map(|l| l.split_once(':'))
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .collect();
            break H1Resp {
                status,
                headers,
                body: buf[i + 4..].to_vec(),
            };
        }
        match rd.read(&mut chunk).await {
            Ok(0) => return Err("closed before an answer".into()),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) => return Err(format!("read: {e}")),
        }
    };
    // The client finished sending: no reset while it was.
    writer
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("write: {e}"))?;
    Ok(resp)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_http1_body_gets_a_413_the_client_reads() {
    let (server, ca) = start("h1-413", &[]);
    let body = vec![b' '; 3 * 1024 * 1024 + 1];
    let mut seen = 0;
    let mut failures = Vec::new();
    for _ in 0..20 {
        match post_h1_concurrently(server.addr, &ca, body.clone()).await {
            Ok(r) if r.status == 413 => {
                assert_eq!(r.header("connection"), Some("close"));
                seen += 1;
            }
            Ok(r) => failures.push(format!("status {}", r.status)),
            Err(e) => failures.push(e),
        }
    }
    assert_eq!(seen, 20, "413 seen {seen} of 20 times: {failures:?}");
    // Without content-length (chunked), the limit applies while streaming; the rest is read and
    // discarded too.
    for _ in 0..3 {
        let r = http1_chunked(server.addr, &ca, 4 * 1024 * 1024).await;
        assert_eq!(r, Ok(413));
    }
    let c = H2::connect(server.addr, &ca).await.unwrap();
    let m = metrics(&c).await;
    assert_eq!(
        metric(
            &m,
            "sidecar_injection_failure_total{reason=\"body_too_large\"}"
        ),
        Some(23.0)
    );
}

/// POST `n` bytes with chunked encoding over HTTP/1.1 (hyper client); the status.
async fn http1_chunked(addr: SocketAddr, ca: &[u8], n: usize) -> Result<u16, String> {
    use bytes::Bytes;
    use http_body_util::BodyExt;
    use hyper_util::rt::TokioIo;
    let (tls, _) = tls_connect(addr, client_config(&[ca], &[b"http/1.1"], false)).await?;
    let (mut send, conn) = hyper::client::conn::http1::handshake::<_, ReqBody>(TokioIo::new(tls))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    let chunks: std::collections::VecDeque<Bytes> = (0..n / 65536)
        .map(|_| Bytes::from(vec![b' '; 65536]))
        .collect();
    let req = hyper::Request::post("/inject")
        .header("host", "localhost")
        .header("content-type", "application/json")
        .body(Chunks(chunks).boxed())
        .map_err(|e| e.to_string())?;
    let resp = send.send_request(req).await.map_err(|e| e.to_string())?;
    Ok(resp.status().as_u16())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handshake_header_and_idle_timeouts_close_connections() {
    let (server, ca) = start(
        "timeouts",
        &[
            "--handshake-timeout",
            "500ms",
            "--header-read-timeout",
            "500ms",
            "--idle-timeout",
            "1500ms",
        ],
    );
    let addr = server.addr;
    let margin = Duration::from_secs(3);
    // No TLS handshake at all: closed after the handshake timeout.
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    let mut b = [0u8; 16];
    let r = tokio::time::timeout(Duration::from_millis(500) + margin, tcp.read(&mut b)).await;
    assert!(matches!(r, Ok(Ok(0)) | Ok(Err(_))), "{r:?}");
    // A request head that never completes: closed after the header-read timeout.
    let mut c = RawH1::connect(addr, &ca).await;
    c.tls
        .write_all(b"POST /inject HTTP/1.1\r\nhost: localhost\r\n")
        .await
        .unwrap();
    c.tls.flush().await.unwrap();
    let end = c.end(Duration::from_millis(500) + margin).await;
    assert_ne!(end, End::Open, "unfinished headers must not linger");
    // A connection that never sends a request: the first head is due within the same timeout.
    let mut silent = RawH1::connect(addr, &ca).await;
    assert_ne!(
        silent.end(Duration::from_millis(500) + margin).await,
        End::Open
    );
    // An idle keep-alive connection: open through the header-read timeout, closed with
    // close_notify after the idle timeout.
    let mut idle = RawH1::connect(addr, &ca).await;
    idle.send("POST", "/inject", "", &skip_review("idle"))
        .await
        .unwrap();
    assert_eq!(idle.response().await.unwrap().status, 200);
    let t0 = Instant::now();
    assert_eq!(idle.end(Duration::from_millis(750)).await, End::Open);
    let end = idle.end(Duration::from_millis(1500) + margin).await;
    assert_eq!(end, End::CloseNotify);
    assert!(
        t0.elapsed() >= Duration::from_millis(1400),
        "{:?}",
        t0.elapsed()
    );
    // An idle HTTP/2 connection: GOAWAY, then closed.
    let (tls, _) = tls_connect(addr, client_config(&[&ca], &[b"h2"], false))
        .await
        .unwrap();
    let (send, conn) = hyper::client::conn::http2::handshake::<_, _, ReqBody>(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(tls),
    )
    .await
    .unwrap();
    // The request handle stays: a client with no handle left would close the connection itself.
    let _send = send;
    let ended = tokio::time::timeout(Duration::from_millis(1500) + margin, conn).await;
    assert!(matches!(ended, Ok(Ok(()))), "{ended:?}");
    // HTTP/2 without ALPN (prior knowledge): its idle frames are not request heads, so it
    // outlives the header-read timeout.
    let (tls, alpn) = tls_connect(addr, client_config(&[&ca], &[], false))
        .await
        .unwrap();
    assert_eq!(alpn, None);
    // The client pings while idle: frames arrive on a connection with no request in flight.
    let (mut no_alpn, conn) =
        hyper::client::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
            .timer(hyper_util::rt::TokioTimer::new())
            .keep_alive_interval(Duration::from_millis(100))
            .keep_alive_while_idle(true)
            .handshake::<_, ReqBody>(hyper_util::rt::TokioIo::new(tls))
            .await
            .unwrap();
    tokio::spawn(conn);
    for _ in 0..2 {
        let req = hyper::Request::get("https://localhost/healthz")
            .body(full(bytes::Bytes::new()))
            .unwrap();
        let resp = no_alpn
            .send_request(req)
            .await
            .expect("HTTP/2 without ALPN");
        assert_eq!(resp.status(), 200);
        // Idle (but pinging) past the header-read timeout: the time span is what is tested.
        tokio::time::sleep(Duration::from_millis(900)).await;
    }
    let c = H2::connect(addr, &ca).await.unwrap();
    let m = metrics(&c).await;
    for (reason, at_least) in [
        ("handshake_timeout", 1.0),
        ("header_timeout", 2.0),
        ("idle_timeout", 2.0),
    ] {
        let series = format!("outrigger_connections_closed_total{{reason=\"{reason}\"}}");
        assert!(
            metric(&m, &series).is_some_and(|v| v >= at_least),
            "{series} in\n{m}"
        );
    }
}

/// A request whose body sends one byte and stalls, keeping its connection busy (an idle
/// connection would be closed to make room instead).
fn stalled_request(c: &H2) -> tokio::task::JoinHandle<Result<Resp, String>> {
    use http_body_util::{BodyExt, StreamBody};
    let c = c.clone();
    tokio::spawn(async move {
        let first = futures::stream::iter([Ok::<_, std::convert::Infallible>(
            hyper::body::Frame::data(bytes::Bytes::from_static(b"{")),
        )]);
        let body = StreamBody::new(futures::StreamExt::chain(first, futures::stream::pending()));
        let headers = [
            ("content-type", "application/json"),
            ("content-length", "1000"),
        ];
        c.request_with("POST", "/inject", &headers, body.boxed())
            .await
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_is_answered_at_the_connection_cap() {
    let (server, ca) = start(
        "cap",
        &[
            "--max-connections",
            "2",
            "--body-first-byte-timeout",
            "60s",
            "--body-min-rate",
            "0",
            "--request-timeout",
            "60s",
        ],
    );
    let addr = server.addr;
    let held = [
        H2::connect(addr, &ca).await.unwrap(),
        H2::connect(addr, &ca).await.unwrap(),
    ];
    // Both busy: none can be closed to make room.
    let stalls = [stalled_request(&held[0]), stalled_request(&held[1])];
    eventually("both stalled requests to be read", || async {
        metric(&metrics(&held[0]).await, "outrigger_inflight_request_bytes") == Some(2.0)
    })
    .await;
    assert_eq!(held[0].get("/healthz").await.unwrap().status, 200);
    // At the cap: probes are answered on reserve connections (HTTP/1.1 as kubelet, and HTTP/2).
    for path in ["/healthz", "/readyz"] {
        let r = http1_request(addr, &ca, path, None).await.expect(path);
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(
            r.headers.get("connection").and_then(|v| v.to_str().ok()),
            Some("close")
        );
        let c = H2::connect(addr, &ca).await.unwrap();
        assert_eq!(c.get(path).await.unwrap().status, 200, "{path}");
    }
    // Anything else is refused there.
    let r = http1_request(addr, &ca, "/inject", Some(skip_review("cap")))
        .await
        .unwrap();
    assert_eq!(r.status, 503);
    assert_eq!(
        r.headers.get("retry-after").and_then(|v| v.to_str().ok()),
        Some("1")
    );
    // Reserve connections close after their request; then fill the reserve: the next
    // connection is closed at once.
    assert!(
        holds_within(Duration::from_secs(5), || async {
            metric(&metrics(&held[0]).await, "outrigger_open_connections") == Some(2.0)
        })
        .await,
        "reserve connections close after one request"
    );
    let mut extra = Vec::new();
    for _ in 0..8 {
        extra.push(H2::connect(addr, &ca).await.unwrap());
    }
    // Closed once its handshake ends (the pools decide past TLS): its first request fails.
    let beyond = async {
        match H2::connect(addr, &ca).await {
            Err(_) => true,
            Ok(c) => c.get("/healthz").await.is_err(),
        }
    };
    let refused = tokio::time::timeout(Duration::from_secs(5), beyond).await;
    assert_eq!(
        refused,
        Ok(true),
        "connection beyond the reserve must be closed"
    );
    drop(extra);
    let m = metrics(&held[0]).await;
    assert!(
        metric(&m, "outrigger_connections_rejected_total").is_some_and(|v| v >= 1.0),
        "{m}"
    );
    assert_eq!(
        metric(
            &m,
            "outrigger_rejected_requests_total{reason=\"connection_limit\"}"
        ),
        Some(1.0)
    );
    // Below the cap again, everything is served.
    for s in stalls {
        s.abort();
    }
    drop(held);
    assert!(
        holds_within(Duration::from_secs(5), || async {
            match H2::connect(addr, &ca).await {
                Ok(c) => {
                    c.post("/inject", skip_review("after"))
                        .await
                        .map(|r| r.status)
                        == Ok(200)
                }
                Err(_) => false,
            }
        })
        .await
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inflight_byte_budget_answers_429() {
    let (server, ca) = start(
        "budget",
        &[
            "--max-request-bytes",
            "65536",
            "--max-inflight-bytes",
            "100000",
            "--body-first-byte-timeout",
            "60s",
            "--body-min-rate",
            "0",
        ],
    );
    let addr = server.addr;
    // A request whose body is still arriving holds the 40,000 bytes that arrived (not the
    // 60,000 it announced).
    let mut slow = RawH1::connect(addr, &ca).await;
    let mut body = skip_review("slow");
    body.resize(60_000, b' ');
    let head = format!(
        "POST /inject HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    slow.tls.write_all(head.as_bytes()).await.unwrap();
    slow.tls.write_all(&body[..40_000]).await.unwrap();
    slow.tls.flush().await.unwrap();
    let c = H2::connect(addr, &ca).await.unwrap();
    assert!(
        holds_within(Duration::from_secs(5), || async {
            metric(&metrics(&c).await, "outrigger_inflight_request_bytes") == Some(40_000.0)
        })
        .await
    );
    // Another 65,000 bytes do not fit, and are more than that connection's fair share (half the
    // budget, 40,000 being within the other half): 429 with Retry-After, over HTTP/2 and
    // HTTP/1.1 (read by a client still sending).
    let mut other = skip_review("other");
    other.resize(65_000, b' ');
    let r = c.post("/inject", other.clone()).await.unwrap();
    assert_eq!(r.status, 429, "{}", r.text());
    assert_eq!(
        r.headers.get("retry-after").and_then(|v| v.to_str().ok()),
        Some("1")
    );
    let r = post_h1_concurrently(addr, &ca, other.clone())
        .await
        .unwrap();
    assert_eq!(r.status, 429);
    // Small requests still fit.
    assert_eq!(
        c.post("/inject", skip_review("small"))
            .await
            .unwrap()
            .status,
        200
    );
    // Once the slow request completes, its bytes are released.
    slow.tls.write_all(&body[40_000..]).await.unwrap();
    slow.tls.flush().await.unwrap();
    assert_eq!(slow.response().await.unwrap().status, 200);
    assert_eq!(c.post("/inject", other).await.unwrap().status, 200);
    let m = metrics(&c).await;
    assert_eq!(
        metric(
            &m,
            "outrigger_rejected_requests_total{reason=\"inflight_bytes\"}"
        ),
        Some(2.0)
    );
    assert_eq!(metric(&m, "outrigger_inflight_request_bytes"), Some(0.0));
    assert_eq!(
        metric(&m, "outrigger_inflight_request_bytes_limit"),
        Some(100_000.0)
    );
}

#[test]
fn inflight_budget_below_the_request_limit_is_refused() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_outrigger"))
        .args([
            "serve",
            "--port",
            "0",
            "--max-request-bytes",
            "1000",
            "--max-inflight-bytes",
            "999",
        ])
        .output()
        .expect("run outrigger");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--max-inflight-bytes"), "{err}");
}
