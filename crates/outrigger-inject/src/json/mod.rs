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

/// Lookups by key on JSON values and objects that scan small objects instead of hashing the key
/// ([`lookup`]): what `get` and `get_mut` answer, for the few-key objects pods are made of.
pub(crate) trait Scan {
    /// `get(key)`: the value under `key` (`None` for a value that is not an object).
    fn scan(&self, key: &str) -> Option<&Value>;
    /// `get_mut(key)`.
    fn scan_mut(&mut self, key: &str) -> Option<&mut Value>;
}

impl Scan for Value {
    #[inline]
    fn scan(&self, key: &str) -> Option<&Value> {
        lookup::field(self, key)
    }

    #[inline]
    fn scan_mut(&mut self, key: &str) -> Option<&mut Value> {
        lookup::field_mut(self, key)
    }
}

impl Scan for serde_json::Map<String, Value> {
    #[inline]
    fn scan(&self, key: &str) -> Option<&Value> {
        lookup::get(self, key)
    }

    #[inline]
    fn scan_mut(&mut self, key: &str) -> Option<&mut Value> {
        lookup::get_mut(self, key)
    }
}
