//! Go `encoding/json`-compatible output.
//!
//! Istio writes several JSON strings into pods (status annotation, overrides annotation,
//! `ISTIO_KUBE_APP_PROBERS`, `ISTIO_META_POD_PORTS`, ...). They must match Go byte for byte:
//! compact output, HTML-safe string escaping (`<`, `>`, `&` as `\u003c`...), Go float format.
//! Object keys are written in the order the [`serde_json::Value`] holds them (the crate is built
//! with `preserve_order`), so callers decide between struct order and sorted map order.

use std::borrow::Cow;

use serde_json::Value;

/// Encode `v` compactly as Go's `json.Marshal` would, keeping object key order.
pub fn to_string(v: &Value) -> String {
    let mut out = String::with_capacity(64);
    write_value(&mut out, v);
    out
}

/// Encode `v` compactly with object keys sorted at every level (Go's encoding of maps).
pub fn to_string_sorted(v: &Value) -> String {
    let mut out = String::with_capacity(64);
    write_sorted(&mut out, v);
    out
}

fn write_sorted(out: &mut String, v: &Value) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_str(out, k);
                out.push(':');
                write_sorted(out, &m[k]);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_sorted(out, x);
            }
            out.push(']');
        }
        other => write_value(out, other),
    }
}

/// Go's `json.MarshalIndent(v, "", indent)` (or `json.Marshal` when `indent` is `None`) with
/// object keys sorted (Go's encoding of maps), optionally without HTML escaping (an `Encoder`
/// with `SetEscapeHTML(false)`).
pub fn marshal_sorted(v: &Value, escape_html: bool, indent: Option<&str>) -> String {
    let mut out = String::with_capacity(64);
    write_opts(&mut out, v, escape_html, indent, 0);
    out
}

fn newline(out: &mut String, indent: Option<&str>, depth: usize) {
    if let Some(ind) = indent {
        out.push('\n');
        for _ in 0..depth {
            out.push_str(ind);
        }
    }
}

fn write_opts(out: &mut String, v: &Value, html: bool, indent: Option<&str>, depth: usize) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, indent, depth + 1);
                write_str_opts(out, k, html);
                out.push(':');
                if indent.is_some() {
                    out.push(' ');
                }
                write_opts(out, &m[k], html, indent, depth + 1);
            }
            newline(out, indent, depth);
            out.push('}');
        }
        Value::Array(a) if !a.is_empty() => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, indent, depth + 1);
                write_opts(out, x, html, indent, depth + 1);
            }
            newline(out, indent, depth);
            out.push(']');
        }
        Value::String(s) => write_str_opts(out, s, html),
        other => write_value(out, other),
    }
}

fn write_str_opts(out: &mut String, s: &str, html: bool) {
    write_str_impl(out, s, html);
}

/// Append the Go encoding of `v` to `out`.
pub fn write_value(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_str(out, s),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, x);
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push('{');
            for (i, (k, x)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_str(out, k);
                out.push(':');
                write_value(out, x);
            }
            out.push('}');
        }
    }
}

/// Append a JSON number the way Go encodes it (integers verbatim, float64 per `encoding/json`).
pub fn write_number(out: &mut String, n: &serde_json::Number) {
    if let Some(i) = n.as_u64() {
        out.push_str(itoa::Buffer::new().format(i));
    } else if let Some(i) = n.as_i64() {
        out.push_str(itoa::Buffer::new().format(i));
    } else if let Some(f) = n.as_f64() {
        out.push_str(&format_float(f));
    }
}

/// Format a float64 as Go's `encoding/json` does: shortest round-trip digits, exponent form only
/// below 1e-6 or from 1e21 on (`1e-7`, `1e+21`).
pub fn format_float(f: f64) -> String {
    let a = f.abs();
    if a != 0.0 && !(1e-6..1e21).contains(&a) {
        let s = crate::go::float::shortest_sci(f);
        // Rust writes `1e21` / `1e-7`; Go writes `1e+21` / `1e-7`.
        match s.find('e') {
            Some(i) if !s[i + 1..].starts_with('-') => format!("{}e+{}", &s[..i], &s[i + 1..]),
            _ => s,
        }
    } else {
        crate::go::float::format_float(f, 'f', -1)
    }
}

/// Append `s` as a Go JSON string literal (HTML-safe escaping).
pub fn write_str(out: &mut String, s: &str) {
    write_str_impl(out, s, true);
}

fn write_str_impl(out: &mut String, s: &str, html: bool) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push('"');
    let mut start = 0;
    let mut i = 0;
    loop {
        i = next_candidate(bytes, i);
        if i >= bytes.len() {
            break;
        }
        // Byte by byte through the word that may hold a special byte.
        let end = (i + 8).min(bytes.len());
        while i < end {
            let Some((esc, len)) = escape_at(bytes, i, html) else {
                i += 1;
                continue;
            };
            // `i` is at an ASCII byte or a UTF-8 lead byte: a character boundary.
            out.push_str(&s[start..i]);
            out.push_str(&esc);
            i += len;
            start = i;
        }
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// The escape of the character starting at `bytes[i]` and the length of its UTF-8 encoding, or
/// `None` when it is written as it is.
#[inline]
fn escape_at(bytes: &[u8], i: usize, html: bool) -> Option<(Cow<'static, str>, usize)> {
    let b = bytes[i];
    if !NEEDS_CHECK[usize::from(b)] {
        return None;
    }
    Some(match b {
        b'"' => ("\\\"".into(), 1),
        b'\\' => ("\\\\".into(), 1),
        b'\n' => ("\\n".into(), 1),
        b'\r' => ("\\r".into(), 1),
        b'\t' => ("\\t".into(), 1),
        0x08 => ("\\b".into(), 1),
        0x0c => ("\\f".into(), 1),
        b'<' | b'>' | b'&' if !html => return None,
        b'<' => ("\\u003c".into(), 1),
        b'>' => ("\\u003e".into(), 1),
        b'&' => ("\\u0026".into(), 1),
        0x00..=0x1f => (format!("\\u{b:04x}").into(), 1),
        // U+2028 and U+2029 are E2 80 A8 / E2 80 A9 in UTF-8.
        _ => match bytes.get(i + 1..i + 3) {
            Some([0x80, 0xa8]) => ("\\u2028".into(), 3),
            Some([0x80, 0xa9]) => ("\\u2029".into(), 3),
            _ => return None,
        },
    })
}

/// The first position at or after `from` where a byte may need escaping ([`NEEDS_CHECK`]), or
/// the length of `bytes`, skipping eight bytes at a time: a word is skipped only when none of
/// its bytes is a control, `"`, `&`, `<`, `>`, `\\` or non-ASCII (conservative: the caller
/// checks each byte from the position returned).
fn next_candidate(bytes: &[u8], from: usize) -> usize {
    let len = bytes.len();
    let mut i = from;
    while i + 8 <= len {
        if word_is_special(&bytes[i..i + 8]) {
            return i;
        }
        i += 8;
    }
    if i == len {
        return len;
    }
    // The last bytes: the word ending at the end of `bytes` (overlapping bytes already passed),
    // or, for a string shorter than a word, its bytes padded with a letter.
    let special = if len >= 8 {
        word_is_special(&bytes[len - 8..])
    } else {
        let mut word = [b'a'; 8];
        word[..len - i].copy_from_slice(&bytes[i..]);
        word_is_special(&word)
    };
    if special {
        i
    } else {
        len
    }
}

/// Whether one of the eight bytes of `chunk` is a control, `"`, `&`, `<`, `>`, `\\` or
/// non-ASCII (a superset of the bytes [`NEEDS_CHECK`] marks).
#[inline]
fn word_is_special(chunk: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // Whether some byte of `x` is zero (exact for presence).
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let mut word = [0u8; 8];
    word.copy_from_slice(chunk);
    let x = u64::from_le_bytes(word);
    let special = (x & HIGH)
        // A byte below 0x20 borrows into its high bit (exact for presence once no byte is at
        // or above 0x80, which the first term covers).
        | x.wrapping_sub(ONES * 0x20)
        // `"` (0x22) and `&` (0x26) differ in bit 2 only; `<` (0x3c) and `>` (0x3e) in bit 1.
        | zero((x | (ONES * 0x04)) ^ (ONES * 0x26))
        | zero((x | (ONES * 0x02)) ^ (ONES * 0x3e))
        | zero(x ^ (ONES * u64::from(b'\\')));
    special & HIGH != 0
}

/// Bytes that may need escaping: ASCII controls, `"`, `\\`, `<`, `>`, `&`, and 0xE2 (the lead byte
/// of U+2028/U+2029).
const NEEDS_CHECK: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = true;
        b += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t[b'<' as usize] = true;
    t[b'>' as usize] = true;
    t[b'&' as usize] = true;
    t[0xe2] = true;
    t
};

/// Whether `a` and `b` are the same tree exactly: same kinds, object keys in the same order,
/// strings byte for byte, numbers of the same representation (floats bit for bit, so `0.0` and
/// `-0.0` differ). Identical trees have the same [`write_value`] text (and the same text in
/// every other writer here), and are equal under `==`; the converse does not hold (`==` ignores
/// the order of keys). A walk without hashing that stops at the first difference.
pub fn identical(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::String(x), Value::String(y)) => same_bytes(x.as_bytes(), y.as_bytes()),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter().zip(y).all(|((kx, vx), (ky, vy))| {
                    same_bytes(kx.as_bytes(), ky.as_bytes()) && identical_child(vx, vy)
                })
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(vx, vy)| identical_child(vx, vy))
        }
        (Value::Number(x), Value::Number(y)) => same_number(x, y),
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Null, Value::Null) => true,
        _ => false,
    }
}

/// [`identical`] of an entry or element: the common string compared here, without a call.
#[inline(always)]
fn identical_child(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::String(x), Value::String(y)) => same_bytes(x.as_bytes(), y.as_bytes()),
        _ => identical(a, b),
    }
}

/// `a == b`, without a call for the short strings pods are made of (keys, names, values).
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let word = |s: &[u8], at: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&s[at..at + 8]);
        u64::from_le_bytes(w)
    };
    let half = |s: &[u8], at: usize| {
        let mut w = [0u8; 4];
        w.copy_from_slice(&s[at..at + 4]);
        u32::from_le_bytes(w)
    };
    match n {
        0 => true,
        1..=3 => a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1],
        // Two overlapping words cover the string.
        4..=7 => half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4),
        8..=16 => word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8),
        _ => a == b,
    }
}

/// Same representation: both the same integer, or both floats with the same bits.
fn same_number(x: &serde_json::Number, y: &serde_json::Number) -> bool {
    match (x.is_f64(), y.is_f64()) {
        (false, false) => x == y,
        (true, true) => x.as_f64().map(f64::to_bits) == y.as_f64().map(f64::to_bits),
        _ => false,
    }
}

/// Go's name of the kind of a JSON value in `encoding/json` unmarshal errors
/// (`json: cannot unmarshal <kind> into ...`).
pub fn unmarshal_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Go's `encoding/json` string escaping written character by character (the reference).
    fn reference(s: &str) -> String {
        let mut out = String::from('"');
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                '<' => out.push_str("\\u003c"),
                '>' => out.push_str("\\u003e"),
                '&' => out.push_str("\\u0026"),
                '\u{2028}' => out.push_str("\\u2028"),
                '\u{2029}' => out.push_str("\\u2029"),
                c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                c => out.push(c),
            }
        }
        out.push('"');
        out
    }

    #[test]
    fn byte_scanning_escapes_as_the_reference() {
        let cases = [
            "",
            "plain",
            "a\"b\\c",
            "<a href=\"x\">&amp;</a>",
            "\u{0}\u{1}\u{1f}\u{7f}",
            "tab\tnl\ncr\r\u{8}\u{c}",
            "\u{2028}x\u{2029}",
            "\u{2027}\u{202a}\u{20ac}€",
            "é日本語🚀",
            "\u{e2}",
            "end\u{2028}",
            "\u{2029}start",
            "mixed <\u{2028}> \"é\"",
        ];
        for c in cases {
            let mut got = String::new();
            write_str(&mut got, c);
            assert_eq!(got, reference(c), "{c:?}");
        }
    }

    /// Every special character at every offset of strings longer than a word, among plain
    /// ASCII and other non-ASCII text: the word-at-a-time skip never passes over one.
    #[test]
    fn word_scanning_finds_every_special_character() {
        let specials = [
            "\"", "\\", "<", ">", "&", "\n", "\u{0}", "\u{1f}", "\u{2028}", "\u{2029}", "é",
            "\u{2027}", "=", "?", "!", "$", "%", "'", " ", "\u{7f}",
        ];
        for len in [7usize, 8, 9, 15, 16, 17, 24, 33] {
            for at in 0..len {
                for sp in specials {
                    let s = format!("{}{sp}{}", "a".repeat(at), "b".repeat(len - at));
                    let mut got = String::new();
                    write_str(&mut got, &s);
                    assert_eq!(got, reference(&s), "{s:?}");
                    let mut plain = String::new();
                    write_str_impl(&mut plain, &s, false);
                    let want = reference(&s)
                        .replace("\\u003c", "<")
                        .replace("\\u003e", ">")
                        .replace("\\u0026", "&");
                    assert_eq!(plain, want, "{s:?} without HTML escaping");
                }
            }
        }
    }

    #[test]
    fn integers_like_go() {
        for n in [0i64, 1, -1, 9, 10, -10, 1234567890, i64::MIN, i64::MAX] {
            assert_eq!(to_string(&json!(n)), n.to_string());
        }
        assert_eq!(to_string(&json!(u64::MAX)), u64::MAX.to_string());
    }

    #[test]
    fn escapes_like_go() {
        assert_eq!(
            to_string(&json!("a<b>&\"\n\u{1}")),
            r#""a\u003cb\u003e\u0026\"\n\u0001""#
        );
    }

    #[test]
    fn floats_like_go() {
        assert_eq!(format_float(15020.0), "15020");
        assert_eq!(format_float(0.5), "0.5");
        assert_eq!(format_float(1e-7), "1e-7");
        assert_eq!(format_float(1e21), "1e+21");
        assert_eq!(format_float(123456789.0), "123456789");
    }

    #[test]
    fn identical_trees_are_exactly_the_same() {
        let a = json!({"b": 1, "a": [true, null, "x", 1.5, {"c": -2}]});
        assert!(identical(&a, &a.clone()));
        let reordered = json!({"a": [true, null, "x", 1.5, {"c": -2}], "b": 1});
        assert_eq!(a, reordered, "`==` ignores key order");
        assert!(!identical(&a, &reordered));
        assert!(!identical(&json!(0.0), &json!(-0.0)));
        assert_eq!(json!(0.0), json!(-0.0));
        assert_ne!(to_string(&json!(0.0)), to_string(&json!(-0.0)));
        assert!(!identical(&json!(1), &json!(1.0)));
        assert!(!identical(&json!([1]), &json!([1, 2])));
        assert!(!identical(&json!({"a": 1}), &json!({"a": 1, "b": 2})));
        assert!(!identical(&json!("a"), &json!("b")));
        assert!(!identical(&json!(null), &json!(false)));
        assert!(identical(&json!(u64::MAX), &json!(u64::MAX)));
        assert!(!identical(&json!(-1), &json!(1)));
        // Strings of every length up to a few words, differing at every position.
        for n in 0..40 {
            let s: String = (0..n).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
            assert!(identical(&json!(s), &json!(s.clone())));
            for at in 0..n {
                let mut t = s.clone().into_bytes();
                t[at] = b'#';
                let t = String::from_utf8(t).unwrap();
                assert!(!identical(&json!(s), &json!(t)), "{s} {t}");
                assert!(!identical(&json!({ s.clone(): 1 }), &json!({ t: 1 })));
            }
            assert!(!identical(&json!(s), &json!(format!("{s}x"))));
        }
    }

    #[test]
    fn keeps_or_sorts_keys() {
        let v = json!({"b": 1, "a": [true, null]});
        assert_eq!(to_string(&v), r#"{"b":1,"a":[true,null]}"#);
        assert_eq!(to_string_sorted(&v), r#"{"a":[true,null],"b":1}"#);
    }
}
