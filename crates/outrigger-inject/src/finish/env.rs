//! Cluster and network environment of the proxy container.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::json::Scan;
use crate::kube::pod::{env_entry, env_mut, find_sidecar_mut};

/// Replace the sidecar's env entries named in `proxy_envs` by plain entries appended in
/// ascending name order.
pub(super) fn apply_cluster_envs(pod: &mut Value, proxy_envs: &BTreeMap<String, String>) {
    if proxy_envs.is_empty() {
        return;
    }
    let Some(sidecar) = find_sidecar_mut(pod) else {
        return;
    };
    let env = env_mut(sidecar);
    env.retain(|e| {
        !e.scan("name")
            .and_then(Value::as_str)
            .is_some_and(|n| proxy_envs.contains_key(n))
    });
    env.extend(proxy_envs.iter().map(|(k, v)| env_entry(k, v)));
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::finish::tests::*;

    #[test]
    fn cluster_envs_replace_and_sort() {
        let mut inputs = Inputs::new();
        inputs.envs.insert("ZED".into(), "z".into());
        inputs.envs.insert("CUSTOM_ENV".into(), "c".into());
        inputs
            .envs
            .insert("ISTIO_META_CLUSTER_ID".into(), "k".into());
        let mut pod = merged(json!({}), json!([{"name": "a"}]));
        inputs.run(&mut pod).expect("post-process");
        assert_eq!(
            env_names(&pod),
            ["TRUST_DOMAIN", "CUSTOM_ENV", "ISTIO_META_CLUSTER_ID", "ZED"]
        );
        assert!(pod["metadata"]["labels"]
            .get("topology.istio.io/network")
            .is_none());
    }
}
