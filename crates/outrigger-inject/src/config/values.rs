//! The typed model of Istio's injector values (the `values` key of the `istio-sidecar-injector`
//! ConfigMap), after the operator's `Values` protobuf message.
//!
//! istiod decodes the values twice: into `map[string]any` for the templates, and into
//! the typed `Values` message with protobuf-JSON rules (unknown fields allowed, wrong types
//! refused); a decoding error fails the load and the last good configuration stays in force.
//! outrigger keeps the generic tree for the templates and checks it against [`model`], a table of
//! the messages, fields and types of `Values` that templates and the pipeline read, so that a
//! document such as `global: 42` is refused at load instead of failing every injection later.
//!
//! Decoding rules (protobuf JSON, as istiod applies them):
//! * a field is found by its proto name or its JSON (lowerCamelCase) name;
//! * fields not in the model are accepted and ignored;
//! * `null` means "unset" for every field, and for map entries;
//! * strings must be JSON strings, booleans JSON booleans; integers may be JSON numbers with an
//!   integral value or strings holding one (unsigned ones non-negative); floats any number;
//! * messages, maps and `Struct`s must be JSON objects, repeated fields JSON arrays;
//! * `google.protobuf.Value` fields accept anything.

use serde_json::Value;

/// The type of a field of the values model.
#[derive(Debug, Clone, Copy)]
pub enum Ty {
    /// `google.protobuf.Value`: anything.
    Any,
    /// `string`.
    Str,
    /// `bool` or `google.protobuf.BoolValue`.
    Bool,
    /// `int32`/`int64` (or their wrappers).
    Int,
    /// `uint32`/`uint64` (or their wrappers).
    Uint,
    /// `float`/`double`.
    Float,
    /// `google.protobuf.Struct` or a Kubernetes object kept as one: any JSON object.
    Struct,
    /// `map<string, string>`.
    StrMap,
    /// `repeated` of the inner type.
    List(&'static Ty),
    /// A message with these fields (proto names).
    Msg(&'static [Field]),
}

/// One field of a message of the model.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    /// The proto field name (the JSON name is derived from it).
    pub name: &'static str,
    /// Its type.
    pub ty: Ty,
}

const fn f(name: &'static str, ty: Ty) -> Field {
    Field { name, ty }
}

/// A wrong type in the values document, with the path of the offending field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: expected {expected}, got {got}")]
pub struct ValuesError {
    /// Dotted path of the field as written in the document (`global.proxy.resources`,
    /// `global.imagePullSecrets[0]`).
    pub path: String,
    /// What the model expects (`a map`, `a string`, ...).
    pub expected: &'static str,
    /// What the document holds: a scalar as JSON (`42`, `"x"`), else `a map` or `a list`.
    pub got: String,
}

/// `Resources`: `map<string,string> limits, requests`.
const RESOURCES: Ty = Ty::Msg(&[f("limits", Ty::StrMap), f("requests", Ty::StrMap)]);

const LOGGING: Ty = Ty::Msg(&[f("level", Ty::Str)]);

const CNI_USAGE: Ty = Ty::Msg(&[
    f("enabled", Ty::Bool),
    f("chained", Ty::Bool),
    f("provider", Ty::Str),
]);

const STR_LIST: Ty = Ty::List(&Ty::Str);
const STRUCT_LIST: Ty = Ty::List(&Ty::Struct);

/// `ProxyConfig` of the values (`global.proxy`).
const PROXY: Ty = Ty::Msg(&[
    f("autoInject", Ty::Str),
    f("clusterDomain", Ty::Str),
    f("componentLogLevel", Ty::Str),
    f("concurrency", Ty::Uint),
    f("dnsRefreshRate", Ty::Str),
    f("enableCoreDump", Ty::Bool),
    f("excludeInboundPorts", Ty::Str),
    f("excludeIPRanges", Ty::Str),
    f("excludeOutboundPorts", Ty::Str),
    f("excludeInterfaces", Ty::Str),
    f("holdApplicationUntilProxyStarts", Ty::Bool),
    f("image", Ty::Str),
    f("includeInboundPorts", Ty::Str),
    f("includeIPRanges", Ty::Str),
    f("includeOutboundPorts", Ty::Str),
    f("lifecycle", Ty::Struct),
    f("logLevel", Ty::Str),
    f("outlierLogPath", Ty::Str),
    f("privileged", Ty::Bool),
    f("readinessFailureThreshold", Ty::Uint),
    f("readinessInitialDelaySeconds", Ty::Uint),
    f("readinessPeriodSeconds", Ty::Uint),
    f("resources", RESOURCES),
    f("seccompProfile", Ty::Struct),
    f(
        "startupProbe",
        Ty::Msg(&[f("enabled", Ty::Bool), f("failureThreshold", Ty::Uint)]),
    ),
    f("statusPort", Ty::Uint),
    f("tracer", Ty::Any),
]);

/// `ProxyInitConfig` (`global.proxy_init`).
const PROXY_INIT: Ty = Ty::Msg(&[
    f("image", Ty::Str),
    f("resources", RESOURCES),
    f("forceApplyIptables", Ty::Bool),
]);

/// `GlobalConfig` (`global`).
const GLOBAL: Ty = Ty::Msg(&[
    f("arch", Ty::Struct),
    f("autoscalingv2API", Ty::Bool),
    f("caAddress", Ty::Str),
    f("caName", Ty::Str),
    f("certSigners", STR_LIST),
    f("configCluster", Ty::Bool),
    f("configValidation", Ty::Bool),
    f("defaultNodeSelector", Ty::Struct),
    f(
        "defaultPodDisruptionBudget",
        Ty::Msg(&[f("enabled", Ty::Bool)]),
    ),
    f(
        "defaultResources",
        Ty::Msg(&[f(
            "requests",
            Ty::Msg(&[f("cpu", Ty::Str), f("memory", Ty::Str)]),
        )]),
    ),
    f("defaultTolerations", STRUCT_LIST),
    f("externalIstiod", Ty::Bool),
    f("hub", Ty::Str),
    f("imagePullPolicy", Ty::Str),
    f("imagePullSecrets", STR_LIST),
    f("ipFamilies", STR_LIST),
    f("ipFamilyPolicy", Ty::Str),
    f("istioNamespace", Ty::Str),
    f("istiod", Ty::Msg(&[f("enableAnalysis", Ty::Bool)])),
    f("jwtPolicy", Ty::Str),
    f("logAsJson", Ty::Bool),
    f("logging", LOGGING),
    f("meshID", Ty::Str),
    f("meshNetworks", Ty::Struct),
    f("mountMtlsCerts", Ty::Bool),
    f(
        "multiCluster",
        Ty::Msg(&[
            f("enabled", Ty::Bool),
            f("clusterName", Ty::Str),
            f("globalDomainSuffix", Ty::Str),
            f("includeEnvoyFilter", Ty::Bool),
        ]),
    ),
    f("nativeNftables", Ty::Bool),
    f("network", Ty::Str),
    f("networkPolicy", Ty::Msg(&[f("enabled", Ty::Bool)])),
    f("omitSidecarInjectorConfigMap", Ty::Bool),
    f("operatorManageWebhooks", Ty::Bool),
    f("pilotCertProvider", Ty::Str),
    f("platform", Ty::Str),
    f("podDNSSearchNamespaces", STR_LIST),
    f("priorityClassName", Ty::Str),
    f("proxy", PROXY),
    f("proxy_init", PROXY_INIT),
    f("remotePilotAddress", Ty::Str),
    f("resourceScope", Ty::Str),
    f("revision", Ty::Str),
    f("sds", Ty::Msg(&[f("token", Ty::Struct)])),
    f("sts", Ty::Msg(&[f("servicePort", Ty::Uint)])),
    f("tag", Ty::Any),
    f("tracer", Ty::Struct),
    f("trustBundleName", Ty::Str),
    f("variant", Ty::Str),
    f(
        "waypoint",
        Ty::Msg(&[
            f("affinity", Ty::Struct),
            f("nodeSelector", Ty::Struct),
            f("resources", Ty::Struct),
            f("tolerations", STRUCT_LIST),
            f("topologySpreadConstraints", STRUCT_LIST),
        ]),
    ),
]);

/// `SidecarInjectorConfig` (`sidecarInjectorWebhook`).
const SIDECAR_INJECTOR: Ty = Ty::Msg(&[
    f("alwaysInjectSelector", STRUCT_LIST),
    f("defaultTemplates", STR_LIST),
    f("enableNamespacesByDefault", Ty::Bool),
    f("injectedAnnotations", Ty::Struct),
    f("neverInjectSelector", STRUCT_LIST),
    f("reinvocationPolicy", Ty::Str),
    f("rewriteAppHTTPProbe", Ty::Bool),
    f("templates", Ty::Struct),
    f("useLegacySelectors", Ty::Bool),
]);

/// `PilotConfig` (`pilot`; the chart passes `cni` and `env`).
const PILOT: Ty = Ty::Msg(&[
    f("cni", CNI_USAGE),
    f("enabled", Ty::Bool),
    f("env", Ty::Struct),
    f("hub", Ty::Str),
    f("image", Ty::Str),
    f("nodeSelector", Ty::Struct),
    f("podAnnotations", Ty::Struct),
    f("podLabels", Ty::Struct),
    f("replicaCount", Ty::Uint),
    f("resources", RESOURCES),
    f("tag", Ty::Any),
    f("traceSampling", Ty::Float),
    f("variant", Ty::Str),
]);

/// `CNIConfig` (`cni`).
const CNI: Ty = Ty::Msg(&[
    f("affinity", Ty::Struct),
    f("chained", Ty::Bool),
    f("cniBinDir", Ty::Str),
    f("cniConfDir", Ty::Str),
    f("cniConfFileName", Ty::Str),
    f("cniNetnsDir", Ty::Str),
    f("enabled", Ty::Bool),
    f("excludeNamespaces", STR_LIST),
    f("hub", Ty::Str),
    f("image", Ty::Str),
    f("logging", LOGGING),
    f("podAnnotations", Ty::Struct),
    f("privileged", Ty::Bool),
    f("provider", Ty::Str),
    f("resources", RESOURCES),
    f("seccompProfile", Ty::Struct),
    f("tag", Ty::Any),
    f("variant", Ty::Str),
]);

/// `Values`, the root of the document.
const VALUES: Ty = Ty::Msg(&[
    f("base", Ty::Struct),
    f("cni", CNI),
    f("compatibilityVersion", Ty::Str),
    f("defaultRevision", Ty::Str),
    f("experimental", Ty::Struct),
    f(
        "gateways",
        Ty::Msg(&[
            f("securityContext", Ty::Struct),
            f("seccompProfile", Ty::Struct),
        ]),
    ),
    f("global", GLOBAL),
    f("istio_cni", CNI_USAGE),
    f(
        "istiodRemote",
        Ty::Msg(&[
            f("enabled", Ty::Bool),
            f("injectionCABundle", Ty::Str),
            f("injectionPath", Ty::Str),
            f("injectionURL", Ty::Str),
        ]),
    ),
    f("meshConfig", Ty::Struct),
    f("ownerName", Ty::Str),
    f("pilot", PILOT),
    f("profile", Ty::Str),
    f("revision", Ty::Str),
    f("revisionTags", STR_LIST),
    f("sidecarInjectorWebhook", SIDECAR_INJECTOR),
    f("telemetry", Ty::Struct),
    f("ztunnel", Ty::Any),
]);

/// The model of the whole values document.
pub fn model() -> &'static Ty {
    &VALUES
}

/// Check a parsed values document against the model ([`model`]); the first wrong type found is
/// the error.
pub fn check(values: &Value) -> Result<(), ValuesError> {
    let mut path = String::new();
    check_at(&VALUES, values, &mut path)
}

/// The JSON name protobuf derives from a proto field name (`proxy_init` → `proxyInit`).
fn json_name(proto: &str) -> Option<String> {
    if !proto.contains('_') {
        return None;
    }
    let mut out = String::with_capacity(proto.len());
    let mut upper = false;
    for c in proto.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    Some(out)
}

fn describe(v: &Value) -> String {
    match v {
        Value::Object(_) => "a map".to_string(),
        Value::Array(_) => "a list".to_string(),
        scalar => {
            let text = scalar.to_string();
            if text.chars().count() > 60 {
                let cut: String = text.chars().take(57).collect();
                format!("{cut}...")
            } else {
                text
            }
        }
    }
}

fn wrong(path: &str, expected: &'static str, got: &Value) -> ValuesError {
    ValuesError {
        path: if path.is_empty() {
            "values".to_string()
        } else {
            path.to_string()
        },
        expected,
        got: describe(got),
    }
}

/// Whether a JSON number (or, for protobuf JSON, a string) holds an integer (non-negative when
/// `unsigned`).
fn integral(v: &Value, unsigned: bool) -> bool {
    let n = match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|_| !s.trim().is_empty()),
        _ => None,
    };
    n.is_some_and(|x| x.is_finite() && x.fract() == 0.0 && (!unsigned || x >= 0.0))
}

fn check_at(ty: &Ty, v: &Value, path: &mut String) -> Result<(), ValuesError> {
    if v.is_null() {
        return Ok(());
    }
    match ty {
        Ty::Any => Ok(()),
        Ty::Str => match v {
            Value::String(_) => Ok(()),
            _ => Err(wrong(path, "a string", v)),
        },
        Ty::Bool => match v {
            Value::Bool(_) => Ok(()),
            _ => Err(wrong(path, "a boolean", v)),
        },
        Ty::Int => match integral(v, false) {
            true => Ok(()),
            false => Err(wrong(path, "an integer", v)),
        },
        Ty::Uint => match integral(v, true) {
            true => Ok(()),
            false => Err(wrong(path, "a non-negative integer", v)),
        },
        Ty::Float => match v {
            Value::Number(_) => Ok(()),
            Value::String(s) if s.trim().parse::<f64>().is_ok() => Ok(()),
            _ => Err(wrong(path, "a number", v)),
        },
        Ty::Struct => match v {
            Value::Object(_) => Ok(()),
            _ => Err(wrong(path, "a map", v)),
        },
        Ty::StrMap => {
            let Value::Object(m) = v else {
                return Err(wrong(path, "a map", v));
            };
            for (k, x) in m {
                let len = path.len();
                push_key(path, k);
                check_at(&Ty::Str, x, path)?;
                path.truncate(len);
            }
            Ok(())
        }
        Ty::List(inner) => {
            let Value::Array(items) = v else {
                return Err(wrong(path, "a list", v));
            };
            for (i, x) in items.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                check_at(inner, x, path)?;
                path.truncate(len);
            }
            Ok(())
        }
        Ty::Msg(fields) => {
            let Value::Object(m) = v else {
                return Err(wrong(path, "a map", v));
            };
            for field in fields.iter() {
                let alt = json_name(field.name);
                for (key, x) in m
                    .iter()
                    .filter(|(k, _)| *k == field.name || alt.as_deref() == Some(k.as_str()))
                {
                    let len = path.len();
                    push_key(path, key);
                    check_at(&field.ty, x, path)?;
                    path.truncate(len);
                }
            }
            Ok(())
        }
    }
}

fn push_key(path: &mut String, key: &str) {
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(key);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn err(v: Value) -> String {
        check(&v).expect_err("refused").to_string()
    }

    #[test]
    fn wrong_types_are_refused_with_their_path() {
        assert_eq!(err(json!({"global": 42})), "global: expected a map, got 42");
        assert_eq!(
            err(json!({"global": {"proxy": {"resources": "x"}}})),
            "global.proxy.resources: expected a map, got \"x\""
        );
        assert_eq!(
            err(json!({"global": {"imagePullSecrets": ["a", 1]}})),
            "global.imagePullSecrets[1]: expected a string, got 1"
        );
        assert_eq!(
            err(json!({"global": {"imagePullSecrets": "a"}})),
            "global.imagePullSecrets: expected a list, got \"a\""
        );
        assert_eq!(
            err(json!({"global": {"hub": {"a": 1}}})),
            "global.hub: expected a string, got a map"
        );
        assert_eq!(
            err(json!({"global": {"proxy": {"holdApplicationUntilProxyStarts": "true"}}})),
            "global.proxy.holdApplicationUntilProxyStarts: expected a boolean, got \"true\""
        );
        assert_eq!(
            err(json!({"global": {"proxy": {"statusPort": -1}}})),
            "global.proxy.statusPort: expected a non-negative integer, got -1"
        );
        assert_eq!(
            err(json!({"global": {"proxy": {"resources": {"limits": {"cpu": [1]}}}}})),
            "global.proxy.resources.limits.cpu: expected a string, got a list"
        );
        assert_eq!(
            err(json!({"sidecarInjectorWebhook": {"rewriteAppHTTPProbe": 1}})),
            "sidecarInjectorWebhook.rewriteAppHTTPProbe: expected a boolean, got 1"
        );
        assert_eq!(
            err(json!({"revision": 3})),
            "revision: expected a string, got 3"
        );
        assert_eq!(
            err(json!({"meshConfig": "x"})),
            "meshConfig: expected a map, got \"x\""
        );
        let long = "y".repeat(100);
        assert!(err(json!({"global": {"proxy": long}})).ends_with("yyy..."));
    }

    #[test]
    fn proto_and_json_names_are_both_checked() {
        assert_eq!(
            err(json!({"global": {"proxy_init": {"image": 5}}})),
            "global.proxy_init.image: expected a string, got 5"
        );
        assert_eq!(
            err(json!({"global": {"proxyInit": {"image": 5}}})),
            "global.proxyInit.image: expected a string, got 5"
        );
        assert_eq!(
            err(json!({"istioCni": {"enabled": "yes"}})),
            "istioCni.enabled: expected a boolean, got \"yes\""
        );
    }

    #[test]
    fn unknown_fields_nulls_and_protobuf_json_numbers_are_accepted() {
        for ok in [
            json!({}),
            json!({"global": null}),
            json!({"global": {"unknownField": [1, {"x": 2}], "proxy": {"somethingNew": 5}}}),
            json!({"nothingWeKnow": 42}),
            json!({"global": {"tag": 1.2, "proxy": {"statusPort": "15020", "concurrency": 2.0}}}),
            json!({"global": {"tag": {"odd": "but a google.protobuf.Value"}}}),
            json!({"global": {"proxy": {"resources": {"limits": {"cpu": null}}}}}),
            json!({"pilot": {"traceSampling": 1, "env": {"A": "b"}}}),
            json!({"ztunnel": "anything"}),
        ] {
            assert_eq!(check(&ok), Ok(()), "{ok}");
        }
        assert!(check(&json!({"global": {"proxy": {"statusPort": 1.5}}})).is_err());
        assert!(check(&json!({"global": {"proxy": {"statusPort": ""}}})).is_err());
    }

    #[test]
    fn json_names_follow_protobuf() {
        assert_eq!(json_name("proxy_init").as_deref(), Some("proxyInit"));
        assert_eq!(json_name("istio_cni").as_deref(), Some("istioCni"));
        assert_eq!(json_name("hub"), None);
    }

    #[test]
    fn the_embedded_default_fits_the_model() {
        let v: Value = serde_json::from_str(crate::config::defaults::VALUES).expect("JSON");
        assert_eq!(check(&v), Ok(()));
    }
}
