//! A previous injection: its status and overrides annotations, and the pod without what it added.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::json::JsonError;
use crate::json::Scan;
use crate::kube::names::{OVERRIDES_ANNOTATION, STATUS_ANNOTATION};
use crate::kube::pod::{annotation, annotations_mut, container_name, containers, containers_mut};
use crate::kube::prometheus::strip_prometheus_annotations;

/// Parsed `sidecar.istio.io/status` annotation.
#[derive(Debug, Clone, Default)]
pub struct Status {
    /// Injected init containers.
    pub init_containers: Vec<String>,
    /// Injected containers.
    pub containers: Vec<String>,
    /// Injected volumes.
    pub volumes: Vec<String>,
    /// Injected image pull secrets.
    pub image_pull_secrets: Vec<String>,
}

fn names(v: Option<&Value>) -> Option<Vec<String>> {
    match v {
        None | Some(Value::Null) => Some(Vec::new()),
        Some(Value::Array(a)) => a.iter().map(|x| x.as_str().map(str::to_string)).collect(),
        Some(_) => None,
    }
}

impl Status {
    /// Strict parse (stripPod): `None` when absent or not of the expected shape.
    pub fn parse_strict(pod: &Value) -> Option<Status> {
        let text = annotation(pod, STATUS_ANNOTATION)?;
        let v: Value = serde_json::from_str(text).ok()?;
        let m = v.as_object()?;
        if !matches!(
            m.scan("revision"),
            None | Some(Value::Null) | Some(Value::String(_))
        ) {
            return None;
        }
        Some(Status {
            init_containers: names(m.scan("initContainers"))?,
            containers: names(m.scan("containers"))?,
            volumes: names(m.scan("volumes"))?,
            image_pull_secrets: names(m.scan("imagePullSecrets"))?,
        })
    }

    /// Lenient parse (reapplyOverwrittenContainers): wrong shapes become empty lists.
    pub fn parse_lenient(pod: &Value) -> Status {
        let parsed =
            annotation(pod, STATUS_ANNOTATION).and_then(|t| serde_json::from_str::<Value>(t).ok());
        let field = |k: &str| {
            parsed
                .as_ref()
                .and_then(|v| names(v.scan(k)))
                .unwrap_or_default()
        };
        Status {
            init_containers: field("initContainers"),
            containers: field("containers"),
            volumes: field("volumes"),
            image_pull_secrets: field("imagePullSecrets"),
        }
    }
}

/// The pod for the template data: previous injection removed, overrides re-inserted.
/// A pod with neither a status nor an overrides annotation is used as is, without a copy.
pub fn strip_pod(pod: &Value, status_port: i64) -> Result<Cow<'_, Value>, JsonError> {
    let status = Status::parse_strict(pod);
    if status.is_none() && annotation(pod, OVERRIDES_ANNOTATION).is_none() {
        return Ok(Cow::Borrowed(pod));
    }
    let mut stripped = without_injected_containers(pod);
    if status.is_some() {
        let ann = annotations_mut(&mut stripped);
        strip_prometheus_annotations(ann, status_port);
        ann.remove(STATUS_ANNOTATION);
        tidy_lists(&mut stripped);
    }
    let overrides = parse_overrides(pod)?;
    for (list, items) in [("containers", overrides.0), ("initContainers", overrides.1)] {
        for c in items {
            let exists = containers(&stripped, list)
                .iter()
                .any(|x| container_name(x) == container_name(&c));
            if !exists {
                containers_mut(&mut stripped, list).push(c);
            }
        }
    }
    Ok(Cow::Owned(stripped))
}

/// The pod without the containers and init containers listed in its status annotation.
pub fn without_injected_containers(pod: &Value) -> Value {
    let mut out = pod.clone();
    if let Some(status) = Status::parse_strict(pod) {
        containers_mut(&mut out, "containers")
            .retain(|c| !status.containers.iter().any(|n| n == container_name(c)));
        containers_mut(&mut out, "initContainers").retain(|c| {
            !status
                .init_containers
                .iter()
                .any(|n| n == container_name(c))
        });
        tidy_lists(&mut out);
    }
    out
}

/// Drop empty container lists and annotation maps created while stripping, as Go's omitempty would.
pub fn tidy_lists(pod: &mut Value) {
    if let Some(spec) = pod.scan_mut("spec").and_then(Value::as_object_mut) {
        if spec
            .scan("initContainers")
            .and_then(Value::as_array)
            .is_some_and(Vec::is_empty)
        {
            spec.remove("initContainers");
        }
    }
    if let Some(meta) = pod.scan_mut("metadata").and_then(Value::as_object_mut) {
        if meta
            .scan("annotations")
            .and_then(Value::as_object)
            .is_some_and(Map::is_empty)
        {
            meta.remove("annotations");
        }
    }
}

/// `proxy.istio.io/overrides`: `(containers, initContainers)`; invalid JSON is an error.
pub fn parse_overrides(pod: &Value) -> Result<(Vec<Value>, Vec<Value>), JsonError> {
    let Some(text) = annotation(pod, OVERRIDES_ANNOTATION) else {
        return Ok((Vec::new(), Vec::new()));
    };
    let v: Value = serde_json::from_str(text).map_err(JsonError::Overrides)?;
    let list = |k: &str| -> Result<Vec<Value>, JsonError> {
        match v.scan(k) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(a)) => Ok(a.clone()),
            Some(other) => Err(JsonError::OverridesList {
                key: k.to_string(),
                got: other.clone(),
            }),
        }
    };
    Ok((list("containers")?, list("initContainers")?))
}
