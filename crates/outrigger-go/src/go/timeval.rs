//! Go's `time.Time`: an instant (Unix seconds and nanoseconds), the location it is shown in and,
//! for a time read from the clock, its monotonic reading; with `String`, `Add`, `Sub`, `In`,
//! `Unix` and `time.Date`'s normalisation.

use super::layout;
use super::time::{civil_from_days, days_from_civil};
use super::zone::{Location, ZoneAt};

/// A Go `time.Time`.
#[derive(Debug, Clone)]
pub struct Time {
    /// Seconds since 1970-01-01T00:00:00Z.
    pub unix: i64,
    /// Nanoseconds within the second (0..1e9).
    pub nsec: u32,
    /// The location the time is shown in.
    pub loc: Location,
    /// The monotonic clock reading (nanoseconds since the process started) of a time read from
    /// the clock; Go prints it as ` m=+S.NNNNNNNNN`.
    pub mono: Option<i64>,
}

/// A calendar date and clock time, as `time.Date` takes them (any field may overflow its range:
/// `time.Date` normalises).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Civil {
    /// Year.
    pub year: i64,
    /// Month, 1-12.
    pub month: i64,
    /// Day of the month, 1-31.
    pub day: i64,
    /// Hour, 0-23.
    pub hour: i64,
    /// Minute.
    pub minute: i64,
    /// Second.
    pub second: i64,
    /// Nanosecond.
    pub nsec: i64,
}

/// A time's fields in its location, as `Format` prints them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parts {
    /// Year.
    pub year: i64,
    /// Month, 1-12.
    pub month: i64,
    /// Day of the month.
    pub day: i64,
    /// Hour, 0-23.
    pub hour: i64,
    /// Minute.
    pub minute: i64,
    /// Second.
    pub second: i64,
    /// Nanosecond.
    pub nsec: u32,
    /// Day of the week, 0 = Sunday.
    pub weekday: i64,
    /// Day of the year, 1-366.
    pub yday: i64,
    /// The zone in effect.
    pub zone: ZoneAt,
}

/// The seconds from 1970 back to Go's zero time, 0001-01-01T00:00:00Z.
pub const ZERO_UNIX: i64 = -62_135_596_800;

impl Time {
    /// Go's zero `time.Time` (January 1, year 1, 00:00:00 UTC).
    pub fn zero() -> Time {
        Time {
            unix: ZERO_UNIX,
            nsec: 0,
            loc: Location::Utc,
            mono: None,
        }
    }

    /// `time.Unix(sec, 0)`: in the local zone.
    pub fn from_unix(sec: i64) -> Time {
        Time {
            unix: sec,
            nsec: 0,
            loc: Location::Local,
            mono: None,
        }
    }

    /// `time.Date(...)` in `loc`: out-of-range fields carry over (month 13 is January of the
    /// next year), and the wall time is found in the zone as Go finds it.
    pub fn date(c: &Civil, loc: Location) -> Time {
        let mut year = c.year;
        let mut month = c.month - 1;
        year += month.div_euclid(12);
        month = month.rem_euclid(12);
        let mut sec = c.second + c.nsec.div_euclid(1_000_000_000);
        let nsec = c.nsec.rem_euclid(1_000_000_000) as u32;
        let mut min = c.minute + sec.div_euclid(60);
        sec = sec.rem_euclid(60);
        let mut hour = c.hour + min.div_euclid(60);
        min = min.rem_euclid(60);
        let day = c.day + hour.div_euclid(24);
        hour = hour.rem_euclid(24);
        let days = days_from_civil(year, month + 1, 1) + day - 1;
        let mut unix = days * 86_400 + hour * 3600 + min * 60 + sec;
        // The offset at the wall time read as UTC, corrected when that lands in another period.
        let offset = loc.lookup(unix).offset;
        if offset != 0 {
            unix -= i64::from(loc.lookup(unix - i64::from(offset)).offset);
        }
        Time {
            unix,
            nsec,
            loc,
            mono: None,
        }
    }

    /// The fields in the time's own location.
    pub fn parts(&self) -> Parts {
        let zone = self.loc.lookup(self.unix);
        let local = self.unix + i64::from(zone.offset);
        let days = local.div_euclid(86_400);
        let secs = local.rem_euclid(86_400);
        let (year, month, day) = civil_from_days(days);
        Parts {
            year,
            month,
            day,
            hour: secs / 3600,
            minute: secs % 3600 / 60,
            second: secs % 60,
            nsec: self.nsec,
            weekday: (days + 4).rem_euclid(7),
            yday: days - days_from_civil(year, 1, 1) + 1,
            zone,
        }
    }

    /// `Format(layout)`.
    pub fn format(&self, layout: &str) -> String {
        layout::format(self, layout)
    }

    /// `String()`: `2006-01-02 15:04:05.999999999 -0700 MST`, then the monotonic reading.
    pub fn string(&self) -> String {
        let mut s = self.format("2006-01-02 15:04:05.999999999 -0700 MST");
        if let Some(m) = self.mono {
            let sign = if m < 0 { '-' } else { '+' };
            let u = m.unsigned_abs();
            s.push_str(&format!(
                " m={sign}{}.{:09}",
                u / 1_000_000_000,
                u % 1_000_000_000
            ));
        }
        s
    }

    /// `IsZero()`.
    pub fn is_zero(&self) -> bool {
        self.unix == ZERO_UNIX && self.nsec == 0
    }

    /// `In(loc)` (which drops the monotonic reading).
    pub fn in_location(&self, loc: Location) -> Time {
        Time {
            loc,
            mono: None,
            ..self.clone()
        }
    }

    /// `Add(d)`, `d` in nanoseconds (the monotonic reading moves too).
    pub fn add(&self, d: i64) -> Time {
        let total = i128::from(self.nsec) + i128::from(d);
        let secs = total.div_euclid(1_000_000_000) as i64;
        Time {
            unix: self.unix.saturating_add(secs),
            nsec: total.rem_euclid(1_000_000_000) as u32,
            loc: self.loc.clone(),
            mono: self.mono.map(|m| m.saturating_add(d)),
        }
    }

    /// `Sub(u)` in nanoseconds, saturating at the limits of `time.Duration` (monotonic readings
    /// are used when both have one, as Go does).
    pub fn sub(&self, u: &Time) -> i64 {
        if let (Some(a), Some(b)) = (self.mono, u.mono) {
            return a.saturating_sub(b);
        }
        let d = (i128::from(self.unix) - i128::from(u.unix)) * 1_000_000_000
            + (i128::from(self.nsec) - i128::from(u.nsec));
        d.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
    }

    /// `MarshalJSON`: RFC 3339 with nanoseconds, in the time's zone.
    pub fn rfc3339_nano(&self) -> String {
        self.format("2006-01-02T15:04:05.999999999Z07:00")
    }
}

/// `Duration.Round(time.Second)` of `d` nanoseconds (halves away from zero, saturating).
pub fn round_to_second(d: i64) -> i64 {
    const S: i64 = 1_000_000_000;
    let r = d % S;
    if d < 0 {
        let r = -r;
        if r + r < S {
            return d + r;
        }
        d.checked_sub(S - r).unwrap_or(i64::MIN)
    } else {
        if r + r < S {
            return d - r;
        }
        d.checked_add(S - r).unwrap_or(i64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn date_normalises_and_prints_as_go() {
        let c = Civil {
            year: 2023,
            month: 13,
            day: 32,
            hour: 24,
            minute: 0,
            second: 0,
            nsec: 1_500_000_000,
        };
        let t = Time::date(&c, Location::Utc);
        assert_eq!(t.string(), "2024-02-02 00:00:01.5 +0000 UTC");
        assert_eq!(Time::zero().string(), "0001-01-01 00:00:00 +0000 UTC");
        assert!(Time::zero().is_zero());
        let fixed = t.in_location(Location::Fixed("".into(), -3 * 3600 - 1800));
        assert_eq!(fixed.string(), "2024-02-01 20:30:01.5 -0330 -0330");
        let m = Time {
            mono: Some(1_234_000_000),
            ..t
        };
        assert_eq!(
            m.add(-2_000_000_000).string(),
            "2024-02-01 23:59:59.5 +0000 UTC m=-0.766000000"
        );
    }

    #[test]
    fn rounds_half_away_from_zero() {
        assert_eq!(round_to_second(1_500_000_000), 2_000_000_000);
        assert_eq!(round_to_second(-1_500_000_000), -2_000_000_000);
        assert_eq!(round_to_second(1_499_999_999), 1_000_000_000);
        assert_eq!(round_to_second(i64::MAX), i64::MAX);
    }
}
