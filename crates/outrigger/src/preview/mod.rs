//! `outrigger preview`: every workload of manifests (`-f`) or of the cluster (`--kube`) injected
//! under the configuration in force and under a candidate (another revision's ConfigMaps, or
//! files), compared field by field, and the candidate's pods checked against what the cluster
//! would refuse ([`outrigger_inject::preview`]).
//!
//! Exit status: 0 when nothing changes and nothing would be refused, 1 when something changes,
//! 3 when the cluster would refuse a pod of the candidate (whether or not something changes
//! too), 2 on error.

pub mod args;

use std::collections::BTreeMap;
use std::process::ExitCode;

use anyhow::{Context, Result};
use outrigger_inject::ingest::workload::WorkloadMeta;
use outrigger_inject::preview::{self, Admission, Configs, Finding, Origin, Outcome, PodPreview};
use serde_json::Value;

use crate::config_source::{native_auto, Setup};
use crate::preview::args::PreviewArgs;
use report::Report;

/// The pods of the cluster.
mod cluster;
/// The manifests' workloads, read as a stream.
mod manifests;
/// Native sidecars in auto mode, decided by the cluster's nodes.
mod native;
/// The output, written as rows come.
mod report;

/// Changed fields listed under a workload in the table; the rest are counted.
const TABLE_FIELDS: usize = 10;

/// Exit status when the cluster would refuse a pod of the candidate.
const REFUSED: u8 = 3;

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

/// Run `outrigger preview`: rows are written as workloads are judged (`-o json`; the table at
/// the end, aligned), and only counts are kept ([`report::Report`]).
pub fn run(args: &PreviewArgs) -> Result<ExitCode> {
    crate::template_env::init(&args.env.template_env)?;
    let current = Setup::load(
        args.cluster.source().as_ref(),
        &args.files.paths(),
        &args.revision,
    )
    .context("loading the configuration in force")?;
    let candidate_revision = args
        .candidate
        .revision
        .clone()
        .unwrap_or_else(|| args.revision.to_string());
    let candidate = Setup::load(
        args.cluster.source().as_ref(),
        &args.candidate.files().paths(),
        &candidate_revision,
    )
    .context("loading the candidate configuration")?;
    let candidate_native = args
        .candidate
        .native_sidecars
        .or(args.in_force.native_sidecars);
    let configs = Configs {
        current: current
            .options(args.in_force.native_sidecars, false)
            .settings,
        candidate: candidate.options(candidate_native, false).settings,
        auto: (
            native_auto(args.in_force.native_sidecars),
            native_auto(candidate_native),
        ),
    };
    let mut report = Report::stdout(args.output);
    let result = match &args.filename {
        Some(filename) => manifests::preview(args, &configs, filename, &mut report),
        None => cluster::preview(args, &configs, &mut report),
    };
    match result {
        Ok(()) => report.finish(),
        Err(e) => {
            let written = report.written();
            report.abandon();
            Err(if written > 0 {
                crate::report::with_note(
                    e,
                    format!(
                        "the {written} workload(s) before it were written to standard output \
                         (an unfinished JSON array)"
                    ),
                )
            } else {
                e
            })
        }
    }
}

/// What the cluster enforces, by namespace, and its nodes (nothing offline): each namespace's
/// [`Admission`] is built once, the nodes in it.
#[derive(Default)]
pub(crate) struct Facts {
    namespaces: BTreeMap<String, Admission>,
    /// What holds in a namespace without facts of its own: the nodes alone.
    other: Admission,
}

impl Facts {
    /// No namespace's facts yet; the cluster's `nodes` (`None`: not known).
    pub(crate) fn new(nodes: Option<Vec<preview::NodeVersion>>) -> Facts {
        Facts {
            namespaces: BTreeMap::new(),
            other: Admission {
                nodes,
                ..Admission::default()
            },
        }
    }

    /// Record what `namespace` enforces (its nodes are the cluster's).
    pub(crate) fn insert(&mut self, namespace: String, mut admission: Admission) {
        admission.nodes.clone_from(&self.other.nodes);
        self.namespaces.insert(namespace, admission);
    }

    /// What the pods of `namespace` meet.
    pub(crate) fn admission(&self, namespace: &str) -> &Admission {
        self.namespaces.get(namespace).unwrap_or(&self.other)
    }
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

/// Preview one pod template of `workload` ([`preview::evaluate`]), its row naming where it is
/// (`document`: index and `items[i]` with -f).
pub(crate) fn evaluate(
    pod: &Value,
    workload: WorkloadMeta,
    configs: &Configs<'_>,
    wanted: (bool, bool),
    admission: &Admission,
    replicas: u64,
    document: Option<(usize, String)>,
) -> Row {
    let evaluation = preview::evaluate(pod, &workload, configs, wanted, admission, replicas);
    Row {
        namespace: workload.namespace,
        kind: workload.kind,
        name: workload.name,
        document,
        replicas,
        preview: evaluation.preview,
        findings: evaluation.findings,
    }
}
