//! The node facts of native-sidecar auto mode: the kubelet versions of the
//! cluster's nodes, from a cached watch of nodes (never a list per request). The decision and
//! the version rule are the library's ([`native::detect_native_sidecars`]).

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use ::kube::runtime::reflector::{self, ObjectRef, Store};
use ::kube::runtime::{watcher, WatchStreamExt};
use ::kube::{Api, Client};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use outrigger_inject::decide::native::{self, ClusterFacts, NativeMode};

/// Whether `node`'s kubelet runs native sidecars, by the library's rule; an unreadable
/// version does not (logged, with Istio's line).
fn node_passes(node: &Node) -> bool {
    let name = node.metadata.name.as_deref().unwrap_or("");
    let mut warnings = Vec::new();
    let passes = native::node_supports_native(name, kubelet_version(node), &mut warnings);
    for w in warnings {
        tracing::warn!("{w}");
    }
    passes
}

/// `status.nodeInfo.kubeletVersion` of `node` (`""` when absent).
fn kubelet_version(node: &Node) -> &str {
    node.status
        .as_ref()
        .and_then(|s| s.node_info.as_ref())
        .map(|i| i.kubelet_version.as_str())
        .unwrap_or("")
}

/// The node facts the library's native-sidecar detection reads (its name and kubelet
/// version) of a listed node: the one reader `doctor`, `drift --kube` and `preview --kube` use.
pub fn facts(node: Node) -> native::Node {
    native::Node {
        kubelet_version: kubelet_version(&node).to_string(),
        name: node.metadata.name.unwrap_or_default(),
    }
}

/// Remove what detection never reads, to keep the cache small.
pub fn strip(node: &mut Node) {
    node.metadata.annotations = None;
    node.metadata.owner_references = None;
    node.metadata.managed_fields = None;
    node.metadata.labels = None;
    node.spec = None;
    if let Some(status) = node.status.as_mut() {
        status.capacity = None;
        status.allocatable = None;
        status.images = None;
        status.conditions = None;
        status.addresses = None;
        status.volumes_attached = None;
        status.volumes_in_use = None;
    }
}

/// The node facts auto mode needs, maintained incrementally from the watch events so that a
/// pod without `nodeName` is answered in O(1) instead of by a scan of every cached node: for each
/// node whether its kubelet passes, and how many do not.
#[derive(Debug, Default)]
pub struct NodeAggregate {
    state: Mutex<AggregateState>,
    /// Mirror of the count of failing nodes, read without the lock.
    failing: AtomicUsize,
}

#[derive(Debug, Default)]
struct AggregateState {
    passes: HashMap<String, bool>,
    failing: usize,
    /// The list being received during a (re)list, swapped in at `InitDone`.
    relisting: Option<HashMap<String, bool>>,
}

impl NodeAggregate {
    /// Fold one watch event in (the same events the reflector store receives).
    pub fn apply(&self, event: &watcher::Event<Node>) {
        let name = |n: &Node| n.metadata.name.clone().unwrap_or_default();
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match event {
            watcher::Event::Init => st.relisting = Some(HashMap::new()),
            watcher::Event::InitApply(n) => {
                let passes = node_passes(n);
                if let Some(r) = st.relisting.as_mut() {
                    r.insert(name(n), passes);
                }
            }
            watcher::Event::InitDone => {
                if let Some(r) = st.relisting.take() {
                    st.failing = r.values().filter(|p| !**p).count();
                    st.passes = r;
                }
            }
            watcher::Event::Apply(n) => {
                let passes = node_passes(n);
                if st.passes.insert(name(n), passes) == Some(false) {
                    st.failing -= 1;
                }
                if !passes {
                    st.failing += 1;
                }
            }
            watcher::Event::Delete(n) => {
                if st.passes.remove(&name(n)) == Some(false) {
                    st.failing -= 1;
                }
            }
        }
        self.failing.store(st.failing, Ordering::Release);
    }

    /// Whether every known node passes (an empty cluster passes).
    pub fn all_pass(&self) -> bool {
        self.failing.load(Ordering::Acquire) == 0
    }

    /// Number of nodes known.
    pub fn node_count(&self) -> usize {
        self.state.lock().map(|s| s.passes.len()).unwrap_or(0)
    }
}

/// A cached view of the nodes, answering the library's node questions ([`ClusterFacts`]).
#[derive(Clone)]
pub struct NodeCache {
    nodes: Option<Store<Node>>,
    aggregate: Arc<NodeAggregate>,
}

impl std::fmt::Debug for NodeCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeCache")
            .field("nodes", &self.nodes.as_ref().map(Store::len))
            .field("aggregated", &self.aggregate.node_count())
            .field("failing", &self.aggregate.failing.load(Ordering::Relaxed))
            .finish()
    }
}

impl NodeCache {
    /// No node cache (mode Disabled, or no cluster).
    pub fn without_nodes() -> Self {
        NodeCache {
            nodes: None,
            aggregate: Arc::default(),
        }
    }

    /// A cache over an existing store and the aggregate fed by the same events (by
    /// [`NodeCache::start`] or by tests).
    pub fn with_store(nodes: Store<Node>, aggregate: Arc<NodeAggregate>) -> Self {
        NodeCache {
            nodes: Some(nodes),
            aggregate,
        }
    }

    /// Start the node watch unless the mode is Disabled. Returns the cache and the future that
    /// keeps the cache current (spawn it; it runs until dropped).
    pub fn start(
        client: Client,
        mode: NativeMode,
    ) -> (Self, impl Future<Output = ()> + Send + 'static) {
        let (store, writer) = reflector::store();
        let aggregate = Arc::new(NodeAggregate::default());
        let feed = aggregate.clone();
        let active = mode != NativeMode::Disabled;
        let api: Api<Node> = Api::all(client);
        let run = async move {
            if !active {
                return;
            }
            let stream = watcher(api, watcher::Config::default())
                .default_backoff()
                .modify(strip)
                .inspect(move |event| {
                    if let Ok(e) = event {
                        feed.apply(e);
                    }
                });
            reflector::reflector(writer, stream)
                .for_each(|event| async move {
                    if let Err(e) = event {
                        tracing::warn!(error = %e, "node watch failed");
                    }
                })
                .await;
        };
        let cache = if active {
            Self::with_store(store, aggregate)
        } else {
            Self::without_nodes()
        };
        (cache, run)
    }

    /// Wait until the first full list of nodes is cached (no-op without a cache).
    pub async fn wait_until_ready(&self) {
        if let Some(store) = &self.nodes {
            let _ = store.wait_until_ready().await;
        }
    }
}

impl ClusterFacts for NodeCache {
    fn has_nodes(&self) -> bool {
        self.nodes.is_some()
    }

    fn kubelet_version(&self, name: &str) -> Option<String> {
        let node = self.nodes.as_ref()?.get(&ObjectRef::new(name))?;
        Some(kubelet_version(&node).to_string())
    }

    /// From the aggregate (unreadable versions were logged when their node was cached).
    fn all_nodes_native(&self, _warnings: &mut Vec<String>) -> bool {
        self.aggregate.all_pass()
    }
}

/// A cache fed with `events`, as the watch feeds it; returns the writer for more.
#[cfg(any(test, feature = "test-support"))]
pub fn fed(events: Vec<watcher::Event<Node>>) -> (NodeCache, impl FnMut(watcher::Event<Node>)) {
    let (store, mut writer) = reflector::store();
    let aggregate = Arc::new(NodeAggregate::default());
    let agg = aggregate.clone();
    let mut feed = move |e: watcher::Event<Node>| {
        agg.apply(&e);
        writer.apply_watcher_event(&e);
    };
    for e in events {
        feed(e);
    }
    (NodeCache::with_store(store, aggregate), feed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock;
    use http::Method;
    use serde_json::{json, Value};

    fn node_json(name: &str, version: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Node",
               "metadata": {"name": name, "resourceVersion": "1", "annotations": {"big": "x"}},
               "status": {"nodeInfo": {"kubeletVersion": version, "architecture": "amd64", "bootID": "",
                 "containerRuntimeVersion": "", "kernelVersion": "", "kubeProxyVersion": "", "machineID": "",
                 "operatingSystem": "linux", "osImage": "", "systemUUID": ""},
                 "images": [{"names": ["a"], "sizeBytes": 1}]}})
    }

    fn node(name: &str, version: &str) -> Node {
        serde_json::from_value(node_json(name, version)).expect("valid node")
    }

    /// The library's auto-mode decision over `cache`.
    fn detect(cache: &NodeCache, node: Option<&str>) -> bool {
        let node = node.unwrap_or("");
        native::detect_native_sidecars(NativeMode::Auto, cache, node, &mut Vec::new())
    }

    fn detector(nodes: &[(&str, &str)]) -> NodeCache {
        let mut events = vec![watcher::Event::Init];
        events.extend(
            nodes
                .iter()
                .map(|(n, v)| watcher::Event::InitApply(node(n, v))),
        );
        events.push(watcher::Event::InitDone);
        fed(events).0
    }

    #[test]
    fn the_aggregate_follows_every_watch_event() {
        let (d, mut feed) = fed(vec![
            watcher::Event::Init,
            watcher::Event::InitApply(node("a", "v1.33.0")),
            watcher::Event::InitApply(node("b", "v1.32.0")),
            watcher::Event::InitDone,
        ]);
        assert!(!detect(&d, None));
        // The old node is upgraded in place.
        feed(watcher::Event::Apply(node("b", "v1.34.0")));
        assert!(detect(&d, None));
        // An old node joins, then leaves.
        feed(watcher::Event::Apply(node("c", "v1.30.0")));
        assert!(!detect(&d, None));
        feed(watcher::Event::Apply(node("c", "v1.30.1")));
        assert_eq!(
            d.aggregate.failing.load(Ordering::Relaxed),
            1,
            "updates do not double count"
        );
        feed(watcher::Event::Delete(node("c", "v1.30.1")));
        assert!(detect(&d, None));
        // A relist replaces everything at InitDone, not before.
        feed(watcher::Event::Init);
        feed(watcher::Event::InitApply(node("z", "v1.20.0")));
        assert!(detect(&d, None), "the old view holds during a relist");
        feed(watcher::Event::InitDone);
        assert!(!detect(&d, None));
        assert_eq!(d.aggregate.node_count(), 1);
    }

    #[test]
    fn versions_go_semver_accepts_pass() {
        let d = detector(&[
            ("short", "v1.33"),
            ("padded", "v1.033.0"),
            ("old", "v1.32.9"),
        ]);
        assert!(detect(&d, Some("short")));
        assert!(detect(&d, Some("padded")));
        assert!(!detect(&d, Some("old")));
        assert_eq!(d.aggregate.failing.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn every_node_must_pass_unless_the_pod_has_a_known_node() {
        let d = detector(&[("new", "v1.33.1"), ("old", "v1.32.0")]);
        assert!(!detect(&d, None));
        assert!(detect(&d, Some("new")));
        assert!(!detect(&d, Some("old")));
        assert!(
            !detect(&d, Some("unknown")),
            "an unknown node falls through to all nodes"
        );
        assert!(detect(
            &detector(&[("a", "v1.33.0"), ("b", "v1.35.0")]),
            None
        ));
        assert!(detect(&detector(&[]), None), "an empty node list passes");
        assert!(
            !detect(&detector(&[("a", "weird")]), None),
            "unparseable versions fail"
        );
    }

    #[test]
    fn without_a_cache_there_are_no_nodes() {
        let none = NodeCache::without_nodes();
        assert!(!none.has_nodes());
        assert!(!detect(&none, None), "no client");
        assert!(detector(&[]).has_nodes());
    }

    #[test]
    fn cached_nodes_are_stripped() {
        let mut n = node("a", "v1.33.0");
        strip(&mut n);
        assert!(n.metadata.annotations.is_none());
        assert!(n.status.as_ref().and_then(|s| s.images.as_ref()).is_none());
        assert!(node_passes(&n));
    }

    #[tokio::test]
    async fn watch_driven_node_cache() {
        let (client, mut handle) = mock::client();
        let (d, run) = NodeCache::start(client, NativeMode::Auto);
        let task = tokio::spawn(run);
        let list = mock::next(&mut handle).await;
        list.assert(Method::GET, "/api/v1/nodes");
        assert!(!list.uri.contains("watch=true"), "{}", list.uri);
        list.respond(
            200,
            json!({"apiVersion": "v1", "kind": "NodeList", "metadata": {"resourceVersion": "10"},
                   "items": [node_json("a", "v1.33.0")]}),
        );
        let watch = mock::next(&mut handle).await;
        watch.assert(Method::GET, "/api/v1/nodes");
        assert!(
            watch.uri.contains("watch=true") && watch.uri.contains("resourceVersion=10"),
            "{}",
            watch.uri
        );
        tokio::time::timeout(std::time::Duration::from_secs(5), d.wait_until_ready())
            .await
            .expect("cache ready");
        assert!(detect(&d, None));
        // An old node joins: auto mode turns native sidecars off.
        let mut old = node_json("b", "v1.31.4");
        old["metadata"]["resourceVersion"] = json!("11");
        watch.respond_raw(200, mock::watch_line("ADDED", &old));
        for _ in 0..50 {
            if !detect(&d, None) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert!(!detect(&d, None));
        assert!(detect(&d, Some("a")));
        task.abort();
    }
}
