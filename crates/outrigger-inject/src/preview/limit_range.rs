//! A namespace's LimitRange against a pod, as Kubernetes' `LimitRanger` admission applies it:
//! first the defaults (a container's missing limits from `default`, missing requests from
//! `defaultRequest`, with the API server's defaulting of the LimitRange itself: `default` from
//! `max`, `defaultRequest` from `default`, then from `min`), then the bounds (`min`, `max`,
//! `maxLimitRequestRatio`) per `Container` and, on the pod's totals, per `Pod`. Messages are the
//! admission plugin's (`maximum cpu usage per Container is 1, but limit is 2`).

use serde_json::{Map, Value};

use super::quota::{pod_total, quantity_milli};
use super::{all_containers, Finding};
use crate::kube::pod::container_name;

/// The limit item with the API server's defaulting applied (for `Container` items).
fn defaulted(item: &Value) -> Value {
    let mut item = item.clone();
    if item.get("type").and_then(Value::as_str) != Some("Container") {
        return item;
    }
    let take = |item: &Value, k: &str| {
        item.get(k)
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let fill = |into: &mut Map<String, Value>, from: &Map<String, Value>| {
        for (k, v) in from {
            into.entry(k.clone()).or_insert_with(|| v.clone());
        }
    };
    let mut default = take(&item, "default");
    fill(&mut default, &take(&item, "max"));
    let mut request = take(&item, "defaultRequest");
    fill(&mut request, &default);
    fill(&mut request, &take(&item, "min"));
    item["default"] = Value::Object(default);
    item["defaultRequest"] = Value::Object(request);
    item
}

/// `pod` with `limit_range`'s container defaults applied, as admission stores it.
pub fn with_defaults(pod: &Value, limit_range: &Value) -> Value {
    let mut pod = pod.clone();
    for item in items(limit_range) {
        let item = defaulted(item);
        if item.get("type").and_then(Value::as_str) != Some("Container") {
            continue;
        }
        for list in ["initContainers", "containers"] {
            let Some(cs) = pod
                .pointer_mut(&format!("/spec/{list}"))
                .and_then(Value::as_array_mut)
            else {
                continue;
            };
            for c in cs {
                for (kind, from) in [("limits", "default"), ("requests", "defaultRequest")] {
                    let Some(defaults) = item.get(from).and_then(Value::as_object) else {
                        continue;
                    };
                    if defaults.is_empty() || !c.is_object() {
                        continue;
                    }
                    let res = &mut c["resources"];
                    if !res.is_object() {
                        *res = Value::Object(Map::new());
                    }
                    let into = &mut res[kind];
                    if !into.is_object() {
                        *into = Value::Object(Map::new());
                    }
                    if let Some(into) = into.as_object_mut() {
                        for (k, v) in defaults {
                            into.entry(k.clone()).or_insert_with(|| v.clone());
                        }
                    }
                }
            }
        }
    }
    pod
}

fn items(limit_range: &Value) -> impl Iterator<Item = &Value> {
    limit_range
        .pointer("/spec/limits")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// What `pod` breaks of `limit_range` (its defaults applied first).
pub fn check(pod: &Value, limit_range: &Value) -> Vec<Finding> {
    let pod = with_defaults(pod, limit_range);
    let lr_name = limit_range
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut out = Vec::new();
    for item in items(limit_range) {
        let item = defaulted(item);
        match item.get("type").and_then(Value::as_str) {
            Some("Container") => {
                for (_, c) in all_containers(&pod) {
                    let get = |kind: &str, r: &str| {
                        c.pointer(&format!("/resources/{kind}/{r}"))
                            .map(|v| (quantity_milli(v), shown(v)))
                    };
                    bounds(
                        &item,
                        "Container",
                        &get,
                        Some(container_name(c)),
                        lr_name,
                        &mut out,
                    );
                }
            }
            Some("Pod") => {
                let get = |kind: &str, r: &str| {
                    pod_total(&pod, kind, r).map(|m| (Some(m), milli_shown(m)))
                };
                bounds(&item, "Pod", &get, None, lr_name, &mut out);
            }
            _ => {}
        }
    }
    out
}

/// A quantity value as written.
fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A total in thousandths, as a quantity (`1500m`, `2`).
fn milli_shown(m: i128) -> String {
    if m % 1000 == 0 {
        (m / 1000).to_string()
    } else {
        format!("{m}m")
    }
}

/// One value read from the pod: its thousandths (`None`: not a quantity) and its text.
type Read = (Option<i128>, String);

fn bounds(
    item: &Value,
    scope: &str,
    get: &dyn Fn(&str, &str) -> Option<Read>,
    container: Option<&str>,
    lr_name: &str,
    out: &mut Vec<Finding>,
) {
    let mut add = |rule: String, message: String| {
        out.push(Finding {
            check: "limit-range",
            rule,
            container: container.map(str::to_string),
            message: format!("{message} (LimitRange {lr_name})"),
        })
    };
    let entries = |k: &str| {
        item.get(k)
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    for (r, bound) in entries("min") {
        let (Some(b), bs) = (quantity_milli(&bound), shown(&bound)) else {
            continue;
        };
        let rule = format!("min {r} per {scope}");
        match get("requests", &r) {
            None => add(
                rule.clone(),
                format!("minimum {r} usage per {scope} is {bs}.  No request is specified"),
            ),
            Some((Some(v), vs)) if v < b => add(
                rule.clone(),
                format!("minimum {r} usage per {scope} is {bs}, but request is {vs}"),
            ),
            _ => {}
        }
        if let Some((Some(v), vs)) = get("limits", &r) {
            if v < b {
                add(
                    rule,
                    format!("minimum {r} usage per {scope} is {bs}, but limit is {vs}"),
                );
            }
        }
    }
    for (r, bound) in entries("max") {
        let (Some(b), bs) = (quantity_milli(&bound), shown(&bound)) else {
            continue;
        };
        let rule = format!("max {r} per {scope}");
        match get("limits", &r) {
            None => add(
                rule.clone(),
                format!("maximum {r} usage per {scope} is {bs}.  No limit is specified"),
            ),
            Some((Some(v), vs)) if v > b => add(
                rule.clone(),
                format!("maximum {r} usage per {scope} is {bs}, but limit is {vs}"),
            ),
            _ => {}
        }
        if let Some((Some(v), vs)) = get("requests", &r) {
            if v > b {
                add(
                    rule,
                    format!("maximum {r} usage per {scope} is {bs}, but request is {vs}"),
                );
            }
        }
    }
    for (r, bound) in entries("maxLimitRequestRatio") {
        let (Some(b), bs) = (quantity_milli(&bound), shown(&bound)) else {
            continue;
        };
        let rule = format!("maxLimitRequestRatio {r} per {scope}");
        match (get("limits", &r), get("requests", &r)) {
            (Some((Some(l), _)), Some((Some(q), _))) if q > 0 => {
                // limit / request > ratio, in integers: limit * 1000 > ratio(milli) * request.
                if l.saturating_mul(1000) > b.saturating_mul(q) {
                    add(
                        rule,
                        format!(
                            "{r} max limit to request ratio per {scope} is {bs}, but provided \
                             ratio is {:.6}",
                            l as f64 / q as f64
                        ),
                    );
                }
            }
            (None, _) => add(
                rule,
                format!(
                    "{r} max limit to request ratio per {scope} is {bs}, but no limit is specified"
                ),
            ),
            _ => add(
                rule,
                format!(
                    "{r} max limit to request ratio per {scope} is {bs}, but no request is \
                     specified or request is 0"
                ),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn lr(limits: Value) -> Value {
        json!({"metadata": {"name": "lr"}, "spec": {"limits": limits}})
    }

    fn pod() -> Value {
        json!({"spec": {"containers": [
            {"name": "app", "resources": {"requests": {"cpu": "100m"}, "limits": {"cpu": "200m"}}},
            {"name": "istio-proxy", "resources": {
                "requests": {"cpu": "100m", "memory": "128Mi"},
                "limits": {"cpu": "2", "memory": "1Gi"}}}]}})
    }

    #[test]
    fn max_below_the_sidecars_limit_is_named() {
        let f = check(
            &pod(),
            &lr(json!([{"type": "Container", "max": {"cpu": "1"}}])),
        );
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].container.as_deref(), Some("istio-proxy"));
        assert_eq!(f[0].rule, "max cpu per Container");
        assert_eq!(
            f[0].message,
            "maximum cpu usage per Container is 1, but limit is 2 (LimitRange lr)"
        );
    }

    #[test]
    fn defaults_apply_before_the_bounds() {
        // The memory max becomes every container's default limit: app gets 1Gi, so passes; a
        // min request then fails the app, whose request defaults to ... the min itself.
        let range = lr(json!([{"type": "Container", "max": {"memory": "1Gi"},
                              "min": {"cpu": "150m"}}]));
        let stored = with_defaults(&pod(), &range);
        assert_eq!(
            stored["spec"]["containers"][0]["resources"]["limits"]["memory"],
            "1Gi"
        );
        let f = check(&pod(), &range);
        let got: Vec<(&str, Option<&str>)> = f
            .iter()
            .map(|f| (f.rule.as_str(), f.container.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                ("min cpu per Container", Some("app")),
                ("min cpu per Container", Some("istio-proxy")),
            ]
        );
    }

    #[test]
    fn ratio_and_pod_totals() {
        let f = check(
            &pod(),
            &lr(
                json!([{"type": "Container", "maxLimitRequestRatio": {"cpu": "4"}},
                       {"type": "Pod", "max": {"cpu": "2"}}]),
            ),
        );
        let rules: Vec<&str> = f.iter().map(|f| f.rule.as_str()).collect();
        assert_eq!(
            rules,
            ["maxLimitRequestRatio cpu per Container", "max cpu per Pod"]
        );
        assert!(
            f[0].message.contains("provided ratio is 20.000000"),
            "{}",
            f[0].message
        );
        assert!(
            f[1].message.contains("but limit is 2200m"),
            "{}",
            f[1].message
        );
    }
}
