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
//! Every Istio rule has its owner here; the binary parses flags, does I/O and prints (its one
//! judgement of its own is which revision and namespace labels a manifest's pod is evaluated
//! against, from the decision flags).
//!
//! The Go-compatible engines it stands on (Go's `text/template` with Sprig, Go's YAML stack,
//! Go's formatting rules, the Go type facts of Kubernetes and Istio's messages, the work budget)
//! are the [`outrigger_go`] crate, which cannot name this one; the modules here name them by
//! their old paths (`crate::yaml`, `crate::template`, `crate::kube::typed`, ...). What only the
//! injector knows reaches the template engine with the data: `protoToJSON`'s encoder is
//! [`mesh::proto_to_json`].
//!
//! State that outlives a call: each `config::Snapshot`'s memo of renders and answers, and
//! outrigger-go's (its schema tables, template function table, quantity memo).
//!
//! ## Features
//!
//! - `test-support` (off by default): outrigger-go's hooks for tests and fuzzing that are not
//!   part of the production API (`outrigger_go::yaml::fast_from_str`, `slow_from_str`,
//!   `traced`). The crate's own tests and benches enable it through a dev-dependency on the
//!   crate itself; the fuzz targets enable it explicitly.
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
//! and the engines of injection they use: [`mesh`] (mesh and proxy config), [`kube`]
//! (Kubernetes rules) and [`json`], over outrigger-go's.
//!
//! Imports go one way: an orchestrator uses the stages (and [`inject`]); a stage uses earlier
//! stages, [`config`] and the engines; [`config`] uses the engines; each engine uses only the
//! engines before it in `tests/layering.rs`. No stage imports a later stage or an orchestrator,
//! and there are no cycles.

#![forbid(unsafe_code)]

pub mod error;

// The Go-compatible engines live in the outrigger-go crate; the modules here name them by
// their old paths (`crate::yaml`, `crate::template`, ...).
pub(crate) use outrigger_go::{go, template, work, yaml};

// Engines of injection: JSON helpers, Kubernetes types, mesh config.
pub mod json;
pub mod kube;
pub mod mesh;

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
