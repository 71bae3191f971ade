//! `go::quote` is Go's `strconv.Quote`, checked against Go's own `%q` (the Go oracle's
//! `printf "%q"`) over strings that the three former copies escaped differently: Go's short
//! escapes (`\a \b \f \v`), C0 and C1 controls, Unicode spaces and format characters, marks
//! that are printable (variation selectors), private use, noncharacters and invalid UTF-8.

mod go_oracle;
mod harness;

use go_oracle::Oracle;
use outrigger_go::go::duration::parse_go_duration;
use outrigger_go::go::quote::{quote, quote_bytes};
use serde_json::json;

const TRICKY: &[&str] = &[
    "",
    "plain",
    "quote\"back\\slash'tick`",
    "\u{7}\u{8}\u{c}\n\r\t\u{b}",
    "\u{0}\u{1b}\u{1f}\u{7f}",
    "\u{80}\u{85}\u{9f}",
    "\u{a0}\u{ad}",
    "é中文😀ß",
    "\u{200b}\u{200d}\u{200e}\u{2028}\u{2029}\u{202e}",
    "\u{2000}\u{3000}\u{1680}",
    "\u{feff}\u{fffd}\u{fffe}\u{ffff}",
    "\u{e000}\u{f8ff}\u{f0000}\u{10ffff}",
    "\u{fe0f}\u{34f}\u{180b}\u{e0100}",
    "\u{115f}\u{3164}\u{ffa0}",
    "\u{e0001}\u{e0020}\u{e007f}",
    "\u{600}\u{61c}\u{6dd}\u{70f}\u{180e}",
    "\u{1d173}\u{110bd}",
];

fn quote_matches_go_percent_q() {
    let mut o = Oracle::get("quote_matches_go_percent_q");
    for s in TRICKY {
        let go = o.render("q", r#"{{ printf "%q" .s }}"#, &json!({ "s": s }));
        assert_eq!(go.as_deref(), Ok(quote(s).as_str()), "{s:?}");
    }
    // Bytes that are not UTF-8 reach Go through template string literals.
    for (literal, bytes) in [
        (r#""a\xffb""#, &b"a\xffb"[..]),
        (r#""\xe2\x82z""#, b"\xe2\x82z"),
        (r#""\xc0\x80\xed\xa0\x80""#, b"\xc0\x80\xed\xa0\x80"),
        (r#""ok\u00e9\x80""#, b"ok\xc3\xa9\x80"),
    ] {
        let go = o.render(
            "q",
            &format!(r#"{{{{ printf "%q" {literal} }}}}"#),
            &json!({}),
        );
        assert_eq!(go.as_deref(), Ok(quote_bytes(bytes).as_str()), "{literal}");
    }
}

/// Messages built by the former copy in `go::duration` escaped `\a` as `\x07` and kept C1
/// controls and format characters raw; they now read as Go's.
fn duration_errors_quote_as_go() {
    let mut o = Oracle::get("duration_errors_quote_as_go");
    for s in ["\u{7}", "\u{85}", "\u{200b}5s", "x\u{b}"] {
        let ours = parse_go_duration(s)
            .expect_err("invalid duration")
            .to_string();
        let go = o.render(
            "q",
            r#"{{ printf "time: invalid duration %q" .s }}"#,
            &json!({ "s": s }),
        );
        assert_eq!(go.as_deref(), Ok(ours.as_str()), "{s:?}");
    }
}

fn main() {
    harness::run(vec![
        harness::trial(
            "quote_matches_go_percent_q",
            &[harness::Need::Oracle],
            quote_matches_go_percent_q,
        ),
        harness::trial(
            "duration_errors_quote_as_go",
            &[harness::Need::Oracle],
            duration_errors_quote_as_go,
        ),
    ]);
}
