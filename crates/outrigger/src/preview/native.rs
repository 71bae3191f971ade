//! `preview --kube` in auto native-sidecar mode: the line saying what the cluster's nodes give
//! each configuration in auto mode. The decision itself, per pod template as Istio's webhook
//! makes it at admission (by every node for a pod not yet scheduled), is the library's
//! ([`outrigger_inject::preview::evaluate`]).

use outrigger_inject::preview::{Configs, NodeVersion};

/// The line saying what auto mode gives a workload's pods in this cluster, for the
/// configurations in auto mode; `None` when neither is, or the nodes are not known.
pub(super) fn summary(configs: &Configs<'_>, nodes: Option<&[NodeVersion]>) -> Option<String> {
    let nodes = nodes?;
    let which = match configs.auto {
        (true, true) => "both configurations",
        (true, false) => "the configuration in force",
        (false, true) => "the candidate",
        (false, false) => return None,
    };
    let mut warnings = Vec::new();
    let old: Vec<String> = nodes
        .iter()
        .filter(|n| {
            !outrigger_inject::decide::native::node_supports_native(
                &n.name,
                &n.kubelet_version,
                &mut warnings,
            )
        })
        .map(|n| format!("{} ({})", n.name, n.kubelet_version))
        .collect();
    let how = "as Istio's webhook decides a pod not yet scheduled, by every node";
    Some(if old.is_empty() {
        format!(
            "native sidecars (auto mode, {which}): on, {how}: all {} nodes run kubelet 1.33 or \
             later",
            nodes.len()
        )
    } else {
        format!(
            "native sidecars (auto mode, {which}): off, {how}: {} of {} nodes run an older or \
             unreadable kubelet: {}",
            old.len(),
            nodes.len(),
            old.join(", ")
        )
    })
}

/// Print [`summary`] on standard error.
pub(super) fn report(configs: &Configs<'_>, nodes: Option<&[NodeVersion]>) {
    if let Some(line) = summary(configs, nodes) {
        eprintln!("{line}");
    }
}
