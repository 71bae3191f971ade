//! The live facts of `outrigger check --kube`: the namespace's labels, a live pod (`--pod`),
//! the injector ConfigMap (`--injectConfigMap`) and the live webhook configuration
//! (`--webhook-config`). Reading only: the command explains them with the library.

use ::kube::{Api, Client};
use anyhow::{bail, Context, Result};
use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use outrigger_inject::config::Snapshot;
use serde_json::{json, Map, Value};

use super::client::api_error;
use super::config_watch::{self, ConfigMapRef, RawConfig};

/// Labels of the live namespace `name`.
pub async fn namespace_labels(client: Client, name: &str) -> Result<Map<String, Value>> {
    let ns = Api::<Namespace>::all(client)
        .get(name)
        .await
        .map_err(api_error)
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
        .map_err(api_error)
        .with_context(|| format!("reading pod {namespace}/{name}"))?;
    let mut v = serde_json::to_value(pod).context("encoding the pod")?;
    if let Some(o) = v.as_object_mut() {
        o.insert("apiVersion".into(), json!("v1"));
        o.insert("kind".into(), json!("Pod"));
    }
    Ok(v)
}

/// The webhook entries of a live MutatingWebhookConfiguration.
pub(crate) async fn webhook_entries(client: Client, name: &str) -> Result<Vec<Value>> {
    let mwc = Api::<MutatingWebhookConfiguration>::all(client)
        .get(name)
        .await
        .map_err(api_error)
        .with_context(|| format!("reading MutatingWebhookConfiguration {name}"))?;
    let v = serde_json::to_value(mwc).context("encoding the webhook configuration")?;
    Ok(v.get("webhooks")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default())
}

/// The injector configuration documents of a live ConfigMap (with istiod's error texts).
pub(crate) async fn raw_config(client: Client, r: &ConfigMapRef) -> Result<RawConfig> {
    let cm = Api::<ConfigMap>::namespaced(client, &r.namespace)
        .get_opt(&r.name)
        .await
        .map_err(api_error)
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

/// What to read from the cluster.
#[derive(Debug, Clone, Copy, Default)]
pub struct LiveQuery<'a> {
    /// The namespace (default: the client's).
    pub namespace: Option<&'a str>,
    /// A live pod of the namespace to read.
    pub pod: Option<&'a str>,
    /// `NAMESPACE/NAME` of an injector ConfigMap to load the configuration from.
    pub inject_config_map: Option<&'a str>,
    /// Mesh config text loaded with the ConfigMap's configuration.
    pub mesh: Option<&'a str>,
    /// Name of a live MutatingWebhookConfiguration whose entries to evaluate.
    pub webhook_config: Option<&'a str>,
    /// Kubeconfig file to connect with (default: `KUBECONFIG`, `~/.kube/config`, in-cluster).
    pub kubeconfig: Option<&'a std::path::Path>,
    /// Kubeconfig context to use (default: the current one).
    pub context: Option<&'a str>,
}

/// What was read from the cluster; `None` where the query asked for nothing.
#[derive(Debug)]
pub struct LiveFacts {
    /// The namespace evaluated.
    pub namespace: String,
    /// Its labels.
    pub namespace_labels: Map<String, Value>,
    /// The configuration from the ConfigMap.
    pub snapshot: Option<Snapshot>,
    /// The live webhook entries.
    pub webhooks: Option<Vec<Value>>,
    /// The live pod.
    pub pod: Option<Value>,
}

/// Read what `q` asks for.
pub(crate) async fn read_live(client: Client, q: &LiveQuery<'_>) -> Result<LiveFacts> {
    let namespace = q
        .namespace
        .map_or_else(|| client.default_namespace().to_string(), str::to_string);
    let namespace_labels = namespace_labels(client.clone(), &namespace).await?;
    let snapshot = match q.inject_config_map {
        Some(r) => {
            let raw = raw_config(
                client.clone(),
                &ConfigMapRef::parse(r).context("--injectConfigMap")?,
            )
            .await?;
            Some(
                Snapshot::load(&raw.config, &raw.values, q.mesh)
                    .map(|s| s.with_template_env(crate::template_env::current()))
                    .context("loading the injector ConfigMap")?,
            )
        }
        None => None,
    };
    let webhooks = match q.webhook_config {
        Some(name) => Some(webhook_entries(client.clone(), name).await?),
        None => None,
    };
    let pod = match q.pod {
        Some(name) => Some(pod(client.clone(), &namespace, name).await?),
        None => None,
    };
    Ok(LiveFacts {
        namespace,
        namespace_labels,
        snapshot,
        webhooks,
        pod,
    })
}

/// Connect (kubeconfig or in-cluster) and read what `q` asks for.
pub fn fetch(q: &LiveQuery<'_>) -> Result<LiveFacts> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    rt.block_on(async {
        let cluster = super::client::connect(q.kubeconfig, q.context).await?;
        read_live(cluster.client.clone(), q)
            .await
            .map_err(|e| cluster.explain(e))
    })
    .map_err(|e| e.context("--kube"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock;
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
        // The takeover's entries (istiod's default revision's selectors).
        let generated = serde_json::to_value(crate::webhook_object::build(
            &crate::webhook_object::WebhookOptions {
                selector: Some("default".into()),
                ..Default::default()
            },
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
        let m = outrigger_inject::check::webhook_matches(&entries, &labels, &Map::new());
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
