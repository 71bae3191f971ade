//! Helpers on `serde_json` trees: cheap lookups in small objects, copies without spare capacity,
//! values abbreviated for messages.

pub mod compact;
pub mod lookup;

use serde_json::Value;

/// A JSON value for a message: its compact text, cut to 60 characters.
pub fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 60 {
        format!("{}...", s.chars().take(57).collect::<String>())
    } else {
        s
    }
}
