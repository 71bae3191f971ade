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
use tokio::sync::{watch, Semaphore};

use super::handler::{self, State};

/// Connections served at once (probes come one at a time); further ones wait to be accepted.
const MAX_CONNECTIONS: usize = 32;
/// Time allowed for a request head and for a whole connection.
const TIMEOUT: Duration = Duration::from_secs(10);

/// Serve the health endpoints on `listener` until `stop` turns true.
pub async fn serve(listener: TcpListener, state: Arc<State>, mut stop: watch::Receiver<bool>) {
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
            tokio::time::sleep(Duration::from_millis(20)).await;
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
            b.timer(TokioTimer::new()).header_read_timeout(TIMEOUT);
            let conn = b.serve_connection(TokioIo::new(tcp), svc);
            let _ = tokio::time::timeout(TIMEOUT, conn).await;
            drop(permit);
        });
    }
}
