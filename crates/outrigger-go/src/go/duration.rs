//! `google.protobuf.Duration`: parsing (Go `time.ParseDuration`, as golang/protobuf jsonpb
//! decodes it) and legacy-jsonpb formatting (`"45s"`, `"1.500s"`).

use crate::go::quote::quote as go_quote;

/// Nanoseconds per second.
const NANOS_PER_SEC: i128 = 1_000_000_000;
/// Largest Go `time.Duration` (int64 nanoseconds).
const MAX_GO_DURATION: u128 = i64::MAX as u128;

/// A protobuf Duration as a signed nanosecond count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Duration {
    /// Total nanoseconds.
    pub nanos: i128,
}

impl Duration {
    /// Duration of `secs` whole seconds.
    pub fn from_secs(secs: i64) -> Duration {
        Duration {
            nanos: i128::from(secs) * NANOS_PER_SEC,
        }
    }

    /// Whole seconds (truncated towards zero), as in `Duration.seconds`.
    pub fn seconds(&self) -> i64 {
        (self.nanos / NANOS_PER_SEC) as i64
    }

    /// Nanosecond remainder, as in `Duration.nanos` (same sign as the seconds).
    pub fn subsec_nanos(&self) -> i32 {
        (self.nanos % NANOS_PER_SEC) as i32
    }

    /// Legacy jsonpb rendering: seconds with 0, 3, 6 or 9 fractional digits and suffix `s`.
    pub fn to_jsonpb(&self) -> String {
        let sign = if self.nanos < 0 { "-" } else { "" };
        let abs = self.nanos.unsigned_abs();
        let secs = abs / NANOS_PER_SEC as u128;
        let frac = abs % NANOS_PER_SEC as u128;
        let frac_str = if frac == 0 {
            String::new()
        } else if frac.is_multiple_of(1_000_000) {
            format!(".{:03}", frac / 1_000_000)
        } else if frac.is_multiple_of(1_000) {
            format!(".{:06}", frac / 1_000)
        } else {
            format!(".{frac:09}")
        };
        format!("{sign}{secs}{frac_str}s")
    }
}

/// A duration Go's `time.ParseDuration` refuses, with Go's text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Not of the duration form, or out of range.
    #[error("time: invalid duration {}", go_quote(.0))]
    Invalid(String),
    /// A number without its unit.
    #[error("time: missing unit in duration {}", go_quote(.0))]
    MissingUnit(String),
    /// A unit Go does not know.
    #[error("time: unknown unit {} in duration {}", go_quote(.unit), go_quote(.duration))]
    UnknownUnit {
        /// The unit given.
        unit: String,
        /// The whole duration text.
        duration: String,
    },
}

/// Parse a duration string with Go's `time.ParseDuration` grammar
/// (`[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+`, units `ns us µs μs ms s m h`, bare `0` allowed).
/// Errors use Go's texts (`time: invalid duration "x"`).
pub fn parse_go_duration(s: &str) -> Result<Duration, DurationError> {
    let invalid = || DurationError::Invalid(s.to_string());
    let (neg, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Ok(Duration { nanos: 0 });
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let (value, after) = parse_component(rest, s)?;
        total = total.checked_add(value).ok_or_else(invalid)?;
        if total > MAX_GO_DURATION + u128::from(neg) {
            return Err(invalid());
        }
        rest = after;
    }
    let nanos = total as i128;
    Ok(Duration {
        nanos: if neg { -nanos } else { nanos },
    })
}

/// Parse one `<number><unit>` component; returns its nanoseconds and the remaining text.
fn parse_component<'a>(rest: &'a str, whole: &str) -> Result<(u128, &'a str), DurationError> {
    let invalid = || DurationError::Invalid(whole.to_string());
    let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
    let int_part = &rest[..int_len];
    let mut after = &rest[int_len..];
    let mut frac_part = "";
    if let Some(stripped) = after.strip_prefix('.') {
        let frac_len = stripped.bytes().take_while(u8::is_ascii_digit).count();
        frac_part = &stripped[..frac_len];
        after = &stripped[frac_len..];
        if int_len == 0 && frac_len == 0 {
            return Err(invalid());
        }
    } else if int_len == 0 {
        return Err(invalid());
    }
    let unit_len = after
        .char_indices()
        .find(|(_, c)| *c == '.' || c.is_ascii_digit())
        .map_or(after.len(), |(i, _)| i);
    if unit_len == 0 {
        return Err(DurationError::MissingUnit(whole.to_string()));
    }
    let unit = &after[..unit_len];
    let scale: u128 = match unit {
        "ns" => 1,
        "us" | "µs" | "μs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        _ => {
            return Err(DurationError::UnknownUnit {
                unit: unit.to_string(),
                duration: whole.to_string(),
            })
        }
    };
    let int_val: u128 = if int_part.is_empty() {
        0
    } else {
        int_part.parse().map_err(|_| invalid())?
    };
    let mut value = int_val.checked_mul(scale).ok_or_else(invalid)?;
    // Fraction: Go accumulates digits while they fit, then scales (truncating).
    let mut frac_val: u128 = 0;
    let mut frac_scale: u128 = 1;
    // 18 digits keep `frac_val * scale` (scale ≤ 3.6e12) far inside u128; further digits
    // cannot change the nanosecond result.
    for d in frac_part.bytes().take(18) {
        frac_val = frac_val * 10 + u128::from(d - b'0');
        frac_scale *= 10;
    }
    value = value
        .checked_add(frac_val * scale / frac_scale)
        .ok_or_else(invalid)?;
    if value > MAX_GO_DURATION + 1 {
        return Err(invalid());
    }
    Ok((value, &after[unit_len..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> String {
        parse_go_duration(s)
            .map(|d| d.to_jsonpb())
            .unwrap_or_else(|e| e.to_string())
    }

    #[test]
    fn parses_go_syntax_and_formats_jsonpb() {
        assert_eq!(p("45s"), "45s");
        assert_eq!(p("1.5s"), "1.500s");
        assert_eq!(p("1m"), "60s");
        assert_eq!(p("1h30m"), "5400s");
        assert_eq!(p("10ms"), "0.010s");
        assert_eq!(p("1us"), "0.000001s");
        assert_eq!(p("1ns"), "0.000000001s");
        assert_eq!(p("-1.5s"), "-1.500s");
        assert_eq!(p("0"), "0s");
        assert_eq!(p("0s"), "0s");
        assert_eq!(p(".5s"), "0.500s");
        assert_eq!(
            p("1.123456789123456789123456789123456789h"),
            "4044.444440844s"
        );
        assert_eq!(p("1.5h2m"), "5520s");
    }

    #[test]
    fn go_error_texts() {
        assert_eq!(p("x"), "time: invalid duration \"x\"");
        assert_eq!(p("1"), "time: missing unit in duration \"1\"");
        assert_eq!(p("1d"), "time: unknown unit \"d\" in duration \"1d\"");
        assert_eq!(p(""), "time: invalid duration \"\"");
        assert_eq!(p("."), "time: invalid duration \".\"");
        assert_eq!(p("9999999999h"), "time: invalid duration \"9999999999h\"");
    }

    #[test]
    fn seconds_and_nanos_split() {
        let d = parse_go_duration("-1.5s").unwrap();
        assert_eq!((d.seconds(), d.subsec_nanos()), (-1, -500_000_000));
    }
}
