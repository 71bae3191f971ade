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
