//! Validation of Istio pod annotations, with Istio-compatible messages.
//!
//! [`validate_annotations`] checks every annotation Istio validates (interception mode, ports,
//! IP ranges, interfaces, booleans, quantities, `proxy.istio.io/config`) and returns
//! `Error::InvalidAnnotations` with Istio's multierror text.
//! Failures are reported sorted by annotation name (Istio's order is map iteration order).

use serde_json::{Map, Value};

use crate::go::multierror::format_multierror;
use crate::go::quote::quote as go_quote;
use crate::{Error, Result};

/// A checker: `Err(reason)` on an invalid value.
type Check = fn(&str) -> std::result::Result<(), String>;

/// The validated annotations and their checks.
const CHECKS: &[(&str, Check)] = &[
    ("sidecar.istio.io/interceptionMode", interception_mode),
    ("status.sidecar.istio.io/port", status_port),
    (
        "readiness.status.sidecar.istio.io/initialDelaySeconds",
        uint32,
    ),
    ("readiness.status.sidecar.istio.io/periodSeconds", uint32),
    ("readiness.status.sidecar.istio.io/failureThreshold", uint32),
    (
        "traffic.sidecar.istio.io/includeOutboundIPRanges",
        include_ip_ranges,
    ),
    (
        "traffic.sidecar.istio.io/excludeOutboundIPRanges",
        exclude_ip_ranges,
    ),
    (
        "traffic.sidecar.istio.io/includeInboundPorts",
        include_inbound_ports,
    ),
    (
        "traffic.sidecar.istio.io/excludeInboundPorts",
        exclude_inbound_ports,
    ),
    (
        "traffic.sidecar.istio.io/excludeOutboundPorts",
        exclude_outbound_ports,
    ),
    ("traffic.sidecar.istio.io/excludeInterfaces", interfaces),
    ("traffic.sidecar.istio.io/kubevirtInterfaces", interfaces),
    ("istio.io/reroute-virtual-interfaces", interfaces),
    ("prometheus.istio.io/merge-metrics", go_bool),
    ("proxy.istio.io/config", proxy_config),
    ("sidecar.istio.io/proxyCPU", quantity),
    ("sidecar.istio.io/proxyMemory", quantity),
    ("sidecar.istio.io/proxyCPULimit", quantity),
    ("sidecar.istio.io/proxyMemoryLimit", quantity),
];

/// Validate the pod's annotations.
pub fn validate_annotations(annotations: &Map<String, Value>) -> Result<()> {
    let errs = annotation_errors(annotations);
    if errs.is_empty() {
        Ok(())
    } else {
        Err(Error::InvalidAnnotations(errs))
    }
}

/// The failure messages (`invalid value '<v>' for annotation '<name>': <reason>`), sorted by
/// annotation name. Non-string values are checked as their JSON text.
pub fn annotation_errors(annotations: &Map<String, Value>) -> Vec<String> {
    let mut names: Vec<&String> = annotations.keys().collect();
    names.sort();
    let mut errs = Vec::new();
    for name in names {
        let Some((_, check)) = CHECKS.iter().find(|(n, _)| n == name) else {
            continue;
        };
        let value = match &annotations[name] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        if let Err(reason) = check(&value) {
            errs.push(format!(
                "invalid value '{value}' for annotation '{name}': {reason}"
            ));
        }
    }
    errs
}

fn interception_mode(v: &str) -> std::result::Result<(), String> {
    match v {
        "REDIRECT" | "TPROXY" | "NONE" => Ok(()),
        _ => Err(format!(
            "interceptionMode invalid, use REDIRECT,TPROXY,NONE: {v}"
        )),
    }
}

/// Go `strconv.ParseUint(s, 10, bits)` with its error texts.
pub fn parse_uint(s: &str, bits: u32) -> std::result::Result<u64, String> {
    let err = |why: &str| format!("strconv.ParseUint: parsing {}: {why}", go_quote(s));
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(err("invalid syntax"));
    }
    let max = if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    match s.parse::<u64>() {
        Ok(n) if n <= max => Ok(n),
        _ => Err(err("value out of range")),
    }
}

/// Istio's `parsePort`: trimmed unsigned 16-bit decimal; the message quotes the raw text.
fn parse_port(raw: &str) -> std::result::Result<u64, String> {
    parse_uint(raw.trim(), 16).map_err(|e| format!("failed parsing port '{raw}': {e}"))
}

fn status_port(v: &str) -> std::result::Result<(), String> {
    parse_port(v)
        .map(|_| ())
        .map_err(|e| format!("excludeInboundPorts invalid: {e}"))
}

fn uint32(v: &str) -> std::result::Result<(), String> {
    parse_uint(v, 32).map(|_| ())
}

/// Istio's `parsePorts`: a comma-separated port list; empty means none.
fn parse_ports(list: &str) -> std::result::Result<(), String> {
    let list = list.trim();
    if list.is_empty() {
        return Ok(());
    }
    for piece in list.split(',') {
        parse_port(piece).map_err(|e| format!("failed parsing port '{piece}': {e}"))?;
    }
    Ok(())
}

fn port_list(label: &str, v: &str) -> std::result::Result<(), String> {
    parse_ports(v).map_err(|e| format!("{label} invalid: {e}"))
}

fn include_inbound_ports(v: &str) -> std::result::Result<(), String> {
    if v == "*" {
        return Ok(());
    }
    port_list("includeInboundPorts", v)
}

fn exclude_inbound_ports(v: &str) -> std::result::Result<(), String> {
    port_list("excludeInboundPorts", v)
}

fn exclude_outbound_ports(v: &str) -> std::result::Result<(), String> {
    port_list("excludeOutboundPorts", v)
}

fn cidr_list(label: &str, v: &str) -> std::result::Result<(), String> {
    if v.is_empty() {
        return Ok(());
    }
    for piece in v.split(',') {
        parse_prefix(piece)
            .map_err(|e| format!("{label} invalid: failed parsing cidr '{piece}': {e}"))?;
    }
    Ok(())
}

fn include_ip_ranges(v: &str) -> std::result::Result<(), String> {
    if v == "*" {
        return Ok(());
    }
    cidr_list("includeIPRanges", v)
}

fn exclude_ip_ranges(v: &str) -> std::result::Result<(), String> {
    cidr_list("excludeIPRanges", v)
}

/// Go `netip.ParsePrefix` (validity and error texts).
pub fn parse_prefix(s: &str) -> std::result::Result<(), String> {
    let err = |msg: &str| format!("netip.ParsePrefix({}): {msg}", go_quote(s));
    let Some(i) = s.rfind('/') else {
        return Err(err("no '/'"));
    };
    let is6 = parse_addr(&s[..i]).map_err(|e| err(&e))?;
    if is6 && s[..i].contains('%') {
        return Err(err("IPv6 zones cannot be present in a prefix"));
    }
    let bits_str = &s[i + 1..];
    let bad_bits = || err(&format!("bad bits after slash: {}", go_quote(bits_str)));
    if bits_str.len() > 1 && !(b'1'..=b'9').contains(&bits_str.as_bytes()[0]) {
        return Err(bad_bits());
    }
    let bits: i64 = crate::mesh::go_atoi(bits_str).map_err(|_| bad_bits())?;
    let max = if is6 { 128 } else { 32 };
    if !(0..=max).contains(&bits) {
        return Err(err("prefix length out of range"));
    }
    Ok(())
}

/// Go `netip.ParseAddr` (validity and error texts); `Ok(true)` for IPv6.
fn parse_addr(s: &str) -> std::result::Result<bool, String> {
    for c in s.bytes() {
        match c {
            b'.' => return parse_ipv4_fields(s, 0, s.len()).map(|_| false),
            b':' => return parse_ipv6(s).map(|_| true),
            b'%' => return Err(addr_err(s, "missing IPv6 address", None)),
            _ => {}
        }
    }
    Err(addr_err(s, "unable to parse IP", None))
}

/// Go's `parseAddrError` text.
fn addr_err(input: &str, msg: &str, at: Option<&str>) -> String {
    match at {
        Some(at) if !at.is_empty() => format!(
            "ParseAddr({}): {msg} (at {})",
            go_quote(input),
            go_quote(at)
        ),
        _ => format!("ParseAddr({}): {msg}", go_quote(input)),
    }
}

/// Go `parseIPv4Fields` over `input[off..end]`.
fn parse_ipv4_fields(input: &str, off: usize, end: usize) -> std::result::Result<(), String> {
    let s = &input[off..end];
    let b = s.as_bytes();
    let (mut val, mut pos, mut dig_len) = (0u32, 0, 0);
    for i in 0..b.len() {
        match b[i] {
            c @ b'0'..=b'9' => {
                if dig_len == 1 && val == 0 {
                    return Err(addr_err(
                        input,
                        "IPv4 field has octet with leading zero",
                        None,
                    ));
                }
                val = val * 10 + u32::from(c - b'0');
                dig_len += 1;
                if val > 255 {
                    return Err(addr_err(input, "IPv4 field has value >255", None));
                }
            }
            b'.' => {
                if i == 0 || i == b.len() - 1 || b[i - 1] == b'.' {
                    let msg = "IPv4 field must have at least one digit";
                    return Err(addr_err(input, msg, Some(&s[i..])));
                }
                if pos == 3 {
                    return Err(addr_err(input, "IPv4 address too long", None));
                }
                pos += 1;
                val = 0;
                dig_len = 0;
            }
            _ => return Err(addr_err(input, "unexpected character", Some(&s[i..]))),
        }
    }
    if pos < 3 {
        return Err(addr_err(input, "IPv4 address too short", None));
    }
    Ok(())
}

/// Go `parseIPv6` (netip), validity and error texts.
fn parse_ipv6(input: &str) -> std::result::Result<(), String> {
    let err = |msg: &str, at: &str| Err(addr_err(input, msg, Some(at)));
    let (mut s, zone) = match input.find('%') {
        Some(i) if i + 1 == input.len() => {
            return Err(addr_err(input, "zone must be a non-empty string", None))
        }
        Some(i) => (&input[..i], &input[i + 1..]),
        None => (input, ""),
    };
    let mut ellipsis: Option<usize> = None;
    if s.starts_with("::") {
        ellipsis = Some(0);
        s = &s[2..];
        if s.is_empty() {
            return Ok(());
        }
    }
    let mut i = 0;
    while i < 16 {
        let b = s.as_bytes();
        let mut off = 0;
        let mut acc: u32 = 0;
        while off < b.len() {
            let Some(d) = (b[off] as char).to_digit(16) else {
                break;
            };
            acc = (acc << 4) + d;
            if off > 3 {
                return err("each group must have 4 or less digits", s);
            }
            if acc > 0xffff {
                return err("IPv6 field has value >=2^16", s);
            }
            off += 1;
        }
        if off == 0 {
            return err("each colon-separated field must have at least one digit", s);
        }
        if off < b.len() && b[off] == b'.' {
            if ellipsis.is_none() && i != 12 {
                let msg = "embedded IPv4 address must replace the final 2 fields of the address";
                return err(msg, s);
            }
            if i + 4 > 16 {
                let msg = "too many hex fields to fit an embedded IPv4 at the end of the address";
                return err(msg, s);
            }
            let end = input.len() - if zone.is_empty() { 0 } else { zone.len() + 1 };
            parse_ipv4_fields(input, end - s.len(), end)?;
            s = "";
            i += 4;
            break;
        }
        i += 2;
        s = &s[off..];
        if s.is_empty() {
            break;
        }
        if !s.starts_with(':') {
            return err("unexpected character, want colon", s);
        } else if s.len() == 1 {
            return err("colon must be followed by more characters", s);
        }
        s = &s[1..];
        if s.starts_with(':') {
            if ellipsis.is_some() {
                return err("multiple :: in address", s);
            }
            ellipsis = Some(i);
            s = &s[1..];
            if s.is_empty() {
                break;
            }
        }
    }
    if !s.is_empty() {
        return err("trailing garbage after address", s);
    }
    if i < 16 && ellipsis.is_none() {
        return Err(addr_err(input, "address string too short", None));
    }
    if i >= 16 && ellipsis.is_some() {
        return err("the :: must expand to at least one field of zeros", s);
    }
    Ok(())
}

fn interfaces(v: &str) -> std::result::Result<(), String> {
    if v.is_empty() {
        return Ok(());
    }
    for raw in v.split(',') {
        let name = raw.trim();
        if name.is_empty() {
            return Err("empty interface name".to_string());
        }
        if name.len() > 15 {
            return Err(format!(
                "interface name {} too long (max 15 chars)",
                go_quote(name)
            ));
        }
        let b = name.as_bytes();
        let valid = b[0].is_ascii_alphabetic()
            && b.iter()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'));
        if !valid {
            return Err(format!(
                "interface name {} contains invalid characters",
                go_quote(name)
            ));
        }
    }
    Ok(())
}

fn go_bool(v: &str) -> std::result::Result<(), String> {
    match v {
        "1" | "t" | "T" | "TRUE" | "true" | "True" | "0" | "f" | "F" | "FALSE" | "false"
        | "False" => Ok(()),
        _ => Err(format!(
            "strconv.ParseBool: parsing {}: invalid syntax",
            go_quote(v)
        )),
    }
}

/// `proxy.istio.io/config`: applied over the built-in default ProxyConfig, then validated.
fn proxy_config(v: &str) -> std::result::Result<(), String> {
    check_proxy_config_tree(crate::yaml::from_str(v).map_err(Into::into))
}

/// The `proxy.istio.io/config` check on the annotation's parsed YAML.
fn check_proxy_config_tree(tree: Result<Value>) -> std::result::Result<(), String> {
    let pc = tree
        .and_then(|t| crate::mesh::apply_onto_default_proxy_config(&t))
        .map_err(|e| format!("failed to convert to apply proxy config: {e}"))?;
    let errs = crate::mesh::proxy_config_errors(&pc);
    if errs.is_empty() {
        Ok(())
    } else {
        Err(format_multierror(&errs))
    }
}

/// Kubernetes `resource.ParseQuantity` (the k8s module's port), after a control-character check.
fn quantity(v: &str) -> std::result::Result<(), String> {
    if v.chars().any(char::is_control) {
        return Err("value contains control characters".to_string());
    }
    crate::kube::quantity::parse(v)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests;
