//! Go formatting helpers: `strconv.Quote`, duration `String()` (floats: [`crate::go::float`]).
//!
//! [`quote`] is the one implementation of Go's `strconv.Quote` (`%q` of a string): every error
//! message and template function that prints a Go-quoted string goes through it. It escapes
//! `\a \b \f \n \r \t \v`, other control characters as `\xNN`, runes that are not
//! printable (Go's `unicode.IsPrint`, see [`is_print`]) as `\uNNNN`/`\UNNNNNNNN`, and keeps
//! printable Unicode as is; [`quote_bytes`] adds `\xNN` for bytes that are not UTF-8.

/// Go `strconv.Quote`.
pub fn quote(s: &str) -> String {
    quote_with(s, '"', false)
}

/// Go `strconv.Quote` of a byte string: as [`quote`], each byte that is not part of valid
/// UTF-8 written as `\xNN`.
pub fn quote_bytes(b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len() + 2);
    out.push('"');
    for chunk in b.utf8_chunks() {
        for c in chunk.valid().chars() {
            escape_rune(&mut out, c, '"', false);
        }
        for byte in chunk.invalid() {
            out.push_str(&format!("\\x{byte:02x}"));
        }
    }
    out.push('"');
    out
}

/// Go `strconv.QuoteToASCII`.
pub fn quote_ascii(s: &str) -> String {
    quote_with(s, '"', true)
}

/// Go `strconv.QuoteRune` (`QuoteRuneToASCII` when `ascii`).
pub fn quote_rune(r: char, ascii: bool) -> String {
    let mut out = String::from("'");
    escape_rune(&mut out, r, '\'', ascii);
    out.push('\'');
    out
}

fn quote_with(s: &str, q: char, ascii: bool) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push(q);
    for c in s.chars() {
        escape_rune(&mut out, c, q, ascii);
    }
    out.push(q);
    out
}

/// Go's `appendEscapedRune`.
fn escape_rune(out: &mut String, c: char, q: char, ascii: bool) {
    if c == q || c == '\\' {
        out.push('\\');
        out.push(c);
        return;
    }
    if ascii {
        if c.is_ascii() && is_print(c) {
            out.push(c);
            return;
        }
    } else if is_print(c) {
        out.push(c);
        return;
    }
    match c {
        '\u{7}' => out.push_str("\\a"),
        '\u{8}' => out.push_str("\\b"),
        '\u{c}' => out.push_str("\\f"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{b}' => out.push_str("\\v"),
        c if (c as u32) < 0x20 || c as u32 == 0x7f => {
            out.push_str(&format!("\\x{:02x}", c as u32));
        }
        c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
        c => out.push_str(&format!("\\U{:08x}", c as u32)),
    }
}

/// Go's `strconv.IsPrint` / `unicode.IsPrint`: letters, marks, numbers, punctuation, symbols
/// and the ASCII space; not controls, other spaces, line/paragraph separators, format
/// characters, private use or noncharacters. (Unassigned code points are not tabulated.)
pub fn is_print(c: char) -> bool {
    let u = c as u32;
    if u < 0x80 {
        return (0x20..0x7f).contains(&u);
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    const NOT_PRINT: &[(u32, u32)] = &[
        (0x00A0, 0x00A0),
        (0x00AD, 0x00AD),
        (0x0600, 0x0605),
        (0x061C, 0x061C),
        (0x06DD, 0x06DD),
        (0x070F, 0x070F),
        (0x0890, 0x0891),
        (0x08E2, 0x08E2),
        (0x180E, 0x180E),
        (0x200B, 0x200F),
        (0x202A, 0x202E),
        (0x2060, 0x206F),
        (0xD800, 0xDFFF),
        (0xE000, 0xF8FF),
        (0xFDD0, 0xFDEF),
        (0xFEFF, 0xFEFF),
        (0xFFF0, 0xFFFB),
        (0xFFFE, 0xFFFF),
        (0x110BD, 0x110BD),
        (0x110CD, 0x110CD),
        (0x13430, 0x1343F),
        (0x1BCA0, 0x1BCA3),
        (0x1D173, 0x1D17A),
        (0xE0001, 0xE0001),
        (0xE0020, 0xE007F),
        (0xF0000, 0x10FFFF),
    ];
    if (u & 0xFFFE) == 0xFFFE {
        return false;
    }
    !NOT_PRINT.iter().any(|&(a, b)| (a..=b).contains(&u))
}

/// Go `time.Duration.String()` of a number of nanoseconds.
pub fn format_duration(d: i128) -> String {
    let d = d.clamp(i64::MIN as i128, i64::MAX as i128) as i64;
    if d == 0 {
        return "0s".into();
    }
    let neg = d < 0;
    let u = d.unsigned_abs();
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if u < 1_000_000_000 {
        let (unit, div) = if u < 1_000 {
            ("ns", 1u64)
        } else if u < 1_000_000 {
            ("µs", 1_000)
        } else {
            ("ms", 1_000_000)
        };
        out.push_str(&frac(u, div));
        out.push_str(unit);
        return out;
    }
    let h = u / 3_600_000_000_000;
    let rem = u % 3_600_000_000_000;
    let m = rem / 60_000_000_000;
    let s_ns = rem % 60_000_000_000;
    if h > 0 {
        out.push_str(&format!("{h}h{m}m"));
    } else if m > 0 {
        out.push_str(&format!("{m}m"));
    }
    out.push_str(&frac(s_ns, 1_000_000_000));
    out.push('s');
    out
}

/// `v / div` with the shortest decimal fraction.
fn frac(v: u64, div: u64) -> String {
    let int = v / div;
    let mut f = v % div;
    if f == 0 {
        return int.to_string();
    }
    let mut width = div.ilog10() as usize;
    while f.is_multiple_of(10) {
        f /= 10;
        width -= 1;
    }
    format!("{int}.{f:0width$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_like_go() {
        assert_eq!(quote("a\"b\\c\n\t"), "\"a\\\"b\\\\c\\n\\t\"");
        assert_eq!(quote("\u{1}é"), "\"\\x01é\"");
        assert_eq!(quote_bytes(b"a\xffb\xe2\x82"), r#""a\xffb\xe2\x82""#);
        assert_eq!(quote_bytes("\u{7}é".as_bytes()), quote("\u{7}é"));
    }

    #[test]
    fn durations_like_go() {
        assert_eq!(format_duration(0), "0s");
        assert_eq!(format_duration(1_500_000), "1.5ms");
        assert_eq!(format_duration(1_500), "1.5µs");
        assert_eq!(format_duration(12), "12ns");
        assert_eq!(format_duration(3_600_000_000_000), "1h0m0s");
        assert_eq!(format_duration(90_000_000_000), "1m30s");
        assert_eq!(format_duration(45_000_000_000), "45s");
        assert_eq!(format_duration(1_500_000_000), "1.5s");
        assert_eq!(format_duration(-1_500_000_000), "-1.5s");
    }
}
