//! One client connection: TLS handshake with a deadline, HTTP/1.1 or HTTP/2 by ALPN, and the
//! connection's timers — the header-read timeout (a request head must arrive in full within it,
//! the first one counted from the handshake), the idle timeout (no request in flight), and a
//! graceful close (HTTP/1.1: after the response in flight, TLS `close_notify`; HTTP/2: GOAWAY)
//! when the server shuts down.
//!
//! hyper's own HTTP/1.1 header-read timeout also runs while a keep-alive connection waits for its
//! next request, and ends the connection with an error (no `close_notify`); it is off here and
//! [`Activity`] tells the two waits apart instead.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONNECTION, RETRY_AFTER};
use hyper::service::service_fn;
use hyper::{Request, StatusCode, Version};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulConnection;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{watch, Notify, Semaphore};
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;

use super::admit::{Admission, Ticket};
use super::answer;
use super::body;
use super::budget::Account;
use super::handler::{self, State};
use super::metrics::Metrics;

/// Connection-level options.
#[derive(Debug, Clone, Copy)]
pub struct ConnOptions {
    /// Connections refused by the connection pool ([`super::admit`]) that are kept to answer
    /// only `/healthz` and `/readyz` (anything else gets `503`), one request each, so probes
    /// keep working at the cap.
    pub health_reserve: usize,
    /// TLS handshake deadline.
    pub handshake_timeout: Duration,
    /// Time allowed for a request head to arrive in full (and for the first one after the
    /// handshake).
    pub header_read_timeout: Duration,
    /// A connection with no request in flight for this long is closed gracefully.
    pub idle_timeout: Duration,
    /// An answer that makes no progress (HTTP/2 flow control at 0, or a socket the client does
    /// not read) for this long closes its connection, resetting its streams.
    pub write_timeout: Duration,
    /// Time allowed for in-flight requests once shutdown starts.
    pub grace: Duration,
    /// HTTP/2 settings.
    pub h2: Http2Limits,
}

/// HTTP/2 limits of every connection, set for admission reviews: few concurrent requests per
/// connection, small headers, bodies of at most a few MiB read as they arrive.
#[derive(Debug, Clone, Copy)]
pub struct Http2Limits {
    /// `SETTINGS_MAX_CONCURRENT_STREAMS`: requests in flight on one connection
    /// (`--max-concurrent-streams`).
    pub max_streams: u32,
    /// `SETTINGS_MAX_HEADER_LIST_SIZE` in bytes (an AdmissionReview request carries a few hundred).
    pub max_header_list: u32,
    /// Initial flow-control window of a stream: request bytes a client may send ahead of the
    /// server reading them.
    pub stream_window: u32,
    /// Initial flow-control window of the connection (all its streams together).
    pub connection_window: u32,
    /// PING interval (`--http2-keepalive-interval`; zero: none); a peer that does not answer
    /// within `keepalive_timeout` is disconnected.
    pub keepalive_interval: Duration,
    /// Time allowed for a PING acknowledgement.
    pub keepalive_timeout: Duration,
    /// Streams a client may open and reset before the server accepts them (the "rapid reset"
    /// bound); beyond it the connection is closed with GOAWAY.
    pub max_pending_accept_reset_streams: usize,
    /// Streams the server may reset for protocol errors before closing the connection.
    pub max_local_error_reset_streams: usize,
}

impl Http2Limits {
    /// The limits with `max_streams` concurrent streams and the given PING interval.
    pub fn new(max_streams: u32, keepalive_interval: Duration) -> Http2Limits {
        Http2Limits {
            max_streams: max_streams.max(1),
            max_header_list: 16 * 1024,
            stream_window: 1024 * 1024,
            connection_window: 2 * 1024 * 1024,
            keepalive_interval,
            keepalive_timeout: Duration::from_secs(10),
            max_pending_accept_reset_streams: 20,
            max_local_error_reset_streams: 256,
        }
    }

    fn apply<E>(&self, b: &mut hyper::server::conn::http2::Builder<E>) {
        b.timer(TokioTimer::new())
            .max_concurrent_streams(self.max_streams)
            .max_header_list_size(self.max_header_list)
            .initial_stream_window_size(self.stream_window)
            .initial_connection_window_size(self.connection_window)
            .max_pending_accept_reset_streams(self.max_pending_accept_reset_streams)
            .max_local_error_reset_streams(self.max_local_error_reset_streams);
        if !self.keepalive_interval.is_zero() {
            b.keep_alive_interval(self.keepalive_interval)
                .keep_alive_timeout(self.keepalive_timeout);
        }
    }

    fn apply_auto<E>(&self, b: &mut auto::Http2Builder<'_, E>) {
        b.timer(TokioTimer::new())
            .max_concurrent_streams(self.max_streams)
            .max_header_list_size(self.max_header_list)
            .initial_stream_window_size(self.stream_window)
            .initial_connection_window_size(self.connection_window)
            .max_pending_accept_reset_streams(self.max_pending_accept_reset_streams)
            .max_local_error_reset_streams(self.max_local_error_reset_streams);
        if !self.keepalive_interval.is_zero() {
            b.keep_alive_interval(self.keepalive_interval)
                .keep_alive_timeout(self.keepalive_timeout);
        }
    }
}

/// Request headers an HTTP/1.1 request may carry (hyper's default is 100).
const MAX_H1_HEADERS: usize = 64;

/// Who is calling, as the TLS handshake established it (a request extension).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caller {
    /// The client presented a certificate the server verified (`--clientCaFile`).
    pub authenticated: bool,
    /// The client's address.
    pub source: std::net::IpAddr,
}

/// What a connection is waiting for, for its timers.
#[derive(Debug, Clone, Copy)]
enum Phase {
    /// No request in flight since the instant.
    Idle(Instant),
    /// Bytes of a request head have arrived since the instant (HTTP/1.1).
    Head(Instant),
    /// Requests (or a refused body being discarded) in flight.
    Busy(usize),
}

/// Which timer fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Timeout {
    Header,
    Idle,
    Write,
}

/// The request activity of one connection, updated by its reads and its requests.
#[derive(Debug)]
pub struct Activity {
    phase: Mutex<Phase>,
    changed: Notify,
    /// HTTP/1.1: bytes arriving on an idle connection start a request head. Cleared when a
    /// connection without ALPN turns out to speak HTTP/2 (its idle reads are frames, not heads).
    track_heads: AtomicBool,
    /// The protocol is known (ALPN, or the first bytes seen).
    protocol_known: AtomicBool,
    /// Health-reserve connections close once idle after their first request.
    close_when_idle: AtomicBool,
    served: AtomicBool,
    /// Answers not yet handed over in full, by id: when each last made progress.
    answers: Mutex<HashMap<u64, Instant>>,
    /// Since when writes to the socket have been blocked (the client does not read).
    write_blocked: Mutex<Option<Instant>>,
    /// Set when the connection must end at once (an answer of it was preempted).
    killed: AtomicBool,
}

static NEXT_ANSWER: AtomicU64 = AtomicU64::new(1);

/// Marks its connection busy while it lives (a request being answered, or a refused body being
/// discarded).
#[derive(Debug)]
pub struct Busy(Arc<Activity>);

impl Activity {
    fn new(track_heads: bool, protocol_known: bool) -> Arc<Activity> {
        let now = Instant::now();
        Arc::new(Activity {
            // The first request head must arrive within the header-read timeout, as the next
            // ones do once their first byte is in.
            phase: Mutex::new(if track_heads {
                Phase::Head(now)
            } else {
                Phase::Idle(now)
            }),
            changed: Notify::new(),
            track_heads: AtomicBool::new(track_heads),
            protocol_known: AtomicBool::new(protocol_known),
            close_when_idle: AtomicBool::new(false),
            served: AtomicBool::new(false),
            answers: Mutex::new(HashMap::new()),
            write_blocked: Mutex::new(None),
            killed: AtomicBool::new(false),
        })
    }

    /// An HTTP/2-like activity (no request heads tracked), for tests of other modules.
    #[cfg(test)]
    pub fn for_test() -> Arc<Activity> {
        Activity::new(false, true)
    }

    /// Since when the connection has had no request in flight (a request head still arriving
    /// counts: no request is in flight yet); `None` while one is.
    pub fn idle_since(&self) -> Option<Instant> {
        match *self.phase.lock().unwrap_or_else(|e| e.into_inner()) {
            Phase::Idle(t) | Phase::Head(t) => Some(t),
            Phase::Busy(_) => None,
        }
    }

    /// An answer starts: until [`Activity::answer_done`], it must make progress within the
    /// write timeout. Called while the request's [`Busy`] guard is held: the connection's
    /// timers are computed again when it drops, with this answer's write deadline.
    pub fn answer_started(&self) -> u64 {
        let id = NEXT_ANSWER.fetch_add(1, Ordering::Relaxed);
        self.answers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, Instant::now());
        id
    }

    /// Answer `id` handed a chunk over.
    pub fn answer_progress(&self, id: u64) {
        if let Some(t) = self
            .answers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_mut(&id)
        {
            *t = Instant::now();
        }
    }

    /// Answer `id` was handed over in full (or abandoned).
    pub fn answer_done(&self, id: u64) {
        self.answers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
    }

    /// End the connection at once (its streams are reset).
    pub fn kill(&self) {
        self.killed.store(true, Ordering::Release);
        self.changed.notify_one();
    }

    /// Whether [`Activity::kill`] was called.
    pub fn is_killed(&self) -> bool {
        self.killed.load(Ordering::Acquire)
    }

    fn write_blocked(&self, blocked: bool) {
        let mut w = self.write_blocked.lock().unwrap_or_else(|e| e.into_inner());
        match (blocked, w.is_some()) {
            (true, false) => {
                *w = Some(Instant::now());
                drop(w);
                self.changed.notify_one();
            }
            (false, true) => *w = None,
            _ => {}
        }
    }

    /// Since when an answer or a socket write has made no progress.
    fn stalled_since(&self) -> Option<Instant> {
        let answers = self.answers.lock().unwrap_or_else(|e| e.into_inner());
        let oldest = answers.values().min().copied();
        drop(answers);
        let blocked = *self.write_blocked.lock().unwrap_or_else(|e| e.into_inner());
        match (oldest, blocked) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn update(&self, f: impl FnOnce(Phase) -> Phase) {
        let mut p = self.phase.lock().unwrap_or_else(|e| e.into_inner());
        *p = f(*p);
        drop(p);
        self.changed.notify_one();
    }

    /// Mark the connection busy until the returned guard drops.
    pub fn busy(self: &Arc<Self>) -> Busy {
        self.update(|p| match p {
            Phase::Busy(n) => Phase::Busy(n + 1),
            _ => Phase::Busy(1),
        });
        Busy(self.clone())
    }

    fn on_read(&self, data: &[u8]) {
        if !self.protocol_known.load(Ordering::Relaxed) {
            self.protocol_known.store(true, Ordering::Relaxed);
            if data.starts_with(b"PRI ") {
                self.track_heads.store(false, Ordering::Relaxed);
                self.update(|p| match p {
                    Phase::Head(_) => Phase::Idle(Instant::now()),
                    other => other,
                });
            }
        }
        if !self.track_heads.load(Ordering::Relaxed) {
            return;
        }
        let mut p = self.phase.lock().unwrap_or_else(|e| e.into_inner());
        if let Phase::Idle(_) = *p {
            *p = Phase::Head(Instant::now());
            drop(p);
            self.changed.notify_one();
        }
    }

    /// The next deadline, if the connection is waiting for one (`closing`: only the write
    /// deadline still applies).
    fn deadline(&self, opts: &ConnOptions, closing: bool) -> Option<(Instant, Timeout)> {
        let phase = *self.phase.lock().unwrap_or_else(|e| e.into_inner());
        let request = match phase {
            _ if closing => None,
            Phase::Busy(_) => None,
            Phase::Head(t) => Some((t + opts.header_read_timeout, Timeout::Header)),
            Phase::Idle(t)
                if self.close_when_idle.load(Ordering::Relaxed)
                    && self.served.load(Ordering::Relaxed) =>
            {
                Some((t, Timeout::Idle))
            }
            Phase::Idle(t) => Some((t + opts.idle_timeout, Timeout::Idle)),
        };
        let write = self
            .stalled_since()
            .map(|t| (t + opts.write_timeout, Timeout::Write));
        match (request, write) {
            (Some(r), Some(w)) => Some(if w.0 < r.0 { w } else { r }),
            (r, w) => r.or(w),
        }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.served.store(true, Ordering::Relaxed);
        self.0.update(|p| match p {
            Phase::Busy(n) if n > 1 => Phase::Busy(n - 1),
            _ => Phase::Idle(Instant::now()),
        });
    }
}

/// The TLS stream, reporting reads to the connection's [`Activity`].
struct Tracked<S> {
    inner: S,
    activity: Arc<Activity>,
}

impl<S: AsyncRead + Unpin> AsyncRead for Tracked<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.on_read(&buf.filled()[before..]);
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Tracked<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.activity.write_blocked(r.is_pending());
        r
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let r = Pin::new(&mut self.inner).poll_flush(cx);
        self.activity.write_blocked(r.is_pending());
        r
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.activity.write_blocked(r.is_pending());
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// Decrements the open-connections gauge when dropped.
struct Open(Arc<State>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.metrics.open_connections.dec();
    }
}

/// How a connection opens, told by its first byte before the TLS handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Opening {
    /// A TLS record (a ClientHello starts with the handshake content type 0x16), or anything
    /// else that is not plain HTTP: rustls answers it.
    Tls,
    /// An ASCII upper-case letter: the start of an HTTP method (`GET`, `POST`, …) sent in clear.
    PlainHttp,
}

/// Peek (without consuming) the connection's first byte.
async fn first_byte(tcp: &TcpStream) -> Opening {
    let mut b = [0u8; 1];
    match tcp.peek(&mut b).await {
        Ok(1) if b[0].is_ascii_uppercase() => Opening::PlainHttp,
        _ => Opening::Tls,
    }
}

/// The answer to a plain-HTTP request on the HTTPS port (Go's net/http answers such a request
/// with a 400 too, instead of a TLS alert the client cannot show).
pub const PLAIN_HTTP_ANSWER: &str =
    "outrigger serves HTTPS on this port; this was a plain HTTP request\n";

/// Answer a plain-HTTP client with `400 Bad Request` and close: its request head is read first
/// (up to 16 KiB, within `wait`) so that closing does not reset the connection before the client
/// reads the answer.
async fn answer_plain_http(mut tcp: TcpStream, wait: Duration) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let read_head = async {
        let mut head = Vec::with_capacity(1024);
        let mut buf = [0u8; 1024];
        while head.len() < 16 * 1024 && !head.windows(4).any(|w| w == b"\r\n\r\n") {
            match tcp.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
    };
    let _ = tokio::time::timeout(wait, read_head).await;
    let answer = format!(
        "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain; charset=utf-8\r\n\
         x-content-type-options: nosniff\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{}",
        PLAIN_HTTP_ANSWER.len(),
        PLAIN_HTTP_ANSWER
    );
    let write = async {
        tcp.write_all(answer.as_bytes()).await?;
        tcp.shutdown().await
    };
    if tokio::time::timeout(wait, write).await.is_ok() {
        // Let the client read the answer and close first (a body it still sends is discarded).
        let mut sink = [0u8; 1024];
        let drain = async { while matches!(tcp.read(&mut sink).await, Ok(n) if n > 0) {} };
        let _ = tokio::time::timeout(Duration::from_secs(1), drain).await;
    }
}

/// The pools a connection is admitted to ([`super::admit`]) and the health reserve.
#[derive(Debug, Clone)]
pub struct Pools {
    /// Handshake and connection pools.
    pub admission: Arc<Admission>,
    /// Connections kept beyond the connection pool to answer health checks only.
    pub health_reserve: Arc<Semaphore>,
}

/// A connection accepted into the handshake pool.
#[derive(Debug)]
pub struct Accepted {
    /// The socket.
    pub tcp: TcpStream,
    /// The client's address.
    pub peer: SocketAddr,
    /// Its place in the pools.
    pub ticket: Ticket,
}

/// Serve one accepted connection until it ends. `close` turns true when the server shuts down.
pub async fn serve(
    accepted: Accepted,
    acceptor: TlsAcceptor,
    state: Arc<State>,
    opts: ConnOptions,
    mut close: watch::Receiver<bool>,
    pools: Pools,
) {
    let Accepted { tcp, peer, ticket } = accepted;
    state.metrics.open_connections.inc();
    let _open = Open(state.clone());
    let metrics = state.metrics.clone();
    let _ = tcp.set_nodelay(true);
    let handshake = async {
        match first_byte(&tcp).await {
            Opening::PlainHttp => Err(tcp),
            Opening::Tls => Ok(acceptor.accept(tcp).await),
        }
    };
    let handshake = tokio::time::timeout(opts.handshake_timeout, handshake);
    let done = tokio::select! {
        r = handshake => r,
        () = ticket.evict.wait() => {
            state.metrics.connection_closed("handshake_evicted");
            tracing::debug!(%peer, "TLS handshake abandoned: its slot went to another address");
            return;
        }
    };
    let tls = match done {
        Ok(Ok(Ok(s))) => s,
        Ok(Err(tcp)) => {
            state.metrics.connection_closed("plain_http");
            tracing::warn!(%peer, status = 400, "plain HTTP request on the HTTPS port; answered 400");
            answer_plain_http(tcp, opts.handshake_timeout).await;
            return;
        }
        Ok(Ok(Err(e))) => {
            let rustls_error = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>());
            if matches!(
                rustls_error,
                Some(rustls::Error::NoCertificatesPresented | rustls::Error::InvalidCertificate(_))
            ) {
                state.metrics.connection_closed("client_certificate");
                tracing::warn!(%peer, "TLS handshake refused: client certificate: {e}");
            } else {
                tracing::debug!(%peer, "TLS handshake failed: {e}");
            }
            return;
        }
        Err(_) => {
            state.metrics.connection_closed("handshake_timeout");
            tracing::debug!(%peer, "TLS handshake timed out");
            return;
        }
    };
    let alpn = tls.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
    let caller = Caller {
        authenticated: tls
            .get_ref()
            .1
            .peer_certificates()
            .is_some_and(|c| !c.is_empty()),
        source: peer.ip().to_canonical(),
    };
    let h2 = alpn.as_deref() == Some(b"h2");
    let known = matches!(alpn.as_deref(), Some(b"h2" | b"http/1.1"));
    let activity = Activity::new(!h2, known);
    let mut _reserve_permit = None;
    let reserve = match pools
        .admission
        .open(&ticket, caller.authenticated, activity.clone())
    {
        Ok(()) => false,
        Err(why) => match pools.health_reserve.clone().try_acquire_owned() {
            Ok(p) => {
                _reserve_permit = Some(p);
                activity.close_when_idle.store(true, Ordering::Relaxed);
                tracing::debug!(%peer, reason = why.reason(), "connection limit reached; this connection answers health checks only");
                true
            }
            Err(_) => {
                state.metrics.connections_rejected.inc();
                state.metrics.connection_closed(why.reason());
                tracing::debug!(%peer, reason = why.reason(), "connection limit reached; closing connection");
                return;
            }
        },
    };
    let io = TokioIo::new(Tracked {
        inner: tls,
        activity: activity.clone(),
    });
    let act = activity.clone();
    // The connection's account in the byte budget, shared by its requests (HTTP/2 streams).
    let account = Account::new();
    let svc = service_fn(move |mut req: Request<Incoming>| {
        let busy = act.busy();
        req.extensions_mut().insert(act.clone());
        req.extensions_mut().insert(account.clone());
        req.extensions_mut().insert(caller);
        let state = state.clone();
        let (activity, account) = (act.clone(), account.clone());
        async move {
            let resp = if reserve {
                reserved(state.clone(), req).await
            } else {
                handler::handle(state.clone(), req).await
            };
            let resp = resp.map(|r| {
                let (r, refused) = answer::hold(r, &state.budget, &account, &activity);
                if let Some(reason) = refused {
                    state.metrics.reject(reason);
                    tracing::warn!(
                        reason,
                        status = 429,
                        "an answer did not fit in the memory budget; answered 429"
                    );
                }
                r
            });
            drop(busy);
            resp
        }
    });
    match alpn.as_deref() {
        Some(b"h2") => {
            let mut b = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
            opts.h2.apply(&mut b);
            drive(
                b.serve_connection(io, svc),
                &activity,
                &opts,
                &mut close,
                &metrics,
                peer,
                &ticket.evict,
            )
            .await;
        }
        Some(b"http/1.1") => {
            let mut b = hyper::server::conn::http1::Builder::new();
            b.timer(TokioTimer::new())
                .header_read_timeout(None)
                .max_headers(MAX_H1_HEADERS);
            drive(
                b.serve_connection(io, svc),
                &activity,
                &opts,
                &mut close,
                &metrics,
                peer,
                &ticket.evict,
            )
            .await;
        }
        _ => {
            // No ALPN: HTTP/1.1, or HTTP/2 with prior knowledge, told apart by the preface.
            let mut b = auto::Builder::new(TokioExecutor::new());
            b.http1()
                .timer(TokioTimer::new())
                .header_read_timeout(None)
                .max_headers(MAX_H1_HEADERS);
            opts.h2.apply_auto(&mut b.http2());
            drive(
                b.serve_connection(io, svc),
                &activity,
                &opts,
                &mut close,
                &metrics,
                peer,
                &ticket.evict,
            )
            .await;
        }
    }
}

/// Answer a request on a health-reserve connection: `/healthz` and `/readyz` as usual, anything
/// else `503` with `Retry-After`; HTTP/1.1 answers carry `Connection: close`.
async fn reserved(
    state: Arc<State>,
    req: Request<Incoming>,
) -> Result<handler::Resp, std::convert::Infallible> {
    let h1 = req.version() < Version::HTTP_2;
    let mut resp = match req.uri().path() {
        "/healthz" | "/readyz" => handler::handle(state, req).await?,
        _ => {
            state.metrics.reject("connection_limit");
            tracing::warn!(path = %req.uri().path(), "connection limit reached; refusing a request on a health-reserve connection");
            let busy = req.extensions().get::<Arc<Activity>>().map(Activity::busy);
            let limit = 2 * state.limits.max_body as u64;
            if body::should_discard(req.version(), req.headers(), limit) {
                body::discard(
                    Box::pin(req.into_body()),
                    limit,
                    state.limits.deadline,
                    busy,
                );
            }
            let mut r = handler::text(
                StatusCode::SERVICE_UNAVAILABLE,
                "connection limit reached; retry later",
            );
            r.headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from_static("1"));
            r
        }
    };
    if h1 {
        resp.headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("close"));
    }
    Ok(resp)
}

/// Run a connection to its end: closed gracefully when idle too long or when the server shuts
/// down, dropped when a request head is not in within the header-read timeout.
async fn drive<C>(
    conn: C,
    activity: &Activity,
    opts: &ConnOptions,
    close: &mut watch::Receiver<bool>,
    metrics: &Metrics,
    peer: SocketAddr,
    evict: &super::admit::Evict,
) where
    C: GracefulConnection,
    C::Error: std::fmt::Display,
{
    let mut conn = std::pin::pin!(conn);
    let mut closing = false;
    let mut watch_close = true;
    if *close.borrow_and_update() {
        conn.as_mut().graceful_shutdown();
        closing = true;
    }
    let mut watch_evict = true;
    // A connection closed for idleness or to make room has no request in flight: its graceful
    // close ends at once unless an answer is stuck past what the answer watch sees (a last chunk
    // in HTTP/2's buffer), so it gets the write timeout, then it is dropped.
    let mut give_up: Option<Instant> = None;
    // One timer for the connection's life, moved only when its deadline changes (requests change
    // the activity several times each; a timer made anew each time costs every request).
    let mut timer = std::pin::pin!(tokio::time::sleep_until(Instant::now()));
    let mut armed: Option<Instant> = None;
    loop {
        if activity.is_killed() {
            tracing::debug!(%peer, "an answer's bytes were preempted; closing the connection");
            metrics.connection_closed("answer_preempted");
            return;
        }
        let deadline = match (activity.deadline(opts, closing), give_up) {
            (Some(d), Some(g)) if g < d.0 => Some((g, Timeout::Write)),
            (None, Some(g)) => Some((g, Timeout::Write)),
            (d, _) => d,
        };
        let at = deadline.map(|(at, _)| at);
        if let Some(at) = at.filter(|at| armed != Some(*at)) {
            timer.as_mut().reset(at);
        }
        armed = at;
        tokio::select! {
            res = conn.as_mut() => {
                if let Err(e) = res {
                    tracing::debug!(%peer, "connection error: {e}");
                }
                return;
            }
            changed = close.changed(), if watch_close => {
                watch_close = false;
                if (changed.is_err() || *close.borrow()) && !closing {
                    conn.as_mut().graceful_shutdown();
                    closing = true;
                }
            }
            () = evict.wait(), if watch_evict => {
                watch_evict = false;
                if !closing {
                    tracing::debug!(%peer, "closing an idle connection to make room for a new one");
                    metrics.connection_closed("evicted_idle");
                    conn.as_mut().graceful_shutdown();
                    closing = true;
                    give_up = Some(Instant::now() + opts.write_timeout);
                }
            }
            () = activity.changed.notified() => {}
            () = timer.as_mut(), if armed.is_some() => {
                // The phase may have moved on since the deadline was computed.
                let now = Instant::now();
                if give_up.is_some_and(|g| g <= now) {
                    tracing::debug!(%peer, "a closing connection did not end in time; dropping it");
                    metrics.connection_closed("write_timeout");
                    return;
                }
                let Some((at, kind)) = activity.deadline(opts, closing) else { continue };
                if at > now {
                    continue;
                }
                match kind {
                    Timeout::Write => {
                        tracing::debug!(%peer, timeout = ?opts.write_timeout, "an answer made no progress in time; closing the connection");
                        metrics.connection_closed("write_timeout");
                        return;
                    }
                    Timeout::Idle => {
                        if !activity.close_when_idle.load(Ordering::Relaxed) {
                            tracing::debug!(%peer, "closing an idle connection");
                            metrics.connection_closed("idle_timeout");
                        }
                        conn.as_mut().graceful_shutdown();
                        closing = true;
                        give_up = Some(Instant::now() + opts.write_timeout);
                    }
                    Timeout::Header => {
                        tracing::debug!(%peer, "request head not received in time; closing the connection");
                        metrics.connection_closed("header_timeout");
                        return;
                    }
                }
            }
        }
    }
}
