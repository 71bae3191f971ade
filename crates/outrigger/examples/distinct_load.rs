//! A load client for `outrigger serve` that sends distinct pods: what h2load cannot (it repeats
//! one body), for `scripts/cpu-per-injection.sh`'s `distinct` mode.
//!
//! ```sh
//! cargo build --release -p outrigger --example distinct_load
//! distinct_load ADDR CA.pem REVIEW.json N [CONNECTIONS] [STREAMS] [FIRST] [same]
//! ```
//!
//! Reads the AdmissionReview REVIEW.json (as `review_floor` writes it), and sends N of them to
//! `https://ADDR/inject` over CONNECTIONS HTTP/2 connections (TLS, trusting only CA.pem; default
//! 4) with STREAMS requests in flight on each (default 16). Request `i` (FIRST ≤ i < FIRST + N,
//! FIRST default 0) carries the pod with its `app` label `hello` replaced by `h` and `i` in 9
//! digits (`h000000042`, same length for every request): a label the sidecar template reads
//! (the canonical-name label and the workload's name), so neither the server's answer memo nor
//! its render memo has seen the pod; pass `same` to send REVIEW.json unchanged every time (the
//! repeated load through the same client). Every body is built before the first request.
//!
//! Each answer must be 200 with `"allowed":true` and a patch; prints one line
//! `requests=N errors=E seconds=S rps=R p50_ms=P p99_ms=Q` (latencies of the requests, from
//! sending the request to reading the whole answer), and exits 1 when any request failed.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http2;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};

const USAGE: &str =
    "usage: distinct_load ADDR CA.pem REVIEW.json N [CONNECTIONS] [STREAMS] [FIRST] [same]";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 4 {
        fail(USAGE);
    }
    let addr: SocketAddr = args[0]
        .parse()
        .unwrap_or_else(|e| fail(&format!("ADDR {:?}: {e}", args[0])));
    let ca = std::fs::read(&args[1]).unwrap_or_else(|e| fail(&format!("{}: {e}", args[1])));
    let review = std::fs::read(&args[2]).unwrap_or_else(|e| fail(&format!("{}: {e}", args[2])));
    let num = |i: usize, default: usize| -> usize {
        args.get(i).map_or(default, |s| {
            s.parse()
                .unwrap_or_else(|_| fail(&format!("{USAGE}: {s:?} is not a number")))
        })
    };
    let (n, connections, streams, first) = (num(3, 0), num(4, 4), num(5, 16), num(6, 0));
    let same = args.get(7).map(String::as_str) == Some("same");
    if n == 0 || connections == 0 || streams == 0 {
        fail(&format!(
            "{USAGE}: N, CONNECTIONS and STREAMS must be positive"
        ));
    }
    let bodies = Arc::new(bodies(&review, n, first, same));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| fail(&format!("runtime: {e}")));
    let (errors, seconds, mut latencies) =
        rt.block_on(run(addr, &ca, bodies, connections, streams));
    latencies.sort_unstable();
    let pct = |p: f64| -> f64 {
        let i = ((latencies.len() as f64 * p) as usize).clamp(1, latencies.len().max(1)) - 1;
        latencies.get(i).map_or(0.0, |d| d.as_secs_f64() * 1e3)
    };
    println!(
        "requests={n} errors={errors} seconds={seconds:.3} rps={:.0} p50_ms={:.3} p99_ms={:.3}",
        n as f64 / seconds,
        pct(0.50),
        pct(0.99)
    );
    if errors > 0 {
        std::process::exit(1);
    }
}

fn fail(msg: &str) -> ! {
    eprintln!("distinct_load: {msg}");
    std::process::exit(2);
}

/// The N request bodies: REVIEW.json with the `app` label made distinct per request, or as is.
fn bodies(review: &[u8], n: usize, first: usize, same: bool) -> Vec<Bytes> {
    let review = Bytes::copy_from_slice(review);
    if same {
        return vec![review; n];
    }
    let needle = br#""app":"hello""#;
    let at = review
        .windows(needle.len())
        .position(|w| w == needle)
        .unwrap_or_else(|| fail("REVIEW.json has no \"app\":\"hello\" label to vary"));
    let value = at + br#""app":""#.len();
    let end = value + b"hello".len();
    (first..first + n)
        .map(|i| {
            let mut b = Vec::with_capacity(review.len() + 5);
            b.extend_from_slice(&review[..value]);
            b.extend_from_slice(format!("h{i:09}").as_bytes());
            b.extend_from_slice(&review[end..]);
            Bytes::from(b)
        })
        .collect()
}

/// Send every body over `connections` connections with `streams` in flight on each; returns
/// the failed requests, the seconds from the first request to the last answer, and each
/// request's latency.
async fn run(
    addr: SocketAddr,
    ca: &[u8],
    bodies: Arc<Vec<Bytes>>,
    connections: usize,
    streams: usize,
) -> (usize, f64, Vec<Duration>) {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca) {
        let cert = cert.unwrap_or_else(|e| fail(&format!("CA PEM: {e}")));
        roots
            .add(cert)
            .unwrap_or_else(|e| fail(&format!("CA certificate: {e}")));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap_or_else(|e| fail(&format!("TLS versions: {e}")))
        .with_root_certificates(roots)
        .with_no_client_auth();
    cfg.alpn_protocols = vec![b"h2".to_vec()];
    let connector = tokio_rustls::TlsConnector::from(Arc::new(cfg));
    let mut senders = Vec::with_capacity(connections);
    for _ in 0..connections {
        let tcp = tokio::net::TcpStream::connect(addr)
            .await
            .unwrap_or_else(|e| fail(&format!("connect {addr}: {e}")));
        let _ = tcp.set_nodelay(true);
        let name = ServerName::try_from("localhost").expect("a valid name");
        let tls = connector
            .connect(name, tcp)
            .await
            .unwrap_or_else(|e| fail(&format!("TLS: {e}")));
        let (send, conn) = http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
            .await
            .unwrap_or_else(|e| fail(&format!("HTTP/2 handshake: {e}")));
        tokio::spawn(conn);
        senders.push(send);
    }
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for send in &senders {
        for _ in 0..streams {
            let (send, next, bodies) = (send.clone(), next.clone(), bodies.clone());
            tasks.push(tokio::spawn(stream(send, next, bodies)));
        }
    }
    let (mut errors, mut latencies) = (0, Vec::with_capacity(bodies.len()));
    for t in tasks {
        let (e, l) = t.await.unwrap_or_else(|e| fail(&format!("task: {e}")));
        errors += e;
        latencies.extend(l);
    }
    (errors, start.elapsed().as_secs_f64(), latencies)
}

/// One stream's loop: take the next body until none is left.
async fn stream(
    mut send: http2::SendRequest<Full<Bytes>>,
    next: Arc<AtomicUsize>,
    bodies: Arc<Vec<Bytes>>,
) -> (usize, Vec<Duration>) {
    let (mut errors, mut latencies) = (0, Vec::new());
    loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(body) = bodies.get(i) else {
            return (errors, latencies);
        };
        let req = hyper::Request::post("https://localhost/inject")
            .header("content-type", "application/json")
            .body(Full::new(body.clone()))
            .expect("a valid request");
        let t = Instant::now();
        let ok = async {
            send.ready().await.map_err(|e| e.to_string())?;
            let resp = send.send_request(req).await.map_err(|e| e.to_string())?;
            let status = resp.status();
            let body = resp
                .into_body()
                .collect()
                .await
                .map_err(|e| e.to_string())?
                .to_bytes();
            let has = |s: &[u8]| body.windows(s.len()).any(|w| w == s);
            if status == 200 && has(br#""allowed":true"#) && has(br#""patch":"#) {
                Ok(())
            } else {
                Err(format!(
                    "status {status}: {}",
                    String::from_utf8_lossy(&body[..body.len().min(300)])
                ))
            }
        }
        .await;
        latencies.push(t.elapsed());
        if let Err(e) = ok {
            if errors == 0 {
                eprintln!("distinct_load: request {i}: {e}");
            }
            errors += 1;
        }
    }
}
