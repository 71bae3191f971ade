//! The proxy environment: parameters in the webhook's URL path (`/inject/cluster/c1/net/n1`,
//! `/inject/:ENV:K=V`), completed with the cluster and network of the values and the pod.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::config::Snapshot;
use crate::kube::names::{CLUSTER_ID_ENV, NETWORK_ENV, NETWORK_LABEL};
use crate::kube::pod::label;

/// Cluster and network of the injected proxy (the values, then the path parameters already in
/// `proxy_envs`, then for the network the pod's `topology.istio.io/network` label), written back
/// into the proxy environment as Istio's `RunTemplate` does.
pub fn cluster_and_network(
    snapshot: &Snapshot,
    pod: &Value,
    proxy_envs: &mut BTreeMap<String, String>,
) {
    let mut cluster = snapshot.values_facts.cluster_name.clone();
    if let Some(c) = proxy_envs.get(CLUSTER_ID_ENV).filter(|c| !c.is_empty()) {
        cluster = c.clone();
    }
    let mut network = snapshot.values_facts.network.clone();
    if let Some(n) = proxy_envs.get(NETWORK_ENV).filter(|n| !n.is_empty()) {
        network = n.clone();
    }
    if let Some(n) = label(pod, NETWORK_LABEL) {
        network = n.to_string();
    }
    if !cluster.is_empty() {
        proxy_envs.insert(CLUSTER_ID_ENV.into(), cluster);
    }
    if !network.is_empty() {
        proxy_envs.insert(NETWORK_ENV.into(), network);
    }
}

/// Path parameters → proxy environment (`/inject/cluster/c1/net/n1` or `/inject/:ENV:K=V`;
/// `cluster` and `net` name `ISTIO_META_CLUSTER_ID` and `ISTIO_META_NETWORK`, other keys are
/// upper-cased). Returns the map and warning log lines.
pub fn proxy_envs(path: &str) -> (BTreeMap<String, String>, Vec<String>) {
    let mut envs = BTreeMap::new();
    let mut warnings = Vec::new();
    let trimmed = path.strip_suffix('/').unwrap_or(path);
    let mut parts = trimmed.splitn(3, '/');
    let rest = match (parts.next(), parts.next(), parts.next()) {
        (_, _, Some(rest)) => rest,
        _ => return (envs, warnings),
    };
    let mut pairs: Vec<(String, String)> = Vec::new();
    if rest.starts_with(":ENV:") {
        for piece in rest.split(":ENV:").skip(1) {
            if let Some((k, v)) = piece.split_once('=') {
                if !k.is_empty() {
                    pairs.push((k.to_string(), v.to_string()));
                }
            }
        }
    } else {
        let tokens: Vec<&str> = rest.split('/').collect();
        for pair in tokens.chunks(2) {
            match pair {
                [k, v] => pairs.push((k.to_string(), v.replace("--slash--", "/"))),
                [k] => warnings.push(format!(
                    "Odd number of inject env entries, ignore the last key {k}"
                )),
                _ => {}
            }
        }
    }
    for (k, v) in pairs {
        let name = match k.as_str() {
            "cluster" => CLUSTER_ID_ENV.to_string(),
            "net" => NETWORK_ENV.to_string(),
            other => other.to_uppercase(),
        };
        if !name.is_empty() {
            envs.insert(name, v);
        }
    }
    (envs, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_parameters_follow_every_spec_example() {
        let cases: &[(&str, &[(&str, &str)])] = &[
            ("/inject", &[]),
            ("/inject/", &[]),
            ("/", &[]),
            (
                "/inject/cluster/c1/net/n1/",
                &[
                    ("ISTIO_META_CLUSTER_ID", "c1"),
                    ("ISTIO_META_NETWORK", "n1"),
                ],
            ),
            (
                "/inject/cluster/a--slash--b",
                &[("ISTIO_META_CLUSTER_ID", "a/b")],
            ),
            (
                "/inject/cluster/c1/custom_env/foo",
                &[("ISTIO_META_CLUSTER_ID", "c1"), ("CUSTOM_ENV", "foo")],
            ),
            (
                "/inject/cluster/c1/network",
                &[("ISTIO_META_CLUSTER_ID", "c1")],
            ),
            (
                "/inject/:ENV:cluster=c2:ENV:rootpage=/foo/bar",
                &[("ISTIO_META_CLUSTER_ID", "c2"), ("ROOTPAGE", "/foo/bar")],
            ),
            ("/inject/:ENV:a=x:ENV:=b:ENV:=", &[("A", "x")]),
            (
                "/inject/r1/v1/r2/:ENV:ab=cd",
                &[("R1", "v1"), ("R2", ":ENV:ab=cd")],
            ),
        ];
        for (path, want) in cases {
            let (got, _) = proxy_envs(path);
            let want: BTreeMap<String, String> = want
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            assert_eq!(got, want, "path {path}");
        }
    }

    #[test]
    fn path_parameters_warn_on_odd_count_and_overwrite_duplicates() {
        let (envs, warnings) = proxy_envs("/inject/cluster/c1/network");
        assert_eq!(
            warnings,
            vec!["Odd number of inject env entries, ignore the last key network".to_string()]
        );
        assert_eq!(envs.len(), 1);
        let (envs, _) = proxy_envs("/inject/net/a/net/b/ünï/x");
        assert_eq!(
            envs.get("ISTIO_META_NETWORK").map(String::as_str),
            Some("b")
        );
        assert_eq!(envs.get("ÜNÏ").map(String::as_str), Some("x"));
    }
}
