//! `protoToJSON`: legacy golang/protobuf jsonpb encoding (default options) of canonical trees,
//! with Istio's default pruning of `ProxyConfig` (fields equal to the built-in default are
//! left out).

use serde_json::{Map, Value};

use super::decode;
use super::defaults;
use crate::go::duration::{parse_go_duration, Duration};
use crate::go::json as gojson;
use crate::kube::schema::{self, ProtoField, ProtoKind, PROXY_CONFIG};

/// A value that does not fit its message type.
struct Mismatch;

type Enc<T> = std::result::Result<T, Mismatch>;

/// Encode `v` as message `msg`; `ProxyConfig` is pruned of defaults first. `{}` on mismatch.
pub fn proto_to_json(msg: &str, v: &Value) -> String {
    let pruned;
    let v = if msg == PROXY_CONFIG {
        pruned = prune_proxy_config(v);
        &pruned
    } else {
        v
    };
    let mut out = String::with_capacity(64);
    match write_message(&mut out, msg, v) {
        Ok(()) => out,
        Err(Mismatch) => "{}".to_string(),
    }
}

/// Istio's `pruneProxyConfig` on a clone: fields equal to the built-in default are cleared.
pub fn prune_proxy_config(v: &Value) -> Value {
    let Value::Object(src) = v else {
        return v.clone();
    };
    let mut m = src.clone();
    remove_if(&mut m, "configPath", |x| x == defaults::CONFIG_PATH);
    remove_if(&mut m, "binaryPath", |x| x == defaults::BINARY_PATH);
    remove_if(&mut m, "serviceCluster", |x| x == defaults::SERVICE_CLUSTER);
    remove_if(&mut m, "discoveryAddress", |x| {
        x == defaults::DISCOVERY_ADDRESS
    });
    // MUTUAL_TLS is reset to NONE (enum 0), which jsonpb omits like an explicit NONE [quirk].
    remove_if(&mut m, "controlPlaneAuthPolicy", |x| {
        x == defaults::CONTROL_PLANE_AUTH_POLICY || x == "NONE" || x == 0 || x == 1
    });
    remove_duration_if(&mut m, "drainDuration", defaults::DRAIN_DURATION_SECS);
    remove_duration_if(
        &mut m,
        "terminationDrainDuration",
        defaults::TERMINATION_DRAIN_DURATION_SECS,
    );
    remove_if(&mut m, "proxyAdminPort", |x| {
        x == defaults::PROXY_ADMIN_PORT
    });
    remove_if(&mut m, "statNameLength", |x| {
        x == defaults::STAT_NAME_LENGTH
    });
    remove_if(&mut m, "statusPort", |x| x == defaults::STATUS_PORT);
    remove_if(&mut m, "proxyMetadata", |x| {
        x.as_object().is_some_and(Map::is_empty)
    });
    Value::Object(m)
}

fn remove_if(m: &mut Map<String, Value>, key: &str, pred: impl Fn(&Value) -> bool) {
    if m.get(key).is_some_and(pred) {
        m.remove(key);
    }
}

fn remove_duration_if(m: &mut Map<String, Value>, key: &str, secs: i64) {
    let default = Duration::from_secs(secs);
    remove_if(m, key, |x| {
        x.as_str().and_then(|s| parse_go_duration(s).ok()) == Some(default)
    });
}

/// Write message `msg` in declaration order, skipping unset/zero fields.
fn write_message(out: &mut String, msg: &str, v: &Value) -> Enc<()> {
    let desc = schema::proto().message(msg).ok_or(Mismatch)?;
    let obj = v.as_object().ok_or(Mismatch)?;
    if obj.keys().any(|k| desc.field_by_json(k).is_none()) {
        return Err(Mismatch);
    }
    out.push('{');
    let mut first = true;
    for f in &desc.fields {
        let Some(val) = obj.get(&f.json) else {
            continue;
        };
        if val.is_null() && f.ty != "google.protobuf.Value" || decode::is_zero(f, val) {
            continue;
        }
        if !first {
            out.push(',');
        }
        first = false;
        gojson::write_str(out, &f.json);
        out.push(':');
        write_field(out, f, val)?;
    }
    out.push('}');
    Ok(())
}

fn write_field(out: &mut String, f: &ProtoField, v: &Value) -> Enc<()> {
    if f.type_kind == ProtoKind::Map {
        let obj = v.as_object().ok_or(Mismatch)?;
        let ty = f.map_value.as_deref().ok_or(Mismatch)?;
        let kind = f.map_value_kind.unwrap_or(ProtoKind::Scalar);
        let mut keys: Vec<&String> = obj.keys().collect();
        keys.sort();
        out.push('{');
        for (i, k) in keys.into_iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            gojson::write_str(out, k);
            out.push(':');
            write_single(out, ty, kind, &obj[k])?;
        }
        out.push('}');
        return Ok(());
    }
    if f.repeated {
        let items = v.as_array().ok_or(Mismatch)?;
        out.push('[');
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            write_single(out, &f.ty, f.type_kind, item)?;
        }
        out.push(']');
        return Ok(());
    }
    write_single(out, &f.ty, f.type_kind, v)
}

fn write_single(out: &mut String, ty: &str, kind: ProtoKind, v: &Value) -> Enc<()> {
    match kind {
        ProtoKind::Enum => write_enum(out, ty, v),
        ProtoKind::Message => write_wkt_or_message(out, ty, v),
        _ => write_scalar(out, ty, v),
    }
}

fn write_enum(out: &mut String, ty: &str, v: &Value) -> Enc<()> {
    let e = schema::proto().enumeration(ty).ok_or(Mismatch)?;
    match v {
        Value::String(s) if e.number_of(s).is_some() => gojson::write_str(out, s),
        Value::Number(n) => {
            let num = n
                .as_i64()
                .and_then(|x| i32::try_from(x).ok())
                .ok_or(Mismatch)?;
            match e.name_of(num) {
                Some(name) => gojson::write_str(out, name),
                None => out.push_str(&num.to_string()),
            }
        }
        _ => return Err(Mismatch),
    }
    Ok(())
}

fn write_wkt_or_message(out: &mut String, ty: &str, v: &Value) -> Enc<()> {
    match ty {
        "google.protobuf.Duration" => {
            let d = v
                .as_str()
                .and_then(|s| parse_go_duration(s).ok())
                .ok_or(Mismatch)?;
            gojson::write_str(out, &d.to_jsonpb());
            Ok(())
        }
        "google.protobuf.BoolValue" => write_scalar(out, "bool", v),
        "google.protobuf.Int32Value" => write_scalar(out, "int32", v),
        "google.protobuf.UInt32Value" => write_scalar(out, "uint32", v),
        "google.protobuf.Int64Value" => write_scalar(out, "int64", v),
        "google.protobuf.UInt64Value" => write_scalar(out, "uint64", v),
        "google.protobuf.FloatValue" | "google.protobuf.DoubleValue" => {
            write_scalar(out, "double", v)
        }
        "google.protobuf.StringValue" => write_scalar(out, "string", v),
        "google.protobuf.Struct" | "google.protobuf.Value" | "google.protobuf.ListValue" => {
            out.push_str(&gojson::to_string_sorted(v));
            Ok(())
        }
        _ => write_message(out, ty, v),
    }
}

fn write_scalar(out: &mut String, ty: &str, v: &Value) -> Enc<()> {
    match (ty, v) {
        ("string" | "bytes", Value::String(s)) => gojson::write_str(out, s),
        ("bool", Value::Bool(b)) => out.push_str(if *b { "true" } else { "false" }),
        ("double" | "float", Value::Number(n)) => {
            out.push_str(&gojson::format_float(n.as_f64().ok_or(Mismatch)?))
        }
        ("double" | "float", Value::String(s))
            if matches!(s.as_str(), "NaN" | "Infinity" | "-Infinity") =>
        {
            gojson::write_str(out, s)
        }
        ("int64" | "uint64" | "sint64" | "fixed64" | "sfixed64", Value::Number(n)) => {
            if !(n.is_i64() || n.is_u64()) {
                return Err(Mismatch);
            }
            out.push('"');
            out.push_str(&n.to_string());
            out.push('"');
        }
        (_, Value::Number(n)) if n.is_i64() || n.is_u64() => out.push_str(&n.to_string()),
        _ => return Err(Mismatch),
    }
    Ok(())
}
