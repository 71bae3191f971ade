//! YAML 1.1 plain-scalar resolution as go-yaml v2 (`resolve.go`) does it.
//!
//! Used by the parser (what an unquoted scalar means) and by the emitter (a string may be written
//! plain only when it would read back as a string).

use std::sync::OnceLock;

use regex::Regex;

use crate::go::strconv;

/// What a plain scalar resolves to.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Resolved {
    /// `~`, `null`, `Null`, `NULL` or empty.
    Null,
    /// YAML 1.1 booleans (`yes`, `on`, `y`, `true`, ...).
    Bool(bool),
    /// An integer that fits `i64`.
    Int(i64),
    /// A positive integer above `i64::MAX` that fits `u64`.
    Uint(u64),
    /// A float (may be infinite or NaN for `.inf` / `.nan`).
    Float(f64),
    /// A timestamp (`2001-12-14`, ...): go-yaml keeps it as a string in generic values, but the
    /// emitter quotes it.
    Timestamp,
    /// Anything else: a string.
    Str,
}

/// Resolve a plain (unquoted, untagged) scalar the way go-yaml v2 does.
pub(crate) fn resolve_plain(s: &str) -> Resolved {
    resolve_scalar(s, true)
}

/// go-yaml v2's `resolve` for an untagged plain scalar (`timestamps`) or a scalar tagged
/// `!!bool`, `!!int`, `!!float`, `!!null` (timestamps are tried only untagged or under
/// `!!timestamp`).
pub(crate) fn resolve_scalar(s: &str, timestamps: bool) -> Resolved {
    let Some(&first) = s.as_bytes().first() else {
        return Resolved::Null;
    };
    match first {
        b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~' => {
            resolve_word(s).unwrap_or(Resolved::Str)
        }
        b'.' => resolve_word(s).unwrap_or_else(|| resolve_dot_float(s)),
        b'+' | b'-' | b'0'..=b'9' => {
            resolve_word(s).unwrap_or_else(|| resolve_number(s, timestamps))
        }
        _ => Resolved::Str,
    }
}

/// The fixed words of go-yaml's resolve map.
fn resolve_word(s: &str) -> Option<Resolved> {
    // The longest word has five bytes; most keys and strings are longer.
    if s.len() > 5 {
        return None;
    }
    Some(match s {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            Resolved::Bool(true)
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            Resolved::Bool(false)
        }
        "~" | "null" | "Null" | "NULL" => Resolved::Null,
        ".nan" | ".NaN" | ".NAN" => Resolved::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => Resolved::Float(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => Resolved::Float(f64::NEG_INFINITY),
        _ => return None,
    })
}

/// A scalar starting with `.` that is not in the word map: go-yaml hands it to Go's
/// `strconv.ParseFloat` as it is, which reads `.5`, `.5e3` and, with Go's digit separators,
/// `.5_0` or `.5e1_0`.
fn resolve_dot_float(s: &str) -> Resolved {
    strconv::parse_float(s).map_or(Resolved::Str, Resolved::Float)
}

/// Scalars starting with a digit or a sign: timestamp (when `timestamps`), int, uint, float,
/// binary int, or string.
fn resolve_number(s: &str, timestamps: bool) -> Resolved {
    if let Some(i) = small_decimal(s) {
        return Resolved::Int(i);
    }
    if timestamps && is_timestamp(s) {
        return Resolved::Timestamp;
    }
    let plain: std::borrow::Cow<'_, str> = if s.contains('_') {
        s.replace('_', "").into()
    } else {
        s.into()
    };
    if let Ok(i) = strconv::parse_int(&plain, 0, 64) {
        return Resolved::Int(i);
    }
    if let Ok(u) = strconv::parse_uint(&plain, 0, 64) {
        return Resolved::Uint(u);
    }
    if yaml_style_float(&plain) {
        if let Ok(f) = strconv::parse_float(&plain) {
            return Resolved::Float(f);
        }
    }
    if let Some(rest) = plain.strip_prefix("0b") {
        // `strconv.ParseInt(rest, 2, 64)`: a sign is allowed after the prefix (`0b-11` is -3).
        if let Ok(i) = strconv::parse_int(rest, 2, 64) {
            return Resolved::Int(i);
        }
        if let Ok(u) = strconv::parse_uint(rest, 2, 64) {
            return Resolved::Uint(u);
        }
    } else if let Some(rest) = plain.strip_prefix("-0b") {
        if let Some(i) = strconv::parse_uint(rest, 2, 64).ok().and_then(neg_i64) {
            return Resolved::Int(i);
        }
    }
    Resolved::Str
}

/// The value of `s` when it is `0` or a decimal of at most 18 digits not starting with `0`
/// (`15090`, `1337`): what the general path below reads as such an int (no timestamp has a
/// digit at its fifth byte; base 0 reads it as decimal; it fits `i64`), without its steps.
fn small_decimal(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    match b.first()? {
        b'0' => return (b.len() == 1).then_some(0),
        b'1'..=b'9' if b.len() <= 18 => {}
        _ => return None,
    }
    let mut n: i64 = 0;
    for &c in b {
        if !c.is_ascii_digit() {
            return None;
        }
        n = n * 10 + i64::from(c - b'0');
    }
    Some(n)
}

/// go-yaml's `yamlStyleFloat` regular expression.
fn yaml_style_float(s: &str) -> bool {
    // Only these characters can match; most texts reaching here (`100m`, `128Mi`) have others.
    if !s
        .bytes()
        .all(|c| matches!(c, b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-'))
    {
        return false;
    }
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$").expect("valid regex")
    })
    .is_match(s)
}

/// Negate a magnitude into `i64`, allowing `i64::MIN`.
fn neg_i64(u: u64) -> Option<i64> {
    if u <= i64::MAX as u64 {
        i64::try_from(u).ok().map(|v| -v)
    } else if u == i64::MIN.unsigned_abs() {
        Some(i64::MIN)
    } else {
        None
    }
}

/// go-yaml's `parseTimestamp`: the formats `2006-1-2T15:4:5.999999999Z07:00` (also with `t`),
/// `2006-1-2 15:4:5.999999999` and `2006-1-2`, checked as Go's `time.Parse` would.
pub(crate) fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let year: u32 = b[..4].iter().fold(0, |a, &d| a * 10 + u32::from(d - b'0'));
    let mut p = Cursor { b, i: 5 };
    let Some(month) = p.num() else { return false };
    if !(1..=12).contains(&month) || !p.lit(b'-') {
        return false;
    }
    let Some(day) = p.num() else { return false };
    if day < 1 || day > days_in(month, year) {
        return false;
    }
    if p.done() {
        return true;
    }
    let zone = match p.next() {
        Some(b'T' | b't') => true,
        Some(b' ') => {
            // time.Parse matches a space of the layout with a run of spaces.
            while p.b.get(p.i) == Some(&b' ') {
                p.i += 1;
            }
            false
        }
        _ => return false,
    };
    if !p.time() {
        return false;
    }
    if zone {
        p.zone() && p.done()
    } else {
        p.done()
    }
}

/// A byte cursor for timestamp checks.
struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn done(&self) -> bool {
        self.i >= self.b.len()
    }
    fn next(&mut self) -> Option<u8> {
        let c = self.b.get(self.i).copied();
        self.i += 1;
        c
    }
    fn lit(&mut self, c: u8) -> bool {
        self.next() == Some(c)
    }
    fn digit(&self, at: usize) -> Option<u32> {
        self.b
            .get(at)
            .filter(|c| c.is_ascii_digit())
            .map(|&c| u32::from(c - b'0'))
    }
    /// Go's `getnum(s, false)`: one or two digits.
    fn num(&mut self) -> Option<u32> {
        let d0 = self.digit(self.i)?;
        match self.digit(self.i + 1) {
            Some(d1) => {
                self.i += 2;
                Some(d0 * 10 + d1)
            }
            None => {
                self.i += 1;
                Some(d0)
            }
        }
    }
    /// `15:4:5` with an optional `.999999999` fraction.
    fn time(&mut self) -> bool {
        let ok = matches!(self.num(), Some(h) if h < 24)
            && self.lit(b':')
            && matches!(self.num(), Some(m) if m < 60)
            && self.lit(b':')
            && matches!(self.num(), Some(s) if s < 60);
        if !ok {
            return false;
        }
        if matches!(self.b.get(self.i), Some(b'.' | b',')) && self.digit(self.i + 1).is_some() {
            self.i += 1;
            while self.digit(self.i).is_some() {
                self.i += 1;
            }
        }
        true
    }
    /// `Z07:00`: `Z` or `±hh:mm`.
    fn zone(&mut self) -> bool {
        if self.b.get(self.i) == Some(&b'Z') {
            self.i += 1;
            return true;
        }
        let r = &self.b[self.i.min(self.b.len())..];
        if r.len() < 6 || r[3] != b':' || !matches!(r[0], b'+' | b'-') {
            return false;
        }
        let two = |x: &[u8]| {
            (x[0].is_ascii_digit() && x[1].is_ascii_digit())
                .then(|| u32::from(x[0] - b'0') * 10 + u32::from(x[1] - b'0'))
        };
        match (two(&r[1..3]), two(&r[4..6])) {
            (Some(h), Some(m)) if h <= 24 && m <= 60 => {
                self.i += 6;
                true
            }
            _ => false,
        }
    }
}

/// Days in a month of the proleptic Gregorian calendar.
fn days_in(month: u32, year: u32) -> u32 {
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// go-yaml's `isBase60Float`: strings like `1:20` are quoted on output for YAML 1.1 readers.
pub(crate) fn is_base60_float(s: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    let Some(&c) = s.as_bytes().first() else {
        return false;
    };
    if !(c == b'+' || c == b'-' || c.is_ascii_digit()) || !s.contains(':') {
        return false;
    }
    RE.get_or_init(|| {
        Regex::new(r"^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$").expect("valid regex")
    })
    .is_match(s)
}

#[cfg(test)]
mod tests {
    use super::Resolved::*;
    use super::*;

    #[test]
    fn words() {
        for t in [
            "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON",
        ] {
            assert_eq!(resolve_plain(t), Bool(true), "{t}");
        }
        for f in [
            "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF",
        ] {
            assert_eq!(resolve_plain(f), Bool(false), "{f}");
        }
        for n in ["", "~", "null", "Null", "NULL"] {
            assert_eq!(resolve_plain(n), Null, "{n}");
        }
        for s in ["yES", "tRUE", "nULL", "oN", "Nope", "<", "<<<"] {
            assert_eq!(resolve_plain(s), Str, "{s}");
        }
        // go-yaml never looks `<<` up (no hint for `<`): it resolves as a string; merge keys are
        // recognised by the decoder from the raw text.
        assert_eq!(resolve_plain("<<"), Str);
    }

    #[test]
    fn ints() {
        let cases: &[(&str, i64)] = &[
            ("0", 0),
            ("-0", 0),
            ("12", 12),
            ("+12", 12),
            ("-12", -12),
            ("010", 8),
            ("0o17", 15),
            ("0x1F", 31),
            ("0X1f", 31),
            ("0b101", 5),
            ("-0b11", -3),
            ("1_000", 1000),
            ("-9223372036854775808", i64::MIN),
        ];
        for &(s, v) in cases {
            assert_eq!(resolve_plain(s), Int(v), "{s}");
        }
        assert_eq!(resolve_plain("18446744073709551615"), Uint(u64::MAX));
    }

    /// The short path for small decimals agrees with Go's `ParseInt` on every kind of text it
    /// takes and every kind it leaves to the general path.
    #[test]
    fn small_decimals_agree_with_parse_int() {
        for s in [
            "0",
            "7",
            "15090",
            "999999999999999999",
            "1000000000000000000",
            "9223372036854775807",
            "9223372036854775808",
            "00",
            "08",
            "010",
            "0x1F",
            "1_000",
            "12a",
            "-12",
            "+12",
            "2001-12-14",
            "1.5",
        ] {
            let general = match strconv::parse_int(s, 0, 64) {
                Ok(i) if !is_timestamp(s) && !s.contains('_') => Some(i),
                _ => None,
            };
            if let Some(i) = small_decimal(s) {
                assert_eq!(Some(i), general, "{s}");
                assert_eq!(resolve_plain(s), Int(i), "{s}");
            }
        }
        assert_eq!(small_decimal("15090"), Some(15090));
        assert_eq!(small_decimal("0"), Some(0));
        assert_eq!(small_decimal("010"), None);
        assert_eq!(small_decimal("1000000000000000000"), None);
    }

    #[test]
    fn floats() {
        let cases: &[(&str, f64)] = &[
            ("1.5", 1.5),
            ("1e3", 1000.0),
            ("1.", 1.0),
            ("-.5", -0.5),
            (".5", 0.5),
            ("08", 8.0),
            ("1_0.5", 10.5),
            ("18446744073709551616", 18446744073709551616.0),
        ];
        for &(s, v) in cases {
            assert_eq!(resolve_plain(s), Float(v), "{s}");
        }
        assert_eq!(resolve_plain(".inf"), Float(f64::INFINITY));
        assert_eq!(resolve_plain("-.Inf"), Float(f64::NEG_INFINITY));
        assert!(matches!(resolve_plain(".NaN"), Float(f) if f.is_nan()));
    }

    #[test]
    fn strings() {
        for s in [
            "1e400", "0x", "1.2.3", "-", "+", ".", "1a", "0b2", "--1", "1 2", "abc", "1:2x",
        ] {
            assert_eq!(resolve_plain(s), Str, "{s}");
        }
    }

    #[test]
    fn timestamps() {
        for s in [
            "2001-12-14",
            "2001-1-2",
            "2024-02-29",
            "2001-12-14T21:59:43.10Z",
            "2001-12-14t21:59:43-05:00",
            "2001-12-14 21:59:43.10",
            "2001-12-14   21:59:43.10",
        ] {
            assert_eq!(resolve_plain(s), Timestamp, "{s}");
        }
        for s in [
            "2001-13-14",
            "2023-02-29",
            "2001-12-14 21:59:43Z",
            "2001-12-14T21:59:43",
            "20011-12-14",
            "2001-12-14x",
        ] {
            assert_ne!(resolve_plain(s), Timestamp, "{s}");
        }
    }

    #[test]
    fn base60() {
        assert!(is_base60_float("15:30"));
        assert!(is_base60_float("1:20:30.5"));
        assert!(!is_base60_float("15:70"));
        assert!(!is_base60_float("a:1"));
    }
}
