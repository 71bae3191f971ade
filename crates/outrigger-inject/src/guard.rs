//! Fail-safe rules for the configuration in force: whether a configuration can inject pods at
//! all, and whether a new one may replace the one serving.
//!
//! An injector that loads a configuration without templates (an empty file read in the middle of
//! a `cp`, a truncated ConfigMap) admits every pod without a sidecar; one whose templates fail
//! refuses every pod. Neither shows until pods are created. The rules here catch both at load:
//!
//! * [`assess`] renders the default templates for a probe pod and reports what they add (the
//!   containers and init containers), or why the configuration cannot inject: no templates, a
//!   default template missing, rendering fails, nothing added, or a pod the API server would
//!   refuse; or a template calls what outrigger does not implement ([`crate::unsupported`],
//!   checked in every template, since a pod may ask for any). No sidecar is special: Istio's `istio-proxy`, a log shipper and Istio's own test
//!   template (one container named `injected`) are judged alike.
//! * [`replacement`] refuses a new configuration that cannot inject where the one in force can,
//!   and one that adds none of the containers the one in force adds (a different ConfigMap
//!   read by mistake), naming what went missing.
//! * [`document_change`] refuses a document that disappeared or became empty where the one in
//!   force had content: a missing or empty values or mesh document silently means "defaults".
//!
//! The caller keeps the last good configuration when a rule refuses, and decides what to do
//! with an unusable configuration at start-up (the webhook reports itself not ready).

use serde_json::{json, Value};

use crate::config::Snapshot;
use crate::ingest::workload::WorkloadMeta;
use crate::inject::{self, Mode, Settings};
use crate::unsupported::{template_findings, Finding};

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
    /// The default templates add no container and no init container to a plain pod.
    #[error("the default templates add no container or init container to a probe pod")]
    NoContainer,
    /// The injected probe pod breaks a rule the API server enforces on every pod.
    #[error("the default templates make a probe pod the API server would refuse: {0}")]
    Invalid(String),
    /// A template calls what outrigger does not implement (a newer Istio's templates): pods
    /// reaching the call would fail, so the configuration is refused as a whole, naming each use
    /// ([`crate::unsupported`]).
    #[error("the templates use what outrigger does not implement: {}", join_findings(.0))]
    Unsupported(Vec<Finding>),
}

fn join_findings(found: &[Finding]) -> String {
    found
        .iter()
        .map(Finding::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// What a usable configuration adds to a plain pod, by container name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Adds {
    /// Names of the containers the default templates add, in pod order.
    pub containers: Vec<String>,
    /// Names of the init containers the default templates add, in pod order.
    pub init_containers: Vec<String>,
}

impl Adds {
    /// Every added name, containers then init containers.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.containers
            .iter()
            .chain(&self.init_containers)
            .map(String::as_str)
    }

    /// Whether nothing is added.
    pub fn is_empty(&self) -> bool {
        self.containers.is_empty() && self.init_containers.is_empty()
    }
}

impl std::fmt::Display for Adds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |names: &[String]| names.join(", ");
        match (self.containers.is_empty(), self.init_containers.is_empty()) {
            (true, true) => f.write_str("nothing"),
            (false, true) => write!(f, "containers {}", list(&self.containers)),
            (true, false) => write!(f, "init containers {}", list(&self.init_containers)),
            (false, false) => write!(
                f,
                "containers {}; init containers {}",
                list(&self.containers),
                list(&self.init_containers)
            ),
        }
    }
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
    /// The new configuration adds none of the containers the one in force adds.
    #[error("the new configuration adds none of what the configuration in force adds to a probe pod (missing: {missing}; it adds {adds} instead)")]
    Lost {
        /// Every name the configuration in force adds, comma-separated.
        missing: String,
        /// What the new configuration adds.
        adds: Adds,
    },
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

/// The names of the entries of `list` (`containers`, `initContainers`) in `pod`.
fn names<'a>(pod: &'a Value, list: &str) -> Vec<&'a str> {
    pod.get("spec")
        .and_then(|s| s.get(list))
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .map(|c| c.get("name").and_then(Value::as_str).unwrap_or(""))
                .collect()
        })
        .unwrap_or_default()
}

/// What `injected` adds to `probe` by container name, checked against the rules the API server
/// applies to every pod's containers: a non-empty name, unique across containers and init
/// containers, and an image.
fn added(probe: &Value, injected: &Value) -> Result<Adds, Unusable> {
    let mut seen = std::collections::BTreeSet::new();
    let mut adds = Adds::default();
    for (list, into) in [
        ("initContainers", &mut adds.init_containers),
        ("containers", &mut adds.containers),
    ] {
        let before = names(probe, list);
        let entries = injected
            .get("spec")
            .and_then(|s| s.get(list))
            .and_then(Value::as_array);
        for (i, c) in entries.into_iter().flatten().enumerate() {
            let name = c.get("name").and_then(Value::as_str).unwrap_or("");
            if name.is_empty() {
                return Err(Unusable::Invalid(format!(
                    "spec.{list}[{i}].name: Required value"
                )));
            }
            if !seen.insert(name.to_string()) {
                return Err(Unusable::Invalid(format!(
                    "spec.{list}[{i}].name: Duplicate value: {name:?}"
                )));
            }
            if before.contains(&name) {
                continue;
            }
            if c.get("image")
                .and_then(Value::as_str)
                .unwrap_or("")
                .is_empty()
            {
                return Err(Unusable::Invalid(format!(
                    "spec.{list}[{i}].image: Required value (container {name:?})"
                )));
            }
            into.push(name.to_string());
        }
    }
    if adds.is_empty() {
        return Err(Unusable::NoContainer);
    }
    Ok(adds)
}

/// Whether `snapshot` can inject pods: its default templates exist and, rendered for a plain pod
/// (`native_sidecars` as the caller injects), add at least one container or init container and
/// give a pod the API server accepts (the pipeline's typed round-trip, container names present
/// and unique, images set). Returns what they add. The injection policy and selectors are not
/// consulted: `policy: disabled` with working templates is usable.
pub fn assess(snapshot: &Snapshot, native_sidecars: bool) -> Result<Adds, Unusable> {
    let config = &snapshot.config;
    if config.templates.is_empty() {
        return Err(Unusable::NoTemplates);
    }
    let unsupported = template_findings(&config.templates);
    if !unsupported.is_empty() {
        return Err(Unusable::Unsupported(unsupported));
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
    let settings = Settings {
        snapshot,
        revision: "",
        native_sidecars,
        compliance_policy: "",
    };
    let workload = WorkloadMeta {
        kind: "Pod".into(),
        api_version: "v1".into(),
        name: "outrigger-config-probe".into(),
        namespace: "default".into(),
    };
    let params = settings.params(Mode::Webhook, workload);
    let injected = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        inject::inject_pod(&pod, &params)
    }))
    .map_err(|_| Unusable::RenderFails("the pipeline panicked".into()))?
    .map_err(|e| Unusable::RenderFails(e.to_string()))?;
    added(&pod, &injected.pod)
}

/// Whether a configuration assessed `new` may replace one assessed `current`: anything may
/// replace an unusable configuration; an unusable one never replaces a usable one, nor does one
/// that adds none of the containers the one in force adds (keeping any one of them, or adding
/// more, is a change; losing all of them is another sidecar altogether, which takes a restart).
pub fn replacement(
    current: &Result<Adds, Unusable>,
    new: &Result<Adds, Unusable>,
) -> Result<(), Refusal> {
    match (current, new) {
        (Ok(_), Err(why)) => Err(Refusal::Unusable(why.clone())),
        (Ok(old), Ok(adds))
            if !old.is_empty() && !old.names().any(|n| adds.names().any(|m| m == n)) =>
        {
            Err(Refusal::Lost {
                missing: old.names().collect::<Vec<_>>().join(", "),
                adds: adds.clone(),
            })
        }
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

    fn adds(containers: &[&str], init: &[&str]) -> Adds {
        Adds {
            containers: containers.iter().map(|s| s.to_string()).collect(),
            init_containers: init.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn the_embedded_default_is_usable() {
        let s = snap(defaults::CONFIG, defaults::VALUES);
        assert_eq!(
            assess(&s, false),
            Ok(adds(&["istio-proxy"], &["istio-init"]))
        );
        assert_eq!(
            assess(&s, true),
            Ok(adds(&[], &["istio-init", "istio-proxy"])),
            "native: istio-proxy in initContainers"
        );
    }

    #[test]
    fn checking_the_embedded_default_takes_little_work() {
        let s = snap(defaults::CONFIG, defaults::VALUES);
        let budget = crate::work::Budget::new(None);
        let verdict = crate::work::scope(&budget, || assess(&s, false));
        assert!(verdict.is_ok());
        // serve's configuration check allows 4,000,000 (serve::failsafe::CHECK_WORK).
        assert!(budget.work() < 100_000, "{}", budget.work());
    }

    #[test]
    fn any_sidecar_is_usable() {
        let shipper = snap(
            include_str!("../../../examples/custom-template/config.yaml"),
            include_str!("../../../examples/custom-template/values.yaml"),
        );
        assert_eq!(assess(&shipper, false), Ok(adds(&["log-shipper"], &[])));
        let strategic = snap(
            include_str!("../../../tests/fixtures/configs/strategic-merge/config.yaml"),
            include_str!("../../../tests/fixtures/configs/strategic-merge/values.json"),
        );
        assert_eq!(assess(&strategic, false), Ok(adds(&["injected"], &[])));
        let init_only = snap(
            "templates:\n  sidecar: |\n    spec:\n      initContainers:\n      - name: setup\n        image: x\n",
            "{}",
        );
        assert_eq!(assess(&init_only, false), Ok(adds(&[], &["setup"])));
    }

    #[test]
    fn unusable_configurations_say_why() {
        assert_eq!(assess(&snap("", "{}"), false), Err(Unusable::NoTemplates));
        assert_eq!(
            assess(&snap("policy: disabled\n", "{}"), false),
            Err(Unusable::NoTemplates)
        );
        // Values passed where the injector config belongs: no templates.
        assert_eq!(
            assess(&snap(defaults::VALUES, "{}"), false),
            Err(Unusable::NoTemplates)
        );
        assert_eq!(assess(&snap("{}", "{}"), false), Err(Unusable::NoTemplates));
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
        assert_eq!(
            assess(&aliased, false),
            Ok(adds(&["istio-proxy"], &[])),
            "aliases expand"
        );
        let labels_only = snap(
            "templates:\n  sidecar: |\n    metadata:\n      labels: {a: b}\n",
            "{}",
        );
        assert_eq!(assess(&labels_only, false), Err(Unusable::NoContainer));
        let nothing = snap("templates:\n  sidecar: \"\"\n", "{}");
        assert_eq!(assess(&nothing, false), Err(Unusable::NoContainer));
        let failing = snap(
            "templates:\n  sidecar: |\n    image: {{ .Values.global.proxy.image }}\n",
            "{\"global\": {\"proxy\": null}}",
        );
        let e = assess(&failing, false).expect_err("nil map");
        assert!(
            matches!(&e, Unusable::RenderFails(m) if m.contains("nil pointer evaluating interface {}.image")),
            "{e}"
        );
        // Wrong-typed values never get this far: the typed values model refuses them at load,
        // so a reload keeps the configuration in force.
        let wrong = Snapshot::load(
            defaults::CONFIG,
            "{\"global\": {\"proxy\": \"x\"}}",
            Some(defaults::MESH),
        );
        assert!(wrong.is_err());
    }

    #[test]
    fn a_template_calling_what_outrigger_lacks_is_unusable_and_named() {
        // The call sits in a template the probe pod never renders: still refused, named.
        let config = format!(
            "{}\n  rare: |\n    metadata:\n      annotations:\n        id: {{{{ uuidv4 }}}}\n",
            defaults::CONFIG.trim_end()
        );
        let s = snap(&config, defaults::VALUES);
        let e = assess(&s, false).expect_err("refused");
        assert!(
            matches!(&e, Unusable::Unsupported(f) if f.len() == 1 && f[0].template == "rare" && f[0].line == 3),
            "{e:?}"
        );
        assert!(
            e.to_string().starts_with(
                "the templates use what outrigger does not implement: template \"rare\" line 3 calls Sprig function \"uuidv4\""
            ),
            "{e}"
        );
        let proxy = Ok(adds(&["istio-proxy"], &["istio-init"]));
        assert!(
            replacement(&proxy, &Err(e)).is_err(),
            "a reload keeps the last good"
        );
    }

    #[test]
    fn pods_the_api_server_refuses_are_unusable() {
        let no_image = snap(
            "templates:\n  sidecar: |\n    spec:\n      containers:\n      - name: shipper\n",
            "{}",
        );
        assert_eq!(
            assess(&no_image, false),
            Err(Unusable::Invalid(
                "spec.containers[0].image: Required value (container \"shipper\")".into()
            ))
        );
        let init_without_image = snap(
            "templates:\n  sidecar: |\n    spec:\n      initContainers:\n      - name: shipper\n",
            "{}",
        );
        assert_eq!(
            assess(&init_without_image, false),
            Err(Unusable::Invalid(
                "spec.initContainers[0].image: Required value (container \"shipper\")".into()
            )),
            "an added init container needs an image too"
        );
        let duplicate = snap(
            "templates:\n  sidecar: |\n    spec:\n      initContainers:\n      - name: app\n        image: x\n",
            "{}",
        );
        assert_eq!(
            assess(&duplicate, false),
            Err(Unusable::Invalid(
                "spec.containers[0].name: Duplicate value: \"app\"".into()
            ))
        );
        let typed = snap(
            "templates:\n  sidecar: |\n    spec:\n      containers:\n      - name: s\n        image: x\n        ports: 7\n",
            "{}",
        );
        assert!(
            matches!(assess(&typed, false), Err(Unusable::RenderFails(_))),
            "{:?}",
            assess(&typed, false)
        );
    }

    #[test]
    fn policy_disabled_with_templates_is_usable() {
        let config = defaults::CONFIG.replacen("policy: enabled", "policy: disabled", 1);
        assert_ne!(config, defaults::CONFIG);
        assert!(assess(&snap(&config, defaults::VALUES), false).is_ok());
    }

    #[test]
    fn replacement_keeps_a_usable_configuration() {
        let proxy = Ok(adds(&["istio-proxy"], &["istio-init"]));
        let bad = Err(Unusable::NoTemplates);
        assert_eq!(replacement(&proxy, &proxy), Ok(()));
        assert_eq!(replacement(&bad, &proxy), Ok(()));
        assert_eq!(replacement(&bad, &bad), Ok(()), "nothing usable to protect");
        assert_eq!(
            replacement(&Ok(Adds::default()), &proxy),
            Ok(()),
            "nothing added to lose"
        );
        let e = replacement(&proxy, &bad).expect_err("refused");
        assert_eq!(
            e.to_string(),
            "the injector config defines no templates; the configuration in force injects pods"
        );
        // Keeping one of the containers, or moving it between lists (native sidecars), is a change.
        let native = Ok(adds(&[], &["istio-init", "istio-proxy"]));
        assert_eq!(replacement(&proxy, &native), Ok(()));
        let plus = Ok(adds(&["istio-proxy", "log-shipper"], &[]));
        assert_eq!(replacement(&proxy, &plus), Ok(()));
        // Losing every one of them is refused, naming what went missing.
        let other = Ok(adds(&["log-shipper"], &[]));
        let e = replacement(&proxy, &other).expect_err("every container lost");
        assert_eq!(
            e.to_string(),
            "the new configuration adds none of what the configuration in force adds to a probe pod (missing: istio-proxy, istio-init; it adds containers log-shipper instead)"
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
