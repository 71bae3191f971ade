//! Who is called for a pod, and who injected it: the one owner of
//!
//! * **webhook selection**: which entries of which `MutatingWebhookConfiguration`s the API
//!   server calls for a pod create (`rules`, `namespaceSelector` against the namespace's labels
//!   with `kubernetes.io/metadata.name`, `objectSelector` against the pod's labels), in the API
//!   server's call order (configurations by name, entries in order) ([`entry_match`],
//!   [`call_order`], [`selecting_injectors`], [`selecting_entry`]);
//! * **the revision rule**: `""` and `default` are the default revision ([`Revision`],
//!   [`revision_name`], [`revision_suffix`], [`is_default_revision`]), a revision is a DNS-1123 label ([`is_revision_name`]), and the
//!   revision whose webhook Istio's chart makes select a pod, by its precedence
//!   ([`selecting_revision`]);
//! * **the marker of who injected a pod**: the annotation [`INJECTED_BY_ANNOTATION`] that
//!   outrigger's webhook writes on every pod it injects and istiod never writes
//!   ([`mark_injected`], [`injected_by_outrigger`]).
//!
//! `check`, `drift`, `preview` and the binary's `doctor`, overlap detection and probe read them
//! here; none computes selection on its own.

use serde::Serialize;
use serde_json::{Map, Value};

pub use crate::kube::names::{INJECTED_BY_ANNOTATION, INJECTED_BY_VALUE};
use crate::kube::names::{INJECT_KEY, NAMESPACE_NAME_LABEL, REVISION_LABEL};
use crate::kube::pod::{self, label};
use crate::kube::selector::LabelSelector;

/// The name of the default revision (`""` means it too).
pub const DEFAULT_REVISION: &str = "default";

/// The `istio.io/rev` value outrigger's default install selects: a value of its own, so that
/// beside istiod every pod reaches exactly one injector (istiod's chart selects its revision
/// names, `default` and `istio-injection=enabled`, never this one unless a revision is named so).
pub const OUTRIGGER_SELECTOR: &str = "outrigger";

/// Suffix shared by the names of every injecting webhook entry (Istio's chart, its revision
/// tags, and outrigger's configurations).
pub const INJECTOR_ENTRY_SUFFIX: &str = "sidecar-injector.istio.io";

/// The revision as selectors and the status annotation name it: `default` for `""`.
pub fn revision_name(revision: &str) -> &str {
    if revision.is_empty() {
        DEFAULT_REVISION
    } else {
        revision
    }
}

/// Whether `revision` is the default revision (`""` or `default`).
pub fn is_default_revision(revision: &str) -> bool {
    revision_name(revision) == DEFAULT_REVISION
}

/// The revision as Istio's chart and istioctl suffix names with it (`istio-sidecar-injector-REV`,
/// `istiod-REV`) and set the chart's `revision` value: `""` for the default revision (`""` or
/// `default`), else the revision.
pub fn revision_suffix(revision: &str) -> &str {
    if is_default_revision(revision) {
        ""
    } else {
        revision
    }
}

/// A control-plane revision as given (`--revision`, a Deployment's flag): the one carrier of
/// the rule that `""` and `default` both name the default revision. It reads as the text given
/// (it dereferences to `str`); [`Revision::name`], [`Revision::suffix`] and
/// [`Revision::is_default`] apply the rule ([`revision_name`], [`revision_suffix`],
/// [`is_default_revision`]).
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Revision(String);

impl Revision {
    /// The default revision, as `""`.
    pub const EMPTY: Revision = Revision(String::new());

    /// The revision named `name` (as given: `""`, `default` or a revision).
    pub fn new(name: impl Into<String>) -> Revision {
        Revision(name.into())
    }

    /// The text given.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The name selectors and the status annotation use: `default` for the default revision.
    pub fn name(&self) -> &str {
        revision_name(&self.0)
    }

    /// The suffix of names and the chart's `revision` value: `""` for the default revision.
    pub fn suffix(&self) -> &str {
        revision_suffix(&self.0)
    }

    /// Whether this is the default revision (`""` or `default`).
    pub fn is_default(&self) -> bool {
        is_default_revision(&self.0)
    }
}

impl std::ops::Deref for Revision {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Revision {
    /// As the text given (`"canary"`), so messages quoting a revision read as before.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&self.0, f)
    }
}

impl std::fmt::Display for Revision {
    /// The text given.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for Revision {
    type Err = std::convert::Infallible;

    fn from_str(s: &str) -> Result<Revision, Self::Err> {
        Ok(Revision::new(s))
    }
}

impl From<Revision> for String {
    fn from(r: Revision) -> String {
        r.0
    }
}

/// Whether `s` is a valid revision (or revision tag, or selector) name: a DNS-1123 label
/// (`[a-z0-9]([-a-z0-9]*[a-z0-9])?`, at most 63 characters), as Istio requires of revisions
/// (they name Services and ConfigMaps) and the API server of label values it selects on.
pub fn is_revision_name(s: &str) -> bool {
    crate::kube::dns1123::is_dns1123_label(s)
}

/// The revision whose webhook receives `pod` in a namespace labelled `namespace_labels`, as
/// Istio's revisioned `MutatingWebhookConfiguration`s select: the namespace label
/// `istio-injection=enabled` (the default revision; any other value selects none), else the
/// namespace label `istio.io/rev`, else the pod's `istio.io/rev` label, else the pod's
/// `sidecar.istio.io/inject=true` label (the default revision's object selector). `None`: no
/// webhook sees the pod. The default revision is named `default`; the value returned is the
/// label's, so it may be a revision tag or [`OUTRIGGER_SELECTOR`].
///
/// This is Istio's precedence, the namespace before the pod (functional spec §2.3, the chart's
/// entries `rev.namespace.`, `rev.object.`, `namespace.`, `object.` and "the legacy namespace
/// label `istio-injection` takes precedence over `istio.io/rev` on namespaces"; `rev.object.`
/// requires the namespace to carry neither label). It does not read the pod's
/// `sidecar.istio.io/inject=false` label, which every entry's objectSelector excludes: a caller
/// that must know whether an entry is called evaluates the entries ([`selecting_entry`]).
pub fn selecting_revision(namespace_labels: &Map<String, Value>, pod: &Value) -> Option<String> {
    let ns = |k: &str| namespace_labels.get(k).and_then(Value::as_str);
    if let Some(v) = ns("istio-injection") {
        return (v == "enabled").then(|| DEFAULT_REVISION.to_string());
    }
    if let Some(rev) = ns(REVISION_LABEL) {
        return Some(rev.to_string());
    }
    if let Some(rev) = label(pod, REVISION_LABEL) {
        return Some(rev.to_string());
    }
    (label(pod, INJECT_KEY) == Some("true")).then(|| DEFAULT_REVISION.to_string())
}

/// The namespace's labels as the API server matches them: `labels` with
/// `kubernetes.io/metadata.name` set to `namespace` when absent.
pub fn namespace_labels(namespace: &str, labels: &Map<String, Value>) -> Map<String, Value> {
    let mut l = labels.clone();
    l.entry(NAMESPACE_NAME_LABEL.to_string())
        .or_insert_with(|| Value::String(namespace.to_string()));
    l
}

/// Whether one webhook entry selects a pod.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EntryMatch {
    /// Entry name (`rev.namespace.sidecar-injector.istio.io`, ...).
    pub name: String,
    /// The namespaceSelector matched the namespace labels.
    pub namespace_selector: bool,
    /// The objectSelector matched the pod labels.
    pub object_selector: bool,
    /// The API server calls the entry for the pod: its rules cover a pod CREATE and both
    /// selectors matched.
    pub selected: bool,
}

/// Whether a label selector of an entry (its JSON) selects `labels`, as the API server reads
/// it: `null` (absent) selects everything; one that does not convert (the API server refuses
/// it at write) selects nothing.
pub fn selector_matches(sel: &Value, labels: &Map<String, Value>) -> bool {
    LabelSelector::from_json(sel).is_ok_and(|s| s.matches(labels))
}

/// Whether the entry's `rules` cover a CREATE of `pods` in the core group's `v1` (`*` and
/// `*/*` included).
pub fn rules_cover_pod_create(entry: &Value) -> bool {
    let has = |rule: &Value, field: &str, want: &str| {
        rule.get(field)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .any(|v| v == want || v == "*")
    };
    entry
        .get("rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|r| {
            has(r, "operations", "CREATE")
                && has(r, "apiGroups", "")
                && has(r, "apiVersions", "v1")
                && (has(r, "resources", "pods") || has(r, "resources", "*/*"))
        })
}

/// Evaluate one entry (the JSON of a `MutatingWebhook`) for a pod with `pod_labels` created in
/// a namespace with `ns_labels` (pass them through [`namespace_labels`]).
pub fn entry_match(
    entry: &Value,
    ns_labels: &Map<String, Value>,
    pod_labels: &Map<String, Value>,
) -> EntryMatch {
    let selector = |field: &str| entry.get(field).unwrap_or(&Value::Null);
    let ns = selector_matches(selector("namespaceSelector"), ns_labels);
    let obj = selector_matches(selector("objectSelector"), pod_labels);
    EntryMatch {
        name: entry_name(entry).to_string(),
        namespace_selector: ns,
        object_selector: obj,
        selected: ns && obj && rules_cover_pod_create(entry),
    }
}

fn entry_name(entry: &Value) -> &str {
    entry
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Whether the entry injects sidecars (Istio's naming, `*sidecar-injector.istio.io`).
pub fn is_injector_entry(entry: &Value) -> bool {
    entry_name(entry).ends_with(INJECTOR_ENTRY_SUFFIX)
}

/// The first injecting entry of one configuration's `webhooks` that selects the pod: the one
/// function from entries (their `rules`, namespace and object selectors), namespace labels
/// (through [`namespace_labels`]) and pod labels to the selecting entry. Istio's chart makes a
/// configuration's entries exclusive (at most one selects a pod; functional spec §2.3), so this
/// is the entry that sends the pod to that configuration's injector.
pub fn selecting_entry<'a>(
    webhooks: &'a [Value],
    ns_labels: &Map<String, Value>,
    pod_labels: &Map<String, Value>,
) -> Option<&'a Value> {
    webhooks
        .iter()
        .find(|e| is_injector_entry(e) && entry_match(e, ns_labels, pod_labels).selected)
}

/// One `MutatingWebhookConfiguration`: its name and its `webhooks`.
#[derive(Debug, Clone, Copy)]
pub struct Configuration<'a> {
    /// `metadata.name`.
    pub name: &'a str,
    /// `webhooks` (each the JSON of a `MutatingWebhook`).
    pub webhooks: &'a [Value],
}

impl<'a> Configuration<'a> {
    /// The configuration of a `MutatingWebhookConfiguration` object as JSON.
    pub fn of(object: &'a Value) -> Configuration<'a> {
        Configuration {
            name: pod::meta_str(object, "name"),
            webhooks: object
                .get("webhooks")
                .and_then(Value::as_array)
                .map_or(&[], Vec::as_slice),
        }
    }
}

/// One call the API server makes: `(configuration, entry)`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Call {
    /// The configuration's name.
    pub configuration: String,
    /// The entry's name.
    pub entry: String,
}

impl std::fmt::Display for Call {
    /// `CONFIGURATION/ENTRY`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.configuration, self.entry)
    }
}

/// Every entry (of every configuration) the API server calls for the pod, in its call order:
/// configurations sorted by name, entries in order.
pub fn call_order(
    configurations: &[Configuration<'_>],
    ns_labels: &Map<String, Value>,
    pod_labels: &Map<String, Value>,
) -> Vec<Call> {
    let mut sorted: Vec<&Configuration<'_>> = configurations.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(b.name));
    sorted
        .into_iter()
        .flat_map(|c| {
            c.webhooks
                .iter()
                .filter(|e| entry_match(e, ns_labels, pod_labels).selected)
                .map(|e| Call {
                    configuration: c.name.to_string(),
                    entry: entry_name(e).to_string(),
                })
        })
        .collect()
}

/// The injecting entries among [`call_order`]: more than one configuration here means two
/// injectors for one pod (the last one called wins, and either being down blocks it).
pub fn selecting_injectors(
    configurations: &[Configuration<'_>],
    ns_labels: &Map<String, Value>,
    pod_labels: &Map<String, Value>,
) -> Vec<Call> {
    call_order(configurations, ns_labels, pod_labels)
        .into_iter()
        .filter(|c| c.entry.ends_with(INJECTOR_ENTRY_SUFFIX))
        .collect()
}

/// The label combinations selection is judged over (by `doctor`'s takeover check and the
/// migration tests): namespace `istio-injection` absent, `enabled` or `disabled` × `istio.io/rev`
/// absent, `default`, `canary`, `other` or [`OUTRIGGER_SELECTOR`]; pod `istio.io/rev` the same
/// five × `sidecar.istio.io/inject` absent, `true` or `false`: 15 × 15 = 225 pairs of
/// (namespace labels, pod labels), without `kubernetes.io/metadata.name`.
pub fn label_combinations() -> Vec<(Map<String, Value>, Map<String, Value>)> {
    let revs = [
        None,
        Some(DEFAULT_REVISION),
        Some("canary"),
        Some("other"),
        Some(OUTRIGGER_SELECTOR),
    ];
    let labels = |pairs: [(&str, Option<&str>); 2]| -> Map<String, Value> {
        pairs
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k.to_string(), Value::String(v.to_string()))))
            .collect()
    };
    let mut namespaces = Vec::new();
    let mut pods = Vec::new();
    for rev in revs {
        for inj in [None, Some("enabled"), Some("disabled")] {
            namespaces.push(labels([("istio-injection", inj), (REVISION_LABEL, rev)]));
        }
        for inj in [None, Some("true"), Some("false")] {
            pods.push(labels([(INJECT_KEY, inj), (REVISION_LABEL, rev)]));
        }
    }
    namespaces
        .iter()
        .flat_map(|ns| pods.iter().map(move |p| (ns.clone(), p.clone())))
        .collect()
}

/// Write the marker: [`INJECTED_BY_ANNOTATION`]`: `[`INJECTED_BY_VALUE`] on the pod (outrigger's
/// webhook does, on every pod it injects).
pub fn mark_injected(pod: &mut Value) {
    pod::annotations_mut(pod).insert(
        INJECTED_BY_ANNOTATION.to_string(),
        Value::String(INJECTED_BY_VALUE.to_string()),
    );
}

/// Whether outrigger's webhook injected `pod`: it carries the marker (istiod never writes it).
/// A pod injected offline (`outrigger inject`, like `istioctl kube-inject`) carries none.
pub fn injected_by_outrigger(pod: &Value) -> bool {
    pod::annotation(pod, INJECTED_BY_ANNOTATION) == Some(INJECTED_BY_VALUE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(v: Value) -> Map<String, Value> {
        v.as_object().cloned().expect("labels")
    }

    /// An entry of Istio's chart: `name`, pod-create rules, the two selectors.
    fn entry(name: &str, ns: Value, obj: Value) -> Value {
        json!({"name": name, "namespaceSelector": ns, "objectSelector": obj,
               "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]})
    }

    #[test]
    fn revision_rule() {
        assert_eq!(revision_name(""), "default");
        assert_eq!(revision_name("canary"), "canary");
        assert!(is_default_revision("") && is_default_revision("default"));
        assert!(!is_default_revision("outrigger"));
        assert_eq!(revision_suffix("default"), "");
        assert_eq!(revision_suffix(""), "");
        assert_eq!(revision_suffix("canary"), "canary");
        let r = Revision::new("default");
        assert!(r.is_default() && r.suffix().is_empty() && r.name() == "default");
        assert_eq!(&*r, "default");
        assert_eq!(format!("{:?}", Revision::new("c")), "\"c\"");
        let given: Revision = "".parse().expect("infallible");
        assert_eq!((given.name(), given.suffix()), ("default", ""));
        for good in ["a", "canary", "1-24", &"x".repeat(63)] {
            assert!(is_revision_name(good), "{good}");
        }
        for bad in ["", "-a", "a-", "A", "a_b", "a.b", "1.28", &"x".repeat(64)] {
            assert!(!is_revision_name(bad), "{bad}");
        }
    }

    #[test]
    fn the_selecting_revision_follows_istios_webhook_selectors() {
        let pod = |labels: Value| json!({"metadata": {"labels": labels}});
        let none = pod(json!({}));
        let cases = [
            (
                json!({"istio-injection": "enabled"}),
                pod(json!({"istio.io/rev": "c"})),
                Some("default"),
            ),
            (
                json!({"istio-injection": "disabled", "istio.io/rev": "c"}),
                none.clone(),
                None,
            ),
            (
                json!({"istio.io/rev": "canary"}),
                none.clone(),
                Some("canary"),
            ),
            (
                json!({}),
                pod(json!({"istio.io/rev": "outrigger"})),
                Some("outrigger"),
            ),
            (
                json!({}),
                pod(json!({"sidecar.istio.io/inject": "true"})),
                Some("default"),
            ),
            (
                json!({}),
                pod(json!({"sidecar.istio.io/inject": "false"})),
                None,
            ),
            (json!({}), none.clone(), None),
        ];
        for (ns, p, want) in cases {
            assert_eq!(
                selecting_revision(&labels(ns.clone()), &p).as_deref(),
                want,
                "{ns} {p}"
            );
        }
    }

    #[test]
    fn entries_need_rules_and_both_selectors() {
        let e = entry(
            "namespace.sidecar-injector.istio.io",
            json!({"matchExpressions": [{"key": "istio-injection", "operator": "In", "values": ["enabled"]}]}),
            json!({"matchExpressions": [{"key": "sidecar.istio.io/inject", "operator": "NotIn", "values": ["false"]}]}),
        );
        let ns = namespace_labels("apps", &labels(json!({"istio-injection": "enabled"})));
        assert_eq!(ns["kubernetes.io/metadata.name"], "apps");
        let m = entry_match(&e, &ns, &Map::new());
        assert!(m.selected && m.namespace_selector && m.object_selector);
        let out = labels(json!({"sidecar.istio.io/inject": "false"}));
        let m = entry_match(&e, &ns, &out);
        assert!(!m.selected && m.namespace_selector && !m.object_selector);
        let mut no_rules = e.clone();
        no_rules["rules"][0]["resources"] = json!(["services"]);
        assert!(!entry_match(&no_rules, &ns, &Map::new()).selected);
        no_rules["rules"][0]["resources"] = json!(["*/*"]);
        assert!(entry_match(&no_rules, &ns, &Map::new()).selected);
        // Absent selectors select everything; an invalid one nothing.
        let open = json!({"name": "x", "rules": e["rules"]});
        assert!(entry_match(&open, &Map::new(), &Map::new()).selected);
        let bad = json!({"name": "x", "rules": e["rules"], "namespaceSelector": {"matchExpressions": [{"key": "k", "operator": "Near"}]}});
        assert!(!entry_match(&bad, &Map::new(), &Map::new()).selected);
    }

    #[test]
    fn calls_follow_the_api_servers_order_and_injectors_are_told_apart() {
        let any = json!({});
        let istio = json!({"metadata": {"name": "istio-sidecar-injector"}, "webhooks": [
            entry("namespace.sidecar-injector.istio.io", any.clone(), any.clone())]});
        let other = json!({"metadata": {"name": "a-policy"}, "webhooks": [
            entry("policy.example.com", any.clone(), any.clone())]});
        let ours = json!({"metadata": {"name": "outrigger-sidecar-injector"}, "webhooks": [
            entry("rev.namespace.sidecar-injector.istio.io", any.clone(), any.clone()),
            entry("rev.object.sidecar-injector.istio.io", any.clone(), any.clone())]});
        let configs = [
            Configuration::of(&ours),
            Configuration::of(&istio),
            Configuration::of(&other),
        ];
        let calls: Vec<String> = call_order(&configs, &Map::new(), &Map::new())
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            calls,
            [
                "a-policy/policy.example.com",
                "istio-sidecar-injector/namespace.sidecar-injector.istio.io",
                "outrigger-sidecar-injector/rev.namespace.sidecar-injector.istio.io",
                "outrigger-sidecar-injector/rev.object.sidecar-injector.istio.io",
            ]
        );
        assert_eq!(
            selecting_injectors(&configs, &Map::new(), &Map::new()).len(),
            3
        );
        let first = selecting_entry(configs[0].webhooks, &Map::new(), &Map::new());
        assert_eq!(
            first.map(|e| e["name"].clone()),
            Some(json!("rev.namespace.sidecar-injector.istio.io"))
        );
    }

    #[test]
    fn the_label_table_has_every_combination_once() {
        let t = label_combinations();
        assert_eq!(t.len(), 225);
        let distinct: std::collections::BTreeSet<String> =
            t.iter().map(|(n, p)| format!("{n:?}{p:?}")).collect();
        assert_eq!(distinct.len(), 225);
        assert!(t.iter().any(|(n, p)| n.is_empty() && p.is_empty()));
    }

    #[test]
    fn the_marker_is_written_and_read_back() {
        let mut p = json!({"metadata": {"name": "p"}});
        assert!(!injected_by_outrigger(&p));
        mark_injected(&mut p);
        assert!(injected_by_outrigger(&p));
        assert_eq!(
            p["metadata"]["annotations"][INJECTED_BY_ANNOTATION],
            INJECTED_BY_VALUE
        );
        let forged = json!({"metadata": {"annotations": {INJECTED_BY_ANNOTATION: "istiod"}}});
        assert!(!injected_by_outrigger(&forged));
    }
}
