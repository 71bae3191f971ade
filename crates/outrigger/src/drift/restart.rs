//! `drift --kube --restart`: the drifted workloads re-rolled one at a time, as `kubectl rollout
//! restart` re-rolls one (a strategic merge patch of the pod template annotation
//! `kubectl.kubernetes.io/restartedAt`), each only once its PodDisruptionBudgets allow a
//! disruption (`status.disruptionsAllowed > 0`) and the workload before it has rolled out (as
//! `kubectl rollout status` judges). Without `--yes` only the plan is printed; `--dry-run` takes
//! kubectl's values (`client`: the plan; `server`: each patch sent with `dryRun=All`, which the
//! API server admits and validates without storing, and its answer reported). Bare pods,
//! Jobs, CronJobs and ReplicaSets no Deployment owns are never touched: a restart of theirs
//! would be a deletion.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use ::kube::api::{ApiResource, DynamicObject, Patch, PatchParams};
use ::kube::{Api, Client};
use anyhow::{anyhow, bail, Context, Result};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use serde_json::{json, Value};

use crate::drift::args::{DryRun, RestartArgs};
use crate::kube::client::api_error;
use crate::kube::objects;

/// The annotation `kubectl rollout restart` sets on the pod template.
pub const RESTARTED_AT: &str = "kubectl.kubernetes.io/restartedAt";

/// A workload whose pods drifted.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Owner {
    /// Its namespace.
    pub namespace: String,
    /// Its kind as drift names it (`Deployment`, `Pod`, `Job`, ...).
    pub kind: String,
    /// Its name.
    pub name: String,
    /// Its drifted pods.
    pub pods: usize,
}

/// The API resource of a kind `--restart` can re-roll.
fn resource(kind: &str) -> Option<ApiResource> {
    Some(match kind {
        "Deployment" => ApiResource::erase::<Deployment>(&()),
        "StatefulSet" => ApiResource::erase::<StatefulSet>(&()),
        "DaemonSet" => ApiResource::erase::<DaemonSet>(&()),
        _ => return None,
    })
}

/// Why a kind is not restarted.
fn why_not(kind: &str) -> &'static str {
    match kind {
        "Pod" => "a bare pod has no controller to re-create it; recreate it from its manifest",
        "Job" | "CronJob" => {
            "a Job's pods are not replaced; the next run (or a re-created Job) gets the new sidecar"
        }
        "ReplicaSet" => {
            "a ReplicaSet does not replace its pods when its template changes; roll it through \
             its Deployment or recreate the pods"
        }
        _ => "outrigger restarts Deployments, StatefulSets and DaemonSets only",
    }
}

/// Whether `args` restart for real: `--yes` and not a dry run.
pub fn acts(args: &RestartArgs) -> bool {
    args.yes && args.dry_run == DryRun::None
}

/// The plan: which owners are restarted, in order, and which are not, with why; it ends
/// saying that nothing was changed unless `args` act or send a server dry run.
pub fn plan(owners: &[Owner], args: &RestartArgs) -> String {
    let mut out = String::new();
    let (restart, skip): (Vec<&Owner>, Vec<&Owner>) =
        owners.iter().partition(|o| resource(&o.kind).is_some());
    out.push_str(&format!(
        "restart plan: {}, one at a time (PodDisruptionBudget, then rollout):\n",
        crate::print::count(restart.len(), "workload", "workloads")
    ));
    for (i, o) in restart.iter().enumerate() {
        out.push_str(&format!(
            "  {}. {} {}/{} ({})\n",
            i + 1,
            o.kind,
            o.namespace,
            o.name,
            crate::print::count(o.pods, "drifted pod", "drifted pods")
        ));
    }
    for o in &skip {
        out.push_str(&format!(
            "  not restarted: {} {}/{} ({}): {}\n",
            o.kind,
            o.namespace,
            o.name,
            crate::print::count(o.pods, "drifted pod", "drifted pods"),
            why_not(&o.kind)
        ));
    }
    if !restart.is_empty() {
        match args.dry_run {
            DryRun::None if !args.yes => {
                out.push_str("nothing was changed: pass --yes to restart them\n");
            }
            DryRun::Client => out.push_str("nothing was changed (client dry run)\n"),
            _ => {}
        }
    }
    out
}

/// `--dry-run=server`: each restartable owner's restart patch sent with `dryRun=All`, in the
/// plan's order, none waited for (nothing rolls out). A PodDisruptionBudget that allows no
/// disruption now is reported (a real run would wait for it). Every owner is tried; those the
/// API server refuses make the error, each with its refusal.
pub async fn server_dry_run(client: Client, owners: &[Owner]) -> Result<()> {
    let mut refused = Vec::new();
    for o in owners.iter().filter(|o| resource(&o.kind).is_some()) {
        let what = format!("{} {}/{}", o.kind, o.namespace, o.name);
        match dry_run_one(client.clone(), o).await {
            Ok(blocking) => {
                eprintln!("{what} restarted (server dry run)");
                if !blocking.is_empty() {
                    eprintln!(
                        "  PodDisruptionBudget {} allows no disruption now: a restart would wait \
                         for it",
                        blocking.join(", ")
                    );
                }
            }
            Err(e) => {
                eprintln!(
                    "{what} refused (server dry run): {}",
                    crate::report::chain(&e)
                );
                refused.push(what);
            }
        }
    }
    if refused.is_empty() {
        Ok(())
    } else {
        bail!(
            "the API server refused the restart of {} (server dry run; nothing was changed)",
            refused.join(", ")
        )
    }
}

/// One owner's server dry run: its blocking PodDisruptionBudgets now, then the patch with
/// `dryRun=All`.
async fn dry_run_one(client: Client, o: &Owner) -> Result<Vec<String>> {
    let ar = resource(&o.kind).ok_or_else(|| anyhow!("{} cannot be restarted", o.kind))?;
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &o.namespace, &ar);
    let object = api
        .get(&o.name)
        .await
        .map_err(|e| api_error(e).context(format!("reading {} {}", o.kind, o.name)))?;
    let object = serde_json::to_value(object).context("encoding the workload")?;
    let blocking = blocking_pdbs(client, o, &object).await?;
    let params = PatchParams {
        dry_run: true,
        ..PatchParams::default()
    };
    api.patch(&o.name, &params, &Patch::Strategic(&restart_patch()))
        .await
        .map_err(|e| api_error(e).context(format!("patching {} {}", o.kind, o.name)))?;
    Ok(blocking)
}

/// The names of `o`'s PodDisruptionBudgets (those selecting `object`'s pod template) that allow
/// no disruption now.
async fn blocking_pdbs(client: Client, o: &Owner, object: &Value) -> Result<Vec<String>> {
    let labels = object
        .pointer("/spec/template/metadata/labels")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let pdbs = objects::list::<PodDisruptionBudget>(client, Some(&o.namespace), 500).await?;
    Ok(pdbs
        .iter()
        .filter(|p| selects(p.pointer("/spec/selector"), &labels))
        .filter(|p| {
            p.pointer("/status/disruptionsAllowed")
                .and_then(Value::as_i64)
                .unwrap_or(0)
                <= 0
        })
        .map(|p| {
            p.pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        })
        .collect())
}

/// The patch `kubectl rollout restart` sends: the pod template annotated with the time.
fn restart_patch() -> Value {
    json!({"spec": {"template": {"metadata": {"annotations": {
        RESTARTED_AT: now_rfc3339()
    }}}}})
}

/// Restart the restartable `owners` one at a time.
pub async fn run(client: Client, owners: &[Owner], args: &RestartArgs) -> Result<()> {
    let todo: Vec<&Owner> = owners
        .iter()
        .filter(|o| resource(&o.kind).is_some())
        .collect();
    for (i, o) in todo.iter().enumerate() {
        let what = format!("{} {}/{}", o.kind, o.namespace, o.name);
        restart_one(client.clone(), o, args).await.map_err(|e| {
            let e = e.context(format!("restarting {what}"));
            let rest: Vec<String> = todo[i + 1..]
                .iter()
                .map(|o| format!("{} {}/{}", o.kind, o.namespace, o.name))
                .collect();
            if rest.is_empty() {
                e
            } else {
                crate::report::with_note(e, format!("not restarted: {}", rest.join(", ")))
            }
        })?;
        eprintln!("restarted {what} ({}/{})", i + 1, todo.len());
    }
    Ok(())
}

/// One owner: its PodDisruptionBudgets, the patch, its rollout.
async fn restart_one(client: Client, o: &Owner, args: &RestartArgs) -> Result<()> {
    let ar = resource(&o.kind).ok_or_else(|| anyhow!("{} cannot be restarted", o.kind))?;
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &o.namespace, &ar);
    let read = || async {
        let obj = api
            .get(&o.name)
            .await
            .map_err(|e| api_error(e).context(format!("reading {} {}", o.kind, o.name)))?;
        serde_json::to_value(obj).context("encoding the workload")
    };
    let object = read().await?;
    let deadline = Instant::now() + args.timeout;
    loop {
        let blocking = blocking_pdbs(client.clone(), o, &object).await?;
        if blocking.is_empty() {
            break;
        }
        if Instant::now() >= deadline {
            bail!(
                "PodDisruptionBudget {} allowed no disruption within {} (status.disruptionsAllowed \
                 is 0)",
                blocking.join(", "),
                shown(args.timeout)
            );
        }
        eprintln!(
            "waiting for PodDisruptionBudget {} of {} {}/{} to allow a disruption",
            blocking.join(", "),
            o.kind,
            o.namespace,
            o.name
        );
        tokio::time::sleep(args.poll_interval.min(remaining(deadline))).await;
    }
    api.patch(
        &o.name,
        &PatchParams::default(),
        &Patch::Strategic(&restart_patch()),
    )
    .await
    .map_err(|e| api_error(e).context(format!("patching {} {}", o.kind, o.name)))?;
    let deadline = Instant::now() + args.timeout;
    loop {
        let object = read().await?;
        let status = rollout_status(&o.kind, &object);
        let Err(waiting) = status else {
            return Ok(());
        };
        if Instant::now() >= deadline {
            bail!(
                "the rollout did not complete within {}: {waiting}",
                shown(args.timeout)
            );
        }
        tokio::time::sleep(args.poll_interval.min(remaining(deadline))).await;
    }
}

/// A duration as the flag takes it (`5m`, `90s`, `250ms`).
fn shown(d: Duration) -> String {
    let ms = d.as_millis();
    match ms {
        _ if ms.is_multiple_of(60_000) && ms > 0 => format!("{}m", ms / 60_000),
        _ if ms.is_multiple_of(1000) => format!("{}s", ms / 1000),
        _ => format!("{ms}ms"),
    }
}

fn remaining(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::now())
}

/// The current time as `kubectl rollout restart` writes it (RFC 3339, seconds, UTC).
fn now_rfc3339() -> String {
    let t = time::OffsetDateTime::now_utc();
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

/// Whether a PodDisruptionBudget's `spec.selector` selects pods labelled `labels` (policy/v1:
/// an empty selector selects every pod of the namespace, an absent one none).
pub fn selects(selector: Option<&Value>, labels: &Value) -> bool {
    let Some(selector) = selector.filter(|s| !s.is_null()) else {
        return false;
    };
    let label = |k: &str| labels.get(k).and_then(Value::as_str);
    let match_labels = selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .all(|(k, v)| label(k) == v.as_str());
    let expressions = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .all(|e| {
            let key = e.get("key").and_then(Value::as_str).unwrap_or("");
            let values: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            match e.get("operator").and_then(Value::as_str).unwrap_or("") {
                "In" => label(key).is_some_and(|v| values.contains(&v)),
                "NotIn" => label(key).is_none_or(|v| !values.contains(&v)),
                "Exists" => label(key).is_some(),
                "DoesNotExist" => label(key).is_none(),
                _ => false,
            }
        });
    match_labels && expressions
}

/// Whether the rollout of `object` (of `kind`) is complete, as `kubectl rollout status` judges:
/// `Ok(())` when it is, else what it waits for, in kubectl's words.
pub fn rollout_status(kind: &str, object: &Value) -> std::result::Result<(), String> {
    let int = |p: &str| object.pointer(p).and_then(Value::as_i64);
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let generation = int("/metadata/generation").unwrap_or(0);
    let observed = int("/status/observedGeneration").unwrap_or(0);
    let status = |p: &str| int(&format!("/status/{p}")).unwrap_or(0);
    match kind {
        "Deployment" => {
            if generation > observed {
                return Err("Waiting for deployment spec update to be observed...".into());
            }
            let want = int("/spec/replicas").unwrap_or(1);
            let updated = status("updatedReplicas");
            if updated < want {
                return Err(format!(
                    "Waiting for deployment {name:?} rollout to finish: {updated} out of {want} \
                     new replicas have been updated..."
                ));
            }
            let total = status("replicas");
            if total > updated {
                return Err(format!(
                    "Waiting for deployment {name:?} rollout to finish: {} old replicas are \
                     pending termination...",
                    total - updated
                ));
            }
            let available = status("availableReplicas");
            if available < updated {
                return Err(format!(
                    "Waiting for deployment {name:?} rollout to finish: {available} of \
                     {updated} updated replicas are available..."
                ));
            }
            Ok(())
        }
        "StatefulSet" => {
            if observed == 0 || generation > observed {
                return Err("Waiting for statefulset spec update to be observed...".into());
            }
            let want = int("/spec/replicas").unwrap_or(1);
            let ready = status("readyReplicas");
            if ready < want {
                return Err(format!("Waiting for {} pods to be ready...", want - ready));
            }
            if let Some(partition) = int("/spec/updateStrategy/rollingUpdate/partition") {
                let updated = status("updatedReplicas");
                if updated < want - partition {
                    return Err(format!(
                        "Waiting for partitioned roll out to finish: {updated} out of {} new \
                         pods have been updated...",
                        want - partition
                    ));
                }
                return Ok(());
            }
            let text = |p: &str| object.pointer(p).and_then(Value::as_str).unwrap_or("");
            if text("/status/updateRevision") != text("/status/currentRevision") {
                return Err(format!(
                    "waiting for statefulset rolling update to complete {} pods at revision \
                     {}...",
                    status("updatedReplicas"),
                    text("/status/updateRevision")
                ));
            }
            Ok(())
        }
        "DaemonSet" => {
            if generation > observed {
                return Err("Waiting for daemon set spec update to be observed...".into());
            }
            let desired = status("desiredNumberScheduled");
            let updated = status("updatedNumberScheduled");
            if updated < desired {
                return Err(format!(
                    "Waiting for daemon set {name:?} rollout to finish: {updated} out of \
                     {desired} new pods have been updated..."
                ));
            }
            let available = status("numberAvailable");
            if available < desired {
                return Err(format!(
                    "Waiting for daemon set {name:?} rollout to finish: {available} of \
                     {desired} updated pods are available..."
                ));
            }
            Ok(())
        }
        other => Err(format!("{other} has no rollout")),
    }
}

/// The owners of drifted pods, from the rows of `drift --kube` ((namespace, kind, name) and
/// drifted pod count), in the rows' order.
pub fn owners<'a>(rows: impl Iterator<Item = (&'a str, &'a str, &'a str, usize)>) -> Vec<Owner> {
    let mut by: BTreeMap<(String, String, String), usize> = BTreeMap::new();
    for (ns, kind, name, pods) in rows {
        *by.entry((ns.into(), kind.into(), name.into())).or_default() += pods;
    }
    by.into_iter()
        .map(|((namespace, kind, name), pods)| Owner {
            namespace,
            kind,
            name,
            pods,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_follow_label_selector_rules() {
        let labels = json!({"app": "web", "tier": "front"});
        assert!(selects(Some(&json!({})), &labels));
        assert!(!selects(None, &labels));
        assert!(selects(
            Some(&json!({"matchLabels": {"app": "web"}})),
            &labels
        ));
        assert!(!selects(
            Some(&json!({"matchLabels": {"app": "api"}})),
            &labels
        ));
        let expr = |op: &str, values: Value| json!({"matchExpressions": [{"key": "tier", "operator": op, "values": values}]});
        assert!(selects(Some(&expr("In", json!(["front", "x"]))), &labels));
        assert!(!selects(Some(&expr("NotIn", json!(["front"]))), &labels));
        assert!(selects(Some(&expr("Exists", json!([]))), &labels));
        assert!(!selects(Some(&expr("DoesNotExist", json!([]))), &labels));
    }

    #[test]
    fn rollout_status_follows_kubectl() {
        let d = |gen: i64, status: Value| {
            json!({"metadata": {"name": "web", "generation": gen},
                   "spec": {"replicas": 2}, "status": status})
        };
        let done = json!({"observedGeneration": 2, "replicas": 2, "updatedReplicas": 2,
                          "readyReplicas": 2, "availableReplicas": 2});
        assert_eq!(rollout_status("Deployment", &d(2, done.clone())), Ok(()));
        let err = rollout_status("Deployment", &d(3, done)).expect_err("unobserved");
        assert!(err.contains("spec update to be observed"), "{err}");
        let half = json!({"observedGeneration": 2, "replicas": 3, "updatedReplicas": 2,
                          "availableReplicas": 2});
        let err = rollout_status("Deployment", &d(2, half)).expect_err("old replicas");
        assert!(
            err.contains("1 old replicas are pending termination"),
            "{err}"
        );
        let sts = json!({"metadata": {"generation": 1}, "spec": {"replicas": 1},
                         "status": {"observedGeneration": 1, "readyReplicas": 1,
                                    "currentRevision": "a", "updateRevision": "b"}});
        assert!(rollout_status("StatefulSet", &sts).is_err());
        let ds = json!({"metadata": {"generation": 1},
                        "status": {"observedGeneration": 1, "desiredNumberScheduled": 3,
                                   "updatedNumberScheduled": 3, "numberAvailable": 3}});
        assert_eq!(rollout_status("DaemonSet", &ds), Ok(()));
    }

    #[test]
    fn the_plan_says_what_is_not_restarted_and_why() {
        let o = |kind: &str, name: &str| Owner {
            namespace: "shop".into(),
            kind: kind.into(),
            name: name.into(),
            pods: 1,
        };
        let args = |yes: bool, dry_run: DryRun| RestartArgs {
            restart: true,
            yes,
            dry_run,
            timeout: Duration::from_secs(1),
            poll_interval: Duration::from_secs(1),
        };
        let owners = [o("Deployment", "web"), o("Pod", "debug"), o("Job", "once")];
        let p = plan(&owners, &args(false, DryRun::None));
        assert!(p.contains("1. Deployment shop/web"), "{p}");
        assert!(p.contains("not restarted: Pod shop/debug"), "{p}");
        assert!(p.contains("not restarted: Job shop/once"), "{p}");
        assert!(p.contains("pass --yes"), "{p}");
        let client = plan(&owners, &args(true, DryRun::Client));
        assert!(
            client.ends_with("nothing was changed (client dry run)\n"),
            "{client}"
        );
        for acting in [args(true, DryRun::None), args(false, DryRun::Server)] {
            assert!(!plan(&owners, &acting).contains("nothing was changed"));
        }
        assert!(acts(&args(true, DryRun::None)));
        assert!(!acts(&args(true, DryRun::Server)) && !acts(&args(true, DryRun::Client)));
    }
}
