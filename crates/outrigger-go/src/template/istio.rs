//! Istio's template functions (its `InjectionFuncmap`, which overrides Sprig's `indent`,
//! `contains`, `env` and `omit`): `toJSON`, `fromJSON`, `toYaml`, `strdict`, `excludeInboundPort`,
//! `appendMultusNetwork`, `otelResourceAttributes`, ...

use std::collections::BTreeMap;
use std::rc::Rc;

use serde_json::Value;

use super::builtins::as_i;
use super::list::GoList;
use super::signature::{register, Table, P};
use super::value;
use super::value::{check_size, duration_parts, go_unmarshal, str_of, V};
use crate::go::quote::format_duration;
use crate::json::lookup as jsonmap;

pub fn register_istio(m: &mut Table) {
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
    register(m, "kubevirtInterfaces", &[Str], None, |a| Ok(a.remove(0)));
    register(m, "excludeInterfaces", &[Str], None, |a| Ok(a.remove(0)));
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
    register(m, "valueOrDefault", &[Any, Any], None, |a| {
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
    // Istio's `protoToJSON`: executed by [`call_proto_json`] with the render's encoder
    // ([`super::TemplateData::proto_json`]), whose rules are the caller's.
    register(m, "protoToJSON", &[Proto], None, needs_proto_json);
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
        for x in a.iter() {
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
        for x in a.iter() {
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
        |a| Ok(V::string(otel_resource_attributes(a))),
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
        V::K8s { ty, json, .. } => match value::k8s_go_value(ty, *json) {
            Ok(g) => crate::go::json::to_string(&g),
            Err(_) => "{}".into(),
        },
        V::K8sSlice(f, s) => {
            let ty = f.elem.as_deref().unwrap_or("");
            match s {
                None => "null".into(),
                Some(items) => {
                    let mut out = Vec::new();
                    for j in items.iter() {
                        match value::k8s_go_value(ty, Some(j)) {
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
        V::K8s { ty, json, .. } => match value::k8s_go_value(ty, *json) {
            Ok(g) => g,
            Err(_) => return String::new(),
        },
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
                Some(V::List(GoList::new(out)))
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

/// `protoToJSON` over `proto_json` (the render's encoder of a protobuf message, named by its full
/// name, from its canonical proto-JSON); `None` for every other name. A message that is not set
/// is `{}`, as in Istio.
pub fn call_proto_json<'a>(
    name: &str,
    proto_json: fn(&str, &Value) -> String,
    args: &[V<'a>],
) -> Option<Result<V<'a>, String>> {
    (name == "protoToJSON").then(|| {
        Ok(V::string(match args.first() {
            Some(V::Proto {
                name,
                json: Some(j),
                ..
            }) => proto_json(name, j),
            _ => "{}".into(),
        }))
    })
}

/// The table's entry for `protoToJSON`: the executor calls [`call_proto_json`] instead.
fn needs_proto_json<'a>(_: &mut Vec<V<'a>>) -> Result<V<'a>, String> {
    Err("needs the render's protobuf encoder".into())
}

/// The table's entry for `env` and `expandenv`: the executor calls `funcs::call_env` instead.
fn needs_env<'a>(_: &mut Vec<V<'a>>) -> Result<V<'a>, String> {
    Err("needs the render's environment".into())
}
