//! HTTP routing and the admission handler: limits, `Content-Type`, metrics and logs around
//! [`outrigger_inject::webhook::review`].

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use bytes::Bytes;
use hyper::body::Body;
use hyper::header::{
    HeaderValue, ACCEPT, CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, LOCATION, RETRY_AFTER,
};
use hyper::{Request, Response, StatusCode, Version};
use outrigger_go::work::Budget;
use outrigger_inject::config::Snapshot;
use outrigger_inject::decide::native::{ClusterFacts, NativeMode};
use outrigger_inject::webhook::{self, Outcome};
use serde_json::{Map, Value};
use tokio::sync::Semaphore;

use super::answer::Answer;
use super::body::{self, BodyError, BodyLimits};
use super::budget::{Account, ByteBudget, Refusal};
use super::cluster::{EventSink, InjectionEvent, SharedFacts};
use super::conn::{Activity, Caller};
use super::metrics::Metrics;
use super::tls::CertStore;
use crate::kube::events::Outcome as EventOutcome;

/// Bodies larger than this take one of the large-review slots ([`ByteBudget::large_slot`]);
/// smaller ones one of the review slots ([`State::review_slots`]). Either way the review runs
/// on the blocking pool, unless it is short ([`QUICK_BODY_LIMIT`]).
///
/// [`ByteBudget::large_slot`]: super::budget::ByteBudget::large_slot
const INLINE_BODY_LIMIT: usize = 128 * 1024;

/// Reviews of bodies up to this size are tried first on the connection's worker thread, within
/// [`QUICK_WORK`]: handing a review to the blocking pool and its answer back (two thread
/// wake-ups) cost more CPU than the whole review of a plain pod.
const QUICK_BODY_LIMIT: usize = 16 * 1024;

/// The work ([`outrigger_go::work`]: template steps, list elements built, copied and merged) a
/// review tried on the worker may count before it is stopped and run again from the start on
/// the blocking pool: tens of times what Istio's templates take for a plain pod (a few hundred),
/// so a worker is held for a bounded, small time; a work bound, so which reviews move does not
/// depend on the machine's load.
const QUICK_WORK: u64 = 20_000;

/// The time a review tried on the worker may take before it is stopped and run again on the
/// blocking pool, besides [`QUICK_WORK`]: it bounds a review whose templates' steps are each
/// slow (loops that count little work), checked as the work is (every
/// [`outrigger_go::work::Meter::EVERY`] steps). Tens of times a plain pod's first render.
const QUICK_TIME: Duration = Duration::from_millis(5);

/// After refusing a body early (413, 429), up to this many times `--max-request-bytes` of it is
/// read and discarded so that an HTTP/1.1 client still sending it reads the answer.
const DISCARD_FACTOR: u64 = 2;

/// Request limits.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Maximum request body in bytes (413 beyond).
    pub max_body: usize,
    /// First-byte deadline and minimum rate of request bodies.
    pub body: BodyLimits,
    /// Deadline for one admission request, from arrival to response.
    pub deadline: Duration,
}

/// Annotations of Namespace objects, by namespace name.
pub type NamespaceAnnotations = BTreeMap<String, Map<String, Value>>;

/// Process-wide injection settings.
#[derive(Debug, Clone)]
pub struct InjectSettings {
    /// Native sidecar mode.
    pub native_mode: NativeMode,
    /// `PLATFORM=openshift`.
    pub openshift: bool,
    /// `COMPLIANCE_POLICY`.
    pub compliance_policy: String,
    /// The revision served (`--revision`): `.Revision` and the status annotation's `revision`.
    pub revision: String,
    /// Static Namespace annotations (`--namespace-annotations`), by namespace.
    pub namespaces: Option<BTreeMap<String, Map<String, Value>>>,
    /// `--max-list-entries` ([`webhook::Context::max_list_entries`]).
    pub max_list_entries: usize,
}

/// Everything a request needs, shared by all connections.
#[derive(Debug)]
pub struct State {
    /// The configuration in force (swapped on reload).
    pub snapshot: ArcSwap<Snapshot>,
    /// The serving certificate.
    pub certs: Arc<CertStore>,
    /// Metrics.
    pub metrics: Arc<Metrics>,
    /// Limits.
    pub limits: Limits,
    /// Injection settings.
    pub inject: InjectSettings,
    /// Bounds the admission requests processed at once.
    pub permits: Semaphore,
    /// Bounds the reviews of bodies up to `INLINE_BODY_LIMIT` running at once on the
    /// blocking pool (`--max-concurrency`: they share the CPUs, so a review stopped only by its
    /// deadline never holds up the others; larger ones take the byte budget's large slots).
    pub review_slots: Arc<Semaphore>,
    /// Reviews answered on a worker thread at once ([`QUICK_BODY_LIMIT`]): as many as the
    /// worker threads, each stopped at [`QUICK_WORK`] or [`QUICK_TIME`] and run again on the
    /// blocking pool, so a worker is never held long; with none free, a review goes to the
    /// blocking pool.
    pub quick_reviews: Semaphore,
    /// Bounds the request body bytes held at once (`--max-inflight-bytes`).
    pub budget: ByteBudget,
    /// Set on SIGTERM: `/readyz` fails while requests are still served.
    pub draining: AtomicBool,
    /// Cached cluster facts (`serve --kube`).
    pub cluster: Option<Arc<SharedFacts>>,
    /// Event recording (`serve --kube --events`).
    pub events: Option<Arc<dyn EventSink>>,
    /// Whether the configuration in force can inject pods (readiness, reload guard).
    pub config_health: super::failsafe::ConfigHealth,
    /// Whether the API server trusts the served certificate (`serve --kube`).
    pub trust: super::trust::Trust,
}

/// The response type of every route.
pub type Resp = Response<Answer>;

/// Route a request.
pub async fn handle<B>(state: Arc<State>, req: Request<B>) -> Result<Resp, Infallible>
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let version = req.version();
    // Go's ServeMux routes and cleans the decoded path.
    let raw_path = percent_decode(req.uri().path());
    if let Some(clean) = clean_path(&raw_path) {
        let mut r = text(StatusCode::MOVED_PERMANENTLY, "Moved Permanently");
        if let Ok(v) = HeaderValue::from_str(&clean) {
            r.headers_mut().insert(LOCATION, v);
        }
        return Ok(r);
    }
    let resp = match raw_path.as_str() {
        "/inject" => {
            return Ok(close_if_draining(
                &state,
                version,
                inject(&state, req).await,
            ))
        }
        p if p.starts_with("/inject/") => {
            return Ok(close_if_draining(
                &state,
                version,
                inject(&state, req).await,
            ))
        }
        "/healthz" => text(StatusCode::OK, "ok"),
        "/readyz" => readyz(&state),
        "/metrics" => {
            let format = super::metrics::Format::negotiate(req.headers().get(ACCEPT));
            let mut r = Response::new(Answer::from(state.metrics.encode_as(format)));
            r.headers_mut().insert(
                CONTENT_TYPE,
                HeaderValue::from_static(format.content_type()),
            );
            r
        }
        path => {
            // A client mistake (a wrong URL in the webhook configuration or a probe).
            tracing::warn!(path, method = %req.method(), status = 404, "no such route");
            text(StatusCode::NOT_FOUND, "404 page not found")
        }
    };
    if version >= Version::HTTP_2 && !req.body().is_end_stream() {
        let limit = 2 * state.limits.max_body as u64;
        drain_unused(req.into_body(), limit, state.limits.deadline).await;
    }
    Ok(close_if_draining(&state, version, resp))
}

/// HTTP/2: read to its end (at most `limit` bytes within `time`) a request body the route does
/// not use, so that the answer ends the stream as over HTTP/1.1; answering while the client is
/// still sending ends in a reset stream, which clients report as a failed request (curl:
/// "stream was not closed cleanly") instead of the 404 or health answer.
async fn drain_unused<B>(body: B, limit: u64, time: Duration)
where
    B: Body<Data = Bytes>,
{
    use http_body_util::BodyExt;
    let mut body = std::pin::pin!(body);
    let mut seen = 0u64;
    let _ = tokio::time::timeout(time, async {
        while let Some(Ok(frame)) = body.frame().await {
            seen += frame.data_ref().map_or(0, |d| d.len() as u64);
            if seen > limit {
                break;
            }
        }
    })
    .await;
}

/// While draining, HTTP/1.1 clients are told to close after this response instead of finding
/// their kept-alive connection closed when the listener goes.
fn close_if_draining(state: &State, version: Version, resp: Resp) -> Resp {
    let mut resp = resp;
    if version < Version::HTTP_2 && state.draining.load(Ordering::Relaxed) {
        resp.headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("close"));
    }
    resp
}

/// Why the server is not ready (`None`: it is): what `/readyz` answers.
pub fn not_ready(state: &State) -> Option<String> {
    if state.draining.load(Ordering::Relaxed) {
        Some("shutting down".into())
    } else if !state.certs.valid_now() {
        Some("serving certificate expired".into())
    } else {
        state
            .trust
            .not_ready()
            .or_else(|| state.config_health.not_ready())
    }
}

fn readyz(state: &State) -> Resp {
    match not_ready(state) {
        Some(why) => text(StatusCode::SERVICE_UNAVAILABLE, &why),
        None => text(StatusCode::OK, "ok"),
    }
}

/// A plain-text response in Go's `http.Error` convention (message + newline, `nosniff`).
pub fn text(status: StatusCode, msg: &str) -> Resp {
    let mut r = Response::new(Answer::from(format!("{msg}\n")));
    *r.status_mut() = status;
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r.headers_mut().insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    r
}

/// Decrements the in-flight gauge when dropped.
struct Inflight<'a>(&'a Metrics);

impl Drop for Inflight<'_> {
    fn drop(&mut self) {
        self.0.inflight.dec();
    }
}

async fn inject<B>(state: &Arc<State>, req: Request<B>) -> Resp
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let start = Instant::now();
    let m = &state.metrics;
    m.requests.inc();
    if let Some(why) = state.config_health.pending() {
        // No configuration was read from the cluster yet: an error, so that the API server
        // applies the webhook's failurePolicy, never a pod silently left uninjected.
        m.fail("config_pending");
        return text(StatusCode::SERVICE_UNAVAILABLE, &why);
    }
    let resp =
        match tokio::time::timeout(state.limits.deadline, inject_inner(state, req, start)).await {
            Ok(r) => r,
            Err(_) => deadline_exceeded(state, None),
        };
    m.time.observe(start.elapsed().as_secs_f64());
    resp
}

/// The answer to a request past its deadline (`reviewed`: what its review, stopped by its work
/// budget, had learnt): 504, counted and logged.
fn deadline_exceeded(state: &State, reviewed: Option<&webhook::Reviewed>) -> Resp {
    let deadline = state.limits.deadline;
    state.metrics.fail("deadline_exceeded");
    match reviewed {
        Some(r) => {
            let stage = match &r.outcome {
                Outcome::Failed(f) => f.reason,
                _ => "",
            };
            tracing::error!(uid = %r.uid, namespace = %r.namespace, pod = %r.pod_name, ?deadline, stage,
                "request deadline exceeded: the review was stopped at its deadline")
        }
        None => tracing::error!(?deadline, "request deadline exceeded"),
    }
    text(
        StatusCode::GATEWAY_TIMEOUT,
        &format!("request deadline of {deadline:?} exceeded"),
    )
}

/// Cancels a review's work budget when the request is given up (dropped).
struct CancelOnDrop(Arc<Budget>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// Count and log a refused request: client mistakes (4xx: bad body, too large, wrong content
/// type, over the in-flight budget) at `warn`, server faults (5xx) at `error`.
fn http_error(m: &Metrics, status: StatusCode, reason: &str, msg: &str) -> Resp {
    m.fail(reason);
    log_refusal(status, reason, msg);
    text(status, msg)
}

/// Log a refused request at the level its status calls for (see [`http_error`]).
fn log_refusal(status: StatusCode, reason: &str, msg: &str) {
    if status.is_client_error() {
        tracing::warn!(reason, status = status.as_u16(), "{msg}");
    } else {
        tracing::error!(reason, status = status.as_u16(), "{msg}");
    }
}

async fn inject_inner<B>(state: &Arc<State>, req: Request<B>, start: Instant) -> Resp
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let m = &state.metrics;
    let max = state.limits.max_body;
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let discard_limit = DISCARD_FACTOR * max as u64;
    let discard = body::should_discard(req.version(), req.headers(), discard_limit);
    let h1 = req.version() < Version::HTTP_2;
    let activity = req.extensions().get::<Arc<Activity>>().cloned();
    let caller = req.extensions().get::<Caller>().copied().unwrap_or(Caller {
        authenticated: false,
        source: std::net::Ipv6Addr::UNSPECIFIED.into(),
    });
    let path = percent_decode(req.uri().path());
    let json_type = req
        .headers()
        .get(CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes() == b"application/json");
    let content_type = req
        .headers()
        .get(CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let account = req
        .extensions()
        .get::<Arc<Account>>()
        .cloned()
        .unwrap_or_else(Account::new);
    let mut incoming = Box::pin(req.into_body());
    let read = body::read(
        &mut incoming,
        declared,
        &state.limits.body,
        &state.budget,
        &account,
    )
    .await;
    let (body, charge) = match read {
        Ok(b) => b,
        Err(e @ BodyError::Read(_)) => {
            return http_error(m, StatusCode::BAD_REQUEST, e.reason(), &e.to_string())
        }
        Err(e) => {
            let reason = e.reason();
            let (status, discard) = match &e {
                BodyError::TooLarge(_) => (StatusCode::PAYLOAD_TOO_LARGE, discard),
                // A preempted body is arriving slowly: not worth reading on.
                BodyError::Refused(Refusal::Preempted(_)) => (StatusCode::TOO_MANY_REQUESTS, false),
                BodyError::Refused(_) => (StatusCode::TOO_MANY_REQUESTS, discard),
                _ => (StatusCode::REQUEST_TIMEOUT, false),
            };
            if status != StatusCode::PAYLOAD_TOO_LARGE {
                m.reject(reason);
            }
            let mut r = http_error(m, status, reason, &e.to_string());
            if status == StatusCode::TOO_MANY_REQUESTS {
                r.headers_mut()
                    .insert(RETRY_AFTER, HeaderValue::from_static("1"));
            }
            // The client may still be sending: HTTP/1.1 reads the rest of the body (within
            // bounds) while the answer goes out, then closes, so the client sees the answer.
            // A body cut for its pace is not read on: the connection closes after the answer.
            if h1 {
                r.headers_mut()
                    .insert(CONNECTION, HeaderValue::from_static("close"));
            }
            if discard {
                let busy = activity.as_ref().map(Activity::busy);
                body::discard(incoming, discard_limit, state.limits.deadline, busy);
            }
            return r;
        }
    };
    drop(incoming);
    // The review's own time (logged as `review_us`): from the body in full to the answer.
    let received = Instant::now();
    if body.is_empty() {
        return http_error(m, StatusCode::BAD_REQUEST, "empty_body", "no body found");
    }
    if !json_type {
        m.fail("content_type");
        log_refusal(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "content_type",
            &format!(
                "contentType={}, expect application/json",
                content_type.unwrap_or_default()
            ),
        );
        return text(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "invalid Content-Type, want `application/json`",
        );
    }
    let Ok(_permit) = state.permits.acquire().await else {
        return http_error(
            m,
            StatusCode::SERVICE_UNAVAILABLE,
            "shutting_down",
            "server is shutting down",
        );
    };
    m.inflight.inc();
    let _inflight = Inflight(m);
    let slot = if body.len() > INLINE_BODY_LIMIT {
        state.budget.large_slot().await
    } else {
        match state.review_slots.clone().acquire_owned().await {
            Ok(p) => p,
            Err(_) => {
                return http_error(
                    m,
                    StatusCode::SERVICE_UNAVAILABLE,
                    "shutting_down",
                    "server is shutting down",
                )
            }
        }
    };
    // The review's work budget ends at the request's deadline, or when this request is given
    // up (the deadline's timeout or the client gone drops this future): the review checks it
    // as it goes and stops, so its slot is free again by then.
    let deadline = start + state.limits.deadline;
    let work = Budget::new(Some(deadline));
    let _cancel = CancelOnDrop(work.clone());
    // A short review is answered here, on the worker; one that outgrows QUICK_WORK or
    // QUICK_TIME (the outcome of a review stopped by its budget is discarded) runs again on the
    // blocking pool.
    let quick_slot = (body.len() <= QUICK_BODY_LIMIT)
        .then(|| state.quick_reviews.try_acquire().ok())
        .flatten();
    let quick = quick_slot.map(|_held| {
        let quick_deadline = deadline.min(Instant::now() + QUICK_TIME);
        let budget = Budget::with_work_limit(Some(quick_deadline), QUICK_WORK);
        let r = outrigger_go::work::scope(&budget, || run_review(state, &body, &path));
        (r, budget.is_exhausted())
    });
    let quick = match quick {
        Some((r, false)) => Some(r),
        Some((r, true)) if matches!(r.outcome, Outcome::Injected | Outcome::Skipped(_)) => Some(r),
        Some((r, true)) if work.is_exhausted() => return deadline_exceeded(state, Some(&r)),
        _ => None,
    };
    let mut reviewed = if let Some(r) = quick {
        drop((charge, slot));
        r
    } else {
        let st = state.clone();
        let p = path.clone();
        let w = work.clone();
        // The body's charge and the slot go with the work: they are released when it ends.
        let review = move || {
            let _held = (charge, slot);
            outrigger_go::work::scope(&w, || run_review(&st, &body, &p))
        };
        match tokio::task::spawn_blocking(review).await {
            Ok(r) => r,
            Err(e) => {
                let msg = format!("admission task failed: {e}");
                return http_error(m, StatusCode::INTERNAL_SERVER_ERROR, "internal_error", &msg);
            }
        }
    };
    if work.is_exhausted() && !matches!(reviewed.outcome, Outcome::Injected | Outcome::Skipped(_)) {
        // Cut short at the deadline: an error, so that the API server applies the webhook's
        // failurePolicy, as for any request past its deadline.
        return deadline_exceeded(state, Some(&reviewed));
    }
    // A dry run must have no side effect (the webhook declares `sideEffects: None`).
    if let (Some(sink), false) = (&state.events, reviewed.dry_run) {
        if let Some(e) = injection_event(&mut reviewed, caller) {
            sink.record(e);
        }
    }
    respond(state, reviewed, &path, start, received)
}

/// The Event for a reviewed pod (none for malformed reviews, nor without a pod object: there
/// is nothing to point at); `caller`: who asked (only authenticated callers' Events are
/// written).
fn injection_event(r: &mut webhook::Reviewed, caller: Caller) -> Option<InjectionEvent> {
    let (outcome, code, message) = match &r.outcome {
        Outcome::Injected => (EventOutcome::Injected, "injected", r.decision.clone()),
        Outcome::Skipped(reason) => (EventOutcome::Skipped, reason.code(), r.decision.clone()),
        Outcome::Failed(f) if f.malformed => return None,
        Outcome::Failed(f) => (EventOutcome::Failed, f.reason, f.message.clone()),
    };
    let metadata = r.pod_metadata.take()?;
    let namespace = if r.namespace.is_empty() {
        metadata
            .get("namespace")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    } else {
        r.namespace.clone()
    };
    let mut pod = Map::new();
    pod.insert("metadata".into(), Value::Object(metadata));
    Some(InjectionEvent {
        pod: Value::Object(pod),
        namespace,
        outcome,
        code: code.to_string(),
        message,
        authenticated: caller.authenticated,
        source: caller.source,
    })
}

/// The cluster as one request sees it: the caches (`serve --kube`), then the static
/// `--namespace-annotations` for namespaces the cache does not know.
#[derive(Debug)]
struct RequestFacts<'a> {
    cluster: Option<&'a SharedFacts>,
    namespaces: Option<&'a NamespaceAnnotations>,
}

impl ClusterFacts for RequestFacts<'_> {
    fn has_nodes(&self) -> bool {
        self.cluster.is_some_and(|c| c.has_nodes())
    }

    fn kubelet_version(&self, name: &str) -> Option<String> {
        self.cluster?.kubelet_version(name)
    }

    fn all_nodes_native(&self, warnings: &mut Vec<String>) -> bool {
        self.cluster.is_none_or(|c| c.all_nodes_native(warnings))
    }

    fn namespace_annotations(&self, name: &str) -> Option<Map<String, Value>> {
        self.cluster
            .and_then(|c| c.namespace_annotations(name))
            .or_else(|| self.namespaces?.get(name).cloned())
    }
}

/// Run the pure admission logic on the current snapshot. The review asks the cluster caches
/// only when its decision needs them (auto mode asks the node cache only once the decision says
/// inject) and is the one panic boundary.
fn run_review(state: &State, body: &[u8], path: &str) -> webhook::Reviewed {
    let snapshot = state.snapshot.load_full();
    let facts = RequestFacts {
        cluster: state.cluster.as_deref(),
        namespaces: state.inject.namespaces.as_ref(),
    };
    let ctx = webhook::Context {
        snapshot: &snapshot,
        native_mode: state.inject.native_mode,
        cluster: &facts,
        openshift: state.inject.openshift,
        compliance_policy: &state.inject.compliance_policy,
        revision: &state.inject.revision,
        keep_metadata: state.events.is_some(),
        max_list_entries: state.inject.max_list_entries,
    };
    webhook::review(body, path, &ctx)
}

/// Count, log and answer a review; `start`: when the request arrived (`elapsed_us`), `received`:
/// when its body was in (`review_us` of failures, the server's own time for the review: a
/// refusal's cost without the time the client took to send the body).
fn respond(
    state: &State,
    r: webhook::Reviewed,
    path: &str,
    start: Instant,
    received: Instant,
) -> Resp {
    let m = &state.metrics;
    for w in &r.warnings {
        tracing::warn!(uid = %r.uid, namespace = %r.namespace, pod = %r.pod_name, "{w}");
    }
    let now = Instant::now();
    let micros = |since: Instant| {
        u64::try_from(now.saturating_duration_since(since).as_micros()).unwrap_or(u64::MAX)
    };
    let elapsed_us = micros(start);
    match &r.outcome {
        Outcome::Injected => {
            m.injected.inc();
            tracing::info!(uid = %r.uid, namespace = %r.namespace, pod = %r.pod_name, path, decision = %r.decision,
                outcome = "injected", elapsed_us, "sidecar injected");
            tracing::debug!(uid = %r.uid, patch = r.patch.as_deref().unwrap_or(""), "AdmissionResponse");
        }
        Outcome::Skipped(reason) => {
            m.skipped(reason.code());
            tracing::info!(uid = %r.uid, namespace = %r.namespace, pod = %r.pod_name, path, decision = %r.decision,
                outcome = "skipped", reason = reason.code(), elapsed_us, "Skipping due to policy check");
        }
        Outcome::Failed(f) => {
            m.fail(f.reason);
            if f.malformed {
                // Not an AdmissionReview: the client's mistake, answered 400.
                tracing::warn!(uid = %r.uid, namespace = %r.namespace, pod = %r.pod_name, path, outcome = "failed",
                    reason = f.reason, status = 400, elapsed_us, review_us = micros(received), "{}", f.message);
            } else {
                tracing::error!(uid = %r.uid, namespace = %r.namespace, pod = %r.pod_name, path, outcome = "failed",
                    reason = f.reason, elapsed_us, review_us = micros(received), "{}", f.message);
            }
            if f.malformed {
                return text(
                    StatusCode::BAD_REQUEST,
                    &format!("malformed AdmissionReview: {}", f.message),
                );
            }
        }
    }
    m.success.inc();
    let mut resp = Response::new(Answer::from(r.response));
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

/// Decode `%XX` escapes (invalid escapes are kept verbatim; invalid UTF-8 is replaced).
pub fn percent_decode(path: &str) -> String {
    if !path.contains('%') {
        return path.to_string();
    }
    let b = path.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Go `ServeMux` path hygiene: `Some(cleaned)` when the path has `.`/`..` segments or repeated
/// slashes (answered with a 301 redirect).
pub fn clean_path(path: &str) -> Option<String> {
    if path.is_empty() || !path.starts_with('/') {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    for seg in path.split('/').skip(1) {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    let mut clean = format!("/{}", parts.join("/"));
    let trailing = path.ends_with('/') || path.ends_with("/.") || path.ends_with("/..");
    if trailing && clean != "/" {
        clean.push('/');
    }
    (clean != path).then_some(clean)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_hygiene_matches_go_servemux() {
        assert_eq!(clean_path("/inject"), None);
        assert_eq!(clean_path("/inject/"), None);
        assert_eq!(clean_path("/inject/cluster/c1/"), None);
        assert_eq!(clean_path("//inject"), Some("/inject".into()));
        assert_eq!(clean_path("/inject/./x"), Some("/inject/x".into()));
        assert_eq!(clean_path("/a/../inject"), Some("/inject".into()));
        assert_eq!(clean_path("/inject/x/.."), Some("/inject/".into()));
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(
            percent_decode("/inject/cluster/a%2Fb"),
            "/inject/cluster/a/b"
        );
        assert_eq!(percent_decode("/x%"), "/x%");
        assert_eq!(percent_decode("/x%4"), "/x%4");
        assert_eq!(percent_decode("/x%zz%41"), "/x%zzA");
    }
}
