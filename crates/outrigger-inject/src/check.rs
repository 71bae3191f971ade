//! The explanation of `outrigger check`: whether a pod would be injected, and why.
//!
//! Two gates decide, in the order the API server and the injector apply them:
//! 1. the MutatingWebhookConfiguration (the API server's gate): does any webhook entry's namespaceSelector
//!    match the namespace labels and its objectSelector the pod labels? Otherwise the pod never
//!    reaches the injector;
//! 2. the injector's own decision (Istio's `injectRequired`, [`decide::inject_required`], step by step with
//!    [`decide::explain::decision_steps`]), with the reason codes the server uses in its
//!    metrics and logs ([`Reason::code`]).
//!
//! Then the templates that would be applied (template selection), and for a pod that is not injected
//! the one change that would inject it. Everything here is pure: the caller gathers the inputs
//! (a manifest, or the live cluster) and prints the [`Report`]s.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::config::Snapshot;
use crate::decide::explain::{decision_steps, Step};
use crate::decide::selection::selector_matches;
use crate::decide::{self, selection, Reason};
use crate::ingest::workload::workload_kind;
use crate::kube::names::INJECT_KEY;
use crate::kube::pod;
use crate::render;

/// Check-only code: no webhook entry selects the pod, the injector never sees it.
pub const NOT_SELECTED: &str = "webhook_not_selected";

/// Whether one webhook entry selects the pod (the library's one rule, [`selection`]).
pub use crate::decide::selection::EntryMatch;

/// The explanation for one pod.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    /// `Kind/name` of the input workload.
    pub workload: String,
    /// Namespace evaluated.
    pub namespace: String,
    /// Namespace labels evaluated (including kubernetes.io/metadata.name).
    pub namespace_labels: BTreeMap<String, String>,
    /// Pod labels evaluated.
    pub pod_labels: BTreeMap<String, String>,
    /// Every rendered webhook entry.
    pub webhooks: Vec<EntryMatch>,
    /// Steps of the injector's decision.
    pub steps: Vec<Step>,
    /// Final answer: sent to the injector and required by it.
    pub injected: bool,
    /// Reason code of the final answer ([`NOT_SELECTED`] or a [`Reason::code`]).
    pub reason: String,
    /// Human sentence for the final answer.
    pub message: String,
    /// Templates that would be applied (empty when not injected).
    pub templates: Vec<String>,
    /// Selected templates the config does not define (injection would fail).
    pub missing_templates: Vec<String>,
    /// Warnings the injector would log while deciding.
    pub warnings: Vec<String>,
    /// When not injected: the one change that would inject the pod (checked by evaluating the
    /// changed pod or namespace again), or why no single change does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

/// Inputs of [`explain`] besides the pod.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// Namespace name.
    pub namespace: &'a str,
    /// Namespace labels (kubernetes.io/metadata.name is added when absent).
    pub namespace_labels: &'a Map<String, Value>,
    /// The webhook entries evaluated (`webhooks` of a MutatingWebhookConfiguration, generated
    /// or read live).
    pub webhooks: &'a [Value],
    /// The injector configuration.
    pub snapshot: &'a Snapshot,
}

fn string_map(m: &Map<String, Value>) -> BTreeMap<String, String> {
    m.iter()
        .map(|(k, v)| {
            (
                k.clone(),
                v.as_str().map_or_else(|| v.to_string(), str::to_string),
            )
        })
        .collect()
}

/// Evaluate every webhook entry's rules and selectors, as the API server does
/// ([`selection::entry_match`]).
pub fn webhook_matches(
    entries: &[Value],
    namespace_labels: &Map<String, Value>,
    pod_labels: &Map<String, Value>,
) -> Vec<EntryMatch> {
    entries
        .iter()
        .map(|w| selection::entry_match(w, namespace_labels, pod_labels))
        .collect()
}

/// Explain the fate of `pod` (metadata.namespace is set to the context's namespace); when it is
/// not injected, also find the one change that would inject it ([`Report::fix`]).
pub fn explain(workload: &str, pod: &Value, ctx: &Context<'_>) -> Report {
    let mut report = explain_once(workload, pod, ctx);
    if !report.injected {
        report.fix = Some(find_fix(workload, pod, ctx, &report));
    }
    report
}

/// A single change to try: what to tell the user, and the pod and namespace labels after it.
struct Candidate {
    text: String,
    pod: Option<Value>,
    namespace_labels: Option<Map<String, Value>>,
}

/// The first single change (in order of preference: drop an opt-out, label the namespace, label
/// the pod) after which the pod is injected, or why there is none.
fn find_fix(workload: &str, pod: &Value, ctx: &Context<'_>, report: &Report) -> String {
    if decide::IGNORED_NAMESPACES.contains(&ctx.namespace) {
        return format!(
            "none by labels: namespace {:?} is never injected; deploy it in another namespace",
            ctx.namespace
        );
    }
    if report.reason == Reason::PolicyInvalid.code() {
        return "fix the injector config's `policy` (enabled or disabled)".to_string();
    }
    let of_pod = if workload.starts_with("Pod/") {
        "the pod"
    } else {
        "the pod template"
    };
    let mut candidates = Vec::new();
    let with_pod = |text: String, f: &dyn Fn(&mut Value)| {
        let mut p = pod.clone();
        f(&mut p);
        Candidate {
            text,
            pod: Some(p),
            namespace_labels: None,
        }
    };
    if pod.pointer("/spec/hostNetwork").and_then(Value::as_bool) == Some(true) {
        candidates.push(with_pod(
            format!(
                "set spec.hostNetwork: false in {of_pod} (host-network pods are never injected)"
            ),
            &|p| {
                if let Some(spec) = p.get_mut("spec").and_then(Value::as_object_mut) {
                    spec.remove("hostNetwork");
                }
            },
        ));
    }
    if let Some(v) = pod::annotation(pod, INJECT_KEY) {
        candidates.push(with_pod(
            format!("remove the annotation {INJECT_KEY}={v:?} from {of_pod}"),
            &|p| {
                if let Some(a) = p
                    .pointer_mut("/metadata/annotations")
                    .and_then(Value::as_object_mut)
                {
                    a.remove(INJECT_KEY);
                }
            },
        ));
    }
    if let Some(v) = pod::label(pod, INJECT_KEY).filter(|v| *v != "true") {
        candidates.push(with_pod(
            format!("remove the label {INJECT_KEY}={v:?} from {of_pod}"),
            &|p| {
                if let Some(l) = p
                    .pointer_mut("/metadata/labels")
                    .and_then(Value::as_object_mut)
                {
                    l.remove(INJECT_KEY);
                }
            },
        ));
    }
    let mut namespace_changes = Vec::new();
    let mut pod_changes = Vec::new();
    for w in ctx.webhooks {
        if let Some(c) = satisfy(&w["namespaceSelector"], ctx.namespace_labels) {
            namespace_changes.push(c);
        }
        let empty = Map::new();
        let labels = pod
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        if let Some(c) = satisfy(&w["objectSelector"], labels) {
            pod_changes.push(c);
        }
    }
    // Fewest label changes first; among equals `istio-injection=enabled`, what Istio's docs use
    // for the default revision.
    let size = |text: &str| text.split(' ').count();
    namespace_changes.sort_by_key(|(_, text)| (size(text), !text.contains("istio-injection=")));
    pod_changes.sort_by_key(|(_, text)| size(text));
    for (labels, text) in namespace_changes {
        candidates.push(Candidate {
            text: format!(
                "kubectl label namespace {} {text} --overwrite",
                ctx.namespace
            ),
            pod: None,
            namespace_labels: Some(labels),
        });
    }
    for (labels, text) in pod_changes {
        candidates.push(with_pod(
            format!("change the labels of {of_pod}: {text}"),
            &|p| {
                if let Some(meta) = p.as_object_mut() {
                    let m = meta
                        .entry("metadata")
                        .or_insert_with(|| Value::Object(Map::new()));
                    if let Some(m) = m.as_object_mut() {
                        m.insert("labels".into(), Value::Object(labels.clone()));
                    }
                }
            },
        ));
    }
    for c in candidates {
        let labels = c.namespace_labels.as_ref().unwrap_or(ctx.namespace_labels);
        let changed = Context {
            namespace_labels: labels,
            ..*ctx
        };
        if explain_once(workload, c.pod.as_ref().unwrap_or(pod), &changed).injected {
            return c.text;
        }
    }
    "no single change of labels or annotations injects it; see the steps above".to_string()
}

/// The labels after the least change that makes `selector` match them, with that change written
/// as `kubectl label` arguments (`k=v`, `k-`); `None` when it matches already or cannot.
fn satisfy(selector: &Value, labels: &Map<String, Value>) -> Option<(Map<String, Value>, String)> {
    if selector_matches(selector, labels) {
        return None;
    }
    let mut out = labels.clone();
    let mut changes = Vec::new();
    for r in selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = r.get("key").and_then(Value::as_str)?;
        let values: Vec<&str> = r
            .get("values")
            .and_then(Value::as_array)
            .map(|v| v.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let current = out.get(key).and_then(Value::as_str).map(str::to_string);
        match r.get("operator").and_then(Value::as_str)? {
            "In" if !current.as_deref().is_some_and(|c| values.contains(&c)) => {
                let v = values.first()?;
                out.insert(key.to_string(), Value::String((*v).to_string()));
                changes.push(format!("{key}={v}"));
            }
            "NotIn" if current.as_deref().is_some_and(|c| values.contains(&c)) => {
                out.remove(key);
                changes.push(format!("{key}-"));
            }
            "DoesNotExist" if current.is_some() => {
                out.remove(key);
                changes.push(format!("{key}-"));
            }
            "Exists" if current.is_none() => return None,
            _ => {}
        }
    }
    if let Some(m) = selector.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in m {
            if out.get(k) != Some(v) {
                out.insert(k.clone(), v.clone());
                changes.push(format!("{k}={}", v.as_str().unwrap_or_default()));
            }
        }
    }
    (!changes.is_empty() && selector_matches(selector, &out)).then(|| (out, changes.join(" ")))
}

/// [`explain`] without looking for a fix.
fn explain_once(workload: &str, pod: &Value, ctx: &Context<'_>) -> Report {
    let mut pod = pod.clone();
    if let Some(meta) = pod.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("namespace".into(), Value::String(ctx.namespace.to_string()));
    } else if let Some(obj) = pod.as_object_mut() {
        obj.insert(
            "metadata".into(),
            serde_json::json!({"namespace": ctx.namespace}),
        );
    }
    let ns_labels = selection::namespace_labels(ctx.namespace, ctx.namespace_labels);
    let empty = Map::new();
    let pod_labels = pod
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let webhooks = webhook_matches(ctx.webhooks, &ns_labels, pod_labels);
    let config = &ctx.snapshot.config;
    let d = decide::inject_required(
        &pod,
        &config.policy,
        &config.never_inject_selector,
        &config.always_inject_selector,
    );
    let steps = decision_steps(
        &pod,
        &config.policy,
        &config.never_inject_selector,
        &config.always_inject_selector,
        &d,
    );
    let selected: Vec<&str> = webhooks
        .iter()
        .filter(|w| w.selected)
        .map(|w| w.name.as_str())
        .collect();
    let (injected, reason, message) = if selected.is_empty() {
        let msg = "no webhook entry selects the pod (namespace and object selectors), the injector never sees it";
        (false, NOT_SELECTED.to_string(), msg.to_string())
    } else {
        (
            d.inject,
            d.reason.code().to_string(),
            format!("via {}: {}", selected.join(", "), d.message),
        )
    };
    let templates = if injected {
        render::select_templates(ctx.snapshot, &pod)
    } else {
        Vec::new()
    };
    let missing_templates = templates
        .iter()
        .filter(|t| !config.templates.contains_key(*t))
        .cloned()
        .collect();
    Report {
        workload: workload.to_string(),
        namespace: ctx.namespace.to_string(),
        namespace_labels: string_map(&ns_labels),
        pod_labels: string_map(pod_labels),
        webhooks,
        steps,
        injected,
        reason,
        message,
        templates,
        missing_templates,
        warnings: d.warnings,
        fix: None,
    }
}

/// Pod templates of a document: (`Kind/name`, pod-shaped value with metadata and spec).
pub fn pods_of(doc: &Value) -> Vec<(String, Value)> {
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or("");
    let name = doc
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let label = format!("{kind}/{name}");
    let template = match kind {
        "List" => {
            let items = doc
                .get("items")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            return items.iter().flat_map(pods_of).collect();
        }
        k => match workload_kind(k) {
            Some(w) if w.pod_template.is_empty() => Some(doc.clone()),
            Some(w) => doc.pointer(w.pod_template).cloned(),
            None => None,
        },
    };
    let Some(mut pod) = template else {
        return Vec::new();
    };
    if kind != "Pod" {
        // The pod inherits the workload's namespace, as the controller creates it there.
        if let (Some(ns), Some(meta)) = (
            doc.pointer("/metadata/namespace").cloned(),
            pod.get_mut("metadata").and_then(Value::as_object_mut),
        ) {
            meta.entry("namespace").or_insert(ns);
        }
    }
    vec![(label, pod)]
}

/// A pod with no labels, as a new pod of a namespace looks to the selectors (what `check
/// --kube` explains without a pod or manifest).
pub fn new_pod() -> Value {
    serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "(new pod)"},
           "spec": {"containers": [{"name": "app", "image": "app"}]}})
}

/// Explain every pod template of `docs`. The namespace is the document's, else `namespace` (for
/// manifests without one), else `default`.
pub fn explain_documents(
    docs: &[Value],
    namespace: Option<&str>,
    namespace_labels: &Map<String, Value>,
    webhooks: &[Value],
    snapshot: &Snapshot,
) -> Vec<Report> {
    docs.iter()
        .flat_map(pods_of)
        .map(|(workload, pod)| {
            // The manifest's namespace wins; `namespace` is for manifests without one.
            let ns = pod
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
                .or(namespace)
                .unwrap_or("default")
                .to_string();
            let ctx = Context {
                namespace: &ns,
                namespace_labels,
                webhooks,
                snapshot,
            };
            explain(&workload, &pod, &ctx)
        })
        .collect()
}
