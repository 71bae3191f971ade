//! The Pod Security Standards (Kubernetes' `PodSecurity` admission, `baseline` and `restricted`
//! levels, at the policy version `latest` resolves to on Kubernetes 1.37) as far as a pod's spec
//! bears on them: what a sidecar or init container can bring (capabilities, privilege, the user it
//! runs as, privilege escalation, seccomp, AppArmor, SELinux options, `/proc` mount type, ports on
//! the host, probe and lifecycle hosts, Windows host processes) and the pod-level fields a template
//! can set (host namespaces, host-path and other volume types, sysctls). Each finding names the
//! check as Kubernetes' admission names it in its refusals (`unrestricted capabilities`,
//! `runAsNonRoot != true`, `forbidden sysctls`, ...) and the container; the messages paraphrase
//! Kubernetes' (`pod-security-admission/policy/check_*.go`), one finding per container.
//!
//! As the admission plugin does: pods with `spec.os.name: windows` are exempt from the restricted
//! level's `allowPrivilegeEscalation`, capabilities and seccomp rules; pods in a user namespace
//! (`spec.hostUsers: false`) from `runAsNonRoot`, `runAsUser` and baseline's `/proc` mount rule.
//! Not modelled: pinned `enforce-version` labels (every namespace is judged at `latest`) and the
//! seccomp annotations only policy versions before 1.19 read.

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

/// The label holding the level a namespace warns about (the pod is admitted; the client is
/// shown a warning).
pub const WARN_LABEL: &str = "pod-security.kubernetes.io/warn";

/// The label holding the level a namespace audits (the pod is admitted; the audit log records
/// the violation).
pub const AUDIT_LABEL: &str = "pod-security.kubernetes.io/audit";

/// The check name of the findings of a `warn` level: they do not refuse.
pub const WARN_CHECK: &str = "pod-security-warn";

/// The check name of the findings of an `audit` level: they do not refuse.
pub const AUDIT_CHECK: &str = "pod-security-audit";

/// The namespace's three Pod Security modes (`None`: label absent or not a level).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Modes {
    /// `pod-security.kubernetes.io/enforce`: pods breaking it are refused.
    pub enforce: Option<Level>,
    /// `pod-security.kubernetes.io/warn`: admitted with a warning to the client.
    pub warn: Option<Level>,
    /// `pod-security.kubernetes.io/audit`: admitted, the violation in the audit log.
    pub audit: Option<Level>,
}

/// What `pod` breaks of `modes`: the enforced level's findings (check `pod-security`), then, for
/// a `warn` or `audit` level stricter than the enforced one, the findings of that level the
/// enforced one does not have, under [`WARN_CHECK`] or [`AUDIT_CHECK`] (they do not refuse).
pub fn check_modes(pod: &Value, modes: &Modes) -> Vec<Finding> {
    let mut out = modes.enforce.map(|l| check(pod, l)).unwrap_or_default();
    let enforced = modes.enforce.unwrap_or(Level::Privileged);
    for (level, name, what) in [
        (modes.warn, WARN_CHECK, "admitted with a warning"),
        (
            modes.audit,
            AUDIT_CHECK,
            "admitted, recorded in the audit log",
        ),
    ] {
        let Some(level) = level.filter(|l| *l > enforced) else {
            continue;
        };
        for f in check(pod, level) {
            let same = |e: &Finding| {
                e.check == "pod-security" && e.rule == f.rule && e.container == f.container
            };
            if !out.iter().any(same) {
                out.push(Finding {
                    check: name,
                    message: format!("{} ({what})", f.message),
                    ..f
                });
            }
        }
    }
    out
}

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

/// Volume types `restricted` allows (`image` since Kubernetes 1.33, at every policy version).
const RESTRICTED_VOLUMES: [&str; 9] = [
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "image",
    "persistentVolumeClaim",
    "projected",
    "secret",
];

/// Sysctls `baseline` lets a pod set (the safe set: 1.0, then 1.27, 1.29, 1.32 and 1.37's
/// additions).
const SAFE_SYSCTLS: [&str; 14] = [
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.ipv4.tcp_slow_start_after_idle",
    "net.ipv4.tcp_notsent_lowat",
];

/// SELinux types `baseline` allows (`container_engine_t` since 1.31); empty is allowed too.
const SELINUX_TYPES: [&str; 4] = [
    "container_t",
    "container_init_t",
    "container_kvm_t",
    "container_engine_t",
];

/// Prefix of the per-container AppArmor annotations (deprecated by the `appArmorProfile` field,
/// still checked).
const APPARMOR_ANNOTATION: &str = "container.apparmor.security.beta.kubernetes.io/";

/// What is wrong with `seLinuxOptions` (`sc.seLinuxOptions`): a type outside
/// [`SELINUX_TYPES`], a user or a role; empty when nothing.
fn selinux_problems(sc: &Value) -> Vec<String> {
    let Some(opts) = sc.get("seLinuxOptions") else {
        return Vec::new();
    };
    let text = |k: &str| opts.get(k).and_then(Value::as_str).unwrap_or("");
    let mut out = Vec::new();
    let ty = text("type");
    if !ty.is_empty() && !SELINUX_TYPES.contains(&ty) {
        out.push(format!("type {ty:?}"));
    }
    if !text("user").is_empty() {
        out.push("user may not be set".to_string());
    }
    if !text("role").is_empty() {
        out.push("role may not be set".to_string());
    }
    out
}

/// A forbidden `appArmorProfile.type` of `sc` (anything but `RuntimeDefault` and `Localhost`).
fn apparmor_problem(sc: &Value) -> Option<&str> {
    let ty = sc.pointer("/appArmorProfile/type")?.as_str().unwrap_or("");
    (!matches!(ty, "RuntimeDefault" | "Localhost")).then_some(ty)
}

/// Whether `sc` asks for a Windows host process.
fn host_process(sc: &Value) -> bool {
    sc.pointer("/windowsOptions/hostProcess")
        .and_then(Value::as_bool)
        == Some(true)
}

/// The hosts `c`'s probes and lifecycle handlers name (`httpGet.host`, `tcpSocket.host`).
fn probe_hosts(c: &Value) -> Vec<String> {
    let handlers = [
        "/livenessProbe",
        "/readinessProbe",
        "/startupProbe",
        "/lifecycle/postStart",
        "/lifecycle/preStop",
    ];
    let mut out = Vec::new();
    for h in handlers {
        for action in ["httpGet", "tcpSocket"] {
            let host = c
                .pointer(&format!("{h}/{action}/host"))
                .and_then(Value::as_str)
                .unwrap_or("");
            if !host.is_empty() && !out.iter().any(|o| o == host) {
                out.push(host.to_string());
            }
        }
    }
    out
}

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
    let windows = spec.pointer("/os/name").and_then(Value::as_str) == Some("windows");
    let user_namespace = spec.get("hostUsers").and_then(Value::as_bool) == Some(false);
    let sysctls: Vec<&str> = pod_sc
        .get("sysctls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| s.get("name").and_then(Value::as_str))
        .filter(|n| !SAFE_SYSCTLS.contains(n))
        .collect();
    if !sysctls.is_empty() {
        add(
            Level::Baseline,
            "forbidden sysctls",
            None,
            format!("pod must not set securityContext.sysctls {sysctls:?} (not in the safe set)"),
        );
    }
    let selinux = selinux_problems(pod_sc);
    if !selinux.is_empty() {
        add(
            Level::Baseline,
            "seLinuxOptions",
            None,
            format!(
                "pod sets forbidden securityContext.seLinuxOptions: {}",
                selinux.join("; ")
            ),
        );
    }
    if let Some(ty) = apparmor_problem(pod_sc) {
        add(
            Level::Baseline,
            "forbidden AppArmor profile",
            None,
            format!("pod must not set AppArmor profile type to {ty:?}"),
        );
    }
    for (key, value) in pod
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let Some(container) = key.strip_prefix(APPARMOR_ANNOTATION) else {
            continue;
        };
        let value = value.as_str().unwrap_or("");
        if !(value.is_empty() || value == "runtime/default" || value.starts_with("localhost/")) {
            add(
                Level::Baseline,
                "forbidden AppArmor profile",
                Some(container),
                format!("annotation {key}={value:?} must be runtime/default or localhost/*"),
            );
        }
    }
    if host_process(pod_sc) {
        add(
            Level::Baseline,
            "hostProcess",
            None,
            "pod must not set securityContext.windowsOptions.hostProcess=true".into(),
        );
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
    if level == Level::Restricted && !user_namespace && pod_non_root == Some(false) {
        add(
            Level::Restricted,
            "runAsNonRoot != true",
            None,
            "pod must not set securityContext.runAsNonRoot=false".into(),
        );
    }
    if level == Level::Restricted
        && !user_namespace
        && pod_sc.get("runAsUser").and_then(Value::as_i64) == Some(0)
    {
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
        let selinux = selinux_problems(sc);
        if !selinux.is_empty() {
            add(
                Level::Baseline,
                "seLinuxOptions",
                n,
                format!(
                    "{list}: sets forbidden securityContext.seLinuxOptions: {}",
                    selinux.join("; ")
                ),
            );
        }
        if let Some(ty) = apparmor_problem(sc) {
            add(
                Level::Baseline,
                "forbidden AppArmor profile",
                n,
                format!("{list}: must not set AppArmor profile type to {ty:?}"),
            );
        }
        let proc_mount = sc.get("procMount").and_then(Value::as_str);
        if let Some(pm) = proc_mount.filter(|pm| *pm != "Default") {
            // Baseline allows any type in a user namespace; restricted never does.
            let refused_by = if !user_namespace {
                Some(Level::Baseline)
            } else {
                (level == Level::Restricted).then_some(Level::Restricted)
            };
            if let Some(by) = refused_by {
                add(
                    by,
                    "procMount",
                    n,
                    format!("{list}: must not set securityContext.procMount to {pm:?}"),
                );
            }
        }
        if host_process(sc) {
            add(
                Level::Baseline,
                "hostProcess",
                n,
                format!("{list}: must not set securityContext.windowsOptions.hostProcess=true"),
            );
        }
        let hosts = probe_hosts(c);
        if !hosts.is_empty() {
            add(
                Level::Baseline,
                "probe or lifecycle host",
                n,
                format!("{list}: uses probe or lifecycle host {hosts:?}"),
            );
        }
        if level != Level::Restricted {
            continue;
        }
        if !windows && sc.get("allowPrivilegeEscalation").and_then(Value::as_bool) != Some(false) {
            add(
                Level::Restricted,
                "allowPrivilegeEscalation != false",
                n,
                format!("{list}: must set securityContext.allowPrivilegeEscalation=false"),
            );
        }
        if !windows && !caps("drop").iter().any(|c| c == "ALL") {
            add(
                Level::Restricted,
                "unrestricted capabilities",
                n,
                format!("{list}: must set securityContext.capabilities.drop=[\"ALL\"]"),
            );
        }
        let beyond: Vec<&String> = added.iter().filter(|c| *c != "NET_BIND_SERVICE").collect();
        if !windows && !beyond.is_empty() {
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
            _ if user_namespace => {}
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
        if !user_namespace && sc.get("runAsUser").and_then(Value::as_i64) == Some(0) {
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
        if !windows && !confined {
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

    /// A pod `restricted` admits: one container `app`, everything set as the level asks.
    fn compliant() -> Value {
        json!({"metadata": {"name": "p"}, "spec": {
            "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "app", "securityContext": {
                "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]}})
    }

    /// `compliant()` with `patch` merged in (RFC 7386; the container list is replaced whole).
    fn with(patch: Value) -> Value {
        let mut pod = compliant();
        json_patch::merge(&mut pod, &patch);
        pod
    }

    fn app(sc: Value) -> Value {
        json!({"spec": {"containers": [{"name": "app", "securityContext": sc}]}})
    }

    /// The restricted-compliant container's security context with `extra` merged in.
    fn app_with(extra: Value) -> Value {
        let mut sc = json!({"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}});
        json_patch::merge(&mut sc, &extra);
        app(sc)
    }

    #[test]
    fn the_compliant_pod_passes_both_levels() {
        assert!(check(&compliant(), Level::Restricted).is_empty());
        assert!(check(&compliant(), Level::Baseline).is_empty());
    }

    /// Each rule on a refused and an allowed value of its field: (what, patch, level, rule that
    /// must fire, or `None` when the value is allowed and nothing may fire).
    #[test]
    fn each_rule_fires_on_refused_values_only() {
        let b = Level::Baseline;
        let r = Level::Restricted;
        let sysctl = |name: &str| json!({"spec": {"securityContext": {"sysctls": [{"name": name, "value": "1"}]}}});
        let cases: Vec<(&str, Value, Level, Option<&str>)> = vec![
            (
                "unsafe sysctl",
                sysctl("kernel.msgmax"),
                b,
                Some("baseline: forbidden sysctls"),
            ),
            (
                "safe sysctl (1.0)",
                sysctl("net.ipv4.ip_local_port_range"),
                r,
                None,
            ),
            ("safe sysctl (1.32)", sysctl("net.ipv4.tcp_rmem"), r, None),
            (
                "pod SELinux type",
                json!({"spec": {"securityContext": {"seLinuxOptions": {"type": "spc_t"}}}}),
                b,
                Some("baseline: seLinuxOptions"),
            ),
            (
                "container SELinux user",
                app_with(json!({"seLinuxOptions": {"user": "system_u"}})),
                b,
                Some("baseline: seLinuxOptions"),
            ),
            (
                "container SELinux role",
                app_with(json!({"seLinuxOptions": {"role": "sysadm_r"}})),
                b,
                Some("baseline: seLinuxOptions"),
            ),
            (
                "allowed SELinux type and level",
                app_with(
                    json!({"seLinuxOptions": {"type": "container_engine_t", "level": "s0:c1"}}),
                ),
                r,
                None,
            ),
            (
                "pod AppArmor Unconfined",
                json!({"spec": {"securityContext": {"appArmorProfile": {"type": "Unconfined"}}}}),
                b,
                Some("baseline: forbidden AppArmor profile"),
            ),
            (
                "container AppArmor Unconfined",
                app_with(json!({"appArmorProfile": {"type": "Unconfined"}})),
                b,
                Some("baseline: forbidden AppArmor profile"),
            ),
            (
                "container AppArmor Localhost",
                app_with(
                    json!({"appArmorProfile": {"type": "Localhost", "localhostProfile": "k"}}),
                ),
                r,
                None,
            ),
            (
                "AppArmor annotation unconfined",
                json!({"metadata": {"annotations": {
                    "container.apparmor.security.beta.kubernetes.io/app": "unconfined"}}}),
                b,
                Some("baseline: forbidden AppArmor profile"),
            ),
            (
                "AppArmor annotation localhost",
                json!({"metadata": {"annotations": {
                    "container.apparmor.security.beta.kubernetes.io/app": "localhost/k"}}}),
                r,
                None,
            ),
            (
                "procMount Unmasked",
                app_with(json!({"procMount": "Unmasked"})),
                b,
                Some("baseline: procMount"),
            ),
            (
                "procMount Default",
                app_with(json!({"procMount": "Default"})),
                r,
                None,
            ),
            (
                "procMount Unmasked in a user namespace, baseline",
                json!({"spec": {"hostUsers": false, "containers": [{"name": "app",
                    "securityContext": {"procMount": "Unmasked"}}]}}),
                b,
                None,
            ),
            (
                "procMount Unmasked in a user namespace, restricted",
                json!({"spec": {"hostUsers": false, "containers": [{"name": "app",
                    "securityContext": {"procMount": "Unmasked", "allowPrivilegeEscalation": false,
                                        "capabilities": {"drop": ["ALL"]}}}]}}),
                r,
                Some("restricted: procMount"),
            ),
            (
                "pod hostProcess",
                json!({"spec": {"securityContext": {"windowsOptions": {"hostProcess": true}}}}),
                b,
                Some("baseline: hostProcess"),
            ),
            (
                "container hostProcess false",
                app_with(json!({"windowsOptions": {"hostProcess": false}})),
                r,
                None,
            ),
            (
                "container hostProcess",
                app_with(json!({"windowsOptions": {"hostProcess": true}})),
                b,
                Some("baseline: hostProcess"),
            ),
            (
                "probe host",
                json!({"spec": {"containers": [{"name": "app",
                    "livenessProbe": {"httpGet": {"host": "10.0.0.1", "port": 80}}}]}}),
                b,
                Some("baseline: probe or lifecycle host"),
            ),
            (
                "lifecycle host",
                json!({"spec": {"containers": [{"name": "app",
                    "lifecycle": {"preStop": {"tcpSocket": {"host": "db", "port": 5432}}}}]}}),
                b,
                Some("baseline: probe or lifecycle host"),
            ),
            (
                "probe without host",
                json!({"spec": {"containers": [{"name": "app", "securityContext": {
                    "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}},
                    "readinessProbe": {"httpGet": {"port": 80, "path": "/"}}}]}}),
                r,
                None,
            ),
            (
                "hostPort",
                json!({"spec": {"containers": [{"name": "app", "ports": [{"containerPort": 80,
                    "hostPort": 80}]}]}}),
                b,
                Some("baseline: hostPort"),
            ),
            (
                "hostPort 0",
                json!({"spec": {"containers": [{"name": "app", "securityContext": {
                    "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}},
                    "ports": [{"containerPort": 80, "hostPort": 0}]}]}}),
                r,
                None,
            ),
            (
                "hostPID",
                json!({"spec": {"hostPID": true}}),
                b,
                Some("baseline: host namespaces"),
            ),
            (
                "privileged",
                app_with(json!({"privileged": true})),
                b,
                Some("baseline: privileged"),
            ),
            (
                "NET_RAW beyond baseline",
                app_with(json!({"capabilities": {"add": ["NET_RAW"]}})),
                b,
                Some("baseline: non-default capabilities"),
            ),
            (
                "CHOWN within baseline",
                app(json!({"capabilities": {"add": ["CHOWN"]}})),
                b,
                None,
            ),
            (
                "CHOWN beyond restricted",
                app_with(json!({"capabilities": {"add": ["CHOWN"]}})),
                r,
                Some("restricted: unrestricted capabilities"),
            ),
            (
                "NET_BIND_SERVICE within restricted",
                app_with(json!({"capabilities": {"add": ["NET_BIND_SERVICE"]}})),
                r,
                None,
            ),
            (
                "no drop ALL",
                app(json!({"allowPrivilegeEscalation": false})),
                r,
                Some("restricted: unrestricted capabilities"),
            ),
            (
                "allowPrivilegeEscalation unset",
                app(json!({"capabilities": {"drop": ["ALL"]}})),
                r,
                Some("restricted: allowPrivilegeEscalation != false"),
            ),
            (
                "seccomp Unconfined on a container",
                app_with(json!({"seccompProfile": {"type": "Unconfined"}})),
                b,
                Some("baseline: seccompProfile"),
            ),
            (
                "seccomp unset",
                json!({"spec": {"securityContext": {"seccompProfile": null}}}),
                r,
                Some("restricted: seccompProfile"),
            ),
            (
                "seccomp Localhost on the container",
                json!({"spec": {"securityContext": {"seccompProfile": null}, "containers": [{
                    "name": "app", "securityContext": {"allowPrivilegeEscalation": false,
                    "capabilities": {"drop": ["ALL"]},
                    "seccompProfile": {"type": "Localhost", "localhostProfile": "p.json"}}}]}}),
                r,
                None,
            ),
            (
                "runAsNonRoot unset",
                json!({"spec": {"securityContext": {"runAsNonRoot": null}}}),
                r,
                Some("restricted: runAsNonRoot != true"),
            ),
            (
                "runAsNonRoot false on a container",
                app_with(json!({"runAsNonRoot": false})),
                r,
                Some("restricted: runAsNonRoot != true"),
            ),
            (
                "runAsUser 0",
                app_with(json!({"runAsUser": 0})),
                r,
                Some("restricted: runAsUser=0"),
            ),
            (
                "runAsUser 1337",
                app_with(json!({"runAsUser": 1337})),
                r,
                None,
            ),
            (
                "root in a user namespace",
                json!({"spec": {"hostUsers": false, "securityContext": {"runAsNonRoot": false,
                    "runAsUser": 0}}}),
                r,
                None,
            ),
            (
                "restricted volume type",
                json!({"spec": {"volumes": [{"name": "n", "nfs": {"server": "s", "path": "/"}}]}}),
                r,
                Some("restricted: restricted volume types"),
            ),
            (
                "image volume",
                json!({"spec": {"volumes": [{"name": "i", "image": {"reference": "x:1"}}]}}),
                r,
                None,
            ),
            (
                "Windows pod without the Linux-only fields",
                json!({"spec": {"os": {"name": "windows"}, "securityContext": {"seccompProfile": null},
                    "containers": [{"name": "app", "securityContext": {}}]}}),
                r,
                None,
            ),
        ];
        for (what, patch, level, rule) in cases {
            let pod = with(patch);
            let found: Vec<String> = check(&pod, level).into_iter().map(|f| f.rule).collect();
            match rule {
                Some(rule) => assert!(found.iter().any(|f| f == rule), "{what}: {found:?}"),
                None => assert!(found.is_empty(), "{what}: {found:?}"),
            }
            if let (Some(rule), Level::Baseline) = (rule, level) {
                let also = check(&pod, Level::Restricted);
                assert!(
                    also.iter().any(|f| f.rule == rule),
                    "{what} under restricted"
                );
                assert!(
                    check(&pod, Level::Privileged).is_empty(),
                    "{what} under privileged"
                );
            }
        }
    }

    #[test]
    fn findings_name_the_container_and_the_values() {
        let pod = with(json!({"spec": {"securityContext": {"sysctls": [
            {"name": "kernel.msgmax", "value": "1"}, {"name": "kernel.shm_rmid_forced", "value": "1"}]},
            "initContainers": [{"name": "init", "securityContext": {"seLinuxOptions": {
                "type": "spc_t", "role": "r"}}}]}}));
        let f = check(&pod, Level::Baseline);
        let sysctls = f
            .iter()
            .find(|f| f.rule.ends_with("sysctls"))
            .expect("sysctls");
        assert!(
            sysctls.message.contains("kernel.msgmax"),
            "{}",
            sysctls.message
        );
        assert!(!sysctls.message.contains("shm_rmid"), "{}", sysctls.message);
        let selinux = f
            .iter()
            .find(|f| f.rule.ends_with("seLinuxOptions"))
            .expect("selinux");
        assert_eq!(selinux.container.as_deref(), Some("init"));
        assert!(
            selinux.message.contains("\"spc_t\"")
                && selinux.message.contains("role may not be set"),
            "{}",
            selinux.message
        );
    }

    #[test]
    fn warn_and_audit_levels_add_findings_that_do_not_refuse() {
        let pod = json!({"spec": {"containers": [{"name": "app"}]}});
        let modes = Modes {
            enforce: Some(Level::Baseline),
            warn: Some(Level::Restricted),
            audit: Some(Level::Baseline),
        };
        let f = check_modes(&pod, &modes);
        assert!(!f.is_empty());
        assert!(f.iter().all(|f| f.check == WARN_CHECK), "{f:?}");
        assert!(f[0].message.ends_with("(admitted with a warning)"), "{f:?}");
        // An enforced restricted level already refuses what a restricted warn would say.
        let modes = Modes {
            enforce: Some(Level::Restricted),
            warn: Some(Level::Restricted),
            audit: None,
        };
        let f = check_modes(&pod, &modes);
        assert!(
            !f.is_empty() && f.iter().all(|f| f.check == "pod-security"),
            "{f:?}"
        );
        assert!(check_modes(&pod, &Modes::default()).is_empty());
    }
}
