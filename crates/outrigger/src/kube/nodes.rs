//! Native-sidecar auto mode: decide from the kubelet versions of the cluster's
//! nodes, read from a cached watch of nodes (never a list per request).

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use ::kube::runtime::reflector::{self, ObjectRef, Store};
use ::kube::runtime::{watcher, WatchStreamExt};
use ::kube::{Api, Client};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;

/// Minimum kubelet minor version with native sidecar support.
pub const MIN_MINOR: u64 = 33;

/// `ENABLE_NATIVE_SIDECARS` as the injector reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NativeMode {
    /// Always native sidecars.
    Enabled,
    /// Never native sidecars.
    Disabled,
    /// Decide from node kubelet versions.
    Auto,
}

impl NativeMode {
    /// Parse the variable's value (unset → Auto); unknown values → Disabled plus Istio's warning.
    #[allow(dead_code)] // serve reads ENABLE_NATIVE_SIDECARS through `decide::native::NativeMode::parse`.
    pub fn from_env_value(v: Option<&str>) -> (NativeMode, Option<String>) {
        match v {
            None | Some("auto") => (NativeMode::Auto, None),
            Some("true") => (NativeMode::Enabled, None),
            Some("false") => (NativeMode::Disabled, None),
            Some(other) => (
                NativeMode::Disabled,
                Some(format!(
                    "Unknown value for ENABLE_NATIVE_SIDECARS: {other}, defaulting to false"
                )),
            ),
        }
    }
}

/// The kubelet check: parse a semantic version (leading `v`, pre-release and build metadata
/// allowed) and pass iff the minor component is at least 33 (the major is ignored, as Istio does).
pub fn kubelet_supports_native(version: &str) -> Result<bool, String> {
    let v = version.strip_prefix('v').unwrap_or(version);
    let core = v.split(['-', '+']).next().unwrap_or("");
    let parts: Vec<&str> = core.split('.').collect();
    if parts.len() != 3 {
        return Err(format!("illegal version string {version:?}"));
    }
    let mut nums = [0u64; 3];
    for (slot, part) in nums.iter_mut().zip(&parts) {
        if part.is_empty()
            || !part.bytes().all(|b| b.is_ascii_digit())
            || (part.len() > 1 && part.starts_with('0'))
        {
            return Err(format!("illegal version string {version:?}"));
        }
        *slot = part
            .parse()
            .map_err(|e| format!("illegal version string {version:?}: {e}"))?;
    }
    Ok(nums[1] >= MIN_MINOR)
}

fn node_passes(node: &Node) -> bool {
    let name = node.metadata.name.as_deref().unwrap_or("");
    let version = node
        .status
        .as_ref()
        .and_then(|s| s.node_info.as_ref())
        .map(|i| i.kubelet_version.as_str())
        .unwrap_or("");
    match kubelet_supports_native(version) {
        Ok(true) => true,
        Ok(false) => {
            tracing::debug!("detected kubelet version {version} < 1.{MIN_MINOR} on node {name}; native sidecars disabled");
            false
        }
        Err(e) => {
            tracing::warn!("could not read node version for {name} {version}: {e}");
            false
        }
    }
}

/// Remove what detection never reads, to keep the cache small.
pub(crate) fn strip(node: &mut Node) {
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

/// Answers "native sidecars for this pod?" from a cached view of the nodes.
#[derive(Clone)]
pub struct NativeSidecarDetector {
    mode: NativeMode,
    nodes: Option<Store<Node>>,
    aggregate: Arc<NodeAggregate>,
}

impl std::fmt::Debug for NativeSidecarDetector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativeSidecarDetector")
            .field("mode", &self.mode)
            .field("nodes", &self.nodes.as_ref().map(Store::len))
            .field("aggregated", &self.aggregate.node_count())
            .field("failing", &self.aggregate.failing.load(Ordering::Relaxed))
            .finish()
    }
}

impl NativeSidecarDetector {
    /// A detector without a node cache (mode Enabled or Disabled, or no cluster).
    pub fn without_nodes(mode: NativeMode) -> Self {
        NativeSidecarDetector {
            mode,
            nodes: None,
            aggregate: Arc::default(),
        }
    }

    /// A detector over an existing store and the aggregate fed by the same events (by
    /// [`NativeSidecarDetector::start`] or by tests).
    pub fn with_store(mode: NativeMode, nodes: Store<Node>, aggregate: Arc<NodeAggregate>) -> Self {
        NativeSidecarDetector {
            mode,
            nodes: Some(nodes),
            aggregate,
        }
    }

    /// Start the node watch when the mode needs it. Returns the detector and the future that
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
        let detector = if active {
            Self::with_store(mode, store, aggregate)
        } else {
            Self::without_nodes(mode)
        };
        (detector, run)
    }

    /// Wait until the first full list of nodes is cached (no-op without a cache).
    pub async fn wait_until_ready(&self) {
        if let Some(store) = &self.nodes {
            let _ = store.wait_until_ready().await;
        }
    }

    /// Istio's `DetectNativeSidecar` for a pod scheduled on `node_name` (if already known).
    pub fn detect(&self, node_name: Option<&str>) -> bool {
        match self.mode {
            NativeMode::Enabled => return true,
            NativeMode::Disabled => return false,
            NativeMode::Auto => {}
        }
        let Some(nodes) = &self.nodes else {
            tracing::warn!(
                "configured to auto detect native sidecar support, but couldn't find a client"
            );
            return false;
        };
        if let Some(name) = node_name.filter(|n| !n.is_empty()) {
            match nodes.get(&ObjectRef::new(name)) {
                Some(node) => return node_passes(&node),
                None => {
                    tracing::warn!("pod assigned to node {name:?} but node not found in cluster")
                }
            }
        }
        self.aggregate.all_pass()
    }
}

/// A detector fed with `events`, as the watch feeds it; returns the writer for more.
#[cfg(test)]
pub(crate) fn fed(
    events: Vec<watcher::Event<Node>>,
) -> (NativeSidecarDetector, impl FnMut(watcher::Event<Node>)) {
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
    (
        NativeSidecarDetector::with_store(NativeMode::Auto, store, aggregate),
        feed,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::mock;
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

    fn detector(nodes: &[(&str, &str)]) -> NativeSidecarDetector {
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
        assert!(!d.detect(None));
        // The old node is upgraded in place.
        feed(watcher::Event::Apply(node("b", "v1.34.0")));
        assert!(d.detect(None));
        // An old node joins, then leaves.
        feed(watcher::Event::Apply(node("c", "v1.30.0")));
        assert!(!d.detect(None));
        feed(watcher::Event::Apply(node("c", "v1.30.1")));
        assert_eq!(
            d.aggregate.failing.load(Ordering::Relaxed),
            1,
            "updates do not double count"
        );
        feed(watcher::Event::Delete(node("c", "v1.30.1")));
        assert!(d.detect(None));
        // A relist replaces everything at InitDone, not before.
        feed(watcher::Event::Init);
        feed(watcher::Event::InitApply(node("z", "v1.20.0")));
        assert!(d.detect(None), "the old view holds during a relist");
        feed(watcher::Event::InitDone);
        assert!(!d.detect(None));
        assert_eq!(d.aggregate.node_count(), 1);
    }

    #[test]
    fn kubelet_versions() {
        assert_eq!(kubelet_supports_native("v1.33.0"), Ok(true));
        assert_eq!(kubelet_supports_native("1.34.2+k3s1"), Ok(true));
        assert_eq!(kubelet_supports_native("v1.32.5-gke.100"), Ok(false));
        assert_eq!(
            kubelet_supports_native("v2.10.0"),
            Ok(false),
            "major is ignored"
        );
        for bad in ["", "v1.33", "garbage", "v1.x.0", "v1.033.0"] {
            assert!(kubelet_supports_native(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn env_values() {
        assert_eq!(NativeMode::from_env_value(None), (NativeMode::Auto, None));
        assert_eq!(
            NativeMode::from_env_value(Some("true")).0,
            NativeMode::Enabled
        );
        let (mode, warning) = NativeMode::from_env_value(Some("yes"));
        assert_eq!(mode, NativeMode::Disabled);
        assert_eq!(
            warning.as_deref(),
            Some("Unknown value for ENABLE_NATIVE_SIDECARS: yes, defaulting to false")
        );
    }

    #[test]
    fn every_node_must_pass_unless_the_pod_has_a_known_node() {
        let d = detector(&[("new", "v1.33.1"), ("old", "v1.32.0")]);
        assert!(!d.detect(None));
        assert!(d.detect(Some("new")));
        assert!(!d.detect(Some("old")));
        assert!(
            !d.detect(Some("unknown")),
            "an unknown node falls through to all nodes"
        );
        assert!(detector(&[("a", "v1.33.0"), ("b", "v1.35.0")]).detect(None));
        assert!(detector(&[]).detect(None), "an empty node list passes");
        assert!(
            !detector(&[("a", "weird")]).detect(None),
            "unparseable versions fail"
        );
    }

    #[test]
    fn fixed_modes_ignore_nodes() {
        assert!(NativeSidecarDetector::without_nodes(NativeMode::Enabled).detect(None));
        assert!(!NativeSidecarDetector::without_nodes(NativeMode::Disabled).detect(Some("x")));
        assert!(
            !NativeSidecarDetector::without_nodes(NativeMode::Auto).detect(None),
            "no client"
        );
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
        let (d, run) = NativeSidecarDetector::start(client, NativeMode::Auto);
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
        assert!(d.detect(None));
        // An old node joins: auto mode turns native sidecars off.
        let mut old = node_json("b", "v1.31.4");
        old["metadata"]["resourceVersion"] = json!("11");
        watch.respond_raw(200, mock::watch_line("ADDED", &old));
        for _ in 0..50 {
            if !d.detect(None) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert!(!d.detect(None));
        assert!(d.detect(Some("a")));
        task.abort();
    }
}
