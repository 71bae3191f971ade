//! `outrigger preview --kube`: the cluster's workloads (their pod templates: Deployments,
//! StatefulSets, DaemonSets, ReplicaSets and Jobs no controller owns, CronJobs, bare pods),
//! read page by page, and what the cluster enforces on their pods (the namespaces' Pod
//! Security labels, LimitRanges, ResourceQuotas, the nodes' kubelet versions).

use std::collections::{BTreeMap, BTreeSet};

use ::kube::api::ListParams;
use ::kube::{Api, Client};
use anyhow::{Context, Result};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{LimitRange, Node, ResourceQuota};
use outrigger_inject::decide::inject_required;
use outrigger_inject::drift::selecting_revision;
use outrigger_inject::kube_inject::{self, KubeInjectOptions};
use outrigger_inject::preview::pod_security::{Level, AUDIT_LABEL, ENFORCE_LABEL, WARN_LABEL};
use outrigger_inject::preview::{Admission, NodeVersion, Outcome};
use serde_json::{Map, Value};

use super::{evaluate, replicas, Configs, Facts, Row};
use crate::cli::preview::PreviewArgs;
use crate::kube::client::{self, api_error};
use crate::kube::{objects, pods};

/// Connect as the flags say; the namespace the context names.
async fn connect(args: &PreviewArgs) -> Result<client::Connected> {
    let c = &args.cluster.target;
    client::connect(c.kubeconfig.as_deref(), c.context.as_deref()).await
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")
}

/// What the cluster enforces in `namespaces` (the empty name is the context's namespace), for
/// `preview -f --kube`.
pub(crate) fn admission_for(args: &PreviewArgs, namespaces: &BTreeSet<String>) -> Result<Facts> {
    runtime()?.block_on(async {
        let cluster = connect(args).await?;
        let client = cluster.client.clone();
        let mut facts = Facts {
            nodes: nodes(client.clone()).await,
            ..Facts::default()
        };
        for ns in namespaces {
            let name = if ns.is_empty() {
                client.default_namespace().to_string()
            } else {
                ns.clone()
            };
            let labels = pods::namespace_labels(client.clone(), Some(&name))
                .await
                .map_err(|e| cluster.explain(e))?;
            let mut one =
                namespace_facts(client.clone(), Some(&name), &labels, args.scope.chunk_size)
                    .await
                    .map_err(|e| cluster.explain(e))?;
            if let Some(a) = one.remove(&name) {
                facts.namespaces.insert(ns.clone(), a);
            }
        }
        anyhow::Ok(facts)
    })
}

/// The Pod Security level, LimitRanges and ResourceQuotas of `namespace` (of every namespace
/// when `None`), by namespace, from the namespaces' `labels`.
async fn namespace_facts(
    client: Client,
    namespace: Option<&str>,
    labels: &BTreeMap<String, Map<String, Value>>,
    chunk: u32,
) -> Result<BTreeMap<String, Admission>> {
    let mut out: BTreeMap<String, Admission> = BTreeMap::new();
    for (ns, l) in labels {
        let a = out.entry(ns.clone()).or_default();
        for (label, slot) in [
            (ENFORCE_LABEL, &mut a.pod_security),
            (WARN_LABEL, &mut a.pod_security_warn),
            (AUDIT_LABEL, &mut a.pod_security_audit),
        ] {
            let level = l.get(label).and_then(Value::as_str);
            *slot = level.and_then(Level::parse);
            if let Some(v) = level.filter(|v| Level::parse(v).is_none()) {
                eprintln!(
                    "warning: namespace {ns} has {label}={v}, not a Pod Security level \
                     (privileged, baseline, restricted); not checked"
                );
            }
        }
    }
    let ns_of = |o: &Value| {
        o.pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    for lr in objects::list::<LimitRange>(client.clone(), namespace, chunk).await? {
        out.entry(ns_of(&lr)).or_default().limit_ranges.push(lr);
    }
    for q in objects::list::<ResourceQuota>(client, namespace, chunk).await? {
        out.entry(ns_of(&q)).or_default().quotas.push(q);
    }
    Ok(out)
}

/// The nodes' kubelet versions; `None`, with a warning, when they cannot be listed (the
/// native-sidecar check is then skipped).
async fn nodes(client: Client) -> Option<Vec<NodeVersion>> {
    let api = Api::<Node>::all(client);
    let mut out = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut params = ListParams::default().limit(500);
        if let Some(t) = &token {
            params = params.continue_token(t);
        }
        match api.list(&params).await {
            Ok(page) => {
                out.extend(page.items.into_iter().map(|n| {
                    NodeVersion {
                        name: n.metadata.name.unwrap_or_default(),
                        kubelet_version: n
                            .status
                            .and_then(|s| s.node_info)
                            .map(|i| i.kubelet_version)
                            .unwrap_or_default(),
                    }
                }));
                match page.metadata.continue_ {
                    Some(t) if !t.is_empty() => token = Some(t),
                    _ => return Some(out),
                }
            }
            Err(e) => {
                eprintln!(
                    "warning: {}; native sidecars are not checked against the nodes' kubelets",
                    crate::report::chain(&api_error(e).context("listing nodes"))
                );
                return None;
            }
        }
    }
}

/// Whether `object` is run by a controller (a ReplicaSet of a Deployment, a Job of a CronJob,
/// a pod of anything): its owner is previewed instead.
fn controlled(object: &Value) -> bool {
    object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .is_some_and(|refs| {
            refs.iter()
                .any(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        })
}

/// What `preview --kube` counted besides its rows.
#[derive(Default)]
struct Counts {
    /// Workloads another revision's webhook selects.
    other_revision: usize,
    /// Workloads injected under neither configuration.
    not_injected: usize,
}

/// Preview every workload of the namespaces the flags name.
pub(crate) fn rows(args: &PreviewArgs, configs: &Configs<'_>) -> Result<Vec<Row>> {
    let (rows, counts) = runtime()?.block_on(async {
        let cluster = connect(args).await?;
        let client = cluster.client.clone();
        let namespace = args.scope.namespace_or(client.default_namespace());
        let ns = namespace.as_deref();
        let explain = |e| cluster.explain(e);
        let labels = pods::namespace_labels(client.clone(), ns)
            .await
            .map_err(explain)?;
        let facts = Facts {
            namespaces: namespace_facts(client.clone(), ns, &labels, args.scope.chunk_size)
                .await
                .map_err(explain)?,
            nodes: nodes(client.clone()).await,
        };
        super::native::report(configs, facts.nodes.as_deref());
        let mut rows = Vec::new();
        let mut counts = Counts::default();
        let chunk = args.scope.chunk_size;
        let mut each = |object: Value| -> Result<()> {
            if controlled(&object) {
                return Ok(());
            }
            examine(object, &labels, &facts, configs, &mut rows, &mut counts)
        };
        objects::for_each::<Deployment>(client.clone(), ns, chunk, &mut each)
            .await
            .map_err(explain)?;
        objects::for_each::<StatefulSet>(client.clone(), ns, chunk, &mut each)
            .await
            .map_err(explain)?;
        objects::for_each::<DaemonSet>(client.clone(), ns, chunk, &mut each)
            .await
            .map_err(explain)?;
        objects::for_each::<ReplicaSet>(client.clone(), ns, chunk, &mut each)
            .await
            .map_err(explain)?;
        objects::for_each::<CronJob>(client.clone(), ns, chunk, &mut each)
            .await
            .map_err(explain)?;
        objects::for_each::<Job>(client.clone(), ns, chunk, &mut each)
            .await
            .map_err(explain)?;
        pods::for_each(client.clone(), ns, chunk, |mut pod| {
            if pod.get("kind").is_none() {
                pod["kind"] = Value::String("Pod".into());
                pod["apiVersion"] = Value::String("v1".into());
            }
            each(pod)
        })
        .await
        .map_err(explain)?;
        anyhow::Ok((rows, counts))
    })?;
    if counts.other_revision > 0 {
        eprintln!(
            "{} workloads selected by another revision's webhook were not previewed (--revision \
             chooses)",
            counts.other_revision
        );
    }
    if counts.not_injected > 0 {
        eprintln!(
            "{} workloads get no sidecar under either configuration and are not listed",
            counts.not_injected
        );
    }
    Ok(rows)
}

/// Preview the pod template of one workload object.
fn examine(
    object: Value,
    labels: &BTreeMap<String, Map<String, Value>>,
    facts: &Facts,
    configs: &Configs<'_>,
    rows: &mut Vec<Row>,
    counts: &mut Counts,
) -> Result<()> {
    let count = replicas(&object);
    let kind = object
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let ns = object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let mut object = object;
    if let Some(m) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("managedFields");
    }
    if kind == "Pod" {
        if let Some(o) = object.as_object_mut() {
            o.remove("status");
        }
    }
    let templates = kube_inject::pod_templates(object)
        .with_context(|| format!("reading the pod template of {kind} {ns}/{name}"))?;
    for t in templates {
        let empty = Map::new();
        let selected = selecting_revision(labels.get(&ns).unwrap_or(&empty), &t.pod);
        let revision = revision_name(&configs.current);
        if selected.as_deref().is_some_and(|r| r != revision) {
            counts.other_revision += 1;
            continue;
        }
        let wanted = |o: &KubeInjectOptions<'_>| {
            let c = &o.snapshot.config;
            selected.is_some()
                && inject_required(
                    &t.pod,
                    &c.policy,
                    &c.never_inject_selector,
                    &c.always_inject_selector,
                )
                .inject
        };
        let w = (wanted(&configs.current), wanted(&configs.candidate));
        if w == (false, false) {
            counts.not_injected += 1;
            continue;
        }
        let admission = facts.admission(&ns);
        let row = evaluate(&t.pod, t.workload, configs, w, &admission, count, None);
        if matches!(
            (&row.preview.current, &row.preview.candidate),
            (Outcome::NotInjected(_), Outcome::NotInjected(_))
        ) {
            counts.not_injected += 1;
            continue;
        }
        rows.push(row);
    }
    Ok(())
}

/// The revision name of `opts` (`default` when none).
fn revision_name<'a>(opts: &KubeInjectOptions<'a>) -> &'a str {
    if opts.revision.is_empty() {
        "default"
    } else {
        opts.revision
    }
}
