//! The HTTPS accept loop: bounded connections (with a reserve that keeps the health endpoints
//! answerable at the cap), each served by [`conn::serve`], and a graceful drain on shutdown.

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};
use tokio_rustls::TlsAcceptor;

use super::admit::Admission;
use super::conn;
pub use super::conn::ConnOptions;
use super::handler::State;

/// Serve until `stop` turns true, then stop accepting and drain open connections: HTTP/1.1
/// connections close after the response in flight (idle ones at once, with TLS `close_notify`),
/// HTTP/2 connections get GOAWAY; whatever is still open after `opts.grace` is dropped.
/// Connections are admitted by `admission` ([`super::admit`]): those it refuses are closed at
/// once.
pub async fn serve(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    state: Arc<State>,
    mut stop: watch::Receiver<bool>,
    opts: ConnOptions,
    admission: Arc<Admission>,
) {
    let reserve_slots = opts.health_reserve.min(u32::MAX as usize);
    let reserve = Arc::new(Semaphore::new(reserve_slots));
    let pools = conn::Pools {
        admission: admission.clone(),
        health_reserve: reserve.clone(),
    };
    let (close_tx, close_rx) = watch::channel(false);
    let refusals = Throttle::default();
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
        let ticket = match admission.handshake(peer.ip()) {
            Ok(t) => t,
            Err(why) => {
                state.metrics.connections_rejected.inc();
                state.metrics.connection_closed(why.reason());
                refusals.warn(|n| {
                    tracing::warn!(%peer, reason = why.reason(), refused = n, "connection refused: too many connections in their TLS handshake (from this address, or in all)");
                });
                continue;
            }
        };
        let acceptor = acceptor.clone();
        let state = state.clone();
        let close = close_rx.clone();
        let pools = pools.clone();
        tokio::spawn(async move {
            let accepted = conn::Accepted { tcp, peer, ticket };
            conn::serve(accepted, acceptor, state, opts, close, pools).await;
        });
    }
    drop(listener);
    let open = admission.live() as usize + (reserve_slots - reserve.available_permits());
    tracing::info!(open, grace = ?opts.grace, "stopped accepting; draining connections");
    let _ = close_tx.send(true);
    // Every connection holds its ticket (and a reserve connection its permit) until it ends.
    let all_closed = async {
        admission.all_ended().await;
        if reserve_slots > 0 {
            let _b = reserve.acquire_many(reserve_slots as u32).await;
        }
    };
    match tokio::time::timeout(opts.grace, all_closed).await {
        Ok(()) => tracing::info!("all connections drained"),
        Err(_) => tracing::warn!("grace period over; closing remaining connections"),
    }
}

/// Logs a repeated event at most once every 10 s, with the count since the last log.
#[derive(Debug, Default)]
pub struct Throttle {
    last: std::sync::Mutex<Option<(tokio::time::Instant, u64)>>,
}

impl Throttle {
    /// Count one event; call `log` with the count when it is time to log.
    pub fn warn(&self, log: impl FnOnce(u64)) {
        let now = tokio::time::Instant::now();
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        match &mut *last {
            Some((at, n)) if now.duration_since(*at) < Duration::from_secs(10) => *n += 1,
            other => {
                let n = other.map_or(1, |(_, n)| n + 1);
                *other = Some((now, 0));
                drop(last);
                log(n);
            }
        }
    }
}
