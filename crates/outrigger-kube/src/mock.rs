//! Test support: a [`::kube::Client`] over a `tower_test` mock service, and helpers to assert
//! each request the code makes and answer it.

use ::kube::client::Body;
use ::kube::Client;
use http::{Method, Request, Response};
use serde_json::{json, Value};

/// The test's side of the mock API server.
pub type Handle = tower_test::mock::Handle<Request<Body>, Response<Body>>;

/// A client whose requests arrive on the returned handle.
pub fn client() -> (Client, Handle) {
    let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    (Client::new(service, "default"), handle)
}

/// One request received by the mock API server.
pub struct Received {
    /// HTTP method.
    pub method: Method,
    /// Path and query.
    pub uri: String,
    /// Content-Type header.
    pub content_type: Option<String>,
    /// JSON body (`Null` when empty).
    pub body: Value,
    send: tower_test::mock::SendResponse<Response<Body>>,
}

impl Received {
    /// Assert the method and the path (with query when `path` contains `?`, else the path alone).
    pub fn assert(&self, method: Method, path: &str) {
        let got = if path.contains('?') {
            self.uri.as_str()
        } else {
            self.uri.split('?').next().unwrap_or("")
        };
        assert_eq!(
            (&self.method, got),
            (&method, path),
            "unexpected request {} {}",
            self.method,
            self.uri
        );
    }

    /// Answer with a status and JSON body.
    pub fn respond(self, status: u16, body: Value) {
        let bytes = serde_json::to_vec(&body).expect("JSON encodes");
        let response = Response::builder()
            .status(status)
            .body(Body::from(bytes))
            .expect("valid response");
        self.send.send_response(response);
    }

    /// Answer with a raw body (watch streams: one JSON event per line).
    pub fn respond_raw(self, status: u16, body: Vec<u8>) {
        let response = Response::builder()
            .status(status)
            .body(Body::from(body))
            .expect("valid response");
        self.send.send_response(response);
    }
}

/// The next request, failing the test after 5 s.
pub async fn next(handle: &mut Handle) -> Received {
    let next = tokio::time::timeout(std::time::Duration::from_secs(5), handle.next_request())
        .await
        .expect("a request within 5 s")
        .expect("the client is alive");
    let (req, send) = next;
    let method = req.method().clone();
    let uri = req
        .uri()
        .path_and_query()
        .map(|p| p.to_string())
        .unwrap_or_default();
    let content_type = req
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let bytes = req
        .into_body()
        .collect_bytes()
        .await
        .expect("request body readable");
    let body = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).expect("JSON request body")
    };
    Received {
        method,
        uri,
        content_type,
        body,
        send,
    }
}

/// Assert that no further request arrives within 200 ms.
pub async fn assert_no_request(handle: &mut Handle) {
    let next =
        tokio::time::timeout(std::time::Duration::from_millis(200), handle.next_request()).await;
    if let Ok(Some((req, _))) = next {
        panic!("unexpected request {} {}", req.method(), req.uri());
    }
}

fn status(code: u16, reason: &str, message: String) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": message, "reason": reason, "code": code})
}

/// A 404 Status body.
pub fn not_found(resource: &str, name: &str) -> Value {
    status(404, "NotFound", format!("{resource} {name:?} not found"))
}

/// A 409 AlreadyExists Status body.
pub fn already_exists(resource: &str, name: &str) -> Value {
    status(
        409,
        "AlreadyExists",
        format!("{resource} {name:?} already exists"),
    )
}

/// A 409 Conflict Status body (stale resourceVersion).
pub fn conflict(resource: &str, name: &str) -> Value {
    status(
        409,
        "Conflict",
        format!(
            "Operation cannot be fulfilled on {resource} {name:?}: the object has been modified"
        ),
    )
}

/// One line of a watch stream.
pub fn watch_line(kind: &str, object: &Value) -> Vec<u8> {
    let mut line =
        serde_json::to_vec(&json!({"type": kind, "object": object})).expect("JSON encodes");
    line.push(b'\n');
    line
}

/// A 403 Forbidden Status body, worded as the API server's RBAC denial.
pub fn forbidden(verb: &str, resource: &str, name: &str, namespace: Option<&str>) -> Value {
    let scope = match namespace {
        Some(ns) => format!(" in the namespace {ns:?}"),
        None => " at the cluster scope".to_string(),
    };
    let group = if resource == "secrets" || resource == "configmaps" {
        ""
    } else {
        "admissionregistration.k8s.io"
    };
    status(
        403,
        "Forbidden",
        format!(
            "{resource} {name:?} is forbidden: User \"system:serviceaccount:outrigger:outrigger\" \
             cannot {verb} resource {resource:?} in API group {group:?}{scope}"
        ),
    )
}

/// A 422 Invalid Status body (a field the API server refuses to change).
pub fn invalid(resource: &str, name: &str, field: &str, detail: &str) -> Value {
    status(
        422,
        "Invalid",
        format!(
            "{resource} {name:?} is invalid: {field}: Invalid value: {detail}: field is immutable"
        ),
    )
}

/// A 410 Gone Status body (a watch's resourceVersion is too old).
pub fn gone() -> Value {
    status(
        410,
        "Expired",
        "too old resource version: 1 (2)".to_string(),
    )
}
