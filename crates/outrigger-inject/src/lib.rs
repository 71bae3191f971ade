//! # outrigger-inject
//!
//! The injection pipeline of outrigger, an Istio-compatible sidecar injector, as a pure library:
//! no I/O, no async, no global mutable state. The webhook server and `outrigger inject` both call
//! [`inject::inject_pod`], so they cannot drift apart.
//!
//! Data flows one way: pod JSON → [`decision`] → [`template`] rendering → [`merge`] →
//! [`postprocess`] → [`patch`]. Pods stay `serde_json::Value` trees end to end, so fields unknown
//! to our tables are never lost.

#![forbid(unsafe_code)]

pub mod admission;
pub mod compact;
pub mod config;
pub mod decision;
pub mod defaults;
pub mod error;
pub mod gofloat;
pub mod gojson;
pub mod guard;
pub mod inject;
pub mod jsonmap;
pub mod k8s;
pub mod merge;
pub mod mesh;
pub mod patch;
pub mod postprocess;
pub mod schema;
pub mod template;
pub mod validate;
pub mod values;
pub mod workload;
pub mod yaml;

pub use error::{Error, Result};
