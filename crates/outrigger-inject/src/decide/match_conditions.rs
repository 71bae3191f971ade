//! The part of [`super::inject_required`] that holds under every injector configuration, as CEL
//! `matchConditions` of the webhook entries: a pod for which one of them is false is never
//! injected, so the API server need not call the injector for it (and a down injector no longer
//! blocks it).
//!
//! The conditions are the decision's first steps ([`super::DecisionStep`] `HostNetwork`,
//! `IgnoredNamespace`, `InjectLabelOrAnnotation`), which no configuration can override: host
//! networking, the ignored namespaces, and an explicit `sidecar.istio.io/inject: "false"` (the
//! label, else the annotation). Selectors and the policy depend on the configuration and stay
//! with the injector.
//!
//! Every expression is total on any object the API server sends (each field guarded with `has()`
//! before it is read): an expression that errors makes the API server apply the entry's failure
//! policy, which may reject the pod. They use only field selection, `has()`, map `in`, string
//! and boolean `==`/`!=`, list literals and the boolean operators, where CEL evaluators cannot
//! disagree. A condition must be true for the webhook to be called.

use super::IGNORED_NAMESPACES;
use crate::kube::names::INJECT_KEY;

/// One `matchConditions` entry: a qualified name and a CEL expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchCondition {
    /// The entry's name (a Kubernetes qualified name, unique in the entry).
    pub name: &'static str,
    /// The CEL expression; true when the pod may be injected.
    pub expression: String,
}

/// The conditions, in the decision's order (three: Kubernetes allows 64 per entry).
pub fn match_conditions() -> Vec<MatchCondition> {
    let namespaces = IGNORED_NAMESPACES
        .iter()
        .map(|n| format!("'{n}'"))
        .collect::<Vec<_>>()
        .join(", ");
    let label = has_key("labels");
    let annotation = has_key("annotations");
    vec![
        MatchCondition {
            name: "not-host-network",
            expression: "!has(object.spec) || !has(object.spec.hostNetwork) || \
                         object.spec.hostNetwork != true"
                .into(),
        },
        MatchCondition {
            name: "not-ignored-namespace",
            expression: format!("!(request.namespace in [{namespaces}])"),
        },
        MatchCondition {
            name: "not-opted-out",
            expression: format!(
                "{label} ? object.metadata.labels['{INJECT_KEY}'] != 'false' : \
                 !({annotation} && object.metadata.annotations['{INJECT_KEY}'] == 'false')"
            ),
        },
    ]
}

/// `object.metadata.<map>` holds `sidecar.istio.io/inject`, guarded at every level.
fn has_key(map: &str) -> String {
    format!(
        "(has(object.metadata) && has(object.metadata.{map}) && \
         '{INJECT_KEY}' in object.metadata.{map})"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kubernetes' limits: at most 64 conditions, names are qualified names (at most 63
    /// characters of `[A-Za-z0-9_.-]`, alphanumeric at both ends), unique.
    #[test]
    fn conditions_fit_kubernetes_limits() {
        let c = match_conditions();
        assert!(c.len() <= 64);
        let mut names: Vec<&str> = c.iter().map(|c| c.name).collect();
        for n in &names {
            assert!(!n.is_empty() && n.len() <= 63, "{n}");
            assert!(
                n.chars()
                    .all(|ch| ch.is_ascii_alphanumeric() || "-_.".contains(ch)),
                "{n}"
            );
            let ends = [n.chars().next(), n.chars().last()];
            assert!(
                ends.iter().flatten().all(char::is_ascii_alphanumeric),
                "{n}"
            );
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), c.len(), "names are unique");
    }
}
