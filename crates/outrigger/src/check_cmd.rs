//! `outrigger check`: explain whether a pod would be injected, and why.
//!
//! Two gates decide, in the order the API server and the injector apply them:
//! 1. the MutatingWebhookConfiguration: does any webhook entry's namespaceSelector
//!    match the namespace labels and its objectSelector the pod labels? Otherwise the pod never
//!    reaches the injector;
//! 2. the injector's own decision (Istio's `injectRequired`), with the reason codes the server uses in its
//!    metrics and logs ([`Reason::code`]).
//!
//! Then the templates that would be applied. [`explain`] is pure; [`run`] loads the
//! inputs (a manifest offline, or the live cluster with `--kube`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use outrigger_inject::config::{InjectorConfig, Snapshot};
use outrigger_inject::decide::{self, Decision, Reason, INJECT_KEY};
use outrigger_inject::kube::pod;
use outrigger_inject::kube::selector::LabelSelector;
use outrigger_inject::render;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::settings::ConfigFiles;
use crate::webhook_config::{self, WebhookOptions};

/// Label the API server sets on every namespace with its name.
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";
/// Check-only code: no webhook entry selects the pod, the injector never sees it.
pub const NOT_SELECTED: &str = "webhook_not_selected";

/// Output format of `outrigger check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CheckOutput {
    /// Short human-readable table.
    Table,
    /// One JSON object per pod, in a JSON array.
    Json,
}

/// Flags of `outrigger check`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Pod or workload manifest (multi-document YAML or JSON); `-` reads standard input.
    #[arg(short = 'f', long = "filename")]
    pub filename: Option<PathBuf>,
    /// Namespace of the pods (manifests without one; with --kube, the namespace to read).
    #[arg(short = 'n', long = "namespace")]
    pub namespace: Option<String>,
    /// Labels of the namespace, comma-separated k=v (offline; kubernetes.io/metadata.name is implied).
    #[arg(
        long = "namespace-labels",
        visible_alias = "namespaceLabels",
        value_delimiter = ','
    )]
    pub namespace_labels: Vec<String>,
    /// Istio's configuration files.
    #[command(flatten)]
    pub files: ConfigFiles,
    /// Control plane revision of the webhook configuration to evaluate.
    #[arg(long = "revision", default_value = "")]
    pub revision: String,
    /// Evaluate the `auto.` entry too (webhook-config --enable-namespaces-by-default).
    #[arg(
        long = "enable-namespaces-by-default",
        visible_alias = "enableNamespacesByDefault"
    )]
    pub enable_namespaces_by_default: bool,
    /// Read the namespace (and the pod given with --pod) from the cluster instead of a manifest.
    #[arg(long = "kube")]
    pub kube: bool,
    /// With --kube: the live pod to explain (default: a new pod without labels in the namespace).
    #[arg(long = "pod")]
    pub pod: Option<String>,
    /// With --kube: read the injector config from this ConfigMap (NAMESPACE/NAME, keys config and values).
    #[arg(long = "injectConfigMap", visible_alias = "inject-config-map")]
    pub inject_config_map: Option<String>,
    /// With --kube: evaluate the selectors of this live MutatingWebhookConfiguration instead of
    /// the generated ones.
    #[arg(long = "webhook-config", visible_alias = "webhookConfig")]
    pub webhook_config: Option<String>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
    pub output: CheckOutput,
}

/// Whether one webhook entry selects the pod.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EntryMatch {
    /// Entry name (`rev.namespace.sidecar-injector.istio.io`, ...).
    pub name: String,
    /// The namespaceSelector matched the namespace labels.
    pub namespace_selector: bool,
    /// The objectSelector matched the pod labels.
    pub object_selector: bool,
    /// Both matched: the API server calls the injector for this entry.
    pub selected: bool,
}

/// One step of the injector's decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Step {
    /// Step name (`hostNetwork`, `ignoredNamespace`, `injectLabelOrAnnotation`, ...).
    pub step: &'static str,
    /// What was found.
    pub detail: String,
    /// `continue`, `decided` or `not evaluated`.
    pub outcome: &'static str,
    /// The reason code, on the deciding step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<&'static str>,
}

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
pub struct CheckContext<'a> {
    /// Namespace name.
    pub namespace: &'a str,
    /// Namespace labels (kubernetes.io/metadata.name is added when absent).
    pub namespace_labels: &'a Map<String, Value>,
    /// The webhook entries evaluated (generated by [`webhook_config::entries`] or read live).
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

fn selector_matches(sel: &Value, labels: &Map<String, Value>) -> bool {
    // Generated selectors are always valid; an invalid one would select nothing.
    LabelSelector::from_json(sel).is_ok_and(|s| s.matches(labels))
}

/// Evaluate every webhook entry's namespace and object selectors.
pub fn webhook_matches(
    entries: &[Value],
    namespace_labels: &Map<String, Value>,
    pod_labels: &Map<String, Value>,
) -> Vec<EntryMatch> {
    entries
        .iter()
        .map(|w| {
            let ns = selector_matches(&w["namespaceSelector"], namespace_labels);
            let obj = selector_matches(&w["objectSelector"], pod_labels);
            EntryMatch {
                name: w["name"].as_str().unwrap_or_default().to_string(),
                namespace_selector: ns,
                object_selector: obj,
                selected: ns && obj,
            }
        })
        .collect()
}

/// Index of the decision step that produced `reason` (0-based, in [`decision_steps`] order).
fn deciding_step(reason: Reason) -> usize {
    match reason {
        Reason::HostNetwork => 0,
        Reason::IgnoredNamespace => 1,
        Reason::LabelDisabled
        | Reason::LabelEnabled
        | Reason::AnnotationDisabled
        | Reason::AnnotationEnabled => 2,
        Reason::NeverInjectSelector => 3,
        Reason::AlwaysInjectSelector => 4,
        Reason::PolicyEnabled | Reason::PolicyDisabled | Reason::PolicyInvalid => 5,
    }
}

fn first_match(selectors: &[LabelSelector], labels: &Map<String, Value>) -> String {
    selectors
        .iter()
        .enumerate()
        .find(|(_, s)| !s.is_empty() && s.matches(labels))
        .map_or_else(
            || format!("none of {} entries match", selectors.len()),
            |(i, s)| format!("entry [{i}] ({s}) matches"),
        )
}

/// The facts each decision step looks at, for the pod.
fn step_facts(pod: &Value, config: &InjectorConfig) -> [(&'static str, String); 6] {
    let empty = Map::new();
    let labels = pod
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let host_network = pod
        .pointer("/spec/hostNetwork")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let ns = pod
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    let ignored = decide::IGNORED_NAMESPACES.contains(&ns);
    let object_value = match (labels.get(INJECT_KEY), pod::annotation(pod, INJECT_KEY)) {
        (Some(v), _) => format!(
            "label {INJECT_KEY}={}",
            v.as_str()
                .map_or_else(|| v.to_string(), |s| format!("{s:?}"))
        ),
        (None, Some(a)) => format!("annotation {INJECT_KEY}={a:?}"),
        (None, None) => format!("no {INJECT_KEY} label or annotation"),
    };
    [
        ("hostNetwork", format!("spec.hostNetwork={host_network}")),
        (
            "ignoredNamespace",
            format!(
                "namespace {ns:?} {}",
                if ignored {
                    "is ignored"
                } else {
                    "is not ignored"
                }
            ),
        ),
        ("injectLabelOrAnnotation", object_value),
        (
            "neverInjectSelector",
            first_match(&config.never_inject_selector, labels),
        ),
        (
            "alwaysInjectSelector",
            first_match(&config.always_inject_selector, labels),
        ),
        ("policy", format!("policy {:?}", config.policy.as_str())),
    ]
}

/// The decision steps with the deciding one marked by its reason code.
pub fn decision_steps(pod: &Value, config: &InjectorConfig, d: &Decision) -> Vec<Step> {
    let decided_at = deciding_step(d.reason);
    step_facts(pod, config)
        .into_iter()
        .enumerate()
        .map(|(i, (step, detail))| {
            let (outcome, code) = match i.cmp(&decided_at) {
                std::cmp::Ordering::Less => ("continue", None),
                std::cmp::Ordering::Equal => ("decided", Some(d.reason.code())),
                std::cmp::Ordering::Greater => ("not evaluated", None),
            };
            Step {
                step,
                detail,
                outcome,
                code,
            }
        })
        .collect()
}

fn with_name_label(namespace: &str, labels: &Map<String, Value>) -> Map<String, Value> {
    let mut l = labels.clone();
    l.entry(NAMESPACE_NAME_LABEL.to_string())
        .or_insert_with(|| Value::String(namespace.to_string()));
    l
}

/// Explain the fate of `pod` (metadata.namespace is set to the context's namespace); when it is
/// not injected, also find the one change that would inject it ([`Report::fix`]).
pub fn explain(workload: &str, pod: &Value, ctx: &CheckContext<'_>) -> Report {
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
fn find_fix(workload: &str, pod: &Value, ctx: &CheckContext<'_>, report: &Report) -> String {
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
        let changed = CheckContext {
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
fn explain_once(workload: &str, pod: &Value, ctx: &CheckContext<'_>) -> Report {
    let mut pod = pod.clone();
    if let Some(meta) = pod.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("namespace".into(), Value::String(ctx.namespace.to_string()));
    } else if let Some(obj) = pod.as_object_mut() {
        obj.insert(
            "metadata".into(),
            serde_json::json!({"namespace": ctx.namespace}),
        );
    }
    let ns_labels = with_name_label(ctx.namespace, ctx.namespace_labels);
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
    let steps = decision_steps(&pod, config, &d);
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
        "Pod" => Some(doc.clone()),
        "CronJob" => doc.pointer("/spec/jobTemplate/spec/template").cloned(),
        "Deployment"
        | "DaemonSet"
        | "ReplicaSet"
        | "StatefulSet"
        | "Job"
        | "ReplicationController"
        | "DeploymentConfig" => doc.pointer("/spec/template").cloned(),
        _ => None,
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

/// Split a YAML stream as kube-inject does ([`outrigger_inject::yaml::split_documents`]) and
/// parse each document; errors name the line where the document starts.
pub fn parse_documents(text: &str) -> Result<Vec<Value>> {
    let mut docs = Vec::new();
    let mut reader = outrigger_inject::yaml::DocumentReader::new(text.as_bytes());
    for raw in reader.by_ref() {
        let raw = raw.context("splitting the documents")?;
        let start_line = raw.first_line + 1;
        let v = outrigger_inject::yaml::from_str(&raw.text)
            .with_context(|| format!("parsing the document starting at line {start_line}"))?;
        if !v.is_null() {
            docs.push(v);
        }
    }
    Ok(docs)
}

/// Parse `k=v` pairs (`k=` is an empty value; `k` alone is refused: it reads as a selector's
/// "exists" but a label always has a value).
pub fn parse_labels(pairs: &[String]) -> Result<Map<String, Value>> {
    let mut m = Map::new();
    for p in pairs.iter().filter(|p| !p.is_empty()) {
        let Some((k, v)) = p.split_once('=') else {
            bail!(
                "--namespace-labels: {p:?} has no value; write KEY=VALUE, e.g. {p}=enabled \
                 (or {p}= for an empty value)"
            );
        };
        if k.is_empty() {
            bail!("--namespace-labels: {p:?} has no key");
        }
        m.insert(k.to_string(), Value::String(v.to_string()));
    }
    Ok(m)
}

/// Render reports as the short human table.
pub fn render_table(reports: &[Report]) -> String {
    let mut s = String::new();
    for r in reports {
        let verdict = if r.injected {
            "INJECTED"
        } else {
            "NOT INJECTED"
        };
        let _ = writeln!(
            s,
            "{} in namespace {}: {verdict} ({})",
            r.workload, r.namespace, r.reason
        );
        let _ = writeln!(s, "  {}", r.message);
        let _ = writeln!(
            s,
            "  {:<44} {:<10} {:<10} SELECTED",
            "WEBHOOK", "NAMESPACE", "OBJECT"
        );
        for w in &r.webhooks {
            let yn = |b: bool| if b { "match" } else { "-" };
            let _ = writeln!(
                s,
                "  {:<44} {:<10} {:<10} {}",
                w.name,
                yn(w.namespace_selector),
                yn(w.object_selector),
                if w.selected { "yes" } else { "no" }
            );
        }
        if r.reason == NOT_SELECTED {
            let _ = writeln!(
                s,
                "  injector steps: NOT EVALUATED (no webhook sends the pod to the injector); \
                 what the injector would decide:"
            );
        }
        let _ = writeln!(
            s,
            "  {:<24} {:<14} {:<22} DETAIL",
            "STEP", "OUTCOME", "CODE"
        );
        let decided = r
            .steps
            .iter()
            .find(|st| st.outcome == "decided")
            .map_or("", |st| st.step);
        for st in &r.steps {
            if st.outcome == "not evaluated" {
                let _ = writeln!(
                    s,
                    "  {:<24} {:<14} {:<22} (not evaluated: decided at {decided})",
                    st.step, "NOT EVALUATED", "-"
                );
                continue;
            }
            let _ = writeln!(
                s,
                "  {:<24} {:<14} {:<22} {}",
                st.step,
                st.outcome,
                st.code.unwrap_or(""),
                st.detail
            );
        }
        if !r.templates.is_empty() {
            let _ = writeln!(s, "  templates: {}", r.templates.join(", "));
        }
        if !r.missing_templates.is_empty() {
            let _ = writeln!(
                s,
                "  missing templates (injection would fail): {}",
                r.missing_templates.join(", ")
            );
        }
        for w in &r.warnings {
            let _ = writeln!(s, "  warning: {w}");
        }
        if let Some(fix) = &r.fix {
            let _ = writeln!(s, "  to inject it: {fix}");
        }
    }
    s
}

/// Exit status of `check`: 0 when every pod would be injected, 1 when any would not.
pub fn verdict_status(reports: &[Report]) -> ExitCode {
    if reports.iter().all(|r| r.injected) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn read_input(path: &PathBuf) -> Result<String> {
    if path.as_os_str() == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .context("reading standard input")?;
        Ok(s)
    } else {
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
    }
}

fn read(path: &std::path::Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

/// The injector configuration as the webhook uses it: the files when given, else the embedded default.
pub fn load_snapshot(args: &CheckArgs) -> Result<Snapshot> {
    let Some(cfg) = &args.files.inject_config_file else {
        return outrigger_inject::config::defaults::snapshot()
            .context("loading the embedded default configuration");
    };
    let config = read(cfg)?;
    let values = match &args.files.values_file {
        Some(p) => read(p)?,
        None => String::new(),
    };
    let mesh = args
        .files
        .mesh_config_file
        .as_deref()
        .map(read)
        .transpose()?;
    Snapshot::load(&config, &values, mesh.as_deref())
        .with_context(|| format!("loading injector config {}", cfg.display()))
}

/// The webhook configuration `check` evaluates.
pub fn webhook_options(args: &CheckArgs) -> WebhookOptions {
    WebhookOptions {
        revision: args.revision.clone(),
        enable_namespaces_by_default: args.enable_namespaces_by_default,
        ..WebhookOptions::default()
    }
}

/// Print reports in the requested format (used by the live mode too).
pub fn print(reports: &[Report], output: CheckOutput) -> Result<()> {
    let text = match output {
        CheckOutput::Table => render_table(reports),
        CheckOutput::Json => serde_json::to_string_pretty(reports).context("encoding JSON")? + "\n",
    };
    std::io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .context("writing standard output")
}

/// Explain every pod template of `docs`. The namespace is `namespace` when given, else the
/// document's, else `default`.
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
            let ns = namespace
                .or_else(|| pod.pointer("/metadata/namespace").and_then(Value::as_str))
                .unwrap_or("default")
                .to_string();
            let ctx = CheckContext {
                namespace: &ns,
                namespace_labels,
                webhooks,
                snapshot,
            };
            explain(&workload, &pod, &ctx)
        })
        .collect()
}

/// Read and parse the `-f` manifest.
pub fn read_documents(file: &PathBuf) -> Result<Vec<Value>> {
    parse_documents(&read_input(file)?).with_context(|| format!("reading {}", file.display()))
}

/// Run `outrigger check`: exits 0 when every pod would be injected, 1 when any would not (2 on
/// error, set by `main`).
pub fn run(args: &CheckArgs) -> Result<ExitCode> {
    if args.kube {
        return crate::kube::check::run(args);
    }
    let Some(file) = &args.filename else {
        bail!("-f is required without --kube")
    };
    let snapshot = load_snapshot(args)?;
    let docs = read_documents(file)?;
    let ns_labels = parse_labels(&args.namespace_labels)?;
    let options = webhook_options(args);
    if let Some(w) = webhook_config::auto_entry_dropped(&options) {
        eprintln!("{w}");
    }
    let webhooks = webhook_config::entries(&options);
    let reports = explain_documents(
        &docs,
        args.namespace.as_deref(),
        &ns_labels,
        &webhooks,
        &snapshot,
    );
    if reports.is_empty() {
        bail!(
            "{} holds no pod or workload with a pod template",
            file.display()
        );
    }
    print(&reports, args.output)?;
    Ok(verdict_status(&reports))
}

#[cfg(test)]
mod tests {
    use super::*;
    use outrigger_inject::config::Policy;
    use outrigger_inject::config::ValuesFacts;
    use serde_json::json;

    fn snapshot(policy: &str, never: Vec<Value>, always: Vec<Value>) -> Snapshot {
        let sel = |v: Vec<Value>| {
            v.iter()
                .map(|s| LabelSelector::from_json(s).expect("valid"))
                .collect()
        };
        let config = InjectorConfig {
            policy: Policy::parse(policy),
            default_templates: vec!["sidecar".into()],
            templates: BTreeMap::new(),
            aliases: BTreeMap::from([(
                "both".to_string(),
                vec!["sidecar".to_string(), "extra".to_string()],
            )]),
            never_inject_selector: sel(never),
            always_inject_selector: sel(always),
            injected_annotations: BTreeMap::new(),
            warnings: Vec::new(),
        };
        Snapshot {
            config,
            values: json!({}),
            values_facts: ValuesFacts::default(),
            mesh: json!({}),
        }
    }

    fn pod(labels: Value, annotations: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "p", "labels": labels, "annotations": annotations},
               "spec": {"containers": [{"name": "app", "image": "app"}]}})
    }

    fn run_explain(
        p: &Value,
        ns: &str,
        ns_labels: Value,
        snap: &Snapshot,
        wh: &WebhookOptions,
    ) -> Report {
        let labels = ns_labels.as_object().cloned().expect("labels object");
        let entries = webhook_config::entries(wh);
        let ctx = CheckContext {
            namespace: ns,
            namespace_labels: &labels,
            webhooks: &entries,
            snapshot: snap,
        };
        explain("Pod/p", p, &ctx)
    }

    fn selected(r: &Report) -> Vec<&str> {
        r.webhooks
            .iter()
            .filter(|w| w.selected)
            .map(|w| w.name.as_str())
            .collect()
    }

    #[test]
    fn labelled_namespace_injects_by_policy() {
        let snap = snapshot("enabled", vec![], vec![]);
        let r = run_explain(
            &pod(json!({}), json!({})),
            "apps",
            json!({"istio-injection": "enabled"}),
            &snap,
            &WebhookOptions::default(),
        );
        assert_eq!(selected(&r), ["namespace.sidecar-injector.istio.io"]);
        assert!(r.injected);
        assert_eq!(r.reason, "policy_enabled");
        assert_eq!(r.templates, ["sidecar"]);
        assert_eq!(
            r.missing_templates,
            ["sidecar"],
            "the test config defines no template"
        );
        let decided: Vec<_> = r.steps.iter().filter(|s| s.outcome == "decided").collect();
        assert_eq!(decided.len(), 1);
        assert_eq!(decided[0].step, "policy");
        assert_eq!(decided[0].code, Some("policy_enabled"));
        assert!(r.steps[..5].iter().all(|s| s.outcome == "continue"));
        assert_eq!(
            r.namespace_labels
                .get(NAMESPACE_NAME_LABEL)
                .map(String::as_str),
            Some("apps")
        );
    }

    #[test]
    fn unlabelled_namespace_is_not_selected() {
        let snap = snapshot("enabled", vec![], vec![]);
        let r = run_explain(
            &pod(json!({}), json!({})),
            "apps",
            json!({}),
            &snap,
            &WebhookOptions::default(),
        );
        assert!(selected(&r).is_empty());
        assert!(!r.injected);
        assert_eq!(r.reason, NOT_SELECTED);
        assert!(r.templates.is_empty());
    }

    #[test]
    fn auto_entry_selects_unlabelled_namespaces_when_enabled() {
        let snap = snapshot("enabled", vec![], vec![]);
        let wh = WebhookOptions {
            enable_namespaces_by_default: true,
            ..Default::default()
        };
        let r = run_explain(&pod(json!({}), json!({})), "apps", json!({}), &snap, &wh);
        assert_eq!(selected(&r), ["auto.sidecar-injector.istio.io"]);
        assert!(r.injected);
        let r = run_explain(
            &pod(json!({}), json!({})),
            "kube-system",
            json!({}),
            &snap,
            &wh,
        );
        assert!(selected(&r).is_empty(), "kube-system is excluded by name");
    }

    #[test]
    fn pod_label_opt_in_uses_object_entry() {
        let snap = snapshot("enabled", vec![], vec![]);
        let p = pod(json!({"sidecar.istio.io/inject": "true"}), json!({}));
        let r = run_explain(&p, "apps", json!({}), &snap, &WebhookOptions::default());
        assert_eq!(selected(&r), ["object.sidecar-injector.istio.io"]);
        assert!(r.injected);
        assert_eq!(r.reason, "label_enabled");
        assert_eq!(r.steps[2].outcome, "decided");
        assert_eq!(r.steps[3].outcome, "not evaluated");
    }

    #[test]
    fn annotation_opt_out_reaches_the_injector_then_skips() {
        let snap = snapshot("enabled", vec![], vec![]);
        let p = pod(json!({}), json!({"sidecar.istio.io/inject": "false"}));
        let r = run_explain(
            &p,
            "apps",
            json!({"istio-injection": "enabled"}),
            &snap,
            &WebhookOptions::default(),
        );
        assert_eq!(selected(&r), ["namespace.sidecar-injector.istio.io"]);
        assert!(!r.injected);
        assert_eq!(r.reason, "annotation_disabled");
        assert!(r.steps[2].detail.contains("annotation"));
    }

    #[test]
    fn revision_label_on_namespace_selects_rev_namespace_entry() {
        let snap = snapshot("enabled", vec![], vec![]);
        let wh = WebhookOptions {
            revision: "canary".into(),
            ..Default::default()
        };
        let r = run_explain(
            &pod(json!({}), json!({})),
            "apps",
            json!({"istio.io/rev": "canary"}),
            &snap,
            &wh,
        );
        assert_eq!(selected(&r), ["rev.namespace.sidecar-injector.istio.io"]);
        let r = run_explain(
            &pod(json!({}), json!({})),
            "apps",
            json!({"istio.io/rev": "other"}),
            &snap,
            &wh,
        );
        assert!(selected(&r).is_empty());
    }

    #[test]
    fn never_selector_and_ignored_namespace_and_host_network() {
        let snap = snapshot(
            "enabled",
            vec![json!({"matchLabels": {"job": "batch"}})],
            vec![],
        );
        let p = pod(json!({"job": "batch"}), json!({}));
        let r = run_explain(
            &p,
            "apps",
            json!({"istio-injection": "enabled"}),
            &snap,
            &WebhookOptions::default(),
        );
        assert_eq!(r.reason, "never_inject_selector");
        assert!(
            r.steps[3].detail.contains("entry [0]"),
            "{}",
            r.steps[3].detail
        );
        let mut p = pod(json!({}), json!({}));
        p["spec"]["hostNetwork"] = json!(true);
        let r = run_explain(
            &p,
            "apps",
            json!({"istio-injection": "enabled"}),
            &snap,
            &WebhookOptions::default(),
        );
        assert_eq!(r.reason, "host_network");
        assert!(r.steps[1..].iter().all(|s| s.outcome == "not evaluated"));
        let r = run_explain(
            &pod(json!({}), json!({})),
            "kube-public",
            json!({"istio-injection": "enabled"}),
            &snap,
            &WebhookOptions::default(),
        );
        assert_eq!(r.reason, "ignored_namespace");
    }

    #[test]
    fn disabled_policy_and_always_selector_and_aliases() {
        let snap = snapshot(
            "disabled",
            vec![],
            vec![json!({"matchLabels": {"mesh": "yes"}})],
        );
        let wh = WebhookOptions::default();
        let ns = json!({"istio-injection": "enabled"});
        let r = run_explain(&pod(json!({}), json!({})), "apps", ns.clone(), &snap, &wh);
        assert_eq!(r.reason, "policy_disabled");
        assert!(!r.injected);
        let p = pod(
            json!({"mesh": "yes"}),
            json!({"inject.istio.io/templates": "both"}),
        );
        let r = run_explain(&p, "apps", ns, &snap, &wh);
        assert_eq!(r.reason, "always_inject_selector");
        assert_eq!(r.templates, ["sidecar", "extra"]);
    }

    #[test]
    fn invalid_policy_warns() {
        let snap = snapshot("bogus", vec![], vec![]);
        let r = run_explain(
            &pod(json!({}), json!({})),
            "apps",
            json!({"istio-injection": "enabled"}),
            &snap,
            &WebhookOptions::default(),
        );
        assert_eq!(r.reason, "policy_invalid");
        assert_eq!(r.warnings.len(), 1);
        assert!(r.warnings[0].contains("Illegal value for autoInject:bogus"));
    }

    #[test]
    fn pod_templates_of_workloads() {
        let dep = json!({"kind": "Deployment", "metadata": {"name": "d", "namespace": "x"},
                         "spec": {"template": {"metadata": {"labels": {"a": "b"}}, "spec": {}}}});
        let cron = json!({"kind": "CronJob", "metadata": {"name": "c"},
                          "spec": {"jobTemplate": {"spec": {"template": {"metadata": {}, "spec": {}}}}}});
        let list = json!({"kind": "List", "items": [dep.clone(), cron.clone(), {"kind": "Service", "metadata": {"name": "s"}}]});
        let pods = pods_of(&list);
        assert_eq!(pods.len(), 2);
        assert_eq!(pods[0].0, "Deployment/d");
        assert_eq!(pods[0].1["metadata"]["namespace"], "x");
        assert_eq!(pods[1].0, "CronJob/c");
        assert!(pods_of(&json!({"kind": "ConfigMap"})).is_empty());
    }

    #[test]
    fn documents_and_labels_parse() {
        let docs = parse_documents(
            "kind: Pod\nmetadata:\n  name: a\n---\n---\nkind: Pod\nmetadata:\n  name: b\n",
        )
        .expect("valid YAML");
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[1]["metadata"]["name"], "b");
        let err = parse_documents("kind: Pod\n---\na: [\n").expect_err("bad YAML");
        assert!(format!("{err:#}").contains("line 3"), "{err:#}");
        let l = parse_labels(&["a=b".into(), "c=".into(), "d=e=f".into()]).expect("valid");
        assert_eq!(l["a"], "b");
        assert_eq!(l["c"], "");
        assert_eq!(l["d"], "e=f");
        assert!(parse_labels(&["=x".into()]).is_err());
        let err = parse_labels(&["istio-injection".into()]).expect_err("no value");
        assert!(err.to_string().contains("istio-injection=enabled"), "{err}");
    }

    #[test]
    fn table_and_json_render() {
        let snap = snapshot("enabled", vec![], vec![]);
        let r = run_explain(
            &pod(json!({}), json!({})),
            "apps",
            json!({"istio-injection": "enabled"}),
            &snap,
            &WebhookOptions::default(),
        );
        let t = render_table(std::slice::from_ref(&r));
        assert!(
            t.starts_with("Pod/p in namespace apps: INJECTED (policy_enabled)"),
            "{t}"
        );
        assert!(t.contains("namespace.sidecar-injector.istio.io"));
        let j = serde_json::to_value(std::slice::from_ref(&r)).expect("serialisable");
        assert_eq!(j[0]["reason"], "policy_enabled");
        assert_eq!(j[0]["steps"][5]["code"], "policy_enabled");
        assert!(j[0]["steps"][0].get("code").is_none());
    }
}
