//! Fixtures of the finishing steps' tests, and tests of the stage as a whole (odd shapes, the
//! corpus goldens).

use serde_json::json;

use super::probes::dump_app_probers;
use super::*;
use crate::kube::pod::{annotations, container_name, find_sidecar};

pub(super) const CORPUS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/conformance/istio/cases"
);

/// The text of a corpus golden, `None` (with a notice) when the corpus is absent.
pub(super) fn golden(file: &str) -> Option<String> {
    let path = format!("{CORPUS}/{file}");
    let text = std::fs::read_to_string(&path).ok();
    if text.is_none() {
        eprintln!("corpus not found at {path}; skipping golden comparison");
    }
    text
}

/// Un-quote a YAML single-quoted scalar.
pub(super) fn single_quoted(v: &str) -> String {
    let v = v.strip_prefix('\'').and_then(|v| v.strip_suffix('\''));
    v.expect("single-quoted value").replace("''", "'")
}

/// The value of env `name` in a corpus golden (the corpus must contain it when present).
pub(super) fn golden_env(file: &str, name: &str) -> Option<String> {
    let text = golden(file)?;
    let mut lines = text.lines();
    lines
        .find(|l| l.trim() == format!("- name: {name}"))
        .expect("env in golden");
    let v = lines.next().and_then(|l| l.trim().strip_prefix("value: "));
    Some(single_quoted(v.expect("env value line")))
}

/// The value of annotation `name` in a corpus golden.
pub(super) fn golden_annotation(file: &str, name: &str) -> Option<String> {
    let text = golden(file)?;
    let prefix = format!("{name}: ");
    let v = text.lines().find_map(|l| l.trim().strip_prefix(&prefix));
    Some(single_quoted(v.expect("annotation in golden")))
}

pub(super) fn mesh() -> Value {
    json!({"defaultConfig": {"statusPort": 15020}, "enablePrometheusMerge": true})
}

pub(super) fn values() -> Value {
    json!({"sidecarInjectorWebhook": {"rewriteAppHTTPProbe": true}, "global": {"proxy": {}}})
}

pub(super) fn proxy() -> Value {
    json!({"name": "istio-proxy", "env": [
        {"name": "ISTIO_META_CLUSTER_ID", "value": "Kubernetes"},
        {"name": "TRUST_DOMAIN", "value": "cluster.local"}],
        "restartPolicy": "Always"})
}

pub(super) const VOLUMES: [&str; 9] = [
    "workload-socket",
    "credential-socket",
    "workload-certs",
    "istio-envoy",
    "istio-data",
    "istio-podinfo",
    "istio-token",
    "istiod-ca-cert",
    "istio-ca-crl",
];

/// The template pod of the chart's `sidecar` template with native sidecars.
pub(super) fn template_pod() -> Value {
    let volumes: Vec<Value> = VOLUMES.iter().map(|v| json!({"name": v})).collect();
    json!({"metadata": {}, "spec": {
        "initContainers": [{"name": "istio-init"}, {"name": "istio-proxy"}],
        "volumes": volumes}})
}

/// A merged pod: the app containers plus the native sidecar and istio-init.
pub(super) fn merged(annotations: Value, containers: Value) -> Value {
    json!({"metadata": {"name": "hello", "annotations": annotations, "labels": {"app": "hello"}},
           "spec": {"initContainers": [{"name": "istio-init"}, proxy()], "containers": containers}})
}

pub(super) struct Inputs {
    pub(super) mesh: Value,
    pub(super) values: Value,
    pub(super) envs: BTreeMap<String, String>,
    pub(super) injected: BTreeMap<String, String>,
    pub(super) template: Value,
    pub(super) original: Value,
    pub(super) annotation_mesh: Option<Value>,
    pub(super) revision: String,
}

impl Inputs {
    pub(super) fn new() -> Inputs {
        Inputs {
            mesh: mesh(),
            values: values(),
            envs: BTreeMap::new(),
            injected: BTreeMap::new(),
            template: template_pod(),
            original: json!({}),
            annotation_mesh: None,
            revision: String::new(),
        }
    }

    pub(super) fn run(&self, pod: &mut Value) -> Result<Vec<String>, FinishError> {
        let p = PostProcess {
            mesh: &self.mesh,
            values: &self.values,
            proxy_envs: &self.envs,
            revision: &self.revision,
            injected_annotations: &self.injected,
            template_pod: &self.template,
            original_pod: &self.original,
            proxy_config_annotation_mesh: self.annotation_mesh.as_ref(),
        };
        post_process(pod, &p)
    }
}

pub(super) fn sidecar_env(pod: &Value, name: &str) -> Option<String> {
    find_sidecar(pod)?
        .get("env")?
        .as_array()?
        .iter()
        .find(|e| e["name"] == name)
        .and_then(|e| e["value"].as_str())
        .map(str::to_string)
}

pub(super) fn env_names(pod: &Value) -> Vec<String> {
    find_sidecar(pod)
        .and_then(|s| s.get("env"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|e| e["name"].as_str().unwrap_or("").to_string())
        .collect()
}

pub(super) fn names(pod: &Value, list: &str) -> Vec<String> {
    pod["spec"][list]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| container_name(c).to_string())
        .collect()
}

#[test]
fn odd_shapes_do_not_panic() {
    let odd = [
        json!({"metadata": {"annotations": {"prometheus.io/port": 8080, "x": null}}, "spec": {
            "containers": [1, "s", null, {"name": 5},
                {"name": "istio-proxy", "env": "nope"},
                {"name": "a", "ports": "p", "readinessProbe": {"httpGet": "x"},
                 "livenessProbe": {"tcpSocket": {"port": true}}, "startupProbe": [],
                 "lifecycle": {"preStop": {"httpGet": {"port": "missing"}}, "postStart": 3}}],
            "initContainers": {"not": "a list"}}}),
        json!({"spec": {"containers": null, "initContainers": [{"name": "istio-proxy", "env": [1, {"name": 2}]}]}}),
        json!({"metadata": {"annotations": {"prometheus.istio.io/scrape-targets": ",,,"}}, "spec": "x"}),
        json!({"metadata": {"annotations": {"status.sidecar.istio.io/port": "99999999999999999999",
            "sidecar.istio.io/status": "[]"}},
            "spec": {"containers": [{"name": "istio-proxy", "env": [{"name": APP_PROBERS_ENV, "value": "[1]"}]},
                {"name": "a", "readinessProbe": {"grpc": {"port": "x"}}}]}}),
    ];
    for mut pod in odd {
        let _ = Inputs::new().run(&mut pod);
    }
    let p = json!({"spec": {"containers": [{"name": "a", "readinessProbe": {"httpGet": {"port": 1.5}}}]}});
    assert_eq!(dump_app_probers(&p, 15020), "");
}

/// Corpus sweep: inputs and goldens read with yaml-rust2 (the YAML module is another
/// stream's), pods found as objects whose `spec` has `containers`.
pub(super) mod corpus {
    use super::*;
    use crate::testing::corpus::load_pods;

    /// (input pod, golden pod) pairs of every kube-inject case with a golden.
    pub(in crate::finish) fn case_pairs() -> Option<Vec<(String, Value, Value)>> {
        let root = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/conformance/istio"
        );
        let Ok(index) = std::fs::read_to_string(format!("{root}/cases.json")) else {
            eprintln!("corpus not found at {root}; skipping corpus sweep");
            return None;
        };
        let cases: Vec<Value> = serde_json::from_str(&index).expect("cases.json");
        let mut pairs = Vec::new();
        for c in &cases {
            let (Some(input), Some(expected)) = (c["input"].as_str(), c["expected"].as_str())
            else {
                continue;
            };
            let name = c["name"].as_str().unwrap_or("").to_string();
            let (Some(ins), Some(outs)) = (
                load_pods(&format!("{root}/{input}")),
                load_pods(&format!("{root}/{expected}")),
            ) else {
                continue;
            };
            if ins.len() != outs.len() {
                continue;
            }
            for (i, o) in ins.into_iter().zip(outs) {
                pairs.push((name.clone(), i, o));
            }
        }
        assert!(pairs.len() > 50, "too few corpus pods: {}", pairs.len());
        Some(pairs)
    }

    pub(in crate::finish) fn reinjected(pod: &Value) -> bool {
        annotations(pod).is_some_and(|a| a.contains_key(STATUS_ANNOTATION))
    }
}
