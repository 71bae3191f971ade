//! Helpers on `serde_json` trees: cheap lookups in small objects and copies without spare
//! capacity.

pub mod compact;
pub mod lookup;
