//! `outrigger preview --kube`: the cluster's workloads (their pod templates: Deployments,
//! StatefulSets, DaemonSets, ReplicaSets and Jobs no controller owns, CronJobs, bare pods),
//! read page by page, and what the cluster enforces on their pods (the namespaces' Pod
//! Security labels, LimitRanges, ResourceQuotas, the nodes' kubelet versions).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

use ::kube::api::ListParams;
use ::kube::{Api, Client};
use anyhow::{Context, Result};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{LimitRange, Node, ResourceQuota};
use outrigger_inject::drift::{self, RevisionTags};
use outrigger_inject::kube_inject;
use outrigger_inject::preview::pod_security::{Level, AUDIT_LABEL, ENFORCE_LABEL, WARN_LABEL};
use outrigger_inject::preview::{self, Admission, Configs, NodeVersion, Outcome};
use serde_json::{Map, Value};

use super::report::{Rendered, Report};
use super::{evaluate, replicas, Facts};
use crate::kube::client::{self, api_error};
use crate::kube::{objects, pods};
use crate::preview::args::{PreviewArgs, PreviewOutput};

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

/// The cluster `preview -f --kube` checks the manifests' workloads against: connected, and its
/// nodes read, when the first namespace is asked for; each namespace's facts read once, when
/// the manifests first name it (the empty name is the context's namespace).
pub(crate) struct Enforced<'a> {
    args: &'a PreviewArgs,
    /// Whose auto native-sidecar mode the nodes decide (reported once the nodes are read).
    configs: &'a Configs<'a>,
    /// The runtime, the cluster and what is known of it, once connected.
    known: Option<(tokio::runtime::Runtime, client::Connected, Facts)>,
    /// The namespaces asked for so far.
    asked: BTreeSet<String>,
    /// What is known before anything is read: nothing.
    nothing: Facts,
}

impl<'a> Enforced<'a> {
    /// Not connected yet.
    pub(crate) fn new(args: &'a PreviewArgs, configs: &'a Configs<'a>) -> Self {
        Enforced {
            args,
            configs,
            known: None,
            asked: BTreeSet::new(),
            nothing: Facts::default(),
        }
    }

    /// Read what the cluster enforces in those of `namespaces` not read yet.
    pub(crate) fn learn<'n>(&mut self, namespaces: impl Iterator<Item = &'n str>) -> Result<()> {
        let new: BTreeSet<String> = namespaces
            .filter(|ns| !self.asked.contains(*ns))
            .map(str::to_string)
            .collect();
        if new.is_empty() {
            return Ok(());
        }
        if self.known.is_none() {
            let rt = runtime()?;
            let (cluster, nodes) = rt.block_on(async {
                let cluster = connect(self.args).await?;
                let nodes = nodes(cluster.client.clone()).await;
                anyhow::Ok((cluster, nodes))
            })?;
            super::native::report(self.configs, nodes.as_deref());
            self.known = Some((rt, cluster, Facts::new(nodes)));
        }
        let Some((rt, cluster, facts)) = &mut self.known else {
            return Ok(());
        };
        let chunk = self.args.scope.chunk_size;
        rt.block_on(async {
            let client = cluster.client.clone();
            for ns in &new {
                let name = if ns.is_empty() {
                    client.default_namespace().to_string()
                } else {
                    ns.clone()
                };
                let labels = pods::namespace_labels(client.clone(), Some(&name))
                    .await
                    .map_err(|e| cluster.explain(e))?;
                let mut one = namespace_facts(client.clone(), Some(&name), &labels, chunk)
                    .await
                    .map_err(|e| cluster.explain(e))?;
                if let Some(a) = one.remove(&name) {
                    facts.insert(ns.clone(), a);
                }
            }
            anyhow::Ok(())
        })?;
        self.asked.extend(new);
        Ok(())
    }

    /// What is known so far (nothing before the first namespace is asked for).
    pub(crate) fn facts(&self) -> &Facts {
        match &self.known {
            Some((_, _, facts)) => facts,
            None => &self.nothing,
        }
    }
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
                out.extend(page.items.into_iter().map(crate::kube::nodes::facts));
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

/// What became of one pod template.
enum Seen {
    /// Another revision's webhook selects it.
    OtherRevision,
    /// Neither configuration injects it.
    NotInjected,
    /// Previewed: its row.
    Row(Rendered),
}

/// Preview every workload of the namespaces the flags name, a page at a time: each page's
/// objects examined on all cores, their rows handed to `report` in the order listed before the
/// next page is read.
pub(crate) fn preview<W: Write>(
    args: &PreviewArgs,
    configs: &Configs<'_>,
    report: &mut Report<W>,
) -> Result<()> {
    // A page of workloads at a time, each page's memory taken again by the next.
    outrigger_alloc::tune_batch();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let output = report.output();
    let counts = runtime()?.block_on(async {
        let cluster = connect(args).await?;
        let client = cluster.client.clone();
        let namespace = args.scope.namespace_or(client.default_namespace());
        let ns = namespace.as_deref();
        let explain = |e| cluster.explain(e);
        let labels = pods::namespace_labels(client.clone(), ns)
            .await
            .map_err(explain)?;
        let mut facts = Facts::new(nodes(client.clone()).await);
        super::native::report(configs, facts.other.nodes.as_deref());
        let enforced = namespace_facts(client.clone(), ns, &labels, args.scope.chunk_size)
            .await
            .map_err(explain)?;
        for (name, admission) in enforced {
            facts.insert(name, admission);
        }
        // The revision tags given (--revision-tag), and the installed webhook's selector value
        // (--selector-revision, else outrigger's own) standing for the revision in force.
        let selector = args.decision.selector_revision.as_deref();
        let tags = RevisionTags(args.decision.revision_tags.iter().cloned().collect())
            .with_selector(selector, &args.revision);
        let mut counts = Counts::default();
        let mut read = 0usize;
        let chunk = args.scope.chunk_size;
        let mut each = |page: Vec<Value>| -> Result<()> {
            read += page.len();
            let page: Vec<Value> = page.into_iter().filter(|o| !controlled(o)).collect();
            let examined = drift::in_parallel(page, threads, |object| {
                examine(object, &labels, &tags, &facts, configs, output)
            });
            for seen in examined {
                for seen in seen? {
                    match seen {
                        Seen::OtherRevision => counts.other_revision += 1,
                        Seen::NotInjected => counts.not_injected += 1,
                        Seen::Row(r) => report.add(r)?,
                    }
                }
            }
            report.progress(&format!("{read} objects read"));
            Ok(())
        };
        objects::for_each_page::<Deployment>(client.clone(), ns, chunk, &mut each)
            .await
            .map_err(explain)?;
        objects::for_each_page::<StatefulSet>(client.clone(), ns, chunk, &mut each)
            .await
            .map_err(explain)?;
        objects::for_each_page::<DaemonSet>(client.clone(), ns, chunk, &mut each)
            .await
            .map_err(explain)?;
        objects::for_each_page::<ReplicaSet>(client.clone(), ns, chunk, &mut each)
            .await
            .map_err(explain)?;
        objects::for_each_page::<CronJob>(client.clone(), ns, chunk, &mut each)
            .await
            .map_err(explain)?;
        objects::for_each_page::<Job>(client.clone(), ns, chunk, &mut each)
            .await
            .map_err(explain)?;
        pods::for_each_page(client.clone(), ns, chunk, |mut page| {
            for pod in &mut page {
                if pod.get("kind").is_none() {
                    pod["kind"] = Value::String("Pod".into());
                    pod["apiVersion"] = Value::String("v1".into());
                }
            }
            each(page)
        })
        .await
        .map_err(explain)?;
        anyhow::Ok(counts)
    })?;
    report.end_progress();
    if counts.other_revision > 0 {
        eprintln!(
            "{} selected by another revision's webhook {} not previewed (--revision \
             chooses)",
            crate::print::count(counts.other_revision, "workload", "workloads"),
            if counts.other_revision == 1 {
                "was"
            } else {
                "were"
            }
        );
    }
    if counts.not_injected > 0 {
        eprintln!(
            "{} no sidecar under either configuration and {} not listed",
            crate::print::count(counts.not_injected, "workload gets", "workloads get"),
            if counts.not_injected == 1 {
                "is"
            } else {
                "are"
            }
        );
    }
    Ok(())
}

/// Preview the pod template of one workload object (on any thread).
fn examine(
    object: Value,
    labels: &BTreeMap<String, Map<String, Value>>,
    tags: &RevisionTags,
    facts: &Facts,
    configs: &Configs<'_>,
    output: PreviewOutput,
) -> Result<Vec<Seen>> {
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
    let mut out = Vec::new();
    for t in templates {
        let empty = Map::new();
        let ns_labels = labels.get(&ns).unwrap_or(&empty);
        let selected = tags.selecting(ns_labels, &t.pod);
        let Some(w) = preview::cluster_wanted(&t.pod, selected.as_deref(), configs) else {
            out.push(Seen::OtherRevision);
            continue;
        };
        if w == (false, false) {
            out.push(Seen::NotInjected);
            continue;
        }
        let admission = facts.admission(&ns);
        let row = evaluate(&t.pod, t.workload, configs, w, admission, count, None);
        if matches!(
            (&row.preview.current, &row.preview.candidate),
            (Outcome::NotInjected(_), Outcome::NotInjected(_))
        ) {
            out.push(Seen::NotInjected);
            continue;
        }
        out.push(Seen::Row(Rendered::of(&row, output)?));
    }
    Ok(out)
}
