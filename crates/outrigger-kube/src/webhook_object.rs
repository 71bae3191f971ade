//! The MutatingWebhookConfiguration that routes pods to the injector, with the entries and
//! selectors of Istio's chart, built with k8s-openapi's typed
//! [`MutatingWebhookConfiguration`] by [`build`] from [`WebhookOptions`]; [`entries`] gives the
//! webhook entries alone (as JSON) so `outrigger check` evaluates exactly the selectors that are
//! installed, and the caBundle upkeep of `serve --kube` finds the injector entries by
//! [`ENTRY_SUFFIX`].
//!
//! Shared by the `webhook-config` and `check` commands and the kube layer; it knows nothing of
//! command-line flags (those are in `webhook_config`).
//!
//! What the entries select is [`WebhookOptions::selector_revision`]: by default
//! `istio.io/rev=outrigger` ([`OUTRIGGER_SELECTOR`]), so the shipped install never selects a pod
//! istiod selects; `--selector-revision default` renders the default revision's four entries
//! (taking over from istiod, [`WebhookOptions::is_takeover`]); `--istio` selects its revision, as
//! Istio's chart. The revision itself only names the object (and, with `--istio`, the Service).
//!
//! Two naming modes:
//!
//! * **standalone** (the default): object `outrigger-sidecar-injector[-REV]`, Service
//!   `outrigger/outrigger`, and *no* `istio.io/rev` label on the object. istiod's webhook
//!   certificate patcher rewrites the caBundle of every MutatingWebhookConfiguration labelled
//!   with its revision, so carrying that label next to a running istiod makes the two patch the
//!   caBundle back and forth forever.
//! * **`--istio`** (Istio replacement): Istio's object names (`istio-sidecar-injector[-REV][-NS]`,
//!   `istio-revision-tag-TAG`), Service `istio-system/istiod[-REV]` and labels (`app:
//!   sidecar-injector`, `istio.io/rev`), on purpose. istiod's injector must then be off.

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use k8s_openapi::api::admissionregistration::v1::{
    MatchCondition, MutatingWebhook, MutatingWebhookConfiguration, RuleWithOperations,
    ServiceReference, WebhookClientConfig,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, ObjectMeta,
};
use k8s_openapi::ByteString;
use outrigger_inject::decide::selection::{self, OUTRIGGER_SELECTOR};
use serde_json::Value;

use crate::defaults;

/// Suffix shared by every injection webhook entry name (and what the CA patcher looks for).
pub const ENTRY_SUFFIX: &str = selection::INJECTOR_ENTRY_SUFFIX;
/// The Istio namespace that the chart's naming treats as the default release namespace.
pub const ISTIO_SYSTEM: &str = "istio-system";
/// Default Service (`NAMESPACE`, `NAME`) in standalone mode: what `deploy/base` installs.
pub const DEFAULT_SERVICE: (&str, &str) = (defaults::NAMESPACE, defaults::SERVICE);
/// Istio's revision label (the label istiod's caBundle patcher selects on).
pub const REV_LABEL: &str = "istio.io/rev";
/// Istio's revision-tag label.
pub const TAG_LABEL: &str = "istio.io/tag";
/// Namespaces the `auto.` entry never selects (the injector's ignored namespaces).
pub const AUTO_EXCLUDED: [&str; 4] = [
    "kube-system",
    "kube-public",
    "kube-node-lease",
    "local-path-storage",
];

/// `failurePolicy` of the webhook entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum FailurePolicy {
    /// Reject the pod when the injector cannot be reached (the chart's choice).
    #[cfg_attr(feature = "clap", value(name = "Fail"))]
    Fail,
    /// Admit the pod uninjected when the injector cannot be reached.
    #[cfg_attr(feature = "clap", value(name = "Ignore"))]
    Ignore,
}

/// `reinvocationPolicy` of the webhook entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum ReinvocationPolicy {
    /// Call the injector once (the chart's default).
    #[cfg_attr(feature = "clap", value(name = "Never"))]
    Never,
    /// Call the injector again when a later webhook changed the pod.
    #[cfg_attr(feature = "clap", value(name = "IfNeeded"))]
    IfNeeded,
}

impl FailurePolicy {
    fn as_str(self) -> &'static str {
        match self {
            FailurePolicy::Fail => "Fail",
            FailurePolicy::Ignore => "Ignore",
        }
    }
}

impl ReinvocationPolicy {
    fn as_str(self) -> &'static str {
        match self {
            ReinvocationPolicy::Never => "Never",
            ReinvocationPolicy::IfNeeded => "IfNeeded",
        }
    }
}

/// Where the API server sends admission reviews.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A Service (`clientConfig.service`).
    Service {
        /// Namespace of the injector's Service.
        namespace: String,
        /// Name of the injector's Service.
        name: String,
        /// Service port.
        port: u16,
        /// Injection path.
        path: String,
    },
    /// An https:// URL (`clientConfig.url`).
    Url(String),
}

/// Everything that shapes the generated configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookOptions {
    /// Revision (`""` and `default` are the default revision).
    pub revision: String,
    /// Revision tag (an `istio-revision-tag-TAG` object selecting `istio.io/rev=TAG`).
    pub tag: Option<String>,
    /// What the entries select (`--selector-revision`): the `istio.io/rev` value of the
    /// namespaces and pods sent to this injector, `default` for the default revision's entries
    /// (`istio-injection=enabled`, `sidecar.istio.io/inject=true`: taking over from istiod).
    /// Unset: [`OUTRIGGER_SELECTOR`] (only what opted into outrigger), or with `istio` the
    /// revision, as Istio's chart.
    pub selector: Option<String>,
    /// Istio replacement mode: Istio's names and labels.
    pub istio: bool,
    /// Where reviews are sent.
    pub endpoint: Endpoint,
    /// Object name override.
    pub name: Option<String>,
    /// PEM CA bundle (raw text, base64-encoded into the object).
    pub ca_bundle: Option<Vec<u8>>,
    /// `Fail` or `Ignore`.
    pub failure_policy: FailurePolicy,
    /// timeoutSeconds.
    pub timeout: Option<u8>,
    /// `Never` or `IfNeeded`.
    pub reinvocation_policy: ReinvocationPolicy,
    /// Render the `auto.` entry (default revision only).
    pub enable_namespaces_by_default: bool,
    /// Namespaces excluded from every entry.
    pub exclude_namespaces: Vec<String>,
    /// Add the decision's CEL `matchConditions` to every entry
    /// ([`outrigger_inject::decide::match_conditions`]).
    pub match_conditions: bool,
}

impl Default for WebhookOptions {
    fn default() -> Self {
        WebhookOptions {
            revision: String::new(),
            tag: None,
            selector: None,
            istio: false,
            endpoint: Endpoint::Service {
                namespace: DEFAULT_SERVICE.0.into(),
                name: DEFAULT_SERVICE.1.into(),
                port: 443,
                path: "/inject".into(),
            },
            name: None,
            ca_bundle: None,
            failure_policy: FailurePolicy::Fail,
            timeout: Some(defaults::WEBHOOK_TIMEOUT_SECONDS),
            reinvocation_policy: ReinvocationPolicy::Never,
            enable_namespaces_by_default: false,
            exclude_namespaces: defaults::EXCLUDED_NAMESPACES.map(str::to_string).to_vec(),
            match_conditions: false,
        }
    }
}

/// The library's DNS-1123 rules (one definition: [`outrigger_inject::kube::dns1123`]).
pub use outrigger_inject::kube::dns1123::{is_dns1123_label, is_dns1123_subdomain};

impl WebhookOptions {
    /// The revision as selectors see it: `default` when empty.
    pub fn revision_label(&self) -> &str {
        selection::revision_name(&self.revision)
    }

    /// What the `istio.io/rev` selectors match: the tag when one is set, else the selector
    /// given, else with `istio` the revision (Istio's chart), else [`OUTRIGGER_SELECTOR`]: the
    /// shipped install selects only pods that opted into outrigger, never istiod's.
    pub fn selector_revision(&self) -> &str {
        if let Some(t) = self.tag.as_deref().or(self.selector.as_deref()) {
            return selection::revision_name(t);
        }
        if self.istio {
            self.revision_label()
        } else {
            OUTRIGGER_SELECTOR
        }
    }

    /// Whether the entries take over from istiod: they select what istiod's default revision
    /// selects (`istio-injection=enabled`, ...), so istiod's injector webhooks must be gone.
    pub fn is_takeover(&self) -> bool {
        !self.istio && self.is_default_revision()
    }

    /// Whether the default-revision entries (`namespace.`, `object.`, `auto.`) are rendered: for
    /// the default revision, or for the tag named `default` (as the chart's revision tags).
    pub fn is_default_revision(&self) -> bool {
        selection::is_default_revision(self.selector_revision())
    }

    /// Object name: the override, else `outrigger-sidecar-injector[-REV]` /
    /// `outrigger-revision-tag-TAG`, or with `--istio` the chart's `istio-sidecar-injector[-REV][-NS]`
    /// / `istio-revision-tag-TAG`.
    pub fn object_name(&self) -> String {
        if let Some(n) = &self.name {
            return n.clone();
        }
        let prefix = if self.istio { "istio" } else { "outrigger" };
        if let Some(tag) = &self.tag {
            return format!("{prefix}-revision-tag-{tag}");
        }
        let base = if self.istio {
            "istio-sidecar-injector"
        } else {
            defaults::WEBHOOK_CONFIG_NAME
        };
        let mut name = with_revision(base, &self.revision);
        if self.istio {
            if let Endpoint::Service { namespace, .. } = &self.endpoint {
                if namespace != ISTIO_SYSTEM {
                    name.push('-');
                    name.push_str(namespace);
                }
            }
        }
        name
    }

    /// Object labels: never `istio.io/rev` in standalone mode (see the module docs).
    pub fn labels(&self) -> BTreeMap<String, String> {
        let mut l = BTreeMap::from([
            (
                "app.kubernetes.io/name".to_string(),
                "outrigger".to_string(),
            ),
            (
                "app.kubernetes.io/component".to_string(),
                "sidecar-injector".to_string(),
            ),
        ]);
        if self.istio {
            l.insert("app".into(), "sidecar-injector".into());
            l.insert(REV_LABEL.into(), self.revision_label().into());
        }
        if let Some(tag) = &self.tag {
            l.insert(TAG_LABEL.into(), tag.clone());
        }
        l
    }
}

/// `base`, or `base-REVISION` for a revision other than the default one (Istio's naming).
pub fn with_revision(base: &str, revision: &str) -> String {
    if selection::is_default_revision(revision) {
        base.to_string()
    } else {
        format!("{base}-{revision}")
    }
}

/// Split `NAMESPACE/NAME`, both parts non-empty.
pub fn parse_namespaced(s: &str) -> Result<(String, String)> {
    match s.split_once('/') {
        Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
            Ok((ns.to_string(), name.to_string()))
        }
        _ => bail!("expected NAMESPACE/NAME"),
    }
}

/// A selector requirement `{key, operator, values}` (values omitted for the existence operators).
fn req(key: &str, operator: &str, values: &[&str]) -> LabelSelectorRequirement {
    LabelSelectorRequirement {
        key: key.into(),
        operator: operator.into(),
        values: (!values.is_empty()).then(|| values.iter().map(|v| v.to_string()).collect()),
    }
}

fn selector(reqs: Vec<LabelSelectorRequirement>) -> LabelSelector {
    LabelSelector {
        match_expressions: Some(reqs),
        match_labels: None,
    }
}

type Reqs = Vec<LabelSelectorRequirement>;

/// The (prefix, namespaceSelector requirements, objectSelector requirements) of every rendered entry.
fn selector_table(o: &WebhookOptions) -> Vec<(&'static str, Reqs, Reqs)> {
    let rev = o.selector_revision();
    let mut out = vec![
        (
            "rev.namespace.",
            vec![
                req(REV_LABEL, "In", &[rev]),
                req("istio-injection", "DoesNotExist", &[]),
            ],
            vec![req("sidecar.istio.io/inject", "NotIn", &["false"])],
        ),
        (
            "rev.object.",
            vec![
                req(REV_LABEL, "DoesNotExist", &[]),
                req("istio-injection", "DoesNotExist", &[]),
            ],
            vec![
                req("sidecar.istio.io/inject", "NotIn", &["false"]),
                req(REV_LABEL, "In", &[rev]),
            ],
        ),
    ];
    if !o.is_default_revision() {
        return out;
    }
    out.push((
        "namespace.",
        vec![req("istio-injection", "In", &["enabled"])],
        vec![req("sidecar.istio.io/inject", "NotIn", &["false"])],
    ));
    out.push((
        "object.",
        vec![
            req("istio-injection", "DoesNotExist", &[]),
            req(REV_LABEL, "DoesNotExist", &[]),
        ],
        vec![
            req("sidecar.istio.io/inject", "In", &["true"]),
            req(REV_LABEL, "DoesNotExist", &[]),
        ],
    ));
    if o.enable_namespaces_by_default {
        out.push((
            "auto.",
            vec![
                req("istio-injection", "DoesNotExist", &[]),
                req(REV_LABEL, "DoesNotExist", &[]),
                req("kubernetes.io/metadata.name", "NotIn", &AUTO_EXCLUDED),
            ],
            vec![
                req("sidecar.istio.io/inject", "DoesNotExist", &[]),
                req(REV_LABEL, "DoesNotExist", &[]),
            ],
        ));
    }
    out
}

fn client_config(o: &WebhookOptions) -> WebhookClientConfig {
    let (service, url) = match &o.endpoint {
        Endpoint::Service {
            namespace,
            name,
            port,
            path,
        } => (
            Some(ServiceReference {
                name: name.clone(),
                namespace: namespace.clone(),
                path: Some(path.clone()),
                port: Some(i32::from(*port)),
            }),
            None,
        ),
        Endpoint::Url(u) => (None, Some(u.clone())),
    };
    WebhookClientConfig {
        ca_bundle: o.ca_bundle.clone().map(ByteString),
        service,
        url,
    }
}

/// The decision's CEL conditions, as the API object's entries.
fn match_conditions() -> Vec<MatchCondition> {
    outrigger_inject::decide::match_conditions::match_conditions()
        .into_iter()
        .map(|c| MatchCondition {
            name: c.name.to_string(),
            expression: c.expression,
        })
        .collect()
}

/// The typed webhook entries (namespace and object selectors per entry), in the chart's order.
pub fn typed_entries(o: &WebhookOptions) -> Vec<MutatingWebhook> {
    let excluded: Vec<&str> = o.exclude_namespaces.iter().map(String::as_str).collect();
    selector_table(o)
        .into_iter()
        .map(|(prefix, mut ns_reqs, obj_reqs)| {
            if !excluded.is_empty() {
                ns_reqs.push(req("kubernetes.io/metadata.name", "NotIn", &excluded));
            }
            MutatingWebhook {
                name: format!("{prefix}{ENTRY_SUFFIX}"),
                // v1 only, as Istio's chart since 1.23 (serve still answers v1beta1 reviews).
                admission_review_versions: vec!["v1".into()],
                client_config: client_config(o),
                failure_policy: Some(o.failure_policy.as_str().into()),
                namespace_selector: Some(selector(ns_reqs)),
                object_selector: Some(selector(obj_reqs)),
                reinvocation_policy: Some(o.reinvocation_policy.as_str().into()),
                rules: Some(vec![RuleWithOperations {
                    api_groups: Some(vec![String::new()]),
                    api_versions: Some(vec!["v1".into()]),
                    operations: Some(vec!["CREATE".into()]),
                    resources: Some(vec!["pods".into()]),
                    scope: None,
                }]),
                side_effects: "None".into(),
                timeout_seconds: o.timeout.map(i32::from),
                match_conditions: o.match_conditions.then(match_conditions),
                match_policy: None,
            }
        })
        .collect()
}

/// The webhook entries as JSON, as the API server returns them (what `check` evaluates).
pub fn entries(o: &WebhookOptions) -> Vec<Value> {
    typed_entries(o)
        .iter()
        .map(|w| serde_json::to_value(w).unwrap_or(Value::Null))
        .collect()
}

/// The whole MutatingWebhookConfiguration object.
pub fn build(o: &WebhookOptions) -> MutatingWebhookConfiguration {
    MutatingWebhookConfiguration {
        metadata: ObjectMeta {
            name: Some(o.object_name()),
            labels: Some(o.labels()),
            ..ObjectMeta::default()
        },
        webhooks: Some(typed_entries(o)),
    }
}

/// Why `--enable-namespaces-by-default` renders nothing with these options, if it does not: the
/// chart's `auto.` entry exists for the default revision only.
pub fn auto_entry_dropped(o: &WebhookOptions) -> Option<String> {
    (o.enable_namespaces_by_default && !o.is_default_revision()).then(|| {
        let sel = o.selector_revision();
        let with = if o.tag.is_some() {
            format!("--tag {sel}")
        } else if o.selector.is_some() {
            format!("--selector-revision {sel}")
        } else if o.istio {
            format!("--revision {}", o.revision)
        } else {
            format!(
                "the entries selecting istio.io/rev={sel} (the default; --selector-revision \
                 default takes over istiod's selectors)"
            )
        };
        format!(
            "warning: --enable-namespaces-by-default has no effect with {with}: the `auto.` \
             entry exists for the default revision only (as in Istio's chart); label namespaces \
             istio.io/rev={sel} instead"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use outrigger_inject::kube::selector::LabelSelector;
    use serde_json::json;

    /// The default options selecting what istiod's default revision selects (the takeover
    /// overlay's): the chart's four entries.
    fn takeover() -> WebhookOptions {
        WebhookOptions {
            selector: Some("default".into()),
            ..WebhookOptions::default()
        }
    }

    #[test]
    fn the_default_selects_only_what_opted_into_outrigger() {
        let o = WebhookOptions::default();
        assert_eq!(o.selector_revision(), "outrigger");
        assert!(!o.is_takeover());
        assert_eq!(
            names(&o),
            [
                "rev.namespace.sidecar-injector.istio.io",
                "rev.object.sidecar-injector.istio.io"
            ]
        );
        assert_eq!(
            entry(&o, "rev.namespace.")["namespaceSelector"]["matchExpressions"][0],
            json!({"key": "istio.io/rev", "operator": "In", "values": ["outrigger"]})
        );
        for w in entries(&o) {
            assert_eq!(w["timeoutSeconds"], 5, "{}", w["name"]);
            for ns in [
                json!({"istio-injection": "enabled"}),
                json!({"istio.io/rev": "default"}),
                json!({}),
            ] {
                assert!(
                    !(matches(&w["namespaceSelector"], ns.clone())
                        && matches(&w["objectSelector"], json!({}))),
                    "{ns} selected by {}",
                    w["name"]
                );
            }
        }
        // The revision names the ConfigMaps and .Revision, not what is selected.
        let canary = WebhookOptions {
            revision: "canary".into(),
            ..WebhookOptions::default()
        };
        assert_eq!(canary.selector_revision(), "outrigger");
        // Istio's replacement mode selects its revision, as the chart; a tag its tag.
        let istio = WebhookOptions {
            istio: true,
            ..canary.clone()
        };
        assert_eq!(istio.selector_revision(), "canary");
        assert!(takeover().is_takeover());
        assert_eq!(names(&takeover()).len(), 4);
    }

    fn names(o: &WebhookOptions) -> Vec<String> {
        entries(o)
            .iter()
            .map(|w| w["name"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    fn matches(sel: &Value, labels: Value) -> bool {
        let s = LabelSelector::from_json(sel).expect("generated selectors are valid");
        s.matches(labels.as_object().expect("labels object"))
    }

    fn entry(o: &WebhookOptions, prefix: &str) -> Value {
        entries(o)
            .into_iter()
            .find(|w| w["name"] == json!(format!("{prefix}{ENTRY_SUFFIX}")))
            .expect("entry rendered")
    }

    #[test]
    fn default_revision_renders_four_entries_in_chart_order() {
        let o = takeover();
        assert_eq!(
            names(&o),
            [
                "rev.namespace.sidecar-injector.istio.io",
                "rev.object.sidecar-injector.istio.io",
                "namespace.sidecar-injector.istio.io",
                "object.sidecar-injector.istio.io"
            ]
        );
    }

    #[test]
    fn match_conditions_only_with_the_option_and_on_every_entry() {
        let o = WebhookOptions {
            enable_namespaces_by_default: true,
            ..takeover()
        };
        assert!(entries(&o)
            .iter()
            .all(|w| w.get("matchConditions").is_none()));
        let o = WebhookOptions {
            match_conditions: true,
            ..o
        };
        let want: Vec<Value> = outrigger_inject::decide::match_conditions::match_conditions()
            .into_iter()
            .map(|c| json!({"name": c.name, "expression": c.expression}))
            .collect();
        assert_eq!(entries(&o).len(), 5);
        for w in entries(&o) {
            assert_eq!(
                w["matchConditions"],
                Value::Array(want.clone()),
                "{}",
                w["name"]
            );
        }
    }

    #[test]
    fn auto_entry_only_with_flag_and_default_revision() {
        let mut o = WebhookOptions {
            enable_namespaces_by_default: true,
            ..takeover()
        };
        assert_eq!(names(&o).len(), 5);
        assert_eq!(names(&o)[4], "auto.sidecar-injector.istio.io");
        o.selector = Some("canary".into());
        assert_eq!(
            names(&o).len(),
            2,
            "a selector other than default renders only rev.* entries"
        );
    }

    #[test]
    fn default_spelled_out_is_the_default_revision() {
        let o = WebhookOptions {
            revision: "default".into(),
            ..takeover()
        };
        assert_eq!(names(&o).len(), 4);
        assert_eq!(o.object_name(), "outrigger-sidecar-injector");
        let istio = WebhookOptions {
            istio: true,
            endpoint: Endpoint::Service {
                namespace: ISTIO_SYSTEM.into(),
                name: "istiod".into(),
                port: 443,
                path: "/inject".into(),
            },
            ..o
        };
        assert_eq!(istio.object_name(), "istio-sidecar-injector");
    }

    /// The default options without the install's namespace exclusion: the selectors exactly as
    /// Istio's chart writes them.
    fn chart() -> WebhookOptions {
        WebhookOptions {
            exclude_namespaces: Vec::new(),
            ..takeover()
        }
    }

    #[test]
    fn rev_namespace_selectors_exact() {
        let o = WebhookOptions {
            revision: "canary".into(),
            selector: Some("canary".into()),
            ..chart()
        };
        let w = entry(&o, "rev.namespace.");
        assert_eq!(
            w["namespaceSelector"],
            json!({"matchExpressions": [
                {"key": "istio.io/rev", "operator": "In", "values": ["canary"]},
                {"key": "istio-injection", "operator": "DoesNotExist"}]})
        );
        assert_eq!(
            w["objectSelector"],
            json!({"matchExpressions": [{"key": "sidecar.istio.io/inject", "operator": "NotIn", "values": ["false"]}]})
        );
    }

    #[test]
    fn rev_object_selectors_exact() {
        let w = entry(&chart(), "rev.object.");
        assert_eq!(
            w["namespaceSelector"],
            json!({"matchExpressions": [
                {"key": "istio.io/rev", "operator": "DoesNotExist"},
                {"key": "istio-injection", "operator": "DoesNotExist"}]})
        );
        assert_eq!(
            w["objectSelector"],
            json!({"matchExpressions": [
                {"key": "sidecar.istio.io/inject", "operator": "NotIn", "values": ["false"]},
                {"key": "istio.io/rev", "operator": "In", "values": ["default"]}]})
        );
    }

    #[test]
    fn namespace_object_and_auto_selectors_exact() {
        let o = WebhookOptions {
            enable_namespaces_by_default: true,
            ..chart()
        };
        let ns = entry(&o, "namespace.");
        assert_eq!(
            ns["namespaceSelector"],
            json!({"matchExpressions": [{"key": "istio-injection", "operator": "In", "values": ["enabled"]}]})
        );
        let obj = entry(&o, "object.");
        assert_eq!(
            obj["objectSelector"],
            json!({"matchExpressions": [
                {"key": "sidecar.istio.io/inject", "operator": "In", "values": ["true"]},
                {"key": "istio.io/rev", "operator": "DoesNotExist"}]})
        );
        let auto = entry(&o, "auto.");
        assert_eq!(
            auto["namespaceSelector"]["matchExpressions"][2],
            json!({"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                   "values": ["kube-system", "kube-public", "kube-node-lease", "local-path-storage"]})
        );
        assert_eq!(
            auto["objectSelector"],
            json!({"matchExpressions": [
                {"key": "sidecar.istio.io/inject", "operator": "DoesNotExist"},
                {"key": "istio.io/rev", "operator": "DoesNotExist"}]})
        );
    }

    #[test]
    fn legacy_label_takes_precedence_over_revision_label() {
        let o = WebhookOptions {
            enable_namespaces_by_default: true,
            ..takeover()
        };
        let ns_labels = json!({"istio-injection": "enabled", "istio.io/rev": "default"});
        let matching: Vec<String> = entries(&o)
            .iter()
            .filter(|w| matches(&w["namespaceSelector"], ns_labels.clone()))
            .map(|w| w["name"].as_str().unwrap_or_default().to_string())
            .collect();
        assert_eq!(matching, ["namespace.sidecar-injector.istio.io"]);
        let disabled = json!({"istio-injection": "disabled", "istio.io/rev": "default"});
        assert!(entries(&o)
            .iter()
            .all(|w| !matches(&w["namespaceSelector"], disabled.clone())));
    }

    #[test]
    fn only_the_label_opt_out_is_visible_to_selectors() {
        let w = entry(&takeover(), "namespace.");
        assert!(!matches(
            &w["objectSelector"],
            json!({"sidecar.istio.io/inject": "false"})
        ));
        assert!(matches(&w["objectSelector"], json!({"app": "x"})));
        let obj = entry(&takeover(), "object.");
        assert!(matches(
            &obj["objectSelector"],
            json!({"sidecar.istio.io/inject": "true"})
        ));
        assert!(!matches(
            &obj["objectSelector"],
            json!({"sidecar.istio.io/inject": "true", "istio.io/rev": "x"})
        ));
    }

    #[test]
    fn auto_entry_skips_kube_system_by_name() {
        let o = WebhookOptions {
            enable_namespaces_by_default: true,
            ..takeover()
        };
        let auto = entry(&o, "auto.");
        assert!(matches(
            &auto["namespaceSelector"],
            json!({"kubernetes.io/metadata.name": "apps"})
        ));
        assert!(!matches(
            &auto["namespaceSelector"],
            json!({"kubernetes.io/metadata.name": "kube-system"})
        ));
    }

    #[test]
    fn excluded_namespaces_are_added_to_every_entry() {
        let o = WebhookOptions {
            exclude_namespaces: vec!["outrigger".into(), "kube-system".into()],
            ..takeover()
        };
        for w in entries(&o) {
            let exprs = w["namespaceSelector"]["matchExpressions"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            assert_eq!(
                exprs.last(),
                Some(
                    &json!({"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                             "values": ["outrigger", "kube-system"]})
                )
            );
            let labels =
                json!({"kubernetes.io/metadata.name": "outrigger", "istio-injection": "enabled"});
            assert!(!matches(&w["namespaceSelector"], labels));
        }
    }

    #[test]
    fn common_fields_and_client_config() {
        let o = WebhookOptions {
            endpoint: Endpoint::Service {
                namespace: "mesh".into(),
                name: "outrigger".into(),
                port: 8443,
                path: "/inject/cluster/c1".into(),
            },
            ca_bundle: Some(b"PEM".to_vec()),
            failure_policy: FailurePolicy::Ignore,
            timeout: Some(5),
            reinvocation_policy: ReinvocationPolicy::IfNeeded,
            ..takeover()
        };
        for w in entries(&o) {
            assert_eq!(w["sideEffects"], "None");
            assert_eq!(w["admissionReviewVersions"], json!(["v1"]));
            assert_eq!(w["rules"][0]["operations"], json!(["CREATE"]));
            assert_eq!(w["rules"][0]["resources"], json!(["pods"]));
            assert_eq!(w["rules"][0]["apiGroups"], json!([""]));
            assert_eq!(w["failurePolicy"], "Ignore");
            assert_eq!(w["reinvocationPolicy"], "IfNeeded");
            assert_eq!(w["timeoutSeconds"], 5);
            assert_eq!(
                w["clientConfig"],
                json!({"service": {"name": "outrigger", "namespace": "mesh", "path": "/inject/cluster/c1", "port": 8443},
                       "caBundle": "UEVN"})
            );
        }
        assert_eq!(o.object_name(), "outrigger-sidecar-injector");
        let istio = WebhookOptions { istio: true, ..o };
        assert_eq!(istio.object_name(), "istio-sidecar-injector-mesh");
    }

    /// The label precedence drift and preview judge by ([`selection::selecting_revision`]) is
    /// Istio's: over every label combination, it names the revision whose chart entries
    /// ([`entries`] with `istio`) the API server calls, except for pods labelled
    /// `sidecar.istio.io/inject=false`, which every entry's objectSelector excludes (the
    /// precedence still names a revision there; the injector's decision then skips the pod).
    #[test]
    fn the_selecting_revision_is_the_one_whose_chart_entries_select() {
        let charts: Vec<(&str, Vec<Value>)> = ["default", "canary", "other", OUTRIGGER_SELECTOR]
            .into_iter()
            .map(|r| {
                let o = WebhookOptions {
                    revision: r.into(),
                    istio: true,
                    ..WebhookOptions::default()
                };
                (r, entries(&o))
            })
            .collect();
        for (ns, pod_labels) in selection::label_combinations() {
            let ns = selection::namespace_labels("apps", &ns);
            let called: Vec<&str> = charts
                .iter()
                .filter(|(_, e)| selection::selecting_entry(e, &ns, &pod_labels).is_some())
                .map(|(r, _)| *r)
                .collect();
            let pod = json!({"metadata": {"labels": pod_labels}});
            let by_labels = selection::selecting_revision(&ns, &pod);
            if pod_labels.get("sidecar.istio.io/inject") == Some(&json!("false")) {
                assert!(called.is_empty(), "{ns:?} {pod_labels:?}: {called:?}");
                continue;
            }
            assert_eq!(
                called,
                by_labels.as_deref().into_iter().collect::<Vec<_>>(),
                "{ns:?} {pod_labels:?}"
            );
        }
    }

    #[test]
    fn standalone_object_has_no_istio_revision_label() {
        for revision in ["", "default", "canary"] {
            let o = WebhookOptions {
                revision: revision.into(),
                ..takeover()
            };
            let labels = o.labels();
            assert!(
                !labels.contains_key(REV_LABEL) && !labels.contains_key("app"),
                "istiod's patcher selects on istio.io/rev: {labels:?}"
            );
        }
        assert_eq!(
            takeover().object_name(),
            crate::defaults::WEBHOOK_CONFIG_NAME
        );
        let canary = WebhookOptions {
            revision: "canary".into(),
            ..takeover()
        };
        assert_eq!(canary.object_name(), "outrigger-sidecar-injector-canary");
    }

    #[test]
    fn istio_mode_uses_the_charts_names_and_labels() {
        let o = WebhookOptions {
            revision: "1-24".into(),
            istio: true,
            endpoint: Endpoint::Service {
                namespace: ISTIO_SYSTEM.into(),
                name: "istiod-1-24".into(),
                port: 443,
                path: "/inject".into(),
            },
            ..takeover()
        };
        let v = serde_json::to_value(build(&o)).expect("encodes");
        assert_eq!(v["metadata"]["name"], "istio-sidecar-injector-1-24");
        assert_eq!(v["metadata"]["labels"]["istio.io/rev"], "1-24");
        assert_eq!(v["metadata"]["labels"]["app"], "sidecar-injector");
        let d = WebhookOptions {
            istio: true,
            ..takeover()
        };
        assert_eq!(
            d.labels().get(REV_LABEL).map(String::as_str),
            Some("default")
        );
    }

    #[test]
    fn revision_tags_select_the_tag_and_route_to_the_revision() {
        let o = WebhookOptions {
            revision: "1-24".into(),
            tag: Some("stable".into()),
            istio: true,
            ..takeover()
        };
        assert_eq!(o.object_name(), "istio-revision-tag-stable");
        let l = o.labels();
        assert_eq!(l.get(TAG_LABEL).map(String::as_str), Some("stable"));
        assert_eq!(l.get(REV_LABEL).map(String::as_str), Some("1-24"));
        assert_eq!(names(&o).len(), 2, "a non-default tag renders rev.* only");
        let w = entry(&o, "rev.namespace.");
        assert_eq!(
            w["namespaceSelector"]["matchExpressions"][0],
            json!({"key": "istio.io/rev", "operator": "In", "values": ["stable"]})
        );
        let w = entry(&o, "rev.object.");
        assert_eq!(
            w["objectSelector"]["matchExpressions"][1],
            json!({"key": "istio.io/rev", "operator": "In", "values": ["stable"]})
        );
        // The tag named `default` also takes over the default revision's entries.
        let d = WebhookOptions {
            tag: Some("default".into()),
            enable_namespaces_by_default: true,
            ..o
        };
        assert_eq!(names(&d).len(), 5);
        let standalone = WebhookOptions { istio: false, ..d };
        assert_eq!(standalone.object_name(), "outrigger-revision-tag-default");
        assert!(!standalone.labels().contains_key(REV_LABEL));
    }

    #[test]
    fn url_mode_replaces_the_service() {
        let o = WebhookOptions {
            endpoint: Endpoint::Url("https://injector.example:9443/inject".into()),
            ..takeover()
        };
        for w in entries(&o) {
            assert_eq!(
                w["clientConfig"],
                json!({"url": "https://injector.example:9443/inject"})
            );
        }
    }

    #[test]
    fn dns1123_names() {
        for good in ["a", "canary", "1-24", "a-b-c", &"x".repeat(63)] {
            assert!(is_dns1123_label(good), "{good}");
        }
        for bad in ["", "-a", "a-", "A", "a_b", "a.b", &"x".repeat(64)] {
            assert!(!is_dns1123_label(bad), "{bad}");
        }
        assert!(is_dns1123_subdomain("outrigger-sidecar-injector"));
        assert!(is_dns1123_subdomain("a.b.c"));
        assert!(!is_dns1123_subdomain("a..b"));
        assert!(!is_dns1123_subdomain("Outrigger"));
        assert!(!is_dns1123_subdomain(&"x.".repeat(127)));
    }

    #[test]
    fn namespaced_names_parse() {
        assert_eq!(
            parse_namespaced("a/b").expect("valid"),
            ("a".to_string(), "b".to_string())
        );
        for bad in ["a", "/b", "a/", "a/b/c", ""] {
            assert!(parse_namespaced(bad).is_err(), "{bad}");
        }
    }
}
