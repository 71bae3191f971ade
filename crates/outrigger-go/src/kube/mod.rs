//! Go type facts of Kubernetes' API types and Istio's protobuf messages over JSON trees: the
//! embedded schema tables, per-struct indexes, the typed round-trip (normalisation as Go's
//! decoder and encoder would) and resource quantities.

pub mod index;
pub mod quantity;
pub mod schema;
pub mod typed;
