//! Sprig v3 text functions. Every Sprig name is accepted at parse time; the ones implemented
//! here (the date functions are in `dates`) follow Sprig's semantics, the rest (randomness,
//! cryptography, the network, URLs: `docs/go-exactness.md`) fail at execution with
//! `error calling X: not implemented by outrigger`.
//!
//! Families, a file each: `strings`, `case`, `lists`, `dicts`, `numbers`, `paths`, `encoding`
//! (digests, base32/64, JSON), `semver`, `defaults`, `reflect`. Here: the table of Sprig's names
//! and the conversions the families share (`cast`'s `ToInt64`/`ToFloat64`, `strval`, Go's
//! `reflect.DeepEqual`).

use std::collections::BTreeMap;
use std::rc::Rc;

use serde_json::Value;

use super::list::GoList;
use super::regexp::{find_all, must_compile, regex, regex_split, replace_all};
use super::signature::{register, Func, Table, P};
use super::value::{
    check_size, go_cap, go_unmarshal, map_entries, marshal, quote_str, shared_map, str_of, to_list,
    to_map, IntTy, V,
};
use crate::go::strconv;

/// Register functions of one string argument returning a string.
macro_rules! string_fns {
    ($m:expr, $($name:literal => $f:path),* $(,)?) => {
        $(register($m, $name, &[P::Str], None, |a| Ok(V::string($f(str_of(&a[0]))))));*
    };
}

mod case;
mod defaults;
mod dicts;
mod encoding;
mod lists;
mod numbers;
mod paths;
mod reflect;
mod semver;
mod strings;

use case::register_case;
use defaults::register_defaults;
use dicts::register_dicts;
use encoding::{register_digests, register_json};
use lists::register_lists;
use numbers::register_numbers;
use paths::register_paths;
use reflect::register_reflect;
use semver::register_semver;
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
    V::List(GoList::new(items))
}

fn strs<'a>(items: Vec<String>) -> V<'a> {
    V::TList("[]string", items.into_iter().map(V::string).collect())
}

fn ints<'a>(items: Vec<i64>) -> V<'a> {
    V::TList(
        "[]int",
        items.into_iter().map(|i| V::Int(i, IntTy::Int)).collect(),
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
        V::NilPtr(_) | V::Proto { .. } | V::Root(_) | V::Ptr(_) | V::Semver(_, true) => "ptr",
        V::K8s { ptr: true, .. } => "ptr",
        V::K8s { .. } | V::Leaf(..) | V::Pair(..) | V::Time(_) | V::Semver(_, false) => "struct",
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
        V::K8s { ptr: false, .. }
        | V::Leaf(..)
        | V::Pair(..)
        | V::Time(_)
        | V::Semver(_, false) => false,
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

/// Go's `int(f)` on amd64: NaN and values out of the int64 range become the smallest int.
fn go_int(f: f64) -> i64 {
    // NaN is outside every range too.
    if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&f) {
        f as i64
    } else {
        i64::MIN
    }
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

/// Register Sprig's implemented functions (Sprig v3.3.0 semantics and Go signatures).
pub fn register_all(m: &mut Table) {
    register_paths(m);
    register_digests(m);
    register_strings(m);
    register_case(m);
    register_lists(m);
    register_dicts(m);
    register_numbers(m);
    register_defaults(m);
    register_json(m);
    register_reflect(m);
    register_semver(m);
}
