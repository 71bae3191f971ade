//! # outrigger-inject
//!
//! The injection pipeline of outrigger, an Istio-compatible sidecar injector, as a library without
//! I/O or async. The webhook ([`webhook::review`]) and `outrigger inject`
//! ([`kube_inject::inject_stream`], the loop [`kube_inject::inject_manifests`] and the
//! conformance suite run too) both inject a pod through [`inject`] (`inject_pod` and
//! its variants for a pod already normalised or owned), with parameters built by one builder
//! ([`inject::Settings`]), so they cannot drift apart; `outrigger check` explains the same
//! decision through [`check`], and `drift` and `preview` judge through [`drift::judge`] and
//! [`preview::evaluate`].
//! Every Istio rule has its owner here; the binary does I/O.
//!
//! State that outlives a call: the embedded schema tables, the template function table and a
//! few compiled regular expressions (built once on first use, read-only afterwards); a
//! per-thread memo of canonical quantity strings in [`kube::typed`] (a bounded cache of a pure
//! function: results are the same with or without it); and, with the `test-support` feature
//! only, a per-thread log of the texts [`yaml::from_str`] reads.
//!
//! ## Features
//!
//! - `test-support` (off by default): hooks for tests and fuzzing that are not part of the
//!   production API: `yaml::fast_from_str` and `yaml::slow_from_str` (the YAML loader's
//!   two paths separately) and `yaml::traced` (the texts the loader read on this thread;
//!   without the feature nothing is recorded). The crate's own tests and benches enable it
//!   through a dev-dependency on the crate itself; the fuzz targets enable it explicitly.
//!
//! Data flows one way through the stages, one module each:
//! pod JSON → [`ingest`] → [`decide`] → [`render`] → [`merge`] → [`finish`] → [`patch`] →
//! [`respond`] (the webhook's answer).
//! Pods stay `serde_json::Value` trees end to end, so fields unknown to our tables are never lost.
//!
//! The orchestrators run the stages, one per entry point, each stage once and in order:
//! [`inject`] one pod (annotations validated, previous injection stripped, render, merge,
//! finish), [`webhook`] an AdmissionReview (ingest, decide, inject, patch, respond),
//! [`kube_inject`] a stream of manifests, [`reinject`] a pod from scratch, [`drift`] and
//! [`preview`] a pod against a configuration, [`check`] the explanation of a decision, and
//! [`guard`] checks that a configuration can inject at all. Below the stages are their inputs
//! ([`config`], and [`unsupported`]: what a configuration's templates use that outrigger lacks)
//! and the engines they use: [`template`] (Go `text/template`), [`mesh`] (mesh and
//! proxy config), [`yaml`], [`kube`] (Kubernetes types), [`json`] and [`go`] (Go formatting);
//! [`work`] is the budget a review's steps check so that it ends at its deadline.
//!
//! Imports go one way: an orchestrator uses the stages (and [`inject`]); a stage uses earlier
//! stages, [`config`] and the engines; [`config`] uses the engines; each engine uses only the
//! engines after it in the list above. No stage imports a later stage or an orchestrator, and
//! there are no cycles.

#![forbid(unsafe_code)]

pub mod error;

// Engines: Go formatting, JSON helpers, Kubernetes types, YAML, mesh config, templates.
pub mod go;
pub mod json;
pub mod kube;
pub mod mesh;
pub mod template;
pub mod work;
pub mod yaml;

// Inputs: injector configuration, values, embedded defaults; what a configuration's templates
// use that outrigger lacks.
pub mod config;
pub mod unsupported;

// The pipeline stages, in order.
pub mod decide;
pub mod finish;
pub mod ingest;
pub mod merge;
pub mod patch;
pub mod render;
pub mod respond;

// Orchestrators: one pod, an AdmissionReview, a manifest stream, a configuration's fitness,
// the explanation of a decision.
pub mod check;
pub mod drift;
pub mod guard;
pub mod inject;
pub mod kube_inject;
pub mod preview;
pub mod reinject;
pub mod webhook;

#[cfg(test)]
mod testing;

pub use error::{Error, Result};
pub use inject::inject_pod;
