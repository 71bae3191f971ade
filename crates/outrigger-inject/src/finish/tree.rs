//! Helpers on the pod's JSON tree shared by the finishing steps.

use serde_json::{Map, Value};

use super::PROXY_CONTAINER;
use crate::json::lookup as jsonmap;
use crate::json::JsonError;
use crate::kube::typed::TypeError;
use crate::Result;

/// Make sure `metadata`, `metadata.annotations` and `metadata.labels` are objects.
pub(super) fn ensure_metadata_maps(pod: &mut Value) -> Result<()> {
    let root = pod.as_object_mut().ok_or(JsonError::PodNotAnObject)?;
    let meta = object_entry(root, "metadata", "metadata")?;
    object_entry(meta, "annotations", "metadata.annotations")?;
    object_entry(meta, "labels", "metadata.labels")?;
    Ok(())
}

/// The object under `key`, created when missing or null; an error naming `path` otherwise.
pub(super) fn object_entry<'m>(
    map: &'m mut Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<&'m mut Map<String, Value>> {
    let slot = map.entry(key).or_insert(Value::Null);
    if slot.is_null() {
        *slot = Value::Object(Map::new());
    }
    slot.as_object_mut()
        .ok_or_else(|| TypeError::NotAnObject(path.to_string()).into())
}

pub(super) fn annotations(pod: &Value) -> Option<&Map<String, Value>> {
    jsonmap::path(pod, &["metadata", "annotations"]).and_then(Value::as_object)
}

pub(super) fn annotations_mut(pod: &mut Value) -> Option<&mut Map<String, Value>> {
    jsonmap::path_mut(pod, &["metadata", "annotations"]).and_then(Value::as_object_mut)
}

pub(super) fn annotation<'v>(pod: &'v Value, name: &str) -> Option<&'v str> {
    annotations(pod)?.get(name)?.as_str()
}

pub(super) fn container_name(c: &Value) -> &str {
    c.get("name").and_then(Value::as_str).unwrap_or("")
}

/// The sidecar: first `istio-proxy` in `spec.containers`, else in `spec.initContainers`.
pub(super) fn find_sidecar_mut(pod: &mut Value) -> Option<&mut Map<String, Value>> {
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

pub(super) fn find_sidecar(pod: &Value) -> Option<&Map<String, Value>> {
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
pub(super) fn env_mut(container: &mut Map<String, Value>) -> &mut Vec<Value> {
    let slot = container
        .entry("env")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !slot.is_array() {
        *slot = Value::Array(Vec::new());
    }
    slot.as_array_mut().expect("env was just made an array")
}

pub(super) fn env_entry(name: &str, value: &str) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), Value::String(name.into()));
    m.insert("value".into(), Value::String(value.into()));
    Value::Object(m)
}

/// Go `strconv.ParseBool`.
pub(super) fn parse_go_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// Mesh `defaultConfig.statusPort` (0 when unset).
pub(super) fn mesh_status_port(mesh: &Value) -> i64 {
    jsonmap::path(mesh, &["defaultConfig", "statusPort"])
        .and_then(json_int)
        .unwrap_or(0)
}

/// A JSON integer, also accepting a `{"value": n}` wrapper or a decimal string.
pub(super) fn json_int(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.parse().ok(),
        Value::Object(m) => m.get("value").and_then(json_int),
        _ => None,
    }
}

/// A JSON bool, also accepting a `{"value": b}` wrapper (proto `BoolValue`).
pub(super) fn json_bool(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::Object(m) => m.get("value").and_then(json_bool),
        _ => None,
    }
}
