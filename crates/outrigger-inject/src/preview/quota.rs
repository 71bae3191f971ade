//! A namespace's ResourceQuota against what a new configuration adds to each pod: the growth of
//! the pod's requests and limits, times the workload's replicas, against the quota's headroom
//! (`spec.hard` less `status.used`), and the containers without a request or limit for a
//! resource the quota tracks (the `ResourceQuota` admission plugin refuses such pods: `must
//! specify limits.cpu for: istio-proxy`).

use serde_json::Value;

use super::{all_containers, Finding};
use crate::kube::pod::container_name;
use crate::kube::quantity;

/// A quantity (a string or a JSON number) in thousandths; `None` when it does not parse.
pub fn quantity_milli(v: &Value) -> Option<i128> {
    let text = match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    quantity::parse(text.trim()).ok().map(|q| q.milli_value())
}

/// The pod's effective `kind` (`requests` or `limits`) of `resource` in thousandths, as the
/// scheduler and quota count it: the containers' sum plus the native sidecars', or the largest
/// init container with the native sidecars started before it, whichever is larger; `None` when
/// no container gives the resource.
pub fn pod_total(pod: &Value, kind: &str, resource: &str) -> Option<i128> {
    let of = |c: &Value| {
        c.pointer(&format!("/resources/{kind}/{resource}"))
            .and_then(quantity_milli)
    };
    let mut any = false;
    let mut containers: i128 = 0;
    for c in pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(v) = of(c) {
            any = true;
            containers += v;
        }
    }
    let mut sidecars: i128 = 0;
    let mut init_peak: i128 = 0;
    for c in pod
        .pointer("/spec/initContainers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let v = of(c);
        any |= v.is_some();
        let v = v.unwrap_or(0);
        if c.get("restartPolicy").and_then(Value::as_str) == Some("Always") {
            sidecars += v;
        } else {
            init_peak = init_peak.max(sidecars + v);
        }
    }
    any.then_some((containers + sidecars).max(init_peak))
}

/// (`requests`/`limits`, resource) a quota's `spec.hard` key counts; `None` for object counts
/// and extended resources.
fn counted(key: &str) -> Option<(&'static str, String)> {
    const COMPUTE: [&str; 3] = ["cpu", "memory", "ephemeral-storage"];
    if let Some(r) = key.strip_prefix("requests.") {
        return COMPUTE.contains(&r).then(|| ("requests", r.to_string()));
    }
    if let Some(r) = key.strip_prefix("limits.") {
        return COMPUTE.contains(&r).then(|| ("limits", r.to_string()));
    }
    COMPUTE
        .contains(&key)
        .then(|| ("requests", key.to_string()))
}

/// An amount of `resource` in thousandths, as a quantity: bytes in `Gi`/`Mi`/`Ki` where exact,
/// CPU in cores or `m`.
pub fn amount(resource: &str, milli: i128) -> String {
    if resource == "cpu" {
        return if milli % 1000 == 0 {
            (milli / 1000).to_string()
        } else {
            format!("{milli}m")
        };
    }
    let bytes = (milli + 999).div_euclid(1000);
    for (unit, size) in [("Gi", 1i128 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)] {
        if bytes != 0 && bytes % size == 0 {
            return format!("{}{unit}", bytes / size);
        }
    }
    bytes.to_string()
}

/// What `after` (the candidate's pod, defaults applied) meets of `quota` for a workload of
/// `replicas` pods that are `before` now.
pub fn check(before: &Value, after: &Value, quota: &Value, replicas: u64) -> Vec<Finding> {
    let name = quota
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut out = Vec::new();
    let Some(hard) = quota.pointer("/spec/hard").and_then(Value::as_object) else {
        return out;
    };
    for (key, limit) in hard {
        let Some((kind, resource)) = counted(key) else {
            continue;
        };
        let missing: Vec<&str> = all_containers(after)
            .filter(|(list, _)| *list != "ephemeralContainers")
            .filter(|(_, c)| {
                c.pointer(&format!("/resources/{kind}/{resource}"))
                    .is_none()
            })
            .map(|(_, c)| container_name(c))
            .collect();
        if !missing.is_empty() {
            out.push(Finding {
                check: "resource-quota",
                rule: key.clone(),
                container: None,
                message: format!(
                    "exceeded quota: {name}, must specify {key} for: {}",
                    missing.join(",")
                ),
            });
            continue;
        }
        let Some(hard_m) = quantity_milli(limit) else {
            continue;
        };
        let used = quota
            .pointer("/status/used")
            .and_then(|u| u.get(key))
            .and_then(quantity_milli)
            .unwrap_or(0);
        let total = |p: &Value| pod_total(p, kind, &resource).unwrap_or(0);
        let per_pod = total(after) - total(before);
        if per_pod <= 0 {
            continue;
        }
        let need = per_pod.saturating_mul(i128::from(replicas));
        let left = hard_m - used;
        if need > left {
            let a = |m| amount(&resource, m);
            out.push(Finding {
                check: "resource-quota",
                rule: key.clone(),
                container: None,
                message: format!(
                    "exceeded quota: {name}: the new injection adds {} of {key} per pod, {} for \
                     {replicas} replicas, but {} is left (hard {}, used {})",
                    a(per_pod),
                    a(need),
                    a(left.max(0)),
                    a(hard_m),
                    a(used)
                ),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(sidecar_mem: Option<&str>) -> Value {
        let mut p = json!({"spec": {"containers": [
            {"name": "app", "resources": {"requests": {"memory": "256Mi"},
                                          "limits": {"memory": "256Mi"}}}]}});
        if let Some(m) = sidecar_mem {
            p["spec"]["containers"]
                .as_array_mut()
                .expect("list")
                .push(json!({"name": "istio-proxy", "resources": {
                    "requests": {"memory": m}, "limits": {"memory": m}}}));
        }
        p
    }

    fn quota(hard: &str, used: &str) -> Value {
        json!({"metadata": {"name": "q"},
               "spec": {"hard": {"requests.memory": hard, "pods": "10"}},
               "status": {"used": {"requests.memory": used, "pods": "3"}}})
    }

    #[test]
    fn growth_times_replicas_against_headroom() {
        let (before, after) = (pod(None), pod(Some("128Mi")));
        assert!(check(&before, &after, &quota("2Gi", "768Mi"), 3).is_empty());
        let f = check(&before, &after, &quota("1Gi", "768Mi"), 3);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(
            f[0].message,
            "exceeded quota: q: the new injection adds 128Mi of requests.memory per pod, 384Mi \
             for 3 replicas, but 256Mi is left (hard 1Gi, used 768Mi)"
        );
        // Nothing added, nothing asked.
        assert!(check(&after, &after, &quota("1Gi", "1Gi"), 3).is_empty());
    }

    #[test]
    fn a_container_without_the_tracked_resource_is_refused() {
        let mut after = pod(Some("128Mi"));
        after["spec"]["containers"][1]["resources"] = json!({});
        let f = check(&pod(None), &after, &quota("8Gi", "0"), 1);
        assert_eq!(
            f[0].message,
            "exceeded quota: q, must specify requests.memory for: istio-proxy"
        );
    }

    #[test]
    fn native_sidecars_count_with_the_containers() {
        let p = json!({"spec": {
            "initContainers": [{"name": "init", "resources": {"requests": {"cpu": "1"}}},
                               {"name": "istio-proxy", "restartPolicy": "Always",
                                "resources": {"requests": {"cpu": "100m"}}}],
            "containers": [{"name": "app", "resources": {"requests": {"cpu": "200m"}}}]}});
        assert_eq!(pod_total(&p, "requests", "cpu"), Some(1000));
        assert_eq!(pod_total(&p, "limits", "cpu"), None);
        assert_eq!(amount("memory", 134_217_728_000), "128Mi");
        assert_eq!(amount("cpu", 1500), "1500m");
    }
}
