//! Go's `time.Location`: UTC, the local zone, fixed zones and the tz database's zones, loaded as
//! Go's `time.LoadLocation` loads them (the same directories, the same name checks, the TZif file
//! read by jiff), and the local zone chosen as Go's runtime chooses it (`TZ`, else
//! `/etc/localtime`, else UTC).

use std::cell::RefCell;
use std::sync::{Arc, OnceLock};

use jiff::tz::TimeZone;
use jiff::Timestamp;

/// A Go `*time.Location`.
#[derive(Debug, Clone)]
pub enum Location {
    /// `time.UTC` (also the location of the zero `time.Time`).
    Utc,
    /// `time.Local`: the zone [`local`] resolves to when the time is used.
    Local,
    /// `time.FixedZone(name, offset)`: what `time.Parse` makes of an offset or an abbreviation
    /// that is not the local zone's.
    Fixed(Arc<str>, i32),
    /// A zone of the tz database (`time.LoadLocation("Europe/Paris")`).
    Tz(TimeZone),
}

/// The zone in effect at an instant: its abbreviation (Go's zone name) and offset east of UTC
/// in seconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneAt {
    /// Abbreviation (`UTC`, `CET`, `-03`).
    pub name: String,
    /// Seconds east of UTC.
    pub offset: i32,
}

/// The directories Go's `time.LoadLocation` reads on Unix (`platformZoneSources`).
const ZONE_SOURCES: &[&str] = &[
    "/usr/share/zoneinfo/",
    "/usr/share/lib/zoneinfo/",
    "/usr/lib/locale/TZ/",
    "/etc/zoneinfo/",
];

/// Why Go's `time.LoadLocation` refuses a name (`unknown time zone NAME`, `time: invalid
/// location name`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ZoneError {
    /// A name with `..` or an absolute path.
    #[error("time: invalid location name")]
    InvalidName,
    /// No readable TZif file of that name.
    #[error("unknown time zone {0}")]
    Unknown(String),
}

fn read_tzif(dir: &str, name: &str) -> Option<TimeZone> {
    let data = std::fs::read(format!("{dir}{name}")).ok()?;
    TimeZone::tzif(name, &data).ok()
}

/// Go's `time.LoadLocation`: `""` and `"UTC"` are UTC, `"Local"` the local zone, anything else a
/// file of the tz database.
pub fn load_location(name: &str) -> Result<Location, ZoneError> {
    match name {
        "" | "UTC" => return Ok(Location::Utc),
        "Local" => return Ok(Location::Local),
        _ => {}
    }
    let dot_dot = name.split(['/', '\\']).any(|part| part == "..");
    if dot_dot || name.starts_with('/') || name.starts_with('\\') {
        return Err(ZoneError::InvalidName);
    }
    if let Some(dir) = std::env::var_os("ZONEINFO") {
        let dir = format!("{}/", dir.to_string_lossy());
        if let Some(tz) = read_tzif(&dir, name) {
            return Ok(Location::Tz(tz));
        }
    }
    ZONE_SOURCES
        .iter()
        .find_map(|dir| read_tzif(dir, name))
        .map(Location::Tz)
        .ok_or_else(|| ZoneError::Unknown(name.to_string()))
}

/// The process's local zone as Go's runtime picks it: `TZ` unset reads `/etc/localtime`; `TZ`
/// empty or `UTC` is UTC; `TZ=:NAME` and `TZ=NAME` load NAME (an absolute path as a file);
/// anything that does not load is UTC.
fn process_local() -> Location {
    let tz = match std::env::var("TZ") {
        Err(_) => return read_tzif("/etc/", "localtime").map_or(Location::Utc, Location::Tz),
        Ok(tz) => tz,
    };
    let tz = tz.strip_prefix(':').unwrap_or(&tz);
    if tz.is_empty() || tz == "UTC" {
        return Location::Utc;
    }
    if tz.starts_with('/') {
        return read_tzif("", tz).map_or(Location::Utc, Location::Tz);
    }
    load_location(tz).unwrap_or(Location::Utc)
}

thread_local! {
    /// A local zone set for this thread (a render given a clock), over the process's.
    static LOCAL_OVERRIDE: RefCell<Option<Location>> = const { RefCell::new(None) };
}

/// What `time.Local` is here: the zone set by [`with_local`] on this thread, else the process's.
pub fn local() -> Location {
    static PROCESS: OnceLock<Location> = OnceLock::new();
    LOCAL_OVERRIDE
        .with(|o| o.borrow().clone())
        .unwrap_or_else(|| PROCESS.get_or_init(process_local).clone())
}

/// Run `f` with `time.Local` being `loc` on this thread (as a test sets `TZ` for Go).
pub fn with_local<T>(loc: Option<&Location>, f: impl FnOnce() -> T) -> T {
    let Some(loc) = loc else { return f() };
    let previous = LOCAL_OVERRIDE.with(|o| o.replace(Some(loc.clone())));
    struct Restore(Option<Location>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            LOCAL_OVERRIDE.with(|o| *o.borrow_mut() = previous);
        }
    }
    let _restore = Restore(previous);
    f()
}

impl Location {
    /// The zone in effect at `unix` seconds.
    pub fn lookup(&self, unix: i64) -> ZoneAt {
        match self {
            Location::Utc => ZoneAt {
                name: "UTC".into(),
                offset: 0,
            },
            Location::Local => match local() {
                Location::Local => Location::Utc.lookup(unix),
                other => other.lookup(unix),
            },
            Location::Fixed(name, offset) => ZoneAt {
                name: name.to_string(),
                offset: *offset,
            },
            Location::Tz(tz) => {
                let ts = Timestamp::from_second(unix).unwrap_or(if unix < 0 {
                    Timestamp::MIN
                } else {
                    Timestamp::MAX
                });
                let info = tz.to_offset_info(ts);
                ZoneAt {
                    name: info.abbreviation().to_string(),
                    offset: info.offset().seconds(),
                }
            }
        }
    }

    /// Go's `Location.lookupName`: the offset of a zone called `name` in this location,
    /// preferring one in effect at `unix` (seconds, read as if UTC).
    pub fn lookup_name(&self, name: &str, unix: i64) -> Option<i32> {
        let zones = self.zones();
        for z in zones.iter().filter(|z| z.name == name) {
            let at = self.lookup(unix - i64::from(z.offset));
            if at.name == z.name {
                return Some(at.offset);
            }
        }
        zones.iter().find(|z| z.name == name).map(|z| z.offset)
    }

    /// The distinct zones (abbreviation and offset) this location has ever used.
    fn zones(&self) -> Vec<ZoneAt> {
        match self {
            Location::Local => match local() {
                Location::Local => Location::Utc.zones(),
                other => other.zones(),
            },
            Location::Tz(tz) => {
                let mut out: Vec<ZoneAt> = Vec::new();
                let mut push = |z: ZoneAt| {
                    if !out.contains(&z) {
                        out.push(z);
                    }
                };
                push(self.lookup(i64::MIN));
                for t in tz.preceding(Timestamp::MAX) {
                    push(ZoneAt {
                        name: t.abbreviation().to_string(),
                        offset: t.offset().seconds(),
                    });
                }
                out
            }
            other => vec![other.lookup(0)],
        }
    }

    /// Is this the local zone (Go compares the location pointer with `&localLoc`)?
    pub fn is_local(&self) -> bool {
        matches!(self, Location::Local)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_go_refuses() {
        assert_eq!(
            load_location("../etc/passwd").unwrap_err(),
            ZoneError::InvalidName
        );
        assert_eq!(
            load_location("/etc/localtime").unwrap_err(),
            ZoneError::InvalidName
        );
        assert_eq!(
            load_location("Nowhere/Atlantis").unwrap_err().to_string(),
            "unknown time zone Nowhere/Atlantis"
        );
        assert!(matches!(load_location(""), Ok(Location::Utc)));
        assert!(matches!(load_location("Local"), Ok(Location::Local)));
    }

    #[test]
    fn a_fixed_local_zone_applies_on_this_thread_only() {
        let fixed = Location::Fixed("XST".into(), 3600);
        let inside = with_local(Some(&fixed), || Location::Local.lookup(0));
        assert_eq!(
            inside,
            ZoneAt {
                name: "XST".into(),
                offset: 3600
            }
        );
        assert_eq!(
            Location::Fixed("A".into(), -60).lookup_name("A", 0),
            Some(-60)
        );
        assert_eq!(Location::Utc.lookup_name("CET", 0), None);
    }
}
