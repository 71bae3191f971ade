//! The embedded default configuration: an Istio-format injector config with outrigger's own
//! `sidecar` template, its values and a mesh config. Used when no configuration is given, so
//! `outrigger inject` and `outrigger serve` work on a fresh machine with no cluster.

/// Injector `config` (Istio's `istio-sidecar-injector` ConfigMap format).
pub const CONFIG: &str = include_str!("../../defaults/config.yaml");
/// Injector `values` (JSON).
pub const VALUES: &str = include_str!("../../defaults/values.json");
/// Mesh config (the `istio` ConfigMap's `mesh` key).
pub const MESH: &str = include_str!("../../defaults/mesh.yaml");

/// The embedded default as a snapshot.
pub fn snapshot() -> Result<crate::config::Snapshot, crate::config::ConfigError> {
    crate::config::Snapshot::load(CONFIG, VALUES, Some(MESH))
}
