//! `outrigger drift`: every pod template of manifests (`-f`), or every pod of the cluster
//! (`--kube`, grouped by owning workload), classified against the configuration in force by the
//! library's drift engine ([`outrigger_inject::drift`]).
//!
//! Exit status: 0 when every pod is current (or rightly not injected), 1 when one drifted, 2 on
//! error (like `diff`). `--kube --restart` re-rolls the drifted workloads after the table
//! ([`restart`]).

pub mod args;

use std::process::ExitCode;

use crate::print;
use anyhow::{Context, Result};
use outrigger_go::kube::typed;
use outrigger_go::yaml;
use outrigger_inject::drift::{
    self, pod_drift, stored_pod_drift, FieldDiff, PodDrift, RevisionTags,
};
use outrigger_inject::ingest::workload::WorkloadMeta;
use outrigger_inject::kube::names::POD_TYPE;
use outrigger_inject::kube_inject::{self, KubeInjectOptions};
use serde_json::{json, Value};

use crate::drift::args::{DriftArgs, DriftOutput};
use crate::input;

/// Fields listed under a pod in the table; the rest are counted.
const TABLE_FIELDS: usize = 10;

/// One pod template examined.
struct Row {
    document: usize,
    kind: String,
    name: String,
    item: String,
    drift: PodDrift,
}

/// Run `outrigger drift`.
pub fn run(args: &DriftArgs) -> Result<ExitCode> {
    crate::template_env::init(&args.env.template_env)?;
    let setup = crate::config_source::Setup::load(
        args.cluster.source().as_ref(),
        &args.files.paths(),
        &args.revision,
    )?;
    let opts = setup.options(args.in_force.native_sidecars, false);
    let Some(filename) = &args.filename else {
        return cluster::run(
            args,
            &opts,
            crate::config_source::native_auto(args.in_force.native_sidecars),
        );
    };
    // outrigger's own selector value stands for the revision in force, as `--kube` reads it.
    let tags = RevisionTags(args.decision.revision_tags.iter().cloned().collect())
        .with_outrigger(&args.revision);
    // The one decision, as `check` judges each pod template (with --namespace-labels, the
    // verdict; always, the warnings).
    let decider = crate::decision::Decider::new(
        &args.decision,
        &args.revision,
        None,
        opts.settings.snapshot,
    )?;
    let mut skipped = Skipped::default();
    let rows = examine_stream(filename, &opts, &tags, &decider, &mut skipped)?;
    let out = match args.output {
        DriftOutput::Table => table(&rows, &skipped),
        DriftOutput::Json => {
            print::pretty_json(&Value::Array(rows.iter().map(row_json).collect()))?
        }
    };
    print::stdout(&out)?;
    Ok(if rows.iter().any(|r| r.drift.state.is_drift()) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The pod templates left out of the table, and why.
#[derive(Debug, Default)]
struct Skipped {
    /// On the revision their revision tag points to, which is not the one in force.
    other_revision: usize,
    /// With --namespace-labels: selected by another revision's webhook.
    other_webhook: usize,
}

/// Documents read before a batch is judged (as `preview -f` batches them).
const BATCH_DOCUMENTS: usize = 64;

/// Bytes of documents read before a batch is judged.
const BATCH_BYTES: usize = 4 << 20;

/// One pod template to judge: where it is, what it is, and whether it was read back from the
/// API server (a stored object, judged as `--kube` judges the cluster's pods).
struct Template {
    document: usize,
    kind: String,
    name: String,
    item: String,
    workload: WorkloadMeta,
    pod: Value,
    stored: bool,
}

/// Classify every pod template of the manifests `filename` names, read as a stream of
/// documents (the library's [`outrigger_go::yaml::DocumentReader`]), a bounded batch at a time, each
/// batch's templates judged on all cores in order: memory follows the batch, not the file.
/// `tags` resolve pods' `istio.io/rev` labels; pods their tag puts on another revision, and on
/// it, are counted in `skipped`, not examined. With --namespace-labels, each pod template is
/// judged as in that namespace: the revision whose webhook selects it ([`RevisionTags::selecting`],
/// another revision's is not examined), then the one decision ([`crate::decision`]: the
/// webhook entries and the injector, as `check` explains it). The decision's warnings are
/// printed on stderr, once each. A document that fails is an error naming it; nothing is
/// judged of it.
fn examine_stream(
    filename: &std::path::Path,
    opts: &KubeInjectOptions<'_>,
    tags: &RevisionTags,
    decider: &crate::decision::Decider<'_>,
    skipped: &mut Skipped,
) -> Result<Vec<Row>> {
    let said = crate::decision::SaidOnce::default();
    let revision_in_force =
        outrigger_inject::decide::selection::revision_name(opts.settings.revision);
    let source = input::name(filename);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut reader = yaml::DocumentReader::new(input::open(filename)?).enumerate();
    let mut rows = Vec::new();
    loop {
        let mut batch = Vec::new();
        let mut bytes = 0;
        let mut done = false;
        while batch.len() < BATCH_DOCUMENTS && bytes < BATCH_BYTES {
            match reader.next() {
                Some((index, Ok(raw))) => {
                    bytes += raw.text.len();
                    batch.push((index, raw));
                }
                Some((_, Err(yaml::ReadError::Io(e)))) => {
                    return Err(anyhow::Error::new(e).context(format!("reading {source}")));
                }
                Some((_, Err(e))) => return Err(anyhow::Error::new(e).context(source.clone())),
                None => {
                    done = true;
                    break;
                }
            }
        }
        let mut ends_mid_line = false;
        if done {
            if let Some((_, raw)) = batch.last() {
                ends_mid_line = !raw.text.is_empty() && !raw.text.ends_with('\n');
            }
        }
        let last = batch.len().saturating_sub(1);
        let parsed = drift::in_parallel(
            batch.into_iter().enumerate().collect(),
            threads,
            |(n, (index, raw))| {
                templates(index, &raw.text, raw.first_line, ends_mid_line && n == last)
            },
        );
        let mut ready = Vec::new();
        for p in parsed {
            ready.extend(p.with_context(|| source.clone())?);
        }
        let judged = drift::in_parallel(ready, threads, |t| {
            judge(t, opts, decider, tags, revision_in_force)
        });
        for j in judged {
            let (judged, lines) = j.with_context(|| source.clone())?;
            said.eprint(lines);
            let Some((t, drift)) = judged else {
                skipped.other_webhook += 1;
                continue;
            };
            // A pod labelled with a revision tag is on the tag's revision (left out when that
            // revision injected it).
            let Some(drift) = tags.on_tagged_revision(&t.pod, drift) else {
                skipped.other_revision += 1;
                continue;
            };
            rows.push(Row {
                document: t.document,
                kind: t.kind,
                name: t.name,
                item: t.item,
                drift,
            });
        }
        if done {
            return Ok(rows);
        }
    }
}

/// The drift of one template: a stored object's as `--kube` judges a pod (the API server's
/// defaults on both sides), a manifest's as written. With --namespace-labels, the template is
/// judged as in that namespace: `None` when another revision's webhook selects it. With it, the
/// lines the decision prints on stderr (its warnings and notes).
#[allow(clippy::type_complexity)]
fn judge(
    t: Template,
    opts: &KubeInjectOptions<'_>,
    decider: &crate::decision::Decider<'_>,
    tags: &RevisionTags,
    revision_in_force: &str,
) -> Result<(Option<(Template, PodDrift)>, Vec<String>)> {
    let mut wanted = kube_inject::skip_reason(&t.pod).is_none();
    let workload = format!("{}/{}", t.kind, t.workload.name);
    let judged = decider
        .worth_judging(&t.pod)
        .then(|| decider.judge_pod(&workload, &t.workload.namespace, &t.pod));
    let lines = judged
        .as_ref()
        .map(|j| j.stderr_lines())
        .unwrap_or_default();
    if decider.labels_given() {
        let selected = tags.selecting(decider.namespace_labels(), &t.pod);
        if selected.is_some_and(|r| r != revision_in_force) {
            return Ok((None, lines));
        }
        wanted = wanted && judged.as_ref().is_some_and(|j| j.all_injected());
    }
    let params = kube_inject::inject_params(opts, t.workload.clone());
    let label = format!("document {} ({} {:?})", t.document, t.kind, t.name);
    let drift = if t.stored {
        stored_pod_drift(&t.pod, &params, wanted)
    } else {
        pod_drift(&t.pod, &params, wanted)
    }
    .with_context(|| label)?;
    Ok((Some((t, drift)), lines))
}

/// The pod templates of document `document` (text `raw`, from line `first_line` of the
/// stream; `cut` when the stream ends inside it, mid-line). Stored objects (`kubectl get -o
/// yaml|json` output, a `List` of them) are checked as what the API server stores: every field
/// one it has, no List item without a kind or itself a List, nothing cut short.
fn templates(document: usize, raw: &str, first_line: usize, cut: bool) -> Result<Vec<Template>> {
    let doc = yaml::from_str(raw)
        .map_err(|e| kube_inject::shift_yaml_line(e, first_line))
        .with_context(|| format!("document {document}"))?;
    if doc.is_null() {
        return Ok(Vec::new());
    }
    let kind = doc
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let name = namespaced(doc.get("metadata"));
    let label = format!("document {document} ({kind} {name:?})");
    let items: Vec<&Value> = match doc.get("items").and_then(Value::as_array) {
        Some(items) => items.iter().collect(),
        None => vec![&doc],
    };
    if kind.is_empty() && doc.get("items").is_some() {
        anyhow::bail!(
            "document {document}: a list of items without a kind (a List cut short? kubectl \
             writes its kind after the items)"
        );
    }
    let stored: Vec<bool> = items.iter().map(|o| is_stored(o)).collect();
    if kind == "List" {
        for (i, item) in items.iter().enumerate() {
            let item_kind = item.get("kind").and_then(Value::as_str).unwrap_or("");
            let api_version = item.get("apiVersion").and_then(Value::as_str).unwrap_or("");
            if item_kind.is_empty() || api_version.is_empty() || item_kind.ends_with("List") {
                anyhow::bail!(
                    "{label}: items[{i}] is {}: a List holds Kubernetes objects, each with its \
                     apiVersion and kind",
                    if item_kind.is_empty() {
                        "an object without a kind".to_string()
                    } else {
                        format!("a {item_kind:?} of apiVersion {api_version:?}")
                    }
                );
            }
        }
    }
    if stored.iter().any(|s| *s) {
        if cut {
            anyhow::bail!(
                "{label}: the stream ends in the middle of a line: a stored object cut short is \
                 not judged"
            );
        }
        for (i, item) in items.iter().enumerate().filter(|(i, _)| stored[*i]) {
            if item.get("kind").and_then(Value::as_str) == Some("Pod") {
                if let Some(field) = typed::unknown_field(POD_TYPE, item) {
                    let at = if kind == "List" {
                        format!("items[{i}].")
                    } else {
                        String::new()
                    };
                    anyhow::bail!(
                        "{label}: {at}{field}: a field the API server does not store in a Pod \
                         (not a stored pod, or one of a newer Kubernetes)"
                    );
                }
            }
        }
    }
    let mut out = Vec::new();
    for t in kube_inject::pod_templates(doc.clone()).with_context(|| label.clone())? {
        let index = t
            .item
            .strip_prefix("items[")
            .and_then(|i| i.trim_end_matches(']').parse::<usize>().ok())
            .unwrap_or(0);
        let name = if t.item.is_empty() {
            name.clone()
        } else {
            namespaced(Some(&json!({
                "namespace": t.workload.namespace,
                "name": t.workload.name,
            })))
        };
        out.push(Template {
            document,
            kind: t.workload.kind.clone(),
            name,
            item: t.item,
            stored: stored.get(index).copied().unwrap_or(false),
            workload: t.workload,
            pod: t.pod,
        });
    }
    Ok(out)
}

/// Whether `object` was read back from the API server: it has what only the API server
/// writes (`metadata.uid`, `resourceVersion` or `creationTimestamp`) or a `status`.
fn is_stored(object: &Value) -> bool {
    let meta = |k: &str| {
        object
            .get("metadata")
            .and_then(|m| m.get(k))
            .is_some_and(|v| !v.is_null() && v != "")
    };
    meta("uid") || meta("resourceVersion") || meta("creationTimestamp")
}

/// The pods of the cluster.
pub(crate) mod cluster;

/// Re-rolling the drifted workloads (`--restart`).
mod restart;

/// `namespace/name` (or `name`) of a metadata object.
fn namespaced(meta: Option<&Value>) -> String {
    let field = |k: &str| {
        meta.and_then(|m| m.get(k))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    match (field("namespace"), field("name")) {
        ("", name) => name.to_string(),
        (ns, name) => format!("{ns}/{name}"),
    }
}

/// The longest value a table shows whole, in characters.
const SHOWN_CHARS: usize = 80;
/// How much of the common part precedes the first difference when a value is shortened.
const SHOWN_CONTEXT: usize = 20;

/// Two values of a field as a table shows them (`(absent)` for none): whole when they fit in
/// [`SHOWN_CHARS`], else both cut to the same window that starts [`SHOWN_CONTEXT`] characters
/// before their first difference, `...` marking what is left out, so that the part that
/// differs is what is shown.
pub(crate) fn show_pair(a: &Option<Value>, b: &Option<Value>) -> (String, String) {
    let text = |v: &Option<Value>| v.as_ref().map_or("(absent)".to_string(), Value::to_string);
    let (a, b) = (text(a), text(b));
    let (ac, bc): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    if ac.len() <= SHOWN_CHARS && bc.len() <= SHOWN_CHARS {
        return (a, b);
    }
    let common = ac.iter().zip(&bc).take_while(|(x, y)| x == y).count();
    let start = if common + SHOWN_CHARS / 2 < SHOWN_CHARS {
        0
    } else {
        common - SHOWN_CONTEXT
    };
    let window = |chars: &[char]| {
        if chars.len() <= SHOWN_CHARS && start == 0 {
            return chars.iter().collect::<String>();
        }
        let room = SHOWN_CHARS - 3 - if start > 0 { 3 } else { 0 };
        let end = (start + room).min(chars.len());
        let mut s = String::new();
        if start > 0 {
            s.push_str("...");
        }
        s.extend(&chars[start.min(chars.len())..end]);
        if end < chars.len() {
            s.push_str("...");
        }
        s
    };
    (window(&ac), window(&bc))
}

/// The table: a row per pod template, its differing fields indented below.
fn table(rows: &[Row], skipped: &Skipped) -> String {
    let other_revision = skipped.other_revision;
    let mut out = columns(
        ["DOC", "KIND", "NAME", "STATE", "REVISION"],
        rows.iter().map(|r| {
            let what = if r.item.is_empty() {
                r.kind.clone()
            } else {
                format!("{} {}", r.kind, r.item)
            };
            let rev = match &r.drift.injected_revision {
                Some(rev) => rev.clone(),
                None => "-".into(),
            };
            let cells = [
                r.document.to_string(),
                what,
                r.name.clone(),
                r.drift.state.as_str().to_string(),
                rev,
            ];
            (cells, fields_lines(&r.drift.fields))
        }),
    );
    let drifted = rows.iter().filter(|r| r.drift.state.is_drift()).count();
    out.push_str(&format!(
        "{}: {drifted} drifted, {} current or rightly not injected\n",
        crate::print::count(rows.len(), "pod template", "pod templates"),
        rows.len() - drifted
    ));
    if other_revision > 0 {
        out.push_str(&format!(
            "{} on the revision their revision tag points to, not --revision, {} not \
             examined\n",
            crate::print::count(other_revision, "pod template", "pod templates"),
            if other_revision == 1 { "was" } else { "were" }
        ));
    }
    out.push_str(&other_webhook_line(
        skipped.other_webhook,
        "pod template",
        "pod templates",
    ));
    out
}

/// The summary line for `n` pods (or pod templates: `one`, `many`) another revision's webhook
/// selects, which drift does not examine; empty for none.
pub(crate) fn other_webhook_line(n: usize, one: &str, many: &str) -> String {
    if n == 0 {
        return String::new();
    }
    format!(
        "{} selected by another revision's webhook {} not examined (--revision chooses)\n",
        crate::print::count(n, one, many),
        if n == 1 { "was" } else { "were" }
    )
}

/// Aligned columns under `head`; each row's `below` text follows its line.
pub(crate) fn columns<const N: usize>(
    head: [&str; N],
    rows: impl Iterator<Item = ([String; N], String)>,
) -> String {
    let rows: Vec<([String; N], String)> = rows.collect();
    let widths: Vec<usize> = (0..N)
        .map(|i| {
            rows.iter()
                .map(|(c, _)| c[i].len())
                .chain([head[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = column_line(head, &widths);
    for (cells, below) in &rows {
        out.push_str(&column_line(cells.each_ref().map(String::as_str), &widths));
        out.push_str(below);
    }
    out
}

/// One line of [`columns`]: each cell but the last padded to its column's width (`widths`,
/// the longest cell's length in bytes) and two spaces.
pub(crate) fn column_line<const N: usize>(cells: [&str; N], widths: &[usize]) -> String {
    let mut s = String::new();
    for (i, cell) in cells.iter().enumerate() {
        if i + 1 == N {
            s.push_str(cell);
        } else {
            s.push_str(&format!("{cell:<w$}  ", w = widths[i]));
        }
    }
    s + "\n"
}

/// The differing fields under a row: up to [`TABLE_FIELDS`], then how many more.
pub(crate) fn fields_lines(fields: &[FieldDiff]) -> String {
    let mut out: String = fields.iter().take(TABLE_FIELDS).map(field_line).collect();
    if fields.len() > TABLE_FIELDS {
        out.push_str(&format!(
            "    ... {} more {} (-o json lists them all)\n",
            fields.len() - TABLE_FIELDS,
            if fields.len() - TABLE_FIELDS == 1 {
                "field"
            } else {
                "fields"
            }
        ));
    }
    out
}

fn field_line(f: &FieldDiff) -> String {
    let (actual, expected) = show_pair(&f.actual, &f.expected);
    format!("    {}: {actual} -> {expected} ({})\n", f.path, f.cause)
}

fn row_json(r: &Row) -> Value {
    json!({
        "document": r.document,
        "kind": r.kind,
        "name": r.name,
        "item": r.item,
        "state": r.drift.state.as_str(),
        "injectedRevision": r.drift.injected_revision,
        "expectedRevision": r.drift.expected_revision,
        "fields": fields_json(&r.drift.fields),
    })
}

/// The differing fields as JSON objects.
pub(crate) fn fields_json(fields: &[FieldDiff]) -> Vec<Value> {
    fields
        .iter()
        .map(|f| {
            json!({
                "path": f.path,
                "actual": f.actual,
                "expected": f.expected,
                "cause": f.cause,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_values_are_shown_where_they_differ() {
        let image = |tag: &str| Some(Value::String(format!("{}/proxyv2:{tag}", "r".repeat(90))));
        let (a, b) = show_pair(&image("1.24.6"), &image("1.28.10"));
        assert!(a.ends_with("proxyv2:1.24.6\""), "{a}");
        assert!(b.ends_with("proxyv2:1.28.10\""), "{b}");
        assert!(a.starts_with("...") && b.starts_with("..."), "{a} {b}");
        assert!(a.chars().count() <= SHOWN_CHARS && b.chars().count() <= SHOWN_CHARS);
        // A difference near the start: the start is shown, as before.
        let long = |head: &str| Some(Value::String(format!("{head}{}", "x".repeat(100))));
        let (a, b) = show_pair(&long("a"), &long("b"));
        assert_eq!(a, format!("\"a{}...", "x".repeat(75)));
        assert_eq!(b, format!("\"b{}...", "x".repeat(75)));
        // Short values whole; an absent one named.
        assert_eq!(
            show_pair(&None, &Some(Value::from(1))),
            ("(absent)".to_string(), "1".to_string())
        );
    }
}
