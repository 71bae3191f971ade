//! Strategic merge patch (Kubernetes semantics) of a rendered template onto a pod.
//!
//! [`strategic_merge`] applies `patch` (a JSON
//! tree shaped like Go type `ty`) onto `target` in place with the patch strategies and merge keys
//! of the schema, `$patch` directives, null deletion and Kubernetes' list re-ordering.
//! [`strategic_merge_owned`] does the same with a patch the caller no longer needs: its values
//! move into the target instead of being copied (same result, errors included).
//!
//! This is a port of `k8s.io/apimachinery/pkg/util/strategicpatch` `mergeMap` with the options
//! Istio uses (parallel list processing, ignore unmatched nulls). Like Go, the result may still
//! hold `null`s inside appended list elements and other values a typed decode would drop: run
//! [`crate::kube::typed::normalize`] on the result to obtain what Go's typed round-trip yields. Keys the
//! schema does not know merge as plain maps (lists under them are replaced).

use rustc_hash::FxHashMap;
use serde_json::{Map, Value};

use crate::go::fmt::sprint;
use crate::json::JsonError;
use crate::json::Scan;
use crate::kube::index::{self, Strategy, StructIndex};
use crate::kube::schema::{Kind, PatchStrategy};
use crate::kube::typed::TypeError;
use crate::render::RenderError;

/// Results of the merge stage: [`MergeError`] unless said otherwise.
type Result<T, E = MergeError> = std::result::Result<T, E>;

/// Why a strategic merge failed (messages are those of Kubernetes' `strategicpatch`, values
/// printed as Go's `%v` prints them), or, for the merge stage around it, the typed round-trip,
/// the rendered patch or the overrides annotation it read ([`MergeError::Type`],
/// [`MergeError::Render`], [`MergeError::Json`]), with the step that failed in front
/// ([`MergeError::Context`]).
///
/// It converts into the crate-wide sum as `Error::Merge`, except the wrappers of other stages'
/// errors, which become what those errors become (`Error::Type`, ...), and
/// [`MergeError::Context`], which becomes `Error::Context`.
///
/// At most a `String` wide (large payloads are boxed): results travel through the merge's
/// recursion.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// A type the schema tables do not have.
    #[error("unknown Kubernetes type {0:?}")]
    UnknownType(String),
    /// The patch is not an object.
    #[error("strategic merge: invalid JSON document")]
    PatchNotAnObject,
    /// The target is not an object.
    #[error("strategic merge: target of type {0} is not an object")]
    TargetNotAnObject(String),
    /// A malformed `patchStrategy` list in the schema (its entries).
    #[error("unexpected patch strategy: [{}]", .0.join(" "))]
    UnexpectedStrategy(Vec<String>),
    /// A list element without the field's merge key.
    #[error("map: {} does not contain declared merge key: {key}", sprint(.element))]
    NoMergeKey {
        /// The element.
        element: Box<Value>,
        /// The merge key.
        key: String,
    },
    /// A `$patch` directive with an unknown value.
    #[error("unknown patch type: {} in map: {}", sprint(.directive), sprint(.map))]
    UnknownPatchType {
        /// The directive's value.
        directive: Box<Value>,
        /// The map holding it.
        map: Box<Value>,
    },
    /// `$retainKeys` is not a list of strings.
    #[error("invalid patch format of retainKeys")]
    RetainKeysFormat,
    /// `$setElementOrder/<field>` is not a list.
    #[error("invalid patch format of setElementOrder list for {0}")]
    SetElementOrderFormat(String),
    /// A list field holds something else.
    #[error("expected a slice, but received {}", sprint(.0))]
    NotASlice(Box<Value>),
    /// The patch list's order contradicts `$setElementOrder`.
    #[error(
        "The order in patch list:\n{}\n doesn't match {SET_ORDER_PREFIX} list:\n{}\n",
        sprint(.patch),
        sprint(.order)
    )]
    OrderMismatch {
        /// The patch list.
        patch: Box<Value>,
        /// The `$setElementOrder` list.
        order: Box<Value>,
    },
    /// A list of lists.
    #[error("lists of lists are not supported")]
    ListOfLists,
    /// Elements of different JSON types in one list.
    #[error("list element types are not identical: [{} {}]", sprint(.original), sprint(.patch))]
    MixedElementTypes {
        /// The original list.
        original: Box<Value>,
        /// The patch list.
        patch: Box<Value>,
    },
    /// Both lists are empty where an element type is needed.
    #[error("no elements in any of the given slices")]
    NoElements,
    /// A list of maps whose field has no merge key.
    #[error("cannot merge lists without merge key for {0}")]
    NoMergeKeyDeclared(String),
    /// `$patch: merge` inside a list.
    #[error("merging lists cannot yet be specified in the patch")]
    MergeDirectiveInList,
    /// The merged pod does not fit the Pod type (the typed round-trip after the merge).
    #[error(transparent)]
    Type(Box<TypeError>),
    /// A rendered template that cannot be read back as a patch.
    #[error(transparent)]
    Render(Box<RenderError>),
    /// The `proxy.istio.io/overrides` annotation could not be read.
    #[error(transparent)]
    Json(Box<JsonError>),
    /// The review's work budget ran out during the merge ([`crate::work`]).
    #[error(transparent)]
    Exhausted(#[from] crate::work::Exhausted),
    /// An error of an inner step, with the step that failed in front
    /// (`failed applying injection overlay: ...`).
    #[error(transparent)]
    Context(Box<MergeContext>),
}

/// A merge-stage error with the step that failed in front: `{context}: {source}`
/// ([`MergeError::Context`]).
#[derive(Debug, thiserror::Error)]
#[error("{context}: {source}")]
pub struct MergeContext {
    /// The outer step (`unmarshal patched pod`, `failed to apply sidecar container`, ...).
    pub context: String,
    /// The inner error.
    #[source]
    pub source: MergeError,
}

impl MergeError {
    /// Put the step that failed in front of the message (as the crate-wide sum's
    /// `Error::context` does, which this becomes).
    pub fn context(self, prefix: &str) -> MergeError {
        MergeError::Context(Box::new(MergeContext {
            context: prefix.to_string(),
            source: self,
        }))
    }
}

impl From<TypeError> for MergeError {
    fn from(e: TypeError) -> MergeError {
        MergeError::Type(Box::new(e))
    }
}

impl From<RenderError> for MergeError {
    fn from(e: RenderError) -> MergeError {
        MergeError::Render(Box::new(e))
    }
}

impl From<JsonError> for MergeError {
    fn from(e: JsonError) -> MergeError {
        MergeError::Json(Box::new(e))
    }
}

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const SET_ORDER_PREFIX: &str = "$setElementOrder/";
const DELETE_PRIMITIVE_PREFIX: &str = "$deleteFromPrimitiveList/";

/// Apply `patch` onto `target` (both of Go type `ty`, usually `corev1.Pod`).
///
/// Only the parts of `patch` that end up in `target` are copied; when the caller has no further
/// use for `patch`, [`strategic_merge_owned`] moves them instead.
pub fn strategic_merge(ty: &str, target: &mut Value, patch: &Value) -> Result<()> {
    let idx = root_index(ty)?;
    let patch = patch_object(patch)?;
    let original = take_target(ty, target)?;
    let merged = merge_map_ref(original, patch, Schema::Struct(idx))?;
    *target = Value::Object(merged);
    Ok(())
}

/// [`strategic_merge`] consuming `patch`: its values move into `target` instead of being copied.
pub fn strategic_merge_owned(ty: &str, target: &mut Value, patch: Value) -> Result<()> {
    let idx = root_index(ty)?;
    patch_object(&patch)?;
    let Value::Object(patch) = patch else {
        return Ok(());
    };
    let original = take_target(ty, target)?;
    let merged = merge_map(original, patch, Schema::Struct(idx))?;
    *target = Value::Object(merged);
    Ok(())
}

fn root_index(ty: &str) -> Result<&'static StructIndex> {
    index::get(ty).ok_or_else(|| MergeError::UnknownType(ty.to_string()))
}

fn patch_object(patch: &Value) -> Result<&Map<String, Value>> {
    match patch {
        Value::Object(m) => Ok(m),
        _ => Err(MergeError::PatchNotAnObject),
    }
}

/// Take the object out of `target` (`null` counts as empty); other values are errors.
fn take_target(ty: &str, target: &mut Value) -> Result<Map<String, Value>> {
    match std::mem::take(target) {
        Value::Object(m) => Ok(m),
        Value::Null => Ok(Map::new()),
        other => {
            *target = other;
            Err(MergeError::TargetNotAnObject(ty.to_string()))
        }
    }
}

/// Patch metadata context of a JSON object.
#[derive(Clone, Copy)]
enum Schema {
    /// A known Go struct.
    Struct(&'static StructIndex),
    /// A Go map whose values are (optionally) structs.
    Map(Option<&'static StructIndex>),
    /// Unknown to the schema: plain map semantics.
    Unknown,
}

/// Patch metadata of field `name`: sub-schema, strategy, merge key.
struct FieldMeta<'a> {
    sub: Schema,
    strategy: Strategy,
    merge_key: &'static str,
    name: &'a str,
}

fn lookup(schema: Schema, key: &str) -> Result<FieldMeta<'_>> {
    let unknown = |sub| FieldMeta {
        sub,
        strategy: Strategy::Default,
        merge_key: "",
        name: key,
    };
    let f = match schema {
        Schema::Struct(idx) => match idx.field(key) {
            Some(f) => f,
            None => return Ok(unknown(Schema::Unknown)),
        },
        Schema::Map(elem) => return Ok(unknown(elem.map_or(Schema::Unknown, Schema::Struct))),
        Schema::Unknown => return Ok(unknown(Schema::Unknown)),
    };
    let sub = match f.kind {
        Kind::Struct | Kind::PointerToStruct | Kind::Slice => {
            f.target().map_or(Schema::Unknown, Schema::Struct)
        }
        Kind::Map => Schema::Map(f.target()),
        _ => Schema::Unknown,
    };
    if let PatchStrategy::Invalid(parts) = &f.def.patch_strategy {
        return Err(strategy_error(parts));
    }
    Ok(FieldMeta {
        sub,
        strategy: f.strategy,
        merge_key: f.merge_key,
        name: key,
    })
}

/// `extractRetainKeysPatchStrategy`'s error for a malformed strategy list.
fn strategy_error(parts: &[String]) -> MergeError {
    MergeError::UnexpectedStrategy(parts.to_vec())
}

fn no_merge_key(m: &Value, key: &str) -> MergeError {
    MergeError::NoMergeKey {
        element: Box::new(m.clone()),
        key: key.to_string(),
    }
}

fn bad_patch_type(directive: &Value, m: &Map<String, Value>) -> MergeError {
    MergeError::UnknownPatchType {
        directive: Box::new(directive.clone()),
        map: Box::new(Value::Object(m.clone())),
    }
}

/// Go's `reflect.TypeOf` identity of decoded JSON values.
fn same_type(a: &Value, b: &Value) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b)
}

/// Recursively drop `null`-valued keys inside maps (list elements themselves are kept).
pub(crate) fn discard_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => discard_nulls_in_map(m),
        Value::Array(a) => a.iter_mut().for_each(discard_nulls),
        _ => {}
    }
}

fn discard_nulls_in_map(m: &mut Map<String, Value>) {
    let mut has_null = false;
    for x in m.values_mut() {
        match x {
            Value::Null => has_null = true,
            Value::Object(_) | Value::Array(_) => discard_nulls(x),
            _ => {}
        }
    }
    if has_null {
        m.retain(|_, x| !x.is_null());
    }
}

/// A copy of `v` with [`discard_nulls`] applied.
fn clone_without_nulls(v: &Value) -> Value {
    let mut copy = v.clone();
    discard_nulls(&mut copy);
    copy
}

/// Whether `patch` holds a directive (`$patch`, `$retainKeys`, `$setElementOrder/...`,
/// `$deleteFromPrimitiveList/...`): none of them fits a key of a Go struct or label map.
fn has_directive_keys(patch: &Map<String, Value>) -> bool {
    patch.keys().any(|k| k.starts_with('$'))
}

/// `mergeMap` over a borrowed patch: copies only what lands in the result.
///
/// Patches with directives take the owned path ([`merge_map`]); without them `mergeMap` is the
/// plain per-key loop below.
fn merge_map_ref(
    mut original: Map<String, Value>,
    patch: &Map<String, Value>,
    schema: Schema,
) -> Result<Map<String, Value>> {
    if has_directive_keys(patch) {
        return merge_map(original, patch.clone(), schema);
    }
    for (key, patch_v) in patch {
        if patch_v.is_null() {
            original.shift_remove(key);
            continue;
        }
        let Some(orig_v) = original.scan_mut(key) else {
            original.insert(key.clone(), clone_without_nulls(patch_v));
            continue;
        };
        if !same_type(orig_v, patch_v) {
            *orig_v = clone_without_nulls(patch_v);
            continue;
        }
        match (orig_v, patch_v) {
            (Value::Object(o), Value::Object(p)) => {
                let meta = lookup(schema, key)?;
                *o = if meta.strategy == Strategy::Replace {
                    p.clone()
                } else {
                    merge_map_ref(std::mem::take(o), p, meta.sub)?
                };
            }
            (Value::Array(o), Value::Array(p)) => {
                let meta = lookup(schema, key)?;
                *o = merge_slice_handler(std::mem::take(o), p.clone(), &meta, false)?;
            }
            (o, p) => *o = p.clone(),
        }
    }
    Ok(original)
}

/// `mergeMap`.
fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    schema: Schema,
) -> Result<Map<String, Value>> {
    if let Some(d) = patch.scan(DIRECTIVE) {
        return match d.as_str() {
            Some("replace") => {
                patch.shift_remove(DIRECTIVE);
                Ok(patch)
            }
            Some("delete") => Ok(Map::new()),
            _ => Err(bad_patch_type(d, &patch)),
        };
    }
    apply_retain_keys(&mut original, &mut patch)?;
    merge_set_element_order(&mut original, &mut patch, schema)?;
    for (key, patch_v) in patch {
        if key.starts_with(SET_ORDER_PREFIX) {
            // Go copies the directive into the result; the typed decode then drops it.
            continue;
        }
        let (key, is_delete_list) = match key.strip_prefix(DELETE_PRIMITIVE_PREFIX) {
            Some(k) => (k.to_string(), true),
            None => (key, false),
        };
        if patch_v.is_null() {
            original.shift_remove(&key);
            continue;
        }
        let Some(orig_v) = original.scan_mut(&key) else {
            if !is_delete_list {
                let mut v = patch_v;
                discard_nulls(&mut v);
                original.insert(key, v);
            }
            continue;
        };
        if !same_type(orig_v, &patch_v) {
            if !is_delete_list {
                let mut v = patch_v;
                discard_nulls(&mut v);
                *orig_v = v;
            }
            continue;
        }
        match (std::mem::take(orig_v), patch_v) {
            (Value::Object(o), Value::Object(p)) => {
                let meta = lookup(schema, &key)?;
                *orig_v = Value::Object(if meta.strategy == Strategy::Replace {
                    p
                } else {
                    merge_map(o, p, meta.sub)?
                });
            }
            (Value::Array(o), Value::Array(p)) => {
                let meta = lookup(schema, &key)?;
                *orig_v = Value::Array(merge_slice_handler(o, p, &meta, is_delete_list)?);
            }
            (_, p) => *orig_v = p,
        }
    }
    Ok(original)
}

/// `applyRetainKeysDirective` (parallel-list mode).
fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> Result<()> {
    let Some(retain) = patch.shift_remove(RETAIN_KEYS) else {
        return Ok(());
    };
    let bad = || MergeError::RetainKeysFormat;
    let Value::Array(list) = retain else {
        return Err(bad());
    };
    let keep = |k: &str| list.iter().any(|v| v.as_str() == Some(k));
    for (k, v) in patch.iter() {
        if v.is_null() || k.starts_with(DELETE_PRIMITIVE_PREFIX) || k.starts_with(SET_ORDER_PREFIX)
        {
            continue;
        }
        if !keep(k) {
            return Err(bad());
        }
    }
    original.retain(|k, _| keep(k));
    Ok(())
}

/// `mergePatchIntoOriginal`: merge lists named by `$setElementOrder/<field>` and impose that order.
fn merge_set_element_order(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    schema: Schema,
) -> Result<()> {
    let directives: Vec<String> = patch
        .keys()
        .filter(|k| k.starts_with(SET_ORDER_PREFIX))
        .cloned()
        .collect();
    for dkey in directives {
        let field = dkey[SET_ORDER_PREFIX.len()..].to_string();
        let Some(Value::Array(order)) = patch.get(&dkey).cloned() else {
            return Err(MergeError::SetElementOrderFormat(field));
        };
        let orig_list = match original.get(&field) {
            None => None,
            Some(Value::Array(a)) => Some(a.clone()),
            Some(other) => return Err(MergeError::NotASlice(Box::new(other.clone()))),
        };
        let patch_list = match patch.get(&field) {
            None => None,
            Some(Value::Array(a)) => Some(a.clone()),
            Some(other) => return Err(MergeError::NotASlice(Box::new(other.clone()))),
        };
        let meta = lookup(schema, &field)?;
        validate_patch_with_set_order(
            patch_list.as_deref().unwrap_or(&[]),
            &order,
            meta.merge_key,
        )?;
        let merged = match (&orig_list, &patch_list) {
            (Some(o), None) => o.clone(),
            (None, Some(p)) => p.iter().filter(|e| !has_directive(e)).cloned().collect(),
            (Some(o), Some(p)) => merge_slice_handler(o.clone(), p.clone(), &meta, false)?,
            (None, None) => continue,
        };
        let o = orig_list.unwrap_or_default();
        let p = patch_list.unwrap_or_default();
        let is_map = element_kind_is_map(&o, &p)?;
        let key = meta.merge_key;
        let (order_pos, server_pos) = (positions(&order, key, is_map), positions(&o, key, is_map));
        let (patch_items, server_only) = partition(merged, &order_pos, key, is_map)?;
        if is_map {
            // `normalizeSliceOrder` validates the reference lists too.
            if let Some(v) = order.iter().chain(&o).find(|v| v.scan(key).is_none()) {
                return Err(no_merge_key(v, key));
            }
        }
        let both = interleave(
            patch_items,
            server_only,
            &order_pos,
            &server_pos,
            key,
            is_map,
        );
        original.insert(field.clone(), Value::Array(both));
        patch.shift_remove(&field);
    }
    Ok(())
}

fn has_directive(v: &Value) -> bool {
    v.as_object().is_some_and(|m| m.contains_key(DIRECTIVE))
}

/// `validatePatchWithSetOrderList`.
fn validate_patch_with_set_order(patch: &[Value], order: &[Value], merge_key: &str) -> Result<()> {
    if order.is_empty() || patch.is_empty() {
        return Ok(());
    }
    let items: Vec<&Value> = patch
        .iter()
        .filter(|e| {
            merge_key.is_empty() || e.scan(DIRECTIVE).and_then(Value::as_str) != Some("delete")
        })
        .collect();
    let (mut pi, mut oi) = (0, 0);
    while pi < items.len() && oi < order.len() {
        if has_directive(items[pi]) {
            pi += 1;
            continue;
        }
        let equal = if merge_key.is_empty() {
            items[pi] == &order[oi]
        } else {
            let a = items[pi]
                .scan(merge_key)
                .ok_or_else(|| no_merge_key(items[pi], merge_key))?;
            let b = order[oi]
                .scan(merge_key)
                .ok_or_else(|| no_merge_key(&order[oi], merge_key))?;
            key_of(a).is_some() && key_of(a) == key_of(b)
        };
        if equal {
            pi += 1;
        }
        oi += 1;
    }
    if pi < items.len() && oi >= order.len() {
        return Err(MergeError::OrderMismatch {
            patch: Box::new(Value::Array(patch.to_vec())),
            order: Box::new(Value::Array(order.to_vec())),
        });
    }
    Ok(())
}

/// `mergeSliceHandler`.
fn merge_slice_handler(
    original: Vec<Value>,
    patch: Vec<Value>,
    meta: &FieldMeta,
    is_delete: bool,
) -> Result<Vec<Value>> {
    if meta.strategy == Strategy::Merge {
        merge_slice(original, patch, meta, is_delete)
    } else {
        Ok(patch)
    }
}

/// Comparable identity of a merge-key value or primitive element (Go `==` on interfaces);
/// `None` for maps/lists, which never compare equal.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Null,
    Bool(bool),
    Num(u64),
    Str(String),
}

fn key_of(v: &Value) -> Option<Key> {
    Some(match v {
        Value::Null => Key::Null,
        Value::Bool(b) => Key::Bool(*b),
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(0.0);
            Key::Num(if x == 0.0 { 0 } else { x.to_bits() })
        }
        Value::String(s) => Key::Str(s.clone()),
        _ => return None,
    })
}

/// Identity of a list element: its merge-key value for maps, itself for primitives.
fn elem_key(v: &Value, merge_key: &str, is_map: bool) -> Option<Key> {
    if is_map {
        v.scan(merge_key).and_then(key_of)
    } else {
        key_of(v)
    }
}

/// First index of every identity in `list` (Go's linear `index`, precomputed).
fn positions(list: &[Value], merge_key: &str, is_map: bool) -> FxHashMap<Key, usize> {
    let mut m = FxHashMap::with_capacity_and_hasher(list.len(), Default::default());
    for (i, v) in list.iter().enumerate() {
        if let Some(k) = elem_key(v, merge_key, is_map) {
            m.entry(k).or_insert(i);
        }
    }
    m
}

/// `sliceElementType`: whether the elements are maps (errors on mixed or nested lists).
fn element_kind_is_map(original: &[Value], patch: &[Value]) -> Result<bool> {
    let mut first: Option<&Value> = None;
    for v in original.iter().chain(patch) {
        match first {
            None => {
                if v.is_array() {
                    return Err(MergeError::ListOfLists);
                }
                first = Some(v);
            }
            Some(f) if !same_type(f, v) => {
                return Err(MergeError::MixedElementTypes {
                    original: Box::new(Value::Array(original.to_vec())),
                    patch: Box::new(Value::Array(patch.to_vec())),
                });
            }
            Some(_) => {}
        }
    }
    match first {
        Some(f) => Ok(f.is_object()),
        None => Err(MergeError::NoElements),
    }
}

/// `mergeSlice`.
fn merge_slice(
    original: Vec<Value>,
    patch: Vec<Value>,
    meta: &FieldMeta,
    is_delete: bool,
) -> Result<Vec<Value>> {
    if original.is_empty() && patch.is_empty() {
        return Ok(original);
    }
    // The merge's work is in proportion to the lists it merges.
    crate::work::charge((original.len() + patch.len()) as u64)?;
    let is_map = element_kind_is_map(&original, &patch)?;
    let key = meta.merge_key;
    let (server_pos, patch_pos, merged) = if is_map {
        if key.is_empty() {
            return Err(MergeError::NoMergeKeyDeclared(meta.name.to_string()));
        }
        let (original, patch) = apply_special_elements(original, patch, key)?;
        // Positions in the original list (Go's `serverOrder`), taken before merging in place.
        let server_pos = positions(&original, key, true);
        let patch_pos = positions(&patch, key, true);
        let merged = merge_maps_by_key(original, patch, key, meta.sub)?;
        (server_pos, patch_pos, merged)
    } else {
        if is_delete {
            return Ok(delete_from_slice(original, &patch));
        }
        let server_pos = positions(&original, key, false);
        let patch_pos = positions(&patch, key, false);
        let mut both = original;
        both.extend(patch);
        (server_pos, patch_pos, deduplicate_scalars(both))
    };
    // `partition` checks every merged element (originals included) carries the merge key.
    let (patch_items, server_only) = partition(merged, &patch_pos, key, is_map)?;
    Ok(interleave(
        patch_items,
        server_only,
        &patch_pos,
        &server_pos,
        key,
        is_map,
    ))
}

/// `mergeSliceWithSpecialElements`: `$patch: delete|replace` list elements.
fn apply_special_elements(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    key: &str,
) -> Result<(Vec<Value>, Vec<Value>)> {
    let mut plain = Vec::with_capacity(patch.len());
    let mut replace = false;
    // Deleted keys, removed in one pass after reading the directives (one pass per directive
    // would be quadratic in the list).
    let mut deleted: rustc_hash::FxHashSet<Option<Key>> = Default::default();
    for v in patch {
        let Some(d) = v.scan(DIRECTIVE) else {
            plain.push(v);
            continue;
        };
        match d.as_str() {
            Some("delete") => {
                let target = v.scan(key).ok_or_else(|| no_merge_key(&v, key))?;
                deleted.insert(key_of(target));
            }
            Some("replace") => replace = true,
            Some("merge") => {
                return Err(MergeError::MergeDirectiveInList);
            }
            _ => {
                let m = v.as_object().cloned().unwrap_or_default();
                return Err(bad_patch_type(d, &m));
            }
        }
    }
    if !deleted.is_empty() {
        original.retain(|o| {
            let k = o.scan(key).and_then(key_of);
            k.is_none() || !deleted.contains(&k)
        });
    }
    if replace {
        Ok((plain, Vec::new()))
    } else {
        Ok((original, plain))
    }
}

/// `mergeSliceWithoutSpecialElements`: merge by key in place, append the rest.
fn merge_maps_by_key(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    key: &str,
    sub: Schema,
) -> Result<Vec<Value>> {
    let mut pos = positions(&original, key, true);
    for p in patch {
        let Some(kv) = p.scan(key) else {
            return Err(no_merge_key(&p, key));
        };
        let k = key_of(kv);
        match k.as_ref().and_then(|k| pos.get(k).copied()) {
            Some(i) => {
                let o = match std::mem::take(&mut original[i]) {
                    Value::Object(m) => m,
                    _ => Map::new(),
                };
                let pm = match p {
                    Value::Object(m) => m,
                    _ => Map::new(),
                };
                original[i] = Value::Object(merge_map(o, pm, sub)?);
            }
            None => {
                if let Some(k) = k {
                    pos.entry(k).or_insert(original.len());
                }
                original.push(p);
            }
        }
    }
    Ok(original)
}

/// `deleteFromSlice`.
fn delete_from_slice(current: Vec<Value>, to_delete: &[Value]) -> Vec<Value> {
    let del: rustc_hash::FxHashSet<Option<Key>> = to_delete.iter().map(key_of).collect();
    current
        .into_iter()
        .filter(|v| {
            let k = key_of(v);
            k.is_none() || !del.contains(&k)
        })
        .collect()
}

/// `deduplicateScalars` (Go's swap-with-last algorithm, order included).
fn deduplicate_scalars(mut s: Vec<Value>) -> Vec<Value> {
    if s.is_empty() {
        return s;
    }
    let mut length = s.len() - 1;
    let mut i = 0;
    while i < length {
        let mut j = i + 1;
        while j <= length {
            let eq = key_of(&s[i]).is_some() && key_of(&s[i]) == key_of(&s[j]);
            if eq {
                s.swap(j, length);
                s.truncate(length);
                length -= 1;
            } else {
                j += 1;
            }
        }
        i += 1;
    }
    s
}

/// `partitionMapsByPresentInList` / `partitionPrimitivesByPresentInList`.
fn partition(
    merged: Vec<Value>,
    present: &FxHashMap<Key, usize>,
    key: &str,
    is_map: bool,
) -> Result<(Vec<Value>, Vec<Value>)> {
    let mut patch_items = Vec::new();
    let mut server_only = Vec::new();
    for v in merged {
        if is_map && v.scan(key).is_none() {
            return Err(no_merge_key(&v, key));
        }
        let found = elem_key(&v, key, is_map).is_some_and(|k| present.contains_key(&k));
        if found {
            patch_items.push(v);
        } else {
            server_only.push(v);
        }
    }
    Ok((patch_items, server_only))
}

/// `normalizeElementOrder` with precomputed reference positions: sort the patch items by their
/// position in the patch (or `$setElementOrder`) list and the server-only items by their
/// position in the original list, then interleave (`mergeSortedSlice`): the server-only head
/// goes first only when both heads are in the original list and it comes earlier there.
fn interleave(
    mut patch_items: Vec<Value>,
    mut server_only: Vec<Value>,
    patch_pos: &FxHashMap<Key, usize>,
    server_pos: &FxHashMap<Key, usize>,
    key: &str,
    is_map: bool,
) -> Vec<Value> {
    let idx = |m: &FxHashMap<Key, usize>, v: &Value| {
        elem_key(v, key, is_map).and_then(|k| m.get(&k).copied())
    };
    sort_by_index(&mut patch_items, |v| idx(patch_pos, v));
    sort_by_index(&mut server_only, |v| idx(server_pos, v));
    let mut out = Vec::with_capacity(patch_items.len() + server_only.len());
    let mut left = server_only.into_iter().peekable();
    let mut right = patch_items.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => {
                matches!((idx(server_pos, l), idx(server_pos, r)), (Some(li), Some(ri)) if li < ri)
            }
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    out
}

/// Stable sort by position in a reference list (elements are always found there).
fn sort_by_index(items: &mut [Value], pos: impl Fn(&Value) -> Option<usize>) {
    items.sort_by_key(|v| pos(v).unwrap_or(usize::MAX));
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::{strategic_merge, strategic_merge_owned, MergeError};
    use crate::kube::typed::normalize;

    /// Results travel through the merge's recursion: the error stays at most a `String` wide
    /// (a 512-deep document must not overflow a test thread's stack).
    #[test]
    fn merge_errors_stay_one_string_wide() {
        assert!(std::mem::size_of::<MergeError>() <= std::mem::size_of::<String>() + 8);
    }

    /// A 512-deep overlay (as deep as the YAML reader lets a document be) merges, and its error
    /// at the bottom comes back up, on a test thread's stack, with the typed round-trip after it.
    #[test]
    fn a_512_deep_merge_and_its_error_fit_a_test_thread() {
        let nest = |leaf: Value| (0..510).fold(leaf, |v, _| json!({ "x": v }));
        let mut pod = json!({"metadata": {"annotations": {}}, "spec": {"containers": []}});
        let mut patch = json!({"spec": {"containers": []}});
        patch["spec"]["x"] = nest(json!({"a": 1}));
        pod["spec"]["x"] = nest(json!({"b": 2}));
        let original = pod.clone();
        strategic_merge("corev1.Pod", &mut pod, &patch).expect("merges");
        normalize("corev1.Pod", &mut pod).expect("normalises");
        patch["spec"]["x"] = nest(json!({"$patch": "bogus"}));
        let mut pod = original;
        let e = strategic_merge("corev1.Pod", &mut pod.clone(), &patch).expect_err("bad patch");
        assert!(matches!(e, MergeError::UnknownPatchType { .. }), "{e}");
        let e = crate::merge::pod::merge_pod(&mut pod, &patch).expect_err("bad patch");
        assert!(
            e.to_string().starts_with("unknown patch type: bogus"),
            "{e}"
        );
    }

    /// Merge with both the borrowed and the owned entry point; they must agree (key order too).
    fn smp(target: Value, patch: Value) -> Value {
        let mut t = target.clone();
        strategic_merge("corev1.Pod", &mut t, &patch).unwrap();
        let mut owned = target;
        strategic_merge_owned("corev1.Pod", &mut owned, patch).unwrap();
        assert_eq!(owned.to_string(), t.to_string());
        t
    }

    fn smp_err(target: Value, patch: Value) -> String {
        let mut t = target.clone();
        let e = strategic_merge("corev1.Pod", &mut t, &patch)
            .unwrap_err()
            .to_string();
        let mut owned = target;
        let e2 = strategic_merge_owned("corev1.Pod", &mut owned, patch)
            .unwrap_err()
            .to_string();
        assert_eq!(e, e2);
        e
    }

    fn names(v: &Value) -> Vec<&str> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap())
            .collect()
    }

    #[test]
    fn template_containers_come_first() {
        let r = smp(
            json!({"spec": {"containers": [{"name": "app", "image": "app:1"}]}}),
            json!({"spec": {"containers": [{"name": "istio-proxy", "image": "proxy"}]}}),
        );
        assert_eq!(names(&r["spec"]["containers"]), ["istio-proxy", "app"]);
        assert_eq!(r["spec"]["containers"][1]["image"], "app:1");
    }

    #[test]
    fn merge_by_key_keeps_relative_order_of_shared_elements() {
        let r = smp(
            json!({"spec": {"containers": [{"name": "c", "env": [
                {"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}]}}),
            json!({"spec": {"containers": [{"name": "c", "env": [
                {"name": "B", "value": "3"}, {"name": "C", "value": "4"}]}]}}),
        );
        assert_eq!(
            r["spec"]["containers"][0]["env"],
            json!([{"name": "A", "value": "1"}, {"name": "B", "value": "3"}, {"name": "C", "value": "4"}])
        );
        let r = smp(
            json!({"spec": {"volumes": [{"name": "A"}, {"name": "B"}]}}),
            json!({"spec": {"volumes": [{"name": "C"}, {"name": "A", "emptyDir": {}}]}}),
        );
        assert_eq!(
            r["spec"]["volumes"],
            json!([{"name": "C"}, {"name": "A", "emptyDir": {}}, {"name": "B"}])
        );
    }

    #[test]
    fn ports_and_mounts_merge_by_their_keys() {
        let mut r = smp(
            json!({"spec": {"containers": [{"name": "c",
                "ports": [{"containerPort": 80, "name": "http"}],
                "volumeMounts": [{"mountPath": "/a", "name": "x"}]}]}}),
            json!({"spec": {"containers": [{"name": "c",
                "ports": [{"containerPort": 80.0, "protocol": "TCP"}, {"containerPort": 15090}],
                "volumeMounts": [{"mountPath": "/a", "readOnly": true}]}]}}),
        );
        normalize("corev1.Pod", &mut r).unwrap();
        let c = &r["spec"]["containers"][0];
        assert_eq!(
            c["ports"],
            json!([{"containerPort": 80, "name": "http", "protocol": "TCP"}, {"containerPort": 15090}])
        );
        assert_eq!(
            c["volumeMounts"],
            json!([{"mountPath": "/a", "name": "x", "readOnly": true}])
        );
    }

    #[test]
    fn lists_without_strategy_are_replaced() {
        let r = smp(
            json!({"spec": {"containers": [{"name": "c", "args": ["a", "b"]}], "tolerations": [{"key": "k"}]}}),
            json!({"spec": {"containers": [{"name": "c", "args": ["z"]}], "tolerations": []}}),
        );
        assert_eq!(r["spec"]["containers"][0]["args"], json!(["z"]));
        assert_eq!(r["spec"]["tolerations"], json!([]));
    }

    #[test]
    fn empty_merge_list_is_a_no_op() {
        let r = smp(
            json!({"spec": {"initContainers": [{"name": "i"}], "containers": [{"name": "a"}]}}),
            json!({"spec": {"initContainers": [], "containers": [{"name": "a"}]}}),
        );
        assert_eq!(r["spec"]["initContainers"], json!([{"name": "i"}]));
    }

    #[test]
    fn labels_patch_replace_from_g17() {
        let r = smp(
            json!({"metadata": {"labels": {"app": "x", "version": "v1"}, "annotations": {"a": "b"}}}),
            json!({"metadata": {"labels": {"$patch": "replace", "foo": "bar"}}}),
        );
        assert_eq!(r["metadata"]["labels"], json!({"foo": "bar"}));
        assert_eq!(r["metadata"]["annotations"], json!({"a": "b"}));
        let r = smp(
            json!({"metadata": {"labels": {"app": "x"}}}),
            json!({"metadata": {"labels": {"$patch": "delete"}}}),
        );
        assert_eq!(r["metadata"]["labels"], json!({}));
    }

    #[test]
    fn directive_maps_are_copied_verbatim_when_the_key_is_absent() {
        // [quirk] Go's mergeMap takes an absent key's patch value as-is, directives included.
        let r = smp(
            json!({"metadata": {}}),
            json!({"metadata": {"labels": {"$patch": "replace", "foo": "bar"}}}),
        );
        assert_eq!(
            r["metadata"]["labels"],
            json!({"$patch": "replace", "foo": "bar"})
        );
    }

    #[test]
    fn mixed_element_types_are_errors() {
        let e = smp_err(
            json!({"metadata": {"finalizers": ["a"]}}),
            json!({"metadata": {"finalizers": [{"x": 1}]}}),
        );
        assert_eq!(e, "list element types are not identical: [[a] [map[x:1]]]");
        let e = smp_err(
            json!({"metadata": {"finalizers": [["a"]]}}),
            json!({"metadata": {"finalizers": ["b"]}}),
        );
        assert_eq!(e, "lists of lists are not supported");
    }

    #[test]
    fn null_deletes_and_nulls_in_new_values_are_discarded() {
        let r = smp(
            json!({"metadata": {"annotations": {"a": "1", "b": "2"}}, "spec": {"containers": [{"name": "c"}]}}),
            json!({"metadata": {"annotations": {"a": null, "zz": null}},
                   "spec": {"securityContext": {"runAsUser": null, "fsGroup": 1}}}),
        );
        assert_eq!(r["metadata"]["annotations"], json!({"b": "2"}));
        assert_eq!(r["spec"]["securityContext"], json!({"fsGroup": 1}));
    }

    #[test]
    fn appended_elements_keep_nulls_until_normalize() {
        let mut r = smp(
            json!({"spec": {"containers": [{"name": "app"}], "volumes": [{"name": "v", "emptyDir": {}}]}}),
            json!({"spec": {"volumes": [{"name": "workload-socket", "emptyDir": null}]}}),
        );
        assert_eq!(
            r["spec"]["volumes"][0],
            json!({"name": "workload-socket", "emptyDir": null})
        );
        normalize("corev1.Pod", &mut r).unwrap();
        assert_eq!(
            r["spec"]["volumes"],
            json!([{"name": "workload-socket"}, {"name": "v", "emptyDir": {}}])
        );
    }

    #[test]
    fn type_mismatch_replaces_with_nulls_discarded() {
        let r = smp(
            json!({"spec": {"containers": null}}),
            json!({"spec": {"containers": [{"name": "p", "image": null}]}}),
        );
        assert_eq!(r["spec"]["containers"], json!([{"name": "p"}]));
    }

    #[test]
    fn missing_merge_key_error_text() {
        let e = smp_err(
            json!({"spec": {"containers": [{"name": "a"}]}}),
            json!({"spec": {"containers": [{"image": "x"}]}}),
        );
        assert_eq!(
            e,
            "map: map[image:x] does not contain declared merge key: name"
        );
    }

    #[test]
    fn bad_directives_are_errors() {
        let e = smp_err(
            json!({"metadata": {"labels": {"a": "b"}}}),
            json!({"metadata": {"labels": {"$patch": "merge"}}}),
        );
        assert_eq!(e, "unknown patch type: merge in map: map[$patch:merge]");
        let e = smp_err(
            json!({"spec": {"containers": [{"name": "a"}]}}),
            json!({"spec": {"containers": [{"$patch": "merge", "name": "a"}]}}),
        );
        assert_eq!(e, "merging lists cannot yet be specified in the patch");
    }

    #[test]
    fn list_element_directives() {
        let r = smp(
            json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}),
            json!({"spec": {"containers": [{"name": "a", "$patch": "delete"}, {"name": "c"}]}}),
        );
        assert_eq!(names(&r["spec"]["containers"]), ["c", "b"]);
        let r = smp(
            json!({"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b"}]}}),
            json!({"spec": {"containers": [{"$patch": "replace"}, {"name": "z"}, {"name": "a"}]}}),
        );
        assert_eq!(
            r["spec"]["containers"],
            json!([{"name": "z"}, {"name": "a"}])
        );
        let r = smp(
            json!({"spec": {"containers": [{"name": "a", "image": "1", "args": ["x"]}]}}),
            json!({"spec": {"containers": [{"name": "a", "image": "2", "$patch": "replace"}]}}),
        );
        // Go: any element carrying `$patch` is a directive, never data; `replace` empties the list.
        assert_eq!(r["spec"]["containers"], json!([]));
    }

    #[test]
    fn retain_keys_directive() {
        let r = smp(
            json!({"spec": {"volumes": [{"name": "v", "emptyDir": {}}]}}),
            json!({"spec": {"volumes": [{"name": "v", "hostPath": {"path": "/x"}, "$retainKeys": ["name", "hostPath"]}]}}),
        );
        assert_eq!(
            r["spec"]["volumes"],
            json!([{"name": "v", "hostPath": {"path": "/x"}}])
        );
        let e = smp_err(
            json!({"spec": {"volumes": [{"name": "v"}]}}),
            json!({"spec": {"volumes": [{"name": "v", "secret": {}, "$retainKeys": ["name"]}]}}),
        );
        assert_eq!(e, "invalid patch format of retainKeys");
    }

    #[test]
    fn set_element_order_directive() {
        let r = smp(
            json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}}),
            json!({"spec": {"$setElementOrder/containers": [{"name": "c"}, {"name": "a"}, {"name": "b"}],
                "containers": [{"name": "a", "image": "x"}]}}),
        );
        let c = &r["spec"]["containers"];
        assert_eq!(names(c), ["c", "a", "b"]);
        assert_eq!(c[1]["image"], "x");
        assert!(r["spec"].get("$setElementOrder/containers").is_none());
    }

    #[test]
    fn primitive_merge_and_delete_from_primitive_list() {
        let r = smp(
            json!({"metadata": {"finalizers": ["a", "b"]}}),
            json!({"metadata": {"finalizers": ["c", "a"]}}),
        );
        assert_eq!(r["metadata"]["finalizers"], json!(["c", "a", "b"]));
        let r = smp(
            json!({"metadata": {"finalizers": ["a", "b", "c"]}}),
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["b"]}}),
        );
        assert_eq!(r["metadata"]["finalizers"], json!(["a", "c"]));
        assert!(r["metadata"]
            .get("$deleteFromPrimitiveList/finalizers")
            .is_none());
    }

    #[test]
    fn unknown_fields_merge_as_plain_maps() {
        let r = smp(
            json!({"spec": {"future": {"a": 1, "l": [1, 2]}}}),
            json!({"spec": {"future": {"b": 2, "l": [3]}}}),
        );
        assert_eq!(r["spec"]["future"], json!({"a": 1, "l": [3], "b": 2}));
    }

    #[test]
    fn non_object_patch_is_an_error() {
        let mut t = json!({});
        assert!(strategic_merge("corev1.Pod", &mut t, &json!([1])).is_err());
        assert!(strategic_merge("no.Such", &mut t, &json!({})).is_err());
        assert!(strategic_merge_owned("corev1.Pod", &mut t, json!([1])).is_err());
        assert!(strategic_merge_owned("no.Such", &mut t, json!({})).is_err());
        let mut s = json!("x");
        assert!(strategic_merge_owned("corev1.Pod", &mut s, json!({})).is_err());
        assert_eq!(s, json!("x"));
    }

    #[test]
    fn realistic_sidecar_template_onto_pod() {
        let mut pod = json!({
            "metadata": {"name": "hello", "labels": {"app": "hello"}, "annotations": {"a": "1"}},
            "spec": {
                "containers": [{"name": "hello", "image": "hello:1",
                    "ports": [{"containerPort": 80, "name": "http"}],
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
                "volumes": [{"name": "data", "emptyDir": {}}]
            }
        });
        crate::kube::typed::normalize("corev1.Pod", &mut pod).unwrap();
        let template = json!({
            "metadata": {"labels": {"security.istio.io/tlsMode": "istio"},
                         "annotations": {"sidecar.istio.io/status": "{}"}},
            "spec": {
                "initContainers": [
                    {"name": "istio-init", "image": "proxyv2", "args": ["istio-iptables", "-p", "15001"],
                     "resources": {"limits": {"cpu": "2000m", "memory": "1024Mi"}, "requests": {"cpu": "100m"}},
                     "securityContext": {"privileged": false, "runAsUser": 0, "capabilities": {"add": ["NET_ADMIN"]}}},
                    {"name": "istio-proxy", "image": "proxyv2", "restartPolicy": "Always",
                     "ports": [{"containerPort": 15090, "protocol": "TCP", "name": "http-envoy-prom"}],
                     "env": [{"name": "ISTIO_META_POD_PORTS", "value": "[]"}, {"name": "EMPTY", "value": null}],
                     "volumeMounts": [{"name": "workload-socket", "mountPath": "/var/run/secrets/workload-spiffe-uds"}]}
                ],
                "containers": [],
                "volumes": [{"name": "workload-socket", "emptyDir": null},
                            {"name": "istio-envoy", "emptyDir": {"medium": "Memory"}}]
            }
        });
        strategic_merge("corev1.Pod", &mut pod, &template).unwrap();
        crate::kube::typed::normalize("corev1.Pod", &mut pod).unwrap();
        assert_eq!(
            pod["metadata"]["labels"],
            json!({"app": "hello", "security.istio.io/tlsMode": "istio"})
        );
        assert_eq!(pod["metadata"]["annotations"]["a"], "1");
        assert_eq!(names(&pod["spec"]["containers"]), ["hello"]);
        assert_eq!(
            names(&pod["spec"]["initContainers"]),
            ["istio-init", "istio-proxy"]
        );
        assert_eq!(
            names(&pod["spec"]["volumes"]),
            ["workload-socket", "istio-envoy", "data"]
        );
        assert_eq!(
            pod["spec"]["volumes"][0],
            json!({"name": "workload-socket"})
        );
        let init = &pod["spec"]["initContainers"][0];
        assert_eq!(
            init["resources"]["limits"],
            json!({"cpu": "2", "memory": "1Gi"})
        );
        assert_eq!(init["securityContext"]["privileged"], json!(false));
        let proxy = &pod["spec"]["initContainers"][1];
        assert_eq!(
            proxy["env"],
            json!([{"name": "ISTIO_META_POD_PORTS", "value": "[]"}, {"name": "EMPTY"}])
        );
        assert_eq!(proxy["resources"], json!({}));

        // The user's own istio-proxy definition is re-applied over the injected one.
        let user = json!({"name": "istio-proxy", "image": "auto",
            "resources": {"limits": {"cpu": "3000m"}}, "securityContext": {"runAsUser": 1234}});
        let mut overlay = crate::kube::typed::to_go_value("corev1.Container", &user).unwrap();
        overlay.as_object_mut().unwrap().shift_remove("image");
        let patch = json!({"spec": {"containers": [], "initContainers": [overlay]}});
        strategic_merge("corev1.Pod", &mut pod, &patch).unwrap();
        crate::kube::typed::normalize("corev1.Pod", &mut pod).unwrap();
        let proxy = &pod["spec"]["initContainers"][1];
        assert_eq!(proxy["name"], "istio-proxy");
        assert_eq!(proxy["image"], "proxyv2");
        assert_eq!(proxy["resources"], json!({"limits": {"cpu": "3"}}));
        assert_eq!(proxy["securityContext"], json!({"runAsUser": 1234}));
        assert_eq!(
            names(&pod["spec"]["initContainers"]),
            ["istio-init", "istio-proxy"]
        );
    }

    #[test]
    fn big_env_merge_keeps_every_entry() {
        let env: Vec<_> = (0..1500)
            .map(|i| json!({"name": format!("V{i}"), "value": "x"}))
            .collect();
        let penv: Vec<_> = (0..1500)
            .rev()
            .step_by(3)
            .map(|i| json!({"name": format!("V{i}"), "value": "y"}))
            .collect();
        let r = smp(
            json!({"spec": {"containers": [{"name": "c", "env": env}]}}),
            json!({"spec": {"containers": [{"name": "c", "env": penv}]}}),
        );
        let e = r["spec"]["containers"][0]["env"].as_array().unwrap();
        assert_eq!(e.len(), 1500);
        assert_eq!(e.iter().filter(|v| v["value"] == "y").count(), 500);
    }

    /// Strategic merges of odd trees (real Pod field names, every kind of wrong value) never
    /// panic, and the typed round-trip of any result does not either.
    #[test]
    fn random_merges_never_panic() {
        let mut g = crate::testing::random::Gen(7);
        for _ in 0..3000 {
            let mut a = g.value(0);
            let b = g.value(0);
            if strategic_merge("corev1.Pod", &mut a, &b).is_ok() {
                let _ = crate::kube::typed::normalize("corev1.Pod", &mut a);
            }
        }
    }
}
