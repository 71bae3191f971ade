//! Function library: Go builtins, Istio's template functions and Sprig v3.

use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::OnceLock;

use serde_json::Value;

use super::value::{check_size, go_unmarshal, str_of};
use super::value::{duration_parts, IntTy, V};
use super::{dates, printf, sprig, value};
use crate::go::quote::format_duration;
use crate::json::lookup as jsonmap;

type R<T> = Result<T, String>;

use super::signature::register;
pub use super::signature::{convert, FuncDef, Table, P};

/// Look a function up by name.
pub fn lookup(name: &str) -> Option<&'static FuncDef> {
    table().get(name)
}

/// Is `name` a Sprig function outrigger parses but does not implement?
pub fn is_unimplemented(name: &str) -> bool {
    table().get(name).is_some_and(|d| !d.implemented)
}

/// Is every call of `name` a function of its arguments alone (with the template's environment
/// map)? False for the functions that read the clock and for the Sprig names outrigger does not
/// implement (randomness, keys, the network: none of them would be).
pub fn is_pure(name: &str) -> bool {
    !super::dates::reads_clock(name) && !is_unimplemented(name)
}

/// Is `name` a known function name (builtin, Sprig or Istio)?
pub fn is_defined(name: &str) -> bool {
    name == "and" || name == "or" || table().contains_key(name)
}

fn table() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(build)
}

fn build() -> Table {
    let mut m = Table::default();
    // Go consults the template's FuncMap before its builtins, so Sprig's `slice` wins; Istio's
    // map is merged last (`indent`, `contains`, `env`, `omit` override Sprig's).
    builtins(&mut m);
    sprig::register_all(&mut m);
    dates::register_dates(&mut m);
    // Sprig's `mustX` differs from `X` only by returning its error instead of panicking, and a
    // panicking function fails the template execution in Go as an error does here.
    for name in sprig::SPRIG_NAMES {
        if m.contains_key(name) {
            continue;
        }
        let base = name.strip_prefix("must").and_then(|rest| {
            let mut c = rest.chars();
            let first = c.next()?.to_ascii_lowercase();
            let base: String = std::iter::once(first).chain(c).collect();
            m.get(base.as_str()).copied()
        });
        match base {
            Some(d) => {
                m.insert(name, d);
            }
            // Every other Sprig name parses; unimplemented ones fail at execution.
            None => {
                m.insert(
                    name,
                    FuncDef {
                        params: &[],
                        variadic: Some(P::Any),
                        f: not_implemented_stub,
                        implemented: false,
                    },
                );
            }
        }
    }
    istio(&mut m);
    m
}

fn not_implemented_stub<'a>(_: Vec<V<'a>>) -> R<V<'a>> {
    Err("not implemented by outrigger".into())
}

/// Does function `name` put its arguments (or its arguments' elements) into a new or updated map
/// or list, so that its result can be nested deeper than its arguments?
pub fn nests_values(name: &str) -> bool {
    let base = name.strip_prefix("must").unwrap_or(name);
    matches!(
        base,
        "dict"
            | "list"
            | "tuple"
            | "append"
            | "Append"
            | "push"
            | "Push"
            | "prepend"
            | "Prepend"
            | "set"
            | "merge"
            | "Merge"
            | "mergeOverwrite"
            | "MergeOverwrite"
            | "concat"
            | "chunk"
            | "Chunk"
            | "deepCopy"
            | "DeepCopy"
            | "fromJson"
            | "FromJson"
            | "fromYaml"
            | "fromYamlArray"
            | "fromJsonArray"
            | "splitList"
            | "dig"
    )
}

/// The table's entry for `env` and `expandenv`: the executor calls [`call_env`] instead.
pub(super) fn needs_env<'a>(_: Vec<V<'a>>) -> R<V<'a>> {
    Err("needs the render's environment".into())
}

/// The functions that read the environment: `env` and `expandenv` run over `env` (the
/// variables the caller allows), `None` for every other name.
pub fn call_env<'a>(
    name: &str,
    env: &BTreeMap<String, String>,
    args: &[V<'a>],
) -> Option<R<V<'a>>> {
    let arg = |i: usize| args.get(i).map_or("", str_of);
    match name {
        "env" => Some(Ok(V::string(match env.get(arg(0)) {
            Some(v) if !v.is_empty() => v.clone(),
            _ => arg(1).to_string(),
        }))),
        "expandenv" => Some(Ok(V::string(expand_env(arg(0), |k| {
            env.get(k).map_or("", String::as_str)
        })))),
        _ => None,
    }
}

/// Go's `os.Expand`: `$NAME` and `${NAME}` replaced by `mapping(NAME)`; `$` before anything
/// else is kept, bad syntax (`${}`, an unclosed `${`) is dropped.
pub fn expand_env<'e>(s: &str, mapping: impl Fn(&str) -> &'e str) -> String {
    fn special(c: u8) -> bool {
        matches!(
            c,
            b'*' | b'#' | b'$' | b'@' | b'!' | b'?' | b'-' | b'0'..=b'9'
        )
    }
    fn alnum(c: u8) -> bool {
        c == b'_' || c.is_ascii_alphanumeric()
    }
    /// Go's `getShellName`: the name after `$` and how many bytes it takes.
    fn shell_name(s: &[u8]) -> (&[u8], usize) {
        if s[0] == b'{' {
            if s.len() > 2 && special(s[1]) && s[2] == b'}' {
                return (&s[1..2], 3);
            }
            for i in 1..s.len() {
                if s[i] == b'}' {
                    if i == 1 {
                        return (&[], 2);
                    }
                    return (&s[1..i], i + 1);
                }
            }
            return (&[], 1);
        }
        if special(s[0]) {
            return (&s[0..1], 1);
        }
        let n = s.iter().take_while(|&&c| alnum(c)).count();
        (&s[..n], n)
    }
    let b = s.as_bytes();
    let mut out: Vec<u8> = Vec::new();
    let mut i = 0;
    let mut j = 0;
    while j < b.len() {
        if b[j] == b'$' && j + 1 < b.len() {
            out.extend_from_slice(&b[i..j]);
            let (name, w) = shell_name(&b[j + 1..]);
            if name.is_empty() && w > 0 {
                // Bad syntax: dropped.
            } else if name.is_empty() {
                out.push(b'$');
            } else {
                out.extend_from_slice(mapping(&String::from_utf8_lossy(name)).as_bytes());
            }
            j += w;
            i = j + 1;
        }
        j += 1;
    }
    if i == 0 && out.is_empty() {
        return s.to_string();
    }
    out.extend_from_slice(&b[i.min(b.len())..]);
    String::from_utf8_lossy(&out).into_owned()
}

// ---------------------------------------------------------------- Go builtins

fn builtins(m: &mut Table) {
    use P::*;
    register(m, "not", &[Raw], None, |a| Ok(V::Bool(!a[0].truth())));
    register(m, "eq", &[Raw], Some(Raw), f_eq);
    register(m, "ne", &[Raw, Raw], None, |a| {
        f_eq(a).map(|v| V::Bool(!v.truth()))
    });
    register(m, "lt", &[Raw, Raw], None, |a| {
        lt(&a[0], &a[1]).map(V::Bool)
    });
    register(m, "le", &[Raw, Raw], None, |a| {
        le(&a[0], &a[1]).map(V::Bool)
    });
    register(m, "gt", &[Raw, Raw], None, |a| {
        le(&a[0], &a[1]).map(|b| V::Bool(!b))
    });
    register(m, "ge", &[Raw, Raw], None, |a| {
        lt(&a[0], &a[1]).map(|b| V::Bool(!b))
    });
    register(m, "len", &[Raw], None, |a| match a[0].len() {
        Some(n) => Ok(V::Int(n as i64, IntTy::Int)),
        None => match a[0] {
            V::Missing => Err("reflect: call of reflect.Value.Type on zero Value".into()),
            V::Nil | V::NilPtr(_) | V::Proto { json: None, .. } => Err("len of nil pointer".into()),
            _ => Err(format!("len of type {}", a[0].type_name())),
        },
    });
    register(m, "index", &[Raw], Some(Raw), f_index);
    register(m, "slice", &[Raw], Some(Raw), f_slice);
    register(m, "print", &[], Some(Any), |a| Ok(V::string(go_sprint(&a))));
    register(m, "println", &[], Some(Any), |a| {
        let s: Vec<String> = a.iter().map(V::sprint).collect();
        Ok(V::string(s.join(" ") + "\n"))
    });
    register(m, "printf", &[Str], Some(Any), |a| {
        let fmt = str_of(&a[0]).to_string();
        Ok(V::string(printf::sprintf(&fmt, &a[1..])))
    });
    register(m, "html", &[], Some(Any), |a| {
        Ok(V::string(html_escape(&eval_args(&a))))
    });
    register(m, "js", &[], Some(Any), |a| {
        Ok(V::string(js_escape(&eval_args(&a))))
    });
    register(m, "urlquery", &[], Some(Any), |a| {
        Ok(V::string(query_escape(&eval_args(&a))))
    });
    // The executor puts the callee's name first (see `value_string`).
    register(m, "call", &[Raw], Some(Raw), |a| match &a[1] {
        V::Missing | V::Nil => Err("call of nil".into()),
        other => Err(format!(
            "non-function {} of type {}",
            str_of(&a[0]),
            other.type_name()
        )),
    });
}

/// Go's `reflect.Value.String()`: a string's text, `<T Value>` for any other value.
pub(super) fn value_string(v: &V<'_>) -> String {
    match v {
        V::Str(s) => s.to_string(),
        V::Missing | V::Nil => "<invalid Value>".to_string(),
        other => format!("<{} Value>", other.type_name()),
    }
}

/// Go's `evalArgs` for `html`, `js` and `urlquery`: one string as it is, otherwise
/// `fmt.Sprint` of the arguments with nil shown as `<no value>` (a string operand).
fn eval_args(a: &[V<'_>]) -> String {
    if let [V::Str(s)] = a {
        return s.to_string();
    }
    let args: Vec<V<'_>> = a
        .iter()
        .map(|v| match v {
            V::Nil | V::Missing => V::s("<no value>"),
            V::Ptr(p) => (**p).clone(),
            other => other.clone(),
        })
        .collect();
    go_sprint(&args)
}

/// Go `fmt.Sprint`: spaces between operands when neither is a string.
pub fn go_sprint(a: &[V<'_>]) -> String {
    let mut out = String::new();
    for (i, v) in a.iter().enumerate() {
        if i > 0 && !matches!(v, V::Str(_)) && !matches!(a[i - 1], V::Str(_)) {
            out.push(' ');
        }
        v.write_sprint(&mut out, true);
    }
    out
}

#[derive(PartialEq, Clone, Copy, Debug)]
enum Kind {
    Invalid,
    Bool,
    Int,
    Uint,
    Float,
    Complex,
    Str,
    Other,
}

fn basic_kind(v: &V<'_>) -> Kind {
    match v {
        V::Missing | V::Nil => Kind::Invalid,
        V::Bool(_) => Kind::Bool,
        V::Int(..) | V::Enum(..) => Kind::Int,
        V::Uint(_) => Kind::Uint,
        V::Float(_) => Kind::Float,
        V::Complex(..) => Kind::Complex,
        V::Str(_) => Kind::Str,
        _ => Kind::Other,
    }
}

fn as_i(v: &V<'_>) -> i128 {
    match v {
        V::Int(i, _) | V::Enum(_, i) => i128::from(*i),
        V::Uint(u) => i128::from(*u),
        _ => 0,
    }
}

fn f_eq<'a>(a: Vec<V<'a>>) -> R<V<'a>> {
    // Go's `basicKind`: every non-basic kind, and the invalid value, is `invalidKind`.
    let basic = |v: &V<'_>| match basic_kind(v) {
        Kind::Other => Kind::Invalid,
        k => k,
    };
    let a1 = &a[0];
    if a.len() < 2 {
        return Err("missing argument for comparison".into());
    }
    let k1 = basic(a1);
    for b in &a[1..] {
        let k2 = basic(b);
        let truth = if k1 != k2 {
            match (k1, k2) {
                (Kind::Int, Kind::Uint) | (Kind::Uint, Kind::Int) => as_i(a1) == as_i(b),
                _ if !is_zero(a1) && !is_zero(b) => {
                    return Err(format!(
                        "incompatible types for comparison: {} and {}",
                        a1.type_name(),
                        b.type_name()
                    ))
                }
                _ => false,
            }
        } else {
            match k1 {
                Kind::Bool => a1.truth() == b.truth(),
                Kind::Int | Kind::Uint => as_i(a1) == as_i(b),
                Kind::Float => matches!((a1, b), (V::Float(x), V::Float(y)) if x == y),
                Kind::Complex => {
                    matches!((a1, b), (V::Complex(r1, i1), V::Complex(r2, i2)) if r1 == r2 && i1 == i2)
                }
                Kind::Str => str_of(a1) == str_of(b),
                _ => {
                    let (r1, r2) = (reflect_kind(a1), reflect_kind(b));
                    if r1 != r2 && r1 != "invalid" && r2 != "invalid" {
                        return Err(format!(
                            "non-comparable types {}: {}, {}: {}",
                            printf::sprintf("%s", std::slice::from_ref(a1)),
                            a1.type_name(),
                            b.type_name(),
                            printf::sprintf("%v", std::slice::from_ref(b))
                        ));
                    }
                    if is_nil(a1) || is_nil(b) {
                        is_nil(a1) == is_nil(b)
                    } else if !comparable(b) {
                        return Err(format!(
                            "non-comparable type {}: {}",
                            printf::sprintf("%s", std::slice::from_ref(b)),
                            b.type_name()
                        ));
                    } else {
                        same_value(a1, b)
                    }
                }
            }
        };
        if truth {
            return Ok(V::Bool(true));
        }
    }
    Ok(V::Bool(false))
}

/// Go's zero `reflect.Value` (an invalid value, or a nil interface once indirected).
fn is_zero(v: &V<'_>) -> bool {
    matches!(v, V::Missing | V::Nil)
}

/// The `reflect.Kind` of a non-basic value.
fn reflect_kind(v: &V<'_>) -> &'static str {
    match v {
        V::Missing | V::Nil => "invalid",
        V::Json(Value::Array(_))
        | V::List(_)
        | V::TList(..)
        | V::K8sSlice(..)
        | V::ProtoList(..) => "slice",
        V::NilOf(t) if !t.starts_with("map[") => "slice",
        V::Json(_) | V::Map(_) | V::StrMap(_) | V::StrMapJ(_) | V::K8sMap(..) | V::NilOf(_) => {
            "map"
        }
        V::NilPtr(_) | V::Proto { .. } | V::Ptr(_) | V::Root(_) | V::K8s { ptr: true, .. } => "ptr",
        _ => "struct",
    }
}

/// Go's `isNil` in `eq`.
fn is_nil(v: &V<'_>) -> bool {
    matches!(
        v,
        V::Missing
            | V::Nil
            | V::NilOf(_)
            | V::NilPtr(_)
            | V::StrMap(None)
            | V::StrMapJ(None)
            | V::K8sMap(_, None)
            | V::K8sSlice(_, None)
            | V::ProtoList(_, None)
            | V::Proto { json: None, .. }
    )
}

/// Is the Go type of `v` comparable with `==`? Maps and slices are not; neither are the
/// Kubernetes structs (they hold slices or maps); pointers and two-string structs are.
fn comparable(v: &V<'_>) -> bool {
    matches!(reflect_kind(v), "ptr") || matches!(v, V::Pair(..))
}

/// `==` of two comparable non-basic values: pointer identity, or equal string pairs.
fn same_value(a: &V<'_>, b: &V<'_>) -> bool {
    match (a, b) {
        (V::Pair(k1, a1, b1), V::Pair(k2, a2, b2)) => k1 == k2 && a1 == a2 && b1 == b2,
        (V::K8s { json: Some(x), .. }, V::K8s { json: Some(y), .. })
        | (V::Proto { json: Some(x), .. }, V::Proto { json: Some(y), .. }) => {
            std::ptr::eq(*x, *y) && a.type_name() == b.type_name()
        }
        (V::Root(x), V::Root(y)) => std::ptr::eq(*x, *y),
        _ => false,
    }
}

/// Go's `lt`: basic kinds only; signed and unsigned integers compare by value.
fn lt<'a>(a: &V<'a>, b: &V<'a>) -> R<bool> {
    let (k1, k2) = (basic_kind(a), basic_kind(b));
    let bad_type = || "invalid type for comparison".to_string();
    if matches!(k1, Kind::Invalid | Kind::Other) || matches!(k2, Kind::Invalid | Kind::Other) {
        return Err(bad_type());
    }
    if k1 != k2 {
        return match (k1, k2) {
            (Kind::Int | Kind::Uint, Kind::Int | Kind::Uint) => Ok(as_i(a) < as_i(b)),
            _ => Err(format!(
                "incompatible types for comparison: {} and {}",
                a.type_name(),
                b.type_name()
            )),
        };
    }
    match (a, b) {
        (V::Bool(_), _) | (V::Complex(..), _) => Err(bad_type()),
        (V::Float(x), V::Float(y)) => Ok(x < y),
        (V::Str(x), V::Str(y)) => Ok(x.as_bytes() < y.as_bytes()),
        _ => Ok(as_i(a) < as_i(b)),
    }
}

/// Go's `le`: `lt`, then `eq`.
fn le<'a>(a: &V<'a>, b: &V<'a>) -> R<bool> {
    if lt(a, b)? {
        return Ok(true);
    }
    f_eq(vec![a.clone(), b.clone()]).map(|v| v.truth())
}

fn index_int(v: &V<'_>) -> R<i64> {
    match v {
        V::Int(i, _) => Ok(*i),
        V::Uint(u) => i64::try_from(*u).map_err(|_| "index out of range".to_string()),
        V::Missing | V::Nil => Err("cannot index slice/array with nil".into()),
        other => Err(format!(
            "cannot index slice/array with type {}",
            other.type_name()
        )),
    }
}

fn index1<'a>(item: V<'a>, key: &V<'a>) -> R<V<'a>> {
    // Go's `indexArg` lets an index equal to the length through; `reflect.Value.Index` then
    // panics.
    let list_get = |n: usize, i: i64| -> R<usize> {
        if i < 0 || i as usize > n {
            Err(format!("index out of range: {i}"))
        } else if i as usize == n {
            Err("reflect: slice index out of range".into())
        } else {
            Ok(i as usize)
        }
    };
    let skey = || -> R<String> {
        match key {
            V::Str(s) => Ok(s.to_string()),
            V::Missing | V::Nil => Err("value is nil; should be of type string".into()),
            o => Err(format!(
                "value has type {}; should be string",
                o.type_name()
            )),
        }
    };
    match item {
        V::Missing | V::Nil => Err("index of untyped nil".into()),
        V::Json(Value::Array(a)) => Ok(V::json(&a[list_get(a.len(), index_int(key)?)?])),
        V::List(l) => Ok(l[list_get(l.len(), index_int(key)?)?].clone()),
        V::TList(_, l) => Ok(l[list_get(l.len(), index_int(key)?)?].clone()),
        V::NilOf(t) if t.starts_with("map[") => {
            skey()?;
            Ok(V::Nil)
        }
        V::NilOf(_) => Err(format!("index out of range: {}", index_int(key)?)),
        V::K8sSlice(f, s) => {
            let s = s.unwrap_or(&[]);
            Ok(super::value::k8s_elem_value(
                f,
                Some(&s[list_get(s.len(), index_int(key)?)?]),
            ))
        }
        V::ProtoList(f, s) => {
            let s = s.unwrap_or(&[]);
            Ok(super::value::proto_scalar(
                f,
                Some(&s[list_get(s.len(), index_int(key)?)?]),
            ))
        }
        V::Str(s) => {
            let i = list_get(s.len(), index_int(key)?)
                .map_err(|e| e.replace("reflect: slice", "reflect: string"))?;
            Ok(V::Uint(u64::from(s.as_bytes()[i])))
        }
        V::Json(Value::Object(o)) => Ok(jsonmap::get(o, skey()?.as_str()).map_or(V::Nil, V::json)),
        V::Map(m) => Ok(m.borrow().get(skey()?.as_str()).cloned().unwrap_or(V::Nil)),
        V::StrMapJ(m) => {
            let k = skey()?;
            Ok(V::s(
                m.and_then(|m| jsonmap::get(m, k.as_str()))
                    .and_then(Value::as_str)
                    .unwrap_or(""),
            ))
        }
        V::StrMap(m) => {
            let k = skey()?;
            Ok(V::string(
                m.as_ref()
                    .and_then(|m| m.get(k.as_str()))
                    .cloned()
                    .unwrap_or_default(),
            ))
        }
        V::K8sMap(f, m) => {
            let k = skey()?;
            match m.and_then(|m| jsonmap::get(m, k.as_str())) {
                Some(j) => Ok(super::value::k8s_elem_value(f, Some(j))),
                None => Ok(super::value::k8s_elem_value(f, None)),
            }
        }
        other => Err(format!("can't index item of type {}", other.type_name())),
    }
}

fn f_index<'a>(a: Vec<V<'a>>) -> R<V<'a>> {
    let mut it = a.into_iter();
    let mut item = it.next().unwrap_or(V::Missing);
    if matches!(item, V::Missing | V::Nil) {
        return Err("index of untyped nil".into());
    }
    for k in it {
        item = index1(item, &k)?;
    }
    Ok(item)
}

fn f_slice<'a>(a: Vec<V<'a>>) -> R<V<'a>> {
    let idx: Vec<i64> = a[1..].iter().map(index_int).collect::<R<_>>()?;
    match &a[0] {
        V::Str(s) => {
            let (i, j) = (
                idx.first().copied().unwrap_or(0),
                idx.get(1).copied().unwrap_or(s.len() as i64),
            );
            if i < 0 || j < i || j as usize > s.len() || idx.len() > 2 {
                return Err(format!("index out of range: {j}"));
            }
            Ok(V::string(
                String::from_utf8_lossy(&s.as_bytes()[i as usize..j as usize]).into_owned(),
            ))
        }
        v => {
            let items = value::to_list(v)
                .ok_or_else(|| format!("can't slice item of type {}", v.type_name()))?;
            let (i, j) = (
                idx.first().copied().unwrap_or(0),
                idx.get(1).copied().unwrap_or(items.len() as i64),
            );
            if i < 0 || j < i || j as usize > items.len() {
                return Err(format!("index out of range: {j}"));
            }
            Ok(V::List(Rc::new(items[i as usize..j as usize].to_vec())))
        }
    }
}

fn html_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => o.push_str("&#34;"),
            '\'' => o.push_str("&#39;"),
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '\0' => o.push('\u{FFFD}'),
            c => o.push(c),
        }
    }
    o
}

fn js_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => o.push_str("\\\\"),
            '\'' => o.push_str("\\'"),
            '"' => o.push_str("\\\""),
            '<' => o.push_str("\\u003C"),
            '>' => o.push_str("\\u003E"),
            '&' => o.push_str("\\u0026"),
            '=' => o.push_str("\\u003D"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04X}", c as u32)),
            c if !c.is_ascii() && !crate::go::quote::is_print(c) => {
                o.push_str(&format!("\\u{:04X}", c as u32));
            }
            c => o.push(c),
        }
    }
    o
}

fn query_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                o.push(b as char)
            }
            b' ' => o.push('+'),
            b => o.push_str(&format!("%{b:02X}")),
        }
    }
    o
}

// ---------------------------------------------------------------- Istio

fn istio(m: &mut Table) {
    use P::*;
    register(m, "formatDuration", &[Proto], None, |a| {
        let (s, n) = match &a[0] {
            V::Proto { json: Some(j), .. } => duration_parts(j),
            _ => (0, 0),
        };
        Ok(V::string(format_duration(
            i128::from(s) * 1_000_000_000 + i128::from(n),
        )))
    });
    register(m, "isset", &[StrMap, Str], None, |a| {
        Ok(V::Bool(strmap_get(&a[0], str_of(&a[1])).is_some()))
    });
    register(m, "excludeInboundPort", &[Any, Str], None, |a| {
        Ok(V::string(exclude_inbound_port(
            &a[0].sprint(),
            str_of(&a[1]),
        )))
    });
    register(m, "includeInboundPorts", &[Containers], None, |a| {
        Ok(V::string(container_ports(&a[0], false)))
    });
    register(m, "applicationPorts", &[Containers], None, |a| {
        Ok(V::string(container_ports(&a[0], true)))
    });
    register(m, "kubevirtInterfaces", &[Str], None, |mut a| {
        Ok(a.remove(0))
    });
    register(
        m,
        "excludeInterfaces",
        &[Str],
        None,
        |mut a| Ok(a.remove(0)),
    );
    register(m, "annotation", &[Meta, Str, Any], None, |a| {
        let ann = match &a[0] {
            V::K8s { json, .. } => json
                .and_then(|j| jsonmap::field(j, "annotations"))
                .and_then(|x| jsonmap::field(x, str_of(&a[1]))),
            _ => None,
        };
        Ok(match ann {
            Some(v) => V::string(v.as_str().unwrap_or("").to_string()),
            None => V::string(a[2].sprint()),
        })
    });
    register(m, "valueOrDefault", &[Any, Any], None, |mut a| {
        let d = a.pop().unwrap_or(V::Nil);
        let v = a.pop().unwrap_or(V::Nil);
        Ok(match &v {
            V::Nil => d,
            V::Str(s) if s.is_empty() => d,
            _ => v,
        })
    });
    register(m, "toJSON", &[StrMap], None, |a| {
        Ok(V::string(strmap_json(&a[0]).unwrap_or_else(|| "{}".into())))
    });
    register(m, "fromJSON", &[Str], None, |a| {
        Ok(go_unmarshal(str_of(&a[0])).unwrap_or(V::s("{}")))
    });
    register(m, "structToJSON", &[Any], None, |a| {
        Ok(V::string(struct_to_json(&a[0])))
    });
    register(m, "protoToJSON", &[Proto], None, |a| {
        Ok(V::string(match &a[0] {
            V::Proto {
                name,
                json: Some(j),
                ..
            } => crate::mesh::proto_to_json(name, j),
            _ => "{}".into(),
        }))
    });
    register(m, "toYaml", &[Any], None, |a| Ok(V::string(to_yaml(&a[0]))));
    register(m, "indent", &[Int, Str], None, |a| {
        let n = usize::try_from(as_i(&a[0]).unsigned_abs()).unwrap_or(usize::MAX);
        let s = str_of(&a[1]);
        check_size(s.len(), s.matches('\n').count(), n)?;
        let pad = " ".repeat(n);
        Ok(V::string(s.replace('\n', &format!("\n{pad}"))))
    });
    register(m, "directory", &[Str], None, |a| {
        let s = str_of(&a[0]);
        Ok(V::string(
            s.rfind('/').map_or(String::new(), |i| s[..=i].to_string()),
        ))
    });
    register(m, "contains", &[Str, Str], None, |a| {
        Ok(V::Bool(str_of(&a[1]).contains(str_of(&a[0]))))
    });
    register(m, "toLower", &[Str], None, |a| {
        Ok(V::string(super::gostr::lower(str_of(&a[0]))))
    });
    register(m, "appendMultusNetwork", &[Str, Str], None, |a| {
        Ok(V::string(append_multus_network(
            str_of(&a[0]),
            str_of(&a[1]),
        )))
    });
    // Istio's `env KEY DEFAULT` (overriding Sprig's one-argument `env`); executed by
    // [`call_env`] over the render's environment map, never the process environment.
    register(m, "env", &[Str, Str], None, needs_env);
    // Sprig's `expandenv`, likewise over the render's environment map.
    register(m, "expandenv", &[Str], None, needs_env);
    register(m, "omit", &[StrMap], Some(Str), |a| {
        let mut out = strmap_owned(&a[0]);
        for k in &a[1..] {
            out.remove(str_of(k));
        }
        Ok(V::StrMap(Some(Rc::new(out))))
    });
    register(m, "strdict", &[], Some(Str), |a| {
        let mut out = BTreeMap::new();
        for pair in a.chunks(2) {
            let v = pair.get(1).map_or("", str_of);
            out.insert(str_of(&pair[0]).to_string(), v.to_string());
        }
        Ok(V::StrMap(Some(Rc::new(out))))
    });
    register(m, "toJsonMap", &[], Some(StrMap), |a| {
        if a.is_empty() {
            return Ok(V::s("null"));
        }
        let mut out = BTreeMap::new();
        for x in &a {
            out.extend(strmap_owned(x));
        }
        Ok(V::string(
            strmap_json(&V::StrMap(Some(Rc::new(out)))).unwrap_or_default(),
        ))
    });
    register(m, "mergeMaps", &[], Some(StrMap), |a| {
        if a.is_empty() {
            return Ok(V::StrMap(None));
        }
        let mut out = BTreeMap::new();
        for x in &a {
            out.extend(strmap_owned(x));
        }
        Ok(V::StrMap(Some(Rc::new(out))))
    });
    register(m, "omitNil", &[Any], None, |a| {
        Ok(omit_nil(&a[0]).unwrap_or(V::Nil))
    });
    register(
        m,
        "otelResourceAttributes",
        &[Proto, StrMap, StrMap, Str, Containers],
        None,
        |a| Ok(V::string(otel_resource_attributes(&a))),
    );
}

fn strmap_get<'s>(m: &'s V<'_>, key: &str) -> Option<&'s str> {
    match m {
        V::StrMapJ(Some(m)) => jsonmap::get(m, key).map(|v| v.as_str().unwrap_or("")),
        V::StrMap(Some(m)) => m.get(key).map(String::as_str),
        _ => None,
    }
}

fn strmap_owned(m: &V<'_>) -> BTreeMap<String, String> {
    match m {
        V::StrMapJ(Some(m)) => m
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
            .collect(),
        V::StrMap(Some(m)) => (**m).clone(),
        _ => BTreeMap::new(),
    }
}

fn strmap_json(m: &V<'_>) -> Option<String> {
    let is_nil = matches!(m, V::StrMapJ(None) | V::StrMap(None) | V::Nil);
    if is_nil {
        return None;
    }
    let obj: serde_json::Map<String, Value> = strmap_owned(m)
        .into_iter()
        .map(|(k, v)| (k, Value::String(v)))
        .collect();
    Some(crate::go::json::to_string_sorted(&Value::Object(obj)))
}

fn struct_to_json(v: &V<'_>) -> String {
    match v {
        V::Nil | V::Missing => "{}".into(),
        V::NilPtr(_) | V::Proto { json: None, .. } => "null".into(),
        V::K8s { ty, json, .. } => {
            let j = json
                .cloned()
                .unwrap_or_else(|| Value::Object(Default::default()));
            match crate::kube::typed::to_go_value(ty, &j) {
                Ok(g) => crate::go::json::to_string(&g),
                Err(_) => "{}".into(),
            }
        }
        V::K8sSlice(f, s) => {
            let ty = f.elem.as_deref().unwrap_or("");
            match s {
                None => "null".into(),
                Some(items) => {
                    let mut out = Vec::new();
                    for j in items.iter() {
                        match crate::kube::typed::to_go_value(ty, j) {
                            Ok(g) => out.push(g),
                            Err(_) => return "{}".into(),
                        }
                    }
                    crate::go::json::to_string(&Value::Array(out))
                }
            }
        }
        other => value::to_json_go(other),
    }
}

fn to_yaml(v: &V<'_>) -> String {
    let j = match v {
        V::K8s { ty, json, .. } => {
            let j = json
                .cloned()
                .unwrap_or_else(|| Value::Object(Default::default()));
            match crate::kube::typed::to_go_value(ty, &j) {
                Ok(g) => g,
                Err(_) => return String::new(),
            }
        }
        other => other.to_json(),
    };
    // Istio's toYaml: sigs.k8s.io/yaml `Marshal`; an error gives "".
    crate::yaml::json_to_yaml(&j).unwrap_or_default()
}

/// Istio's `excludeInboundPort`.
pub fn exclude_inbound_port(port: &str, excluded: &str) -> String {
    let p = port.trim();
    if p.is_empty() || p == "0" {
        return excluded.to_string();
    }
    let mut out: Vec<&str> = Vec::new();
    for piece in excluded.split(',') {
        if piece == p {
            return excluded.to_string();
        }
        let t = piece.trim();
        if !t.is_empty() {
            out.push(t);
        }
    }
    out.push(p);
    out.join(",")
}

fn containers_json<'s>(v: &V<'s>) -> &'s [Value] {
    match v {
        V::K8sSlice(_, Some(s)) => s,
        _ => &[],
    }
}

fn container_ports(v: &V<'_>, skip_proxy: bool) -> String {
    let mut out = Vec::new();
    for c in containers_json(v) {
        if skip_proxy && c.get("name").and_then(Value::as_str) == Some("istio-proxy") {
            continue;
        }
        for p in c
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let proto = p.get("protocol").and_then(Value::as_str).unwrap_or("");
            if proto == "UDP" || proto == "SCTP" {
                continue;
            }
            out.push(
                p.get("containerPort")
                    .and_then(Value::as_i64)
                    .unwrap_or(0)
                    .to_string(),
            );
        }
    }
    out.join(",")
}

/// Istio's `appendMultusNetwork`.
pub fn append_multus_network(existing: &str, network: &str) -> String {
    if existing.is_empty() {
        return network.to_string();
    }
    if existing.contains(']') {
        let Ok(Value::Array(items)) = serde_json::from_str::<Value>(existing) else {
            return existing.to_string();
        };
        let (ns, name) = network.split_once('/').unwrap_or(("", network));
        let found = items.iter().any(|it| {
            it.get("name").and_then(Value::as_str) == Some(name)
                && it.get("namespace").and_then(Value::as_str).unwrap_or("") == ns
        });
        if found {
            return existing.to_string();
        }
        let ins = if ns.is_empty() {
            format!(", {{\"name\": \"{name}\"}}")
        } else {
            format!(", {{\"name\": \"{name}\", \"namespace\": \"{ns}\"}}")
        };
        let i = existing.rfind(']').unwrap_or(existing.len());
        return format!("{}{}{}", &existing[..i], ins, &existing[i..]);
    }
    if existing.split(',').any(|p| p.trim() == network) {
        return existing.to_string();
    }
    format!("{existing}, {network}")
}

fn omit_nil<'a>(v: &V<'a>) -> Option<V<'a>> {
    match v {
        V::Nil | V::Missing => None,
        V::Json(Value::Object(_)) | V::Map(_) => {
            let entries: Vec<(String, V<'a>)> = match v {
                V::Json(Value::Object(o)) => {
                    o.iter().map(|(k, x)| (k.clone(), V::json(x))).collect()
                }
                V::Map(m) => m
                    .borrow()
                    .iter()
                    .map(|(k, x)| (k.clone(), x.clone()))
                    .collect(),
                _ => Vec::new(),
            };
            let n = entries.len();
            let out: BTreeMap<String, V<'a>> = entries
                .into_iter()
                .filter_map(|(k, x)| omit_nil(&x).map(|x| (k, x)))
                .collect();
            if out.is_empty() && n > 0 {
                None
            } else {
                Some(V::map(out))
            }
        }
        V::Json(Value::Array(_)) | V::List(_) => {
            let items = value::to_list(v).unwrap_or_default();
            let n = items.len();
            let out: Vec<V<'a>> = items.iter().filter_map(omit_nil).collect();
            if out.is_empty() && n > 0 {
                None
            } else {
                Some(V::List(Rc::new(out)))
            }
        }
        other => Some(other.clone()),
    }
}

fn otel_resource_attributes(a: &[V<'_>]) -> String {
    let mesh = match &a[0] {
        V::Proto { json: Some(j), .. } => *j,
        _ => return String::new(),
    };
    let enabled = mesh
        .get("extensionProviders")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| p.get("opentelemetry"))
        .any(|o| {
            o.get("serviceAttributeEnrichment").and_then(Value::as_str)
                == Some("OTEL_SEMANTIC_CONVENTIONS")
                || o.get("serviceAttributeEnrichment").and_then(Value::as_i64) == Some(1)
        });
    if !enabled {
        return String::new();
    }
    let ann = |k: &str| strmap_get(&a[1], k).filter(|s| !s.is_empty());
    let label = |k: &str| strmap_get(&a[2], k).filter(|s| !s.is_empty());
    let namespace = str_of(&a[3]);
    let containers = containers_json(&a[4]);
    let mut items = Vec::new();
    if let Some(ns) = ann("resource.opentelemetry.io/service.namespace")
        .or(Some(namespace).filter(|s| !s.is_empty()))
    {
        items.push(format!("service.namespace={ns}"));
    }
    let version = ann("resource.opentelemetry.io/service.version")
        .map(str::to_string)
        .or_else(|| label("app.kubernetes.io/version").map(str::to_string))
        .or_else(|| {
            if containers.len() != 1 {
                return None;
            }
            let image = containers[0]
                .get("image")
                .and_then(Value::as_str)
                .unwrap_or("");
            image_version(image)
        });
    if let Some(v) = version {
        items.push(format!("service.version={v}"));
    }
    let inst = ann("resource.opentelemetry.io/service.instance.id")
        .map(str::to_string)
        .or_else(|| {
            containers.first().map(|c| {
                format!(
                    "{namespace}.$(POD_NAME).{}",
                    c.get("name").and_then(Value::as_str).unwrap_or("")
                )
            })
        });
    if let Some(i) = inst {
        items.push(format!("service.instance.id={i}"));
    }
    items.join(",")
}

fn image_version(image: &str) -> Option<String> {
    let (before, digest) = match image.split_once('@') {
        Some((b, d)) => (b, d),
        None => (image, ""),
    };
    let after_slash = before.rfind('/').map_or(before, |i| &before[i + 1..]);
    let tag = after_slash.rfind(':').map_or("", |i| &after_slash[i + 1..]);
    match (tag.is_empty(), digest.is_empty()) {
        (false, false) => Some(format!("{tag}@{digest}")),
        (true, false) => Some(digest.to_string()),
        (false, true) => Some(tag.to_string()),
        (true, true) => None,
    }
}
