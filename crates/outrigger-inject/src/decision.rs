//! Whether a pod gets a sidecar, with a reason code for every outcome.
//!
//! PLACEHOLDER in main: the real module lands from the `decide` work stream.

use serde_json::{Map, Value};

/// Kubernetes label selector.
#[derive(Debug, Clone)]
pub struct LabelSelector;

impl LabelSelector {
    /// Convert a JSON LabelSelector.
    pub fn from_json(v: &Value) -> Result<LabelSelector, String> {
        let _ = v;
        todo!()
    }
    /// Selector without requirements.
    pub fn is_empty(&self) -> bool {
        todo!()
    }
    /// Whether `labels` match.
    pub fn matches(&self, labels: &Map<String, Value>) -> bool {
        let _ = labels;
        todo!()
    }
}

/// Injection policy.
#[derive(Debug, Clone)]
pub enum Policy {
    /// Inject by default.
    Enabled,
    /// Do not inject by default.
    Disabled,
    /// Invalid value: never inject.
    Invalid(String),
}

impl Policy {
    /// Parse the config's `policy`.
    pub fn parse(s: &str) -> Policy {
        match s {
            "enabled" => Policy::Enabled,
            "disabled" => Policy::Disabled,
            other => Policy::Invalid(other.to_string()),
        }
    }
}

/// Outcome of the decision.
#[derive(Debug, Clone)]
pub struct Decision {
    /// Inject or not.
    pub inject: bool,
}

/// Decide.
pub fn inject_required(pod: &Value, policy: &Policy, never: &[LabelSelector], always: &[LabelSelector]) -> Decision {
    let _ = (pod, policy, never, always);
    todo!()
}
