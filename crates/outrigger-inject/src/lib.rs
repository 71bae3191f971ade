//! # outrigger-inject
//!
//! The injection pipeline of outrigger, an Istio-compatible sidecar injector, as a pure library:
//! no I/O, no async, no global mutable state. The webhook server and `outrigger inject` both call
//! [`inject::inject_pod`], so they cannot drift apart.
//!
//! Data flows one way: pod JSON → [`decide`] → [`render`] → [`merge`] → [`finish`] → [`patch`].
//! Pods stay `serde_json::Value` trees end to end, so fields unknown to our tables are never lost.

#![forbid(unsafe_code)]

pub mod error;

// Foundations: Go formatting, JSON helpers, Kubernetes types, YAML, templates, mesh config.
pub mod go;
pub mod json;
pub mod kube;
pub mod mesh;
pub mod template;
pub mod yaml;

// Inputs: injector configuration, values, embedded defaults.
pub mod config;

// The pipeline stages, in order.
pub mod decide;
pub mod finish;
pub mod ingest;
pub mod merge;
pub mod patch;
pub mod render;

// Orchestrators: one pod, an AdmissionReview, a manifest stream, a configuration's fitness,
// the explanation of a decision.
pub mod check;
pub mod guard;
pub mod inject;
pub mod kube_inject;
pub mod webhook;

#[cfg(test)]
mod testing;

pub use error::{Error, Result};
pub use inject::inject_pod;
