//! `serve --kube --watch-pods`: the server keeps drift's judgement of the pods its webhook
//! selects current from a watch of every pod, and exports it as
//! `outrigger_pods{namespace,state,cause}` ([`PODS`]), a count per namespace, never per pod:
//!
//! * `current`: injected by outrigger's webhook (the library's marker,
//!   [`selection::injected_by_outrigger`]) and what the configuration in force gives it;
//! * `stale`, with the cause class of what differs ([`cause_class`]): `image`, `template`,
//!   `mesh-config`, `native-sidecars`, or `revision` (injected by another revision of
//!   outrigger), `unwanted-sidecar` (the configuration no longer injects it);
//! * `missing`: no sidecar although outrigger's webhook selects the pod and the configuration
//!   injects it: a pod admitted while the webhook failed open.
//!
//! Selection is the library's one rule ([`selection::selecting_entry`]) over the entries of the
//! server's own MutatingWebhookConfiguration (re-read every [`WEBHOOK_PERIOD`]) with the
//! namespace's labels; a pod another injector injected (a sidecar, no marker) is not
//! outrigger's: it is neither counted nor missing. The judgement is `drift --kube`'s
//! ([`outrigger_inject::drift::judge_selected`]).
//!
//! Memory: a compact summary per pod (its key, a fingerprint of what the judgement reads, its
//! verdict), never the pod. Each watch event is judged at once (off the async workers); an
//! update that changes neither labels, annotations nor spec (a status update) is not judged
//! again. When the configuration in force changes (a reload swaps the snapshot), the webhook
//! configuration's entries change, or a namespace's labels change, the watch is restarted: its
//! list re-judges every pod, and the counts are replaced at once when the list is complete.
//!
//! With `--events`, a pod the watch sees for the first time is handed to the Event sink: the
//! Event a caller without a client certificate asked for it is written then
//! ([`crate::kube::event_hold`]).

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use ::kube::api::{Api, ApiResource, DynamicObject};
use ::kube::core::PartialObjectMeta;
use ::kube::runtime::{watcher, WatchStreamExt};
use ::kube::Client;
use anyhow::Result;
use futures::StreamExt;
use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use outrigger_inject::config::Snapshot;
use outrigger_inject::decide::native::{ClusterFacts, NativeMode};
use outrigger_inject::decide::selection;
use outrigger_inject::drift::{FieldDiff, State};
use outrigger_inject::inject::Settings;
use outrigger_inject::kube::names::STATUS_ANNOTATION;
use outrigger_inject::kube::pod::{annotation, meta_str};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use serde_json::{Map, Value};

use super::cluster::SharedFacts;
use super::handler;

/// Labels of `outrigger_pods`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PodsLabel {
    /// The pods' namespace.
    pub namespace: String,
    /// `current`, `stale` or `missing`.
    pub state: String,
    /// The cause class of `stale` pods ([`cause_class`]); empty otherwise.
    pub cause: String,
}

/// `outrigger_pods{namespace,state,cause}` (`--watch-pods`; registered by the server's metrics).
pub static PODS: LazyLock<Family<PodsLabel, Gauge>> = LazyLock::new(Family::default);

/// How often the server's webhook configuration is read again (its selectors may change).
pub const WEBHOOK_PERIOD: Duration = Duration::from_secs(30);

/// How often the configuration in force is compared with the one the pods were judged with.
const CONFIG_CHECK: Duration = Duration::from_secs(1);

/// What one pod counts as: `state` and `cause` of [`PodsLabel`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Verdict {
    /// `current`, `stale` or `missing`.
    pub state: &'static str,
    /// The cause class of a stale pod, else `""`.
    pub cause: &'static str,
}

/// The cause class of a stale pod's differing fields, the most telling first: `native-sidecars`
/// (the proxy moved between containers and init containers: the native-sidecar mode), `image`
/// (a container image: the hub, tag or image settings), `mesh-config` (the proxy's
/// environment the templates fill from the mesh configuration: `PROXY_CONFIG`,
/// `TRUST_DOMAIN`, `ISTIO_META_MESH_ID`), else `template`. Drift's own cause of each field
/// ([`FieldDiff::cause`]) decides the first two.
pub fn cause_class(fields: &[FieldDiff]) -> &'static str {
    const MESH_ENV: [&str; 3] = [
        ".env[PROXY_CONFIG]",
        ".env[TRUST_DOMAIN]",
        ".env[ISTIO_META_MESH_ID]",
    ];
    if fields.iter().any(|f| f.cause == "native sidecars") {
        "native-sidecars"
    } else if fields.iter().any(|f| f.cause == "proxy image") {
        "image"
    } else if fields
        .iter()
        .any(|f| MESH_ENV.iter().any(|e| f.path.contains(e)))
    {
        "mesh-config"
    } else {
        "template"
    }
}

/// Everything one pass of the watch judges pods with: the configuration in force, the server's
/// webhook entries, the injection settings.
pub struct Judge {
    /// The configuration the pods are judged against.
    pub snapshot: Arc<Snapshot>,
    /// `webhooks` of the server's MutatingWebhookConfiguration.
    pub webhooks: Vec<Value>,
    /// Native-sidecar mode; in auto mode `nodes` answers per node.
    pub native_mode: NativeMode,
    /// Cached node facts (auto mode).
    pub nodes: Option<Arc<SharedFacts>>,
    /// The revision served.
    pub revision: String,
    /// `COMPLIANCE_POLICY`.
    pub compliance_policy: String,
}

impl Judge {
    /// What `pod` (as stored) in a namespace labelled `ns_labels` counts as; `None` when it is
    /// not counted (not selected by the webhook, rightly not injected, or injected by another
    /// injector). Errors are injection's (a pod the configuration cannot inject).
    pub fn verdict(&self, pod: Value, ns_labels: &Map<String, Value>) -> Result<Option<Verdict>> {
        let namespace = meta_str(&pod, "namespace").to_string();
        let ns_labels = selection::namespace_labels(&namespace, ns_labels);
        let pod_labels = pod
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        if selection::selecting_entry(&self.webhooks, &ns_labels, &pod_labels).is_none() {
            return Ok(None);
        }
        let has_sidecar = annotation(&pod, STATUS_ANNOTATION).is_some();
        if has_sidecar && !selection::injected_by_outrigger(&pod) {
            return Ok(None);
        }
        let settings = Settings {
            snapshot: &self.snapshot,
            native_sidecars: self.native_mode == NativeMode::Enabled,
            revision: &self.revision,
            compliance_policy: &self.compliance_policy,
        };
        let nodes = match self.native_mode {
            NativeMode::Auto => self.nodes.as_deref().map(|n| n as &dyn ClusterFacts),
            _ => None,
        };
        let (drift, _, _) = outrigger_inject::drift::judge_selected(pod, true, nodes, &settings)?;
        let verdict = |state, cause| Some(Verdict { state, cause });
        Ok(match drift.state {
            State::Current => verdict("current", ""),
            State::Stale => verdict("stale", cause_class(&drift.fields)),
            State::WrongRevision => verdict("stale", "revision"),
            State::UnwantedSidecar => verdict("stale", "unwanted-sidecar"),
            State::MissingSidecar => verdict("missing", ""),
            State::NotInjected => None,
        })
    }
}

/// A pod's key: namespace and name.
type PodKey = (String, String);

/// The summary kept of one pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    /// [`fingerprint`] of what the judgement read.
    fingerprint: u64,
    /// What it counts as (`None`: not counted).
    verdict: Option<Verdict>,
}

/// A fingerprint of what judging a pod reads: its labels, annotations and spec (a status
/// update leaves it unchanged).
fn fingerprint(pod: &Value) -> u64 {
    let mut h = DefaultHasher::new();
    for p in ["/metadata/labels", "/metadata/annotations", "/spec"] {
        pod.pointer(p)
            .map(Value::to_string)
            .unwrap_or_default()
            .hash(&mut h);
    }
    h.finish()
}

/// The summaries of the pods and their counts by (namespace, state, cause), published to a
/// gauge family as they change (a series that drops to 0 is removed).
pub struct Tally {
    pods: HashMap<PodKey, Entry>,
    counts: HashMap<(String, &'static str, &'static str), i64>,
    gauge: Family<PodsLabel, Gauge>,
}

impl Tally {
    /// An empty tally publishing to `gauge`.
    pub fn new(gauge: Family<PodsLabel, Gauge>) -> Tally {
        Tally {
            pods: HashMap::new(),
            counts: HashMap::new(),
            gauge,
        }
    }

    /// Pods summarised.
    pub fn len(&self) -> usize {
        self.pods.len()
    }

    fn publish(&self, series: &(String, &'static str, &'static str)) {
        let label = PodsLabel {
            namespace: series.0.clone(),
            state: series.1.to_string(),
            cause: series.2.to_string(),
        };
        match self.counts.get(series).copied().unwrap_or(0) {
            0 => {
                self.gauge.remove(&label);
            }
            n => {
                self.gauge.get_or_create(&label).set(n);
            }
        }
    }

    fn count(&mut self, namespace: &str, verdict: Option<Verdict>, by: i64) {
        let Some(v) = verdict else { return };
        let series = (namespace.to_string(), v.state, v.cause);
        let n = self.counts.entry(series.clone()).or_insert(0);
        *n += by;
        if *n <= 0 {
            self.counts.remove(&series);
        }
        self.publish(&series);
    }

    fn set(&mut self, key: PodKey, entry: Entry) {
        let ns = key.0.clone();
        let old = self.pods.insert(key, entry).and_then(|e| e.verdict);
        if old != entry.verdict {
            self.count(&ns, old, -1);
            self.count(&ns, entry.verdict, 1);
        }
    }

    fn remove(&mut self, key: &PodKey) {
        if let Some(old) = self.pods.remove(key) {
            self.count(&key.0, old.verdict, -1);
        }
    }

    /// Replace every summary with `pods` (a complete list), the counts with theirs.
    fn replace(&mut self, pods: HashMap<PodKey, Entry>) {
        let old: Vec<_> = self.counts.keys().cloned().collect();
        self.pods = pods;
        self.counts.clear();
        for ((ns, _), e) in &self.pods {
            if let Some(v) = e.verdict {
                *self
                    .counts
                    .entry((ns.clone(), v.state, v.cause))
                    .or_insert(0) += 1;
            }
        }
        for series in old.iter().chain(self.counts.keys()) {
            self.publish(series);
        }
    }

    /// The count of (namespace, state, cause).
    #[cfg(test)]
    pub fn get(&self, namespace: &str, state: &str, cause: &str) -> i64 {
        self.counts
            .iter()
            .find(|((n, s, c), _)| n == namespace && *s == state && *c == cause)
            .map_or(0, |(_, v)| *v)
    }
}

/// The `webhooks` of the MutatingWebhookConfiguration `name`; `None` (said at WARN) when it
/// cannot be read.
async fn read_webhooks(client: &Client, name: &str) -> Option<Vec<Value>> {
    let api = Api::<MutatingWebhookConfiguration>::all(client.clone());
    match api.get(name).await {
        Ok(c) => Some(
            serde_json::to_value(&c)
                .ok()
                .and_then(|v| v.get("webhooks").and_then(Value::as_array).cloned())
                .unwrap_or_default(),
        ),
        Err(e) => {
            tracing::warn!(
                webhook = name,
                "--watch-pods: reading the webhook configuration: {}",
                crate::report::chain(&crate::kube::client::api_error(e))
            );
            None
        }
    }
}

/// Labels of a namespace as JSON strings.
fn labels_of(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> Map<String, Value> {
    meta.labels
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect()
}

/// A stored pod as the judgement reads it: JSON, without `managedFields` and `status`.
fn pod_json(mut pod: DynamicObject) -> (PodKey, Value) {
    pod.metadata.managed_fields = None;
    if let Some(m) = pod.data.as_object_mut() {
        m.remove("status");
    }
    let key = (
        pod.metadata.namespace.clone().unwrap_or_default(),
        pod.metadata.name.clone().unwrap_or_default(),
    );
    let mut v = serde_json::to_value(&pod).unwrap_or(Value::Null);
    if let Some(m) = v.as_object_mut() {
        m.entry("apiVersion").or_insert_with(|| Value::from("v1"));
        m.entry("kind").or_insert_with(|| Value::from("Pod"));
    }
    (key, v)
}

/// Judge one pod off the async workers.
async fn judge_pod(judge: &Arc<Judge>, pod: Value, labels: Map<String, Value>) -> Entry {
    let fingerprint = fingerprint(&pod);
    let (ns, name) = (
        meta_str(&pod, "namespace").to_string(),
        meta_str(&pod, "name").to_string(),
    );
    let j = judge.clone();
    let verdict = match tokio::task::spawn_blocking(move || j.verdict(pod, &labels)).await {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            tracing::warn!(pod = %format!("{ns}/{name}"), "--watch-pods: not judged: {}", crate::report::chain(&e));
            None
        }
        Err(e) => {
            tracing::error!(pod = %format!("{ns}/{name}"), "--watch-pods: judging failed: {e}");
            None
        }
    };
    Entry {
        fingerprint,
        verdict,
    }
}

/// A pod the watch had not seen before (created since, or since its last list): the Event a
/// caller without a client certificate asked for it is written now (`--events`,
/// [`crate::kube::event_hold`]).
fn seen_created(state: &handler::State, pod: &Value) {
    if let Some(sink) = &state.events {
        sink.pod_created(pod);
    }
}

/// Why a pass of the pod watch ended.
enum Restart {
    Config,
    Webhook,
    Namespace(String),
}

impl std::fmt::Display for Restart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Restart::Config => f.write_str("the configuration in force changed"),
            Restart::Webhook => f.write_str("the webhook configuration's entries changed"),
            Restart::Namespace(n) => write!(f, "the labels of namespace {n} changed"),
        }
    }
}

/// Run the pod watch for `state` until aborted, selecting with the webhook configuration
/// `webhook` and publishing to [`PODS`].
pub async fn run(client: Client, state: Arc<handler::State>, webhook: String) {
    let pods_api: Api<DynamicObject> =
        Api::all_with(client.clone(), &ApiResource::erase::<Pod>(&()));
    let mut namespaces = watcher(
        Api::<PartialObjectMeta<Namespace>>::all(client.clone()),
        watcher::Config::default(),
    )
    .default_backoff()
    .boxed();
    let mut ns_labels: HashMap<String, Map<String, Value>> = HashMap::new();
    // The namespaces' labels first: a pod judged without them would count wrongly.
    let mut ns_pending: Option<HashMap<String, Map<String, Value>>> = None;
    while let Some(event) = namespaces.next().await {
        match event {
            Ok(watcher::Event::Init) => ns_pending = Some(HashMap::new()),
            Ok(watcher::Event::InitApply(ns) | watcher::Event::Apply(ns)) => {
                let name = ns.metadata.name.clone().unwrap_or_default();
                ns_pending
                    .get_or_insert_with(HashMap::new)
                    .insert(name, labels_of(&ns.metadata));
            }
            Ok(watcher::Event::InitDone) => {
                ns_labels = ns_pending.take().unwrap_or_default();
                break;
            }
            Ok(watcher::Event::Delete(_)) => {}
            Err(e) => tracing::warn!("--watch-pods: namespace watch failed: {e}"),
        }
    }
    let mut tally = Tally::new(PODS.clone());
    loop {
        let judge = Arc::new(Judge {
            snapshot: state.snapshot.load_full(),
            // Unread, nothing is selected (and counted) until a later read succeeds.
            webhooks: read_webhooks(&client, &webhook).await.unwrap_or_default(),
            native_mode: state.inject.native_mode,
            nodes: state.cluster.clone(),
            revision: state.inject.revision.clone(),
            compliance_policy: state.inject.compliance_policy.clone(),
        });
        let mut pods = watcher(pods_api.clone(), watcher::Config::default())
            .default_backoff()
            .boxed();
        let mut check = tokio::time::interval(CONFIG_CHECK);
        let mut webhook_check = tokio::time::interval(WEBHOOK_PERIOD);
        webhook_check.tick().await;
        let mut pending: Option<HashMap<PodKey, Entry>> = None;
        let why = loop {
            tokio::select! {
                event = pods.next() => match event {
                    None => break Restart::Config,
                    Some(Err(e)) => tracing::warn!("--watch-pods: pod watch failed: {e}"),
                    Some(Ok(watcher::Event::Init)) => pending = Some(HashMap::new()),
                    Some(Ok(watcher::Event::InitApply(pod))) => {
                        let (key, pod) = pod_json(pod);
                        if !tally.pods.contains_key(&key) {
                            seen_created(&state, &pod);
                        }
                        let labels = ns_labels.get(&key.0).cloned().unwrap_or_default();
                        let entry = judge_pod(&judge, pod, labels).await;
                        pending.get_or_insert_with(HashMap::new).insert(key, entry);
                    }
                    Some(Ok(watcher::Event::InitDone)) => {
                        tally.replace(pending.take().unwrap_or_default());
                        tracing::info!(pods = tally.len(), "--watch-pods: every pod judged");
                    }
                    Some(Ok(watcher::Event::Apply(pod))) => {
                        let (key, pod) = pod_json(pod);
                        if !tally.pods.contains_key(&key) {
                            seen_created(&state, &pod);
                        }
                        let unchanged = tally.pods.get(&key).is_some_and(|e| e.fingerprint == fingerprint(&pod));
                        if !unchanged {
                            let labels = ns_labels.get(&key.0).cloned().unwrap_or_default();
                            let entry = judge_pod(&judge, pod, labels).await;
                            tally.set(key, entry);
                        }
                    }
                    Some(Ok(watcher::Event::Delete(pod))) => {
                        let (key, _) = pod_json(pod);
                        tally.remove(&key);
                    }
                },
                event = namespaces.next() => match event {
                    Some(Ok(watcher::Event::Apply(ns) | watcher::Event::InitApply(ns))) => {
                        let name = ns.metadata.name.clone().unwrap_or_default();
                        let labels = labels_of(&ns.metadata);
                        if ns_labels.get(&name) != Some(&labels) {
                            let known = ns_labels.insert(name.clone(), labels).is_some();
                            // A namespace's first pods come after it: only a change re-judges.
                            if known {
                                break Restart::Namespace(name);
                            }
                        }
                    }
                    Some(Ok(watcher::Event::Delete(ns))) => {
                        ns_labels.remove(ns.metadata.name.as_deref().unwrap_or_default());
                    }
                    Some(Ok(_)) => {}
                    Some(Err(e)) => tracing::warn!("--watch-pods: namespace watch failed: {e}"),
                    None => {}
                },
                _ = check.tick() => {
                    if !Arc::ptr_eq(&judge.snapshot, &state.snapshot.load()) {
                        break Restart::Config;
                    }
                }
                _ = webhook_check.tick() => {
                    // A failed read keeps the entries judged with.
                    if read_webhooks(&client, &webhook)
                        .await
                        .is_some_and(|w| w != judge.webhooks)
                    {
                        break Restart::Webhook;
                    }
                }
            }
        };
        tracing::info!("--watch-pods: {why}: judging every pod again");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use outrigger_inject::config::defaults;
    use outrigger_inject::ingest::workload::workload_from_pod;
    use outrigger_inject::inject::{inject_pod, InjectParams, Mode};
    use serde_json::json;

    fn entry() -> Value {
        json!({"name": "rev.namespace.sidecar-injector.istio.io",
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
            "namespaceSelector": {"matchLabels": {"istio.io/rev": "outrigger"}}})
    }

    fn judge_with(snapshot: Snapshot) -> Judge {
        Judge {
            snapshot: Arc::new(snapshot),
            webhooks: vec![entry()],
            native_mode: NativeMode::Disabled,
            nodes: None,
            revision: "default".into(),
            compliance_policy: String::new(),
        }
    }

    fn plain(ns: &str, name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": {"app": name}},
            "spec": {"containers": [{"name": "app", "image": "example/app:1"}]}})
    }

    fn injected(snapshot: &Snapshot, ns: &str, name: &str, marked: bool) -> Value {
        let pod = plain(ns, name);
        let params = InjectParams {
            snapshot,
            mode: Mode::Webhook,
            workload: workload_from_pod(&pod),
            revision: "default",
            native_sidecars: false,
            proxy_envs: Default::default(),
            proxy_uid_gid: None,
            compliance_policy: "",
        };
        let mut pod = inject_pod(&pod, &params).expect("inject").pod;
        if marked {
            selection::mark_injected(&mut pod);
        }
        pod
    }

    fn selected() -> Map<String, Value> {
        json!({"istio.io/rev": "outrigger"})
            .as_object()
            .cloned()
            .expect("labels")
    }

    #[test]
    fn verdicts_of_current_stale_missing_and_foreign_pods() {
        let snap = defaults::snapshot().expect("defaults");
        let judge = judge_with(snap.clone());
        let v =
            |pod: Value, labels: &Map<String, Value>| judge.verdict(pod, labels).expect("judged");
        let current = Some(Verdict {
            state: "current",
            cause: "",
        });
        assert_eq!(v(injected(&snap, "apps", "a", true), &selected()), current);
        let mut old = snap.clone();
        old.values["global"]["hub"] = json!("registry.example/old");
        old.values_facts = outrigger_inject::config::ValuesFacts::from_values(&old.values);
        assert_eq!(
            v(injected(&old, "apps", "b", true), &selected()),
            Some(Verdict {
                state: "stale",
                cause: "image"
            })
        );
        assert_eq!(
            v(plain("apps", "c"), &selected()),
            Some(Verdict {
                state: "missing",
                cause: ""
            })
        );
        // istiod's injection (no marker) is not outrigger's, stale or not.
        assert_eq!(v(injected(&old, "apps", "d", false), &selected()), None);
        // Not selected by the webhook: not counted, injected or not.
        assert_eq!(v(plain("other", "e"), &Map::new()), None);
        assert_eq!(v(injected(&snap, "other", "f", true), &Map::new()), None);
    }

    #[test]
    fn tally_counts_per_namespace_and_removes_empty_series() {
        let family = Family::<PodsLabel, Gauge>::default();
        let mut t = Tally::new(family.clone());
        let current = Some(Verdict {
            state: "current",
            cause: "",
        });
        let missing = Some(Verdict {
            state: "missing",
            cause: "",
        });
        let key = |n: &str| ("apps".to_string(), n.to_string());
        t.set(
            key("a"),
            Entry {
                fingerprint: 1,
                verdict: current,
            },
        );
        t.set(
            key("b"),
            Entry {
                fingerprint: 1,
                verdict: current,
            },
        );
        t.set(
            key("c"),
            Entry {
                fingerprint: 1,
                verdict: missing,
            },
        );
        assert_eq!(t.get("apps", "current", ""), 2);
        assert_eq!(t.get("apps", "missing", ""), 1);
        // Judged again as current: the missing series goes.
        t.set(
            key("c"),
            Entry {
                fingerprint: 2,
                verdict: current,
            },
        );
        assert_eq!(t.get("apps", "current", ""), 3);
        let label = |state: &str| PodsLabel {
            namespace: "apps".into(),
            state: state.into(),
            cause: String::new(),
        };
        assert!(
            !family.remove(&label("missing")),
            "the series was removed at 0"
        );
        assert_eq!(family.get_or_create(&label("current")).get(), 3);
        t.remove(&key("a"));
        assert_eq!(family.get_or_create(&label("current")).get(), 2);
        t.replace(HashMap::from([(
            key("z"),
            Entry {
                fingerprint: 0,
                verdict: missing,
            },
        )]));
        assert_eq!(t.get("apps", "current", ""), 0);
        assert_eq!(t.get("apps", "missing", ""), 1);
        assert!(
            !family.remove(&label("current")),
            "removed by the replacement"
        );
        assert_eq!(t.len(), 1);
    }

    fn resident_bytes() -> Option<u64> {
        let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
        let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
        Some(pages * 4096)
    }

    /// Benchmark, run on demand (`cargo test -p outrigger --bin outrigger --release --
    /// --ignored bench_pod_watch`): the memory of 150,000 pods' summaries (process resident
    /// growth, an upper bound) and the time to judge 1,000 injected pods, printed.
    #[test]
    #[ignore = "benchmark: run with --ignored on a quiet machine"]
    fn bench_pod_watch_memory_and_judging() {
        let before = resident_bytes();
        let mut t = Tally::new(Family::default());
        let current = Some(Verdict {
            state: "current",
            cause: "",
        });
        for i in 0..150_000 {
            let key = (
                format!("team-{:03}", i % 500),
                format!("web-7c9d8f6b5d-{i:06}"),
            );
            t.set(
                key,
                Entry {
                    fingerprint: i,
                    verdict: current,
                },
            );
        }
        let after = resident_bytes();
        let grown = after.zip(before).map_or(0, |(a, b)| a.saturating_sub(b));
        eprintln!(
            "150,000 pod summaries: resident +{} KiB ({} bytes a pod)",
            grown / 1024,
            grown / 150_000
        );
        let snap = defaults::snapshot().expect("defaults");
        let judge = judge_with(snap.clone());
        let pods: Vec<Value> = (0..1_000)
            .map(|i| injected(&snap, "apps", &format!("p{i}"), true))
            .collect();
        let start = std::time::Instant::now();
        for pod in pods {
            assert_eq!(judge.verdict(pod, &selected()).expect("judged"), current);
        }
        eprintln!("1,000 pods judged in {:?}", start.elapsed());
        assert_eq!(t.len(), 150_000);
    }

    #[test]
    fn a_status_update_keeps_the_fingerprint() {
        let a = plain("apps", "a");
        let mut b = a.clone();
        b["status"] = json!({"phase": "Running"});
        assert_eq!(fingerprint(&a), fingerprint(&b));
        b["metadata"]["labels"]["x"] = json!("y");
        assert_ne!(fingerprint(&a), fingerprint(&b));
    }

    #[test]
    fn cause_classes() {
        let f = |path: &str, cause: &'static str| FieldDiff {
            path: path.into(),
            actual: None,
            expected: None,
            cause,
        };
        assert_eq!(cause_class(&[f("spec.x", "template")]), "template");
        assert_eq!(
            cause_class(&[
                f(
                    "spec.containers[istio-proxy].env[PROXY_CONFIG].value",
                    "template"
                ),
                f("spec.x", "template")
            ]),
            "mesh-config"
        );
        assert_eq!(
            cause_class(&[
                f("spec.containers[istio-proxy].image", "proxy image"),
                f(
                    "spec.containers[istio-proxy].env[PROXY_CONFIG].value",
                    "template"
                )
            ]),
            "image"
        );
        assert_eq!(
            cause_class(&[
                f("spec.containers[istio-proxy]", "native sidecars"),
                f("spec.containers[istio-proxy].image", "proxy image")
            ]),
            "native-sidecars"
        );
    }
}
