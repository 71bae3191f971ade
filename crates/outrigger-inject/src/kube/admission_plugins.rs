//! kube-apiserver's in-tree mutating admission plugins that change a pod on create, rule by
//! rule, each from its source (Kubernetes 1.29 to 1.34, `plugin/pkg/admission/...`). They run
//! before the mutating webhooks (the default plugin order of
//! `pkg/kubeapiserver/options/plugins.go`: `LimitRanger`, `ServiceAccount`, ...,
//! `DefaultTolerationSeconds`, ..., `RuntimeClass`, ..., `Priority`, ...,
//! `MutatingAdmissionWebhook`), and again only when a webhook with `reinvocationPolicy:
//! IfNeeded` asks for a reinvocation (`k8s.io/apiserver/pkg/admission/reinvocation.go`): so a
//! container a webhook adds normally gets neither the service-account token mount nor a
//! LimitRange's defaults.

use serde_json::{json, Map, Value};

/// Where the `ServiceAccount` plugin mounts the API token (`DefaultAPITokenMountPath`).
pub const TOKEN_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// The prefix of the token volume's name (`ServiceAccountVolumeName` + `-`; the rest is
/// random, `names.SimpleNameGenerator`).
pub const TOKEN_VOLUME_PREFIX: &str = "kube-api-access-";

/// The annotation the `LimitRanger` plugin writes (`limitRangerAnnotation`).
pub const LIMIT_RANGER_ANNOTATION: &str = "kubernetes.io/limit-ranger";

/// The annotation marking a mirror pod, which the `ServiceAccount` plugin leaves alone.
const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";

/// The containers of a pod spec the plugins touch, in their order.
const LISTS: [&str; 2] = ["initContainers", "containers"];

/// `ServiceAccount` (`plugin/pkg/admission/serviceaccount/admission.go`, `Admit`): a pod
/// (not a mirror pod) without `serviceAccountName` gets `default`; unless automounting is off
/// (the pod's `automountServiceAccountToken`, else the account's `sa_automount`, else on),
/// `mountServiceAccountToken`: every init container and container without a mount at
/// [`TOKEN_MOUNT_PATH`] gets one (read-only) of the token volume, the first volume named
/// [`TOKEN_VOLUME_PREFIX`]..., else a new one named `volume_name`, added (`createVolume`:
/// projected, mode 0644, a token of 3607 s at `token`, `kube-root-ca.crt`'s `ca.crt`, the
/// namespace from the downward API) when some container needed it.
pub fn service_account(pod: &mut Value, sa_automount: Option<bool>, volume_name: &str) {
    if pod
        .pointer(&format!(
            "/metadata/annotations/{}",
            MIRROR_ANNOTATION.replace('/', "~1")
        ))
        .is_some()
    {
        return;
    }
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if spec
        .get("serviceAccountName")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
    {
        spec.insert("serviceAccountName".into(), json!("default"));
    }
    let automount = spec
        .get("automountServiceAccountToken")
        .and_then(Value::as_bool)
        .or(sa_automount)
        .unwrap_or(true);
    if !automount {
        return;
    }
    let existing = spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .find(|n| n.starts_with(TOKEN_VOLUME_PREFIX))
        .map(str::to_string);
    let name = existing.clone().unwrap_or_else(|| volume_name.to_string());
    let mount = json!({"name": name, "readOnly": true, "mountPath": TOKEN_MOUNT_PATH});
    let mut needed = false;
    for list in LISTS {
        for c in spec
            .get_mut(list)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
            .filter_map(Value::as_object_mut)
        {
            if add_mount(c, &mount) {
                needed = true;
            }
        }
    }
    if existing.is_none() && needed {
        let volumes = spec.entry("volumes").or_insert_with(|| json!([]));
        if !volumes.is_array() {
            *volumes = json!([]);
        }
        if let Some(v) = volumes.as_array_mut() {
            v.push(token_volume(&name));
        }
    }
}

/// `createVolume` of the `ServiceAccount` plugin: the projected token volume `name`.
pub fn token_volume(name: &str) -> Value {
    json!({"name": name, "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace",
            "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}})
}

/// Give container `c` the token `mount` unless it has a mount at [`TOKEN_MOUNT_PATH`];
/// whether it was added.
pub fn add_mount(c: &mut Map<String, Value>, mount: &Value) -> bool {
    let mounts = c.entry("volumeMounts").or_insert_with(|| json!([]));
    if !mounts.is_array() {
        *mounts = json!([]);
    }
    let Some(mounts) = mounts.as_array_mut() else {
        return false;
    };
    if mounts
        .iter()
        .any(|m| m.get("mountPath").and_then(Value::as_str) == Some(TOKEN_MOUNT_PATH))
    {
        return false;
    }
    mounts.push(mount.clone());
    true
}

/// `DefaultTolerationSeconds` (`plugin/pkg/admission/defaulttolerationseconds/admission.go`):
/// unless a toleration already tolerates it (its key that taint's or empty, its effect
/// `NoExecute` or empty), the pod tolerates `node.kubernetes.io/not-ready` and then
/// `node.kubernetes.io/unreachable` (`Exists`, `NoExecute`) for `seconds` (the API server's
/// `--default-not-ready-toleration-seconds` and `--default-unreachable-toleration-seconds`,
/// 300 by default).
pub fn default_toleration_seconds(pod: &mut Value, seconds: i64) {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let tolerates = |spec: &Map<String, Value>, taint: &str| {
        spec.get("tolerations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|t| {
                let key = t.get("key").and_then(Value::as_str).unwrap_or("");
                let effect = t.get("effect").and_then(Value::as_str).unwrap_or("");
                (key == taint || key.is_empty()) && (effect == "NoExecute" || effect.is_empty())
            })
    };
    for taint in [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ] {
        if tolerates(spec, taint) {
            continue;
        }
        let list = spec.entry("tolerations").or_insert_with(|| json!([]));
        if !list.is_array() {
            *list = json!([]);
        }
        if let Some(list) = list.as_array_mut() {
            list.push(
                json!({"key": taint, "operator": "Exists", "effect": "NoExecute",
                             "tolerationSeconds": seconds}),
            );
        }
    }
}

/// A `PriorityClass` as the `Priority` plugin reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct PriorityClass {
    /// Its name.
    pub name: String,
    /// `value`.
    pub value: i64,
    /// `preemptionPolicy` (`PreemptLowerPriority` when unset).
    pub preemption_policy: Option<String>,
    /// `globalDefault`.
    pub global_default: bool,
}

/// `Priority` (`plugin/pkg/admission/priority/admission.go`, `admitPod` on create): a pod
/// without `priorityClassName` takes the cluster's global default class (name, value and
/// policy), else priority 0 (`DefaultPriorityWhenNoDefaultClassExists`) with
/// `PreemptLowerPriority`; a named class gives its value and policy. Errors as the plugin's:
/// a class that does not exist, a pod whose own priority differs.
pub fn priority(pod: &mut Value, classes: &[PriorityClass]) -> Result<(), String> {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    let named = spec
        .get("priorityClassName")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let (name, value, policy) = if named.is_empty() {
        match classes.iter().find(|c| c.global_default) {
            Some(c) => (c.name.clone(), c.value, c.preemption_policy.clone()),
            None => (String::new(), 0, None),
        }
    } else {
        // The built-in system classes exist in every cluster.
        let system = match named.as_str() {
            "system-node-critical" => Some(2_000_001_000),
            "system-cluster-critical" => Some(2_000_000_000),
            _ => None,
        };
        match classes.iter().find(|c| c.name == named) {
            Some(c) => (named.clone(), c.value, c.preemption_policy.clone()),
            None => match system {
                Some(v) => (named.clone(), v, None),
                None => return Err(format!("no PriorityClass with name {named} was found")),
            },
        }
    };
    if let Some(own) = spec.get("priority").and_then(Value::as_i64) {
        if own != value {
            return Err(
                "the integer value of priority must not be provided in pod spec; priority \
                 admission controller computed the priority from the given PriorityClass name"
                    .to_string(),
            );
        }
    }
    if !name.is_empty() {
        spec.insert("priorityClassName".into(), json!(name));
    }
    spec.insert("priority".into(), json!(value));
    spec.insert(
        "preemptionPolicy".into(),
        json!(policy.unwrap_or_else(|| "PreemptLowerPriority".into())),
    );
    Ok(())
}

/// `LimitRanger` (`plugin/pkg/admission/limitranger/admission.go`, `PodMutateLimitFunc`,
/// `mergeContainerResources`): for each `Container` item of each LimitRange (with the API
/// server's `SetDefaults_LimitRangeItem`: `default` from `max`, `defaultRequest` from
/// `default`, then `min`), every init container and container gets the missing limits from
/// `default` and requests from `defaultRequest`, and the pod the annotation
/// [`LIMIT_RANGER_ANNOTATION`] saying what was set (`LimitRanger plugin set: cpu, memory
/// request for container app; cpu limit for init container setup`).
pub fn limit_ranger(pod: &mut Value, limit_ranges: &[Value]) {
    for lr in limit_ranges {
        // `defaultContainerResourceRequirements`: the `Container` items' defaults, a later
        // item's value replacing an earlier one's.
        let (mut limits, mut requests) = (Map::new(), Map::new());
        for item in lr
            .pointer("/spec/limits")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|i| i.get("type").and_then(Value::as_str) == Some("Container"))
        {
            let (l, r) = container_item_defaults(item);
            limits.extend(l);
            requests.extend(r);
        }
        if limits.is_empty() && requests.is_empty() {
            continue;
        }
        let mut notes = Vec::new();
        let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        for (list, prefix) in [
            ("containers", "container"),
            ("initContainers", "init container"),
        ] {
            for c in spec
                .get_mut(list)
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
                .filter_map(Value::as_object_mut)
            {
                let name = c
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let set_limits = fill_resources(c, "limits", &limits);
                let set_requests = fill_resources(c, "requests", &requests);
                if !set_requests.is_empty() {
                    notes.push(format!(
                        "{} request for {prefix} {name}",
                        set_requests.join(", ")
                    ));
                }
                if !set_limits.is_empty() {
                    notes.push(format!(
                        "{} limit for {prefix} {name}",
                        set_limits.join(", ")
                    ));
                }
            }
        }
        // Each LimitRange's call writes the annotation anew.
        if !notes.is_empty() {
            let meta = &mut pod["metadata"];
            if !meta["annotations"].is_object() {
                meta["annotations"] = json!({});
            }
            meta["annotations"][LIMIT_RANGER_ANNOTATION] =
                json!(format!("LimitRanger plugin set: {}", notes.join("; ")));
        }
    }
}

/// The resources of `from` container `c`'s `kind` lacks, added; their names, sorted.
fn fill_resources(
    c: &mut Map<String, Value>,
    kind: &str,
    from: &Map<String, Value>,
) -> Vec<String> {
    if from.is_empty() {
        return Vec::new();
    }
    let res = c.entry("resources").or_insert_with(|| json!({}));
    if !res.is_object() {
        *res = json!({});
    }
    let Some(into) = res
        .as_object_mut()
        .map(|r| r.entry(kind).or_insert_with(|| json!({})))
    else {
        return Vec::new();
    };
    if !into.is_object() {
        *into = json!({});
    }
    let mut added = Vec::new();
    if let Some(into) = into.as_object_mut() {
        for (k, v) in from {
            if !into.contains_key(k) {
                into.insert(k.clone(), v.clone());
                added.push(k.clone());
            }
        }
    }
    added.sort();
    added
}

/// A `Container` item's default limits and requests after `SetDefaults_LimitRangeItem`.
fn container_item_defaults(item: &Value) -> (Map<String, Value>, Map<String, Value>) {
    let take = |k: &str| {
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
    let mut limits = take("default");
    fill(&mut limits, &take("max"));
    let mut requests = take("defaultRequest");
    fill(&mut requests, &limits);
    fill(&mut requests, &take("min"));
    (limits, requests)
}

/// `RuntimeClass` (`plugin/pkg/admission/runtimeclass/admission.go`, `Admit`): a pod naming a
/// RuntimeClass gets its `overhead.podFixed` as `spec.overhead` (an error when the pod sets a
/// different one) and its `scheduling`: the node selector merged (an error on a conflicting
/// value) and the tolerations appended where the pod lacks them.
pub fn runtime_class(pod: &mut Value, runtime_class: &Value) -> Result<(), String> {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    if let Some(fixed) = runtime_class.pointer("/overhead/podFixed") {
        match spec.get("overhead") {
            Some(o) if !o.is_null() && o != fixed => {
                return Err(
                    "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"
                        .into(),
                )
            }
            _ => {
                spec.insert("overhead".into(), fixed.clone());
            }
        }
    }
    if let Some(sel) = runtime_class
        .pointer("/scheduling/nodeSelector")
        .and_then(Value::as_object)
    {
        let own = spec.entry("nodeSelector").or_insert_with(|| json!({}));
        if let Some(own) = own.as_object_mut() {
            for (k, v) in sel {
                match own.get(k) {
                    Some(o) if o != v => {
                        return Err(format!(
                            "conflict: runtimeClass.scheduling.nodeSelector[{k}] = {v}; \
                             pod.spec.nodeSelector[{k}] = {o}"
                        ))
                    }
                    _ => {
                        own.insert(k.clone(), v.clone());
                    }
                }
            }
        }
    }
    if let Some(tols) = runtime_class
        .pointer("/scheduling/tolerations")
        .and_then(Value::as_array)
    {
        let own = spec.entry("tolerations").or_insert_with(|| json!([]));
        if let Some(own) = own.as_array_mut() {
            for t in tols {
                if !own.contains(t) {
                    own.push(t.clone());
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// From `TestAdmitAndValidate`-style cases of serviceaccount/admission_test.go: every
    /// container without a mount at the path gets one; one existing token volume is reused.
    #[test]
    fn the_token_is_mounted_where_missing_and_its_volume_added_once() {
        let mut pod = json!({"metadata": {}, "spec": {
            "initContainers": [{"name": "i"}],
            "containers": [{"name": "a"},
                {"name": "b", "volumeMounts": [{"name": "own", "mountPath": TOKEN_MOUNT_PATH}]}]}});
        service_account(&mut pod, None, "kube-api-access-abcde");
        assert_eq!(pod["spec"]["serviceAccountName"], "default");
        assert_eq!(
            pod["spec"]["volumes"],
            json!([token_volume("kube-api-access-abcde")])
        );
        let mount = json!({"name": "kube-api-access-abcde", "readOnly": true,
                           "mountPath": TOKEN_MOUNT_PATH});
        assert_eq!(
            pod["spec"]["initContainers"][0]["volumeMounts"],
            json!([mount])
        );
        assert_eq!(pod["spec"]["containers"][0]["volumeMounts"], json!([mount]));
        assert_eq!(
            pod["spec"]["containers"][1]["volumeMounts"]
                .as_array()
                .map(Vec::len),
            Some(1)
        );
        // Again (a reinvocation): nothing changes.
        let once = pod.clone();
        service_account(&mut pod, None, "kube-api-access-zzzzz");
        assert_eq!(pod, once);
        // Automounting off on the pod wins over the account.
        let mut off = json!({"spec": {"automountServiceAccountToken": false,
                                      "containers": [{"name": "a"}]}});
        service_account(&mut off, Some(true), "kube-api-access-abcde");
        assert!(off["spec"].get("volumes").is_none());
        let mut sa_off = json!({"spec": {"containers": [{"name": "a"}]}});
        service_account(&mut sa_off, Some(false), "kube-api-access-abcde");
        assert!(sa_off["spec"].get("volumes").is_none());
    }

    #[test]
    fn tolerations_are_added_unless_tolerated() {
        let mut pod = json!({"spec": {"tolerations": [
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists"}]}});
        default_toleration_seconds(&mut pod, 300);
        assert_eq!(
            pod["spec"]["tolerations"],
            json!([{"key": "node.kubernetes.io/unreachable", "operator": "Exists"},
                   {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                    "effect": "NoExecute", "tolerationSeconds": 300}])
        );
        let mut all = json!({"spec": {"tolerations": [{"operator": "Exists"}]}});
        default_toleration_seconds(&mut all, 300);
        assert_eq!(all["spec"]["tolerations"].as_array().map(Vec::len), Some(1));
    }

    #[test]
    fn priority_from_the_class_or_zero() {
        let mut pod = json!({"spec": {}});
        priority(&mut pod, &[]).expect("admitted");
        assert_eq!(pod["spec"]["priority"], 0);
        assert_eq!(pod["spec"]["preemptionPolicy"], "PreemptLowerPriority");
        let high = PriorityClass {
            name: "high".into(),
            value: 1000,
            preemption_policy: Some("Never".into()),
            global_default: true,
        };
        let mut pod = json!({"spec": {}});
        priority(&mut pod, std::slice::from_ref(&high)).expect("admitted");
        assert_eq!(pod["spec"]["priorityClassName"], "high");
        assert_eq!(pod["spec"]["priority"], 1000);
        assert_eq!(pod["spec"]["preemptionPolicy"], "Never");
        let mut missing = json!({"spec": {"priorityClassName": "nope"}});
        assert!(priority(&mut missing, &[]).is_err());
        let mut system = json!({"spec": {"priorityClassName": "system-cluster-critical"}});
        priority(&mut system, &[]).expect("admitted");
        assert_eq!(system["spec"]["priority"], 2_000_000_000);
    }

    #[test]
    fn limit_ranger_fills_what_is_missing_and_says_so() {
        let lr = json!({"spec": {"limits": [{"type": "Container",
            "default": {"cpu": "500m"}, "defaultRequest": {"memory": "64Mi"}}]}});
        let mut pod = json!({"metadata": {}, "spec": {
            "initContainers": [{"name": "setup", "resources": {"limits": {"cpu": "1"}}}],
            "containers": [{"name": "app"}]}});
        limit_ranger(&mut pod, &[lr]);
        assert_eq!(
            pod["spec"]["containers"][0]["resources"],
            json!({"limits": {"cpu": "500m"}, "requests": {"cpu": "500m", "memory": "64Mi"}})
        );
        assert_eq!(
            pod["metadata"]["annotations"][LIMIT_RANGER_ANNOTATION],
            "LimitRanger plugin set: cpu, memory request for container app; \
             cpu limit for container app; cpu, memory request for init container setup"
        );
    }

    #[test]
    fn runtime_class_overhead_and_scheduling() {
        let rc = json!({"overhead": {"podFixed": {"cpu": "250m"}},
            "scheduling": {"nodeSelector": {"sandbox": "true"},
                           "tolerations": [{"key": "sandbox", "operator": "Exists"}]}});
        let mut pod = json!({"spec": {"runtimeClassName": "gvisor"}});
        runtime_class(&mut pod, &rc).expect("admitted");
        assert_eq!(pod["spec"]["overhead"], json!({"cpu": "250m"}));
        assert_eq!(pod["spec"]["nodeSelector"], json!({"sandbox": "true"}));
        let mut conflict = json!({"spec": {"nodeSelector": {"sandbox": "false"}}});
        assert!(runtime_class(&mut conflict, &rc).is_err());
    }
}
