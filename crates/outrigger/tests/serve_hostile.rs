//! Hostile clients against `outrigger serve` (the real binary, loopback only): clients that
//! announce a 3 MiB review, send one byte and stall, over HTTP/1.1 (8 and 64 of them) and over
//! one HTTP/2 connection (16 streams), while the API server's reviews (from 127.0.0.1; the
//! attackers sit on other 127.0.0.x addresses) must all be injected; request heads sent a byte
//! at a time; bodies slower than the minimum rate. Bounded in count and time.
//!
//! `scripts/hostile.sh` runs the same scenarios at full size (up to 512 stalled clients, reviews
//! at 100/s) against the release binary and prints latency and memory.

mod common;

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::server::start_embedded;
use common::*;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::task::JoinHandle;

const V1: &str = "admission.k8s.io/v1";
/// What the stalled clients announce: a review at the request size limit.
const ANNOUNCED: usize = 3 * 1024 * 1024;

/// The loopback address of attacker `i` (never 127.0.0.1, the API server's).
fn attacker_ip(i: usize) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(
        127,
        0,
        1 + (i / 250) as u8,
        2 + (i % 250) as u8,
    ))
}

/// A review of a pod of a ReplicaSet the embedded default injects.
fn hello_review(uid: &str) -> Vec<u8> {
    review(
        V1,
        uid,
        "default",
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"generateName": "hello-7d4f9-", "labels": {"app": "hello"},
                   "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                       "name": "hello-7d4f9", "uid": "6b1e0f7e", "controller": true}]},
               "spec": {"containers": [{"name": "hello", "image": "nginx"}]}}),
    )
}

/// An HTTP/1.1 client from `ip` that sends the head of a 3 MiB review and one body byte, then
/// nothing; the stream is kept open (returned) until the test drops it.
async fn stalled_h1(
    addr: SocketAddr,
    ca: &[u8],
    ip: IpAddr,
) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    let tcp = tcp_from(ip, addr).await.expect("attacker connects");
    let (mut tls, _) = tls_over(tcp, client_config(&[ca], &[b"http/1.1"], false))
        .await
        .expect("attacker TLS");
    let head = format!(
        "POST /inject HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {ANNOUNCED}\r\n\r\n{{"
    );
    tls.write_all(head.as_bytes()).await.expect("send head");
    tls.flush().await.expect("flush");
    tls
}

/// A body that sends one byte and then nothing.
fn one_byte_then_stall() -> ReqBody {
    let first = futures::stream::iter([Ok::<_, Infallible>(Frame::data(Bytes::from_static(b"{")))]);
    StreamBody::new(futures::StreamExt::chain(first, futures::stream::pending())).boxed()
}

/// One HTTP/2 connection from `ip` with `streams` stalled requests; each task ends with the
/// status the server answered (or the error).
async fn stalled_h2(
    addr: SocketAddr,
    ca: &[u8],
    ip: IpAddr,
    streams: usize,
) -> (H2, Vec<JoinHandle<Result<u16, String>>>) {
    let tcp = tcp_from(ip, addr).await.expect("attacker connects");
    let tls = tls_over(tcp, client_config(&[ca], &[b"h2"], false))
        .await
        .expect("attacker TLS");
    let h2 = H2::handshake(tls).await.expect("h2");
    let len = ANNOUNCED.to_string();
    let tasks = (0..streams)
        .map(|_| {
            let c = h2.clone();
            let len = len.clone();
            tokio::spawn(async move {
                let headers = [
                    ("content-type", "application/json"),
                    ("content-length", &len),
                ];
                c.request_with("POST", "/inject", &headers, one_byte_then_stall())
                    .await
                    .map(|r| r.status)
            })
        })
        .collect();
    (h2, tasks)
}

/// Send `n` reviews from the API server's address, one after another; the latency of each, and
/// a failure description for any that was not injected.
async fn real_reviews(api: &H2, n: usize) -> (Vec<Duration>, Vec<String>) {
    let mut times = Vec::new();
    let mut failures = Vec::new();
    for i in 0..n {
        let t = Instant::now();
        match api
            .post("/inject", hello_review(&format!("real-{i}")))
            .await
        {
            Ok(r) if r.status == 200 && r.json()["response"]["patch"].is_string() => {
                times.push(t.elapsed())
            }
            Ok(r) => failures.push(format!("review {i}: {} {}", r.status, r.text())),
            Err(e) => failures.push(format!("review {i}: {e}")),
        }
    }
    (times, failures)
}

/// Wait until the server reads `n` request bodies that hold `bytes` bytes in all.
async fn wait_stalled(api: &H2, bytes: f64) {
    eventually("the stalled bodies to be read", || async {
        metric(&metrics(api).await, "outrigger_inflight_request_bytes") == Some(bytes)
    })
    .await;
}

/// `h1` stalled HTTP/1.1 clients and one HTTP/2 connection with `h2_streams` stalled streams
/// (none when 0), each from its own loopback address, hold their requests open while 24 real
/// reviews are sent from 127.0.0.1: all must be injected, and the stalled requests must still be
/// open afterwards (so the reviews were sent while they stalled). The stall cut-offs are set
/// long for that (the default cut is tested below).
async fn admission_is_not_starved(name: &str, h1: usize, h2_streams: usize) {
    let (server, ca) = start_embedded(
        name,
        &[
            "--body-first-byte-timeout",
            "60s",
            "--body-min-rate",
            "0",
            "--request-timeout",
            "60s",
        ],
    );
    let addr = server.addr;
    let api = H2::connect(addr, &ca).await.expect("API server connects");
    let mut held = Vec::new();
    for i in 0..h1 {
        held.push(stalled_h1(addr, &ca, attacker_ip(i)).await);
    }
    let streams = match h2_streams {
        0 => None,
        n => Some(stalled_h2(addr, &ca, attacker_ip(h1), n).await),
    };
    let stalled = (h1 + h2_streams) as f64;
    wait_stalled(&api, stalled).await;
    let (times, failures) = real_reviews(&api, 24).await;
    assert!(
        failures.is_empty(),
        "{} of 24 real reviews failed with {h1} + {h2_streams} stalled: {failures:?}",
        failures.len()
    );
    // The stalled requests still held their byte each: the reviews overlapped with them.
    let m = metrics(&api).await;
    assert_eq!(
        metric(&m, "outrigger_inflight_request_bytes"),
        Some(stalled),
        "{m}"
    );
    assert_eq!(
        metric(
            &m,
            "sidecar_injection_failure_total{reason=\"inflight_bytes\"}"
        ),
        None,
        "{m}"
    );
    eprintln!(
        "{name}: 24 reviews injected, slowest {:?}",
        times.iter().max()
    );
    drop(held);
    if let Some((_c, tasks)) = streams {
        for t in tasks {
            t.abort();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_stalled_http1_clients_do_not_starve_admission() {
    admission_is_not_starved("stall-8", 8, 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_stalled_http1_clients_do_not_starve_admission() {
    admission_is_not_starved("stall-64", 64, 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_stalled_http2_streams_do_not_starve_admission() {
    admission_is_not_starved("stall-h2", 0, 16).await;
}

/// Bodies that keep their pace are not the ones preempted: a client that has sent most of a
/// large review and stalls gives its bytes up to a review that arrives in full.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_large_body_is_preempted_for_a_review_within_its_share() {
    let (server, ca) = start_embedded(
        "preempt",
        &[
            "--max-request-bytes",
            "100000",
            "--max-inflight-bytes",
            "200000",
            "--body-first-byte-timeout",
            "60s",
            "--body-min-rate",
            "0",
        ],
    );
    let addr = server.addr;
    let api = H2::connect(addr, &ca).await.expect("connects");
    // Two attackers each send 99,900 of 100,000 bytes and stall: 199,800 of 200,000 held.
    let mut attackers = Vec::new();
    for i in 0..2 {
        let tcp = tcp_from(attacker_ip(i), addr).await.expect("connect");
        let (mut tls, _) = tls_over(tcp, client_config(&[&ca], &[b"http/1.1"], false))
            .await
            .expect("TLS");
        let head = "POST /inject HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n\r\n";
        tls.write_all(head.as_bytes()).await.unwrap();
        tls.write_all(&vec![b' '; 99_900]).await.unwrap();
        tls.flush().await.unwrap();
        attackers.push(tls);
    }
    wait_stalled(&api, 199_800.0).await;
    // A review of a few KiB is within its share (200,000 / 3): one attacker is preempted.
    let (_, failures) = real_reviews(&api, 5).await;
    assert!(failures.is_empty(), "{failures:?}");
    let mut statuses = Vec::new();
    for mut a in attackers {
        let mut buf = vec![0u8; 4096];
        let n = tokio::time::timeout(Duration::from_millis(300), a.read(&mut buf)).await;
        if let Ok(Ok(n)) = n {
            statuses.push(String::from_utf8_lossy(&buf[..n]).into_owned());
        }
    }
    assert_eq!(
        statuses.len(),
        1,
        "exactly one attacker preempted: {statuses:?}"
    );
    assert!(
        statuses[0].starts_with("HTTP/1.1 429") && statuses[0].contains("preempted"),
        "{}",
        statuses[0]
    );
    let m = metrics(&api).await;
    assert_eq!(
        metric(
            &m,
            "outrigger_rejected_requests_total{reason=\"preempted\"}"
        ),
        Some(1.0),
        "{m}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_slower_than_the_minimum_rate_are_cut() {
    let (server, ca) = start_embedded(
        "slow-body",
        &[
            "--body-first-byte-timeout",
            "500ms",
            "--body-min-rate",
            "2000",
        ],
    );
    let addr = server.addr;
    let api = H2::connect(addr, &ca).await.expect("connects");
    // One byte, then nothing: cut 500 ms + 0.5 ms after the head.
    let mut stalled = stalled_h1(addr, &ca, attacker_ip(0)).await;
    // 100 bytes every 100 ms (1,000 bytes/s, half the minimum) of a 5,000-byte review.
    let mut body = hello_review("slow");
    body.resize(5000, b' ');
    let slow = tokio::spawn({
        let ca = ca.clone();
        async move {
            let tcp = tcp_from(attacker_ip(1), addr).await.expect("connect");
            let (mut tls, _) = tls_over(tcp, client_config(&[&ca], &[b"http/1.1"], false))
                .await
                .expect("TLS");
            let head = format!(
                "POST /inject HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                body.len()
            );
            tls.write_all(head.as_bytes()).await.unwrap();
            let t = Instant::now();
            for chunk in body.chunks(100) {
                if tls.write_all(chunk).await.is_err() || tls.flush().await.is_err() {
                    break;
                }
                let mut b = [0u8; 512];
                if let Ok(Ok(n)) =
                    tokio::time::timeout(Duration::from_millis(100), tls.read(&mut b)).await
                {
                    return (String::from_utf8_lossy(&b[..n]).into_owned(), t.elapsed());
                }
            }
            (String::new(), t.elapsed())
        }
    });
    let mut b = [0u8; 512];
    let t = Instant::now();
    let n = tokio::time::timeout(Duration::from_secs(10), stalled.read(&mut b))
        .await
        .expect("the stalled body is cut")
        .expect("an answer");
    let answer = String::from_utf8_lossy(&b[..n]);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("connection: close"), "{answer}");
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    let (answer, after) = slow.await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer:?}");
    assert!(
        answer.contains("slower than the minimum rate of 2000 bytes/s"),
        "{answer}"
    );
    assert!(after < Duration::from_secs(5), "{after:?}");
    // A review sent at full speed is unaffected.
    let (_, failures) = real_reviews(&api, 3).await;
    assert!(failures.is_empty(), "{failures:?}");
    let m = metrics(&api).await;
    let series = "outrigger_rejected_requests_total{reason=\"body_min_rate\"}";
    assert_eq!(metric(&m, series), Some(2.0), "{series} in\n{m}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_never_starts_is_cut_at_the_first_byte_deadline() {
    let (server, ca) = start_embedded("first-byte", &["--body-first-byte-timeout", "300ms"]);
    let addr = server.addr;
    let tcp = tcp_from(attacker_ip(0), addr).await.expect("connect");
    let (mut tls, _) = tls_over(tcp, client_config(&[&ca], &[b"http/1.1"], false))
        .await
        .expect("TLS");
    tls.write_all(b"POST /inject HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: 10\r\n\r\n")
        .await
        .unwrap();
    tls.flush().await.unwrap();
    let mut b = [0u8; 512];
    let n = tokio::time::timeout(Duration::from_secs(10), tls.read(&mut b))
        .await
        .expect("cut")
        .expect("an answer");
    let answer = String::from_utf8_lossy(&b[..n]);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("no byte received within 300ms"), "{answer}");
    let api = H2::connect(addr, &ca).await.expect("connects");
    let m = metrics(&api).await;
    assert_eq!(
        metric(
            &m,
            "outrigger_rejected_requests_total{reason=\"body_first_byte_timeout\"}"
        ),
        Some(1.0),
        "{m}"
    );
}

/// A request head sent one byte at a time ("slowloris") does not keep its connection open past
/// the header-read timeout, however steadily the bytes come.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slowloris_headers_are_cut_at_the_header_read_timeout() {
    let (server, ca) = start_embedded("slowloris", &["--header-read-timeout", "600ms"]);
    let addr = server.addr;
    let mut clients = Vec::new();
    for i in 0..4 {
        let tcp = tcp_from(attacker_ip(i), addr).await.expect("connect");
        let (tls, _) = tls_over(tcp, client_config(&[&ca], &[b"http/1.1"], false))
            .await
            .expect("TLS");
        clients.push(tls);
    }
    let head: VecDeque<u8> =
        b"POST /inject HTTP/1.1\r\nhost: localhost\r\nx-padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n"
            .iter()
            .copied()
            .collect();
    let t = Instant::now();
    let tasks: Vec<_> = clients
        .into_iter()
        .map(|mut tls| {
            let mut head = head.clone();
            tokio::spawn(async move {
                // One byte every 50 ms; the head never ends within the test.
                while let Some(b) = head.pop_front() {
                    if tls.write_all(&[b]).await.is_err() || tls.flush().await.is_err() {
                        return true;
                    }
                    let mut buf = [0u8; 64];
                    match tokio::time::timeout(Duration::from_millis(50), tls.read(&mut buf)).await
                    {
                        Ok(Ok(0)) | Ok(Err(_)) => return true,
                        _ => {}
                    }
                }
                false
            })
        })
        .collect();
    for task in tasks {
        assert!(task.await.unwrap(), "the trickling head was cut");
    }
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    let api = H2::connect(addr, &ca).await.expect("connects");
    let m = metrics(&api).await;
    assert_eq!(
        metric(
            &m,
            "outrigger_connections_closed_total{reason=\"header_timeout\"}"
        ),
        Some(4.0),
        "{m}"
    );
}

/// The address of the `--health-port` listener, from the server's log.
async fn health_addr(server: &common::Server) -> SocketAddr {
    let find = || {
        server.logs.lock().expect("logs").iter().find_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).ok()?;
            v["message"]
                .as_str()?
                .starts_with("health endpoints listening")
                .then(|| v["address"].as_str()?.parse().ok())?
        })
    };
    eventually("the health port to listen", || async { find().is_some() }).await;
    find().expect("found")
}

/// A plain HTTP/1.1 GET on a fresh connection; the status line's code.
async fn plain_get(addr: SocketAddr, path: &str) -> Result<u16, String> {
    let mut tcp = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let req = format!("GET {path} HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n");
    tcp.write_all(req.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    tcp.read_to_end(&mut out).await.map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out);
    text.split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("no status in {text:?}"))
}

/// Open `n` TCP connections from `ip` that never send a byte (no ClientHello).
async fn silent(addr: SocketAddr, ip: IpAddr, n: usize) -> Vec<tokio::net::TcpStream> {
    let mut held = Vec::new();
    for _ in 0..n {
        held.push(tcp_from(ip, addr).await.expect("attacker connects"));
    }
    held
}

/// Connections that never start TLS, from 8 addresses (127.0.0.2–.9), fill the handshake pool
/// past each address's share; reviews on fresh connections from 127.0.0.1 take the place of the
/// flood's oldest handshakes and are all injected, and every probe on the health port is
/// answered. (At full size, 4,200 connections: scripts/hostile.sh.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_silent_connections_leaves_reviews_and_probes_answered() {
    let (server, ca) = start_embedded(
        "handshake-flood",
        &[
            "--health-port",
            "0",
            "--max-handshakes",
            "64",
            "--max-handshakes-per-address",
            "8",
            // Held for the whole test: the pool, not the deadline, is what is tested.
            "--handshake-timeout",
            "120s",
        ],
    );
    let addr = server.addr;
    let health = health_addr(&server).await;
    let mut held = Vec::new();
    for i in 2..=9u8 {
        held.push(silent(addr, IpAddr::V4(Ipv4Addr::new(127, 0, 0, i)), 40).await);
    }
    let api = H2::connect(addr, &ca).await.expect("API server connects");
    // 8 addresses × 32 beyond their share of 8 were refused at accept; the 64 kept fill the pool.
    eventually("the flood to be accepted and refused", || async {
        metric(
            &metrics(&api).await,
            "outrigger_connections_closed_total{reason=\"handshake_address_share\"}",
        ) == Some(256.0)
    })
    .await;
    let mut failures = Vec::new();
    for i in 0..20 {
        let c = match H2::connect(addr, &ca).await {
            Ok(c) => c,
            Err(e) => {
                failures.push(format!("review {i}: {e}"));
                continue;
            }
        };
        match c.post("/inject", hello_review(&format!("fresh-{i}"))).await {
            Ok(r) if r.status == 200 && r.json()["response"]["patch"].is_string() => {}
            other => failures.push(format!("review {i}: {other:?}")),
        }
        match plain_get(health, "/healthz").await {
            Ok(200) => {}
            other => failures.push(format!("healthz {i}: {other:?}")),
        }
    }
    assert!(failures.is_empty(), "{failures:?}");
    let m = metrics(&api).await;
    let evicted = metric(
        &m,
        "outrigger_connections_closed_total{reason=\"handshake_evicted\"}",
    );
    // The first fresh connection took a flood slot; the flood does not reconnect here, so the
    // next ones found the slots the earlier ones gave back.
    assert!(
        evicted >= Some(1.0),
        "a fresh connection took a flood slot: {m}"
    );
    drop(held);
}

/// When the connection pool (or an address's share of it) is full, the connection idle the
/// longest is closed for a newcomer (of the same address when the share is what is full).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_give_way_to_new_ones() {
    let (server, ca) = start_embedded(
        "idle-evict",
        &[
            "--max-connections",
            "4",
            "--max-connections-per-address",
            "2",
        ],
    );
    let addr = server.addr;
    let connect_from = |i: usize| {
        let ca = ca.clone();
        async move {
            let tcp = tcp_from(attacker_ip(i), addr).await.expect("connect");
            let tls = tls_over(tcp, client_config(&[&ca], &[b"h2"], false))
                .await
                .expect("TLS");
            H2::handshake(tls).await.expect("h2")
        }
    };
    // Address 0 holds its share (2); its third connection closes its first.
    let a1 = connect_from(0).await;
    let a2 = connect_from(0).await;
    let a3 = connect_from(0).await;
    eventually(
        "the first idle connection of the address to close",
        || async { a1.is_closed() },
    )
    .await;
    assert!(!a2.is_closed() && !a3.is_closed());
    // Another address fills the pool (2 + 2); the API server's connection closes the oldest
    // idle one (a2) and its review is injected.
    let _b1 = connect_from(1).await;
    let _b2 = connect_from(1).await;
    let api = H2::connect(addr, &ca).await.expect("API server connects");
    eventually("the oldest idle connection to close", || async {
        a2.is_closed()
    })
    .await;
    let (_, failures) = real_reviews(&api, 3).await;
    assert!(failures.is_empty(), "{failures:?}");
    assert!(!a3.is_closed());
    let m = metrics(&api).await;
    assert_eq!(
        metric(
            &m,
            "outrigger_connections_closed_total{reason=\"evicted_idle\"}"
        ),
        Some(2.0),
        "{m}"
    );
}

/// An HTTP/2 client that opens no flow-control window: its answers are counted in the memory
/// budget (and, past its connection's cap, refused), and after the write timeout its connection
/// is closed and the bytes given back; reviews from the API server go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_a_client_does_not_read_are_counted_and_cut() {
    let (server, ca) = start_embedded(
        "window-zero",
        &[
            "--write-timeout",
            "2s",
            "--max-request-bytes",
            "40000",
            "--max-connection-bytes",
            "40000",
        ],
    );
    let addr = server.addr;
    let api = H2::connect(addr, &ca).await.expect("API server connects");
    // Pods with 8 containers whose probes the injection rewrites: an answer over 4 KiB.
    let big_review = |uid: &str| {
        let containers: Vec<_> = (0..8)
            .map(|i| {
                json!({"name": format!("c{i}"), "image": "nginx",
                "ports": [{"containerPort": 8000 + i}],
                "readinessProbe": {"httpGet": {"path": "/ready", "port": 8000 + i}},
                "livenessProbe": {"httpGet": {"path": "/live", "port": 8000 + i}}})
            })
            .collect();
        review(
            V1,
            uid,
            "default",
            json!({"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"generateName": "big-", "labels": {"app": "big"}},
                   "spec": {"containers": containers}}),
        )
    };
    let size = api
        .post("/inject", big_review("probe-00"))
        .await
        .expect("review");
    assert_eq!(size.status, 200);
    let answer = size.body.len();
    assert!(answer > 4096, "the answer must be charged: {answer} bytes");
    let tcp = tcp_from(attacker_ip(0), addr).await.expect("connect");
    let (tls, _) = tls_over(tcp, client_config(&[&ca], &[b"h2"], false))
        .await
        .expect("TLS");
    let (send, conn) =
        hyper::client::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
            .initial_stream_window_size(0)
            .handshake::<_, ReqBody>(hyper_util::rt::TokioIo::new(tls))
            .await
            .expect("h2");
    tokio::spawn(conn);
    let n = 12;
    let mut heads = Vec::new();
    for i in 0..n {
        let mut send = send.clone();
        send.ready().await.expect("ready");
        let req = hyper::Request::builder()
            .method("POST")
            .uri("https://localhost/inject")
            .header("content-type", "application/json")
            .body(full(big_review(&format!("stuck-{i:02}"))))
            .unwrap();
        heads.push(tokio::spawn(async move {
            send.send_request(req)
                .await
                .map(|r| (r.status().as_u16(), r))
        }));
    }
    let mut statuses = Vec::new();
    let mut bodies = Vec::new();
    for h in heads {
        let (status, r) = h.await.unwrap().expect("a head, not flow-controlled");
        statuses.push(status);
        bodies.push(r);
    }
    let held = statuses.iter().filter(|s| **s == 200).count();
    let refused = statuses.iter().filter(|s| **s == 429).count();
    assert_eq!(held + refused, n, "{statuses:?}");
    assert!(
        held >= 1 && refused >= 1,
        "the connection's cap: {statuses:?}"
    );
    assert!(
        held * answer <= 40_000,
        "{held} answers of {answer} bytes held"
    );
    eventually("the held answers to be counted", || async {
        metric(&metrics(&api).await, "outrigger_inflight_request_bytes")
            == Some((held * answer) as f64)
    })
    .await;
    // Refused: answers over the connection's cap, and request bodies that arrived while the
    // answers held it.
    let m = metrics(&api).await;
    let answers = metric(
        &m,
        "outrigger_rejected_requests_total{reason=\"answer_connection_bytes\"}",
    )
    .unwrap_or(0.0);
    let body_refusals = metric(
        &m,
        "outrigger_rejected_requests_total{reason=\"connection_bytes\"}",
    )
    .unwrap_or(0.0);
    assert!(answers >= 1.0, "{m}");
    assert_eq!(answers + body_refusals, refused as f64, "{m}");
    let (_, failures) = real_reviews(&api, 3).await;
    assert!(failures.is_empty(), "{failures:?}");
    eventually("the stuck connection to be closed", || async {
        metric(
            &metrics(&api).await,
            "outrigger_connections_closed_total{reason=\"write_timeout\"}",
        ) == Some(1.0)
    })
    .await;
    eventually("the client to see its connection closed", || async {
        send.is_closed()
    })
    .await;
    eventually("the held answers to be given back", || async {
        metric(&metrics(&api).await, "outrigger_inflight_request_bytes") == Some(0.0)
    })
    .await;
    drop(bodies);
}

/// A `uid` longer than Kubernetes sends is refused (400, a clear reason), never repeated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_uid_is_refused_and_not_echoed() {
    let (server, ca) = start_embedded("long-uid", &[]);
    let api = H2::connect(server.addr, &ca).await.expect("connects");
    let uid = "u".repeat(1024 * 1024);
    let r = api
        .post("/inject", hello_review(&uid))
        .await
        .expect("answer");
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(
        r.text(),
        "malformed AdmissionReview: request.uid is 1048576 bytes long, over the limit of 128 (the API server sends a 36-byte UID)\n"
    );
    let (_, failures) = real_reviews(&api, 1).await;
    assert!(failures.is_empty(), "{failures:?}");
}

/// Request values with line breaks and escapes (uid, generateName, annotation values) stay
/// inside their line of the text log, escaped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_values_cannot_forge_text_log_lines() {
    let server = common::Outrigger::builder("log-forgery")
        .embedded_config()
        .generated_ca()
        .native_sidecars(false)
        .quick_drain()
        .text_logs()
        .start();
    let ca = server.ca();
    let api = H2::connect(server.addr, &ca).await.expect("connects");
    let forged = "\nFORGED outrigger: injected\r\u{1b}[2K";
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"generateName": format!("web-{forged}-"),
            "annotations": {"sidecar.istio.io/inject": format!("maybe{forged}")}},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]}});
    let r = api
        .post("/inject", review(V1, &format!("u{forged}"), "default", pod))
        .await
        .expect("answer");
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(
        server
            .wait_log("web-\\nFORGED", Duration::from_secs(30))
            .await,
        "the escaped pod name is logged:\n{}",
        server.log_text()
    );
    let logs = server.log_text();
    assert!(
        !logs.lines().any(|l| l.starts_with("FORGED")),
        "a forged line:\n{logs}"
    );
    assert!(!logs.contains('\u{1b}') && !logs.contains('\r'), "{logs:?}");
}
