//! `outrigger preview`: every workload of manifests (`-f`) or of the cluster (`--kube`) injected
//! under the configuration in force and under a candidate (another revision's ConfigMaps, or
//! files), compared field by field, and the candidate's pods checked against what the cluster
//! would refuse ([`outrigger_inject::preview`]).
//!
//! Exit status: 0 when nothing changes and nothing would be refused, 1 when something changes,
//! 3 when the cluster would refuse a pod of the candidate (whether or not something changes
//! too), 2 on error.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::process::ExitCode;

use anyhow::{Context, Result};
use outrigger_inject::ingest::workload::WorkloadMeta;
use outrigger_inject::kube_inject::{self, KubeInjectOptions};
use outrigger_inject::preview::{self, Admission, Change, Finding, Outcome, PodPreview};
use outrigger_inject::yaml;
use serde_json::{json, Value};

use crate::cli::preview::{PreviewArgs, PreviewOutput};
use crate::config_source::{native_auto, Setup};
use crate::drift::{columns, show};
use crate::input;

/// The pods of the cluster.
mod cluster;
/// Native sidecars in auto mode, decided by the cluster's nodes.
mod native;

/// Changed fields listed under a workload in the table; the rest are counted.
const TABLE_FIELDS: usize = 10;

/// Exit status when the cluster would refuse a pod of the candidate.
const REFUSED: u8 = 3;

/// Where a finding comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// Only the candidate's injection has it.
    Candidate,
    /// The current configuration's injection has it too.
    Current,
    /// The workload has it without any sidecar: not injection's doing, not counted.
    Workload,
}

impl Origin {
    fn as_str(self) -> &'static str {
        match self {
            Origin::Candidate => "candidate",
            Origin::Current => "current",
            Origin::Workload => "workload",
        }
    }
}

/// One workload previewed.
pub(crate) struct Row {
    namespace: String,
    kind: String,
    name: String,
    /// Document index and `items[i]` with -f.
    document: Option<(usize, String)>,
    replicas: u64,
    preview: PodPreview,
    findings: Vec<(Finding, Origin)>,
}

impl Row {
    fn refused(&self) -> bool {
        self.findings
            .iter()
            .any(|(f, o)| *o != Origin::Workload && f.refuses())
    }

    fn changed(&self) -> bool {
        !self.preview.changes.is_empty()
            || matches!(
                (&self.preview.current, &self.preview.candidate),
                (Outcome::Failed(_), _)
                    | (Outcome::Injected(_), Outcome::NotInjected(_))
                    | (Outcome::NotInjected(_), Outcome::Injected(_))
            )
    }
}

/// Both configurations' options.
pub(crate) struct Configs<'a> {
    current: KubeInjectOptions<'a>,
    candidate: KubeInjectOptions<'a>,
    /// Whether each (current, candidate) is in auto native-sidecar mode: with the nodes known
    /// (`--kube`), decided per pod template as the webhook decides ([`native`]).
    auto: (bool, bool),
}

/// Run `outrigger preview`.
pub fn run(args: &PreviewArgs) -> Result<ExitCode> {
    let current = Setup::load(&args.cluster, &args.files, &args.revision)
        .context("loading the configuration in force")?;
    let candidate_revision = args
        .candidate
        .revision
        .clone()
        .unwrap_or_else(|| args.revision.clone());
    let candidate = Setup::load(&args.cluster, &args.candidate.files(), &candidate_revision)
        .context("loading the candidate configuration")?;
    let configs = Configs {
        current: current.options(args.native_sidecars, false),
        candidate: candidate.options(
            args.candidate.native_sidecars.or(args.native_sidecars),
            false,
        ),
        auto: (
            native_auto(args.native_sidecars),
            native_auto(args.candidate.native_sidecars.or(args.native_sidecars)),
        ),
    };
    let rows = match &args.filename {
        Some(filename) => {
            let source = input::name(filename);
            let mut text = String::new();
            input::open(filename)?
                .read_to_string(&mut text)
                .with_context(|| format!("reading {source}"))?;
            let templates = templates(&text).with_context(|| source.clone())?;
            let facts = if args.cluster.kube {
                let namespaces: BTreeSet<String> =
                    templates.iter().map(|t| t.1.namespace.clone()).collect();
                let facts = cluster::admission_for(args, &namespaces)?;
                native::report(&configs, facts.nodes.as_deref());
                facts
            } else {
                Facts::default()
            };
            templates
                .into_iter()
                .map(|(document, workload, pod, replicas)| {
                    let wanted = kube_inject::skip_reason(&pod).is_none();
                    let admission = facts.admission(&workload.namespace);
                    evaluate(
                        &pod,
                        workload,
                        &configs,
                        (wanted, wanted),
                        &admission,
                        replicas,
                        Some(document),
                    )
                })
                .collect()
        }
        None => cluster::rows(args, &configs)?,
    };
    let out = match args.output {
        PreviewOutput::Table => table(&rows),
        PreviewOutput::Json => {
            serde_json::to_string_pretty(&Value::Array(rows.iter().map(row_json).collect()))? + "\n"
        }
    };
    std::io::stdout()
        .lock()
        .write_all(out.as_bytes())
        .context("writing standard output")?;
    Ok(if rows.iter().any(Row::refused) {
        ExitCode::from(REFUSED)
    } else if rows.iter().any(Row::changed) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// What the cluster enforces, by namespace, and its nodes (empty offline).
#[derive(Default)]
pub(crate) struct Facts {
    namespaces: BTreeMap<String, Admission>,
    nodes: Option<Vec<preview::NodeVersion>>,
}

impl Facts {
    fn admission(&self, namespace: &str) -> Admission {
        let mut a = self.namespaces.get(namespace).cloned().unwrap_or_default();
        a.nodes = self.nodes.clone();
        a
    }
}

/// A pod template of a manifest: (document index and item, workload, pod, replicas).
type Template = ((usize, String), WorkloadMeta, Value, u64);

/// The pod templates of the stream `text`, with their workloads' replica counts.
fn templates(text: &str) -> Result<Vec<Template>> {
    let mut out = Vec::new();
    for (document, raw) in yaml::split_documents(text)?.into_iter().enumerate() {
        let doc = yaml::from_str(&raw).with_context(|| format!("document {document}"))?;
        if doc.is_null() {
            continue;
        }
        let kind = doc.get("kind").and_then(Value::as_str).unwrap_or("");
        let name = doc
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let label = format!("document {document} ({kind} {name:?})");
        let items: Vec<Value> = if kind == "List" {
            doc.get("items")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        } else {
            vec![doc.clone()]
        };
        for t in kube_inject::pod_templates(doc).with_context(|| label.clone())? {
            let source = match t.item.strip_prefix("items[") {
                Some(i) => i
                    .trim_end_matches(']')
                    .parse::<usize>()
                    .ok()
                    .and_then(|i| items.get(i)),
                None => items.first(),
            };
            let replicas = source.map_or(1, replicas);
            out.push(((document, t.item), t.workload, t.pod, replicas));
        }
    }
    Ok(out)
}

/// The pods a workload object runs: `spec.replicas` (default 1), a DaemonSet's desired count
/// (1 when unknown), a Job's (or a CronJob's job's) `parallelism`.
pub(crate) fn replicas(object: &Value) -> u64 {
    let at = |p: &str| object.pointer(p).and_then(Value::as_u64);
    match object.get("kind").and_then(Value::as_str).unwrap_or("") {
        "DaemonSet" => at("/status/desiredNumberScheduled").unwrap_or(1),
        "Job" => at("/spec/parallelism").unwrap_or(1),
        "CronJob" => at("/spec/jobTemplate/spec/parallelism").unwrap_or(1),
        "Pod" => 1,
        _ => at("/spec/replicas").unwrap_or(1),
    }
}

/// Preview one pod template of `workload` (injected under each configuration when `wanted`
/// says so) and check the candidate's pod under `admission`.
pub(crate) fn evaluate(
    pod: &Value,
    workload: WorkloadMeta,
    configs: &Configs<'_>,
    wanted: (bool, bool),
    admission: &Admission,
    replicas: u64,
    document: Option<(usize, String)>,
) -> Row {
    let mut cur = kube_inject::inject_params(&configs.current, workload.clone());
    let mut cand = kube_inject::inject_params(&configs.candidate, workload.clone());
    native::decide(pod, configs, admission, &mut cur, &mut cand);
    let preview = preview::preview_pod(pod, (&cur, wanted.0), (&cand, wanted.1));
    let findings = preview::preflight(&preview, admission, replicas);
    let key = |f: &Finding| (f.check, f.rule.clone(), f.container.clone());
    let of = |p: &Outcome| -> BTreeSet<_> {
        let same = PodPreview {
            current: p.clone(),
            candidate: p.clone(),
            changes: Vec::new(),
        };
        preview::preflight(&same, admission, replicas)
            .iter()
            .map(key)
            .collect()
    };
    let bare = of(&Outcome::NotInjected(pod.clone()));
    let current = match &preview.current {
        Outcome::Failed(_) => BTreeSet::new(),
        other => of(other),
    };
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
    Row {
        namespace: workload.namespace,
        kind: workload.kind,
        name: workload.name,
        document,
        replicas,
        preview,
        findings,
    }
}

fn outcome_str(o: &Outcome) -> &'static str {
    match o {
        Outcome::Injected(_) => "injected",
        Outcome::NotInjected(_) => "not-injected",
        Outcome::Failed(_) => "failed",
    }
}

/// The table: a row per workload, its changes and findings below, then the changes by field.
fn table(rows: &[Row]) -> String {
    let mut out = columns(
        ["NAMESPACE", "WORKLOAD", "REPLICAS", "CHANGES", "PREFLIGHT"],
        rows.iter().map(|r| {
            let what = match &r.document {
                Some((d, item)) if item.is_empty() => format!("{}/{} (doc {d})", r.kind, r.name),
                Some((d, item)) => format!("{}/{} (doc {d} {item})", r.kind, r.name),
                None => format!("{}/{}", r.kind, r.name),
            };
            let refused = r
                .findings
                .iter()
                .filter(|(f, o)| *o != Origin::Workload && f.refuses())
                .count();
            let preflight = if refused > 0 {
                format!("refused ({refused})")
            } else {
                "ok".to_string()
            };
            let changes = match (&r.preview.current, &r.preview.candidate) {
                (Outcome::Failed(_), _) => "current fails".to_string(),
                (Outcome::NotInjected(_), Outcome::Injected(_)) => "sidecar added".into(),
                (Outcome::Injected(_), Outcome::NotInjected(_)) => "sidecar removed".into(),
                _ => r.preview.changes.len().to_string(),
            };
            let cells = [
                if r.namespace.is_empty() {
                    "-".to_string()
                } else {
                    r.namespace.clone()
                },
                what,
                r.replicas.to_string(),
                changes,
                preflight,
            ];
            (cells, below(r))
        }),
    );
    let changed = rows.iter().filter(|r| r.changed()).count();
    let refused = rows.iter().filter(|r| r.refused()).count();
    out.push_str(&format!(
        "{} workloads: {changed} changed, {refused} would be refused\n",
        rows.len()
    ));
    let mut by_field: BTreeMap<&str, usize> = BTreeMap::new();
    for r in rows {
        for c in &r.preview.changes {
            *by_field.entry(c.path.as_str()).or_default() += 1;
        }
    }
    if !by_field.is_empty() {
        out.push_str("changes by field (workloads):\n");
        for (path, n) in by_field {
            out.push_str(&format!("    {path}: {n}\n"));
        }
    }
    out
}

/// The lines under a workload: failures, changed fields, findings.
fn below(r: &Row) -> String {
    let mut out = String::new();
    if let Outcome::Failed(e) = &r.preview.current {
        out.push_str(&format!("    the configuration in force fails: {e}\n"));
    }
    for c in r.preview.changes.iter().take(TABLE_FIELDS) {
        out.push_str(&format!(
            "    {}: {} -> {} ({})\n",
            c.path,
            show(&c.current),
            show(&c.candidate),
            c.cause
        ));
    }
    if r.preview.changes.len() > TABLE_FIELDS {
        out.push_str(&format!(
            "    ... {} more fields (-o json lists them all)\n",
            r.preview.changes.len() - TABLE_FIELDS
        ));
    }
    for (f, origin) in &r.findings {
        let container = f
            .container
            .as_ref()
            .map(|c| format!(" [container {c}]"))
            .unwrap_or_default();
        let note = match origin {
            Origin::Candidate => "",
            Origin::Current => " (also under the configuration in force)",
            Origin::Workload => " (the workload's own, without a sidecar)",
        };
        out.push_str(&format!(
            "    ! {} {}{container}: {}{note}\n",
            f.check, f.rule, f.message
        ));
    }
    out
}

fn change_json(c: &Change) -> Value {
    json!({
        "path": c.path,
        "currentPointer": c.current_pointer,
        "candidatePointer": c.candidate_pointer,
        "current": c.current,
        "candidate": c.candidate,
        "cause": c.cause,
    })
}

fn row_json(r: &Row) -> Value {
    let failure = |o: &Outcome| match o {
        Outcome::Failed(e) => Some(e.clone()),
        _ => None,
    };
    let mut v = json!({
        "namespace": r.namespace,
        "kind": r.kind,
        "name": r.name,
        "replicas": r.replicas,
        "current": outcome_str(&r.preview.current),
        "candidate": outcome_str(&r.preview.candidate),
        "changes": r.preview.changes.iter().map(change_json).collect::<Vec<_>>(),
        "findings": r.findings.iter().map(|(f, o)| json!({
            "check": f.check,
            "rule": f.rule,
            "container": f.container,
            "message": f.message,
            "origin": o.as_str(),
        })).collect::<Vec<_>>(),
        "refused": r.refused(),
    });
    if let Some(e) = failure(&r.preview.current) {
        v["currentError"] = json!(e);
    }
    if let Some(e) = failure(&r.preview.candidate) {
        v["candidateError"] = json!(e);
    }
    if let Some((d, item)) = &r.document {
        v["document"] = json!(d);
        v["item"] = json!(item);
    }
    v
}
