//! The template value model: Go's distinctions between missing, nil and zero values, typed
//! Kubernetes structs and protobuf messages viewed lazily over JSON; and the helpers every
//! function family and the executor share (lists and maps of any value, Go's JSON encoding and
//! decoding of values, the output size guard).

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use serde_json::{Map, Value};

use super::list::{Element, GoList};
use super::TemplateData;
use crate::go::float::format_g64;
use crate::go::timeval::Time as GoTime;
use crate::json::lookup as jsonmap;
use crate::kube::schema::{
    self, K8sField, K8sStruct, Kind, ProtoEnum, ProtoField, ProtoKind, ProtoMessage,
};

/// A Go integer type (matters for messages and `typeOf`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntTy {
    /// `int`.
    Int,
    /// `int32`.
    I32,
    /// `int64`.
    I64,
}

/// A template value.
#[derive(Debug, Clone)]
pub enum V<'a> {
    /// Invalid reflect value (absent map key): prints `<no value>`.
    Missing,
    /// Nil interface (JSON `null` in generic maps, untyped `nil`).
    Nil,
    /// A bool.
    Bool(bool),
    /// A signed integer.
    Int(i64, IntTy),
    /// An unsigned integer.
    Uint(u64),
    /// A float64.
    Float(f64),
    /// A string.
    Str(Cow<'a, str>),
    /// Generic JSON object or array (`map[string]any` / `[]any`).
    Json(&'a Value),
    /// Generic list (`[]interface{}`) built by functions.
    List(GoList<V<'a>>),
    /// A typed slice built by functions, with its Go type (`[]string` from `splitList`,
    /// `[]int` from `until`, `[][]interface {}` from `chunk`).
    TList(&'static str, GoList<V<'a>>),
    /// A nil slice or map of the given Go type (`rest` of an empty list, `unset` of a nil map).
    NilOf(&'static str),
    /// Generic map (`map[string]interface{}`) built by functions or from owned data; shared and
    /// mutable, as Go maps are (`set`, `unset`, `merge` change it in place).
    Map(GoMap<'a>),
    /// A `complex128` (from a complex or imaginary number literal).
    Complex(f64, f64),
    /// Typed `map[string]string` over JSON (`None` = nil map).
    StrMapJ(Option<&'a Map<String, Value>>),
    /// Typed `map[string]string` built by functions (`None` = nil map).
    StrMap(Option<Rc<BTreeMap<String, String>>>),
    /// A Kubernetes struct (`json` None = zero value); `ptr` when reached through a pointer.
    K8s {
        /// Canonical type name.
        ty: &'static str,
        /// Type facts.
        st: &'static K8sStruct,
        /// JSON object.
        json: Option<&'a Value>,
        /// Reached through a non-nil pointer.
        ptr: bool,
    },
    /// A non-nil pointer to a scalar (`*bool`, `*int64`): always true, prints its target.
    Ptr(Rc<V<'a>>),
    /// A typed nil pointer (`*v1.Probe`, `*int64`).
    NilPtr(&'static str),
    /// A Kubernetes slice field (elements typed by the field's elem).
    K8sSlice(&'static K8sField, Option<&'a [Value]>),
    /// A Kubernetes map field other than `map[string]string`.
    K8sMap(&'static K8sField, Option<&'a Map<String, Value>>),
    /// A leaf printed through `String()` (Quantity, IntOrString, Time).
    Leaf(&'static str, &'a Value),
    /// A Go `time.Time` (Sprig's `now`, `toDate`, `dateModify`).
    Time(Rc<GoTime>),
    /// A Masterminds/semver version: `*semver.Version` (`true`, as Sprig's `semver` returns it)
    /// or a `semver.Version` value (`false`, as its `IncPatch`, `SetPrerelease`, ... return it);
    /// printed through its `String` method, encoded by its `MarshalJSON`.
    Semver(Rc<super::semver::Version>, bool),
    /// A protobuf message pointer (`json` None = nil pointer).
    Proto {
        /// Fully qualified message name.
        name: &'static str,
        /// Message facts.
        m: &'static ProtoMessage,
        /// Canonical proto-JSON of the message.
        json: Option<&'a Value>,
    },
    /// A repeated protobuf field.
    ProtoList(&'static ProtoField, Option<&'a [Value]>),
    /// A protobuf enum value.
    Enum(&'static ProtoEnum, i64),
    /// The root object.
    Root(&'a TemplateData<'a>),
    /// `TypeMeta` (Kind, APIVersion) or `DeploymentMeta` (Namespace, Name).
    Pair(PairKind, &'a str, &'a str),
}

impl Element for V<'_> {
    fn is_container(&self) -> bool {
        match self {
            V::List(_) | V::TList(..) | V::Map(_) => true,
            V::Json(j) => j.is_array() || j.is_object(),
            V::Ptr(p) => p.is_container(),
            _ => false,
        }
    }
}

/// A shared, mutable generic map.
pub type GoMap<'a> = Rc<RefCell<BTreeMap<String, V<'a>>>>;

/// Which two-string struct a [`V::Pair`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairKind {
    /// `v1.TypeMeta{Kind, APIVersion}`.
    TypeMeta,
    /// `types.NamespacedName{Namespace, Name}`.
    DeploymentMeta,
}

/// Go-ish short type name of a canonical k8s name (`corev1.Container` → `v1.Container`).
pub fn k8s_go_name(ty: &str) -> String {
    match ty.split_once('.') {
        Some((pkg, n)) if pkg.ends_with("v1") => format!("v1.{n}"),
        Some((pkg, n)) => format!("{pkg}.{n}"),
        None => ty.to_string(),
    }
}

/// Go-ish name of a protobuf message type (`istio.mesh.v1alpha1.ProxyConfig` → `v1alpha1.ProxyConfig`).
pub fn proto_go_name(name: &str) -> String {
    let parts: Vec<&str> = name.split('.').collect();
    if name.starts_with("google.protobuf.") {
        return format!("wrapperspb.{}", parts.last().copied().unwrap_or(""));
    }
    match parts
        .iter()
        .position(|p| p.starts_with('v') && p[1..].starts_with(|c: char| c.is_ascii_digit()))
    {
        Some(i) if i + 1 < parts.len() => format!("{}.{}", parts[i], parts[i + 1..].join("_")),
        _ => name.to_string(),
    }
}

impl<'a> V<'a> {
    /// A borrowed string value.
    pub fn s(s: &'a str) -> V<'a> {
        V::Str(Cow::Borrowed(s))
    }

    /// An owned string value.
    pub fn string(s: String) -> V<'a> {
        V::Str(Cow::Owned(s))
    }

    /// A new generic map value.
    pub fn map(m: BTreeMap<String, V<'a>>) -> V<'a> {
        V::Map(Rc::new(RefCell::new(m)))
    }

    /// A generic JSON value (`.Values` semantics).
    pub fn json(v: &'a Value) -> V<'a> {
        match v {
            Value::Null => V::Nil,
            Value::Bool(b) => V::Bool(*b),
            Value::Number(n) => V::Float(n.as_f64().unwrap_or(0.0)),
            Value::String(s) => V::s(s),
            _ => V::Json(v),
        }
    }

    /// Is this the missing value?
    pub fn is_missing(&self) -> bool {
        matches!(self, V::Missing)
    }

    /// Go type name, as used in error messages.
    pub fn type_name(&self) -> String {
        match self {
            V::Missing => "<invalid>".into(),
            V::Nil => "interface {}".into(),
            V::Bool(_) => "bool".into(),
            V::Int(_, IntTy::Int) => "int".into(),
            V::Int(_, IntTy::I32) => "int32".into(),
            V::Int(_, IntTy::I64) => "int64".into(),
            V::Uint(_) => "uint32".into(),
            V::Float(_) => "float64".into(),
            V::Complex(..) => "complex128".into(),
            V::Str(_) => "string".into(),
            V::Json(Value::Array(_)) | V::List(_) => "[]interface {}".into(),
            V::TList(t, _) | V::NilOf(t) => (*t).into(),
            V::Json(_) | V::Map(_) => "map[string]interface {}".into(),
            V::StrMapJ(_) | V::StrMap(_) => "map[string]string".into(),
            V::K8s { ty, ptr, .. } => {
                format!("{}{}", if *ptr { "*" } else { "" }, k8s_go_name(ty))
            }
            V::NilPtr(t) => format!("*{}", k8s_go_name(t)),
            V::Ptr(v) => format!("*{}", v.type_name()),
            V::K8sSlice(f, _) => format!("[]{}", k8s_go_name(f.elem.as_deref().unwrap_or("?"))),
            V::K8sMap(f, _) => f
                .named_type
                .as_deref()
                .map(k8s_go_name)
                .unwrap_or_else(|| "map[string]interface {}".into()),
            V::Leaf(t, _) => k8s_go_name(t),
            V::Time(_) => "time.Time".into(),
            V::Semver(_, true) => "*semver.Version".into(),
            V::Semver(_, false) => "semver.Version".into(),
            V::Proto { name, .. } => format!("*{}", proto_go_name(name)),
            V::ProtoList(f, _) => format!("[]{}", f.ty),
            V::Enum(e, _) => e.go_type.clone().unwrap_or_else(|| "int32".into()),
            V::Root(_) => "*inject.SidecarTemplateData".into(),
            V::Pair(PairKind::TypeMeta, ..) => "v1.TypeMeta".into(),
            V::Pair(PairKind::DeploymentMeta, ..) => "types.NamespacedName".into(),
        }
    }

    /// Go truthiness (`if`, `with`, `and`, `or`, `not`).
    pub fn truth(&self) -> bool {
        match self {
            V::Missing | V::Nil | V::NilPtr(_) => false,
            V::Bool(b) => *b,
            V::Int(i, _) => *i != 0,
            V::Uint(u) => *u != 0,
            V::Float(f) => *f != 0.0,
            V::Complex(re, im) => *re != 0.0 || *im != 0.0,
            V::Str(s) => !s.is_empty(),
            V::Json(Value::Array(a)) => !a.is_empty(),
            V::Json(Value::Object(o)) => !o.is_empty(),
            V::Json(_) => true,
            V::List(l) => !l.is_empty(),
            V::TList(_, l) => !l.is_empty(),
            V::NilOf(_) => false,
            V::Map(m) => !m.borrow().is_empty(),
            V::StrMapJ(m) => m.is_some_and(|m| !m.is_empty()),
            V::StrMap(m) => m.as_ref().is_some_and(|m| !m.is_empty()),
            V::K8sSlice(_, s) => s.is_some_and(|s| !s.is_empty()),
            V::K8sMap(_, m) => m.is_some_and(|m| !m.is_empty()),
            V::ProtoList(_, s) => s.is_some_and(|s| !s.is_empty()),
            V::Proto { json, .. } => json.is_some(),
            V::Enum(_, n) => *n != 0,
            V::K8s { .. }
            | V::Leaf(..)
            | V::Root(_)
            | V::Pair(..)
            | V::Ptr(_)
            | V::Time(_)
            | V::Semver(..) => true,
        }
    }

    /// Length for `len` (None: not a container).
    pub fn len(&self) -> Option<usize> {
        Some(match self {
            V::Str(s) => s.len(),
            V::Json(Value::Array(a)) => a.len(),
            V::Json(Value::Object(o)) => o.len(),
            V::List(l) => l.len(),
            V::TList(_, l) => l.len(),
            V::NilOf(_) => 0,
            V::Map(m) => m.borrow().len(),
            V::StrMapJ(m) => m.map_or(0, |m| m.len()),
            V::StrMap(m) => m.as_ref().map_or(0, |m| m.len()),
            V::K8sSlice(_, s) | V::ProtoList(_, s) => s.map_or(0, |s| s.len()),
            V::K8sMap(_, m) => m.map_or(0, |m| m.len()),
            _ => return None,
        })
    }

    /// Go `fmt.Sprint` of the value.
    pub fn sprint(&self) -> String {
        let mut out = String::new();
        self.write_sprint(&mut out, true);
        out
    }

    /// Append `fmt.Sprint` output; `top` marks the outermost value (pointers print as `&{}`).
    pub fn write_sprint(&self, out: &mut String, top: bool) {
        match self {
            V::Missing => out.push_str("<no value>"),
            V::Nil | V::NilPtr(_) => out.push_str("<nil>"),
            V::Ptr(v) if top => v.write_sprint(out, false),
            V::Ptr(_) => out.push_str("0xc000000000"),
            V::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            V::Int(i, _) => out.push_str(&i.to_string()),
            V::Uint(u) => out.push_str(&u.to_string()),
            V::Float(f) => out.push_str(&format_g64(*f)),
            V::Complex(re, im) => {
                out.push('(');
                out.push_str(&format_g64(*re));
                let i = format_g64(*im);
                if !i.starts_with(['-', '+']) {
                    out.push('+');
                }
                out.push_str(&i);
                out.push_str("i)");
            }
            V::Str(s) => out.push_str(s),
            V::Json(Value::Array(a)) => write_seq(out, a.iter().map(V::json)),
            V::Json(Value::Object(o)) => {
                write_map(out, sorted(o.iter().map(|(k, v)| (k.as_str(), V::json(v)))))
            }
            V::Json(v) => V::json(v).write_sprint(out, top),
            V::List(l) => write_seq(out, l.to_vec().into_iter()),
            V::TList(_, l) => write_seq(out, l.to_vec().into_iter()),
            V::NilOf(t) if t.starts_with("map[") => out.push_str("map[]"),
            V::NilOf(_) => out.push_str("[]"),
            V::Map(m) => {
                let m = m.borrow();
                write_map(
                    out,
                    m.iter().map(|(k, v)| (k.as_str(), v.clone())).collect(),
                )
            }
            V::StrMapJ(m) => write_map(
                out,
                sorted(
                    m.iter()
                        .flat_map(|m| m.iter())
                        .map(|(k, v)| (k.as_str(), json_str_value(v))),
                ),
            ),
            V::StrMap(m) => write_map(
                out,
                m.iter()
                    .flat_map(|m| m.iter())
                    .map(|(k, v)| (k.as_str(), V::s(v)))
                    .collect(),
            ),
            V::K8s { st, json, ptr, .. } => {
                if *ptr && top {
                    out.push('&');
                }
                out.push('{');
                for (i, f) in st.fields.iter().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    let fv = k8s_field_value(f, *json);
                    match fv {
                        V::K8s { ptr: true, .. } => out.push_str("0xc000000000"),
                        fv => fv.write_sprint(out, false),
                    }
                }
                out.push('}');
            }
            V::K8sSlice(f, s) => write_seq(
                out,
                s.iter()
                    .flat_map(|s| s.iter())
                    .map(|j| k8s_elem_value(f, Some(j))),
            ),
            V::K8sMap(f, m) => write_map(
                out,
                sorted(
                    m.iter()
                        .flat_map(|m| m.iter())
                        .map(|(k, j)| (k.as_str(), k8s_elem_value(f, Some(j)))),
                ),
            ),
            V::Leaf("v1.Time", j) => out.push_str(&meta_time(j).string()),
            V::Time(t) => out.push_str(&t.string()),
            V::Semver(v, _) => out.push_str(&v.to_string()),
            V::Leaf(_, j) => match j {
                Value::String(s) => out.push_str(s),
                Value::Number(n) => out.push_str(&n.to_string()),
                Value::Null => out.push('0'),
                other => out.push_str(&other.to_string()),
            },
            V::Proto { json, .. } => match json {
                None => out.push_str("<nil>"),
                Some(j) => out.push_str(&j.to_string()),
            },
            V::ProtoList(f, s) => write_seq(
                out,
                s.iter()
                    .flat_map(|s| s.iter())
                    .map(|j| proto_scalar(f, Some(j))),
            ),
            V::Enum(e, n) => match i32::try_from(*n).ok().and_then(|n| e.name_of(n)) {
                Some(name) => out.push_str(name),
                None => out.push_str(&n.to_string()),
            },
            V::Root(_) => out.push_str("&{...}"),
            V::Pair(_, a, b) => {
                out.push('{');
                out.push_str(a);
                out.push(' ');
                out.push_str(b);
                out.push('}');
            }
        }
    }

    /// Convert to a generic `serde_json::Value` (Go JSON encoding of the value, map order kept).
    pub fn to_json(&self) -> Value {
        match self {
            V::Missing | V::Nil | V::NilPtr(_) => Value::Null,
            V::Bool(b) => Value::Bool(*b),
            V::Int(i, _) => Value::from(*i),
            V::Uint(u) => Value::from(*u),
            V::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
            V::Str(s) => Value::String(s.to_string()),
            V::Json(v) => as_float64s(v),
            V::List(l) => Value::Array(l.items().iter().map(V::to_json).collect()),
            V::TList(_, l) => Value::Array(l.items().iter().map(V::to_json).collect()),
            V::NilOf(_) => Value::Null,
            V::Map(m) => Value::Object(
                m.borrow()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_json()))
                    .collect(),
            ),
            V::Complex(..) => Value::Null,
            V::StrMapJ(m) => m.map_or(Value::Null, |m| Value::Object(m.clone())),
            V::StrMap(m) => m.as_ref().map_or(Value::Null, |m| {
                Value::Object(
                    m.iter()
                        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                        .collect(),
                )
            }),
            V::K8s { json, .. } => json.cloned().unwrap_or_else(|| Value::Object(Map::new())),
            V::K8sSlice(_, s) | V::ProtoList(_, s) => {
                s.map_or(Value::Null, |s| Value::Array(s.to_vec()))
            }
            V::K8sMap(_, m) => m.map_or(Value::Null, |m| Value::Object(m.clone())),
            V::Leaf("v1.Time", j) => {
                // metav1.Time's MarshalJSON: UTC, second precision, null for the zero time.
                let t = meta_time(j);
                if t.is_zero() {
                    Value::Null
                } else {
                    let utc = t.in_location(crate::go::zone::Location::Utc);
                    Value::String(utc.format("2006-01-02T15:04:05Z07:00"))
                }
            }
            V::Leaf(_, j) => (*j).clone(),
            V::Time(t) => Value::String(t.rfc3339_nano()),
            V::Semver(v, _) => Value::String(v.to_string()),
            V::Proto { json, .. } => json.cloned().unwrap_or(Value::Null),
            V::Enum(..) => Value::String(self.sprint()),
            V::Root(_) | V::Pair(..) => Value::Object(Map::new()),
            V::Ptr(v) => v.to_json(),
        }
    }
}

/// A `metav1.Time` as Go holds it after decoding its JSON: `null` (or anything unreadable) is
/// the zero time; a timestamp is read as RFC 3339 and shown in the local zone
/// (`UnmarshalJSON` calls `Local()`).
pub fn meta_time(j: &Value) -> GoTime {
    let parsed = j.as_str().and_then(|s| {
        crate::go::layout::parse_in_location(
            "2006-01-02T15:04:05Z07:00",
            s,
            &crate::go::zone::Location::Utc,
        )
        .ok()
    });
    match parsed {
        Some(t) => t.in_location(crate::go::zone::Location::Local),
        None => GoTime::zero(),
    }
}

/// Are maps and lists nested in `v` deeper than `limit` levels (its own JSON data included)?
/// Walks with an explicit stack, stopping at the first level beyond `limit` (a map that
/// contains itself is too deep).
pub fn nested_deeper_than(v: &V<'_>, limit: usize) -> bool {
    enum Item<'a> {
        V(V<'a>),
        J(&'a Value),
    }
    let mut stack = vec![(Item::V(v.clone()), 0usize)];
    while let Some((item, depth)) = stack.pop() {
        let before = stack.len();
        match item {
            // A list holding no list or map is one level, known without a walk (so appending
            // to a list in a loop stays linear).
            Item::V(V::List(l) | V::TList(_, l)) if l.is_flat() => {
                if !l.is_empty() && depth >= limit {
                    return true;
                }
                continue;
            }
            Item::V(V::List(l) | V::TList(_, l)) => {
                stack.extend(l.items().iter().map(|c| (Item::V(c.clone()), depth + 1)));
            }
            Item::V(V::Map(m)) => {
                stack.extend(m.borrow().values().map(|c| (Item::V(c.clone()), depth + 1)));
            }
            Item::V(V::Ptr(p)) => stack.push((Item::V((*p).clone()), depth)),
            Item::V(V::Json(j)) | Item::J(j) => match j {
                Value::Array(a) => stack.extend(a.iter().map(|c| (Item::J(c), depth + 1))),
                Value::Object(o) => stack.extend(o.values().map(|c| (Item::J(c), depth + 1))),
                _ => continue,
            },
            Item::V(_) => continue,
        }
        // A container at `depth` holding anything is `depth + 1` levels deep.
        if stack.len() > before && depth >= limit {
            return true;
        }
    }
    false
}

/// A JSON tree with every number as Go's `float64` sees it (generic data is decoded by
/// `encoding/json`): integers beyond 2^53 round to the nearest float64.
fn as_float64s(v: &Value) -> Value {
    match v {
        Value::Number(n) if !n.is_f64() => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) if i.unsigned_abs() <= 1 << 53 => v.clone(),
            (None, Some(u)) if u <= 1 << 53 => v.clone(),
            _ => serde_json::Number::from_f64(n.as_f64().unwrap_or(0.0))
                .map_or(Value::Null, Value::Number),
        },
        Value::Array(a) => Value::Array(a.iter().map(as_float64s).collect()),
        Value::Object(o) => {
            Value::Object(o.iter().map(|(k, x)| (k.clone(), as_float64s(x))).collect())
        }
        other => other.clone(),
    }
}

fn json_str_value(v: &Value) -> V<'_> {
    match v {
        Value::String(s) => V::s(s),
        other => V::json(other),
    }
}

fn sorted<'a>(it: impl Iterator<Item = (&'a str, V<'a>)>) -> Vec<(&'a str, V<'a>)> {
    let mut v: Vec<_> = it.collect();
    v.sort_by(|a, b| a.0.cmp(b.0));
    v
}

fn write_seq<'a>(out: &mut String, it: impl Iterator<Item = V<'a>>) {
    out.push('[');
    for (i, v) in it.enumerate() {
        if i > 0 {
            out.push(' ');
        }
        v.write_sprint(out, false);
    }
    out.push(']');
}

fn write_map(out: &mut String, entries: Vec<(&str, V<'_>)>) {
    out.push_str("map[");
    for (i, (k, v)) in entries.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(k);
        out.push(':');
        v.write_sprint(out, false);
    }
    out.push(']');
}

/// The Go value of a scalar or struct of `kind` (k8s kinds) over optional JSON.
fn k8s_kind_value<'a>(
    kind: Kind,
    ty: Option<&'static str>,
    field: &'static K8sField,
    j: Option<&'a Value>,
) -> V<'a> {
    let j = j.filter(|j| !j.is_null());
    match kind {
        Kind::String | Kind::NamedString => V::s(j.and_then(Value::as_str).unwrap_or("")),
        Kind::Bool => V::Bool(j.and_then(Value::as_bool).unwrap_or(false)),
        Kind::Int => V::Int(j.and_then(Value::as_i64).unwrap_or(0), IntTy::I32),
        Kind::Uint => V::Uint(j.and_then(Value::as_u64).unwrap_or(0)),
        Kind::Float => V::Float(j.and_then(Value::as_f64).unwrap_or(0.0)),
        Kind::Struct => match ty.and_then(|t| schema::k8s().structs.get_key_value(t)) {
            Some((name, st)) => V::K8s {
                ty: name.as_str(),
                st,
                json: j,
                ptr: false,
            },
            None => V::Nil,
        },
        Kind::IntOrString => V::Leaf("intstr.IntOrString", j.unwrap_or(&Value::Null)),
        Kind::Quantity => match j {
            Some(j) => V::Leaf("resource.Quantity", j),
            None => V::s("0"),
        },
        Kind::Time => V::Leaf("v1.Time", j.unwrap_or(&Value::Null)),
        Kind::Slice => V::K8sSlice(field, j.and_then(Value::as_array).map(Vec::as_slice)),
        Kind::Map => {
            if field.elem_kind == Some(Kind::String) && field.named_type.is_none() {
                V::StrMapJ(j.and_then(Value::as_object))
            } else {
                V::K8sMap(field, j.and_then(Value::as_object))
            }
        }
        Kind::PointerToStruct | Kind::PointerToScalar | Kind::Raw => j.map_or(V::Nil, V::json),
    }
}

fn static_str(s: &'static Option<String>) -> Option<&'static str> {
    // Schema tables are 'static; this re-borrows their strings.
    s.as_deref()
}

/// The value of struct field `f` of a k8s struct over its JSON object.
pub fn k8s_field_value<'a>(f: &'static K8sField, obj: Option<&'a Value>) -> V<'a> {
    let j = match f.json.as_deref() {
        Some("") => obj, // inline struct: same JSON object
        Some(name) => obj.and_then(|o| jsonmap::field(o, name)),
        None => None,
    };
    match f.kind {
        Kind::PointerToStruct => {
            let ty = static_str(&f.type_ref)
                .or(static_str(&f.elem))
                .unwrap_or("?");
            match (
                j.filter(|j| !j.is_null()),
                schema::k8s().structs.get_key_value(ty),
            ) {
                (Some(j), Some((name, st))) => V::K8s {
                    ty: name.as_str(),
                    st,
                    json: Some(j),
                    ptr: true,
                },
                _ => V::NilPtr(ty),
            }
        }
        Kind::PointerToScalar => match j.filter(|j| !j.is_null()) {
            Some(j) => {
                let kind = f.elem_kind.unwrap_or(Kind::String);
                let v = k8s_kind_value(kind, static_str(&f.elem), f, Some(j));
                let v = match (f.elem.as_deref(), v) {
                    (Some("int64"), V::Int(i, _)) => V::Int(i, IntTy::I64),
                    (_, v) => v,
                };
                match kind {
                    Kind::Time | Kind::IntOrString | Kind::Quantity | Kind::Raw => v,
                    _ => V::Ptr(Rc::new(v)),
                }
            }
            None => V::NilPtr(static_str(&f.elem).unwrap_or("?")),
        },
        kind => k8s_kind_value(kind, static_str(&f.type_ref), f, j),
    }
}

/// The value of one element of slice/map field `f`.
pub fn k8s_elem_value<'a>(f: &'static K8sField, j: Option<&'a Value>) -> V<'a> {
    let kind = f.elem_kind.unwrap_or(Kind::String);
    k8s_kind_value(kind, static_str(&f.elem), f, j)
}

/// Find field `name` in a k8s struct, following embedded structs.
pub fn k8s_lookup<'a>(
    st: &'static K8sStruct,
    json: Option<&'a Value>,
    name: &str,
) -> Option<V<'a>> {
    if let Some(f) = st.field_by_go(name) {
        return Some(k8s_field_value(f, json));
    }
    for f in st.fields.iter().filter(|f| f.embedded) {
        if let V::K8s {
            st: inner,
            json: ij,
            ..
        } = k8s_field_value(f, json)
        {
            if let Some(v) = k8s_lookup(inner, ij, name) {
                return Some(v);
            }
        }
    }
    None
}

/// A scalar proto value (or enum/message) of field `f` over JSON.
pub fn proto_scalar<'a>(f: &'static ProtoField, j: Option<&'a Value>) -> V<'a> {
    let j = j.filter(|j| !j.is_null());
    match f.type_kind {
        ProtoKind::Enum => {
            let e = schema::proto().enumeration(&f.ty);
            let n = match j {
                Some(Value::String(s)) => e.and_then(|e| e.number_of(s)).map_or(0, i64::from),
                Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
                _ => 0,
            };
            match e {
                Some(e) => V::Enum(e, n),
                None => V::Int(n, IntTy::I32),
            }
        }
        ProtoKind::Message => match schema::proto().messages.get_key_value(f.ty.as_str()) {
            Some((name, m)) => V::Proto {
                name: name.as_str(),
                m,
                json: j,
            },
            None => V::Nil,
        },
        ProtoKind::Scalar | ProtoKind::Map => proto_plain(&f.ty, j),
    }
}

/// A proto scalar of type `ty`.
pub fn proto_plain<'a>(ty: &str, j: Option<&'a Value>) -> V<'a> {
    let num = |j: Option<&Value>| -> f64 {
        match j {
            Some(Value::Number(n)) => n.as_f64().unwrap_or(0.0),
            Some(Value::String(s)) => s.parse().unwrap_or(0.0),
            _ => 0.0,
        }
    };
    let int = |j: Option<&Value>| -> i64 {
        match j {
            Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
            Some(Value::String(s)) => s.parse().unwrap_or(0),
            _ => 0,
        }
    };
    match ty {
        "string" | "bytes" => V::s(j.and_then(Value::as_str).unwrap_or("")),
        "bool" => V::Bool(j.and_then(Value::as_bool).unwrap_or(false)),
        "int32" | "sint32" | "sfixed32" => V::Int(int(j), IntTy::I32),
        "int64" | "sint64" | "sfixed64" => V::Int(int(j), IntTy::I64),
        "uint32" | "fixed32" | "uint64" | "fixed64" => V::Uint(int(j).max(0) as u64),
        "double" | "float" => V::Float(num(j)),
        _ => j.map_or(V::Nil, V::json),
    }
}

/// Value of a proto field (Go struct field or getter result).
pub fn proto_field_value<'a>(f: &'static ProtoField, msg: Option<&'a Value>) -> V<'a> {
    let j = msg.and_then(|m| jsonmap::field(m, &f.json).or_else(|| jsonmap::field(m, &f.proto)));
    if f.type_kind == ProtoKind::Map {
        let obj = j.and_then(Value::as_object);
        return if f.map_value.as_deref() == Some("string") {
            V::StrMapJ(obj)
        } else {
            j.filter(|j| j.is_object())
                .map_or(V::StrMapJ(None), V::Json)
        };
    }
    if f.repeated {
        return V::ProtoList(f, j.and_then(Value::as_array).map(Vec::as_slice));
    }
    proto_scalar(f, j)
}

/// Is `name` a wrapper message (`google.protobuf.BoolValue`, ...)?
pub fn is_wrapper(name: &str) -> bool {
    name.starts_with("google.protobuf.")
        && name.ends_with("Value")
        && name != "google.protobuf.Value"
}

/// Seconds and nanos of a proto-JSON Duration (`"1.5s"`).
pub fn duration_parts(j: &Value) -> (i64, i64) {
    let s = match j {
        Value::String(s) => s.trim_end_matches('s'),
        Value::Object(o) => {
            let g = |k: &str| {
                o.get(k)
                    .and_then(|v| v.as_i64().or_else(|| v.as_str()?.parse().ok()))
                    .unwrap_or(0)
            };
            return (g("seconds"), g("nanos"));
        }
        _ => return (0, 0),
    };
    let neg = s.starts_with('-');
    let s = s.trim_start_matches('-');
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    let secs: i64 = int.parse().unwrap_or(0);
    let mut nanos: i64 = 0;
    for (i, c) in frac.chars().take(9).enumerate() {
        nanos += i64::from(c.to_digit(10).unwrap_or(0)) * 10i64.pow(8 - i as u32);
    }
    if neg {
        (-secs, -nanos)
    } else {
        (secs, nanos)
    }
}

// ---------------------------------------------------------------- helpers of every function family

/// Convert an owned JSON value to a generic template value.
pub fn owned<'a>(v: Value) -> V<'a> {
    match v {
        Value::Null => V::Nil,
        Value::Bool(b) => V::Bool(b),
        Value::Number(n) => V::Float(n.as_f64().unwrap_or(0.0)),
        Value::String(s) => V::string(s),
        Value::Array(a) => V::List(a.into_iter().map(owned).collect()),
        Value::Object(o) => V::map(o.into_iter().map(|(k, v)| (k, owned(v))).collect()),
    }
}

/// Elements of a list-like value (`None`: not a slice).
pub fn to_list<'a>(v: &V<'a>) -> Option<Vec<V<'a>>> {
    let items: Vec<V<'a>> = match v {
        V::Json(Value::Array(a)) => a.iter().map(V::json).collect(),
        V::List(l) | V::TList(_, l) => l.to_vec(),
        V::NilOf(t) if !t.starts_with("map[") => Vec::new(),
        V::K8sSlice(f, s) => s
            .iter()
            .flat_map(|s| s.iter())
            .map(|j| k8s_elem_value(f, Some(j)))
            .collect(),
        V::ProtoList(f, s) => s
            .iter()
            .flat_map(|s| s.iter())
            .map(|j| proto_scalar(f, Some(j)))
            .collect(),
        _ => return None,
    };
    // A copy of the elements: work in proportion to the list.
    crate::work::count(items.len() as u64);
    Some(items)
}

/// The capacity Go gives a slice: `json.Unmarshal` builds arrays by appending, so a JSON array
/// of n elements has the next power of two as capacity (exact up to 512 elements); other
/// slices have their length.
pub fn go_cap(v: &V<'_>) -> usize {
    match v {
        V::Json(Value::Array(a)) if !a.is_empty() && a.len() <= 512 => a.len().next_power_of_two(),
        other => other.len().unwrap_or(0),
    }
}

/// Entries of any map value, sorted by key (Go's printing and ranging order).
pub fn map_entries<'a>(v: &V<'a>) -> Vec<(String, V<'a>)> {
    match v {
        V::Json(Value::Object(o)) => {
            let mut e: Vec<_> = o.iter().map(|(k, x)| (k.clone(), V::json(x))).collect();
            e.sort_by(|a, b| a.0.cmp(&b.0));
            e
        }
        V::Map(m) => m
            .borrow()
            .iter()
            .map(|(k, x)| (k.clone(), x.clone()))
            .collect(),
        V::StrMap(m) => m
            .iter()
            .flat_map(|m| m.iter())
            .map(|(k, x)| (k.clone(), V::string(x.clone())))
            .collect(),
        V::StrMapJ(m) => {
            let mut e: Vec<_> = m
                .iter()
                .flat_map(|m| m.iter())
                .map(|(k, x)| (k.clone(), V::string(x.as_str().unwrap_or("").to_string())))
                .collect();
            e.sort_by(|a, b| a.0.cmp(&b.0));
            e
        }
        _ => Vec::new(),
    }
}

/// Entries of a generic map value (a copy).
pub fn to_map<'a>(v: &V<'a>) -> BTreeMap<String, V<'a>> {
    match v {
        V::Json(Value::Object(o)) => o.iter().map(|(k, x)| (k.clone(), V::json(x))).collect(),
        V::Map(m) => m.borrow().clone(),
        _ => BTreeMap::new(),
    }
}

/// The shared map behind a `map[string]interface{}` argument: the same map for a template map
/// (so `set` and `merge` change it, as in Go); a new map for JSON viewed in place or nil.
pub fn shared_map<'a>(v: &V<'a>) -> GoMap<'a> {
    match v {
        V::Map(m) => m.clone(),
        other => Rc::new(std::cell::RefCell::new(to_map(other))),
    }
}

/// A Kubernetes struct as Go's encoders see it: its JSON (an empty struct when `json` is
/// `None`) in Go's field order with Go's `omitempty` rules ([`crate::kube::typed::to_go_value`]);
/// the conversion's message when it fails.
pub fn k8s_go_value(ty: &str, json: Option<&Value>) -> Result<Value, String> {
    let empty = Value::Object(Map::new());
    crate::kube::typed::to_go_value(ty, json.unwrap_or(&empty)).map_err(|e| e.to_string())
}

/// Go `encoding/json.Marshal` of a template value (maps sorted); Go's error for values JSON
/// cannot hold.
pub fn marshal(v: &V<'_>, html: bool, indent: Option<&str>) -> Result<String, String> {
    check_marshal(v)?;
    let j = match v {
        V::K8s { ty, json, .. } => k8s_go_value(ty, *json)?,
        other => other.to_json(),
    };
    Ok(crate::go::json::marshal_sorted(&j, html, indent))
}

pub fn check_marshal(v: &V<'_>) -> Result<(), String> {
    match v {
        V::Float(f) if !f.is_finite() => Err(format!(
            "json: unsupported value: {}",
            crate::go::float::format_float(*f, 'g', -1)
        )),
        V::Complex(..) => Err("json: unsupported type: complex128".into()),
        V::List(l) | V::TList(_, l) => l.items().iter().try_for_each(check_marshal),
        V::Map(m) => m.borrow().values().try_for_each(check_marshal),
        _ => Ok(()),
    }
}

/// Go JSON encoding of a generic value (maps sorted; errors give an empty string).
pub fn to_json_go(v: &V<'_>) -> String {
    marshal(v, true, None).unwrap_or_default()
}

/// String content of a string value ("" otherwise).
pub fn str_of<'s>(v: &'s V<'_>) -> &'s str {
    match v {
        V::Str(s) => s,
        _ => "",
    }
}

/// Go's `json.Unmarshal` into `interface{}`: objects, arrays, float64 numbers.
pub fn go_unmarshal<'a>(s: &str) -> Result<V<'a>, String> {
    match serde_json::from_str::<Value>(s) {
        Ok(v) => Ok(owned(v)),
        Err(e) => Err(go_json_error(s, &e)),
    }
}

/// Go's `encoding/json` syntax error text for the common cases.
fn go_json_error(s: &str, e: &serde_json::Error) -> String {
    if s.trim().is_empty() || e.is_eof() {
        return "unexpected end of JSON input".into();
    }
    let line_start: usize = s
        .split_inclusive('\n')
        .take(e.line().saturating_sub(1))
        .map(str::len)
        .sum();
    let off = (line_start + e.column()).saturating_sub(1);
    let c = s[off.min(s.len())..].chars().next().unwrap_or(' ');
    format!(
        "invalid character {} looking for beginning of value",
        crate::go::quote::quote_rune(c, false)
    )
}

/// Largest string a function may build (a guard against memory exhaustion; Go has none).
pub const MAX_OUTPUT: usize = 64 << 20;

/// Fail when `base + copies * each` bytes would exceed [`MAX_OUTPUT`].
pub fn check_size(base: usize, copies: usize, each: usize) -> Result<(), String> {
    match copies.checked_mul(each).and_then(|x| x.checked_add(base)) {
        Some(n) if n <= MAX_OUTPUT => Ok(()),
        _ => Err(format!("result exceeds {MAX_OUTPUT} bytes")),
    }
}

/// `%q` of a string (used by Sprig's `quote`).
pub fn quote_str(s: &str) -> String {
    // Printable ASCII other than the quote and the backslash is written as it is.
    if s.bytes()
        .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\')
    {
        let mut out = String::with_capacity(s.len() + 2);
        out.push('"');
        out.push_str(s);
        out.push('"');
        return out;
    }
    crate::go::quote::quote(s)
}
