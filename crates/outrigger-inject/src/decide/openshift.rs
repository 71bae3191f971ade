//! OpenShift: the proxy's UID/GID from the namespace's security-context annotations, and a user
//! proxy whose user equals the application's loses its user.

use serde_json::{Map, Value};

use crate::kube::names;
use crate::kube::pod::meta_str;

/// Namespace annotation holding an OpenShift UID range.
pub const OPENSHIFT_UID_RANGE: &str = "openshift.io/sa.scc.uid-range";

/// Namespace annotation holding OpenShift supplemental groups.
pub const OPENSHIFT_SUPPLEMENTAL_GROUPS: &str = "openshift.io/sa.scc.supplemental-groups";

/// Proxy UID/GID from an OpenShift namespace's annotations: the UID is the end of the
/// `openshift.io/sa.scc.uid-range` block, the GID the end of the first
/// `openshift.io/sa.scc.supplemental-groups` block (else of the UID range); defaults are 1337.
pub fn proxy_uid_gid(namespace_annotations: &Map<String, Value>) -> (i64, i64) {
    let get = |k: &str| namespace_annotations.get(k).and_then(Value::as_str);
    let default = names::DEFAULT_PROXY_ID;
    let uid = get(OPENSHIFT_UID_RANGE)
        .filter(|v| !v.is_empty())
        .and_then(|v| parse_block(v).ok())
        .map_or(default, |(_, end)| i64::from(end));
    let groups = get(OPENSHIFT_SUPPLEMENTAL_GROUPS).or_else(|| get(OPENSHIFT_UID_RANGE));
    let gid = groups
        .and_then(|v| {
            let blocks: Result<Vec<(u32, u32)>, BlockError> =
                v.split(',').map(parse_block).collect();
            blocks.ok()?.first().map(|(_, end)| i64::from(*end))
        })
        .unwrap_or(default);
    (uid, gid)
}

/// An OpenShift UID or group block that does not parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BlockError {
    /// A block with `/` that is not `<start>/<size>`.
    #[error("block not in the format \"<start>/<size>\"")]
    NotStartSize,
    /// A block without `/` that is not `<start>-<end>`.
    #[error("block not in the format \"<start>-<end>\"")]
    NotStartEnd,
}

/// An OpenShift block: `<start>/<size>` (end = start + size - 1, uint32 wrap-around) or
/// `<start>-<end>`. Returns `(start, end)`.
pub fn parse_block(text: &str) -> Result<(u32, u32), BlockError> {
    let parse = |s: &str| {
        s.parse::<u32>()
            .ok()
            .filter(|_| s.bytes().all(|b| b.is_ascii_digit()))
    };
    if text.contains('/') {
        let err = || BlockError::NotStartSize;
        let (a, b) = text.split_once('/').ok_or_else(err)?;
        let (start, size) = (parse(a).ok_or_else(err)?, parse(b).ok_or_else(err)?);
        Ok((start, start.wrapping_add(size).wrapping_sub(1)))
    } else {
        let err = || BlockError::NotStartEnd;
        let (a, b) = text.split_once('-').ok_or_else(err)?;
        Ok((parse(a).ok_or_else(err)?, parse(b).ok_or_else(err)?))
    }
}

/// OpenShift: clear the user `istio-proxy`'s `runAsUser`/`runAsGroup` when it
/// equals the application's user.
/// Returns whether the pod was changed.
pub fn reset_openshift_proxy_user(pod: &mut Value, warnings: &mut Vec<String>) -> bool {
    let run_as_user = |c: &Value| {
        c.pointer("/securityContext/runAsUser")
            .and_then(Value::as_i64)
    };
    let all = |pod: &Value| -> Vec<Value> {
        ["containers", "initContainers"]
            .iter()
            .flat_map(|l| {
                pod.pointer(&format!("/spec/{l}"))
                    .and_then(Value::as_array)
                    .map(|items| items.iter().map(container_user_view).collect::<Vec<_>>())
                    .unwrap_or_default()
            })
            .collect()
    };
    let containers = all(pod);
    let is_named = |c: &Value, n: &str| c.get("name").and_then(Value::as_str) == Some(n);
    let Some(proxy) = containers
        .iter()
        .find(|c| is_named(c, names::PROXY_CONTAINER))
    else {
        return false;
    };
    if proxy.get("securityContext").is_none_or(Value::is_null) {
        return false;
    }
    let sidecar_user = run_as_user(proxy).unwrap_or(0);
    let app_user = containers
        .iter()
        .rev()
        .filter(|c| {
            ![
                names::PROXY_CONTAINER,
                names::VALIDATION_CONTAINER,
                names::INIT_CONTAINER,
            ]
            .iter()
            .any(|n| is_named(c, n))
        })
        .filter_map(run_as_user)
        .next()
        .unwrap_or(0);
    if sidecar_user != app_user {
        return false;
    }
    warnings.push(format!(
        "Resetting the UserID of sideCar proxy as it matches with the app container for Pod {:?}",
        meta_str(pod, "name")
    ));
    for list in ["containers", "initContainers"] {
        let Some(items) = pod
            .pointer_mut(&format!("/spec/{list}"))
            .and_then(Value::as_array_mut)
        else {
            continue;
        };
        for c in items
            .iter_mut()
            .filter(|c| is_named(c, names::PROXY_CONTAINER))
        {
            if let Some(sc) = c.get_mut("securityContext").and_then(Value::as_object_mut) {
                sc.remove("runAsUser");
                sc.remove("runAsGroup");
            }
        }
    }
    true
}

/// The parts of a container [`reset_openshift_proxy_user`] reads (its name and security
/// context), so that it does not copy whole containers.
fn container_user_view(c: &Value) -> Value {
    let mut m = Map::new();
    for key in ["name", "securityContext"] {
        if let Some(v) = c.get(key) {
            m.insert(key.into(), v.clone());
        }
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn openshift_uid_and_gid() {
        let ann = |v: Value| v.as_object().cloned().expect("object");
        assert_eq!(
            proxy_uid_gid(&ann(json!({OPENSHIFT_UID_RANGE: "1000680000/10000"}))),
            (1000689999, 1000689999)
        );
        assert_eq!(
            proxy_uid_gid(&ann(
                json!({OPENSHIFT_UID_RANGE: "1000680000/10000", OPENSHIFT_SUPPLEMENTAL_GROUPS: "5000/10,7000/5"})
            )),
            (1000689999, 5009)
        );
        assert_eq!(
            proxy_uid_gid(&ann(json!({OPENSHIFT_UID_RANGE: "100-200"}))),
            (200, 200)
        );
        assert_eq!(
            proxy_uid_gid(&ann(json!({OPENSHIFT_UID_RANGE: "junk"}))),
            (1337, 1337)
        );
        assert_eq!(
            proxy_uid_gid(&ann(
                json!({OPENSHIFT_UID_RANGE: "", OPENSHIFT_SUPPLEMENTAL_GROUPS: "10/2,x"})
            )),
            (1337, 1337)
        );
        assert_eq!(proxy_uid_gid(&ann(json!({}))), (1337, 1337));
        assert_eq!(parse_block("4294967295/2"), Ok((4294967295, 0)));
        assert_eq!(
            parse_block("1-x").map_err(|e| e.to_string()),
            Err("block not in the format \"<start>-<end>\"".into())
        );
        assert_eq!(parse_block("1/"), Err(BlockError::NotStartSize));
    }

    #[test]
    fn openshift_resets_a_proxy_user_equal_to_the_app_user() {
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "app", "securityContext": {"runAsUser": 1000}},
            {"name": "istio-proxy", "securityContext": {"runAsUser": 1000, "runAsGroup": 5, "privileged": false}}]}});
        let mut w = Vec::new();
        assert!(reset_openshift_proxy_user(&mut pod, &mut w));
        assert_eq!(
            pod["spec"]["containers"][1]["securityContext"],
            json!({"privileged": false})
        );
        assert_eq!(w.len(), 1);
        let mut pod = json!({"spec": {"containers": [
            {"name": "app", "securityContext": {"runAsUser": 1000}},
            {"name": "istio-proxy", "securityContext": {"runAsUser": 7}}]}});
        let before = pod.clone();
        assert!(!reset_openshift_proxy_user(&mut pod, &mut Vec::new()));
        assert_eq!(pod, before);
    }
}
