//! Arbitrary text as a Go template: `Template::parse` and, when it parses, execution over a
//! fixed JSON value (owned and viewed in place) must never panic, overflow the stack or run
//! away; every failure is an error. (Agreement with Go's own text/template is the differential
//! test `crates/outrigger-inject/tests/go_template.rs`; this target looks for crashes.)
#![no_main]

use libfuzzer_sys::fuzz_target;
use outrigger_go::template::Template;

fn data() -> serde_json::Value {
    serde_json::json!({
        "s": "héllo wörld", "i": 42, "f": 1.5, "t": true, "n": null,
        "l": ["a", 1, null, {"k": "v"}, [1, 2]], "m": {"a": 1, "b": {"c": [true]}},
        "sm": {"k1": "v1"}, "e": "", "z": 0
    })
}

fuzz_target!(|data_in: &[u8]| {
    let Ok(text) = std::str::from_utf8(data_in) else {
        return;
    };
    // Keep iterations quick: huge ranges and repeats are bounded by the engine, not by time.
    if text.len() > 4096 {
        return;
    }
    let Ok(t) = Template::parse("inject", text) else {
        return;
    };
    let d = data();
    let _ = t.render_json(&d);
    let _ = t.render_json_view(&d);
});
