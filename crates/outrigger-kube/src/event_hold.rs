//! Events of callers that presented no client certificate, held until the pod their review
//! named is seen created (`serve --kube --events --watch-pods`, issue 36).
//!
//! Where the API server cannot present a client certificate (managed control planes), the
//! webhook cannot tell its reviews from anyone else's: a review names whatever pod, owner and
//! namespace its sender likes. Such a review's Event is therefore not written at once but held
//! here, and written only once the pod watch (`serve::pod_watch`) sees a pod created that the
//! review described:
//!
//! * the same namespace;
//! * the same name, or — a review of a pod with `generateName` (the API server names the pod
//!   after admission) — a name made from that prefix as kube-apiserver makes it (the prefix cut
//!   to 58 bytes, then 5 random characters: `k8s.io/apiserver/pkg/storage/names/generate.go`,
//!   `SimpleNameGenerator`);
//! * the same controlling owner's uid (or none on both sides);
//! * an outcome the created pod agrees with: an injection's Event only for a pod that carries
//!   outrigger's marker, a skip's or failure's only for one that does not;
//! * created no earlier than the review (its `creationTimestamp`, a second's precision, at
//!   most 2 s before the review was held).
//!
//! The Event written is the review's (outcome, reason code, message) on the object the created
//! pod names as its owner (the stored pod's metadata, not the claimed one). Each held Event is
//! written at most once and each created pod matches at most one (the oldest).
//!
//! Bounds: a held Event is dropped after [`HoldLimits::ttl`] when no pod matched it
//! (`outrigger_events_dropped_total{reason="not_created"}`); at most
//! [`HoldLimits::per_source`] are held per source address (its oldest gives way to its newest)
//! and [`HoldLimits::max`] in all (the oldest of the address holding the most gives way), each
//! counted as `reason="hold_full"`. The rate limits of the publisher, per source address,
//! apply to what is written.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use outrigger_inject::decide::selection::injected_by_outrigger;
use serde_json::{Map, Value};
use tokio::time::Instant;

use super::events::{EventQueue, EventStats, Outcome, PendingEvent};

/// The longest prefix kube-apiserver keeps of a `generateName` (63 - 5 random characters).
const MAX_GENERATED_PREFIX: usize = 58;

/// The random characters kube-apiserver appends to a `generateName`.
const GENERATED_SUFFIX: usize = 5;

/// How far a created pod's `creationTimestamp` (whole seconds) may lie before the review.
const CLOCK_SLACK: SignedDuration = SignedDuration::from_secs(2);

/// Bounds of the held Events.
#[derive(Debug, Clone, Copy)]
pub struct HoldLimits {
    /// How long an Event waits for its pod (`--events-hold`).
    pub ttl: Duration,
    /// Held Events in all.
    pub max: usize,
    /// Held Events of one source address.
    pub per_source: usize,
}

impl HoldLimits {
    /// The shipped bounds, holding each Event for `ttl`.
    pub fn new(ttl: Duration) -> HoldLimits {
        HoldLimits {
            ttl,
            max: 4096,
            per_source: 512,
        }
    }
}

/// How a held Event's pod is named.
#[derive(Debug, Clone, PartialEq, Eq)]
enum PodName {
    /// `metadata.name`.
    Exact(String),
    /// `metadata.generateName`, cut as kube-apiserver cuts it.
    Generated(String),
}

impl PodName {
    fn of(meta: &Map<String, Value>) -> Option<PodName> {
        let s = |k: &str| {
            meta.get(k)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        };
        if let Some(n) = s("name") {
            return Some(PodName::Exact(n.to_string()));
        }
        let g = s("generateName")?;
        let mut cut = g.len().min(MAX_GENERATED_PREFIX);
        while !g.is_char_boundary(cut) {
            cut -= 1;
        }
        Some(PodName::Generated(g[..cut].to_string()))
    }

    fn matches(&self, name: &str) -> bool {
        match self {
            PodName::Exact(n) => n == name,
            PodName::Generated(prefix) => {
                name.len() == prefix.len() + GENERATED_SUFFIX && name.starts_with(prefix.as_str())
            }
        }
    }
}

/// The uid of the controlling owner in `meta` (`None`: no controller).
fn controller_uid(meta: &Map<String, Value>) -> Option<String> {
    meta.get("ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        .and_then(|r| r.get("uid")?.as_str())
        .map(str::to_string)
}

/// One held Event and what a created pod must show to be its pod.
#[derive(Debug)]
struct Held {
    event: PendingEvent,
    name: PodName,
    controller: Option<String>,
    since: Instant,
    /// The earliest `creationTimestamp` of its pod.
    not_before: Timestamp,
}

impl Held {
    fn matches(&self, pod: &CreatedPod<'_>) -> bool {
        self.event.namespace == pod.namespace
            && self.name.matches(pod.name)
            && self.controller == pod.controller
            && (self.event.outcome == Outcome::Injected) == pod.injected
            && pod.created.is_none_or(|c| c >= self.not_before)
    }
}

/// A pod the watch saw created, as the matching reads it.
struct CreatedPod<'a> {
    namespace: &'a str,
    name: &'a str,
    controller: Option<String>,
    injected: bool,
    created: Option<Timestamp>,
}

#[derive(Debug, Default)]
struct Table {
    /// Oldest first.
    held: VecDeque<Held>,
    by_source: HashMap<IpAddr, usize>,
}

impl Table {
    fn remove(&mut self, i: usize) -> Option<Held> {
        let h = self.held.remove(i)?;
        if let Some(n) = self.by_source.get_mut(&h.event.source) {
            *n -= 1;
            if *n == 0 {
                self.by_source.remove(&h.event.source);
            }
        }
        Some(h)
    }

    /// Drop the oldest held Event of `source`.
    fn evict_oldest_of(&mut self, source: IpAddr) -> bool {
        match self.held.iter().position(|h| h.event.source == source) {
            Some(i) => self.remove(i).is_some(),
            None => false,
        }
    }
}

/// Events waiting for their pods (see the module documentation).
#[derive(Debug)]
pub struct HeldEvents {
    limits: HoldLimits,
    table: Mutex<Table>,
    queue: EventQueue,
    stats: EventStats,
}

impl HeldEvents {
    /// An empty hold whose matched Events go to `queue`.
    pub fn new(limits: HoldLimits, queue: EventQueue, stats: EventStats) -> Arc<HeldEvents> {
        Arc::new(HeldEvents {
            limits,
            table: Mutex::new(Table::default()),
            queue,
            stats,
        })
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Events held now.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().held.len()
    }

    /// Hold `event` (of an unauthenticated caller) until its pod is seen created. An Event whose
    /// pod has neither a name nor a `generateName` can never match: it is dropped at once
    /// (`unauthenticated`).
    pub fn hold(&self, event: PendingEvent) {
        let now = Instant::now();
        let meta = event.pod.get("metadata").and_then(Value::as_object);
        let Some(name) = meta.and_then(PodName::of) else {
            self.stats.drop("unauthenticated");
            return;
        };
        let controller = meta.and_then(controller_uid);
        let source = event.source;
        let mut t = self.lock();
        self.expire_locked(&mut t, now);
        if t.by_source.get(&source).copied().unwrap_or(0) >= self.limits.per_source {
            t.evict_oldest_of(source);
            self.stats.drop("hold_full");
        }
        if t.held.len() >= self.limits.max.max(1) {
            let fullest = t.by_source.iter().max_by_key(|(_, n)| **n).map(|(a, _)| *a);
            if let Some(a) = fullest {
                t.evict_oldest_of(a);
                self.stats.drop("hold_full");
            }
        }
        *t.by_source.entry(source).or_default() += 1;
        t.held.push_back(Held {
            event,
            name,
            controller,
            since: now,
            not_before: Timestamp::now()
                .checked_sub(CLOCK_SLACK)
                .unwrap_or(Timestamp::MIN),
        });
    }

    /// The pod watch saw `pod` (as stored: its metadata) created: write the oldest held Event it
    /// matches, on the stored pod's owner.
    pub fn pod_created(&self, pod: &Value) {
        let Some(meta) = pod.get("metadata").and_then(Value::as_object) else {
            return;
        };
        let s = |k: &str| meta.get(k).and_then(Value::as_str).unwrap_or_default();
        let created = CreatedPod {
            namespace: s("namespace"),
            name: s("name"),
            controller: controller_uid(meta),
            injected: injected_by_outrigger(pod),
            created: meta
                .get("creationTimestamp")
                .and_then(Value::as_str)
                .and_then(|t| t.parse().ok()),
        };
        let found = {
            let mut t = self.lock();
            self.expire_locked(&mut t, Instant::now());
            if t.held.is_empty() {
                return;
            }
            let i = t.held.iter().position(|h| h.matches(&created));
            i.and_then(|i| t.remove(i))
        };
        if let Some(h) = found {
            let metadata: Map<String, Value> = meta
                .iter()
                .filter(|(k, _)| k.as_str() != "managedFields")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let mut stored = Map::new();
            stored.insert("metadata".into(), Value::Object(metadata));
            self.queue.push(PendingEvent {
                pod: Value::Object(stored),
                authenticated: true,
                ..h.event
            });
        }
    }

    /// Drop the Events held longer than the limit (`not_created`).
    pub(crate) fn expire(&self) {
        let mut t = self.lock();
        self.expire_locked(&mut t, Instant::now());
    }

    fn expire_locked(&self, t: &mut Table, now: Instant) {
        while t
            .held
            .front()
            .is_some_and(|h| now.duration_since(h.since) >= self.limits.ttl)
        {
            t.remove(0);
            self.stats.drop("not_created");
        }
    }

    /// Expire held Events every quarter of the limit until `hold` is dropped elsewhere.
    pub fn sweep(hold: &Arc<HeldEvents>) -> impl std::future::Future<Output = ()> + Send {
        let weak = Arc::downgrade(hold);
        let every = (hold.limits.ttl / 4).max(Duration::from_millis(10));
        async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tick.tick().await;
                match weak.upgrade() {
                    Some(h) => h.expire(),
                    None => return,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{DropLabel, EventLimits, EventRecorder};
    use crate::mock;
    use serde_json::json;

    fn event(meta: Value, outcome: Outcome, source: u8) -> PendingEvent {
        PendingEvent {
            pod: json!({ "metadata": meta }),
            namespace: "apps".into(),
            outcome,
            code: "injected".into(),
            message: "m".into(),
            authenticated: false,
            source: IpAddr::from([127, 0, 0, source]),
        }
    }

    fn owner(uid: &str) -> Value {
        json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("rs-{uid}"),
            "uid": uid, "controller": true}])
    }

    fn created(name: &str, uid: &str, injected: bool) -> Value {
        let mut p = json!({"metadata": {"name": name, "namespace": "apps",
            "ownerReferences": owner(uid), "creationTimestamp": Timestamp::now().to_string()}});
        if injected {
            outrigger_inject::decide::selection::mark_injected(&mut p);
        }
        p
    }

    fn dropped(stats: &EventStats, reason: &str) -> u64 {
        stats
            .dropped
            .get_or_create(&DropLabel {
                reason: reason.into(),
            })
            .get()
    }

    fn hold(limits: HoldLimits) -> (Arc<HeldEvents>, EventStats, mock::Handle) {
        let (client, handle) = mock::client();
        let stats = EventStats::default();
        let (queue, worker) = EventQueue::start(
            EventRecorder::new(client, None),
            EventLimits::default(),
            stats.clone(),
        );
        tokio::spawn(worker);
        (HeldEvents::new(limits, queue, stats.clone()), stats, handle)
    }

    #[test]
    fn generated_names_follow_the_api_servers_generator() {
        let meta = |g: &str| json!({"generateName": g}).as_object().cloned().unwrap();
        let n = PodName::of(&meta("web-7d9f-")).unwrap();
        assert!(n.matches("web-7d9f-x2k9q"));
        assert!(!n.matches("web-7d9f-x2k9"), "5 random characters");
        assert!(!n.matches("api-7d9f-x2k9q"));
        let long = "a".repeat(70);
        let n = PodName::of(&meta(&long)).unwrap();
        assert!(n.matches(&format!("{}bcdef", "a".repeat(58))));
        let exact = json!({"name": "web-0", "generateName": "web-"});
        let n = PodName::of(exact.as_object().unwrap()).unwrap();
        assert!(n.matches("web-0") && !n.matches("web-0abcde"));
        assert_eq!(PodName::of(&Map::new()), None);
    }

    #[tokio::test]
    async fn an_event_is_written_once_its_pod_is_seen_created() {
        let (h, stats, mut api) = hold(HoldLimits::new(Duration::from_secs(60)));
        let claimed = json!({"generateName": "web-7d9f-", "ownerReferences": owner("rs-1")});
        h.hold(event(claimed.clone(), Outcome::Injected, 2));
        h.hold(event(
            json!({"name": "ghost", "ownerReferences": owner("rs-9")}),
            Outcome::Injected,
            2,
        ));
        assert_eq!(h.len(), 2);
        // Neither another owner's pod, nor one without the marker, nor a name of another
        // shape is the review's pod.
        h.pod_created(&created("web-7d9f-abcde", "rs-2", true));
        h.pod_created(&created("web-7d9f-abcde", "rs-1", false));
        h.pod_created(&created("web-7d9f-abcdef", "rs-1", true));
        assert_eq!(h.len(), 2);
        mock::assert_no_request(&mut api).await;
        h.pod_created(&created("web-7d9f-q8z2x", "rs-1", true));
        assert_eq!(h.len(), 1);
        let r = mock::next(&mut api).await;
        assert_eq!(r.body["regarding"]["name"], "rs-rs-1");
        assert_eq!(r.body["reason"], "SidecarInjected");
        let echo = r.body.clone();
        r.respond(201, echo);
        // Written once: a second pod of the same owner finds nothing held for it.
        h.pod_created(&created("web-7d9f-zzzzz", "rs-1", true));
        mock::assert_no_request(&mut api).await;
        assert_eq!(stats.published.get(), 1);
    }

    #[tokio::test]
    async fn pods_created_before_the_review_do_not_match() {
        let (h, _, mut api) = hold(HoldLimits::new(Duration::from_secs(60)));
        h.hold(event(
            json!({"name": "web-0", "ownerReferences": owner("s")}),
            Outcome::Skipped,
            2,
        ));
        let mut old = created("web-0", "s", false);
        old["metadata"]["creationTimestamp"] = json!("2020-01-01T00:00:00Z");
        h.pod_created(&old);
        mock::assert_no_request(&mut api).await;
        assert_eq!(h.len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn unmatched_events_expire_and_each_source_holds_its_share() {
        let limits = HoldLimits {
            ttl: Duration::from_secs(30),
            max: 6,
            per_source: 3,
        };
        let (h, stats, mut api) = hold(limits);
        for i in 0..5 {
            h.hold(event(json!({"name": format!("a{i}")}), Outcome::Skipped, 2));
        }
        assert_eq!(h.len(), 3, "one address holds its share");
        assert_eq!(dropped(&stats, "hold_full"), 2);
        h.hold(event(json!({"name": "b0"}), Outcome::Skipped, 3));
        h.hold(event(json!({"name": "b1"}), Outcome::Skipped, 3));
        h.hold(event(json!({"name": "c0"}), Outcome::Skipped, 4));
        // Full (6): the next one takes the oldest of the fullest address (a2's oldest: a2).
        h.hold(event(json!({"name": "c1"}), Outcome::Skipped, 4));
        assert_eq!(h.len(), 6);
        assert_eq!(dropped(&stats, "hold_full"), 3);
        let mut p = json!({"metadata": {"name": "a2", "namespace": "apps"}});
        h.pod_created(&p);
        mock::assert_no_request(&mut api).await;
        p["metadata"]["name"] = json!("b1");
        h.pod_created(&p);
        let r = mock::next(&mut api).await;
        assert_eq!(r.body["regarding"]["name"], "b1");
        r.respond(201, json!({}));
        tokio::time::advance(Duration::from_secs(31)).await;
        h.expire();
        assert_eq!(h.len(), 0);
        assert_eq!(dropped(&stats, "not_created"), 5);
        mock::assert_no_request(&mut api).await;
    }
}
