//! The AdmissionReview wire format (`admission.k8s.io/v1` and `v1beta1`) as it arrives: a request
//! body decoded as the API server's decoder would (JSON, or YAML), and the pod inside it checked
//! for the Go types the webhook reads. The response is written by [`crate::respond`].

use serde_json::{Map, Value};

use crate::go::json as gojson;
use crate::json::lookup as jsonmap;
use crate::json::Scan;

/// `apiVersion` of the v1 AdmissionReview.
pub const ADMISSION_V1: &str = "admission.k8s.io/v1";

/// `apiVersion` of the v1beta1 AdmissionReview.
pub const ADMISSION_V1BETA1: &str = "admission.k8s.io/v1beta1";

/// `kind` of an AdmissionReview.
pub const ADMISSION_REVIEW: &str = "AdmissionReview";

/// AdmissionReview versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiVersion {
    /// `admission.k8s.io/v1`.
    V1,
    /// `admission.k8s.io/v1beta1`.
    V1beta1,
}

impl ApiVersion {
    /// The `apiVersion` string.
    pub fn as_str(self) -> &'static str {
        match self {
            ApiVersion::V1 => ADMISSION_V1,
            ApiVersion::V1beta1 => ADMISSION_V1BETA1,
        }
    }
}

/// A decoded review request: version, uid, namespace and the raw pod.
pub(crate) struct Request {
    pub(crate) version: ApiVersion,
    pub(crate) uid: String,
    pub(crate) namespace: String,
    pub(crate) object: Option<Value>,
    /// `request.dryRun`: the API server will not persist the object (side effects must not
    /// happen either).
    pub(crate) dry_run: bool,
}

/// Why a body is not a usable review.
pub(crate) struct Malformed {
    pub(crate) reason: &'static str,
    pub(crate) message: String,
    /// Known when the review decoded but its `request` was missing.
    pub(crate) version: Option<ApiVersion>,
}

impl Malformed {
    fn new(reason: &'static str, message: String) -> Malformed {
        Malformed {
            reason,
            message,
            version: None,
        }
    }
}

/// The longest `request.uid` accepted, in bytes: the API server sends a UUID (36 bytes).
pub const MAX_UID_BYTES: usize = 128;

/// Decode the body as an AdmissionReview (JSON, or YAML as the universal deserializer allows).
pub(crate) fn decode_review(body: &[u8]) -> Result<Request, Malformed> {
    decode_review_doc(parse_document(body)?, body)
}

/// [`decode_review`] of the document `doc` parsed from `body`.
pub(crate) fn decode_review_doc(doc: Value, body: &[u8]) -> Result<Request, Malformed> {
    let Value::Object(mut m) = doc else {
        return Err(Malformed::new(
            "decode_error",
            format!(
                "couldn't get version/kind; json parse error: expected an object, got {}",
                gojson::unmarshal_kind(&doc)
            ),
        ));
    };
    let api_version = string_field(&m, "apiVersion")?;
    let kind = string_field(&m, "kind")?;
    if kind.is_empty() {
        return Err(Malformed::new(
            "decode_error",
            format!("Object 'Kind' is missing in '{}'", snippet(body)),
        ));
    }
    let version = match (api_version.as_str(), kind.as_str()) {
        (ADMISSION_V1, ADMISSION_REVIEW) => ApiVersion::V1,
        (ADMISSION_V1BETA1, ADMISSION_REVIEW) => ApiVersion::V1beta1,
        ("v1", k) if CORE_KINDS.contains(&k) => {
            return Err(Malformed::new(
                "unsupported_type",
                format!("unsupported type :&TypeMeta{{Kind:{k},APIVersion:v1,}}"),
            ))
        }
        (v, k) => {
            return Err(Malformed::new(
                "decode_error",
                format!("no kind {k:?} is registered for version {v:?} in scheme \"pkg/runtime/scheme.go:100\""),
            ))
        }
    };
    let request = match m.scan_mut("request") {
        None | Some(Value::Null) => {
            return Err(Malformed {
                reason: "missing_request",
                message: format!("invalid {} {ADMISSION_REVIEW}: no request section", version.as_str()),
                version: Some(version),
            })
        }
        Some(Value::Object(r)) => r,
        Some(other) => {
            return Err(Malformed::new(
                "decode_error",
                format!(
                    "json: cannot unmarshal {} into Go struct field AdmissionReview.request of type AdmissionRequest",
                    gojson::unmarshal_kind(other)
                ),
            ))
        }
    };
    let uid = request_string(request, "uid", "types.UID")?;
    if uid.len() > MAX_UID_BYTES {
        // The answer repeats the UID: an oversized one is refused, not echoed.
        return Err(Malformed {
            reason: "uid_too_long",
            message: format!(
                "request.uid is {} bytes long, over the limit of {MAX_UID_BYTES} (the API server sends a 36-byte UID)",
                uid.len()
            ),
            version: Some(version),
        });
    }
    Ok(Request {
        version,
        uid,
        namespace: request_string(request, "namespace", "string")?,
        dry_run: request_bool(request, "dryRun")?,
        object: request.remove("object"),
    })
}

/// Kinds of the `core/v1` group the reference's scheme knows; decoding one of them is answered
/// with `unsupported type`.
const CORE_KINDS: &[&str] = &[
    "Pod",
    "PodList",
    "Namespace",
    "Node",
    "Service",
    "ConfigMap",
    "Secret",
    "Endpoints",
    "Event",
    "ServiceAccount",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "ReplicationController",
    "LimitRange",
    "ResourceQuota",
    "PodTemplate",
    "Binding",
    "Status",
    "List",
];

/// Bodies up to this size are parsed by `serde_json` itself, whose objects keep some spare
/// capacity (bounded at this size) and cost fewer instructions to build than exact ones; a UTF-8
/// body (what the API server sends) is read as text, validated once rather than string by
/// string. (Reading larger bodies as text too made `serde_json`'s reader of small ones costlier
/// as compiled: 1% more instructions for `env-400`.)
const COMPACT_FROM: usize = 64 * 1024;

pub(crate) fn parse_document(body: &[u8]) -> Result<Value, Malformed> {
    let parsed = if body.len() < COMPACT_FROM {
        parse_small(body)
    } else {
        crate::json::compact::from_slice(body)
    };
    match parsed {
        Ok(v) => Ok(v),
        Err(json_err) => {
            let looks_json = body
                .iter()
                .find(|b| !b.is_ascii_whitespace())
                .is_some_and(|b| matches!(b, b'{' | b'['));
            let yaml = std::str::from_utf8(body)
                .ok()
                .filter(|_| !looks_json)
                .map(crate::yaml::from_str);
            match yaml {
                Some(Ok(v @ Value::Object(_))) => Ok(v),
                _ => Err(Malformed::new(
                    "decode_error",
                    format!("couldn't get version/kind; json parse error: {json_err}"),
                )),
            }
        }
    }
}

/// `serde_json::from_slice` of `body`, read as text when it is UTF-8 (same values and errors).
fn parse_small(body: &[u8]) -> serde_json::Result<Value> {
    match std::str::from_utf8(body) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(body),
    }
}

fn string_field(m: &Map<String, Value>, key: &str) -> Result<String, Malformed> {
    match m.scan(key) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(Malformed::new(
            "decode_error",
            format!(
                "couldn't get version/kind; json parse error: json: cannot unmarshal {} into Go struct field .{key} of type string",
                gojson::unmarshal_kind(other)
            ),
        )),
    }
}

fn request_string(m: &Map<String, Value>, key: &str, go_type: &str) -> Result<String, Malformed> {
    match m.scan(key) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(Malformed::new(
            "decode_error",
            format!(
                "json: cannot unmarshal {} into Go struct field AdmissionRequest.request.{key} of type {go_type}",
                gojson::unmarshal_kind(other)
            ),
        )),
    }
}

/// A `*bool` field of `AdmissionRequest` (absent or `null`: false), refused with Go's
/// `encoding/json` message when it holds another type.
fn request_bool(m: &Map<String, Value>, key: &str) -> Result<bool, Malformed> {
    match m.scan(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(Malformed::new(
            "decode_error",
            format!(
                "json: cannot unmarshal {} into Go struct field AdmissionRequest.request.{key} of type bool",
                gojson::unmarshal_kind(other)
            ),
        )),
    }
}

fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    text.chars().take(256).collect()
}

/// The raw object must decode as a Pod. `null` or absent decode as an empty pod
/// only when present as `null`; an absent object is Go's `unexpected end of JSON input`.
pub(crate) fn decode_pod(object: Option<Value>) -> Result<Value, String> {
    let pod = match object {
        None => return Err("unexpected end of JSON input".to_string()),
        Some(Value::Null) => Value::Object(Map::new()),
        Some(v @ Value::Object(_)) => v,
        Some(other) => {
            return Err(format!(
                "json: cannot unmarshal {} into Go value of type v1.Pod",
                gojson::unmarshal_kind(&other)
            ))
        }
    };
    check_shape(&pod)?;
    Ok(pod)
}

/// The parts of the pod the webhook reads before the pipeline must have their Go types.
fn check_shape(pod: &Value) -> Result<(), String> {
    let field =
        |ptr: &str, go_field: &str, go_type: &str, want_object: bool| -> Result<(), String> {
            match jsonmap::pointer(pod, ptr) {
                None | Some(Value::Null) => Ok(()),
                Some(Value::Object(_)) if want_object => Ok(()),
                Some(Value::Bool(_)) if go_type == "bool" => Ok(()),
                Some(Value::String(_)) if !want_object && go_type == "string" => Ok(()),
                Some(other) => Err(format!(
                    "json: cannot unmarshal {} into Go struct field {go_field} of type {go_type}",
                    gojson::unmarshal_kind(other)
                )),
            }
        };
    field("/metadata", "Pod.metadata", "v1.ObjectMeta", true)?;
    field("/spec", "Pod.spec", "v1.PodSpec", true)?;
    field("/metadata/name", "Pod.metadata.name", "string", false)?;
    field(
        "/metadata/generateName",
        "Pod.metadata.generateName",
        "string",
        false,
    )?;
    field(
        "/metadata/namespace",
        "Pod.metadata.namespace",
        "string",
        false,
    )?;
    field("/spec/nodeName", "Pod.spec.nodeName", "string", false)?;
    field("/spec/hostNetwork", "Pod.spec.hostNetwork", "bool", false)?;
    for (map, ptr, go_field) in [
        ("labels", "/metadata/labels", "Pod.metadata.labels"),
        (
            "annotations",
            "/metadata/annotations",
            "Pod.metadata.annotations",
        ),
    ] {
        field(ptr, go_field, "map[string]string", true)?;
        if let Some(m) = pod
            .scan("metadata")
            .and_then(|m| m.scan(map))
            .and_then(Value::as_object)
        {
            if let Some((k, v)) = m
                .iter()
                .find(|(_, v)| !matches!(v, Value::String(_) | Value::Null))
            {
                return Err(format!(
                    "json: cannot unmarshal {} into Go struct field Pod.metadata.{map} of type string (key {k:?})",
                    gojson::unmarshal_kind(v)
                ));
            }
        }
    }
    Ok(())
}

/// Drop `metadata.managedFields` and default an empty namespace from the request, as the webhook
/// does before deciding.
pub(crate) fn prepare_pod(pod: &mut Value, request_namespace: &str) {
    let Some(root) = pod.as_object_mut() else {
        return;
    };
    // Looked up by scanning; inserted (last, as `entry` would) only when missing.
    if root.scan("metadata").is_none() {
        root.insert("metadata".into(), Value::Object(Map::new()));
    }
    let Some(meta) = root.scan_mut("metadata") else {
        return;
    };
    if meta.is_null() {
        *meta = Value::Object(Map::new());
    }
    if let Some(meta) = meta.as_object_mut() {
        prepare_metadata(meta, request_namespace);
    }
}

/// [`prepare_pod`] on the metadata map alone.
pub(crate) fn prepare_metadata(meta: &mut Map<String, Value>, request_namespace: &str) {
    if meta.scan("managedFields").is_some() {
        meta.remove("managedFields");
    }
    let empty = meta
        .scan("namespace")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty);
    if empty && !request_namespace.is_empty() {
        meta.insert(
            "namespace".into(),
            Value::String(request_namespace.to_string()),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A UTF-8 body read as text gives what `serde_json::from_slice` gives, values and errors.
    #[test]
    fn small_bodies_parse_as_serde_json_reads_bytes() {
        for text in [
            &br#"{"a":1,"b":[1,2.5,-3,true,null,"x\u00e9\ud83d\ude00"],"c":{"d":{}},"e":[]}"#[..],
            br#"{"k":1,"j":2,"k":3}"#,
            br#"[1e400]"#,
            br#""\ud800""#,
            br#""\ud800\u0041""#,
            "\"é\u{2028}\"".as_bytes(),
            b"\"\xff\"",
            b"{\"a\":\"\xc3\"}",
            br#"{"a":1} trailing"#,
            br#"{"a":"#,
            br#"{"a":1,}"#,
            b"\"tab\there\"",
            b"",
            b"nul",
        ] {
            let ours = parse_small(text);
            let theirs = serde_json::from_slice::<Value>(text);
            match (&ours, &theirs) {
                (Ok(a), Ok(b)) => assert_eq!(a.to_string(), b.to_string(), "{text:?}"),
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{text:?}"),
                _ => panic!("{text:?}: ours {ours:?}, serde_json {theirs:?}"),
            }
        }
    }

    #[test]
    fn dry_run_is_read_as_a_go_bool_pointer() {
        let review = |dry: &str| {
            format!(
                r#"{{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{{"uid":"u"{dry}}}}}"#
            )
        };
        let dry = |d: &str| decode_review(review(d).as_bytes()).map(|r| r.dry_run);
        assert!(matches!(dry(""), Ok(false)));
        assert!(matches!(dry(r#","dryRun":null"#), Ok(false)));
        assert!(matches!(dry(r#","dryRun":false"#), Ok(false)));
        assert!(matches!(dry(r#","dryRun":true"#), Ok(true)));
        let e = dry(r#","dryRun":"true""#).expect_err("a string is refused");
        assert_eq!(
            e.message,
            "json: cannot unmarshal string into Go struct field AdmissionRequest.request.dryRun of type bool"
        );
    }
}
