//! Unit tests of the fast path ([`super::fast`]) against the full loader.

use serde_json::Value;

use super::{fast, parse};

/// Order- and number-kind-sensitive equality (serde_json's map equality ignores key order).
pub(super) fn same(a: &Value, b: &Value) -> bool {
    serde_json::to_string(a).ok() == serde_json::to_string(b).ok()
}

/// Assert that the fast path, when it answers, agrees with the full loader; return whether it
/// answered.
pub(super) fn check(text: &str) -> bool {
    let Some(fast) = fast::from_str(text) else {
        return false;
    };
    match parse::from_str(text) {
        Ok(slow) => assert!(
            same(&fast, &slow),
            "fast path differs on {text:?}:\\n fast {fast}\\n slow {slow}"
        ),
        Err(e) => panic!("fast path accepted {text:?} as {fast}, full loader: {e}"),
    }
    true
}
