//! Arbitrary text into the YAML fast path: whenever `yaml::fast_from_str` answers, the full
//! loader (`yaml::slow_from_str`) must accept the text and build the same tree (key order and
//! number kinds included); the fast path may give up on anything.
#![no_main]

use libfuzzer_sys::fuzz_target;
use outrigger_go::yaml;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Some(fast) = yaml::fast_from_str(text) else {
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
