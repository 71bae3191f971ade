//! Sprig's date functions (`date.go`) over Go's `time.Time` ([`crate::go::timeval`]): layouts
//! are Go's, zones come from the tz database as `time.LoadLocation` reads it, and the clock is a
//! [`Clock`] (the real one in the product, a fixed one in tests).

use std::rc::Rc;
use std::sync::OnceLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use super::signature::{register, Table, P};
use super::value::str_of;
use super::value::{IntTy, V};
use crate::go::duration::parse_go_duration;
use crate::go::layout::parse_in_location;
use crate::go::quote::format_duration;
use crate::go::timeval::{round_to_second, Time};
use crate::go::zone::{load_location, Location, ZoneError};

type R<T> = Result<T, String>;

/// What Sprig's clock functions (`now`, and `date`, `ago`, `durationRound` where they fall back
/// to the current time) read: the current time, and the zone `time.Local` stands for.
#[derive(Debug, Clone, Default)]
pub struct Clock {
    /// A fixed current time (Unix seconds, nanoseconds); `None` reads the system clock.
    fixed: Option<(i64, u32)>,
    /// The local zone; `None` is the process's (`TZ`, else `/etc/localtime`, as Go picks it).
    local: Option<Location>,
}

impl Clock {
    /// The system clock and the process's local zone (what the product uses).
    pub fn system() -> Clock {
        Clock::default()
    }

    /// A clock stopped at `unix` seconds and `nsec` nanoseconds, with `local` (a tz database
    /// name; `UTC`, `""` and `Local` are UTC) as the local zone.
    pub fn fixed(unix: i64, nsec: u32, local: &str) -> Result<Clock, ZoneError> {
        let local = match load_location(local)? {
            Location::Local => Location::Utc,
            loc => loc,
        };
        Ok(Clock {
            fixed: Some((unix, nsec.min(999_999_999))),
            local: Some(local),
        })
    }

    /// The local zone this clock sets for a render (`None`: the process's).
    pub fn local(&self) -> Option<&Location> {
        self.local.as_ref()
    }

    /// `time.Now()`: in the local zone; from the system clock it carries a monotonic reading.
    pub fn now(&self) -> Time {
        if let Some((unix, nsec)) = self.fixed {
            return Time {
                unix,
                nsec,
                loc: Location::Local,
                mono: None,
            };
        }
        static START: OnceLock<Instant> = OnceLock::new();
        let start = *START.get_or_init(Instant::now);
        let (unix, nsec) = match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(d) => (d.as_secs() as i64, d.subsec_nanos()),
            Err(e) => {
                // A system clock set before 1970.
                let before = -(e.duration().as_nanos() as i128);
                (
                    before.div_euclid(1_000_000_000) as i64,
                    before.rem_euclid(1_000_000_000) as u32,
                )
            }
        };
        Time {
            unix,
            nsec,
            loc: Location::Local,
            mono: Some(start.elapsed().as_nanos().min(i64::MAX as u128) as i64),
        }
    }
}

/// The table's entry of a function that reads the clock: the executor calls [`call_clock`].
fn needs_clock<'a>(_: &mut Vec<V<'a>>) -> R<V<'a>> {
    Err("needs the render's clock".into())
}

/// The functions that read the clock (`now`, `date`, `dateInZone`, `htmlDate`,
/// `htmlDateInZone`, `ago`, `durationRound`) run over `clock`; `None` for every other name.
pub fn call_clock<'a>(name: &str, clock: &Clock, args: &[V<'a>]) -> Option<R<V<'a>>> {
    let arg = |i: usize| args.get(i).cloned().unwrap_or(V::Nil);
    let s = |i: usize| args.get(i).map_or("", str_of).to_string();
    let out = match name {
        "now" => V::Time(Rc::new(clock.now())),
        "date" => V::string(date_in_zone(clock, &s(0), &arg(1), "Local")),
        "htmlDate" => V::string(date_in_zone(clock, "2006-01-02", &arg(0), "Local")),
        "htmlDateInZone" => V::string(date_in_zone(clock, "2006-01-02", &arg(0), &s(1))),
        "dateInZone" | "date_in_zone" => V::string(date_in_zone(clock, &s(0), &arg(1), &s(2))),
        "ago" => {
            let t = match arg(0) {
                V::Time(t) => (*t).clone(),
                V::Int(i, IntTy::Int | IntTy::I64) => Time::from_unix(i),
                _ => clock.now(),
            };
            V::string(format_duration(i128::from(round_to_second(
                clock.now().sub(&t),
            ))))
        }
        "durationRound" => {
            let d = match arg(0) {
                V::Str(s) => parse_go_duration(&s).map_or(0, |d| d.nanos as i64),
                V::Int(i, IntTy::I64) => i,
                V::Time(t) => clock.now().sub(&t),
                _ => 0,
            };
            V::string(duration_round(d))
        }
        _ => return None,
    };
    Some(Ok(out))
}

/// Sprig's `dateInZone`: a time, or an `int`/`int32`/`int64` of Unix seconds, else the current
/// time; shown in `zone` (UTC when the zone does not load).
fn date_in_zone(clock: &Clock, layout: &str, date: &V<'_>, zone: &str) -> String {
    let t = match date {
        V::Time(t) => (**t).clone(),
        V::Int(i, _) => Time::from_unix(*i),
        _ => clock.now(),
    };
    let loc = load_location(zone).unwrap_or(Location::Utc);
    t.in_location(loc).format(layout)
}

/// Sprig's `durationRound`: the most significant unit (a year is 365 days, a month 30), cut
/// down, without sign.
fn duration_round(d: i64) -> String {
    let u = d.unsigned_abs();
    const SECOND: u64 = 1_000_000_000;
    for (unit, name) in [
        (SECOND * 3600 * 24 * 365, "y"),
        (SECOND * 3600 * 24 * 30, "mo"),
        (SECOND * 3600 * 24, "d"),
        (SECOND * 3600, "h"),
        (SECOND * 60, "m"),
        (SECOND, "s"),
    ] {
        if u > unit {
            return format!("{}{name}", u / unit);
        }
    }
    "0s".into()
}

/// The functions that read the clock, with their parameters: [`call_clock`] runs them (`date`
/// and its kin fall back to the current time for an argument they do not take, `ago` and
/// `durationRound` measure from it).
const CLOCK_FUNCTIONS: &[(&str, &[P])] = &[
    ("now", &[]),
    ("date", &[P::Str, P::Any]),
    ("htmlDate", &[P::Any]),
    ("htmlDateInZone", &[P::Any, P::Str]),
    ("dateInZone", &[P::Str, P::Any, P::Str]),
    ("date_in_zone", &[P::Str, P::Any, P::Str]),
    ("ago", &[P::Any]),
    ("durationRound", &[P::Any]),
];

/// Does `name` read the clock (one of [`CLOCK_FUNCTIONS`])?
pub fn reads_clock(name: &str) -> bool {
    CLOCK_FUNCTIONS.iter().any(|(n, _)| *n == name)
}

/// Register Sprig's date functions.
pub fn register_dates(m: &mut Table) {
    use P::{Any, Str};
    for &(name, params) in CLOCK_FUNCTIONS {
        register(m, name, params, None, needs_clock);
    }
    register(m, "duration", &[Any], None, |a| {
        let n = match &a[0] {
            V::Str(s) => s.parse::<i64>().unwrap_or(0),
            V::Int(i, IntTy::I64) => *i,
            _ => 0,
        };
        Ok(V::string(format_duration(i128::from(n) * 1_000_000_000)))
    });
    for name in ["dateModify", "date_modify"] {
        register(m, name, &[Str, P::Time], None, |a| {
            let t = time_of(&a[1]);
            Ok(V::Time(Rc::new(match parse_go_duration(str_of(&a[0])) {
                Ok(d) => t.add(d.nanos as i64),
                Err(_) => t,
            })))
        });
    }
    for name in ["mustDateModify", "must_date_modify"] {
        register(m, name, &[Str, P::Time], None, |a| {
            let d = parse_go_duration(str_of(&a[0])).map_err(|e| e.to_string())?;
            Ok(V::Time(Rc::new(time_of(&a[1]).add(d.nanos as i64))))
        });
    }
    register(m, "toDate", &[Str, Str], None, |a| {
        let t = parse_in_location(str_of(&a[0]), str_of(&a[1]), &Location::Local);
        Ok(V::Time(Rc::new(t.unwrap_or_else(|_| Time::zero()))))
    });
    register(m, "mustToDate", &[Str, Str], None, |a| {
        parse_in_location(str_of(&a[0]), str_of(&a[1]), &Location::Local)
            .map(|t| V::Time(Rc::new(t)))
            .map_err(|e| e.to_string())
    });
    register(m, "unixEpoch", &[P::Time], None, |a| {
        Ok(V::string(time_of(&a[0]).unix.to_string()))
    });
}

/// `time.Time`'s methods without arguments that return a number, a string, a bool or a time
/// (`{{ now.Year }}`, `{{ (toDate "2006" "2024").Unix }}`); `None` for any other name.
pub fn method<'a>(t: &Time, name: &str) -> Option<V<'a>> {
    let p = || t.parts();
    let int = |i: i64| V::Int(i, IntTy::Int);
    let i64v = |i: i128| V::Int(i.clamp(i64::MIN.into(), i64::MAX.into()) as i64, IntTy::I64);
    let nanos = i128::from(t.unix) * 1_000_000_000 + i128::from(t.nsec);
    Some(match name {
        "Year" => int(p().year),
        "Day" => int(p().day),
        "Hour" => int(p().hour),
        "Minute" => int(p().minute),
        "Second" => int(p().second),
        "Nanosecond" => int(i64::from(t.nsec)),
        "YearDay" => int(p().yday),
        "Unix" => i64v(i128::from(t.unix)),
        "UnixMilli" => i64v(nanos.div_euclid(1_000_000)),
        "UnixMicro" => i64v(nanos.div_euclid(1_000)),
        "UnixNano" => i64v(nanos),
        "IsZero" => V::Bool(t.is_zero()),
        "String" => V::string(t.string()),
        "UTC" => V::Time(Rc::new(t.in_location(Location::Utc))),
        "Local" => V::Time(Rc::new(t.in_location(Location::Local))),
        _ => return None,
    })
}

fn time_of(v: &V<'_>) -> Time {
    match v {
        V::Time(t) => (**t).clone(),
        _ => Time::zero(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duration_round_takes_the_largest_unit_exceeded() {
        assert_eq!(duration_round(0), "0s");
        assert_eq!(duration_round(1_000_000_000), "0s");
        assert_eq!(duration_round(1_000_000_001), "1s");
        assert_eq!(duration_round(-90 * 60 * 1_000_000_000), "1h");
        assert_eq!(duration_round(i64::MIN), "292y");
    }

    #[test]
    fn a_fixed_clock_is_local_time() {
        let c = Clock::fixed(0, 5, "UTC").unwrap();
        let now = crate::go::zone::with_local(c.local(), || c.now().string());
        assert_eq!(now, "1970-01-01 00:00:00.000000005 +0000 UTC");
        assert!(Clock::fixed(0, 0, "../x").is_err());
        assert!(Clock::system().now().mono.is_some());
    }
}
