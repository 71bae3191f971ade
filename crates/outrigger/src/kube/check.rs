//! `outrigger check --kube`: the same explanation as offline, from live cluster facts: the
//! namespace's labels, a live pod (`--pod`) or the `-f` manifest (or a new unlabelled pod), the
//! injector ConfigMap (`--injectConfigMap`) and the live webhook configuration
//! (`--webhook-config`).

use ::kube::{Api, Client};
use anyhow::{bail, Context, Result};
use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use outrigger_inject::config::Snapshot;
use serde_json::{json, Map, Value};

use super::config_watch::{self, ConfigMapRef, RawConfig};
use crate::check_cmd::{self, CheckArgs, Report};
use crate::webhook_config;

/// Labels of the live namespace `name`.
pub async fn namespace_labels(client: Client, name: &str) -> Result<Map<String, Value>> {
    let ns = Api::<Namespace>::all(client)
        .get(name)
        .await
        .with_context(|| format!("reading namespace {name}"))?;
    Ok(ns
        .metadata
        .labels
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, Value::String(v)))
        .collect())
}

/// The live pod as a JSON tree (with apiVersion/kind, as a manifest would have them).
pub async fn pod(client: Client, namespace: &str, name: &str) -> Result<Value> {
    let pod = Api::<Pod>::namespaced(client, namespace)
        .get(name)
        .await
        .with_context(|| format!("reading pod {namespace}/{name}"))?;
    let mut v = serde_json::to_value(pod).context("encoding the pod")?;
    if let Some(o) = v.as_object_mut() {
        o.insert("apiVersion".into(), json!("v1"));
        o.insert("kind".into(), json!("Pod"));
    }
    Ok(v)
}

/// The webhook entries of a live MutatingWebhookConfiguration.
pub async fn webhook_entries(client: Client, name: &str) -> Result<Vec<Value>> {
    let mwc = Api::<MutatingWebhookConfiguration>::all(client)
        .get(name)
        .await
        .with_context(|| format!("reading MutatingWebhookConfiguration {name}"))?;
    let v = serde_json::to_value(mwc).context("encoding the webhook configuration")?;
    Ok(v.get("webhooks")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default())
}

/// The injector configuration documents of a live ConfigMap (with istiod's error texts).
pub async fn raw_config(client: Client, r: &ConfigMapRef) -> Result<RawConfig> {
    let cm = Api::<ConfigMap>::namespaced(client, &r.namespace)
        .get_opt(&r.name)
        .await
        .with_context(|| format!("reading ConfigMap {}/{}", r.namespace, r.name))?;
    let data = |key: &str, what: &str| -> Result<String> {
        let Some(cm) = &cm else {
            bail!("no ConfigMap found")
        };
        match cm.data.as_ref().and_then(|d| d.get(key)) {
            Some(v) => Ok(v.clone()),
            None => bail!("missing ConfigMap {what} key {key:?}"),
        }
    };
    Ok(RawConfig {
        config: data(config_watch::CONFIG_KEY, "config")?,
        values: data(config_watch::VALUES_KEY, "values")?,
        mesh: None,
    })
}

/// A pod with no labels, as a new pod of the namespace would look to the selectors.
fn new_pod() -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "(new pod)"},
           "spec": {"containers": [{"name": "app", "image": "app"}]}})
}

/// Gather the live facts and explain.
pub async fn explain_live(client: Client, args: &CheckArgs) -> Result<Vec<Report>> {
    let namespace = args
        .namespace
        .clone()
        .unwrap_or_else(|| client.default_namespace().to_string());
    let labels = namespace_labels(client.clone(), &namespace).await?;
    let snapshot = match &args.inject_config_map {
        Some(r) => {
            let raw = raw_config(
                client.clone(),
                &ConfigMapRef::parse(r).context("--injectConfigMap")?,
            )
            .await?;
            let mesh = args
                .files
                .mesh_config_file
                .as_deref()
                .map(std::fs::read_to_string)
                .transpose()?;
            Snapshot::load(&raw.config, &raw.values, mesh.as_deref())
                .context("loading the injector ConfigMap")?
        }
        None => check_cmd::load_snapshot(args)?,
    };
    let webhooks = match &args.webhook_config {
        Some(name) => webhook_entries(client.clone(), name).await?,
        None => webhook_config::entries(&check_cmd::webhook_options(args)),
    };
    let docs = match (&args.pod, &args.filename) {
        (Some(name), _) => vec![pod(client.clone(), &namespace, name).await?],
        (None, Some(file)) => check_cmd::read_documents(file)?,
        (None, None) => vec![new_pod()],
    };
    Ok(check_cmd::explain_documents(
        &docs,
        Some(&namespace),
        &labels,
        &webhooks,
        &snapshot,
    ))
}

/// Run the live mode of `outrigger check`.
pub fn run(args: &CheckArgs) -> Result<std::process::ExitCode> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let reports = rt.block_on(async {
        let client = Client::try_default()
            .await
            .context("connecting to the cluster (kubeconfig or in-cluster)")?;
        explain_live(client, args).await
    })?;
    if reports.is_empty() {
        bail!("nothing to explain");
    }
    check_cmd::print(&reports, args.output)?;
    Ok(check_cmd::verdict_status(&reports))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::mock;
    use http::Method;

    #[tokio::test]
    async fn reads_namespace_pod_webhook_and_configmap() {
        let (client, mut handle) = mock::client();
        let c = client.clone();
        let task = tokio::spawn(async move {
            let labels = namespace_labels(c.clone(), "apps").await?;
            let p = pod(c.clone(), "apps", "web-1").await?;
            let entries = webhook_entries(c.clone(), "outrigger-sidecar-injector").await?;
            let cm = ConfigMapRef::parse("istio-system/istio-sidecar-injector")?;
            let raw = raw_config(c, &cm).await?;
            anyhow::Ok((labels, p, entries, raw))
        });
        let r = mock::next(&mut handle).await;
        r.assert(Method::GET, "/api/v1/namespaces/apps");
        r.respond(200, json!({"apiVersion": "v1", "kind": "Namespace",
                              "metadata": {"name": "apps", "labels": {"istio-injection": "enabled"}}}));
        let r = mock::next(&mut handle).await;
        r.assert(Method::GET, "/api/v1/namespaces/apps/pods/web-1");
        r.respond(200, json!({"apiVersion": "v1", "kind": "Pod",
                              "metadata": {"name": "web-1", "namespace": "apps", "labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "web", "image": "nginx"}]}}));
        let r = mock::next(&mut handle).await;
        r.assert(Method::GET, "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/outrigger-sidecar-injector");
        let generated = serde_json::to_value(webhook_config::build(
            &webhook_config::WebhookOptions::default(),
        ))
        .expect("encodes");
        r.respond(200, generated.clone());
        let r = mock::next(&mut handle).await;
        r.assert(
            Method::GET,
            "/api/v1/namespaces/istio-system/configmaps/istio-sidecar-injector",
        );
        r.respond(200, json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "istio-sidecar-injector"},
                              "data": {"config": "policy: enabled", "values": "{}"}}));
        let (labels, p, entries, raw) = task.await.expect("task").expect("live reads");
        assert_eq!(labels.get("istio-injection"), Some(&json!("enabled")));
        assert_eq!(p["metadata"]["labels"]["app"], "web");
        assert_eq!(p["kind"], "Pod");
        assert_eq!(entries.len(), 4);
        assert_eq!(entries[2]["name"], "namespace.sidecar-injector.istio.io");
        assert_eq!(raw.config, "policy: enabled");
        // The live entries select the same way as the generated ones.
        let m = check_cmd::webhook_matches(&entries, &labels, &Map::new());
        assert_eq!(m.iter().filter(|e| e.selected).count(), 1);
        assert!(m[2].selected);
    }

    #[tokio::test]
    async fn missing_configmap_keys_are_named() {
        let (client, mut handle) = mock::client();
        let task = tokio::spawn(async move {
            let cm = ConfigMapRef::parse("istio-system/istio-sidecar-injector").expect("valid");
            raw_config(client, &cm).await
        });
        let r = mock::next(&mut handle).await;
        r.respond(200, json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "istio-sidecar-injector"},
                              "data": {"config": "policy: enabled"}}));
        let err = task.await.expect("task").expect_err("values missing");
        assert_eq!(err.to_string(), "missing ConfigMap values key \"values\"");
    }
}
