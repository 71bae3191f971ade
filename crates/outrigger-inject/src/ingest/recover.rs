//! The pod as it was before a previous injection, recovered from what that injection recorded.
//!
//! Istio's own re-injection ([`super::previous::strip_pod`]) removes only the injected
//! containers, the status annotation and the merged Prometheus annotations, and then merges the
//! new templates onto the old pod, so parts of the old sidecar stay behind (volumes, env, labels
//! and annotations a newer template no longer writes, rewritten probes). [`recover`] undoes the
//! whole injection, as far as the pod records it:
//!
//! * the containers, init containers, volumes and image pull secrets that
//!   `sidecar.istio.io/status` lists are removed;
//! * user definitions of injected containers recorded in `proxy.istio.io/overrides` become the
//!   user's containers again (the annotation goes);
//! * probes and lifecycle handlers rewritten to the agent get back the handler recorded in the
//!   proxy's `ISTIO_KUBE_APP_PROBERS`;
//! * merged Prometheus annotations get back the user's scrape configuration recorded in
//!   `ISTIO_PROMETHEUS_ANNOTATIONS`;
//! * the labels and annotations Istio's templates and post-processing write
//!   ([`INJECTED_LABELS`], [`injected_annotations`], from the annotation table
//!   [`crate::kube::annotations`]) are taken out and returned in
//!   [`Recovered::removed`]: a pod cannot tell whether the user or the injection set them, so the
//!   caller decides with the configuration it injects with (`reinject` keeps those the new
//!   injection would not write back with the same value).

use serde_json::{Map, Value};

use super::previous::{parse_overrides, tidy_lists, Status};
use crate::json::JsonError;
use crate::json::Scan;
use crate::kube::annotations::{on_reinject, Reinject};
use crate::kube::names::{
    APP_PROBERS_ENV, NETWORK_LABEL, PROMETHEUS_ENV, PROXY_CONTAINER, STATUS_ANNOTATION,
};
use crate::kube::pod::{annotation, container_name, containers, containers_mut};
use crate::kube::prometheus::{
    remove_prometheus_annotations, sanitized_values, PATH, PORT, SCRAPE,
};

/// Labels Istio's injection templates and post-processing write on a pod.
pub const INJECTED_LABELS: &[&str] = &[
    "security.istio.io/tlsMode",
    "networking.istio.io/tunnel",
    "service.istio.io/canonical-name",
    "service.istio.io/canonical-revision",
    NETWORK_LABEL,
];

/// Annotations Istio's injection templates and post-processing write on a pod and the user may
/// have set too (the table's [`Reinject::Take`] rows; the status, overrides and marker
/// annotations are removed outright, [`Reinject::Remove`], and the configuration's own
/// `injectedAnnotations` the caller knows).
pub fn injected_annotations() -> impl Iterator<Item = &'static str> {
    on_reinject(Reinject::Take)
}

/// Which metadata map a removed entry came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum MetaField {
    /// `metadata.labels`.
    Labels,
    /// `metadata.annotations`.
    Annotations,
}

impl MetaField {
    /// The key under `metadata`.
    pub fn key(self) -> &'static str {
        match self {
            MetaField::Labels => "labels",
            MetaField::Annotations => "annotations",
        }
    }
}

/// A label or annotation an injection may have written, taken out of the recovered pod.
#[derive(Debug, Clone, PartialEq)]
pub struct Removed {
    /// Labels or annotations.
    pub field: MetaField,
    /// Its key.
    pub key: String,
    /// Its value in the injected pod.
    pub value: Value,
}

/// A pod with a previous injection undone ([`recover`]).
#[derive(Debug, Clone)]
pub struct Recovered {
    /// The pod without anything the previous injection is known to have added.
    pub pod: Value,
    /// Labels and annotations injection may have written, taken out of `pod`; which of them the
    /// user had set cannot be told from the pod alone.
    pub removed: Vec<Removed>,
}

/// Undo the injection recorded in `pod`'s `sidecar.istio.io/status` (see the module
/// documentation). A pod without that annotation is returned unchanged, with nothing removed.
/// Errors: an unreadable `proxy.istio.io/overrides` annotation (as for injection itself).
pub fn recover(pod: &Value) -> Result<Recovered, JsonError> {
    let Some(status) = Status::parse_strict(pod) else {
        return Ok(Recovered {
            pod: pod.clone(),
            removed: Vec::new(),
        });
    };
    let mut out = pod.clone();
    let proxy_env = proxy_env(pod, &status);
    // Probers first: they are read from the proxy, which goes next.
    if let Some(probers) = proxy_env
        .get(APP_PROBERS_ENV)
        .and_then(|t| serde_json::from_str::<Map<String, Value>>(t).ok())
    {
        restore_probes(&mut out, &status, &probers);
    }
    for (list, names) in [
        ("containers", &status.containers),
        ("initContainers", &status.init_containers),
        ("volumes", &status.volumes),
        ("imagePullSecrets", &status.image_pull_secrets),
    ] {
        if let Some(items) = out
            .scan_mut("spec")
            .and_then(|s| s.get_mut(list))
            .and_then(Value::as_array_mut)
        {
            items.retain(|c| !names.iter().any(|n| n == container_name(c)));
        }
    }
    // The user's own definitions of injected containers. Injection records an `istio-proxy`
    // under `initContainers` when it injects a native sidecar, but users define it under
    // `containers` (where injection looks for it first): it goes back there.
    let (mut over_containers, over_init) = parse_overrides(pod)?;
    let (proxy, over_init): (Vec<Value>, Vec<Value>) = over_init
        .into_iter()
        .partition(|c| container_name(c) == PROXY_CONTAINER);
    over_containers.extend(proxy);
    for (list, items) in [
        ("containers", over_containers),
        ("initContainers", over_init),
    ] {
        for c in items {
            let exists = containers(&out, list)
                .iter()
                .any(|x| container_name(x) == container_name(&c));
            if !exists {
                containers_mut(&mut out, list).push(c);
            }
        }
    }
    let mut removed = Vec::new();
    if let Some(meta) = out.scan_mut("metadata").and_then(Value::as_object_mut) {
        if let Some(ann) = meta.scan_mut("annotations").and_then(Value::as_object_mut) {
            // The status, overrides and outrigger's marker: the pod before injection had none.
            for name in on_reinject(Reinject::Remove) {
                ann.remove(name);
            }
            restore_prometheus(
                ann,
                proxy_env.get(PROMETHEUS_ENV).map(String::as_str),
                &mut removed,
            );
            take(
                ann,
                MetaField::Annotations,
                injected_annotations(),
                &mut removed,
            );
        }
        if let Some(labels) = meta.scan_mut("labels").and_then(Value::as_object_mut) {
            take(
                labels,
                MetaField::Labels,
                INJECTED_LABELS.iter().copied(),
                &mut removed,
            );
        }
    }
    tidy_lists(&mut out);
    tidy_spec(&mut out);
    Ok(Recovered { pod: out, removed })
}

/// Move the entries `keys` of `map` into `removed`.
fn take<'a>(
    map: &mut Map<String, Value>,
    field: MetaField,
    keys: impl IntoIterator<Item = &'a str>,
    removed: &mut Vec<Removed>,
) {
    for key in keys {
        if let Some(value) = map.remove(key) {
            removed.push(Removed {
                field,
                key: key.to_string(),
                value,
            });
        }
    }
}

/// String env values (`value`, not `valueFrom`) of the injected `istio-proxy`.
fn proxy_env(pod: &Value, status: &Status) -> std::collections::BTreeMap<String, String> {
    let injected_proxy = status
        .containers
        .iter()
        .chain(&status.init_containers)
        .any(|n| n == PROXY_CONTAINER);
    let proxy = ["containers", "initContainers"]
        .into_iter()
        .flat_map(|list| containers(pod, list))
        .find(|c| container_name(c) == PROXY_CONTAINER)
        .filter(|_| injected_proxy);
    proxy
        .and_then(|p| p.scan("env"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|e| {
            Some((
                e.scan("name")?.as_str()?.to_string(),
                e.scan("value")?.as_str()?.to_string(),
            ))
        })
        .collect()
}

/// Probe kinds and the agent URL injection rewrites each to.
const PROBES: [(&str, &str); 5] = [
    ("readinessProbe", "/app-health/{}/readyz"),
    ("livenessProbe", "/app-health/{}/livez"),
    ("startupProbe", "/app-health/{}/startupz"),
    ("preStop", "/app-lifecycle/{}/prestopz"),
    ("postStart", "/app-lifecycle/{}/poststartz"),
];

/// Give every probe and lifecycle handler pointed at the agent its recorded handler back.
/// A rewritten probe without a recorded prober (its named port did not resolve) stays as it is.
fn restore_probes(pod: &mut Value, status: &Status, probers: &Map<String, Value>) {
    for list in ["initContainers", "containers"] {
        let injected = if list == "containers" {
            &status.containers
        } else {
            &status.init_containers
        };
        let Some(cs) = pod
            .scan_mut("spec")
            .and_then(|s| s.get_mut(list))
            .and_then(Value::as_array_mut)
        else {
            continue;
        };
        for c in cs {
            let name = container_name(c).to_string();
            if injected.contains(&name) {
                continue;
            }
            for (kind, url) in PROBES {
                let url = url.replace("{}", &name);
                let handler = match kind {
                    "preStop" | "postStart" => {
                        c.scan_mut("lifecycle").and_then(|l| l.get_mut(kind))
                    }
                    _ => c.get_mut(kind),
                };
                let Some(handler) = handler.and_then(Value::as_object_mut) else {
                    continue;
                };
                let rewritten = handler
                    .scan("httpGet")
                    .and_then(|h| h.scan("path"))
                    .and_then(Value::as_str)
                    == Some(url.as_str());
                let Some(prober) = probers.get(&url).and_then(Value::as_object) else {
                    continue;
                };
                if !rewritten {
                    continue;
                }
                handler.remove("httpGet");
                for action in ["httpGet", "tcpSocket", "grpc"] {
                    if let Some(a) = prober.get(action).filter(|a| !a.is_null()) {
                        handler.insert(action.to_string(), a.clone());
                        break;
                    }
                }
            }
        }
    }
}

/// Undo the Prometheus merge: when injection recorded the user's scrape configuration, the merged
/// annotations are replaced by it; otherwise the agent's annotations (`port`, `path`
/// `/stats/prometheus`, `scrape` `true`) are taken out into `removed`, as injection may have
/// written them with nothing to record.
fn restore_prometheus(
    ann: &mut Map<String, Value>,
    recorded: Option<&str>,
    removed: &mut Vec<Removed>,
) {
    if let Some(cfg) = recorded.and_then(|t| serde_json::from_str::<Map<String, Value>>(t).ok()) {
        remove_prometheus_annotations(ann);
        let s = |k: &str| cfg.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let targets: Vec<String> = cfg
            .scan("targets")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|t| {
                let port = t.scan("port")?.as_str()?;
                let path = t.scan("path").and_then(Value::as_str).unwrap_or("");
                Some(if path.is_empty() {
                    port.to_string()
                } else {
                    format!("{port}:{path}")
                })
            })
            .collect();
        let mut restored = vec![("prometheus.io/scrape", s("scrape"))];
        if targets.is_empty() {
            restored.push(("prometheus.io/path", s("path")));
            restored.push(("prometheus.io/port", s("port")));
        } else {
            restored.push(("prometheus.istio.io/scrape-targets", targets.join(",")));
        }
        for (k, v) in restored {
            if !v.is_empty() {
                ann.insert(k.to_string(), Value::String(v));
            }
        }
        return;
    }
    let merged = sanitized_values(ann, PATH) == ["/stats/prometheus"]
        && sanitized_values(ann, SCRAPE) == ["true"]
        && sanitized_values(ann, PORT).len() == 1;
    if merged {
        take(
            ann,
            MetaField::Annotations,
            on_reinject(Reinject::Prometheus),
            removed,
        );
    }
}

/// Drop the volume and pull-secret lists emptied by the recovery, as Go's omitempty would.
fn tidy_spec(pod: &mut Value) {
    if let Some(spec) = pod.scan_mut("spec").and_then(Value::as_object_mut) {
        for list in ["volumes", "imagePullSecrets"] {
            if spec
                .get(list)
                .and_then(Value::as_array)
                .is_some_and(Vec::is_empty)
            {
                spec.remove(list);
            }
        }
    }
    if let Some(meta) = pod.scan_mut("metadata").and_then(Value::as_object_mut) {
        if meta
            .scan("labels")
            .and_then(Value::as_object)
            .is_some_and(Map::is_empty)
        {
            meta.remove("labels");
        }
    }
}

/// Whether `pod` carries a previous injection's status annotation.
pub fn was_injected(pod: &Value) -> bool {
    annotation(pod, STATUS_ANNOTATION).is_some()
}
