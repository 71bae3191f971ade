//! Helpers on `serde_json` trees: cheap lookups in small objects.

pub mod lookup;
