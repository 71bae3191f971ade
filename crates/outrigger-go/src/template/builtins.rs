//! Go `text/template`'s builtin functions: `and`, `or`, `not`, `len`, `index`, `slice`,
//! `print`/`printf`/`println`, `eq`/`ne`/`lt`/`le`/`gt`/`ge`, `html`, `js`, `urlquery`, `call`.

use serde_json::Value;

use super::list::GoList;
use super::signature::{register, Table, P};
use super::value::{str_of, IntTy, V};
use super::{printf, value};
use crate::json::lookup as jsonmap;

type R<T> = Result<T, String>;

pub fn register_builtins(m: &mut Table) {
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
    register(m, "print", &[], Some(Any), |a| Ok(V::string(go_sprint(a))));
    register(m, "println", &[], Some(Any), |a| {
        let s: Vec<String> = a.iter().map(V::sprint).collect();
        Ok(V::string(s.join(" ") + "\n"))
    });
    register(m, "printf", &[Str], Some(Any), |a| {
        let fmt = str_of(&a[0]).to_string();
        Ok(V::string(printf::sprintf(&fmt, &a[1..])))
    });
    register(m, "html", &[], Some(Any), |a| {
        Ok(V::string(html_escape(&eval_args(a))))
    });
    register(m, "js", &[], Some(Any), |a| {
        Ok(V::string(js_escape(&eval_args(a))))
    });
    register(m, "urlquery", &[], Some(Any), |a| {
        Ok(V::string(query_escape(&eval_args(a))))
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
pub fn value_string(v: &V<'_>) -> String {
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

/// An integer kind's value, signed or unsigned.
pub fn as_i(v: &V<'_>) -> i128 {
    match v {
        V::Int(i, _) | V::Enum(_, i) => i128::from(*i),
        V::Uint(u) => i128::from(*u),
        _ => 0,
    }
}

#[allow(clippy::ptr_arg)] // a function table entry (`Func`)
fn f_eq<'a>(a: &mut Vec<V<'a>>) -> R<V<'a>> {
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
    f_eq(&mut vec![a.clone(), b.clone()]).map(|v| v.truth())
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
        V::List(l) | V::TList(_, l) => Ok(l.items()[list_get(l.len(), index_int(key)?)?].clone()),
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

fn f_index<'a>(a: &mut Vec<V<'a>>) -> R<V<'a>> {
    let mut it = a.drain(..);
    let mut item = it.next().unwrap_or(V::Missing);
    if matches!(item, V::Missing | V::Nil) {
        return Err("index of untyped nil".into());
    }
    for k in it {
        // A nil interface reached by an earlier index (a missing map key, a null element):
        // Go's `indirect` finds it nil.
        if matches!(item, V::Missing | V::Nil) {
            return Err("index of nil pointer".into());
        }
        item = index1(item, &k)?;
    }
    Ok(item)
}

#[allow(clippy::ptr_arg)] // a function table entry (`Func`)
fn f_slice<'a>(a: &mut Vec<V<'a>>) -> R<V<'a>> {
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
            Ok(V::List(GoList::new(items[i as usize..j as usize].to_vec())))
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
