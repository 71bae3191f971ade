//! Go's `strconv` number parsing: `Atoi`, `ParseInt`, `ParseUint` (any base, any bit size) and
//! `ParseFloat(s, 64)`, with Go's `*NumError` texts (`strconv.Atoi: parsing "x": invalid
//! syntax`). Each is Go's algorithm step for step (digits are read left to right, so an overflow
//! before a bad character is a range error, as in Go); the error borrows the input, so a failed
//! parse allocates nothing (the YAML resolver tries numbers on every plain scalar).
//!
//! Go's `time.atoi` (a different function: no digits read as 0) stays with the layout parser.

use std::borrow::Cow;

use super::quote::quote;

/// Why a number did not parse: Go's `strconv.ErrSyntax` or `strconv.ErrRange`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NumErrorKind {
    /// `invalid syntax`.
    Syntax,
    /// `value out of range`.
    Range,
}

/// Go's `*strconv.NumError`: the function, its input and the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("strconv.{func}: parsing {}: {}", quote(.num), match .kind { NumErrorKind::Syntax => "invalid syntax", NumErrorKind::Range => "value out of range" })]
pub struct NumError<'a> {
    /// Go's function name (`Atoi`, `ParseInt`, `ParseUint`, `ParseFloat`).
    pub func: &'static str,
    /// The text given to it.
    pub num: &'a str,
    /// Syntax or range.
    pub kind: NumErrorKind,
}

impl<'a> NumError<'a> {
    fn syntax(func: &'static str, num: &'a str) -> Self {
        NumError {
            func,
            num,
            kind: NumErrorKind::Syntax,
        }
    }

    fn range(func: &'static str, num: &'a str) -> Self {
        NumError {
            func,
            num,
            kind: NumErrorKind::Range,
        }
    }
}

/// Split an optional leading `+` or `-`: (negative, rest).
fn split_sign(s: &str) -> (bool, &str) {
    match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    }
}

/// Go's `strconv.Atoi` on a 64-bit platform: `ParseInt(s, 10, 0)` reported as `Atoi`.
pub fn atoi(s: &str) -> Result<i64, NumError<'_>> {
    parse_int(s, 10, 64).map_err(|e| NumError { func: "Atoi", ..e })
}

/// Go's `strconv.ParseInt(s, base, bit_size)`: base 0 reads the `0b`/`0o`/`0x`/`0` prefixes and
/// `_` digit separators; bases 2 to 36 read plain digits; `bit_size` 0 means 64.
pub fn parse_int(s: &str, base: u32, bit_size: u32) -> Result<i64, NumError<'_>> {
    const FUNC: &str = "ParseInt";
    if s.is_empty() {
        return Err(NumError::syntax(FUNC, s));
    }
    let (neg, body) = split_sign(s);
    let bit_size = if bit_size == 0 { 64 } else { bit_size.min(64) };
    let un = match parse_uint_in(body, base, bit_size) {
        Ok(u) => u,
        Err(NumErrorKind::Syntax) => return Err(NumError::syntax(FUNC, s)),
        // Go goes on with the saturated value: a range error for the signed type either way.
        Err(NumErrorKind::Range) => u64::MAX,
    };
    let cutoff = 1u64 << (bit_size - 1);
    if !neg && un >= cutoff || neg && un > cutoff {
        return Err(NumError::range(FUNC, s));
    }
    // `un` is at most 2^63 here; 2^63 only when negative, which wraps to `i64::MIN`.
    #[allow(clippy::cast_possible_wrap)]
    let n = un as i64;
    Ok(if neg { n.wrapping_neg() } else { n })
}

/// Go's `strconv.ParseUint(s, base, bit_size)` (no sign allowed); bases and bit sizes as
/// [`parse_int`].
pub fn parse_uint(s: &str, base: u32, bit_size: u32) -> Result<u64, NumError<'_>> {
    let bit_size = if bit_size == 0 { 64 } else { bit_size.min(64) };
    parse_uint_in(s, base, bit_size).map_err(|kind| NumError {
        func: "ParseUint",
        num: s,
        kind,
    })
}

/// `ParseUint`'s work, the error without its text.
fn parse_uint_in(s0: &str, base: u32, bit_size: u32) -> Result<u64, NumErrorKind> {
    if s0.is_empty() {
        return Err(NumErrorKind::Syntax);
    }
    let base0 = base == 0;
    let b = s0.as_bytes();
    let (base, digits): (u64, &[u8]) = match base {
        0 if b[0] == b'0' => match b.get(1).map(|c| c | 0x20) {
            Some(b'b') if b.len() >= 3 => (2, &b[2..]),
            Some(b'o') if b.len() >= 3 => (8, &b[2..]),
            Some(b'x') if b.len() >= 3 => (16, &b[2..]),
            _ => (8, &b[1..]),
        },
        0 => (10, b),
        2..=36 => (u64::from(base), b),
        _ => return Err(NumErrorKind::Syntax),
    };
    let max = if bit_size >= 64 {
        u64::MAX
    } else {
        (1u64 << bit_size) - 1
    };
    let mut n: u64 = 0;
    let mut underscores = false;
    for &c in digits {
        let d = match c {
            b'_' if base0 => {
                underscores = true;
                continue;
            }
            b'0'..=b'9' => u64::from(c - b'0'),
            _ if c.is_ascii_alphabetic() => u64::from((c | 0x20) - b'a' + 10),
            _ => return Err(NumErrorKind::Syntax),
        };
        if d >= base {
            return Err(NumErrorKind::Syntax);
        }
        n = n
            .checked_mul(base)
            .and_then(|n| n.checked_add(d))
            .filter(|&n| n <= max)
            .ok_or(NumErrorKind::Range)?;
    }
    if underscores && !underscore_ok(s0) {
        return Err(NumErrorKind::Syntax);
    }
    Ok(n)
}

/// Go's `underscoreOK`: every `_` sits between digits, or between a base prefix and a digit.
fn underscore_ok(s: &str) -> bool {
    let (_, s) = split_sign(s);
    let b = s.as_bytes();
    let mut saw = b'^';
    let mut i = 0;
    let mut hex = false;
    if b.len() >= 2 && b[0] == b'0' && matches!(b[1] | 0x20, b'b' | b'o' | b'x') {
        i = 2;
        saw = b'0';
        hex = b[1] | 0x20 == b'x';
    }
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_digit() || (hex && (c | 0x20).is_ascii_hexdigit()) {
            saw = b'0';
        } else if c == b'_' {
            if saw != b'0' {
                return false;
            }
            saw = b'_';
        } else {
            if saw == b'_' {
                return false;
            }
            saw = b'!';
        }
        i += 1;
    }
    saw != b'_'
}

/// Go's `strconv.ParseFloat(s, 64)`: decimal and hexadecimal (`0x1.8p3`) forms with `_`
/// separators, `inf`/`infinity` (any case, optional sign) and `nan` (any case, no sign); a
/// value beyond float64 is a range error.
pub fn parse_float(s: &str) -> Result<f64, NumError<'_>> {
    const FUNC: &str = "ParseFloat";
    let syntax = || NumError::syntax(FUNC, s);
    let (neg, body) = split_sign(s);
    if body.eq_ignore_ascii_case("inf") || body.eq_ignore_ascii_case("infinity") {
        return Ok(if neg {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        });
    }
    if s.eq_ignore_ascii_case("nan") {
        return Ok(f64::NAN);
    }
    let clean: Cow<'_, str> = if body.contains('_') {
        if !underscore_ok(s) {
            return Err(syntax());
        }
        Cow::Owned(body.chars().filter(|&c| c != '_').collect())
    } else {
        Cow::Borrowed(body)
    };
    let hex = clean.get(..2).is_some_and(|p| p.eq_ignore_ascii_case("0x"));
    let v = if hex {
        parse_hex_float(&clean[2..]).ok_or_else(syntax)?
    } else {
        if !decimal_syntax(clean.as_bytes()) {
            return Err(syntax());
        }
        clean.parse::<f64>().map_err(|_| syntax())?
    };
    if v.is_infinite() {
        return Err(NumError::range(FUNC, s));
    }
    Ok(if neg { -v } else { v })
}

/// Go's decimal float syntax without sign and separators: digits with at most one `.` (at least
/// one digit), then an optional exponent: `e` or `E`, an optional sign, at least one digit.
fn decimal_syntax(b: &[u8]) -> bool {
    let mut i = 0;
    let (mut dot, mut digits) = (false, false);
    while let Some(&c) = b.get(i) {
        match c {
            b'0'..=b'9' => digits = true,
            b'.' if !dot => dot = true,
            _ => break,
        }
        i += 1;
    }
    if !digits {
        return false;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if !b.get(i).is_some_and(u8::is_ascii_digit) {
            return false;
        }
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
    }
    i == b.len()
}

/// The hexadecimal mantissa and binary exponent after `0x` (the `p` exponent is required).
fn parse_hex_float(s: &str) -> Option<f64> {
    let (mant, exp) = s.split_once(['p', 'P'])?;
    let exp: i64 = exp.parse().ok()?;
    let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let mut m: u128 = 0;
    let mut e2: i64 = exp;
    let mut sticky = false;
    for (i, c) in int.chars().chain(frac.chars()).enumerate() {
        let d = c.to_digit(16)?;
        if i >= int.len() {
            e2 -= 4;
        }
        if m >> 120 == 0 {
            m = (m << 4) | u128::from(d);
        } else {
            if i < int.len() {
                e2 += 4;
            }
            sticky |= d != 0;
        }
    }
    if sticky {
        m |= 1;
    }
    #[allow(clippy::cast_precision_loss)]
    let mut v = m as f64;
    let mut e = e2;
    while e > 0 {
        let k = e.min(1000);
        v *= 2f64.powi(i32::try_from(k).unwrap_or(1000));
        e -= k;
    }
    while e < 0 {
        let k = (-e).min(1000);
        v /= 2f64.powi(i32::try_from(k).unwrap_or(1000));
        e += k;
    }
    Some(v)
}

#[cfg(test)]
mod tests;
