//! What the admission handler reads from the cluster under `serve --kube`, behind two small
//! traits so the handler can be tested with fakes: [`ClusterFacts`] (native-sidecar decision
//! from the cached nodes, namespace annotations from the cached namespaces) and [`EventSink`]
//! (Kubernetes Events, recorded in the background).

use std::fmt::Debug;

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::kube::events::{
    EventLimits, EventQueue, EventRecorder, Outcome, PendingEvent, EVENT_STATS,
};
use crate::kube::namespaces::NamespaceCache;
use crate::kube::nodes::NativeSidecarDetector;

/// Cached cluster facts consulted per request (never an API call per request).
pub trait ClusterFacts: Send + Sync + Debug {
    /// Native sidecars for a pod scheduled on `node_name` (auto mode: kubelet at least 1.33).
    fn native_sidecars(&self, node_name: Option<&str>) -> bool;
    /// Annotations of `namespace`; `None` when it is not known.
    fn namespace_annotations(&self, namespace: &str) -> Option<Map<String, Value>>;
}

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
}

/// Where Events go. `record` must return at once: the admission response never waits for it.
pub trait EventSink: Send + Sync + Debug {
    /// Record `event` in the background.
    fn record(&self, event: InjectionEvent);
}

/// [`ClusterFacts`] from the kube-rs caches.
#[derive(Debug, Clone)]
pub struct KubeFacts {
    /// Node-backed native-sidecar detector.
    pub native: NativeSidecarDetector,
    /// Namespace cache (OpenShift only).
    pub namespaces: Option<NamespaceCache>,
}

impl ClusterFacts for KubeFacts {
    fn native_sidecars(&self, node_name: Option<&str>) -> bool {
        self.native.detect(node_name)
    }

    fn namespace_annotations(&self, namespace: &str) -> Option<Map<String, Value>> {
        let ns = self.namespaces.as_ref()?.get(namespace)?;
        let annotations = ns.metadata.annotations.clone().unwrap_or_default();
        Some(
            annotations
                .into_iter()
                .map(|(k, v)| (k, Value::String(v)))
                .collect(),
        )
    }
}

/// [`EventSink`] publishing through kube-rs from one background task: a bounded queue,
/// repeats folded into one Event per window, a rate limit, drops counted in
/// `outrigger_events_dropped_total` (see [`crate::kube::events::EventQueue`]).
#[derive(Debug, Clone)]
pub struct KubeEvents {
    queue: EventQueue,
}

impl KubeEvents {
    /// A sink whose publisher runs on the current Tokio runtime (it stops with the last sink).
    pub fn new(recorder: EventRecorder) -> Self {
        let (queue, worker) =
            EventQueue::start(recorder, EventLimits::default(), EVENT_STATS.clone());
        tokio::spawn(worker);
        KubeEvents { queue }
    }
}

impl EventSink for KubeEvents {
    fn record(&self, e: InjectionEvent) {
        self.queue.push(PendingEvent {
            pod: e.pod,
            namespace: e.namespace,
            outcome: e.outcome,
            code: e.code,
            message: e.message,
        });
    }
}

/// The few pod facts the cluster lookups need, read before the admission review.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodPeek {
    /// Pod namespace (`metadata.namespace`, else `request.namespace`).
    pub namespace: String,
    /// `spec.nodeName` when set.
    pub node_name: Option<String>,
    /// `{"metadata": ...}` of the pod (Event target).
    pub pod: Value,
}

#[derive(Deserialize)]
struct Review {
    request: Option<ReviewRequest>,
}

#[derive(Deserialize)]
struct ReviewRequest {
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    object: Option<PodView>,
}

#[derive(Deserialize)]
struct PodView {
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
    #[serde(default)]
    spec: Option<SpecView>,
}

#[derive(Deserialize)]
struct SpecView {
    #[serde(default, rename = "nodeName")]
    node_name: Option<String>,
}

/// Read namespace, node name and metadata of the pod in an AdmissionReview body; `None` when
/// the body is not a review with a pod (the review itself reports that).
pub fn peek(body: &[u8]) -> Option<PodPeek> {
    let review: Review = serde_json::from_slice(body).ok()?;
    let req = review.request?;
    let pod = req.object?;
    let metadata = pod.metadata.unwrap_or_default();
    let namespace = metadata
        .get("namespace")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .or(req.namespace)
        .unwrap_or_default();
    let node_name = pod.spec.and_then(|s| s.node_name).filter(|n| !n.is_empty());
    let mut pod = Map::new();
    pod.insert("metadata".into(), Value::Object(metadata));
    Some(PodPeek {
        namespace,
        node_name,
        pod: Value::Object(pod),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ::kube::runtime::reflector;
    use k8s_openapi::api::core::v1::Namespace;
    use serde_json::json;

    #[test]
    fn peek_reads_namespace_node_and_metadata() {
        let body = json!({"kind": "AdmissionReview", "request": {"namespace": "req-ns", "object": {
            "metadata": {"name": "p", "ownerReferences": [{"kind": "ReplicaSet", "name": "rs"}]},
            "spec": {"nodeName": "n1", "containers": []}}}});
        let p = peek(&serde_json::to_vec(&body).unwrap()).expect("peek");
        assert_eq!(p.namespace, "req-ns");
        assert_eq!(p.node_name.as_deref(), Some("n1"));
        assert_eq!(p.pod["metadata"]["ownerReferences"][0]["name"], "rs");
        assert!(p.pod.get("spec").is_none(), "only metadata is kept");

        let body = json!({"request": {"namespace": "req-ns", "object": {
            "metadata": {"namespace": "pod-ns"}, "spec": {"nodeName": ""}}}});
        let p = peek(&serde_json::to_vec(&body).unwrap()).expect("peek");
        assert_eq!((p.namespace.as_str(), p.node_name), ("pod-ns", None));

        assert_eq!(peek(b"not json"), None);
        assert_eq!(peek(br#"{"request": {"uid": "x"}}"#), None);
        assert_eq!(peek(br#"{"request": {"object": {"spec": 3}}}"#), None);
    }

    #[test]
    fn kube_facts_read_the_namespace_cache() {
        let (store, mut writer) = reflector::store::<Namespace>();
        let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "team",
            "annotations": {"openshift.io/sa.scc.uid-range": "1000/10"}}}))
        .unwrap();
        writer.apply_watcher_event(&::kube::runtime::watcher::Event::Apply(ns));
        let facts = KubeFacts {
            native: NativeSidecarDetector::without_nodes(crate::kube::nodes::NativeMode::Enabled),
            namespaces: Some(NamespaceCache::with_store(store)),
        };
        let a = facts
            .namespace_annotations("team")
            .expect("known namespace");
        assert_eq!(a["openshift.io/sa.scc.uid-range"], "1000/10");
        assert_eq!(facts.namespace_annotations("other"), None);
        assert!(facts.native_sidecars(None), "enabled mode");
        let no_cache = KubeFacts {
            namespaces: None,
            ..facts
        };
        assert_eq!(no_cache.namespace_annotations("team"), None);
    }
}
