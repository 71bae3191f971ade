//! What kube-apiserver's validation of a pod (`ValidatePodCreate` → `ValidatePodSpec`,
//! `pkg/apis/core/validation/validation.go`) refuses in the parts injection writes: an injected
//! pod breaking one of these rules would be refused at create, so injection reports it instead of
//! writing it. Each rule names the Go function it follows; the messages are the API server's
//! field errors (`spec.containers: Required value`).

use std::collections::BTreeSet;

use serde_json::Value;

/// One refusal: the rule (the Go function) and the API server's field error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The validation function the rule comes from (`validateContainers`).
    pub rule: &'static str,
    /// The field error as the API server words it.
    pub message: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.rule)
    }
}

fn list<'a>(pod: &'a Value, key: &str) -> &'a [Value] {
    pod.get("spec")
        .and_then(|s| s.get(key))
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn name_of(v: &Value) -> &str {
    v.get("name").and_then(Value::as_str).unwrap_or("")
}

/// The rules `pod` breaks, in the order the API server checks them:
///
/// - `ValidateVolumes`: volume names unique (`spec.volumes[i].name: Duplicate value`).
/// - `validateInitContainers`: an init container's name unique among init and regular
///   containers (`spec.initContainers[i].name: Duplicate value`); its volume mounts (below).
/// - `validateContainers`: at least one container (`spec.containers: Required value`); names
///   unique (`spec.containers[i].name: Duplicate value`); volume mounts (below).
/// - `ValidateVolumeMounts`: a mount names a volume of the pod (`...volumeMounts[j].name: Not
///   found`), and a container mounts a path once (`...volumeMounts[j].mountPath: Invalid
///   value: "...": must be unique`).
pub fn validate_pod(pod: &Value) -> Vec<Violation> {
    let mut out = Vec::new();
    let mut volumes = BTreeSet::new();
    for (i, v) in list(pod, "volumes").iter().enumerate() {
        if !volumes.insert(name_of(v)) {
            out.push(Violation {
                rule: "ValidateVolumes",
                message: format!("spec.volumes[{i}].name: Duplicate value: {:?}", name_of(v)),
            });
        }
    }
    let containers = list(pod, "containers");
    let inits = list(pod, "initContainers");
    let regular: BTreeSet<&str> = containers.iter().map(name_of).collect();
    let mut seen = BTreeSet::new();
    for (i, c) in inits.iter().enumerate() {
        let name = name_of(c);
        if !seen.insert(name) || regular.contains(name) {
            out.push(Violation {
                rule: "validateInitContainers",
                message: format!("spec.initContainers[{i}].name: Duplicate value: {name:?}"),
            });
        }
        mounts(&format!("spec.initContainers[{i}]"), c, &volumes, &mut out);
    }
    if containers.is_empty() {
        out.push(Violation {
            rule: "validateContainers",
            message: "spec.containers: Required value".into(),
        });
    }
    let mut seen = BTreeSet::new();
    for (i, c) in containers.iter().enumerate() {
        let name = name_of(c);
        if !seen.insert(name) {
            out.push(Violation {
                rule: "validateContainers",
                message: format!("spec.containers[{i}].name: Duplicate value: {name:?}"),
            });
        }
        mounts(&format!("spec.containers[{i}]"), c, &volumes, &mut out);
    }
    out
}

/// The rules an injected pod breaks that the pod before injection did not, one message per
/// rule, naming it: the API server would refuse the pod.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the injected pod would be refused by the API server: {}", .0.join("; "))]
pub struct RefusedPod(pub Vec<String>);

/// The rules `injected` breaks that `original` (the pod before injection) did not: what
/// injection made the API server refuse, as an error naming each rule.
pub fn check_injected(original: &Value, injected: &Value) -> Result<(), RefusedPod> {
    check_new(&validate_pod(original), injected)
}

/// [`check_injected`] with the original pod's violations (`before`) found already.
pub fn check_new(before: &[Violation], injected: &Value) -> Result<(), RefusedPod> {
    let before: BTreeSet<String> = before.iter().map(ToString::to_string).collect();
    let new: Vec<String> = validate_pod(injected)
        .iter()
        .map(ToString::to_string)
        .filter(|v| !before.contains(v))
        .collect();
    if new.is_empty() {
        Ok(())
    } else {
        Err(RefusedPod(new))
    }
}

/// `ValidateVolumeMounts` of one container at `path`.
fn mounts(path: &str, c: &Value, volumes: &BTreeSet<&str>, out: &mut Vec<Violation>) {
    let mut paths = BTreeSet::new();
    for (j, m) in c
        .get("volumeMounts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let name = name_of(m);
        if !volumes.contains(name) {
            out.push(Violation {
                rule: "ValidateVolumeMounts",
                message: format!("{path}.volumeMounts[{j}].name: Not found: {name:?}"),
            });
        }
        let mount_path = m.get("mountPath").and_then(Value::as_str).unwrap_or("");
        if !mount_path.is_empty() && !paths.insert(mount_path) {
            out.push(Violation {
                rule: "ValidateVolumeMounts",
                message: format!(
                    "{path}.volumeMounts[{j}].mountPath: Invalid value: {mount_path:?}: must be \
                     unique"
                ),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn each_rule_is_found_and_named() {
        let ok = json!({"spec": {"containers": [{"name": "a",
            "volumeMounts": [{"name": "v", "mountPath": "/v"}]}],
            "volumes": [{"name": "v", "emptyDir": {}}]}});
        assert!(validate_pod(&ok).is_empty());
        let messages = |pod: Value| -> Vec<String> {
            validate_pod(&pod).iter().map(ToString::to_string).collect()
        };
        assert_eq!(
            messages(json!({"spec": {"containers": [],
                "initContainers": [{"name": "istio-proxy", "restartPolicy": "Always"}]}})),
            ["spec.containers: Required value (validateContainers)"]
        );
        assert_eq!(
            messages(
                json!({"spec": {"containers": [{"name": "a"}, {"name": "a"}],
                "initContainers": [{"name": "a"}]}})
            ),
            [
                "spec.initContainers[0].name: Duplicate value: \"a\" (validateInitContainers)",
                "spec.containers[1].name: Duplicate value: \"a\" (validateContainers)"
            ]
        );
        assert_eq!(
            messages(
                json!({"spec": {"containers": [{"name": "a", "volumeMounts": [
                {"name": "x", "mountPath": "/p"}, {"name": "v", "mountPath": "/p"}]}],
                "volumes": [{"name": "v"}, {"name": "v"}]}})
            ),
            [
                "spec.volumes[1].name: Duplicate value: \"v\" (ValidateVolumes)",
                "spec.containers[0].volumeMounts[0].name: Not found: \"x\" (ValidateVolumeMounts)",
                "spec.containers[0].volumeMounts[1].mountPath: Invalid value: \"/p\": must be \
                 unique (ValidateVolumeMounts)"
            ]
        );
    }
}
