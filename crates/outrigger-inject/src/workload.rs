//! Manual injection of manifests (`istioctl kube-inject`, spec §11.3-11.4): find the pod template
//! of every supported workload, inject it, write it back, and re-serialise the document.

use serde_json::{json, Map, Value};

use crate::config::Snapshot;
use crate::decision::{self, Policy};
use crate::inject::{self, InjectParams, Mode, WorkloadMeta};
use crate::{k8s, yaml, Error, Result};

/// Options of a kube-inject run.
#[derive(Debug, Clone)]
pub struct KubeInjectOptions<'a> {
    /// Configuration snapshot.
    pub snapshot: &'a Snapshot,
    /// Native sidecars on or off (offline there is no cluster to auto-detect from).
    pub native_sidecars: bool,
    /// Revision (`--revision`; `default` counts as empty).
    pub revision: &'a str,
    /// `COMPLIANCE_POLICY` of the process.
    pub compliance_policy: &'a str,
}

/// Result of injecting one stream of documents.
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

/// Kinds whose pod template is injected, with their schema type.
const KINDS: [(&str, &str); 9] = [
    ("Pod", "corev1.Pod"),
    ("ReplicationController", "corev1.ReplicationController"),
    ("Deployment", "appsv1.Deployment"),
    ("DaemonSet", "appsv1.DaemonSet"),
    ("ReplicaSet", "appsv1.ReplicaSet"),
    ("StatefulSet", "appsv1.StatefulSet"),
    ("Job", "batchv1.Job"),
    ("CronJob", "batchv1.CronJob"),
    ("DeploymentConfig", "appsopenshiftv1.DeploymentConfig"),
];

fn schema_type(kind: &str) -> Option<&'static str> {
    KINDS.iter().find(|(k, _)| *k == kind).map(|(_, t)| *t)
}

/// Whether kube-inject processes documents of this kind (`List` included).
pub fn is_supported_kind(kind: &str) -> bool {
    kind == "List" || schema_type(kind).is_some()
}

/// Inject every supported workload of a multi-document YAML stream.
pub fn inject_manifests(input: &str, opts: &KubeInjectOptions<'_>) -> Result<KubeInjectOutput> {
    let mut out = KubeInjectOutput::default();
    for (index, raw) in yaml::split_documents(input)?.into_iter().enumerate() {
        let at = |e: Error| e.context(&format!("document {index}"));
        let doc = yaml::from_str(raw).map_err(|e| at(absolute_yaml_line(e, input, raw)))?;
        let m = match &doc {
            Value::Object(m) => m,
            Value::Null => continue,
            other => {
                return Err(at(Error::Workload(format!(
                    "expected a Kubernetes object (a mapping), got {}",
                    short(other)
                ))))
            }
        };
        let kind = match m.get("kind") {
            Some(Value::String(k)) if !k.is_empty() => k.clone(),
            _ => return Err(at(Error::Workload("Object 'Kind' is missing".to_string()))),
        };
        let name = m
            .get("metadata")
            .and_then(|x| x.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if !is_supported_kind(&kind) {
            out.text.push_str(raw);
            if !raw.ends_with('\n') {
                out.text.push('\n');
            }
            out.text.push_str("---\n");
            out.changes.push(DocumentChange {
                index,
                kind,
                name,
                before_after: None,
            });
            continue;
        }
        let (before, after) = inject_document(doc, opts, &mut out.warnings).map_err(at)?;
        // istioctl writes the object with sigs.k8s.io/yaml `Marshal` (JSON, then `JSONToYAML`).
        let text = yaml::json_to_yaml(&after)
            .map_err(|e| at(e.context("error converting JSON to YAML")))?;
        out.text.push_str(&text);
        out.text.push_str("---\n");
        out.changes.push(DocumentChange {
            index,
            kind,
            name,
            before_after: Some((before, after)),
        });
    }
    Ok(out)
}

/// Rewrite the document-relative `yaml: line L:` of a parse error of `doc` (a slice of `input`)
/// into the line of the whole input, so the message points at the file line.
fn absolute_yaml_line(e: Error, input: &str, doc: &str) -> Error {
    let Error::Yaml(msg) = e else { return e };
    let offset = (doc.as_ptr() as usize).wrapping_sub(input.as_ptr() as usize);
    let Some(before) = input.get(..offset) else {
        return Error::Yaml(msg);
    };
    let first_line = before.matches('\n').count();
    let shifted = msg.strip_prefix("yaml: line ").and_then(|rest| {
        let digits = rest.find(|c: char| !c.is_ascii_digit())?;
        let line: usize = rest[..digits].parse().ok()?;
        Some(format!(
            "yaml: line {}{}",
            line + first_line,
            &rest[digits..]
        ))
    });
    Error::Yaml(shifted.unwrap_or(msg))
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 60 {
        format!("{}...", s.chars().take(57).collect::<String>())
    } else {
        s
    }
}

/// Inject one parsed document of a supported kind (or a `List`); returns (normalised input, output).
pub fn inject_document(
    mut doc: Value,
    opts: &KubeInjectOptions<'_>,
    warnings: &mut Vec<String>,
) -> Result<(Value, Value)> {
    let kind = doc
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if kind == "List" {
        let before = doc.clone();
        if let Some(items) = doc.get_mut("items").and_then(Value::as_array_mut) {
            for (i, item) in items.iter_mut().enumerate() {
                let k = item.get("kind").and_then(Value::as_str).unwrap_or("");
                if schema_type(k).is_some() {
                    let (_, after) = inject_document(item.take(), opts, warnings)
                        .map_err(|e| e.context(&format!("items[{i}]")))?;
                    *item = after;
                }
            }
        }
        return Ok((before, doc));
    }
    let ty =
        schema_type(&kind).ok_or_else(|| Error::Workload(format!("unsupported kind {kind:?}")))?;
    // istioctl decodes the document with sigs.k8s.io/yaml `Unmarshal`, which wraps the JSON
    // decoder's type errors.
    normalize_workload(ty, &mut doc).map_err(|e| match e {
        Error::Type(m) => Error::Type(format!("error unmarshaling JSON: while decoding JSON: {m}")),
        other => other,
    })?;
    let before = doc.clone();
    inject_workload(&mut doc, &kind, opts, warnings)?;
    normalize_workload(ty, &mut doc)?;
    Ok((before, doc))
}

fn normalize_workload(ty: &str, doc: &mut Value) -> Result<()> {
    k8s::normalize(ty, doc)
}

/// JSON pointers of (pod metadata, pod spec) inside a workload of `kind`.
fn template_pointers(kind: &str) -> (&'static str, &'static str) {
    match kind {
        "Pod" => ("/metadata", "/spec"),
        "CronJob" => (
            "/spec/jobTemplate/metadata",
            "/spec/jobTemplate/spec/template/spec",
        ),
        _ => ("/spec/template/metadata", "/spec/template/spec"),
    }
}

fn meta_field<'a>(v: Option<&'a Value>, f: &str) -> &'a str {
    v.and_then(|m| m.get(f))
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn inject_workload(
    doc: &mut Value,
    kind: &str,
    opts: &KubeInjectOptions<'_>,
    warnings: &mut Vec<String>,
) -> Result<()> {
    if matches!(kind, "ReplicationController" | "DeploymentConfig")
        && doc.pointer("/spec/template").is_none()
    {
        return Err(Error::Workload("spec.template is required value".into()));
    }
    let (meta_ptr, spec_ptr) = template_pointers(kind);
    let metadata = doc.pointer(meta_ptr).cloned().unwrap_or_else(|| json!({}));
    let spec = doc.pointer(spec_ptr).cloned().unwrap_or_else(|| json!({}));
    let workload_meta = doc.get("metadata");
    let (w_name, w_ns) = (
        meta_field(workload_meta, "name"),
        meta_field(workload_meta, "namespace"),
    );
    let name = Some(meta_field(Some(&metadata), "name"))
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

    let pod = json!({"metadata": metadata, "spec": spec});
    if pod.pointer("/spec/hostNetwork").and_then(Value::as_bool) == Some(true) {
        warnings.push(format!(
            "===> Skipping injection because {subject} has host networking enabled\n"
        ));
        return Ok(());
    }
    let d = decision::inject_required(&pod, &Policy::Enabled, &[], &[]);
    if !d.inject {
        warnings.push(format!(
            "===> Skipping injection because {subject} has sidecar injection disabled\n"
        ));
        return Ok(());
    }
    let workload = if kind == "Pod" {
        inject::workload_from_pod(&pod)
    } else {
        WorkloadMeta {
            kind: kind.to_string(),
            api_version: doc
                .get("apiVersion")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            name: w_name.to_string(),
            namespace: w_ns.to_string(),
        }
    };
    let params = InjectParams {
        snapshot: opts.snapshot,
        mode: Mode::KubeInject,
        workload,
        revision: opts.revision,
        native_sidecars: opts.native_sidecars,
        proxy_envs: Default::default(),
        proxy_uid_gid: None,
        compliance_policy: opts.compliance_policy,
    };
    let injected = inject::inject_pod(&pod, &params)?;
    warnings.extend(injected.warnings.into_iter().map(|w| format!("{w}\n")));
    let mut pod = injected.pod;
    let new_meta = pod
        .get_mut("metadata")
        .map(Value::take)
        .unwrap_or_else(|| json!({}));
    let new_spec = pod
        .get_mut("spec")
        .map(Value::take)
        .unwrap_or_else(|| json!({}));
    set_pointer(doc, meta_ptr, new_meta);
    set_pointer(doc, spec_ptr, new_spec);
    Ok(())
}

/// Set the value at a JSON pointer, creating intermediate objects.
fn set_pointer(doc: &mut Value, ptr: &str, value: Value) {
    let mut cur = doc;
    let parts: Vec<&str> = ptr.split('/').skip(1).collect();
    for (i, p) in parts.iter().enumerate() {
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        let m = cur.as_object_mut().expect("just made an object");
        if i + 1 == parts.len() {
            m.insert((*p).to_string(), value);
            return;
        }
        cur = m
            .entry((*p).to_string())
            .or_insert_with(|| Value::Object(Map::new()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_pointer_creates_path() {
        let mut v = json!({"spec": {}});
        set_pointer(&mut v, "/spec/template/metadata", json!({"a": 1}));
        assert_eq!(v, json!({"spec": {"template": {"metadata": {"a": 1}}}}));
    }

    #[test]
    fn yaml_error_lines_are_made_absolute() {
        let input = "a: 1\n---\nb: [\n";
        let doc = &input[9..];
        let e = absolute_yaml_line(
            Error::Yaml("yaml: line 2: bad (column 1)".into()),
            input,
            doc,
        );
        assert_eq!(e.to_string(), "yaml: line 4: bad (column 1)");
        let other = absolute_yaml_line(Error::Yaml("something else".into()), input, doc);
        assert_eq!(other.to_string(), "something else");
    }

    #[test]
    fn supported_kinds_match_istioctl() {
        for k in [
            "Pod",
            "Deployment",
            "CronJob",
            "DeploymentConfig",
            "List",
            "Job",
        ] {
            assert!(is_supported_kind(k), "{k}");
        }
        assert!(!is_supported_kind("Service"));
        assert_eq!(template_pointers("CronJob").0, "/spec/jobTemplate/metadata");
    }
}
