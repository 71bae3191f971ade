//! Sprig v3 text functions. Every Sprig name is accepted at parse time; the ones implemented
//! here follow Sprig's semantics, the rest fail at execution with
//! `error calling X: not implemented by outrigger`.

use std::collections::BTreeMap;
use std::rc::Rc;

use serde_json::Value;

use super::funcs::{quote_str, register, str_of, Table, P};
use super::value::{IntTy, V};

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

/// Convert an owned JSON value to a generic template value.
pub fn owned(v: Value) -> V<'static> {
    match v {
        Value::Null => V::Nil,
        Value::Bool(b) => V::Bool(b),
        Value::Number(n) => V::Float(n.as_f64().unwrap_or(0.0)),
        Value::String(s) => V::string(s),
        Value::Array(a) => V::List(Rc::new(a.into_iter().map(owned).collect())),
        Value::Object(o) => V::Map(Rc::new(o.into_iter().map(|(k, v)| (k, owned(v))).collect())),
    }
}

/// Elements of a list-like value.
pub fn to_list<'a>(v: &V<'a>) -> Option<Vec<V<'a>>> {
    Some(match v {
        V::Json(Value::Array(a)) => a.iter().map(V::json).collect(),
        V::List(l) => (**l).clone(),
        V::K8sSlice(f, s) => s
            .iter()
            .flat_map(|s| s.iter())
            .map(|j| super::value::k8s_elem_value(f, Some(j)))
            .collect(),
        V::ProtoList(f, s) => s
            .iter()
            .flat_map(|s| s.iter())
            .map(|j| super::value::proto_scalar(f, Some(j)))
            .collect(),
        _ => return None,
    })
}

/// Entries of a generic map value.
fn to_map<'a>(v: &V<'a>) -> BTreeMap<String, V<'a>> {
    match v {
        V::Json(Value::Object(o)) => o.iter().map(|(k, x)| (k.clone(), V::json(x))).collect(),
        V::Map(m) => (**m).clone(),
        _ => BTreeMap::new(),
    }
}

/// Go JSON encoding of a generic value (maps sorted).
pub fn to_json_go(v: &V<'_>) -> String {
    crate::gojson::to_string_sorted(&v.to_json())
}

/// Sprig's `strval`.
fn strval(v: &V<'_>) -> String {
    match v {
        V::Str(s) => s.to_string(),
        other => other.sprint(),
    }
}

fn list(items: Vec<V<'_>>) -> V<'_> {
    V::List(Rc::new(items))
}

fn strs(items: Vec<String>) -> V<'static> {
    V::List(Rc::new(items.into_iter().map(V::string).collect()))
}

fn i64v(i: i64) -> V<'static> {
    V::Int(i, IntTy::I64)
}

/// `cast.ToInt64`.
fn to_i64(v: &V<'_>) -> i64 {
    match v {
        V::Int(i, _) | V::Enum(_, i) => *i,
        V::Uint(u) => *u as i64,
        V::Float(f) => *f as i64,
        V::Bool(b) => i64::from(*b),
        V::Str(s) => s.trim().parse().unwrap_or(0),
        _ => 0,
    }
}

/// `cast.ToFloat64`.
fn to_f64(v: &V<'_>) -> f64 {
    match v {
        V::Float(f) => *f,
        V::Str(s) => s.trim().parse().unwrap_or(0.0),
        other => to_i64(other) as f64,
    }
}

/// Go's `math.Max` (`max`) or `math.Min`: NaN wins; between zeros +0 is the max, -0 the min.
fn go_extreme(x: f64, y: f64, max: bool) -> f64 {
    if x.is_nan() || y.is_nan() {
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

fn go_kind(v: &V<'_>) -> &'static str {
    match v {
        V::Missing | V::Nil => "invalid",
        V::Bool(_) => "bool",
        V::Int(_, IntTy::Int) => "int",
        V::Int(_, IntTy::I32) | V::Enum(..) => "int32",
        V::Int(_, IntTy::I64) => "int64",
        V::Uint(_) => "uint32",
        V::Float(_) => "float64",
        V::Str(_) => "string",
        V::Json(Value::Array(_)) | V::List(_) | V::K8sSlice(..) | V::ProtoList(..) => "slice",
        V::Json(_) | V::Map(_) | V::StrMapJ(_) | V::StrMap(_) | V::K8sMap(..) => "map",
        V::NilPtr(_) | V::Proto { .. } | V::Root(_) | V::Ptr(_) => "ptr",
        V::K8s { ptr: true, .. } => "ptr",
        V::K8s { .. } | V::Leaf(..) | V::Pair(..) => "struct",
    }
}

fn type_of(v: &V<'_>) -> String {
    match v {
        V::Missing | V::Nil => "<nil>".into(),
        other => other.type_name(),
    }
}

fn regex(re: &str) -> R<regex::Regex> {
    regex::Regex::new(re).map_err(|e| format!("error parsing regexp: {e}"))
}

fn title(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut prev_letter = false;
    for c in s.chars() {
        if !prev_letter && c.is_alphanumeric() {
            out.extend(c.to_uppercase());
        } else {
            out.push(c);
        }
        prev_letter = c.is_alphanumeric() || c == '\'' || c == '_';
    }
    out
}

fn merge_into<'a>(
    dst: &mut BTreeMap<String, V<'a>>,
    src: &BTreeMap<String, V<'a>>,
    overwrite: bool,
) {
    for (k, v) in src {
        match dst.get_mut(k) {
            Some(d) => {
                let both_maps = matches!(d, V::Map(_) | V::Json(Value::Object(_)))
                    && matches!(v, V::Map(_) | V::Json(Value::Object(_)));
                if both_maps {
                    let mut dm = to_map(d);
                    merge_into(&mut dm, &to_map(v), overwrite);
                    *d = V::Map(Rc::new(dm));
                } else if overwrite || d.is_empty() {
                    *d = v.clone();
                }
            }
            None => {
                dst.insert(k.clone(), v.clone());
            }
        }
    }
}

fn pretty_json(v: &Value) -> String {
    let s = serde_json::to_string_pretty(v).unwrap_or_default();
    s.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

/// Register Sprig's implemented functions.
pub fn register_all(m: &mut Table) {
    register_paths(m);
    register_digests(m);
    register_strings(m);
    register_case(m);
    register_lists(m);
    register_dicts(m);
    register_misc(m);
}

fn register_strings(m: &mut Table) {
    use P::*;
    register(m, "upper", &[Str], None, |a| {
        Ok(V::string(str_of(&a[0]).to_uppercase()))
    });
    register(m, "lower", &[Str], None, |a| {
        Ok(V::string(str_of(&a[0]).to_lowercase()))
    });
    register(m, "title", &[Str], None, |a| {
        Ok(V::string(title(str_of(&a[0]))))
    });
    register(m, "trim", &[Str], None, |a| {
        Ok(V::string(str_of(&a[0]).trim().to_string()))
    });
    let trim_all: super::funcs::Func = |a| {
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
        let n = to_i64(&a[0]);
        let s = str_of(&a[1]).as_bytes();
        let len = s.len() as i64;
        let out = if n >= 0 && len > n {
            &s[..n as usize]
        } else if n < 0 && len + n > 0 {
            &s[(len + n) as usize..]
        } else {
            s
        };
        Ok(V::string(String::from_utf8_lossy(out).into_owned()))
    });
    register(m, "replace", &[Str, Str, Str], None, |a| {
        Ok(V::string(
            str_of(&a[2]).replace(str_of(&a[0]), str_of(&a[1])),
        ))
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
            .map(|v| format!("'{}'", strval(v)))
            .collect();
        Ok(V::string(q.join(" ")))
    });
    register(m, "cat", &[], Some(Any), |a| {
        let q: Vec<String> = a
            .iter()
            .filter(|v| !matches!(v, V::Nil))
            .map(strval)
            .collect();
        Ok(V::string(q.join(" ")))
    });
    register(m, "nindent", &[Int, Str], None, |a| {
        let n = usize::try_from(to_i64(&a[0]).max(0)).unwrap_or(usize::MAX);
        let s = str_of(&a[1]);
        super::funcs::check_size(s.len() + 1, s.matches('\n').count() + 1, n)?;
        let pad = " ".repeat(n);
        Ok(V::string(format!(
            "\n{pad}{}",
            str_of(&a[1]).replace('\n', &format!("\n{pad}"))
        )))
    });
    register(m, "repeat", &[Int, Str], None, |a| {
        let n = usize::try_from(to_i64(&a[0]).max(0)).unwrap_or(usize::MAX);
        super::funcs::check_size(0, n, str_of(&a[1]).len())?;
        Ok(V::string(str_of(&a[1]).repeat(n)))
    });
    register(m, "substr", &[Int, Int, Str], None, |a| {
        let s = str_of(&a[2]).as_bytes();
        let (start, end) = (to_i64(&a[0]), to_i64(&a[1]));
        let len = s.len() as i64;
        let out = if start < 0 {
            &s[..end.clamp(0, len) as usize]
        } else if end < 0 || end > len {
            &s[start.min(len) as usize..]
        } else {
            &s[start.min(end) as usize..end as usize]
        };
        Ok(V::string(String::from_utf8_lossy(out).into_owned()))
    });
    register(m, "nospace", &[Str], None, |a| {
        Ok(V::string(
            str_of(&a[0])
                .chars()
                .filter(|c| !c.is_whitespace())
                .collect(),
        ))
    });
    register(m, "split", &[Str, Str], None, |a| {
        let mut out = BTreeMap::new();
        for (i, p) in str_of(&a[1]).split(str_of(&a[0])).enumerate() {
            out.insert(format!("_{i}"), V::string(p.to_string()));
        }
        Ok(V::Map(Rc::new(out)))
    });
    register(m, "splitList", &[Str, Str], None, |a| {
        Ok(strs(
            str_of(&a[1])
                .split(str_of(&a[0]))
                .map(str::to_string)
                .collect(),
        ))
    });
    register(m, "join", &[Str, Any], None, |a| {
        let items: Vec<String> = match to_list(&a[1]) {
            Some(l) => l
                .iter()
                .filter(|v| !matches!(v, V::Nil))
                .map(strval)
                .collect(),
            None if matches!(a[1], V::Nil) => vec![],
            None => vec![strval(&a[1])],
        };
        Ok(V::string(items.join(str_of(&a[0]))))
    });
    register(m, "toString", &[Any], None, |a| {
        Ok(V::string(strval(&a[0])))
    });
    register(m, "toStrings", &[Any], None, |a| {
        let items = to_list(&a[0]).unwrap_or_default();
        Ok(strs(items.iter().map(strval).collect()))
    });
    register(m, "sortAlpha", &[Any], None, |a| {
        let mut items: Vec<String> = match to_list(&a[0]) {
            Some(l) => l.iter().map(strval).collect(),
            None => vec![strval(&a[0])],
        };
        items.sort();
        Ok(strs(items))
    });
    register(m, "regexMatch", &[Str, Str], None, |a| {
        Ok(V::Bool(regex(str_of(&a[0]))?.is_match(str_of(&a[1]))))
    });
    register(m, "mustRegexMatch", &[Str, Str], None, |a| {
        Ok(V::Bool(regex(str_of(&a[0]))?.is_match(str_of(&a[1]))))
    });
    register(m, "regexReplaceAll", &[Str, Str, Str], None, |a| {
        Ok(V::string(
            regex(str_of(&a[0]))?
                .replace_all(str_of(&a[1]), str_of(&a[2]))
                .into_owned(),
        ))
    });
    register(m, "regexReplaceAllLiteral", &[Str, Str, Str], None, |a| {
        Ok(V::string(
            regex(str_of(&a[0]))?
                .replace_all(str_of(&a[1]), regex::NoExpand(str_of(&a[2])))
                .into_owned(),
        ))
    });
    register(m, "regexFind", &[Str, Str], None, |a| {
        Ok(V::string(
            regex(str_of(&a[0]))?
                .find(str_of(&a[1]))
                .map_or(String::new(), |x| x.as_str().to_string()),
        ))
    });
    register(m, "regexFindAll", &[Str, Str, Int], None, |a| {
        let re = regex(str_of(&a[0]))?;
        let n = to_i64(&a[2]);
        let all = re.find_iter(str_of(&a[1])).map(|x| x.as_str().to_string());
        Ok(strs(if n < 0 {
            all.collect()
        } else {
            all.take(n as usize).collect()
        }))
    });
    register(m, "regexSplit", &[Str, Str, Int], None, |a| {
        let re = regex(str_of(&a[0]))?;
        let n = to_i64(&a[2]);
        let s = str_of(&a[1]);
        Ok(strs(if n < 0 {
            re.split(s).map(str::to_string).collect()
        } else {
            re.splitn(s, n as usize).map(str::to_string).collect()
        }))
    });
    register(m, "regexQuoteMeta", &[Str], None, |a| {
        Ok(V::string(regex::escape(str_of(&a[0]))))
    });
    register(m, "plural", &[Str, Str, Int], None, |a| {
        Ok(if to_i64(&a[2]) == 1 {
            a[0].clone()
        } else {
            a[1].clone()
        })
    });
}

fn words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in s.chars() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        cur.push(c);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn register_case(m: &mut Table) {
    use P::*;
    register(m, "snakecase", &[Str], None, |a| {
        Ok(V::string(
            words(str_of(&a[0]))
                .iter()
                .map(|w| w.to_lowercase())
                .collect::<Vec<_>>()
                .join("_"),
        ))
    });
    register(m, "kebabcase", &[Str], None, |a| {
        Ok(V::string(
            words(str_of(&a[0]))
                .iter()
                .map(|w| w.to_lowercase())
                .collect::<Vec<_>>()
                .join("-"),
        ))
    });
    register(m, "camelcase", &[Str], None, |a| {
        Ok(V::string(
            str_of(&a[0])
                .split('_')
                .map(|w| title(&w.to_lowercase()))
                .collect::<Vec<_>>()
                .join(""),
        ))
    });
    register(m, "untitle", &[Str], None, |a| {
        let mut out = String::new();
        let mut start = true;
        for c in str_of(&a[0]).chars() {
            if start && c.is_alphabetic() {
                out.extend(c.to_lowercase());
            } else {
                out.push(c);
            }
            start = c.is_whitespace();
        }
        Ok(V::string(out))
    });
    register(m, "swapcase", &[Str], None, |a| {
        Ok(V::string(
            str_of(&a[0])
                .chars()
                .flat_map(|c| {
                    if c.is_uppercase() {
                        c.to_lowercase().collect::<Vec<_>>()
                    } else {
                        c.to_uppercase().collect()
                    }
                })
                .collect(),
        ))
    });
    register(m, "initials", &[Str], None, |a| {
        Ok(V::string(
            str_of(&a[0])
                .split_whitespace()
                .filter_map(|w| w.chars().next())
                .collect(),
        ))
    });
    register(m, "abbrev", &[Int, Str], None, |a| {
        let (n, s) = (to_i64(&a[0]), str_of(&a[1]));
        Ok(V::string(if n < 4 || s.chars().count() as i64 <= n {
            s.to_string()
        } else {
            s.chars().take((n - 3) as usize).collect::<String>() + "..."
        }))
    });
    register(m, "splitn", &[Str, Int, Str], None, |a| {
        let mut out = BTreeMap::new();
        let n = to_i64(&a[1]);
        let parts: Vec<&str> = if n < 0 {
            str_of(&a[2]).split(str_of(&a[0])).collect()
        } else {
            str_of(&a[2]).splitn(n as usize, str_of(&a[0])).collect()
        };
        for (i, p) in parts.into_iter().enumerate() {
            out.insert(format!("_{i}"), V::string(p.to_string()));
        }
        Ok(V::Map(Rc::new(out)))
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
    let list_f: super::funcs::Func = |a| Ok(list(a));
    register(m, "list", &[], Some(Any), list_f);
    register(m, "tuple", &[], Some(Any), list_f);
    let push: super::funcs::Func = |a| {
        let mut l =
            to_list(&a[0]).ok_or_else(|| format!("Cannot push on type {}", go_kind(&a[0])))?;
        l.push(a[1].clone());
        Ok(list(l))
    };
    register(m, "append", &[Any, Any], None, push);
    register(m, "push", &[Any, Any], None, push);
    register(m, "mustAppend", &[Any, Any], None, push);
    register(m, "mustPush", &[Any, Any], None, push);
    register(m, "prepend", &[Any, Any], None, |a| {
        let mut l =
            to_list(&a[0]).ok_or_else(|| format!("Cannot prepend on type {}", go_kind(&a[0])))?;
        l.insert(0, a[1].clone());
        Ok(list(l))
    });
    register(m, "mustFirst", &[Any], None, |a| {
        Ok(to_list(&a[0])
            .and_then(|l| l.first().cloned())
            .unwrap_or(V::Nil))
    });
    register(m, "mustLast", &[Any], None, |a| {
        Ok(to_list(&a[0])
            .and_then(|l| l.last().cloned())
            .unwrap_or(V::Nil))
    });
    register(m, "first", &[Any], None, |a| {
        Ok(to_list(&a[0])
            .and_then(|l| l.first().cloned())
            .unwrap_or(V::Nil))
    });
    register(m, "last", &[Any], None, |a| {
        Ok(to_list(&a[0])
            .and_then(|l| l.last().cloned())
            .unwrap_or(V::Nil))
    });
    register(m, "rest", &[Any], None, |a| {
        Ok(to_list(&a[0]).map_or(V::Nil, |l| {
            list(l.get(1..).map(<[_]>::to_vec).unwrap_or_default())
        }))
    });
    register(m, "initial", &[Any], None, |a| {
        Ok(to_list(&a[0]).map_or(V::Nil, |l| list(l[..l.len().saturating_sub(1)].to_vec())))
    });
    register(m, "reverse", &[Any], None, |a| {
        Ok(to_list(&a[0]).map_or(V::Nil, |mut l| {
            l.reverse();
            list(l)
        }))
    });
    register(m, "has", &[Any, Any], None, |a| {
        let l = to_list(&a[1]).unwrap_or_default();
        Ok(V::Bool(l.iter().any(|x| deep_eq(x, &a[0]))))
    });
    register(m, "uniq", &[Any], None, |a| {
        let mut out: Vec<V<'_>> = Vec::new();
        for x in to_list(&a[0]).unwrap_or_default() {
            if !out.iter().any(|y| deep_eq(y, &x)) {
                out.push(x);
            }
        }
        Ok(list(out))
    });
    register(m, "without", &[Any], Some(Any), |a| {
        let l = to_list(&a[0]).unwrap_or_default();
        Ok(list(
            l.into_iter()
                .filter(|x| !a[1..].iter().any(|o| deep_eq(o, x)))
                .collect(),
        ))
    });
    register(m, "compact", &[Any], None, |a| {
        Ok(list(
            to_list(&a[0])
                .unwrap_or_default()
                .into_iter()
                .filter(V::truth)
                .collect(),
        ))
    });
    register(m, "concat", &[], Some(Any), |a| {
        Ok(list(
            a.iter()
                .flat_map(|l| to_list(l).unwrap_or_default())
                .collect(),
        ))
    });
    let slice: super::funcs::Func = |a| {
        let Some(l) = to_list(&a[0]) else {
            return Err(format!(
                "list should be type of slice or array but {}",
                go_kind(&a[0])
            ));
        };
        if l.is_empty() {
            return Ok(V::Nil);
        }
        let start = a.get(1).map_or(0, to_i64);
        let end = a.get(2).map_or(l.len() as i64, to_i64);
        if start < 0 || end < start || end as usize > l.len() {
            return Err(format!("reflect: slice index out of range [{start}:{end}]"));
        }
        Ok(list(l[start as usize..end as usize].to_vec()))
    };
    register(m, "slice", &[Any], Some(Any), slice);
    register(m, "mustSlice", &[Any], Some(Any), slice);
    register(m, "until", &[Int], None, |a| {
        Ok(list(
            (0..to_i64(&a[0]).clamp(0, 1 << 20))
                .map(|i| V::Int(i, IntTy::Int))
                .collect(),
        ))
    });
    register(m, "untilStep", &[Int, Int, Int], None, |a| {
        until_step(to_i64(&a[0]), to_i64(&a[1]), to_i64(&a[2])).map(list)
    });
    let chunk_f: super::funcs::Func = |a| {
        let size = to_i64(&a[0]);
        let items =
            to_list(&a[1]).ok_or_else(|| format!("Cannot chunk type {}", go_kind(&a[1])))?;
        if size <= 0 {
            return Err(format!("Cannot chunk into size {size}"));
        }
        let size = usize::try_from(size).unwrap_or(usize::MAX);
        Ok(list(items.chunks(size).map(|c| list(c.to_vec())).collect()))
    };
    register(m, "chunk", &[Int, Any], None, chunk_f);
    register(m, "mustChunk", &[Int, Any], None, chunk_f);
}

/// Sprig's `untilStep`: from `start` towards `stop` (exclusive) by `step`; empty when `step` does
/// not lead there. Capped like `until` (2^20 items).
fn until_step<'a>(start: i64, stop: i64, step: i64) -> Result<Vec<V<'a>>, String> {
    let mut out = Vec::new();
    let mut i = start;
    let going = |i: i64| if stop < start { i > stop } else { i < stop };
    if (stop < start && step >= 0) || (stop >= start && step <= 0) {
        return Ok(out);
    }
    while going(i) {
        if out.len() >= 1 << 20 {
            return Err("untilStep: more than 1048576 items".into());
        }
        out.push(V::Int(i, IntTy::Int));
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
        Ok(V::Map(Rc::new(out)))
    });
    register(m, "get", &[Map, Str], None, |a| {
        Ok(to_map(&a[0]).remove(str_of(&a[1])).unwrap_or(V::s("")))
    });
    register(m, "set", &[Map, Str, Any], None, |a| {
        let mut d = to_map(&a[0]);
        d.insert(str_of(&a[1]).to_string(), a[2].clone());
        Ok(V::Map(Rc::new(d)))
    });
    register(m, "unset", &[Map, Str], None, |a| {
        let mut d = to_map(&a[0]);
        d.remove(str_of(&a[1]));
        Ok(V::Map(Rc::new(d)))
    });
    register(m, "hasKey", &[Map, Str], None, |a| {
        Ok(V::Bool(to_map(&a[0]).contains_key(str_of(&a[1]))))
    });
    register(m, "keys", &[], Some(Map), |a| {
        let mut k: Vec<String> = a.iter().flat_map(|d| to_map(d).into_keys()).collect();
        k.sort();
        Ok(strs(k))
    });
    register(m, "values", &[Map], None, |a| {
        Ok(list(to_map(&a[0]).into_values().collect()))
    });
    register(m, "pick", &[Map], Some(Str), |a| {
        let d = to_map(&a[0]);
        let keys: Vec<&str> = a[1..].iter().map(str_of).collect();
        Ok(V::Map(Rc::new(
            d.into_iter()
                .filter(|(k, _)| keys.contains(&k.as_str()))
                .collect(),
        )))
    });
    register(m, "pluck", &[Str], Some(Map), |a| {
        let k = str_of(&a[0]);
        Ok(list(
            a[1..].iter().filter_map(|d| to_map(d).remove(k)).collect(),
        ))
    });
    register(m, "merge", &[Map], Some(Map), |a| {
        let mut d = to_map(&a[0]);
        for s in &a[1..] {
            merge_into(&mut d, &to_map(s), false);
        }
        Ok(V::Map(Rc::new(d)))
    });
    register(m, "mergeOverwrite", &[Map], Some(Map), |a| {
        let mut d = to_map(&a[0]);
        for s in &a[1..] {
            merge_into(&mut d, &to_map(s), true);
        }
        Ok(V::Map(Rc::new(d)))
    });
    register(m, "dig", &[], Some(Any), |a| {
        if a.len() < 3 {
            return Err("dig needs at least three arguments".into());
        }
        let n = a.len();
        let mut cur = a[n - 1].clone();
        for k in &a[..n - 2] {
            cur = match to_map(&cur).remove(str_of(k)) {
                Some(v) => v,
                None => return Ok(a[n - 2].clone()),
            };
        }
        Ok(cur)
    });
}

fn deep_eq(a: &V<'_>, b: &V<'_>) -> bool {
    a.type_name() == b.type_name() && a.to_json() == b.to_json()
}

fn register_misc(m: &mut Table) {
    use P::*;
    register(m, "default", &[Any], Some(Any), |a| {
        Ok(match a.get(1) {
            Some(g) if !g.is_empty() => g.clone(),
            _ => a[0].clone(),
        })
    });
    register(m, "empty", &[Any], None, |a| Ok(V::Bool(a[0].is_empty())));
    register(m, "coalesce", &[], Some(Any), |a| {
        Ok(a.iter().find(|v| !v.is_empty()).cloned().unwrap_or(V::Nil))
    });
    register(m, "all", &[], Some(Any), |a| {
        Ok(V::Bool(a.iter().all(|v| !v.is_empty())))
    });
    register(m, "any", &[], Some(Any), |a| {
        Ok(V::Bool(a.iter().any(|v| !v.is_empty())))
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
        Ok(V::string(to_json_any(&a[0])))
    });
    register(m, "mustToJson", &[Any], None, |a| {
        Ok(V::string(to_json_any(&a[0])))
    });
    register(m, "toRawJson", &[Any], None, |a| {
        Ok(V::string(
            serde_json::to_string(&a[0].to_json()).unwrap_or_default(),
        ))
    });
    register(m, "toPrettyJson", &[Any], None, |a| {
        Ok(V::string(pretty_json(&a[0].to_json())))
    });
    register(m, "fromJson", &[Str], None, |a| {
        Ok(serde_json::from_str::<Value>(str_of(&a[0])).map_or(V::Nil, owned))
    });
    register(m, "mustFromJson", &[Str], None, |a| {
        serde_json::from_str::<Value>(str_of(&a[0]))
            .map(owned)
            .map_err(|e| e.to_string())
    });
    register(m, "deepCopy", &[Any], None, |a| Ok(a[0].clone()));
    register(m, "mustDeepCopy", &[Any], None, |a| Ok(a[0].clone()));
    register(m, "typeOf", &[Any], None, |a| Ok(V::string(type_of(&a[0]))));
    register(m, "typeIs", &[Str, Any], None, |a| {
        Ok(V::Bool(str_of(&a[0]) == type_of(&a[1])))
    });
    register(m, "kindOf", &[Any], None, |a| Ok(V::s(go_kind(&a[0]))));
    register(m, "kindIs", &[Str, Any], None, |a| {
        Ok(V::Bool(str_of(&a[0]) == go_kind(&a[1])))
    });
    register(m, "deepEqual", &[Any, Any], None, |a| {
        Ok(V::Bool(deep_eq(&a[0], &a[1])))
    });
    register(m, "atoi", &[Str], None, |a| {
        Ok(V::Int(str_of(&a[0]).parse().unwrap_or(0), IntTy::Int))
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
        to_i64(&a[0])
            .checked_div(to_i64(&a[1]))
            .map(i64v)
            .ok_or_else(|| "runtime error: integer divide by zero".into())
    });
    register(m, "mod", &[Any, Any], None, |a| {
        to_i64(&a[0])
            .checked_rem(to_i64(&a[1]))
            .map(i64v)
            .ok_or_else(|| "runtime error: integer divide by zero".into())
    });
    register(m, "max", &[Any], Some(Any), |a| {
        Ok(i64v(a.iter().map(to_i64).max().unwrap_or(0)))
    });
    register(m, "biggest", &[Any], Some(Any), |a| {
        Ok(i64v(a.iter().map(to_i64).max().unwrap_or(0)))
    });
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
        // strconv.ParseInt(fmt.Sprint(v), 8, 64), 0 on error (same sign and digit rules).
        let parsed = i64::from_str_radix(&a[0].sprint(), 8).unwrap_or(0);
        Ok(i64v(parsed))
    });
    register(m, "addf", &[], Some(Any), |a| {
        Ok(V::Float(a.iter().map(to_f64).sum()))
    });
    register(m, "subf", &[Any], Some(Any), |a| {
        Ok(V::Float(
            a[1..].iter().map(to_f64).fold(to_f64(&a[0]), |x, y| x - y),
        ))
    });
    register(m, "mulf", &[Any], Some(Any), |a| {
        Ok(V::Float(a.iter().map(to_f64).product()))
    });
    register(m, "divf", &[Any], Some(Any), |a| {
        Ok(V::Float(
            a[1..].iter().map(to_f64).fold(to_f64(&a[0]), |x, y| x / y),
        ))
    });
    register(m, "floor", &[Any], None, |a| {
        Ok(V::Float(to_f64(&a[0]).floor()))
    });
    register(m, "ceil", &[Any], None, |a| {
        Ok(V::Float(to_f64(&a[0]).ceil()))
    });
    register(m, "seq", &[], Some(Int), |a| {
        let n: Vec<i64> = a.iter().map(to_i64).collect();
        let (start, step, end) = match n.as_slice() {
            [e] => (1, 1, *e),
            [s, e] => (*s, if s <= e { 1 } else { -1 }, *e),
            [s, st, e] => (*s, *st, *e),
            _ => return Ok(V::s("")),
        };
        let mut out = Vec::new();
        let mut i = start;
        while step != 0 && ((step > 0 && i <= end) || (step < 0 && i >= end)) && out.len() < 1 << 20
        {
            out.push(i.to_string());
            i += step;
        }
        Ok(V::string(out.join(" ")))
    });
}

/// Sprig `toJson`: typed k8s structs use their Go JSON form.
fn to_json_any(v: &V<'_>) -> String {
    if let V::K8s { ty, json, .. } = v {
        let j = json
            .cloned()
            .unwrap_or_else(|| Value::Object(Default::default()));
        return crate::k8s::to_go_value(ty, &j)
            .map(|g| crate::gojson::to_string(&g))
            .unwrap_or_default();
    }
    to_json_go(v)
}
