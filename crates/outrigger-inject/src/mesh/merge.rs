//! Istio's `ApplyMeshConfig` / `MergeProxyConfig` on canonical trees. jsonpb `Unmarshal` onto an
//! existing message replaces every present field wholesale (a oneof member clears its siblings);
//! decoding is strict, retried ignoring unknown fields (Istio's `protomarshal.ApplyJSON`).

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::decode::{self, Unknown};
use super::{DecodeError, MeshError, Result};
use crate::kube::schema::{MESH_CONFIG, PROXY_CONFIG};

const DEFAULT_PROVIDERS: &str = "istio.mesh.v1alpha1.MeshConfig.DefaultProviders";
const PROXY_HEADER_RESTORED: [&str; 5] = [
    "forwardedClientCert",
    "requestId",
    "attemptCount",
    "server",
    "envoyDebugHeaders",
];

/// Decode strictly, then retry ignoring unknown fields (type errors still fail).
pub fn decode_lenient(msg: &str, v: &Value) -> Result<Value> {
    decode::decode_message(msg, v, "", Unknown::Reject)
        .or_else(|_| decode::decode_message(msg, v, "", Unknown::Ignore))
}

/// Replace `base`'s fields by the present fields of the decoded `overlay` (message `msg`).
pub fn replace_fields(msg: &str, base: &mut Map<String, Value>, overlay: &Map<String, Value>) {
    let Ok(desc) = decode::message(msg) else {
        return;
    };
    for (key, val) in overlay {
        if let Some(oneof) = desc.field_by_json(key).and_then(|f| f.oneof.as_ref()) {
            for sibling in desc
                .fields
                .iter()
                .filter(|g| g.oneof.as_ref() == Some(oneof))
            {
                base.remove(&sibling.json);
            }
        }
        base.insert(key.clone(), val.clone());
    }
    order_fields(msg, base);
}

/// Reorder `obj`'s keys into the declaration order of `msg` (unknown keys last).
pub fn order_fields(msg: &str, obj: &mut Map<String, Value>) {
    let Ok(desc) = decode::message(msg) else {
        return;
    };
    let mut entries: Vec<(String, Value)> = std::mem::take(obj).into_iter().collect();
    entries.sort_by_key(|(k, _)| {
        desc.fields
            .iter()
            .position(|f| &f.json == k)
            .unwrap_or(usize::MAX)
    });
    obj.extend(entries);
}

fn as_object(v: &Value, what: &str) -> Result<Map<String, Value>> {
    match v {
        Value::Object(m) => Ok(m.clone()),
        Value::Null => Ok(Map::new()),
        other => Err(DecodeError::NotAnObject {
            what: what.to_string(),
            got: crate::go::json::to_string(other),
        }
        .into()),
    }
}

/// `MergeProxyConfig(overlay, base)` without the error prefix.
pub fn merge_proxy_config(overlay: &Value, base: &Value) -> Result<Value> {
    let mut out = as_object(base, "defaultConfig")?;
    if overlay.is_null() {
        return Ok(Value::Object(out));
    }
    let decoded = decode_lenient(PROXY_CONFIG, overlay)?;
    let Value::Object(over) = decoded else {
        return Ok(Value::Object(out));
    };
    let orig_metadata = out.get("proxyMetadata").cloned();
    let orig_headers = out.get("proxyHeaders").cloned();
    replace_fields(PROXY_CONFIG, &mut out, &over);
    merge_metadata(&mut out, orig_metadata);
    restore_proxy_headers(&mut out, orig_headers);
    let mut v = Value::Object(out);
    decode::normalize(PROXY_CONFIG, &mut v);
    Ok(v)
}

/// `proxyMetadata` = original map with the overlay's keys written over it.
fn merge_metadata(out: &mut Map<String, Value>, orig: Option<Value>) {
    let Some(Value::Object(mut merged)) = orig else {
        return;
    };
    if let Some(Value::Object(new)) = out.get("proxyMetadata") {
        for (k, v) in new {
            merged.insert(k.clone(), v.clone());
        }
    }
    out.insert("proxyMetadata".into(), Value::Object(merged));
    order_fields(PROXY_CONFIG, out);
}

/// Istio's `correctProxyHeaders`: sub-fields unset in the new `proxyHeaders` come back from the
/// previous value.
fn restore_proxy_headers(out: &mut Map<String, Value>, orig: Option<Value>) {
    let (Some(Value::Object(prev)), Some(Value::Object(new))) = (orig, out.get_mut("proxyHeaders"))
    else {
        return;
    };
    for key in PROXY_HEADER_RESTORED {
        let unset = match new.get(key) {
            None => true,
            Some(Value::String(s)) => key == "forwardedClientCert" && s == "UNDEFINED",
            Some(Value::Number(n)) => n.as_i64() == Some(0),
            _ => false,
        };
        if let (true, Some(old)) = (unset, prev.get(key)) {
            new.insert(key.to_string(), old.clone());
        }
    }
    order_fields("istio.mesh.v1alpha1.ProxyConfig.ProxyHeaders", new);
}

/// Istio's `ApplyMeshConfig(yaml, base)` on a parsed tree.
pub fn apply_mesh(overlay: &Value, base: &Value) -> Result<Value> {
    let prev = as_object(base, "mesh config")?;
    let raw = as_object(overlay, "mesh config")?;
    let empty = Value::Object(Map::new());
    let overlay = if overlay.is_null() { &empty } else { overlay };
    let decoded = decode_lenient(MESH_CONFIG, overlay).map_err(proto_prefix)?;
    let over = as_object(&decoded, "mesh config")?;
    let mut out = prev.clone();
    for key in [
        "defaultConfig",
        "defaultProviders",
        "extensionProviders",
        "trustDomainAliases",
    ] {
        out.remove(key);
    }
    replace_fields(MESH_CONFIG, &mut out, &over);

    let prev_pc = prev.get("defaultConfig").cloned().unwrap_or(Value::Null);
    let pc = match raw_field(&raw, "defaultConfig") {
        Some(pc_raw) => super::merge_proxy_config(pc_raw, &prev_pc)?,
        None => prev_pc,
    };
    set_or_remove(&mut out, "defaultConfig", pc);

    let prev_dp = prev.get("defaultProviders").cloned().unwrap_or(Value::Null);
    let dp = match raw_field(&raw, "defaultProviders") {
        Some(dp_raw) => apply_default_providers(dp_raw, &prev_dp)?,
        None => prev_dp,
    };
    set_or_remove(&mut out, "defaultProviders", dp);

    let providers = merge_extension_providers(
        prev.get("extensionProviders"),
        out.get("extensionProviders"),
    );
    set_or_remove(&mut out, "extensionProviders", providers);

    let aliases = union_sorted(
        prev.get("trustDomainAliases"),
        out.get("trustDomainAliases"),
    );
    set_or_remove(&mut out, "trustDomainAliases", aliases);

    order_fields(MESH_CONFIG, &mut out);
    let mut v = Value::Object(out);
    decode::normalize(MESH_CONFIG, &mut v);
    super::validate_mesh_config(&v)?;
    Ok(v)
}

/// Go's `multierror.Prefix(err, "failed to convert to proto.")` (prefix, space, error).
fn proto_prefix(e: MeshError) -> MeshError {
    MeshError::ToProto(Box::new(e))
}

/// A top-level field of the raw overlay, when present and not null. Istio's
/// `extractYamlField` looks up the JSON name only, so `default_config:` is dropped [quirk].
fn raw_field<'a>(raw: &'a Map<String, Value>, json: &str) -> Option<&'a Value> {
    raw.get(json).filter(|v| !v.is_null())
}

fn set_or_remove(out: &mut Map<String, Value>, key: &str, v: Value) {
    if v.is_null() {
        out.remove(key);
    } else {
        out.insert(key.to_string(), v);
    }
}

fn apply_default_providers(raw: &Value, prev: &Value) -> Result<Value> {
    let mut out = as_object(prev, "defaultProviders")?;
    let decoded = decode_lenient(DEFAULT_PROVIDERS, raw).map_err(proto_prefix)?;
    let over = as_object(&decoded, "defaultProviders")?;
    replace_fields(DEFAULT_PROVIDERS, &mut out, &over);
    Ok(Value::Object(out))
}

/// Providers of `new` replace same-named ones of `prev` in place; others are appended.
fn merge_extension_providers(prev: Option<&Value>, new: Option<&Value>) -> Value {
    let mut out: Vec<Value> = prev.and_then(Value::as_array).cloned().unwrap_or_default();
    for p in new.and_then(Value::as_array).into_iter().flatten() {
        let name = p.get("name");
        match out.iter().position(|q| q.get("name") == name) {
            Some(i) => out[i] = p.clone(),
            None => out.push(p.clone()),
        }
    }
    Value::Array(out)
}

fn union_sorted(a: Option<&Value>, b: Option<&Value>) -> Value {
    let set: BTreeSet<String> = [a, b]
        .into_iter()
        .flatten()
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    Value::Array(set.into_iter().map(Value::String).collect())
}
