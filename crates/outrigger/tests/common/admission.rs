//! kube-apiserver's mutating admission for pods created through the fake API server
//! ([`super::kube_api`]): what happens between `POST /api/v1/namespaces/{ns}/pods` and the
//! stored pod.
//!
//! Faithful to the API server's documented behaviour (Kubernetes' "Dynamic Admission Control"
//! and the admission webhook dispatcher):
//!
//! - **Order.** Every MutatingWebhookConfiguration, sorted by name, and within one its `webhooks`
//!   in order (the webhook source sorts configurations by name).
//! - **Selection.** `rules` (operation CREATE, group `""`, version `v1`, resource `pods`, with
//!   `*`), `namespaceSelector` against the namespace's labels (the API server always carries
//!   `kubernetes.io/metadata.name`; the fake adds it), `objectSelector` against the pod's labels;
//!   label selectors as `metav1.LabelSelector` (`matchLabels`, `In`, `NotIn` (matches an absent
//!   key), `Exists`, `DoesNotExist`; an empty selector selects everything).
//! - **matchConditions**, after rules and selectors (the dispatcher's `ShouldCallHook`), with a
//!   CEL implementation (the `cel` crate, cel-rust, as the library's `match_conditions` test):
//!   variables `object` (the pod as mutated so far), `oldObject` (null on CREATE) and `request`
//!   (the AdmissionRequest the webhook would receive). Every condition is evaluated; any `false`
//!   skips the webhook, whatever the others gave; otherwise any evaluation error (a non-boolean
//!   result included) applies `failurePolicy`: `Ignore` skips, `Fail` refuses the pod with 403
//!   `pods "NAME" is forbidden: expression 'EXPR' resulted in error: CAUSE` (several errors as
//!   `[e1, e2]`, Go's aggregate). Conditions are evaluated again on reinvocation. What the API
//!   server refuses at write (more than 64 conditions, a repeated name, an expression that does
//!   not compile) makes the fake panic rather than decide.
//! - **The call.** `clientConfig.service` is resolved to the Service's ready endpoints
//!   ([`super::kube_api::Cluster::endpoints`], the test servers' loopback addresses, taken in
//!   turn from one call to the next, as kube-proxy spreads connections): none is a
//!   call failure (`service "x" has no ready endpoints`, wording approximate). TLS is verified
//!   against `clientConfig.caBundle` alone, for the name `<service>.<namespace>.svc`; ALPN offers
//!   `h2` and `http/1.1`. An AdmissionReview `admission.k8s.io/v1` (or `v1beta1` when only that
//!   is listed) is POSTed to `path` with `?timeout=Ns`; `timeoutSeconds` (default 10) bounds the
//!   whole call.
//! - **Answers.** A failed call (connection, TLS, timeout, HTTP status other than 200, a review
//!   that does not parse or whose `uid` differs) follows `failurePolicy` (default `Fail`):
//!   `Ignore` skips the webhook, `Fail` refuses the pod with 500 `Internal error occurred:
//!   failed calling webhook "NAME": ...`. `allowed: false` refuses it with the response's
//!   `status.code` (400 when absent or 200) and `admission webhook "NAME" denied the request:
//!   MESSAGE` (`... without explanation` without one), whatever the failure policy. A JSON patch
//!   (`patchType: JSONPatch`) is applied to the pod; one that does not apply is a 500.
//! - **Reinvocation.** After the pass, each webhook with `reinvocationPolicy: IfNeeded` that was
//!   called and whose input changed since (a later webhook mutated the pod) is called once more,
//!   in order; there is at most one reinvocation pass.
//! - **dryRun** (`?dryRun=All`): `request.dryRun` is true, a webhook whose `sideEffects` is not
//!   `None` or `NoneOnDryRun` refuses the request (400 `admission webhook "NAME" does not support
//!   dry run`), and the admitted pod is returned, not stored.
//!
//! Not modelled, or unsure: the CEL `authorizer` variable (an expression naming it panics), CEL's
//! compile-time type check (an expression the API server refuses because it cannot be boolean
//! is only found when it evaluates, as an error) and its cost budget, and the exact text of CEL
//! errors (cel-rust's, not cel-go's: assert on the prefix up to `resulted in error:`); feature
//! gates (a 1.27 API server, `matchConditions` alpha and off, drops the field; the fake always
//! evaluates it); `clientConfig.url` (panics rather than select wrongly); `matchPolicy:
//! Equivalent` conversions; in-tree admission plugins (and their reinvocation); the exact text of
//! transport errors (Go's wording is only approximated: assert on the webhook name and the stable
//! prefixes above, not on the cause); how the API server reaches a Service (it may dial the
//! ClusterIP and let kube-proxy choose, or an endpoint itself: the fake takes endpoints in turn,
//! and a removed endpoint is never dialled again, with no propagation delay of its own); the
//! Service's `port` → `targetPort` mapping (the endpoint's address is used as is).
//!
//! - **Defaulting and in-tree plugins** ([`InTree`], the independent models of
//!   outrigger-inject's `tests/model/apiserver.rs`): the pod is decoded with
//!   `SetObjectDefaults_Pod` before admission and again after each webhook's patch; LimitRanger,
//!   ServiceAccount, DefaultTolerationSeconds and Priority run before the webhooks and again when
//!   a webhook is reinvoked.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::{http1, http2};
use hyper::Request;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::ServerName;
use serde_json::{json, Value};

use super::apiserver_model;
use super::kube_api::Cluster;

/// kube-apiserver's in-tree mutating admission plugins for one pod create, as the fake runs
/// them (the models of [`apiserver_model`]): LimitRanger with the namespace's LimitRanges,
/// ServiceAccount (the pod's account's `automountServiceAccountToken` when the account is
/// stored), DefaultTolerationSeconds, Priority, in the API server's order.
pub struct InTree {
    limit_ranges: Vec<Value>,
    sa_automount: Option<bool>,
    token_volume: String,
}

impl InTree {
    /// The plugins' inputs for a pod created in `ns` (the `admission`-th create names the
    /// token volume).
    pub fn of(c: &Cluster, ns: &str, pod: &Value, admission: u64) -> InTree {
        let sa = pod["spec"]["serviceAccountName"]
            .as_str()
            .filter(|s| !s.is_empty())
            .unwrap_or("default");
        InTree {
            limit_ranges: c
                .all("limitranges")
                .into_iter()
                .filter(|l| l["metadata"]["namespace"] == ns)
                .collect(),
            sa_automount: c
                .get("serviceaccounts", ns, sa)
                .and_then(|a| a["automountServiceAccountToken"].as_bool()),
            token_volume: format!("kube-api-access-{:05}", admission % 100_000),
        }
    }

    /// Run the plugins on `pod` (a pod without a spec is left to validation).
    pub fn admit(&self, pod: &mut Value) {
        if !pod["spec"].is_object() {
            return;
        }
        for lr in &self.limit_ranges {
            apiserver_model::limit_ranger(pod, lr);
        }
        apiserver_model::service_account(pod, self.sa_automount, &self.token_volume);
        apiserver_model::default_tolerations(pod);
        apiserver_model::priority(pod);
    }
}

/// Store `pod` in `ns` as the API server stores a pod whose only webhook is `webhook` (run in
/// the test's process): decoded with defaults, the in-tree plugins, the webhook, the defaults
/// again. Returns the stored pod.
pub fn store_admitted(
    c: &mut Cluster,
    ns: &str,
    mut pod: Value,
    webhook: impl FnOnce(&Value) -> Value,
) -> Value {
    c.admissions += 1;
    pod["metadata"]["namespace"] = json!(ns);
    let in_tree = InTree::of(c, ns, &pod, c.admissions);
    apiserver_model::decode_defaults(&mut pod);
    in_tree.admit(&mut pod);
    let mut pod = webhook(&pod);
    apiserver_model::decode_defaults(&mut pod);
    c.put(pod.clone());
    pod
}

/// One webhook entry of a configuration, with the configuration's name.
#[derive(Clone, Debug)]
struct Hook {
    configuration: String,
    spec: Value,
}

impl Hook {
    fn name(&self) -> &str {
        self.spec["name"].as_str().unwrap_or("")
    }
}

/// What the chain produced for one create.
#[derive(Debug)]
pub struct Admitted {
    /// The pod after every mutation.
    pub pod: Value,
    /// `CONFIGURATION/WEBHOOK` of each call made, in order (reinvocations included).
    pub calls: Vec<String>,
    /// What the chain applied to each entry whose rules and selectors selected the pod, in
    /// order (reinvocations included).
    pub applied: Vec<Applied>,
}

/// The settings the chain applied to one entry that selected the pod, with the API server's
/// defaults for absent fields (`failurePolicy: Fail`, `timeoutSeconds: 10`: `SetDefaults_MutatingWebhook`,
/// `pkg/apis/admissionregistration/v1/defaults.go`).
#[derive(Clone, Debug, PartialEq)]
pub struct Applied {
    /// `CONFIGURATION/WEBHOOK`.
    pub webhook: String,
    /// The failure policy followed.
    pub failure_policy: String,
    /// The bound of the call, in seconds (also sent as `?timeout=Ns`).
    pub timeout_seconds: u64,
    /// The `matchConditions` evaluated.
    pub match_conditions: Vec<String>,
    /// `called`, `skipped by matchConditions`, or `failed open` (a failed call under `Ignore`).
    pub outcome: &'static str,
}

/// A refusal: HTTP status and the `Status` the API server answers.
#[derive(Debug)]
pub struct Refused {
    /// HTTP status.
    pub code: u16,
    /// Its message.
    pub message: String,
}

/// Whether `selector` (a `metav1.LabelSelector`) selects `labels`.
pub fn selects(selector: &Value, labels: &Value) -> bool {
    let label = |k: &str| labels.get(k).and_then(Value::as_str);
    let match_labels = selector["matchLabels"].as_object();
    if !match_labels
        .into_iter()
        .flatten()
        .all(|(k, v)| label(k) == v.as_str())
    {
        return false;
    }
    selector["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
        .all(|e| {
            let key = e["key"].as_str().unwrap_or("");
            let values: Vec<&str> = e["values"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            match e["operator"].as_str().unwrap_or("") {
                "In" => label(key).is_some_and(|v| values.contains(&v)),
                "NotIn" => label(key).is_none_or(|v| !values.contains(&v)),
                "Exists" => label(key).is_some(),
                "DoesNotExist" => label(key).is_none(),
                other => panic!("label selector operator {other:?} is invalid"),
            }
        })
}

fn rule_matches(rule: &Value) -> bool {
    let has = |field: &str, want: &str| {
        rule[field]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .any(|v| v == want || v == "*")
    };
    has("operations", "CREATE")
        && has("apiGroups", "")
        && has("apiVersions", "v1")
        && (has("resources", "pods") || has("resources", "*/*"))
}

/// Whether `hook`'s rules and selectors select a pod in a namespace with `ns_labels` (its
/// `matchConditions` are evaluated after, by [`conditions`]).
fn selected(hook: &Hook, ns_labels: &Value, pod: &Value) -> bool {
    let rules = hook.spec["rules"].as_array().into_iter().flatten();
    let empty = json!({});
    rules.clone().any(rule_matches)
        && selects(
            hook.spec.get("namespaceSelector").unwrap_or(&empty),
            ns_labels,
        )
        && selects(
            hook.spec.get("objectSelector").unwrap_or(&empty),
            &pod["metadata"]["labels"],
        )
}

/// `CONFIGURATION/WEBHOOK` of every entry of `configurations` whose rules and selectors select
/// a pod with `pod_labels` created in namespace `ns` labelled `ns_labels`, in the API server's
/// call order (configurations by name, entries in order): what [`create_pod`] would call,
/// before `matchConditions` (the entries evaluated here carry none).
pub fn selecting(
    configurations: &[Value],
    ns: &str,
    ns_labels: &Value,
    pod_labels: &Value,
) -> Vec<String> {
    let mut labels = if ns_labels.is_object() {
        ns_labels.clone()
    } else {
        json!({})
    };
    labels["kubernetes.io/metadata.name"] = json!(ns);
    let pod = json!({"metadata": {"labels": pod_labels}});
    let mut configs: Vec<&Value> = configurations.iter().collect();
    configs.sort_by(|a, b| {
        a["metadata"]["name"]
            .as_str()
            .cmp(&b["metadata"]["name"].as_str())
    });
    let mut out = Vec::new();
    for cfg in configs {
        let name = cfg["metadata"]["name"].as_str().unwrap_or("").to_string();
        for spec in cfg["webhooks"].as_array().into_iter().flatten() {
            assert!(
                spec.get("matchConditions").is_none(),
                "selecting() does not evaluate matchConditions"
            );
            let hook = Hook {
                configuration: name.clone(),
                spec: spec.clone(),
            };
            if selected(&hook, &labels, &pod) {
                out.push(format!("{name}/{}", hook.name()));
            }
        }
    }
    out
}

/// The most `matchConditions` one entry may carry (the API server refuses more at write).
pub const MAX_MATCH_CONDITIONS: usize = 64;

/// What an entry's `matchConditions` decide for one request.
#[derive(Debug, PartialEq)]
pub enum Conditions {
    /// None, or all true: the webhook is called.
    Call,
    /// One is false (whatever the others gave), or one failed to evaluate under
    /// `failurePolicy: Ignore`: the webhook is skipped.
    Skip,
    /// One failed to evaluate (none false) under `failurePolicy: Fail`: the request is refused
    /// with this cause (the API server's aggregate of the evaluation errors).
    Fail(String),
}

/// Evaluate `hook`'s `matchConditions` against `request` (the AdmissionRequest the webhook would
/// receive: `object` is its `object`, `oldObject` its `oldObject`, `request` the whole), as the
/// API server's matcher does: every condition is evaluated; any `false` skips the webhook; else
/// any evaluation error (a non-boolean result included) applies `failurePolicy`.
///
/// A configuration the API server would have refused at write panics instead of deciding: more
/// than [`MAX_MATCH_CONDITIONS`], a repeated name, an expression that does not compile, or one
/// reading `authorizer` (not modelled).
pub fn conditions(hook_name: &str, spec: &Value, request: &Value) -> Conditions {
    let list = spec["matchConditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if list.is_empty() {
        return Conditions::Call;
    }
    assert!(
        list.len() <= MAX_MATCH_CONDITIONS,
        "webhook {hook_name}: {} matchConditions; the API server refuses more than {MAX_MATCH_CONDITIONS}",
        list.len()
    );
    let mut names = std::collections::BTreeSet::new();
    for c in &list {
        let name = c["name"].as_str().unwrap_or("");
        assert!(
            names.insert(name),
            "webhook {hook_name}: matchConditions name {name:?} repeated; the API server refuses it"
        );
    }
    let mut ctx = cel::Context::default();
    for (var, value) in [
        ("object", &request["object"]),
        ("oldObject", &request["oldObject"]),
        ("request", request),
    ] {
        let value = cel::to_value(value).expect("JSON converts to CEL");
        ctx.add_variable_from_value(var, value);
    }
    let mut errors = Vec::new();
    for c in &list {
        let name = c["name"].as_str().unwrap_or("");
        let expression = c["expression"].as_str().unwrap_or("");
        assert!(
            !expression.contains("authorizer"),
            "webhook {hook_name}, condition {name}: the fake does not model the CEL authorizer"
        );
        let program = cel::Program::compile(expression).unwrap_or_else(|e| {
            panic!(
                "webhook {hook_name}, condition {name}: the API server refuses an expression that does not compile: {e}"
            )
        });
        match program.execute(&ctx) {
            Ok(cel::Value::Bool(true)) => {}
            Ok(cel::Value::Bool(false)) => return Conditions::Skip,
            Ok(other) => errors.push(format!(
                "expression '{expression}' resulted in error: no such overload: expected bool, got {:?}",
                other.type_of()
            )),
            Err(e) => errors.push(format!("expression '{expression}' resulted in error: {e}")),
        }
    }
    match errors.len() {
        0 => Conditions::Call,
        _ if spec["failurePolicy"] == "Ignore" => Conditions::Skip,
        1 => Conditions::Fail(errors.remove(0)),
        _ => Conditions::Fail(format!("[{}]", errors.join(", "))),
    }
}

/// Why a call failed (subject to `failurePolicy`).
struct CallError(String);

/// The outcome of one call that answered.
enum Answer {
    Allowed(Option<Value>),
    Denied(Refused),
}

fn review(api_version: &str, uid: &str, ns: &str, pod: &Value, dry_run: bool) -> Value {
    let gvk = json!({"group": "", "version": "v1", "kind": "Pod"});
    let gvr = json!({"group": "", "version": "v1", "resource": "pods"});
    json!({"apiVersion": api_version, "kind": "AdmissionReview", "request": {
        "uid": uid, "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
        "name": pod["metadata"]["name"].as_str().unwrap_or(""), "namespace": ns,
        "operation": "CREATE", "userInfo": {"username": "system:serviceaccount:kube-system:replicaset-controller",
            "groups": ["system:serviceaccounts", "system:authenticated"]},
        "object": pod, "oldObject": null, "dryRun": dry_run,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}}})
}

async fn call(
    hook: &Hook,
    endpoints: &BTreeMap<(String, String), Vec<SocketAddr>>,
    uid: &str,
    ns: &str,
    pod: &Value,
    dry_run: bool,
    pick: usize,
) -> Result<Answer, CallError> {
    let spec = &hook.spec;
    let cc = &spec["clientConfig"];
    assert!(
        cc.get("url").is_none(),
        "the fake API server does not call clientConfig.url (webhook {})",
        hook.name()
    );
    let svc = &cc["service"];
    let (svc_ns, svc_name) = (
        svc["namespace"].as_str().unwrap_or(""),
        svc["name"].as_str().unwrap_or(""),
    );
    let port = svc["port"].as_u64().unwrap_or(443);
    let path = svc["path"].as_str().unwrap_or("/");
    let timeout = spec["timeoutSeconds"].as_u64().unwrap_or(10);
    let host = format!("{svc_name}.{svc_ns}.svc");
    let url = format!("https://{host}:{port}{path}?timeout={timeout}s");
    let versions: Vec<&str> = spec["admissionReviewVersions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let Some(version) = versions
        .iter()
        .find(|v| **v == "v1" || **v == "v1beta1")
        .map(|v| format!("admission.k8s.io/{v}"))
    else {
        return Err(CallError(format!(
            "webhook does not accept known AdmissionReview versions {versions:?}"
        )));
    };
    let addr = endpoints
        .get(&(svc_ns.to_string(), svc_name.to_string()))
        .and_then(|e| (!e.is_empty()).then(|| e[pick % e.len()]))
        .ok_or_else(|| {
            CallError(format!(
                "failed to call webhook: Post {url:?}: service \"{svc_name}\" has no ready endpoints"
            ))
        })?;
    let body = serde_json::to_vec(&review(&version, uid, ns, pod, dry_run)).expect("JSON");
    let ca = cc["caBundle"]
        .as_str()
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        .unwrap_or_default();
    let attempt = post(addr, &host, &ca, path, timeout, body);
    let (status, bytes) = match tokio::time::timeout(Duration::from_secs(timeout), attempt).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => {
            return Err(CallError(format!(
                "failed to call webhook: Post {url:?}: {e}"
            )))
        }
        Err(_) => {
            return Err(CallError(format!(
                "failed to call webhook: Post {url:?}: context deadline exceeded"
            )))
        }
    };
    if status != 200 {
        return Err(CallError(format!(
            "failed to call webhook: the server responded with the status code {status} but did not return more information"
        )));
    }
    let answer: Value = serde_json::from_slice(&bytes)
        .map_err(|e| CallError(format!("received invalid webhook response: {e}")))?;
    let resp = &answer["response"];
    if answer["apiVersion"] != version.as_str() || answer["kind"] != "AdmissionReview" {
        return Err(CallError(format!(
            "received invalid webhook response: expected {version} AdmissionReview, got {}",
            answer["apiVersion"]
        )));
    }
    if resp["uid"] != uid {
        return Err(CallError(format!(
            "expected response.uid={uid:?}, got {}",
            resp["uid"]
        )));
    }
    if resp["allowed"] != true {
        let code = match resp["status"]["code"].as_u64() {
            None | Some(0) | Some(200) => 400,
            Some(c) => c as u16,
        };
        let msg = resp["status"]["message"].as_str().unwrap_or("");
        let message = if msg.is_empty() {
            format!(
                "admission webhook {:?} denied the request without explanation",
                hook.name()
            )
        } else {
            format!(
                "admission webhook {:?} denied the request: {msg}",
                hook.name()
            )
        };
        return Ok(Answer::Denied(Refused { code, message }));
    }
    match resp["patch"].as_str() {
        None => Ok(Answer::Allowed(None)),
        Some(p) => {
            if resp["patchType"] != "JSONPatch" {
                return Err(CallError(format!(
                    "unsupported patch type {}",
                    resp["patchType"]
                )));
            }
            let raw = base64::engine::general_purpose::STANDARD
                .decode(p)
                .map_err(|e| CallError(format!("patch is not base64: {e}")))?;
            let ops: Value = serde_json::from_slice(&raw)
                .map_err(|e| CallError(format!("patch is not JSON: {e}")))?;
            Ok(Answer::Allowed(Some(ops)))
        }
    }
}

/// POST `body` over TLS (trusting `ca` only, verifying `host`) to `addr`; status and body.
async fn post(
    addr: SocketAddr,
    host: &str,
    ca: &[u8],
    path: &str,
    timeout: u64,
    body: Vec<u8>,
) -> Result<(u16, Bytes), String> {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_slice_iter(ca).flatten() {
        let _ = roots.add(cert);
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let tcp = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| format!("dial tcp {addr}: {e}"))?;
    let name = ServerName::try_from(host.to_string()).map_err(|e| e.to_string())?;
    let tls = tokio_rustls::TlsConnector::from(Arc::new(cfg))
        .connect(name, tcp)
        .await
        .map_err(|e| format!("tls: failed to verify certificate: {e}"))?;
    let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
    let req = Request::builder()
        .method("POST")
        .uri(format!("https://{host}{path}?timeout={timeout}s"))
        .header("content-type", "application/json")
        .header("accept", "application/json, */*")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    let resp = if h2 {
        let (mut send, conn) = http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
            .await
            .map_err(|e| e.to_string())?;
        tokio::spawn(conn);
        send.send_request(req).await.map_err(|e| e.to_string())?
    } else {
        let (mut send, conn) = http1::handshake(TokioIo::new(tls))
            .await
            .map_err(|e| e.to_string())?;
        tokio::spawn(conn);
        send.send_request(req).await.map_err(|e| e.to_string())?
    };
    let status = resp.status().as_u16();
    let bytes = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok((status, bytes))
}

/// Run a pod create in namespace `ns` through mutating admission and, unless `dry_run`,
/// store it. The lock is held only to read the configurations and to store the result.
pub async fn create_pod(
    cluster: &Mutex<Cluster>,
    ns: &str,
    mut pod: Value,
    dry_run: bool,
) -> Result<Admitted, Refused> {
    let (hooks, ns_labels, endpoints, uid, admission) = {
        let mut c = cluster.lock().expect("fake API lock");
        let Some(namespace) = c.get("namespaces", "", ns) else {
            return Err(Refused {
                code: 404,
                message: format!("namespaces {ns:?} not found"),
            });
        };
        let mut labels = namespace["metadata"]["labels"].clone();
        if !labels.is_object() {
            labels = json!({});
        }
        labels["kubernetes.io/metadata.name"] = json!(ns);
        let mut configs = c.all("mutatingwebhookconfigurations");
        configs.sort_by(|a, b| {
            a["metadata"]["name"]
                .as_str()
                .cmp(&b["metadata"]["name"].as_str())
        });
        let hooks: Vec<Hook> = configs
            .iter()
            .flat_map(|cfg| {
                let name = cfg["metadata"]["name"].as_str().unwrap_or("").to_string();
                cfg["webhooks"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
                    .into_iter()
                    .map(move |spec| Hook {
                        configuration: name.clone(),
                        spec,
                    })
            })
            .collect();
        c.admissions += 1;
        let uid = format!("admission-{}", c.admissions);
        (hooks, labels, c.endpoints.clone(), uid, c.admissions)
    };
    pod["metadata"]["namespace"] = json!(ns);
    // The API server decodes the pod with its defaults, then runs its own mutating plugins,
    // before any webhook.
    let in_tree = InTree::of(&cluster.lock().expect("fake API lock"), ns, &pod, admission);
    apiserver_model::decode_defaults(&mut pod);
    in_tree.admit(&mut pod);
    let mut calls = Vec::new();
    let mut applied: Vec<Applied> = Vec::new();
    // Per webhook index: the version of the pod it was last called with.
    let mut seen: BTreeMap<usize, u64> = BTreeMap::new();
    let mut version = 0u64;
    for pass in 0..2 {
        if pass == 1 {
            let any = hooks.iter().enumerate().any(|(i, hook)| {
                hook.spec["reinvocationPolicy"] == "IfNeeded"
                    && seen.get(&i).is_some_and(|v| *v != version)
            });
            if !any {
                break;
            }
            // The reinvocation runs the whole chain again: the in-tree plugins first.
            in_tree.admit(&mut pod);
        }
        for (i, hook) in hooks.iter().enumerate() {
            if pass == 1 {
                let reinvoke = hook.spec["reinvocationPolicy"] == "IfNeeded"
                    && seen.get(&i).is_some_and(|v| *v != version);
                if !reinvoke {
                    continue;
                }
            }
            if !selected(hook, &ns_labels, &pod) {
                continue;
            }
            applied.push(Applied {
                webhook: format!("{}/{}", hook.configuration, hook.name()),
                failure_policy: hook.spec["failurePolicy"]
                    .as_str()
                    .unwrap_or("Fail")
                    .to_string(),
                timeout_seconds: hook.spec["timeoutSeconds"].as_u64().unwrap_or(10),
                match_conditions: hook.spec["matchConditions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|c| c["name"].as_str().map(str::to_string))
                    .collect(),
                outcome: "called",
            });
            let request = &review("admission.k8s.io/v1", &uid, ns, &pod, dry_run)["request"];
            match conditions(hook.name(), &hook.spec, request) {
                Conditions::Call => {}
                Conditions::Skip => {
                    if let Some(last) = applied.last_mut() {
                        last.outcome = "skipped by matchConditions";
                    }
                    continue;
                }
                Conditions::Fail(why) => {
                    // The dispatcher's `apierrors.NewForbidden(pods, name, err)`; the name is
                    // empty while a generated one is pending.
                    let subject = match pod["metadata"]["name"].as_str() {
                        Some(name) => format!("pods {name:?}"),
                        None => "pods".to_string(),
                    };
                    return Err(Refused {
                        code: 403,
                        message: format!("{subject} is forbidden: {why}"),
                    });
                }
            }
            let effects = hook.spec["sideEffects"].as_str().unwrap_or("");
            if dry_run && !matches!(effects, "None" | "NoneOnDryRun") {
                return Err(Refused {
                    code: 400,
                    message: format!(
                        "admission webhook {:?} does not support dry run",
                        hook.name()
                    ),
                });
            }
            calls.push(format!("{}/{}", hook.configuration, hook.name()));
            seen.insert(i, version);
            let pick = calls.len() + admission as usize;
            match call(hook, &endpoints, &uid, ns, &pod, dry_run, pick).await {
                Ok(Answer::Allowed(None)) => {}
                Ok(Answer::Allowed(Some(ops))) => {
                    let patch: json_patch::Patch =
                        serde_json::from_value(ops).map_err(|e| Refused {
                            code: 500,
                            message: format!("Internal error occurred: {e}"),
                        })?;
                    let before = pod.clone();
                    json_patch::patch(&mut pod, &patch).map_err(|e| Refused {
                        code: 500,
                        message: format!("Internal error occurred: {e}"),
                    })?;
                    // The dispatcher decodes the patched pod with the defaulter.
                    apiserver_model::decode_defaults(&mut pod);
                    if pod != before {
                        version += 1;
                        seen.insert(i, version);
                    }
                }
                Ok(Answer::Denied(refused)) => return Err(refused),
                Err(CallError(why)) => {
                    if hook.spec["failurePolicy"] == "Ignore" {
                        if let Some(last) = applied.last_mut() {
                            last.outcome = "failed open";
                        }
                        continue;
                    }
                    return Err(Refused {
                        code: 500,
                        message: format!(
                            "Internal error occurred: failed calling webhook {:?}: {why}",
                            hook.name()
                        ),
                    });
                }
            }
        }
    }
    if !dry_run {
        let mut c = cluster.lock().expect("fake API lock");
        if pod["metadata"]["name"].as_str().is_none() {
            let prefix = pod["metadata"]["generateName"].as_str().unwrap_or("pod-");
            pod["metadata"]["name"] = json!(format!("{prefix}{}", c.admissions));
        }
        let name = pod["metadata"]["name"].as_str().unwrap_or("").to_string();
        if c.get("pods", ns, &name).is_some() {
            return Err(Refused {
                code: 409,
                message: format!("pods {name:?} already exists"),
            });
        }
        c.put(pod.clone());
    }
    Ok(Admitted {
        pod,
        calls,
        applied,
    })
}

/// The flags deploy/base runs outrigger's server with (reading Istio's ConfigMaps, activating the
/// webhook configuration once ready, native sidecars off: the fake has no nodes), before
/// `--activation-delay`.
pub const DEPLOY_BASE_FLAGS: &[&str] = &[
    "--dns-name",
    "localhost",
    "--istio-configmaps",
    "--native-sidecars",
    "false",
    "--failure-policy-once-ready",
    "Fail",
    "--webhook-owned-by-namespace",
    "--fail-open-without-deployment",
    "outrigger",
];

/// outrigger's server as deploy/base runs it ([`DEPLOY_BASE_FLAGS`], a 200 ms activation delay),
/// with `extra` flags, behind Service `outrigger/outrigger`.
pub fn start_outrigger(
    api: &super::kube_api::FakeApi,
    name: &str,
    extra: &[&str],
) -> super::Server {
    let server = super::Outrigger::builder(name)
        .kube(api)
        .flags(DEPLOY_BASE_FLAGS)
        .flags(&["--activation-delay", "200ms"])
        .flags(extra)
        .start();
    api.lock()
        .endpoints
        .insert(("outrigger".into(), "outrigger".into()), vec![server.addr]);
    server
}

/// Wait until the webhook configuration `name` has every entry at `failurePolicy: Fail`, with a
/// caBundle (a ready replica activated it).
pub async fn activated(api: &super::kube_api::FakeApi, name: &str) {
    super::eventually("the webhook configuration activated", || async {
        let a = api.lock();
        a.get("mutatingwebhookconfigurations", "", name)
            .and_then(|m| m["webhooks"].as_array().cloned())
            .is_some_and(|w| {
                w.iter().all(|e| {
                    e["failurePolicy"] == "Fail" && e["clientConfig"]["caBundle"].is_string()
                })
            })
    })
    .await;
}
