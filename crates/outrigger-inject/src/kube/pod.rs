//! Accessors on a pod (or any object with `metadata` and `spec`) as a JSON tree.

use serde_json::{Map, Value};

use crate::kube::names::PROXY_CONTAINER;
use outrigger_go::json::lookup::{field, field_mut, get, get_mut, path};

/// Annotation value of a pod.
pub fn annotation<'a>(pod: &'a Value, name: &str) -> Option<&'a str> {
    path(pod, &["metadata", "annotations", name])?.as_str()
}

/// Label value of a pod.
pub fn label<'a>(pod: &'a Value, name: &str) -> Option<&'a str> {
    path(pod, &["metadata", "labels", name])?.as_str()
}

/// A string field of `metadata` (`name`, `namespace`, ...); `""` when absent or not a string.
pub fn meta_str<'a>(pod: &'a Value, field: &str) -> &'a str {
    path(pod, &["metadata", field])
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The object under `key` of `v`, created (and `v` made an object) when missing or not an object.
pub fn object_mut<'a>(v: &'a mut Value, key: &str) -> &'a mut Map<String, Value> {
    if !v.is_object() {
        *v = Value::Object(Map::new());
    }
    map_object(v.as_object_mut().expect("just made an object"), key)
}

/// The object under `key` of `m`, created when missing or not an object.
pub fn map_object<'a>(m: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    // Looked up by scanning (no hashing, no key copied when present), as `entry` would insert.
    if get(m, key).is_none() {
        m.insert(key.to_string(), Value::Object(Map::new()));
    }
    let e = get_mut(m, key).expect("just inserted");
    if !e.is_object() {
        *e = Value::Object(Map::new());
    }
    e.as_object_mut().expect("just made an object")
}

/// `metadata.annotations`, created when missing or not an object (compare
/// [`existing_annotations_mut`]).
pub fn annotations_mut(pod: &mut Value) -> &mut Map<String, Value> {
    map_object(object_mut(pod, "metadata"), "annotations")
}

/// `metadata.annotations` when it is an object.
pub fn annotations(pod: &Value) -> Option<&Map<String, Value>> {
    path(pod, &["metadata", "annotations"])?.as_object()
}

/// `metadata.annotations` when it is already an object, without creating it (compare
/// [`annotations_mut`]).
pub fn existing_annotations_mut(pod: &mut Value) -> Option<&mut Map<String, Value>> {
    field_mut(field_mut(pod, "metadata")?, "annotations")?.as_object_mut()
}

/// The sidecar: first `istio-proxy` in `spec.containers`, else in `spec.initContainers`.
pub fn find_sidecar_mut(pod: &mut Value) -> Option<&mut Map<String, Value>> {
    let spec = field_mut(pod, "spec")?.as_object_mut()?;
    let in_containers = get(spec, "containers")
        .and_then(Value::as_array)
        .is_some_and(|cs| cs.iter().any(|c| container_name(c) == PROXY_CONTAINER));
    let list = if in_containers {
        "containers"
    } else {
        "initContainers"
    };
    get_mut(spec, list)?
        .as_array_mut()?
        .iter_mut()
        .find(|c| container_name(c) == PROXY_CONTAINER)?
        .as_object_mut()
}

/// The sidecar: first `istio-proxy` in `spec.containers`, else in `spec.initContainers`.
pub fn find_sidecar(pod: &Value) -> Option<&Map<String, Value>> {
    let spec = field(pod, "spec")?;
    ["containers", "initContainers"].iter().find_map(|list| {
        field(spec, list)?
            .as_array()?
            .iter()
            .find(|c| container_name(c) == PROXY_CONTAINER)?
            .as_object()
    })
}

/// The container's `env` list, created when missing or not a list.
pub fn env_mut(container: &mut Map<String, Value>) -> &mut Vec<Value> {
    if get(container, "env").is_none() {
        container.insert("env".into(), Value::Array(Vec::new()));
    }
    let slot = get_mut(container, "env").expect("just inserted");
    if !slot.is_array() {
        *slot = Value::Array(Vec::new());
    }
    slot.as_array_mut().expect("env was just made an array")
}

/// An `env` entry `{name, value}`.
pub fn env_entry(name: &str, value: &str) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), Value::String(name.into()));
    m.insert("value".into(), Value::String(value.into()));
    Value::Object(m)
}

/// The container list `list` (`containers`, `initContainers`) of `spec`; empty when absent.
pub fn containers<'a>(pod: &'a Value, list: &str) -> &'a [Value] {
    path(pod, &["spec", list])
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// The container list `list` of `spec`, created when missing or not a list.
pub fn containers_mut<'a>(pod: &'a mut Value, list: &str) -> &'a mut Vec<Value> {
    let spec = object_mut(pod, "spec");
    if get(spec, list).is_none() {
        spec.insert(list.to_string(), Value::Array(Vec::new()));
    }
    let e = get_mut(spec, list).expect("just inserted");
    if !e.is_array() {
        *e = Value::Array(Vec::new());
    }
    e.as_array_mut().expect("just made an array")
}

/// `name` of a container; `""` when absent.
pub fn container_name(c: &Value) -> &str {
    field(c, "name").and_then(Value::as_str).unwrap_or("")
}

/// The container named `name` in the list `list` of `spec`.
pub fn find_container<'a>(pod: &'a Value, list: &str, name: &str) -> Option<&'a Value> {
    containers(pod, list)
        .iter()
        .find(|c| container_name(c) == name)
}

/// The pod name for logs: `metadata.name`, or `generateName` followed by
/// `***** (actual name not yet known)`, or `""`.
pub fn potential_name(pod: &Value) -> String {
    let name = meta_str(pod, "name");
    if !name.is_empty() {
        return name.to_string();
    }
    let g = meta_str(pod, "generateName");
    if g.is_empty() {
        String::new()
    } else {
        format!("{g}***** (actual name not yet known)")
    }
}

/// An integer JSON value (a float is truncated, as Go's conversion does).
pub fn int_of(v: Option<&Value>) -> Option<i64> {
    v.and_then(|x| x.as_i64().or_else(|| x.as_f64().map(|f| f as i64)))
}
