//! outrigger's cluster integration and what every command loads, below the binary's commands
//! (which this crate cannot name: it does not depend on the binary, nor on clap but for the
//! `clap` feature's `ValueEnum`s of [`webhook_object`]).
//!
//! Kubernetes API integration (kube-rs over rustls): certificate bootstrap and caBundle sync
//! ([`certs`]), ConfigMap-driven configuration ([`config_watch`]), cached node and namespace
//! facts ([`nodes`], [`namespaces`]), Events ([`events`]), the webhook configuration
//! ([`webhook_object`], [`activation`]), the live mode of `outrigger check` ([`check`]), and the
//! ConfigMaps `outrigger inject --kube` reads ([`inject_source`]). `serve --kube` (the binary's
//! `serve::kube_mode`) wires them together through [`runtime::start`]. Every function takes a
//! [`::kube::Client`], so tests drive them with a mock service that asserts the exact requests
//! made.
//!
//! Beside them, what the commands share: the injector configuration's loading
//! ([`config_source`]: files, `--config-dir`, the cluster's ConfigMaps, else the embedded
//! default), certificates ([`pki`]), how errors are said ([`report`]), what templates may read of
//! the environment ([`template_env`]) and the install's names ([`defaults`]). The binary's flag
//! groups convert to the plain settings taken here ([`config_source::ConfigPaths`],
//! [`config_source::ClusterSource`], [`runtime::KubeSettings`]).

// Its docs are read by the binary's developers: links to private items are meant.
#![allow(rustdoc::private_intra_doc_links)]

pub mod activation;
pub mod certs;
pub mod check;
pub mod client;
pub mod config_source;
pub mod config_watch;
pub mod defaults;
pub mod drift_facts;
pub mod event_hold;
pub mod events;
pub mod inject_source;
#[cfg(test)]
pub(crate) mod mock;
pub mod namespaces;
pub mod nodes;
pub mod objects;
pub mod overlap;
pub mod pki;
pub mod pods;
pub mod probe;
pub mod report;
pub mod runtime;
pub mod template_env;
pub mod webhook_object;
