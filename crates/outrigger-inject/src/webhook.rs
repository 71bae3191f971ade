//! The admission webhook's logic, without I/O: everything after the body is read.
//!
//! [`review`] takes the body of an `AdmissionReview` request (`admission.k8s.io/v1` or
//! `v1beta1`) and the URL path, and returns the response body in the request's version with its
//! UID, plus the [`Outcome`] for metrics and logs. HTTP concerns (body limits, `Content-Type`,
//! status codes) belong to the server; everything the reference does after the body is read is
//! here. Nothing in this module panics on any input: a panic inside the review (the pipeline,
//! or the caller's [`ClusterFacts`]) is caught and answered as a failure.

use std::panic::{catch_unwind, AssertUnwindSafe};

use serde_json::{Map, Value};

use crate::config::Snapshot;
use crate::decide::native::{detect_native_sidecars, ClusterFacts, NativeMode};
use crate::decide::openshift::{proxy_uid_gid, reset_openshift_proxy_user};
use crate::decide::selection::mark_injected;
use crate::decide::{inject_required, Reason};
use crate::ingest::admission::{
    decode_pod, decode_review, decode_review_doc, parse_document, prepare_metadata, prepare_pod,
    ApiVersion, Malformed, Request,
};
use crate::ingest::list_scan;
use crate::ingest::params::proxy_envs;
use crate::ingest::workload::workload_from_pod;
use crate::inject::{self, InjectParams, Mode, Settings};
use crate::json::lookup as jsonmap;
use crate::json::Scan;
use crate::kube::names;
use crate::kube::pod::{meta_str, potential_name};
use crate::mesh::MeshError;
use crate::render::RenderError;
use crate::respond::{encode_response, Answer};
use crate::Error;

/// The revision of an injector that names none (istiod's `REVISION` unset): what
/// [`Context::revision`] is unless the server serves another.
pub const REVISION: &str = crate::decide::selection::DEFAULT_REVISION;

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
    /// The revision this injector serves, as istiod's `REVISION`: the template's `.Revision`
    /// (Istio's templates write it into the `istio.io/rev` label) and the `revision` of the
    /// status annotation ([`REVISION`] for a default install).
    pub revision: &'a str,
    /// Keep the pod's metadata in [`Reviewed::pod_metadata`] (the target of a Kubernetes
    /// Event); off, the review does not copy it.
    pub keep_metadata: bool,
    /// The most entries a list of a pod to inject may hold, its containers, init containers
    /// and ephemeral containers counted together ([`MAX_LIST_ENTRIES`] by default): a pod
    /// over it is refused (reason `too_large`) before anything is rendered.
    pub max_list_entries: usize,
}

impl<'a> Context<'a> {
    /// The injection settings of a review whose native-sidecar answer is `native_sidecars`
    /// (the one builder of the parameters, [`Settings::params`]).
    pub fn settings(&self, native_sidecars: bool) -> Settings<'a> {
        Settings {
            snapshot: self.snapshot,
            revision: self.revision,
            native_sidecars,
            compliance_policy: self.compliance_policy,
        }
    }
}

/// The default of [`Context::max_list_entries`]: far above any real pod, and low enough that
/// the review of a pod at the limit stays a small fraction of a second.
pub const MAX_LIST_ENTRIES: usize = 10_000;

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
    /// `request.dryRun` was true: the caller must cause no side effect (no Event).
    pub dry_run: bool,
}

/// Answer one AdmissionReview. `path` is the decoded URL path (`/inject/...`).
///
/// This is the one panic boundary of the admission path: a panic anywhere in the review (the
/// pipeline, or the caller's [`ClusterFacts`]) is answered as a refusal with reason
/// `internal_error`, in the request's version and with its UID when they were read.
pub fn review(body: &[u8], path: &str, ctx: &Context<'_>) -> Reviewed {
    review_with(body, path, ctx, true)
}

/// [`review`]; `scan`: refuse a pod over the list bound from a scan of the body when it can
/// (off: always from the full path, for the tests that compare the two).
fn review_with(body: &[u8], path: &str, ctx: &Context<'_>, scan: bool) -> Reviewed {
    let mut known = Known::default();
    let verdict = catch_unwind(AssertUnwindSafe(|| {
        review_inner(body, path, ctx, &mut known, scan)
    }))
    .unwrap_or_else(|panic| {
        Err(Outcome::Failed(Failure {
            reason: "internal_error",
            message: format!(
                "internal error: injection panicked: {}",
                panic_text(&*panic)
            ),
            malformed: false,
        }))
    });
    match verdict {
        Ok(patch) => respond(known, Outcome::Injected, Some(patch)),
        Err(outcome) => respond(known, outcome, None),
    }
}

/// What a review has learnt so far (version, UID, names, the decision, warnings): what its
/// answer carries besides the outcome, kept outside the panic boundary so that a panic is
/// answered with it.
#[derive(Debug, Default)]
struct Known {
    version: Option<ApiVersion>,
    uid: String,
    dry_run: bool,
    namespace: String,
    pod_name: String,
    decision: String,
    warnings: Vec<String>,
    pod_metadata: Option<Map<String, Value>>,
}

/// [`review`] inside its panic boundary, each stage once and in order: ingest (the review, the
/// pod), decide, the proxy's parameters, inject, patch. Returns the JSON Patch, or the outcome
/// that ended the review before it (a malformed review, a pod that does not decode, a skip, a
/// failed injection); `known` gathers what the answer carries besides.
///
/// A body that can hold a list over [`Context::max_list_entries`] is scanned first
/// ([`list_scan`]): a pod the decision would inject whose lists are over the bound is refused
/// from the scan, without building its spec.
fn review_inner(
    body: &[u8],
    path: &str,
    ctx: &Context<'_>,
    known: &mut Known,
    scan: bool,
) -> Result<String, Outcome> {
    if scan && list_scan::may_hold_a_list_over(body, ctx.max_list_entries) {
        if let Some(refusal) = refuse_from_scan(body, ctx, known) {
            return Err(refusal);
        }
    }
    // Ingest: the review, then the pod in it.
    let doc = parse_document(body).map_err(|m| malformed(m, known))?;
    let (req, mut pod) = ingest(doc, body, ctx, known)?;

    // Decide.
    decide(&pod, ctx, known)?;
    if let Some(message) = oversized_list(&pod, ctx.max_list_entries) {
        return Err(too_large(message));
    }
    // The proxy's parameters: path, OpenShift user, native sidecars.
    let (proxy_envs, env_warnings) = proxy_envs(path);
    known.warnings.extend(env_warnings);
    // Whether `pod` is still the pod exactly as received (after managedFields removal and
    // namespace defaulting), which the patch is computed against.
    let mut as_received = true;
    let uid_gid = if ctx.openshift {
        as_received = !reset_openshift_proxy_user(&mut pod, &mut known.warnings);
        let annotations = ctx
            .cluster
            .namespace_annotations(meta_str(&pod, "namespace"));
        if annotations.is_none() {
            known.warnings.push(format!(
                "unable to fetch namespace, failed to get client for {:?}",
                names::DEFAULT_CLUSTER_ID
            ));
        }
        annotations.as_ref().map(proxy_uid_gid)
    } else {
        None
    };
    let node_name = jsonmap::path(&pod, &["spec", "nodeName"])
        .and_then(Value::as_str)
        .unwrap_or("");
    let native =
        detect_native_sidecars(ctx.native_mode, ctx.cluster, node_name, &mut known.warnings);
    let mut params = ctx
        .settings(native)
        .params(Mode::Webhook, workload_from_pod(&pod));
    params.proxy_envs = proxy_envs;
    params.proxy_uid_gid = uid_gid;

    // Inject, then patch.
    let (patch, injected_warnings) = answer_pod(pod, as_received, body, &req.namespace, &params)
        .map_err(|e| {
            Outcome::Failed(Failure {
                reason: error_code(&e),
                message: e.to_string(),
                malformed: false,
            })
        })?;
    known.warnings.extend(injected_warnings);
    Ok(patch)
}

/// The answer to a body that is not a usable review (`known` takes its version, when read).
fn malformed(m: Malformed, known: &mut Known) -> Outcome {
    known.version = m.version;
    Outcome::Failed(Failure {
        reason: m.reason,
        message: m.message,
        malformed: true,
    })
}

/// The refusal of a pod too large to inject.
fn too_large(message: String) -> Outcome {
    Outcome::Failed(Failure {
        reason: "too_large",
        message,
        malformed: false,
    })
}

/// Ingest: the review `doc` (parsed from `body`), then the pod in it, prepared for the decision.
fn ingest(
    doc: Value,
    body: &[u8],
    ctx: &Context<'_>,
    known: &mut Known,
) -> Result<(Request, Value), Outcome> {
    let mut req = decode_review_doc(doc, body).map_err(|m| malformed(m, known))?;
    known.uid = req.uid.clone();
    known.version = Some(req.version);
    known.dry_run = req.dry_run;
    if ctx.keep_metadata {
        known.pod_metadata = req
            .object
            .as_ref()
            .map(|pod| event_metadata(pod, &req.namespace));
    }
    let mut pod = decode_pod(req.object.take()).map_err(|message| {
        Outcome::Failed(Failure {
            reason: "pod_decode",
            message,
            malformed: false,
        })
    })?;
    prepare_pod(&mut pod, &req.namespace);
    known.namespace = meta_str(&pod, "namespace").to_string();
    known.pod_name = potential_name(&pod);
    Ok((req, pod))
}

/// Decide: `Err` with the skip when the pod is not to be injected.
fn decide(pod: &Value, ctx: &Context<'_>, known: &mut Known) -> Result<(), Outcome> {
    let snap = ctx.snapshot;
    let decision = inject_required(
        pod,
        &snap.config.policy,
        &snap.config.never_inject_selector,
        &snap.config.always_inject_selector,
    );
    known.warnings.extend(decision.warnings.iter().cloned());
    known.decision = decision.message;
    if decision.inject {
        Ok(())
    } else {
        Err(Outcome::Skipped(decision.reason))
    }
}

/// The refusal of a pod over the list bound, told from a scan of `body` when the review and its
/// pod's metadata decode and the decision would inject it; `None` otherwise (the full path then
/// answers, `known` untouched): what the full path answers for such a pod, without its spec
/// built.
fn refuse_from_scan(body: &[u8], ctx: &Context<'_>, known: &mut Known) -> Option<Outcome> {
    let scanned = list_scan::scan(body, ctx.max_list_entries)?;
    let message = scanned.too_large?;
    let mut early = Known::default();
    let (_, pod) = ingest(scanned.review, body, ctx, &mut early).ok()?;
    decide(&pod, ctx, &mut early).ok()?;
    *known = early;
    Some(too_large(message))
}

/// Why `pod` is too large to inject: its containers (init and ephemeral containers included),
/// a list of its spec (volumes, ...) or a list of one of its containers (env, ports, ...) hold
/// more than `max` entries (`None`: it is not). Looks at list lengths only, not at their entries.
fn oversized_list(pod: &Value, max: usize) -> Option<String> {
    let spec = pod.scan("spec")?.as_object()?;
    let containers: usize = list_scan::CONTAINER_LISTS
        .iter()
        .filter_map(|f| spec.scan(f)?.as_array().map(Vec::len))
        .sum();
    if containers > max {
        return Some(list_scan::too_many_containers(containers, max));
    }
    for (k, v) in spec {
        let Some(list) = v.as_array() else { continue };
        if list.len() > max {
            return Some(list_scan::list_over(&format!("spec.{k}"), list.len(), max));
        }
        if !list_scan::CONTAINER_LISTS.contains(&k.as_str()) {
            continue;
        }
        for (i, c) in list.iter().enumerate() {
            let Some(c) = c.as_object() else { continue };
            for (f, x) in c {
                match x.as_array() {
                    Some(a) if a.len() > max => {
                        return Some(list_scan::list_over(
                            &format!("spec.{k}[{i}].{f}"),
                            a.len(),
                            max,
                        ))
                    }
                    _ => {}
                }
            }
        }
    }
    None
}

/// The pod's metadata as the Event target: without `managedFields`, the namespace defaulted
/// from the request as [`prepare_pod`] does (an empty map when the pod has none).
fn event_metadata(pod: &Value, request_namespace: &str) -> Map<String, Value> {
    // Copied without managedFields (often the largest part of the metadata).
    let mut meta: Map<String, Value> = pod
        .scan("metadata")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter(|(k, _)| k.as_str() != "managedFields")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    prepare_metadata(&mut meta, request_namespace);
    meta
}

/// [`inject_and_diff`] through the snapshot's memo of answers
/// ([`crate::config::render_memo::Answered`]): the pods of one workload reach the webhook
/// identical, and so do their patches. The key is the pod as received (after managedFields
/// removal and namespace defaulting) and every parameter of its injection; only pods received
/// as they are injected (`as_received`) and whose selected templates are all deterministic
/// ([`crate::template::Template::is_deterministic`]) are remembered, and only answers that
/// injected. Everything else the answer depends on is the snapshot's, which the memo belongs to.
fn answer_pod(
    pod: Value,
    as_received: bool,
    body: &[u8],
    request_namespace: &str,
    params: &InjectParams<'_>,
) -> Result<(String, Vec<String>), Error> {
    use crate::config::render_memo::{Answered, Key};
    let snap = params.snapshot;
    let deterministic = || {
        crate::render::select_templates(snap, &pod).iter().all(|n| {
            snap.config
                .templates
                .get(n)
                .is_some_and(|t| t.is_deterministic())
        })
    };
    if !as_received || !deterministic() {
        return inject_and_diff(pod, as_received, body, request_namespace, params);
    }
    let head = answer_head(request_namespace, params);
    let null = Value::Null;
    let key = Key {
        head: &head,
        trees: [&pod, &null],
        fields: [None, None],
    };
    let Some(hash) = key.hash() else {
        return inject_and_diff(pod, as_received, body, request_namespace, params);
    };
    let memo = &snap.render_memo.answers;
    if let Some(hit) = memo.get(hash, &key) {
        return Ok((hit.patch.clone(), hit.warnings.clone()));
    }
    let kept = memo.admit(hash).then(|| crate::json::compact::clone(&pod));
    let (patch, warnings) = inject_and_diff(pod, as_received, body, request_namespace, params)?;
    if let Some(received) = kept {
        let key = Key {
            head: &head,
            trees: [&received, &null],
            fields: [None, None],
        };
        let answer = Answered {
            patch: patch.clone(),
            warnings: warnings.clone(),
        };
        memo.insert(hash, &key, std::sync::Arc::new(answer));
    }
    Ok((patch, warnings))
}

/// The bytes of every parameter of a pod's injection besides the pod and the snapshot
/// (length-prefixed strings; the mode is always the webhook's).
fn answer_head(request_namespace: &str, p: &InjectParams<'_>) -> Vec<u8> {
    let mut k = Vec::with_capacity(256);
    let mut put = |s: &str| {
        k.extend_from_slice(&(s.len() as u64).to_le_bytes());
        k.extend_from_slice(s.as_bytes());
    };
    put(request_namespace);
    put(&p.workload.kind);
    put(&p.workload.api_version);
    put(&p.workload.name);
    put(&p.workload.namespace);
    put(p.revision);
    put(p.compliance_policy);
    for (name, value) in &p.proxy_envs {
        put(name);
        put(value);
    }
    put(if p.native_sidecars { "native" } else { "" });
    match p.proxy_uid_gid {
        Some((uid, gid)) => put(&format!("{uid}:{gid}")),
        None => put(""),
    }
    put(&format!("{} envs", p.proxy_envs.len()));
    k
}

/// Inject `pod`, mark it as outrigger's ([`mark_injected`]: the one difference from istiod's
/// webhook, which never writes the marker), and diff the result against the pod as received,
/// holding at most two pod-sized trees at a time (the webhook's memory budget).
///
/// The patch is computed against the pod exactly as received (after managedFields removal and
/// namespace defaulting), so it applies to the caller's document by construction even where our
/// typed normalisation and the caller's serialisation differ. The pod is normalised in place: one
/// already in normal form (what the API server sends) is left exactly as it was, so it is the pod
/// as received and is neither copied nor compared; any other (or one the review changed before,
/// `as_received` false) is decoded again from `body` for the diff once the pipeline has run.
fn inject_and_diff(
    mut pod: Value,
    as_received: bool,
    body: &[u8],
    request_namespace: &str,
    params: &InjectParams<'_>,
) -> Result<(String, Vec<String>), Error> {
    let changed = inject::normalize_pod_changed(&mut pod)?;
    let mut injected = inject::inject_normalized(&pod, params)?;
    crate::kube::validate::check_injected(&pod, &injected.pod)?;
    mark_injected(&mut injected.pod);
    if as_received && !changed {
        let patch = crate::patch::create_json_reusing(&pod, injected.pod);
        return Ok((patch, injected.warnings));
    }
    drop(pod);
    let received = decode_review(body)
        .ok()
        .and_then(|r| decode_pod(r.object).ok())
        .map(|mut p| {
            prepare_pod(&mut p, request_namespace);
            p
        })
        .ok_or(Error::Internal("the review did not decode twice"))?;
    let patch = crate::patch::create_json_reusing(&received, injected.pod);
    Ok((patch, injected.warnings))
}

#[cfg(test)]
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

/// Respond stage of a review: the answer in the request's version, with what the review learnt
/// and its outcome.
fn respond(known: Known, outcome: Outcome, patch: Option<String>) -> Reviewed {
    let answer = match &outcome {
        Outcome::Failed(f) => Answer::Refuse(&f.message),
        Outcome::Skipped(_) => Answer::Allow(None),
        Outcome::Injected => Answer::Allow(patch.as_deref()),
    };
    let response = encode_response(known.version, &known.uid, answer).into_bytes();
    Reviewed {
        response,
        outcome,
        version: known.version,
        uid: known.uid,
        namespace: known.namespace,
        pod_name: known.pod_name,
        decision: known.decision,
        warnings: known.warnings,
        patch,
        pod_metadata: known.pod_metadata,
        dry_run: known.dry_run,
    }
}

/// Metrics reason code of a pipeline error.
pub fn error_code(e: &Error) -> &'static str {
    match e {
        Error::Context(c) => error_code(&c.source),
        Error::Yaml(_) => "yaml",
        Error::Json(_) => "json",
        Error::Config(_) => "config",
        Error::Template(_) => "template",
        Error::InvalidAnnotations(_) => "invalid_annotations",
        Error::Render(r) if matches!(**r, RenderError::TemplateNotFound { .. }) => "template",
        Error::Render(_) | Error::Merge(_) => "merge",
        Error::Type(_) => "type",
        Error::Mesh(m) if matches!(**m, MeshError::InvalidMeshConfig(_)) => "config",
        Error::Mesh(_) => "proxy_config",
        Error::Scrape(_) | Error::Internal(_) => "inject",
        Error::Workload(_) => "workload",
        Error::RefusedPod(_) => "refused_pod",
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

#[cfg(test)]
mod tests {
    use base64::Engine as _;

    use std::collections::BTreeMap;

    use super::*;
    use crate::config::Policy;
    use crate::config::{InjectorConfig, ValuesFacts};
    use crate::decide::native::NoCluster;
    use crate::ingest::admission::{ADMISSION_V1, ADMISSION_V1BETA1};
    use crate::kube::names::OPENSHIFT_UID_RANGE;
    use crate::kube::selector::LabelSelector;
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
            template_env: BTreeMap::new(),
            render_memo: Default::default(),
        }
    }

    fn ctx(snapshot: &Snapshot) -> Context<'_> {
        Context {
            snapshot,
            native_mode: NativeMode::Disabled,
            cluster: &NoCluster,
            openshift: false,
            compliance_policy: "",
            revision: REVISION,
            keep_metadata: false,
            max_list_entries: MAX_LIST_ENTRIES,
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

    /// A pod whose only container is `istio-proxy`, injected with native sidecars, would have no
    /// containers left: refused, naming the API server's rule, not patched.
    #[test]
    fn an_injection_the_api_server_would_refuse_is_refused_naming_the_rule() {
        let snap = crate::config::defaults::snapshot().expect("defaults");
        let mut c = ctx(&snap);
        c.native_mode = NativeMode::Enabled;
        let pod = json!({"metadata": {"name": "gw"},
            "spec": {"containers": [{"name": "istio-proxy", "image": "auto"}]}});
        let r = review(&body(ADMISSION_V1, "u-9", "ns", pod.clone()), "/inject", &c);
        let Outcome::Failed(f) = &r.outcome else {
            panic!("refused: {:?}", r.outcome)
        };
        assert_eq!(f.reason, "refused_pod");
        assert!(
            f.message
                .contains("spec.containers: Required value (validateContainers)"),
            "{}",
            f.message
        );
        let answer: Value = serde_json::from_slice(&r.response).expect("json");
        assert_eq!(answer["response"]["allowed"], false, "{answer}");
        // Without native sidecars the proxy stays a container: injected.
        c.native_mode = NativeMode::Disabled;
        let r = review(&body(ADMISSION_V1, "u-10", "ns", pod), "/inject", &c);
        assert_eq!(r.outcome, Outcome::Injected);
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

    /// A UID longer than Kubernetes ever sends is refused as malformed and not repeated in the
    /// answer; one at the limit is answered as usual.
    #[test]
    fn oversized_uids_are_refused_and_not_echoed() {
        let snap = snapshot(Policy::Enabled);
        let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}});
        let long = "u".repeat(129);
        let r = review(
            &body(ADMISSION_V1, &long, "ns", pod.clone()),
            "/inject",
            &ctx(&snap),
        );
        let Outcome::Failed(f) = &r.outcome else {
            panic!("expected failure")
        };
        assert_eq!((f.reason, f.malformed), ("uid_too_long", true));
        assert_eq!(
            f.message,
            "request.uid is 129 bytes long, over the limit of 128 (the API server sends a 36-byte UID)"
        );
        assert!(r.uid.is_empty());
        assert!(!text(&r).contains(&long), "{}", text(&r));
        let at_limit = "u".repeat(128);
        let r = review(
            &body(ADMISSION_V1, &at_limit, "ns", pod),
            "/inject",
            &ctx(&snap),
        );
        assert!(
            !matches!(&r.outcome, Outcome::Failed(f) if f.malformed),
            "{:?}",
            r.outcome
        );
        assert_eq!(r.uid, at_limit);
        assert!(text(&r).contains(&format!("\"uid\":\"{at_limit}\"")));
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

    /// The patch is computed against the pod as received whichever way the review holds its
    /// trees: a pod already in normal form (one tree), one that normalisation changes (decoded
    /// again for the diff), small or large, and an OpenShift pod whose proxy user is reset
    /// before injection.
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
        large["metadata"]["annotations"] = json!({"example.com/large": "x".repeat(64 * 1024)});
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
                workload: workload_from_pod(&input),
                revision: REVISION,
                native_sidecars: false,
                proxy_envs: proxy_envs("/inject").0,
                proxy_uid_gid: None,
                compliance_policy: "",
            };
            let mut injected = inject::inject_pod(&input, &params).expect("injects");
            // The webhook's one addition to the pipeline's pod: outrigger's marker.
            assert!(!crate::decide::selection::injected_by_outrigger(
                &injected.pod
            ));
            mark_injected(&mut injected.pod);
            let want = crate::patch::create_json(pod, &injected.pod);
            assert_eq!(
                String::from_utf8(patch).expect("UTF-8 patch"),
                want,
                "openshift={openshift} normal={}",
                identical(pod, &normal)
            );
        }
    }

    /// A repeated pod is answered from the snapshot's memo of answers, byte for byte as the
    /// first time; a pod that differs anywhere, or asks for other parameters, is injected
    /// afresh; templates that are not deterministic are never remembered.
    #[test]
    fn repeated_pods_are_answered_from_the_memo_exactly() {
        let snap = crate::config::defaults::snapshot().expect("embedded default");
        let c = ctx(&snap);
        let pod = |app: &str| {
            json!({"metadata": {"generateName": "p-", "labels": {"app": app}},
                   "spec": {"containers": [{"name": "app", "image": "nginx"}]}})
        };
        let answers = |pod: &Value, path: &str, n: usize| -> Vec<Vec<u8>> {
            (0..n)
                .map(|i| {
                    let r = review(
                        &body(ADMISSION_V1, &format!("u{i}"), "ns", pod.clone()),
                        path,
                        &c,
                    );
                    assert_eq!(r.outcome, Outcome::Injected, "{:?}", r.response);
                    // The UID differs per review; the rest must not.
                    String::from_utf8(r.response)
                        .expect("UTF-8")
                        .replace(&format!("\"u{i}\""), "\"u\"")
                        .into_bytes()
                })
                .collect()
        };
        let a = answers(&pod("a"), "/inject", 4);
        assert!(a.windows(2).all(|w| w[0] == w[1]), "same answers");
        assert_eq!(
            snap.render_memo.answers.len(),
            1,
            "remembered on the second sighting"
        );
        // Another pod and another path are not answered from the memo.
        let fresh = crate::config::defaults::snapshot().expect("embedded default");
        let cf = ctx(&fresh);
        for (p, path) in [
            (pod("b"), "/inject"),
            (pod("a"), "/inject/cluster/c2/net/n2"),
        ] {
            let memo_answer = answers(&p, path, 3).pop().expect("answer");
            let r = review(&body(ADMISSION_V1, "u", "ns", p.clone()), path, &cf);
            assert_eq!(memo_answer, r.response, "{p} {path}");
            assert_ne!(memo_answer, a[0], "{p} {path}");
        }
        assert_eq!(snap.render_memo.answers.len(), 3);
        // A template calling a clock or random function: never remembered.
        let config = crate::config::InjectorConfig::parse(
            "policy: enabled\ntemplates:\n  sidecar: |\n    metadata:\n      labels:\n        \
             year: {{ now | date \"2006\" | quote }}\n",
        )
        .expect("config");
        let s = Snapshot::with_config(config, "{}", None).expect("snapshot");
        let c = ctx(&s);
        for i in 0..3 {
            let r = review(&body(ADMISSION_V1, "u", "ns", pod("a")), "/inject", &c);
            assert_eq!(r.outcome, Outcome::Injected, "{i}: {:?}", r.response);
        }
        assert!(s.render_memo.answers.is_empty());
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

    #[test]
    fn error_codes_look_through_context_and_keep_the_config_label_of_mesh_validation() {
        let invalid_mesh = Error::from(MeshError::InvalidMeshConfig(vec!["bad port".into()]));
        assert_eq!(error_code(&invalid_mesh), "config");
        assert_eq!(
            invalid_mesh.to_string(),
            "1 error occurred:\n\t* bad port\n\n"
        );
        let wrapped = Error::from(MeshError::NullMapValue("a[\"k\"]".into()))
            .context("failed to run injection template");
        assert_eq!(error_code(&wrapped), "proxy_config");
        assert_eq!(
            wrapped.to_string(),
            "failed to run injection template: a[\"k\"]: null map value"
        );
        let shape = Error::from(crate::config::ConfigError::Shape {
            path: String::new(),
            expected: "a map",
            got: "a number".into(),
        });
        assert_eq!(error_code(&shape), "config");
        assert_eq!(
            shape.to_string(),
            "failed to unmarshal injection template: expected a map, got a number"
        );
    }

    /// A pod of `n` containers, each with a port and an env var, for the embedded default.
    fn pod_of(n: usize) -> Value {
        let containers: Vec<Value> = (0..n)
            .map(|i| {
                json!({"name": format!("c{i}"), "image": "nginx",
                       "ports": [{"containerPort": 8000 + i}],
                       "env": [{"name": "N", "value": format!("{i}")}]})
            })
            .collect();
        json!({"metadata": {"name": "big"}, "spec": {"containers": containers}})
    }

    /// The work a review counts ([`crate::work`]): template steps, list elements copied and
    /// merged.
    fn review_work(snap: &Snapshot, pod: Value) -> u64 {
        let budget = crate::work::Budget::new(None);
        let r = crate::work::scope(&budget, || {
            review(&body(ADMISSION_V1, "u", "ns", pod), "/inject", &ctx(snap))
        });
        assert_eq!(r.outcome, Outcome::Injected, "{}", text(&r));
        budget.work()
    }

    #[test]
    fn review_work_is_linear_in_the_containers() {
        let snap = crate::config::defaults::snapshot().expect("embedded default");
        let (one, two) = (
            review_work(&snap, pod_of(400)),
            review_work(&snap, pod_of(800)),
        );
        let ratio = two as f64 / one as f64;
        assert!(
            ratio <= 2.2,
            "800 containers cost {ratio:.2}x the work of 400 ({two} vs {one})"
        );
    }

    /// The scan of a large body refuses exactly as the full check does (same answer, outcome,
    /// names, decision and Event metadata), and leaves to the full path what it does not mirror:
    /// pods the decision skips, metadata that does not decode, repeated keys.
    #[test]
    fn the_scan_refuses_as_the_full_check_does() {
        let snap = crate::config::defaults::snapshot().expect("embedded default");
        let mut small = ctx(&snap);
        small.max_list_entries = 3;
        small.keep_metadata = true;
        let mut env = pod_of(1);
        env["spec"]["containers"][0]["env"] =
            json!([{"name": "A"}, {"name": "B"}, {"name": "C"}, {"name": "D"}]);
        let mut volumes = pod_of(1);
        volumes["spec"]["volumes"] = json!([{"name": "a", "emptyDir": {}}, {"name": "b"},
            {"name": "c"}, {"name": "d"}]);
        let mut init = pod_of(2);
        init["spec"]["initContainers"] = json!([{"name": "i1"}, {"name": "i2"}]);
        let mut skipped = pod_of(10);
        skipped["metadata"]["annotations"] = json!({"sidecar.istio.io/inject": "false"});
        let mut host = pod_of(10);
        host["spec"]["hostNetwork"] = json!(true);
        let mut bad_labels = pod_of(10);
        bad_labels["metadata"]["labels"] = json!({"app": 1});
        let mut bad_node = pod_of(10);
        bad_node["spec"]["nodeName"] = json!({"n": 1});
        let mut owned = pod_of(5);
        owned["metadata"]["generateName"] = json!("web-");
        owned["metadata"]["managedFields"] = json!([{"manager": "m"}]);
        let c = r#"{"name":"a","image":"x"}"#;
        let repeated = format!(
            r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{"uid":"u","namespace":"ns","object":{{"metadata":{{"name":"d"}},"spec":{{"containers":[{c},{c},{c},{c}],"containers":[{c}]}}}}}}}}"#
        );
        let pods = [
            pod_of(4),
            pod_of(3),
            env,
            volumes,
            init,
            skipped,
            host,
            bad_labels,
            bad_node,
            owned,
        ];
        let mut bodies: Vec<Vec<u8>> = pods
            .into_iter()
            .map(|p| body(ADMISSION_V1, "u", "ns", p))
            .collect();
        bodies.push(repeated.into_bytes());
        // A container's list given twice: the last one counts (1 entry), as in the full check.
        let e = r#"{"name":"E"}"#;
        bodies.push(
            format!(
                r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{"uid":"u","namespace":"ns","object":{{"metadata":{{"name":"d"}},"spec":{{"containers":[{{"name":"a","image":"x","env":[{e},{e},{e},{e}],"env":[{e}]}}]}}}}}}}}"#
            )
            .into_bytes(),
        );
        bodies.push(b"not json, 1, 2, 3, 4, 5".to_vec());
        let mut from_scan = 0;
        for b in &bodies {
            let fast = review_with(b, "/inject", &small, true);
            let full = review_with(b, "/inject", &small, false);
            let show = String::from_utf8_lossy(b);
            assert_eq!(fast.outcome, full.outcome, "{show}");
            assert_eq!(text(&fast), text(&full), "{show}");
            assert_eq!(
                (&fast.uid, &fast.namespace, &fast.pod_name, &fast.decision),
                (&full.uid, &full.namespace, &full.pod_name, &full.decision),
                "{show}"
            );
            assert_eq!(fast.warnings, full.warnings, "{show}");
            assert_eq!(fast.pod_metadata, full.pod_metadata, "{show}");
            from_scan += usize::from(refuse_from_scan(b, &small, &mut Known::default()).is_some());
        }
        // Five of them (4 containers, the env list, the volumes, the init containers, the pod
        // with a generateName) refused from the scan; the rest by the full path.
        assert_eq!(from_scan, 5);
    }

    #[test]
    fn pods_with_lists_over_the_bound_are_refused_before_rendering() {
        let snap = crate::config::defaults::snapshot().expect("embedded default");
        let mut small = ctx(&snap);
        small.max_list_entries = 3;
        let refused = |pod: Value| {
            let r = review(&body(ADMISSION_V1, "u", "ns", pod), "/inject", &small);
            match r.outcome {
                Outcome::Failed(f) if f.reason == "too_large" && !f.malformed => f.message,
                other => panic!("not refused as too large: {other:?}"),
            }
        };
        assert_eq!(
            refused(pod_of(4)),
            "the pod has 4 containers (init and ephemeral containers included); outrigger \
             injects pods of at most 3"
        );
        let mut mixed = pod_of(2);
        mixed["spec"]["initContainers"] =
            json!([{"name": "i1", "image": "x"}, {"name": "i2", "image": "x"}]);
        assert!(refused(mixed).starts_with("the pod has 4 containers"));
        let mut env = pod_of(1);
        env["spec"]["containers"][0]["env"] =
            json!([{"name": "A"}, {"name": "B"}, {"name": "C"}, {"name": "D"}]);
        assert_eq!(
            refused(env),
            "the pod's spec.containers[0].env has 4 entries; outrigger injects pods whose lists \
             hold at most 3"
        );
        // At the bound: injected; a pod the decision skips is skipped, whatever its size.
        let r = review(&body(ADMISSION_V1, "u", "ns", pod_of(3)), "/inject", &small);
        assert_eq!(r.outcome, Outcome::Injected);
        let mut skipped = pod_of(10);
        skipped["metadata"]["annotations"] = json!({"sidecar.istio.io/inject": "false"});
        let r = review(&body(ADMISSION_V1, "u", "ns", skipped), "/inject", &small);
        assert_eq!(r.outcome, Outcome::Skipped(Reason::AnnotationDisabled));
        // The answer refuses the pod, naming why.
        let r = review(&body(ADMISSION_V1, "u", "ns", pod_of(4)), "/inject", &small);
        assert!(
            text(&r).contains(
                r#""allowed":false,"status":{"metadata":{},"message":"the pod has 4 containers"#
            ),
            "{}",
            text(&r)
        );
    }
}
