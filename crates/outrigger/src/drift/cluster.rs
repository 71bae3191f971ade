//! `outrigger drift --kube` without `-f`: the cluster's pods, read page by page, classified as
//! the webhook would see them (the namespace's and pod's selecting labels, the injector's policy
//! and selectors) and compared as the API server stores them
//! ([`outrigger_inject::drift::stored_pod_drift`]); the outcome grouped by owning workload.

use std::collections::{BTreeMap, BTreeSet};
use std::io::IsTerminal;
use std::process::ExitCode;

use crate::print;
use anyhow::{Context, Result};
use outrigger_inject::decide::native::StaticFacts;
use outrigger_inject::drift::{self, Judgement, PodDrift, RevisionTags};
use outrigger_inject::kube_inject::KubeInjectOptions;
use serde_json::{json, Value};

use super::{columns, fields_json, fields_lines};
use crate::drift::args::{DriftArgs, DriftOutput};
use crate::kube::{client, drift_facts, pods};

/// Pods of one workload in one state with the same differing fields.
struct Group {
    pods: Vec<String>,
    drift: PodDrift,
}

/// (namespace, workload kind, workload name, state, differing fields as JSON): pods with the
/// same key are one row.
type Key = (String, String, String, &'static str, String);

/// What the pods came to.
#[derive(Default)]
struct Report {
    groups: BTreeMap<Key, Group>,
    /// Pods judged (those of this revision).
    examined: usize,
    /// Pods another revision's webhook selects: not this configuration's to judge.
    other_revision: usize,
}

/// Run `drift --kube` over the cluster's pods with the configuration `opts`; with `per_node`
/// (native-sidecar mode auto) the native-sidecar answer is asked of the cluster's nodes for
/// each pod, else `opts.settings.native_sidecars` holds for all.
pub fn run(args: &DriftArgs, opts: &KubeInjectOptions<'_>, per_node: bool) -> Result<ExitCode> {
    // A page of pods at a time, each page's memory taken again by the next.
    outrigger_alloc::tune_batch();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let progress = std::io::stderr().is_terminal();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (report, warnings, client) = rt.block_on(async {
        let c = &args.cluster;
        let cluster =
            client::connect(c.target.kubeconfig.as_deref(), c.target.context.as_deref()).await?;
        let client = cluster.client.clone();
        let namespace = args.scope.namespace_or(client.default_namespace());
        let labels = pods::namespace_labels(client.clone(), namespace.as_deref())
            .await
            .map_err(|e| cluster.explain(e))?;
        let mut warnings = BTreeSet::new();
        let mut tags = drift_facts::revision_tags(client.clone())
            .await
            .map_err(|e| cluster.explain(e))?
            .unwrap_or_else(|| {
                warnings.insert(
                    "listing mutatingwebhookconfigurations is forbidden: revision tags are not \
                     resolved (--revision-tag TAG=REVISION names them)"
                        .to_string(),
                );
                RevisionTags::default()
            });
        tags.0.extend(args.decision.revision_tags.iter().cloned());
        // Pods labelled for the installed webhook (istio.io/rev=outrigger, outrigger's shipped
        // one, or --selector-revision's value) are the revision in force's.
        let selector = args.decision.selector_revision.as_deref();
        let tags = tags.with_selector(selector, &args.revision);
        let nodes = match per_node {
            true => match drift_facts::nodes(client.clone()).await {
                Ok(nodes) => Some(StaticFacts {
                    nodes: Some(nodes),
                    namespaces: BTreeMap::new(),
                }),
                Err(e) => {
                    warnings.insert(format!(
                        "{}; native sidecars are judged off for every pod, as Istio's auto mode \
                         does without node facts (--native-sidecars true|false chooses)",
                        crate::report::chain(&cluster.explain(e))
                    ));
                    None
                }
            },
            false => None,
        };
        let facts = drift::Cluster {
            namespace_labels: labels,
            tags,
            nodes,
        };
        let mut report = Report::default();
        let mut pages = 0usize;
        pods::for_each_page(
            client,
            namespace.as_deref(),
            args.scope.chunk_size,
            |items| {
                for judged in drift::in_parallel(items, threads, |pod| {
                    drift::judge(pod, &facts, &opts.settings)
                }) {
                    let (judged, pod_warnings) = judged?;
                    warnings.extend(pod_warnings);
                    add(judged, &mut report);
                }
                pages += 1;
                if progress {
                    eprint!(
                        "\r{}, {} examined",
                        crate::print::count(pages, "page read", "pages read"),
                        crate::print::count(report.examined, "pod", "pods")
                    );
                }
                Ok(())
            },
        )
        .await
        .map_err(|e| cluster.explain(e))?;
        if progress && pages > 0 {
            eprintln!();
        }
        anyhow::Ok((report, warnings, cluster))
    })?;
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    let out = match args.output {
        DriftOutput::Table => table(&report),
        DriftOutput::Json => {
            let rows: Vec<Value> = report.groups.iter().map(group_json).collect();
            print::pretty_json(&Value::Array(rows))?
        }
    };
    print::stdout(&out)?;
    if args.restart.restart {
        let drifted = report
            .groups
            .iter()
            .filter(|(_, g)| g.drift.state.is_drift())
            .map(|((ns, kind, name, ..), g)| {
                (ns.as_str(), kind.as_str(), name.as_str(), g.pods.len())
            });
        let owners = super::restart::owners(drifted);
        // The plan follows the table; with -o json standard output stays JSON.
        let plan = super::restart::plan(&owners, &args.restart);
        match args.output {
            DriftOutput::Table => crate::print::stdout(&plan)?,
            DriftOutput::Json => eprint!("{plan}"),
        }
        if args.restart.dry_run == crate::drift::args::DryRun::Server {
            rt.block_on(super::restart::server_dry_run(
                client.client.clone(),
                &owners,
            ))
            .map_err(|e| client.explain(e))?;
        } else if super::restart::acts(&args.restart) {
            rt.block_on(super::restart::run(
                client.client.clone(),
                &owners,
                &args.restart,
            ))
            .map_err(|e| client.explain(e))?;
        }
    }
    Ok(
        if report.groups.values().any(|g| g.drift.state.is_drift()) {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        },
    )
}

/// What one pod came to: its workload and drift, or `None` when another revision's webhook
/// selects it ([`drift::judge`]).
type Judged = Option<Judgement>;

/// Add one judged pod to its group.
fn add(judged: Judged, report: &mut Report) {
    let Some(Judgement {
        namespace,
        name,
        workload,
        drift,
    }) = judged
    else {
        report.other_revision += 1;
        return;
    };
    report.examined += 1;
    let key = (
        namespace,
        workload.kind,
        workload.name,
        drift.state.as_str(),
        Value::Array(fields_json(&drift.fields)).to_string(),
    );
    report
        .groups
        .entry(key)
        .or_insert_with(|| Group {
            pods: Vec::new(),
            drift,
        })
        .pods
        .push(name);
}

/// The table: a row per workload and state, the differing fields indented below.
fn table(report: &Report) -> String {
    let mut out = columns(
        ["NAMESPACE", "WORKLOAD", "PODS", "STATE", "REVISION"],
        report.groups.iter().map(|((ns, kind, name, state, _), g)| {
            let cells = [
                ns.clone(),
                format!("{kind}/{name}"),
                g.pods.len().to_string(),
                state.to_string(),
                g.drift
                    .injected_revision
                    .clone()
                    .unwrap_or_else(|| "-".into()),
            ];
            (cells, fields_lines(&g.drift.fields))
        }),
    );
    let drifted: usize = report
        .groups
        .values()
        .filter(|g| g.drift.state.is_drift())
        .map(|g| g.pods.len())
        .sum();
    let workloads: std::collections::BTreeSet<_> = report
        .groups
        .keys()
        .map(|(ns, kind, name, ..)| (ns, kind, name))
        .collect();
    out.push_str(&format!(
        "{} of {}: {drifted} drifted, {} current or rightly not injected\n",
        crate::print::count(report.examined, "pod", "pods"),
        crate::print::count(workloads.len(), "workload", "workloads"),
        report.examined - drifted
    ));
    out.push_str(&super::other_webhook_line(
        report.other_revision,
        "pod",
        "pods",
    ));
    out
}

fn group_json(((ns, kind, name, state, _), g): (&Key, &Group)) -> Value {
    json!({
        "namespace": ns,
        "kind": kind,
        "name": name,
        "pods": g.pods,
        "state": state,
        "injectedRevision": g.drift.injected_revision,
        "expectedRevision": g.drift.expected_revision,
        "fields": fields_json(&g.drift.fields),
    })
}
