//! Deeply nested templates: the input is a repeat count n (the first two bytes, little-endian,
//! up to 20,000) and up to five fragments separated by 0xFF bytes (`open`, `middle`, `close`,
//! then optional `prefix` and `suffix`); the template is `prefix` `open`×n `middle` `close`×n
//! `suffix`, so short inputs reach nesting far beyond what `template_exec`'s
//! arbitrary text can: `{{if .}}`, `(`, `{{block}}`, `{{else if}}` chains, `{{define}}`s that
//! call themselves. Parsing, execution (owned and viewed data), error messages that print the
//! nested nodes, and dropping the tree must answer Go's limits (10,000 parentheses, 100,000
//! `template` calls) or outrigger's (10,000 nested control actions) as errors, never overflow
//! the stack.
#![no_main]

use libfuzzer_sys::fuzz_target;
use outrigger_go::template::Template;

fuzz_target!(|data_in: &[u8]| {
    let [a, b, rest @ ..] = data_in else {
        return;
    };
    let n = usize::from(u16::from_le_bytes([*a, *b])) % 20_001;
    let mut parts = rest.split(|&c| c == 0xFF);
    // A missing fragment is empty.
    let mut next = || std::str::from_utf8(parts.next().unwrap_or_default()).ok();
    let (Some(open), Some(middle), Some(close), Some(prefix), Some(suffix)) =
        (next(), next(), next(), next(), next())
    else {
        return;
    };
    // Keep one iteration well under a second: at most about 1 MiB of template.
    if (open.len() + close.len()) * n + middle.len() > 1 << 20 {
        return;
    }
    let text = format!(
        "{prefix}{}{middle}{}{suffix}",
        open.repeat(n),
        close.repeat(n)
    );
    let Ok(t) = Template::parse("inject", &text) else {
        return;
    };
    let d = serde_json::json!({"a": [1, {"b": "c"}], "t": true, "n": null});
    let _ = t.render_json(&d);
    let _ = t.render_json_view(&d);
});
