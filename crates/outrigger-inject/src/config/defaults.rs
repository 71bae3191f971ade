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

#[cfg(test)]
mod tests {
    use super::snapshot;

    /// The embedded default configuration's templates (Istio's) read the pod's labels and
    /// annotations and part of its spec, never its name, uid or node: pods of one workload share
    /// their renders.
    #[test]
    fn istios_templates_read_no_pod_identity() {
        let s = snapshot().expect("defaults");
        for (name, t) in &s.config.templates {
            let (meta, spec) = t.read_json_fields();
            let meta = meta.unwrap_or_else(|| panic!("{name} reads the metadata whole"));
            assert!(
                meta.iter().all(|f| f == "labels" || f == "annotations"),
                "{name}: {meta:?}"
            );
            let spec = spec.unwrap_or_else(|| panic!("{name} reads the spec whole"));
            assert!(!spec.iter().any(|f| f == "nodeName"), "{name}: {spec:?}");
            eprintln!("{name}: metadata {meta:?}, spec {spec:?}");
        }
    }
}
