//! Ordering of an install: the shipped MutatingWebhookConfiguration fails open
//! (`failurePolicy: Ignore`), so one `kubectl apply` of the manifests never blocks pod creation
//! while no replica can answer (image pull, certificate bootstrap, Istio's ConfigMaps missing).
//! A replica that has been ready for a while patches the configuration, by name, to the
//! failure policy wanted in operation (`--failure-policy-once-ready`), and makes it owned by the
//! replica's namespace (`--webhook-owned-by-namespace`) so that deleting the namespace lets the
//! garbage collector delete the configuration instead of leaving one that calls a deleted
//! Service. A later `kubectl apply` that resets the policy is corrected at the next check.
//!
//! While the owner namespace is terminating (the install is being deleted), or the replicas'
//! Deployment (`--fail-open-without-deployment`) is deleted, being deleted or scaled to zero,
//! the activation sets `Ignore` instead, and every replica does so when it is told to stop
//! ([`fail_open_if_uninstalling`]): no replica will answer, and pods must not be refused by a
//! configuration that calls a Service without endpoints. A rollout changes none of these, so it
//! writes nothing.
//!
//! Needs `get` and `patch` on the one webhook configuration, `get` on the one namespace and
//! `get` on the one Deployment (all grantable by resource name): no `create`, nothing
//! cluster-wide.
//!
//! Every read and every patch of the configuration (the patch's answer is the object as stored)
//! updates `outrigger_webhook_failure_policy{configuration,webhook,policy}` ([`POLICIES`]): 1 for
//! the policy each injector entry has in the cluster, 0 for the other, so that failing open
//! (`policy="Ignore"` at 1) is visible and alertable. Until the replica is ready the loop reads
//! the configuration every period too, so the gauge is there from start-up.

use std::collections::BTreeSet;
use std::sync::{LazyLock, Mutex};
use std::time::Duration;

use ::kube::api::{Api, Patch, PatchParams};
use ::kube::Client;
use anyhow::{anyhow, Result};
use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use serde_json::{json, Value};

use crate::webhook_object::ENTRY_SUFFIX;

/// Labels of `outrigger_webhook_failure_policy`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PolicyLabels {
    /// The MutatingWebhookConfiguration (`--webhook-config-name`).
    pub configuration: String,
    /// The entry's name (`*sidecar-injector.istio.io`).
    pub webhook: String,
    /// `Fail` or `Ignore`.
    pub policy: String,
}

/// `outrigger_webhook_failure_policy`: per injector entry of the configuration as last read or
/// patched, 1 for its `failurePolicy` and 0 for the other one (registered by the server's
/// metrics).
pub static POLICIES: LazyLock<Family<PolicyLabels, Gauge>> = LazyLock::new(Family::default);

/// Labels of `outrigger_webhook_failure_policy_desired`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DesiredLabels {
    /// The MutatingWebhookConfiguration (`--webhook-config-name`).
    pub configuration: String,
    /// `Fail` or `Ignore`.
    pub policy: String,
}

/// `outrigger_webhook_failure_policy_desired`: the policy this replica brings the injector's
/// entries to (1; 0 for the other): `--failure-policy-once-ready`, or `Ignore` while the
/// install is being deleted ([`Uninstalling`]). With [`POLICIES`], an alert tells failing open
/// by design from failing open by accident (registered by the server's metrics).
pub static DESIRED: LazyLock<Family<DesiredLabels, Gauge>> = LazyLock::new(Family::default);

/// Record `policy` as the one desired for configuration `configuration` in [`DESIRED`].
fn record_desired(configuration: &str, policy: &str) {
    for value in POLICY_VALUES {
        DESIRED
            .get_or_create(&DesiredLabels {
                configuration: configuration.to_string(),
                policy: value.to_string(),
            })
            .set(i64::from(policy == value));
    }
}

/// The `(configuration, entry)` pairs [`POLICIES`] has series for, to drop those of entries
/// that left the configuration.
static RECORDED: Mutex<BTreeSet<(String, String)>> = Mutex::new(BTreeSet::new());

/// The values of `failurePolicy` (admissionregistration/v1 `FailurePolicyType`).
const POLICY_VALUES: [&str; 2] = ["Fail", "Ignore"];

/// Record the failure policies of the injector's entries of `mwc` as the cluster has them in
/// [`POLICIES`]; entries no longer there lose their series. An absent policy is `Fail`, the
/// API server's default (Kubernetes `pkg/apis/admissionregistration/v1/defaults.go`,
/// `SetDefaults_MutatingWebhook`).
pub(crate) fn record_policies(mwc: &MutatingWebhookConfiguration) {
    let configuration = mwc.metadata.name.clone().unwrap_or_default();
    let entries: Vec<(String, &str)> = mwc
        .webhooks
        .iter()
        .flatten()
        .filter(|w| w.name.ends_with(ENTRY_SUFFIX))
        .map(|w| {
            (
                w.name.clone(),
                w.failure_policy.as_deref().unwrap_or("Fail"),
            )
        })
        .collect();
    let mut recorded = RECORDED.lock().unwrap_or_else(|e| e.into_inner());
    for (name, policy) in &entries {
        for value in POLICY_VALUES {
            POLICIES
                .get_or_create(&PolicyLabels {
                    configuration: configuration.clone(),
                    webhook: name.clone(),
                    policy: value.to_string(),
                })
                .set(i64::from(*policy == value));
        }
    }
    let now: BTreeSet<(String, String)> = entries
        .into_iter()
        .map(|(name, _)| (configuration.clone(), name))
        .collect();
    forget(&mut recorded, |key| {
        !now.contains(key) && key.0 == configuration
    });
    recorded.extend(now);
}

/// Drop the series of configuration `name` (deleted).
fn forget_configuration(name: &str) {
    let mut recorded = RECORDED.lock().unwrap_or_else(|e| e.into_inner());
    forget(&mut recorded, |key| key.0 == name);
}

/// Remove the series of the recorded pairs `gone` selects.
fn forget(recorded: &mut BTreeSet<(String, String)>, gone: impl Fn(&(String, String)) -> bool) {
    recorded.retain(|key| {
        if !gone(key) {
            return true;
        }
        for value in POLICY_VALUES {
            POLICIES.remove(&PolicyLabels {
                configuration: key.0.clone(),
                webhook: key.1.clone(),
                policy: value.to_string(),
            });
        }
        false
    });
}

/// Read configuration `name` and record its failure policies ([`record_policies`]); a
/// configuration that does not exist has none.
async fn observe(client: Client, name: &str) -> Result<()> {
    let api: Api<MutatingWebhookConfiguration> = Api::all(client);
    match api
        .get_opt(name)
        .await
        .map_err(|e| anyhow!("get mutatingwebhookconfigurations {name:?}: {e}"))?
    {
        Some(mwc) => record_policies(&mwc),
        None => forget_configuration(name),
    }
    Ok(())
}

/// What a ready replica makes true of its webhook configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Activation {
    /// The MutatingWebhookConfiguration (`--webhook-config-name`).
    pub webhook: String,
    /// The `failurePolicy` of its `*sidecar-injector.istio.io` entries once ready.
    pub failure_policy: Option<String>,
    /// The namespace that owns it (the replica's own).
    pub owner_namespace: Option<String>,
    /// The replicas' Deployment, `(namespace, name)`: while it is gone, being deleted or scaled
    /// to zero, the configuration fails open.
    pub deployment: Option<(String, String)>,
}

/// Why no replica will answer: the configuration must fail open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Uninstalling {
    /// The owner namespace is terminating.
    NamespaceTerminating,
    /// The Deployment does not exist.
    DeploymentDeleted,
    /// The Deployment has a deletion timestamp (foreground deletion).
    DeploymentDeleting,
    /// The Deployment asks for zero replicas.
    ScaledToZero,
}

impl Uninstalling {
    /// The log line's words.
    pub fn describe(self) -> &'static str {
        match self {
            Uninstalling::NamespaceTerminating => "namespace terminating",
            Uninstalling::DeploymentDeleted => "Deployment deleted",
            Uninstalling::DeploymentDeleting => "Deployment being deleted",
            Uninstalling::ScaledToZero => "Deployment scaled to zero",
        }
    }
}

/// Whether the Deployment `(namespace, name)` will run no replica. Errors name the verb and
/// the object.
async fn deployment_gone(
    client: Client,
    (ns, name): &(String, String),
) -> Result<Option<Uninstalling>> {
    let api: Api<Deployment> = Api::namespaced(client, ns);
    let object = api
        .get_opt(name)
        .await
        .map_err(|e| anyhow!("get deployments {ns}/{name}: {e}"))?;
    Ok(match object {
        None => Some(Uninstalling::DeploymentDeleted),
        Some(d) if d.metadata.deletion_timestamp.is_some() => {
            Some(Uninstalling::DeploymentDeleting)
        }
        // An absent replicas field means 1 (the API server's default).
        Some(d) if d.spec.as_ref().and_then(|s| s.replicas) == Some(0) => {
            Some(Uninstalling::ScaledToZero)
        }
        Some(_) => None,
    })
}

/// The owner reference to a namespace (`name`, `uid`).
fn owner_reference(name: &str, uid: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "name": name, "uid": uid})
}

/// The strategic-merge patch bringing `mwc` to `failure_policy` (on the injector's entries)
/// and to an owner reference to namespace `owner` (`(name, uid)`); `None` when it already is.
pub(crate) fn patch_for(
    mwc: &MutatingWebhookConfiguration,
    failure_policy: Option<&str>,
    owner: Option<(&str, &str)>,
) -> Option<Value> {
    let mut patch = serde_json::Map::new();
    if let Some(policy) = failure_policy {
        let entries: Vec<Value> = mwc
            .webhooks
            .iter()
            .flatten()
            .filter(|w| w.name.ends_with(ENTRY_SUFFIX))
            .filter(|w| w.failure_policy.as_deref() != Some(policy))
            .map(|w| json!({"name": w.name, "failurePolicy": policy}))
            .collect();
        if !entries.is_empty() {
            patch.insert("webhooks".into(), Value::Array(entries));
        }
    }
    if let Some((name, uid)) = owner {
        let owned = mwc
            .metadata
            .owner_references
            .iter()
            .flatten()
            .any(|o| o.uid == uid);
        if !owned {
            patch.insert(
                "metadata".into(),
                json!({"ownerReferences": [owner_reference(name, uid)]}),
            );
        }
    }
    (!patch.is_empty()).then_some(Value::Object(patch))
}

/// Read the configuration (and the owner namespace) and patch what differs. Returns whether a
/// patch was sent. Errors name the verb, the resource and the object.
pub(crate) async fn ensure(client: Client, a: &Activation) -> Result<bool> {
    let api: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let named = |verb: &str, resource: &str, name: &str| {
        let what = format!("{verb} {resource} {name:?}");
        move |e: ::kube::Error| anyhow!("{what}: {e}")
    };
    let mwc = api
        .get_opt(&a.webhook)
        .await
        .map_err(named("get", "mutatingwebhookconfigurations", &a.webhook))?
        .ok_or_else(|| {
            anyhow!(
                "MutatingWebhookConfiguration {:?} not found: generate it with `outrigger webhook-config --name {}` or pass --webhook-config-name",
                a.webhook, a.webhook
            )
        })?;
    record_policies(&mwc);
    let mut terminating = false;
    let owner = match &a.owner_namespace {
        Some(ns) => {
            let namespaces: Api<Namespace> = Api::all(client.clone());
            let object = namespaces
                .get(ns)
                .await
                .map_err(named("get", "namespaces", ns))?;
            terminating = object.metadata.deletion_timestamp.is_some();
            let uid = object
                .metadata
                .uid
                .ok_or_else(|| anyhow!("namespace {ns:?} has no uid"))?;
            Some((ns.clone(), uid))
        }
        None => None,
    };
    let owner_ref = owner.as_ref().map(|(n, u)| (n.as_str(), u.as_str()));
    let gone = match (&a.deployment, terminating) {
        (Some(d), false) => deployment_gone(client.clone(), d).await?.is_some(),
        _ => false,
    };
    // No replica will answer: fail open (see [`fail_open_if_uninstalling`]).
    let policy = match terminating || gone {
        true => Some(FAIL_OPEN),
        false => a.failure_policy.as_deref(),
    };
    if let Some(p) = policy {
        record_desired(&a.webhook, p);
    }
    let Some(patch) = patch_for(&mwc, policy, owner_ref) else {
        return Ok(false);
    };
    let patched = api
        .patch(
            &a.webhook,
            &PatchParams::default(),
            &Patch::Strategic(&patch),
        )
        .await
        .map_err(named("patch", "mutatingwebhookconfigurations", &a.webhook))?;
    record_policies(&patched);
    tracing::info!(webhook = %a.webhook, patch = %patch, "webhook configuration activated by a ready replica");
    Ok(true)
}

/// The failure policy of the shipped configuration, restored while the install is deleted.
const FAIL_OPEN: &str = "Ignore";

/// At shutdown: when no replica will answer any more ([`Uninstalling`]: the owner namespace
/// terminating, the Deployment deleted, being deleted or scaled to zero), set the injector's
/// entries back to `failurePolicy: Ignore`, so that pods in selected namespaces are created
/// (uninjected) while the replicas stop and afterwards, instead of being refused by a
/// configuration that calls a Service without endpoints. Nothing is written otherwise (a
/// rollout keeps the policy in force). Returns why a patch was sent.
pub async fn fail_open_if_uninstalling(
    client: Client,
    a: &Activation,
) -> Result<Option<Uninstalling>> {
    let mut why = None;
    if let Some(ns) = &a.owner_namespace {
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let object = namespaces
            .get(ns)
            .await
            .map_err(|e| anyhow!("get namespaces {ns:?}: {e}"))?;
        if object.metadata.deletion_timestamp.is_some() {
            why = Some(Uninstalling::NamespaceTerminating);
        }
    }
    if let (None, Some(d)) = (why, &a.deployment) {
        why = deployment_gone(client.clone(), d).await?;
    }
    let Some(why) = why else {
        return Ok(None);
    };
    record_desired(&a.webhook, FAIL_OPEN);
    let api: Api<MutatingWebhookConfiguration> = Api::all(client);
    let Some(mwc) = api
        .get_opt(&a.webhook)
        .await
        .map_err(|e| anyhow!("get mutatingwebhookconfigurations {:?}: {e}", a.webhook))?
    else {
        forget_configuration(&a.webhook);
        return Ok(None);
    };
    record_policies(&mwc);
    let Some(patch) = patch_for(&mwc, Some(FAIL_OPEN), None) else {
        return Ok(None);
    };
    let patched = api
        .patch(
            &a.webhook,
            &PatchParams::default(),
            &Patch::Strategic(&patch),
        )
        .await
        .map_err(|e| anyhow!("patch mutatingwebhookconfigurations {:?}: {e}", a.webhook))?;
    record_policies(&patched);
    tracing::warn!(webhook = %a.webhook, reason = why.describe(), "{}: webhook configuration set to fail open", why.describe());
    Ok(Some(why))
}

/// The longest wait between two attempts of a failing activation.
const MAX_RETRY: Duration = Duration::from_secs(30);

/// Forever: once `ready()` has held for `settle` (the kubelet's readiness probe has then put
/// this replica behind the Service), [`ensure`] the activation; check again every `period`
/// (a `kubectl apply` of the manifests resets the shipped fail-open policy). A failure (a
/// missing permission: the error names the verb and the resource) is logged once, and again
/// only when its cause changes, and retried with backoff (doubling up to 30 s, or `period` when
/// shorter), not on every readiness step. Until then the configuration is read every `period`,
/// from the start, for the failure-policy gauge ([`POLICIES`]).
pub async fn run<F>(client: Client, a: Activation, ready: F, settle: Duration, period: Duration)
where
    F: Fn() -> bool + Send + 'static,
{
    let step = Duration::from_millis(200).min(settle.max(Duration::from_millis(1)));
    let max_retry = MAX_RETRY.min(period).max(step);
    let mut ready_since: Option<tokio::time::Instant> = None;
    let mut observed: Option<tokio::time::Instant> = None;
    if let Some(p) = &a.failure_policy {
        record_desired(&a.webhook, p);
    }
    let mut failing: Option<String> = None;
    let mut retry = step;
    loop {
        let now = tokio::time::Instant::now();
        if observed.is_none_or(|t| now.duration_since(t) >= period) {
            observed = Some(now);
            if let Err(e) = observe(client.clone(), &a.webhook).await {
                tracing::warn!("reading the webhook configuration's failure policies: {e:#}");
            }
        }
        if ready() {
            let since = *ready_since.get_or_insert(now);
            if now.duration_since(since) >= settle {
                match ensure(client.clone(), &a).await {
                    Ok(_) => {
                        if failing.take().is_some() {
                            tracing::info!(webhook = %a.webhook, "activating the webhook configuration succeeded");
                        }
                        retry = step;
                        tokio::time::sleep(period).await;
                        observed = Some(tokio::time::Instant::now());
                        continue;
                    }
                    Err(e) => {
                        let cause = format!("{e:#}");
                        if failing.as_deref() != Some(cause.as_str()) {
                            tracing::error!(
                                "activating the webhook configuration: {cause} (retried with \
                                 backoff up to {}s; logged again when the cause changes)",
                                max_retry.as_secs_f64()
                            );
                            failing = Some(cause);
                        }
                        tokio::time::sleep(retry).await;
                        retry = (retry * 2).min(max_retry);
                        continue;
                    }
                }
            }
        } else {
            ready_since = None;
        }
        tokio::time::sleep(step).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock;
    use http::Method;

    fn mwc(policies: &[(&str, &str)], owners: Value) -> Value {
        let webhooks: Vec<Value> = policies
            .iter()
            .map(|(name, p)| {
                json!({"name": name, "failurePolicy": p, "sideEffects": "None",
                    "admissionReviewVersions": ["v1"], "clientConfig": {}})
            })
            .collect();
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "outrigger-sidecar-injector", "ownerReferences": owners},
            "webhooks": webhooks})
    }

    #[test]
    fn the_patch_sets_only_what_differs_on_the_injectors_entries() {
        let m: MutatingWebhookConfiguration = serde_json::from_value(mwc(
            &[
                ("namespace.sidecar-injector.istio.io", "Ignore"),
                ("object.sidecar-injector.istio.io", "Fail"),
                ("other.example.com", "Ignore"),
            ],
            json!([]),
        ))
        .expect("mwc");
        let p = patch_for(&m, Some("Fail"), Some(("outrigger", "u-1"))).expect("patch");
        assert_eq!(
            p,
            json!({"webhooks": [{"name": "namespace.sidecar-injector.istio.io", "failurePolicy": "Fail"}],
                "metadata": {"ownerReferences": [{"apiVersion": "v1", "kind": "Namespace", "name": "outrigger", "uid": "u-1"}]}})
        );
        let done: MutatingWebhookConfiguration = serde_json::from_value(mwc(
            &[("namespace.sidecar-injector.istio.io", "Fail")],
            json!([{"apiVersion": "v1", "kind": "Namespace", "name": "outrigger", "uid": "u-1"}]),
        ))
        .expect("mwc");
        assert_eq!(
            patch_for(&done, Some("Fail"), Some(("outrigger", "u-1"))),
            None
        );
        assert_eq!(patch_for(&m, None, None), None, "nothing asked");
    }

    /// The gauge's series of configuration `cfg`, as `(entry, policy, value)`.
    fn gauge(cfg: &str) -> Vec<(String, String, i64)> {
        let mut text = String::new();
        let mut registry = prometheus_client::registry::Registry::default();
        registry.register("p", "p", POLICIES.clone());
        prometheus_client::encoding::text::encode(&mut text, &registry).expect("encode");
        let mut out: Vec<(String, String, i64)> = text
            .lines()
            .filter_map(|l| l.strip_prefix("p{"))
            .filter(|l| l.starts_with(&format!("configuration=\"{cfg}\",")))
            .map(|l| {
                let field = |k: &str| {
                    l.split(&format!("{k}=\""))
                        .nth(1)
                        .and_then(|r| r.split('"').next())
                        .unwrap_or("")
                        .to_string()
                };
                let value = l
                    .rsplit(' ')
                    .next()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(-1);
                (field("webhook"), field("policy"), value)
            })
            .collect();
        out.sort();
        out
    }

    #[test]
    fn the_gauge_follows_the_entries_and_their_policies() {
        let mut m: MutatingWebhookConfiguration = serde_json::from_value(mwc(
            &[
                ("namespace.sidecar-injector.istio.io", "Ignore"),
                ("object.sidecar-injector.istio.io", "Fail"),
                ("other.example.com", "Ignore"),
            ],
            json!([]),
        ))
        .expect("mwc");
        m.metadata.name = Some("gauge-test".into());
        record_policies(&m);
        let row = |w: &str, p: &str, v| (w.to_string(), p.to_string(), v);
        assert_eq!(
            gauge("gauge-test"),
            [
                row("namespace.sidecar-injector.istio.io", "Fail", 0),
                row("namespace.sidecar-injector.istio.io", "Ignore", 1),
                row("object.sidecar-injector.istio.io", "Fail", 1),
                row("object.sidecar-injector.istio.io", "Ignore", 0),
            ]
        );
        // The object entry leaves, the namespace entry's policy is absent (the API server's
        // default, Fail).
        let webhooks = m.webhooks.as_mut().expect("entries");
        webhooks.retain(|w| w.name != "object.sidecar-injector.istio.io");
        webhooks[0].failure_policy = None;
        record_policies(&m);
        assert_eq!(
            gauge("gauge-test"),
            [
                row("namespace.sidecar-injector.istio.io", "Fail", 1),
                row("namespace.sidecar-injector.istio.io", "Ignore", 0),
            ]
        );
        forget_configuration("gauge-test");
        assert_eq!(gauge("gauge-test"), []);
    }

    #[tokio::test]
    async fn ensure_reads_the_namespace_uid_and_patches_by_name() {
        let (client, mut handle) = mock::client();
        let a = Activation {
            webhook: "outrigger-sidecar-injector".into(),
            failure_policy: Some("Fail".into()),
            owner_namespace: Some("outrigger".into()),
            deployment: None,
        };
        let task = tokio::spawn(async move { ensure(client, &a).await });
        let r = mock::next(&mut handle).await;
        r.assert(
            Method::GET,
            "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/outrigger-sidecar-injector",
        );
        r.respond(
            200,
            mwc(
                &[("rev.namespace.sidecar-injector.istio.io", "Ignore")],
                json!([]),
            ),
        );
        let r = mock::next(&mut handle).await;
        r.assert(Method::GET, "/api/v1/namespaces/outrigger");
        r.respond(
            200,
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "outrigger", "uid": "ns-uid"}}),
        );
        let r = mock::next(&mut handle).await;
        r.assert(
            Method::PATCH,
            "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/outrigger-sidecar-injector",
        );
        assert_eq!(
            r.content_type.as_deref(),
            Some("application/strategic-merge-patch+json")
        );
        assert_eq!(r.body["webhooks"][0]["failurePolicy"], "Fail");
        assert_eq!(r.body["metadata"]["ownerReferences"][0]["uid"], "ns-uid");
        r.respond(200, mwc(&[], json!([])));
        assert!(task.await.expect("join").expect("patched"));
    }

    #[tokio::test]
    async fn a_forbidden_patch_names_the_verb_and_object() {
        let (client, mut handle) = mock::client();
        let a = Activation {
            webhook: "outrigger-sidecar-injector".into(),
            failure_policy: Some("Fail".into()),
            owner_namespace: None,
            deployment: None,
        };
        let task = tokio::spawn(async move { ensure(client, &a).await });
        mock::next(&mut handle).await.respond(
            200,
            mwc(&[("a.sidecar-injector.istio.io", "Ignore")], json!([])),
        );
        mock::next(&mut handle).await.respond(
            403,
            json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 403,
                "reason": "Forbidden", "message": "cannot patch"}),
        );
        let e = task.await.expect("join").expect_err("forbidden");
        assert!(
            e.to_string()
                .starts_with("patch mutatingwebhookconfigurations \"outrigger-sidecar-injector\""),
            "{e}"
        );
    }

    #[tokio::test]
    async fn a_terminating_namespace_fails_open_and_a_live_one_is_left_alone() {
        let terminating = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": "outrigger", "uid": "ns-uid", "deletionTimestamp": "2026-01-01T00:00:00Z"}});
        let a = Activation {
            webhook: "outrigger-sidecar-injector".into(),
            failure_policy: Some("Fail".into()),
            owner_namespace: Some("outrigger".into()),
            deployment: None,
        };
        // The periodic activation sets Ignore, not Fail, while the namespace terminates.
        let (client, mut handle) = mock::client();
        let task = tokio::spawn({
            let a = a.clone();
            async move { ensure(client, &a).await }
        });
        let owned = json!([{"apiVersion": "v1", "kind": "Namespace", "name": "outrigger", "uid": "ns-uid"}]);
        mock::next(&mut handle).await.respond(
            200,
            mwc(
                &[("namespace.sidecar-injector.istio.io", "Fail")],
                owned.clone(),
            ),
        );
        mock::next(&mut handle)
            .await
            .respond(200, terminating.clone());
        let r = mock::next(&mut handle).await;
        r.assert(
            Method::PATCH,
            "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/outrigger-sidecar-injector",
        );
        assert_eq!(
            r.body,
            json!({"webhooks": [{"name": "namespace.sidecar-injector.istio.io", "failurePolicy": "Ignore"}]})
        );
        r.respond(200, mwc(&[], json!([])));
        assert!(task.await.expect("join").expect("patched"));

        // At shutdown: the same patch when terminating.
        let (client, mut handle) = mock::client();
        let task = tokio::spawn({
            let a = a.clone();
            async move { fail_open_if_uninstalling(client, &a).await }
        });
        let r = mock::next(&mut handle).await;
        r.assert(Method::GET, "/api/v1/namespaces/outrigger");
        r.respond(200, terminating);
        mock::next(&mut handle).await.respond(
            200,
            mwc(&[("namespace.sidecar-injector.istio.io", "Fail")], owned),
        );
        let r = mock::next(&mut handle).await;
        assert_eq!(r.body["webhooks"][0]["failurePolicy"], "Ignore");
        r.respond(200, mwc(&[], json!([])));
        assert_eq!(
            task.await.expect("join").expect("patched"),
            Some(Uninstalling::NamespaceTerminating)
        );

        // A rollout (namespace alive): one read, nothing written.
        let (client, mut handle) = mock::client();
        let task = tokio::spawn(async move { fail_open_if_uninstalling(client, &a).await });
        mock::next(&mut handle).await.respond(
            200,
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "outrigger", "uid": "ns-uid"}}),
        );
        assert_eq!(task.await.expect("join").expect("read"), None);
    }

    fn deployment(replicas: Option<i32>, deleting: bool) -> Value {
        let mut d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "outrigger", "namespace": "outrigger"},
            "spec": {"selector": {"matchLabels": {"app": "outrigger"}},
                     "template": {"metadata": {"labels": {"app": "outrigger"}},
                                  "spec": {"containers": [{"name": "outrigger"}]}}}});
        if let Some(r) = replicas {
            d["spec"]["replicas"] = json!(r);
        }
        if deleting {
            d["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        }
        d
    }

    /// Activation to Fail, failing open without Deployment `outrigger/outrigger`.
    fn without_deployment_fails_open() -> Activation {
        Activation {
            webhook: "outrigger-sidecar-injector".into(),
            failure_policy: Some("Fail".into()),
            owner_namespace: None,
            deployment: Some(("outrigger".into(), "outrigger".into())),
        }
    }

    /// The next request reads Deployment `outrigger/outrigger`; answer it with `code`, `body`.
    async fn answer_deployment(handle: &mut mock::Handle, code: u16, body: Value) {
        let r = mock::next(handle).await;
        r.assert(
            Method::GET,
            "/apis/apps/v1/namespaces/outrigger/deployments/outrigger",
        );
        r.respond(code, body);
    }

    /// At shutdown, the Deployment decides: deleted, being deleted or scaled to zero fails
    /// open; one that still asks for replicas (a rollout, an absent replicas field meaning 1)
    /// writes nothing.
    #[tokio::test]
    async fn a_deployment_that_runs_no_replica_fails_open_at_shutdown() {
        let a = without_deployment_fails_open();
        let not_found = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
            "code": 404, "reason": "NotFound", "message": "deployments.apps \"outrigger\" not found"});
        let cases = [
            ((404, not_found), Some(Uninstalling::DeploymentDeleted)),
            (
                (200, deployment(Some(2), true)),
                Some(Uninstalling::DeploymentDeleting),
            ),
            (
                (200, deployment(Some(0), false)),
                Some(Uninstalling::ScaledToZero),
            ),
            ((200, deployment(Some(2), false)), None),
            ((200, deployment(None, false)), None),
        ];
        for ((code, answer), want) in cases {
            let (client, mut handle) = mock::client();
            let task = tokio::spawn({
                let a = a.clone();
                async move { fail_open_if_uninstalling(client, &a).await }
            });
            answer_deployment(&mut handle, code, answer).await;
            if want.is_some() {
                mock::next(&mut handle).await.respond(
                    200,
                    mwc(
                        &[("namespace.sidecar-injector.istio.io", "Fail")],
                        json!([]),
                    ),
                );
                let r = mock::next(&mut handle).await;
                r.assert(
                    Method::PATCH,
                    "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/outrigger-sidecar-injector",
                );
                assert_eq!(
                    r.body,
                    json!({"webhooks": [{"name": "namespace.sidecar-injector.istio.io", "failurePolicy": "Ignore"}]})
                );
                r.respond(200, mwc(&[], json!([])));
            }
            assert_eq!(task.await.expect("join").expect("answered"), want, "{code}");
        }
    }

    /// The periodic activation keeps the policy at Ignore while the Deployment is scaled to
    /// zero (a replica still draining must not set Fail again).
    #[tokio::test]
    async fn the_activation_sets_ignore_while_the_deployment_is_scaled_to_zero() {
        // A name of its own: the desired-policy gauge is shared by the tests running alongside.
        let a = Activation {
            webhook: "scaled-to-zero".into(),
            ..without_deployment_fails_open()
        };
        let (client, mut handle) = mock::client();
        let task = tokio::spawn(async move { ensure(client, &a).await });
        mock::next(&mut handle).await.respond(
            200,
            mwc(
                &[("namespace.sidecar-injector.istio.io", "Fail")],
                json!([]),
            ),
        );
        answer_deployment(&mut handle, 200, deployment(Some(0), false)).await;
        let r = mock::next(&mut handle).await;
        assert_eq!(r.body["webhooks"][0]["failurePolicy"], "Ignore");
        r.respond(200, mwc(&[], json!([])));
        assert!(task.await.expect("join").expect("patched"));
        let desired = |p: &str| {
            DESIRED
                .get_or_create(&DesiredLabels {
                    configuration: "scaled-to-zero".into(),
                    policy: p.into(),
                })
                .get()
        };
        assert_eq!(
            (desired("Ignore"), desired("Fail")),
            (1, 0),
            "desired: Ignore"
        );
    }
}
