//! Kubernetes over JSON trees: defaulting and validation as the API server does them, label
//! selectors, pod list pages, names, stored objects. The Go type facts they stand on (the
//! embedded schema tables, per-struct indexes, the typed round-trip, resource quantities) are
//! outrigger-go's [`outrigger_go::kube`], named here by their old paths.

pub(crate) use outrigger_go::kube::{index, quantity, schema, typed};

pub mod admission_plugins;
pub mod annotations;
pub mod defaults;
pub mod dns1123;
pub mod names;
pub mod pod;
pub mod pod_diff;
pub mod pod_list;
pub mod prometheus;
pub mod selector;
pub mod stored;
pub mod validate;

#[cfg(test)]
mod typed_tests;
