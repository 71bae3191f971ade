//! The HTTPS accept loop: bounded connections (with a reserve that keeps the health endpoints
//! answerable at the cap), each served by [`conn::serve`], and a graceful drain on shutdown.

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};
use tokio_rustls::TlsAcceptor;

use super::conn;
pub use super::conn::ConnOptions;
use super::handler::State;

/// Serve until `stop` turns true, then stop accepting and drain open connections: HTTP/1.1
/// connections close after the response in flight (idle ones at once, with TLS `close_notify`),
/// HTTP/2 connections get GOAWAY; whatever is still open after `opts.grace` is dropped.
pub async fn serve(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    state: Arc<State>,
    mut stop: watch::Receiver<bool>,
    opts: ConnOptions,
) {
    let slots = opts.max_connections.clamp(1, u32::MAX as usize);
    let reserve_slots = opts.health_reserve.min(u32::MAX as usize);
    let conns = Arc::new(Semaphore::new(slots));
    let reserve = Arc::new(Semaphore::new(reserve_slots));
    let (close_tx, close_rx) = watch::channel(false);
    loop {
        let accepted = tokio::select! {
            _ = stop.wait_for(|s| *s) => break,
            a = listener.accept() => a,
        };
        let (tcp, peer) = match accepted {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        let (permit, in_reserve) = match conns.clone().try_acquire_owned() {
            Ok(p) => (p, false),
            Err(_) => match reserve.clone().try_acquire_owned() {
                Ok(p) => {
                    tracing::warn!(%peer, max = opts.max_connections, "connection limit reached; this connection answers health checks only");
                    (p, true)
                }
                Err(_) => {
                    state.metrics.connections_rejected.inc();
                    tracing::warn!(%peer, max = opts.max_connections, reserve = opts.health_reserve, "connection limit reached; closing connection");
                    continue;
                }
            },
        };
        let acceptor = acceptor.clone();
        let state = state.clone();
        let close = close_rx.clone();
        tokio::spawn(async move {
            conn::serve(tcp, peer, acceptor, state, opts, close, in_reserve).await;
            drop(permit);
        });
    }
    drop(listener);
    let open = (slots - conns.available_permits()) + (reserve_slots - reserve.available_permits());
    tracing::info!(open, grace = ?opts.grace, "stopped accepting; draining connections");
    let _ = close_tx.send(true);
    // Every connection holds a slot until it ends.
    let all_closed = async {
        let _a = conns.acquire_many(slots as u32).await;
        if reserve_slots > 0 {
            let _b = reserve.acquire_many(reserve_slots as u32).await;
        }
    };
    match tokio::time::timeout(opts.grace, all_closed).await {
        Ok(()) => tracing::info!("all connections drained"),
        Err(_) => tracing::warn!("grace period over; closing remaining connections"),
    }
}
