//! Which webhook entries the API server calls for a pod create: `rules`, `namespaceSelector`
//! (with `kubernetes.io/metadata.name`) and `objectSelector`, as its admission dispatcher
//! decides (the label selectors are the library's, as `serve --detect-overlaps` reads them).

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhook, MutatingWebhookConfiguration, RuleWithOperations,
};
use k8s_openapi::api::core::v1::Namespace;
use serde_json::{Map, Value};

use crate::kube::overlap;
use crate::kube::webhook_object::ENTRY_SUFFIX;

/// Labels as a JSON map.
pub type Labels = Map<String, Value>;

/// Whether `rule` covers a CREATE of pods in `v1`.
fn rule_covers_pod_create(rule: &RuleWithOperations) -> bool {
    let has = |list: &Option<Vec<String>>, want: &str| {
        list.iter().flatten().any(|v| v == want || v == "*")
    };
    has(&rule.operations, "CREATE")
        && has(&rule.api_groups, "")
        && has(&rule.api_versions, "v1")
        && rule
            .resources
            .iter()
            .flatten()
            .any(|r| r == "pods" || r == "*" || r == "*/*")
}

/// Whether `entry` is called for a pod with `pod_labels` created in a namespace with
/// `ns_labels` (`kubernetes.io/metadata.name` included).
pub fn entry_selects(entry: &MutatingWebhook, ns_labels: &Labels, pod_labels: &Labels) -> bool {
    entry.rules.iter().flatten().any(rule_covers_pod_create)
        && overlap::selector(entry.namespace_selector.as_ref())
            .is_some_and(|s| s.matches(ns_labels))
        && overlap::selector(entry.object_selector.as_ref()).is_some_and(|s| s.matches(pod_labels))
}

/// Whether `entry` injects sidecars (Istio's naming, `*sidecar-injector.istio.io`).
pub fn is_injector(entry: &MutatingWebhook) -> bool {
    entry.name.ends_with(ENTRY_SUFFIX)
}

/// The name of a configuration.
pub fn name(c: &MutatingWebhookConfiguration) -> &str {
    c.metadata.name.as_deref().unwrap_or("")
}

/// The entries of `c`.
pub fn entries(c: &MutatingWebhookConfiguration) -> impl Iterator<Item = &MutatingWebhook> {
    c.webhooks.iter().flatten()
}

/// The names of the injecting entries of `c` that select the pod.
pub fn injecting_entries_selecting<'a>(
    c: &'a MutatingWebhookConfiguration,
    ns_labels: &Labels,
    pod_labels: &Labels,
) -> Vec<&'a str> {
    entries(c)
        .filter(|e| is_injector(e) && entry_selects(e, ns_labels, pod_labels))
        .map(|e| e.name.as_str())
        .collect()
}

/// A namespace's name and its labels as the API server sees them.
pub fn namespace_labels(ns: &Namespace) -> (String, Labels) {
    overlap::labels(ns)
}

/// The labels of namespace `name` as the API server sees them: its own when listed, plus
/// `kubernetes.io/metadata.name`.
pub fn labels_of(namespaces: &[Namespace], name: &str) -> Labels {
    namespaces
        .iter()
        .map(namespace_labels)
        .find(|(n, _)| n == name)
        .map(|(_, l)| l)
        .unwrap_or_else(|| {
            let mut l = Labels::new();
            l.insert(
                "kubernetes.io/metadata.name".into(),
                Value::String(name.into()),
            );
            l
        })
}

/// `CONFIGURATION/ENTRY` of every entry (of every configuration, in the API server's call
/// order: configurations by name, entries in order) called for the pod.
pub fn call_order(
    configurations: &[MutatingWebhookConfiguration],
    ns_labels: &Labels,
    pod_labels: &Labels,
) -> Vec<(String, String)> {
    let mut sorted: Vec<&MutatingWebhookConfiguration> = configurations.iter().collect();
    sorted.sort_by(|a, b| name(a).cmp(name(b)));
    sorted
        .into_iter()
        .flat_map(|c| {
            entries(c)
                .filter(|e| entry_selects(e, ns_labels, pod_labels))
                .map(move |e| (name(c).to_string(), e.name.clone()))
        })
        .collect()
}
