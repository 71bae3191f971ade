//! Istio's injection decision (`injectRequired`) step by step: what each step looked at, which one decided and with which
//! reason code ([`super::Reason::code`], as the server's metrics and logs name it). `outrigger check`
//! prints these steps; they are derived from the same [`Decision`] the webhook and
//! `outrigger inject` act on, so they cannot drift from it.

use serde::Serialize;
use serde_json::{Map, Value};

use super::{first_match, Decision, DecisionStep, LabelSelector, Policy, IGNORED_NAMESPACES};
use crate::kube::names::INJECT_KEY;

/// One step of the injection decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Step {
    /// Step name (`hostNetwork`, `ignoredNamespace`, `injectLabelOrAnnotation`, ...).
    pub step: &'static str,
    /// What was found.
    pub detail: String,
    /// `continue`, `decided` or `not evaluated`.
    pub outcome: &'static str,
    /// The reason code, on the deciding step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<&'static str>,
}

/// What a selector list says about the pod's labels.
fn selector_facts(selectors: &[LabelSelector], labels: &Map<String, Value>) -> String {
    first_match(selectors, labels).map_or_else(
        || format!("none of {} entries match", selectors.len()),
        |(i, s)| format!("entry [{i}] ({s}) matches"),
    )
}

/// The facts each decision step looks at, for the pod.
fn step_facts(
    pod: &Value,
    policy: &Policy,
    never: &[LabelSelector],
    always: &[LabelSelector],
) -> [String; 6] {
    let empty = Map::new();
    let labels = pod
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let host_network = pod
        .pointer("/spec/hostNetwork")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let ns = pod
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    let ignored = IGNORED_NAMESPACES.contains(&ns);
    let annotation = pod
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(INJECT_KEY))
        .and_then(Value::as_str);
    let object_value = match (labels.get(INJECT_KEY), annotation) {
        (Some(v), _) => format!(
            "label {INJECT_KEY}={}",
            v.as_str()
                .map_or_else(|| v.to_string(), |s| format!("{s:?}"))
        ),
        (None, Some(a)) => format!("annotation {INJECT_KEY}={a:?}"),
        (None, None) => format!("no {INJECT_KEY} label or annotation"),
    };
    // In the order of `DecisionStep::ALL`.
    [
        format!("spec.hostNetwork={host_network}"),
        format!(
            "namespace {ns:?} {}",
            if ignored {
                "is ignored"
            } else {
                "is not ignored"
            }
        ),
        object_value,
        selector_facts(never, labels),
        selector_facts(always, labels),
        format!("policy {:?}", policy.as_str()),
    ]
}

/// The decision steps for `pod` with the one that produced `d` (from
/// [`super::inject_required`] over the same inputs) marked by its reason code.
pub fn decision_steps(
    pod: &Value,
    policy: &Policy,
    never: &[LabelSelector],
    always: &[LabelSelector],
    d: &Decision,
) -> Vec<Step> {
    let decided_at = d.reason.step();
    DecisionStep::ALL
        .into_iter()
        .zip(step_facts(pod, policy, never, always))
        .map(|(step, detail)| {
            let (outcome, code) = match step.cmp(&decided_at) {
                std::cmp::Ordering::Less => ("continue", None),
                std::cmp::Ordering::Equal => ("decided", Some(d.reason.code())),
                std::cmp::Ordering::Greater => ("not evaluated", None),
            };
            Step {
                step: step.name(),
                detail,
                outcome,
                code,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::inject_required;
    use serde_json::json;

    #[test]
    fn the_deciding_step_carries_the_reason_code() {
        let pod = json!({"metadata": {"namespace": "apps", "annotations": {INJECT_KEY: "false"}}});
        let d = inject_required(&pod, &Policy::Enabled, &[], &[]);
        let steps = decision_steps(&pod, &Policy::Enabled, &[], &[], &d);
        let outcomes: Vec<&str> = steps.iter().map(|s| s.outcome).collect();
        assert_eq!(
            outcomes,
            [
                "continue",
                "continue",
                "decided",
                "not evaluated",
                "not evaluated",
                "not evaluated"
            ]
        );
        assert_eq!(steps[2].code, Some(d.reason.code()));
        assert_eq!(
            steps[2].detail,
            format!("annotation {INJECT_KEY}=\"false\"")
        );
        assert_eq!(steps[1].detail, "namespace \"apps\" is not ignored");
    }
}
