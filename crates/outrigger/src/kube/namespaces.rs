//! Namespace facts from a cached watch of namespaces: labels (for `check`) and, with
//! `PLATFORM=openshift`, the proxy UID/GID from the namespace's SCC annotations.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use ::kube::runtime::reflector::{self, ObjectRef, Store};
use ::kube::runtime::{watcher, WatchStreamExt};
use ::kube::{Api, Client};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;

/// Proxy UID and GID when no namespace facts apply.
#[allow(dead_code)] // used by `proxy_ids`; serve passes the annotations to the library instead.
pub const DEFAULT_PROXY_ID: i64 = 1337;
/// OpenShift annotation with the namespace's UID range.
#[allow(dead_code)] // see DEFAULT_PROXY_ID.
pub const UID_RANGE: &str = "openshift.io/sa.scc.uid-range";
/// OpenShift annotation with the namespace's supplemental groups.
#[allow(dead_code)] // see DEFAULT_PROXY_ID.
pub const SUPPLEMENTAL_GROUPS: &str = "openshift.io/sa.scc.supplemental-groups";

/// Go `fmt.Sscanf("%d")` of an unsigned 32-bit value at the start of `s`: (value, rest).
#[allow(dead_code)] // see DEFAULT_PROXY_ID.
fn scan_u32(s: &str) -> Result<(u32, &str), String> {
    let s = s.trim_start();
    let s = s.strip_prefix('+').unwrap_or(s);
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    if end == 0 {
        return Err("expected integer".into());
    }
    let v = s[..end]
        .parse::<u32>()
        .map_err(|_| "value out of range".to_string())?;
    Ok((v, &s[end..]))
}

/// One `<start>/<size>` or `<start>-<end>` block: (start, end), with uint32 wrap-around.
#[allow(dead_code)] // see DEFAULT_PROXY_ID.
pub fn parse_block(text: &str) -> Result<(u32, u32), String> {
    let (sep, format) = if text.contains('/') {
        ('/', "<start>/<size>")
    } else {
        ('-', "<start>-<end>")
    };
    let (first, rest) = scan_u32(text)?;
    let Some(rest) = rest.strip_prefix(sep) else {
        return Err(format!("block not in the format {format:?}"));
    };
    let (second, _) = scan_u32(rest)?;
    if sep == '/' {
        Ok((first, first.wrapping_add(second).wrapping_sub(1)))
    } else {
        Ok((first, second))
    }
}

/// (UID, GID) for the proxy from the namespace's annotations.
#[allow(dead_code)] // serve passes the cached annotations to `webhook::review`, which computes the IDs.
pub fn proxy_ids(annotations: Option<&BTreeMap<String, String>>) -> (i64, i64) {
    let Some(a) = annotations else {
        return (DEFAULT_PROXY_ID, DEFAULT_PROXY_ID);
    };
    let uid = a
        .get(UID_RANGE)
        .filter(|v| !v.is_empty())
        .and_then(|v| parse_block(v).ok())
        .map_or(DEFAULT_PROXY_ID, |(_, end)| i64::from(end));
    let groups = a.get(SUPPLEMENTAL_GROUPS).or_else(|| a.get(UID_RANGE));
    let gid = groups
        .filter(|v| !v.is_empty())
        .and_then(|v| {
            v.split(',')
                .map(parse_block)
                .collect::<Result<Vec<_>, _>>()
                .ok()
        })
        .and_then(|blocks| blocks.first().copied())
        .map_or(DEFAULT_PROXY_ID, |(_, end)| i64::from(end));
    (uid, gid)
}

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

pub(crate) fn strip(ns: &mut Namespace) {
    ns.metadata.managed_fields = None;
    ns.metadata.owner_references = None;
    ns.spec = None;
    ns.status = None;
}

impl NamespaceCache {
    /// A cache over an existing store (tests, or a shared reflector).
    #[allow(dead_code)] // tests and shared reflectors.
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

    /// Labels of the namespace (empty when unknown).
    #[allow(dead_code)] // for the live mode of `check` (not wired yet).
    pub fn labels(&self, name: &str) -> BTreeMap<String, String> {
        self.get(name)
            .and_then(|n| n.metadata.labels.clone())
            .unwrap_or_default()
    }

    /// Proxy (UID, GID) for pods of the namespace; 1337/1337 on a cache miss.
    #[allow(dead_code)] // see the free function `proxy_ids`.
    pub fn proxy_ids(&self, name: &str) -> (i64, i64) {
        match self.get(name) {
            Some(ns) => proxy_ids(ns.metadata.annotations.as_ref()),
            None => (DEFAULT_PROXY_ID, DEFAULT_PROXY_ID),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::mock;
    use http::Method;
    use serde_json::json;

    fn annotations(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn blocks() {
        assert_eq!(
            parse_block("1000680000/10000"),
            Ok((1_000_680_000, 1_000_689_999))
        );
        assert_eq!(parse_block("100-200"), Ok((100, 200)));
        assert_eq!(parse_block("0/0"), Ok((0, u32::MAX)), "uint32 wrap-around");
        assert_eq!(
            parse_block("100/10trailing"),
            Ok((100, 109)),
            "Sscanf ignores the rest"
        );
        assert_eq!(
            parse_block("100"),
            Err("block not in the format \"<start>-<end>\"".into())
        );
        assert_eq!(
            parse_block("100:5/3"),
            Err("block not in the format \"<start>/<size>\"".into())
        );
        assert_eq!(parse_block("x/5"), Err("expected integer".into()));
        assert!(parse_block("99999999999/1").is_err());
    }

    #[test]
    fn uid_and_gid_from_annotations() {
        assert_eq!(proxy_ids(None), (1337, 1337));
        let a = annotations(&[(UID_RANGE, "1000680000/10000")]);
        assert_eq!(
            proxy_ids(Some(&a)),
            (1_000_689_999, 1_000_689_999),
            "GID falls back to the UID range"
        );
        let a = annotations(&[
            (UID_RANGE, "1000680000/10000"),
            (SUPPLEMENTAL_GROUPS, "5000/10,7000/10"),
        ]);
        assert_eq!(proxy_ids(Some(&a)), (1_000_689_999, 5009));
        let a = annotations(&[(UID_RANGE, "bad"), (SUPPLEMENTAL_GROUPS, "5000/10,oops")]);
        assert_eq!(
            proxy_ids(Some(&a)),
            (1337, 1337),
            "any failing group block keeps 1337"
        );
        let a = annotations(&[(UID_RANGE, "")]);
        assert_eq!(proxy_ids(Some(&a)), (1337, 1337));
    }

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
                              "annotations": {UID_RANGE: "1000680000/10000"}}}]}),
        );
        let watch = mock::next(&mut handle).await;
        assert!(watch.uri.contains("watch=true"), "{}", watch.uri);
        tokio::time::timeout(std::time::Duration::from_secs(5), cache.wait_until_ready())
            .await
            .expect("cache ready");
        assert_eq!(cache.proxy_ids("apps"), (1_000_689_999, 1_000_689_999));
        assert_eq!(
            cache
                .labels("apps")
                .get("istio-injection")
                .map(String::as_str),
            Some("enabled")
        );
        assert_eq!(cache.proxy_ids("missing"), (1337, 1337));
        task.abort();
    }
}
