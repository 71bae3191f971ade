//! Decoding of JSON trees (from YAML) as protobuf messages into the canonical form, following
//! golang/protobuf jsonpb's `Unmarshal` (proto or JSON field names, enums by name or number,
//! integers as numbers or strings, Durations in Go `time.ParseDuration` syntax).
//!
//! Decoding keeps explicitly set zero values (an overlay's `accessLogFile: ''` must clear the
//! base); [`normalize`] then drops proto3 zero scalars, zero enums and empty lists/maps.

use serde_json::{Map, Number, Value};

use super::{DecodeError, MeshError, Result};
use crate::go::duration::parse_go_duration;
use crate::kube::schema::{self, ProtoField, ProtoKind, ProtoMessage};

/// How unknown fields are treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unknown {
    /// An unknown field is an error naming it.
    Reject,
    /// Unknown fields are ignored (jsonpb `AllowUnknownFields`).
    Ignore,
}

/// Decode `v` as message `msg`, keeping explicit zero values. `path` prefixes error messages.
pub fn decode_message(msg: &str, v: &Value, path: &str, unknown: Unknown) -> Result<Value> {
    let desc = message(msg)?;
    let obj = match v {
        Value::Object(o) => o,
        other => {
            return Err(type_err(
                path,
                &format!("expected an object for {msg}"),
                other,
            ))
        }
    };
    let mut fields: Vec<(usize, &ProtoField, Value)> = Vec::with_capacity(obj.len());
    for (key, raw) in obj {
        let Some(idx) = field_index(desc, key) else {
            if unknown == Unknown::Reject {
                return Err(DecodeError::UnknownField {
                    path: path.to_string(),
                    key: key.to_string(),
                    message: msg.to_string(),
                }
                .into());
            }
            continue;
        };
        let f = &desc.fields[idx];
        let fpath = join(path, &f.json);
        if let Some(oneof) = &f.oneof {
            if fields
                .iter()
                .any(|(_, g, _)| g.oneof.as_ref() == Some(oneof))
            {
                return Err(DecodeError::OneofAlreadySet {
                    path: fpath,
                    oneof: oneof.to_string(),
                    message: msg.to_string(),
                }
                .into());
            }
        }
        if let Some(val) = decode_field(f, raw, &fpath, unknown)? {
            fields.push((idx, f, val));
        }
    }
    fields.sort_by_key(|(i, _, _)| *i);
    let out: Map<String, Value> = fields
        .into_iter()
        .map(|(_, f, v)| (f.json.clone(), v))
        .collect();
    Ok(Value::Object(out))
}

/// Look up a message descriptor, or fail naming it.
pub fn message(msg: &str) -> Result<&'static ProtoMessage> {
    schema::proto()
        .message(msg)
        .ok_or_else(|| MeshError::UnknownMessage(msg.to_string()))
}

/// Index of the field named `key` (JSON name or proto name).
pub fn field_index(desc: &ProtoMessage, key: &str) -> Option<usize> {
    desc.fields
        .iter()
        .position(|f| f.json == key)
        .or_else(|| desc.fields.iter().position(|f| f.proto == key))
}

pub(super) fn prefix(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!("{path}: ")
    }
}

/// Join a field path.
pub fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

fn type_err(path: &str, what: &str, got: &Value) -> MeshError {
    let shown = crate::go::json::to_string(got);
    let shown: String = shown.chars().take(80).collect();
    DecodeError::WrongType {
        path: path.to_string(),
        expected: what.to_string(),
        got: shown,
    }
    .into()
}

/// Decode one field value; `None` when the value is JSON `null` (a no-op in jsonpb).
fn decode_field(
    f: &ProtoField,
    raw: &Value,
    path: &str,
    unknown: Unknown,
) -> Result<Option<Value>> {
    if raw.is_null() {
        let is_value =
            f.ty == "google.protobuf.Value" && !f.repeated && f.type_kind != ProtoKind::Map;
        return Ok(is_value.then_some(Value::Null));
    }
    if f.type_kind == ProtoKind::Map {
        return decode_map(f, raw, path, unknown).map(Some);
    }
    if f.repeated {
        let Value::Array(items) = raw else {
            return Err(type_err(path, "expected a list", raw));
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let ipath = format!("{path}[{i}]");
            if item.is_null() && f.ty != "google.protobuf.Value" {
                return Err(MeshError::NullListElement(ipath));
            }
            out.push(decode_single(&f.ty, f.type_kind, item, &ipath, unknown)?);
        }
        return Ok(Some(Value::Array(out)));
    }
    decode_single(&f.ty, f.type_kind, raw, path, unknown).map(Some)
}

fn decode_map(f: &ProtoField, raw: &Value, path: &str, unknown: Unknown) -> Result<Value> {
    let Value::Object(entries) = raw else {
        return Err(type_err(path, "expected a map", raw));
    };
    let key_ty = f.map_key.as_deref().unwrap_or("string");
    let val_ty = f.map_value.as_deref().unwrap_or("string");
    let val_kind = f.map_value_kind.unwrap_or(ProtoKind::Scalar);
    let mut out = Map::new();
    for (k, v) in entries {
        let kpath = format!("{path}[{k:?}]");
        check_map_key(key_ty, k, &kpath)?;
        if v.is_null() && val_ty != "google.protobuf.Value" {
            return Err(MeshError::NullMapValue(kpath));
        }
        out.insert(
            k.clone(),
            decode_single(val_ty, val_kind, v, &kpath, unknown)?,
        );
    }
    Ok(Value::Object(out))
}

fn check_map_key(key_ty: &str, k: &str, path: &str) -> Result<()> {
    let ok = match key_ty {
        "string" => true,
        "bool" => k == "true" || k == "false",
        "int32" | "sint32" | "sfixed32" => k.parse::<i32>().is_ok(),
        "int64" | "sint64" | "sfixed64" => k.parse::<i64>().is_ok(),
        "uint32" | "fixed32" => k.parse::<u32>().is_ok(),
        _ => k.parse::<u64>().is_ok(),
    };
    if ok {
        Ok(())
    } else {
        Err(DecodeError::MapKey {
            path: path.to_string(),
            key_type: key_ty.to_string(),
        }
        .into())
    }
}

/// Decode a singular value of type `ty` (`scalar`, `enum` or `message` kind).
fn decode_single(
    ty: &str,
    kind: ProtoKind,
    raw: &Value,
    path: &str,
    unknown: Unknown,
) -> Result<Value> {
    match kind {
        ProtoKind::Enum => decode_enum(ty, raw, path),
        ProtoKind::Message => decode_wkt_or_message(ty, raw, path, unknown),
        _ => decode_scalar(ty, raw, path),
    }
}

fn decode_wkt_or_message(ty: &str, raw: &Value, path: &str, unknown: Unknown) -> Result<Value> {
    match ty {
        "google.protobuf.Duration" => {
            let Value::String(s) = raw else {
                return Err(type_err(path, "expected a Duration string", raw));
            };
            let d = parse_go_duration(s).map_err(|e| DecodeError::Duration {
                path: path.to_string(),
                reason: e,
            })?;
            Ok(Value::String(d.to_jsonpb()))
        }
        "google.protobuf.BoolValue" => decode_scalar("bool", raw, path),
        "google.protobuf.Int32Value" => decode_scalar("int32", raw, path),
        "google.protobuf.UInt32Value" => decode_scalar("uint32", raw, path),
        "google.protobuf.Int64Value" => decode_scalar("int64", raw, path),
        "google.protobuf.UInt64Value" => decode_scalar("uint64", raw, path),
        "google.protobuf.FloatValue" | "google.protobuf.DoubleValue" => {
            decode_scalar("double", raw, path)
        }
        "google.protobuf.StringValue" => decode_scalar("string", raw, path),
        "google.protobuf.Struct" => match raw {
            Value::Object(_) => Ok(raw.clone()),
            other => Err(type_err(
                path,
                "expected an object for google.protobuf.Struct",
                other,
            )),
        },
        "google.protobuf.ListValue" => match raw {
            Value::Array(_) => Ok(raw.clone()),
            other => Err(type_err(
                path,
                "expected a list for google.protobuf.ListValue",
                other,
            )),
        },
        "google.protobuf.Value" => Ok(raw.clone()),
        _ => decode_message(ty, raw, path, unknown),
    }
}

fn decode_enum(ty: &str, raw: &Value, path: &str) -> Result<Value> {
    let Some(e) = schema::proto().enumeration(ty) else {
        return Err(DecodeError::UnknownEnum {
            path: path.to_string(),
            ty: ty.to_string(),
        }
        .into());
    };
    match raw {
        Value::String(s) => match e.number_of(s) {
            Some(_) => Ok(Value::String(s.clone())),
            None => Err(DecodeError::UnknownEnumValue {
                path: path.to_string(),
                value: s.to_string(),
                ty: ty.to_string(),
            }
            .into()),
        },
        Value::Number(n) => {
            let num = n
                .as_i64()
                .and_then(|x| i32::try_from(x).ok())
                .ok_or_else(|| type_err(path, &format!("invalid value for enum {ty}"), raw))?;
            Ok(match e.name_of(num) {
                Some(name) => Value::String(name.to_string()),
                None => Value::Number(num.into()),
            })
        }
        other => Err(type_err(
            path,
            &format!("invalid value for enum {ty}"),
            other,
        )),
    }
}

/// Decode a scalar of proto type `ty`.
fn decode_scalar(ty: &str, raw: &Value, path: &str) -> Result<Value> {
    match ty {
        "string" | "bytes" => match raw {
            Value::String(_) => Ok(raw.clone()),
            other => Err(type_err(path, "expected a string", other)),
        },
        "bool" => match raw {
            Value::Bool(_) => Ok(raw.clone()),
            other => Err(type_err(path, "expected a bool", other)),
        },
        "double" | "float" => decode_float(raw, path),
        _ => decode_int(ty, raw, path),
    }
}

fn decode_float(raw: &Value, path: &str) -> Result<Value> {
    match raw {
        Value::Number(_) => Ok(raw.clone()),
        Value::String(s) if matches!(s.as_str(), "NaN" | "Infinity" | "-Infinity") => {
            Ok(raw.clone())
        }
        Value::String(s) => s
            .parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| type_err(path, "expected a number", raw)),
        other => Err(type_err(path, "expected a number", other)),
    }
}

fn decode_int(ty: &str, raw: &Value, path: &str) -> Result<Value> {
    let text = match raw {
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        other => return Err(type_err(path, &format!("expected an {ty}"), other)),
    };
    let bad = || type_err(path, &format!("invalid {ty}"), raw);
    let (signed, bits) = match ty {
        "int32" | "sint32" | "sfixed32" => (true, 32),
        "uint32" | "fixed32" => (false, 32),
        "int64" | "sint64" | "sfixed64" => (true, 64),
        _ => (false, 64),
    };
    if signed {
        let v: i64 = text.parse().map_err(|_| bad())?;
        if bits == 32 && i32::try_from(v).is_err() {
            return Err(bad());
        }
        Ok(Value::Number(v.into()))
    } else {
        let v: u64 = text.parse().map_err(|_| bad())?;
        if bits == 32 && u32::try_from(v).is_err() {
            return Err(bad());
        }
        Ok(Value::Number(v.into()))
    }
}

/// Drop proto3 zero values (scalars, enums outside oneofs) and empty lists/maps, recursively.
/// Messages, wrappers and Durations stay even when empty/zero.
pub fn normalize(msg: &str, v: &mut Value) {
    let (Some(desc), Value::Object(obj)) = (schema::proto().message(msg), v) else {
        return;
    };
    obj.retain(|key, val| {
        let Some(f) = desc.fields.iter().find(|f| &f.json == key) else {
            return true;
        };
        normalize_field(f, val);
        !is_zero(f, val)
    });
}

fn normalize_field(f: &ProtoField, val: &mut Value) {
    if f.type_kind == ProtoKind::Map {
        if f.map_value_kind == Some(ProtoKind::Message) {
            if let (Some(ty), Value::Object(m)) = (f.map_value.as_deref(), val) {
                m.values_mut().for_each(|x| normalize(ty, x));
            }
        }
        return;
    }
    if f.type_kind != ProtoKind::Message || f.well_known {
        return;
    }
    match val {
        Value::Array(items) => items.iter_mut().for_each(|x| normalize(&f.ty, x)),
        other => normalize(&f.ty, other),
    }
}

/// Whether a decoded field value counts as unset in proto3.
pub fn is_zero(f: &ProtoField, val: &Value) -> bool {
    if f.type_kind == ProtoKind::Map || f.repeated {
        return match val {
            Value::Array(a) => a.is_empty(),
            Value::Object(o) => o.is_empty(),
            _ => false,
        };
    }
    if f.oneof.is_some() {
        return false;
    }
    match f.type_kind {
        ProtoKind::Scalar => match val {
            Value::String(s) => s.is_empty(),
            Value::Bool(b) => !b,
            Value::Number(n) => n.as_f64() == Some(0.0),
            _ => false,
        },
        ProtoKind::Enum => match val {
            Value::String(s) => {
                schema::proto()
                    .enumeration(&f.ty)
                    .and_then(|e| e.number_of(s))
                    == Some(0)
            }
            Value::Number(n) => n.as_i64() == Some(0),
            _ => false,
        },
        ProtoKind::Message | ProtoKind::Map => false,
    }
}
