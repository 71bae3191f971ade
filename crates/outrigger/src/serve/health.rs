//! `--health-port`: `/healthz` and `/readyz` over plain HTTP/1.1 on a port of their own, for
//! kubelet probes when the HTTPS port requires client certificates (`--clientCaFile`), which
//! probes cannot present. Nothing else is served there: every other path is `404`.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::watch;

use super::admit::{Admission, AdmitLimits};
use super::handler::{self, State};

/// Connections served at once, and from one source address: kubelet probes from the node's
/// address are never more than a few at a time, so an address holding its share cannot take the
/// kubelet's, and when all are taken a newcomer from an address holding fewer takes the place of
/// the oldest connection of the address holding the most ([`super::admit`]).
const MAX_CONNECTIONS: usize = 64;
const PER_ADDRESS: usize = 4;
/// Time allowed for a request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(2);
/// Time allowed for a whole connection.
const TIMEOUT: Duration = Duration::from_secs(5);

/// Serve the health endpoints on `listener` until `stop` turns true.
pub async fn serve(listener: TcpListener, state: Arc<State>, mut stop: watch::Receiver<bool>) {
    let pool = Admission::new(AdmitLimits {
        handshakes: MAX_CONNECTIONS,
        handshakes_per_address: PER_ADDRESS,
        connections: 0,
        connections_per_address: 0,
        trusted: Vec::new(),
        reserve: false,
    });
    loop {
        let accepted = tokio::select! {
            _ = stop.wait_for(|s| *s) => return,
            a = listener.accept() => a,
        };
        let Ok((tcp, peer)) = accepted else {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        };
        let Ok(ticket) = pool.handshake(peer.ip()) else {
            tracing::debug!(%peer, "health port: too many connections from this address; closed");
            continue;
        };
        let state = state.clone();
        tokio::spawn(async move {
            let svc = service_fn(move |req: Request<Incoming>| {
                let state = state.clone();
                async move {
                    match req.uri().path() {
                        "/healthz" | "/readyz" => handler::handle(state, req).await,
                        _ => Ok::<_, Infallible>(handler::text(
                            StatusCode::NOT_FOUND,
                            "404 page not found",
                        )),
                    }
                }
            });
            let mut b = hyper::server::conn::http1::Builder::new();
            b.timer(TokioTimer::new()).header_read_timeout(HEAD_TIMEOUT);
            let conn = b.serve_connection(TokioIo::new(tcp), svc);
            tokio::select! {
                _ = tokio::time::timeout(TIMEOUT, conn) => {}
                () = ticket.evict.wait() => {}
            }
        });
    }
}
