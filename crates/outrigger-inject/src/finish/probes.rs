//! Probe rewriting: the application's HTTP, TCP and gRPC probes are described to the
//! agent in `ISTIO_KUBE_APP_PROBERS` and redirected to the agent's status port.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::tree::{json_bool, parse_go_bool};
use super::{
    PostProcess, APP_PROBERS_ENV, PROXY_CONTAINER, REWRITE_PROBERS, STATUS_ANNOTATION,
    STATUS_PORT_ANNOTATION,
};
use crate::go::json as gojson;
use crate::go::strconv::atoi;
use crate::json::lookup as jsonmap;
use crate::json::Scan;
use crate::kube::pod::{
    annotation, annotations, container_name, env_entry, env_mut, find_sidecar, find_sidecar_mut,
};
use crate::mesh::default_status_port;

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
                gojson::unmarshal_kind(other)
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

fn opt_string(m: &Map<String, Value>, key: &str) -> std::result::Result<String, String> {
    match m.scan(key) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(format!(
            "json: cannot unmarshal {} into Go struct field of type string ({key})",
            gojson::unmarshal_kind(other)
        )),
    }
}

fn as_object<'v>(v: &'v Value, what: &str) -> std::result::Result<&'v Map<String, Value>, String> {
    v.as_object().ok_or_else(|| {
        format!(
            "json: cannot unmarshal {} into Go value of type {what}",
            gojson::unmarshal_kind(v)
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
        let headers = match m.scan("httpHeaders") {
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
                    gojson::unmarshal_kind(other)
                ))
            }
        };
        Ok(HttpGet {
            path: opt_string(m, "path")?,
            port: IntOrStr::from_json(m.scan("port"))?,
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
            port: IntOrStr::from_json(m.scan("port"))?,
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
        let port = match IntOrStr::from_json(m.scan("port"))? {
            IntOrStr::Int(i) => i,
            IntOrStr::Str(_) => return Err(
                "json: cannot unmarshal string into Go struct field GRPCAction.port of type int32"
                    .into(),
            ),
        };
        let service = match m.scan("service") {
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
        let field = |k: &str| m.scan(k).filter(|x| !x.is_null());
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
            .scan("timeoutSeconds")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let mut p = Self::from_handler(probe)?;
        p.timeout_seconds = timeout;
        Some(p)
    }

    /// A lifecycle handler's (or probe's) action, without timeout.
    fn from_handler(handler: &Value) -> Option<Prober> {
        let get = |k: &str| handler.scan(k).filter(|v| !v.is_null());
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
            ProbeKind::Readiness => c.scan("readinessProbe"),
            ProbeKind::Liveness => c.scan("livenessProbe"),
            ProbeKind::Startup => c.scan("startupProbe"),
            ProbeKind::PreStop => c.scan("lifecycle")?.scan("preStop"),
            ProbeKind::PostStart => c.scan("lifecycle")?.scan("postStart"),
        };
        v.filter(|v| v.is_object())
    }

    fn get_mut(self, c: &mut Value) -> Option<&mut Map<String, Value>> {
        let v = match self {
            ProbeKind::Readiness => c.scan_mut("readinessProbe"),
            ProbeKind::Liveness => c.scan_mut("livenessProbe"),
            ProbeKind::Startup => c.scan_mut("startupProbe"),
            ProbeKind::PreStop => c.scan_mut("lifecycle")?.scan_mut("preStop"),
            ProbeKind::PostStart => c.scan_mut("lifecycle")?.scan_mut("postStart"),
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
        .filter_map(|list| pod.scan("spec")?.scan(list)?.as_array())
        .flatten()
        .filter(|c| container_name(c) != PROXY_CONTAINER)
}

fn named_ports(c: &Value) -> BTreeMap<String, i64> {
    c.scan("ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| {
            let name = p.scan("name")?.as_str().filter(|n| !n.is_empty())?;
            Some((
                name.to_string(),
                p.scan("containerPort").and_then(Value::as_i64).unwrap_or(0),
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

/// Whether to rewrite probes: the `sidecar.istio.io/rewriteAppHTTPProbers` annotation of the
/// merged pod, else values
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

/// Probe rewriting (Istio's `applyRewrite`).
pub(super) fn apply_probe_rewrite(
    pod: &mut Value,
    p: &PostProcess<'_>,
    warnings: &mut Vec<String>,
) {
    if find_sidecar(pod).is_none() || !should_rewrite(pod, p.values) {
        return;
    }
    let mesh_port = default_status_port(p.mesh);
    let probers = dump_app_probers(pod, mesh_port);
    if !probers.is_empty() {
        record_probers(pod, probers, warnings);
    }
    let status_port = match annotation(pod, STATUS_PORT_ANNOTATION) {
        Some(v) => atoi(v).unwrap_or_else(|e| {
            warnings.push(format!(
                "Invalid annotation {STATUS_PORT_ANNOTATION}={v}: {e}"
            ));
            0
        }),
        None => mesh_port,
    };
    rewrite_probes(pod, status_port);
}

/// Store the probers in the sidecar's `ISTIO_KUBE_APP_PROBERS`, merging with a
/// previous injection's value.
fn record_probers(pod: &mut Value, probers: String, warnings: &mut Vec<String>) {
    let reinjected =
        annotations(pod).is_some_and(|a| crate::json::lookup::contains(a, STATUS_ANNOTATION));
    let Some(sidecar) = find_sidecar_mut(pod) else {
        return;
    };
    let env = env_mut(sidecar);
    let existing = env
        .iter_mut()
        .find(|e| e.scan("name").and_then(Value::as_str) == Some(APP_PROBERS_ENV));
    match existing {
        Some(entry) if reinjected => {
            let old = entry.scan("value").and_then(Value::as_str).unwrap_or("");
            match merge_probers(old, &probers) {
                Ok(merged) => *entry = env_entry(APP_PROBERS_ENV, &merged),
                Err(e) => warnings.push(e),
            }
        }
        _ => env.push(env_entry(APP_PROBERS_ENV, &probers)),
    }
}

/// Istio's `patchRewriteProbe`: point every app probe and lifecycle handler at the agent.
fn rewrite_probes(pod: &mut Value, status_port: i64) {
    let Some(spec) = pod.scan_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    for list in ["initContainers", "containers"] {
        let Some(cs) = spec.scan_mut(list).and_then(Value::as_array_mut) else {
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
    let present = |p: &Map<String, Value>, k: &str| p.scan(k).is_some_and(|v| !v.is_null());
    if present(probe, "httpGet") {
        if let Some(h) = probe.scan_mut("httpGet").and_then(Value::as_object_mut) {
            h.insert("port".into(), Value::from(status_port));
            h.insert("path".into(), Value::String(url.into()));
            if h.scan("scheme").and_then(Value::as_str) == Some("HTTPS") {
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

#[cfg(test)]
mod tests {
    use crate::finish::PROMETHEUS_ENV;
    use serde_json::json;

    use super::*;
    use crate::finish::tests::corpus::{case_pairs, reinjected};
    use crate::finish::tests::*;

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

    // Corpus sweep: inputs and goldens read with yaml-rust2.

    fn app_container<'p>(pod: &'p Value, name: &str) -> Option<&'p Value> {
        app_containers(pod).find(|c| container_name(c) == name)
    }

    #[cfg_attr(
        not(corpus_present),
        ignore = "needs Istio's conformance corpus in ../shared beside the checkout"
    )]
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
                .and_then(|v| atoi(v).ok())
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
}
