//! The part of [`super::inject_required`] that holds under every injector configuration, as CEL
//! `matchConditions` of the webhook entries: a pod for which one of them is false is never
//! injected, so the API server need not call the injector for it (and a down injector no longer
//! blocks it).
//!
//! The conditions are the decision's first steps, each step's condition written by
//! [`DecisionStep::match_condition`] (`HostNetwork`, `IgnoredNamespace`,
//! `InjectLabelOrAnnotation`), which no configuration can override: host networking, the ignored namespaces, and an explicit `sidecar.istio.io/inject: "false"` (the
//! label, else the annotation). Selectors and the policy depend on the configuration and stay
//! with the injector.
//!
//! Every expression is total on any object the API server sends (each field guarded with `has()`
//! before it is read): an expression that errors makes the API server apply the entry's failure
//! policy, which may reject the pod. They use only field selection, `has()`, map `in`, string
//! and boolean `==`/`!=`, list literals and the boolean operators, where CEL evaluators cannot
//! disagree. A condition must be true for the webhook to be called.

use super::{DecisionStep, IGNORED_NAMESPACES};
use crate::kube::names::INJECT_KEY;

/// One `matchConditions` entry: a qualified name and a CEL expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchCondition {
    /// The entry's name (a Kubernetes qualified name, unique in the entry).
    pub name: &'static str,
    /// The CEL expression; true when the pod may be injected.
    pub expression: String,
}

/// The conditions, in the decision's order (three: Kubernetes allows 64 per entry): the
/// [`DecisionStep::match_condition`] of every step that has one.
pub fn match_conditions() -> Vec<MatchCondition> {
    DecisionStep::ALL
        .into_iter()
        .filter_map(DecisionStep::match_condition)
        .collect()
}

impl DecisionStep {
    /// The step as a CEL condition, true when the step lets the pod reach the injector; `None`
    /// for the steps whose outcome depends on the injector's configuration (the selectors and
    /// the policy), which only the injector can judge.
    pub fn match_condition(self) -> Option<MatchCondition> {
        let (name, expression) = match self {
            DecisionStep::HostNetwork => (
                "not-host-network",
                "!has(object.spec) || !has(object.spec.hostNetwork) || \
                 object.spec.hostNetwork != true"
                    .to_string(),
            ),
            DecisionStep::IgnoredNamespace => {
                let namespaces = IGNORED_NAMESPACES
                    .iter()
                    .map(|n| format!("'{n}'"))
                    .collect::<Vec<_>>()
                    .join(", ");
                (
                    "not-ignored-namespace",
                    format!("!(request.namespace in [{namespaces}])"),
                )
            }
            DecisionStep::InjectLabelOrAnnotation => {
                let label = has_key("labels");
                let annotation = has_key("annotations");
                (
                    "not-opted-out",
                    format!(
                        "{label} ? object.metadata.labels['{INJECT_KEY}'] != 'false' : \
                         !({annotation} && object.metadata.annotations['{INJECT_KEY}'] == 'false')"
                    ),
                )
            }
            DecisionStep::NeverInjectSelector
            | DecisionStep::AlwaysInjectSelector
            | DecisionStep::Policy => return None,
        };
        Some(MatchCondition { name, expression })
    }
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

    /// The conditions are the decision's first steps, in order: once a step that depends on the
    /// configuration is reached, no later step may be judged by the API server (the earlier
    /// step might have decided first).
    #[test]
    fn conditions_are_the_configuration_free_prefix_of_the_steps() {
        let with: Vec<bool> = DecisionStep::ALL
            .iter()
            .map(|s| s.match_condition().is_some())
            .collect();
        let prefix = with.iter().take_while(|w| **w).count();
        assert!(prefix >= 1, "{with:?}");
        assert!(with[prefix..].iter().all(|w| !w), "{with:?}");
        assert_eq!(match_conditions().len(), prefix);
    }
}
