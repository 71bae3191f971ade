//! The admission webhook's logic, without I/O (spec §1.3 step 5 to §1.6, §4.2, §4.5, §4.7).
//!
//! [`review`] takes the body of an `AdmissionReview` request (`admission.k8s.io/v1` or
//! `v1beta1`) and the URL path, and returns the response body in the request's version with its
//! UID, plus the [`Outcome`] for metrics and logs. HTTP concerns (body limits, `Content-Type`,
//! status codes) belong to the server; everything the reference does after the body is read is
//! here. Nothing in this module panics on any input: a panic inside the injection pipeline is
//! caught and answered as a failure.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};

use base64::Engine as _;
use serde_json::{Map, Value};

use crate::config::Snapshot;
use crate::decide::{inject_required, Reason};
use crate::go::json as gojson;
use crate::inject::{self, meta_str, InjectParams, Mode};
use crate::json::lookup as jsonmap;
use crate::kube::names::{self, OPENSHIFT_SUPPLEMENTAL_GROUPS, OPENSHIFT_UID_RANGE};
use crate::Error;

/// `apiVersion` of the v1 AdmissionReview.
pub const ADMISSION_V1: &str = "admission.k8s.io/v1";
/// `apiVersion` of the v1beta1 AdmissionReview.
pub const ADMISSION_V1BETA1: &str = "admission.k8s.io/v1beta1";
/// `kind` of an AdmissionReview.
pub const ADMISSION_REVIEW: &str = "AdmissionReview";
/// Revision the webhook writes into `.Revision` and the status annotation.
pub const REVISION: &str = "default";
/// Minimum kubelet minor version with native sidecar support (spec §0.4).
pub const NATIVE_SIDECAR_MIN_MINOR: u64 = 33;

/// The native-sidecar mode (`ENABLE_NATIVE_SIDECARS`, spec §4.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NativeMode {
    /// Always native sidecars.
    Enabled,
    /// Never native sidecars.
    Disabled,
    /// Native when every relevant node's kubelet is at least 1.33.
    Auto,
}

impl NativeMode {
    /// Parse Istio's `ENABLE_NATIVE_SIDECARS` value; unknown values are `Disabled` with a warning.
    pub fn parse(value: &str) -> (NativeMode, Option<String>) {
        match value {
            "true" => (NativeMode::Enabled, None),
            "false" => (NativeMode::Disabled, None),
            "auto" => (NativeMode::Auto, None),
            other => (
                NativeMode::Disabled,
                Some(format!(
                    "Unknown value for ENABLE_NATIVE_SIDECARS: {other}, defaulting to false"
                )),
            ),
        }
    }

    /// The mode from the variable as the process sees it: unset is `Auto` (Istio's default),
    /// anything else goes through [`NativeMode::parse`].
    pub fn from_env(value: Option<&str>) -> (NativeMode, Option<String>) {
        value.map_or((NativeMode::Auto, None), NativeMode::parse)
    }
}

/// A cluster node as the native-sidecar detection sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// `metadata.name`.
    pub name: String,
    /// `status.nodeInfo.kubeletVersion`, e.g. `v1.33.1-gke.100`.
    pub kubelet_version: String,
}

/// What [`review`] may ask about the cluster. It asks only when its decision needs the answer:
/// node facts only in auto native-sidecar mode and only for pods it injects, namespace
/// annotations only on OpenShift (spec §4.5, §4.7). The caller answers from whatever it has
/// (watch caches, static tables); the rules applied to the answers live here.
pub trait ClusterFacts: std::fmt::Debug {
    /// Whether the caller knows the cluster's nodes (has a node client). Without, auto mode
    /// answers "no native sidecars" with Istio's warning.
    fn has_nodes(&self) -> bool {
        false
    }

    /// `status.nodeInfo.kubeletVersion` of the node named `name`; `None` when no such node is
    /// known.
    fn kubelet_version(&self, name: &str) -> Option<String> {
        let _ = name;
        None
    }

    /// Whether every known node runs a kubelet with native sidecar support, by
    /// [`kubelet_supports_native`] (an unreadable version does not; no nodes at all do). A cache
    /// may answer from an aggregate it maintains; lines for unreadable versions may be pushed
    /// to `warnings`.
    fn all_nodes_native(&self, warnings: &mut Vec<String>) -> bool {
        let _ = warnings;
        true
    }

    /// Annotations of the Namespace named `name`; `None` when it is not known.
    fn namespace_annotations(&self, name: &str) -> Option<Map<String, Value>> {
        let _ = name;
        None
    }
}

/// A caller that knows nothing about the cluster (no node client, no namespaces).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoCluster;

impl ClusterFacts for NoCluster {}

/// Cluster facts from plain tables, for callers without caches.
#[derive(Debug, Clone, Default)]
pub struct StaticFacts {
    /// The cluster's nodes; `None` when the caller has no node client.
    pub nodes: Option<Vec<Node>>,
    /// Annotations of the Namespace objects the caller knows, by namespace name.
    pub namespaces: BTreeMap<String, Map<String, Value>>,
}

impl ClusterFacts for StaticFacts {
    fn has_nodes(&self) -> bool {
        self.nodes.is_some()
    }

    fn kubelet_version(&self, name: &str) -> Option<String> {
        let nodes = self.nodes.as_ref()?;
        nodes
            .iter()
            .find(|n| n.name == name)
            .map(|n| n.kubelet_version.clone())
    }

    fn all_nodes_native(&self, warnings: &mut Vec<String>) -> bool {
        self.nodes
            .iter()
            .flatten()
            .all(|n| node_supports_native(&n.name, &n.kubelet_version, warnings))
    }

    fn namespace_annotations(&self, name: &str) -> Option<Map<String, Value>> {
        self.namespaces.get(name).cloned()
    }
}

/// Per-process and per-cluster inputs of [`review`] besides the request itself.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// The configuration snapshot in force.
    pub snapshot: &'a Snapshot,
    /// Native sidecar mode.
    pub native_mode: NativeMode,
    /// The cluster, asked only when the decision needs it (see [`ClusterFacts`]).
    pub cluster: &'a dyn ClusterFacts,
    /// `PLATFORM=openshift`.
    pub openshift: bool,
    /// `COMPLIANCE_POLICY` of the process.
    pub compliance_policy: &'a str,
    /// Keep the pod's metadata in [`Reviewed::pod_metadata`] (the target of a Kubernetes
    /// Event); off, the review does not copy it.
    pub keep_metadata: bool,
}

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

/// What happened to a review, for metrics and logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A sidecar was injected; the response carries a JSON Patch.
    Injected,
    /// The decision said no; the response allows the pod unchanged.
    Skipped(Reason),
    /// The pod is refused (`allowed: false`) or the review could not be read.
    Failed(Failure),
}

/// Why a review failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// Short snake_case code for the metrics `reason` label.
    pub reason: &'static str,
    /// The message written into the response (`status.message`).
    pub message: String,
    /// The body was not a usable AdmissionReview (undecodable, wrong kind, no `request`); the
    /// server may answer HTTP 400 instead of an admission response.
    pub malformed: bool,
}

/// The result of [`review`].
#[derive(Debug, Clone)]
pub struct Reviewed {
    /// Response body (compact JSON, Go string escaping).
    pub response: Vec<u8>,
    /// Outcome for metrics and logs.
    pub outcome: Outcome,
    /// Version of the request, when it was decoded.
    pub version: Option<ApiVersion>,
    /// `request.uid` (empty when unknown).
    pub uid: String,
    /// Pod namespace after defaulting from the request.
    pub namespace: String,
    /// Pod name, or `generateName` + `***** (actual name not yet known)`.
    pub pod_name: String,
    /// The decision's human sentence (empty when no decision was made).
    pub decision: String,
    /// Log lines the reference would write at warning level (decision, path parameters, ...).
    pub warnings: Vec<String>,
    /// The JSON Patch (uncompressed, compact JSON) when injected, for debug logs.
    pub patch: Option<String>,
    /// The pod's `metadata` without `managedFields`, its namespace defaulted from the request,
    /// when [`Context::keep_metadata`] is set and the request carried a pod object.
    pub pod_metadata: Option<Map<String, Value>>,
}

/// A decoded review request: version, uid, namespace and the raw pod.
struct Request {
    version: ApiVersion,
    uid: String,
    namespace: String,
    object: Option<Value>,
}

/// Why a body is not a usable review.
struct Malformed {
    reason: &'static str,
    message: String,
    /// Known when the review decoded but its `request` was missing.
    version: Option<ApiVersion>,
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

/// Answer one AdmissionReview (spec §1.5-1.6). `path` is the decoded URL path (`/inject/...`).
///
/// This is the one panic boundary of the admission path: a panic anywhere in the review (the
/// pipeline, or the caller's [`ClusterFacts`]) is answered as a refusal with reason
/// `internal_error`, in the request's version and with its UID when they were read.
pub fn review(body: &[u8], path: &str, ctx: &Context<'_>) -> Reviewed {
    let mut out = Reviewed::empty(Vec::new());
    match catch_unwind(AssertUnwindSafe(|| review_inner(body, path, ctx, &mut out))) {
        Ok(reviewed) => reviewed,
        Err(panic) => {
            let failure = Failure {
                reason: "internal_error",
                message: format!(
                    "internal error: injection panicked: {}",
                    panic_text(&*panic)
                ),
                malformed: false,
            };
            let (version, uid) = (out.version, std::mem::take(&mut out.uid));
            finish(version, uid, Outcome::Failed(failure), None, out)
        }
    }
}

/// [`review`] inside its panic boundary; `out` holds what is known so far (version, UID,
/// names, warnings) should a panic end it early.
fn review_inner(body: &[u8], path: &str, ctx: &Context<'_>, out: &mut Reviewed) -> Reviewed {
    let req = match decode_review(body) {
        Ok(r) => r,
        Err(m) => {
            let failure = Failure {
                reason: m.reason,
                message: m.message,
                malformed: true,
            };
            return finish(
                m.version,
                String::new(),
                Outcome::Failed(failure),
                None,
                Reviewed::empty(Vec::new()),
            );
        }
    };
    out.uid = req.uid.clone();
    out.version = Some(req.version);
    if ctx.keep_metadata {
        out.pod_metadata = req
            .object
            .as_ref()
            .map(|pod| event_metadata(pod, &req.namespace));
    }
    let mut pod = match decode_pod(req.object) {
        Ok(p) => p,
        Err(message) => {
            let failure = Failure {
                reason: "pod_decode",
                message,
                malformed: false,
            };
            return finish(
                Some(req.version),
                req.uid,
                Outcome::Failed(failure),
                None,
                std::mem::replace(out, Reviewed::empty(Vec::new())),
            );
        }
    };
    prepare_pod(&mut pod, &req.namespace);
    out.namespace = meta_str(&pod, "namespace").to_string();
    out.pod_name = potential_name(&pod);

    let snap = ctx.snapshot;
    let decision = inject_required(
        &pod,
        &snap.config.policy,
        &snap.config.never_inject_selector,
        &snap.config.always_inject_selector,
    );
    out.warnings.extend(decision.warnings.iter().cloned());
    out.decision = decision.message.clone();
    if !decision.inject {
        return finish(
            Some(req.version),
            req.uid,
            Outcome::Skipped(decision.reason),
            None,
            std::mem::replace(out, Reviewed::empty(Vec::new())),
        );
    }

    let (proxy_envs, env_warnings) = proxy_envs(path);
    out.warnings.extend(env_warnings);
    // Whether `pod` is still the pod exactly as received (after managedFields removal and
    // namespace defaulting), which the patch is computed against.
    let mut as_received = true;
    let uid_gid = if ctx.openshift {
        as_received = !reset_openshift_proxy_user(&mut pod, &mut out.warnings);
        let annotations = ctx
            .cluster
            .namespace_annotations(meta_str(&pod, "namespace"));
        if annotations.is_none() {
            out.warnings.push(format!(
                "unable to fetch namespace, failed to get client for {:?}",
                inject::DEFAULT_CLUSTER_ID
            ));
        }
        annotations.as_ref().map(proxy_uid_gid)
    } else {
        None
    };
    let node_name = jsonmap::path(&pod, &["spec", "nodeName"])
        .and_then(Value::as_str)
        .unwrap_or("");
    let native = detect_native_sidecars(ctx.native_mode, ctx.cluster, node_name, &mut out.warnings);
    let params = InjectParams {
        snapshot: snap,
        mode: Mode::Webhook,
        workload: inject::workload_from_pod(&pod),
        revision: REVISION,
        native_sidecars: native,
        proxy_envs,
        proxy_uid_gid: uid_gid,
        compliance_policy: ctx.compliance_policy,
    };
    let result = inject_and_diff(pod, as_received, body, &req.namespace, &params);
    let mut out = std::mem::replace(out, Reviewed::empty(Vec::new()));
    match result {
        Ok((patch, injected_warnings)) => {
            out.warnings.extend(injected_warnings);
            finish(
                Some(req.version),
                req.uid,
                Outcome::Injected,
                Some(patch),
                out,
            )
        }
        Err(e) => {
            let failure = Failure {
                reason: error_code(&e),
                message: e.to_string(),
                malformed: false,
            };
            finish(
                Some(req.version),
                req.uid,
                Outcome::Failed(failure),
                None,
                out,
            )
        }
    }
}

/// The pod's metadata as the Event target: without `managedFields`, the namespace defaulted
/// from the request as [`prepare_pod`] does (an empty map when the pod has none).
fn event_metadata(pod: &Value, request_namespace: &str) -> Map<String, Value> {
    let mut meta: Map<String, Value> = pod
        .get("metadata")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter(|(k, _)| k.as_str() != "managedFields")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    let empty = meta
        .get("namespace")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty);
    if empty && !request_namespace.is_empty() {
        meta.insert(
            "namespace".into(),
            Value::String(request_namespace.to_string()),
        );
    }
    meta
}

/// Bodies below this size keep the received pod next to the normalised one instead of decoding
/// it again for the diff: the extra tree is small, and decoding costs more than holding it.
const REDECODE_MIN_BODY: usize = 64 * 1024;

/// Inject `pod` and diff the result against the pod as received, holding at most two pod-sized
/// trees at a time (the webhook's memory budget).
///
/// The patch is computed against the pod exactly as received (after managedFields removal and
/// namespace defaulting), so it applies to the caller's document by construction even where our
/// typed normalisation and the caller's serialisation differ. A pod already in normal form (what
/// the API server sends) is that pod, so it is not copied; otherwise, for a large body, the
/// received pod is dropped while the pipeline runs and decoded again from `body` for the diff.
fn inject_and_diff(
    pod: Value,
    as_received: bool,
    body: &[u8],
    request_namespace: &str,
    params: &InjectParams<'_>,
) -> Result<(String, Vec<String>), Error> {
    let mut normalized = crate::json::compact::clone(&pod);
    inject::normalize_pod(&mut normalized)?;
    if as_received && identical(&normalized, &pod) {
        drop(normalized);
        let injected = inject::inject_normalized(&pod, params)?;
        let patch = crate::patch::create_json(&pod, &injected.pod);
        return Ok((patch, injected.warnings));
    }
    if as_received && body.len() < REDECODE_MIN_BODY {
        let injected = inject::inject_normalized(&normalized, params)?;
        let patch = crate::patch::create_json(&pod, &injected.pod);
        return Ok((patch, injected.warnings));
    }
    drop(pod);
    let injected = inject::inject_normalized(&normalized, params)?;
    drop(normalized);
    let received = decode_review(body)
        .ok()
        .and_then(|r| decode_pod(r.object).ok())
        .map(|mut p| {
            prepare_pod(&mut p, request_namespace);
            p
        })
        .ok_or_else(|| Error::Inject("internal error: the review did not decode twice".into()))?;
    let patch = crate::patch::create_json(&received, &injected.pod);
    Ok((patch, injected.warnings))
}

/// Equal, with object keys in the same order (serde_json's `==` ignores the order of
/// `preserve_order` maps; the pipeline's output follows it).
fn identical(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y.iter())
                    .all(|((ka, va), (kb, vb))| ka == kb && identical(va, vb))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(va, vb)| identical(va, vb))
        }
        _ => a == b,
    }
}

impl Reviewed {
    fn empty(warnings: Vec<String>) -> Reviewed {
        Reviewed {
            response: Vec::new(),
            outcome: Outcome::Injected,
            version: None,
            uid: String::new(),
            namespace: String::new(),
            pod_name: String::new(),
            decision: String::new(),
            warnings,
            patch: None,
            pod_metadata: None,
        }
    }
}

/// Fill in the response bytes and outcome.
fn finish(
    version: Option<ApiVersion>,
    uid: String,
    outcome: Outcome,
    patch: Option<String>,
    mut out: Reviewed,
) -> Reviewed {
    out.response = encode_response(version, &uid, &outcome, patch.as_deref()).into_bytes();
    out.version = version;
    out.uid = uid;
    out.outcome = outcome;
    out.patch = patch;
    out
}

/// The response document (spec §1.5): `kind`, `apiVersion` (omitted when the request was not
/// decoded), `response{uid, allowed, status, patch, patchType}` in Go struct order.
pub fn encode_response(
    version: Option<ApiVersion>,
    uid: &str,
    outcome: &Outcome,
    patch: Option<&str>,
) -> String {
    let mut s = String::with_capacity(128 + patch.map_or(0, |p| p.len() * 4 / 3 + 4));
    s.push('{');
    if let Some(v) = version {
        s.push_str("\"kind\":\"AdmissionReview\",\"apiVersion\":");
        gojson::write_str(&mut s, v.as_str());
        s.push(',');
    }
    s.push_str("\"response\":{\"uid\":");
    gojson::write_str(&mut s, uid);
    match outcome {
        Outcome::Failed(f) => {
            s.push_str(",\"allowed\":false,\"status\":{\"metadata\":{},\"message\":");
            gojson::write_str(&mut s, &f.message);
            s.push('}');
        }
        Outcome::Skipped(_) => s.push_str(",\"allowed\":true"),
        Outcome::Injected => {
            s.push_str(",\"allowed\":true");
            if let Some(p) = patch {
                s.push_str(",\"patch\":\"");
                base64::engine::general_purpose::STANDARD.encode_string(p.as_bytes(), &mut s);
                s.push_str("\",\"patchType\":\"JSONPatch\"");
            }
        }
    }
    s.push_str("}}");
    s
}

/// Decode the body as an AdmissionReview (JSON, or YAML as the universal deserializer allows).
fn decode_review(body: &[u8]) -> Result<Request, Malformed> {
    let doc = parse_document(body)?;
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
    let request = match m.get_mut("request") {
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
    Ok(Request {
        version,
        uid: request_string(request, "uid", "types.UID")?,
        namespace: request_string(request, "namespace", "string")?,
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

fn parse_document(body: &[u8]) -> Result<Value, Malformed> {
    match crate::json::compact::from_slice(body) {
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

fn string_field(m: &Map<String, Value>, key: &str) -> Result<String, Malformed> {
    match m.get(key) {
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
    match m.get(key) {
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

fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    text.chars().take(256).collect()
}

/// Step 1 of §1.6: the raw object must decode as a Pod. `null` or absent decode as an empty pod
/// only when present as `null`; an absent object is Go's `unexpected end of JSON input`.
fn decode_pod(object: Option<Value>) -> Result<Value, String> {
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
    for map in ["labels", "annotations"] {
        field(
            &format!("/metadata/{map}"),
            &format!("Pod.metadata.{map}"),
            "map[string]string",
            true,
        )?;
        if let Some(m) = pod
            .get("metadata")
            .and_then(|m| m.get(map))
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

/// Steps 2-3 of §1.6: drop `metadata.managedFields`, default the namespace from the request.
fn prepare_pod(pod: &mut Value, request_namespace: &str) {
    let Some(root) = pod.as_object_mut() else {
        return;
    };
    let meta = root
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if meta.is_null() {
        *meta = Value::Object(Map::new());
    }
    let Some(meta) = meta.as_object_mut() else {
        return;
    };
    meta.remove("managedFields");
    let empty = meta
        .get("namespace")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty);
    if empty && !request_namespace.is_empty() {
        meta.insert(
            "namespace".into(),
            Value::String(request_namespace.to_string()),
        );
    }
}

/// The logged pod name (spec §1.6 step 4).
pub fn potential_name(pod: &Value) -> String {
    let name = meta_str(pod, "name");
    if !name.is_empty() {
        return name.to_string();
    }
    let generate = meta_str(pod, "generateName");
    if generate.is_empty() {
        String::new()
    } else {
        format!("{generate}***** (actual name not yet known)")
    }
}

/// Metrics reason code of a pipeline error.
pub fn error_code(e: &Error) -> &'static str {
    match e {
        Error::Yaml(_) => "yaml",
        Error::Json(_) => "json",
        Error::Config(_) => "config",
        Error::Template(_) => "template",
        Error::InvalidAnnotations(_) => "invalid_annotations",
        Error::Merge(_) => "merge",
        Error::Type(_) => "type",
        Error::ProxyConfig(_) => "proxy_config",
        Error::Inject(_) => "inject",
        Error::Workload(_) => "workload",
    }
}

fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

/// Path parameters → proxy environment (spec §1.4). Returns the map and warning log lines.
pub fn proxy_envs(path: &str) -> (BTreeMap<String, String>, Vec<String>) {
    let mut envs = BTreeMap::new();
    let mut warnings = Vec::new();
    let trimmed = path.strip_suffix('/').unwrap_or(path);
    let mut parts = trimmed.splitn(3, '/');
    let rest = match (parts.next(), parts.next(), parts.next()) {
        (_, _, Some(rest)) => rest,
        _ => return (envs, warnings),
    };
    let mut pairs: Vec<(String, String)> = Vec::new();
    if rest.starts_with(":ENV:") {
        for piece in rest.split(":ENV:").skip(1) {
            if let Some((k, v)) = piece.split_once('=') {
                if !k.is_empty() {
                    pairs.push((k.to_string(), v.to_string()));
                }
            }
        }
    } else {
        let tokens: Vec<&str> = rest.split('/').collect();
        for pair in tokens.chunks(2) {
            match pair {
                [k, v] => pairs.push((k.to_string(), v.replace("--slash--", "/"))),
                [k] => warnings.push(format!(
                    "Odd number of inject env entries, ignore the last key {k}"
                )),
                _ => {}
            }
        }
    }
    for (k, v) in pairs {
        let name = match k.as_str() {
            "cluster" => "ISTIO_META_CLUSTER_ID".to_string(),
            "net" => "ISTIO_META_NETWORK".to_string(),
            other => other.to_uppercase(),
        };
        if !name.is_empty() {
            envs.insert(name, v);
        }
    }
    (envs, warnings)
}

/// Proxy UID/GID from an OpenShift namespace's annotations (spec §4.7); defaults are 1337.
pub fn proxy_uid_gid(namespace_annotations: &Map<String, Value>) -> (i64, i64) {
    let get = |k: &str| namespace_annotations.get(k).and_then(Value::as_str);
    let default = inject::DEFAULT_PROXY_ID;
    let uid = get(OPENSHIFT_UID_RANGE)
        .filter(|v| !v.is_empty())
        .and_then(|v| parse_block(v).ok())
        .map_or(default, |(_, end)| i64::from(end));
    let groups = get(OPENSHIFT_SUPPLEMENTAL_GROUPS).or_else(|| get(OPENSHIFT_UID_RANGE));
    let gid = groups
        .and_then(|v| {
            let blocks: Result<Vec<(u32, u32)>, String> = v.split(',').map(parse_block).collect();
            blocks.ok()?.first().map(|(_, end)| i64::from(*end))
        })
        .unwrap_or(default);
    (uid, gid)
}

/// An OpenShift block: `<start>/<size>` (end = start + size - 1, uint32 wrap-around) or
/// `<start>-<end>`. Returns `(start, end)`.
pub fn parse_block(text: &str) -> Result<(u32, u32), String> {
    let parse = |s: &str| {
        s.parse::<u32>()
            .ok()
            .filter(|_| s.bytes().all(|b| b.is_ascii_digit()))
    };
    if text.contains('/') {
        let err = || "block not in the format \"<start>/<size>\"".to_string();
        let (a, b) = text.split_once('/').ok_or_else(err)?;
        let (start, size) = (parse(a).ok_or_else(err)?, parse(b).ok_or_else(err)?);
        Ok((start, start.wrapping_add(size).wrapping_sub(1)))
    } else {
        let err = || "block not in the format \"<start>-<end>\"".to_string();
        let (a, b) = text.split_once('-').ok_or_else(err)?;
        Ok((parse(a).ok_or_else(err)?, parse(b).ok_or_else(err)?))
    }
}

/// OpenShift (spec §1.6 step 8): clear the user `istio-proxy`'s `runAsUser`/`runAsGroup` when it
/// equals the application's user.
/// Returns whether the pod was changed.
fn reset_openshift_proxy_user(pod: &mut Value, warnings: &mut Vec<String>) -> bool {
    let run_as_user = |c: &Value| {
        c.pointer("/securityContext/runAsUser")
            .and_then(Value::as_i64)
    };
    let all = |pod: &Value| -> Vec<Value> {
        ["containers", "initContainers"]
            .iter()
            .flat_map(|l| {
                pod.pointer(&format!("/spec/{l}"))
                    .and_then(Value::as_array)
                    .map(|items| items.iter().map(container_user_view).collect::<Vec<_>>())
                    .unwrap_or_default()
            })
            .collect()
    };
    let containers = all(pod);
    let is_named = |c: &Value, n: &str| c.get("name").and_then(Value::as_str) == Some(n);
    let Some(proxy) = containers
        .iter()
        .find(|c| is_named(c, names::PROXY_CONTAINER))
    else {
        return false;
    };
    if proxy.get("securityContext").is_none_or(Value::is_null) {
        return false;
    }
    let sidecar_user = run_as_user(proxy).unwrap_or(0);
    let app_user = containers
        .iter()
        .rev()
        .filter(|c| {
            ![
                names::PROXY_CONTAINER,
                names::VALIDATION_CONTAINER,
                names::INIT_CONTAINER,
            ]
            .iter()
            .any(|n| is_named(c, n))
        })
        .filter_map(run_as_user)
        .next()
        .unwrap_or(0);
    if sidecar_user != app_user {
        return false;
    }
    warnings.push(format!(
        "Resetting the UserID of sideCar proxy as it matches with the app container for Pod {:?}",
        meta_str(pod, "name")
    ));
    for list in ["containers", "initContainers"] {
        let Some(items) = pod
            .pointer_mut(&format!("/spec/{list}"))
            .and_then(Value::as_array_mut)
        else {
            continue;
        };
        for c in items
            .iter_mut()
            .filter(|c| is_named(c, names::PROXY_CONTAINER))
        {
            if let Some(sc) = c.get_mut("securityContext").and_then(Value::as_object_mut) {
                sc.remove("runAsUser");
                sc.remove("runAsGroup");
            }
        }
    }
    true
}

/// The parts of a container [`reset_openshift_proxy_user`] reads (its name and security
/// context), so that it does not copy whole containers.
fn container_user_view(c: &Value) -> Value {
    let mut m = Map::new();
    for key in ["name", "securityContext"] {
        if let Some(v) = c.get(key) {
            m.insert(key.into(), v.clone());
        }
    }
    Value::Object(m)
}

/// Native sidecar decision (spec §4.5, webhook): fixed modes answer at once; auto mode asks
/// `cluster` for the pod's node (`node_name`, empty when unscheduled), else for every node.
pub fn detect_native_sidecars(
    mode: NativeMode,
    cluster: &dyn ClusterFacts,
    node_name: &str,
    warnings: &mut Vec<String>,
) -> bool {
    match mode {
        NativeMode::Enabled => return true,
        NativeMode::Disabled => return false,
        NativeMode::Auto => {}
    }
    if !cluster.has_nodes() {
        warnings.push(
            "configured to auto detect native sidecar support, but couldn't find a client".into(),
        );
        return false;
    }
    if !node_name.is_empty() {
        match cluster.kubelet_version(node_name) {
            Some(version) => return node_supports_native(node_name, &version, warnings),
            None => warnings.push(format!(
                "pod assigned to node {node_name:?} but node not found in cluster"
            )),
        }
    }
    cluster.all_nodes_native(warnings)
}

/// [`kubelet_supports_native`] for one node; an unreadable version does not, with Istio's
/// warning line.
pub fn node_supports_native(name: &str, version: &str, warnings: &mut Vec<String>) -> bool {
    match kubelet_supports_native(version) {
        Ok(supported) => supported,
        Err(e) => {
            warnings.push(format!(
                "could not read node version for {name} {version}: {e}"
            ));
            false
        }
    }
}

/// Whether a kubelet of `version` runs native sidecars: its minor version is at least
/// [`NATIVE_SIDECAR_MIN_MINOR`] (the major is ignored, as Istio does). The one parser of
/// kubelet versions: the server's node cache uses it too.
pub fn kubelet_supports_native(version: &str) -> Result<bool, String> {
    kubelet_minor(version).map(|minor| minor >= NATIVE_SIDECAR_MIN_MINOR)
}

/// Minor component of a semantic version such as `v1.33.1-gke.100`.
pub fn kubelet_minor(version: &str) -> Result<u64, String> {
    let v = version.strip_prefix('v').unwrap_or(version);
    let core = v.split(['-', '+']).next().unwrap_or("");
    let parts: Vec<&str> = core.split('.').collect();
    let numeric = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !(2..=3).contains(&parts.len()) || !parts.iter().all(|p| numeric(p)) {
        return Err(format!("could not parse {version:?} as version"));
    }
    parts[1]
        .parse::<u64>()
        .map_err(|e| format!("could not parse {version:?} as version: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{InjectorConfig, ValuesFacts};
    use crate::decide::{LabelSelector, Policy};
    use serde_json::json;

    fn snapshot(policy: Policy) -> Snapshot {
        let never = LabelSelector::from_json(&json!({"matchLabels": {"never": "yes"}}))
            .expect("valid selector");
        let always = LabelSelector::from_json(&json!({"matchLabels": {"always": "yes"}}))
            .expect("valid selector");
        Snapshot {
            config: InjectorConfig {
                policy,
                default_templates: vec!["sidecar".into()],
                templates: BTreeMap::new(),
                aliases: BTreeMap::new(),
                never_inject_selector: vec![never],
                always_inject_selector: vec![always],
                injected_annotations: BTreeMap::new(),
                warnings: Vec::new(),
            },
            values: json!({}),
            values_facts: ValuesFacts::default(),
            mesh: json!({}),
        }
    }

    fn ctx(snapshot: &Snapshot) -> Context<'_> {
        Context {
            snapshot,
            native_mode: NativeMode::Disabled,
            cluster: &NoCluster,
            openshift: false,
            compliance_policy: "",
            keep_metadata: false,
        }
    }

    fn body(version: &str, uid: &str, namespace: &str, pod: Value) -> Vec<u8> {
        let doc = json!({"kind": "AdmissionReview", "apiVersion": version,
            "request": {"uid": uid, "namespace": namespace, "operation": "CREATE", "object": pod}});
        serde_json::to_vec(&doc).expect("serialisable")
    }

    fn text(r: &Reviewed) -> &str {
        std::str::from_utf8(&r.response).expect("utf-8 response")
    }

    #[test]
    fn path_parameters_follow_every_spec_example() {
        let cases: &[(&str, &[(&str, &str)])] = &[
            ("/inject", &[]),
            ("/inject/", &[]),
            ("/", &[]),
            (
                "/inject/cluster/c1/net/n1/",
                &[
                    ("ISTIO_META_CLUSTER_ID", "c1"),
                    ("ISTIO_META_NETWORK", "n1"),
                ],
            ),
            (
                "/inject/cluster/a--slash--b",
                &[("ISTIO_META_CLUSTER_ID", "a/b")],
            ),
            (
                "/inject/cluster/c1/custom_env/foo",
                &[("ISTIO_META_CLUSTER_ID", "c1"), ("CUSTOM_ENV", "foo")],
            ),
            (
                "/inject/cluster/c1/network",
                &[("ISTIO_META_CLUSTER_ID", "c1")],
            ),
            (
                "/inject/:ENV:cluster=c2:ENV:rootpage=/foo/bar",
                &[("ISTIO_META_CLUSTER_ID", "c2"), ("ROOTPAGE", "/foo/bar")],
            ),
            ("/inject/:ENV:a=x:ENV:=b:ENV:=", &[("A", "x")]),
            (
                "/inject/r1/v1/r2/:ENV:ab=cd",
                &[("R1", "v1"), ("R2", ":ENV:ab=cd")],
            ),
        ];
        for (path, want) in cases {
            let (got, _) = proxy_envs(path);
            let want: BTreeMap<String, String> = want
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            assert_eq!(got, want, "path {path}");
        }
    }

    #[test]
    fn path_parameters_warn_on_odd_count_and_overwrite_duplicates() {
        let (envs, warnings) = proxy_envs("/inject/cluster/c1/network");
        assert_eq!(
            warnings,
            vec!["Odd number of inject env entries, ignore the last key network".to_string()]
        );
        assert_eq!(envs.len(), 1);
        let (envs, _) = proxy_envs("/inject/net/a/net/b/ünï/x");
        assert_eq!(
            envs.get("ISTIO_META_NETWORK").map(String::as_str),
            Some("b")
        );
        assert_eq!(envs.get("ÜNÏ").map(String::as_str), Some("x"));
    }

    #[test]
    fn skip_answers_v1_exactly() {
        let snap = snapshot(Policy::Disabled);
        let r = review(
            &body(
                ADMISSION_V1,
                "u-1",
                "default",
                json!({"metadata": {"name": "p"}}),
            ),
            "/inject",
            &ctx(&snap),
        );
        assert_eq!(r.outcome, Outcome::Skipped(Reason::PolicyDisabled));
        assert_eq!(
            text(&r),
            r#"{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","response":{"uid":"u-1","allowed":true}}"#
        );
        assert_eq!(
            (r.namespace.as_str(), r.pod_name.as_str()),
            ("default", "p")
        );
    }

    #[test]
    fn skip_answers_v1beta1_in_its_version() {
        let snap = snapshot(Policy::Disabled);
        let r = review(
            &body(ADMISSION_V1BETA1, "u-2", "ns", json!({})),
            "/inject",
            &ctx(&snap),
        );
        assert_eq!(r.version, Some(ApiVersion::V1beta1));
        assert_eq!(
            text(&r),
            r#"{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1beta1","response":{"uid":"u-2","allowed":true}}"#
        );
    }

    #[test]
    fn every_skip_reason_is_reported() {
        let cases = [
            (
                Policy::Enabled,
                json!({"spec": {"hostNetwork": true}}),
                "ns",
                Reason::HostNetwork,
            ),
            (
                Policy::Enabled,
                json!({"metadata": {}}),
                "kube-system",
                Reason::IgnoredNamespace,
            ),
            (
                Policy::Enabled,
                json!({"metadata": {"namespace": "kube-public"}}),
                "x",
                Reason::IgnoredNamespace,
            ),
            (
                Policy::Enabled,
                json!({"metadata": {"labels": {"sidecar.istio.io/inject": "false"}}}),
                "ns",
                Reason::LabelDisabled,
            ),
            (
                Policy::Enabled,
                json!({"metadata": {"annotations": {"sidecar.istio.io/inject": "false"}}}),
                "ns",
                Reason::AnnotationDisabled,
            ),
            (
                Policy::Enabled,
                json!({"metadata": {"labels": {"never": "yes"}}}),
                "ns",
                Reason::NeverInjectSelector,
            ),
            (
                Policy::Disabled,
                json!({"metadata": {"labels": {"app": "x"}}}),
                "ns",
                Reason::PolicyDisabled,
            ),
            (
                Policy::Invalid("bogus".into()),
                json!({"metadata": {"labels": {"sidecar.istio.io/inject": "true"}}}),
                "ns",
                Reason::PolicyInvalid,
            ),
        ];
        for (policy, pod, ns, want) in cases {
            let snap = snapshot(policy);
            let r = review(
                &body(ADMISSION_V1, "u", ns, pod.clone()),
                "/inject",
                &ctx(&snap),
            );
            assert_eq!(r.outcome, Outcome::Skipped(want), "pod {pod}");
            assert!(
                text(&r).ends_with(r#""response":{"uid":"u","allowed":true}}"#),
                "{}",
                text(&r)
            );
            assert!(!r.decision.is_empty());
        }
    }

    #[test]
    fn policy_invalid_logs_the_reference_error() {
        let snap = snapshot(Policy::Invalid("bogus".into()));
        let r = review(
            &body(ADMISSION_V1, "u", "ns", json!({})),
            "/inject",
            &ctx(&snap),
        );
        assert!(
            r.warnings
                .iter()
                .any(|w| w.contains("Illegal value for autoInject:bogus")),
            "{:?}",
            r.warnings
        );
    }

    #[test]
    fn injection_failure_is_refused_with_uid_and_message() {
        // No templates are configured: the pipeline must fail (whatever its first failing step)
        // and the pod must be refused with the error in status.message.
        let snap = snapshot(Policy::Enabled);
        let r = review(
            &body(
                ADMISSION_V1,
                "u-3",
                "ns",
                json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a", "image": "i"}]}}),
            ),
            "/inject",
            &ctx(&snap),
        );
        let Outcome::Failed(f) = &r.outcome else {
            panic!("expected failure, got {:?}", r.outcome)
        };
        assert!(!f.malformed);
        assert!(!f.message.is_empty());
        let v: Value = serde_json::from_slice(&r.response).expect("json");
        assert_eq!(v["response"]["uid"], "u-3");
        assert_eq!(v["response"]["allowed"], false);
        assert_eq!(v["response"]["status"]["metadata"], json!({}));
        assert_eq!(v["response"]["status"]["message"], f.message.as_str());
        assert!(v["response"].get("patch").is_none());
    }

    #[test]
    fn response_shapes_are_byte_exact() {
        let failed = Outcome::Failed(Failure {
            reason: "x",
            message: "bad <a> & \"b\"".into(),
            malformed: false,
        });
        assert_eq!(
            encode_response(Some(ApiVersion::V1), "id", &failed, None),
            r#"{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","response":{"uid":"id","allowed":false,"status":{"metadata":{},"message":"bad \u003ca\u003e \u0026 \"b\""}}}"#
        );
        assert_eq!(
            encode_response(
                Some(ApiVersion::V1beta1),
                "id",
                &Outcome::Injected,
                Some(r#"[{"op":"add"}]"#)
            ),
            r#"{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1beta1","response":{"uid":"id","allowed":true,"patch":"W3sib3AiOiJhZGQifV0=","patchType":"JSONPatch"}}"#
        );
        assert_eq!(
            encode_response(None, "", &failed, None).get(..30),
            Some(r#"{"response":{"uid":"","allowed"#)
        );
    }

    #[test]
    fn undecodable_bodies_are_malformed_without_kind() {
        let snap = snapshot(Policy::Enabled);
        for bad in [
            &b"not json"[..],
            b"{",
            b"[1,2]",
            b"{\"apiVersion\":\"admission.k8s.io/v1\"}",
            b"\xff\xfe",
            b"42",
        ] {
            let r = review(bad, "/inject", &ctx(&snap));
            let Outcome::Failed(f) = &r.outcome else {
                panic!("expected failure for {bad:?}")
            };
            assert!(f.malformed, "{bad:?}");
            assert!(
                text(&r).starts_with(
                    r#"{"response":{"uid":"","allowed":false,"status":{"metadata":{},"message":"#
                ),
                "{}",
                text(&r)
            );
        }
    }

    #[test]
    fn wrong_kinds_and_missing_request_are_malformed() {
        let snap = snapshot(Policy::Enabled);
        let pod = br#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"}}"#;
        let r = review(pod, "/inject", &ctx(&snap));
        let Outcome::Failed(f) = &r.outcome else {
            panic!("expected failure")
        };
        assert_eq!(
            f.message,
            "unsupported type :&TypeMeta{Kind:Pod,APIVersion:v1,}"
        );
        assert_eq!(f.reason, "unsupported_type");

        let r = review(
            br#"{"apiVersion":"foo/v1","kind":"Bar"}"#,
            "/inject",
            &ctx(&snap),
        );
        let Outcome::Failed(f) = &r.outcome else {
            panic!("expected failure")
        };
        assert!(
            f.message
                .starts_with(r#"no kind "Bar" is registered for version "foo/v1""#),
            "{}",
            f.message
        );

        let r = review(
            br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#,
            "/inject",
            &ctx(&snap),
        );
        let Outcome::Failed(f) = &r.outcome else {
            panic!("expected failure")
        };
        assert_eq!((f.reason, f.malformed), ("missing_request", true));
        let v: Value = serde_json::from_slice(&r.response).expect("json");
        assert_eq!(v["apiVersion"], ADMISSION_V1);
        assert_eq!(v["response"]["allowed"], false);

        let r = review(
            br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":5}}"#,
            "/inject",
            &ctx(&snap),
        );
        let Outcome::Failed(f) = &r.outcome else {
            panic!("expected failure")
        };
        assert!(
            f.message
                .contains("AdmissionRequest.request.uid of type types.UID"),
            "{}",
            f.message
        );
    }

    #[test]
    fn bad_pods_are_refused_not_malformed() {
        let snap = snapshot(Policy::Enabled);
        let cases = [
            (
                json!("pod"),
                "cannot unmarshal string into Go value of type v1.Pod",
            ),
            (
                json!({"metadata": []}),
                "Pod.metadata of type v1.ObjectMeta",
            ),
            (
                json!({"metadata": {"labels": {"a": 1}}}),
                "Pod.metadata.labels of type string",
            ),
            (
                json!({"spec": {"hostNetwork": "yes"}}),
                "Pod.spec.hostNetwork of type bool",
            ),
        ];
        for (pod, want) in cases {
            let r = review(
                &body(ADMISSION_V1, "u", "ns", pod.clone()),
                "/inject",
                &ctx(&snap),
            );
            let Outcome::Failed(f) = &r.outcome else {
                panic!("expected failure for {pod}")
            };
            assert!(!f.malformed);
            assert!(f.message.contains(want), "{pod}: {}", f.message);
            assert!(text(&r).contains(r#""uid":"u","allowed":false"#));
        }
        let no_object = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u"}}"#;
        let r = review(no_object, "/inject", &ctx(&snap));
        let Outcome::Failed(f) = &r.outcome else {
            panic!("expected failure")
        };
        assert_eq!(f.message, "unexpected end of JSON input");
    }

    #[test]
    fn yaml_reviews_decode() {
        let snap = snapshot(Policy::Disabled);
        let doc = "apiVersion: admission.k8s.io/v1\nkind: AdmissionReview\nrequest:\n  uid: y1\n  namespace: ns\n  object:\n    metadata:\n      name: p\n";
        let r = review(doc.as_bytes(), "/inject", &ctx(&snap));
        assert_eq!(r.outcome, Outcome::Skipped(Reason::PolicyDisabled));
        assert_eq!(r.uid, "y1");
    }

    #[test]
    fn pods_are_prepared_before_the_decision() {
        let mut pod =
            json!({"metadata": {"managedFields": [{"manager": "kubectl"}], "namespace": ""}});
        prepare_pod(&mut pod, "req-ns");
        assert_eq!(pod, json!({"metadata": {"namespace": "req-ns"}}));
        let mut pod = json!({"metadata": {"namespace": "own"}});
        prepare_pod(&mut pod, "req-ns");
        assert_eq!(pod["metadata"]["namespace"], "own");
        let mut pod = json!({});
        prepare_pod(&mut pod, "");
        assert_eq!(pod, json!({"metadata": {}}));
    }

    #[test]
    fn potential_names() {
        assert_eq!(
            potential_name(&json!({"metadata": {"name": "a", "generateName": "b-"}})),
            "a"
        );
        assert_eq!(
            potential_name(&json!({"metadata": {"generateName": "b-"}})),
            "b-***** (actual name not yet known)"
        );
        assert_eq!(potential_name(&json!({})), "");
    }

    #[test]
    fn openshift_uid_and_gid() {
        let ann = |v: Value| v.as_object().cloned().expect("object");
        assert_eq!(
            proxy_uid_gid(&ann(json!({OPENSHIFT_UID_RANGE: "1000680000/10000"}))),
            (1000689999, 1000689999)
        );
        assert_eq!(
            proxy_uid_gid(&ann(
                json!({OPENSHIFT_UID_RANGE: "1000680000/10000", OPENSHIFT_SUPPLEMENTAL_GROUPS: "5000/10,7000/5"})
            )),
            (1000689999, 5009)
        );
        assert_eq!(
            proxy_uid_gid(&ann(json!({OPENSHIFT_UID_RANGE: "100-200"}))),
            (200, 200)
        );
        assert_eq!(
            proxy_uid_gid(&ann(json!({OPENSHIFT_UID_RANGE: "junk"}))),
            (1337, 1337)
        );
        assert_eq!(
            proxy_uid_gid(&ann(
                json!({OPENSHIFT_UID_RANGE: "", OPENSHIFT_SUPPLEMENTAL_GROUPS: "10/2,x"})
            )),
            (1337, 1337)
        );
        assert_eq!(proxy_uid_gid(&ann(json!({}))), (1337, 1337));
        assert_eq!(parse_block("4294967295/2"), Ok((4294967295, 0)));
        assert_eq!(
            parse_block("1-x"),
            Err("block not in the format \"<start>-<end>\"".into())
        );
        assert_eq!(
            parse_block("1/"),
            Err("block not in the format \"<start>/<size>\"".into())
        );
    }

    #[test]
    fn openshift_resets_a_proxy_user_equal_to_the_app_user() {
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "app", "securityContext": {"runAsUser": 1000}},
            {"name": "istio-proxy", "securityContext": {"runAsUser": 1000, "runAsGroup": 5, "privileged": false}}]}});
        let mut w = Vec::new();
        assert!(reset_openshift_proxy_user(&mut pod, &mut w));
        assert_eq!(
            pod["spec"]["containers"][1]["securityContext"],
            json!({"privileged": false})
        );
        assert_eq!(w.len(), 1);
        let mut pod = json!({"spec": {"containers": [
            {"name": "app", "securityContext": {"runAsUser": 1000}},
            {"name": "istio-proxy", "securityContext": {"runAsUser": 7}}]}});
        let before = pod.clone();
        assert!(!reset_openshift_proxy_user(&mut pod, &mut Vec::new()));
        assert_eq!(pod, before);
    }

    /// The patch is computed against the pod as received whichever way the review holds its
    /// trees: a pod already in normal form (one copy), one that normalisation changes (decoded
    /// again for the diff), and an OpenShift pod whose proxy user is reset before injection.
    #[test]
    fn patches_are_against_the_received_pod() {
        use base64::engine::general_purpose::STANDARD;
        let snap = crate::config::defaults::snapshot().expect("embedded default");
        let raw = json!({"metadata": {"name": "p", "namespace": "ns", "labels": {"app": "p"}},
            "spec": {"containers": [
                {"name": "app", "image": "nginx", "resources": {"requests": {"cpu": "1000m"}},
                 "securityContext": {"runAsUser": 1337},
                 "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]},
                {"name": "istio-proxy", "image": "proxy", "securityContext": {"runAsUser": 1337}}]}});
        let mut normal = raw.clone();
        inject::normalize_pod(&mut normal).expect("normalises");
        assert!(
            !identical(&normal, &raw),
            "the raw pod must not be in normal form"
        );
        // Large enough to be decoded again for the diff instead of kept.
        let mut large = raw.clone();
        large["metadata"]["annotations"] =
            json!({"example.com/large": "x".repeat(REDECODE_MIN_BODY)});
        for (pod, openshift) in [
            (&raw, false),
            (&normal, false),
            (&raw, true),
            (&normal, true),
            (&large, false),
            (&large, true),
        ] {
            let mut c = ctx(&snap);
            c.openshift = openshift;
            let r = review(&body(ADMISSION_V1, "u", "ns", pod.clone()), "/inject", &c);
            assert_eq!(r.outcome, Outcome::Injected, "{:?}", r.response);
            let v: Value = serde_json::from_slice(&r.response).expect("JSON response");
            let patch = STANDARD
                .decode(v["response"]["patch"].as_str().expect("patch"))
                .expect("base64");
            let mut input = pod.clone();
            if openshift {
                assert!(reset_openshift_proxy_user(&mut input, &mut Vec::new()));
            }
            let params = InjectParams {
                snapshot: &snap,
                mode: Mode::Webhook,
                workload: inject::workload_from_pod(&input),
                revision: REVISION,
                native_sidecars: false,
                proxy_envs: proxy_envs("/inject").0,
                proxy_uid_gid: None,
                compliance_policy: "",
            };
            let injected = inject::inject_pod(&input, &params).expect("injects");
            let want = crate::patch::create_json(pod, &injected.pod);
            assert_eq!(
                String::from_utf8(patch).expect("UTF-8 patch"),
                want,
                "openshift={openshift} normal={}",
                identical(pod, &normal)
            );
        }
    }

    /// Records what [`review`] asks; every node is new, except `old` (1.32).
    #[derive(Debug, Default)]
    struct AskedFacts(std::sync::Mutex<Vec<String>>);

    impl AskedFacts {
        fn asked(&self) -> Vec<String> {
            self.0.lock().expect("lock").clone()
        }
        fn ask(&self, what: String) {
            self.0.lock().expect("lock").push(what);
        }
    }

    impl ClusterFacts for AskedFacts {
        fn has_nodes(&self) -> bool {
            true
        }
        fn kubelet_version(&self, name: &str) -> Option<String> {
            self.ask(format!("node {name}"));
            Some(if name == "old" { "v1.32.0" } else { "v1.33" }.into())
        }
        fn all_nodes_native(&self, _: &mut Vec<String>) -> bool {
            self.ask("all nodes".into());
            true
        }
        fn namespace_annotations(&self, name: &str) -> Option<Map<String, Value>> {
            self.ask(format!("namespace {name}"));
            json!({OPENSHIFT_UID_RANGE: "1000/10"}).as_object().cloned()
        }
    }

    #[test]
    fn cluster_facts_are_asked_only_when_the_decision_needs_them() {
        let facts = AskedFacts::default();
        let pod = |inject: &str, node: Option<&str>| {
            let mut p = json!({"metadata": {"name": "p", "annotations": {"sidecar.istio.io/inject": inject}},
                   "spec": {"containers": [{"name": "app", "image": "nginx"}]}});
            if let Some(n) = node {
                p["spec"]["nodeName"] = json!(n);
            }
            p
        };
        let snap = snapshot(Policy::Disabled);
        let mut c = ctx(&snap);
        c.native_mode = NativeMode::Auto;
        c.cluster = &facts;
        c.openshift = true;
        let skipped = review(
            &body(ADMISSION_V1, "u1", "ns", pod("false", None)),
            "/inject",
            &c,
        );
        assert!(matches!(skipped.outcome, Outcome::Skipped(_)));
        assert!(facts.asked().is_empty(), "skipped pods never ask");
        let r = review(
            &body(ADMISSION_V1, "u2", "ns", pod("true", None)),
            "/inject",
            &c,
        );
        assert!(!matches!(r.outcome, Outcome::Skipped(_)));
        assert_eq!(facts.asked(), ["namespace ns", "all nodes"]);
        let r = review(
            &body(ADMISSION_V1, "u3", "ns", pod("true", Some("n1"))),
            "/inject",
            &c,
        );
        assert!(!matches!(r.outcome, Outcome::Skipped(_)));
        assert_eq!(facts.asked()[2..], ["namespace ns", "node n1"]);
        // Only auto mode consults the nodes, only OpenShift the namespaces.
        c.native_mode = NativeMode::Enabled;
        c.openshift = false;
        let _ = review(
            &body(ADMISSION_V1, "u4", "ns", pod("true", Some("n1"))),
            "/inject",
            &c,
        );
        assert_eq!(facts.asked().len(), 4);
    }

    #[test]
    fn kubelet_versions_are_read_as_go_semver_does() {
        for (version, native) in [
            ("v1.33", true),
            ("v1.033.0", true),
            ("v1.33.0", true),
            ("1.34.2+k3s1", true),
            ("v1.32.5-gke.100", false),
            ("v2.10.0", false),
        ] {
            assert_eq!(kubelet_supports_native(version), Ok(native), "{version}");
        }
        for bad in ["", "v1", "garbage", "v1.x.0", "v1.2.3.4"] {
            assert!(kubelet_supports_native(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn native_mode_from_the_environment() {
        assert_eq!(NativeMode::from_env(None), (NativeMode::Auto, None));
        assert_eq!(NativeMode::from_env(Some("true")).0, NativeMode::Enabled);
        assert_eq!(
            NativeMode::from_env(Some("bogus")),
            (
                NativeMode::Disabled,
                Some("Unknown value for ENABLE_NATIVE_SIDECARS: bogus, defaulting to false".into())
            )
        );
        assert_eq!(NativeMode::from_env(Some("")).0, NativeMode::Disabled);
    }

    #[test]
    fn native_sidecar_detection() {
        let node = |n: &str, v: &str| Node {
            name: n.into(),
            kubelet_version: v.into(),
        };
        let nodes = |list: Vec<Node>| StaticFacts {
            nodes: Some(list),
            namespaces: BTreeMap::new(),
        };
        let detect = |mode, facts: &dyn ClusterFacts, name: &str, w: &mut Vec<String>| {
            detect_native_sidecars(mode, facts, name, w)
        };
        let mut w = Vec::new();
        assert!(detect(NativeMode::Enabled, &NoCluster, "", &mut w));
        assert!(!detect(NativeMode::Disabled, &nodes(vec![]), "", &mut w));
        assert!(!detect(NativeMode::Auto, &NoCluster, "", &mut w));
        assert!(w[0].contains("couldn't find a client"));
        let new = nodes(vec![node("a", "v1.33.0"), node("b", "v1.34.2-gke.100")]);
        assert!(detect(NativeMode::Auto, &new, "", &mut w));
        assert!(detect(NativeMode::Auto, &nodes(vec![]), "", &mut w));
        let mixed = nodes(vec![node("new", "v1.33.0"), node("old", "1.32.9")]);
        assert!(!detect(NativeMode::Auto, &mixed, "", &mut w));
        assert!(detect(NativeMode::Auto, &mixed, "new", &mut w));
        let mut w = Vec::new();
        assert!(!detect(NativeMode::Auto, &mixed, "gone", &mut w));
        assert_eq!(
            w,
            vec!["pod assigned to node \"gone\" but node not found in cluster".to_string()]
        );
        let mut w = Vec::new();
        assert!(!detect(
            NativeMode::Auto,
            &nodes(vec![node("x", "banana")]),
            "",
            &mut w
        ));
        assert!(
            w[0].starts_with("could not read node version for x banana"),
            "{w:?}"
        );
        assert_eq!(kubelet_minor("v2.40.1+meta"), Ok(40));
        assert!(kubelet_minor("v1").is_err());
        assert_eq!(NativeMode::parse("auto").0, NativeMode::Auto);
        assert!(NativeMode::parse("yes").1.is_some());
    }

    #[test]
    fn pod_metadata_is_kept_only_when_asked() {
        let snap = snapshot(Policy::Enabled);
        let mut c = ctx(&snap);
        let p = json!({"metadata": {"name": "p", "managedFields": [{"manager": "m"}],
            "ownerReferences": [{"kind": "ReplicaSet", "name": "rs"}]},
            "spec": {"containers": [{"name": "app", "image": "nginx"}]}});
        let r = review(&body(ADMISSION_V1, "u", "ns", p.clone()), "/inject", &c);
        assert_eq!(r.pod_metadata, None);
        c.keep_metadata = true;
        let r = review(&body(ADMISSION_V1, "u", "ns", p), "/inject", &c);
        let meta = Value::Object(r.pod_metadata.expect("kept"));
        assert_eq!(
            meta,
            json!({"name": "p", "ownerReferences": [{"kind": "ReplicaSet", "name": "rs"}], "namespace": "ns"})
        );
        // A pod that does not decode still names its target.
        let bad = json!({"metadata": {"name": "q"}, "spec": {"nodeName": 3}});
        let r = review(&body(ADMISSION_V1, "u", "ns", bad), "/inject", &c);
        assert!(matches!(r.outcome, Outcome::Failed(_)));
        assert_eq!(r.pod_metadata.expect("kept")["name"], "q");
    }

    /// A panic inside the review (here: in the caller's cluster facts) is answered as a
    /// refusal carrying the request's UID, not propagated.
    #[test]
    fn a_panic_is_answered_with_the_request_uid() {
        #[derive(Debug)]
        struct Panics;
        impl ClusterFacts for Panics {
            fn namespace_annotations(&self, _: &str) -> Option<Map<String, Value>> {
                panic!("facts broke")
            }
        }
        let snap = snapshot(Policy::Enabled);
        let mut c = ctx(&snap);
        c.openshift = true;
        c.cluster = &Panics;
        let p = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "app"}]}});
        let r = review(&body(ADMISSION_V1, "u-9", "ns", p), "/inject", &c);
        let Outcome::Failed(f) = &r.outcome else {
            panic!("{:?}", r.outcome)
        };
        assert_eq!(f.reason, "internal_error");
        assert_eq!(f.message, "internal error: injection panicked: facts broke");
        assert!(!f.malformed);
        assert_eq!(r.uid, "u-9");
        assert!(
            text(&r).contains(r#""uid":"u-9","allowed":false"#),
            "{}",
            text(&r)
        );
    }

    #[test]
    fn no_input_panics() {
        let snap = snapshot(Policy::Enabled);
        let inputs: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b"null".to_vec(),
            br#"{"apiVersion":1}"#.to_vec(),
            br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":[]}"#
                .to_vec(),
            body(
                ADMISSION_V1,
                "u",
                "ns",
                json!({"metadata": null, "spec": null}),
            ),
            body(
                ADMISSION_V1,
                "u",
                "ns",
                json!({"metadata": {"labels": null, "annotations": {"sidecar.istio.io/inject": "maybe"}}}),
            ),
        ];
        for input in inputs {
            let r = review(&input, "/inject/a/b/c", &ctx(&snap));
            assert!(serde_json::from_slice::<Value>(&r.response).is_ok());
        }
    }
}
