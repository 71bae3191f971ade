//! Other injectors selecting the same pods (`serve --kube --detect-overlaps`): at start-up, list
//! the MutatingWebhookConfigurations and the namespaces once, and name every other
//! configuration with an injecting entry (Istio's naming, `*sidecar-injector.istio.io`: istiod's
//! `istio-sidecar-injector[-REV]`, revision tags `istio-revision-tag-TAG`, another outrigger)
//! that selects a namespace outrigger's own configuration selects. Both would be called for the
//! same pod: the last one called wins, silently, and either being down blocks pods.
//!
//! A namespace overlaps when an entry of each configuration selects it by `namespaceSelector`
//! (with `kubernetes.io/metadata.name`, as the API server sets it) and both entries'
//! `objectSelector`s accept a pod without labels (the common pod; labelled pods can still be
//! steered apart, which this check does not try to prove). Logged as a warning per
//! configuration and exported as `outrigger_overlapping_injector_namespaces{configuration}`.
//! Needs `list` on mutatingwebhookconfigurations and namespaces cluster-wide
//! (deploy/components/overlap-detection).

use std::sync::LazyLock;

use ::kube::api::{Api, ListParams};
use ::kube::Client;
use anyhow::{anyhow, Result};
use k8s_openapi::api::admissionregistration::v1::{MutatingWebhook, MutatingWebhookConfiguration};
use k8s_openapi::api::core::v1::Namespace;
use outrigger_inject::decide::selection;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use serde_json::{Map, Value};

/// `configuration` label of the overlap gauge.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ConfigurationLabel {
    /// The other MutatingWebhookConfiguration.
    pub configuration: String,
}

/// `outrigger_overlapping_injector_namespaces{configuration}`: namespaces another injecting
/// configuration selects together with outrigger's (registered by the server's metrics).
pub static OVERLAPS: LazyLock<Family<ConfigurationLabel, Gauge>> = LazyLock::new(Family::default);

/// Another configuration selecting some of outrigger's namespaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overlap {
    /// Its name.
    pub configuration: String,
    /// The namespaces both select, sorted.
    pub namespaces: Vec<String>,
}

/// Whether entry `w` injects sidecars and is called for an unlabelled pod in a namespace with
/// `labels` (the library's one rule, [`selection::selecting_entry`]).
fn selects(w: &MutatingWebhook, labels: &Map<String, Value>) -> bool {
    let entry = serde_json::to_value(w).unwrap_or(Value::Null);
    selection::selecting_entry(std::slice::from_ref(&entry), labels, &Map::new()).is_some()
}

fn configuration_selects(c: &MutatingWebhookConfiguration, labels: &Map<String, Value>) -> bool {
    c.webhooks.iter().flatten().any(|w| selects(w, labels))
}

/// The namespace's labels as the API server sees them (`kubernetes.io/metadata.name` included).
pub fn labels(ns: &Namespace) -> (String, Map<String, Value>) {
    let name = ns.metadata.name.clone().unwrap_or_default();
    let m: Map<String, Value> = ns
        .metadata
        .labels
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    let m = selection::namespace_labels(&name, &m);
    (name, m)
}

/// The other configurations that select namespaces `ours` selects.
pub fn find(
    ours: &str,
    configurations: &[MutatingWebhookConfiguration],
    namespaces: &[Namespace],
) -> Vec<Overlap> {
    let Some(own) = configurations
        .iter()
        .find(|c| c.metadata.name.as_deref() == Some(ours))
    else {
        return Vec::new();
    };
    let namespaces: Vec<(String, Map<String, Value>)> = namespaces.iter().map(labels).collect();
    let mut out: Vec<Overlap> = configurations
        .iter()
        .filter(|c| c.metadata.name.as_deref() != Some(ours))
        .filter_map(|c| {
            let mut shared: Vec<String> = namespaces
                .iter()
                .filter(|(_, l)| configuration_selects(own, l) && configuration_selects(c, l))
                .map(|(n, _)| n.clone())
                .collect();
            shared.sort();
            (!shared.is_empty()).then(|| Overlap {
                configuration: c.metadata.name.clone().unwrap_or_default(),
                namespaces: shared,
            })
        })
        .collect();
    out.sort_by(|a, b| a.configuration.cmp(&b.configuration));
    out
}

/// List, compare, log and export (see the module documentation). Errors name the list refused.
pub async fn detect(client: Client, ours: &str) -> Result<Vec<Overlap>> {
    let configs = Api::<MutatingWebhookConfiguration>::all(client.clone())
        .list(&ListParams::default())
        .await
        .map_err(|e| anyhow!("list mutatingwebhookconfigurations: {e}"))?;
    let namespaces = Api::<Namespace>::all(client)
        .list(&ListParams::default())
        .await
        .map_err(|e| anyhow!("list namespaces: {e}"))?;
    let found = find(ours, &configs.items, &namespaces.items);
    OVERLAPS.clear();
    for o in &found {
        OVERLAPS
            .get_or_create(&ConfigurationLabel {
                configuration: o.configuration.clone(),
            })
            .set(i64::try_from(o.namespaces.len()).unwrap_or(i64::MAX));
        tracing::warn!(
            configuration = %o.configuration,
            namespaces = ?o.namespaces,
            "another injector selects namespaces this one selects: both are called for their pods, the last one called wins"
        );
    }
    if found.is_empty() {
        tracing::info!(webhook = %ours, "no other injector selects this injector's namespaces");
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::webhook_object::{build, WebhookOptions};
    use serde_json::json;

    fn ns(name: &str, labels: Value) -> Namespace {
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).expect("ns")
    }

    fn config(opts: &WebhookOptions) -> MutatingWebhookConfiguration {
        build(opts)
    }

    #[test]
    fn istiods_configuration_overlaps_on_the_shared_namespaces_only() {
        // Taking over istiod's selectors while istiod's configuration is still there.
        let takeover = config(&WebhookOptions {
            selector: Some("default".into()),
            ..WebhookOptions::default()
        });
        let istio = config(&WebhookOptions {
            istio: true,
            ..WebhookOptions::default()
        });
        let ours = config(&WebhookOptions::default());
        let namespaces = [
            ns("apps", json!({"istio-injection": "enabled"})),
            ns("canary", json!({"istio.io/rev": "outrigger"})),
            ns("plain", json!({})),
        ];
        let name = takeover.metadata.name.clone().expect("name");
        let istio_name = istio.metadata.name.clone().expect("name");
        let found = find(&name, &[takeover.clone(), istio.clone()], &namespaces);
        assert_eq!(
            found,
            [Overlap {
                configuration: istio_name.clone(),
                namespaces: vec!["apps".into()]
            }]
        );
        // The shipped default (istio.io/rev=outrigger) shares no namespace with istiod's.
        assert_eq!(find(&name, &[ours.clone(), istio], &namespaces), []);
        assert_eq!(find("absent", &[ours], &namespaces), []);
    }
}
