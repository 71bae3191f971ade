//! Kubernetes Events for injection outcomes (`--events`): one Event per injection, skip or
//! failure, on the pod's owner (the pod does not exist yet at admission time), carrying the
//! reason code, so `kubectl describe` on the workload answers "why was my pod not injected".

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::LazyLock;
use std::time::Duration;

use ::kube::runtime::events::{Event, EventType, Recorder, Reporter};
use ::kube::Client;
use k8s_openapi::api::core::v1::ObjectReference;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// Reporting controller name of outrigger's Events.
pub(crate) const CONTROLLER: &str = "outrigger";

/// What happened to the pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A sidecar was injected.
    Injected,
    /// The injector decided not to inject.
    Skipped,
    /// Injection failed (the pod was admitted or rejected by the failure policy).
    Failed,
}

impl Outcome {
    /// Event `reason` (PascalCase, as `kubectl describe` shows it).
    pub fn reason(self) -> &'static str {
        match self {
            Outcome::Injected => "SidecarInjected",
            Outcome::Skipped => "SidecarInjectionSkipped",
            Outcome::Failed => "SidecarInjectionFailed",
        }
    }

    fn event_type(self) -> EventType {
        match self {
            Outcome::Failed => EventType::Warning,
            Outcome::Injected | Outcome::Skipped => EventType::Normal,
        }
    }
}

/// The object an Event about `pod` (in `namespace`) is recorded on: its controlling owner, else
/// its first owner, else the pod itself when it has a name; `None` when nothing is addressable.
pub(crate) fn event_target(pod: &Value, namespace: &str) -> Option<ObjectReference> {
    let owners = pod
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array);
    let owner = owners.and_then(|o| {
        o.iter()
            .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
            .or_else(|| o.first())
    });
    let s = |v: &Value, k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    if let Some(o) = owner {
        return Some(ObjectReference {
            api_version: s(o, "apiVersion"),
            kind: s(o, "kind"),
            name: s(o, "name"),
            namespace: Some(namespace.to_string()),
            uid: s(o, "uid"),
            ..ObjectReference::default()
        });
    }
    let meta = pod.get("metadata")?;
    let name = s(meta, "name")?;
    Some(ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        name: Some(name),
        namespace: Some(namespace.to_string()),
        uid: s(meta, "uid"),
        ..ObjectReference::default()
    })
}

/// The human note of an Event: `<reason code>: <message>`; at most 1 kB, as the API requires.
pub fn note(code: &str, message: &str) -> String {
    let mut n = format!("{code}: {message}");
    if n.len() > 1024 {
        let mut cut = 1021;
        while !n.is_char_boundary(cut) {
            cut -= 1;
        }
        n.truncate(cut);
        n.push_str("...");
    }
    n
}

/// Records injection Events (deduplicated into series by kube-rs).
#[derive(Clone)]
pub struct EventRecorder {
    recorder: Recorder,
}

impl std::fmt::Debug for EventRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventRecorder").finish_non_exhaustive()
    }
}

impl EventRecorder {
    /// A recorder reporting as `outrigger`, instance `instance` (the pod name).
    pub fn new(client: Client, instance: Option<String>) -> Self {
        let reporter = Reporter {
            controller: CONTROLLER.into(),
            instance,
        };
        EventRecorder {
            recorder: Recorder::new(client, reporter),
        }
    }

    /// Record `outcome` for `pod` with its reason code; a pod without an addressable target is
    /// ignored (returns `Ok(false)`).
    pub async fn record(
        &self,
        pod: &Value,
        namespace: &str,
        outcome: Outcome,
        code: &str,
        message: &str,
    ) -> Result<bool, ::kube::Error> {
        let Some(target) = event_target(pod, namespace) else {
            return Ok(false);
        };
        let event = Event {
            type_: outcome.event_type(),
            reason: outcome.reason().into(),
            note: Some(note(code, message)),
            action: "Inject".into(),
            secondary: None,
        };
        self.recorder.publish(&event, &target).await?;
        Ok(true)
    }
}

/// `reason` label of the dropped-Event counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DropLabel {
    /// `unauthenticated`, `queue_full`, `rate_limited`, `too_many_keys`, or (Events held for
    /// their pods, [`super::event_hold`]) `not_created` and `hold_full`.
    pub reason: String,
}

/// Counters of the Event publisher (exposed as `outrigger_events_*` metrics).
#[derive(Debug, Clone, Default)]
pub struct EventStats {
    /// `outrigger_events_published_total`: Events written to the API server.
    pub published: Counter,
    /// `outrigger_events_aggregated_total`: repeats folded into an Event already written.
    pub aggregated: Counter,
    /// `outrigger_events_dropped_total{reason}`: Events not recorded.
    pub dropped: Family<DropLabel, Counter>,
}

impl EventStats {
    /// Count an Event not recorded, for `reason`.
    pub(crate) fn drop(&self, reason: &str) {
        self.dropped
            .get_or_create(&DropLabel {
                reason: reason.into(),
            })
            .inc();
    }
}

/// The process's Event counters (registered by the server's metrics).
pub static EVENT_STATS: LazyLock<EventStats> = LazyLock::new(EventStats::default);

/// Bounds of the background Event publisher, in the spirit of client-go's event correlator.
#[derive(Debug, Clone, Copy)]
pub struct EventLimits {
    /// Events waiting for the publisher; beyond, new ones are dropped (`queue_full`).
    pub queue: usize,
    /// Token bucket of each source address (an API server): Events written at once after a
    /// quiet period.
    pub burst: u32,
    /// Same: sustained Events written per second.
    pub per_second: f64,
    /// An identical Event (same object, outcome and reason code) is written at most once per
    /// window; repeats are folded into one series update at the end of the window.
    pub window: Duration,
    /// Distinct Events (and source addresses) remembered; beyond, new ones are dropped.
    pub max_keys: usize,
}

impl Default for EventLimits {
    fn default() -> Self {
        EventLimits {
            queue: 1024,
            burst: 25,
            per_second: 5.0,
            window: Duration::from_secs(60),
            max_keys: 10_000,
        }
    }
}

/// One outcome waiting to be recorded.
#[derive(Debug, Clone)]
pub struct PendingEvent {
    /// The pod (its metadata: name, ownerReferences).
    pub pod: Value,
    /// Its namespace.
    pub namespace: String,
    /// What happened.
    pub outcome: Outcome,
    /// Reason code.
    pub code: String,
    /// Human message.
    pub message: String,
    /// The review came from a caller authenticated by its client certificate, or its pod was
    /// since seen created ([`super::event_hold`]): only such reviews are recorded (anyone on
    /// the network could claim anything in the others).
    pub authenticated: bool,
    /// The caller's address: each has its own rate limit.
    pub source: IpAddr,
}

/// What makes two Events "the same" for correlation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct EventKey {
    namespace: String,
    kind: Option<String>,
    name: Option<String>,
    uid: Option<String>,
    outcome: &'static str,
    code: String,
}

/// A token bucket (`burst` tokens, refilled at `per_second`).
#[derive(Debug)]
struct TokenBucket {
    tokens: f64,
    burst: f64,
    per_second: f64,
    at: Instant,
}

impl TokenBucket {
    fn new(burst: u32, per_second: f64) -> Self {
        TokenBucket {
            tokens: f64::from(burst),
            burst: f64::from(burst),
            per_second,
            at: Instant::now(),
        }
    }

    /// Whether the bucket would be full at `now` (as good as a fresh one).
    fn is_full(&self, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens + elapsed * self.per_second >= self.burst
    }

    fn take(&mut self, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.per_second).min(self.burst);
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// The handler's side of the publisher: [`EventQueue::push`] never waits.
#[derive(Debug, Clone)]
pub struct EventQueue {
    tx: mpsc::Sender<PendingEvent>,
    stats: EventStats,
}

impl EventQueue {
    /// A queue and the task that publishes through `recorder` (spawn it; it ends when every
    /// queue handle is dropped).
    pub fn start(
        recorder: EventRecorder,
        limits: EventLimits,
        stats: EventStats,
    ) -> (
        EventQueue,
        impl std::future::Future<Output = ()> + Send + 'static,
    ) {
        let (tx, rx) = mpsc::channel(limits.queue.max(1));
        let worker = publish_loop(recorder, rx, limits, stats.clone());
        (EventQueue { tx, stats }, worker)
    }

    /// Queue an Event; one from an unauthenticated caller, or when the queue is full, is
    /// dropped and counted.
    pub fn push(&self, event: PendingEvent) {
        if !event.authenticated {
            self.stats.drop("unauthenticated");
            return;
        }
        if self.tx.try_send(event).is_err() {
            self.stats.drop("queue_full");
        }
    }
}

async fn publish_one(recorder: &EventRecorder, e: &PendingEvent, stats: &EventStats) {
    match recorder
        .record(&e.pod, &e.namespace, e.outcome, &e.code, &e.message)
        .await
    {
        Ok(true) => {
            stats.published.inc();
        }
        Ok(false) => {}
        Err(err) => {
            tracing::warn!(namespace = %e.namespace, reason = %e.code, "recording the injection Event failed: {err}")
        }
    }
}

/// The publisher: one API call at a time; an Event identical to one written within the window
/// is folded into it (one series update when the window ends); a token bucket per source
/// address bounds the rate, so one caller cannot use up another's.
async fn publish_loop(
    recorder: EventRecorder,
    mut rx: mpsc::Receiver<PendingEvent>,
    limits: EventLimits,
    stats: EventStats,
) {
    let mut written: HashMap<EventKey, Instant> = HashMap::new();
    let mut repeats: HashMap<EventKey, PendingEvent> = HashMap::new();
    let mut buckets: HashMap<IpAddr, TokenBucket> = HashMap::new();
    // The source's bucket, or `None` when too many sources are remembered.
    let mut bucket = move |source: IpAddr, now: Instant| -> Option<bool> {
        if buckets.len() >= limits.max_keys && !buckets.contains_key(&source) {
            buckets.retain(|_, b| !b.is_full(now));
            if buckets.len() >= limits.max_keys {
                return None;
            }
        }
        Some(
            buckets
                .entry(source)
                .or_insert_with(|| TokenBucket::new(limits.burst, limits.per_second))
                .take(now),
        )
    };
    let mut tick = tokio::time::interval(limits.window.max(Duration::from_millis(10)) / 4);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            received = rx.recv() => {
                let Some(e) = received else { break };
                let Some(target) = event_target(&e.pod, &e.namespace) else { continue };
                let key = EventKey {
                    namespace: e.namespace.clone(),
                    kind: target.kind,
                    name: target.name,
                    uid: target.uid,
                    outcome: e.outcome.reason(),
                    code: e.code.clone(),
                };
                let now = Instant::now();
                if written.get(&key).is_some_and(|t| now.duration_since(*t) < limits.window) {
                    stats.aggregated.inc();
                    repeats.insert(key, e);
                    continue;
                }
                if written.len() >= limits.max_keys {
                    written.retain(|k, t| now.duration_since(*t) < limits.window || repeats.contains_key(k));
                    if written.len() >= limits.max_keys {
                        stats.drop("too_many_keys");
                        continue;
                    }
                }
                match bucket(e.source, now) {
                    None => {
                        stats.drop("too_many_keys");
                        continue;
                    }
                    Some(false) => {
                        stats.drop("rate_limited");
                        continue;
                    }
                    Some(true) => {}
                }
                publish_one(&recorder, &e, &stats).await;
                written.insert(key, now);
            }
            _ = tick.tick() => {
                let now = Instant::now();
                let due: Vec<EventKey> = repeats
                    .keys()
                    .filter(|k| written.get(*k).is_none_or(|t| now.duration_since(*t) >= limits.window))
                    .cloned()
                    .collect();
                for key in due {
                    let Some(source) = repeats.get(&key).map(|e| e.source) else { continue };
                    if bucket(source, now) != Some(true) {
                        continue;
                    }
                    if let Some(e) = repeats.remove(&key) {
                        publish_one(&recorder, &e, &stats).await;
                        written.insert(key, now);
                    }
                }
                written.retain(|k, t| now.duration_since(*t) < limits.window || repeats.contains_key(k));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock;
    use http::Method;
    use serde_json::json;

    fn pod() -> Value {
        json!({"metadata": {"generateName": "web-7d9f-", "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d9f", "uid": "u-1", "controller": true}]}})
    }

    #[test]
    fn targets() {
        let t = event_target(&pod(), "apps").expect("owner");
        assert_eq!(t.kind.as_deref(), Some("ReplicaSet"));
        assert_eq!(t.name.as_deref(), Some("web-7d9f"));
        assert_eq!(t.namespace.as_deref(), Some("apps"));
        let bare = json!({"metadata": {"name": "solo"}});
        assert_eq!(
            event_target(&bare, "apps").and_then(|t| t.kind),
            Some("Pod".into())
        );
        assert!(event_target(&json!({"metadata": {"generateName": "x-"}}), "apps").is_none());
    }

    #[test]
    fn notes_are_bounded() {
        assert_eq!(note("policy_enabled", "ok"), "policy_enabled: ok");
        let long = note("x", &"é".repeat(2000));
        assert!(long.len() <= 1024 && long.ends_with("..."));
    }

    #[tokio::test]
    async fn skip_event_on_the_owner_with_reason_code() {
        let (client, mut handle) = mock::client();
        let rec = EventRecorder::new(client, Some("outrigger-abc".into()));
        let task = tokio::spawn(async move {
            rec.record(
                &pod(),
                "apps",
                Outcome::Skipped,
                "annotation_disabled",
                "injection explicitly disabled",
            )
            .await
        });
        let r = mock::next(&mut handle).await;
        r.assert(
            Method::POST,
            "/apis/events.k8s.io/v1/namespaces/apps/events",
        );
        assert_eq!(r.body["reason"], "SidecarInjectionSkipped");
        assert_eq!(r.body["type"], "Normal");
        assert_eq!(
            r.body["note"],
            "annotation_disabled: injection explicitly disabled"
        );
        assert_eq!(r.body["regarding"]["kind"], "ReplicaSet");
        assert_eq!(r.body["regarding"]["uid"], "u-1");
        assert_eq!(r.body["reportingController"], "outrigger");
        assert_eq!(r.body["reportingInstance"], "outrigger-abc");
        let echo = r.body.clone();
        r.respond(201, echo);
        assert!(task.await.expect("task").expect("recorded"));
    }

    #[tokio::test]
    async fn failures_are_warnings() {
        let (client, mut handle) = mock::client();
        let rec = EventRecorder::new(client, None);
        let task = tokio::spawn(async move {
            rec.record(
                &json!({"metadata": {"name": "p"}}),
                "apps",
                Outcome::Failed,
                "template_error",
                "boom",
            )
            .await
        });
        let r = mock::next(&mut handle).await;
        assert_eq!(r.body["type"], "Warning");
        assert_eq!(r.body["reason"], "SidecarInjectionFailed");
        assert_eq!(r.body["regarding"]["kind"], "Pod");
        let echo = r.body.clone();
        r.respond(201, echo);
        assert!(task.await.expect("task").expect("recorded"));
    }

    fn pending(name: &str, code: &str) -> PendingEvent {
        PendingEvent {
            pod: json!({"metadata": {"ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": name, "uid": name, "controller": true}]}}),
            namespace: "apps".into(),
            outcome: Outcome::Skipped,
            code: code.into(),
            message: "m".into(),
            authenticated: true,
            source: IpAddr::from([10, 0, 0, 1]),
        }
    }

    fn dropped(stats: &EventStats, reason: &str) -> u64 {
        stats
            .dropped
            .get_or_create(&DropLabel {
                reason: reason.into(),
            })
            .get()
    }

    #[tokio::test]
    async fn repeats_are_folded_into_one_event_and_one_series_update() {
        let (client, mut handle) = mock::client();
        let stats = EventStats::default();
        let limits = EventLimits {
            window: Duration::from_millis(300),
            ..EventLimits::default()
        };
        let (q, worker) =
            EventQueue::start(EventRecorder::new(client, None), limits, stats.clone());
        let task = tokio::spawn(worker);
        for _ in 0..500 {
            q.push(pending("web-1", "annotation_disabled"));
        }
        let r = mock::next(&mut handle).await;
        r.assert(
            Method::POST,
            "/apis/events.k8s.io/v1/namespaces/apps/events",
        );
        let echo = r.body.clone();
        r.respond(201, echo.clone());
        // At the end of the window the 499 repeats become one series update.
        let r = mock::next(&mut handle).await;
        assert_eq!(r.method, Method::PATCH, "{}", r.uri);
        assert_eq!(r.body["series"]["count"], 2);
        r.respond(200, echo);
        mock::assert_no_request(&mut handle).await;
        assert_eq!(stats.aggregated.get(), 499);
        assert_eq!(stats.published.get(), 2);
        task.abort();
    }

    #[tokio::test]
    async fn a_full_queue_and_the_rate_limit_drop_and_count() {
        let (client, mut handle) = mock::client();
        let stats = EventStats::default();
        let limits = EventLimits {
            queue: 4,
            burst: 2,
            per_second: 0.001,
            ..EventLimits::default()
        };
        let (q, worker) =
            EventQueue::start(EventRecorder::new(client, None), limits, stats.clone());
        // The worker is not running yet: 4 fit in the queue, 6 are dropped at once.
        for i in 0..10 {
            q.push(pending(&format!("rs-{i}"), "policy_enabled"));
        }
        assert_eq!(dropped(&stats, "queue_full"), 6);
        let task = tokio::spawn(worker);
        // Two tokens: two Events written, the other two queued ones are rate limited.
        for _ in 0..2 {
            let r = mock::next(&mut handle).await;
            let echo = r.body.clone();
            r.respond(201, echo);
        }
        mock::assert_no_request(&mut handle).await;
        assert_eq!(dropped(&stats, "rate_limited"), 2);
        assert_eq!(stats.published.get(), 2);
        task.abort();
    }

    /// Events of unauthenticated callers are never written; each source address has its own
    /// rate limit, so one that uses its up does not stop another's.
    #[tokio::test]
    async fn only_authenticated_callers_get_events_each_within_its_own_limit() {
        let (client, mut handle) = mock::client();
        let stats = EventStats::default();
        let limits = EventLimits {
            burst: 2,
            per_second: 0.001,
            ..EventLimits::default()
        };
        let (q, worker) =
            EventQueue::start(EventRecorder::new(client, None), limits, stats.clone());
        let task = tokio::spawn(worker);
        for i in 0..3 {
            q.push(PendingEvent {
                authenticated: false,
                ..pending(&format!("anon-{i}"), "policy_enabled")
            });
        }
        assert_eq!(dropped(&stats, "unauthenticated"), 3);
        // A noisy caller sends five, another one: the second is not starved by the first.
        for i in 0..5 {
            q.push(pending(&format!("noisy-{i}"), "policy_enabled"));
        }
        q.push(PendingEvent {
            source: IpAddr::from([10, 0, 0, 2]),
            ..pending("quiet", "policy_enabled")
        });
        let mut names = Vec::new();
        for _ in 0..3 {
            let r = mock::next(&mut handle).await;
            names.push(
                r.body["regarding"]["name"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
            );
            let echo = r.body.clone();
            r.respond(201, echo);
        }
        mock::assert_no_request(&mut handle).await;
        assert_eq!(names, ["noisy-0", "noisy-1", "quiet"]);
        assert_eq!(dropped(&stats, "rate_limited"), 3);
        task.abort();
    }

    #[test]
    fn the_token_bucket_refills() {
        let mut b = TokenBucket::new(2, 10.0);
        let t0 = b.at;
        assert!(b.take(t0) && b.take(t0) && !b.take(t0));
        assert!(b.take(t0 + Duration::from_millis(150)));
        assert!(!b.take(t0 + Duration::from_millis(150)));
    }
}
