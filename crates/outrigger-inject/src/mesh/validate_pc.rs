//! Istio's `ValidateMeshConfigProxyConfig` (pkg/config/validation/agent): the error checks of a
//! ProxyConfig, with Istio's message texts, in Istio's order. Warnings are not reported.

use std::net::IpAddr;

use serde_json::Value;

use super::{MeshError, Result};
use crate::go::duration::parse_go_duration;
use crate::go::net::split_host_port;
use crate::go::quote::quote as go_quote;
use crate::go::strconv::atoi;
use crate::kube::dns1123::is_dns1123_label;

/// Validate a canonical ProxyConfig; on failure the error carries Istio's multierror text.
pub fn validate_proxy_config(pc: &Value) -> Result<()> {
    let errs = proxy_config_errors(pc);
    if errs.is_empty() {
        Ok(())
    } else {
        Err(MeshError::InvalidProxyConfig(errs))
    }
}

/// Validate a canonical MeshConfig as `ApplyMeshConfig` does (subset of Istio's
/// `ValidateMeshConfig`: listen port, connect and protocol detection timeouts, default proxy
/// config); the error carries Istio's multierror text.
pub fn validate_mesh_config(mesh: &Value) -> Result<()> {
    let errs = mesh_config_errors(mesh);
    if errs.is_empty() {
        Ok(())
    } else {
        Err(MeshError::InvalidMeshConfig(errs))
    }
}

/// The implemented `ValidateMeshConfig` errors, in Istio's order.
pub fn mesh_config_errors(mesh: &Value) -> Vec<String> {
    let mut errs = Vec::new();
    if let Err(e) = validate_port(int_at(mesh, "/proxyListenPort")) {
        errs.push(format!("invalid proxy listen port: {e}"));
    }
    let nanos = |key: &str| {
        mesh.get(key)
            .and_then(Value::as_str)
            .and_then(|s| parse_go_duration(s).ok())
            .map_or(0, |d| d.nanos)
    };
    if let Err(e) = validate_duration(nanos("connectTimeout")) {
        errs.push(format!("invalid connect timeout: {e}"));
    }
    let pdt = nanos("protocolDetectionTimeout");
    if pdt != 0 && pdt % 1_000_000 != 0 {
        errs.push(
            "invalid protocol detection timeout: only durations to ms precision are supported"
                .to_string(),
        );
    }
    match mesh.get("defaultConfig") {
        Some(pc) => errs.extend(proxy_config_errors(pc)),
        None => errs.push("missing default config".to_string()),
    }
    errs
}

/// Istio's `ValidateDuration` on a nanosecond count.
fn validate_duration(nanos: i128) -> std::result::Result<(), String> {
    if nanos < 1_000_000 {
        Err("duration must be greater than 1ms".to_string())
    } else if nanos % 1_000_000 != 0 {
        Err("only durations to ms precision are supported".to_string())
    } else {
        Ok(())
    }
}

fn str_at<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

fn int_at(v: &Value, ptr: &str) -> i64 {
    v.pointer(ptr).and_then(Value::as_i64).unwrap_or(0)
}

fn prefixed(prefix: &str, errs: Vec<String>) -> impl Iterator<Item = String> + '_ {
    errs.into_iter().map(move |e| format!("{prefix} {e}"))
}

/// Every validation error of a canonical ProxyConfig, in Istio's order.
pub fn proxy_config_errors(pc: &Value) -> Vec<String> {
    let mut errs = Vec::new();
    if str_at(pc, "/configPath").is_empty() {
        errs.push("config path must be set".to_string());
    }
    if str_at(pc, "/binaryPath").is_empty() {
        errs.push("binary path must be set".to_string());
    }
    match (pc.get("serviceCluster"), pc.get("tracingServiceName")) {
        (Some(Value::String(s)), _) if s.is_empty() => {
            errs.push("service cluster must be specified".to_string())
        }
        (Some(_), _) | (None, Some(_)) => {}
        (None, None) => {
            errs.push("oneof service cluster or tracing service name must be specified".to_string())
        }
    }
    errs.extend(drain_duration_errors(pc.get("drainDuration")));
    let discovery = str_at(pc, "/discoveryAddress");
    if discovery.is_empty() {
        errs.push("discovery address must be set to the proxy discovery service".to_string());
    } else if let Err(e) = validate_proxy_address(discovery) {
        errs.push(format!("invalid discovery address: {e}"));
    }
    errs.extend(tracing_errors(pc));
    errs.extend(address_errors(pc));
    if let Err(e) = validate_port(int_at(pc, "/proxyAdminPort")) {
        errs.push(format!("invalid proxy admin port: {e}"));
    }
    if let Some(p) = pc.get("controlPlaneAuthPolicy") {
        if !matches!(p.as_str(), Some("NONE" | "MUTUAL_TLS")) {
            let name = p.as_str().map_or_else(|| p.to_string(), str::to_string);
            errs.push(format!(
                "invalid authentication policy: unrecognized control plane auth policy {}",
                go_quote(&name)
            ));
        }
    }
    if let Err(e) = validate_port(int_at(pc, "/statusPort")) {
        errs.push(format!("invalid status port: {e}"));
    }
    if let Some(pkp) = pc.get("privateKeyProvider") {
        let inner = private_key_provider_errors(pkp);
        errs.extend(prefixed(
            "invalid private key provider configuration:",
            inner,
        ));
    }
    if let Some(cs) = pc.get("connectionSettings") {
        errs.extend(connection_settings_errors(cs));
    }
    errs
}

/// Istio's `ValidateDrainDuration` (absent = zero).
fn drain_duration_errors(d: Option<&Value>) -> Vec<String> {
    let nanos = d
        .and_then(Value::as_str)
        .and_then(|s| parse_go_duration(s).ok())
        .map_or(0, |d| d.nanos);
    if let Err(e) = validate_duration(nanos) {
        return vec![format!("invalid drain duration: {e}")];
    }
    if nanos % 1_000_000_000 != 0 {
        return vec!["drain time only supports durations to seconds precision".to_string()];
    }
    Vec::new()
}

fn tracing_errors(pc: &Value) -> Vec<String> {
    let mut errs = Vec::new();
    if let Some(ls) = pc.pointer("/tracing/lightstep") {
        let mut inner = Vec::new();
        let addr = str_at(ls, "/address");
        if addr.is_empty() {
            inner.push("address is required".to_string());
        }
        if let Err(e) = validate_proxy_address(addr) {
            inner.push(format!("invalid lightstep address: {e}"));
        }
        if str_at(ls, "/accessToken").is_empty() {
            inner.push("access token is required".to_string());
        }
        errs.extend(prefixed("invalid lightstep config:", inner));
    }
    for (key, label) in [("zipkin", "zipkin"), ("datadog", "datadog")] {
        if let Some(t) = pc.pointer(&format!("/tracing/{key}")) {
            let addr = str_at(t, "/address").replacen("$(HOST_IP)", "127.0.0.1", 1);
            if let Err(e) = validate_proxy_address(&addr) {
                errs.push(format!("invalid {label} config: {e}"));
            }
        }
    }
    errs
}

fn address_errors(pc: &Value) -> Vec<String> {
    let mut errs = Vec::new();
    let checks = [
        ("/statsdUdpAddress", "statsd udp address"),
        (
            "/envoyMetricsServiceAddress",
            "envoy metrics service address",
        ),
        (
            "/envoyMetricsService/address",
            "envoy metrics service address",
        ),
        (
            "/envoyAccessLogService/address",
            "envoy access log service address",
        ),
    ];
    for (ptr, label) in checks {
        let addr = str_at(pc, ptr);
        if addr.is_empty() {
            continue;
        }
        if let Err(e) = validate_proxy_address(addr) {
            errs.push(format!("invalid {label} {}: {e}", go_quote(addr)));
        }
    }
    errs
}

fn private_key_provider_errors(pkp: &Value) -> Vec<String> {
    let mut errs = Vec::new();
    let (name, conf) = match (pkp.get("cryptomb"), pkp.get("qat")) {
        (Some(c), _) => ("cryptomb", c),
        (None, Some(q)) => ("qat", q),
        (None, None) => {
            errs.push("private key provider configuration is required".to_string());
            errs.push("unknown private key provider".to_string());
            return errs;
        }
    };
    match conf.get("pollDelay").and_then(Value::as_str) {
        None => errs.push("pollDelay is required".to_string()),
        Some(d) if parse_go_duration(d).map_or(true, |d| d.nanos == 0) => {
            errs.push("pollDelay must be non zero".to_string())
        }
        Some(_) => {}
    }
    if conf.is_null() {
        errs.insert(0, format!("{name} configuration is required"));
    }
    errs
}

fn connection_settings_errors(cs: &Value) -> Vec<String> {
    let mut errs = Vec::new();
    let int = |k: &str| cs.get(k).and_then(Value::as_i64);
    for k in [
        "listenerPerConnectionBufferLimitBytes",
        "clusterPerConnectionBufferLimitBytes",
    ] {
        if int(k).is_some_and(|v| v < 0) {
            errs.push(format!("{} must be non-negative", snake(k)));
        }
    }
    for k in [
        "httpIdleTimeout",
        "httpMaxConnectionDuration",
        "httpDrainTimeout",
        "httpRequestTimeout",
        "httpRequestHeadersTimeout",
        "httpStreamIdleTimeout",
        "httpMaxStreamDuration",
    ] {
        let d = cs
            .get(k)
            .and_then(Value::as_str)
            .and_then(|s| parse_go_duration(s).ok());
        if d.is_some_and(|d| d.nanos < 0) {
            errs.push(format!("{} must be non-negative", snake(k)));
        }
    }
    for k in [
        "httpMaxConcurrentStreams",
        "listenerConnectionLimit",
        "globalDownstreamConnectionLimit",
    ] {
        if int(k).is_some_and(|v| v <= 0) {
            errs.push(format!("{} must be positive", snake(k)));
        }
    }
    for k in [
        "http2InitialStreamWindowSize",
        "http2InitialConnectionWindowSize",
    ] {
        if int(k).is_some_and(|v| v < 65535) {
            errs.push(format!("{} must be at least 65535", snake(k)));
        }
    }
    errs
}

/// camelCase → snake_case (digits stay attached: `http2InitialStreamWindowSize`).
fn snake(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Istio's `ValidatePort`.
pub fn validate_port(port: i64) -> std::result::Result<(), String> {
    if (1..=65535).contains(&port) {
        Ok(())
    } else {
        Err(format!("port number {port} must be in the range 1..65535"))
    }
}

/// Istio's `ValidateProxyAddress` (`host:port`, host a DNS name or an IP).
pub fn validate_proxy_address(addr: &str) -> std::result::Result<(), String> {
    let (host, port) =
        split_host_port(addr).map_err(|e| format!("unable to split {}: {e}", go_quote(addr)))?;
    let port = atoi(port).map_err(|e| format!("port ({port}) is not a number: {e}"))?;
    validate_port(port)?;
    if validate_fqdn(host).is_err() && host.parse::<IpAddr>().is_err() {
        return Err(format!(
            "{} is not a valid hostname or an IP address",
            go_quote(host)
        ));
    }
    Ok(())
}

/// Istio's `ValidateFQDN`: ≤ 255 chars, RFC 1123 labels, TLD not all-numeric.
pub fn validate_fqdn(fqdn: &str) -> std::result::Result<(), String> {
    if fqdn.len() > 255 {
        return Err(format!("domain name {} too long (max 255)", go_quote(fqdn)));
    }
    if fqdn.is_empty() {
        return Err("empty domain name not allowed".to_string());
    }
    let parts: Vec<&str> = fqdn.split('.').collect();
    let tld = parts.last().copied().unwrap_or("");
    if atoi(tld).is_ok() {
        return Err(format!(
            "domain name {} invalid (top level domain {} cannot be all-numeric)",
            go_quote(fqdn),
            go_quote(tld)
        ));
    }
    for (i, label) in parts.iter().enumerate() {
        if i == parts.len() - 1 && label.is_empty() {
            return Ok(());
        }
        if !is_dns1123_label(label) {
            return Err(format!(
                "domain name {} invalid (label {} invalid)",
                go_quote(fqdn),
                go_quote(label)
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxy_address_errors_match_go() {
        assert_eq!(
            validate_proxy_address("istiod.istio-system.svc:15012"),
            Ok(())
        );
        assert_eq!(validate_proxy_address("10.0.0.1:80"), Ok(()));
        assert_eq!(validate_proxy_address("[::1]:80"), Ok(()));
        assert_eq!(
            validate_proxy_address("foo"),
            Err("unable to split \"foo\": address foo: missing port in address".into())
        );
        assert_eq!(
            validate_proxy_address("a:b:c"),
            Err("unable to split \"a:b:c\": address a:b:c: too many colons in address".into())
        );
        assert_eq!(
            validate_proxy_address("foo:x"),
            Err("port (x) is not a number: strconv.Atoi: parsing \"x\": invalid syntax".into())
        );
        assert_eq!(
            validate_proxy_address("foo:0"),
            Err("port number 0 must be in the range 1..65535".into())
        );
        assert_eq!(
            validate_proxy_address("Foo_Bar:80"),
            Err("\"Foo_Bar\" is not a valid hostname or an IP address".into())
        );
        assert_eq!(
            validate_proxy_address("1.2.3.999:80"),
            Err("\"1.2.3.999\" is not a valid hostname or an IP address".into())
        );
    }

    #[test]
    fn mesh_config_checks() {
        let mesh = crate::mesh::default_mesh_config();
        assert_eq!(mesh_config_errors(&mesh), Vec::<String>::new());
        let mut bad = mesh.clone();
        bad["proxyListenPort"] = 0.into();
        bad["connectTimeout"] = "1.0005s".into();
        bad["protocolDetectionTimeout"] = "1us".into();
        bad["defaultConfig"]["statusPort"] = 70000.into();
        assert_eq!(
            mesh_config_errors(&bad),
            [
                "invalid proxy listen port: port number 0 must be in the range 1..65535",
                "invalid connect timeout: only durations to ms precision are supported",
                "invalid protocol detection timeout: only durations to ms precision are supported",
                "invalid status port: port number 70000 must be in the range 1..65535",
            ]
        );
        bad.as_object_mut().expect("object").remove("defaultConfig");
        assert!(mesh_config_errors(&bad).contains(&"missing default config".to_string()));
    }

    #[test]
    fn fqdn_rules() {
        assert!(validate_fqdn("istio.io.").is_ok());
        assert!(validate_fqdn("a.123").is_err());
        assert!(validate_fqdn(&"a".repeat(64)).is_err());
        assert!(validate_fqdn("").is_err());
    }

    #[test]
    fn default_proxy_config_is_valid() {
        assert_eq!(
            proxy_config_errors(&crate::mesh::default_proxy_config()),
            Vec::<String>::new()
        );
    }

    #[test]
    fn empty_proxy_config_lists_all_required_fields() {
        let errs = proxy_config_errors(&serde_json::json!({}));
        assert_eq!(
            errs,
            [
                "config path must be set",
                "binary path must be set",
                "oneof service cluster or tracing service name must be specified",
                "invalid drain duration: duration must be greater than 1ms",
                "discovery address must be set to the proxy discovery service",
                "invalid proxy admin port: port number 0 must be in the range 1..65535",
                "invalid status port: port number 0 must be in the range 1..65535",
            ]
        );
    }

    #[test]
    fn field_checks() {
        let mut pc = crate::mesh::default_proxy_config();
        pc["drainDuration"] = "1.5s".into();
        pc["controlPlaneAuthPolicy"] = "INHERIT".into();
        pc["serviceCluster"] = "".into();
        pc["tracing"] = serde_json::json!({"lightstep": {"address": "x:1"}});
        pc["privateKeyProvider"] = serde_json::json!({"cryptomb": {"pollDelay": "0s"}});
        pc["connectionSettings"] = serde_json::json!({"http2InitialStreamWindowSize": 10});
        assert_eq!(
            proxy_config_errors(&pc),
            [
                "service cluster must be specified",
                "drain time only supports durations to seconds precision",
                "invalid lightstep config: access token is required",
                "invalid authentication policy: unrecognized control plane auth policy \"INHERIT\"",
                "invalid private key provider configuration: pollDelay must be non zero",
                "http2_initial_stream_window_size must be at least 65535",
            ]
        );
    }
}
