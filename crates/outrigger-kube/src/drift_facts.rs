//! What `outrigger drift --kube` reads of the cluster besides its pods: Istio's revision tags
//! (which revision a pod labelled with a tag is on) and, in auto native-sidecar mode, the
//! kubelet version of every node (the proxy's form follows the node a pod runs on). Both are
//! listed once, page by page, before the pods.

use std::collections::BTreeMap;

use ::kube::api::{Api, ListParams};
use ::kube::{Client, Resource};
use anyhow::Result;
use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Node;
use outrigger_inject::decide::native;
use outrigger_inject::drift::RevisionTags;
use serde::de::DeserializeOwned;

use super::client::api_error;

/// Istio's revision-tag label (the tag's name), on its `istio-revision-tag-TAG` configuration.
const TAG_LABEL: &str = "istio.io/tag";
/// The revision a tag points to, on the same configuration.
const REV_LABEL: &str = "istio.io/rev";

/// Every object of `api`, 500 a request.
async fn list_all<K>(api: &Api<K>, params: ListParams) -> Result<Vec<K>, ::kube::Error>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    let mut out = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut page_params = params.clone().limit(500);
        if let Some(t) = &token {
            page_params = page_params.continue_token(t);
        }
        let page = api.list(&page_params).await?;
        out.extend(page.items);
        match page.metadata.continue_ {
            Some(t) if !t.is_empty() => token = Some(t),
            _ => return Ok(out),
        }
    }
}

/// The cluster's revision tags: every MutatingWebhookConfiguration labelled `istio.io/tag`
/// (Istio's `istio-revision-tag-TAG`), the tag to its `istio.io/rev` label. One without a
/// revision label points nowhere and is left out. `None` when listing them is forbidden (the
/// caller says so and goes on without).
pub async fn revision_tags(client: Client) -> Result<Option<RevisionTags>> {
    let api = Api::<MutatingWebhookConfiguration>::all(client);
    match list_all(&api, ListParams::default().labels(TAG_LABEL)).await {
        Ok(configs) => Ok(Some(tags_of(&configs))),
        Err(::kube::Error::Api(status)) if status.is_forbidden() => Ok(None),
        Err(e) => {
            Err(api_error(e).context("listing mutatingwebhookconfigurations (revision tags)"))
        }
    }
}

fn tags_of(configs: &[MutatingWebhookConfiguration]) -> RevisionTags {
    let mut tags = BTreeMap::new();
    for c in configs {
        let labels = c.metadata.labels.as_ref();
        let label = |k: &str| labels.and_then(|l| l.get(k)).filter(|v| !v.is_empty());
        if let (Some(tag), Some(rev)) = (label(TAG_LABEL), label(REV_LABEL)) {
            tags.insert(tag.clone(), rev.clone());
        }
    }
    RevisionTags(tags)
}

/// The cluster's nodes with their kubelet versions (`status.nodeInfo.kubeletVersion`), as the
/// library's native-sidecar detection reads them.
pub async fn nodes(client: Client) -> Result<Vec<native::Node>> {
    let api = Api::<Node>::all(client);
    let nodes = list_all(&api, ListParams::default())
        .await
        .map_err(|e| api_error(e).context("listing nodes"))?;
    Ok(nodes.into_iter().map(super::nodes::facts).collect())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn tags_come_from_the_tag_and_revision_labels() {
        let config = |name: &str, labels: serde_json::Value| -> MutatingWebhookConfiguration {
            serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}}))
                .expect("configuration")
        };
        let tags = tags_of(&[
            config(
                "istio-revision-tag-prod",
                json!({"istio.io/tag": "prod", "istio.io/rev": "1-24"}),
            ),
            config(
                "istio-revision-tag-default",
                json!({"istio.io/tag": "default", "istio.io/rev": "1-23"}),
            ),
            // No revision: points nowhere.
            config("istio-revision-tag-x", json!({"istio.io/tag": "x"})),
            // A revision's own configuration is no tag.
            config(
                "istio-sidecar-injector-1-24",
                json!({"istio.io/rev": "1-24"}),
            ),
        ]);
        assert_eq!(
            tags.0.into_iter().collect::<Vec<_>>(),
            [
                ("default".to_string(), "1-23".to_string()),
                ("prod".to_string(), "1-24".to_string())
            ]
        );
    }
}
