//! Istio mesh and proxy configuration as canonical proto-JSON trees.
//!
//! Canonical form: JSON object with proto JSON names (camelCase), enums as names, Durations as
//! jsonpb strings (`"45s"`), wrappers as bare values, int64 as JSON numbers, maps as objects,
//! oneof members as their own key, `Struct`/`Value` as plain JSON; unset (proto3 zero) fields
//! absent; keys in proto declaration order. Provides:
//! defaults, `ApplyMeshConfig`, `ApplyProxyConfig` merge semantics, legacy-jsonpb `protoToJSON`.

mod decode;
mod defaults;
mod encode;
mod merge;
mod validate_pc;

use serde_json::Value;

use crate::go::multierror::format_multierror;
use crate::kube::schema::{MESH_CONFIG, PROXY_CONFIG};
use crate::yaml::YamlError;

pub use decode::Unknown;
pub use validate_pc::{
    mesh_config_errors, proxy_config_errors, validate_mesh_config, validate_proxy_address,
    validate_proxy_config,
};

/// Why a mesh or proxy config could not be decoded, merged or validated. Messages are istiod's
/// (golang/protobuf jsonpb and Istio's validation).
///
/// At most a `String` wide (the decoding errors with a field path are boxed in
/// [`MeshError::Decode`]): results travel through the recursion of message decoding.
#[derive(Debug, thiserror::Error)]
pub enum MeshError {
    /// A value that does not decode as its message (unknown field, wrong type, ...).
    #[error(transparent)]
    Decode(Box<DecodeError>),
    /// A message type the tables do not have.
    #[error("unknown message type {0}")]
    UnknownMessage(String),
    /// `null` inside a repeated field.
    #[error("{0}: null list element")]
    NullListElement(String),
    /// `null` as a map value.
    #[error("{0}: null map value")]
    NullMapValue(String),
    /// A mesh or proxy config text that is not YAML. On its own (a mesh config text) it
    /// converts into the crate-wide sum as its YAML error (`Error::Yaml`).
    #[error(transparent)]
    Yaml(Box<YamlError>),
    /// A conversion error, with Go's `multierror.Prefix(err, "failed to convert to proto.")`.
    #[error("failed to convert to proto. {0}")]
    ToProto(#[source] Box<MeshError>),
    /// A `proxy.istio.io/config` text or overlay that could not be applied.
    #[error("could not parse proxy config: {0}")]
    ProxyConfig(#[source] Box<MeshError>),
    /// ProxyConfig validation failures (Istio's multierror text).
    #[error("{}", format_multierror(.0))]
    InvalidProxyConfig(Vec<String>),
    /// MeshConfig validation failures (Istio's multierror text).
    #[error("{}", format_multierror(.0))]
    InvalidMeshConfig(Vec<String>),
}

impl From<DecodeError> for MeshError {
    fn from(e: DecodeError) -> MeshError {
        MeshError::Decode(Box::new(e))
    }
}

impl From<YamlError> for MeshError {
    fn from(e: YamlError) -> MeshError {
        MeshError::Yaml(Box::new(e))
    }
}

/// A value that does not decode as its message, with the field path ([`MeshError::Decode`]).
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// A field the message does not have (refused when decoding strictly).
    #[error("{}unknown field {key:?} in {message}", decode::prefix(.path))]
    UnknownField {
        /// Path of the enclosing message (empty at the top).
        path: String,
        /// The unknown key.
        key: String,
        /// Fully qualified message name.
        message: String,
    },
    /// Two members of one oneof are set.
    #[error("{path}: oneof {oneof} in {message} is already set")]
    OneofAlreadySet {
        /// Path of the second member.
        path: String,
        /// The oneof's name.
        oneof: String,
        /// Fully qualified message name.
        message: String,
    },
    /// A value of the wrong JSON type.
    #[error("{}{expected}, got {got}", decode::prefix(.path))]
    WrongType {
        /// Field path (empty at the top).
        path: String,
        /// What was expected (`expected a map`, `expected a Duration string`, ...).
        expected: String,
        /// The value as Go's JSON encoder writes it, cut to 80 characters.
        got: String,
    },
    /// A map key that does not parse as the key type.
    #[error("{path}: invalid {key_type} map key")]
    MapKey {
        /// Path of the map entry.
        path: String,
        /// The proto key type (`int32`, `bool`, ...).
        key_type: String,
    },
    /// A Duration string Go's `time.ParseDuration` refuses.
    #[error("{}bad Duration: {reason}", decode::prefix(.path))]
    Duration {
        /// Field path.
        path: String,
        /// Go's error.
        reason: crate::go::duration::DurationError,
    },
    /// An enum type the tables do not have.
    #[error("{path}: unknown enum type {ty}")]
    UnknownEnum {
        /// Field path.
        path: String,
        /// Fully qualified enum name.
        ty: String,
    },
    /// A name that is not a value of the enum.
    #[error("{}unknown value {value:?} for enum {ty}", decode::prefix(.path))]
    UnknownEnumValue {
        /// Field path.
        path: String,
        /// The name given.
        value: String,
        /// Fully qualified enum name.
        ty: String,
    },
    /// A document or field that must be an object is not.
    #[error("{what}: expected an object, got {got}")]
    NotAnObject {
        /// What was being read.
        what: String,
        /// The value as Go's JSON encoder writes it.
        got: String,
    },
}

/// Results of the mesh engine: [`MeshError`] unless said otherwise.
type Result<T, E = MeshError> = std::result::Result<T, E>;

/// `mesh.DefaultMeshConfig()` in canonical form.
pub fn default_mesh_config() -> Value {
    to_canonical(MESH_CONFIG, &defaults::mesh_config())
        .expect("built-in default MeshConfig is valid")
}

/// `mesh.DefaultProxyConfig()` in canonical form.
pub fn default_proxy_config() -> Value {
    to_canonical(PROXY_CONFIG, &defaults::proxy_config())
        .expect("built-in default ProxyConfig is valid")
}

/// Decode a JSON tree (e.g. parsed YAML) as message `msg` (fully qualified) and normalise it to
/// the canonical form. Unknown fields are errors (`unknown field "x" in <msg>`); type errors name
/// the field path.
pub fn to_canonical(msg: &str, json: &Value) -> Result<Value> {
    decode_canonical(msg, json, Unknown::Reject)
}

/// Like [`to_canonical`], choosing how unknown fields are treated.
pub fn decode_canonical(msg: &str, json: &Value, unknown: Unknown) -> Result<Value> {
    let mut v = decode::decode_message(msg, json, "", unknown)?;
    decode::normalize(msg, &mut v);
    Ok(v)
}

/// Apply mesh config YAML (the `istio` ConfigMap's `mesh` key) over `base`.
pub fn apply_mesh_config(yaml: &str, base: &Value) -> Result<Value> {
    let tree = crate::yaml::from_str(yaml)?;
    apply_mesh_config_value(&tree, base)
}

/// [`apply_mesh_config`] on an already parsed tree (Istio's `ApplyMeshConfig`): top-level fields
/// replace; `defaultConfig` merges per field over the base's (proxyMetadata unioned);
/// `defaultProviders` merges per field; `extensionProviders` merge by name;
/// `trustDomainAliases` become the sorted union.
pub fn apply_mesh_config_value(overlay: &Value, base: &Value) -> Result<Value> {
    merge::apply_mesh(overlay, base)
}

/// Apply a `proxy.istio.io/config` annotation (YAML ProxyConfig) onto `mesh.defaultConfig`,
/// returning the new mesh config.
pub fn apply_proxy_config(yaml: &str, mesh: &Value) -> Result<Value> {
    let tree = crate::yaml::from_str(yaml)
        .map_err(|e| MeshError::ProxyConfig(Box::new(MeshError::from(e))))?;
    apply_proxy_config_value(&tree, mesh)
}

/// [`apply_proxy_config`] on an already parsed tree.
pub fn apply_proxy_config_value(overlay: &Value, mesh: &Value) -> Result<Value> {
    let mut out = mesh.clone();
    let base = mesh.get("defaultConfig").cloned().unwrap_or_else(empty);
    let pc = merge_proxy_config(overlay, &base)?;
    if let Value::Object(m) = &mut out {
        m.insert("defaultConfig".into(), pc);
        merge::order_fields(MESH_CONFIG, m);
    }
    Ok(out)
}

/// The webhook's effective ProxyConfig (Istio's `EffectiveProxyConfig` without ProxyConfig
/// resources): the built-in
/// default ProxyConfig, then `mesh.defaultConfig`, then the pod's `proxy.istio.io/config`
/// annotation, each layer decoded on its own so its zero values cannot override. An annotation
/// that does not parse is ignored (annotation validation rejects the pod separately).
pub fn effective_proxy_config(mesh: &Value, annotation: Option<&str>) -> Value {
    let tree = annotation.and_then(|a| crate::yaml::from_str(a).ok());
    effective_proxy_config_value(mesh, tree.as_ref())
}

/// [`effective_proxy_config`] with the annotation already parsed.
pub fn effective_proxy_config_value(mesh: &Value, annotation: Option<&Value>) -> Value {
    let layer = |overlay: &Value, base: &Value| {
        decode_canonical(PROXY_CONFIG, overlay, Unknown::Ignore)
            .and_then(|o| merge::merge_proxy_config(&o, base))
            .ok()
    };
    let default = default_proxy_config();
    let mut pc = default.clone();
    if let Some(mesh_pc) = mesh.get("defaultConfig").filter(|v| v.is_object()) {
        pc = layer(mesh_pc, &default).unwrap_or(pc);
    }
    if let Some(a) = annotation {
        let annotation_pc = decode::decode_message(PROXY_CONFIG, a, "", Unknown::Reject)
            .or_else(|_| decode::decode_message(PROXY_CONFIG, a, "", Unknown::Ignore));
        if let Ok(a) = annotation_pc {
            pc = layer(&a, &pc).unwrap_or(pc);
        }
    }
    pc
}

/// Istio's `MergeProxyConfig`: apply `overlay` onto `base` with protobuf-JSON merge semantics
/// (present fields replace, `proxyMetadata` merged key by key, unset `proxyHeaders` sub-fields
/// restored, `null` a no-op). Errors read `could not parse proxy config: <err>`.
pub fn merge_proxy_config(overlay: &Value, base: &Value) -> Result<Value> {
    merge::merge_proxy_config(overlay, base).map_err(|e| MeshError::ProxyConfig(Box::new(e)))
}

/// Istio's `protomarshal.ApplyYAML(annotation, DefaultProxyConfig())` as used by annotation
/// validation: the decoded fields replace the built-in defaults (no mesh config involved).
pub fn apply_onto_default_proxy_config(overlay: &Value) -> Result<Value> {
    let mut out = default_proxy_config();
    if overlay.is_null() {
        return Ok(out);
    }
    let decoded = merge::decode_lenient(PROXY_CONFIG, overlay)?;
    if let (Value::Object(base), Value::Object(over)) = (&mut out, &decoded) {
        merge::replace_fields(PROXY_CONFIG, base, over);
    }
    decode::normalize(PROXY_CONFIG, &mut out);
    Ok(out)
}

/// Legacy jsonpb encoding of message `msg` (fully qualified); `ProxyConfig` is pruned of defaults.
/// A value that does not fit the message yields `{}`, as Istio's `protoToJSON` does on error.
pub fn proto_to_json(msg: &str, v: &Value) -> String {
    encode::proto_to_json(msg, v)
}

/// `InboundTrafficPolicyMode` template field: `localhost` when the mesh's
/// `inboundTrafficPolicy.mode` is `LOCALHOST`, else `passthrough`.
pub fn inbound_traffic_policy_mode(mesh: &Value) -> &'static str {
    let mode = crate::json::lookup::path(mesh, &["inboundTrafficPolicy", "mode"]);
    if mode.and_then(Value::as_str) == Some("LOCALHOST") {
        "localhost"
    } else {
        "passthrough"
    }
}

/// The mesh's `defaultConfig.statusPort` (0 when unset): the port the agent serves health,
/// probes and merged metrics on. The mesh is in canonical form (an int32 is a JSON number).
pub fn default_status_port(mesh: &Value) -> i64 {
    crate::json::lookup::path(mesh, &["defaultConfig", "statusPort"])
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

fn empty() -> Value {
    Value::Object(serde_json::Map::new())
}

#[cfg(test)]
mod tests;
