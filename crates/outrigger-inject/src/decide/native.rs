//! Native sidecars: whether the proxy runs as a restartable init container
//! (`ENABLE_NATIVE_SIDECARS`, and in `auto` mode the kubelet versions of the cluster's nodes),
//! and what the decision may ask about the cluster ([`ClusterFacts`]).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// Minimum kubelet minor version with native sidecar support (Kubernetes 1.33).
pub const NATIVE_SIDECAR_MIN_MINOR: u64 = 33;

/// The native-sidecar mode (`ENABLE_NATIVE_SIDECARS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NativeMode {
    /// Always native sidecars.
    Enabled,
    /// Never native sidecars.
    Disabled,
    /// Native when every relevant node's kubelet is at least 1.33.
    Auto,
}

impl NativeMode {
    /// Parse Istio's `ENABLE_NATIVE_SIDECARS` value; unknown values are `Disabled` with a warning.
    pub fn parse(value: &str) -> (NativeMode, Option<String>) {
        match value {
            "true" => (NativeMode::Enabled, None),
            "false" => (NativeMode::Disabled, None),
            "auto" => (NativeMode::Auto, None),
            other => (
                NativeMode::Disabled,
                Some(format!(
                    "Unknown value for ENABLE_NATIVE_SIDECARS: {other}, defaulting to false"
                )),
            ),
        }
    }

    /// The mode from the variable as the process sees it: unset is `Auto` (Istio's default),
    /// anything else goes through [`NativeMode::parse`].
    pub fn from_env(value: Option<&str>) -> (NativeMode, Option<String>) {
        value.map_or((NativeMode::Auto, None), NativeMode::parse)
    }
}

/// A cluster node as the native-sidecar detection sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// `metadata.name`.
    pub name: String,
    /// `status.nodeInfo.kubeletVersion`, e.g. `v1.33.1-gke.100`.
    pub kubelet_version: String,
}

/// What the webhook's review may ask about the cluster. It asks only when its decision needs
/// the answer: node facts only in auto native-sidecar mode and only for pods it injects,
/// namespace annotations only on OpenShift. The caller answers from whatever
/// it has (watch caches, static tables); the rules applied to the answers live in the library.
pub trait ClusterFacts: std::fmt::Debug {
    /// Whether the caller knows the cluster's nodes (has a node client). Without, auto mode
    /// answers "no native sidecars" with Istio's warning.
    fn has_nodes(&self) -> bool {
        false
    }

    /// `status.nodeInfo.kubeletVersion` of the node named `name`; `None` when no such node is
    /// known.
    fn kubelet_version(&self, name: &str) -> Option<String> {
        let _ = name;
        None
    }

    /// Whether every known node runs a kubelet with native sidecar support, by
    /// [`kubelet_supports_native`] (an unreadable version does not; no nodes at all do). A cache
    /// may answer from an aggregate it maintains; lines for unreadable versions may be pushed
    /// to `warnings`.
    fn all_nodes_native(&self, warnings: &mut Vec<String>) -> bool {
        let _ = warnings;
        true
    }

    /// Annotations of the Namespace named `name`; `None` when it is not known.
    fn namespace_annotations(&self, name: &str) -> Option<Map<String, Value>> {
        let _ = name;
        None
    }
}

/// A caller that knows nothing about the cluster (no node client, no namespaces).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoCluster;

impl ClusterFacts for NoCluster {}

/// Cluster facts from plain tables, for callers without caches.
#[derive(Debug, Clone, Default)]
pub struct StaticFacts {
    /// The cluster's nodes; `None` when the caller has no node client.
    pub nodes: Option<Vec<Node>>,
    /// Annotations of the Namespace objects the caller knows, by namespace name.
    pub namespaces: BTreeMap<String, Map<String, Value>>,
}

impl ClusterFacts for StaticFacts {
    fn has_nodes(&self) -> bool {
        self.nodes.is_some()
    }

    fn kubelet_version(&self, name: &str) -> Option<String> {
        let nodes = self.nodes.as_ref()?;
        nodes
            .iter()
            .find(|n| n.name == name)
            .map(|n| n.kubelet_version.clone())
    }

    fn all_nodes_native(&self, warnings: &mut Vec<String>) -> bool {
        self.nodes
            .iter()
            .flatten()
            .all(|n| node_supports_native(&n.name, &n.kubelet_version, warnings))
    }

    fn namespace_annotations(&self, name: &str) -> Option<Map<String, Value>> {
        self.namespaces.get(name).cloned()
    }
}

/// Native sidecar decision of the webhook: fixed modes answer at once; auto mode asks `cluster`
/// whether the pod's node (`node_name`, empty when unscheduled) runs a kubelet of at least 1.33,
/// else whether every node does.
pub fn detect_native_sidecars(
    mode: NativeMode,
    cluster: &dyn ClusterFacts,
    node_name: &str,
    warnings: &mut Vec<String>,
) -> bool {
    match mode {
        NativeMode::Enabled => return true,
        NativeMode::Disabled => return false,
        NativeMode::Auto => {}
    }
    if !cluster.has_nodes() {
        warnings.push(
            "configured to auto detect native sidecar support, but couldn't find a client".into(),
        );
        return false;
    }
    if !node_name.is_empty() {
        match cluster.kubelet_version(node_name) {
            Some(version) => return node_supports_native(node_name, &version, warnings),
            None => warnings.push(format!(
                "pod assigned to node {node_name:?} but node not found in cluster"
            )),
        }
    }
    cluster.all_nodes_native(warnings)
}

/// [`kubelet_supports_native`] for one node; an unreadable version does not, with Istio's
/// warning line.
pub fn node_supports_native(name: &str, version: &str, warnings: &mut Vec<String>) -> bool {
    match kubelet_supports_native(version) {
        Ok(supported) => supported,
        Err(e) => {
            warnings.push(format!(
                "could not read node version for {name} {version}: {e}"
            ));
            false
        }
    }
}

/// Whether a kubelet of `version` runs native sidecars: its minor version is at least
/// [`NATIVE_SIDECAR_MIN_MINOR`] (the major is ignored, as Istio does). The one parser of
/// kubelet versions: the server's node cache uses it too.
pub fn kubelet_supports_native(version: &str) -> Result<bool, VersionError> {
    kubelet_minor(version).map(|minor| minor >= NATIVE_SIDECAR_MIN_MINOR)
}

/// A kubelet version that is not a semantic version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("could not parse {version:?} as version{}", .reason.as_ref().map(|r| format!(": {r}")).unwrap_or_default())]
pub struct VersionError {
    /// The version text.
    pub version: String,
    /// Why the minor number does not parse, when the shape was right.
    pub reason: Option<String>,
}

/// Minor component of a semantic version such as `v1.33.1-gke.100`.
pub fn kubelet_minor(version: &str) -> Result<u64, VersionError> {
    let v = version.strip_prefix('v').unwrap_or(version);
    let core = v.split(['-', '+']).next().unwrap_or("");
    let parts: Vec<&str> = core.split('.').collect();
    let numeric = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !(2..=3).contains(&parts.len()) || !parts.iter().all(|p| numeric(p)) {
        return Err(VersionError {
            version: version.to_string(),
            reason: None,
        });
    }
    parts[1].parse::<u64>().map_err(|e| VersionError {
        version: version.to_string(),
        reason: Some(e.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_sidecar_detection() {
        let node = |n: &str, v: &str| Node {
            name: n.into(),
            kubelet_version: v.into(),
        };
        let nodes = |list: Vec<Node>| StaticFacts {
            nodes: Some(list),
            namespaces: BTreeMap::new(),
        };
        let detect = |mode, facts: &dyn ClusterFacts, name: &str, w: &mut Vec<String>| {
            detect_native_sidecars(mode, facts, name, w)
        };
        let mut w = Vec::new();
        assert!(detect(NativeMode::Enabled, &NoCluster, "", &mut w));
        assert!(!detect(NativeMode::Disabled, &nodes(vec![]), "", &mut w));
        assert!(!detect(NativeMode::Auto, &NoCluster, "", &mut w));
        assert!(w[0].contains("couldn't find a client"));
        let new = nodes(vec![node("a", "v1.33.0"), node("b", "v1.34.2-gke.100")]);
        assert!(detect(NativeMode::Auto, &new, "", &mut w));
        assert!(detect(NativeMode::Auto, &nodes(vec![]), "", &mut w));
        let mixed = nodes(vec![node("new", "v1.33.0"), node("old", "1.32.9")]);
        assert!(!detect(NativeMode::Auto, &mixed, "", &mut w));
        assert!(detect(NativeMode::Auto, &mixed, "new", &mut w));
        let mut w = Vec::new();
        assert!(!detect(NativeMode::Auto, &mixed, "gone", &mut w));
        assert_eq!(
            w,
            vec!["pod assigned to node \"gone\" but node not found in cluster".to_string()]
        );
        let mut w = Vec::new();
        assert!(!detect(
            NativeMode::Auto,
            &nodes(vec![node("x", "banana")]),
            "",
            &mut w
        ));
        assert!(
            w[0].starts_with("could not read node version for x banana"),
            "{w:?}"
        );
        assert_eq!(kubelet_minor("v2.40.1+meta"), Ok(40));
        assert_eq!(
            kubelet_minor("v1").unwrap_err().to_string(),
            "could not parse \"v1\" as version"
        );
        assert_eq!(
            kubelet_minor("v1.99999999999999999999").unwrap_err().to_string(),
            "could not parse \"v1.99999999999999999999\" as version: number too large to fit in target type"
        );
        assert_eq!(NativeMode::parse("auto").0, NativeMode::Auto);
        assert!(NativeMode::parse("yes").1.is_some());
    }

    #[test]
    fn kubelet_versions_are_read_as_go_semver_does() {
        for (version, native) in [
            ("v1.33", true),
            ("v1.033.0", true),
            ("v1.33.0", true),
            ("1.34.2+k3s1", true),
            ("v1.32.5-gke.100", false),
            ("v2.10.0", false),
        ] {
            assert_eq!(kubelet_supports_native(version), Ok(native), "{version}");
        }
        for bad in ["", "v1", "garbage", "v1.x.0", "v1.2.3.4"] {
            assert!(kubelet_supports_native(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn native_mode_from_the_environment() {
        assert_eq!(NativeMode::from_env(None), (NativeMode::Auto, None));
        assert_eq!(NativeMode::from_env(Some("true")).0, NativeMode::Enabled);
        assert_eq!(
            NativeMode::from_env(Some("bogus")),
            (
                NativeMode::Disabled,
                Some("Unknown value for ENABLE_NATIVE_SIDECARS: bogus, defaulting to false".into())
            )
        );
        assert_eq!(NativeMode::from_env(Some("")).0, NativeMode::Disabled);
    }
}
