//! User definitions of injected containers win over the templates' (Istio's
//! `reapplyOverwrittenContainers`), and the init container runs as the user's proxy user.

use serde_json::{json, Map, Value};

use crate::go::json as gojson;
use crate::ingest::previous::{parse_overrides, Status};
use crate::json::Scan;
use crate::kube::names::{
    INIT_CONTAINER, OVERRIDES_ANNOTATION, PROXY_CONTAINER, STATUS_ANNOTATION, VALIDATION_CONTAINER,
};
use crate::kube::pod::{
    annotation, annotations_mut, container_name, containers, containers_mut, find_container,
    int_of, object_mut,
};
use crate::kube::typed;
use crate::merge::pod::merge_pod;
use crate::merge::strategic::MergeError;

/// Istio's `reapplyOverwrittenContainers`: user definitions of injected containers win.
pub fn reapply_overwritten_containers(
    merged: &mut Value,
    original: &Value,
    template_pod: &Value,
    proxy_config: &Value,
    warnings: &mut Vec<String>,
) -> Result<(), MergeError> {
    let (over_containers, over_init) = parse_overrides(original)?;
    let already_injected = annotation(original, STATUS_ANNOTATION).is_some();
    let injected = if already_injected {
        Status::parse_lenient(original)
    } else {
        Status::default()
    };
    let by_name =
        |list: &[Value], name: &str| list.iter().find(|c| container_name(c) == name).cloned();

    let mut recorded: (Vec<Value>, Vec<Value>) = (Vec::new(), Vec::new());
    for (list, skip, overrides) in [
        ("containers", &injected.containers, &over_containers),
        ("initContainers", &injected.init_containers, &over_init),
    ] {
        for c in containers(template_pod, list) {
            let name = container_name(c);
            // Explicit overrides recorded by the first injection are re-applied on every
            // injection, so re-injection is idempotent. A container that is only present because
            // we injected it before is not an override: the fresh template wins (Istio skips
            // both; keeping the user's recorded overrides is a deliberate fix).
            let explicit = by_name(overrides, name);
            if explicit.is_none() && skip.iter().any(|n| n == name) {
                continue;
            }
            let found = explicit.or_else(|| {
                find_container(original, "containers", name)
                    .or_else(|| {
                        (list == "initContainers")
                            .then(|| find_container(original, "initContainers", name))
                            .flatten()
                    })
                    .cloned()
            });
            let Some(mut overlay) = found else { continue };
            if overlay.scan("image").and_then(Value::as_str) == Some("auto") {
                if let Some(m) = overlay.as_object_mut() {
                    m.remove("image");
                }
            }
            let overlay = typed::to_go_value("corev1.Container", &overlay)?;
            let patch = if list == "containers" {
                json!({"spec": {"containers": [overlay.clone()]}})
            } else {
                json!({"spec": {"containers": [], "initContainers": [overlay.clone()]}})
            };
            let what = if list == "containers" {
                "sidecar container"
            } else {
                "sidecar init container"
            };
            merge_pod(merged, &patch).map_err(|e| e.context(&format!("failed to apply {what}")))?;
            if list == "containers" {
                recorded.0.push(overlay);
            } else {
                recorded.1.push(overlay);
            }
        }
    }
    if !already_injected && (!recorded.0.is_empty() || !recorded.1.is_empty()) {
        let mut o = Map::new();
        if !recorded.0.is_empty() {
            o.insert("containers".into(), Value::Array(recorded.0));
        }
        if !recorded.1.is_empty() {
            o.insert("initContainers".into(), Value::Array(recorded.1));
        }
        let text = gojson::to_string(&Value::Object(o));
        annotations_mut(merged).insert(OVERRIDES_ANNOTATION.into(), Value::String(text));
    }
    let recorded_proxy = over_containers
        .iter()
        .chain(&over_init)
        .find(|c| container_name(c) == PROXY_CONTAINER);
    adjust_init_container_user(merged, original, recorded_proxy, proxy_config, warnings);
    Ok(())
}

/// Istio's `adjustInitContainerUser`: the init container runs as the user's proxy user (and the
/// proxy as root under TPROXY).
/// `recorded_proxy` is the user's `istio-proxy` from the overrides annotation of a previous
/// injection: it wins over the injected proxy of the pod, whose user may have been rewritten (TPROXY).
pub fn adjust_init_container_user(
    merged: &mut Value,
    original: &Value,
    recorded_proxy: Option<&Value>,
    proxy_config: &Value,
    warnings: &mut Vec<String>,
) {
    let Some(user_proxy) = recorded_proxy
        .or_else(|| find_container(original, "containers", PROXY_CONTAINER))
        .or_else(|| find_container(original, "initContainers", PROXY_CONTAINER))
    else {
        return;
    };
    let Some(sc) = user_proxy.scan("securityContext") else {
        return;
    };
    let run_as_user = int_of(sc.scan("runAsUser"));
    let run_as_group = int_of(sc.scan("runAsGroup"));
    if run_as_user.is_none() && run_as_group.is_none() {
        return;
    }
    let init_name = if find_container(merged, "initContainers", INIT_CONTAINER).is_some() {
        INIT_CONTAINER
    } else if find_container(merged, "initContainers", VALIDATION_CONTAINER).is_some() {
        VALIDATION_CONTAINER
    } else {
        warnings.push("Could not find either istio-init or istio-validation container".into());
        return;
    };
    let tproxy = proxy_config
        .scan("interceptionMode")
        .and_then(Value::as_str)
        == Some("TPROXY")
        || annotation(merged, "sidecar.istio.io/interceptionMode") == Some("TPROXY");
    if tproxy && run_as_user.is_some() {
        let proxy = containers_mut(merged, "containers")
            .iter_mut()
            .find(|c| container_name(c) == PROXY_CONTAINER);
        let proxy = match proxy {
            Some(c) => Some(c),
            None => containers_mut(merged, "initContainers")
                .iter_mut()
                .find(|c| container_name(c) == PROXY_CONTAINER),
        };
        match proxy {
            Some(c) => {
                object_mut(c, "securityContext").insert("runAsUser".into(), json!(0));
            }
            None => warnings.push("Could not find the istio-proxy container".into()),
        }
    }
    let Some(ic) = containers_mut(merged, "initContainers")
        .iter_mut()
        .find(|c| container_name(c) == init_name)
    else {
        return;
    };
    if !tproxy && init_name == VALIDATION_CONTAINER {
        let sc = object_mut(ic, "securityContext");
        if let Some(u) = run_as_user {
            sc.insert("runAsUser".into(), json!(u));
        }
        if let Some(g) = run_as_group {
            sc.insert("runAsGroup".into(), json!(g));
        }
    }
    if let Some(u) = run_as_user.filter(|u| *u != 0) {
        if let Some(args) = ic.scan_mut("args").and_then(Value::as_array_mut) {
            if let Some(i) = args.iter().position(|a| a.as_str() == Some("-u")) {
                if let Some(slot) = args.get_mut(i + 1) {
                    *slot = Value::String(u.to_string());
                }
            }
        }
    }
}
