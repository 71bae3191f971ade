//! Sprig v3 text functions. Every Sprig name is accepted at parse time; the ones implemented
//! here (the date functions are in `dates`) follow Sprig's semantics, the rest (randomness,
//! cryptography, the network, URLs: `docs/go-exactness.md`) fail at execution with
//! `error calling X: not implemented by outrigger`.

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

fn register_strings(m: &mut Table) {
    use super::gostr;
    use P::*;
    register(m, "hello", &[], None, |_| Ok(V::s("Hello!")));
    register(m, "upper", &[Str], None, |a| {
        Ok(V::string(gostr::upper(str_of(&a[0]))))
    });
    register(m, "lower", &[Str], None, |a| {
        Ok(V::string(gostr::lower(str_of(&a[0]))))
    });
    register(m, "title", &[Str], None, |a| {
        Ok(V::string(gostr::title(str_of(&a[0]))))
    });
    register(m, "trim", &[Str], None, |a| {
        Ok(V::string(gostr::trim_space(str_of(&a[0])).to_string()))
    });
    let trim_all: Func = |a| {
        let cut: Vec<char> = str_of(&a[0]).chars().collect();
        Ok(V::string(
            str_of(&a[1]).trim_matches(|c| cut.contains(&c)).to_string(),
        ))
    };
    register(m, "trimAll", &[Str, Str], None, trim_all);
    register(m, "trimall", &[Str, Str], None, trim_all);
    register(m, "trimPrefix", &[Str, Str], None, |a| {
        let s = str_of(&a[1]);
        Ok(V::string(
            s.strip_prefix(str_of(&a[0])).unwrap_or(s).to_string(),
        ))
    });
    register(m, "trimSuffix", &[Str, Str], None, |a| {
        let s = str_of(&a[1]);
        Ok(V::string(
            s.strip_suffix(str_of(&a[0])).unwrap_or(s).to_string(),
        ))
    });
    register(m, "trunc", &[Int, Str], None, |a| {
        let c = to_i64(&a[0]);
        let s = str_of(&a[1]);
        let len = s.len() as i64;
        if c < 0 && len + c > 0 {
            return gostr::slice_bytes(s, Some(len + c), None).map(V::string);
        }
        if c >= 0 && len > c {
            return gostr::slice_bytes(s, None, Some(c)).map(V::string);
        }
        Ok(V::string(s.to_string()))
    });
    register(m, "replace", &[Str, Str, Str], None, |a| {
        Ok(V::string(go_replace(
            str_of(&a[2]),
            str_of(&a[0]),
            str_of(&a[1]),
        )))
    });
    register(m, "hasPrefix", &[Str, Str], None, |a| {
        Ok(V::Bool(str_of(&a[1]).starts_with(str_of(&a[0]))))
    });
    register(m, "hasSuffix", &[Str, Str], None, |a| {
        Ok(V::Bool(str_of(&a[1]).ends_with(str_of(&a[0]))))
    });
    register(m, "quote", &[], Some(Any), |a| {
        let q: Vec<String> = a
            .iter()
            .filter(|v| !matches!(v, V::Nil))
            .map(|v| quote_str(&strval(v)))
            .collect();
        Ok(V::string(q.join(" ")))
    });
    register(m, "squote", &[], Some(Any), |a| {
        let q: Vec<String> = a
            .iter()
            .filter(|v| !matches!(v, V::Nil))
            .map(|v| {
                format!(
                    "'{}'",
                    super::printf::sprintf("%v", std::slice::from_ref(v))
                )
            })
            .collect();
        Ok(V::string(q.join(" ")))
    });
    register(m, "cat", &[], Some(Any), |a| {
        let q: Vec<V<'_>> = a.into_iter().filter(|v| !matches!(v, V::Nil)).collect();
        let f = vec!["%v"; q.len()].join(" ");
        Ok(V::string(super::printf::sprintf(&f, &q)))
    });
    register(m, "nindent", &[Int, Str], None, |a| {
        let n = to_i64(&a[0]);
        let pad = go_repeat(" ", n)?;
        let s = str_of(&a[1]);
        check_size(s.len() + 1, s.matches('\n').count() + 1, pad.len())?;
        Ok(V::string(format!(
            "\n{pad}{}",
            s.replace('\n', &format!("\n{pad}"))
        )))
    });
    register(m, "repeat", &[Int, Str], None, |a| {
        go_repeat(str_of(&a[1]), to_i64(&a[0])).map(V::string)
    });
    register(m, "substr", &[Int, Int, Str], None, |a| {
        let s = str_of(&a[2]);
        let (start, end) = (to_i64(&a[0]), to_i64(&a[1]));
        let len = s.len() as i64;
        let r = if start < 0 {
            gostr::slice_bytes(s, None, Some(end))
        } else if end < 0 || end > len {
            gostr::slice_bytes(s, Some(start), None)
        } else {
            gostr::slice_bytes(s, Some(start), Some(end))
        };
        r.map(V::string)
    });
    register(m, "nospace", &[Str], None, |a| {
        // goutils DeleteWhiteSpace works on bytes, each written back as a rune.
        let s = str_of(&a[0]);
        let kept: Vec<u8> = s
            .bytes()
            .filter(|&b| !gostr::is_space(char::from(b)))
            .collect();
        if kept.len() == s.len() {
            return Ok(V::string(s.to_string()));
        }
        Ok(V::string(kept.into_iter().map(char::from).collect()))
    });
    register(m, "initials", &[Str], None, |a| {
        // goutils Initials works on bytes, each written back as a rune.
        let mut out = String::new();
        let mut gap = true;
        for b in str_of(&a[0]).bytes() {
            let ch = char::from(b);
            if gostr::is_space(ch) {
                gap = true;
            } else if gap {
                out.push(ch);
                gap = false;
            }
        }
        Ok(V::string(out))
    });
    register(m, "untitle", &[Str], None, |a| {
        let mut out = String::new();
        let mut next = true;
        for c in str_of(&a[0]).chars() {
            if gostr::is_space(c) {
                next = true;
                out.push(c);
            } else if next {
                out.push(gostr::to_lower(c));
                next = false;
            } else {
                out.push(c);
            }
        }
        Ok(V::string(out))
    });
    register(m, "swapcase", &[Str], None, |a| {
        let mut out = String::new();
        let mut ws = true;
        for c in str_of(&a[0]).chars() {
            if gostr::is_upper(c) || gostr::is_title(c) {
                out.push(gostr::to_lower(c));
                ws = false;
            } else if gostr::is_lower(c) {
                if ws {
                    out.push(gostr::to_title(c));
                    ws = false;
                } else {
                    out.push(gostr::to_upper(c));
                }
            } else {
                out.push(c);
                ws = gostr::is_space(c);
            }
        }
        Ok(V::string(out))
    });
    register(m, "abbrev", &[Int, Str], None, |a| {
        let (n, s) = (to_i64(&a[0]), str_of(&a[1]));
        if n < 4 {
            return Ok(V::string(s.to_string()));
        }
        Ok(V::string(abbreviate_full(s, 0, n).unwrap_or_default()))
    });
    register(m, "abbrevboth", &[Int, Int, Str], None, |a| {
        let (l, r, s) = (to_i64(&a[0]), to_i64(&a[1]), str_of(&a[2]));
        if r < 4 || (l > 0 && r < 7) {
            return Ok(V::string(s.to_string()));
        }
        Ok(V::string(abbreviate_full(s, l, r).unwrap_or_default()))
    });
    register(m, "wrap", &[Int, Str], None, |a| {
        Ok(V::string(wrap_custom(
            str_of(&a[1]),
            to_i64(&a[0]),
            "",
            false,
        )))
    });
    register(m, "wrapWith", &[Int, Str, Str], None, |a| {
        Ok(V::string(wrap_custom(
            str_of(&a[2]),
            to_i64(&a[0]),
            str_of(&a[1]),
            true,
        )))
    });
    register(m, "plural", &[Str, Str, Int], None, |a| {
        Ok(if to_i64(&a[2]) == 1 {
            a[0].clone()
        } else {
            a[1].clone()
        })
    });
    register(m, "split", &[Str, Str], None, |a| {
        let mut out = BTreeMap::new();
        for (i, p) in go_split(str_of(&a[1]), str_of(&a[0]), -1)
            .into_iter()
            .enumerate()
        {
            out.insert(format!("_{i}"), p);
        }
        Ok(V::StrMap(Some(Rc::new(out))))
    });
    register(m, "splitn", &[Str, Int, Str], None, |a| {
        let mut out = BTreeMap::new();
        let parts = go_split(str_of(&a[2]), str_of(&a[0]), to_i64(&a[1]));
        for (i, p) in parts.into_iter().enumerate() {
            out.insert(format!("_{i}"), p);
        }
        Ok(V::StrMap(Some(Rc::new(out))))
    });
    register(m, "splitList", &[Str, Str], None, |a| {
        Ok(strs(go_split(str_of(&a[1]), str_of(&a[0]), -1)))
    });
    register(m, "join", &[Str, Any], None, |a| {
        Ok(V::string(strslice(&a[1]).join(str_of(&a[0]))))
    });
    register(m, "toString", &[Any], None, |a| {
        Ok(V::string(strval(&a[0])))
    });
    register(m, "toStrings", &[Any], None, |a| Ok(strs(strslice(&a[0]))));
    register(m, "sortAlpha", &[Any], None, |a| {
        let mut items = match to_list(&a[0]) {
            Some(_) => strslice(&a[0]),
            None => vec![strval(&a[0])],
        };
        items.sort();
        Ok(strs(items))
    });
    register(m, "regexMatch", &[Str, Str], None, |a| {
        Ok(V::Bool(
            regex(str_of(&a[0])).is_ok_and(|r| r.is_match(str_of(&a[1]))),
        ))
    });
    register(m, "mustRegexMatch", &[Str, Str], None, |a| {
        Ok(V::Bool(regex(str_of(&a[0]))?.is_match(str_of(&a[1]))))
    });
    register(m, "regexReplaceAll", &[Str, Str, Str], None, |a| {
        let re = must_compile(str_of(&a[0]))?;
        Ok(V::string(replace_all(
            &re,
            str_of(&a[1]),
            str_of(&a[2]),
            false,
        )))
    });
    register(m, "mustRegexReplaceAll", &[Str, Str, Str], None, |a| {
        let re = regex(str_of(&a[0]))?;
        Ok(V::string(replace_all(
            &re,
            str_of(&a[1]),
            str_of(&a[2]),
            false,
        )))
    });
    register(m, "regexReplaceAllLiteral", &[Str, Str, Str], None, |a| {
        let re = must_compile(str_of(&a[0]))?;
        Ok(V::string(replace_all(
            &re,
            str_of(&a[1]),
            str_of(&a[2]),
            true,
        )))
    });
    register(
        m,
        "mustRegexReplaceAllLiteral",
        &[Str, Str, Str],
        None,
        |a| {
            let re = regex(str_of(&a[0]))?;
            Ok(V::string(replace_all(
                &re,
                str_of(&a[1]),
                str_of(&a[2]),
                true,
            )))
        },
    );
    register(m, "regexFind", &[Str, Str], None, |a| {
        let re = must_compile(str_of(&a[0]))?;
        Ok(V::string(
            re.find(str_of(&a[1]))
                .map_or(String::new(), |x| x.as_str().to_string()),
        ))
    });
    register(m, "mustRegexFind", &[Str, Str], None, |a| {
        let re = regex(str_of(&a[0]))?;
        Ok(V::string(
            re.find(str_of(&a[1]))
                .map_or(String::new(), |x| x.as_str().to_string()),
        ))
    });
    register(m, "regexFindAll", &[Str, Str, Int], None, |a| {
        let re = must_compile(str_of(&a[0]))?;
        Ok(strs(find_all(&re, str_of(&a[1]), to_i64(&a[2]))))
    });
    register(m, "mustRegexFindAll", &[Str, Str, Int], None, |a| {
        let re = regex(str_of(&a[0]))?;
        Ok(strs(find_all(&re, str_of(&a[1]), to_i64(&a[2]))))
    });
    register(m, "regexSplit", &[Str, Str, Int], None, |a| {
        let re = must_compile(str_of(&a[0]))?;
        Ok(strs(regex_split(&re, str_of(&a[1]), to_i64(&a[2]))))
    });
    register(m, "mustRegexSplit", &[Str, Str, Int], None, |a| {
        let re = regex(str_of(&a[0]))?;
        Ok(strs(regex_split(&re, str_of(&a[1]), to_i64(&a[2]))))
    });
    register(m, "regexQuoteMeta", &[Str], None, |a| {
        let mut out = String::new();
        for c in str_of(&a[0]).chars() {
            if "\\.+*?()|[]{}^$".contains(c) {
                out.push('\\');
            }
            out.push(c);
        }
        Ok(V::string(out))
    });
}

/// Go's `strings.Replace(s, old, new, -1)` (an empty `old` inserts between every rune).
fn go_replace(s: &str, old: &str, new: &str) -> String {
    if old.is_empty() {
        let mut out = String::with_capacity(s.len() + new.len() * (s.len() + 1));
        out.push_str(new);
        for c in s.chars() {
            out.push(c);
            out.push_str(new);
        }
        return out;
    }
    s.replace(old, new)
}

/// Go's `strings.SplitN(s, sep, n)` (`n < 0`: all; an empty `sep` splits into runes).
fn go_split(s: &str, sep: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if sep.is_empty() {
        let chars: Vec<String> = s.chars().map(String::from).collect();
        if n < 0 || chars.len() as i64 <= n {
            return chars;
        }
        let k = (n - 1) as usize;
        let head_len: usize = s.chars().take(k).map(char::len_utf8).sum();
        let mut out: Vec<String> = chars[..k].to_vec();
        out.push(s[head_len..].to_string());
        return out;
    }
    if n < 0 {
        s.split(sep).map(str::to_string).collect()
    } else {
        s.splitn(n as usize, sep).map(str::to_string).collect()
    }
}

/// Sprig's `strslice`: the non-nil elements of a slice as strings; a scalar as one string; nil
/// as none.
fn strslice(v: &V<'_>) -> Vec<String> {
    match to_list(v) {
        Some(items) => items
            .iter()
            .filter(|x| !matches!(x, V::Nil | V::Missing))
            .map(strval)
            .collect(),
        None if matches!(v, V::Nil | V::Missing) => Vec::new(),
        None => vec![strval(v)],
    }
}

/// xstrings 1.3.3 word kinds.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Word {
    Invalid,
    Number,
    Upper,
    Alphabet,
    Connector,
    Punct,
    Other,
}

fn is_connector(r: char) -> bool {
    r == '-' || r == '_' || super::gostr::is_space(r)
}

/// xstrings' `isAlphabet`: a letter that is not a CJK ideograph.
fn is_alphabet(r: char) -> bool {
    super::gostr::is_letter(r)
        && !matches!(r, '\u{4E00}'..='\u{9FCC}' | '\u{3400}'..='\u{4D85}' | '\u{20000}'..='\u{2B81D}')
}

/// xstrings 1.3.3 `nextWord`.
fn next_word(s: &str) -> (Word, &str, &str) {
    use super::gostr::{is_number, is_punct, is_upper};
    if s.is_empty() {
        return (Word::Invalid, "", "");
    }
    let mut chars = s.char_indices().peekable();
    let (_, r) = chars.next().unwrap_or((0, ' '));
    let mut offset = r.len_utf8();
    let take_while = |offset: &mut usize, pred: &dyn Fn(char) -> bool| {
        for c in s[*offset..].chars() {
            if !pred(c) {
                break;
            }
            *offset += c.len_utf8();
        }
    };
    let wt = if is_connector(r) {
        take_while(&mut offset, &is_connector);
        Word::Connector
    } else if is_punct(r) {
        take_while(&mut offset, &is_punct);
        Word::Punct
    } else if is_upper(r) {
        let rest = &s[offset..];
        if let Some(r2) = rest.chars().next() {
            if is_upper(r2) {
                let mut prev_size = r2.len_utf8();
                offset += r2.len_utf8();
                let mut last = r2;
                for c in s[offset..].chars() {
                    last = c;
                    if !is_upper(c) {
                        break;
                    }
                    prev_size = c.len_utf8();
                    offset += c.len_utf8();
                }
                if offset < s.len() && is_alphabet(last) {
                    offset -= prev_size;
                }
            } else if is_alphabet(r2) {
                offset += r2.len_utf8();
                take_while(&mut offset, &|c| is_alphabet(c) && !is_upper(c));
            }
        }
        Word::Upper
    } else if is_alphabet(r) {
        take_while(&mut offset, &|c| is_alphabet(c) && !is_upper(c));
        Word::Alphabet
    } else if is_number(r) {
        take_while(&mut offset, &is_number);
        Word::Number
    } else {
        take_while(&mut offset, &|c| {
            !(is_connector(c) || is_alphabet(c) || is_number(c) || is_punct(c))
        });
        Word::Other
    };
    (wt, &s[..offset], &s[offset..])
}

/// xstrings 1.3.3 `toLower`.
fn word_lower(out: &mut String, wt: Word, w: &str, connector: char) {
    if wt != Word::Upper && wt != Word::Connector {
        out.push_str(w);
        return;
    }
    for c in w.chars() {
        if is_connector(c) {
            out.push(connector);
        } else if super::gostr::is_upper(c) {
            out.push(super::gostr::to_lower(c));
        } else {
            out.push(c);
        }
    }
}

/// xstrings 1.3.3 `camelCaseToLowerCase` (`snakecase`, `kebabcase`).
fn camel_to_lower(s: &str, connector: char) -> String {
    if s.is_empty() {
        return String::new();
    }
    let mut out = String::with_capacity(s.len() + 4);
    let (mut wt, mut word, mut remaining) = next_word(s);
    while !remaining.is_empty() {
        if wt != Word::Connector {
            word_lower(&mut out, wt, word, connector);
        }
        let prev = wt;
        let last = word;
        (wt, word, remaining) = next_word(remaining);
        match prev {
            Word::Number => {
                while wt == Word::Alphabet || wt == Word::Number {
                    word_lower(&mut out, wt, word, connector);
                    (wt, word, remaining) = next_word(remaining);
                }
                if wt != Word::Invalid && wt != Word::Punct && wt != Word::Connector {
                    out.push(connector);
                }
            }
            Word::Connector => word_lower(&mut out, prev, last, connector),
            Word::Punct => {}
            _ => {
                if wt != Word::Number {
                    if wt != Word::Connector && wt != Word::Punct {
                        out.push(connector);
                    }
                    continue;
                }
                if remaining.is_empty() {
                    continue;
                }
                let last = word;
                (wt, word, remaining) = next_word(remaining);
                if wt != Word::Alphabet {
                    word_lower(&mut out, Word::Number, last, connector);
                    if wt != Word::Connector && wt != Word::Punct {
                        out.push(connector);
                    }
                    continue;
                }
                out.push(connector);
                word_lower(&mut out, Word::Number, last, connector);
                while wt == Word::Alphabet || wt == Word::Number {
                    word_lower(&mut out, wt, word, connector);
                    (wt, word, remaining) = next_word(remaining);
                }
                if wt != Word::Invalid && wt != Word::Connector && wt != Word::Punct {
                    out.push(connector);
                }
            }
        }
    }
    word_lower(&mut out, wt, word, connector);
    out
}

/// xstrings 1.3.3 `ToCamelCase`.
fn to_camel(s: &str) -> String {
    use super::gostr::{to_lower, to_upper};
    if s.is_empty() {
        return String::new();
    }
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars();
    let mut r0 = ' ';
    let mut any = false;
    for c in it.by_ref() {
        any = true;
        r0 = c;
        if !is_connector(c) {
            r0 = to_upper(c);
            break;
        }
        out.push(c);
    }
    let rest: Vec<char> = it.collect();
    if rest.is_empty() {
        // Go writes the last rune read again, even a connector (`"__"` gives `"___"`).
        if any {
            out.push(r0);
        }
        return out;
    }
    for c in rest {
        let r1 = r0;
        r0 = c;
        if is_connector(r0) && is_connector(r1) {
            out.push(r1);
            continue;
        }
        if is_connector(r1) {
            r0 = to_upper(r0);
        } else {
            r0 = to_lower(r0);
            out.push(r1);
        }
    }
    out.push(r0);
    out
}

fn register_case(m: &mut Table) {
    use P::*;
    register(m, "snakecase", &[Str], None, |a| {
        Ok(V::string(camel_to_lower(str_of(&a[0]), '_')))
    });
    register(m, "kebabcase", &[Str], None, |a| {
        Ok(V::string(camel_to_lower(str_of(&a[0]), '-')))
    });
    register(m, "camelcase", &[Str], None, |a| {
        Ok(V::string(to_camel(str_of(&a[0]))))
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

fn register_lists(m: &mut Table) {
    use P::*;
    let list_f: Func = |a| Ok(list(a));
    register(m, "list", &[], Some(Any), list_f);
    register(m, "tuple", &[], Some(Any), list_f);
    let push: Func = |a| {
        let mut l = list_or("push", &a[0])?;
        l.push(a[1].clone());
        Ok(list(l))
    };
    register(m, "append", &[Any, Any], None, push);
    register(m, "push", &[Any, Any], None, push);
    register(m, "mustAppend", &[Any, Any], None, push);
    register(m, "mustPush", &[Any, Any], None, push);
    let prepend: Func = |a| {
        let mut l = list_or("prepend", &a[0])?;
        l.insert(0, a[1].clone());
        Ok(list(l))
    };
    register(m, "prepend", &[Any, Any], None, prepend);
    register(m, "mustPrepend", &[Any, Any], None, prepend);
    let first: Func = |a| {
        let l = to_list(&a[0]).ok_or_else(|| not_list("find first", &a[0]))?;
        Ok(l.first().cloned().unwrap_or(V::Nil))
    };
    register(m, "first", &[Any], None, first);
    register(m, "mustFirst", &[Any], None, first);
    let last: Func = |a| {
        let l = to_list(&a[0]).ok_or_else(|| not_list("find last", &a[0]))?;
        Ok(l.last().cloned().unwrap_or(V::Nil))
    };
    register(m, "last", &[Any], None, last);
    register(m, "mustLast", &[Any], None, last);
    let rest: Func = |a| {
        let l = to_list(&a[0]).ok_or_else(|| not_list("find rest", &a[0]))?;
        if l.is_empty() {
            return Ok(V::NilOf("[]interface {}"));
        }
        Ok(list(l[1..].to_vec()))
    };
    register(m, "rest", &[Any], None, rest);
    register(m, "mustRest", &[Any], None, rest);
    let initial: Func = |a| {
        let l = to_list(&a[0]).ok_or_else(|| not_list("find initial", &a[0]))?;
        if l.is_empty() {
            return Ok(V::NilOf("[]interface {}"));
        }
        Ok(list(l[..l.len() - 1].to_vec()))
    };
    register(m, "initial", &[Any], None, initial);
    register(m, "mustInitial", &[Any], None, initial);
    let reverse: Func = |a| {
        let mut l = to_list(&a[0]).ok_or_else(|| not_list("find reverse", &a[0]))?;
        l.reverse();
        Ok(list(l))
    };
    register(m, "reverse", &[Any], None, reverse);
    register(m, "mustReverse", &[Any], None, reverse);
    let has: Func = |a| {
        if matches!(a[1], V::Nil | V::Missing) {
            return Ok(V::Bool(false));
        }
        let l = to_list(&a[1]).ok_or_else(|| not_list("find has", &a[1]))?;
        Ok(V::Bool(l.iter().any(|x| deep_equal(&a[0], x))))
    };
    register(m, "has", &[Any, Any], None, has);
    register(m, "mustHas", &[Any, Any], None, has);
    let uniq: Func = |a| {
        let l = to_list(&a[0]).ok_or_else(|| not_list("find uniq", &a[0]))?;
        let mut out: Vec<V<'_>> = Vec::new();
        for x in l {
            if !out.iter().any(|y| deep_equal(&x, y)) {
                out.push(x);
            }
        }
        Ok(list(out))
    };
    register(m, "uniq", &[Any], None, uniq);
    register(m, "mustUniq", &[Any], None, uniq);
    let without: Func = |a| {
        let l = to_list(&a[0]).ok_or_else(|| not_list("find without", &a[0]))?;
        Ok(list(
            l.into_iter()
                .filter(|x| !a[1..].iter().any(|o| deep_equal(x, o)))
                .collect(),
        ))
    };
    register(m, "without", &[Any], Some(Any), without);
    register(m, "mustWithout", &[Any], Some(Any), without);
    let compact: Func = |a| {
        let l = list_or("compact", &a[0])?;
        Ok(list(l.into_iter().filter(|x| !empty(x)).collect()))
    };
    register(m, "compact", &[Any], None, compact);
    register(m, "mustCompact", &[Any], None, compact);
    register(m, "concat", &[], Some(Any), |a| {
        let mut out = Vec::new();
        for l in &a {
            match to_list(l) {
                Some(items) => out.extend(items),
                None if matches!(l, V::Nil | V::Missing) => {
                    return Err(
                        "runtime error: invalid memory address or nil pointer dereference".into(),
                    )
                }
                None => return Err(format!("Cannot concat type {} as list", go_kind(l))),
            }
        }
        if out.is_empty() {
            return Ok(V::NilOf("[]interface {}"));
        }
        Ok(list(out))
    });
    let slice: Func = |a| {
        let Some(l) = to_list(&a[0]) else {
            return Err(match &a[0] {
                V::Nil | V::Missing => {
                    "runtime error: invalid memory address or nil pointer dereference".into()
                }
                other => format!(
                    "list should be type of slice or array but {}",
                    go_kind(other)
                ),
            });
        };
        if l.is_empty() {
            return Ok(V::Nil);
        }
        let cap = go_cap(&a[0]) as i64;
        let start = a.get(1).map_or(0, to_i64);
        let end = a.get(2).map_or(l.len() as i64, to_i64);
        if start < 0 || end < start || end > cap {
            return Err("reflect.Value.Slice: slice index out of bounds".into());
        }
        let items: Vec<V<'_>> = (start..end)
            .map(|i| l.get(i as usize).cloned().unwrap_or(V::Nil))
            .collect();
        Ok(match &a[0] {
            V::TList(t, _) => V::TList(t, Rc::new(items)),
            _ => list(items),
        })
    };
    register(m, "slice", &[Any], Some(Any), slice);
    register(m, "mustSlice", &[Any], Some(Any), slice);
    register(m, "until", &[Int], None, |a| {
        let n = to_i64(&a[0]);
        until_step(0, n, if n < 0 { -1 } else { 1 }).map(ints)
    });
    register(m, "untilStep", &[Int, Int, Int], None, |a| {
        until_step(to_i64(&a[0]), to_i64(&a[1]), to_i64(&a[2])).map(ints)
    });
    let chunk_f: Func = |a| {
        let size = to_i64(&a[0]);
        let items = to_list(&a[1]).ok_or_else(|| match &a[1] {
            V::Nil | V::Missing => {
                "runtime error: invalid memory address or nil pointer dereference".to_string()
            }
            other => format!("Cannot chunk type {}", go_kind(other)),
        })?;
        let l = items.len() as i64;
        // Go's `int(math.Floor(...))`: a size of 0 gives an infinity or NaN here, which amd64
        // converts to the smallest int, and `make` refuses the negative length.
        let cs = go_int(((l - 1) as f64 / size as f64).floor()).wrapping_add(1);
        if cs < 0 {
            return Err("runtime error: makeslice: len out of range".into());
        }
        let mut out = Vec::new();
        for i in 0..cs {
            let mut clen = size;
            if i == cs - 1 {
                clen = go_int(((l as f64) % (size as f64)).floor());
                if clen == 0 {
                    clen = size;
                }
            }
            if clen < 0 {
                return Err("runtime error: makeslice: len out of range".into());
            }
            let mut c = Vec::new();
            for j in 0..clen {
                let ix = i * size + j;
                match items.get(ix as usize) {
                    Some(x) if ix >= 0 => c.push(x.clone()),
                    _ => return Err("reflect: slice index out of range".to_string()),
                }
            }
            out.push(list(c));
        }
        Ok(V::TList("[][]interface {}", Rc::new(out)))
    };
    register(m, "chunk", &[Int, Any], None, chunk_f);
    register(m, "mustChunk", &[Int, Any], None, chunk_f);
}

/// Sprig's `untilStep`: from `start` towards `stop` (exclusive) by `step`; empty when `step` does
/// not lead there. Capped at 2^20 items (Go has no cap).
fn until_step(start: i64, stop: i64, step: i64) -> R<Vec<i64>> {
    let mut out = Vec::new();
    if (stop < start && step >= 0) || (stop >= start && step <= 0) {
        return Ok(out);
    }
    let mut i = start;
    let going = |i: i64| if stop < start { i > stop } else { i < stop };
    while going(i) {
        if out.len() >= 1 << 20 {
            return Err("untilStep: more than 1048576 items".into());
        }
        out.push(i);
        match i.checked_add(step) {
            Some(n) => i = n,
            None => break,
        }
    }
    Ok(out)
}

fn register_dicts(m: &mut Table) {
    use P::*;
    register(m, "dict", &[], Some(Any), |a| {
        let mut out = BTreeMap::new();
        for pair in a.chunks(2) {
            out.insert(strval(&pair[0]), pair.get(1).cloned().unwrap_or(V::s("")));
        }
        Ok(V::map(out))
    });
    register(m, "get", &[Map, Str], None, |a| {
        Ok(to_map(&a[0]).remove(str_of(&a[1])).unwrap_or(V::s("")))
    });
    register(m, "set", &[Map, Str, Any], None, |a| {
        if matches!(a[0], V::Nil) {
            return Err("assignment to entry in nil map".into());
        }
        let d = shared_map(&a[0]);
        if contains_map(&a[2], &d) {
            return Err(SELF_MAP.into());
        }
        d.borrow_mut()
            .insert(str_of(&a[1]).to_string(), a[2].clone());
        Ok(V::Map(d))
    });
    register(m, "unset", &[Map, Str], None, |a| {
        if matches!(a[0], V::Nil) {
            return Ok(V::NilOf("map[string]interface {}"));
        }
        let d = shared_map(&a[0]);
        d.borrow_mut().remove(str_of(&a[1]));
        Ok(V::Map(d))
    });
    register(m, "hasKey", &[Map, Str], None, |a| {
        Ok(V::Bool(to_map(&a[0]).contains_key(str_of(&a[1]))))
    });
    register(m, "keys", &[], Some(Map), |a| {
        let k: Vec<String> = a.iter().flat_map(|d| to_map(d).into_keys()).collect();
        Ok(strs(k))
    });
    register(m, "values", &[Map], None, |a| {
        Ok(list(to_map(&a[0]).into_values().collect()))
    });
    register(m, "pick", &[Map], Some(Str), |a| {
        let d = to_map(&a[0]);
        let keys: Vec<&str> = a[1..].iter().map(str_of).collect();
        Ok(V::map(
            d.into_iter()
                .filter(|(k, _)| keys.contains(&k.as_str()))
                .collect(),
        ))
    });
    register(m, "pluck", &[Str], Some(Map), |a| {
        let k = str_of(&a[0]);
        Ok(list(
            a[1..].iter().filter_map(|d| to_map(d).remove(k)).collect(),
        ))
    });
    let merge: Func = |a| merge_maps(&a, false);
    register(m, "merge", &[Map], Some(Map), merge);
    register(m, "mustMerge", &[Map], Some(Map), merge);
    let merge_ow: Func = |a| merge_maps(&a, true);
    register(m, "mergeOverwrite", &[Map], Some(Map), merge_ow);
    register(m, "mustMergeOverwrite", &[Map], Some(Map), merge_ow);
    register(m, "dig", &[], Some(Any), |a| {
        if a.len() < 3 {
            return Err("dig needs at least three arguments".into());
        }
        let n = a.len();
        let def = a[n - 2].clone();
        let mut cur = a[n - 1].clone();
        let bad = |v: &V<'_>, want: &str| {
            format!(
                "interface conversion: interface {{}} is {}, not {want}",
                match v {
                    V::Nil | V::Missing => "nil".to_string(),
                    other => other.type_name(),
                }
            )
        };
        if !matches!(cur, V::Json(Value::Object(_)) | V::Map(_)) {
            return Err(bad(&cur, "map[string]interface {}"));
        }
        for k in &a[..n - 2] {
            if !matches!(k, V::Str(_)) {
                return Err(bad(k, "string"));
            }
        }
        for (i, k) in a[..n - 2].iter().enumerate() {
            if !matches!(cur, V::Json(Value::Object(_)) | V::Map(_)) {
                return Err(bad(&cur, "map[string]interface {}"));
            }
            cur = match to_map(&cur).remove(str_of(k)) {
                Some(v) => v,
                None => return Ok(def),
            };
            if i == n - 3 {
                return Ok(cur);
            }
        }
        Ok(cur)
    });
}

/// Go accepts making a map contain itself and then overflows its stack printing, encoding or
/// merging it (a fatal error, not a template error); outrigger refuses at `set` / `merge`.
const SELF_MAP: &str = "outrigger does not support a map that contains itself";

/// Does `v` hold the map `m`, at any depth?
fn contains_map<'a>(v: &V<'a>, m: &super::value::GoMap<'a>) -> bool {
    match v {
        V::Map(x) => {
            Rc::ptr_eq(x, m)
                || x.try_borrow()
                    .map_or(true, |x| x.values().any(|y| contains_map(y, m)))
        }
        V::List(l) | V::TList(_, l) => l.iter().any(|y| contains_map(y, m)),
        _ => false,
    }
}

/// mergo 0.3.x `Merge` / `MergeWithOverwrite` of generic maps into the first (changed in place).
fn merge_maps<'a>(a: &[V<'a>], overwrite: bool) -> R<V<'a>> {
    let dst = shared_map(&a[0]);
    let holds_dst = |src: &V<'a>| match src {
        V::Map(m) => m.borrow().values().any(|v| contains_map(v, &dst)),
        _ => false,
    };
    if a[1..].iter().any(holds_dst) {
        return Err(SELF_MAP.into());
    }
    for src in &a[1..] {
        // Copy the source first: it may be the destination map itself.
        let src_entries = to_map(src);
        let Ok(mut d) = dst.try_borrow_mut() else {
            return Err(SELF_MAP.into());
        };
        deep_merge(&mut d, &src_entries, overwrite);
    }
    Ok(V::Map(dst))
}

fn is_mapish(v: &V<'_>) -> bool {
    matches!(v, V::Map(_) | V::Json(Value::Object(_)))
}

/// mergo 0.3.x `deepMerge` of one `map[string]interface{}` into another, as Sprig's `merge`
/// (`overwrite` false) and `mergeOverwrite` use it:
/// * a nil source value is copied only when overwriting;
/// * a map source value is merged into a map destination value (recursively, in place);
/// * a map or slice source value never replaces a non-empty destination value, even when
///   overwriting (`mergeOverwrite (dict "a" "x") (dict "a" (dict))` keeps `"x"`);
/// * otherwise the source value is copied when overwriting or when the destination value is
///   missing or empty.
fn deep_merge<'a>(
    dst: &mut BTreeMap<String, V<'a>>,
    src: &BTreeMap<String, V<'a>>,
    overwrite: bool,
) {
    for (k, sv) in src {
        if matches!(sv, V::Nil | V::Missing | V::Json(Value::Null)) {
            if overwrite {
                dst.insert(k.clone(), V::Nil);
            }
            continue;
        }
        let src_map = go_kind(sv) == "map";
        let src_coll = src_map || go_kind(sv) == "slice";
        if src_map {
            if let Some(dv) = dst.get_mut(k) {
                if is_mapish(dv) && is_mapish(sv) {
                    // Copy the source first: it may be the destination map itself.
                    let src_entries = to_map(sv);
                    let m = shared_map(dv);
                    if let Ok(mut inner) = m.try_borrow_mut() {
                        deep_merge(&mut inner, &src_entries, overwrite);
                    }
                    *dv = V::Map(m);
                }
            }
        }
        let de = dst.get(k);
        if let Some(dv) = de {
            if !empty(dv) && src_coll {
                continue;
            }
        }
        if overwrite || de.is_none_or(empty) {
            dst.insert(k.clone(), sv.clone());
        }
    }
}

fn register_numbers(m: &mut Table) {
    use P::*;
    register(m, "atoi", &[Str], None, |a| {
        let s = str_of(&a[0]);
        let v = if s.starts_with(['+', '-']) && s.len() > 1 || !s.starts_with(['+', '-']) {
            strconv::atoi(s).unwrap_or(0)
        } else {
            0
        };
        Ok(V::Int(v, IntTy::Int))
    });
    register(m, "int", &[Any], None, |a| {
        Ok(V::Int(to_i64(&a[0]), IntTy::Int))
    });
    register(m, "int64", &[Any], None, |a| Ok(i64v(to_i64(&a[0]))));
    register(m, "float64", &[Any], None, |a| Ok(V::Float(to_f64(&a[0]))));
    register(m, "add", &[], Some(Any), |a| {
        Ok(i64v(a.iter().map(to_i64).fold(0i64, i64::wrapping_add)))
    });
    register(m, "add1", &[Any], None, |a| {
        Ok(i64v(to_i64(&a[0]).wrapping_add(1)))
    });
    register(m, "sub", &[Any, Any], None, |a| {
        Ok(i64v(to_i64(&a[0]).wrapping_sub(to_i64(&a[1]))))
    });
    register(m, "mul", &[Any], Some(Any), |a| {
        Ok(i64v(a.iter().map(to_i64).fold(1i64, i64::wrapping_mul)))
    });
    register(m, "div", &[Any, Any], None, |a| {
        let (x, y) = (to_i64(&a[0]), to_i64(&a[1]));
        if y == 0 {
            return Err("runtime error: integer divide by zero".into());
        }
        Ok(i64v(x.wrapping_div(y)))
    });
    register(m, "mod", &[Any, Any], None, |a| {
        let (x, y) = (to_i64(&a[0]), to_i64(&a[1]));
        if y == 0 {
            return Err("runtime error: integer divide by zero".into());
        }
        Ok(i64v(x.wrapping_rem(y)))
    });
    let max: Func = |a| Ok(i64v(a.iter().map(to_i64).max().unwrap_or(0)));
    register(m, "max", &[Any], Some(Any), max);
    register(m, "biggest", &[Any], Some(Any), max);
    register(m, "min", &[Any], Some(Any), |a| {
        Ok(i64v(a.iter().map(to_i64).min().unwrap_or(0)))
    });
    register(m, "maxf", &[Any], Some(Any), |a| {
        Ok(V::Float(
            a[1..]
                .iter()
                .map(to_f64)
                .fold(to_f64(&a[0]), |x, y| go_extreme(x, y, true)),
        ))
    });
    register(m, "minf", &[Any], Some(Any), |a| {
        Ok(V::Float(
            a[1..]
                .iter()
                .map(to_f64)
                .fold(to_f64(&a[0]), |x, y| go_extreme(x, y, false)),
        ))
    });
    register(m, "toDecimal", &[Any], None, |a| {
        let s = a[0].sprint();
        let parsed = strconv::parse_int(&s, 8, 64).unwrap_or(0);
        Ok(i64v(parsed))
    });
    register(m, "addf", &[], Some(Any), |a| {
        decimal_op(&V::Float(0.0), &a, decimal::Op::Add)
    });
    register(m, "add1f", &[Any], None, |a| {
        decimal_op(&a[0], &[V::Int(1, IntTy::Int)], decimal::Op::Add)
    });
    register(m, "subf", &[Any], Some(Any), |a| {
        decimal_op(&a[0], &a[1..], decimal::Op::Sub)
    });
    register(m, "mulf", &[Any], Some(Any), |a| {
        decimal_op(&a[0], &a[1..], decimal::Op::Mul)
    });
    register(m, "divf", &[Any], Some(Any), |a| {
        decimal_op(&a[0], &a[1..], decimal::Op::Div)
    });
    register(m, "floor", &[Any], None, |a| {
        Ok(V::Float(to_f64(&a[0]).floor()))
    });
    register(m, "ceil", &[Any], None, |a| {
        Ok(V::Float(to_f64(&a[0]).ceil()))
    });
    register(m, "round", &[Any, Int], Some(Float), |a| {
        let round_on = match a.get(2) {
            Some(V::Float(f)) => *f,
            _ => 0.5,
        };
        let val = to_f64(&a[0]);
        let places = to_i64(&a[1]) as f64;
        let pow = 10f64.powf(places);
        let digit = pow * val;
        let div = digit.fract();
        let r = if div >= round_on {
            digit.ceil()
        } else {
            digit.floor()
        };
        Ok(V::Float(r / pow))
    });
    register(m, "seq", &[], Some(Int), |a| {
        let n: Vec<i64> = a.iter().map(to_i64).collect();
        let (start, end, step) = match n.as_slice() {
            [] => return Ok(V::s("")),
            [e] => {
                let inc = if *e < 1 { -1 } else { 1 };
                (1, e + inc, inc)
            }
            [s, e] => {
                let st = if e < s { -1 } else { 1 };
                (*s, e + st, st)
            }
            [s, st, e] => {
                let mut inc = 1;
                if e < s {
                    inc = -1;
                    if *st > 0 {
                        return Ok(V::s(""));
                    }
                }
                (*s, e + inc, *st)
            }
            _ => return Ok(V::s("")),
        };
        let items = until_step(start, end, step)?;
        let s: Vec<String> = items.iter().map(i64::to_string).collect();
        Ok(V::string(s.join(" ")))
    });
}

/// Sprig's `execDecimalOp`: shopspring/decimal arithmetic on the shortest decimal forms of the
/// float64 operands, then back to float64.
fn decimal_op<'a>(a: &V<'a>, rest: &[V<'a>], op: decimal::Op) -> R<V<'a>> {
    let mut acc = decimal::Dec::from_f64(to_f64(a))?;
    for x in rest {
        let d = decimal::Dec::from_f64(to_f64(x))?;
        acc = acc.apply(&d, op)?;
    }
    Ok(V::Float(acc.to_f64()))
}

mod decimal {
    //! The subset of shopspring/decimal Sprig uses: exact `Add`, `Sub`, `Mul`, and `Div`
    //! rounded half away from zero to 16 decimal places; float64 conversions through the
    //! shortest decimal form. Mantissas beyond 128 bits fall back to float64 arithmetic.

    /// The operation.
    #[derive(Clone, Copy)]
    pub enum Op {
        Add,
        Sub,
        Mul,
        Div,
    }

    /// A decimal `m × 10^e`, or a float64 when it no longer fits.
    #[derive(Clone, Copy)]
    pub enum Dec {
        Exact(i128, i32),
        Approx(f64),
    }

    impl Dec {
        /// `decimal.NewFromFloat`.
        pub fn from_f64(f: f64) -> Result<Dec, String> {
            if !f.is_finite() {
                return Err(format!(
                    "Cannot create a Decimal from {}",
                    crate::go::float::format_float(f, 'g', -1)
                ));
            }
            if f == 0.0 {
                return Ok(Dec::Exact(0, 0));
            }
            let s = crate::go::float::shortest_sci(f);
            let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
            let exp: i32 = exp.parse().unwrap_or(0);
            let neg = mant.starts_with('-');
            let digits: String = mant.chars().filter(char::is_ascii_digit).collect();
            let frac = digits.len() as i32 - 1;
            let m: i128 = digits.parse().unwrap_or(0);
            Ok(Dec::Exact(if neg { -m } else { m }, exp - frac))
        }

        /// `Decimal.Float64`.
        pub fn to_f64(self) -> f64 {
            match self {
                Dec::Exact(m, e) => format!("{m}e{e}").parse().unwrap_or(0.0),
                Dec::Approx(f) => f,
            }
        }

        fn approx(self) -> f64 {
            self.to_f64()
        }

        /// `d op x`.
        pub fn apply(self, x: &Dec, op: Op) -> Result<Dec, String> {
            let (Dec::Exact(a, ea), Dec::Exact(b, eb)) = (self, *x) else {
                return Ok(Dec::Approx(float_op(self.approx(), x.approx(), op)?));
            };
            let r = match op {
                Op::Add | Op::Sub => {
                    let b = if matches!(op, Op::Sub) { -b } else { b };
                    let e = ea.min(eb);
                    scale(a, ea - e)
                        .zip(scale(b, eb - e))
                        .and_then(|(x, y)| x.checked_add(y))
                        .map(|m| Dec::Exact(m, e))
                }
                Op::Mul => a.checked_mul(b).map(|m| Dec::Exact(m, ea + eb)),
                Op::Div => {
                    if b == 0 {
                        return Err("decimal division by 0".into());
                    }
                    div_round(a, ea, b, eb)
                }
            };
            match r {
                Some(d) => Ok(d),
                None => Ok(Dec::Approx(float_op(self.approx(), x.approx(), op)?)),
            }
        }
    }

    fn float_op(a: f64, b: f64, op: Op) -> Result<f64, String> {
        Ok(match op {
            Op::Add => a + b,
            Op::Sub => a - b,
            Op::Mul => a * b,
            Op::Div => {
                if b == 0.0 {
                    return Err("decimal division by 0".into());
                }
                a / b
            }
        })
    }

    fn scale(m: i128, k: i32) -> Option<i128> {
        let mut m = m;
        for _ in 0..k {
            m = m.checked_mul(10)?;
        }
        Some(m)
    }

    /// `DivRound(d2, 16)`: the quotient truncated at 10^-16, then rounded half away from zero.
    fn div_round(a: i128, ea: i32, b: i128, eb: i32) -> Option<Dec> {
        const PREC: i32 = 16;
        // q = a·10^ea / (b·10^eb) at 10^-PREC: numerator a·10^(ea-eb+PREC) over b.
        let shift = ea - eb + PREC;
        let (num, den) = if shift >= 0 {
            (scale(a, shift)?, b)
        } else {
            (a, scale(b, -shift)?)
        };
        let q = num / den;
        let r = num % den;
        let twice = r.checked_abs()?.checked_mul(2)?;
        let q = if twice >= den.checked_abs()? {
            if (num < 0) != (den < 0) {
                q - 1
            } else {
                q + 1
            }
        } else {
            q
        };
        Some(Dec::Exact(q, -PREC))
    }
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
