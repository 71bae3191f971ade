//! Sprig v3 text functions. Every Sprig name is accepted at parse time; the ones implemented
//! here (the date functions are in `dates`) follow Sprig's semantics, the rest (randomness,
//! cryptography, the network, URLs: `docs/go-exactness.md`) fail at execution with
//! `error calling X: not implemented by outrigger`.
//!
//! Families: `strings`, `case`, `lists`, `dicts`, `numbers` in their own files; paths, digests,
//! semver and the rest (type tests, JSON, `deepCopy`, ...) here, with the conversions the
//! families share (`cast`'s `ToInt64`/`ToFloat64`, `strval`, Go's `reflect.DeepEqual`).

use std::collections::BTreeMap;
use std::rc::Rc;

use serde_json::Value;

use super::regexp::{find_all, must_compile, regex, regex_split, replace_all};
use super::signature::{register, Func, Table, P};
use super::value::{
    check_size, go_cap, go_unmarshal, map_entries, marshal, quote_str, shared_map, str_of, to_list,
    to_map, IntTy, V,
};
use crate::go::strconv;

mod case;
mod dicts;
mod lists;
mod numbers;
mod strings;

use case::register_case;
use dicts::register_dicts;
use lists::register_lists;
use numbers::register_numbers;
use strings::register_strings;

type R<T> = Result<T, String>;

/// Every function name of Sprig v3's `TxtFuncMap`.
pub const SPRIG_NAMES: &[&str] = &[
    "hello",
    "ago",
    "date",
    "date_in_zone",
    "date_modify",
    "dateInZone",
    "dateModify",
    "duration",
    "durationRound",
    "htmlDate",
    "htmlDateInZone",
    "must_date_modify",
    "mustDateModify",
    "mustToDate",
    "now",
    "toDate",
    "unixEpoch",
    "abbrev",
    "abbrevboth",
    "trunc",
    "trim",
    "upper",
    "lower",
    "title",
    "untitle",
    "substr",
    "repeat",
    "trimall",
    "trimAll",
    "trimSuffix",
    "trimPrefix",
    "nospace",
    "initials",
    "randAlphaNum",
    "randAlpha",
    "randAscii",
    "randNumeric",
    "swapcase",
    "shuffle",
    "snakecase",
    "camelcase",
    "kebabcase",
    "wrap",
    "wrapWith",
    "contains",
    "hasPrefix",
    "hasSuffix",
    "quote",
    "squote",
    "cat",
    "indent",
    "nindent",
    "replace",
    "plural",
    "sha1sum",
    "sha256sum",
    "sha512sum",
    "adler32sum",
    "toString",
    "atoi",
    "int64",
    "int",
    "float64",
    "seq",
    "toDecimal",
    "split",
    "splitList",
    "splitn",
    "toStrings",
    "until",
    "untilStep",
    "add1",
    "add",
    "sub",
    "div",
    "mod",
    "mul",
    "randInt",
    "add1f",
    "addf",
    "subf",
    "divf",
    "mulf",
    "biggest",
    "max",
    "min",
    "maxf",
    "minf",
    "ceil",
    "floor",
    "round",
    "join",
    "sortAlpha",
    "default",
    "empty",
    "coalesce",
    "all",
    "any",
    "compact",
    "mustCompact",
    "fromJson",
    "toJson",
    "toPrettyJson",
    "toRawJson",
    "mustFromJson",
    "mustToJson",
    "mustToPrettyJson",
    "mustToRawJson",
    "ternary",
    "deepCopy",
    "mustDeepCopy",
    "typeOf",
    "typeIs",
    "typeIsLike",
    "kindOf",
    "kindIs",
    "deepEqual",
    "env",
    "expandenv",
    "getHostByName",
    "base",
    "dir",
    "clean",
    "ext",
    "isAbs",
    "osBase",
    "osClean",
    "osDir",
    "osExt",
    "osIsAbs",
    "b64enc",
    "b64dec",
    "b32enc",
    "b32dec",
    "tuple",
    "list",
    "dict",
    "get",
    "set",
    "unset",
    "hasKey",
    "pluck",
    "keys",
    "pick",
    "omit",
    "merge",
    "mergeOverwrite",
    "mustMerge",
    "mustMergeOverwrite",
    "values",
    "append",
    "push",
    "mustAppend",
    "mustPush",
    "prepend",
    "mustPrepend",
    "first",
    "mustFirst",
    "rest",
    "mustRest",
    "last",
    "mustLast",
    "initial",
    "mustInitial",
    "reverse",
    "mustReverse",
    "uniq",
    "mustUniq",
    "without",
    "mustWithout",
    "has",
    "mustHas",
    "slice",
    "mustSlice",
    "concat",
    "dig",
    "chunk",
    "mustChunk",
    "bcrypt",
    "htpasswd",
    "genPrivateKey",
    "derivePassword",
    "buildCustomCert",
    "genCA",
    "genCAWithKey",
    "genSelfSignedCert",
    "genSelfSignedCertWithKey",
    "genSignedCert",
    "genSignedCertWithKey",
    "encryptAES",
    "decryptAES",
    "randBytes",
    "uuidv4",
    "semver",
    "semverCompare",
    "fail",
    "regexMatch",
    "mustRegexMatch",
    "regexFindAll",
    "mustRegexFindAll",
    "regexFind",
    "mustRegexFind",
    "regexReplaceAll",
    "mustRegexReplaceAll",
    "regexReplaceAllLiteral",
    "mustRegexReplaceAllLiteral",
    "regexSplit",
    "mustRegexSplit",
    "regexQuoteMeta",
    "urlParse",
    "urlJoin",
];

/// Sprig's `strval`: strings as they are, `String()` methods, else `fmt.Sprintf("%v")`.
pub fn strval(v: &V<'_>) -> String {
    match v {
        V::Str(s) => s.to_string(),
        V::Missing | V::Nil => "<nil>".into(),
        other => other.sprint(),
    }
}

fn list(items: Vec<V<'_>>) -> V<'_> {
    V::List(Rc::new(items))
}

fn strs<'a>(items: Vec<String>) -> V<'a> {
    V::TList(
        "[]string",
        Rc::new(items.into_iter().map(V::string).collect()),
    )
}

fn ints<'a>(items: Vec<i64>) -> V<'a> {
    V::TList(
        "[]int",
        Rc::new(items.into_iter().map(|i| V::Int(i, IntTy::Int)).collect()),
    )
}

fn i64v<'a>(i: i64) -> V<'a> {
    V::Int(i, IntTy::I64)
}

/// Go's `int64(f)` on amd64: truncation, out of range (and NaN) gives `MinInt64`.
fn f2i(f: f64) -> i64 {
    if f.is_nan() || !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f) {
        i64::MIN
    } else {
        f as i64
    }
}

/// `cast.ToInt64E` (spf13/cast): integers, floats truncated, booleans, strings parsed by
/// `strconv.ParseInt(s, 0, 0)` after trimming a zero decimal part (`"8.00"`); errors give 0.
fn to_i64(v: &V<'_>) -> i64 {
    match v {
        V::Int(i, _) | V::Enum(_, i) => *i,
        V::Uint(u) => *u as i64,
        V::Float(f) => f2i(*f),
        V::Bool(b) => i64::from(*b),
        V::Str(s) => strconv::parse_int(trim_zero_decimal(s), 0, 64).unwrap_or(0),
        V::Ptr(p) => to_i64(p),
        _ => 0,
    }
}

/// cast's `trimZeroDecimal`: `"8.00"` → `"8"`.
fn trim_zero_decimal(s: &str) -> &str {
    let b = s.as_bytes();
    let mut found_zero = false;
    for i in (1..=b.len()).rev() {
        match b[i - 1] {
            b'.' => {
                if found_zero {
                    return &s[..i - 1];
                }
            }
            b'0' => found_zero = true,
            _ => return s,
        }
    }
    s
}

/// `cast.ToFloat64E`: numbers, booleans, strings by `strconv.ParseFloat`; errors give 0.
fn to_f64(v: &V<'_>) -> f64 {
    match v {
        V::Float(f) => *f,
        V::Str(s) => strconv::parse_float(s).unwrap_or(0.0),
        V::Int(..) | V::Uint(_) | V::Enum(..) | V::Bool(_) => to_i64(v) as f64,
        V::Ptr(p) => to_f64(p),
        _ => 0.0,
    }
}

/// Go's `reflect.Kind` name of a value.
fn go_kind(v: &V<'_>) -> &'static str {
    match v {
        V::Missing | V::Nil => "invalid",
        V::Bool(_) => "bool",
        V::Complex(..) => "complex128",
        V::Int(_, IntTy::Int) => "int",
        V::Int(_, IntTy::I32) | V::Enum(..) => "int32",
        V::Int(_, IntTy::I64) => "int64",
        V::Uint(_) => "uint32",
        V::Float(_) => "float64",
        V::Str(_) => "string",
        V::NilOf(t) if t.starts_with("map[") => "map",
        V::Json(Value::Array(_))
        | V::List(_)
        | V::TList(..)
        | V::NilOf(_)
        | V::K8sSlice(..)
        | V::ProtoList(..) => "slice",
        V::Json(_) | V::Map(_) | V::StrMapJ(_) | V::StrMap(_) | V::K8sMap(..) => "map",
        V::NilPtr(_) | V::Proto { .. } | V::Root(_) | V::Ptr(_) => "ptr",
        V::K8s { ptr: true, .. } => "ptr",
        V::K8s { .. } | V::Leaf(..) | V::Pair(..) | V::Time(_) => "struct",
    }
}

/// `fmt.Sprintf("%T")`.
fn type_of(v: &V<'_>) -> String {
    match v {
        V::Missing | V::Nil => "<nil>".into(),
        other => other.type_name(),
    }
}

/// Sprig's `empty`.
pub fn empty(v: &V<'_>) -> bool {
    match v {
        V::K8s { ptr: false, .. } | V::Leaf(..) | V::Pair(..) | V::Time(_) => false,
        other => !other.truth(),
    }
}

/// Go's `reflect.DeepEqual` of two template values.
pub fn deep_equal(a: &V<'_>, b: &V<'_>) -> bool {
    let (ka, kb) = (go_kind(a), go_kind(b));
    if ka == "invalid" || kb == "invalid" {
        return ka == kb;
    }
    if a.type_name() != b.type_name() {
        return false;
    }
    match ka {
        "slice" if matches!(a, V::NilOf(_)) != matches!(b, V::NilOf(_)) => false,
        "slice" => {
            let (la, lb) = (
                to_list(a).unwrap_or_default(),
                to_list(b).unwrap_or_default(),
            );
            la.len() == lb.len() && la.iter().zip(&lb).all(|(x, y)| deep_equal(x, y))
        }
        "map" => {
            let (ma, mb) = (map_entries(a), map_entries(b));
            ma.len() == mb.len()
                && ma
                    .iter()
                    .zip(&mb)
                    .all(|((k1, x), (k2, y))| k1 == k2 && deep_equal(x, y))
        }
        "float64" => matches!((a, b), (V::Float(x), V::Float(y)) if x == y),
        "complex128" => {
            matches!((a, b), (V::Complex(r1, i1), V::Complex(r2, i2)) if r1 == r2 && i1 == i2)
        }
        _ => a.to_json() == b.to_json() && a.sprint() == b.sprint(),
    }
}

/// Go's `math.Max` (`max`) or `math.Min`: infinities win, then NaN; between zeros +0 is the
/// max and -0 the min.
fn go_extreme(x: f64, y: f64, max: bool) -> f64 {
    let inf = if max {
        f64::INFINITY
    } else {
        f64::NEG_INFINITY
    };
    if x == inf || y == inf {
        inf
    } else if x.is_nan() || y.is_nan() {
        f64::NAN
    } else if x == 0.0 && y == 0.0 {
        if x.is_sign_negative() == max {
            y
        } else {
            x
        }
    } else if max {
        x.max(y)
    } else {
        x.min(y)
    }
}

/// Go's `int(f)` on amd64: NaN and values out of the int64 range become the smallest int.
fn go_int(f: f64) -> i64 {
    // NaN is outside every range too.
    if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&f) {
        f as i64
    } else {
        i64::MIN
    }
}

/// goutils `AbbreviateFull` (byte offsets, as in Go).
fn abbreviate_full(s: &str, mut offset: i64, max: i64) -> R<String> {
    if s.is_empty() {
        return Ok(String::new());
    }
    if max < 4 {
        return Err("stringutils illegal argument: Minimum abbreviation width is 4".into());
    }
    let len = s.len() as i64;
    if len <= max {
        return Ok(s.to_string());
    }
    let b = s.as_bytes();
    if offset > len {
        offset = len;
    }
    if len - offset < max - 3 {
        offset = len - (max - 3);
    }
    if offset <= 4 {
        return Ok(super::gostr::lossy(&b[..(max - 3) as usize]) + "...");
    }
    if max < 7 {
        return Err(
            "stringutils illegal argument: Minimum abbreviation width with offset is 7".into(),
        );
    }
    if offset + max - 3 < len {
        let inner = abbreviate_full(&super::gostr::lossy(&b[offset as usize..]), 0, max - 3)?;
        return Ok(format!("...{inner}"));
    }
    Ok(format!(
        "...{}",
        super::gostr::lossy(&b[(len - (max - 3)) as usize..])
    ))
}

/// goutils `WrapCustom` (byte offsets, as in Go).
fn wrap_custom(s: &str, wrap_len: i64, nl: &str, long_words: bool) -> String {
    if s.is_empty() {
        return String::new();
    }
    let nl = if nl.is_empty() { "\n" } else { nl };
    let wl = wrap_len.max(1) as usize;
    let b = s.as_bytes();
    let len = b.len();
    let mut offset = 0usize;
    let mut out: Vec<u8> = Vec::with_capacity(len + 8);
    while len - offset > wl {
        if b[offset] == b' ' {
            offset += 1;
            continue;
        }
        let end = wl + offset + 1;
        let space = b[offset..end].iter().rposition(|&c| c == b' ');
        if let Some(sp) = space {
            let at = sp + offset;
            out.extend_from_slice(&b[offset..at]);
            out.extend_from_slice(nl.as_bytes());
            offset = at + 1;
        } else if long_words {
            let end = wl + offset;
            out.extend_from_slice(&b[offset..end]);
            out.extend_from_slice(nl.as_bytes());
            offset += wl;
        } else {
            let end = wl + offset;
            match b[end..].iter().position(|&c| c == b' ') {
                None => {
                    out.extend_from_slice(&b[offset..]);
                    offset = len;
                }
                Some(ix) => {
                    let at = ix + end;
                    out.extend_from_slice(&b[offset..at]);
                    out.extend_from_slice(nl.as_bytes());
                    offset = at + 1;
                }
            }
        }
    }
    out.extend_from_slice(&b[offset..]);
    super::gostr::lossy(&out)
}

/// Go's `strings.Repeat` with its panics.
fn go_repeat(s: &str, n: i64) -> R<String> {
    if n < 0 {
        return Err("strings: negative Repeat count".into());
    }
    let total = (s.len() as u128) * (n as u128);
    if total > i64::MAX as u128 {
        return Err("strings: Repeat output length overflow".into());
    }
    check_size(0, n as usize, s.len())?;
    Ok(s.repeat(n as usize))
}

/// The error of a Sprig list function given something that is not a slice.
fn not_list(what: &str, v: &V<'_>) -> String {
    match v {
        V::Missing | V::Nil => {
            "runtime error: invalid memory address or nil pointer dereference".into()
        }
        other => format!("Cannot {what} on type {}", go_kind(other)),
    }
}

fn list_or<'a>(what: &str, v: &V<'a>) -> R<Vec<V<'a>>> {
    to_list(v).ok_or_else(|| not_list(what, v))
}

/// Register Sprig's implemented functions (Sprig v3.2.3 semantics and Go signatures).
pub fn register_all(m: &mut Table) {
    register_paths(m);
    register_digests(m);
    register_strings(m);
    register_case(m);
    register_lists(m);
    register_dicts(m);
    register_numbers(m);
    register_misc(m);
    register_semver(m);
}

/// `semver` (the version in its canonical form: Go prints a `*semver.Version` through its
/// `String` method) and `semverCompare`.
fn register_semver(m: &mut Table) {
    use P::*;
    register(m, "semver", &[Str], None, |a| {
        super::semver::Version::parse(str_of(&a[0])).map(|v| V::string(v.to_string()))
    });
    register(m, "semverCompare", &[Str, Str], None, |a| {
        super::semver::compare(str_of(&a[0]), str_of(&a[1])).map(V::Bool)
    });
}

/// Register functions of one string argument returning a string.
macro_rules! string_fns {
    ($m:expr, $($name:literal => $f:path),* $(,)?) => {
        $(register($m, $name, &[P::Str], None, |a| Ok(V::string($f(str_of(&a[0]))))));*
    };
}

/// Go's `path` functions; on Linux the `os*` (`path/filepath`) variants are the same.
fn register_paths(m: &mut Table) {
    use super::gopath;
    string_fns!(m,
        "base" => gopath::base, "osBase" => gopath::base,
        "dir" => gopath::dir, "osDir" => gopath::dir,
        "ext" => gopath::ext, "osExt" => gopath::ext,
        "clean" => gopath::clean, "osClean" => gopath::clean,
    );
    for name in ["isAbs", "osIsAbs"] {
        register(m, name, &[P::Str], None, |a| {
            Ok(V::Bool(gopath::is_abs(str_of(&a[0]))))
        });
    }
}

/// Digests and base32/base64.
fn register_digests(m: &mut Table) {
    use super::digest;
    string_fns!(m,
        "sha1sum" => digest::sha1sum, "sha256sum" => digest::sha256sum,
        "sha512sum" => digest::sha512sum, "adler32sum" => digest::adler32sum,
        "b32enc" => digest::b32enc, "b32dec" => digest::b32dec,
        "b64enc" => digest::b64enc, "b64dec" => digest::b64dec,
    );
}

fn register_misc(m: &mut Table) {
    use P::*;
    register(m, "default", &[Any], Some(Any), |a| {
        Ok(match a.get(1) {
            Some(g) if !empty(g) => g.clone(),
            _ => a[0].clone(),
        })
    });
    register(m, "empty", &[Any], None, |a| Ok(V::Bool(empty(&a[0]))));
    register(m, "coalesce", &[], Some(Any), |a| {
        Ok(a.iter().find(|v| !empty(v)).cloned().unwrap_or(V::Nil))
    });
    register(m, "all", &[], Some(Any), |a| {
        Ok(V::Bool(a.iter().all(|v| !empty(v))))
    });
    register(m, "any", &[], Some(Any), |a| {
        Ok(V::Bool(a.iter().any(|v| !empty(v))))
    });
    register(m, "ternary", &[Any, Any, Bool], None, |a| {
        Ok(if a[2].truth() {
            a[0].clone()
        } else {
            a[1].clone()
        })
    });
    register(m, "fail", &[Str], None, |a| Err(str_of(&a[0]).to_string()));
    register(m, "toJson", &[Any], None, |a| {
        Ok(V::string(marshal(&a[0], true, None).unwrap_or_default()))
    });
    register(m, "mustToJson", &[Any], None, |a| {
        marshal(&a[0], true, None).map(V::string)
    });
    register(m, "toPrettyJson", &[Any], None, |a| {
        Ok(V::string(
            marshal(&a[0], true, Some("  ")).unwrap_or_default(),
        ))
    });
    register(m, "mustToPrettyJson", &[Any], None, |a| {
        marshal(&a[0], true, Some("  ")).map(V::string)
    });
    let raw: Func = |a| marshal(&a[0], false, None).map(V::string);
    register(m, "toRawJson", &[Any], None, raw);
    register(m, "mustToRawJson", &[Any], None, raw);
    register(m, "fromJson", &[Str], None, |a| {
        Ok(go_unmarshal(str_of(&a[0])).unwrap_or(V::Nil))
    });
    register(m, "mustFromJson", &[Str], None, |a| {
        go_unmarshal(str_of(&a[0]))
    });
    let deep_copy: Func = |a| match &a[0] {
        V::Nil | V::Missing => Err("reflect: call of reflect.Value.Type on zero Value".into()),
        v => Ok(deep_copy(v)),
    };
    register(m, "deepCopy", &[Any], None, deep_copy);
    register(m, "mustDeepCopy", &[Any], None, deep_copy);
    register(m, "typeOf", &[Any], None, |a| Ok(V::string(type_of(&a[0]))));
    register(m, "typeIs", &[Str, Any], None, |a| {
        Ok(V::Bool(str_of(&a[0]) == type_of(&a[1])))
    });
    register(m, "typeIsLike", &[Str, Any], None, |a| {
        let t = type_of(&a[1]);
        let target = str_of(&a[0]);
        Ok(V::Bool(target == t || format!("*{target}") == t))
    });
    register(m, "kindOf", &[Any], None, |a| Ok(V::s(go_kind(&a[0]))));
    register(m, "kindIs", &[Str, Any], None, |a| {
        Ok(V::Bool(str_of(&a[0]) == go_kind(&a[1])))
    });
    register(m, "deepEqual", &[Any, Any], None, |a| {
        Ok(V::Bool(deep_equal(&a[0], &a[1])))
    });
}

/// Sprig's `deepCopy` (copystructure): maps and lists copied deeply.
fn deep_copy<'a>(v: &V<'a>) -> V<'a> {
    match v {
        V::Map(m) => V::map(
            m.borrow()
                .iter()
                .map(|(k, x)| (k.clone(), deep_copy(x)))
                .collect(),
        ),
        V::List(l) => list(l.iter().map(deep_copy).collect()),
        other => other.clone(),
    }
}
