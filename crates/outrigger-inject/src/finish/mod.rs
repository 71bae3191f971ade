//! Post-processing of the merged pod (spec §8): cluster/network env, Prometheus merge, secure
//! port, probe rewriting, status annotation, injected annotations, container order.
//!
//! Everything works on the pod as a JSON tree. Where the reference iterates a Go map (several
//! spellings of one Prometheus annotation), we take annotation names in sorted order so the
//! outcome is deterministic.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::go::json as gojson;
use crate::json::lookup as jsonmap;
use crate::{Error, Result};

/// Name of the injected proxy container.
pub const PROXY_CONTAINER: &str = "istio-proxy";
/// Env var carrying the app probers for the agent.
pub const APP_PROBERS_ENV: &str = "ISTIO_KUBE_APP_PROBERS";
/// Env var carrying the user's Prometheus scrape configuration for the agent.
pub const PROMETHEUS_ENV: &str = "ISTIO_PROMETHEUS_ANNOTATIONS";
/// Status annotation written by injection.
pub const STATUS_ANNOTATION: &str = "sidecar.istio.io/status";

const SCRAPE: &str = "prometheus_io_scrape";
const PORT: &str = "prometheus_io_port";
const PATH: &str = "prometheus_io_path";
const TARGETS: &str = "prometheus_istio_io_scrape_targets";
const SECURE_PORT: &str = "prometheus_istio_io_secure_port";
const MERGE_METRICS: &str = "prometheus.istio.io/merge-metrics";
const REWRITE_PROBERS: &str = "sidecar.istio.io/rewriteAppHTTPProbers";
const STATUS_PORT_ANNOTATION: &str = "status.sidecar.istio.io/port";
const NETWORK_LABEL: &str = "topology.istio.io/network";
const NETWORK_ENV: &str = "ISTIO_META_NETWORK";
const SECURE_PORT_ENV: &str = "ENVOY_SECURE_MERGED_METRICS_PORT";

/// Inputs of [`post_process`] besides the pod itself.
#[derive(Debug, Clone, Copy)]
pub struct PostProcess<'a> {
    /// Mesh config used by injection (canonical proto-JSON).
    pub mesh: &'a Value,
    /// Generic values tree.
    pub values: &'a Value,
    /// Proxy env after the cluster/network write-back (§4.3).
    pub proxy_envs: &'a BTreeMap<String, String>,
    /// istiod revision; `""` is written as `default` in the status annotation.
    pub revision: &'a str,
    /// The config's `injectedAnnotations`.
    pub injected_annotations: &'a BTreeMap<String, String>,
    /// Accumulated rendering of the templates (source of the status annotation).
    pub template_pod: &'a Value,
    /// The pod before injection (unstripped).
    pub original_pod: &'a Value,
    /// Mesh with the original pod's `proxy.istio.io/config` applied (§8.6 step 1), `None` if
    /// the pod has no such annotation.
    pub proxy_config_annotation_mesh: Option<&'a Value>,
}

/// Spec §8: post-process the merged `pod` in place. Warnings the reference would log are
/// discarded; use [`post_process_with_warnings`] to get them.
pub fn post_process(pod: &mut Value, p: &PostProcess<'_>) -> Result<()> {
    post_process_with_warnings(pod, p).map(|_| ())
}

/// Like [`post_process`], returning the warning log lines the reference would write.
pub fn post_process_with_warnings(pod: &mut Value, p: &PostProcess<'_>) -> Result<Vec<String>> {
    let mut warnings = Vec::new();
    ensure_metadata_maps(pod)?;
    apply_cluster_envs(pod, p.proxy_envs);
    apply_prometheus_merge(pod, p.mesh, &mut warnings)?;
    apply_secure_port(pod);
    apply_probe_rewrite(pod, p, &mut warnings);
    apply_metadata(pod, p);
    reorder_containers(pod, p);
    Ok(warnings)
}

// ---------------------------------------------------------------------------------------------
// Helpers on the JSON tree

/// Make sure `metadata`, `metadata.annotations` and `metadata.labels` are objects.
fn ensure_metadata_maps(pod: &mut Value) -> Result<()> {
    let root = pod
        .as_object_mut()
        .ok_or_else(|| Error::Json("pod: expected a JSON object".into()))?;
    let meta = object_entry(root, "metadata", "metadata")?;
    object_entry(meta, "annotations", "metadata.annotations")?;
    object_entry(meta, "labels", "metadata.labels")?;
    Ok(())
}

/// The object under `key`, created when missing or null; an error naming `path` otherwise.
fn object_entry<'m>(
    map: &'m mut Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<&'m mut Map<String, Value>> {
    let slot = map.entry(key).or_insert(Value::Null);
    if slot.is_null() {
        *slot = Value::Object(Map::new());
    }
    slot.as_object_mut()
        .ok_or_else(|| Error::Type(format!("{path}: expected an object")))
}

fn annotations(pod: &Value) -> Option<&Map<String, Value>> {
    jsonmap::path(pod, &["metadata", "annotations"]).and_then(Value::as_object)
}

fn annotations_mut(pod: &mut Value) -> Option<&mut Map<String, Value>> {
    jsonmap::path_mut(pod, &["metadata", "annotations"]).and_then(Value::as_object_mut)
}

fn annotation<'v>(pod: &'v Value, name: &str) -> Option<&'v str> {
    annotations(pod)?.get(name)?.as_str()
}

fn container_name(c: &Value) -> &str {
    c.get("name").and_then(Value::as_str).unwrap_or("")
}

/// The sidecar (§8.1): first `istio-proxy` in `spec.containers`, else in `spec.initContainers`.
fn find_sidecar_mut(pod: &mut Value) -> Option<&mut Map<String, Value>> {
    let spec = pod.get_mut("spec")?.as_object_mut()?;
    let in_containers = spec
        .get("containers")
        .and_then(Value::as_array)
        .is_some_and(|cs| cs.iter().any(|c| container_name(c) == PROXY_CONTAINER));
    let list = if in_containers {
        "containers"
    } else {
        "initContainers"
    };
    spec.get_mut(list)?
        .as_array_mut()?
        .iter_mut()
        .find(|c| container_name(c) == PROXY_CONTAINER)?
        .as_object_mut()
}

fn find_sidecar(pod: &Value) -> Option<&Map<String, Value>> {
    ["containers", "initContainers"].iter().find_map(|list| {
        pod.get("spec")?
            .get(*list)?
            .as_array()?
            .iter()
            .find(|c| container_name(c) == PROXY_CONTAINER)?
            .as_object()
    })
}

/// The container's `env` list, created when missing or not a list.
fn env_mut(container: &mut Map<String, Value>) -> &mut Vec<Value> {
    let slot = container
        .entry("env")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !slot.is_array() {
        *slot = Value::Array(Vec::new());
    }
    slot.as_array_mut().expect("env was just made an array")
}

fn env_entry(name: &str, value: &str) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), Value::String(name.into()));
    m.insert("value".into(), Value::String(value.into()));
    Value::Object(m)
}

/// Go `strconv.ParseBool`.
fn parse_go_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// Go `strconv.Atoi` on a 64-bit platform: optional sign, decimal digits only.
fn parse_go_int(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<i64>().ok()
}

/// Mesh `defaultConfig.statusPort` (0 when unset).
fn mesh_status_port(mesh: &Value) -> i64 {
    jsonmap::path(mesh, &["defaultConfig", "statusPort"])
        .and_then(json_int)
        .unwrap_or(0)
}

/// A JSON integer, also accepting a `{"value": n}` wrapper or a decimal string.
fn json_int(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.parse().ok(),
        Value::Object(m) => m.get("value").and_then(json_int),
        _ => None,
    }
}

/// A JSON bool, also accepting a `{"value": b}` wrapper (proto `BoolValue`).
fn json_bool(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::Object(m) => m.get("value").and_then(json_bool),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// §8.2 cluster/network env

/// §8.2: replace the sidecar's env entries named in `proxy_envs` by plain entries appended in
/// ascending name order.
fn apply_cluster_envs(pod: &mut Value, proxy_envs: &BTreeMap<String, String>) {
    if proxy_envs.is_empty() {
        return;
    }
    let Some(sidecar) = find_sidecar_mut(pod) else {
        return;
    };
    let env = env_mut(sidecar);
    env.retain(|e| {
        !e.get("name")
            .and_then(Value::as_str)
            .is_some_and(|n| proxy_envs.contains_key(n))
    });
    env.extend(proxy_envs.iter().map(|(k, v)| env_entry(k, v)));
}

// ---------------------------------------------------------------------------------------------
// §8.3 Prometheus merge

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
fn sanitizes_to(name: &str, target: &str) -> bool {
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
fn sanitized_values<'m>(annotations: &'m Map<String, Value>, sanitized: &str) -> Vec<&'m str> {
    let mut found: Vec<(&String, &str)> = annotations
        .iter()
        .filter(|(k, _)| sanitizes_to(k, sanitized))
        .filter_map(|(k, v)| v.as_str().map(|s| (k, s)))
        .collect();
    found.sort_by(|a, b| a.0.cmp(b.0));
    found.into_iter().map(|(_, v)| v).collect()
}

fn first_sanitized<'m>(annotations: &'m Map<String, Value>, sanitized: &str) -> Option<&'m str> {
    sanitized_values(annotations, sanitized).into_iter().next()
}

/// §7.2 step 3: if an annotation sanitising to `prometheus_io_port` equals `status_port`, remove
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

fn remove_prometheus_annotations(annotations: &mut Map<String, Value>) {
    annotations.retain(|k, _| {
        !matches!(
            sanitize_label_name(k).as_str(),
            SCRAPE | PORT | PATH | TARGETS
        )
    });
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
fn validate_scrape_port(port: &str, agent_port: &str, prefix: &str, what: &str) -> Result<()> {
    let n = parse_go_int(port)
        .filter(|n| (1..=65535).contains(n))
        .ok_or_else(|| Error::Inject(format!("{prefix}: invalid {what} {port:?}")))?;
    if n.to_string() == agent_port {
        return Err(Error::Inject(format!(
            "{prefix}: {what} {n} conflicts with agent port"
        )));
    }
    if let Some((_, reason)) = RESERVED_PORTS.iter().find(|(p, _)| *p == n) {
        return Err(Error::Inject(format!(
            "{prefix}: {what} {n} is reserved for Istio ({reason}) and cannot be scraped"
        )));
    }
    Ok(())
}

/// §8.3 steps 6–7: collect and validate the scrape configuration.
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

/// §8.3 step 1: the first valid `prometheus_io_scrape` spelling decides; none → true.
fn prometheus_scrape(annotations: &Map<String, Value>) -> bool {
    sanitized_values(annotations, SCRAPE)
        .into_iter()
        .find_map(parse_go_bool)
        .unwrap_or(true)
}

/// §8.3 step 2: annotation `prometheus.istio.io/merge-metrics`, else mesh
/// `enablePrometheusMerge`, else true.
fn prometheus_merge_enabled(
    annotations: &Map<String, Value>,
    mesh: &Value,
    warnings: &mut Vec<String>,
) -> bool {
    if let Some(v) = annotations.get(MERGE_METRICS).and_then(Value::as_str) {
        match parse_go_bool(v) {
            Some(b) => return b,
            // [quirk] the reference logs the parsed zero value, not the annotation's value.
            None => warnings.push(format!("invalid annotation {MERGE_METRICS}=false")),
        }
    }
    mesh.get("enablePrometheusMerge")
        .and_then(json_bool)
        .unwrap_or(true)
}

/// §8.3: merge the application's Prometheus annotations into the agent.
fn apply_prometheus_merge(pod: &mut Value, mesh: &Value, warnings: &mut Vec<String>) -> Result<()> {
    let Some(ann) = annotations(pod) else {
        return Ok(());
    };
    if !(prometheus_scrape(ann) && prometheus_merge_enabled(ann, mesh, warnings)) {
        return Ok(());
    }
    let target = mesh_status_port(mesh).to_string();
    if sanitized_values(ann, PORT).iter().any(|v| *v == target) {
        return Ok(());
    }
    let cfg = scrape_configuration(ann, &target, warnings)?;
    if !cfg.is_empty() {
        if let Some(sidecar) = find_sidecar_mut(pod) {
            env_mut(sidecar).push(env_entry(PROMETHEUS_ENV, &cfg.to_json()));
        }
    }
    if let Some(ann) = annotations_mut(pod) {
        remove_prometheus_annotations(ann);
        ann.insert("prometheus.io/port".into(), Value::String(target));
        ann.insert("prometheus.io/path".into(), "/stats/prometheus".into());
        ann.insert("prometheus.io/scrape".into(), "true".into());
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// §8.4 secure port

/// §8.4: publish the sidecar's `ENVOY_SECURE_MERGED_METRICS_PORT` as
/// `prometheus.istio.io/secure-port` unless the pod already has that annotation.
fn apply_secure_port(pod: &mut Value) {
    let Some(ann) = annotations(pod) else {
        return;
    };
    if ann.keys().any(|k| sanitizes_to(k, SECURE_PORT)) {
        return;
    }
    let port = find_sidecar(pod)
        .and_then(|s| s.get("env"))
        .and_then(Value::as_array)
        .and_then(|env| {
            env.iter()
                .find(|e| e.get("name").and_then(Value::as_str) == Some(SECURE_PORT_ENV))
        })
        .map(|e| e.get("value").and_then(Value::as_str).unwrap_or(""))
        .filter(|v| !v.is_empty() && *v != "0")
        .map(str::to_string);
    if let (Some(port), Some(ann)) = (port, annotations_mut(pod)) {
        ann.insert(
            "prometheus.istio.io/secure-port".into(),
            Value::String(port),
        );
    }
}

// ---------------------------------------------------------------------------------------------
// §8.4 probe rewriting

/// `IntOrString` of a probe port.
#[derive(Debug, Clone, PartialEq, Eq)]
enum IntOrStr {
    Int(i64),
    Str(String),
}

impl IntOrStr {
    fn from_json(v: Option<&Value>) -> std::result::Result<IntOrStr, String> {
        match v {
            None | Some(Value::Null) => Ok(IntOrStr::Int(0)),
            Some(Value::String(s)) => Ok(IntOrStr::Str(s.clone())),
            Some(Value::Number(n)) => n
                .as_i64()
                .filter(|i| i32::try_from(*i).is_ok())
                .map(IntOrStr::Int)
                .ok_or_else(|| {
                    format!("json: cannot unmarshal number {n} into Go value of type int32")
                }),
            Some(other) => Err(format!(
                "json: cannot unmarshal {} into Go value of type int32",
                json_kind(other)
            )),
        }
    }

    fn to_json(&self) -> Value {
        match self {
            IntOrStr::Int(i) => Value::from(*i),
            IntOrStr::Str(s) => Value::String(s.clone()),
        }
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn opt_string(m: &Map<String, Value>, key: &str) -> std::result::Result<String, String> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(format!(
            "json: cannot unmarshal {} into Go struct field of type string ({key})",
            json_kind(other)
        )),
    }
}

fn as_object<'v>(v: &'v Value, what: &str) -> std::result::Result<&'v Map<String, Value>, String> {
    v.as_object().ok_or_else(|| {
        format!(
            "json: cannot unmarshal {} into Go value of type {what}",
            json_kind(v)
        )
    })
}

/// Istio's mirror of `HTTPGetAction` (field order path, port, host, scheme, httpHeaders).
#[derive(Debug, Clone, PartialEq, Eq)]
struct HttpGet {
    path: String,
    port: IntOrStr,
    host: String,
    scheme: String,
    headers: Vec<(String, String)>,
}

impl HttpGet {
    fn from_json(v: &Value) -> std::result::Result<HttpGet, String> {
        let m = as_object(v, "HTTPGetAction")?;
        let headers = match m.get("httpHeaders") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(hs)) => hs
                .iter()
                .map(|h| {
                    let h = as_object(h, "HTTPHeader")?;
                    Ok((opt_string(h, "name")?, opt_string(h, "value")?))
                })
                .collect::<std::result::Result<_, String>>()?,
            Some(other) => {
                return Err(format!(
                    "json: cannot unmarshal {} into Go struct field of type []HTTPHeader",
                    json_kind(other)
                ))
            }
        };
        Ok(HttpGet {
            path: opt_string(m, "path")?,
            port: IntOrStr::from_json(m.get("port"))?,
            host: opt_string(m, "host")?,
            scheme: opt_string(m, "scheme")?,
            headers,
        })
    }

    fn to_json(&self) -> Value {
        let mut m = Map::new();
        if !self.path.is_empty() {
            m.insert("path".into(), Value::String(self.path.clone()));
        }
        m.insert("port".into(), self.port.to_json());
        if !self.host.is_empty() {
            m.insert("host".into(), Value::String(self.host.clone()));
        }
        if !self.scheme.is_empty() {
            m.insert("scheme".into(), Value::String(self.scheme.clone()));
        }
        if !self.headers.is_empty() {
            let hs = self.headers.iter().map(|(n, v)| env_entry(n, v)).collect();
            m.insert("httpHeaders".into(), Value::Array(hs));
        }
        Value::Object(m)
    }
}

/// Istio's mirror of `TCPSocketAction` (port, host).
#[derive(Debug, Clone, PartialEq, Eq)]
struct TcpSocket {
    port: IntOrStr,
    host: String,
}

impl TcpSocket {
    fn from_json(v: &Value) -> std::result::Result<TcpSocket, String> {
        let m = as_object(v, "TCPSocketAction")?;
        Ok(TcpSocket {
            port: IntOrStr::from_json(m.get("port"))?,
            host: opt_string(m, "host")?,
        })
    }

    fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("port".into(), self.port.to_json());
        if !self.host.is_empty() {
            m.insert("host".into(), Value::String(self.host.clone()));
        }
        Value::Object(m)
    }
}

/// Istio's mirror of `GRPCAction` (port, service; a nil service encodes as `null`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Grpc {
    port: i64,
    service: Option<String>,
}

impl Grpc {
    fn from_json(v: &Value) -> std::result::Result<Grpc, String> {
        let m = as_object(v, "GRPCAction")?;
        let port = match IntOrStr::from_json(m.get("port"))? {
            IntOrStr::Int(i) => i,
            IntOrStr::Str(_) => return Err(
                "json: cannot unmarshal string into Go struct field GRPCAction.port of type int32"
                    .into(),
            ),
        };
        let service = match m.get("service") {
            None | Some(Value::Null) => None,
            Some(_) => Some(opt_string(m, "service")?),
        };
        Ok(Grpc { port, service })
    }

    fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("port".into(), Value::from(self.port));
        let service = self.service.clone().map_or(Value::Null, Value::String);
        m.insert("service".into(), service);
        Value::Object(m)
    }
}

/// Istio's `Prober`: one action and the probe timeout.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Prober {
    http_get: Option<HttpGet>,
    tcp_socket: Option<TcpSocket>,
    grpc: Option<Grpc>,
    timeout_seconds: i64,
}

impl Prober {
    /// Decode as Go's `json.Unmarshal` into `*Prober` would (unknown fields ignored).
    fn from_json(v: &Value) -> std::result::Result<Option<Prober>, String> {
        if v.is_null() {
            return Ok(None);
        }
        let m = as_object(v, "Prober")?;
        let field = |k: &str| m.get(k).filter(|x| !x.is_null());
        let timeout = match field("timeoutSeconds") {
            None => 0,
            Some(t) => match IntOrStr::from_json(Some(t))? {
                IntOrStr::Int(i) => i,
                IntOrStr::Str(_) => {
                    return Err("json: cannot unmarshal string into Go struct field Prober.timeoutSeconds of type int32".into())
                }
            },
        };
        Ok(Some(Prober {
            http_get: field("httpGet").map(HttpGet::from_json).transpose()?,
            tcp_socket: field("tcpSocket").map(TcpSocket::from_json).transpose()?,
            grpc: field("grpc").map(Grpc::from_json).transpose()?,
            timeout_seconds: timeout,
        }))
    }

    fn to_json(&self) -> Value {
        let mut m = Map::new();
        if let Some(h) = &self.http_get {
            m.insert("httpGet".into(), h.to_json());
        }
        if let Some(t) = &self.tcp_socket {
            m.insert("tcpSocket".into(), t.to_json());
        }
        if let Some(g) = &self.grpc {
            m.insert("grpc".into(), g.to_json());
        }
        if self.timeout_seconds != 0 {
            m.insert("timeoutSeconds".into(), Value::from(self.timeout_seconds));
        }
        Value::Object(m)
    }

    /// A probe's prober: first of httpGet, tcpSocket, grpc (exec or nothing → none).
    fn from_probe(probe: &Value) -> Option<Prober> {
        let timeout = probe
            .get("timeoutSeconds")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let mut p = Self::from_handler(probe)?;
        p.timeout_seconds = timeout;
        Some(p)
    }

    /// A lifecycle handler's (or probe's) action, without timeout.
    fn from_handler(handler: &Value) -> Option<Prober> {
        let get = |k: &str| handler.get(k).filter(|v| !v.is_null());
        if let Some(h) = get("httpGet") {
            return HttpGet::from_json(h).ok().map(|h| Prober {
                http_get: Some(h),
                ..Prober::default()
            });
        }
        if let Some(t) = get("tcpSocket") {
            return TcpSocket::from_json(t).ok().map(|t| Prober {
                tcp_socket: Some(t),
                ..Prober::default()
            });
        }
        if let Some(g) = get("grpc") {
            return Grpc::from_json(g).ok().map(|g| Prober {
                grpc: Some(g),
                ..Prober::default()
            });
        }
        None
    }

    /// Resolve a named port through `ports`; drop unknown names and ports already pointing at
    /// the agent. gRPC probers are kept as is.
    fn resolve(mut self, ports: &BTreeMap<String, i64>, status_port: i64) -> Option<Prober> {
        if self.grpc.is_some() {
            return Some(self);
        }
        let port = match (&mut self.http_get, &mut self.tcp_socket) {
            (Some(h), _) => &mut h.port,
            (None, Some(t)) => &mut t.port,
            (None, None) => return None,
        };
        match port {
            IntOrStr::Str(name) => *port = IntOrStr::Int(*ports.get(name.as_str())?),
            IntOrStr::Int(n) if *n == status_port => return None,
            IntOrStr::Int(_) => {}
        }
        Some(self)
    }
}

/// Which probe or lifecycle handler of a container, with its agent URL.
#[derive(Debug, Clone, Copy)]
enum ProbeKind {
    Readiness,
    Liveness,
    Startup,
    PreStop,
    PostStart,
}

const PROBE_KINDS: [ProbeKind; 5] = [
    ProbeKind::Readiness,
    ProbeKind::Liveness,
    ProbeKind::Startup,
    ProbeKind::PreStop,
    ProbeKind::PostStart,
];

impl ProbeKind {
    fn url(self, container: &str) -> String {
        match self {
            ProbeKind::Readiness => format!("/app-health/{container}/readyz"),
            ProbeKind::Liveness => format!("/app-health/{container}/livez"),
            ProbeKind::Startup => format!("/app-health/{container}/startupz"),
            ProbeKind::PreStop => format!("/app-lifecycle/{container}/prestopz"),
            ProbeKind::PostStart => format!("/app-lifecycle/{container}/poststartz"),
        }
    }

    fn is_lifecycle(self) -> bool {
        matches!(self, ProbeKind::PreStop | ProbeKind::PostStart)
    }

    fn get(self, c: &Value) -> Option<&Value> {
        let v = match self {
            ProbeKind::Readiness => c.get("readinessProbe"),
            ProbeKind::Liveness => c.get("livenessProbe"),
            ProbeKind::Startup => c.get("startupProbe"),
            ProbeKind::PreStop => c.get("lifecycle")?.get("preStop"),
            ProbeKind::PostStart => c.get("lifecycle")?.get("postStart"),
        };
        v.filter(|v| v.is_object())
    }

    fn get_mut(self, c: &mut Value) -> Option<&mut Map<String, Value>> {
        let v = match self {
            ProbeKind::Readiness => c.get_mut("readinessProbe"),
            ProbeKind::Liveness => c.get_mut("livenessProbe"),
            ProbeKind::Startup => c.get_mut("startupProbe"),
            ProbeKind::PreStop => c.get_mut("lifecycle")?.get_mut("preStop"),
            ProbeKind::PostStart => c.get_mut("lifecycle")?.get_mut("postStart"),
        };
        v?.as_object_mut()
    }

    fn prober(self, c: &Value) -> Option<Prober> {
        let v = self.get(c)?;
        if self.is_lifecycle() {
            Prober::from_handler(v).filter(|p| p.grpc.is_none())
        } else {
            Prober::from_probe(v)
        }
    }
}

/// Init containers then containers, skipping the proxy.
fn app_containers(pod: &Value) -> impl Iterator<Item = &Value> {
    ["initContainers", "containers"]
        .into_iter()
        .filter_map(|list| pod.get("spec")?.get(list)?.as_array())
        .flatten()
        .filter(|c| container_name(c) != PROXY_CONTAINER)
}

fn named_ports(c: &Value) -> BTreeMap<String, i64> {
    c.get("ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| {
            let name = p.get("name")?.as_str().filter(|n| !n.is_empty())?;
            Some((
                name.to_string(),
                p.get("containerPort").and_then(Value::as_i64).unwrap_or(0),
            ))
        })
        .collect()
}

/// The app probers of `pod` keyed by agent URL (`DumpAppProbers` before encoding).
fn app_probers(pod: &Value, status_port: i64) -> BTreeMap<String, Option<Prober>> {
    let mut out = BTreeMap::new();
    for c in app_containers(pod) {
        let ports = named_ports(c);
        let name = container_name(c);
        for kind in PROBE_KINDS {
            if let Some(p) = kind.prober(c).and_then(|p| p.resolve(&ports, status_port)) {
                out.insert(kind.url(name), Some(p));
            }
        }
    }
    out
}

fn encode_probers(probers: &BTreeMap<String, Option<Prober>>) -> String {
    let m: Map<String, Value> = probers
        .iter()
        .map(|(k, p)| (k.clone(), p.as_ref().map_or(Value::Null, Prober::to_json)))
        .collect();
    gojson::to_string(&Value::Object(m))
}

/// `DumpAppProbers`: compact JSON of the app probers with sorted keys, `""` when there are none.
pub fn dump_app_probers(pod: &Value, status_port: i64) -> String {
    let probers = app_probers(pod, status_port);
    if probers.is_empty() {
        String::new()
    } else {
        encode_probers(&probers)
    }
}

fn decode_probers(s: &str) -> std::result::Result<BTreeMap<String, Option<Prober>>, String> {
    let v: Value = serde_json::from_str(s).map_err(|e| e.to_string())?;
    if v.is_null() {
        return Ok(BTreeMap::new());
    }
    as_object(&v, "map[string]*Prober")?
        .iter()
        .map(|(k, p)| Ok((k.clone(), Prober::from_json(p)?)))
        .collect()
}

/// Merge the new probers with the ones of a previous injection (old entries win).
fn merge_probers(old: &str, new: &str) -> std::result::Result<String, String> {
    let old = decode_probers(old)
        .map_err(|e| format!("failed to unmarshal existing kubeAppProbers {e}"))?;
    let mut merged =
        decode_probers(new).map_err(|e| format!("failed to unmarshal new kubeAppProbers {e}"))?;
    merged.extend(old);
    Ok(encode_probers(&merged))
}

/// §8.4 step 1: annotation on the merged pod, else values
/// `sidecarInjectorWebhook.rewriteAppHTTPProbe`, else false.
fn should_rewrite(pod: &Value, values: &Value) -> bool {
    annotation(pod, REWRITE_PROBERS)
        .and_then(parse_go_bool)
        .or_else(|| {
            jsonmap::path(values, &["sidecarInjectorWebhook", "rewriteAppHTTPProbe"])
                .and_then(json_bool)
        })
        .unwrap_or(false)
}

/// §8.4 probe rewriting (`applyRewrite`).
fn apply_probe_rewrite(pod: &mut Value, p: &PostProcess<'_>, warnings: &mut Vec<String>) {
    if find_sidecar(pod).is_none() || !should_rewrite(pod, p.values) {
        return;
    }
    let mesh_port = mesh_status_port(p.mesh);
    let probers = dump_app_probers(pod, mesh_port);
    if !probers.is_empty() {
        record_probers(pod, probers, warnings);
    }
    let status_port = match annotation(pod, STATUS_PORT_ANNOTATION) {
        Some(v) => parse_go_int(v).unwrap_or_else(|| {
            warnings.push(format!(
                "Invalid annotation {STATUS_PORT_ANNOTATION}={v}: strconv.Atoi: parsing {v:?}: invalid syntax"
            ));
            0
        }),
        None => mesh_port,
    };
    rewrite_probes(pod, status_port);
}

/// §8.4 step 2.2: store the probers in the sidecar's `ISTIO_KUBE_APP_PROBERS`, merging with a
/// previous injection's value.
fn record_probers(pod: &mut Value, probers: String, warnings: &mut Vec<String>) {
    let reinjected = annotations(pod).is_some_and(|a| a.contains_key(STATUS_ANNOTATION));
    let Some(sidecar) = find_sidecar_mut(pod) else {
        return;
    };
    let env = env_mut(sidecar);
    let existing = env
        .iter_mut()
        .find(|e| e.get("name").and_then(Value::as_str) == Some(APP_PROBERS_ENV));
    match existing {
        Some(entry) if reinjected => {
            let old = entry.get("value").and_then(Value::as_str).unwrap_or("");
            match merge_probers(old, &probers) {
                Ok(merged) => *entry = env_entry(APP_PROBERS_ENV, &merged),
                Err(e) => warnings.push(e),
            }
        }
        _ => env.push(env_entry(APP_PROBERS_ENV, &probers)),
    }
}

/// §8.4 step 2.3 (`patchRewriteProbe`): point every app probe and lifecycle handler at the agent.
fn rewrite_probes(pod: &mut Value, status_port: i64) {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    for list in ["initContainers", "containers"] {
        let Some(cs) = spec.get_mut(list).and_then(Value::as_array_mut) else {
            continue;
        };
        for c in cs.iter_mut() {
            let name = container_name(c).to_string();
            if name == PROXY_CONTAINER {
                continue;
            }
            for kind in PROBE_KINDS {
                if let Some(probe) = kind.get_mut(c) {
                    rewrite_probe(probe, &kind.url(&name), status_port, !kind.is_lifecycle());
                }
            }
        }
    }
}

fn http_get_to(url: &str, status_port: i64) -> Value {
    let mut m = Map::new();
    m.insert("path".into(), Value::String(url.into()));
    m.insert("port".into(), Value::from(status_port));
    Value::Object(m)
}

fn rewrite_probe(probe: &mut Map<String, Value>, url: &str, status_port: i64, allow_grpc: bool) {
    let present = |p: &Map<String, Value>, k: &str| p.get(k).is_some_and(|v| !v.is_null());
    if present(probe, "httpGet") {
        if let Some(h) = probe.get_mut("httpGet").and_then(Value::as_object_mut) {
            h.insert("port".into(), Value::from(status_port));
            h.insert("path".into(), Value::String(url.into()));
            if h.get("scheme").and_then(Value::as_str) == Some("HTTPS") {
                h.insert("scheme".into(), "HTTP".into());
            }
        }
    } else if present(probe, "tcpSocket") {
        probe.remove("tcpSocket");
        probe.insert("httpGet".into(), http_get_to(url, status_port));
    } else if allow_grpc && present(probe, "grpc") {
        probe.remove("grpc");
        probe.insert("httpGet".into(), http_get_to(url, status_port));
    }
}

// ---------------------------------------------------------------------------------------------
// §8.5 metadata

/// `sidecar.istio.io/status` computed from the template pod.
pub fn injection_status(template_pod: &Value, revision: &str) -> String {
    let mut out = String::with_capacity(160);
    out.push('{');
    for list in [
        "initContainers",
        "containers",
        "volumes",
        "imagePullSecrets",
    ] {
        gojson::write_str(&mut out, list);
        out.push(':');
        let items = jsonmap::path(template_pod, &["spec", list])
            .and_then(Value::as_array)
            .filter(|a| !a.is_empty());
        match items {
            None => out.push_str("null"),
            Some(items) => {
                out.push('[');
                for (i, x) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    gojson::write_str(&mut out, container_name(x));
                }
                out.push(']');
            }
        }
        out.push(',');
    }
    let revision = if revision.is_empty() {
        "default"
    } else {
        revision
    };
    out.push_str("\"revision\":");
    gojson::write_str(&mut out, revision);
    out.push('}');
    out
}

/// §8.5: network label, status annotation, injected annotations.
fn apply_metadata(pod: &mut Value, p: &PostProcess<'_>) {
    if let Some(network) = p.proxy_envs.get(NETWORK_ENV) {
        if let Some(labels) =
            jsonmap::path_mut(pod, &["metadata", "labels"]).and_then(Value::as_object_mut)
        {
            labels.insert(NETWORK_LABEL.into(), Value::String(network.clone()));
        }
    }
    let status = injection_status(p.template_pod, p.revision);
    if let Some(ann) = annotations_mut(pod) {
        ann.insert(STATUS_ANNOTATION.into(), Value::String(status));
        for (k, v) in p.injected_annotations {
            ann.insert(k.clone(), Value::String(v.clone()));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// §8.6 container order

/// Where [`move_container`] puts the element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Front,
    Back,
}

/// "Move" semantics of §8.6: all elements not named `name` keep their order; if any element was
/// named `name`, the last such one goes to `end` (duplicates collapse) [quirk].
fn move_container(list: Vec<Value>, name: &str, end: End) -> Vec<Value> {
    let mut picked = None;
    let mut rest = Vec::with_capacity(list.len());
    for c in list {
        if container_name(&c) == name {
            picked = Some(c);
        } else {
            rest.push(c);
        }
    }
    match (picked, end) {
        (Some(c), End::Front) => {
            rest.insert(0, c);
            rest
        }
        (Some(c), End::Back) => {
            rest.push(c);
            rest
        }
        (None, _) => rest,
    }
}

/// §8.6 step 2: hold the application until the proxy starts?
fn hold_application(p: &PostProcess<'_>) -> bool {
    let mesh = p.proxy_config_annotation_mesh.unwrap_or(p.mesh);
    let from_mesh = jsonmap::path(mesh, &["defaultConfig", "holdApplicationUntilProxyStarts"])
        .and_then(json_bool)
        .unwrap_or(false);
    let from_values = jsonmap::path(
        p.values,
        &["global", "proxy", "holdApplicationUntilProxyStarts"],
    )
    .and_then(json_bool)
    .unwrap_or(false);
    from_mesh || from_values
}

fn take_list(spec: &mut Map<String, Value>, key: &str) -> Vec<Value> {
    match spec.remove(key) {
        Some(Value::Array(a)) => a,
        _ => Vec::new(),
    }
}

/// §8.6: proxy first (hold) or last in containers; init containers ordered around it.
fn reorder_containers(pod: &mut Value, p: &PostProcess<'_>) {
    let hold = hold_application(p);
    let Some(root) = pod.as_object_mut() else {
        return;
    };
    let spec = root
        .entry("spec")
        .or_insert_with(|| Value::Object(Map::new()));
    if spec.is_null() {
        *spec = Value::Object(Map::new());
    }
    let Some(spec) = spec.as_object_mut() else {
        return;
    };
    let containers = take_list(spec, "containers");
    let end = if hold { End::Front } else { End::Back };
    spec.insert(
        "containers".into(),
        Value::Array(move_container(containers, PROXY_CONTAINER, end)),
    );
    let had_init = spec.get("initContainers").is_some_and(Value::is_array);
    let mut init = take_list(spec, "initContainers");
    if init.iter().any(|c| container_name(c) == PROXY_CONTAINER) {
        for name in [
            "enable-core-dump",
            PROXY_CONTAINER,
            "istio-validation",
            "istio-init",
        ] {
            init = move_container(init, name, End::Front);
        }
    } else {
        init = move_container(init, "istio-validation", End::Front);
        init = move_container(init, "istio-init", End::Back);
        init = move_container(init, "enable-core-dump", End::Back);
    }
    if had_init || !init.is_empty() {
        spec.insert("initContainers".into(), Value::Array(init));
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    const CORPUS: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/conformance/istio/cases"
    );

    /// The text of a corpus golden, `None` (with a notice) when the corpus is absent.
    fn golden(file: &str) -> Option<String> {
        let path = format!("{CORPUS}/{file}");
        let text = std::fs::read_to_string(&path).ok();
        if text.is_none() {
            eprintln!("corpus not found at {path}; skipping golden comparison");
        }
        text
    }

    /// Un-quote a YAML single-quoted scalar.
    fn single_quoted(v: &str) -> String {
        let v = v.strip_prefix('\'').and_then(|v| v.strip_suffix('\''));
        v.expect("single-quoted value").replace("''", "'")
    }

    /// The value of env `name` in a corpus golden (the corpus must contain it when present).
    fn golden_env(file: &str, name: &str) -> Option<String> {
        let text = golden(file)?;
        let mut lines = text.lines();
        lines
            .find(|l| l.trim() == format!("- name: {name}"))
            .expect("env in golden");
        let v = lines.next().and_then(|l| l.trim().strip_prefix("value: "));
        Some(single_quoted(v.expect("env value line")))
    }

    /// The value of annotation `name` in a corpus golden.
    fn golden_annotation(file: &str, name: &str) -> Option<String> {
        let text = golden(file)?;
        let prefix = format!("{name}: ");
        let v = text.lines().find_map(|l| l.trim().strip_prefix(&prefix));
        Some(single_quoted(v.expect("annotation in golden")))
    }

    fn mesh() -> Value {
        json!({"defaultConfig": {"statusPort": 15020}, "enablePrometheusMerge": true})
    }

    fn values() -> Value {
        json!({"sidecarInjectorWebhook": {"rewriteAppHTTPProbe": true}, "global": {"proxy": {}}})
    }

    fn proxy() -> Value {
        json!({"name": "istio-proxy", "env": [
            {"name": "ISTIO_META_CLUSTER_ID", "value": "Kubernetes"},
            {"name": "TRUST_DOMAIN", "value": "cluster.local"}],
            "restartPolicy": "Always"})
    }

    const VOLUMES: [&str; 9] = [
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
    fn template_pod() -> Value {
        let volumes: Vec<Value> = VOLUMES.iter().map(|v| json!({"name": v})).collect();
        json!({"metadata": {}, "spec": {
            "initContainers": [{"name": "istio-init"}, {"name": "istio-proxy"}],
            "volumes": volumes}})
    }

    /// A merged pod: the app containers plus the native sidecar and istio-init.
    fn merged(annotations: Value, containers: Value) -> Value {
        json!({"metadata": {"name": "hello", "annotations": annotations, "labels": {"app": "hello"}},
               "spec": {"initContainers": [{"name": "istio-init"}, proxy()], "containers": containers}})
    }

    struct Inputs {
        mesh: Value,
        values: Value,
        envs: BTreeMap<String, String>,
        injected: BTreeMap<String, String>,
        template: Value,
        original: Value,
        annotation_mesh: Option<Value>,
        revision: String,
    }

    impl Inputs {
        fn new() -> Inputs {
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

        fn run(&self, pod: &mut Value) -> Result<Vec<String>> {
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
            post_process_with_warnings(pod, &p)
        }
    }

    fn sidecar_env(pod: &Value, name: &str) -> Option<String> {
        find_sidecar(pod)?
            .get("env")?
            .as_array()?
            .iter()
            .find(|e| e["name"] == name)
            .and_then(|e| e["value"].as_str())
            .map(str::to_string)
    }

    fn env_names(pod: &Value) -> Vec<String> {
        find_sidecar(pod)
            .and_then(|s| s.get("env"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|e| e["name"].as_str().unwrap_or("").to_string())
            .collect()
    }

    fn names(pod: &Value, list: &str) -> Vec<String> {
        pod["spec"][list]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| container_name(c).to_string())
            .collect()
    }

    fn hello_probes_containers() -> Value {
        json!([
            {"name": "hello", "ports": [{"name": "http", "containerPort": 80}],
             "livenessProbe": {"httpGet": {"port": "http"}},
             "readinessProbe": {"httpGet": {"port": 3333}},
             "lifecycle": {"preStop": {"httpGet": {"port": 91}}, "postStart": {"tcpSocket": {"port": 93}}}},
            {"name": "world", "ports": [{"name": "http", "containerPort": 90}],
             "livenessProbe": {"httpGet": {"port": "http"}},
             "readinessProbe": {"exec": {"command": ["cat", "/tmp/healthy"]}}}
        ])
    }

    #[test]
    fn hello_probes_matches_golden() {
        let mut pod = merged(json!({}), hello_probes_containers());
        Inputs::new().run(&mut pod).expect("post-process");
        let probers = sidecar_env(&pod, APP_PROBERS_ENV).expect("probers env");
        assert_eq!(
            probers,
            r#"{"/app-health/hello/livez":{"httpGet":{"port":80}},"/app-health/hello/readyz":{"httpGet":{"port":3333}},"/app-health/world/livez":{"httpGet":{"port":90}},"/app-lifecycle/hello/poststartz":{"tcpSocket":{"port":93}},"/app-lifecycle/hello/prestopz":{"httpGet":{"port":91}}}"#
        );
        if let Some(g) = golden_env("hello-probes.yaml.injected", APP_PROBERS_ENV) {
            assert_eq!(probers, g);
        }
        let hello = &pod["spec"]["containers"][0];
        assert_eq!(
            hello["livenessProbe"],
            json!({"httpGet": {"port": 15020, "path": "/app-health/hello/livez"}})
        );
        assert_eq!(
            hello["lifecycle"]["postStart"],
            json!({"httpGet": {"path": "/app-lifecycle/hello/poststartz", "port": 15020}})
        );
        assert_eq!(
            hello["lifecycle"]["preStop"]["httpGet"]["path"],
            "/app-lifecycle/hello/prestopz"
        );
        let world = &pod["spec"]["containers"][1];
        assert_eq!(
            world["readinessProbe"],
            json!({"exec": {"command": ["cat", "/tmp/healthy"]}})
        );
        assert_eq!(world["livenessProbe"]["httpGet"]["port"], 15020);
        // status annotation and prometheus defaults
        let ann = &pod["metadata"]["annotations"];
        let status = ann[STATUS_ANNOTATION].as_str().expect("status");
        assert_eq!(
            status,
            r#"{"initContainers":["istio-init","istio-proxy"],"containers":null,"volumes":["workload-socket","credential-socket","workload-certs","istio-envoy","istio-data","istio-podinfo","istio-token","istiod-ca-cert","istio-ca-crl"],"imagePullSecrets":null,"revision":"default"}"#
        );
        if let Some(g) = golden_annotation("hello-probes.yaml.injected", STATUS_ANNOTATION) {
            assert_eq!(status, g);
        }
        assert_eq!(ann["prometheus.io/port"], "15020");
        assert_eq!(ann["prometheus.io/path"], "/stats/prometheus");
        assert_eq!(ann["prometheus.io/scrape"], "true");
        assert_eq!(sidecar_env(&pod, PROMETHEUS_ENV), None);
        // native sidecar order: istio-init, istio-proxy; proxy not in containers
        assert_eq!(names(&pod, "initContainers"), ["istio-init", "istio-proxy"]);
        assert_eq!(names(&pod, "containers"), ["hello", "world"]);
    }

    #[test]
    fn hello_readiness_keeps_path() {
        let containers = json!([{"name": "hello", "ports": [{"name": "http", "containerPort": 80}],
            "readinessProbe": {"httpGet": {"path": "/ip", "port": 8000}}}]);
        let mut pod = merged(json!({}), containers);
        Inputs::new().run(&mut pod).expect("post-process");
        let probers = sidecar_env(&pod, APP_PROBERS_ENV).expect("env");
        assert_eq!(
            probers,
            r#"{"/app-health/hello/readyz":{"httpGet":{"path":"/ip","port":8000}}}"#
        );
        if let Some(g) = golden_env("hello-readiness.yaml.injected", APP_PROBERS_ENV) {
            assert_eq!(probers, g);
        }
        assert_eq!(
            pod["spec"]["containers"][0]["readinessProbe"]["httpGet"],
            json!({"path": "/app-health/hello/readyz", "port": 15020})
        );
    }

    #[test]
    fn tcp_probes_and_timeouts() {
        let containers = json!([{"name": "hello",
            "livenessProbe": {"tcpSocket": {"port": 80}, "timeoutSeconds": 5, "periodSeconds": 3},
            "readinessProbe": {"tcpSocket": {"port": 3333, "host": "h"}}}]);
        let mut pod = merged(json!({}), containers);
        Inputs::new().run(&mut pod).expect("post-process");
        assert_eq!(
            sidecar_env(&pod, APP_PROBERS_ENV).expect("env"),
            r#"{"/app-health/hello/livez":{"tcpSocket":{"port":80},"timeoutSeconds":5},"/app-health/hello/readyz":{"tcpSocket":{"port":3333,"host":"h"}}}"#
        );
        let live = &pod["spec"]["containers"][0]["livenessProbe"];
        assert_eq!(live.get("tcpSocket"), None);
        assert_eq!(
            live["httpGet"],
            json!({"path": "/app-health/hello/livez", "port": 15020})
        );
        assert_eq!(live["timeoutSeconds"], 5);
        assert_eq!(live["periodSeconds"], 3);
    }

    #[test]
    fn http_fields_order_and_https_downgrade() {
        let containers = json!([{"name": "c", "startupProbe": {"httpGet": {
            "httpHeaders": [{"value": "v", "name": "X-A"}], "scheme": "HTTPS", "host": "h<", "port": 8443, "path": "/p"}}}]);
        let mut pod = merged(json!({}), containers);
        Inputs::new().run(&mut pod).expect("post-process");
        assert_eq!(
            sidecar_env(&pod, APP_PROBERS_ENV).expect("env"),
            r#"{"/app-health/c/startupz":{"httpGet":{"path":"/p","port":8443,"host":"h\u003c","scheme":"HTTPS","httpHeaders":[{"name":"X-A","value":"v"}]}}}"#
        );
        let h = &pod["spec"]["containers"][0]["startupProbe"]["httpGet"];
        assert_eq!(h["scheme"], "HTTP");
        assert_eq!(h["host"], "h<");
        assert_eq!(h["port"], 15020);
        assert_eq!(h["path"], "/app-health/c/startupz");
    }

    #[test]
    fn grpc_probes_are_kept_and_rewritten() {
        let containers = json!([{"name": "g",
            "readinessProbe": {"grpc": {"port": 15020}},
            "livenessProbe": {"grpc": {"port": 9000, "service": "svc"}, "timeoutSeconds": 2}}]);
        let mut pod = merged(json!({}), containers);
        Inputs::new().run(&mut pod).expect("post-process");
        // gRPC probers are kept even when the port equals the status port.
        assert_eq!(
            sidecar_env(&pod, APP_PROBERS_ENV).expect("env"),
            r#"{"/app-health/g/livez":{"grpc":{"port":9000,"service":"svc"},"timeoutSeconds":2},"/app-health/g/readyz":{"grpc":{"port":15020,"service":null}}}"#
        );
        let c = &pod["spec"]["containers"][0];
        assert_eq!(
            c["readinessProbe"],
            json!({"httpGet": {"path": "/app-health/g/readyz", "port": 15020}})
        );
        assert_eq!(c["livenessProbe"]["timeoutSeconds"], 2);
        assert_eq!(c["livenessProbe"].get("grpc"), None);
    }

    #[test]
    fn unresolved_and_already_rewritten_ports_are_dropped_but_rewritten() {
        let containers = json!([{"name": "c", "ports": [{"containerPort": 81}],
            "readinessProbe": {"httpGet": {"port": "missing"}},
            "livenessProbe": {"httpGet": {"port": 15020, "path": "/app-health/c/livez"}}}]);
        let mut pod = merged(json!({}), containers);
        Inputs::new().run(&mut pod).expect("post-process");
        assert_eq!(sidecar_env(&pod, APP_PROBERS_ENV), None);
        // [quirk] the unresolved probe is still rewritten
        assert_eq!(
            pod["spec"]["containers"][0]["readinessProbe"]["httpGet"]["port"],
            15020
        );
    }

    #[test]
    fn probe_rewrite_switches() {
        // values off → nothing
        let mut inputs = Inputs::new();
        inputs.values = json!({"sidecarInjectorWebhook": {"rewriteAppHTTPProbe": false}});
        let mut pod = merged(json!({}), hello_probes_containers());
        inputs.run(&mut pod).expect("post-process");
        assert_eq!(sidecar_env(&pod, APP_PROBERS_ENV), None);
        assert_eq!(
            pod["spec"]["containers"][0]["readinessProbe"]["httpGet"]["port"],
            3333
        );
        // annotation turns it on
        let mut pod = merged(
            json!({"sidecar.istio.io/rewriteAppHTTPProbers": "true"}),
            hello_probes_containers(),
        );
        inputs.run(&mut pod).expect("post-process");
        assert!(sidecar_env(&pod, APP_PROBERS_ENV).is_some());
        // annotation "false" wins over values true
        let mut pod = merged(
            json!({"sidecar.istio.io/rewriteAppHTTPProbers": "f"}),
            hello_probes_containers(),
        );
        Inputs::new().run(&mut pod).expect("post-process");
        assert_eq!(sidecar_env(&pod, APP_PROBERS_ENV), None);
        // invalid annotation falls back to values (true)
        let mut pod = merged(
            json!({"sidecar.istio.io/rewriteAppHTTPProbers": "nope"}),
            hello_probes_containers(),
        );
        Inputs::new().run(&mut pod).expect("post-process");
        assert!(sidecar_env(&pod, APP_PROBERS_ENV).is_some());
        // no sidecar → nothing is rewritten
        let mut pod = json!({"metadata": {}, "spec": {"containers": hello_probes_containers()}});
        Inputs::new().run(&mut pod).expect("post-process");
        assert_eq!(
            pod["spec"]["containers"][0]["readinessProbe"]["httpGet"]["port"],
            3333
        );
    }

    #[test]
    fn status_port_annotation_sets_rewritten_port() {
        let mut pod = merged(
            json!({"status.sidecar.istio.io/port": "123"}),
            hello_probes_containers(),
        );
        Inputs::new().run(&mut pod).expect("post-process");
        assert_eq!(
            pod["spec"]["containers"][0]["readinessProbe"]["httpGet"]["port"],
            123
        );
        let mut pod = merged(
            json!({"status.sidecar.istio.io/port": "x"}),
            hello_probes_containers(),
        );
        let w = Inputs::new().run(&mut pod).expect("post-process");
        assert_eq!(
            pod["spec"]["containers"][0]["readinessProbe"]["httpGet"]["port"],
            0
        );
        assert!(w
            .iter()
            .any(|w| w.starts_with("Invalid annotation status.sidecar.istio.io/port=x")));
    }

    #[test]
    fn reinjection_merges_old_probers() {
        let old = r#"{"/app-health/hello/livez":{"httpGet":{"port":80}},"/app-health/hello/readyz":{"httpGet":{"port":3333}},"/app-health/world/livez":{"httpGet":{"port":90}}}"#;
        let status = r#"{"initContainers":["istio-init"],"containers":["istio-proxy"],"volumes":[],"imagePullSecrets":null,"revision":"default"}"#;
        // Already-rewritten app probes plus a new container `new`.
        let containers = json!([
            {"name": "istio-proxy", "env": [{"name": "TRUST_DOMAIN", "value": "cluster.local"},
                                            {"name": APP_PROBERS_ENV, "value": old}]},
            {"name": "hello", "ports": [{"name": "http", "containerPort": 80}],
             "livenessProbe": {"httpGet": {"path": "/app-health/hello/livez", "port": 15020}},
             "readinessProbe": {"httpGet": {"path": "/app-health/hello/readyz", "port": 15020}}},
            {"name": "world", "ports": [{"name": "http", "containerPort": 90}],
             "livenessProbe": {"httpGet": {"path": "/app-health/world/livez", "port": 15020}}},
            {"name": "new", "ports": [{"name": "http", "containerPort": 8008}],
             "livenessProbe": {"httpGet": {"path": "/testLive", "port": 8008}}}
        ]);
        let mut pod = json!({"metadata": {"annotations": {STATUS_ANNOTATION: status}},
                             "spec": {"initContainers": [{"name": "istio-init"}], "containers": containers}});
        Inputs::new().run(&mut pod).expect("post-process");
        let merged = sidecar_env(&pod, APP_PROBERS_ENV).expect("env");
        assert_eq!(
            merged,
            r#"{"/app-health/hello/livez":{"httpGet":{"port":80}},"/app-health/hello/readyz":{"httpGet":{"port":3333}},"/app-health/new/livez":{"httpGet":{"path":"/testLive","port":8008}},"/app-health/world/livez":{"httpGet":{"port":90}}}"#
        );
        if let Some(g) = golden_env("merge-probers.yaml.injected", APP_PROBERS_ENV) {
            assert_eq!(merged, g);
        }
        // replaced in place, not appended
        assert_eq!(env_names(&pod), ["TRUST_DOMAIN", APP_PROBERS_ENV]);
        // proxy moves last in containers (no hold)
        assert_eq!(
            names(&pod, "containers"),
            ["hello", "world", "new", "istio-proxy"]
        );
    }

    #[test]
    fn merge_probers_old_wins_and_errors_are_reported() {
        let old = r#"{"/a":{"httpGet":{"port":1}}}"#;
        let new = r#"{"/a":{"httpGet":{"port":2}},"/b":{"tcpSocket":{"port":3}}}"#;
        assert_eq!(
            merge_probers(old, new).expect("merge"),
            r#"{"/a":{"httpGet":{"port":1}},"/b":{"tcpSocket":{"port":3}}}"#
        );
        let err = merge_probers("{", new).expect_err("bad old");
        assert!(
            err.starts_with("failed to unmarshal existing kubeAppProbers"),
            "{err}"
        );
        let err = merge_probers(r#"{"/a":{"httpGet":{"port":true}}}"#, new).expect_err("bad type");
        assert!(
            err.starts_with("failed to unmarshal existing kubeAppProbers"),
            "{err}"
        );
    }

    #[test]
    fn reinjection_with_invalid_old_probers_leaves_env() {
        let mut pod = merged(json!({STATUS_ANNOTATION: "{}"}), hello_probes_containers());
        pod["spec"]["initContainers"][1]["env"] =
            json!([{"name": APP_PROBERS_ENV, "value": "not json"}]);
        let w = Inputs::new().run(&mut pod).expect("post-process");
        assert_eq!(
            sidecar_env(&pod, APP_PROBERS_ENV).as_deref(),
            Some("not json")
        );
        assert!(w
            .iter()
            .any(|w| w.starts_with("failed to unmarshal existing kubeAppProbers")));
        // probes are rewritten regardless
        assert_eq!(
            pod["spec"]["containers"][0]["readinessProbe"]["httpGet"]["port"],
            15020
        );
    }

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

    #[test]
    fn metadata_status_revision_and_injected_annotations() {
        let mut inputs = Inputs::new();
        inputs.revision = "canary".into();
        inputs.template = json!({"spec": {"containers": [{"name": "istio-proxy"}],
            "initContainers": [{"name": "istio-init"}], "imagePullSecrets": [{"name": "s"}]}});
        inputs.injected.insert("a/b".into(), "c".into());
        let mut pod = json!({"spec": {"containers": [{"name": "app"}, {"name": "istio-proxy"}]}});
        inputs.run(&mut pod).expect("post-process");
        assert_eq!(
            pod["metadata"]["annotations"][STATUS_ANNOTATION],
            r#"{"initContainers":["istio-init"],"containers":["istio-proxy"],"volumes":null,"imagePullSecrets":["s"],"revision":"canary"}"#
        );
        assert_eq!(pod["metadata"]["annotations"]["a/b"], "c");
        assert_eq!(pod["metadata"]["labels"], json!({}));
        // injected annotations may even overwrite the status annotation
        inputs.injected.insert(STATUS_ANNOTATION.into(), "x".into());
        inputs.run(&mut pod).expect("post-process");
        assert_eq!(pod["metadata"]["annotations"][STATUS_ANNOTATION], "x");
    }

    #[test]
    fn metadata_maps_must_be_objects() {
        let mut pod = json!({"metadata": {"annotations": "x"}, "spec": {}});
        let err = Inputs::new().run(&mut pod).expect_err("bad annotations");
        assert!(err.to_string().contains("metadata.annotations"));
        let mut pod = json!([]);
        assert!(Inputs::new().run(&mut pod).is_err());
        let mut pod = json!({"metadata": {"annotations": null, "labels": null}});
        Inputs::new().run(&mut pod).expect("nulls are replaced");
        assert_eq!(pod["spec"]["containers"], json!([]));
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

    #[test]
    fn hold_application_moves_proxy_first() {
        let containers = json!([{"name": "a"}, {"name": "istio-proxy"}, {"name": "b"}]);
        let run = |inputs: &Inputs| {
            let mut pod = json!({"spec": {"containers": containers.clone()}});
            inputs.run(&mut pod).expect("post-process");
            names(&pod, "containers")
        };
        let mut inputs = Inputs::new();
        assert_eq!(run(&inputs), ["a", "b", "istio-proxy"]);
        inputs.values["global"]["proxy"]["holdApplicationUntilProxyStarts"] = json!(true);
        assert_eq!(run(&inputs), ["istio-proxy", "a", "b"]);
        let mut inputs = Inputs::new();
        inputs.mesh["defaultConfig"]["holdApplicationUntilProxyStarts"] = json!(true);
        assert_eq!(run(&inputs), ["istio-proxy", "a", "b"]);
        // the proxy.istio.io/config mesh replaces the mesh for this decision
        inputs.annotation_mesh =
            Some(json!({"defaultConfig": {"holdApplicationUntilProxyStarts": false}}));
        assert_eq!(run(&inputs), ["a", "b", "istio-proxy"]);
        let mut inputs = Inputs::new();
        inputs.annotation_mesh =
            Some(json!({"defaultConfig": {"holdApplicationUntilProxyStarts": true}}));
        assert_eq!(run(&inputs), ["istio-proxy", "a", "b"]);
    }

    #[test]
    fn init_container_order() {
        let run = |init: Value| {
            let mut pod =
                json!({"spec": {"containers": [{"name": "app"}], "initContainers": init}});
            Inputs::new().run(&mut pod).expect("post-process");
            names(&pod, "initContainers")
        };
        assert_eq!(
            run(
                json!([{"name": "u1"}, {"name": "enable-core-dump"}, {"name": "istio-proxy"},
                       {"name": "u2"}, {"name": "istio-init"}])
            ),
            ["istio-init", "istio-proxy", "enable-core-dump", "u1", "u2"]
        );
        assert_eq!(
            run(json!([{"name": "u1"}, {"name": "istio-proxy"}, {"name": "istio-validation"}])),
            ["istio-validation", "istio-proxy", "u1"]
        );
        assert_eq!(
            run(
                json!([{"name": "istio-init"}, {"name": "enable-core-dump"}, {"name": "u1"},
                       {"name": "istio-validation"}, {"name": "u2"}])
            ),
            [
                "istio-validation",
                "u1",
                "u2",
                "istio-init",
                "enable-core-dump"
            ]
        );
    }

    #[test]
    fn move_collapses_duplicates_keeping_the_last() {
        let list = vec![
            json!({"name": "x", "n": 1}),
            json!({"name": "a"}),
            json!({"name": "x", "n": 2}),
        ];
        let out = move_container(list.clone(), "x", End::Front);
        assert_eq!(
            out,
            vec![json!({"name": "x", "n": 2}), json!({"name": "a"})]
        );
        let out = move_container(list, "x", End::Back);
        assert_eq!(
            out,
            vec![json!({"name": "a"}), json!({"name": "x", "n": 2})]
        );
        assert_eq!(
            move_container(vec![json!({"name": "a"})], "x", End::Back),
            vec![json!({"name": "a"})]
        );
    }

    #[test]
    fn cluster_envs_replace_and_sort() {
        let mut inputs = Inputs::new();
        inputs.envs.insert("ZED".into(), "z".into());
        inputs.envs.insert("CUSTOM_ENV".into(), "c".into());
        inputs
            .envs
            .insert("ISTIO_META_CLUSTER_ID".into(), "k".into());
        let mut pod = merged(json!({}), json!([{"name": "a"}]));
        inputs.run(&mut pod).expect("post-process");
        assert_eq!(
            env_names(&pod),
            ["TRUST_DOMAIN", "CUSTOM_ENV", "ISTIO_META_CLUSTER_ID", "ZED"]
        );
        assert!(pod["metadata"]["labels"]
            .get("topology.istio.io/network")
            .is_none());
    }

    #[test]
    fn dump_app_probers_empty_and_init_containers() {
        let pod = json!({"spec": {"containers": [{"name": "a", "readinessProbe": {"exec": {}}}]}});
        assert_eq!(dump_app_probers(&pod, 15020), "");
        let pod = json!({"spec": {"initContainers": [{"name": "side", "restartPolicy": "Always",
            "ports": [{"name": "p", "containerPort": 3333}], "readinessProbe": {"httpGet": {"port": "p"}}}],
            "containers": [{"name": "istio-proxy", "readinessProbe": {"httpGet": {"port": 15021}}}]}});
        assert_eq!(
            dump_app_probers(&pod, 15020),
            r#"{"/app-health/side/readyz":{"httpGet":{"port":3333}}}"#
        );
    }

    /// Corpus sweep: inputs and goldens read with yaml-rust2 (the YAML module is another
    /// stream's), pods found as objects whose `spec` has `containers`.
    pub(crate) mod corpus {
        use super::*;
        use yaml_rust2::{Yaml, YamlLoader};

        fn to_json(y: &Yaml) -> Value {
            match y {
                Yaml::Integer(i) => Value::from(*i),
                Yaml::Real(r) => r.parse::<f64>().map_or(Value::Null, Value::from),
                Yaml::String(s) => Value::String(s.clone()),
                Yaml::Boolean(b) => Value::Bool(*b),
                Yaml::Array(a) => Value::Array(a.iter().map(to_json).collect()),
                Yaml::Hash(h) => Value::Object(
                    h.iter()
                        .filter_map(|(k, v)| {
                            let k = match k {
                                Yaml::String(s) => s.clone(),
                                Yaml::Integer(i) => i.to_string(),
                                Yaml::Boolean(b) => b.to_string(),
                                _ => return None,
                            };
                            Some((k, to_json(v)))
                        })
                        .collect(),
                ),
                _ => Value::Null,
            }
        }

        fn pods_in(v: &Value, out: &mut Vec<Value>) {
            match v {
                Value::Object(m) => {
                    if m.get("spec").and_then(|s| s.get("containers")).is_some() {
                        out.push(v.clone());
                        return;
                    }
                    m.values().for_each(|x| pods_in(x, out));
                }
                Value::Array(a) => a.iter().for_each(|x| pods_in(x, out)),
                _ => {}
            }
        }

        pub(crate) fn load_pods(path: &str) -> Option<Vec<Value>> {
            let text = std::fs::read_to_string(path).ok()?;
            let docs = YamlLoader::load_from_str(&text).ok()?;
            let mut pods = Vec::new();
            docs.iter().for_each(|d| pods_in(&to_json(d), &mut pods));
            Some(pods)
        }

        /// (input pod, golden pod) pairs of every kube-inject case with a golden.
        fn case_pairs() -> Option<Vec<(String, Value, Value)>> {
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

        fn reinjected(pod: &Value) -> bool {
            annotations(pod).is_some_and(|a| a.contains_key(STATUS_ANNOTATION))
        }

        fn app_container<'p>(pod: &'p Value, name: &str) -> Option<&'p Value> {
            app_containers(pod).find(|c| container_name(c) == name)
        }

        #[test]
        fn app_probers_and_probe_rewrites_match_goldens() {
            let Some(pairs) = case_pairs() else {
                return;
            };
            let mut checked = 0;
            for (name, input, golden) in pairs {
                if reinjected(&input) {
                    continue;
                }
                let Some(expected) = find_sidecar(&golden)
                    .and_then(|s| s.get("env"))
                    .and_then(Value::as_array)
                    .and_then(|env| env.iter().find(|e| e["name"] == APP_PROBERS_ENV))
                    .and_then(|e| e["value"].as_str())
                else {
                    continue;
                };
                assert_eq!(dump_app_probers(&input, 15020), expected, "{name}");
                let mut rewritten = input.clone();
                let port = annotation(&input, STATUS_PORT_ANNOTATION)
                    .and_then(parse_go_int)
                    .unwrap_or(15020);
                rewrite_probes(&mut rewritten, port);
                for c in app_containers(&rewritten) {
                    let g = app_container(&golden, container_name(c)).expect("container");
                    for kind in PROBE_KINDS {
                        assert_eq!(
                            kind.get(c),
                            kind.get(g),
                            "{name} {}",
                            kind.url(container_name(c))
                        );
                    }
                }
                checked += 1;
            }
            eprintln!("app probers checked on {checked} corpus pods");
            assert!(checked >= 10, "only {checked} pods with probers checked");
        }

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

        #[test]
        fn container_order_of_goldens_is_stable() {
            let Some(pairs) = case_pairs() else {
                return;
            };
            let mut checked = 0;
            for (name, _, golden) in pairs {
                if find_sidecar(&golden).is_none() || !reinjected(&golden) {
                    continue;
                }
                let hold = names(&golden, "containers").first().map(String::as_str)
                    == Some(PROXY_CONTAINER);
                let mut inputs = Inputs::new();
                inputs.values["global"]["proxy"]["holdApplicationUntilProxyStarts"] = json!(hold);
                let p = PostProcess {
                    mesh: &inputs.mesh,
                    values: &inputs.values,
                    proxy_envs: &inputs.envs,
                    revision: "",
                    injected_annotations: &inputs.injected,
                    template_pod: &inputs.template,
                    original_pod: &inputs.original,
                    proxy_config_annotation_mesh: None,
                };
                let mut pod = golden.clone();
                reorder_containers(&mut pod, &p);
                assert_eq!(
                    names(&pod, "containers"),
                    names(&golden, "containers"),
                    "{name}"
                );
                assert_eq!(
                    names(&pod, "initContainers"),
                    names(&golden, "initContainers"),
                    "{name}"
                );
                checked += 1;
            }
            eprintln!("container order checked on {checked} corpus pods");
            assert!(checked > 50, "only {checked} pods checked");
        }
    }
}
