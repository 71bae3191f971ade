//! Post-processing of the merged pod (spec §8).
//!
//! PLACEHOLDER in main: the real module lands from the `decide` work stream.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// Inputs of post-processing.
#[derive(Debug)]
pub struct PostProcess<'a> {
    /// Mesh config.
    pub mesh: &'a Value,
    /// Values.
    pub values: &'a Value,
    /// Proxy environment.
    pub proxy_envs: &'a BTreeMap<String, String>,
    /// Revision.
    pub revision: &'a str,
    /// Injected annotations.
    pub injected_annotations: &'a BTreeMap<String, String>,
    /// Template pod.
    pub template_pod: &'a Value,
    /// Original pod.
    pub original_pod: &'a Value,
    /// Mesh with the original pod's proxy.istio.io/config applied.
    pub proxy_config_annotation_mesh: Option<&'a Value>,
}

/// Post-process.
pub fn post_process(pod: &mut Value, p: &PostProcess<'_>) -> crate::Result<()> {
    let _ = (pod, p);
    todo!()
}

/// Strip prometheus annotations pointing at the status port.
pub fn strip_prometheus_annotations(annotations: &mut Map<String, Value>, status_port: i64) {
    let _ = (annotations, status_port);
    todo!()
}
