//! Namespace facts from a cached watch of namespaces: labels (for `check`) and, with
//! `PLATFORM=openshift`, the annotations the library reads the proxy UID/GID from
//! ([`outrigger_inject::decide::openshift::proxy_uid_gid`]).

use std::future::Future;
use std::sync::Arc;

use ::kube::runtime::reflector::{self, ObjectRef, Store};
use ::kube::runtime::{watcher, WatchStreamExt};
use ::kube::{Api, Client};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use serde_json::{Map, Value};

/// Cached namespaces.
#[derive(Clone)]
pub struct NamespaceCache {
    store: Store<Namespace>,
}

impl std::fmt::Debug for NamespaceCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NamespaceCache")
            .field("namespaces", &self.store.len())
            .finish()
    }
}

/// Remove what the cache never reads, to keep it small.
pub fn strip(ns: &mut Namespace) {
    ns.metadata.managed_fields = None;
    ns.metadata.owner_references = None;
    ns.spec = None;
    ns.status = None;
}

impl NamespaceCache {
    /// A cache over an existing store (tests feed the store themselves).
    #[cfg(any(test, feature = "test-support"))]
    pub fn with_store(store: Store<Namespace>) -> Self {
        NamespaceCache { store }
    }

    /// Start the namespace watch; spawn the returned future to keep the cache current.
    pub fn start(client: Client) -> (Self, impl Future<Output = ()> + Send + 'static) {
        let (store, writer) = reflector::store();
        let api: Api<Namespace> = Api::all(client);
        let run = async move {
            let stream = watcher(api, watcher::Config::default())
                .default_backoff()
                .modify(strip);
            reflector::reflector(writer, stream)
                .for_each(|event| async move {
                    if let Err(e) = event {
                        tracing::warn!(error = %e, "namespace watch failed");
                    }
                })
                .await;
        };
        (NamespaceCache { store }, run)
    }

    /// Wait until the first full list is cached.
    pub async fn wait_until_ready(&self) {
        let _ = self.store.wait_until_ready().await;
    }

    /// The cached namespace, if known.
    pub fn get(&self, name: &str) -> Option<Arc<Namespace>> {
        self.store.get(&ObjectRef::new(name))
    }

    /// Annotations of the namespace as JSON strings; `None` when it is not cached.
    pub fn annotations(&self, name: &str) -> Option<Map<String, Value>> {
        let ns = self.get(name)?;
        let annotations = ns.metadata.annotations.clone().unwrap_or_default();
        Some(
            annotations
                .into_iter()
                .map(|(k, v)| (k, Value::String(v)))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock;
    use http::Method;
    use outrigger_inject::decide::openshift;
    use serde_json::json;

    #[tokio::test]
    async fn watch_driven_namespace_cache() {
        let (client, mut handle) = mock::client();
        let (cache, run) = NamespaceCache::start(client);
        let task = tokio::spawn(run);
        let list = mock::next(&mut handle).await;
        list.assert(Method::GET, "/api/v1/namespaces");
        list.respond(
            200,
            json!({"apiVersion": "v1", "kind": "NamespaceList", "metadata": {"resourceVersion": "3"},
                   "items": [{"metadata": {"name": "apps", "resourceVersion": "2",
                              "labels": {"istio-injection": "enabled"},
                              "annotations": {outrigger_inject::kube::names::OPENSHIFT_UID_RANGE: "1000680000/10000"}}}]}),
        );
        let watch = mock::next(&mut handle).await;
        assert!(watch.uri.contains("watch=true"), "{}", watch.uri);
        tokio::time::timeout(std::time::Duration::from_secs(5), cache.wait_until_ready())
            .await
            .expect("cache ready");
        let annotations = cache.annotations("apps").expect("cached");
        assert_eq!(
            openshift::proxy_uid_gid(&annotations),
            (1_000_689_999, 1_000_689_999)
        );
        let apps = cache.get("apps").expect("cached");
        assert_eq!(
            apps.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("istio-injection"))
                .map(String::as_str),
            Some("enabled")
        );
        assert_eq!(cache.annotations("missing"), None);
        task.abort();
    }
}
