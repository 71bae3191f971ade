//! Sprig's `semver` and `semverCompare`: Masterminds/semver v3's `NewVersion` (its coercing
//! parser, the default since v3.4), `NewConstraint` and `Constraints.Check` at the version Istio
//! pins (v3.5), with their quirks (the constraint grammar's regular expressions, `x`/`*`
//! wildcards, `~`/`^` ranges, `a - b` hyphen ranges, `||` alternatives, prereleases admitted by
//! an `||` group as a whole when one of its constraints has one) and error texts; and the
//! methods a template can call on a `*semver.Version` ([`method`]).

use std::cmp::Ordering;
use std::sync::OnceLock;

use regex::Regex;

/// A parsed version (`major.minor.patch[-pre][+metadata]`) and the text it was parsed from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    major: u64,
    minor: u64,
    patch: u64,
    pre: String,
    metadata: String,
    original: String,
}

/// The version part of semver's regular expressions (`cvRegex` admits wildcards and `|`).
const CV: &str = r"v?([0-9|x|X|\*]+)(\.[0-9|x|X|\*]+)?(\.[0-9|x|X|\*]+)?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?";
/// The operators, with semver's empty alternative.
const OPS: &str = r"=||!=|>|<|>=|=>|<=|=<|~|~>|\^";
/// Go's `\s` (ASCII white space).
const S: &str = r"[\t\n\f\r ]";

struct Regexes {
    version: Regex,
    constraint: Regex,
    range: Regex,
    find: Regex,
    valid: Regex,
}

fn regexes() -> &'static Regexes {
    static R: OnceLock<Regexes> = OnceLock::new();
    R.get_or_init(|| {
        let re = |s: String| Regex::new(&s).expect("semver's expressions compile");
        Regexes {
            version: re(
                r"^v?([0-9]+)(\.[0-9]+)?(\.[0-9]+)?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?$"
                    .to_string(),
            ),
            constraint: re(format!("^{S}*({OPS}){S}*({CV}){S}*$")),
            range: re(format!("{S}*({CV}){S}+-{S}+({CV}){S}*")),
            find: re(format!("({OPS}){S}*({CV})")),
            valid: re(format!(
                "^({S}*({OPS}){S}*({CV}){S}*)((?:{S}+|,{S}*)({OPS}){S}*({CV}){S}*)*$"
            )),
        }
    })
}

const NUM: &str = "0123456789";
const ALLOWED: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789";

fn contains_only(s: &str, set: &str) -> bool {
    s.chars().all(|c| set.contains(c))
}

/// Go's `strconv.ParseUint(s, 10, 64)` on digits, with its range error.
fn parse_segment(s: &str) -> Result<u64, String> {
    s.parse::<u64>().map_err(|_| {
        format!(
            "error parsing version segment: strconv.ParseUint: parsing {}: value out of range",
            crate::go::quote::quote(s)
        )
    })
}

/// semver's `validatePrerelease` (an empty or foreign identifier, a numeric one with a leading
/// zero).
fn validate_prerelease(pre: &str) -> Result<(), String> {
    for p in pre.split('.') {
        if p.is_empty() {
            return Err("invalid prerelease string".into());
        } else if contains_only(p, NUM) {
            if p.len() > 1 && p.starts_with('0') {
                return Err("version segment starts with 0".into());
            }
        } else if !contains_only(p, ALLOWED) {
            return Err("invalid prerelease string".into());
        }
    }
    Ok(())
}

/// semver's `validateMetadata`.
fn validate_metadata(meta: &str) -> Result<(), String> {
    if meta
        .split('.')
        .any(|p| p.is_empty() || !contains_only(p, ALLOWED))
    {
        return Err("invalid metadata string".into());
    }
    Ok(())
}

impl Version {
    /// semver's `NewVersion` (`coerceNewVersion`: the loose expression, leading zeros allowed in
    /// the numbers, then the prerelease and metadata validated).
    pub fn parse(v: &str) -> Result<Version, String> {
        let m = regexes()
            .version
            .captures(v)
            .ok_or("invalid semantic version")?;
        let group = |i: usize| m.get(i).map_or("", |g| g.as_str());
        let seg = |i: usize| -> Result<u64, String> {
            match group(i).trim_start_matches('.') {
                "" => Ok(0),
                s => parse_segment(s),
            }
        };
        let version = Version {
            major: parse_segment(group(1))?,
            minor: seg(2)?,
            patch: seg(3)?,
            pre: group(5).to_string(),
            metadata: group(8).to_string(),
            original: v.to_string(),
        };
        if !version.pre.is_empty() {
            validate_prerelease(&version.pre)?;
        }
        if !version.metadata.is_empty() {
            validate_metadata(&version.metadata)?;
        }
        Ok(version)
    }

    /// The `v` the original text started with, if any (semver's `originalVPrefix`).
    fn v_prefix(&self) -> &'static str {
        if self.original.starts_with('v') {
            "v"
        } else {
            ""
        }
    }

    /// This version changed by `f`, its original text rewritten as semver's `Inc*` and `Set*`
    /// do (the `v` prefix kept, the canonical form after it).
    fn next(&self, f: impl FnOnce(&mut Version)) -> Version {
        let mut n = self.clone();
        f(&mut n);
        n.original = format!("{}{n}", self.v_prefix());
        n
    }

    /// semver's `Compare`: segments, then prerelease (a release sorts after its prereleases).
    fn compare(&self, o: &Version) -> Ordering {
        self.major
            .cmp(&o.major)
            .then(self.minor.cmp(&o.minor))
            .then(self.patch.cmp(&o.patch))
            .then_with(|| match (self.pre.is_empty(), o.pre.is_empty()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) => compare_prerelease(&self.pre, &o.pre),
            })
    }
}

impl std::fmt::Display for Version {
    /// semver's `String`: the canonical form.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        if !self.pre.is_empty() {
            write!(f, "-{}", self.pre)?;
        }
        if !self.metadata.is_empty() {
            write!(f, "+{}", self.metadata)?;
        }
        Ok(())
    }
}

fn compare_prerelease(v: &str, o: &str) -> Ordering {
    let (s, t): (Vec<&str>, Vec<&str>) = (v.split('.').collect(), o.split('.').collect());
    for i in 0..s.len().max(t.len()) {
        let d = compare_pre_part(
            s.get(i).copied().unwrap_or(""),
            t.get(i).copied().unwrap_or(""),
        );
        if d != Ordering::Equal {
            return d;
        }
    }
    Ordering::Equal
}

fn compare_pre_part(s: &str, o: &str) -> Ordering {
    if s == o {
        return Ordering::Equal;
    }
    if s.is_empty() {
        return Ordering::Less;
    }
    if o.is_empty() {
        return Ordering::Greater;
    }
    match (s.parse::<u64>(), o.parse::<u64>()) {
        (Err(_), Err(_)) => {
            if s > o {
                Ordering::Greater
            } else {
                Ordering::Less
            }
        }
        (Ok(_), Err(_)) => Ordering::Less,
        (Err(_), Ok(_)) => Ordering::Greater,
        (Ok(a), Ok(b)) => {
            if a > b {
                Ordering::Greater
            } else {
                Ordering::Less
            }
        }
    }
}

/// One constraint: an operator and a version with its wildcard flags.
struct Constraint {
    con: Version,
    op: String,
    dirty: bool,
    minor_dirty: bool,
    patch_dirty: bool,
}

fn is_x(s: &str) -> bool {
    matches!(s, "x" | "*" | "X")
}

impl Constraint {
    fn parse(c: &str) -> Result<Constraint, String> {
        if c.is_empty() {
            return Ok(Constraint {
                con: Version::parse("0.0.0")?,
                op: String::new(),
                dirty: true,
                minor_dirty: false,
                patch_dirty: false,
            });
        }
        let m = regexes()
            .constraint
            .captures(c)
            .ok_or_else(|| format!("improper constraint: {}", crate::go::quote::quote(c)))?;
        let g = |i: usize| m.get(i).map_or("", |x| x.as_str());
        let (mut dirty, mut minor_dirty, mut patch_dirty) = (false, false, false);
        let ver = if is_x(g(3)) || g(3).is_empty() {
            dirty = true;
            format!("0.0.0{}", g(6))
        } else if is_x(g(4).trim_start_matches('.')) || g(4).is_empty() {
            dirty = true;
            minor_dirty = true;
            format!("{}.0.0{}", g(3), g(6))
        } else if is_x(g(5).trim_start_matches('.')) || g(5).is_empty() {
            dirty = true;
            patch_dirty = true;
            format!("{}{}.0{}", g(3), g(4), g(6))
        } else {
            g(2).to_string()
        };
        let con = Version::parse(&ver).map_err(|_| "constraint parser error".to_string())?;
        Ok(Constraint {
            con,
            op: g(1).to_string(),
            dirty,
            minor_dirty,
            patch_dirty,
        })
    }

    /// Whether `v` satisfies the constraint (semver's `check`, errors dropped as `Check` does);
    /// `include_pre`: the constraint's `||` group admits prereleases (one of its constraints
    /// has one).
    fn check(&self, v: &Version, include_pre: bool) -> bool {
        let c = &self.con;
        // Every operator refuses a prerelease unless the group admits them.
        if !v.pre.is_empty() && !include_pre {
            return false;
        }
        match self.op.as_str() {
            "" | "=" => {
                if self.dirty {
                    self.tilde(v)
                } else {
                    v.compare(c) == Ordering::Equal
                }
            }
            "!=" => self.not_equal(v),
            ">" => {
                if !self.dirty {
                    return v.compare(c) == Ordering::Greater;
                }
                if v.major != c.major {
                    return v.major > c.major;
                }
                if self.minor_dirty {
                    return false;
                }
                if self.patch_dirty {
                    return v.minor > c.minor;
                }
                v.compare(c) == Ordering::Greater
            }
            "<" => v.compare(c) == Ordering::Less,
            ">=" | "=>" => v.compare(c) != Ordering::Less,
            "<=" | "=<" => {
                if !self.dirty {
                    return v.compare(c) != Ordering::Greater;
                }
                !(v.major > c.major
                    || (v.major == c.major && v.minor > c.minor && !self.minor_dirty))
            }
            "~" | "~>" => self.tilde(v),
            "^" => self.caret(v),
            _ => false,
        }
    }

    fn not_equal(&self, v: &Version) -> bool {
        let c = &self.con;
        if self.dirty {
            if c.major != v.major {
                return true;
            }
            if c.minor != v.minor && !self.minor_dirty {
                return true;
            } else if self.minor_dirty {
                return false;
            } else if c.patch != v.patch && !self.patch_dirty {
                return true;
            } else if self.patch_dirty {
                return (!v.pre.is_empty() || !c.pre.is_empty())
                    && compare_prerelease(&v.pre, &c.pre) != Ordering::Equal;
            }
        }
        v.compare(c) != Ordering::Equal
    }

    fn tilde(&self, v: &Version) -> bool {
        let c = &self.con;
        if v.compare(c) == Ordering::Less {
            return false;
        }
        if c.major == 0 && c.minor == 0 && c.patch == 0 && !self.minor_dirty && !self.patch_dirty {
            return true;
        }
        v.major == c.major && (v.minor == c.minor || self.minor_dirty)
    }

    fn caret(&self, v: &Version) -> bool {
        let c = &self.con;
        if v.compare(c) == Ordering::Less {
            return false;
        }
        if c.major > 0 || self.minor_dirty {
            return v.major == c.major;
        }
        if v.major > 0 {
            return false;
        }
        if c.minor > 0 || self.patch_dirty {
            return v.minor == c.minor;
        }
        if v.minor > 0 {
            return false;
        }
        c.patch == v.patch
    }
}

/// semver's `rewriteRange`: `a - b` becomes `>= a, <= b ` (with semver's trailing space).
fn rewrite_range(c: &str) -> String {
    let mut out = c.to_string();
    for m in regexes().range.captures_iter(c) {
        let (whole, a, b) = (&m[0], &m[1], &m[11]);
        out = out.replacen(whole, &format!(">= {a}, <= {b} "), 1);
    }
    out
}

/// Sprig's `semverCompare constraint version`: `NewConstraint`, `NewVersion`, `Check`.
pub(super) fn compare(constraint: &str, version: &str) -> Result<bool, String> {
    let rewritten = rewrite_range(constraint);
    // Each `||` group: its constraints, and whether one of them has a prerelease (which admits
    // prereleases for the whole group).
    let mut ors: Vec<(Vec<Constraint>, bool)> = Vec::new();
    for alt in rewritten.split("||") {
        if !regexes().valid.is_match(alt) {
            return Err(format!(
                "improper constraint: {}",
                crate::go::quote::quote(alt)
            ));
        }
        let found: Vec<&str> = regexes().find.find_iter(alt).map(|m| m.as_str()).collect();
        let parts = if found.is_empty() { vec![alt] } else { found };
        let ands = parts
            .into_iter()
            .map(Constraint::parse)
            .collect::<Result<Vec<_>, _>>()?;
        let has_pre = ands.iter().any(|c| !c.con.pre.is_empty());
        ors.push((ands, has_pre));
    }
    let v = Version::parse(version)?;
    Ok(ors
        .iter()
        .any(|(ands, pre)| ands.iter().all(|c| c.check(&v, *pre))))
}

/// The outcome of calling a method of a version from a template.
pub enum Call {
    /// A `uint64` (`Major`, `Minor`, `Patch`).
    Uint(u64),
    /// An `int` (`Compare`).
    Int(i64),
    /// A string (`String`, `Original`, `Prerelease`, `Metadata`).
    Str(String),
    /// A bool (`LessThan`, `Equal`, ...).
    Bool(bool),
    /// A `semver.Version` value (`IncPatch`, `SetPrerelease`, ...).
    Version(Version),
    /// The method returned an error (`SetPrerelease`, `SetMetadata`).
    Err(String),
}

/// The number of arguments method `name` takes, and whether a `semver.Version` value (not only
/// a pointer) has it; `None` when a `*semver.Version` has no such method.
pub fn method_arity(name: &str) -> Option<(usize, bool)> {
    Some(match name {
        "String" | "Major" | "Minor" | "Patch" | "Prerelease" | "Metadata" | "IncPatch"
        | "IncMinor" | "IncMajor" => (0, true),
        "Original" => (0, false),
        "SetPrerelease" | "SetMetadata" => (1, true),
        "LessThan" | "LessThanEqual" | "GreaterThan" | "GreaterThanEqual" | "Equal" | "Compare" => {
            (1, false)
        }
        _ => return None,
    })
}

/// The argument a method takes: a version for the comparisons, a string for the setters.
pub enum Arg<'v> {
    /// A `*semver.Version`.
    Version(&'v Version),
    /// A string.
    Str(&'v str),
}

/// Call method `name` (of [`method_arity`]) of `v` with `args` (already checked by the caller
/// for number and type: a version for the comparisons, a string for the setters).
pub fn call(v: &Version, name: &str, args: &[Arg<'_>]) -> Option<Call> {
    let other = || match args.first() {
        Some(Arg::Version(o)) => Some(*o),
        _ => None,
    };
    let text = || match args.first() {
        Some(Arg::Str(s)) => Some(*s),
        _ => None,
    };
    Some(match name {
        "String" => Call::Str(v.to_string()),
        "Original" => Call::Str(v.original.clone()),
        "Major" => Call::Uint(v.major),
        "Minor" => Call::Uint(v.minor),
        "Patch" => Call::Uint(v.patch),
        "Prerelease" => Call::Str(v.pre.clone()),
        "Metadata" => Call::Str(v.metadata.clone()),
        "IncPatch" => {
            if v.pre.is_empty() && v.patch == u64::MAX {
                return Some(Call::Err(
                    "patch version increment would overflow uint64".into(),
                ));
            }
            Call::Version(v.next(|n| {
                if n.pre.is_empty() {
                    n.patch += 1;
                }
                n.pre.clear();
                n.metadata.clear();
            }))
        }
        "IncMinor" => {
            if v.minor == u64::MAX {
                return Some(Call::Err(
                    "minor version increment would overflow uint64".into(),
                ));
            }
            Call::Version(v.next(|n| {
                n.minor += 1;
                n.patch = 0;
                n.pre.clear();
                n.metadata.clear();
            }))
        }
        "IncMajor" => {
            if v.major == u64::MAX {
                return Some(Call::Err(
                    "major version increment would overflow uint64".into(),
                ));
            }
            Call::Version(v.next(|n| {
                n.major += 1;
                n.minor = 0;
                n.patch = 0;
                n.pre.clear();
                n.metadata.clear();
            }))
        }
        "SetPrerelease" => {
            let p = text()?;
            if !p.is_empty() {
                if let Err(e) = validate_prerelease(p) {
                    return Some(Call::Err(e));
                }
            }
            Call::Version(v.next(|n| n.pre = p.to_string()))
        }
        "SetMetadata" => {
            let m = text()?;
            if !m.is_empty() {
                if let Err(e) = validate_metadata(m) {
                    return Some(Call::Err(e));
                }
            }
            Call::Version(v.next(|n| n.metadata = m.to_string()))
        }
        "LessThan" => Call::Bool(v.compare(other()?) == Ordering::Less),
        "LessThanEqual" => Call::Bool(v.compare(other()?) != Ordering::Greater),
        "GreaterThan" => Call::Bool(v.compare(other()?) == Ordering::Greater),
        "GreaterThanEqual" => Call::Bool(v.compare(other()?) != Ordering::Less),
        "Equal" => Call::Bool(v.compare(other()?) == Ordering::Equal),
        "Compare" => Call::Int(match v.compare(other()?) {
            Ordering::Less => -1,
            Ordering::Equal => 0,
            Ordering::Greater => 1,
        }),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `version` satisfies `constraint` (both valid).
    fn ok(constraint: &str, version: &str) -> bool {
        compare(constraint, version).expect("a valid constraint and version")
    }

    // The ranges semver's own comments give for `^` and `~` (constraints.go), at their edges;
    // `go_template.rs` compares many more with Go.
    #[test]
    fn caret_ranges_stop_at_the_first_nonzero_part() {
        for (c, inside, outside) in [
            ("^1.2.3", "1.9.0", "2.0.0"),
            ("^1.2", "1.2.0", "2.0.0"),
            ("^0.2.3", "0.2.9", "0.3.0"),
            ("^0.2", "0.2.0", "0.3.0"),
            ("^0.0.3", "0.0.3", "0.0.4"),
            ("^0.0", "0.0.9", "0.1.0"),
            ("^0", "0.9.0", "1.0.0"),
            ("^0.0.x", "0.0.7", "0.1.0"),
            ("^0.x", "0.9.0", "1.0.0"),
        ] {
            assert!(ok(c, inside), "{c} admits {inside}");
            assert!(!ok(c, outside), "{c} refuses {outside}");
        }
        assert!(!ok("^1.2.3", "1.2.2"), "below the range");
        assert!(!ok("^0.0.3", "0.0.2"), "below the range");
        assert!(!ok("^0.2.3", "1.2.9"), "another major, the same minor");
        assert!(!ok("^0.0.3", "0.1.3"), "another minor, the same patch");
    }

    #[test]
    fn operators_on_exact_and_wildcard_versions() {
        for (c, yes, no) in [
            ("=1.2.3", "1.2.3", "1.2.4"),
            ("1.2.3", "1.2.3+meta", "1.2.2"),
            (">1.2.3", "1.2.4", "1.2.2"),
            ("<=1.2.3", "1.2.2", "1.2.4"),
            (">*", "0.0.1", "0.0.0"),
            ("*", "1.2.3", "1.2.3-rc"),
            ("x", "0.1.0", "0.1.0-rc"),
            ("!=1.x", "2.0.0", "1.5.0"),
            ("!=*", "0.0.5", "0.0.0"),
            ("!=1.2.x-rc", "1.2.0", "1.2.0-rc"),
            (">=1.0.0-0 !=1.2.x", "1.2.0-rc", "1.2.5"),
        ] {
            assert!(ok(c, yes), "{c} admits {yes}");
            assert!(!ok(c, no), "{c} refuses {no}");
        }
    }

    #[test]
    fn tilde_ranges_and_wildcards() {
        for (c, inside, outside) in [
            ("~1.2.3", "1.2.9", "1.3.0"),
            ("~1.2", "1.2.0", "1.3.0"),
            ("~1", "1.9.0", "2.0.0"),
            ("~0", "0.5.0", "1.0.0"),
            ("~>2.x", "2.9.9", "3.0.0"),
            (">1.x", "2.0.0", "1.9.0"),
            (">1.2.x", "1.3.0", "1.2.9"),
            ("<=1.2.x", "1.2.9", "1.3.0"),
            ("<=1.x", "1.9.9", "2.0.0"),
            ("1.2.x", "1.2.5", "1.3.0"),
            ("!=1.2.x", "1.3.0", "1.2.5"),
            ("!=1.2.3", "1.2.4", "1.2.3"),
            ("1.1 - 1.3", "1.3.0", "1.4.0"),
            ("<1.2.3 || >1.5", "2.0.0", "1.3.0"),
        ] {
            assert!(ok(c, inside), "{c} admits {inside}");
            assert!(!ok(c, outside), "{c} refuses {outside}");
        }
        assert!(ok("~0.0.0", "4.0.0"), "~0.0.0 is any version");
        assert!(!ok("~1.2.3", "1.2.2"));
    }

    #[test]
    fn prereleases_are_admitted_by_a_group_with_one() {
        assert!(
            !ok("!=1.2.3", "1.2.3-beta.1"),
            "no group admits prereleases"
        );
        assert!(!ok(">1.0", "1.2.3-beta.1"));
        assert!(ok("!=1.2.3-alpha", "1.2.3-beta.1"));
        assert!(
            ok(">=1.2.0-0 <2", "1.5.0-rc.1"),
            "one constraint of the group has one"
        );
        assert!(!ok(">=1.2.0 <2", "1.5.0-rc.1"));
        assert!(
            ok("<2 || >=1.2.0-0", "1.5.0-rc.1"),
            "the second group admits it"
        );
        assert!(
            !ok("<2 || >=3.0.0-0", "2.5.0-rc.1"),
            "admitted by the second, below it"
        );
        assert!(
            ok("~1.2.3-beta.2", "1.2.3-beta.10"),
            "numeric prerelease parts"
        );
        assert!(!ok("~1.2.3-beta.2", "1.2.3-beta.1"));
        assert!(ok("!=1.2.x-rc", "1.2.0-rd"));
        assert!(!ok("!=1.2.x-rc", "1.2.0-rc"));
    }

    #[test]
    fn errors_are_semvers_texts() {
        assert_eq!(
            compare("", "1.0.0"),
            Err("improper constraint: \"\"".into())
        );
        assert_eq!(
            compare(">=a", "1.0.0"),
            Err("improper constraint: \">=a\"".into())
        );
        assert_eq!(
            compare("1.2.3", "x"),
            Err("invalid semantic version".into())
        );
        assert_eq!(
            Version::parse("1.2.3-01"),
            Err("version segment starts with 0".into())
        );
        assert_eq!(
            Version::parse("99999999999999999999.0.0"),
            Err("error parsing version segment: strconv.ParseUint: parsing \"99999999999999999999\": value out of range".into())
        );
        assert_eq!(
            Version::parse("01.02.03").map(|v| v.to_string()),
            Ok("1.2.3".into()),
            "leading zeros are coerced"
        );
        assert!(
            Version::parse("1.2.3-0a").is_ok(),
            "an identifier with a letter is not numeric"
        );
    }

    #[test]
    fn methods_answer_as_semvers() {
        let v = Version::parse("v1.2.3-rc.1+b.7").expect("a version");
        let s = |c: Option<Call>| match c {
            Some(Call::Str(s)) => s,
            Some(Call::Version(v)) => format!("{v} ({})", v.original),
            Some(Call::Uint(u)) => u.to_string(),
            Some(Call::Int(i)) => i.to_string(),
            Some(Call::Bool(b)) => b.to_string(),
            Some(Call::Err(e)) => format!("error: {e}"),
            None => "none".into(),
        };
        assert_eq!(s(call(&v, "Minor", &[])), "2");
        assert_eq!(s(call(&v, "Original", &[])), "v1.2.3-rc.1+b.7");
        assert_eq!(s(call(&v, "Prerelease", &[])), "rc.1");
        assert_eq!(s(call(&v, "Metadata", &[])), "b.7");
        assert_eq!(s(call(&v, "IncPatch", &[])), "1.2.3 (v1.2.3)");
        assert_eq!(s(call(&v, "IncMinor", &[])), "1.3.0 (v1.3.0)");
        assert_eq!(s(call(&v, "IncMajor", &[])), "2.0.0 (v2.0.0)");
        let plain = Version::parse("1.2.3").expect("a version");
        assert_eq!(s(call(&plain, "IncPatch", &[])), "1.2.4 (1.2.4)");
        assert_eq!(
            s(call(&plain, "SetPrerelease", &[Arg::Str("01")])),
            "error: version segment starts with 0"
        );
        assert_eq!(
            s(call(&plain, "SetMetadata", &[Arg::Str("m")])),
            "1.2.3+m (1.2.3+m)"
        );
        let newer = Version::parse("1.3.0").expect("a version");
        assert_eq!(s(call(&plain, "LessThan", &[Arg::Version(&newer)])), "true");
        assert_eq!(s(call(&plain, "Compare", &[Arg::Version(&newer)])), "-1");
        assert_eq!(s(call(&newer, "Compare", &[Arg::Version(&plain)])), "1");
        assert_eq!(
            s(call(&v, "Compare", &[Arg::Version(&plain)])),
            "-1",
            "a prerelease sorts first"
        );
        assert_eq!(s(call(&plain, "Equal", &[Arg::Version(&plain)])), "true");
        assert_eq!(
            s(call(&plain, "GreaterThanEqual", &[Arg::Version(&newer)])),
            "false"
        );
        assert_eq!(
            s(call(&plain, "LessThanEqual", &[Arg::Version(&plain)])),
            "true"
        );
        assert_eq!(
            s(call(&plain, "GreaterThan", &[Arg::Version(&plain)])),
            "false"
        );
        assert_eq!(method_arity("Original"), Some((0, false)));
        assert_eq!(method_arity("Minor"), Some((0, true)));
        assert_eq!(
            s(call(&v, "SetMetadata", &[Arg::Str("")])),
            "1.2.3-rc.1 (v1.2.3-rc.1)"
        );
        assert_eq!(
            s(call(&plain, "SetMetadata", &[Arg::Str("a..b")])),
            "error: invalid metadata string"
        );
        assert_eq!(
            s(call(&plain, "SetMetadata", &[Arg::Str("a_b")])),
            "error: invalid metadata string"
        );
        assert_eq!(s(call(&v, "String", &[])), "1.2.3-rc.1+b.7");
        assert_eq!(s(call(&v, "Major", &[])), "1");
        assert_eq!(s(call(&v, "Patch", &[])), "3");
        let (alpha, beta) = (
            Version::parse("1.0.0-alpha").expect("a version"),
            Version::parse("1.0.0-beta").expect("a version"),
        );
        assert_eq!(s(call(&beta, "Compare", &[Arg::Version(&alpha)])), "1");
        assert_eq!(s(call(&alpha, "Compare", &[Arg::Version(&beta)])), "-1");
        let (nine, ten) = (
            Version::parse("1.0.0-a.9").expect("a version"),
            Version::parse("1.0.0-a.10").expect("a version"),
        );
        assert_eq!(s(call(&ten, "Compare", &[Arg::Version(&nine)])), "1");
        assert_eq!(s(call(&nine, "Compare", &[Arg::Version(&ten)])), "-1");
        assert_eq!(method_arity("LessThan"), Some((1, false)));
        assert_eq!(method_arity("SetPrerelease"), Some((1, true)));
        assert_eq!(method_arity("major"), None);
    }
}
