//! Whether a pod gets a sidecar, with a reason code for every outcome.
//!
//! Implements Istio's `injectRequired`, its checks evaluated in order (host network, ignored
//! namespaces, the pod's label or annotation, `neverInjectSelector` / `alwaysInjectSelector`
//! with Kubernetes label selector semantics, then the policy). The decision is pure:
//! log lines the reference would write are returned as [`Decision::warnings`] for the caller.

pub mod annotations;
pub mod explain;
pub mod match_conditions;
pub mod native;
pub mod openshift;
pub mod selection;

use serde_json::{Map, Value};

use crate::config::Policy;
use crate::json::lookup as jsonmap;
use crate::kube::names::INJECT_KEY;
use crate::kube::selector::{label_text, LabelSelector};

/// Namespaces whose pods are never injected (`kube-system`, `kube-public`, ...).
pub const IGNORED_NAMESPACES: [&str; 4] = [
    "kube-system",
    "kube-public",
    "kube-node-lease",
    "local-path-storage",
];

/// Why a pod is or is not injected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    /// `spec.hostNetwork` is true.
    HostNetwork,
    /// The pod's namespace is in [`IGNORED_NAMESPACES`].
    IgnoredNamespace,
    /// Label `sidecar.istio.io/inject="false"`.
    LabelDisabled,
    /// Annotation `sidecar.istio.io/inject="false"`.
    AnnotationDisabled,
    /// A `neverInjectSelector` entry matched the pod's labels.
    NeverInjectSelector,
    /// Policy `disabled` and no explicit request.
    PolicyDisabled,
    /// The policy is neither `enabled` nor `disabled`.
    PolicyInvalid,
    /// Label `sidecar.istio.io/inject="true"`.
    LabelEnabled,
    /// Annotation `sidecar.istio.io/inject="true"`.
    AnnotationEnabled,
    /// An `alwaysInjectSelector` entry matched the pod's labels.
    AlwaysInjectSelector,
    /// Policy `enabled` and no explicit request.
    PolicyEnabled,
}

/// The steps of the decision, in the order [`inject_required`] takes them: the first that
/// decides ends it. [`explain`] reports them in this order, and [`match_conditions`] expresses the
/// first three as CEL. Steps order as they are taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum DecisionStep {
    /// `spec.hostNetwork` is true: never injected.
    HostNetwork,
    /// The namespace is one of [`IGNORED_NAMESPACES`]: never injected.
    IgnoredNamespace,
    /// The `sidecar.istio.io/inject` label, else annotation.
    InjectLabelOrAnnotation,
    /// The first matching `neverInjectSelector`.
    NeverInjectSelector,
    /// The first matching `alwaysInjectSelector`.
    AlwaysInjectSelector,
    /// The injector policy.
    Policy,
}

impl DecisionStep {
    /// Every step, in order.
    pub const ALL: [DecisionStep; 6] = [
        DecisionStep::HostNetwork,
        DecisionStep::IgnoredNamespace,
        DecisionStep::InjectLabelOrAnnotation,
        DecisionStep::NeverInjectSelector,
        DecisionStep::AlwaysInjectSelector,
        DecisionStep::Policy,
    ];

    /// The step's name in `outrigger check` (`hostNetwork`, `injectLabelOrAnnotation`, ...).
    pub fn name(self) -> &'static str {
        match self {
            DecisionStep::HostNetwork => "hostNetwork",
            DecisionStep::IgnoredNamespace => "ignoredNamespace",
            DecisionStep::InjectLabelOrAnnotation => "injectLabelOrAnnotation",
            DecisionStep::NeverInjectSelector => "neverInjectSelector",
            DecisionStep::AlwaysInjectSelector => "alwaysInjectSelector",
            DecisionStep::Policy => "policy",
        }
    }
}

impl Reason {
    /// The step that decides with this reason.
    pub fn step(self) -> DecisionStep {
        match self {
            Reason::HostNetwork => DecisionStep::HostNetwork,
            Reason::IgnoredNamespace => DecisionStep::IgnoredNamespace,
            Reason::LabelDisabled
            | Reason::LabelEnabled
            | Reason::AnnotationDisabled
            | Reason::AnnotationEnabled => DecisionStep::InjectLabelOrAnnotation,
            Reason::NeverInjectSelector => DecisionStep::NeverInjectSelector,
            Reason::AlwaysInjectSelector => DecisionStep::AlwaysInjectSelector,
            Reason::PolicyEnabled | Reason::PolicyDisabled | Reason::PolicyInvalid => {
                DecisionStep::Policy
            }
        }
    }

    /// snake_case code used in metrics labels, logs and `explain` output.
    pub fn code(&self) -> &'static str {
        match self {
            Reason::HostNetwork => "host_network",
            Reason::IgnoredNamespace => "ignored_namespace",
            Reason::LabelDisabled => "label_disabled",
            Reason::AnnotationDisabled => "annotation_disabled",
            Reason::NeverInjectSelector => "never_inject_selector",
            Reason::PolicyDisabled => "policy_disabled",
            Reason::PolicyInvalid => "policy_invalid",
            Reason::LabelEnabled => "label_enabled",
            Reason::AnnotationEnabled => "annotation_enabled",
            Reason::AlwaysInjectSelector => "always_inject_selector",
            Reason::PolicyEnabled => "policy_enabled",
        }
    }
}

/// Outcome of [`inject_required`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Whether the sidecar is injected.
    pub inject: bool,
    /// The deciding input.
    pub reason: Reason,
    /// Human sentence naming the deciding input.
    pub message: String,
    /// Istio's warning/error log texts produced while deciding (invalid inject value, invalid
    /// selectors, illegal policy).
    pub warnings: Vec<String>,
}

/// An explicit request found on the pod (its `sidecar.istio.io/inject` label, else annotation).
struct Explicit {
    inject: bool,
    reason: Reason,
    what: String,
}

/// Istio's `injectRequired`: decide whether `pod` must be injected under `policy` and the config selectors.
pub fn inject_required(
    pod: &Value,
    policy: &Policy,
    never: &[LabelSelector],
    always: &[LabelSelector],
) -> Decision {
    let mut warnings = Vec::new();
    if jsonmap::path(pod, &["spec", "hostNetwork"]) == Some(&Value::Bool(true)) {
        return decided(
            false,
            Reason::HostNetwork,
            "spec.hostNetwork is true".into(),
            warnings,
        );
    }
    let namespace = jsonmap::path(pod, &["metadata", "namespace"])
        .and_then(Value::as_str)
        .unwrap_or("");
    if IGNORED_NAMESPACES.contains(&namespace) {
        let msg = format!("namespace {namespace:?} is ignored by the injector");
        return decided(false, Reason::IgnoredNamespace, msg, warnings);
    }
    let empty = Map::new();
    let labels = jsonmap::path(pod, &["metadata", "labels"])
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let explicit = object_selector(pod, labels, &mut warnings)
        .or_else(|| selector_match(labels, never, false))
        .or_else(|| selector_match(labels, always, true));
    apply_policy(policy, explicit, warnings)
}

fn decided(inject: bool, reason: Reason, message: String, warnings: Vec<String>) -> Decision {
    Decision {
        inject,
        reason,
        message,
        warnings,
    }
}

/// Steps 3–4: the label (if present) else the annotation `sidecar.istio.io/inject`.
fn object_selector(
    pod: &Value,
    labels: &Map<String, Value>,
    warnings: &mut Vec<String>,
) -> Option<Explicit> {
    let annotation =
        jsonmap::path(pod, &["metadata", "annotations"]).and_then(|a| a.get(INJECT_KEY));
    let (value, source) = match labels.get(INJECT_KEY) {
        Some(v) => (label_text(v), "label"),
        None => (annotation.map(label_text).unwrap_or_default(), "annotation"),
    };
    let inject = match value.as_str() {
        "true" => true,
        "false" => false,
        "" => return None,
        other => {
            warnings.push(format!(
                "Invalid value for {INJECT_KEY}: {other:?}. Only 'true' and 'false' are accepted. Falling back to default injection policy."
            ));
            return None;
        }
    };
    let reason = match (source, inject) {
        ("label", true) => Reason::LabelEnabled,
        ("label", false) => Reason::LabelDisabled,
        (_, true) => Reason::AnnotationEnabled,
        (_, false) => Reason::AnnotationDisabled,
    };
    Some(Explicit {
        inject,
        reason,
        what: format!("{source} {INJECT_KEY}={value:?}"),
    })
}

/// The first non-empty selector matching `labels`, with its index: how Istio reads
/// `neverInjectSelector` and `alwaysInjectSelector` (an empty selector matches nothing).
pub fn first_match<'s>(
    selectors: &'s [LabelSelector],
    labels: &Map<String, Value>,
) -> Option<(usize, &'s LabelSelector)> {
    selectors
        .iter()
        .enumerate()
        .find(|(_, s)| !s.is_empty() && s.matches(labels))
}

/// Steps 5–6: the first non-empty selector matching the pod's labels.
fn selector_match(
    labels: &Map<String, Value>,
    selectors: &[LabelSelector],
    inject: bool,
) -> Option<Explicit> {
    let (name, reason) = if inject {
        ("alwaysInjectSelector", Reason::AlwaysInjectSelector)
    } else {
        ("neverInjectSelector", Reason::NeverInjectSelector)
    };
    first_match(selectors, labels).map(|(i, s)| Explicit {
        inject,
        reason,
        what: format!("{name}[{i}] ({s}) matching the pod labels"),
    })
}

/// Convert config selector entries, returning the valid ones and Istio's warning for each
/// invalid entry (`Invalid selector for NeverInjectSelector: <selector> (<err>)`).
pub fn parse_selectors(entries: &[Value], always: bool) -> (Vec<LabelSelector>, Vec<String>) {
    let kind = if always {
        "AlwaysInjectSelector"
    } else {
        "NeverInjectSelector"
    };
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    for e in entries {
        match LabelSelector::from_json(e) {
            Ok(s) => out.push(s),
            Err(err) => warnings.push(format!("Invalid selector for {kind}: {e} ({err})")),
        }
    }
    (out, warnings)
}

/// Step 7: combine the policy with an explicit request.
fn apply_policy(
    policy: &Policy,
    explicit: Option<Explicit>,
    mut warnings: Vec<String>,
) -> Decision {
    match (policy, explicit) {
        (Policy::Invalid(p), explicit) => {
            warnings.push(format!(
                "Illegal value for autoInject:{p}, must be one of [disabled,enabled]. Auto injection disabled!"
            ));
            let ignored = explicit
                .map(|e| format!(" ({} ignored)", e.what))
                .unwrap_or_default();
            let msg = format!("injector policy {p:?} is invalid, injection disabled{ignored}");
            decided(false, Reason::PolicyInvalid, msg, warnings)
        }
        (_, Some(e)) => {
            let verb = if e.inject { "enabled" } else { "disabled" };
            let msg = format!("injection explicitly {verb} by {}", e.what);
            decided(e.inject, e.reason, msg, warnings)
        }
        (Policy::Enabled, None) => {
            let msg = "injector policy \"enabled\" applies by default".to_string();
            decided(true, Reason::PolicyEnabled, msg, warnings)
        }
        (Policy::Disabled, None) => {
            let msg = "injector policy \"disabled\" applies by default".to_string();
            decided(false, Reason::PolicyDisabled, msg, warnings)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sel(v: Value) -> LabelSelector {
        LabelSelector::from_json(&v).expect("valid selector")
    }

    fn pod(labels: Value, annotations: Value) -> Value {
        json!({"metadata": {"name": "p", "namespace": "default", "labels": labels, "annotations": annotations},
               "spec": {"containers": [{"name": "app"}]}})
    }

    #[test]
    fn host_network_is_never_injected() {
        let mut p = pod(json!({"sidecar.istio.io/inject": "true"}), json!({}));
        p["spec"]["hostNetwork"] = json!(true);
        let d = inject_required(&p, &Policy::Enabled, &[], &[]);
        assert!(!d.inject);
        assert_eq!(d.reason, Reason::HostNetwork);
        assert_eq!(d.reason.code(), "host_network");
    }

    #[test]
    fn host_network_false_does_not_skip() {
        let mut p = pod(json!({}), json!({}));
        p["spec"]["hostNetwork"] = json!(false);
        let d = inject_required(&p, &Policy::Enabled, &[], &[]);
        assert!(d.inject);
        assert_eq!(d.reason, Reason::PolicyEnabled);
    }

    #[test]
    fn ignored_namespaces_are_skipped_even_with_opt_in() {
        for ns in IGNORED_NAMESPACES {
            let mut p = pod(json!({"sidecar.istio.io/inject": "true"}), json!({}));
            p["metadata"]["namespace"] = json!(ns);
            let d = inject_required(&p, &Policy::Enabled, &[], &[]);
            assert!(!d.inject, "{ns}");
            assert_eq!(d.reason, Reason::IgnoredNamespace);
            assert!(d.message.contains(ns));
        }
    }

    #[test]
    fn label_wins_over_annotation() {
        let p = pod(
            json!({"sidecar.istio.io/inject": "false"}),
            json!({"sidecar.istio.io/inject": "true"}),
        );
        let d = inject_required(&p, &Policy::Enabled, &[], &[]);
        assert!(!d.inject);
        assert_eq!(d.reason, Reason::LabelDisabled);
        assert_eq!(
            d.message,
            "injection explicitly disabled by label sidecar.istio.io/inject=\"false\""
        );
        let p = pod(
            json!({"sidecar.istio.io/inject": "true"}),
            json!({"sidecar.istio.io/inject": "false"}),
        );
        let d = inject_required(&p, &Policy::Disabled, &[], &[]);
        assert!(d.inject);
        assert_eq!(d.reason, Reason::LabelEnabled);
    }

    #[test]
    fn empty_label_still_replaces_annotation() {
        let p = pod(
            json!({"sidecar.istio.io/inject": ""}),
            json!({"sidecar.istio.io/inject": "false"}),
        );
        let d = inject_required(&p, &Policy::Enabled, &[], &[]);
        assert!(d.inject);
        assert_eq!(d.reason, Reason::PolicyEnabled);
        assert!(d.warnings.is_empty());
    }

    #[test]
    fn annotation_decides_without_label() {
        let p = pod(json!({}), json!({"sidecar.istio.io/inject": "false"}));
        let d = inject_required(&p, &Policy::Enabled, &[], &[]);
        assert_eq!((d.inject, d.reason), (false, Reason::AnnotationDisabled));
        let p = pod(json!({}), json!({"sidecar.istio.io/inject": "true"}));
        let d = inject_required(&p, &Policy::Disabled, &[], &[]);
        assert_eq!((d.inject, d.reason), (true, Reason::AnnotationEnabled));
        assert!(d
            .message
            .contains("annotation sidecar.istio.io/inject=\"true\""));
    }

    #[test]
    fn invalid_value_warns_and_falls_back() {
        let p = pod(json!({"sidecar.istio.io/inject": "True"}), json!({}));
        let d = inject_required(&p, &Policy::Disabled, &[], &[]);
        assert_eq!((d.inject, d.reason), (false, Reason::PolicyDisabled));
        assert_eq!(
            d.warnings,
            vec!["Invalid value for sidecar.istio.io/inject: \"True\". Only 'true' and 'false' are accepted. Falling back to default injection policy."]
        );
        // An invalid label value still hides a valid annotation (the label always wins).
        let p = pod(
            json!({"sidecar.istio.io/inject": "yes"}),
            json!({"sidecar.istio.io/inject": "false"}),
        );
        let d = inject_required(&p, &Policy::Enabled, &[], &[]);
        assert_eq!((d.inject, d.reason), (true, Reason::PolicyEnabled));
        assert_eq!(d.warnings.len(), 1);
    }

    #[test]
    fn never_selector_disables_when_no_explicit_value() {
        let never = [sel(
            json!({"matchLabels": {"openshift.io/build.name": "x"}}),
        )];
        let p = pod(json!({"openshift.io/build.name": "x"}), json!({}));
        let d = inject_required(&p, &Policy::Enabled, &never, &[]);
        assert_eq!((d.inject, d.reason), (false, Reason::NeverInjectSelector));
        assert!(
            d.message.contains("neverInjectSelector[0]"),
            "{}",
            d.message
        );
        // explicit value beats the selector
        let p = pod(
            json!({"openshift.io/build.name": "x", "sidecar.istio.io/inject": "true"}),
            json!({}),
        );
        let d = inject_required(&p, &Policy::Enabled, &never, &[]);
        assert_eq!((d.inject, d.reason), (true, Reason::LabelEnabled));
    }

    #[test]
    fn never_selector_is_checked_before_always() {
        let s = [sel(
            json!({"matchExpressions": [{"key": "app", "operator": "Exists"}]}),
        )];
        let p = pod(json!({"app": "a"}), json!({}));
        let d = inject_required(&p, &Policy::Disabled, &s, &s);
        assert_eq!((d.inject, d.reason), (false, Reason::NeverInjectSelector));
    }

    #[test]
    fn always_selector_enables_under_disabled_policy() {
        let always = [
            sel(json!({})),
            sel(json!({"matchLabels": {"app": "b"}})),
            sel(json!({"matchLabels": {"app": "a"}})),
        ];
        let p = pod(json!({"app": "a"}), json!({}));
        let d = inject_required(&p, &Policy::Disabled, &[], &always);
        assert_eq!((d.inject, d.reason), (true, Reason::AlwaysInjectSelector));
        assert!(
            d.message.contains("alwaysInjectSelector[2] (app=a)"),
            "{}",
            d.message
        );
    }

    #[test]
    fn empty_selector_never_matches() {
        let never = [sel(json!({"matchLabels": {}})), sel(json!(null))];
        let p = pod(json!({"app": "a"}), json!({}));
        let d = inject_required(&p, &Policy::Enabled, &never, &[]);
        assert_eq!((d.inject, d.reason), (true, Reason::PolicyEnabled));
    }

    #[test]
    fn odd_pod_shapes_fall_back_to_policy() {
        for p in [
            json!(null),
            json!([]),
            json!({"metadata": {"labels": "x", "annotations": [1]}, "spec": {"hostNetwork": "true"}}),
            json!({"metadata": {"namespace": 3, "labels": {"sidecar.istio.io/inject": null}}}),
        ] {
            let d = inject_required(&p, &Policy::Enabled, &[], &[]);
            assert!(d.inject, "{p}");
        }
    }

    #[test]
    fn policy_outcomes() {
        let p = pod(json!({}), json!({}));
        let d = inject_required(&p, &Policy::Enabled, &[], &[]);
        assert_eq!((d.inject, d.reason.code()), (true, "policy_enabled"));
        let d = inject_required(&p, &Policy::Disabled, &[], &[]);
        assert_eq!((d.inject, d.reason.code()), (false, "policy_disabled"));
    }

    #[test]
    fn invalid_policy_disables_even_explicit_requests() {
        let p = pod(json!({"sidecar.istio.io/inject": "true"}), json!({}));
        for raw in ["", "Enabled", "bogus"] {
            let d = inject_required(&p, &Policy::parse(raw), &[], &[]);
            assert_eq!((d.inject, d.reason), (false, Reason::PolicyInvalid));
            assert_eq!(
                d.warnings.last().map(String::as_str),
                Some(format!("Illegal value for autoInject:{raw}, must be one of [disabled,enabled]. Auto injection disabled!").as_str())
            );
        }
    }

    #[test]
    fn policy_parse_round_trip() {
        assert_eq!(Policy::parse("enabled"), Policy::Enabled);
        assert_eq!(Policy::parse("disabled"), Policy::Disabled);
        assert_eq!(Policy::parse("x"), Policy::Invalid("x".into()));
        assert_eq!(Policy::parse("x").as_str(), "x");
    }

    #[test]
    fn reason_codes_are_distinct_snake_case() {
        let all = [
            Reason::HostNetwork,
            Reason::IgnoredNamespace,
            Reason::LabelDisabled,
            Reason::AnnotationDisabled,
            Reason::NeverInjectSelector,
            Reason::PolicyDisabled,
            Reason::PolicyInvalid,
            Reason::LabelEnabled,
            Reason::AnnotationEnabled,
            Reason::AlwaysInjectSelector,
            Reason::PolicyEnabled,
        ];
        let codes: std::collections::BTreeSet<&str> = all.iter().map(Reason::code).collect();
        assert_eq!(codes.len(), all.len());
        assert!(codes
            .iter()
            .all(|c| c.chars().all(|ch| ch.is_ascii_lowercase() || ch == '_')));
    }

    #[test]
    fn parse_selectors_reports_invalid_entries() {
        let entries = vec![
            json!({"matchLabels": {"a": "1"}}),
            json!({"matchExpressions": [{"key": "a", "operator": "Bogus"}]}),
        ];
        let (ok, warnings) = parse_selectors(&entries, false);
        assert_eq!(ok.len(), 1);
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].starts_with("Invalid selector for NeverInjectSelector: "));
        assert!(warnings[0].ends_with("(\"Bogus\" is not a valid label selector operator)"));
        let (_, w) = parse_selectors(&entries, true);
        assert!(w[0].starts_with("Invalid selector for AlwaysInjectSelector: "));
    }

    /// Every corpus input pod: injected iff its golden carries a status annotation (policy
    /// `enabled`, no selectors, as in all corpus settings).
    #[cfg_attr(
        not(corpus_present),
        ignore = "needs Istio's conformance corpus in ../shared beside the checkout"
    )]
    #[test]
    fn corpus_decisions_match_goldens() {
        use crate::testing::corpus::load_pods;
        let root = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/conformance/istio"
        );
        let Ok(index) = std::fs::read_to_string(format!("{root}/cases.json")) else {
            eprintln!("corpus not found at {root}; skipping");
            return;
        };
        let cases: Vec<Value> = serde_json::from_str(&index).expect("cases.json");
        let (mut injected, mut skipped) = (0, 0);
        for c in &cases {
            let (Some(input), Some(expected)) = (c["input"].as_str(), c["expected"].as_str())
            else {
                continue;
            };
            let golden = std::fs::read_to_string(format!("{root}/{expected}")).expect("golden");
            let want = golden.contains("sidecar.istio.io/status:");
            for pod in load_pods(&format!("{root}/{input}")).expect("input pods") {
                let d = inject_required(&pod, &Policy::Enabled, &[], &[]);
                assert_eq!(d.inject, want, "{}: {d:?}", c["name"]);
                if want {
                    injected += 1;
                } else {
                    skipped += 1;
                }
            }
        }
        eprintln!("corpus decisions: {injected} injected, {skipped} skipped");
        assert!(injected > 50 && skipped >= 3);
    }
}
