//! Go formatting helpers: `strconv.Quote`, duration `String()` (floats: [`crate::gofloat`]).

/// Go `strconv.Quote`.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
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
            c if c.is_control() || c == '\u{feff}' => {
                if (c as u32) < 0x10000 {
                    out.push_str(&format!("\\u{:04x}", c as u32));
                } else {
                    out.push_str(&format!("\\U{:08x}", c as u32));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
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
