//! Go's time layouts: `Time.Format` and `time.Parse` / `time.ParseInLocation` driven by a layout
//! written as the reference time `Mon Jan 2 15:04:05 MST 2006`, with Go's chunk rules (which
//! text is a field, which is literal), its parsing leniencies and its error texts.

use super::time::{days_in_month, is_leap};
use super::timeval::{Civil, Time};
use super::zone::Location;

/// One field of a layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Std {
    LongMonth,
    Month,
    NumMonth,
    ZeroMonth,
    LongWeekDay,
    WeekDay,
    Day,
    UnderDay,
    ZeroDay,
    UnderYearDay,
    ZeroYearDay,
    Hour,
    Hour12,
    ZeroHour12,
    Minute,
    ZeroMinute,
    Second,
    ZeroSecond,
    LongYear,
    Year,
    Pm,
    LowerPm,
    Tz,
    Iso8601Tz,
    Iso8601SecondsTz,
    Iso8601ShortTz,
    Iso8601ColonTz,
    Iso8601ColonSecondsTz,
    NumTz,
    NumSecondsTz,
    NumShortTz,
    NumColonTz,
    NumColonSecondsTz,
    /// `.000` (`zeros` true) or `.999`: digits, separator `.` or `,`.
    Frac {
        zeros: bool,
        digits: usize,
        sep: u8,
    },
}

const LONG_MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const LONG_DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

fn short(name: &str) -> &str {
    &name[..3]
}

fn starts_lower(s: &[u8]) -> bool {
    s.first().is_some_and(u8::is_ascii_lowercase)
}

fn digit_at(s: &[u8], i: usize) -> bool {
    s.get(i).is_some_and(u8::is_ascii_digit)
}

/// Go's `nextStdChunk`: the literal text before the first field, the field, and the rest.
fn next_chunk(layout: &str) -> (&str, Option<Std>, &str) {
    let l = layout.as_bytes();
    let has = |i: usize, s: &str| l.get(i..i + s.len()) == Some(s.as_bytes());
    let split = |i: usize, n: usize, std: Std| (&layout[..i], Some(std), &layout[i + n..]);
    for i in 0..l.len() {
        match l[i] {
            b'J' if has(i, "Jan") => {
                if has(i, "January") {
                    return split(i, 7, Std::LongMonth);
                }
                if !starts_lower(&l[i + 3..]) {
                    return split(i, 3, Std::Month);
                }
            }
            b'M' if l.len() >= i + 3 => {
                if has(i, "Mon") {
                    if has(i, "Monday") {
                        return split(i, 6, Std::LongWeekDay);
                    }
                    if !starts_lower(&l[i + 3..]) {
                        return split(i, 3, Std::WeekDay);
                    }
                }
                if has(i, "MST") {
                    return split(i, 3, Std::Tz);
                }
            }
            b'0' => {
                if let Some(c @ b'1'..=b'6') = l.get(i + 1) {
                    let std = [
                        Std::ZeroMonth,
                        Std::ZeroDay,
                        Std::ZeroHour12,
                        Std::ZeroMinute,
                        Std::ZeroSecond,
                        Std::Year,
                    ][usize::from(c - b'1')];
                    return split(i, 2, std);
                }
                if has(i, "002") {
                    return split(i, 3, Std::ZeroYearDay);
                }
            }
            b'1' => {
                if has(i, "15") {
                    return split(i, 2, Std::Hour);
                }
                return split(i, 1, Std::NumMonth);
            }
            b'2' => {
                if has(i, "2006") {
                    return split(i, 4, Std::LongYear);
                }
                return split(i, 1, Std::Day);
            }
            b'_' => {
                if l.get(i + 1) == Some(&b'2') {
                    // `_2006` is a literal `_` followed by the year.
                    if has(i + 1, "2006") {
                        return (&layout[..i + 1], Some(Std::LongYear), &layout[i + 5..]);
                    }
                    return split(i, 2, Std::UnderDay);
                }
                if has(i, "__2") {
                    return split(i, 3, Std::UnderYearDay);
                }
            }
            b'3' => return split(i, 1, Std::Hour12),
            b'4' => return split(i, 1, Std::Minute),
            b'5' => return split(i, 1, Std::Second),
            b'P' if l.get(i + 1) == Some(&b'M') => return split(i, 2, Std::Pm),
            b'p' if l.get(i + 1) == Some(&b'm') => return split(i, 2, Std::LowerPm),
            b'-' => {
                for (s, std) in [
                    ("-070000", Std::NumSecondsTz),
                    ("-07:00:00", Std::NumColonSecondsTz),
                    ("-0700", Std::NumTz),
                    ("-07:00", Std::NumColonTz),
                    ("-07", Std::NumShortTz),
                ] {
                    if has(i, s) {
                        return split(i, s.len(), std);
                    }
                }
            }
            b'Z' => {
                for (s, std) in [
                    ("Z070000", Std::Iso8601SecondsTz),
                    ("Z07:00:00", Std::Iso8601ColonSecondsTz),
                    ("Z0700", Std::Iso8601Tz),
                    ("Z07:00", Std::Iso8601ColonTz),
                    ("Z07", Std::Iso8601ShortTz),
                ] {
                    if has(i, s) {
                        return split(i, s.len(), std);
                    }
                }
            }
            sep @ (b'.' | b',') => {
                if let Some(&ch @ (b'0' | b'9')) = l.get(i + 1) {
                    let mut j = i + 1;
                    while l.get(j) == Some(&ch) {
                        j += 1;
                    }
                    // Only a fractional second when the run of digits ends here.
                    if !digit_at(l, j) {
                        let std = Std::Frac {
                            zeros: ch == b'0',
                            digits: j - (i + 1),
                            sep,
                        };
                        return (&layout[..i], Some(std), &layout[j..]);
                    }
                }
            }
            _ => {}
        }
    }
    (layout, None, "")
}

/// Go's `appendInt`: `x` in decimal, zero-padded to `width` digits after any sign.
fn push_int(out: &mut String, x: i64, width: usize) {
    if x < 0 {
        out.push('-');
    }
    let digits = x.unsigned_abs().to_string();
    for _ in digits.len()..width {
        out.push('0');
    }
    out.push_str(&digits);
}

/// Go's `Time.Format(layout)`.
pub fn format(t: &Time, layout: &str) -> String {
    let c = t.parts();
    let mut out = String::with_capacity(layout.len() + 10);
    let mut rest = layout;
    loop {
        let (prefix, std, suffix) = next_chunk(rest);
        out.push_str(prefix);
        let Some(std) = std else { break };
        rest = suffix;
        match std {
            Std::Year => push_int(&mut out, c.year % 100, 2),
            Std::LongYear => push_int(&mut out, c.year, 4),
            Std::Month => out.push_str(short(LONG_MONTHS[c.month as usize - 1])),
            Std::LongMonth => out.push_str(LONG_MONTHS[c.month as usize - 1]),
            Std::NumMonth => push_int(&mut out, c.month, 0),
            Std::ZeroMonth => push_int(&mut out, c.month, 2),
            Std::WeekDay => out.push_str(short(LONG_DAYS[c.weekday as usize])),
            Std::LongWeekDay => out.push_str(LONG_DAYS[c.weekday as usize]),
            Std::Day => push_int(&mut out, c.day, 0),
            Std::UnderDay => {
                if c.day < 10 {
                    out.push(' ');
                }
                push_int(&mut out, c.day, 0);
            }
            Std::ZeroDay => push_int(&mut out, c.day, 2),
            Std::UnderYearDay => {
                if c.yday < 100 {
                    out.push(' ');
                    if c.yday < 10 {
                        out.push(' ');
                    }
                }
                push_int(&mut out, c.yday, 0);
            }
            Std::ZeroYearDay => push_int(&mut out, c.yday, 3),
            Std::Hour => push_int(&mut out, c.hour, 2),
            Std::Hour12 | Std::ZeroHour12 => {
                let h = match c.hour % 12 {
                    0 => 12,
                    h => h,
                };
                push_int(&mut out, h, if std == Std::Hour12 { 0 } else { 2 });
            }
            Std::Minute => push_int(&mut out, c.minute, 0),
            Std::ZeroMinute => push_int(&mut out, c.minute, 2),
            Std::Second => push_int(&mut out, c.second, 0),
            Std::ZeroSecond => push_int(&mut out, c.second, 2),
            Std::Pm => out.push_str(if c.hour >= 12 { "PM" } else { "AM" }),
            Std::LowerPm => out.push_str(if c.hour >= 12 { "pm" } else { "am" }),
            Std::Tz => {
                if c.zone.name.is_empty() {
                    let z = c.zone.offset / 60;
                    out.push(if z < 0 { '-' } else { '+' });
                    push_int(&mut out, i64::from(z.abs() / 60), 2);
                    push_int(&mut out, i64::from(z.abs() % 60), 2);
                } else {
                    out.push_str(&c.zone.name);
                }
            }
            Std::Frac { zeros, digits, sep } => {
                if !zeros && (digits == 0 || c.nsec == 0) {
                    continue;
                }
                let start = out.len();
                out.push(char::from(sep));
                push_int(&mut out, i64::from(c.nsec), 9);
                if digits < 9 {
                    out.truncate(out.len() - 9 + digits);
                }
                if !zeros {
                    while out.len() > start && out.ends_with('0') {
                        out.pop();
                    }
                    if out.len() == start + 1 {
                        out.pop();
                    }
                }
            }
            tz => push_offset(&mut out, tz, c.zone.offset),
        }
    }
    out
}

/// The numeric zone fields: `Z` for UTC in the ISO 8601 forms, else `±hh[:mm[:ss]]`.
fn push_offset(out: &mut String, std: Std, offset: i32) {
    use Std::*;
    let iso = matches!(
        std,
        Iso8601Tz | Iso8601ColonTz | Iso8601SecondsTz | Iso8601ShortTz | Iso8601ColonSecondsTz
    );
    if offset == 0 && iso {
        out.push('Z');
        return;
    }
    let mut zone = offset / 60;
    let mut abs = offset;
    if zone < 0 {
        out.push('-');
        zone = -zone;
        abs = -abs;
    } else {
        out.push('+');
    }
    push_int(out, i64::from(zone / 60), 2);
    let colon = matches!(
        std,
        Iso8601ColonTz | NumColonTz | Iso8601ColonSecondsTz | NumColonSecondsTz
    );
    if colon {
        out.push(':');
    }
    if !matches!(std, NumShortTz | Iso8601ShortTz) {
        push_int(out, i64::from(zone % 60), 2);
    }
    if matches!(
        std,
        Iso8601SecondsTz | NumSecondsTz | NumColonSecondsTz | Iso8601ColonSecondsTz
    ) {
        if matches!(std, NumColonSecondsTz | Iso8601ColonSecondsTz) {
            out.push(':');
        }
        push_int(out, i64::from(abs % 60), 2);
    }
}

/// Go's `time.ParseError`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.text())]
pub struct ParseError {
    layout: String,
    value: String,
    layout_elem: String,
    value_elem: String,
    message: String,
}

impl ParseError {
    fn text(&self) -> String {
        if self.message.is_empty() {
            format!(
                "parsing time {} as {}: cannot parse {} as {}",
                quote(&self.value),
                quote(&self.layout),
                quote(&self.value_elem),
                quote(&self.layout_elem)
            )
        } else {
            format!("parsing time {}{}", quote(&self.value), self.message)
        }
    }
}

/// Go's `time.quote`: `"` and `\` escaped, other bytes outside printable ASCII as `\xNN`.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for ch in s.chars() {
        if !(' '..'\u{80}').contains(&ch) {
            let mut buf = [0u8; 4];
            for b in ch.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("\\x{b:02x}"));
            }
        } else {
            if ch == '"' || ch == '\\' {
                out.push('\\');
            }
            out.push(ch);
        }
    }
    out.push('"');
    out
}

/// Go's `getnum`: one or two digits (exactly two when `fixed`).
fn getnum(s: &str, fixed: bool) -> Option<(i64, &str)> {
    let b = s.as_bytes();
    if !digit_at(b, 0) {
        return None;
    }
    if !digit_at(b, 1) {
        if fixed {
            return None;
        }
        return Some((i64::from(b[0] - b'0'), &s[1..]));
    }
    Some((
        i64::from(b[0] - b'0') * 10 + i64::from(b[1] - b'0'),
        &s[2..],
    ))
}

/// Go's `getnum3`: one to three digits (exactly three when `fixed`).
fn getnum3(s: &str, fixed: bool) -> Option<(i64, &str)> {
    let b = s.as_bytes();
    let n = b.iter().take(3).take_while(|c| c.is_ascii_digit()).count();
    if n == 0 || (fixed && n != 3) {
        return None;
    }
    Some((s[..n].parse().ok()?, &s[n..]))
}

/// Go's `time.atoi`: an optional sign, then only digits (none reads as 0).
fn atoi(s: &str) -> Option<i64> {
    let (neg, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let mut x: i64 = 0;
    for c in digits.bytes() {
        x = x.checked_mul(10)?.checked_add(i64::from(c - b'0'))?;
    }
    Some(if neg { -x } else { x })
}

/// Go's `lookup`: the first name that `val` starts with, ignoring ASCII case.
fn lookup_name<'v>(names: &[&str], val: &'v str) -> Option<(usize, &'v str)> {
    names.iter().enumerate().find_map(|(i, n)| {
        let head = val.get(..n.len())?;
        head.eq_ignore_ascii_case(n).then(|| (i, &val[n.len()..]))
    })
}

/// Go's `skip`: match the layout's literal `prefix` (a run of spaces matches any run); on a
/// mismatch, the value from where it failed.
fn skip<'v>(mut value: &'v str, mut prefix: &str) -> Result<&'v str, &'v str> {
    while let Some(&p) = prefix.as_bytes().first() {
        if p == b' ' {
            if value.as_bytes().first().is_some_and(|&c| c != b' ') {
                return Err(value);
            }
            prefix = prefix.trim_start_matches(' ');
            value = value.trim_start_matches(' ');
            continue;
        }
        if value.as_bytes().first() != Some(&p) {
            return Err(value);
        }
        // Both start with the same byte; a multi-byte character matches whole or not at all.
        let n = prefix.chars().next().map_or(1, char::len_utf8);
        if !value.is_char_boundary(n) || value.as_bytes().get(..n) != prefix.as_bytes().get(..n) {
            return Err(value);
        }
        prefix = &prefix[n..];
        value = &value[n..];
    }
    Ok(value)
}

/// Go's `parseNanoseconds` over the first `n` bytes of `value` (separator included).
fn parse_nanos(value: &str, n: usize) -> Result<i64, Option<&'static str>> {
    if !matches!(value.as_bytes().first(), Some(b'.' | b',')) {
        return Err(None);
    }
    let n = n.min(10);
    let ns = value.get(1..n).and_then(atoi).ok_or(None)?;
    if ns < 0 {
        return Err(Some("fractional second"));
    }
    Ok(ns * 10i64.pow((10 - n) as u32))
}

/// Go's `parseSignedOffset`: the length of `±hh` (hours 0-23) at the start of `value`, 0 if none.
fn signed_offset_len(value: &str) -> usize {
    let b = value.as_bytes();
    if !matches!(b.first(), Some(b'+' | b'-')) {
        return 0;
    }
    let n = b[1..].iter().take_while(|c| c.is_ascii_digit()).count();
    if n == 0 {
        return 0;
    }
    match value[1..1 + n].parse::<u64>() {
        Ok(x) if x <= 23 => 1 + n,
        _ => 0,
    }
}

/// Go's `parseTimeZone`: the length of a zone abbreviation at the start of `value`.
fn zone_len(value: &str) -> Option<usize> {
    let b = value.as_bytes();
    if b.len() < 3 {
        return None;
    }
    if value.starts_with("ChST") || value.starts_with("MeST") {
        return Some(4);
    }
    if let Some(rest) = value.strip_prefix("GMT") {
        return Some(3 + signed_offset_len(rest));
    }
    if matches!(b[0], b'+' | b'-') {
        let n = signed_offset_len(value);
        return (n > 0).then_some(n);
    }
    let upper = b
        .iter()
        .take(6)
        .take_while(|c| c.is_ascii_uppercase())
        .count();
    match upper {
        5 if b[4] == b'T' => Some(5),
        4 if b[3] == b'T' || value.starts_with("WITA") => Some(4),
        3 => Some(3),
        _ => None,
    }
}

/// What was read of a value so far.
struct Fields {
    year: i64,
    month: i64,
    day: i64,
    yday: i64,
    hour: i64,
    min: i64,
    sec: i64,
    nsec: i64,
    pm: Option<bool>,
    utc: bool,
    offset: Option<i32>,
    zone_name: String,
}

/// Go's `time.ParseInLocation(layout, value, loc)` (`time.Parse` is this with UTC as the default
/// location and Local as the zone an offset or abbreviation is matched against).
pub fn parse_in_location(layout: &str, value: &str, loc: &Location) -> Result<Time, ParseError> {
    let err = |layout_elem: &str, value_elem: &str, message: String| ParseError {
        layout: layout.to_string(),
        value: value.to_string(),
        layout_elem: layout_elem.to_string(),
        value_elem: value_elem.to_string(),
        message,
    };
    let mut f = Fields {
        year: 0,
        month: -1,
        day: -1,
        yday: -1,
        hour: 0,
        min: 0,
        sec: 0,
        nsec: 0,
        pm: None,
        utc: false,
        offset: None,
        zone_name: String::new(),
    };
    let mut lay = layout;
    let mut val = value;
    loop {
        let (prefix, std, suffix) = next_chunk(lay);
        let std_str = &lay[prefix.len()..lay.len() - suffix.len()];
        val = skip(val, prefix).map_err(|at| err(prefix, at, String::new()))?;
        let Some(std) = std else {
            if !val.is_empty() {
                return Err(err("", val, format!(": extra text: {}", quote(val))));
            }
            break;
        };
        lay = suffix;
        let hold = val;
        let mut range: Option<&'static str> = None;
        let ok = parse_field(std, &mut val, &mut f, &mut range, lay);
        if let Some(what) = range {
            return Err(err(std_str, val, format!(": {what} out of range")));
        }
        if !ok {
            return Err(err(std_str, hold, String::new()));
        }
    }
    match f.pm {
        Some(true) if f.hour < 12 => f.hour += 12,
        Some(false) if f.hour == 12 => f.hour = 0,
        _ => {}
    }
    let bad = |m: &str| err("", val, format!(": {m}"));
    if f.yday >= 0 {
        let mut yday = f.yday;
        let (mut m, mut d) = (0, 0);
        if is_leap(f.year) {
            if yday == 31 + 29 {
                m = 2;
                d = 29;
            } else if yday > 31 + 29 {
                yday -= 1;
            }
        }
        if !(1..=365).contains(&yday) {
            return Err(bad("day-of-year out of range"));
        }
        if m == 0 {
            m = (yday - 1) / 31 + 1;
            if days_before(m + 1) < yday {
                m += 1;
            }
            d = yday - days_before(m);
        }
        if f.month >= 0 && f.month != m {
            return Err(bad("day-of-year does not match month"));
        }
        f.month = m;
        if f.day >= 0 && f.day != d {
            return Err(bad("day-of-year does not match day"));
        }
        f.day = d;
    } else {
        if f.month < 0 {
            f.month = 1;
        }
        if f.day < 0 {
            f.day = 1;
        }
    }
    if f.day < 1 || f.day > days_in_month(f.year, f.month) {
        return Err(bad("day out of range"));
    }
    let civil = Civil {
        year: f.year,
        month: f.month,
        day: f.day,
        hour: f.hour,
        minute: f.min,
        second: f.sec,
        nsec: f.nsec,
    };
    let date = |loc: Location| Time::date(&civil, loc);
    if f.utc {
        return Ok(date(Location::Utc));
    }
    if let Some(offset) = f.offset {
        let mut t = date(Location::Utc);
        t.unix -= i64::from(offset);
        let at = loc.lookup(t.unix);
        if at.offset == offset && (f.zone_name.is_empty() || at.name == f.zone_name) {
            t.loc = loc.clone();
            return Ok(t);
        }
        t.loc = Location::Fixed(f.zone_name.as_str().into(), offset);
        return Ok(t);
    }
    if !f.zone_name.is_empty() {
        let mut t = date(Location::Utc);
        if let Some(offset) = loc.lookup_name(&f.zone_name, t.unix) {
            t.unix -= i64::from(offset);
            t.loc = loc.clone();
            return Ok(t);
        }
        let offset = match f.zone_name.strip_prefix("GMT") {
            Some(n) if !n.is_empty() => atoi(n).unwrap_or(0) as i32 * 3600,
            _ => 0,
        };
        t.loc = Location::Fixed(f.zone_name.as_str().into(), offset);
        return Ok(t);
    }
    Ok(date(loc.clone()))
}

/// Days before the first of month `m` (1-13) in a non-leap year.
fn days_before(m: i64) -> i64 {
    (1..m).map(|k| days_in_month(2001, k)).sum()
}

/// Read one field of the value; false when it is not there (Go's `errBad`), `range` set when it
/// is out of range.
fn parse_field(
    std: Std,
    val: &mut &str,
    f: &mut Fields,
    range: &mut Option<&'static str>,
    layout_rest: &str,
) -> bool {
    let v = *val;
    let b = v.as_bytes();
    macro_rules! num {
        ($e:expr) => {
            match $e {
                Some((n, rest)) => {
                    *val = rest;
                    n
                }
                None => return false,
            }
        };
    }
    match std {
        Std::Year => {
            if b.len() < 2 {
                return false;
            }
            let Some(y) = v.get(..2).and_then(atoi) else {
                return false;
            };
            *val = &v[2..];
            f.year = if y >= 69 { y + 1900 } else { y + 2000 };
        }
        Std::LongYear => {
            if b.len() < 4 || !digit_at(b, 0) {
                return false;
            }
            let Some(y) = v.get(..4).and_then(atoi) else {
                return false;
            };
            *val = &v[4..];
            f.year = y;
        }
        Std::Month | Std::LongMonth => {
            let names: Vec<&str> = if std == Std::Month {
                LONG_MONTHS.iter().map(|m| short(m)).collect()
            } else {
                LONG_MONTHS.to_vec()
            };
            let Some((i, rest)) = lookup_name(&names, v) else {
                return false;
            };
            *val = rest;
            f.month = i as i64 + 1;
        }
        Std::NumMonth | Std::ZeroMonth => {
            f.month = num!(getnum(v, std == Std::ZeroMonth));
            if !(1..=12).contains(&f.month) {
                *range = Some("month");
            }
        }
        Std::WeekDay | Std::LongWeekDay => {
            let names: Vec<&str> = if std == Std::WeekDay {
                LONG_DAYS.iter().map(|d| short(d)).collect()
            } else {
                LONG_DAYS.to_vec()
            };
            let Some((_, rest)) = lookup_name(&names, v) else {
                return false;
            };
            *val = rest;
        }
        Std::Day | Std::UnderDay | Std::ZeroDay => {
            let v = if std == Std::UnderDay {
                v.strip_prefix(' ').unwrap_or(v)
            } else {
                v
            };
            f.day = num!(getnum(v, std == Std::ZeroDay));
        }
        Std::UnderYearDay | Std::ZeroYearDay => {
            let mut v = v;
            for _ in 0..2 {
                if std == Std::UnderYearDay {
                    v = v.strip_prefix(' ').unwrap_or(v);
                }
            }
            f.yday = num!(getnum3(v, std == Std::ZeroYearDay));
        }
        Std::Hour => {
            f.hour = num!(getnum(v, false));
            if !(0..24).contains(&f.hour) {
                *range = Some("hour");
            }
        }
        Std::Hour12 | Std::ZeroHour12 => {
            f.hour = num!(getnum(v, std == Std::ZeroHour12));
            if !(0..=12).contains(&f.hour) {
                *range = Some("hour");
            }
        }
        Std::Minute | Std::ZeroMinute => {
            f.min = num!(getnum(v, std == Std::ZeroMinute));
            if !(0..60).contains(&f.min) {
                *range = Some("minute");
            }
        }
        Std::Second | Std::ZeroSecond => {
            f.sec = num!(getnum(v, std == Std::ZeroSecond));
            if !(0..60).contains(&f.sec) {
                *range = Some("second");
                return true;
            }
            // A fractional second in the value that the layout does not ask for.
            let rest = *val;
            let rb = rest.as_bytes();
            if rb.len() >= 2 && matches!(rb[0], b'.' | b',') && digit_at(rb, 1) {
                if let (_, Some(Std::Frac { .. }), _) = next_chunk(layout_rest) {
                    return true;
                }
                let n = 2 + rb[2..].iter().take_while(|c| c.is_ascii_digit()).count();
                match parse_nanos(rest, n) {
                    Ok(ns) => f.nsec = ns,
                    Err(Some(what)) => *range = Some(what),
                    Err(None) => return false,
                }
                *val = &rest[n..];
            }
        }
        Std::Pm | Std::LowerPm => {
            if b.len() < 2 {
                return false;
            }
            let (pm, am) = if std == Std::Pm {
                ("PM", "AM")
            } else {
                ("pm", "am")
            };
            f.pm = match v.get(..2) {
                Some(p) if p == pm => Some(true),
                Some(p) if p == am => Some(false),
                _ => return false,
            };
            *val = &v[2..];
        }
        Std::Tz => {
            if let Some(rest) = v.strip_prefix("UTC") {
                f.utc = true;
                *val = rest;
                return true;
            }
            let Some(n) = zone_len(v) else { return false };
            f.zone_name = v[..n].to_string();
            *val = &v[n..];
        }
        Std::Frac {
            zeros: true,
            digits,
            ..
        } => {
            let n = 1 + digits;
            if b.len() < n {
                return false;
            }
            match parse_nanos(v, n) {
                Ok(ns) => f.nsec = ns,
                Err(Some(what)) => *range = Some(what),
                Err(None) => return false,
            }
            let Some(rest) = v.get(n..) else { return false };
            *val = rest;
        }
        Std::Frac { zeros: false, .. } => {
            if b.len() < 2 || !matches!(b[0], b'.' | b',') || !digit_at(b, 1) {
                return true;
            }
            let n = 1 + b[1..].iter().take_while(|c| c.is_ascii_digit()).count();
            match parse_nanos(v, n) {
                Ok(ns) => f.nsec = ns,
                Err(Some(what)) => *range = Some(what),
                Err(None) => return false,
            }
            *val = &v[n..];
        }
        tz => return parse_offset(tz, val, f, range),
    }
    true
}

/// The numeric zone fields (`Z` stands for UTC in the ISO 8601 forms).
fn parse_offset(
    std: Std,
    val: &mut &str,
    f: &mut Fields,
    range: &mut Option<&'static str>,
) -> bool {
    use Std::*;
    let v = *val;
    let b = v.as_bytes();
    let iso = matches!(
        std,
        Iso8601Tz | Iso8601ShortTz | Iso8601ColonTz | Iso8601SecondsTz | Iso8601ColonSecondsTz
    );
    if iso && b.first() == Some(&b'Z') {
        *val = &v[1..];
        f.utc = true;
        return true;
    }
    let len = match std {
        Iso8601ColonTz | NumColonTz => 6,
        NumShortTz | Iso8601ShortTz => 3,
        Iso8601ColonSecondsTz | NumColonSecondsTz => 9,
        Iso8601SecondsTz | NumSecondsTz => 7,
        _ => 5,
    };
    // Any byte that is not ASCII is neither a sign, a digit nor a colon.
    if b.len() < len || !b[..len].is_ascii() {
        return false;
    }
    let (hh, mm, ss, len) = match std {
        Iso8601ColonTz | NumColonTz => {
            if b.len() < 6 || b[3] != b':' {
                return false;
            }
            (&v[1..3], &v[4..6], "00", 6)
        }
        NumShortTz | Iso8601ShortTz => {
            if b.len() < 3 {
                return false;
            }
            (&v[1..3], "00", "00", 3)
        }
        Iso8601ColonSecondsTz | NumColonSecondsTz => {
            if b.len() < 9 || b[3] != b':' || b[6] != b':' {
                return false;
            }
            (&v[1..3], &v[4..6], &v[7..9], 9)
        }
        Iso8601SecondsTz | NumSecondsTz => {
            if b.len() < 7 {
                return false;
            }
            (&v[1..3], &v[3..5], &v[5..7], 7)
        }
        _ => {
            if b.len() < 5 {
                return false;
            }
            (&v[1..3], &v[3..5], "00", 5)
        }
    };
    let two = |s: &str| getnum(s, true).map(|(n, _)| n);
    let (Some(h), Some(m), Some(s)) = (two(hh), two(mm), two(ss)) else {
        return false;
    };
    if h > 24 {
        *range = Some("time zone offset hour");
    }
    if m > 60 {
        *range = Some("time zone offset minute");
    }
    if s > 60 {
        *range = Some("time zone offset second");
    }
    let offset = ((h * 60 + m) * 60 + s) as i32;
    *val = &v[len..];
    f.offset = Some(match b[0] {
        b'+' => offset,
        b'-' => -offset,
        _ => return false,
    });
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(unix: i64, nsec: u32) -> Time {
        Time {
            unix,
            nsec,
            loc: Location::Utc,
            mono: None,
        }
    }

    #[test]
    fn formats_the_reference_layouts() {
        // 2006-01-02T15:04:05.123Z, Go's reference time itself (in UTC).
        let t = utc(1_136_214_245, 123_000_000);
        assert_eq!(
            format(&t, "Mon Jan _2 15:04:05 MST 2006"),
            "Mon Jan  2 15:04:05 UTC 2006"
        );
        assert_eq!(
            format(&t, "2006-01-02T15:04:05.999999999Z07:00"),
            "2006-01-02T15:04:05.123Z"
        );
        assert_eq!(format(&t, "3:04PM .000 002 __2"), "3:04PM .123 002   2");
        assert_eq!(
            format(&t, "Monday January 06 -07:00:00"),
            "Monday January 06 +00:00:00"
        );
        // `Jan` before a lower-case letter is literal, as is `Mon` in `Month`.
        assert_eq!(format(&t, "Janx Month"), "Janx Month");
    }

    #[test]
    fn parses_and_says_why_not_as_go_does() {
        let t = parse_in_location("2006-01-02", "2024-02-29", &Location::Utc).unwrap();
        assert_eq!(t.unix, 1_709_164_800);
        let e = parse_in_location("2006-01-02", "2023-02-29", &Location::Utc).unwrap_err();
        assert_eq!(
            e.to_string(),
            "parsing time \"2023-02-29\": day out of range"
        );
        let e = parse_in_location("2006-01-02", "24-01-01", &Location::Utc).unwrap_err();
        assert_eq!(
            e.to_string(),
            "parsing time \"24-01-01\" as \"2006-01-02\": cannot parse \"24-01-01\" as \"2006\""
        );
        let e = parse_in_location("2006", "2024x", &Location::Utc).unwrap_err();
        assert_eq!(e.to_string(), "parsing time \"2024x\": extra text: \"x\"");
        let t = parse_in_location("15:04:05 -0700", "10:00:00.5 +0130", &Location::Utc).unwrap();
        assert_eq!((t.nsec, t.loc.lookup(0).offset), (500_000_000, 5400));
    }
}
