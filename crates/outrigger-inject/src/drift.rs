//! Drift: how an injected pod differs from what the configuration in force would give it.
//!
//! One engine for every front end: the pod is taken back to what it was before injection
//! ([`crate::reinject::recover_pod`]), injected again with the configuration in force, and the
//! parts injection owns are compared (the containers, init containers, volumes and pull secrets
//! either status annotation lists, the application containers' probes and lifecycle hooks, the
//! labels and annotations injection writes); nothing else of the pod is drift. The outcome is
//! classified ([`State`]) with the differing fields and, where it can be told, what they come
//! from.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use serde_json::{json, Map, Value};

use crate::decide::inject_required;
use crate::decide::native::{detect_native_sidecars, ClusterFacts, NativeMode, StaticFacts};
use crate::decide::selection::{revision_name, DEFAULT_REVISION};
use crate::ingest::previous::Status;
use crate::ingest::recover::INJECTED_LABELS;
use crate::ingest::workload::{workload_from_pod, WorkloadMeta};
use crate::inject::{normalize_pod, InjectParams, Mode, Settings};
use crate::kube::annotations::compared_by_drift;
use crate::kube::names::{APP_PROBERS_ENV, STATUS_ANNOTATION};
use crate::kube::pod::{annotation, container_name, meta_str};
use crate::kube::pod_diff;
use crate::kube::prometheus::sanitize_label_name;
use crate::kube::stored::store_defaults;
use crate::reinject::reinject_pod;
use crate::Result;

/// How a pod stands against the configuration in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum State {
    /// Injected, and injecting it again gives what it has.
    Current,
    /// Not injected, and not to be injected.
    NotInjected,
    /// Injected, but injecting it again gives something else.
    Stale,
    /// Injected by another revision.
    WrongRevision,
    /// Should have a sidecar and has none.
    MissingSidecar,
    /// Has a sidecar it should not have (injection disabled, host network).
    UnwantedSidecar,
}

impl State {
    /// The name used in tables and JSON: `current`, `stale`, `missing-sidecar`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            State::Current => "current",
            State::NotInjected => "not-injected",
            State::Stale => "stale",
            State::WrongRevision => "wrong-revision",
            State::MissingSidecar => "missing-sidecar",
            State::UnwantedSidecar => "unwanted-sidecar",
        }
    }

    /// Whether the pod needs attention (anything but current or rightly not injected).
    pub fn is_drift(self) -> bool {
        !matches!(self, State::Current | State::NotInjected)
    }
}

/// One field that differs: where, what the pod has, what injection would give it.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldDiff {
    /// Path in the pod (`spec.containers[istio-proxy].image`; list elements by name).
    pub path: String,
    /// The pod's value (`None`: absent).
    pub actual: Option<Value>,
    /// The value injection gives (`None`: absent).
    pub expected: Option<Value>,
    /// What the difference comes from, where it can be told: `proxy image`, `native sidecars`,
    /// `revision`, else `template`.
    pub cause: &'static str,
}

/// The drift of one pod.
#[derive(Debug, Clone, PartialEq)]
pub struct PodDrift {
    /// The classification.
    pub state: State,
    /// Revision recorded by the pod's injection, if injected.
    pub injected_revision: Option<String>,
    /// Revision of the configuration in force (`default` when none).
    pub expected_revision: String,
    /// The differing fields (stale and wrong-revision pods).
    pub fields: Vec<FieldDiff>,
}

/// Classify `pod` against injection with `params`; `wanted` says whether the configuration in
/// force injects it (the caller's decision: kube-inject's for manifests, the webhook's for a
/// cluster). Errors are injection's own (a pod the configuration cannot inject).
pub fn pod_drift(pod: &Value, params: &InjectParams<'_>, wanted: bool) -> Result<PodDrift> {
    drift_of(Cow::Borrowed(pod), params, wanted, false)
}

/// [`pod_drift`] for a pod read from the API server. What the API server and others add is not
/// drift: both sides get the API server's container and volume defaults and the
/// service-account token mount ([`crate::kube::stored::store_defaults`]); resource keys the
/// pod's injected containers have and injection does not write (a LimitRange's defaults, which
/// only add) are kept; `status` and `managedFields` are not read.
pub fn stored_pod_drift(pod: &Value, params: &InjectParams<'_>, wanted: bool) -> Result<PodDrift> {
    drift_of(Cow::Borrowed(pod), params, wanted, true)
}

/// [`stored_pod_drift`] taking the pod by value, for readers done with it (no copy of the pod
/// is made: its metadata and spec are examined in place).
pub fn stored_pod_drift_owned(
    pod: Value,
    params: &InjectParams<'_>,
    wanted: bool,
) -> Result<PodDrift> {
    drift_of(Cow::Owned(pod), params, wanted, true)
}

fn drift_of(
    pod: Cow<'_, Value>,
    params: &InjectParams<'_>,
    wanted: bool,
    stored: bool,
) -> Result<PodDrift> {
    let expected_revision = revision_name(params.revision).to_string();
    let injected_revision = injected_revision(&pod);
    let outcome = |state, fields| PodDrift {
        state,
        injected_revision: injected_revision.clone(),
        expected_revision: expected_revision.clone(),
        fields,
    };
    match (injected_revision.is_some(), wanted) {
        (false, false) => return Ok(outcome(State::NotInjected, Vec::new())),
        (false, true) => return Ok(outcome(State::MissingSidecar, Vec::new())),
        (true, false) => return Ok(outcome(State::UnwantedSidecar, Vec::new())),
        (true, true) => {}
    }
    let mut actual = match (stored, pod) {
        (true, Cow::Borrowed(pod)) => stored_view(pod),
        (true, Cow::Owned(pod)) => stored_view_owned(pod),
        (false, pod) => pod.into_owned(),
    };
    if let Some(m) = actual.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("managedFields");
    }
    normalize_pod(&mut actual)?;
    let mut expected = reinject_pod(&actual, params)?.pod;
    if stored {
        store_defaults(&mut actual);
        store_defaults(&mut expected);
        keep_added_resources(&actual, &mut expected);
        same_rendered_env(&mut actual, &expected);
    }
    let fields = owned_differences(&actual, &expected);
    let state = if injected_revision.as_deref() != Some(expected_revision.as_str()) {
        State::WrongRevision
    } else if fields.is_empty() {
        State::Current
    } else {
        State::Stale
    };
    Ok(outcome(state, fields))
}

/// `judge` applied to each of `pods` (taken by value) on up to `threads` threads (the
/// caller's cores), the outcomes in the order of `pods`: drift of a page of pods, each pod on
/// its own (pods are independent; the order of the outcomes, hence of any report built from
/// them, is the listing's whatever the threads do). One thread, or one pod, runs on the
/// caller's thread.
pub fn in_parallel<T: Send, R: Send>(
    pods: Vec<T>,
    threads: usize,
    judge: impl Fn(T) -> R + Sync,
) -> Vec<R> {
    let threads = threads.clamp(1, pods.len().max(1));
    if threads == 1 {
        return pods.into_iter().map(judge).collect();
    }
    // Each thread takes the next pod not yet taken, so one slow pod does not hold back a fixed
    // share of the page.
    let queue = Mutex::new(pods.into_iter().enumerate());
    let mut done: Vec<(usize, R)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        let next = queue.lock().unwrap_or_else(|e| e.into_inner()).next();
                        let Some((i, pod)) = next else {
                            return out;
                        };
                        out.push((i, judge(pod)));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| match w.join() {
                Ok(out) => out,
                // A panic in `judge` is the caller's: raised again on its thread.
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    });
    done.sort_unstable_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// What drift reads of a stored pod: its `metadata` without `managedFields` and its `spec`
/// (`status` and the rest are not compared), copied without what is not read.
fn stored_view(pod: &Value) -> Value {
    let mut view = Map::new();
    let metadata = match pod.get("metadata") {
        Some(Value::Object(m)) => Value::Object(
            m.iter()
                .filter(|(k, _)| k.as_str() != "managedFields")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        Some(other) => other.clone(),
        None => Value::Object(Map::new()),
    };
    view.insert("metadata".into(), metadata);
    view.insert(
        "spec".into(),
        pod.get("spec")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new())),
    );
    Value::Object(view)
}

/// [`stored_view`] of a pod taken by value: its metadata and spec moved, not copied.
fn stored_view_owned(pod: Value) -> Value {
    let Value::Object(mut pod) = pod else {
        return stored_view(&pod);
    };
    let mut metadata = pod
        .remove("metadata")
        .unwrap_or_else(|| Value::Object(Map::new()));
    if let Some(m) = metadata.as_object_mut() {
        // Kept in order, as the copy keeps it.
        m.shift_remove("managedFields");
    }
    let spec = pod
        .remove("spec")
        .unwrap_or_else(|| Value::Object(Map::new()));
    let mut view = Map::new();
    view.insert("metadata".into(), metadata);
    view.insert("spec".into(), spec);
    Value::Object(view)
}

/// The revision whose webhook receives a pod: the library's one rule
/// ([`crate::decide::selection::selecting_revision`]).
pub use crate::decide::selection::selecting_revision;

/// Istio's revision tags: tag name to the revision it points to (a
/// `MutatingWebhookConfiguration` `istio-revision-tag-TAG` labelled `istio.io/tag: TAG` and
/// `istio.io/rev: REVISION`). A pod or namespace labelled `istio.io/rev: TAG` is injected by
/// REVISION; the tag `default` takes over the default revision's selectors
/// (`istio-injection=enabled`, `sidecar.istio.io/inject=true`), as `istioctl tag set default`
/// makes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RevisionTags(pub std::collections::BTreeMap<String, String>);

impl RevisionTags {
    /// The revision `selected` (a revision, a tag, or `default`) stands for: the tag's
    /// revision when it is a tag, else itself.
    pub fn resolve<'a>(&'a self, selected: &'a str) -> &'a str {
        self.0.get(selected).map_or(selected, String::as_str)
    }

    /// The revision whose webhook receives `pod` in a namespace labelled `namespace_labels`
    /// ([`selecting_revision`]), a tag standing for its revision; `None` when no webhook does.
    /// `drift` (`-f` with --namespace-labels, and `--kube`) and `preview --kube` select with it.
    pub fn selecting(
        &self,
        namespace_labels: &Map<String, Value>,
        pod: &Value,
    ) -> Option<Cow<'_, str>> {
        let selected = selecting_revision(namespace_labels, pod)?;
        Some(match self.0.get(&selected) {
            Some(revision) => Cow::Borrowed(revision.as_str()),
            None => Cow::Owned(selected),
        })
    }

    /// These tags, with outrigger's own selector value
    /// ([`crate::decide::selection::OUTRIGGER_SELECTOR`], what its shipped webhook selects)
    /// standing for `revision`, the revision it injects as, unless a tag of that name exists.
    pub fn with_outrigger(self, revision: &str) -> RevisionTags {
        self.with_selector(None, revision)
    }

    /// These tags, with `selector` (the `istio.io/rev` value the installed webhook entries
    /// select: `--selector-revision`; `None`: outrigger's own,
    /// [`crate::decide::selection::OUTRIGGER_SELECTOR`]) standing for `revision`, the revision
    /// it injects as, unless a tag of that name exists.
    pub fn with_selector(mut self, selector: Option<&str>, revision: &str) -> RevisionTags {
        let selector = selector.unwrap_or(crate::decide::selection::OUTRIGGER_SELECTOR);
        self.0
            .entry(selector.to_string())
            .or_insert_with(|| revision_name(revision).to_string());
        self
    }

    /// A manifest pod's drift `drift` as its own `istio.io/rev` label puts it (`drift -f`): a
    /// pod labelled with a tag is on the tag's revision. When that is not the revision in force,
    /// a pod that revision injected is that revision's (`None`: not this configuration's to
    /// judge), and a pod another revision injected is on the wrong one, whatever the
    /// configuration in force would give it. Otherwise the drift stands.
    pub fn on_tagged_revision(&self, pod: &Value, mut drift: PodDrift) -> Option<PodDrift> {
        let Some(rev) = crate::kube::pod::label(pod, crate::kube::names::REVISION_LABEL)
            .and_then(|l| self.0.get(l))
            .filter(|rev| **rev != drift.expected_revision)
        else {
            return Some(drift);
        };
        if drift.injected_revision.as_ref() == Some(rev) {
            return None;
        }
        if drift.injected_revision.is_some() {
            drift.state = State::WrongRevision;
            drift.expected_revision = rev.clone();
            drift.fields.clear();
        }
        Some(drift)
    }
}

/// What `drift --kube` knows of the cluster besides its pods, for judging each of them
/// ([`judge`]): read once per run by the caller.
#[derive(Debug, Clone, Default)]
pub struct Cluster {
    /// Namespace labels by namespace name.
    pub namespace_labels: BTreeMap<String, Map<String, Value>>,
    /// Istio's revision tags (outrigger's own selector value standing for the revision in
    /// force, [`RevisionTags::with_outrigger`]).
    pub tags: RevisionTags,
    /// In auto native-sidecar mode, the nodes and their kubelet versions (the proxy's form
    /// follows the node a pod runs on); `None` in a fixed mode.
    pub nodes: Option<StaticFacts>,
}

/// A cluster pod of the revision in force, judged ([`judge`]).
#[derive(Debug, Clone)]
pub struct Judgement {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's name.
    pub name: String,
    /// The workload that owns it.
    pub workload: WorkloadMeta,
    /// Its drift.
    pub drift: PodDrift,
}

/// Classify one stored pod (on any thread) as `drift --kube` does: the webhook that selects it
/// ([`selecting_revision`] over its namespace's labels, revision tags resolved), whether that
/// injects it, and its drift, with native sidecars as its node decides in auto mode
/// ([`judge_selected`]). `None` when another revision's webhook selects it (not this
/// configuration's to judge). Warnings of the native-sidecar detection come back with it.
/// Errors name the pod.
pub fn judge(
    pod: Value,
    cluster: &Cluster,
    settings: &Settings<'_>,
) -> Result<(Option<Judgement>, Vec<String>)> {
    let namespace = meta_str(&pod, "namespace").to_string();
    let name = meta_str(&pod, "name").to_string();
    let empty = Map::new();
    let labels = cluster.namespace_labels.get(&namespace).unwrap_or(&empty);
    let selected = cluster.tags.selecting(labels, &pod);
    if selected
        .as_deref()
        .is_some_and(|r| r != revision_name(settings.revision))
    {
        return Ok((None, Vec::new()));
    }
    let nodes = cluster.nodes.as_ref().map(|n| n as &dyn ClusterFacts);
    let (drift, workload, warnings) = judge_selected(pod, selected.is_some(), nodes, settings)
        .map_err(|e| e.context(&format!("pod {namespace}/{name}")))?;
    let judged = Judgement {
        namespace,
        name,
        workload,
        drift,
    };
    Ok((Some(judged), warnings))
}

/// The drift of one stored pod that the webhook of this configuration does (`selected`) or does
/// not receive: whether the configuration injects it, with native sidecars as its node decides
/// when `nodes` is given (auto mode; else `settings.native_sidecars` holds), and its workload.
/// Warnings of the native-sidecar detection come back with it. `drift --kube` ([`judge`]) and
/// `serve --watch-pods` judge with it.
pub fn judge_selected(
    pod: Value,
    selected: bool,
    nodes: Option<&dyn ClusterFacts>,
    settings: &Settings<'_>,
) -> Result<(PodDrift, WorkloadMeta, Vec<String>)> {
    let config = &settings.snapshot.config;
    let wanted = selected
        && inject_required(
            &pod,
            &config.policy,
            &config.never_inject_selector,
            &config.always_inject_selector,
        )
        .inject;
    let mut warnings = Vec::new();
    // Auto mode: the webhook asks about the pod's node when the pod names one at admission,
    // else about every node. A stored pod names its node either way (the scheduler's, or its
    // creator's), so both answers are what its injection may have been given.
    let (native_sidecars, all_nodes) = match nodes {
        Some(nodes) if wanted => {
            let node = pod
                .get("spec")
                .and_then(|s| s.get("nodeName"))
                .and_then(Value::as_str)
                .unwrap_or("");
            let on_node = detect_native_sidecars(NativeMode::Auto, nodes, node, &mut warnings);
            let all = detect_native_sidecars(NativeMode::Auto, nodes, "", &mut Vec::new());
            (on_node, Some(all).filter(|all| *all != on_node))
        }
        _ => (settings.native_sidecars, None),
    };
    let workload = workload_from_pod(&pod);
    let mut params = settings
        .with_native_sidecars(native_sidecars)
        .params(Mode::Webhook, workload.clone());
    let drift = match all_nodes {
        None => stored_pod_drift_owned(pod, &params, wanted)?,
        // Judged by its node and stale: current if the every-node answer, which a pod created
        // unscheduled was given, injects what it has (restarting it gives that answer again).
        Some(all) => {
            let on_node = stored_pod_drift(&pod, &params, wanted)?;
            params.native_sidecars = all;
            match on_node.state {
                State::Stale => {
                    let other = stored_pod_drift_owned(pod, &params, wanted)?;
                    if other.state == State::Current {
                        other
                    } else {
                        on_node
                    }
                }
                _ => on_node,
            }
        }
    };
    Ok((drift, workload, warnings))
}

/// Resource requests and limits the injected containers of `actual` have and those of
/// `expected` lack, copied into `expected`: a LimitRange's defaults, which admission only ever
/// adds (a value injection writes is still compared).
fn keep_added_resources(actual: &Value, expected: &mut Value) {
    let status = Status::parse_lenient(expected);
    for list in ["containers", "initContainers"] {
        let Some(items) = expected
            .pointer_mut(&format!("/spec/{list}"))
            .and_then(Value::as_array_mut)
        else {
            continue;
        };
        for c in items {
            let name = container_name(c).to_string();
            if !status.containers.contains(&name) && !status.init_containers.contains(&name) {
                continue;
            }
            let Some(have) = named(actual, list, &name).and_then(|a| a.get("resources")) else {
                continue;
            };
            for kind in ["requests", "limits"] {
                let Some(added) = have.get(kind).and_then(Value::as_object) else {
                    continue;
                };
                let Some(res) = c
                    .as_object_mut()
                    .map(|c| c.entry("resources").or_insert_with(|| json!({})))
                else {
                    continue;
                };
                if let Some(res) = res.as_object_mut() {
                    let into = res.entry(kind).or_insert_with(|| json!({}));
                    if let Some(into) = into.as_object_mut() {
                        for (k, v) in added {
                            into.entry(k.clone()).or_insert_with(|| v.clone());
                        }
                    }
                }
            }
        }
    }
}

/// The sidecar's list of the pod's ports (`ISTIO_META_POD_PORTS`), rendered from the ports as
/// the injector saw them.
const POD_PORTS_ENV: &str = "ISTIO_META_POD_PORTS";

/// The value of `ISTIO_META_POD_PORTS` or `ISTIO_KUBE_APP_PROBERS` as the API server's
/// defaults would have made it (`zz_generated.defaults.go`: a port's `protocol: TCP`;
/// `SetDefaults_Probe`'s one-second timeout, `SetDefaults_HTTPGetAction`'s path `/` and
/// scheme `HTTP`, a gRPC probe's empty service), for comparing values rendered before and
/// after the pod was stored.
fn env_as_stored(var: &str, text: &str) -> Option<Value> {
    let mut v: Value = serde_json::from_str(text).ok()?;
    if var == POD_PORTS_ENV {
        for p in v
            .as_array_mut()?
            .iter_mut()
            .filter_map(Value::as_object_mut)
        {
            p.entry("protocol").or_insert_with(|| json!("TCP"));
        }
    } else {
        for p in v
            .as_object_mut()?
            .values_mut()
            .filter_map(Value::as_object_mut)
        {
            if p.get("timeoutSeconds").is_none_or(|t| t == 0) {
                p.insert("timeoutSeconds".into(), json!(1));
            }
            if let Some(g) = p.get_mut("httpGet").and_then(Value::as_object_mut) {
                if g.get("path").is_none_or(|v| v == "") {
                    g.insert("path".into(), json!("/"));
                }
                if g.get("scheme").is_none_or(|v| v == "") {
                    g.insert("scheme".into(), json!("HTTP"));
                }
            }
            if let Some(g) = p.get_mut("grpc").and_then(Value::as_object_mut) {
                g.entry("service").or_insert_with(|| json!(""));
            }
        }
    }
    Some(v)
}

/// Where `actual`'s `ISTIO_META_POD_PORTS` or `ISTIO_KUBE_APP_PROBERS` differs from
/// `expected`'s only by what the API server defaults in the ports and probes they are
/// rendered from ([`env_as_stored`]: a pod injected from a manifest, then stored), take
/// `expected`'s text: they say the same.
fn same_rendered_env(actual: &mut Value, expected: &Value) {
    for list in ["containers", "initContainers"] {
        let Some(items) = actual
            .pointer_mut(&format!("/spec/{list}"))
            .and_then(Value::as_array_mut)
        else {
            continue;
        };
        for c in items {
            let name = container_name(c).to_string();
            for var in [POD_PORTS_ENV, APP_PROBERS_ENV] {
                let Some(want) = named(expected, list, &name)
                    .and_then(|e| e.get("env"))
                    .and_then(Value::as_array)
                    .and_then(|env| env.iter().find(|v| container_name(v) == var))
                    .and_then(|v| v.get("value"))
                    .and_then(Value::as_str)
                else {
                    continue;
                };
                let Some(have) = c
                    .get_mut("env")
                    .and_then(Value::as_array_mut)
                    .and_then(|env| env.iter_mut().find(|v| container_name(v) == var))
                    .and_then(|v| v.get_mut("value"))
                else {
                    continue;
                };
                if have.as_str() != Some(want)
                    && have
                        .as_str()
                        .and_then(|h| env_as_stored(var, h))
                        .is_some_and(|h| Some(h) == env_as_stored(var, want))
                {
                    *have = json!(want);
                }
            }
        }
    }
}

/// The revision a pod's status annotation records (`default` when it names none); `None` when
/// the pod was not injected.
fn injected_revision(pod: &Value) -> Option<String> {
    Status::parse_strict(pod)?;
    let status: Value = serde_json::from_str(annotation(pod, STATUS_ANNOTATION)?).ok()?;
    Some(
        status
            .get("revision")
            .and_then(Value::as_str)
            .map_or(DEFAULT_REVISION, revision_name)
            .to_string(),
    )
}

/// The differences between `actual` and `expected` in what injection owns.
fn owned_differences<'a>(actual: &'a Value, expected: &'a Value) -> Vec<FieldDiff> {
    let mut out = Vec::new();
    let statuses = [
        Status::parse_lenient(actual),
        Status::parse_lenient(expected),
    ];
    let union = |pick: fn(&Status) -> &Vec<String>| -> BTreeSet<String> {
        statuses
            .iter()
            .flat_map(|s| pick(s).iter().cloned())
            .collect()
    };
    let injected: BTreeSet<String> = union(|s| &s.containers)
        .into_iter()
        .chain(union(|s| &s.init_containers))
        .collect();
    for (list, names) in [
        ("containers", injected.clone()),
        ("initContainers", injected.clone()),
        ("volumes", union(|s| &s.volumes)),
        ("imagePullSecrets", union(|s| &s.image_pull_secrets)),
    ] {
        for name in &names {
            let (a, e) = (named(actual, list, name), named(expected, list, name));
            diff(&format!("spec.{list}[{name}]"), a, e, &mut out);
        }
    }
    // The application's own containers as injection leaves them: an init container whole (a
    // template may rewrite or drop one), a container's probes and lifecycle hooks (what the
    // templates rewrite of it); one on a side only is a difference either way.
    for list in ["containers", "initContainers"] {
        let mut apps: Vec<&str> = Vec::new();
        for pod in [actual, expected] {
            for name in pod
                .pointer(&format!("/spec/{list}"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(container_name)
                .filter(|n| !injected.contains(*n))
            {
                if !apps.contains(&name) {
                    apps.push(name);
                }
            }
        }
        for name in apps {
            let (a, e) = (named(actual, list, name), named(expected, list, name));
            if a.is_none() || e.is_none() || list == "initContainers" {
                diff(&format!("spec.{list}[{name}]"), a, e, &mut out);
                continue;
            }
            for field in [
                "readinessProbe",
                "livenessProbe",
                "startupProbe",
                "lifecycle",
            ] {
                let get = |c: Option<&'a Value>| c.and_then(|c| c.get(field));
                diff(
                    &format!("spec.{list}[{name}].{field}"),
                    get(a),
                    get(e),
                    &mut out,
                );
            }
        }
    }
    for field in ["labels", "annotations"] {
        // The annotations drift compares are the table's (`kube::annotations`), and every
        // Prometheus annotation by its sanitised name.
        let owned = |k: &str| {
            if field == "labels" {
                INJECTED_LABELS.contains(&k)
            } else {
                compared_by_drift(k) || sanitize_label_name(k).starts_with("prometheus_io_")
            }
        };
        let map = |pod: &'a Value| {
            pod.get("metadata")
                .and_then(|m| m.get(field))
                .and_then(Value::as_object)
        };
        let (a, e) = (map(actual), map(expected));
        let keys: BTreeSet<&str> = [a, e]
            .into_iter()
            .flatten()
            .flat_map(Map::keys)
            .map(String::as_str)
            .filter(|k| owned(k))
            .collect();
        for k in keys {
            let get = |m: Option<&'a Map<String, Value>>| m.and_then(|m| m.get(k));
            let (av, ev) = (get(a), get(e));
            if av != ev {
                out.push(FieldDiff {
                    path: format!("metadata.{field}[{k}]"),
                    cause: if k == "istio.io/rev" || k == STATUS_ANNOTATION {
                        "revision"
                    } else {
                        "template"
                    },
                    actual: av.cloned(),
                    expected: ev.cloned(),
                });
            }
        }
    }
    // A status annotation that differs only by what the other differences already say is not
    // reported twice: keep it only when it is the sole difference.
    if out.len() > 1 {
        out.retain(|d| d.path != format!("metadata.annotations[{STATUS_ANNOTATION}]"));
    }
    out
}

/// Element `name` of the list `list` of `spec`.
fn named<'a>(pod: &'a Value, list: &str, name: &str) -> Option<&'a Value> {
    pod.get("spec")?
        .get(list)?
        .as_array()?
        .iter()
        .find(|c| container_name(c) == name)
}

/// Leaf differences of two values under `path` ([`pod_diff::leaves`], the comparison `preview`
/// makes too; a list of named objects in another order is one difference).
fn diff<'a>(
    path: &str,
    actual: Option<&'a Value>,
    expected: Option<&'a Value>,
    out: &mut Vec<FieldDiff>,
) {
    // Equal values have no differences (what the walk would find, without building a path).
    if actual == expected {
        return;
    }
    let settings = pod_diff::Compare {
        reorder: pod_diff::Reorder::AnyOrder,
    };
    pod_diff::leaves(
        path.to_string(),
        pod_diff::side(actual, None),
        pod_diff::side(expected, None),
        settings,
        &mut |leaf| {
            out.push(FieldDiff {
                cause: pod_diff::cause(&leaf.path, leaf.a.is_none() || leaf.b.is_none()),
                path: leaf.path,
                actual: leaf.a.cloned(),
                expected: leaf.b.cloned(),
            })
        },
    );
}

/// What injection owns, compared ([`owned_differences`]) on pods made by hand: the status
/// annotation names what injection added; of the rest, the application's containers' probes and
/// lifecycle hooks, its init containers whole, and the labels and annotations injection writes.
#[cfg(test)]
mod owned_tests {
    use serde_json::{json, Value};

    use super::{owned_differences, STATUS_ANNOTATION};

    fn pod() -> Value {
        json!({
            "metadata": {
                "labels": {"app": "web", "security.istio.io/tlsMode": "istio",
                           "prometheus.io/scrape": "true"},
                "annotations": {
                    STATUS_ANNOTATION: r#"{"initContainers":["istio-init"],"containers":["istio-proxy"],"volumes":["istio-envoy"],"imagePullSecrets":null,"revision":"default"}"#,
                    "istio.io/rev": "default",
                    "prometheus.io/port": "15020",
                    "team": "payments"
                }
            },
            "spec": {
                "initContainers": [
                    {"name": "istio-init", "image": "proxy:1"},
                    {"name": "setup", "image": "setup:1"}
                ],
                "containers": [
                    {"name": "web", "image": "web:1",
                     "readinessProbe": {"httpGet": {"path": "/app-health/web/readyz", "port": 15020}}},
                    {"name": "istio-proxy", "image": "proxy:1"}
                ],
                "volumes": [{"name": "istio-envoy", "emptyDir": {}}, {"name": "data", "emptyDir": {}}]
            }
        })
    }

    /// The differences of `pod()` changed by `change` (the actual pod) from `pod()` (the
    /// expected one): path and cause.
    fn changed(change: impl Fn(&mut Value)) -> Vec<(String, &'static str)> {
        let mut actual = pod();
        change(&mut actual);
        owned_differences(&actual, &pod())
            .into_iter()
            .map(|d| (d.path, d.cause))
            .collect()
    }

    fn one(path: &str, cause: &'static str) -> Vec<(String, &'static str)> {
        vec![(path.to_string(), cause)]
    }

    #[test]
    fn the_same_pod_differs_nowhere() {
        assert_eq!(changed(|_| {}), []);
    }

    #[test]
    fn an_apps_container_differs_by_its_probes_and_hooks_only() {
        assert_eq!(
            changed(
                |p| p["spec"]["containers"][0]["readinessProbe"]["httpGet"]["path"] =
                    json!("/ready")
            ),
            one(
                "spec.containers[web].readinessProbe.httpGet.path",
                "template"
            )
        );
        assert_eq!(
            changed(|p| p["spec"]["containers"][0]["lifecycle"] = json!({"preStop": {}})),
            one("spec.containers[web].lifecycle", "template")
        );
        assert_eq!(
            changed(|p| p["spec"]["containers"][0]["image"] = json!("web:2")),
            []
        );
    }

    #[test]
    fn an_apps_init_container_differs_whole() {
        assert_eq!(
            changed(|p| p["spec"]["initContainers"][1]["args"] = json!(["-v"])),
            one("spec.initContainers[setup].args", "template")
        );
    }

    #[test]
    fn an_apps_container_on_one_side_only_is_one_difference() {
        let log = json!({"name": "log", "image": "fluent-bit"});
        let add = |list: &str| {
            let log = log.clone();
            let list = list.to_string();
            move |p: &mut Value| p["spec"][&list].as_array_mut().unwrap().push(log.clone())
        };
        assert_eq!(
            changed(add("containers")),
            one("spec.containers[log]", "template")
        );
        assert_eq!(
            changed(add("initContainers")),
            one("spec.initContainers[log]", "template")
        );
        // And on the expected side only.
        let mut expected = pod();
        add("containers")(&mut expected);
        let d = owned_differences(&pod(), &expected);
        assert_eq!(d.len(), 1);
        assert_eq!(
            (d[0].path.as_str(), &d[0].actual, &d[0].expected),
            ("spec.containers[log]", &None, &Some(log))
        );
    }

    #[test]
    fn injected_volumes_are_owned_and_the_apps_are_not() {
        assert_eq!(
            changed(|p| p["spec"]["volumes"][0]["emptyDir"] = json!({"medium": "Memory"})),
            one("spec.volumes[istio-envoy].emptyDir.medium", "template")
        );
        assert_eq!(
            changed(|p| p["spec"]["volumes"][1]["emptyDir"] = json!({"medium": "Memory"})),
            []
        );
    }

    #[test]
    fn the_labels_and_annotations_injection_writes_are_owned() {
        let set = |field: &'static str, key: &'static str| {
            move |p: &mut Value| p["metadata"][field][key] = json!("changed")
        };
        assert_eq!(
            changed(set("labels", "security.istio.io/tlsMode")),
            one("metadata.labels[security.istio.io/tlsMode]", "template")
        );
        assert_eq!(
            changed(set("annotations", "prometheus.io/port")),
            one("metadata.annotations[prometheus.io/port]", "template")
        );
        assert_eq!(
            changed(set("annotations", "istio.io/rev")),
            one("metadata.annotations[istio.io/rev]", "revision")
        );
        // The user's labels and annotations, and a Prometheus key among the labels, are not.
        assert_eq!(changed(set("labels", "app")), []);
        assert_eq!(changed(set("annotations", "team")), []);
        assert_eq!(changed(set("labels", "prometheus.io/scrape")), []);
        // Removed is changed.
        assert_eq!(
            changed(|p| {
                p["metadata"]["labels"]
                    .as_object_mut()
                    .unwrap()
                    .remove("security.istio.io/tlsMode");
            }),
            one("metadata.labels[security.istio.io/tlsMode]", "template")
        );
    }

    #[test]
    fn the_status_annotation_is_reported_only_when_it_is_the_sole_difference() {
        let status = |p: &mut Value| {
            p["metadata"]["annotations"][STATUS_ANNOTATION] = json!(
                r#"{"initContainers":["istio-init"],"containers":["istio-proxy"],"volumes":["istio-envoy"],"imagePullSecrets":null,"revision":"canary"}"#
            )
        };
        assert_eq!(
            changed(status),
            one(
                &format!("metadata.annotations[{STATUS_ANNOTATION}]"),
                "revision"
            )
        );
        assert_eq!(
            changed(|p| {
                status(p);
                p["spec"]["containers"][1]["image"] = json!("proxy:0");
            }),
            one("spec.containers[istio-proxy].image", "proxy image")
        );
        assert_eq!(
            changed(|p| {
                status(p);
                p["spec"]["containers"][1]["args"] = json!(["x"]);
                p["metadata"]["annotations"]["istio.io/rev"] = json!("canary");
            }),
            vec![
                ("spec.containers[istio-proxy].args".to_string(), "template"),
                ("metadata.annotations[istio.io/rev]".to_string(), "revision"),
            ]
        );
    }
}

/// The comparison itself ([`diff`]), value by value: what a difference is reported as, and where.
/// Self-contained (serde_json only), so that cargo-mutants can run it in a scratch crate
/// (docs/mutation-testing.md).
#[cfg(test)]
mod comparison_tests {
    use serde_json::{json, Value};

    use super::{diff, FieldDiff};

    fn diffs(actual: Option<Value>, expected: Option<Value>) -> Vec<(String, &'static str)> {
        let mut out = Vec::new();
        diff("p", actual.as_ref(), expected.as_ref(), &mut out);
        out.into_iter().map(|d| (d.path, d.cause)).collect()
    }

    fn paths(actual: Value, expected: Value) -> Vec<String> {
        diffs(Some(actual), Some(expected))
            .into_iter()
            .map(|(p, _)| p)
            .collect()
    }

    #[test]
    fn equal_values_differ_nowhere() {
        for v in [
            json!(1),
            json!({"a": [1, {"name": "x"}]}),
            json!([]),
            json!(null),
        ] {
            assert_eq!(diffs(Some(v.clone()), Some(v)), []);
        }
        assert_eq!(diffs(None, None), []);
    }

    #[test]
    fn objects_differ_key_by_key_down_to_the_leaves() {
        assert_eq!(
            paths(
                json!({"a": 1, "b": {"c": 2, "k": true}, "z": "gone"}),
                json!({"a": 1, "b": {"c": 3, "k": true}, "d": [4]})
            ),
            ["p.b.c", "p.d", "p.z"]
        );
        let mut out = Vec::new();
        diff(
            "p",
            Some(&json!({"a": 1})),
            Some(&json!({"a": "1"})),
            &mut out,
        );
        assert_eq!(
            out,
            [FieldDiff {
                path: "p.a".into(),
                actual: Some(json!(1)),
                expected: Some(json!("1")),
                cause: "template",
            }]
        );
    }

    #[test]
    fn lists_of_named_objects_differ_by_name() {
        let a = json!([{"name": "x", "v": 1}, {"name": "y", "v": 2}]);
        // Reordered and changed: the change, by name, and not the order besides.
        let e = json!([{"name": "y", "v": 3}, {"name": "x", "v": 1}]);
        assert_eq!(paths(a.clone(), e), ["p[y].v"]);
        // In the same order with a change: the change alone.
        let e = json!([{"name": "x", "v": 1}, {"name": "y", "v": 3}]);
        assert_eq!(paths(a.clone(), e), ["p[y].v"]);
        // An element on one side only, either side.
        let e = json!([{"name": "x", "v": 1}, {"name": "y", "v": 2}, {"name": "z"}]);
        assert_eq!(paths(a.clone(), e.clone()), ["p[z]"]);
        assert_eq!(paths(e, a.clone()), ["p[z]"]);
        let e = json!([{"name": "x", "v": 1}]);
        assert_eq!(paths(a, e), ["p[y]"]);
    }

    #[test]
    fn an_order_only_difference_is_the_whole_list() {
        let a = json!([{"name": "x"}, {"name": "y"}]);
        let e = json!([{"name": "y"}, {"name": "x"}]);
        let mut out = Vec::new();
        diff("p", Some(&a), Some(&e), &mut out);
        assert_eq!(
            out,
            [FieldDiff {
                path: "p".into(),
                actual: Some(a),
                expected: Some(e),
                cause: "template",
            }]
        );
    }

    #[test]
    fn other_lists_differ_by_index_or_whole() {
        assert_eq!(paths(json!([1, 2, 3]), json!([1, 5, 3])), ["p[1]"]);
        assert_eq!(paths(json!([1, 2]), json!([1, 2, 3])), ["p"]);
        assert_eq!(paths(json!([1, 2, 3]), json!([1, 2])), ["p"]);
        // One side's elements named, the other's not: by index.
        assert_eq!(
            paths(json!([{"name": "x", "v": 1}]), json!([{"v": 1}])),
            ["p[0].name"]
        );
        assert_eq!(
            paths(json!([{"v": 1}]), json!([{"name": "x", "v": 1}])),
            ["p[0].name"]
        );
        // An empty list is no list of named objects.
        assert_eq!(paths(json!([]), json!([{"name": "x"}])), ["p"]);
        assert_eq!(paths(json!([{"name": "x"}]), json!([])), ["p"]);
        // Named and unnamed elements mixed: by index.
        assert_eq!(
            paths(json!([{"name": "x"}, 1]), json!([{"name": "x"}, 2])),
            ["p[1]"]
        );
    }

    #[test]
    fn a_value_on_one_side_or_of_another_type_is_one_difference() {
        assert_eq!(diffs(Some(json!(1)), None), [("p".into(), "template")]);
        assert_eq!(
            diffs(None, Some(json!({"a": 1}))),
            [("p".into(), "template")]
        );
        assert_eq!(paths(json!({"a": 1}), json!([1])), ["p"]);
        assert_eq!(paths(json!("1"), json!(1)), ["p"]);
    }

    #[test]
    fn the_cause_is_told_from_the_path() {
        let cause = |path: &str, actual: Option<Value>, expected: Option<Value>| {
            let mut out = Vec::new();
            diff(path, actual.as_ref(), expected.as_ref(), &mut out);
            assert_eq!(out.len(), 1, "{path}");
            out[0].cause
        };
        let c = || Some(json!({"name": "istio-proxy"}));
        assert_eq!(
            cause(
                "spec.containers[istio-proxy].image",
                Some(json!("a")),
                Some(json!("b"))
            ),
            "proxy image"
        );
        assert_eq!(
            cause("spec.containers[web].image", Some(json!("a")), None),
            "proxy image"
        );
        // The proxy on one side only of a list: moved between containers and init containers.
        assert_eq!(
            cause("spec.containers[istio-proxy]", None, c()),
            "native sidecars"
        );
        assert_eq!(
            cause("spec.initContainers[istio-proxy]", c(), None),
            "native sidecars"
        );
        // Not the proxy, both sides, or deeper than the container: the template.
        assert_eq!(cause("spec.containers[web]", None, c()), "template");
        assert_eq!(
            cause("spec.containers[istio-proxy]", Some(json!(1)), c()),
            "template"
        );
        assert_eq!(
            cause(
                "spec.containers[istio-proxy].args",
                None,
                Some(json!(["a"]))
            ),
            "template"
        );
        assert_eq!(cause("spec.containers", None, Some(json!([]))), "template");
    }
}

/// kube-apiserver's storing of pods, modelled for the tests (shared with the binary's).
#[cfg(test)]
#[path = "../tests/model/apiserver.rs"]
mod apiserver_model;

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::config::defaults;
    use crate::inject::inject_pod;

    fn params<'a>(
        s: &'a crate::config::Snapshot,
        revision: &'a str,
        native: bool,
    ) -> InjectParams<'a> {
        crate::testing::kube_inject_params(s, revision, native)
    }

    fn pod() -> Value {
        json!({
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{
                "name": "web", "image": "web:1",
                "readinessProbe": {"httpGet": {"port": 8080, "path": "/ready"}}
            }]}
        })
    }

    /// `drift --kube`'s judgement of a cluster pod: the webhook its namespace's labels select
    /// (a tag standing for its revision), then its drift; another revision's pod is left alone.
    #[test]
    fn judge_selects_by_the_namespace_and_resolves_revision_tags() {
        let s = defaults::snapshot().expect("defaults");
        let settings = Settings {
            snapshot: &s,
            revision: "",
            native_sidecars: false,
            compliance_policy: "",
        };
        let mut pod = pod();
        pod["metadata"]["name"] = json!("web-1");
        pod["metadata"]["namespace"] = json!("apps");
        let mut cluster = Cluster::default();
        let labels = json!({"istio.io/rev": "prod"});
        let labels = labels.as_object().expect("labels").clone();
        cluster.namespace_labels.insert("apps".into(), labels);
        let (judged, _) = judge(pod.clone(), &cluster, &settings).expect("judged");
        assert!(judged.is_none(), "{judged:?}");
        cluster.tags = RevisionTags([("prod".to_string(), "default".to_string())].into());
        let (judged, warnings) = judge(pod.clone(), &cluster, &settings).expect("judged");
        let judged = judged.expect("the default revision's");
        assert_eq!(judged.drift.state, State::MissingSidecar);
        assert_eq!(
            (judged.namespace.as_str(), judged.name.as_str()),
            ("apps", "web-1")
        );
        assert!(warnings.is_empty(), "{warnings:?}");
        // No webhook selects it: not injected, rightly.
        cluster.namespace_labels.clear();
        let (judged, _) = judge(pod, &cluster, &settings).expect("judged");
        assert_eq!(judged.expect("judged").drift.state, State::NotInjected);
    }

    /// `drift -f`'s tag rule: a pod on a tag of another revision is that revision's when it
    /// injected it, else on the wrong revision.
    #[test]
    fn a_manifest_pod_on_another_revisions_tag_is_left_or_on_the_wrong_revision() {
        let s = defaults::snapshot().expect("defaults");
        let p = params(&s, "", false);
        let mut tagged = pod();
        tagged["metadata"]["labels"]["istio.io/rev"] = json!("prod");
        let injected = inject_pod(&tagged, &p).expect("inject").pod;
        let d = pod_drift(&injected, &p, true).expect("drift");
        let to = |rev: &str| RevisionTags([("prod".to_string(), rev.to_string())].into());
        assert_eq!(
            to("default").on_tagged_revision(&injected, d.clone()),
            Some(d.clone())
        );
        let wrong = to("canary")
            .on_tagged_revision(&injected, d.clone())
            .expect("judged");
        assert_eq!(wrong.state, State::WrongRevision);
        assert_eq!(wrong.expected_revision, "canary");
        let mut by_canary = d;
        by_canary.injected_revision = Some("canary".into());
        assert_eq!(to("canary").on_tagged_revision(&injected, by_canary), None);
    }

    #[test]
    fn a_pod_injected_with_the_configuration_in_force_is_current() {
        let s = defaults::snapshot().expect("defaults");
        for native in [false, true] {
            let p = params(&s, "", native);
            let injected = inject_pod(&pod(), &p).expect("inject").pod;
            let d = pod_drift(&injected, &p, true).expect("drift");
            assert_eq!(d.state, State::Current, "{:?}", d.fields);
            assert_eq!(d.injected_revision.as_deref(), Some("default"));
        }
    }

    #[test]
    fn each_state_is_told_apart() {
        let s = defaults::snapshot().expect("defaults");
        let p = params(&s, "", false);
        let injected = inject_pod(&pod(), &p).expect("inject").pod;
        assert_eq!(
            pod_drift(&pod(), &p, true).expect("drift").state,
            State::MissingSidecar
        );
        assert_eq!(
            pod_drift(&pod(), &p, false).expect("drift").state,
            State::NotInjected
        );
        assert_eq!(
            pod_drift(&injected, &p, false).expect("drift").state,
            State::UnwantedSidecar
        );
        let canary = params(&s, "canary", false);
        let d = pod_drift(&injected, &canary, true).expect("drift");
        assert_eq!(d.state, State::WrongRevision);
        assert_eq!(d.injected_revision.as_deref(), Some("default"));
        assert_eq!(d.expected_revision, "canary");
        assert!(d
            .fields
            .iter()
            .any(|f| f.path == "metadata.annotations[istio.io/rev]"));
    }

    #[test]
    fn stale_pods_name_the_fields_and_their_cause() {
        let s = defaults::snapshot().expect("defaults");
        let p = params(&s, "", false);
        let mut injected = inject_pod(&pod(), &p).expect("inject").pod;
        let proxy = injected["spec"]["containers"]
            .as_array_mut()
            .expect("containers")
            .iter_mut()
            .find(|c| c["name"] == "istio-proxy")
            .expect("proxy");
        let want_image = proxy["image"].clone();
        proxy["image"] = json!("old/proxyv2:1.0");
        let d = pod_drift(&injected, &p, true).expect("drift");
        assert_eq!(d.state, State::Stale);
        assert_eq!(
            d.fields,
            [FieldDiff {
                path: "spec.containers[istio-proxy].image".into(),
                actual: Some(json!("old/proxyv2:1.0")),
                expected: Some(want_image),
                cause: "proxy image",
            }]
        );
        // Injected without native sidecars, expected with them: the proxy moved.
        let injected = inject_pod(&pod(), &p).expect("inject").pod;
        let d = pod_drift(&injected, &params(&s, "", true), true).expect("drift");
        assert_eq!(d.state, State::Stale);
        assert!(
            d.fields
                .iter()
                .any(|f| f.path == "spec.initContainers[istio-proxy]"
                    && f.cause == "native sidecars"),
            "{:?}",
            d.fields
        );
    }

    #[test]
    fn an_order_only_difference_is_drift() {
        let s = defaults::snapshot().expect("defaults");
        let p = params(&s, "", false);
        let mut injected = inject_pod(&pod(), &p).expect("inject").pod;
        let env = injected["spec"]["containers"]
            .as_array_mut()
            .expect("containers")
            .iter_mut()
            .find(|c| c["name"] == "istio-proxy")
            .and_then(|c| c["env"].as_array_mut())
            .expect("the proxy's env");
        assert!(env.len() > 2);
        env.swap(0, 1);
        let d = pod_drift(&injected, &p, true).expect("drift");
        assert_eq!(d.state, State::Stale, "the proxy's env in another order");
        assert_eq!(d.fields.len(), 1, "{:?}", d.fields);
        assert_eq!(d.fields[0].path, "spec.containers[istio-proxy].env");
    }

    #[test]
    fn what_injection_does_not_own_is_not_drift() {
        let s = defaults::snapshot().expect("defaults");
        let p = params(&s, "", false);
        let mut injected = inject_pod(&pod(), &p).expect("inject").pod;
        injected["metadata"]["labels"]["team"] = json!("payments");
        injected["spec"]["containers"][0]["image"] = json!("web:2");
        injected["spec"]["nodeName"] = json!("node-1");
        let d = pod_drift(&injected, &p, true).expect("drift");
        assert_eq!(d.state, State::Current, "{:?}", d.fields);
    }

    fn live_pod() -> Value {
        json!({
            "metadata": {"name": "web-6d4cf56db6-x7k2p", "generateName": "web-6d4cf56db6-",
                         "namespace": "shop",
                         "labels": {"app": "web", "pod-template-hash": "6d4cf56db6"},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                             "name": "web-6d4cf56db6", "uid": "u", "controller": true}]},
            "spec": {"containers": [
                {"name": "web", "image": "web:1", "ports": [{"containerPort": 8080}],
                 "readinessProbe": {"httpGet": {"port": 8080, "path": "/ready"}},
                 "livenessProbe": {"tcpSocket": {"port": 8080}}},
                {"name": "log", "image": "fluent-bit",
                 "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]}
            ]}
        })
    }

    /// The first test of drift against a cluster: a pod injected with configuration X and
    /// stored as the API server stores it is current under X, with and without native sidecars;
    /// compared as a manifest it is not (so the tolerance is what makes it current).
    #[test]
    fn a_pod_stored_by_the_api_server_is_current_under_its_configuration() {
        let s = defaults::snapshot().expect("defaults");
        for native in [false, true] {
            let mut p = params(&s, "", native);
            p.mode = crate::inject::Mode::Webhook;
            let mut pod = live_pod();
            p.workload = crate::ingest::workload::workload_from_pod(&pod);
            apiserver_model::as_apiserver_stores(&mut pod, true);
            let mut stored = inject_pod(&pod, &p).expect("inject").pod;
            apiserver_model::as_apiserver_stores(&mut stored, false);
            let d = stored_pod_drift(&stored, &p, true).expect("drift");
            assert_eq!(d.state, State::Current, "native {native}: {:#?}", d.fields);
            let as_manifest = pod_drift(&stored, &p, true).expect("drift");
            assert_eq!(as_manifest.state, State::Stale, "native {native}");

            // The same stored pod under another proxy image: stale, by that field alone.
            let mut other = s.clone();
            other.values["global"]["hub"] = json!("registry.example/mesh");
            other.values_facts = crate::config::ValuesFacts::from_values(&other.values);
            let mut q = p.clone();
            q.snapshot = &other;
            let d = stored_pod_drift(&stored, &q, true).expect("drift");
            assert_eq!(d.state, State::Stale);
            assert!(
                !d.fields.is_empty() && d.fields.iter().all(|f| f.path.ends_with(".image")),
                "{:#?}",
                d.fields
            );
        }
    }

    #[test]
    fn in_parallel_keeps_the_order_and_gives_what_one_thread_gives() {
        let pods: Vec<usize> = (0..1000).collect();
        let judge = |n: usize| n * n + usize::from(n.is_multiple_of(7));
        let one = in_parallel(pods.clone(), 1, judge);
        assert_eq!(one, pods.iter().copied().map(judge).collect::<Vec<_>>());
        for threads in [2, 3, 16, 5000] {
            assert_eq!(
                in_parallel(pods.clone(), threads, judge),
                one,
                "{threads} threads"
            );
        }
        assert!(in_parallel(Vec::new(), 4, judge).is_empty());
        assert_eq!(in_parallel(pods, 0, judge), one);
    }

    #[test]
    fn revision_tags_resolve_to_their_revision_and_other_names_to_themselves() {
        let tags = RevisionTags(
            [("prod", "1-24"), ("default", "1-23")]
                .map(|(t, r)| (t.to_string(), r.to_string()))
                .into(),
        );
        assert_eq!(tags.resolve("prod"), "1-24");
        assert_eq!(tags.resolve("default"), "1-23");
        assert_eq!(tags.resolve("canary"), "canary");
        assert_eq!(RevisionTags::default().resolve("default"), "default");
    }

    #[test]
    fn a_stored_pod_taken_by_value_drifts_as_when_borrowed() {
        let s = defaults::snapshot().expect("defaults");
        let mut p = params(&s, "", false);
        p.mode = crate::inject::Mode::Webhook;
        let mut pod = live_pod();
        p.workload = crate::ingest::workload::workload_from_pod(&pod);
        apiserver_model::as_apiserver_stores(&mut pod, true);
        let mut stored = inject_pod(&pod, &p).expect("inject").pod;
        apiserver_model::as_apiserver_stores(&mut stored, false);
        stored["metadata"]["managedFields"] = json!([{"manager": "kubelet"}]);
        stored["status"] = json!({"phase": "Running"});
        let mut stale = stored.clone();
        stale["spec"]["containers"][2]["image"] = json!("old/proxy:1");
        let mut states = Vec::new();
        for pod in [stored, stale, live_pod(), json!({"metadata": {}}), json!(3)] {
            for wanted in [true, false] {
                let borrowed = stored_pod_drift(&pod, &p, wanted).map_err(|e| e.to_string());
                let owned =
                    stored_pod_drift_owned(pod.clone(), &p, wanted).map_err(|e| e.to_string());
                assert_eq!(owned, borrowed, "{pod}");
                states.extend(owned.map(|d| d.state));
            }
        }
        for state in [State::Current, State::Stale, State::MissingSidecar] {
            assert!(states.contains(&state), "{states:?}");
        }
    }

    #[test]
    fn outriggers_own_selector_stands_for_the_revision_in_force() {
        let tags = RevisionTags::default().with_outrigger("");
        assert_eq!(tags.resolve("outrigger"), "default");
        assert_eq!(tags.resolve("canary"), "canary");
        let tags = RevisionTags::default().with_outrigger("canary");
        assert_eq!(tags.resolve("outrigger"), "canary");
        // A revision tag of that name (the cluster's, or --revision-tag) wins.
        let named = RevisionTags(
            [("outrigger".to_string(), "stable".to_string())]
                .into_iter()
                .collect(),
        )
        .with_outrigger("canary");
        assert_eq!(named.resolve("outrigger"), "stable");
    }

    /// A pod injected from a manifest whose ports had no `protocol` and probes no timeout,
    /// stored with the API server's defaults, is current: its ISTIO_META_POD_PORTS and
    /// ISTIO_KUBE_APP_PROBERS say the same ports and probes.
    #[test]
    fn ports_and_probes_without_their_defaults_are_the_same_once_stored() {
        let s = defaults::snapshot().expect("defaults");
        let mut p = params(&s, "", false);
        p.mode = crate::inject::Mode::Webhook;
        let pod = live_pod();
        p.workload = crate::ingest::workload::workload_from_pod(&pod);
        let mut stored = inject_pod(&pod, &p).expect("inject").pod;
        let ports = stored["spec"]["containers"][2]["env"]
            .as_array()
            .and_then(|e| e.iter().find(|v| v["name"] == POD_PORTS_ENV))
            .and_then(|v| v["value"].as_str())
            .expect("pod ports")
            .to_string();
        assert!(!ports.contains("protocol"), "{ports}");
        apiserver_model::as_apiserver_stores(&mut stored, false);
        let d = stored_pod_drift(&stored, &p, true).expect("drift");
        assert_eq!(d.state, State::Current, "{:#?}", d.fields);
        // A port that really differs is still drift.
        let mut moved = stored.clone();
        moved["spec"]["containers"][0]["ports"][0]["containerPort"] = json!(9090);
        let d = stored_pod_drift(&moved, &p, true).expect("drift");
        assert!(
            d.fields.iter().any(|f| f.path.contains(POD_PORTS_ENV)),
            "{:#?}",
            d.fields
        );
    }

    /// A template that changes (or drops) the application's own init container makes a pod
    /// injected without that change stale, naming the init container.
    #[test]
    fn a_templates_change_of_the_apps_init_containers_is_drift() {
        let s = defaults::snapshot().expect("defaults");
        let p = params(&s, "", false);
        let mut pod = pod();
        pod["spec"]["initContainers"] = json!([{"name": "setup", "image": "setup:1"}]);
        let injected = inject_pod(&pod, &p).expect("inject").pod;
        assert_eq!(
            pod_drift(&injected, &p, true).expect("drift").state,
            State::Current
        );
        let config = defaults::CONFIG
            .replace("defaultTemplates: [sidecar]", "defaultTemplates: [sidecar, setup]")
            .replace(
                "templates:\n",
                "templates:\n  setup: |\n    spec:\n      initContainers:\n      - name: setup\n        \
                 securityContext:\n          runAsUser: 0\n",
            );
        let changed =
            crate::config::Snapshot::load(&config, defaults::VALUES, Some(defaults::MESH))
                .expect("config");
        let d = pod_drift(&injected, &params(&changed, "", false), true).expect("drift");
        assert_eq!(d.state, State::Stale);
        assert!(
            d.fields
                .iter()
                .any(|f| f.path == "spec.initContainers[setup].securityContext"),
            "{:#?}",
            d.fields
        );
    }
}
