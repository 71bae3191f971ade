//! `metav1.Time` JSON round-trip: `time.Parse(time.RFC3339, s)` then
//! `t.UTC().Format(time.RFC3339)` (second precision, `Z`).

const LAYOUT: &str = "2006-01-02T15:04:05Z07:00";

/// A timestamp Go's `time.Parse(time.RFC3339, ...)` refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("parsing time {0:?} as {LAYOUT:?}: cannot parse {0:?} as \"2006\"")]
pub struct TimeError(pub String);

/// The zero `metav1.Time` in RFC 3339 (marshals as `null`).
pub const ZERO: &str = "0001-01-01T00:00:00Z";

/// Canonical JSON string of an RFC 3339 timestamp as `metav1.Time` re-emits it.
pub fn canonicalize(s: &str) -> Result<String, TimeError> {
    let secs = parse(s).ok_or_else(|| TimeError(s.to_string()))?;
    Ok(format_utc(secs))
}

fn num(b: &[u8], from: usize, len: usize) -> Option<i64> {
    let part = b.get(from..from + len)?;
    if !part.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(part.iter().fold(0i64, |a, &d| a * 10 + i64::from(d - b'0')))
}

fn expect(b: &[u8], at: usize, c: u8) -> Option<()> {
    (b.get(at) == Some(&c)).then_some(())
}

/// Seconds since 0001-01-01T00:00:00Z... expressed relative to the Unix epoch.
fn parse(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let year = num(b, 0, 4)?;
    expect(b, 4, b'-')?;
    let month = num(b, 5, 2)?;
    expect(b, 7, b'-')?;
    let day = num(b, 8, 2)?;
    expect(b, 10, b'T')?;
    let hour = num(b, 11, 2)?;
    expect(b, 13, b':')?;
    let min = num(b, 14, 2)?;
    expect(b, 16, b':')?;
    let sec = num(b, 17, 2)?;
    let mut pos = 19;
    if b.get(pos) == Some(&b'.') {
        pos += 1;
        let start = pos;
        while b.get(pos).is_some_and(u8::is_ascii_digit) {
            pos += 1;
        }
        if pos == start {
            return None;
        }
    }
    let offset = match b.get(pos)? {
        b'Z' if pos + 1 == b.len() => 0,
        &c @ (b'+' | b'-') if pos + 6 == b.len() => {
            let oh = num(b, pos + 1, 2)?;
            expect(b, pos + 3, b':')?;
            let om = num(b, pos + 4, 2)?;
            if oh >= 24 || om >= 60 {
                return None;
            }
            let o = oh * 3600 + om * 60;
            if c == b'-' {
                -o
            } else {
                o
            }
        }
        _ => return None,
    };
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    if hour >= 24 || min >= 60 || sec >= 60 {
        return None;
    }
    Some(days_from_civil(year, month, day) * 86400 + hour * 3600 + min * 60 + sec - offset)
}

/// Is `y` a leap year (proleptic Gregorian)?
pub fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

/// Days in month `m` (1-12) of year `y`.
pub fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm); `m` is
/// 1-12, `d` 1-31.
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The proleptic Gregorian date (year, month 1-12, day 1-31) of a day count since 1970-01-01.
pub fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

fn format_utc(secs: i64) -> String {
    let (days, rem) = (secs.div_euclid(86400), secs.rem_euclid(86400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_second_precision() {
        assert_eq!(
            canonicalize("2024-01-02T03:04:05Z").unwrap(),
            "2024-01-02T03:04:05Z"
        );
        assert_eq!(
            canonicalize("2024-01-02T03:04:05.999Z").unwrap(),
            "2024-01-02T03:04:05Z"
        );
        assert_eq!(
            canonicalize("2024-01-01T01:00:00+02:00").unwrap(),
            "2023-12-31T23:00:00Z"
        );
        assert_eq!(
            canonicalize("2024-02-29T23:30:00-01:00").unwrap(),
            "2024-03-01T00:30:00Z"
        );
        assert_eq!(canonicalize(ZERO).unwrap(), ZERO);
    }

    #[test]
    fn invalid_times_are_errors() {
        for bad in [
            "",
            "2024-01-02",
            "2024-13-01T00:00:00Z",
            "2023-02-29T00:00:00Z",
            "2024-01-02T03:04:05",
            "x",
        ] {
            let e = canonicalize(bad).unwrap_err().to_string();
            assert!(e.starts_with("parsing time"), "{bad}: {e}");
        }
    }
}
