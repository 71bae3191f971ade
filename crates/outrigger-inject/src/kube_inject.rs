//! Manual injection of manifests (`istioctl kube-inject`): find the pod template
//! of every supported workload, inject it, write it back, and re-serialise the document.

use serde_json::{json, Value};

use crate::config::Policy;
use crate::decide;
use crate::decide::selection::revision_name;
/// Why a document cannot be injected by kube-inject (defined with the workload kinds in
/// [`crate::ingest::workload`], below the crate-wide sum that holds it).
pub use crate::ingest::workload::WorkloadError;
use crate::ingest::workload::{
    is_supported_kind, schema_type, set_pointer, take_pointer, template_pointers, WorkloadMeta,
};
use crate::inject::{self, InjectParams, Mode, Settings};
use crate::json::short;
use crate::kube::names;
use crate::kube::typed;
use crate::reinject;
use crate::{yaml, Error, Result};

/// Options of a kube-inject run.
#[derive(Debug, Clone)]
pub struct KubeInjectOptions<'a> {
    /// What every injection shares (configuration, revision (`default` counts as empty),
    /// native sidecars (offline there is no cluster to auto-detect from), compliance policy).
    pub settings: Settings<'a>,
    /// Remove a previous injection completely before injecting (`--reinject`,
    /// [`crate::reinject`]); otherwise an injected pod is re-injected as Istio does.
    pub reinject: bool,
}

/// Result of injecting one stream of documents held in memory ([`inject_manifests`]).
#[derive(Debug, Clone, Default)]
pub struct KubeInjectOutput {
    /// The output stream: every document followed by `---`.
    pub text: String,
    /// Warnings (host-network skips, disabled injection), each ending with a newline.
    pub warnings: Vec<String>,
    /// One entry per input document: the document before and after (None when passed through).
    pub changes: Vec<DocumentChange>,
}

/// What injection did to one document.
#[derive(Debug, Clone)]
pub struct DocumentChange {
    /// Index of the document in the input stream (0-based).
    pub index: usize,
    /// `kind` of the document, if any.
    pub kind: String,
    /// `metadata.name`, if any.
    pub name: String,
    /// The parsed input (normalised) and output documents; `None` for verbatim pass-through.
    pub before_after: Option<(Value, Value)>,
}

/// What kube-inject did with one document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A sidecar was injected (into the workload, or into at least one item of a `List`).
    Injected,
    /// A workload of a supported kind was left without a sidecar (and re-serialised).
    Skipped(SkipReason),
    /// A document with nothing to inject: another kind written back as read, or a `List`
    /// without workloads.
    PassedThrough,
}

/// Why a workload was not injected (each comes with Istio's `===> Skipping injection` warning).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    /// `spec.hostNetwork: true`.
    HostNetwork,
    /// Injection disabled by the workload's label or annotation (`sidecar.istio.io/inject`).
    InjectionDisabled,
}

impl SkipReason {
    /// Short name for summaries: `hostNetwork`, `injection disabled`.
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::HostNetwork => "hostNetwork",
            SkipReason::InjectionDisabled => "injection disabled",
        }
    }
}

/// One document of a kube-inject stream, processed ([`inject_raw_document`]).
#[derive(Debug, Clone)]
pub struct ProcessedDocument {
    /// Index of the document in the input stream (0-based, as apimachinery's `YAMLReader` counts them).
    pub index: usize,
    /// `kind` of the document.
    pub kind: String,
    /// `metadata.name`, empty when absent.
    pub name: String,
    /// `metadata.namespace`, empty when absent.
    pub namespace: String,
    /// What was done.
    pub outcome: Outcome,
    /// The document as written to the output, followed by the separator line `---\n`.
    pub text: String,
    /// Warnings (skips, DNS policy), each ending with a newline.
    pub warnings: Vec<String>,
    /// The parsed input (normalised) and output trees, when asked for and not passed through.
    pub trees: Option<(Value, Value)>,
}

impl ProcessedDocument {
    /// How messages name the document: `document 2 (Deployment "ns/web")`.
    pub fn label(&self) -> String {
        document_label(self.index, &self.kind, &self.namespace, &self.name)
    }
}

fn document_label(index: usize, kind: &str, namespace: &str, name: &str) -> String {
    let full = if namespace.is_empty() {
        name.to_string()
    } else {
        format!("{namespace}/{name}")
    };
    if full.is_empty() {
        format!("document {index} ({kind})")
    } else {
        format!("document {index} ({kind} {full:?})")
    }
}

/// Inject every supported workload of a multi-document YAML stream held in memory, as
/// `outrigger inject` does ([`inject_stream`], every document's trees kept). Stops at the first
/// error.
pub fn inject_manifests(input: &str, opts: &KubeInjectOptions<'_>) -> Result<KubeInjectOutput> {
    let mut out = KubeInjectOutput::default();
    let documents = yaml::DocumentReader::new(input.as_bytes()).map(|r| r.map_err(read_error));
    inject_stream(
        documents,
        opts,
        |_| (true, ()),
        |_, doc, ()| {
            out.text.push_str(&doc.text);
            out.warnings.extend(doc.warnings);
            out.changes.push(DocumentChange {
                index: doc.index,
                kind: doc.kind,
                name: doc.name,
                before_after: doc.trees,
            });
            Ok::<(), Error>(())
        },
    )?;
    Ok(out)
}

/// A stream held in memory that cannot be split into documents: the splitter's YAML error.
fn read_error(e: yaml::ReadError) -> Error {
    match e {
        yaml::ReadError::Split(y) => y.into(),
        // A `&str` is UTF-8 and reading it cannot fail.
        yaml::ReadError::Io(_) => Error::Internal("reading a document stream held in memory"),
    }
}

/// The kube-inject loop over a stream of documents as they are read (`documents`, from
/// [`yaml::DocumentReader`]: memory follows the largest document, not the stream), in order:
/// `prepare` sees each document as read before it is injected and says whether to keep its
/// parsed input and output trees ([`ProcessedDocument::trees`]), with what the caller wants back
/// with the document; `each` then receives the document as read, as processed
/// ([`inject_raw_document`]) and that. A `null` document is skipped after `prepare`. Stops at
/// the first error: reading, injecting (naming the document) or the caller's.
/// `outrigger inject` and [`inject_manifests`] (the conformance suite's) both run it.
pub fn inject_stream<T, E: From<Error>>(
    documents: impl IntoIterator<Item = std::result::Result<yaml::RawDocument, E>>,
    opts: &KubeInjectOptions<'_>,
    mut prepare: impl FnMut(&yaml::RawDocument) -> (bool, T),
    mut each: impl FnMut(&yaml::RawDocument, ProcessedDocument, T) -> std::result::Result<(), E>,
) -> std::result::Result<(), E> {
    for (index, raw) in documents.into_iter().enumerate() {
        let raw = raw?;
        let (keep_trees, state) = prepare(&raw);
        let doc = inject_raw_document(index, &raw.text, raw.first_line, opts, keep_trees)?;
        let Some(doc) = doc else { continue };
        each(&raw, doc, state)?;
    }
    Ok(())
}

/// Process one document of a kube-inject stream: `raw` is its exact text (as
/// [`yaml::split_documents`] or [`yaml::DocumentReader`] returns it), `index` its position and
/// `first_line` the 0-based line of the stream where it starts (YAML errors give stream lines).
///
/// Supported kinds are injected (or skipped with Istio's warning) and re-serialised; other kinds
/// are written back as read (their text as `YAMLReader` returns it). `None` for a document that is `null`. Errors name the document
/// (`document 2 (Deployment "web"): ...`). With `keep_trees`, the parsed input and output are
/// returned as well (they cost memory proportional to the document).
pub fn inject_raw_document(
    index: usize,
    raw: &str,
    first_line: usize,
    opts: &KubeInjectOptions<'_>,
    keep_trees: bool,
) -> Result<Option<ProcessedDocument>> {
    let at = |e: Error| e.context(&format!("document {index}"));
    let read = yaml::read_document(raw).map_err(|e| at(shift_yaml_line(e, first_line)))?;
    let ignored = read
        .ignored
        .map(|ignored| ignored_warning(index, &ignored.shifted(first_line)));
    let doc = read.value;
    let m = match &doc {
        Value::Object(m) => m,
        Value::Null => return Ok(None),
        other => return Err(at(WorkloadError::NotAnObject(short(other)).into())),
    };
    let kind = match m.get("kind") {
        Some(Value::String(k)) if !k.is_empty() => k.clone(),
        _ => return Err(at(WorkloadError::MissingKind.into())),
    };
    let meta = m.get("metadata");
    let name = meta_field(meta, "name").to_string();
    let namespace = meta_field(meta, "namespace").to_string();
    let mut processed = ProcessedDocument {
        index,
        kind,
        name,
        namespace,
        outcome: Outcome::PassedThrough,
        text: String::new(),
        warnings: ignored.into_iter().collect(),
        trees: None,
    };
    if !is_supported_kind(&processed.kind) {
        drop(doc);
        let mut text = String::with_capacity(raw.len() + 5);
        text.push_str(raw);
        if !raw.ends_with('\n') {
            text.push('\n');
        }
        text.push_str("---\n");
        processed.text = text;
        return Ok(Some(processed));
    }
    let label = processed.label();
    let (before, after, outcome) = process_document(doc, opts, &mut processed.warnings, keep_trees)
        .map_err(|e| e.context(&label))?;
    // istioctl writes the object with sigs.k8s.io/yaml `Marshal` (JSON, then `JSONToYAML`).
    let mut text = yaml::json_to_yaml(&after).map_err(|e| {
        Error::from(e)
            .context("error converting JSON to YAML")
            .context(&label)
    })?;
    text.push_str("---\n");
    processed.text = text;
    processed.outcome = outcome;
    processed.trees = before.map(|b| (b, after));
    Ok(Some(processed))
}

/// The warning for content after the end of document `index` (`ignored` in stream lines),
/// which Kubernetes' YAML reader silently drops: it names the document and the line of the input.
fn ignored_warning(index: usize, ignored: &yaml::IgnoredText) -> String {
    let line = ignored.line;
    let mut w = format!(
        "Warning: document {index}: the content from line {line} on is ignored by Kubernetes' \
         YAML reader (it follows the end of the document)"
    );
    if let Some(e) = &ignored.error {
        w.push_str(&format!("; it is not valid YAML either: {e}"));
    }
    w.push('\n');
    w
}

/// Move the document-relative line of a YAML error of a document starting on (0-based) line
/// `first_line` of the stream to the line of the stream, so the message points at the file line
/// (`inject` and `check` report the same line).
pub fn shift_yaml_line(e: impl Into<Error>, first_line: usize) -> Error {
    match e.into() {
        Error::Yaml(y) => y.shifted(first_line).into(),
        other => other,
    }
}

/// Inject one parsed document of a supported kind (or a `List`); returns (normalised input, output).
pub fn inject_document(
    doc: Value,
    opts: &KubeInjectOptions<'_>,
    warnings: &mut Vec<String>,
) -> Result<(Value, Value)> {
    let (before, after, _) = process_document(doc, opts, warnings, true)?;
    Ok((before.unwrap_or(Value::Null), after))
}

/// Inject one parsed document of a supported kind (or a `List`): (normalised input when
/// `keep_before`, output, outcome).
fn process_document(
    mut doc: Value,
    opts: &KubeInjectOptions<'_>,
    warnings: &mut Vec<String>,
    keep_before: bool,
) -> Result<(Option<Value>, Value, Outcome)> {
    let kind = doc
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if kind == "List" {
        let before = keep_before.then(|| doc.clone());
        let mut outcome = Outcome::PassedThrough;
        if let Some(items) = doc.get_mut("items").and_then(Value::as_array_mut) {
            for (i, item) in items.iter_mut().enumerate() {
                let k = item.get("kind").and_then(Value::as_str).unwrap_or("");
                if schema_type(k).is_some() {
                    let (_, after, item_outcome) =
                        process_document(item.take(), opts, warnings, false)
                            .map_err(|e| e.context(&format!("items[{i}]")))?;
                    *item = after;
                    outcome = match (outcome, item_outcome) {
                        (Outcome::Injected, _) | (_, Outcome::Injected) => Outcome::Injected,
                        (Outcome::Skipped(r), _) | (_, Outcome::Skipped(r)) => Outcome::Skipped(r),
                        _ => Outcome::PassedThrough,
                    };
                }
            }
        }
        return Ok((before, list_as_go_writes_it(doc), outcome));
    }
    let ty = schema_type(&kind).ok_or_else(|| WorkloadError::UnsupportedKind(kind.clone()))?;
    // Before normalisation, which writes the zero pod template of kinds that embed it.
    let has_template = doc.pointer(template_pointers(&kind).1).is_some();
    decode_workload(ty, &mut doc)?;
    let before = keep_before.then(|| doc.clone());
    let outcome = inject_workload(&mut doc, &kind, has_template, opts, warnings)?;
    if outcome == Outcome::Injected {
        normalize_workload(ty, &mut doc)?;
    }
    Ok((before, doc, outcome))
}

/// A `List` as istioctl writes it back: decoded into core/v1 `List` (`TypeMeta` inline,
/// `ListMeta` as `metadata` (a struct, so written even when empty: `metadata: {}`), `items`
/// without `omitempty`), then marshalled: other top-level keys are dropped, and `metadata` keeps
/// only `ListMeta`'s fields that are set.
fn list_as_go_writes_it(doc: Value) -> Value {
    let Value::Object(mut m) = doc else {
        return doc;
    };
    let mut meta = serde_json::Map::new();
    if let Some(Value::Object(old)) = m.remove("metadata") {
        for (k, v) in old {
            let set = match (k.as_str(), &v) {
                ("selfLink" | "resourceVersion" | "continue", Value::String(s)) => !s.is_empty(),
                ("remainingItemCount", Value::Number(_)) => true,
                _ => false,
            };
            if set {
                meta.insert(k, v);
            }
        }
    }
    let mut out = serde_json::Map::new();
    for key in ["apiVersion", "kind"] {
        if let Some(v) = m.remove(key).filter(|v| v.as_str() != Some("")) {
            out.insert(key.to_string(), v);
        }
    }
    out.insert("metadata".into(), Value::Object(meta));
    out.insert("items".into(), m.remove("items").unwrap_or(Value::Null));
    Value::Object(out)
}

/// The typed round-trip of a document as istioctl decodes it (sigs.k8s.io/yaml `Unmarshal`, which
/// wraps the JSON decoder's type errors).
fn decode_workload(ty: &str, doc: &mut Value) -> Result<()> {
    normalize_workload(ty, doc).map_err(|e| match e {
        e @ Error::Type(_) => e.context("error unmarshaling JSON: while decoding JSON"),
        other => other,
    })
}

fn normalize_workload(ty: &str, doc: &mut Value) -> Result<()> {
    Ok(typed::normalize(ty, doc)?)
}

fn meta_field<'a>(v: Option<&'a Value>, f: &str) -> &'a str {
    v.and_then(|m| m.get(f))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Inject the pod template of one workload in place (the pod's metadata and spec are moved out of
/// the document, not copied, and put back unless injection fails).
fn inject_workload(
    doc: &mut Value,
    kind: &str,
    has_template: bool,
    opts: &KubeInjectOptions<'_>,
    warnings: &mut Vec<String>,
) -> Result<Outcome> {
    if matches!(kind, "ReplicationController" | "DeploymentConfig")
        && doc.pointer("/spec/template").is_none()
    {
        return Err(WorkloadError::TemplateRequired.into());
    }
    let (meta_ptr, spec_ptr) = template_pointers(kind);
    let had_meta = doc.pointer(meta_ptr).is_some();
    let had_spec = doc.pointer(spec_ptr).is_some();
    let metadata = take_pointer(doc, meta_ptr).unwrap_or_else(|| json!({}));
    let spec = take_pointer(doc, spec_ptr).unwrap_or_else(|| json!({}));
    let mut pod = json!({"metadata": metadata, "spec": spec});
    let outcome = inject_template(doc, &mut pod, kind, has_template, opts, warnings)?;
    let new_meta = pod
        .get_mut("metadata")
        .map(Value::take)
        .unwrap_or_else(|| json!({}));
    let new_spec = pod
        .get_mut("spec")
        .map(Value::take)
        .unwrap_or_else(|| json!({}));
    let injected = outcome == Outcome::Injected;
    // A skipped workload keeps its document as it was: no pod template where there was none.
    if injected || had_meta {
        set_pointer(doc, meta_ptr, new_meta);
    }
    if injected || had_spec {
        set_pointer(doc, spec_ptr, new_spec);
    }
    Ok(outcome)
}

/// Decide and inject `pod` (the workload's pod template as `{metadata, spec}`), replacing it by the
/// injected pod when injected.
fn inject_template(
    doc: &Value,
    pod: &mut Value,
    kind: &str,
    has_template: bool,
    opts: &KubeInjectOptions<'_>,
    warnings: &mut Vec<String>,
) -> Result<Outcome> {
    let metadata = pod.get("metadata");
    let doc_meta = doc.get("metadata");
    let (w_name, w_ns) = (
        meta_field(doc_meta, "name"),
        meta_field(doc_meta, "namespace"),
    );
    let name = Some(meta_field(metadata, "name"))
        .filter(|n| !n.is_empty())
        .unwrap_or(w_name);
    let full_name = if w_ns.is_empty() {
        name.to_string()
    } else {
        format!("{w_ns}/{name}")
    };
    let subject = if kind.is_empty() {
        format!("{full_name:?}")
    } else {
        format!("{kind} {full_name:?}")
    };

    match skip_reason(pod) {
        Some(SkipReason::HostNetwork) => {
            warnings.push(format!(
                "===> Skipping injection because {subject} has host networking enabled\n"
            ));
            return Ok(Outcome::Skipped(SkipReason::HostNetwork));
        }
        Some(SkipReason::InjectionDisabled) => {
            warnings.push(format!(
                "===> Skipping injection because {subject} has sidecar injection disabled\n"
            ));
            return Ok(Outcome::Skipped(SkipReason::InjectionDisabled));
        }
        None => {}
    }
    check_has_containers(pod, kind, has_template)?;
    let params = inject_params(opts, workload_meta(doc, kind, pod));
    if opts.reinject {
        *pod = reinject::recover_pod(pod, &params)?;
    }
    let templates = crate::render::select_templates(opts.settings.snapshot, pod);
    if let Some(w) = revision_mismatch(pod, opts.settings.revision, &subject) {
        warnings.push(w);
    }
    let before = crate::kube::validate::validate_pod(pod);
    let injected = inject::inject_pod_owned(pod.take(), &params)?;
    // istioctl kube-inject writes what the templates give, even a pod the API server's
    // validation refuses (Istio's own golden `sidecar-spire` is one): so does `inject`, saying
    // which rule the pod breaks. The webhook refuses it instead (`webhook::inject_and_diff`).
    if let Err(refused) = crate::kube::validate::check_new(&before, &injected.pod) {
        warnings.push(format!("Warning: {subject}: {refused}\n"));
    }
    if !adds_a_container(&injected.pod) {
        return Err(WorkloadError::NoSidecarAdded { templates }.into());
    }
    warnings.extend(injected.warnings.into_iter().map(|w| format!("{w}\n")));
    *pod = injected.pod;
    Ok(Outcome::Injected)
}

/// The warning for a pod whose `istio.io/rev` label asks for another revision than the one it
/// is injected with (`revision`, `""` for the default): the output stays istioctl's (annotated
/// with the revision used), but the user learns that another control plane was meant.
fn revision_mismatch(pod: &Value, revision: &str, subject: &str) -> Option<String> {
    let asked = crate::kube::pod::label(pod, names::REVISION_LABEL)?;
    let used = revision_name(revision);
    let asked_norm = revision_name(asked);
    (asked_norm != used).then(|| {
        format!(
            "Warning: {subject} asks for revision {asked:?} (label {}) but is injected with \
             revision {used:?}; pass --revision {asked_norm} to inject it for that control plane\n",
            names::REVISION_LABEL
        )
    })
}

/// Why kube-inject leaves `pod` (a pod template as `{metadata, spec}`) without a sidecar, if it
/// does: host networking, or injection disabled by its label or annotation.
pub fn skip_reason(pod: &Value) -> Option<SkipReason> {
    if pod.pointer("/spec/hostNetwork").and_then(Value::as_bool) == Some(true) {
        return Some(SkipReason::HostNetwork);
    }
    let d = decide::inject_required(pod, &Policy::Enabled, &[], &[]);
    (!d.inject).then_some(SkipReason::InjectionDisabled)
}

/// The workload `pod` belongs to: the pod itself for a `Pod`, else the document `doc` of kind
/// `kind` that holds it as its template (`.DeploymentMeta`).
pub fn workload_meta(doc: &Value, kind: &str, pod: &Value) -> WorkloadMeta {
    if kind == "Pod" {
        return crate::ingest::workload::workload_from_pod(pod);
    }
    let meta = doc.get("metadata");
    WorkloadMeta {
        kind: kind.to_string(),
        api_version: doc
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        name: meta_field(meta, "name").to_string(),
        namespace: meta_field(meta, "namespace").to_string(),
    }
}

/// The injection parameters kube-inject uses for a pod of `workload`.
pub fn inject_params<'a>(opts: &KubeInjectOptions<'a>, workload: WorkloadMeta) -> InjectParams<'a> {
    opts.settings.params(Mode::KubeInject, workload)
}

/// One pod template of a manifest, as kube-inject reads it before injecting ([`pod_templates`]).
#[derive(Debug, Clone)]
pub struct PodTemplate {
    /// `items[i]` inside a `List`, else empty.
    pub item: String,
    /// The workload the pod belongs to.
    pub workload: WorkloadMeta,
    /// The pod template as `{metadata, spec}`, after the typed round-trip kube-inject makes.
    pub pod: Value,
}

/// The pod templates of a parsed document of a supported kind (each workload item of a `List`),
/// normalised as kube-inject normalises the document; other kinds have none. Errors are the
/// typed decoding errors kube-inject reports for the same document.
pub fn pod_templates(doc: Value) -> Result<Vec<PodTemplate>> {
    let kind = doc
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if kind == "List" {
        let mut out = Vec::new();
        let items = doc
            .get("items")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for (i, item) in items.into_iter().enumerate() {
            let k = item.get("kind").and_then(Value::as_str).unwrap_or("");
            if schema_type(k).is_some() {
                for mut t in pod_templates(item).map_err(|e| e.context(&format!("items[{i}]")))? {
                    t.item = format!("items[{i}]");
                    out.push(t);
                }
            }
        }
        return Ok(out);
    }
    let Some(ty) = schema_type(&kind) else {
        return Ok(Vec::new());
    };
    let mut doc = doc;
    decode_workload(ty, &mut doc)?;
    let (meta_ptr, spec_ptr) = template_pointers(&kind);
    let pod = json!({
        "metadata": doc.pointer(meta_ptr).cloned().unwrap_or_else(|| json!({})),
        "spec": doc.pointer(spec_ptr).cloned().unwrap_or_else(|| json!({})),
    });
    Ok(vec![PodTemplate {
        item: String::new(),
        workload: workload_meta(&doc, &kind, &pod),
        pod,
    }])
}

/// Whether the status annotation of an injected pod lists a container or init container.
fn adds_a_container(pod: &Value) -> bool {
    let Some(status) = crate::kube::pod::annotation(pod, names::STATUS_ANNOTATION)
        .and_then(|s| serde_json::from_str::<Value>(s).ok())
    else {
        return true;
    };
    ["containers", "initContainers"].iter().any(|k| {
        status
            .get(k)
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
    })
}

/// A workload to inject must have a pod with at least one container: Kubernetes rejects a pod
/// without one, and injecting would produce a pod made of the sidecar alone.
fn check_has_containers(pod: &Value, kind: &str, has_template: bool) -> Result<()> {
    let (_, spec_ptr) = template_pointers(kind);
    let field = spec_ptr.trim_start_matches('/').replace('/', ".");
    if !has_template {
        let what = if kind == "Pod" { "spec" } else { "template" };
        return Err(WorkloadError::NoPod { what, field }.into());
    }
    let has_one = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .is_some_and(|c| !c.is_empty());
    if has_one {
        return Ok(());
    }
    Err(WorkloadError::NoContainers(field).into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_error_lines_are_made_absolute() {
        let syntax = |line| {
            Error::from(yaml::YamlError::Syntax {
                line,
                problem: "bad (column 1)".into(),
            })
        };
        let e = shift_yaml_line(syntax(Some(2)), 2);
        assert_eq!(e.to_string(), "yaml: line 4: bad (column 1)");
        let e = shift_yaml_line(syntax(None), 2);
        assert_eq!(e.to_string(), "yaml: bad (column 1)");
        let other = shift_yaml_line(Error::from(yaml::YamlError::Decode("x".into())), 2);
        assert_eq!(other.to_string(), "yaml: x");
        let other = shift_yaml_line(WorkloadError::UnsupportedKind("line 2".into()), 2);
        assert_eq!(other.to_string(), "unsupported kind \"line 2\"");
    }
}
