//! Kubernetes API integration (kube-rs over rustls): certificate bootstrap and caBundle sync,
//! ConfigMap-driven configuration, cached node and namespace facts, Events, the live mode
//! of `outrigger check`, and the ConfigMaps `outrigger inject --kube` reads.
//!
//! These are library-style building blocks; `serve --kube` (`crate::serve::kube_mode`) wires
//! them together. Every function takes a [`::kube::Client`], so tests drive them with a mock
//! service that asserts the exact requests made. The few items serve does not call carry their
//! own `allow(dead_code)` with the reason.

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
