//! Whether a pod gets a sidecar, with a reason code for every outcome.
//!
//! Implements spec §2.1 (`injectRequired`, evaluated in order) and §2.2 (Kubernetes label
//! selector semantics for `neverInjectSelector` / `alwaysInjectSelector`). The decision is pure:
//! log lines the reference would write are returned as [`Decision::warnings`] for the caller.

pub mod annotations;
pub mod explain;

use serde_json::{Map, Value};

use crate::json::lookup as jsonmap;
use crate::kube::names::INJECT_KEY;

/// Namespaces whose pods are never injected (spec §0.4).
pub const IGNORED_NAMESPACES: [&str; 4] = [
    "kube-system",
    "kube-public",
    "kube-node-lease",
    "local-path-storage",
];

/// One requirement of a label selector (`key op values`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Requirement {
    key: String,
    op: Operator,
    values: Vec<String>,
}

/// Label selector operators (matchLabels entries become [`Operator::In`] with one value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

impl Operator {
    fn parse(op: &str) -> Result<Operator, String> {
        match op {
            "In" => Ok(Operator::In),
            "NotIn" => Ok(Operator::NotIn),
            "Exists" => Ok(Operator::Exists),
            "DoesNotExist" => Ok(Operator::DoesNotExist),
            other => Err(format!("{other:?} is not a valid label selector operator")),
        }
    }
}

/// A Kubernetes `LabelSelector` converted to requirements (spec §2.2). All requirements are ANDed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// Convert the JSON form (`matchLabels` map, `matchExpressions` list of `{key, operator,
    /// values}`) into a selector, validating keys, values and operators as Kubernetes does.
    /// `null` is the empty selector. matchLabels are taken in key order (deterministic).
    pub fn from_json(v: &Value) -> Result<LabelSelector, String> {
        let obj = match v {
            Value::Null => return Ok(LabelSelector::default()),
            Value::Object(m) => m,
            other => return Err(format!("label selector must be an object, got {other}")),
        };
        let mut requirements = Vec::new();
        match obj.get("matchLabels") {
            None | Some(Value::Null) => {}
            Some(Value::Object(labels)) => {
                let mut keys: Vec<&String> = labels.keys().collect();
                keys.sort();
                for k in keys {
                    let value = match &labels[k] {
                        Value::String(s) => s.clone(),
                        Value::Null => String::new(),
                        other => {
                            return Err(format!("matchLabels.{k}: expected a string, got {other}"))
                        }
                    };
                    requirements.push(new_requirement(k, Operator::In, vec![value])?);
                }
            }
            Some(other) => return Err(format!("matchLabels: expected an object, got {other}")),
        }
        match obj.get("matchExpressions") {
            None | Some(Value::Null) => {}
            Some(Value::Array(exprs)) => {
                for (i, e) in exprs.iter().enumerate() {
                    requirements.push(expression_requirement(i, e)?);
                }
            }
            Some(other) => return Err(format!("matchExpressions: expected a list, got {other}")),
        }
        Ok(LabelSelector { requirements })
    }

    /// True when the selector has no requirements; the injector ignores such entries.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether `labels` satisfy every requirement (an empty selector matches everything).
    pub fn matches(&self, labels: &Map<String, Value>) -> bool {
        self.requirements
            .iter()
            .all(|r| requirement_matches(r, labels))
    }
}

impl std::fmt::Display for LabelSelector {
    /// Kubernetes' selector string form (`a=b,c in (d,e),!f`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self
            .requirements
            .iter()
            .map(|r| match r.op {
                Operator::In if r.values.len() == 1 => format!("{}={}", r.key, r.values[0]),
                Operator::In => format!("{} in ({})", r.key, r.values.join(",")),
                Operator::NotIn => format!("{} notin ({})", r.key, r.values.join(",")),
                Operator::Exists => r.key.clone(),
                Operator::DoesNotExist => format!("!{}", r.key),
            })
            .collect();
        f.write_str(&parts.join(","))
    }
}

fn expression_requirement(index: usize, e: &Value) -> Result<Requirement, String> {
    let obj = e
        .as_object()
        .ok_or_else(|| format!("matchExpressions[{index}]: expected an object, got {e}"))?;
    let field_str = |name: &str| -> Result<String, String> {
        match obj.get(name) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(format!(
                "matchExpressions[{index}].{name}: expected a string, got {other}"
            )),
        }
    };
    let key = field_str("key")?;
    let op = Operator::parse(&field_str("operator")?)?;
    let values = match obj.get("values") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(vs)) => vs
            .iter()
            .map(|v| {
                v.as_str().map(str::to_string).ok_or_else(|| {
                    format!("matchExpressions[{index}].values: expected strings, got {v}")
                })
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(other) => {
            return Err(format!(
                "matchExpressions[{index}].values: expected a list, got {other}"
            ))
        }
    };
    new_requirement(&key, op, values)
}

/// `labels.NewRequirement`: validates key, value count for the operator and each value.
fn new_requirement(key: &str, op: Operator, values: Vec<String>) -> Result<Requirement, String> {
    let mut errs = Vec::new();
    if let Err(e) = validate_qualified_name(key) {
        errs.push(format!("key: Invalid value: {key:?}: {e}"));
    }
    match op {
        Operator::In | Operator::NotIn if values.is_empty() => errs.push(
            "values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty"
                .to_string(),
        ),
        Operator::Exists | Operator::DoesNotExist if !values.is_empty() => errs.push(format!(
            "values: Invalid value: {}: values set must be empty for exists and does not exist",
            go_string_slice(&values)
        )),
        _ => {}
    }
    for (i, v) in values.iter().enumerate() {
        if !is_valid_label_value(v) {
            errs.push(format!(
                "values[{i}]: Invalid value: {v:?}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
            ));
        }
    }
    match errs.len() {
        0 => Ok(Requirement {
            key: key.to_string(),
            op,
            values,
        }),
        1 => Err(errs.remove(0)),
        _ => Err(format!("[{}]", errs.join(", "))),
    }
}

fn go_string_slice(values: &[String]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

fn requirement_matches(r: &Requirement, labels: &Map<String, Value>) -> bool {
    let value = labels.get(&r.key).map(label_text);
    match r.op {
        Operator::In => value.is_some_and(|v| r.values.contains(&v)),
        Operator::NotIn => value.is_none_or(|v| !r.values.contains(&v)),
        Operator::Exists => value.is_some(),
        Operator::DoesNotExist => value.is_none(),
    }
}

/// Label values are strings; anything else is compared by its JSON text.
fn label_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`, at most 63 characters, or empty.
fn is_valid_label_value(v: &str) -> bool {
    v.is_empty() || is_qualified_name_part(v)
}

fn is_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// DNS-1123 subdomain: lower-case alphanumerics, `-` and `.`, alphanumeric at both ends of each
/// label, at most 253 characters.
fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|label| {
            let b = label.as_bytes();
            !b.is_empty()
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        })
        && s.bytes().all(|c| !c.is_ascii_uppercase())
}

/// Kubernetes `IsQualifiedName`: optional DNS-subdomain prefix and `/`, then a name part.
fn validate_qualified_name(key: &str) -> Result<(), String> {
    let parts: Vec<&str> = key.split('/').collect();
    let (prefix, name) = match parts.as_slice() {
        [name] => (None, *name),
        [prefix, name] => (Some(*prefix), *name),
        _ => {
            return Err("a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character with an optional DNS subdomain prefix and '/'".to_string())
        }
    };
    if let Some(p) = prefix {
        if p.is_empty() {
            return Err("prefix part must be non-empty".to_string());
        }
        if !is_dns1123_subdomain(p) {
            return Err("prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character".to_string());
        }
    }
    if name.is_empty() {
        return Err("name part must be non-empty".to_string());
    }
    if name.len() > 63 {
        return Err("name part must be no more than 63 characters".to_string());
    }
    if !is_qualified_name_part(name) {
        return Err("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character".to_string());
    }
    Ok(())
}

/// The injector config's `policy`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Policy {
    /// `enabled`: inject unless the pod opts out.
    Enabled,
    /// `disabled`: inject only when the pod opts in.
    Disabled,
    /// Any other value (including empty): never inject; carries the raw value.
    Invalid(String),
}

impl Policy {
    /// Parse the config value (case-sensitive).
    pub fn parse(s: &str) -> Policy {
        match s {
            "enabled" => Policy::Enabled,
            "disabled" => Policy::Disabled,
            other => Policy::Invalid(other.to_string()),
        }
    }

    /// The config spelling of the policy.
    pub fn as_str(&self) -> &str {
        match self {
            Policy::Enabled => "enabled",
            Policy::Disabled => "disabled",
            Policy::Invalid(s) => s,
        }
    }
}

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

impl Reason {
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

/// An explicit request found on the pod (step 3–6 of §2.1).
struct Explicit {
    inject: bool,
    reason: Reason,
    what: String,
}

/// Spec §2.1: decide whether `pod` must be injected under `policy` and the config selectors.
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
    selectors
        .iter()
        .enumerate()
        .find(|(_, s)| !s.is_empty() && s.matches(labels))
        .map(|(i, s)| Explicit {
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

    fn pod(labels: Value, annotations: Value) -> Value {
        json!({"metadata": {"name": "p", "namespace": "default", "labels": labels, "annotations": annotations},
               "spec": {"containers": [{"name": "app"}]}})
    }

    fn sel(v: Value) -> LabelSelector {
        LabelSelector::from_json(&v).expect("valid selector")
    }

    fn labels(v: Value) -> Map<String, Value> {
        v.as_object().cloned().expect("object")
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
    fn selector_operators() {
        let l = labels(json!({"a": "1", "b": "2"}));
        assert!(sel(
            json!({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "3"]}]})
        )
        .matches(&l));
        assert!(!sel(
            json!({"matchExpressions": [{"key": "c", "operator": "In", "values": ["1"]}]})
        )
        .matches(&l));
        assert!(sel(
            json!({"matchExpressions": [{"key": "c", "operator": "NotIn", "values": ["1"]}]})
        )
        .matches(&l));
        assert!(!sel(
            json!({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]})
        )
        .matches(&l));
        assert!(sel(
            json!({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["9"]}]})
        )
        .matches(&l));
        assert!(sel(json!({"matchExpressions": [{"key": "b", "operator": "Exists"}]})).matches(&l));
        assert!(
            !sel(json!({"matchExpressions": [{"key": "b", "operator": "DoesNotExist"}]}))
                .matches(&l)
        );
        assert!(
            sel(json!({"matchExpressions": [{"key": "z", "operator": "DoesNotExist"}]}))
                .matches(&l)
        );
    }

    #[test]
    fn selector_requirements_are_anded() {
        let s = sel(
            json!({"matchLabels": {"a": "1"}, "matchExpressions": [{"key": "b", "operator": "In", "values": ["3"]}]}),
        );
        assert!(!s.matches(&labels(json!({"a": "1", "b": "2"}))));
        assert!(s.matches(&labels(json!({"a": "1", "b": "3"}))));
        assert!(!s.is_empty());
        assert!(LabelSelector::from_json(&json!({}))
            .expect("ok")
            .matches(&labels(json!({}))));
    }

    #[test]
    fn selector_conversion_errors() {
        let err = |v: Value| LabelSelector::from_json(&v).expect_err("should fail");
        assert_eq!(
            err(json!({"matchExpressions": [{"key": "a", "operator": "in", "values": ["1"]}]})),
            "\"in\" is not a valid label selector operator"
        );
        assert!(
            err(json!({"matchExpressions": [{"key": "a", "operator": "In"}]}))
                .contains("values set can't be empty")
        );
        assert!(err(
            json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]})
        )
        .contains("values set must be empty for exists and does not exist"));
        assert!(err(json!({"matchLabels": {"bad key": "x"}}))
            .starts_with("key: Invalid value: \"bad key\""));
        assert!(err(json!({"matchLabels": {"a": "-x"}}))
            .starts_with("values[0]: Invalid value: \"-x\""));
        assert!(err(json!({"matchLabels": {"a": "x".repeat(64)}})).contains("a valid label"));
        assert!(err(json!({"matchLabels": {"Bad.Prefix/a": "x"}})).contains("prefix part"));
        assert!(err(json!({"matchLabels": {"a/b/c": "x"}})).contains("qualified name"));
        assert!(err(json!({"matchLabels": ["a"]})).contains("matchLabels"));
        assert!(err(json!("a=b")).contains("object"));
    }

    #[test]
    fn selector_accepts_valid_names() {
        let s = sel(json!({"matchLabels": {"example.com/my_key-1.x": "", "k": "A.b-c_9"}}));
        assert!(s.matches(&labels(
            json!({"example.com/my_key-1.x": "", "k": "A.b-c_9"})
        )));
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
