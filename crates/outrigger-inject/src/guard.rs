//! Fail-safe rules for the configuration in force: whether a configuration can inject pods at
//! all, and whether a new one may replace the one serving.
//!
//! An injector that loads a configuration without templates (an empty file read in the middle of
//! a `cp`, a truncated ConfigMap) admits every pod without a sidecar; one whose templates fail
//! refuses every pod. Neither shows until pods are created. The rules here catch both at load:
//!
//! * [`assess`] renders the default templates for a probe pod and reports why the configuration
//!   cannot inject (no templates, a default template missing, rendering fails, no `istio-proxy`).
//! * [`replacement`] refuses a new configuration that cannot inject where the one in force can.
//! * [`document_change`] refuses a document that disappeared or became empty where the one in
//!   force had content: a missing or empty values or mesh document silently means "defaults".
//!
//! The caller keeps the last good configuration when a rule refuses, and decides what to do
//! with an unusable configuration at start-up (the webhook reports itself not ready).

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::config::Snapshot;
use crate::ingest::workload::WorkloadMeta;
use crate::inject::{self, InjectParams, Mode};
use crate::kube::names::PROXY_CONTAINER;

/// Why a configuration cannot inject pods.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unusable {
    /// The injector config has no templates (an empty or truncated document, or no `templates`).
    #[error("the injector config defines no templates")]
    NoTemplates,
    /// A default template (after alias expansion) is not defined.
    #[error("default template {name:?} is not defined (have {have})")]
    MissingTemplate {
        /// The missing name.
        name: String,
        /// The defined names, comma-separated.
        have: String,
    },
    /// The default templates fail for a plain pod (every injection would fail).
    #[error("the default templates fail for a probe pod: {0}")]
    RenderFails(String),
    /// The default templates render no `istio-proxy` container for a plain pod.
    #[error("the default templates add no {PROXY_CONTAINER} container to a probe pod")]
    NoProxy,
}

/// Why a new configuration does not replace the one in force.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// A document the configuration in force was read from is gone.
    #[error("the {0} document disappeared; the configuration in force had one")]
    Disappeared(&'static str),
    /// A document the configuration in force was read from is now empty.
    #[error("the {0} document is empty (truncated?); the configuration in force had content")]
    Emptied(&'static str),
    /// The new configuration cannot inject pods, the one in force can.
    #[error("{0}; the configuration in force injects pods")]
    Unusable(Unusable),
}

/// A plain pod: one container, no annotations, nothing to skip.
fn probe_pod() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "outrigger-config-probe", "namespace": "default"},
        "spec": {"containers": [{"name": "app", "image": "probe"}]}
    })
}

fn has_proxy(pod: &Value) -> bool {
    ["containers", "initContainers"].iter().any(|list| {
        pod.pointer(&format!("/spec/{list}"))
            .and_then(Value::as_array)
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c.get("name").and_then(Value::as_str) == Some(PROXY_CONTAINER))
            })
    })
}

/// Whether `snapshot` can inject pods: its default templates exist and, rendered for a plain pod
/// (`native_sidecars` as the caller injects), add an `istio-proxy` container. The injection
/// policy and selectors are not consulted: `policy: disabled` with working templates is usable.
pub fn assess(snapshot: &Snapshot, native_sidecars: bool) -> Result<(), Unusable> {
    let config = &snapshot.config;
    if config.templates.is_empty() {
        return Err(Unusable::NoTemplates);
    }
    let pod = probe_pod();
    for name in crate::render::select_templates(snapshot, &pod) {
        if !config.templates.contains_key(&name) {
            let have: Vec<&str> = config.templates.keys().map(String::as_str).collect();
            return Err(Unusable::MissingTemplate {
                name,
                have: have.join(", "),
            });
        }
    }
    let params = InjectParams {
        snapshot,
        mode: Mode::Webhook,
        workload: WorkloadMeta {
            kind: "Pod".into(),
            api_version: "v1".into(),
            name: "outrigger-config-probe".into(),
            namespace: "default".into(),
        },
        revision: "",
        native_sidecars,
        proxy_envs: BTreeMap::new(),
        proxy_uid_gid: None,
        compliance_policy: "",
    };
    let injected = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        inject::inject_pod(&pod, &params)
    }))
    .map_err(|_| Unusable::RenderFails("the pipeline panicked".into()))?
    .map_err(|e| Unusable::RenderFails(e.to_string()))?;
    if has_proxy(&injected.pod) {
        Ok(())
    } else {
        Err(Unusable::NoProxy)
    }
}

/// Whether a configuration assessed `new` may replace one assessed `current`: anything may
/// replace an unusable configuration; an unusable one never replaces a usable one.
pub fn replacement(
    current: &Result<(), Unusable>,
    new: &Result<(), Unusable>,
) -> Result<(), Refusal> {
    match (current, new) {
        (Ok(()), Err(why)) => Err(Refusal::Unusable(why.clone())),
        _ => Ok(()),
    }
}

/// Whether one document (`config`, `values`, `mesh`) may change from `current` to `new`
/// (`None`: absent). A document that disappears, or becomes empty (whitespace only), where the
/// configuration in force had content is refused: both mean "defaults" to the parsers, and both
/// are what a reader sees in the middle of a truncate-then-write or after a deletion.
pub fn document_change(
    name: &'static str,
    current: Option<&str>,
    new: Option<&str>,
) -> Result<(), Refusal> {
    let had_content = current.is_some_and(|t| !t.trim().is_empty());
    match new {
        None if current.is_some() => Err(Refusal::Disappeared(name)),
        Some(t) if had_content && t.trim().is_empty() => Err(Refusal::Emptied(name)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::defaults;

    fn snap(config: &str, values: &str) -> Snapshot {
        Snapshot::load(config, values, Some(defaults::MESH)).expect("loads")
    }

    #[test]
    fn the_embedded_default_is_usable() {
        let s = snap(defaults::CONFIG, defaults::VALUES);
        assert_eq!(assess(&s, false), Ok(()));
        assert_eq!(
            assess(&s, true),
            Ok(()),
            "native: istio-proxy in initContainers"
        );
    }

    #[test]
    fn unusable_configurations_say_why() {
        assert_eq!(assess(&snap("", "{}"), false), Err(Unusable::NoTemplates));
        assert_eq!(
            assess(&snap("policy: disabled\n", "{}"), false),
            Err(Unusable::NoTemplates)
        );
        let missing = snap(
            "defaultTemplates: [sidecar, extra]\ntemplates:\n  sidecar: |\n    spec: {}\n",
            "{}",
        );
        assert_eq!(
            assess(&missing, false),
            Err(Unusable::MissingTemplate {
                name: "extra".into(),
                have: "sidecar".into()
            })
        );
        let aliased = snap(
            "aliases: {sidecar: [a]}\ntemplates:\n  a: |\n    spec:\n      containers:\n      - name: istio-proxy\n        image: x\n",
            "{}",
        );
        assert_eq!(assess(&aliased, false), Ok(()), "aliases expand");
        let no_proxy = snap(
            "templates:\n  sidecar: |\n    metadata:\n      labels: {a: b}\n",
            "{}",
        );
        assert_eq!(assess(&no_proxy, false), Err(Unusable::NoProxy));
        let failing = snap(
            "templates:\n  sidecar: |\n    image: {{ .Values.global.proxy.image }}\n",
            "{\"global\": {\"proxy\": null}}",
        );
        let e = assess(&failing, false).expect_err("nil map");
        assert!(
            matches!(&e, Unusable::RenderFails(m) if m.contains("nil pointer evaluating interface {}.image")),
            "{e}"
        );
    }

    #[test]
    fn policy_disabled_with_templates_is_usable() {
        let config = defaults::CONFIG.replacen("policy: enabled", "policy: disabled", 1);
        assert_ne!(config, defaults::CONFIG);
        assert_eq!(assess(&snap(&config, defaults::VALUES), false), Ok(()));
    }

    #[test]
    fn replacement_keeps_a_usable_configuration() {
        let ok = Ok(());
        let bad = Err(Unusable::NoTemplates);
        assert_eq!(replacement(&ok, &ok), Ok(()));
        assert_eq!(replacement(&bad, &ok), Ok(()));
        assert_eq!(replacement(&bad, &bad), Ok(()), "nothing usable to protect");
        let e = replacement(&ok, &bad).expect_err("refused");
        assert_eq!(
            e.to_string(),
            "the injector config defines no templates; the configuration in force injects pods"
        );
    }

    #[test]
    fn documents_may_not_vanish_or_empty() {
        assert_eq!(document_change("mesh", None, None), Ok(()));
        assert_eq!(document_change("mesh", None, Some("a: b")), Ok(()));
        assert_eq!(document_change("mesh", Some("a: b"), Some("c: d")), Ok(()));
        assert_eq!(document_change("mesh", Some(""), Some("")), Ok(()));
        assert_eq!(document_change("mesh", Some(" \n"), Some("")), Ok(()));
        assert_eq!(
            document_change("mesh", Some("a: b"), None),
            Err(Refusal::Disappeared("mesh"))
        );
        assert_eq!(
            document_change("values", Some("{}"), Some("\n")),
            Err(Refusal::Emptied("values"))
        );
        assert_eq!(
            Refusal::Emptied("values").to_string(),
            "the values document is empty (truncated?); the configuration in force had content"
        );
    }
}
