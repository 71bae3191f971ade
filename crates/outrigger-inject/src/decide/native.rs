//! Native sidecars: whether the proxy runs as a restartable init container
//! (`ENABLE_NATIVE_SIDECARS`, and in `auto` mode the kubelet versions of the cluster's nodes).

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
}

/// A cluster node as the native-sidecar detection sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// `metadata.name`.
    pub name: String,
    /// `status.nodeInfo.kubeletVersion`, e.g. `v1.33.1-gke.100`.
    pub kubelet_version: String,
}

/// A node-cache answer to "native sidecars for a pod on this node?" (the webhook's
/// `Context::native_sidecars`).
#[derive(Clone, Copy)]
pub struct NativeOracle<'a>(pub &'a (dyn Fn(&str) -> bool + Sync));

impl std::fmt::Debug for NativeOracle<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NativeOracle")
    }
}

/// Native sidecar decision of the webhook: in `Auto` mode the pod's node must run a kubelet of
/// at least 1.33, or every node when the pod is not scheduled yet (or its node is unknown). `nodes` is `None` without a node client.
pub fn detect_native_sidecars(
    mode: NativeMode,
    nodes: Option<&[Node]>,
    node_name: &str,
    warnings: &mut Vec<String>,
) -> bool {
    match mode {
        NativeMode::Enabled => return true,
        NativeMode::Disabled => return false,
        NativeMode::Auto => {}
    }
    let Some(nodes) = nodes else {
        warnings.push(
            "configured to auto detect native sidecar support, but couldn't find a client".into(),
        );
        return false;
    };
    if !node_name.is_empty() {
        match nodes.iter().find(|n| n.name == node_name) {
            Some(n) => return kubelet_supports_native(n, warnings),
            None => warnings.push(format!(
                "pod assigned to node {node_name:?} but node not found in cluster"
            )),
        }
    }
    nodes.iter().all(|n| kubelet_supports_native(n, warnings))
}

fn kubelet_supports_native(node: &Node, warnings: &mut Vec<String>) -> bool {
    match kubelet_minor(&node.kubelet_version) {
        Ok(minor) => minor >= NATIVE_SIDECAR_MIN_MINOR,
        Err(e) => {
            warnings.push(format!(
                "could not read node version for {} {}: {e}",
                node.name, node.kubelet_version
            ));
            false
        }
    }
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
        let mut w = Vec::new();
        assert!(detect_native_sidecars(
            NativeMode::Enabled,
            None,
            "",
            &mut w
        ));
        assert!(!detect_native_sidecars(
            NativeMode::Disabled,
            Some(&[]),
            "",
            &mut w
        ));
        assert!(!detect_native_sidecars(NativeMode::Auto, None, "", &mut w));
        assert!(w[0].contains("couldn't find a client"));
        let nodes = [node("a", "v1.33.0"), node("b", "v1.34.2-gke.100")];
        assert!(detect_native_sidecars(
            NativeMode::Auto,
            Some(&nodes),
            "",
            &mut w
        ));
        assert!(detect_native_sidecars(
            NativeMode::Auto,
            Some(&[]),
            "",
            &mut w
        ));
        let mixed = [node("new", "v1.33.0"), node("old", "1.32.9")];
        assert!(!detect_native_sidecars(
            NativeMode::Auto,
            Some(&mixed),
            "",
            &mut w
        ));
        assert!(detect_native_sidecars(
            NativeMode::Auto,
            Some(&mixed),
            "new",
            &mut w
        ));
        let mut w = Vec::new();
        assert!(!detect_native_sidecars(
            NativeMode::Auto,
            Some(&mixed),
            "gone",
            &mut w
        ));
        assert_eq!(
            w,
            vec!["pod assigned to node \"gone\" but node not found in cluster".to_string()]
        );
        let mut w = Vec::new();
        assert!(!detect_native_sidecars(
            NativeMode::Auto,
            Some(&[node("x", "banana")]),
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
}
