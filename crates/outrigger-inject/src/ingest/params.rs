//! Parameters in the webhook's URL path (`/inject/cluster/c1/net/n1`, `/inject/:ENV:K=V`),
//! which become proxy environment variables.

use std::collections::BTreeMap;

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
            "cluster" => "ISTIO_META_CLUSTER_ID".to_string(),
            "net" => "ISTIO_META_NETWORK".to_string(),
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
