//! Kubernetes API integration (kube-rs over rustls): certificate bootstrap and caBundle sync,
//! ConfigMap-driven configuration, cached node and namespace facts, Events, and the live mode
//! of `outrigger check`.
//!
//! These are library-style building blocks; `serve --kube` (`crate::serve::kube_mode`) wires
//! them together. Every function takes a [`::kube::Client`], so tests drive them with a mock
//! service that asserts the exact requests made. The few items serve does not call carry their
//! own `allow(dead_code)` with the reason.

pub mod certs;
pub mod check;
pub mod config_watch;
pub mod events;
#[cfg(test)]
pub(crate) mod mock;
pub mod namespaces;
pub mod nodes;
pub mod runtime;
