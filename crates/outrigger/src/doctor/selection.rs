//! Which webhook entries the API server calls for a pod create, on the typed objects `doctor`
//! reads: the library's one rule ([`outrigger_inject::decide::selection`]: `rules`,
//! `namespaceSelector` with `kubernetes.io/metadata.name`, `objectSelector`, the call order).

use k8s_openapi::api::admissionregistration::v1::{MutatingWebhook, MutatingWebhookConfiguration};
use k8s_openapi::api::core::v1::Namespace;
use outrigger_inject::decide::selection;
use serde_json::{Map, Value};

use crate::kube::overlap;

/// Labels as a JSON map.
pub type Labels = Map<String, Value>;

/// The JSON of a typed entry, as the library reads it.
fn json(entry: &MutatingWebhook) -> Value {
    serde_json::to_value(entry).unwrap_or(Value::Null)
}

/// Whether `entry` is called for a pod with `pod_labels` created in a namespace with
/// `ns_labels` (`kubernetes.io/metadata.name` included).
pub fn entry_selects(entry: &MutatingWebhook, ns_labels: &Labels, pod_labels: &Labels) -> bool {
    selection::entry_match(&json(entry), ns_labels, pod_labels).selected
}

/// Whether `entry` injects sidecars (Istio's naming, `*sidecar-injector.istio.io`).
pub fn is_injector(entry: &MutatingWebhook) -> bool {
    entry.name.ends_with(selection::INJECTOR_ENTRY_SUFFIX)
}

/// The name of a configuration.
pub fn name(c: &MutatingWebhookConfiguration) -> &str {
    c.metadata.name.as_deref().unwrap_or("")
}

/// The entries of `c`.
pub fn entries(c: &MutatingWebhookConfiguration) -> impl Iterator<Item = &MutatingWebhook> {
    c.webhooks.iter().flatten()
}

/// The names of the injecting entries of `c` that select the pod (each by the library's one
/// rule, [`selection::selecting_entry`]).
pub fn injecting_entries_selecting<'a>(
    c: &'a MutatingWebhookConfiguration,
    ns_labels: &Labels,
    pod_labels: &Labels,
) -> Vec<&'a str> {
    entries(c)
        .filter(|e| {
            selection::selecting_entry(std::slice::from_ref(&json(e)), ns_labels, pod_labels)
                .is_some()
        })
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

/// The JSON of every configuration (for [`selection::Configuration::of`]).
pub fn as_json(configurations: &[MutatingWebhookConfiguration]) -> Vec<Value> {
    configurations
        .iter()
        .map(|c| serde_json::to_value(c).unwrap_or(Value::Null))
        .collect()
}

/// `CONFIGURATION/ENTRY` of every entry (of every configuration, in the API server's call
/// order: configurations by name, entries in order) called for the pod.
pub fn call_order(
    configurations: &[MutatingWebhookConfiguration],
    ns_labels: &Labels,
    pod_labels: &Labels,
) -> Vec<(String, String)> {
    let objects = as_json(configurations);
    let configs: Vec<selection::Configuration<'_>> =
        objects.iter().map(selection::Configuration::of).collect();
    selection::call_order(&configs, ns_labels, pod_labels)
        .into_iter()
        .map(|c| (c.configuration, c.entry))
        .collect()
}
