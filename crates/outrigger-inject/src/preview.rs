//! Preview: what a candidate configuration would change in the pods of a workload, and what of
//! its outcome the cluster would refuse.
//!
//! A pod template is injected under the configuration in force and under the candidate
//! ([`preview_pod`]); the two injected pods are compared field by field ([`changes`]), and the
//! candidate's pod is checked against what admission and the nodes enforce ([`preflight`]): the
//! namespace's Pod Security level ([`pod_security`]), its LimitRanges ([`limit_range`]) and
//! ResourceQuotas ([`quota`]), native sidecars against the nodes' kubelets, duplicate container
//! names; a candidate that cannot render the pod is a finding of its own.

pub mod limit_range;
pub mod pod_security;
pub mod quota;

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::decide::inject_required;
use crate::decide::native::{
    detect_native_sidecars, node_supports_native, ClusterFacts, NativeMode,
};
use crate::decide::selection::revision_name;
use crate::ingest::workload::WorkloadMeta;
use crate::inject::{inject_pod, InjectParams, Mode, Settings};
use crate::kube::names::STATUS_ANNOTATION;
use crate::kube::pod::container_name;
use crate::kube::pod_diff;

/// One field that differs between the two injections.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// Path in the pod (`spec.containers[istio-proxy].image`, `metadata.annotations[key]`;
    /// list elements by name).
    pub path: String,
    /// JSON Pointer of the field in the current configuration's pod (`None`: absent there).
    pub current_pointer: Option<String>,
    /// JSON Pointer of the field in the candidate's pod (`None`: absent there).
    pub candidate_pointer: Option<String>,
    /// The value under the configuration in force (`None`: absent).
    pub current: Option<Value>,
    /// The value under the candidate (`None`: absent).
    pub candidate: Option<Value>,
    /// What the difference comes from, where it can be told: `proxy image`, `native sidecars`,
    /// `revision`, else `template`.
    pub cause: &'static str,
}

/// What one configuration does with a pod template.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Injected: the pod.
    Injected(Value),
    /// Left without a sidecar (injection not wanted): the pod as it is.
    NotInjected(Value),
    /// Injection failed (a template that does not render, a value it cannot read): the error.
    Failed(String),
}

impl Outcome {
    /// The pod, unless injection failed.
    pub fn pod(&self) -> Option<&Value> {
        match self {
            Outcome::Injected(p) | Outcome::NotInjected(p) => Some(p),
            Outcome::Failed(_) => None,
        }
    }
}

/// `pod` under one configuration: injected with `params` when `wanted`, else as it is.
pub fn outcome(pod: &Value, params: &InjectParams<'_>, wanted: bool) -> Outcome {
    if !wanted {
        return Outcome::NotInjected(pod.clone());
    }
    match inject_pod(pod, params) {
        Ok(i) => Outcome::Injected(i.pod),
        Err(e) => Outcome::Failed(e.to_string()),
    }
}

/// A pod template under both configurations.
#[derive(Debug, Clone, PartialEq)]
pub struct PodPreview {
    /// Under the configuration in force.
    pub current: Outcome,
    /// Under the candidate.
    pub candidate: Outcome,
    /// The differing fields (empty when either failed or both are the same).
    pub changes: Vec<Change>,
}

/// Inject `pod` under the configuration in force (`current`, injected when `current_wanted`)
/// and the candidate, and compare.
pub fn preview_pod(
    pod: &Value,
    current: (&InjectParams<'_>, bool),
    candidate: (&InjectParams<'_>, bool),
) -> PodPreview {
    let current = outcome(pod, current.0, current.1);
    let candidate = outcome(pod, candidate.0, candidate.1);
    let changes = match (current.pod(), candidate.pod()) {
        (Some(a), Some(b)) => changes(a, b),
        _ => Vec::new(),
    };
    PodPreview {
        current,
        candidate,
        changes,
    }
}

/// The differing fields of two pods: labels and annotations by key, the rest of `metadata` and
/// `spec` leaf by leaf (objects by key, lists of named objects by name, other lists by index; a
/// list of the same named elements in another order is one change). A status annotation that
/// differs beside other changes is left out: they say what it records.
pub fn changes(current: &Value, candidate: &Value) -> Vec<Change> {
    let mut out = Vec::new();
    if current == candidate {
        return out;
    }
    let mut compare = |path: String, a: Option<&Value>, b: Option<&Value>, pointer: &str| {
        let settings = pod_diff::Compare {
            reorder: pod_diff::Reorder::SameNames,
        };
        pod_diff::leaves(
            path,
            pod_diff::side(a, Some(pointer)),
            pod_diff::side(b, Some(pointer)),
            settings,
            &mut |leaf| {
                out.push(Change {
                    cause: pod_diff::cause(&leaf.path, leaf.a.is_none() || leaf.b.is_none()),
                    path: leaf.path,
                    current_pointer: leaf.a_pointer,
                    candidate_pointer: leaf.b_pointer,
                    current: leaf.a.cloned(),
                    candidate: leaf.b.cloned(),
                })
            },
        );
    };
    let (a, b) = (current.get("metadata"), candidate.get("metadata"));
    for field in ["labels", "annotations"] {
        let empty = Map::new();
        let am = a.and_then(|m| m.get(field)).and_then(Value::as_object);
        let bm = b.and_then(|m| m.get(field)).and_then(Value::as_object);
        let (am, bm) = (am.unwrap_or(&empty), bm.unwrap_or(&empty));
        let keys: BTreeSet<&String> = am.keys().chain(bm.keys()).collect();
        for k in keys {
            if same(am.get(k), bm.get(k)) {
                continue;
            }
            let ptr = format!("/metadata/{field}/{}", pod_diff::escape(k));
            compare(format!("metadata.{field}[{k}]"), am.get(k), bm.get(k), &ptr);
        }
    }
    let rest = |v: Option<&Value>| {
        v.and_then(Value::as_object).map(|m| {
            let mut m = m.clone();
            m.remove("labels");
            m.remove("annotations");
            Value::Object(m)
        })
    };
    let (ra, rb) = (rest(a), rest(b));
    compare("metadata".into(), ra.as_ref(), rb.as_ref(), "/metadata");
    let (a, b) = (current.get("spec"), candidate.get("spec"));
    compare("spec".into(), a, b, "/spec");
    let status = format!("metadata.annotations[{STATUS_ANNOTATION}]");
    if out.len() > 1 {
        out.retain(|c| c.path != status);
    }
    out
}

/// Both present and equal: a subtree that yields no change, skipped before its paths are built.
fn same(a: Option<&Value>, b: Option<&Value>) -> bool {
    a.is_some() && a == b
}

/// The two configurations a preview compares: each one's injection settings, and whether it is
/// in auto native-sidecar mode (then, with the nodes known, decided per pod template as the
/// webhook decides it, [`evaluate`]).
#[derive(Debug, Clone, Copy)]
pub struct Configs<'a> {
    /// The configuration in force.
    pub current: Settings<'a>,
    /// The candidate.
    pub candidate: Settings<'a>,
    /// Whether each (current, candidate) is in auto native-sidecar mode.
    pub auto: (bool, bool),
}

/// Where a finding comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Only the candidate's injection has it.
    Candidate,
    /// The current configuration's injection has it too.
    Current,
    /// The workload has it without any sidecar: not injection's doing, not counted.
    Workload,
}

impl Origin {
    /// `candidate`, `current`, `workload`.
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Candidate => "candidate",
            Origin::Current => "current",
            Origin::Workload => "workload",
        }
    }
}

/// One pod template previewed ([`evaluate`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    /// Both injections and their differences.
    pub preview: PodPreview,
    /// What the cluster would refuse of the candidate's pod, with where each comes from.
    pub findings: Vec<(Finding, Origin)>,
}

/// Preview one pod template of `workload` (injected under each configuration when `wanted`
/// says so, native sidecars as `admission`'s nodes decide for a configuration in auto mode)
/// and check the candidate's pod under `admission` with `replicas` pods: the judgement of
/// `preview -f` and `preview --kube` alike.
pub fn evaluate(
    pod: &Value,
    workload: &WorkloadMeta,
    configs: &Configs<'_>,
    wanted: (bool, bool),
    admission: &Admission,
    replicas: u64,
) -> Evaluation {
    let mut cur = configs.current.params(Mode::KubeInject, workload.clone());
    let mut cand = configs.candidate.params(Mode::KubeInject, workload.clone());
    auto_native(pod, configs, admission, &mut cur, &mut cand);
    let preview = preview_pod(pod, (&cur, wanted.0), (&cand, wanted.1));
    let findings = preflight(&preview, admission, replicas);
    let key = |f: &Finding| (f.check, f.rule.clone(), f.container.clone());
    // What a pod meets by itself (the same pod on both sides of the preflight).
    let of = |p: &Value| -> BTreeSet<_> {
        preflight_pod(Some(p), Ok(p), admission, replicas)
            .iter()
            .map(key)
            .collect()
    };
    let bare = of(pod);
    let current = preview.current.pod().map(of).unwrap_or_default();
    let findings = findings
        .into_iter()
        .map(|f| {
            let k = key(&f);
            let origin = if bare.contains(&k) {
                Origin::Workload
            } else if current.contains(&k) {
                Origin::Current
            } else {
                Origin::Candidate
            };
            (f, origin)
        })
        .collect();
    Evaluation { preview, findings }
}

/// In auto native-sidecar mode, each configuration's proxy form decided by the cluster's nodes
/// as Istio's webhook decides it at admission ([`auto_native_sidecars`]): the webhook sees a
/// pod before the scheduler has placed it, so a pod of a workload (its template names no node)
/// is judged by every node; a template that names its node is judged by that node. Without
/// nodes (offline, or nodes not listable) the settings' answer stands (auto is off then, as
/// Istio's webhook without a node client).
fn auto_native(
    pod: &Value,
    configs: &Configs<'_>,
    admission: &Admission,
    current: &mut InjectParams<'_>,
    candidate: &mut InjectParams<'_>,
) {
    let Some(nodes) = admission.nodes.as_deref() else {
        return;
    };
    if !(configs.auto.0 || configs.auto.1) {
        return;
    }
    let every_node = every_node_native(nodes);
    let answer = auto_native_sidecars(pod, nodes, every_node);
    if configs.auto.0 {
        current.native_sidecars = answer;
    }
    if configs.auto.1 {
        candidate.native_sidecars = answer;
    }
}

/// Whether the webhooks of a cluster inject a pod template of one of its workloads under each
/// configuration (current, candidate): `selected` is the revision whose webhook receives it
/// (`drift::RevisionTags::selecting`: the namespace's and pod's labels, revision tags and the
/// installed entries' selector value resolved), then each injector's policy and selectors
/// decide. `None` when another revision's webhook selects it (not this configuration's to
/// preview).
pub fn cluster_wanted(
    pod: &Value,
    selected: Option<&str>,
    configs: &Configs<'_>,
) -> Option<(bool, bool)> {
    if selected.is_some_and(|r| r != revision_name(configs.current.revision)) {
        return None;
    }
    let wanted = |o: &Settings<'_>| {
        let c = &o.snapshot.config;
        selected.is_some()
            && inject_required(
                pod,
                &c.policy,
                &c.never_inject_selector,
                &c.always_inject_selector,
            )
            .inject
    };
    Some((wanted(&configs.current), wanted(&configs.candidate)))
}

/// One thing the cluster would refuse, or that would not run.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Finding {
    /// Which check: `pod-security` (`pod-security-warn`, `pod-security-audit`: admitted),
    /// `limit-range`, `resource-quota`, `native-sidecars`,
    /// `duplicate-container-name`, `template`.
    pub check: &'static str,
    /// The rule (`restricted: capabilities`, `max cpu per Container`, `requests.memory`, ...).
    pub rule: String,
    /// The container it is about, if one.
    pub container: Option<String>,
    /// What is wrong, with the figures.
    pub message: String,
}

impl Finding {
    /// Whether the cluster would refuse the pod for it (a Pod Security `warn` or `audit`
    /// finding admits it).
    pub fn refuses(&self) -> bool {
        !matches!(
            self.check,
            pod_security::WARN_CHECK | pod_security::AUDIT_CHECK
        )
    }
}

/// A node and its kubelet version: the node facts of native-sidecar detection (one type,
/// [`crate::decide::native::Node`]).
pub use crate::decide::native::Node as NodeVersion;

/// What the cluster enforces on the pods of one namespace; absent parts are not checked.
#[derive(Debug, Clone, Default)]
pub struct Admission {
    /// The namespace's `pod-security.kubernetes.io/enforce` level.
    pub pod_security: Option<pod_security::Level>,
    /// The namespace's `warn` and `audit` Pod Security levels (their findings do not refuse:
    /// [`Finding::refuses`]).
    pub pod_security_warn: Option<pod_security::Level>,
    /// The namespace's `audit` level.
    pub pod_security_audit: Option<pod_security::Level>,
    /// The namespace's LimitRange objects.
    pub limit_ranges: Vec<Value>,
    /// The namespace's ResourceQuota objects (`spec.hard`, `status.used`).
    pub quotas: Vec<Value>,
    /// The cluster's nodes (`None`: not known, as offline).
    pub nodes: Option<Vec<NodeVersion>>,
}

/// The findings for a workload of `replicas` pods whose template `preview` compared, under
/// `admission`: everything the candidate's pod would meet (refusals it shares with the current
/// configuration's pod included; see [`PodPreview::current`]).
pub fn preflight(preview: &PodPreview, admission: &Admission, replicas: u64) -> Vec<Finding> {
    let candidate = match &preview.candidate {
        Outcome::Failed(e) => Err(e.as_str()),
        Outcome::Injected(p) | Outcome::NotInjected(p) => Ok(p),
    };
    preflight_pod(preview.current.pod(), candidate, admission, replicas)
}

/// [`preflight`] on borrowed pods: `after` is the candidate's pod (`Err`: the candidate's
/// injection failed, its error), `before` the current configuration's (`None`: its injection
/// failed; the quota check, which weighs what the candidate adds, is then skipped). The same pod
/// on both sides gives what that pod meets by itself.
pub fn preflight_pod(
    before: Option<&Value>,
    after: Result<&Value, &str>,
    admission: &Admission,
    replicas: u64,
) -> Vec<Finding> {
    let pod = match after {
        Err(e) => {
            return vec![Finding {
                check: "template",
                rule: "render".into(),
                container: None,
                message: format!("the candidate configuration cannot inject this pod: {e}"),
            }]
        }
        Ok(p) => p,
    };
    let mut out = Vec::new();
    out.extend(pod_security::check_modes(
        pod,
        &pod_security::Modes {
            enforce: admission.pod_security,
            warn: admission.pod_security_warn,
            audit: admission.pod_security_audit,
        },
    ));
    for lr in &admission.limit_ranges {
        out.extend(limit_range::check(pod, lr));
    }
    if let Some(before) = before.filter(|_| !admission.quotas.is_empty()) {
        // Quota admission sees the pods with the LimitRanges' defaults in.
        let stored = |p: &Value| {
            admission
                .limit_ranges
                .iter()
                .fold(p.clone(), |p, lr| limit_range::with_defaults(&p, lr))
        };
        let (before, after) = (stored(before), stored(pod));
        for q in &admission.quotas {
            out.extend(quota::check(&before, &after, q, replicas));
        }
    }
    out.extend(duplicate_names(pod));
    out.extend(refused(pod));
    if let Some(nodes) = &admission.nodes {
        out.extend(native_sidecars(pod, nodes));
    }
    out.sort();
    out.dedup();
    out
}

/// Containers, init containers and ephemeral containers of `pod` with the name each has, in
/// order: (list, container).
pub fn all_containers(pod: &Value) -> impl Iterator<Item = (&'static str, &Value)> {
    ["initContainers", "containers", "ephemeralContainers"]
        .into_iter()
        .flat_map(move |list| {
            pod.pointer(&format!("/spec/{list}"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(move |c| (list, c))
        })
}

/// The API server's pod validation refusing the candidate pod ([`crate::kube::validate`]:
/// no containers, a duplicate volume, a mount of no volume or of a path twice); duplicate
/// container names are [`duplicate_names`]'.
fn refused(pod: &Value) -> Vec<Finding> {
    crate::kube::validate::validate_pod(pod)
        .into_iter()
        .filter(|v| !(v.rule.ends_with("Containers") && v.message.contains(".name: Duplicate")))
        .map(|v| Finding {
            check: "api-validation",
            rule: v.rule.into(),
            container: None,
            message: v.message,
        })
        .collect()
}

/// Names used by more than one container of any kind (the API server refuses them:
/// `spec.containers[1].name: Duplicate value`).
fn duplicate_names(pod: &Value) -> Vec<Finding> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for (list, c) in all_containers(pod) {
        let name = container_name(c);
        if !seen.insert(name) {
            out.push(Finding {
                check: "duplicate-container-name",
                rule: "unique container names".into(),
                container: Some(name.to_string()),
                message: format!(
                    "spec.{list}: Duplicate value: {name:?} (another container or init container \
                     has this name)"
                ),
            });
        }
    }
    out
}

/// Whether every one of `nodes` runs a kubelet with native sidecars, by the library's rule
/// ([`node_supports_native`]; an unreadable version does not, no nodes at all do): auto mode's
/// answer for a pod admitted unscheduled.
pub fn every_node_native(nodes: &[NodeVersion]) -> bool {
    nodes
        .iter()
        .all(|n| node_supports_native(&n.name, &n.kubelet_version, &mut Vec::new()))
}

/// The nodes as the native-sidecar decision asks about them, the every-node answer given.
#[derive(Debug)]
struct KnownNodes<'a> {
    nodes: &'a [NodeVersion],
    every_node: bool,
}

impl ClusterFacts for KnownNodes<'_> {
    fn has_nodes(&self) -> bool {
        true
    }

    fn kubelet_version(&self, name: &str) -> Option<String> {
        self.nodes
            .iter()
            .find(|n| n.name == name)
            .map(|n| n.kubelet_version.clone())
    }

    fn all_nodes_native(&self, _warnings: &mut Vec<String>) -> bool {
        self.every_node
    }
}

/// Native sidecars for `pod` in auto mode as the webhook decides at admission
/// ([`detect_native_sidecars`]): by the node its `spec.nodeName` names when that node is known,
/// else by every node (`every_node`, from [`every_node_native`]). A pod template names no node,
/// so its pods get the every-node answer: on a cluster with some older kubelets, no native
/// sidecars.
pub fn auto_native_sidecars(pod: &Value, nodes: &[NodeVersion], every_node: bool) -> bool {
    let node = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .unwrap_or("");
    let facts = KnownNodes { nodes, every_node };
    detect_native_sidecars(NativeMode::Auto, &facts, node, &mut Vec::new())
}

/// Native sidecars (init containers with `restartPolicy: Always`) on a cluster with nodes whose
/// kubelet runs none by the library's rule ([`node_supports_native`]): on such a node the
/// sidecar would block the pod's start.
fn native_sidecars(pod: &Value, nodes: &[NodeVersion]) -> Vec<Finding> {
    let sidecars: Vec<&str> = pod
        .pointer("/spec/initContainers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|c| c.get("restartPolicy").and_then(Value::as_str) == Some("Always"))
        .map(container_name)
        .collect();
    if sidecars.is_empty() {
        return Vec::new();
    }
    let mut warnings = Vec::new();
    let old: Vec<String> = nodes
        .iter()
        .filter(|n| !node_supports_native(&n.name, &n.kubelet_version, &mut warnings))
        .map(|n| format!("{} ({})", n.name, n.kubelet_version))
        .collect();
    if old.is_empty() {
        return Vec::new();
    }
    sidecars
        .into_iter()
        .map(|name| Finding {
            check: "native-sidecars",
            rule: "kubelet 1.33 or later".into(),
            container: Some(name.to_string()),
            message: format!(
                "native sidecar (init container with restartPolicy: Always) but {} of {} nodes \
                 run an older kubelet: {}",
                old.len(),
                nodes.len(),
                old.join(", ")
            ),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Which configurations a cluster's workload is previewed under: none when another
    /// revision's webhook selects it; else as each injector's policy says.
    #[test]
    fn cluster_wanted_follows_the_selecting_webhook_and_each_policy() {
        let s = crate::config::defaults::snapshot().expect("defaults");
        let off = crate::config::Snapshot::load("policy: disabled", "{}", None).expect("config");
        let settings = |snapshot| Settings {
            snapshot,
            revision: "",
            native_sidecars: false,
            compliance_policy: "",
        };
        let configs = Configs {
            current: settings(&s),
            candidate: settings(&off),
            auto: (false, false),
        };
        let pod = serde_json::json!({"metadata": {"labels": {"app": "a"}},
                                     "spec": {"containers": [{"name": "a", "image": "a"}]}});
        assert_eq!(cluster_wanted(&pod, Some("canary"), &configs), None);
        assert_eq!(
            cluster_wanted(&pod, Some("default"), &configs),
            Some((true, false))
        );
        assert_eq!(cluster_wanted(&pod, None, &configs), Some((false, false)));
    }

    fn at<'a>(v: &'a Value, p: &Option<String>) -> Option<&'a Value> {
        p.as_ref().and_then(|p| v.pointer(p))
    }

    #[test]
    fn changes_name_fields_and_point_at_both_sides() {
        let a = json!({
            "metadata": {"annotations": {"a/b": "1", "x": "same"}, "labels": {"l": "1"}},
            "spec": {"containers": [{"name": "app", "image": "a:1"},
                                     {"name": "istio-proxy", "image": "proxy:1"}],
                     "volumes": [{"name": "v1"}]}
        });
        let b = json!({
            "metadata": {"annotations": {"a/b": "2", "x": "same"}},
            "spec": {"containers": [{"name": "app", "image": "a:1"}],
                     "initContainers": [{"name": "istio-proxy", "image": "proxy:1"}],
                     "volumes": [{"name": "v1"}]}
        });
        let cs = changes(&a, &b);
        let paths: Vec<&str> = cs.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "metadata.labels[l]",
                "metadata.annotations[a/b]",
                "spec.containers[istio-proxy]",
                "spec.initContainers",
            ]
        );
        for c in &cs {
            assert_eq!(at(&a, &c.current_pointer), c.current.as_ref(), "{c:?}");
            assert_eq!(at(&b, &c.candidate_pointer), c.candidate.as_ref(), "{c:?}");
            assert_ne!(c.current, c.candidate);
        }
        assert_eq!(cs[2].cause, "native sidecars");
        assert_eq!(
            cs[1].current_pointer.as_deref(),
            Some("/metadata/annotations/a~1b")
        );
        assert!(changes(&a, &a).is_empty());
    }

    #[test]
    fn reordered_named_lists_are_one_change() {
        let a = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
        let b = json!({"spec": {"containers": [{"name": "b"}, {"name": "a"}]}});
        let cs = changes(&a, &b);
        assert_eq!(cs.len(), 1);
        assert_eq!(cs[0].path, "spec.containers");
    }

    #[test]
    fn duplicate_names_and_old_kubelets_are_found() {
        let pod = json!({"spec": {
            "initContainers": [{"name": "istio-proxy", "restartPolicy": "Always"}],
            "containers": [{"name": "app"}, {"name": "istio-proxy"}]
        }});
        let preview = PodPreview {
            current: Outcome::NotInjected(json!({})),
            candidate: Outcome::Injected(pod),
            changes: Vec::new(),
        };
        let nodes = vec![
            NodeVersion {
                name: "n1".into(),
                kubelet_version: "v1.33.2".into(),
            },
            NodeVersion {
                name: "n2".into(),
                kubelet_version: "v1.30.4".into(),
            },
        ];
        let admission = Admission {
            nodes: Some(nodes),
            ..Admission::default()
        };
        let f = preflight(&preview, &admission, 1);
        let checks: Vec<&str> = f.iter().map(|f| f.check).collect();
        assert_eq!(checks, ["duplicate-container-name", "native-sidecars"]);
        assert!(f[1].message.contains("n2 (v1.30.4)"), "{}", f[1].message);
        assert!(!f[1].message.contains("n1"), "{}", f[1].message);
    }

    #[test]
    fn auto_mode_follows_the_named_node_else_every_node() {
        let node = |name: &str, v: &str| NodeVersion {
            name: name.into(),
            kubelet_version: v.into(),
        };
        let mixed = [node("new", "v1.33.1"), node("old", "v1.30.4")];
        let all_new = [node("a", "v1.34.0"), node("b", "1.33.0+k3s1")];
        assert!(!every_node_native(&mixed));
        assert!(every_node_native(&all_new));
        assert!(every_node_native(&[]));
        let template = json!({"spec": {"containers": [{"name": "app"}]}});
        assert!(!auto_native_sidecars(&template, &mixed, false));
        assert!(auto_native_sidecars(&template, &all_new, true));
        let on = |n: &str| json!({"spec": {"nodeName": n, "containers": []}});
        assert!(auto_native_sidecars(&on("new"), &mixed, false));
        assert!(!auto_native_sidecars(&on("old"), &mixed, false));
        // A node that is not there: the every-node answer, as Istio falls back.
        assert!(!auto_native_sidecars(&on("gone"), &mixed, false));
    }
}
