//! `preview --kube` in auto native-sidecar mode: each configuration's proxy form decided by the
//! cluster's nodes as Istio's webhook decides it at admission
//! ([`outrigger_inject::preview::auto_native_sidecars`]). The webhook sees a pod before the
//! scheduler has placed it, so a pod of a workload (its template names no node) is judged by
//! every node: on a cluster whose nodes are mixed, one kubelet older than 1.33 means no native
//! sidecars for any of them. A template that names its node is judged by that node.

use outrigger_inject::inject::InjectParams;
use outrigger_inject::preview::{self, Admission, NodeVersion};
use serde_json::Value;

use super::Configs;

/// Set `current` and `candidate`'s native-sidecar answers for `pod` from `admission`'s nodes,
/// for each configuration in auto mode; without nodes (offline, or nodes not listable) the
/// options' answer stands (auto is off then, as Istio's webhook without a node client).
pub(super) fn decide(
    pod: &Value,
    configs: &Configs<'_>,
    admission: &Admission,
    current: &mut InjectParams<'_>,
    candidate: &mut InjectParams<'_>,
) {
    let Some(nodes) = admission.nodes.as_deref() else {
        return;
    };
    if !(configs.auto.0 || configs.auto.1) {
        return;
    }
    let every_node = preview::every_node_native(nodes);
    let answer = preview::auto_native_sidecars(pod, nodes, every_node);
    if configs.auto.0 {
        current.native_sidecars = answer;
    }
    if configs.auto.1 {
        candidate.native_sidecars = answer;
    }
}

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
