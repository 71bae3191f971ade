//! `outrigger preview -f`: the manifests read as a stream of documents (the library's
//! [`outrigger_go::yaml::DocumentReader`], as `inject` reads them), a bounded batch at a time: the batch's
//! documents parsed, then their pod templates previewed, each on all cores
//! ([`outrigger_inject::drift::in_parallel`], which keeps the order), and the rows handed to the [`Report`] before
//! the next batch is read. Memory follows the batch, not the file.

use std::io::Write;

use anyhow::{Context, Result};
use outrigger_go::yaml::{self, ReadError};
use outrigger_inject::drift;
use outrigger_inject::ingest::workload::WorkloadMeta;
use outrigger_inject::kube_inject::{self, shift_yaml_line};
use outrigger_inject::preview::Configs;
use serde_json::Value;

use super::report::{Rendered, Report};
use super::{cluster, evaluate, replicas, Facts};
use crate::input;
use crate::preview::args::PreviewArgs;

/// Documents read before a batch is previewed.
const BATCH_DOCUMENTS: usize = 64;

/// Bytes of documents read before a batch is previewed (a batch of large documents is smaller).
const BATCH_BYTES: usize = 4 << 20;

/// A pod template of a manifest: (document index and item, workload, pod, replicas).
type Template = ((usize, String), WorkloadMeta, Value, u64);

/// Preview every pod template of the manifests `args.filename` names, in order; with `--kube`
/// against what the cluster enforces in their namespaces (read as the manifests name them).
/// After a failure the rows of the documents before the failing one have been handed on.
pub(crate) fn preview<W: Write>(
    args: &PreviewArgs,
    configs: &Configs<'_>,
    filename: &std::path::Path,
    report: &mut Report<W>,
) -> Result<()> {
    let source = input::name(filename);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut cluster = args
        .cluster
        .kube
        .then(|| cluster::Enforced::new(args, configs));
    let offline = Facts::default();
    // The one decision, as `check` judges each pod template (with --namespace-labels, the
    // verdict; always, the warnings, once each).
    let decider = crate::decision::Decider::new(
        &args.decision,
        &args.revision,
        None,
        configs.current.snapshot,
    )?;
    let said = crate::decision::SaidOnce::default();
    let mut reader = yaml::DocumentReader::new(input::open(filename)?).enumerate();
    let mut read = 0usize;
    let output = report.output();
    loop {
        let mut batch = Vec::new();
        let mut bytes = 0;
        let mut failure = None;
        while batch.len() < BATCH_DOCUMENTS && bytes < BATCH_BYTES {
            match reader.next() {
                Some((index, Ok(raw))) => {
                    bytes += raw.text.len();
                    batch.push((index, raw));
                }
                Some((_, Err(ReadError::Io(e)))) => {
                    failure = Some(anyhow::Error::new(e).context(format!("reading {source}")));
                    break;
                }
                Some((_, Err(e))) => {
                    failure = Some(anyhow::Error::new(e).context(source.clone()));
                    break;
                }
                None => break,
            }
        }
        let last = batch.len() < BATCH_DOCUMENTS && bytes < BATCH_BYTES;
        read += batch.len();
        let parsed = drift::in_parallel(batch, threads, |(index, raw)| {
            templates(index, &raw.text, raw.first_line)
        });
        // The templates of the documents before the first that fails.
        let mut ready = Vec::new();
        for p in parsed {
            match p {
                Ok(t) => ready.extend(t),
                Err(e) => {
                    failure = Some(e.context(source.clone()));
                    break;
                }
            }
        }
        let facts = match &mut cluster {
            Some(c) => {
                c.learn(ready.iter().map(|t| t.1.namespace.as_str()))?;
                c.facts()
            }
            None => &offline,
        };
        let rendered = drift::in_parallel(ready, threads, |(document, workload, pod, count)| {
            let judged = decider.worth_judging(&pod).then(|| {
                let name = format!("{}/{}", workload.kind, workload.name);
                decider.judge_pod(&name, &workload.namespace, &pod)
            });
            let lines = judged
                .as_ref()
                .map(|j| j.stderr_lines())
                .unwrap_or_default();
            let wanted = kube_inject::skip_reason(&pod).is_none()
                && (!decider.labels_given() || judged.as_ref().is_some_and(|j| j.all_injected()));
            let admission = facts.admission(&workload.namespace);
            let row = evaluate(
                &pod,
                workload,
                configs,
                (wanted, wanted),
                admission,
                count,
                Some(document),
            );
            (lines, Rendered::of(&row, output))
        });
        for (lines, r) in rendered {
            said.eprint(lines);
            report.add(r?)?;
        }
        report.progress(&format!(
            "{} read",
            crate::print::count(read, "document", "documents")
        ));
        if let Some(e) = failure {
            return Err(e);
        }
        if last {
            return Ok(());
        }
    }
}

/// The pod templates of document `index` (text `raw`, starting on line `first_line` of the
/// stream), with their workloads' replica counts; none for a document of another kind or an
/// empty one. Errors name the document and the line of the stream.
fn templates(index: usize, raw: &str, first_line: usize) -> Result<Vec<Template>> {
    let doc = yaml::from_str(raw)
        .map_err(|e| shift_yaml_line(e, first_line))
        .with_context(|| format!("document {index}"))?;
    if doc.is_null() {
        return Ok(Vec::new());
    }
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or("");
    let name = doc
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let label = format!("document {index} ({kind} {name:?})");
    // Replica counts are read from the document before the typed round trip of its templates.
    let counts: Vec<u64> = if kind == "List" {
        doc.get("items")
            .and_then(Value::as_array)
            .map(|items| items.iter().map(replicas).collect())
            .unwrap_or_default()
    } else {
        vec![replicas(&doc)]
    };
    let mut out = Vec::new();
    for t in kube_inject::pod_templates(doc).with_context(|| label.clone())? {
        let count = match t.item.strip_prefix("items[") {
            Some(i) => i
                .trim_end_matches(']')
                .parse::<usize>()
                .ok()
                .and_then(|i| counts.get(i).copied()),
            None => counts.first().copied(),
        };
        out.push(((index, t.item), t.workload, t.pod, count.unwrap_or(1)));
    }
    Ok(out)
}
