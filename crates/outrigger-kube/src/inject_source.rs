//! Istio's configuration read from the cluster for `outrigger inject --kube`, as
//! `istioctl kube-inject` reads it: the injector ConfigMap (keys `config` and `values`) and the
//! mesh ConfigMap (key `mesh`), each with one GET, and errors that name the namespace, the
//! ConfigMap and the key.

use ::kube::{Api, Client};
use anyhow::{anyhow, Result};
use k8s_openapi::api::core::v1::ConfigMap;

use super::client::api_error;
use super::config_watch::ConfigMapRef;

/// istioctl's default injector ConfigMap name.
pub const DEFAULT_INJECT_CONFIG_MAP: &str = "istio-sidecar-injector";
/// istioctl's default mesh ConfigMap name.
pub const DEFAULT_MESH_CONFIG_MAP: &str = "istio";

/// The ConfigMap name istioctl uses: `name`, or `name-REVISION` when `name` is the default and a
/// revision other than `default` is given (istioctl suffixes only its default names).
pub fn configmap_name(name: &str, default: &str, revision: &str) -> String {
    if name == default && !outrigger_inject::decide::selection::is_default_revision(revision) {
        format!("{name}-{revision}")
    } else {
        name.to_string()
    }
}

/// The values of `keys` in ConfigMap `r`, in order. A missing ConfigMap (`hint` says which
/// flags choose it), an RBAC denial or a missing key is an error naming the ConfigMap (and the
/// key).
pub async fn read_keys(
    client: Client,
    r: &ConfigMapRef,
    keys: &[&str],
    hint: &str,
) -> Result<Vec<String>> {
    let (ns, name) = (&r.namespace, &r.name);
    let cm = match Api::<ConfigMap>::namespaced(client, ns).get(name).await {
        Ok(cm) => cm,
        Err(::kube::Error::Api(status)) if status.code == 404 => {
            return Err(anyhow!("ConfigMap {ns}/{name} not found ({hint})"));
        }
        Err(::kube::Error::Api(status)) if status.code == 403 => {
            return Err(anyhow!(
                "reading ConfigMap {ns}/{name}: forbidden (RBAC): {}",
                status.message
            ));
        }
        Err(e) => return Err(api_error(e).context(format!("reading ConfigMap {ns}/{name}"))),
    };
    let data = cm.data.unwrap_or_default();
    keys.iter()
        .map(|key| {
            data.get(*key).cloned().ok_or_else(|| {
                let present: Vec<&str> = data.keys().map(String::as_str).collect();
                anyhow!(
                    "ConfigMap {ns}/{name} has no key {key:?} (its keys: {})",
                    if present.is_empty() {
                        "none".to_string()
                    } else {
                        present.join(", ")
                    }
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock;
    use http::Method;
    use serde_json::json;

    fn cm_ref() -> ConfigMapRef {
        ConfigMapRef {
            namespace: "istio-system".into(),
            name: "istio-sidecar-injector".into(),
        }
    }

    #[test]
    fn revision_suffixes_only_the_default_names() {
        let d = "istio-sidecar-injector";
        assert_eq!(configmap_name(d, d, ""), d);
        assert_eq!(configmap_name(d, d, "default"), d);
        assert_eq!(
            configmap_name(d, d, "canary"),
            "istio-sidecar-injector-canary"
        );
        assert_eq!(configmap_name("mine", d, "canary"), "mine");
        assert_eq!(configmap_name("istio", "istio", "1-28"), "istio-1-28");
    }

    #[tokio::test]
    async fn one_get_per_configmap_and_the_keys_in_order() {
        let (client, mut handle) = mock::client();
        let task = tokio::spawn(async move {
            read_keys(client, &cm_ref(), &["config", "values"], "hint").await
        });
        let r = mock::next(&mut handle).await;
        r.assert(
            Method::GET,
            "/api/v1/namespaces/istio-system/configmaps/istio-sidecar-injector",
        );
        r.respond(
            200,
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "istio-sidecar-injector", "namespace": "istio-system"},
                   "data": {"values": "{}", "config": "policy: enabled"}}),
        );
        let got = task.await.expect("task").expect("read");
        assert_eq!(got, vec!["policy: enabled".to_string(), "{}".to_string()]);
        mock::assert_no_request(&mut handle).await;
    }

    #[tokio::test]
    async fn missing_configmap_key_and_denial_are_named() {
        for (status, body, want) in [
            (
                404,
                mock::not_found("configmaps", "istio-sidecar-injector"),
                "ConfigMap istio-system/istio-sidecar-injector not found (set --flags)".to_string(),
            ),
            (
                403,
                mock::forbidden("get", "configmaps", "istio-sidecar-injector", Some("istio-system")),
                "reading ConfigMap istio-system/istio-sidecar-injector: forbidden (RBAC): \
                 configmaps \"istio-sidecar-injector\" is forbidden: User \
                 \"system:serviceaccount:outrigger:outrigger\" cannot get resource \"configmaps\" \
                 in API group \"\" in the namespace \"istio-system\""
                    .to_string(),
            ),
            (
                200,
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "istio-sidecar-injector"},
                       "data": {"config": "policy: enabled"}}),
                "ConfigMap istio-system/istio-sidecar-injector has no key \"values\" (its keys: config)"
                    .to_string(),
            ),
        ] {
            let (client, mut handle) = mock::client();
            let task = tokio::spawn(async move {
                read_keys(client, &cm_ref(), &["config", "values"], "set --flags").await
            });
            let r = mock::next(&mut handle).await;
            r.assert(
                Method::GET,
                "/api/v1/namespaces/istio-system/configmaps/istio-sidecar-injector",
            );
            r.respond(status, body);
            let err = task.await.expect("task").expect_err("refused");
            assert_eq!(format!("{err:#}"), want, "HTTP {status}");
        }
    }
}
