//! The `prometheus.io/*` pod annotations. Prometheus matches them after label-name
//! sanitisation, so `prometheus.io/port`, `prometheus_io_port` and `prometheus-io/port` are one
//! annotation; a name is compared in its sanitised form.

use serde_json::{Map, Value};

/// Sanitised name of `prometheus.io/scrape`.
pub const SCRAPE: &str = "prometheus_io_scrape";
/// Sanitised name of `prometheus.io/port`.
pub const PORT: &str = "prometheus_io_port";
/// Sanitised name of `prometheus.io/path`.
pub const PATH: &str = "prometheus_io_path";
/// Sanitised name of `prometheus.istio.io/scrape-targets`.
pub const TARGETS: &str = "prometheus_istio_io_scrape_targets";

/// Prometheus' label-name sanitisation: every character outside `[A-Za-z0-9_]` becomes `_`.
pub fn sanitize_label_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Does `name` sanitise (as [`sanitize_label_name`]) to `target`? Compares without allocating.
pub fn sanitizes_to(name: &str, target: &str) -> bool {
    let mut want = target.chars();
    for c in name.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '_' {
            c
        } else {
            '_'
        };
        if want.next() != Some(c) {
            return false;
        }
    }
    want.next().is_none()
}

/// Values of the annotations whose sanitised name is `sanitized`, in annotation-name order.
pub fn sanitized_values<'m>(annotations: &'m Map<String, Value>, sanitized: &str) -> Vec<&'m str> {
    let mut found: Vec<(&String, &str)> = annotations
        .iter()
        .filter(|(k, _)| sanitizes_to(k, sanitized))
        .filter_map(|(k, v)| v.as_str().map(|s| (k, s)))
        .collect();
    found.sort_by(|a, b| a.0.cmp(b.0));
    found.into_iter().map(|(_, v)| v).collect()
}

pub fn first_sanitized<'m>(
    annotations: &'m Map<String, Value>,
    sanitized: &str,
) -> Option<&'m str> {
    sanitized_values(annotations, sanitized).into_iter().next()
}

/// Undo of a previous Prometheus merge: if an annotation sanitising to `prometheus_io_port` equals `status_port`, remove
/// every spelling of the port, path, scrape and scrape-targets annotations.
pub fn strip_prometheus_annotations(annotations: &mut Map<String, Value>, status_port: i64) {
    let target = status_port.to_string();
    if sanitized_values(annotations, PORT)
        .iter()
        .any(|v| *v == target)
    {
        remove_prometheus_annotations(annotations);
    }
}

pub fn remove_prometheus_annotations(annotations: &mut Map<String, Value>) {
    annotations.retain(|k, _| {
        !matches!(
            sanitize_label_name(k).as_str(),
            SCRAPE | PORT | PATH | TARGETS
        )
    });
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn sanitize_and_strip() {
        assert_eq!(
            sanitize_label_name("prometheus.io/scrape"),
            "prometheus_io_scrape"
        );
        assert_eq!(sanitize_label_name("prometheus-io/é"), "prometheus_io__");
        for (name, target) in [
            ("prometheus-io/é", "prometheus_io__"),
            ("prometheus.io/port", "prometheus_io_port"),
            ("prometheus.io/port", "prometheus_io_por"),
            ("prometheus.io/por", "prometheus_io_port"),
            ("", ""),
            ("é", "_"),
        ] {
            assert_eq!(
                sanitizes_to(name, target),
                sanitize_label_name(name) == target,
                "{name:?} vs {target:?}"
            );
        }
        let mut ann: Map<String, Value> = serde_json::from_value(json!({
            "prometheus.io/port": "15020", "prometheus_io/path": "/x", "prometheus.io.scrape": "true",
            "prometheus.istio.io/scrape-targets": "1", "other": "y"}))
        .expect("map");
        let mut kept = ann.clone();
        strip_prometheus_annotations(&mut kept, 15021);
        assert_eq!(kept, ann);
        strip_prometheus_annotations(&mut ann, 15020);
        assert_eq!(ann.keys().collect::<Vec<_>>(), ["other"]);
    }
}
