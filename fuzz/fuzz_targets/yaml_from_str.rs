//! Arbitrary bytes into the YAML reader: `split_documents` and `from_str` must return `Ok` or
//! `Err`, never panic, and every document they accept must be a JSON tree serde can print.
#![no_main]

use libfuzzer_sys::fuzz_target;
use outrigger_inject::yaml;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(v) = yaml::from_str(text) {
        let _ = serde_json::to_string(&v);
    }
    if let Ok(docs) = yaml::split_documents(text) {
        for d in docs {
            // Every document is a slice of the input, so pass-through stays byte-exact.
            assert!(
                text.contains(d),
                "split_documents returned text not in the input"
            );
            let _ = yaml::from_str(d);
        }
    }
});
