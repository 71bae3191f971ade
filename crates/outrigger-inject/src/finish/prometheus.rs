//! Prometheus merge: the application's scrape annotations are handed to the
//! agent and replaced by the agent's merged endpoint; the secure-port annotation too.

use serde_json::{Map, Value};

use super::tree::{json_bool, parse_go_bool};
use super::{MERGE_METRICS, PROMETHEUS_ENV, SECURE_PORT, SECURE_PORT_ENV};
use crate::go::json as gojson;
use crate::go::strconv::atoi;
use crate::json::Scan;
use crate::kube::annotations::SECURE_PORT_ANNOTATION;
use crate::kube::pod::{
    annotations, env_entry, env_mut, existing_annotations_mut, find_sidecar, find_sidecar_mut,
};
use crate::kube::prometheus::{
    first_sanitized, remove_prometheus_annotations, sanitized_values, sanitizes_to, PATH, PORT,
    SCRAPE, TARGETS,
};
use crate::mesh::default_status_port;

/// Results of the Prometheus merge: [`ScrapeError`] unless said otherwise.
type Result<T, E = ScrapeError> = std::result::Result<T, E>;

/// A Prometheus scrape configuration the agent cannot serve.
#[derive(Debug, thiserror::Error)]
pub enum ScrapeError {
    /// Not a port number.
    #[error("{annotation}: invalid {what} {port:?}")]
    InvalidPort {
        /// The annotation (or scrape target) being read.
        annotation: String,
        /// `port`, `secure port`, ...
        what: &'static str,
        /// The text given.
        port: String,
    },
    /// The agent's own port.
    #[error("{annotation}: {what} {port} conflicts with agent port")]
    AgentPort {
        /// The annotation being read.
        annotation: String,
        /// `port`, ...
        what: &'static str,
        /// The port.
        port: i64,
    },
    /// A port Istio reserves.
    #[error("{annotation}: {what} {port} is reserved for Istio ({reason}) and cannot be scraped")]
    Reserved {
        /// The annotation being read.
        annotation: String,
        /// `port`, ...
        what: &'static str,
        /// The port.
        port: i64,
        /// What Istio uses it for.
        reason: &'static str,
    },
}

/// One `port[:path]` entry of `prometheus.istio.io/scrape-targets`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ScrapeTarget {
    port: String,
    path: String,
}

/// The user's scrape configuration, handed to the agent in `ISTIO_PROMETHEUS_ANNOTATIONS`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct ScrapeConfig {
    scrape: String,
    path: String,
    port: String,
    targets: Vec<ScrapeTarget>,
}

impl ScrapeConfig {
    fn is_empty(&self) -> bool {
        self.scrape.is_empty()
            && self.path.is_empty()
            && self.port.is_empty()
            && self.targets.is_empty()
    }

    fn to_json(&self) -> String {
        let mut m = Map::new();
        m.insert("scrape".into(), Value::String(self.scrape.clone()));
        m.insert("path".into(), Value::String(self.path.clone()));
        m.insert("port".into(), Value::String(self.port.clone()));
        if !self.targets.is_empty() {
            let targets = self
                .targets
                .iter()
                .map(|t| {
                    let mut o = Map::new();
                    o.insert("port".into(), Value::String(t.port.clone()));
                    o.insert("path".into(), Value::String(t.path.clone()));
                    Value::Object(o)
                })
                .collect();
            m.insert("targets".into(), Value::Array(targets));
        }
        gojson::to_string(&Value::Object(m))
    }
}

/// Ports the agent must never be asked to scrape, with the reason used in errors.
const RESERVED_PORTS: [(i64, &str); 9] = [
    (15000, "Envoy admin"),
    (15001, "outbound traffic capture"),
    (15004, "pilot debug"),
    (15006, "inbound traffic capture"),
    (15008, "HBONE tunnel"),
    (15020, "pilot-agent status / merged Prometheus"),
    (15021, "Envoy health"),
    (15053, "DNS proxy"),
    (15090, "Envoy Prometheus (already merged)"),
];

/// Parse `prometheus.istio.io/scrape-targets`; an empty port discards the whole annotation.
fn parse_scrape_targets(key: &str, raw: &str, warnings: &mut Vec<String>) -> Vec<ScrapeTarget> {
    let mut out = Vec::new();
    for entry in raw.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (port, path) = match entry.split_once(':') {
            Some((port, path)) => (port.trim(), path.trim()),
            None => (entry, ""),
        };
        if port.is_empty() {
            warnings.push(format!(
                "failed to parse {key} annotation: empty port in scrape target {entry:?}"
            ));
            return Vec::new();
        }
        let path = if path.is_empty() { "/metrics" } else { path };
        out.push(ScrapeTarget {
            port: port.to_string(),
            path: path.to_string(),
        });
    }
    out
}

/// Validate one port to scrape (`what` is `target port` or `port`).
fn validate_scrape_port(
    port: &str,
    agent_port: &str,
    prefix: &str,
    what: &'static str,
) -> Result<()> {
    let n = atoi(port)
        .ok()
        .filter(|n| (1..=65535).contains(n))
        .ok_or_else(|| ScrapeError::InvalidPort {
            annotation: prefix.to_string(),
            what,
            port: port.to_string(),
        })?;
    if n.to_string() == agent_port {
        return Err(ScrapeError::AgentPort {
            annotation: prefix.to_string(),
            what,
            port: n,
        });
    }
    if let Some((_, reason)) = RESERVED_PORTS.iter().find(|(p, _)| *p == n) {
        return Err(ScrapeError::Reserved {
            annotation: prefix.to_string(),
            what,
            port: n,
            reason,
        });
    }
    Ok(())
}

/// Collect and validate the scrape configuration (port, path, scrape targets).
fn scrape_configuration(
    annotations: &Map<String, Value>,
    agent_port: &str,
    warnings: &mut Vec<String>,
) -> Result<ScrapeConfig> {
    let get = |name: &str| first_sanitized(annotations, name).unwrap_or("").to_string();
    let mut cfg = ScrapeConfig {
        scrape: get(SCRAPE),
        path: get(PATH),
        port: get(PORT),
        targets: Vec::new(),
    };
    let mut target_keys: Vec<&String> = annotations
        .keys()
        .filter(|k| sanitizes_to(k, TARGETS))
        .collect();
    target_keys.sort();
    if let Some(key) = target_keys.first() {
        if let Some(raw) = annotations[*key].as_str() {
            cfg.targets = parse_scrape_targets(key, raw, warnings);
        }
    }
    if let Some(first) = cfg.targets.first() {
        cfg.port = first.port.clone();
        cfg.path = first.path.clone();
        for t in &cfg.targets {
            validate_scrape_port(
                &t.port,
                agent_port,
                "invalid prometheus scrape targets",
                "target port",
            )?;
        }
    } else if !cfg.port.is_empty() {
        validate_scrape_port(
            &cfg.port,
            agent_port,
            "invalid prometheus scrape configuration",
            "port",
        )?;
    }
    Ok(cfg)
}

/// The first valid `prometheus_io_scrape` spelling decides; none → true.
fn prometheus_scrape(annotations: &Map<String, Value>) -> bool {
    sanitized_values(annotations, SCRAPE)
        .into_iter()
        .find_map(parse_go_bool)
        .unwrap_or(true)
}

/// Annotation `prometheus.istio.io/merge-metrics`, else mesh
/// `enablePrometheusMerge`, else true.
fn prometheus_merge_enabled(
    annotations: &Map<String, Value>,
    mesh: &Value,
    warnings: &mut Vec<String>,
) -> bool {
    if let Some(v) = annotations.scan(MERGE_METRICS).and_then(Value::as_str) {
        match parse_go_bool(v) {
            Some(b) => return b,
            // [quirk] the reference logs the parsed zero value, not the annotation's value.
            None => warnings.push(format!("invalid annotation {MERGE_METRICS}=false")),
        }
    }
    mesh.scan("enablePrometheusMerge")
        .and_then(json_bool)
        .unwrap_or(true)
}

/// Merge the application's Prometheus annotations into the agent.
pub(super) fn apply_prometheus_merge(
    pod: &mut Value,
    mesh: &Value,
    warnings: &mut Vec<String>,
) -> Result<()> {
    let Some(ann) = annotations(pod) else {
        return Ok(());
    };
    if !(prometheus_scrape(ann) && prometheus_merge_enabled(ann, mesh, warnings)) {
        return Ok(());
    }
    let target = default_status_port(mesh).to_string();
    if sanitized_values(ann, PORT).iter().any(|v| *v == target) {
        return Ok(());
    }
    let cfg = scrape_configuration(ann, &target, warnings)?;
    if !cfg.is_empty() {
        if let Some(sidecar) = find_sidecar_mut(pod) {
            env_mut(sidecar).push(env_entry(PROMETHEUS_ENV, &cfg.to_json()));
        }
    }
    if let Some(ann) = existing_annotations_mut(pod) {
        remove_prometheus_annotations(ann);
        ann.insert("prometheus.io/port".into(), Value::String(target));
        ann.insert("prometheus.io/path".into(), "/stats/prometheus".into());
        ann.insert("prometheus.io/scrape".into(), "true".into());
    }
    Ok(())
}

/// Publish the sidecar's `ENVOY_SECURE_MERGED_METRICS_PORT` as
/// `prometheus.istio.io/secure-port` unless the pod already has that annotation.
pub(super) fn apply_secure_port(pod: &mut Value) {
    let Some(ann) = annotations(pod) else {
        return;
    };
    if ann.keys().any(|k| sanitizes_to(k, SECURE_PORT)) {
        return;
    }
    let port = find_sidecar(pod)
        .and_then(|s| s.scan("env"))
        .and_then(Value::as_array)
        .and_then(|env| {
            env.iter()
                .find(|e| e.scan("name").and_then(Value::as_str) == Some(SECURE_PORT_ENV))
        })
        .map(|e| e.scan("value").and_then(Value::as_str).unwrap_or(""))
        .filter(|v| !v.is_empty() && *v != "0")
        .map(str::to_string);
    if let (Some(port), Some(ann)) = (port, existing_annotations_mut(pod)) {
        ann.insert(SECURE_PORT_ANNOTATION.into(), Value::String(port));
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use crate::finish::tree::ensure_metadata_maps;
    use crate::finish::PROXY_CONTAINER;
    use serde_json::json;

    use super::*;
    use crate::finish::tests::corpus::{case_pairs, reinjected};
    use crate::finish::tests::*;
    use crate::kube::prometheus::sanitize_label_name;

    #[test]
    fn prometheus_scrape_false_keeps_annotation() {
        for name in ["prometheus.io/scrape", "prometheus.io.scrape"] {
            let mut pod = merged(json!({name: "false"}), json!([{"name": "hello"}]));
            Inputs::new().run(&mut pod).expect("post-process");
            let ann = pod["metadata"]["annotations"]
                .as_object()
                .expect("annotations");
            assert_eq!(ann[name], "false");
            assert!(!ann.contains_key("prometheus.io/port"));
            assert_eq!(sidecar_env(&pod, PROMETHEUS_ENV), None);
        }
        if let Some(text) = golden("prometheus-scrape.yaml.injected") {
            assert!(text.contains("prometheus.io/scrape: \"false\""));
            assert!(!text.contains(PROMETHEUS_ENV));
        }
    }

    #[test]
    fn prometheus_multiport_targets_match_golden() {
        let mut pod = merged(
            json!({"prometheus.io/scrape": "true", "prometheus.istio.io/scrape-targets": "8080:/metrics,9100:/custom-metrics"}),
            json!([{"name": "hello"}]),
        );
        Inputs::new().run(&mut pod).expect("post-process");
        let v = sidecar_env(&pod, PROMETHEUS_ENV).expect("env");
        assert_eq!(
            v,
            r#"{"scrape":"true","path":"/metrics","port":"8080","targets":[{"port":"8080","path":"/metrics"},{"port":"9100","path":"/custom-metrics"}]}"#
        );
        if let Some(g) = golden_env("hello-multiport-metrics.yaml.injected", PROMETHEUS_ENV) {
            assert_eq!(v, g);
        }
        let ann = pod["metadata"]["annotations"]
            .as_object()
            .expect("annotations");
        assert!(!ann.contains_key("prometheus.istio.io/scrape-targets"));
        assert_eq!(ann["prometheus.io/port"], "15020");
    }

    #[test]
    fn prometheus_port_only_and_env_order() {
        let mut inputs = Inputs::new();
        inputs
            .envs
            .insert("ISTIO_META_NETWORK".into(), "network1".into());
        inputs
            .envs
            .insert("ISTIO_META_CLUSTER_ID".into(), "c1".into());
        let mut pod = merged(
            json!({"prometheus-io/port": "8080"}),
            json!([{"name": "hello"}]),
        );
        inputs.run(&mut pod).expect("post-process");
        assert_eq!(
            sidecar_env(&pod, PROMETHEUS_ENV).as_deref(),
            Some(r#"{"scrape":"","path":"","port":"8080"}"#)
        );
        assert_eq!(
            env_names(&pod),
            [
                "TRUST_DOMAIN",
                "ISTIO_META_CLUSTER_ID",
                "ISTIO_META_NETWORK",
                PROMETHEUS_ENV
            ]
        );
        assert_eq!(
            sidecar_env(&pod, "ISTIO_META_CLUSTER_ID").as_deref(),
            Some("c1")
        );
        assert_eq!(
            pod["metadata"]["labels"]["topology.istio.io/network"],
            "network1"
        );
        let ann = pod["metadata"]["annotations"]
            .as_object()
            .expect("annotations");
        assert!(!ann.contains_key("prometheus-io/port"));
    }

    #[test]
    fn prometheus_already_merged_is_untouched() {
        let mut pod = merged(
            json!({"prometheus.io/port": "15020", "prometheus.io/path": "/custom"}),
            json!([{"name": "hello"}]),
        );
        Inputs::new().run(&mut pod).expect("post-process");
        assert_eq!(
            pod["metadata"]["annotations"]["prometheus.io/path"],
            "/custom"
        );
        assert_eq!(sidecar_env(&pod, PROMETHEUS_ENV), None);
    }

    #[test]
    fn prometheus_merge_disabled() {
        let mut pod = merged(
            json!({"prometheus.istio.io/merge-metrics": "false"}),
            json!([{"name": "a"}]),
        );
        Inputs::new().run(&mut pod).expect("post-process");
        assert!(pod["metadata"]["annotations"]
            .get("prometheus.io/port")
            .is_none());
        let mut inputs = Inputs::new();
        inputs.mesh["enablePrometheusMerge"] = json!(false);
        let mut pod = merged(json!({}), json!([{"name": "a"}]));
        inputs.run(&mut pod).expect("post-process");
        assert!(pod["metadata"]["annotations"]
            .get("prometheus.io/port")
            .is_none());
        // invalid annotation: warning, falls back to mesh (false here)
        let mut pod = merged(
            json!({"prometheus.istio.io/merge-metrics": "maybe"}),
            json!([{"name": "a"}]),
        );
        let w = inputs.run(&mut pod).expect("post-process");
        assert!(
            w.contains(&"invalid annotation prometheus.istio.io/merge-metrics=false".to_string())
        );
        assert!(pod["metadata"]["annotations"]
            .get("prometheus.io/port")
            .is_none());
        // annotation true beats mesh false
        let mut pod = merged(
            json!({"prometheus.istio.io/merge-metrics": "true"}),
            json!([{"name": "a"}]),
        );
        inputs.run(&mut pod).expect("post-process");
        assert_eq!(
            pod["metadata"]["annotations"]["prometheus.io/port"],
            "15020"
        );
    }

    fn prom_err(annotations: Value) -> String {
        let mut pod = merged(annotations, json!([{"name": "a"}]));
        Inputs::new()
            .run(&mut pod)
            .expect_err("should fail")
            .to_string()
    }

    #[test]
    fn prometheus_validation_errors() {
        assert_eq!(
            prom_err(json!({"prometheus.io/port": "15090"})),
            "invalid prometheus scrape configuration: port 15090 is reserved for Istio (Envoy Prometheus (already merged)) and cannot be scraped"
        );
        assert_eq!(
            prom_err(json!({"prometheus.io/port": "abc"})),
            "invalid prometheus scrape configuration: invalid port \"abc\""
        );
        assert_eq!(
            prom_err(json!({"prometheus.io/port": "70000"})),
            "invalid prometheus scrape configuration: invalid port \"70000\""
        );
        assert_eq!(
            prom_err(json!({"prometheus.io/port": "+15020"})),
            "invalid prometheus scrape configuration: port 15020 conflicts with agent port"
        );
        assert_eq!(
            prom_err(json!({"prometheus.istio.io/scrape-targets": "8080, x:/m"})),
            "invalid prometheus scrape targets: invalid target port \"x\""
        );
        assert_eq!(
            prom_err(json!({"prometheus.istio.io/scrape-targets": "15020"})),
            "invalid prometheus scrape targets: target port 15020 conflicts with agent port"
        );
        assert_eq!(
            prom_err(json!({"prometheus.istio.io/scrape-targets": "9000,15021:/x"})),
            "invalid prometheus scrape targets: target port 15021 is reserved for Istio (Envoy health) and cannot be scraped"
        );
    }

    #[test]
    fn scrape_targets_parsing() {
        let mut w = Vec::new();
        let t = parse_scrape_targets("k", " 8080 , ,9100: /m ,", &mut w);
        assert_eq!(
            t,
            vec![
                ScrapeTarget {
                    port: "8080".into(),
                    path: "/metrics".into()
                },
                ScrapeTarget {
                    port: "9100".into(),
                    path: "/m".into()
                }
            ]
        );
        assert!(w.is_empty());
        let t = parse_scrape_targets("k", "8080,:/x", &mut w);
        assert!(t.is_empty());
        assert_eq!(
            w,
            vec!["failed to parse k annotation: empty port in scrape target \":/x\""]
        );
    }

    #[test]
    fn secure_port_annotation() {
        let mut pod = merged(json!({}), json!([{"name": "a"}]));
        pod["spec"]["initContainers"][1]["env"] = json!([
            {"name": "ENVOY_SECURE_MERGED_METRICS_PORT", "value": "15091"}]);
        Inputs::new().run(&mut pod).expect("post-process");
        assert_eq!(
            pod["metadata"]["annotations"]["prometheus.istio.io/secure-port"],
            "15091"
        );
        for (ann, value) in [
            (json!({}), "0"),
            (json!({"prometheus.istio.io.secure-port": "1"}), "15091"),
        ] {
            let mut pod = merged(ann, json!([{"name": "a"}]));
            pod["spec"]["initContainers"][1]["env"] = json!([
                {"name": "ENVOY_SECURE_MERGED_METRICS_PORT", "value": value}]);
            Inputs::new().run(&mut pod).expect("post-process");
            assert!(pod["metadata"]["annotations"]
                .get("prometheus.istio.io/secure-port")
                .is_none());
        }
    }

    // Corpus sweep: inputs and goldens read with yaml-rust2.

    fn prometheus_view(pod: &Value) -> (BTreeMap<String, String>, Option<String>) {
        let ann = annotations(pod)
            .into_iter()
            .flatten()
            .filter(|(k, _)| {
                matches!(
                    sanitize_label_name(k).as_str(),
                    SCRAPE | PORT | PATH | TARGETS | SECURE_PORT
                )
            })
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
            .collect();
        let env = find_sidecar(pod)
            .and_then(|s| s.get("env"))
            .and_then(Value::as_array)
            .and_then(|env| env.iter().find(|e| e["name"] == PROMETHEUS_ENV))
            .and_then(|e| e["value"].as_str())
            .map(str::to_string);
        (ann, env)
    }

    #[cfg_attr(
        not(corpus_present),
        ignore = "needs Istio's conformance corpus in ../shared beside the checkout"
    )]
    #[test]
    fn prometheus_merge_matches_goldens() {
        let Some(pairs) = case_pairs() else {
            return;
        };
        let mesh = mesh();
        let mut checked = 0;
        for (name, mut input, golden) in pairs {
            // CronJob goldens carry the pod metadata on the job template (Istio quirk).
            if find_sidecar(&golden).is_none() || !reinjected(&golden) {
                continue;
            }
            ensure_metadata_maps(&mut input).expect("maps");
            if find_sidecar(&input).is_none() {
                let spec = input["spec"].as_object_mut().expect("spec");
                let cs = spec.entry("containers").or_insert_with(|| json!([]));
                if let Some(cs) = cs.as_array_mut() {
                    cs.push(json!({"name": PROXY_CONTAINER, "env": []}));
                }
            }
            let mut w = Vec::new();
            apply_prometheus_merge(&mut input, &mesh, &mut w).expect(&name);
            assert_eq!(prometheus_view(&input), prometheus_view(&golden), "{name}");
            checked += 1;
        }
        eprintln!("prometheus merge checked on {checked} corpus pods");
        assert!(checked > 50, "only {checked} pods checked");
    }
}
