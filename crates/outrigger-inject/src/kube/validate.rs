//! What kube-apiserver's validation of a pod (`ValidatePodCreate` → `ValidatePodSpec`,
//! `pkg/apis/core/validation/validation.go`) refuses in the parts injection writes: an injected
//! pod breaking one of these rules would be refused at create, so the webhook refuses it instead
//! of answering with it, and kube-inject writes it as istioctl does, with a warning naming the rule. Each rule names the Go function it follows; the messages are the API server's
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

/// The member `key` of the object `v`, found by a walk of its members rather than the map's
/// hashed lookup: the objects read here (a pod's spec, a container, a volume mount) have a few
/// members, and hashing the key cost more than comparing it with each (each object is looked up
/// a fixed number of times, so the walk stays linear in the pod).
fn field<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.as_object()?
        .iter()
        .find_map(|(k, v)| (k.as_str() == key).then_some(v))
}

fn list<'a>(pod: &'a Value, key: &str) -> &'a [Value] {
    field(pod, "spec")
        .and_then(|s| field(s, key))
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn name_of(v: &Value) -> &str {
    field(v, "name").and_then(Value::as_str).unwrap_or("")
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
    let volume_list = list(pod, "volumes");
    for i in later_duplicates(volume_list.iter().map(name_of).enumerate()) {
        out.push(Violation {
            rule: "ValidateVolumes",
            message: format!(
                "spec.volumes[{i}].name: Duplicate value: {:?}",
                name_of(&volume_list[i])
            ),
        });
    }
    let volumes = sorted(volume_list.iter().map(name_of));
    let containers = list(pod, "containers");
    let inits = list(pod, "initContainers");
    let regular = sorted(containers.iter().map(name_of));
    let mut scratch = Vec::new();
    let init_dups = later_duplicates(inits.iter().map(name_of).enumerate());
    for (i, c) in inits.iter().enumerate() {
        let name = name_of(c);
        if init_dups.binary_search(&i).is_ok() || regular.binary_search(&name).is_ok() {
            out.push(Violation {
                rule: "validateInitContainers",
                message: format!("spec.initContainers[{i}].name: Duplicate value: {name:?}"),
            });
        }
        mounts(("initContainers", i), c, &volumes, &mut scratch, &mut out);
    }
    if containers.is_empty() {
        out.push(Violation {
            rule: "validateContainers",
            message: "spec.containers: Required value".into(),
        });
    }
    let dups = later_duplicates(containers.iter().map(name_of).enumerate());
    for (i, c) in containers.iter().enumerate() {
        if dups.binary_search(&i).is_ok() {
            out.push(Violation {
                rule: "validateContainers",
                message: format!(
                    "spec.containers[{i}].name: Duplicate value: {:?}",
                    name_of(c)
                ),
            });
        }
        mounts(("containers", i), c, &volumes, &mut scratch, &mut out);
    }
    out
}

/// `names` sorted, for binary search (a sorted vector: fewer steps and allocations than a tree
/// for the handful of names a pod has, and still `n log n` for a hostile one).
fn sorted<'a>(names: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut v: Vec<&str> = names.collect();
    v.sort_unstable();
    v
}

/// The indices, ascending, whose name an earlier index holds too.
fn later_duplicates<'a>(names: impl Iterator<Item = (usize, &'a str)>) -> Vec<usize> {
    let mut v: Vec<(&str, usize)> = names.map(|(i, n)| (n, i)).collect();
    if v.len() < 2 {
        return Vec::new();
    }
    v.sort_unstable();
    let mut dups: Vec<usize> = v
        .windows(2)
        .filter(|w| w[0].0 == w[1].0)
        .map(|w| w[1].1)
        .collect();
    dups.sort_unstable();
    dups
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

/// `ValidateVolumeMounts` of one container (`spec.<list>[<index>]`, named only in a violation);
/// `scratch`: reused between containers.
fn mounts<'a>(
    at: (&str, usize),
    c: &'a Value,
    volumes: &[&str],
    scratch: &mut Vec<(&'a str, usize)>,
    out: &mut Vec<Violation>,
) {
    let Some(list) = field(c, "volumeMounts").and_then(Value::as_array) else {
        return;
    };
    let path = |j: usize| format!("spec.{}[{}].volumeMounts[{j}]", at.0, at.1);
    // Mount paths given twice: every later one (empty paths are not checked).
    scratch.clear();
    scratch.extend(list.iter().enumerate().filter_map(|(j, m)| {
        let p = field(m, "mountPath").and_then(Value::as_str).unwrap_or("");
        (!p.is_empty()).then_some((p, j))
    }));
    scratch.sort_unstable();
    let mut twice: Vec<usize> = scratch
        .windows(2)
        .filter(|w| w[0].0 == w[1].0)
        .map(|w| w[1].1)
        .collect();
    twice.sort_unstable();
    for (j, m) in list.iter().enumerate() {
        let name = name_of(m);
        if volumes.binary_search(&name).is_err() {
            out.push(Violation {
                rule: "ValidateVolumeMounts",
                message: format!("{}.name: Not found: {name:?}", path(j)),
            });
        }
        if twice.binary_search(&j).is_ok() {
            let mount_path = field(m, "mountPath").and_then(Value::as_str).unwrap_or("");
            out.push(Violation {
                rule: "ValidateVolumeMounts",
                message: format!(
                    "{}.mountPath: Invalid value: {mount_path:?}: must be unique",
                    path(j)
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
        // Every later repeat, in index order; empty mount paths are not compared.
        assert_eq!(
            messages(
                json!({"spec": {"containers": [{"name": "b"}, {"name": "a", "volumeMounts": [
                {"name": "v", "mountPath": "/q"}, {"name": "v", "mountPath": ""},
                {"name": "v", "mountPath": "/q"}, {"name": "v", "mountPath": ""},
                {"name": "v", "mountPath": "/q"}]}, {"name": "b"}],
                "volumes": [{"name": "v"}, {"name": "w"}, {"name": "v"}, {"name": "v"}]}})
            ),
            [
                "spec.volumes[2].name: Duplicate value: \"v\" (ValidateVolumes)",
                "spec.volumes[3].name: Duplicate value: \"v\" (ValidateVolumes)",
                "spec.containers[1].volumeMounts[2].mountPath: Invalid value: \"/q\": must be \
                 unique (ValidateVolumeMounts)",
                "spec.containers[1].volumeMounts[4].mountPath: Invalid value: \"/q\": must be \
                 unique (ValidateVolumeMounts)",
                "spec.containers[2].name: Duplicate value: \"b\" (validateContainers)"
            ]
        );
    }
}
