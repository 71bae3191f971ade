//! Kubernetes types over JSON trees: the embedded schema tables, per-struct indexes, the typed
//! round-trip (normalisation as Go's decoder and encoder would), resource quantities, label
//! selectors and pod list pages.

pub mod admission_plugins;
pub mod annotations;
pub mod defaults;
pub mod dns1123;
pub mod index;
pub mod names;
pub mod pod;
pub mod pod_diff;
pub mod pod_list;
pub mod prometheus;
pub mod quantity;
pub mod schema;
pub mod selector;
pub mod stored;
pub mod typed;
pub mod validate;
