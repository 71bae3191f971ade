//! JSON Patch (RFC 6902) from the original pod to the injected pod.
//!
//! Istio's reference diff iterates Go maps, so its operation order is random; only the effect is
//! specified. We use the `json-patch` crate's diff (objects key by key, arrays index by index, which
//! is linear in the pod size) and serialise the operations compactly.

use serde_json::Value;

/// The RFC 6902 operations turning `original` into `modified`, as a JSON array.
pub fn create(original: &Value, modified: &Value) -> Value {
    let patch = json_patch::diff(original, modified);
    serde_json::to_value(&patch).unwrap_or_else(|_| Value::Array(Vec::new()))
}

/// Apply RFC 6902 `ops` to `doc`, failing with the offending operation's message.
pub fn apply(doc: &mut Value, ops: &Value) -> crate::Result<()> {
    let patch: json_patch::Patch = serde_json::from_value(ops.clone())
        .map_err(|e| crate::Error::Json(format!("invalid JSON patch: {e}")))?;
    json_patch::patch(doc, &patch)
        .map_err(|e| crate::Error::Json(format!("applying JSON patch: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn patch_applies_back_to_target() {
        let a = json!({"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "app"}]}});
        let b = json!({"metadata": {"labels": {"app": "x", "security.istio.io/tlsMode": "istio"}},
                       "spec": {"initContainers": [{"name": "istio-proxy"}], "containers": [{"name": "app", "env": []}]}});
        let ops = create(&a, &b);
        assert!(ops.as_array().is_some_and(|o| !o.is_empty()));
        assert!(ops.to_string().contains("security.istio.io~1tlsMode"));
        let mut c = a.clone();
        apply(&mut c, &ops).unwrap();
        assert_eq!(c, b);
        assert_eq!(create(&a, &a), json!([]));
    }
}
