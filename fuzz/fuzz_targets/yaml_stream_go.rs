//! Coverage-guided differential fuzzing of the document split against Go: every input is read
//! as a whole stream by `yaml::DocumentReader` (what `outrigger inject` reads with) and by the Go
//! oracle's `stream` mode (apimachinery's `YAMLReader`, as `istioctl kube-inject` reads); both
//! must return the same documents, byte for byte, and stop with the same error. The documents'
//! conversion is `yaml_go`'s concern.
//!
//! The oracle binary is `$OUTRIGGER_GO_ORACLE`, else `target/go-oracle/go-oracle` of the
//! repository (build it with `tests/go-oracle/build.sh`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use outrigger_go::yaml;
use serde_json::{json, Value};

mod oracle;

fuzz_target!(|data: &[u8]| {
    // Go reads bytes; outrigger reads UTF-8 text (other input is refused before splitting).
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut ours = Vec::new();
    let mut our_error = None;
    for d in yaml::DocumentReader::new(text.as_bytes()) {
        match d {
            Ok(d) => ours.push(d.text),
            Err(e) => {
                our_error = Some(e.to_string());
                break;
            }
        }
    }
    let answer = oracle::ask(&json!({"mode": "split", "input": text}));
    let Some(Value::String(go)) = answer.get("ok") else {
        panic!("the oracle's split mode failed on {text:?}: {answer}");
    };
    let go: Value = serde_json::from_str(go).expect("split answer is JSON");
    let theirs: Vec<&str> = go["docs"]
        .as_array()
        .expect("docs")
        .iter()
        .map(|d| d["text"].as_str().expect("document text"))
        .collect();
    assert_eq!(ours, theirs, "different documents for {text:?}");
    assert_eq!(
        our_error.as_deref(),
        go["error"].as_str(),
        "different stream errors for {text:?}"
    );
});
