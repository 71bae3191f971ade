//! Post-processing of the merged pod: cluster/network env, Prometheus merge, secure
//! port, probe rewriting, status annotation, injected annotations, container order.
//!
//! Everything works on the pod as a JSON tree. Where the reference iterates a Go map (several
//! spellings of one Prometheus annotation), we take annotation names in sorted order so the
//! outcome is deterministic.

mod env;
mod order;
pub mod probes;
pub mod prometheus;
pub mod status;
mod tree;

use std::collections::BTreeMap;

use serde_json::Value;

use crate::json::JsonError;
use crate::kube::annotations::{
    MERGE_METRICS_ANNOTATION as MERGE_METRICS, REWRITE_PROBERS_ANNOTATION as REWRITE_PROBERS,
    STATUS_PORT_ANNOTATION,
};
use crate::kube::names::{PROXY_CONTAINER, STATUS_ANNOTATION};
use crate::kube::typed::TypeError;
use prometheus::ScrapeError;

/// Why post-processing failed: the finish stage's error. Each case converts into the
/// crate-wide sum as its own error does (`Error::Json`, `Error::Type`, `Error::Scrape`).
#[derive(Debug, thiserror::Error)]
pub enum FinishError {
    /// The pod is not a JSON object.
    #[error(transparent)]
    Json(Box<JsonError>),
    /// A metadata field that must be an object is not.
    #[error(transparent)]
    Type(Box<TypeError>),
    /// A Prometheus scrape configuration the agent cannot serve.
    #[error(transparent)]
    Scrape(Box<ScrapeError>),
}

impl From<JsonError> for FinishError {
    fn from(e: JsonError) -> FinishError {
        FinishError::Json(Box::new(e))
    }
}

impl From<TypeError> for FinishError {
    fn from(e: TypeError) -> FinishError {
        FinishError::Type(Box::new(e))
    }
}

impl From<ScrapeError> for FinishError {
    fn from(e: ScrapeError) -> FinishError {
        FinishError::Scrape(Box::new(e))
    }
}

/// The proxy env var names finish writes (defined once, in [`crate::kube::names`], where
/// re-injection's recovery reads them too).
pub use crate::kube::names::{APP_PROBERS_ENV, PROMETHEUS_ENV};

const SECURE_PORT: &str = "prometheus_istio_io_secure_port";
const SECURE_PORT_ENV: &str = "ENVOY_SECURE_MERGED_METRICS_PORT";

/// Inputs of [`post_process`] besides the pod itself.
#[derive(Debug, Clone, Copy)]
pub struct PostProcess<'a> {
    /// Mesh config used by injection (canonical proto-JSON).
    pub mesh: &'a Value,
    /// Generic values tree.
    pub values: &'a Value,
    /// Proxy env after the cluster/network write-back (`ISTIO_META_CLUSTER_ID`,
    /// `ISTIO_META_NETWORK`).
    pub proxy_envs: &'a BTreeMap<String, String>,
    /// istiod revision; `""` is written as `default` in the status annotation.
    pub revision: &'a str,
    /// The config's `injectedAnnotations`.
    pub injected_annotations: &'a BTreeMap<String, String>,
    /// Accumulated rendering of the templates (source of the status annotation).
    pub template_pod: &'a Value,
    /// The pod before injection (unstripped).
    pub original_pod: &'a Value,
    /// Mesh with the original pod's `proxy.istio.io/config` applied (read by the container
    /// order step), `None` if
    /// the pod has no such annotation.
    pub proxy_config_annotation_mesh: Option<&'a Value>,
}

/// The finish stage: post-process the merged `pod` in place (cluster env, Prometheus merge,
/// secure port, probe rewrite, status metadata, container order, in that order). Returns the
/// warning log lines the reference would write.
pub fn post_process(pod: &mut Value, p: &PostProcess<'_>) -> Result<Vec<String>, FinishError> {
    let mut warnings = Vec::new();
    tree::ensure_metadata_maps(pod)?;
    env::apply_cluster_envs(pod, p.proxy_envs);
    prometheus::apply_prometheus_merge(pod, p.mesh, &mut warnings)?;
    prometheus::apply_secure_port(pod);
    probes::apply_probe_rewrite(pod, p, &mut warnings);
    status::apply_metadata(pod, p);
    order::reorder_containers(pod, p);
    Ok(warnings)
}

#[cfg(test)]
mod tests;
