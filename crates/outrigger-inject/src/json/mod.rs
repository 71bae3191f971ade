//! Helpers on `serde_json` trees: cheap lookups in small objects, copies without spare capacity,
//! values abbreviated for messages.

pub mod compact;

pub(crate) use outrigger_go::json::lookup;

use serde_json::Value;

/// JSON that could not be read, or read but of the wrong shape.
#[derive(Debug, thiserror::Error)]
pub enum JsonError {
    /// The `proxy.istio.io/overrides` annotation is not JSON.
    #[error("invalid proxy.istio.io/overrides annotation: {0}")]
    Overrides(serde_json::Error),
    /// A list of the `proxy.istio.io/overrides` annotation is something else.
    #[error("invalid proxy.istio.io/overrides annotation: {key} must be a list, got {got}")]
    OverridesList {
        /// `containers` or `initContainers`.
        key: String,
        /// What it holds.
        got: Value,
    },
    /// The pod is not an object.
    #[error("pod: expected a JSON object")]
    PodNotAnObject,
    /// A JSON Patch that does not decode as RFC 6902 operations.
    #[error("invalid JSON patch: {0}")]
    PatchFormat(serde_json::Error),
    /// A JSON Patch that does not apply.
    #[error("applying JSON patch: {0}")]
    PatchApply(json_patch::PatchError),
}

/// A JSON value for a message: its compact text, cut to 60 characters.
pub fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 60 {
        format!("{}...", s.chars().take(57).collect::<String>())
    } else {
        s
    }
}
