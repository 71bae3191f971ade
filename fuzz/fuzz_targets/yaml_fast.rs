//! Arbitrary text into the YAML fast path: whenever `yaml::fast_from_str` answers, the full
//! loader (`yaml::slow_from_str`) must accept the text and build the same tree (key order and
//! number kinds included); the fast path may give up on anything. The fast path's memo is warm
//! from the previous input (the fuzzer runs inputs one after another on one thread): its answer
//! must be the one a cold read (`yaml::fast_from_str_cold`) gives.
#![no_main]

use libfuzzer_sys::fuzz_target;
use outrigger_go::yaml;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let warm = yaml::fast_from_str(text);
    assert_eq!(
        warm.as_ref().map(|v| serde_json::to_string(v).ok()),
        yaml::fast_from_str_cold(text).map(|v| serde_json::to_string(&v).ok()),
        "memo-warm fast path differs from a cold read on {text:?}"
    );
    let Some(fast) = warm else {
        return;
    };
    match yaml::slow_from_str(text) {
        // serde_json's map equality ignores key order: compare the serialised forms.
        Ok(slow) => assert_eq!(
            serde_json::to_string(&fast).ok(),
            serde_json::to_string(&slow).ok(),
            "fast path differs on {text:?}"
        ),
        Err(e) => panic!("fast path accepted {text:?} as {fast}; full loader: {e}"),
    }
});
