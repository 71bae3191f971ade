//! What the admission handler reads from the cluster under `serve --kube`, behind two small
//! traits so the handler can be tested with fakes: the library's [`ClusterFacts`] (kubelet
//! versions from the cached nodes, namespace annotations from the cached namespaces), which the
//! review asks only when its decision needs them, and [`EventSink`] (Kubernetes Events,
//! recorded in the background).

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use outrigger_inject::decide::native::ClusterFacts;
use serde_json::{Map, Value};

use crate::kube::event_hold::{HeldEvents, HoldLimits};
use crate::kube::events::{
    EventLimits, EventQueue, EventRecorder, Outcome, PendingEvent, EVENT_STATS,
};
use crate::kube::namespaces::NamespaceCache;
use crate::kube::nodes::NodeCache;

/// The cluster facts the server shares between requests.
pub type SharedFacts = dyn ClusterFacts + Send + Sync;

/// One injection outcome to record as an Event.
#[derive(Debug, Clone, PartialEq)]
pub struct InjectionEvent {
    /// The pod (at least its `metadata`: name, uid, ownerReferences).
    pub pod: Value,
    /// The pod's namespace.
    pub namespace: String,
    /// What happened.
    pub outcome: Outcome,
    /// Reason code (as in metrics and logs).
    pub code: String,
    /// Human message.
    pub message: String,
    /// The caller was authenticated by its client certificate (only such callers' reviews are
    /// recorded at once; others' wait for their pod to be seen created, with `--watch-pods`).
    pub authenticated: bool,
    /// The caller's address (rate limits are per address).
    pub source: std::net::IpAddr,
}

/// Where Events go. `record` must return at once: the admission response never waits for it.
pub trait EventSink: Send + Sync + Debug {
    /// Record `event` in the background.
    fn record(&self, event: InjectionEvent);

    /// The pod watch saw `pod` (as stored) created: the Event held for it, if any, is written
    /// ([`crate::kube::event_hold`]).
    fn pod_created(&self, _pod: &Value) {}
}

/// [`ClusterFacts`] from the kube-rs caches (never an API call per request).
#[derive(Debug, Clone)]
pub struct KubeFacts {
    /// Node cache (absent when native sidecars are disabled).
    pub native: NodeCache,
    /// Namespace cache (OpenShift only).
    pub namespaces: Option<NamespaceCache>,
}

impl ClusterFacts for KubeFacts {
    fn has_nodes(&self) -> bool {
        self.native.has_nodes()
    }

    fn kubelet_version(&self, name: &str) -> Option<String> {
        self.native.kubelet_version(name)
    }

    fn all_nodes_native(&self, warnings: &mut Vec<String>) -> bool {
        self.native.all_nodes_native(warnings)
    }

    fn namespace_annotations(&self, namespace: &str) -> Option<Map<String, Value>> {
        self.namespaces.as_ref()?.annotations(namespace)
    }
}

/// [`EventSink`] publishing through kube-rs from one background task: a bounded queue,
/// repeats folded into one Event per window, a rate limit, drops counted in
/// `outrigger_events_dropped_total` (see [`crate::kube::events::EventQueue`]). With `hold`,
/// the Events of callers without a client certificate wait for their pods
/// ([`crate::kube::event_hold`]); without, they are dropped.
#[derive(Debug, Clone)]
pub struct KubeEvents {
    queue: EventQueue,
    hold: Option<Arc<HeldEvents>>,
}

impl KubeEvents {
    /// A sink whose publisher runs on the current Tokio runtime (it stops with the last sink);
    /// `hold`: how long an unauthenticated caller's Event waits for its pod (`--watch-pods`).
    pub fn new(recorder: EventRecorder, hold: Option<Duration>) -> Self {
        let (queue, worker) =
            EventQueue::start(recorder, EventLimits::default(), EVENT_STATS.clone());
        tokio::spawn(worker);
        let hold = hold.map(|ttl| {
            let h = HeldEvents::new(HoldLimits::new(ttl), queue.clone(), EVENT_STATS.clone());
            tokio::spawn(HeldEvents::sweep(&h));
            h
        });
        KubeEvents { queue, hold }
    }
}

impl EventSink for KubeEvents {
    fn pod_created(&self, pod: &Value) {
        if let Some(h) = &self.hold {
            h.pod_created(pod);
        }
    }

    fn record(&self, e: InjectionEvent) {
        let pending = PendingEvent {
            pod: e.pod,
            namespace: e.namespace,
            outcome: e.outcome,
            code: e.code,
            message: e.message,
            authenticated: e.authenticated,
            source: e.source,
        };
        match &self.hold {
            Some(h) if !pending.authenticated => h.hold(pending),
            _ => self.queue.push(pending),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ::kube::runtime::reflector;
    use k8s_openapi::api::core::v1::Namespace;
    use serde_json::json;

    #[test]
    fn kube_facts_read_the_namespace_cache() {
        let (store, mut writer) = reflector::store::<Namespace>();
        let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "team",
            "annotations": {"openshift.io/sa.scc.uid-range": "1000/10"}}}))
        .unwrap();
        writer.apply_watcher_event(&::kube::runtime::watcher::Event::Apply(ns));
        let facts = KubeFacts {
            native: NodeCache::without_nodes(),
            namespaces: Some(NamespaceCache::with_store(store)),
        };
        let a = facts
            .namespace_annotations("team")
            .expect("known namespace");
        assert_eq!(a["openshift.io/sa.scc.uid-range"], "1000/10");
        assert_eq!(facts.namespace_annotations("other"), None);
        assert!(!facts.has_nodes());
        let no_cache = KubeFacts {
            namespaces: None,
            ..facts
        };
        assert_eq!(no_cache.namespace_annotations("team"), None);
    }
}
