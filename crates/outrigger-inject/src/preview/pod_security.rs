//! The Pod Security Standards (Kubernetes' `PodSecurity` admission, `baseline` and `restricted`
//! levels) as far as injection bears on them: what a sidecar or init container can bring
//! (capabilities, privilege, the user it runs as, privilege escalation, seccomp, ports on the
//! host, volumes) and the pod-level fields a template can set (host namespaces, host-path and
//! other volume types). Each finding names the check as Kubernetes' admission names it in its
//! refusals (`unrestricted capabilities`, `runAsNonRoot != true`, ...) and the container.
//! Not checked: AppArmor, SELinux options, `/proc` mount type, sysctls, Windows host processes.

use serde_json::Value;

use super::{all_containers, Finding};
use crate::kube::pod::container_name;

/// A Pod Security level (the value of the namespace label
/// `pod-security.kubernetes.io/enforce`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// No restriction.
    Privileged,
    /// Known privilege escalations prevented.
    Baseline,
    /// Hardening best practices.
    Restricted,
}

/// The label holding the level a namespace enforces.
pub const ENFORCE_LABEL: &str = "pod-security.kubernetes.io/enforce";

impl Level {
    /// The level of a label value; `None` for a value the admission plugin does not know.
    pub fn parse(value: &str) -> Option<Level> {
        match value {
            "privileged" => Some(Level::Privileged),
            "baseline" => Some(Level::Baseline),
            "restricted" => Some(Level::Restricted),
            _ => None,
        }
    }

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Privileged => "privileged",
            Level::Baseline => "baseline",
            Level::Restricted => "restricted",
        }
    }
}

/// Capabilities `baseline` lets a container add.
const BASELINE_CAPABILITIES: [&str; 13] = [
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

/// Volume types `restricted` allows.
const RESTRICTED_VOLUMES: [&str; 8] = [
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
];

/// What `pod` breaks of `level`.
pub fn check(pod: &Value, level: Level) -> Vec<Finding> {
    let mut out = Vec::new();
    if level == Level::Privileged {
        return out;
    }
    let spec = pod.get("spec").unwrap_or(&Value::Null);
    let pod_sc = spec.get("securityContext").unwrap_or(&Value::Null);
    let mut add = |level: Level, rule: &str, container: Option<&str>, message: String| {
        out.push(Finding {
            check: "pod-security",
            rule: format!("{}: {rule}", level.as_str()),
            container: container.map(str::to_string),
            message,
        })
    };
    for (field, what) in [
        ("hostNetwork", "hostNetwork=true"),
        ("hostPID", "hostPID=true"),
        ("hostIPC", "hostIPC=true"),
    ] {
        if spec.get(field).and_then(Value::as_bool) == Some(true) {
            add(
                Level::Baseline,
                "host namespaces",
                None,
                format!("{what} is not allowed"),
            );
        }
    }
    for v in spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = container_name(v);
        let ty = v
            .as_object()
            .and_then(|m| m.keys().find(|k| *k != "name"))
            .map_or("", String::as_str);
        if ty == "hostPath" {
            add(
                Level::Baseline,
                "hostPath volumes",
                None,
                format!("volume {name:?} is a hostPath volume"),
            );
        } else if level == Level::Restricted && !ty.is_empty() && !RESTRICTED_VOLUMES.contains(&ty)
        {
            add(
                Level::Restricted,
                "restricted volume types",
                None,
                format!("volume {name:?} uses restricted volume type {ty:?}"),
            );
        }
    }
    let seccomp_type = |sc: &Value| {
        sc.pointer("/seccompProfile/type")
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let pod_seccomp = seccomp_type(pod_sc);
    if pod_seccomp.as_deref() == Some("Unconfined") {
        add(
            Level::Baseline,
            "seccompProfile",
            None,
            "pod must not set securityContext.seccompProfile.type to \"Unconfined\"".into(),
        );
    }
    let pod_non_root = pod_sc.get("runAsNonRoot").and_then(Value::as_bool);
    if level == Level::Restricted && pod_non_root == Some(false) {
        add(
            Level::Restricted,
            "runAsNonRoot != true",
            None,
            "pod must not set securityContext.runAsNonRoot=false".into(),
        );
    }
    if level == Level::Restricted && pod_sc.get("runAsUser").and_then(Value::as_i64) == Some(0) {
        add(
            Level::Restricted,
            "runAsUser=0",
            None,
            "pod must not set runAsUser=0".into(),
        );
    }
    for (list, c) in all_containers(pod) {
        let name = container_name(c);
        let sc = c.get("securityContext").unwrap_or(&Value::Null);
        let n = Some(name);
        if sc.get("privileged").and_then(Value::as_bool) == Some(true) {
            add(
                Level::Baseline,
                "privileged",
                n,
                format!("{list}: must not set securityContext.privileged=true"),
            );
        }
        let caps = |k: &str| -> Vec<String> {
            sc.pointer(&format!("/capabilities/{k}"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        };
        let added = caps("add");
        let beyond: Vec<&String> = added
            .iter()
            .filter(|c| !BASELINE_CAPABILITIES.contains(&c.as_str()))
            .collect();
        if !beyond.is_empty() {
            add(
                Level::Baseline,
                "non-default capabilities",
                n,
                format!("{list}: must not include {beyond:?} in securityContext.capabilities.add"),
            );
        }
        let ports: Vec<i64> = c
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| p.get("hostPort").and_then(Value::as_i64))
            .filter(|p| *p != 0)
            .collect();
        if !ports.is_empty() {
            add(
                Level::Baseline,
                "hostPort",
                n,
                format!("{list}: uses hostPort {ports:?}"),
            );
        }
        let seccomp = seccomp_type(sc);
        if seccomp.as_deref() == Some("Unconfined") {
            add(
                Level::Baseline,
                "seccompProfile",
                n,
                format!(
                    "{list}: must not set securityContext.seccompProfile.type to \"Unconfined\""
                ),
            );
        }
        if level != Level::Restricted {
            continue;
        }
        if sc.get("allowPrivilegeEscalation").and_then(Value::as_bool) != Some(false) {
            add(
                Level::Restricted,
                "allowPrivilegeEscalation != false",
                n,
                format!("{list}: must set securityContext.allowPrivilegeEscalation=false"),
            );
        }
        if !caps("drop").iter().any(|c| c == "ALL") {
            add(
                Level::Restricted,
                "unrestricted capabilities",
                n,
                format!("{list}: must set securityContext.capabilities.drop=[\"ALL\"]"),
            );
        }
        let beyond: Vec<&String> = added.iter().filter(|c| *c != "NET_BIND_SERVICE").collect();
        if !beyond.is_empty() {
            add(
                Level::Restricted,
                "unrestricted capabilities",
                n,
                format!(
                    "{list}: must not include {beyond:?} in securityContext.capabilities.add \
                     (only NET_BIND_SERVICE)"
                ),
            );
        }
        match sc.get("runAsNonRoot").and_then(Value::as_bool) {
            Some(false) => add(
                Level::Restricted,
                "runAsNonRoot != true",
                n,
                format!("{list}: must not set securityContext.runAsNonRoot=false"),
            ),
            None if pod_non_root != Some(true) => add(
                Level::Restricted,
                "runAsNonRoot != true",
                n,
                format!("{list}: pod or container must set securityContext.runAsNonRoot=true"),
            ),
            _ => {}
        }
        if sc.get("runAsUser").and_then(Value::as_i64) == Some(0) {
            add(
                Level::Restricted,
                "runAsUser=0",
                n,
                format!("{list}: must not set runAsUser=0"),
            );
        }
        let allowed =
            |t: &Option<String>| matches!(t.as_deref(), Some("RuntimeDefault" | "Localhost"));
        let confined = allowed(&seccomp) || (seccomp.is_none() && allowed(&pod_seccomp));
        if !confined {
            add(
                Level::Restricted,
                "seccompProfile",
                n,
                format!(
                    "{list}: pod or container must set securityContext.seccompProfile.type to \
                     \"RuntimeDefault\" or \"Localhost\""
                ),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rules(pod: &Value, level: Level) -> Vec<(String, Option<String>)> {
        check(pod, level)
            .into_iter()
            .map(|f| (f.rule, f.container))
            .collect()
    }

    /// Istio's init container as its chart renders it (`istio-init`: NET_ADMIN, NET_RAW, root).
    fn istio_init() -> Value {
        json!({"name": "istio-init", "securityContext": {
            "allowPrivilegeEscalation": false, "privileged": false, "readOnlyRootFilesystem": false,
            "runAsGroup": 0, "runAsNonRoot": false, "runAsUser": 0,
            "capabilities": {"add": ["NET_ADMIN", "NET_RAW"], "drop": ["ALL"]}}})
    }

    fn hardened(name: &str) -> Value {
        json!({"name": name, "securityContext": {
            "allowPrivilegeEscalation": false, "runAsNonRoot": true, "runAsUser": 1337,
            "capabilities": {"drop": ["ALL"]}}})
    }

    #[test]
    fn istio_init_breaks_baseline_and_restricted() {
        let pod = json!({"spec": {
            "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
            "initContainers": [istio_init()],
            "containers": [hardened("app"), hardened("istio-proxy")]}});
        let init = Some("istio-init".to_string());
        assert_eq!(
            rules(&pod, Level::Baseline),
            [(
                "baseline: non-default capabilities".to_string(),
                init.clone()
            )]
        );
        let restricted = rules(&pod, Level::Restricted);
        for rule in [
            "baseline: non-default capabilities",
            "restricted: unrestricted capabilities",
            "restricted: runAsNonRoot != true",
            "restricted: runAsUser=0",
        ] {
            assert!(
                restricted.contains(&(rule.to_string(), init.clone())),
                "{rule}: {restricted:?}"
            );
        }
        assert!(
            restricted.iter().all(|(_, c)| c == &init),
            "only istio-init: {restricted:?}"
        );
        assert!(check(&pod, Level::Privileged).is_empty());
    }

    #[test]
    fn restricted_needs_seccomp_and_allows_the_pod_level_settings() {
        let pod = json!({"spec": {"containers": [hardened("app")]}});
        assert_eq!(
            rules(&pod, Level::Restricted),
            [(
                "restricted: seccompProfile".to_string(),
                Some("app".to_string())
            )]
        );
        let pod = json!({"spec": {
            "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "app", "securityContext": {
                "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]}});
        assert!(rules(&pod, Level::Restricted).is_empty());
    }

    #[test]
    fn pod_level_fields_are_checked() {
        let pod = json!({"spec": {"hostNetwork": true, "containers": [],
            "volumes": [{"name": "h", "hostPath": {"path": "/"}},
                        {"name": "n", "nfs": {"server": "x"}},
                        {"name": "ok", "emptyDir": {}}]}});
        let r = rules(&pod, Level::Restricted);
        let names: Vec<&str> = r.iter().map(|(r, _)| r.as_str()).collect();
        assert_eq!(
            names,
            [
                "baseline: host namespaces",
                "baseline: hostPath volumes",
                "restricted: restricted volume types"
            ]
        );
        assert_eq!(Level::parse("restricted"), Some(Level::Restricted));
        assert_eq!(Level::parse("strict"), None);
    }
}
