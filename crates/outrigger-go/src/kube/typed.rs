//! Kubernetes typed semantics over JSON trees, driven by [`crate::kube::schema`].
//!
//! Provides:
//! - [`normalize`]: make a JSON tree look like the Go typed round-trip of type `ty` (drop `null`s
//!   and zero-valued omitempty fields, canonical quantities, YAML-1.1 bools/numbers in string
//!   fields become strings, type mismatches are errors naming the field path) while KEEPING
//!   fields the schema does not know.
//! - [`to_go_value`]: the value Go's `json.Marshal` of the typed object would produce: known
//!   fields only, Go field order, omitempty rules (used for `structToJSON`, the overrides annotation).
//!
//! Like Go's encoder, [`normalize`] also materialises what a typed round-trip always emits:
//! non-pointer structs (`"resources":{}`), non-omitempty scalars at their zero value
//! (`"containerPort":0`, `"name":""`) and non-omitempty nil slices/maps/pointers as `null`
//! (`"containers":null`). Key order of existing keys is kept; added keys go last.

use std::cell::RefCell;

use rustc_hash::FxHashMap;
use serde_json::{Map, Value};

use crate::go::json as gojson;
use crate::go::{fmt as gofmt, time};
use crate::kube::index::{self, FieldInfo, StructIndex};
use crate::kube::quantity;
use crate::kube::schema::Kind;

/// Results of typed normalisation: [`TypeError`] unless said otherwise.
type Result<T, E = TypeError> = std::result::Result<T, E>;

/// A value that does not fit the Kubernetes Go type it is decoded as, in `encoding/json`'s words.
///
/// At most a `String` wide (the wide cases are boxed): results travel through the recursion of
/// [`normalize`], and a wider error makes every frame wider.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TypeError {
    /// A struct field of the wrong JSON kind.
    #[error(transparent)]
    Field(Box<FieldTypeError>),
    /// A whole value of the wrong JSON kind.
    #[error(transparent)]
    Value(Box<ValueTypeError>),
    /// A type the schema tables do not have.
    #[error("unknown Kubernetes type {0:?}")]
    UnknownType(String),
    /// A field that must be an object is not (`metadata`, ...).
    #[error("{0}: expected an object")]
    NotAnObject(String),
    /// A quantity that does not parse.
    #[error(transparent)]
    Quantity(#[from] crate::kube::quantity::QuantityError),
    /// A `metav1.Time` that does not parse.
    #[error(transparent)]
    Time(#[from] time::TimeError),
}

/// A struct field of the wrong JSON kind ([`TypeError::Field`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("json: cannot unmarshal {got} into Go struct field {owner}.{} of type {ty}", .path.join("."))]
pub struct FieldTypeError {
    /// What the document holds (`string`, `number 1.5`, ...).
    pub got: String,
    /// Go name of the struct owning the field (`ContainerPort`).
    pub owner: String,
    /// JSON path of the field from the top of the document, as Go reports it
    /// (`spec`, `containers`, `ports`, `containerPort`).
    pub path: Vec<String>,
    /// Go type of the field (`int32`, `[]v1.ContainerPort`).
    pub ty: String,
}

/// A whole value of the wrong JSON kind ([`TypeError::Value`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("json: cannot unmarshal {got} into Go value of type {ty}")]
pub struct ValueTypeError {
    /// What the document holds.
    pub got: String,
    /// The Go type.
    pub ty: String,
}

impl TypeError {
    /// A whole value of the wrong JSON kind: `got` decoded as Go type `ty`.
    pub fn value(got: String, ty: String) -> TypeError {
        TypeError::Value(Box::new(ValueTypeError { got, ty }))
    }
}

thread_local! {
    /// Set by every step of [`normalize`] that may change the tree ([`normalize_changed`]).
    static CHANGED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Note that the normalisation running on this thread changed (or may have changed) its tree.
fn changed() {
    CHANGED.with(|c| c.set(true));
}

/// [`normalize`], also telling whether it changed `v`: `false` only when `v` is exactly as it
/// was (same keys in the same order, same values), i.e. `v` was in normal form already (what
/// the API server sends). A `true` may be conservative (a step that rewrote a value to itself).
pub fn normalize_changed(ty: &str, v: &mut Value) -> Result<bool> {
    let outer = CHANGED.with(|c| c.replace(false));
    let r = normalize(ty, v);
    let now = CHANGED.with(|c| c.replace(outer));
    r.map(|()| now)
}

/// Normalise `v` (of Go type `ty`, e.g. `corev1.Pod`) in place as a typed round-trip would.
///
/// `ty` is a struct of the schema; the leaf types `resource.Quantity`, `intstr.IntOrString`,
/// `metav1.Time` and quantity maps such as `corev1.ResourceList` are accepted too.
pub fn normalize(ty: &str, v: &mut Value) -> Result<()> {
    if index::get(ty).is_none() {
        if let Some(r) = normalize_leaf(ty, v) {
            // Leaf types are normalised whole: counted as changed.
            changed();
            return r;
        }
    }
    let idx = root_index(ty)?;
    match v {
        Value::Object(m) => {
            let mut path = Vec::new();
            norm_struct(idx, m, &mut path, true)
        }
        Value::Null => {
            changed();
            *v = zero_struct(idx, 0);
            Ok(())
        }
        other => Err(TypeError::value(
            gojson::unmarshal_kind(other).to_string(),
            index::short_type(idx.name),
        )),
    }
}

/// [`normalize`] of `v` beside `normal`, a tree of the same type `ty` in normal form (one
/// [`normalize`] gave, or left unchanged): a field of a struct of `v` [`gojson::identical`] to
/// the same field of the struct at the same place in `normal` is in normal form already and is
/// not walked again. The merge stage's pod, the pod as received with the templates merged in,
/// is normalised beside the pod as received, so the pod's own containers, untouched, cost one
/// comparison instead of a normalisation.
///
/// Normalisation is a function of a value's type and place only (a struct's fields are
/// normalised independently, an identical field gives identical output, and a value in normal
/// form normalises to itself without error), so the result and errors are [`normalize`]'s.
pub fn normalize_beside(ty: &str, v: &mut Value, normal: &Value) -> Result<()> {
    match (index::get(ty), &mut *v, normal) {
        (Some(idx), Value::Object(m), Value::Object(reference)) => {
            let mut path = Vec::new();
            norm_struct_beside(idx, m, &mut path, true, Some(reference))
        }
        _ => normalize(ty, v),
    }
}

/// The JSON Go would marshal for `v` decoded as Go type `ty`, keys in Go field order.
pub fn to_go_value(ty: &str, v: &Value) -> Result<Value> {
    if index::get(ty).is_none() {
        let mut copy = v.clone();
        if let Some(r) = normalize_leaf(ty, &mut copy) {
            r?;
            if let Value::Object(m) = copy {
                let mut entries: Vec<(String, Value)> = m.into_iter().collect();
                entries.sort_by(|a, b| a.0.cmp(&b.0));
                return Ok(Value::Object(entries.into_iter().collect()));
            }
            return Ok(copy);
        }
    }
    let idx = root_index(ty)?;
    let mut copy = v.clone();
    normalize(ty, &mut copy)?;
    Ok(match copy {
        Value::Object(m) => Value::Object(order_struct(idx, m)),
        other => other,
    })
}

/// Top-level values of non-struct types; `None` when `ty` is not one of them.
fn normalize_leaf(ty: &str, v: &mut Value) -> Option<Result<()>> {
    let err = |v: &Value, t: &str| -> TypeError {
        TypeError::value(gojson::unmarshal_kind(v).to_string(), t.to_string())
    };
    let quantity_map = crate::kube::schema::k8s()
        .named_types
        .get(ty)
        .is_some_and(|n| {
            n.kind == Kind::Map
                && n.underlying
                    .as_deref()
                    .is_some_and(|u| u.ends_with("resource.Quantity"))
        });
    Some(match (ty, &mut *v) {
        ("resource.Quantity", Value::Null) => {
            *v = Value::from("0");
            Ok(())
        }
        ("resource.Quantity", _) => norm_quantity(v),
        ("intstr.IntOrString", Value::String(_)) => Ok(()),
        ("intstr.IntOrString", Value::Null) => {
            *v = Value::from(0);
            Ok(())
        }
        ("intstr.IntOrString", Value::Number(n)) => match n.as_f64() {
            Some(x) if x.fract() == 0.0 && x >= f64::from(i32::MIN) && x <= f64::from(i32::MAX) => {
                *v = Value::from(x as i64);
                Ok(())
            }
            _ => Err(TypeError::value(
                format!("number {}", gofmt::number_text(n)),
                "int32".into(),
            )),
        },
        ("intstr.IntOrString", other) => Err(err(other, "int32")),
        ("metav1.Time", Value::String(s)) => {
            time::canonicalize(s).map_err(TypeError::from).map(|c| {
                *v = if c == time::ZERO {
                    Value::Null
                } else {
                    Value::from(c)
                };
            })
        }
        ("metav1.Time", Value::Null) => Ok(()),
        ("metav1.Time", other) => Err(err(other, "string")),
        (_, Value::Object(m)) if quantity_map => m.values_mut().try_for_each(|q| {
            if q.is_null() {
                *q = Value::from("0");
                Ok(())
            } else {
                norm_quantity(q)
            }
        }),
        (_, Value::Null) if quantity_map => Ok(()),
        (_, other) if quantity_map => Err(err(other, &index::short_type(ty))),
        _ => return None,
    })
}

fn root_index(ty: &str) -> Result<&'static StructIndex> {
    index::get(ty).ok_or_else(|| TypeError::UnknownType(ty.to_string()))
}

/// Where a value sits, for Go-shaped error messages.
struct Ctx<'a> {
    owner: &'static str,
    path: &'a [&'static str],
}

impl Ctx<'_> {
    fn type_error(&self, what: &str, ty: &str) -> TypeError {
        TypeError::Field(Box::new(FieldTypeError {
            got: what.to_string(),
            owner: self.owner.to_string(),
            path: self.path.iter().map(|p| p.to_string()).collect(),
            ty: ty.to_string(),
        }))
    }
}

/// `convert`: YAML numbers and booleans in string fields become strings (sigs.k8s.io/yaml's
/// target-type rule), which does not apply below a field reached through an inline struct.
fn norm_struct(
    idx: &'static StructIndex,
    obj: &mut Map<String, Value>,
    path: &mut Vec<&'static str>,
    convert: bool,
) -> Result<()> {
    norm_struct_beside(idx, obj, path, convert, None)
}

/// The value of `key` in `m`: a struct's few fields scanned, a larger object's hashed.
#[inline]
fn field_of<'m>(m: &'m Map<String, Value>, key: &str) -> Option<&'m Value> {
    if m.len() <= 16 {
        m.iter().find(|(k, _)| k.as_str() == key).map(|(_, v)| v)
    } else {
        m.get(key)
    }
}

/// [`norm_struct`] beside `reference`, the struct at the same place of a tree in normal form
/// ([`normalize_beside`]).
fn norm_struct_beside(
    idx: &'static StructIndex,
    obj: &mut Map<String, Value>,
    path: &mut Vec<&'static str>,
    convert: bool,
    reference: Option<&Map<String, Value>>,
) -> Result<()> {
    let mut renamed = false;
    // Bit `i`: field `i` is present after this pass (keys matched case-insensitively included).
    let mut present: u64 = 0;
    // Positions of the entries to remove (zero-valued omitempty fields, `null`s).
    let mut dropped: Vec<usize> = Vec::new();
    // Go decodes the JSON text sigs.k8s.io/yaml writes, keys sorted, and reports the first
    // type error in that order: on an error, the other fields are still checked.
    let mut first_error: Option<(String, TypeError)> = None;
    // The reference's entries, paired with ours while its keys come in the same order.
    let mut in_step = reference.map(|r| r.iter());
    for (pos, (k, v)) in obj.iter_mut().enumerate() {
        let stepped = in_step.as_mut().and_then(Iterator::next);
        let Some((i, exact)) = idx.lookup_exactness(k) else {
            continue;
        };
        let f = &idx.fields[i];
        renamed |= !exact;
        let beside = match (reference, stepped) {
            (_, Some((rk, rv))) if exact && rk == k => Some(rv),
            (Some(r), _) if exact => field_of(r, k),
            _ => None,
        };
        if beside.is_some_and(|r| gojson::identical(v, r)) {
            // As in the tree in normal form: kept as it is.
            present |= 1 << (i % 64);
            continue;
        }
        // The most common field, a string holding a string, decided as [`norm_field`] decides
        // it, without extending the path (which only errors and nested values read).
        let r = if matches!(f.kind, Kind::String | Kind::NamedString) && v.is_string() {
            Ok(!(f.omitempty && v.as_str() == Some("")))
        } else {
            let depth = path.len();
            path.extend_from_slice(&f.embedded);
            path.push(f.json);
            let r = norm_field(idx, f, v, path, convert && !f.via_inline, beside);
            path.truncate(depth);
            r
        };
        match r {
            Ok(true) => present |= 1 << (i % 64),
            Ok(false) => dropped.push(pos),
            Err(e) => {
                if first_error.as_ref().is_none_or(|(fk, _)| k < fk) {
                    first_error = Some((k.clone(), e));
                }
            }
        }
    }
    if let Some((_, e)) = first_error {
        return Err(e);
    }
    if !dropped.is_empty() {
        changed();
        remove_positions(obj, &dropped);
    }
    if renamed {
        changed();
        rename_folded_keys(idx, obj);
    }
    complete_struct(idx, obj, present);
    Ok(())
}

/// Remove the entries at `positions` (ascending), keeping the order of the others.
fn remove_positions(obj: &mut Map<String, Value>, positions: &[usize]) {
    let mut pos = 0;
    let mut next = positions.iter().copied().peekable();
    obj.retain(|_, _| {
        let drop = next.next_if_eq(&pos).is_some();
        pos += 1;
        !drop
    });
}

/// Move case-insensitively matched keys to their canonical JSON name (later keys win, as in Go).
fn rename_folded_keys(idx: &StructIndex, obj: &mut Map<String, Value>) {
    let old = std::mem::take(obj);
    for (k, v) in old {
        match idx.lookup(&k) {
            Some(i) if idx.json_name(i) != k => {
                obj.insert(idx.json_name(i).to_string(), v);
            }
            _ => {
                obj.insert(k, v);
            }
        }
    }
}

/// Add the fields Go always emits that are absent; bit `i` of `present` marks field `i` present.
///
/// Each key left in `obj` is either unknown or the JSON name of the field [`StructIndex::lookup`]
/// gives for it, so the bits stand for `obj.contains_key` without hashing.
fn complete_struct(idx: &StructIndex, obj: &mut Map<String, Value>, mut present: u64) {
    let exact = idx.fields.len() <= 64;
    for &(i, canonical) in &idx.emitted {
        let f = &idx.fields[usize::from(i)];
        let bit = 1u64 << (canonical % 64);
        let absent = if exact {
            present & bit == 0
        } else {
            !obj.contains_key(f.json)
        };
        if !absent {
            continue;
        }
        if let Some(z) = zero_field(f, 0) {
            changed();
            obj.insert(f.json.to_string(), z);
            present |= bit;
        }
    }
}

/// The value Go emits for an unset field, or `None` when the field is omitted.
fn zero_field(f: &FieldInfo, depth: usize) -> Option<Value> {
    match f.kind {
        Kind::Struct => Some(zero_struct(f.target()?, depth + 1)),
        Kind::IntOrString => Some(Value::from(0)),
        Kind::Quantity => Some(Value::from("0")),
        Kind::Time if f.omitzero => None,
        Kind::Time => Some(Value::Null),
        _ if f.omitempty => None,
        Kind::String | Kind::NamedString => Some(Value::from("")),
        Kind::Bool => Some(Value::Bool(false)),
        Kind::Int | Kind::Uint | Kind::Float => Some(Value::from(0)),
        _ => Some(Value::Null),
    }
}

/// A zero value of struct `idx` as Go marshals it.
fn zero_struct(idx: &StructIndex, depth: usize) -> Value {
    let mut m = Map::new();
    if depth < 16 {
        for f in &idx.fields {
            if let Some(z) = zero_field(f, depth) {
                m.insert(f.json.to_string(), z);
            }
        }
    }
    Value::Object(m)
}

/// Normalise one known field value; `Ok(false)` removes the key.
fn norm_field(
    owner: &'static StructIndex,
    f: &'static FieldInfo,
    v: &mut Value,
    path: &mut Vec<&'static str>,
    convert: bool,
    beside: Option<&Value>,
) -> Result<bool> {
    let nil_keep = !f.omitempty;
    match f.kind {
        // The most common case, decided here: a string is kept unless it is an omitted "".
        Kind::String | Kind::NamedString if v.is_string() => {
            Ok(!(f.omitempty && v.as_str() == Some("")))
        }
        Kind::Struct => match v {
            Value::Null => Ok(false),
            _ => {
                norm_struct_value(owner, f, v, path, convert, beside)?;
                Ok(true)
            }
        },
        Kind::PointerToStruct => match v {
            Value::Null => Ok(nil_keep),
            _ => {
                norm_struct_value(owner, f, v, path, convert, beside)?;
                Ok(true)
            }
        },
        Kind::PointerToScalar => match v {
            Value::Null => Ok(nil_keep),
            _ => {
                norm_scalar(f.elem_kind, owner, f, v, path, convert)?;
                Ok(true)
            }
        },
        Kind::Slice => norm_slice(owner, f, v, path, convert, beside),
        Kind::Map => norm_map(owner, f, v, path, convert),
        kind => {
            if v.is_null() {
                // Go leaves the zero value; completion re-adds it when it is emitted.
                return Ok(false);
            }
            norm_scalar(kind, owner, f, v, path, convert)?;
            Ok(!(f.omitempty && is_scalar_zero(kind, v, f.omitzero)))
        }
    }
}

fn is_scalar_zero(kind: Kind, v: &Value, omitzero: bool) -> bool {
    match kind {
        Kind::String | Kind::NamedString => v.as_str() == Some(""),
        Kind::Bool => v.as_bool() == Some(false),
        Kind::Int | Kind::Uint | Kind::Float => v.as_f64() == Some(0.0),
        Kind::Time => omitzero && v.is_null(),
        _ => false,
    }
}

/// Normalise a struct value (or element) of field `f`; values of unknown structs are kept.
fn norm_struct_value(
    owner: &'static StructIndex,
    f: &FieldInfo,
    v: &mut Value,
    path: &mut Vec<&'static str>,
    convert: bool,
    beside: Option<&Value>,
) -> Result<()> {
    let Some(idx) = f.target() else {
        return Ok(());
    };
    match v {
        Value::Object(m) => {
            norm_struct_beside(idx, m, path, convert, beside.and_then(Value::as_object))
        }
        other => Err(mismatch(owner, f, other, path)),
    }
}

/// Go's unmarshal error for a value whose JSON kind does not fit field `f`.
fn mismatch(
    owner: &'static StructIndex,
    f: &FieldInfo,
    v: &Value,
    path: &[&'static str],
) -> TypeError {
    let ctx = Ctx {
        owner: owner.go_name,
        path,
    };
    ctx.type_error(
        gojson::unmarshal_kind(v),
        &index::field_type(owner.go_name, f.def),
    )
}

fn norm_slice(
    owner: &'static StructIndex,
    f: &'static FieldInfo,
    v: &mut Value,
    path: &mut Vec<&'static str>,
    convert: bool,
    beside: Option<&Value>,
) -> Result<bool> {
    match v {
        Value::Null => Ok(!f.omitempty),
        Value::Array(items) => {
            match struct_elements(f) {
                Some(idx) => {
                    // Elements beside those at the same index of the list in normal form.
                    let normal = beside
                        .and_then(Value::as_array)
                        .map_or(&[][..], Vec::as_slice);
                    for (n, item) in items.iter_mut().enumerate() {
                        let beside = normal.get(n);
                        if beside.is_some_and(|r| gojson::identical(item, r)) {
                            continue;
                        }
                        let beside = beside.and_then(Value::as_object);
                        norm_struct_element(owner, f, idx, item, path, convert, beside)?;
                    }
                }
                None => {
                    for item in items.iter_mut() {
                        norm_element(owner, f, item, path, convert)?;
                    }
                }
            }
            Ok(!(f.omitempty && items.is_empty()))
        }
        other => Err(mismatch(owner, f, other, path)),
    }
}

fn norm_map(
    owner: &'static StructIndex,
    f: &'static FieldInfo,
    v: &mut Value,
    path: &mut Vec<&'static str>,
    convert: bool,
) -> Result<bool> {
    match v {
        Value::Null => Ok(!f.omitempty),
        Value::Object(m) => {
            // The first error in sorted key order, as Go meets it.
            let mut first_error: Option<(&String, TypeError)> = None;
            for (k, item) in m.iter_mut() {
                if let Err(e) = norm_element(owner, f, item, path, convert) {
                    if first_error.as_ref().is_none_or(|(fk, _)| k < *fk) {
                        first_error = Some((k, e));
                    }
                }
            }
            if let Some((_, e)) = first_error {
                return Err(e);
            }
            Ok(!(f.omitempty && m.is_empty()))
        }
        other => Err(mismatch(owner, f, other, path)),
    }
}

/// The struct the elements of slice or map field `f` are, when the schema has it.
fn struct_elements(f: &FieldInfo) -> Option<&'static StructIndex> {
    (f.elem_kind == Kind::Struct).then(|| f.target()).flatten()
}

/// [`norm_element`] for elements of the known struct `idx` (resolved once per list).
fn norm_struct_element(
    owner: &'static StructIndex,
    f: &FieldInfo,
    idx: &'static StructIndex,
    item: &mut Value,
    path: &mut Vec<&'static str>,
    convert: bool,
    beside: Option<&Map<String, Value>>,
) -> Result<()> {
    match item {
        // A null element decodes to the zero struct.
        Value::Null => {
            changed();
            *item = zero_struct(idx, 0);
            Ok(())
        }
        Value::Object(m) => norm_struct_beside(idx, m, path, convert, beside),
        other => Err(mismatch(owner, f, other, path)),
    }
}

/// Normalise a slice element or map value of field `f`.
fn norm_element(
    owner: &'static StructIndex,
    f: &'static FieldInfo,
    item: &mut Value,
    path: &mut Vec<&'static str>,
    convert: bool,
) -> Result<()> {
    let kind = f.elem_kind;
    if matches!(kind, Kind::String | Kind::NamedString) && item.is_string() {
        return Ok(());
    }
    if kind == Kind::Struct {
        if item.is_null() {
            // A null element decodes to the zero struct.
            if let Some(idx) = f.target() {
                changed();
                *item = zero_struct(idx, 0);
            }
            return Ok(());
        }
        return norm_struct_value(owner, f, item, path, convert, None);
    }
    if item.is_null() {
        changed();
        *item = match kind {
            Kind::String | Kind::NamedString => Value::from(""),
            Kind::Int | Kind::Uint => Value::from(0),
            Kind::Bool => Value::Bool(false),
            Kind::Quantity => Value::from("0"),
            _ => Value::Null,
        };
        return Ok(());
    }
    norm_scalar(kind, owner, f, item, path, convert)
}

/// Check/convert a non-null scalar of `kind` in place.
fn norm_scalar(
    kind: Kind,
    owner: &'static StructIndex,
    f: &FieldInfo,
    v: &mut Value,
    path: &[&'static str],
    convert: bool,
) -> Result<()> {
    let ctx = Ctx {
        owner: owner.go_name,
        path,
    };
    let elem_type = || match f.kind {
        Kind::Slice | Kind::Map | Kind::PointerToScalar => f
            .def
            .elem
            .as_deref()
            .map(index::short_type)
            .unwrap_or_default(),
        _ => index::field_type(owner.go_name, f.def),
    };
    match kind {
        Kind::String | Kind::NamedString => match v {
            Value::String(_) => Ok(()),
            Value::Bool(_) | Value::Number(_) if !convert => {
                Err(ctx.type_error(gojson::unmarshal_kind(v), &elem_type()))
            }
            Value::Bool(b) => {
                changed();
                *v = Value::from(if *b { "true" } else { "false" });
                Ok(())
            }
            Value::Number(n) => {
                changed();
                *v = Value::from(gofmt::number_as_string(n));
                Ok(())
            }
            other => Err(ctx.type_error(gojson::unmarshal_kind(other), &elem_type())),
        },
        Kind::Bool => match v {
            Value::Bool(_) => Ok(()),
            other => Err(ctx.type_error(gojson::unmarshal_kind(other), "bool")),
        },
        Kind::Int | Kind::Uint => norm_int(v, f.int_type, &ctx),
        Kind::IntOrString => match v {
            Value::String(_) => Ok(()),
            _ => norm_int(v, "int32", &ctx),
        },
        Kind::Quantity => norm_quantity(v),
        Kind::Time => match v {
            Value::String(s) => {
                let c = time::canonicalize(s)?;
                if c == time::ZERO || c != *s {
                    changed();
                }
                // The zero time marshals as `null`.
                *v = if c == time::ZERO {
                    Value::Null
                } else {
                    Value::from(c)
                };
                Ok(())
            }
            other => Err(ctx.type_error(gojson::unmarshal_kind(other), "string")),
        },
        _ => Ok(()),
    }
}

fn norm_int(v: &mut Value, ty: &str, ctx: &Ctx<'_>) -> Result<()> {
    let Value::Number(n) = v else {
        return Err(ctx.type_error(gojson::unmarshal_kind(v), ty));
    };
    let (lo, hi) = match ty {
        "int64" => (i64::MIN as f64, i64::MAX as f64),
        _ => (f64::from(i32::MIN), f64::from(i32::MAX)),
    };
    if let Some(i) = n.as_i64() {
        if (i as f64) < lo || (i as f64) > hi {
            return Err(ctx.type_error(&format!("number {i}"), ty));
        }
        return Ok(());
    }
    let x = n.as_f64().unwrap_or(f64::NAN);
    if x.fract() != 0.0 || !x.is_finite() || x < lo || x > hi {
        return Err(ctx.type_error(&format!("number {}", gofmt::number_text(n)), ty));
    }
    changed();
    *v = Value::from(x as i64);
    Ok(())
}

/// Parse and canonicalise a quantity value (string or number, as `Quantity.UnmarshalJSON`).
fn norm_quantity(v: &mut Value) -> Result<()> {
    if let Value::String(s) = v {
        return canonicalize_quantity_string(s);
    }
    changed();
    let text = match &*v {
        Value::Number(n) => gofmt::number_text(n),
        Value::Bool(b) => b.to_string(),
        other => other.to_string(),
    };
    *v = Value::from(quantity::canonicalize(&text)?);
    Ok(())
}

/// Quantity strings remembered per thread (the same few recur in every pod and template).
const QUANTITY_MEMO_MAX: usize = 256;

thread_local! {
    /// Trimmed quantity text → canonical form ([`quantity::canonicalize`] is pure).
    static QUANTITY_MEMO: RefCell<FxHashMap<String, String>> = RefCell::default();
}

/// Replace quantity string `s` by its canonical form (surrounding whitespace ignored).
fn canonicalize_quantity_string(s: &mut String) -> Result<()> {
    let known =
        QUANTITY_MEMO.with_borrow(|memo| memo.get(s.trim()).map(|c| (c != s).then(|| c.clone())));
    match known {
        Some(Some(c)) => {
            changed();
            *s = c;
        }
        Some(None) => {}
        None => {
            let text = s.trim();
            let c = quantity::canonicalize(text)?;
            if c != *s {
                changed();
            }
            QUANTITY_MEMO.with_borrow_mut(|memo| {
                if memo.len() >= QUANTITY_MEMO_MAX {
                    memo.clear();
                }
                memo.insert(text.to_string(), c.clone());
            });
            *s = c;
        }
    }
    Ok(())
}

/// Rebuild a normalised struct object with known fields only, in Go field order.
///
/// A key is placed at the first field of its JSON name; keys naming no field are dropped.
fn order_struct(idx: &StructIndex, obj: Map<String, Value>) -> Map<String, Value> {
    let mut known: Vec<(usize, String, Value)> = obj
        .into_iter()
        .filter_map(|(k, v)| Some((idx.field_index(&k)?, k, v)))
        .collect();
    known.sort_unstable_by_key(|e| e.0);
    let mut out = Map::with_capacity(known.len());
    for (i, k, v) in known {
        out.insert(k, order_field(&idx.fields[i], v));
    }
    out
}

fn order_field(f: &FieldInfo, v: Value) -> Value {
    let elem_struct = || (f.elem_kind == Kind::Struct).then(|| f.target()).flatten();
    match (f.kind, v) {
        (Kind::Struct | Kind::PointerToStruct, Value::Object(m)) => match f.target() {
            Some(idx) => Value::Object(order_struct(idx, m)),
            None => Value::Object(m),
        },
        (Kind::Slice, Value::Array(items)) => match elem_struct() {
            Some(idx) => Value::Array(
                items
                    .into_iter()
                    .map(|e| match e {
                        Value::Object(m) => Value::Object(order_struct(idx, m)),
                        other => other,
                    })
                    .collect(),
            ),
            None => Value::Array(items),
        },
        (Kind::Map, Value::Object(m)) => {
            let st = elem_struct();
            let mut entries: Vec<(String, Value)> = m.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| match (st, v) {
                        (Some(idx), Value::Object(m)) => (k, Value::Object(order_struct(idx, m))),
                        (_, v) => (k, v),
                    })
                    .collect(),
            )
        }
        (_, v) => v,
    }
}

/// The path of the first field of `v` (an object of the Kubernetes type `ty`) that the type
/// does not have, matched exactly as the API server's strict decoding matches JSON names
/// (`spec.containers[0].volumeMount`); `None` when every field is known. What the API server
/// stores has none: a stored object with one was not stored by it (or by a newer one).
pub fn unknown_field(ty: &str, v: &Value) -> Option<String> {
    let idx = index::get(ty)?;
    unknown_in(idx, v, "")
}

fn unknown_in(idx: &'static StructIndex, v: &Value, path: &str) -> Option<String> {
    let obj = v.as_object()?;
    for (k, val) in obj {
        let here = if path.is_empty() {
            k.clone()
        } else {
            format!("{path}.{k}")
        };
        let Some(i) = idx.lookup(k).filter(|&i| idx.fields[i].json == k) else {
            return Some(here);
        };
        let f = &idx.fields[i];
        let Some(target) = f.target() else { continue };
        let found = match (f.kind, val) {
            (Kind::Struct | Kind::PointerToStruct, Value::Object(_)) => {
                unknown_in(target, val, &here)
            }
            (Kind::Slice, Value::Array(items)) => items
                .iter()
                .enumerate()
                .find_map(|(n, e)| unknown_in(target, e, &format!("{here}[{n}]"))),
            (Kind::Map, Value::Object(m)) => m
                .iter()
                .find_map(|(mk, e)| unknown_in(target, e, &format!("{here}[{mk}]"))),
            _ => None,
        };
        if found.is_some() {
            return found;
        }
    }
    None
}
