//! `--metrics-port` (default 15014, istiod's monitoring port; `off` turns it off): `/metrics`
//! over plain HTTP/1.1 on a port of its own, for Prometheus to scrape without the webhook's
//! TLS. It answers the same exposition as `/metrics` on the HTTPS port (the same registry and
//! `Accept` negotiation); every other path is `404`.
//!
//! The listener cannot be crowded out by webhook traffic: it runs on a thread of its own with
//! its own single-threaded runtime (busy webhook workers do not delay a scrape), and has its
//! own connection slots and timeouts (the webhook's connection limit does not count it). One
//! request per connection, at most [`MAX_CONNECTIONS`] at once, each bounded by [`TIMEOUT`].

use std::convert::Infallible;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ACCEPT, CONTENT_TYPE};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};

use super::metrics::{Format, Metrics};

/// Connections served at once (a scraper or two); further ones wait to be accepted.
pub const MAX_CONNECTIONS: usize = 8;
/// Time allowed for a request head and for a whole connection.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// The value of `--metrics-port`: a port (`0`: any free one), or `None` for `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricsPort(pub Option<u16>);

/// Parse `--metrics-port`: a port number or `off`.
pub fn parse_port(s: &str) -> Result<MetricsPort, String> {
    if s.eq_ignore_ascii_case("off") {
        return Ok(MetricsPort(None));
    }
    s.parse::<u16>()
        .map(|p| MetricsPort(Some(p)))
        .map_err(|_| format!("{s:?} is neither a port number (0-65535) nor `off`"))
}

/// Listen on `address`:`port` as the webhook does ([`super::listen::bind`]), when on.
pub fn bind(address: IpAddr, port: MetricsPort) -> Result<Option<TcpListener>> {
    port.0
        .map(|p| super::listen::bind(address, p).context("--metrics-port"))
        .transpose()
}

/// Serve `/metrics` of `metrics` on `listener` from a thread of its own until `stop` turns
/// true. Logs the address it listens on.
pub fn spawn(
    listener: TcpListener,
    metrics: Arc<Metrics>,
    stop: watch::Receiver<bool>,
) -> Result<()> {
    let local = listener.local_addr().context("--metrics-port")?;
    // Moved to the thread's own runtime: deregistered from this one first.
    let std = listener.into_std().context("--metrics-port")?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the metrics listener's runtime")?;
    std::thread::Builder::new()
        .name("outrigger-metrics".into())
        .spawn(move || {
            rt.block_on(async move {
                match TcpListener::from_std(std) {
                    Ok(listener) => serve(listener, metrics, stop).await,
                    Err(e) => tracing::error!(error = %e, "metrics listener failed"),
                }
            });
        })
        .context("starting the metrics listener's thread")?;
    tracing::info!(address = %local, "metrics listening (plain HTTP: /metrics)");
    Ok(())
}

/// The answer to `path` with `Accept` header `accept`.
fn answer(metrics: &Metrics, path: &str, accept: Option<&HeaderValue>) -> Response<Full<Bytes>> {
    if path != "/metrics" {
        let mut r = Response::new(Full::new(Bytes::from_static(b"404 page not found\n")));
        *r.status_mut() = StatusCode::NOT_FOUND;
        r.headers_mut().insert(
            CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        return r;
    }
    let format = Format::negotiate(accept);
    let mut r = Response::new(Full::new(Bytes::from(metrics.encode_as(format))));
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static(format.content_type()),
    );
    r
}

/// Accept and serve connections on `listener` until `stop` turns true.
async fn serve(listener: TcpListener, metrics: Arc<Metrics>, mut stop: watch::Receiver<bool>) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok(permit) = slots.clone().acquire_owned().await else {
            return;
        };
        let accepted = tokio::select! {
            _ = stop.wait_for(|s| *s) => return,
            a = listener.accept() => a,
        };
        let Ok((tcp, _)) = accepted else {
            // Out of file descriptors or similar: let it pass rather than spin.
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        };
        let metrics = metrics.clone();
        tokio::spawn(async move {
            let svc = service_fn(move |req: Request<Incoming>| {
                let r = answer(&metrics, req.uri().path(), req.headers().get(ACCEPT));
                async move { Ok::<_, Infallible>(r) }
            });
            let mut b = hyper::server::conn::http1::Builder::new();
            b.timer(TokioTimer::new())
                .header_read_timeout(TIMEOUT)
                .keep_alive(false);
            let conn = b.serve_connection(TokioIo::new(tcp), svc);
            let _ = tokio::time::timeout(TIMEOUT, conn).await;
            drop(permit);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_takes_a_port_or_off() {
        assert_eq!(parse_port("15014"), Ok(MetricsPort(Some(15014))));
        assert_eq!(parse_port("0"), Ok(MetricsPort(Some(0))));
        assert_eq!(parse_port("off"), Ok(MetricsPort(None)));
        assert_eq!(parse_port("OFF"), Ok(MetricsPort(None)));
        let e = parse_port("70000").expect_err("out of range");
        assert!(e.contains("\"70000\"") && e.contains("`off`"), "{e}");
        assert!(parse_port("").is_err());
    }

    #[test]
    fn only_metrics_is_served_in_the_negotiated_format() {
        let m = Metrics::new();
        m.requests.inc();
        let r = answer(&m, "/metrics", None);
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.headers()[CONTENT_TYPE], Format::Prometheus.content_type());
        let om = HeaderValue::from_static("application/openmetrics-text;version=1.0.0");
        let r = answer(&m, "/metrics", Some(&om));
        assert_eq!(
            r.headers()[CONTENT_TYPE],
            Format::OpenMetrics.content_type()
        );
        for path in ["/", "/healthz", "/inject", "/metrics/"] {
            assert_eq!(answer(&m, path, None).status(), StatusCode::NOT_FOUND);
        }
    }
}
