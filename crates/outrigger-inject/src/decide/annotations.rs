//! Validation of Istio pod annotations, with Istio-compatible messages.
//!
//! [`validate_annotations`] checks every annotation Istio validates (interception mode, ports,
//! IP ranges, interfaces, booleans, quantities, `proxy.istio.io/config`) and returns
//! [`InvalidAnnotations`] with Istio's multierror text (the crate-wide sum's
//! `Error::InvalidAnnotations`).
//! Failures are reported sorted by annotation name (Istio's order is map iteration order).

use serde_json::{Map, Value};

use crate::go::multierror::format_multierror;
use crate::go::netip::parse_prefix;
use crate::go::quote::quote as go_quote;
use crate::go::strconv::parse_uint;
use crate::kube::annotations::{Validation, VALIDATED};
use crate::mesh::MeshError;

/// Pod annotations that failed validation: one message per invalid annotation (sorted by
/// annotation name), shown in Istio's multierror format. The decide stage's error; it converts
/// into the crate-wide sum as `Error::InvalidAnnotations` with the same list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", format_multierror(.0))]
pub struct InvalidAnnotations(pub Vec<String>);

/// A checker: `Err(reason)` on an invalid value.
type Check = fn(&str) -> Result<(), String>;

/// The check of a [`Validation`] of the annotation table ([`crate::kube::annotations`], which
/// says which annotation is validated how); `None` for [`Validation::None`].
fn check_of(validation: Validation) -> Option<Check> {
    Some(match validation {
        Validation::None => return None,
        Validation::InterceptionMode => interception_mode,
        Validation::StatusPort => status_port,
        Validation::Uint32 => uint32,
        Validation::IncludeIpRanges => include_ip_ranges,
        Validation::ExcludeIpRanges => exclude_ip_ranges,
        Validation::IncludeInboundPorts => include_inbound_ports,
        Validation::ExcludeInboundPorts => exclude_inbound_ports,
        Validation::ExcludeOutboundPorts => exclude_outbound_ports,
        Validation::Interfaces => interfaces,
        Validation::Bool => go_bool,
        Validation::ProxyConfig => proxy_config,
        Validation::Quantity => quantity,
    })
}

/// The validated annotations and their checks, from the annotation table.
#[cfg(test)]
fn checks() -> impl Iterator<Item = (&'static str, Check)> {
    VALIDATED
        .iter()
        .filter_map(|a| Some((a.name, check_of(a.validation)?)))
}

/// The decision's second half, once a pod is to be injected: its annotations validated
/// (Istio's `RunTemplate` refuses a pod with an invalid one before rendering). Errors are
/// [`InvalidAnnotations`], one message per invalid annotation.
pub fn validate_pod_annotations(pod: &Value) -> Result<(), InvalidAnnotations> {
    let empty = Map::new();
    let given = pod
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    validate_annotations(given)
}

/// Validate the pod's annotations.
pub fn validate_annotations(annotations: &Map<String, Value>) -> Result<(), InvalidAnnotations> {
    let errs = annotation_errors(annotations);
    if errs.is_empty() {
        Ok(())
    } else {
        Err(InvalidAnnotations(errs))
    }
}

/// The failure messages (`invalid value '<v>' for annotation '<name>': <reason>`), sorted by
/// annotation name. Non-string values are checked as their JSON text.
pub fn annotation_errors(annotations: &Map<String, Value>) -> Vec<String> {
    let mut names: Vec<&String> = annotations.keys().collect();
    names.sort();
    let mut errs = Vec::new();
    for name in names {
        let Some(check) = VALIDATED
            .iter()
            .find(|a| a.name == name.as_str())
            .and_then(|a| check_of(a.validation))
        else {
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

fn interception_mode(v: &str) -> Result<(), String> {
    match v {
        "REDIRECT" | "TPROXY" | "NONE" => Ok(()),
        _ => Err(format!(
            "interceptionMode invalid, use REDIRECT,TPROXY,NONE: {v}"
        )),
    }
}

/// Istio's `parsePort`: trimmed unsigned 16-bit decimal; the message quotes the raw text.
fn parse_port(raw: &str) -> Result<u64, String> {
    parse_uint(raw.trim(), 10, 16).map_err(|e| format!("failed parsing port '{raw}': {e}"))
}

fn status_port(v: &str) -> Result<(), String> {
    parse_port(v)
        .map(|_| ())
        .map_err(|e| format!("excludeInboundPorts invalid: {e}"))
}

fn uint32(v: &str) -> Result<(), String> {
    parse_uint(v, 10, 32).map(|_| ()).map_err(|e| e.to_string())
}

/// Istio's `parsePorts`: a comma-separated port list; empty means none.
fn parse_ports(list: &str) -> Result<(), String> {
    let list = list.trim();
    if list.is_empty() {
        return Ok(());
    }
    for piece in list.split(',') {
        parse_port(piece).map_err(|e| format!("failed parsing port '{piece}': {e}"))?;
    }
    Ok(())
}

fn port_list(label: &str, v: &str) -> Result<(), String> {
    parse_ports(v).map_err(|e| format!("{label} invalid: {e}"))
}

fn include_inbound_ports(v: &str) -> Result<(), String> {
    if v == "*" {
        return Ok(());
    }
    port_list("includeInboundPorts", v)
}

fn exclude_inbound_ports(v: &str) -> Result<(), String> {
    port_list("excludeInboundPorts", v)
}

fn exclude_outbound_ports(v: &str) -> Result<(), String> {
    port_list("excludeOutboundPorts", v)
}

fn cidr_list(label: &str, v: &str) -> Result<(), String> {
    if v.is_empty() {
        return Ok(());
    }
    for piece in v.split(',') {
        parse_prefix(piece)
            .map_err(|e| format!("{label} invalid: failed parsing cidr '{piece}': {e}"))?;
    }
    Ok(())
}

fn include_ip_ranges(v: &str) -> Result<(), String> {
    if v == "*" {
        return Ok(());
    }
    cidr_list("includeIPRanges", v)
}

fn exclude_ip_ranges(v: &str) -> Result<(), String> {
    cidr_list("excludeIPRanges", v)
}

fn interfaces(v: &str) -> Result<(), String> {
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

fn go_bool(v: &str) -> Result<(), String> {
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
fn proxy_config(v: &str) -> Result<(), String> {
    check_proxy_config_tree(crate::yaml::from_str(v).map_err(MeshError::from))
}

/// The `proxy.istio.io/config` check on the annotation's parsed YAML.
fn check_proxy_config_tree(tree: Result<Value, MeshError>) -> Result<(), String> {
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
fn quantity(v: &str) -> Result<(), String> {
    if v.chars().any(char::is_control) {
        return Err("value contains control characters".to_string());
    }
    crate::kube::quantity::parse(v)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests;
