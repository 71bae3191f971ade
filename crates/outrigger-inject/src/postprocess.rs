//! Post-processing of the merged pod (spec §8): cluster/network env, Prometheus merge, secure
//! port, probe rewriting, status annotation, injected annotations, container order.
//!
//! Everything works on the pod as a JSON tree. Where the reference iterates a Go map (several
//! spellings of one Prometheus annotation), we take annotation names in sorted order so the
//! outcome is deterministic.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::{gojson, Error, Result};

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
    pod.pointer("/metadata/annotations")
        .and_then(Value::as_object)
}

fn annotations_mut(pod: &mut Value) -> Option<&mut Map<String, Value>> {
    pod.pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
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
    mesh.pointer("/defaultConfig/statusPort")
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

/// Values of the annotations whose sanitised name is `sanitized`, in annotation-name order.
fn sanitized_values<'m>(annotations: &'m Map<String, Value>, sanitized: &str) -> Vec<&'m str> {
    let mut found: Vec<(&String, &str)> = annotations
        .iter()
        .filter(|(k, _)| sanitize_label_name(k) == sanitized)
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
        .filter(|k| sanitize_label_name(k) == TARGETS)
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
    if ann.keys().any(|k| sanitize_label_name(k) == SECURE_PORT) {
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
            values
                .pointer("/sidecarInjectorWebhook/rewriteAppHTTPProbe")
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
    let names = |list: &str| -> Value {
        let names: Vec<Value> = template_pod
            .get("spec")
            .and_then(|s| s.get(list))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|x| Value::String(container_name(x).to_string()))
            .collect();
        if names.is_empty() {
            Value::Null
        } else {
            Value::Array(names)
        }
    };
    let mut m = Map::new();
    m.insert("initContainers".into(), names("initContainers"));
    m.insert("containers".into(), names("containers"));
    m.insert("volumes".into(), names("volumes"));
    m.insert("imagePullSecrets".into(), names("imagePullSecrets"));
    let revision = if revision.is_empty() {
        "default"
    } else {
        revision
    };
    m.insert("revision".into(), Value::String(revision.into()));
    gojson::to_string(&Value::Object(m))
}

/// §8.5: network label, status annotation, injected annotations.
fn apply_metadata(pod: &mut Value, p: &PostProcess<'_>) {
    if let Some(network) = p.proxy_envs.get(NETWORK_ENV) {
        if let Some(labels) = pod
            .pointer_mut("/metadata/labels")
            .and_then(Value::as_object_mut)
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
    let from_mesh = mesh
        .pointer("/defaultConfig/holdApplicationUntilProxyStarts")
        .and_then(json_bool)
        .unwrap_or(false);
    let from_values = p
        .values
        .pointer("/global/proxy/holdApplicationUntilProxyStarts")
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
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
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
