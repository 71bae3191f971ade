//! Helpers shared by the finishing steps: the metadata maps they write into, and Go's and proto
//! JSON's readings of scalar values. Accessors on the pod are [`crate::kube::pod`].

use serde_json::{Map, Value};

use super::FinishError;
use crate::json::JsonError;
use crate::json::Scan;
use crate::kube::typed::TypeError;

/// Make sure `metadata`, `metadata.annotations` and `metadata.labels` are objects.
pub(super) fn ensure_metadata_maps(pod: &mut Value) -> Result<(), FinishError> {
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
) -> Result<&'m mut Map<String, Value>, TypeError> {
    let slot = map.entry(key).or_insert(Value::Null);
    if slot.is_null() {
        *slot = Value::Object(Map::new());
    }
    slot.as_object_mut()
        .ok_or_else(|| TypeError::NotAnObject(path.to_string()))
}

/// Go `strconv.ParseBool`.
pub(super) fn parse_go_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// A JSON bool, also accepting a `{"value": b}` wrapper (proto `BoolValue`).
pub(super) fn json_bool(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::Object(m) => m.scan("value").and_then(json_bool),
        _ => None,
    }
}
