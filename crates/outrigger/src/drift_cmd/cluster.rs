//! `outrigger drift --kube` without `-f`: the cluster's pods, read page by page, classified as
//! the webhook would see them (the namespace's and pod's selecting labels, the injector's policy
//! and selectors) and compared as the API server stores them
//! ([`outrigger_inject::drift::stored_pod_drift`]); the outcome grouped by owning workload.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use anyhow::{Context, Result};
use outrigger_inject::decide::inject_required;
use outrigger_inject::drift::{selecting_revision, stored_pod_drift, PodDrift};
use outrigger_inject::ingest::workload::workload_from_pod;
use outrigger_inject::inject::{InjectParams, Mode};
use outrigger_inject::kube::pod::meta_str;
use outrigger_inject::kube_inject::KubeInjectOptions;
use serde_json::{json, Map, Value};

use super::{columns, fields_json, fields_lines};
use crate::cli::drift::{DriftArgs, DriftOutput};
use crate::kube::{client, pods};

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
    pods: usize,
    /// Pods another revision's webhook selects: not this configuration's to judge.
    other_revision: usize,
}

/// Run `drift --kube` over the cluster's pods with the configuration `opts`.
pub fn run(args: &DriftArgs, opts: &KubeInjectOptions<'_>) -> Result<ExitCode> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let progress = std::io::stderr().is_terminal();
    let (report, client) = rt.block_on(async {
        let c = &args.cluster;
        let cluster =
            client::connect(c.target.kubeconfig.as_deref(), c.target.context.as_deref()).await?;
        let client = cluster.client.clone();
        let namespace = if args.all_namespaces {
            None
        } else {
            Some(
                args.namespace
                    .clone()
                    .unwrap_or_else(|| client.default_namespace().to_string()),
            )
        };
        let labels = pods::namespace_labels(client.clone(), namespace.as_deref())
            .await
            .map_err(|e| cluster.explain(e))?;
        let mut report = Report::default();
        pods::for_each(client, namespace.as_deref(), args.chunk_size, |pod| {
            examine(&pod, &labels, opts, &mut report)?;
            if progress && report.pods % 1000 == 0 {
                eprint!("\r{} pods examined", report.pods);
            }
            Ok(())
        })
        .await
        .map_err(|e| cluster.explain(e))?;
        if progress && report.pods >= 1000 {
            eprintln!("\r{} pods examined", report.pods);
        }
        anyhow::Ok((report, cluster))
    })?;
    let out = match args.output {
        DriftOutput::Table => table(&report),
        DriftOutput::Json => {
            let rows: Vec<Value> = report.groups.iter().map(group_json).collect();
            serde_json::to_string_pretty(&Value::Array(rows))? + "\n"
        }
    };
    std::io::stdout()
        .lock()
        .write_all(out.as_bytes())
        .context("writing standard output")?;
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
        let plan = super::restart::plan(&owners, args.restart.yes);
        match args.output {
            DriftOutput::Table => print!("{plan}"),
            DriftOutput::Json => eprint!("{plan}"),
        }
        if args.restart.yes {
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

/// Classify one pod and add it to its group.
fn examine(
    pod: &Value,
    labels: &BTreeMap<String, Map<String, Value>>,
    opts: &KubeInjectOptions<'_>,
    report: &mut Report,
) -> Result<()> {
    let ns = meta_str(pod, "namespace");
    let name = meta_str(pod, "name");
    let empty = Map::new();
    let selected = selecting_revision(labels.get(ns).unwrap_or(&empty), pod);
    let revision = if opts.revision.is_empty() {
        "default"
    } else {
        opts.revision
    };
    if selected.as_deref().is_some_and(|r| r != revision) {
        report.other_revision += 1;
        return Ok(());
    }
    let config = &opts.snapshot.config;
    let wanted = selected.is_some()
        && inject_required(
            pod,
            &config.policy,
            &config.never_inject_selector,
            &config.always_inject_selector,
        )
        .inject;
    let workload = workload_from_pod(pod);
    let params = InjectParams {
        snapshot: opts.snapshot,
        mode: Mode::Webhook,
        workload: workload.clone(),
        revision: opts.revision,
        native_sidecars: opts.native_sidecars,
        proxy_envs: Default::default(),
        proxy_uid_gid: None,
        compliance_policy: opts.compliance_policy,
    };
    let drift =
        stored_pod_drift(pod, &params, wanted).with_context(|| format!("pod {ns}/{name}"))?;
    report.pods += 1;
    let key = (
        ns.to_string(),
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
        .push(name.to_string());
    Ok(())
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
        "{} pods of {} workloads: {drifted} drifted, {} current or rightly not injected\n",
        report.pods,
        workloads.len(),
        report.pods - drifted
    ));
    if report.other_revision > 0 {
        out.push_str(&format!(
            "{} pods selected by another revision's webhook were not examined (--revision \
             chooses)\n",
            report.other_revision
        ));
    }
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
