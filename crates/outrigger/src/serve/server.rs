//! The HTTPS accept loop: TLS handshake with a deadline, HTTP/1.1 or HTTP/2 by ALPN, bounded
//! connections, graceful drain of in-flight requests on shutdown.

use std::sync::Arc;
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};
use tokio_rustls::TlsAcceptor;

use super::handler::{self, State};

/// Connection-level options.
#[derive(Debug, Clone, Copy)]
pub struct ConnOptions {
    /// Maximum open connections; further connections are closed at once.
    pub max_connections: usize,
    /// TLS handshake deadline.
    pub handshake_timeout: Duration,
    /// Time allowed for in-flight requests once shutdown starts.
    pub grace: Duration,
    /// HTTP/2 concurrent streams per connection.
    pub max_streams: u32,
}

/// Serve until `stop` turns true, then stop accepting and drain open connections.
pub async fn serve(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    state: Arc<State>,
    mut stop: watch::Receiver<bool>,
    opts: ConnOptions,
) {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(Duration::from_secs(30));
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(opts.max_streams);
    let graceful = GracefulShutdown::new();
    let conns = Arc::new(Semaphore::new(opts.max_connections));
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
        let Ok(permit) = conns.clone().try_acquire_owned() else {
            tracing::warn!(%peer, max = opts.max_connections, "connection limit reached; closing connection");
            continue;
        };
        let _ = tcp.set_nodelay(true);
        let acceptor = acceptor.clone();
        let state = state.clone();
        let builder = builder.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let tls = match tokio::time::timeout(opts.handshake_timeout, acceptor.accept(tcp)).await
            {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => {
                    tracing::debug!(%peer, "TLS handshake failed: {e}");
                    return;
                }
                Err(_) => {
                    tracing::debug!(%peer, "TLS handshake timed out");
                    return;
                }
            };
            let svc = service_fn(move |req| handler::handle(state.clone(), req));
            let conn = builder.serve_connection(TokioIo::new(tls), svc);
            if let Err(e) = watcher.watch(conn).await {
                tracing::debug!(%peer, "connection error: {e}");
            }
            drop(permit);
        });
    }
    drop(listener);
    tracing::info!(open = graceful.count(), grace = ?opts.grace, "stopped accepting; draining connections");
    match tokio::time::timeout(opts.grace, graceful.shutdown()).await {
        Ok(()) => tracing::info!("all connections drained"),
        Err(_) => tracing::warn!("grace period over; closing remaining connections"),
    }
}
