//! Coverage-guided differential fuzzing of the YAML reader against Go: every input goes to
//! `yaml::from_str` and to the Go oracle (`tests/go-oracle`, sigs.k8s.io/yaml `YAMLToJSON`), and
//! both must agree: both fail, or both succeed with the same JSON text
//! (Go's key order; Go's `\ufffd` for bytes that are not UTF-8 read as the character, as in the
//! `go_yaml` test). Inputs on which Go's own answer depends on its random map order, and
//! documents nested deeper than the reader's limit, are skipped.
//!
//! The oracle binary is `$OUTRIGGER_GO_ORACLE`, else `target/go-oracle/go-oracle` of the
//! repository (build it with `tests/go-oracle/build.sh`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use outrigger_go::go::json as gojson;
use outrigger_go::yaml;
use serde_json::{json, Value};

mod oracle;

/// Go's answer: (Ok JSON | Err message, ambiguous).
fn go(text: &str) -> (Result<String, String>, bool) {
    let v = oracle::ask(&json!({"mode": "yaml2json_info", "input": text}));
    let ambiguous = v["ambiguous"] == true;
    match (&v["ok"], &v["err"]) {
        (Value::String(s), _) => (Ok(s.clone()), ambiguous),
        (_, Value::String(s)) => (Err(s.clone()), ambiguous),
        _ => panic!("malformed oracle answer {v}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let ours = yaml::from_str(text).map(|v| gojson::to_string_sorted(&v));
    if matches!(&ours, Err(e) if e.to_string().contains("exceeded max depth of 512")) {
        return;
    }
    let (theirs, ambiguous) = go(text);
    if ambiguous {
        return;
    }
    match (&ours, &theirs) {
        (Ok(a), Ok(b)) => assert_eq!(
            oracle::replacement_chars(a),
            oracle::replacement_chars(b),
            "different values for {text:?}"
        ),
        // Error texts are compared by the `go_yaml` test, which knows their known differences.
        (Err(_), Err(_)) => {}
        _ => panic!("disagreement on {text:?}:\n ours: {ours:?}\n go:   {theirs:?}"),
    }
});
