//! A fake Kubernetes API server for the binary's `--kube` tests: plain HTTP on 127.0.0.1, one
//! object store, answering as the API server does.
//!
//! - Pods created with POST go through kube-apiserver's mutating admission
//!   ([`super::admission`], which says where it is faithful and where not).
//! - Paths: `/version`; core `/api/v1/...` (namespaced `configmaps`, `secrets`, `pods`,
//!   `limitranges`, `resourcequotas`; cluster-scoped `namespaces`, `nodes`);
//!   `/apis/apps/v1/...` (`deployments`, `statefulsets`, `daemonsets`, `replicasets`),
//!   `/apis/batch/v1/...` (`jobs`, `cronjobs`), `/apis/policy/v1/.../poddisruptionbudgets`;
//!   `/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations`;
//!   `/apis/events.k8s.io/v1/namespaces/{ns}/events`. Anything else is a 404 `Status`.
//! - Workload controllers: a spec change of a Deployment, StatefulSet or DaemonSet raises its
//!   generation and its status catches up a tick later, unless made to hang
//!   ([`super::controllers`]).
//! - Verbs: GET (one object, or a list honouring `fieldSelector=metadata.name=...`), watch
//!   (`?watch=true`), POST (create), PUT (replace), PATCH (merge and strategic merge); PUT and
//!   PATCH with `?dryRun=All` are checked and answered, not stored ([`dry_run_write`]).
//! - Errors are `Status` objects (`kind: Status`, `reason`, `code`, `details`): 404 NotFound,
//!   403 Forbidden (RBAC rules of the test), 409 AlreadyExists and Conflict (a stale
//!   `resourceVersion`), 410 Expired (a watch from a compacted version), 415
//!   UnsupportedMediaType (a PATCH without a patch content type), 422 Invalid (a Secret's `type`
//!   is immutable).
//! - Served for `outrigger doctor` ([`super::rbac`] says how): `services`, `serviceaccounts`,
//!   `resourcequotas`, `deployments`, `poddisruptionbudgets`, RBAC's `roles`, `rolebindings`,
//!   `clusterroles`, `clusterrolebindings` (stored as given); `endpointslices` (listed, made from
//!   [`Cluster::endpoints`]); `selfsubjectaccessreviews` (created, evaluated against the stored
//!   RBAC objects for the user named by `Impersonate-User`, else [`Cluster::user`]).
//! - RBAC, when [`Cluster::enforce_rbac`] is set: every request is authorized for its user (the
//!   `Impersonate-User` header's, else [`Cluster::user`]) against the stored RBAC objects by
//!   [`super::rbac::allows`], and refused with 403 as above otherwise (recorded in
//!   [`Cluster::denied`]). The request's attributes are kube-apiserver's `RequestInfo`
//!   (`k8s.io/apiserver/pkg/endpoints/request/requestinfo.go`, `NewRequestInfo`): the verb from
//!   the method (a GET without a name is `list`, or `watch` with `watch=true`), and a list or
//!   watch with `fieldSelector=metadata.name=NAME` carries NAME, so a rule's `resourceNames`
//!   applies to it. `/version` (ClusterRole `system:public-info-viewer`) and
//!   SelfSubjectAccessReviews (`system:basic-user`) are allowed to everyone, as the API server's
//!   bootstrap policy binds them to `system:authenticated`
//!   (`plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go`).
//! - Custom resources and other kinds the fake stores but serves no API for (`NetworkPolicy`;
//!   Prometheus Operator's `ServiceMonitor`, `PodMonitor`, `PrometheusRule`; cert-manager's
//!   `Certificate`, `Issuer`) are stored by [`Cluster::put`] as given, for tests that apply a whole
//!   install; nothing acts on them.
//! - DELETE is not served over HTTP; [`Cluster::delete`] deletes as the API server does, a
//!   namespace's contents and the garbage collector's `ownerReferences` cascade included.
//! - Watches deliver the changes of the selected objects made while they are open, then end (as
//!   the API server's watch timeout does); a test can script a watch's events instead, or have the
//!   first watch of a resource end with 410 Gone.

use std::collections::{BTreeMap, VecDeque};
use std::convert::Infallible;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};

use super::Server;

/// Key of a stored object: (resource, namespace or "" when cluster-scoped, name).
pub type Key = (String, String, String);

/// Events a scripted watch delivers after its latency.
pub struct ScriptedWatch {
    /// The fake API server's latency before the events.
    pub after: Duration,
    /// `(type, object)`: `ADDED`, `MODIFIED` or `DELETED`, applied to the store when delivered.
    pub events: Vec<(&'static str, Value)>,
}

/// What the fake API server holds and saw.
pub struct Cluster {
    objects: BTreeMap<Key, Value>,
    /// The store's revision: every write takes the next one as its `resourceVersion`.
    revision: u64,
    /// `"METHOD /path"` of every request, in order (the query left out).
    pub requests: Vec<String>,
    /// `"METHOD /path?query"` of every request with a query, in order.
    pub queries: Vec<String>,
    /// `"METHOD /path"` requests RBAC refuses with 403.
    pub forbidden: Vec<String>,
    /// The user named in 403 messages.
    pub user: String,
    /// Resources whose first watch ends with 410 Gone (its resourceVersion was compacted away;
    /// the client must relist).
    pub expire_first_watch: Vec<String>,
    /// Watches answered so far, by resource.
    pub watches: BTreeMap<String, usize>,
    /// Scripted events of the next watch selecting `(resource, namespace, name)`.
    pub scripted: BTreeMap<Key, ScriptedWatch>,
    /// Ready endpoints of Services, by (namespace, name): where admission calls a webhook's
    /// `clientConfig.service` ([`super::admission`]).
    pub endpoints: BTreeMap<(String, String), Vec<std::net::SocketAddr>>,
    /// Pod creates admitted so far (the admission request uids count on it).
    pub admissions: u64,
    /// The workload controllers' rollouts ([`super::controllers`]).
    pub rollouts: super::controllers::Rollouts,
    /// Authorize every request with the stored RBAC objects (see the module's documentation).
    pub enforce_rbac: bool,
    /// `"VERB GROUP/RESOURCE NAMESPACE/NAME (USER)"` of every request RBAC refused while
    /// [`Cluster::enforce_rbac`] was set.
    pub denied: Vec<String>,
    /// Objects deleted ([`Cluster::remove`], [`Cluster::delete`]), each with the
    /// `resourceVersion` of its deletion: a watch from an earlier version delivers their
    /// `DELETED` events, as the API server's watch cache does.
    deleted: Vec<(Key, Value)>,
}

impl Default for Cluster {
    fn default() -> Cluster {
        Cluster {
            objects: BTreeMap::new(),
            revision: 1,
            requests: Vec::new(),
            queries: Vec::new(),
            forbidden: Vec::new(),
            user: "system:serviceaccount:outrigger:outrigger".into(),
            expire_first_watch: Vec::new(),
            watches: BTreeMap::new(),
            scripted: BTreeMap::new(),
            endpoints: BTreeMap::new(),
            admissions: 0,
            rollouts: Default::default(),
            enforce_rbac: false,
            denied: Vec::new(),
            deleted: Vec::new(),
        }
    }
}

fn key(resource: &str, ns: &str, name: &str) -> Key {
    (resource.to_string(), ns.to_string(), name.to_string())
}

/// The key an object is stored under (its kind's resource, namespace, name).
fn key_of(object: &Value) -> Key {
    let meta = &object["metadata"];
    key(
        resource_of(object["kind"].as_str().expect("object kind")),
        meta["namespace"].as_str().unwrap_or(""),
        meta["name"].as_str().expect("object name"),
    )
}

impl Cluster {
    /// Store `object` as it is (its `resourceVersion` included) under its kind's resource.
    pub fn put(&mut self, object: Value) {
        if let Some(rv) = object["metadata"]["resourceVersion"]
            .as_str()
            .and_then(|v| v.parse::<u64>().ok())
        {
            self.revision = self.revision.max(rv);
        }
        self.objects.insert(key_of(&object), object);
    }

    /// The object stored as `resource` `ns/name` (`ns` empty when cluster-scoped).
    pub fn get(&self, resource: &str, ns: &str, name: &str) -> Option<&Value> {
        self.objects.get(&key(resource, ns, name))
    }

    /// The stored object, to change in place (a change no watch sees until it polls).
    pub fn get_mut(&mut self, resource: &str, ns: &str, name: &str) -> Option<&mut Value> {
        self.objects.get_mut(&key(resource, ns, name))
    }

    /// Remove a stored object.
    pub fn remove(&mut self, resource: &str, ns: &str, name: &str) -> Option<Value> {
        let gone = self.objects.remove(&key(resource, ns, name))?;
        self.tombstone(key(resource, ns, name), gone.clone());
        Some(gone)
    }

    /// Remember the deletion of `object` (at the next `resourceVersion`) for the watches that
    /// start from an earlier version.
    fn tombstone(&mut self, k: Key, mut object: Value) {
        object["metadata"]["resourceVersion"] = json!(self.next_revision());
        self.deleted.push((k, object));
    }

    /// A DELETE of `resource` `ns/name`, with what follows it in the API server: deleting a
    /// namespace deletes every object in it (and the Services' endpoints), then the garbage
    /// collector deletes every object all of whose `ownerReferences` name an owner (by `uid`)
    /// that no longer exists, repeatedly (dependents of dependents). The namespace's
    /// `Terminating` phase and the collector's delay are not modelled: both happen at once.
    /// Returns the keys deleted, the named object first.
    pub fn delete(&mut self, resource: &str, ns: &str, name: &str) -> Vec<Key> {
        let mut gone = Vec::new();
        if self.remove(resource, ns, name).is_none() {
            return gone;
        }
        gone.push(key(resource, ns, name));
        if resource == "namespaces" {
            let inside: Vec<Key> = self
                .objects
                .keys()
                .filter(|(_, n, _)| n == name)
                .cloned()
                .collect();
            for k in inside {
                if let Some(o) = self.objects.remove(&k) {
                    self.tombstone(k.clone(), o);
                }
                gone.push(k);
            }
            self.endpoints.retain(|(n, _), _| n != name);
        }
        loop {
            let uids: std::collections::BTreeSet<String> = self
                .objects
                .values()
                .filter_map(|o| o["metadata"]["uid"].as_str().map(str::to_string))
                .collect();
            let orphans: Vec<Key> = self
                .objects
                .iter()
                .filter(|(_, o)| {
                    o["metadata"]["ownerReferences"]
                        .as_array()
                        .is_some_and(|owners| {
                            !owners.is_empty()
                                && owners
                                    .iter()
                                    .all(|r| r["uid"].as_str().is_none_or(|u| !uids.contains(u)))
                        })
                })
                .map(|(k, _)| k.clone())
                .collect();
            if orphans.is_empty() {
                return gone;
            }
            for k in orphans {
                if let Some(o) = self.objects.remove(&k) {
                    self.tombstone(k.clone(), o);
                }
                gone.push(k);
            }
        }
    }

    /// All stored objects of `resource`, in key order.
    pub fn all(&self, resource: &str) -> Vec<Value> {
        self.objects
            .iter()
            .filter(|((r, _, _), _)| r == resource)
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// The stored `resource` `ns/name` and what a PUT (`patch` `None`) or PATCH would make of it
    /// ([`update`]'s validation), or the API server's error (404 when there is no such object).
    fn updated(
        &self,
        resource: &str,
        ns: &str,
        name: &str,
        incoming: &Value,
        patch: Option<PatchType>,
    ) -> Result<(&Value, Value), (u16, Value)> {
        let Some(stored) = self.get(resource, ns, name) else {
            let t = Target {
                group: resource_type(resource).map_or("", |r| r.0),
                resource,
                namespace: ns,
                name: Some(name),
            };
            return Err(not_found(&t));
        };
        Ok((stored, update(stored, incoming, patch)?))
    }

    /// A PUT (`patch` `None`) or PATCH of `resource` `ns/name` as the API server answers it:
    /// the stored object with its next `resourceVersion`, or the error [`update`] finds.
    pub fn write(
        &mut self,
        resource: &str,
        ns: &str,
        name: &str,
        incoming: &Value,
        patch: Option<PatchType>,
    ) -> Result<Value, (u16, Value)> {
        let (stored, mut next) = self.updated(resource, ns, name, incoming, patch)?;
        let stored = stored.clone();
        self.rollouts
            .written(&key(resource, ns, name), &stored, &mut next);
        next["metadata"]["resourceVersion"] = json!(self.next_revision());
        self.put(next.clone());
        Ok(next)
    }

    /// A watch of `resource` opened: whether it is the first one and must end with 410 Gone.
    fn count_watch(&mut self, resource: &str) -> bool {
        let n = self.watches.entry(resource.to_string()).or_default();
        *n += 1;
        *n == 1 && self.expire_first_watch.iter().any(|r| r == resource)
    }

    /// Complete the rollouts that are due: the workloads' status catches up with their spec.
    fn tick(&mut self) {
        for (r, ns, name) in self.rollouts.due() {
            let rv = self.next_revision();
            if let Some(o) = self.objects.get_mut(&key(&r, &ns, &name)) {
                super::controllers::settle(o);
                o["metadata"]["resourceVersion"] = json!(rv);
            }
        }
    }

    fn next_revision(&mut self) -> String {
        self.revision += 1;
        self.revision.to_string()
    }

    /// Apply a watch event to the store.
    fn apply(&mut self, kind: &str, object: &Value) {
        if kind == "DELETED" {
            self.objects.remove(&key_of(object));
        } else {
            self.put(object.clone());
        }
    }
}

/// The resource (plural, lower case) of a kind the fake stores.
fn resource_of(kind: &str) -> &'static str {
    match kind {
        "ConfigMap" => "configmaps",
        "Secret" => "secrets",
        "Namespace" => "namespaces",
        "Node" => "nodes",
        "Event" => "events",
        "Pod" => "pods",
        "MutatingWebhookConfiguration" => "mutatingwebhookconfigurations",
        "Service" => "services",
        "ServiceAccount" => "serviceaccounts",
        "Role" => "roles",
        "RoleBinding" => "rolebindings",
        "ClusterRole" => "clusterroles",
        "ClusterRoleBinding" => "clusterrolebindings",
        "Deployment" => "deployments",
        "PodDisruptionBudget" => "poddisruptionbudgets",
        "StatefulSet" => "statefulsets",
        "DaemonSet" => "daemonsets",
        "ReplicaSet" => "replicasets",
        "Job" => "jobs",
        "CronJob" => "cronjobs",
        "LimitRange" => "limitranges",
        "ResourceQuota" => "resourcequotas",
        "NetworkPolicy" => "networkpolicies",
        "ServiceMonitor" => "servicemonitors",
        "PodMonitor" => "podmonitors",
        "PrometheusRule" => "prometheusrules",
        "Certificate" => "certificates",
        "Issuer" => "issuers",
        other => panic!("the fake API server does not store {other}"),
    }
}

/// (API group, version, kind, namespaced) of a resource the fake serves.
fn resource_type(resource: &str) -> Option<(&'static str, &'static str, &'static str, bool)> {
    Some(match resource {
        "configmaps" => ("", "v1", "ConfigMap", true),
        "secrets" => ("", "v1", "Secret", true),
        "namespaces" => ("", "v1", "Namespace", false),
        "nodes" => ("", "v1", "Node", false),
        "pods" => ("", "v1", "Pod", true),
        "events" => ("events.k8s.io", "v1", "Event", true),
        "limitranges" => ("", "v1", "LimitRange", true),
        "resourcequotas" => ("", "v1", "ResourceQuota", true),
        "deployments" => ("apps", "v1", "Deployment", true),
        "statefulsets" => ("apps", "v1", "StatefulSet", true),
        "daemonsets" => ("apps", "v1", "DaemonSet", true),
        "replicasets" => ("apps", "v1", "ReplicaSet", true),
        "jobs" => ("batch", "v1", "Job", true),
        "cronjobs" => ("batch", "v1", "CronJob", true),
        "poddisruptionbudgets" => ("policy", "v1", "PodDisruptionBudget", true),
        "mutatingwebhookconfigurations" => (
            "admissionregistration.k8s.io",
            "v1",
            "MutatingWebhookConfiguration",
            false,
        ),
        "services" => ("", "v1", "Service", true),
        "serviceaccounts" => ("", "v1", "ServiceAccount", true),
        "roles" => ("rbac.authorization.k8s.io", "v1", "Role", true),
        "rolebindings" => ("rbac.authorization.k8s.io", "v1", "RoleBinding", true),
        "clusterroles" => ("rbac.authorization.k8s.io", "v1", "ClusterRole", false),
        "clusterrolebindings" => (
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRoleBinding",
            false,
        ),
        "endpointslices" => ("discovery.k8s.io", "v1", "EndpointSlice", true),
        "selfsubjectaccessreviews" => (
            "authorization.k8s.io",
            "v1",
            "SelfSubjectAccessReview",
            false,
        ),
        _ => return None,
    })
}

/// A `Status` object as the API server writes it for a failed request.
pub fn status(code: u16, reason: &str, message: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": message, "reason": reason, "code": code})
}

/// A `Status` naming the object it is about (`details`).
fn status_of(code: u16, reason: &str, message: &str, t: &Target) -> Value {
    let mut st = status(code, reason, message);
    let mut details = json!({"name": t.name.unwrap_or(""), "kind": t.resource});
    if !t.group.is_empty() {
        details["group"] = json!(t.group);
    }
    st["details"] = details;
    st
}

fn not_found(t: &Target) -> (u16, Value) {
    let msg = format!("{} {:?} not found", t.resource, t.name.unwrap_or(""));
    (404, status_of(404, "NotFound", &msg, t))
}

fn no_such_resource() -> (u16, Value) {
    let msg = "the server could not find the requested resource";
    (404, status(404, "NotFound", msg))
}

/// A ConfigMap object.
pub fn configmap(ns: &str, name: &str, rv: &str, data: &[(&str, &str)]) -> Value {
    let data: BTreeMap<&str, &str> = data.iter().copied().collect();
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": ns, "resourceVersion": rv},
           "data": data})
}

/// The Deployment `outrigger/outrigger` that runs outrigger's replicas (what
/// `--fail-open-without-deployment outrigger` reads), asking for `replicas`.
pub fn outrigger_deployment(replicas: i32) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "outrigger", "namespace": "outrigger", "uid": "outrigger-deploy",
                     "resourceVersion": "2"},
        "spec": {"replicas": replicas,
                 "selector": {"matchLabels": {"app.kubernetes.io/name": "outrigger"}},
                 "template": {"metadata": {"labels": {"app.kubernetes.io/name": "outrigger"}},
                              "spec": {"containers": [{"name": "outrigger",
                                                       "image": "ghcr.io/outrigger/outrigger:0.1.0"}]}}}})
}

/// A Node whose kubelet reports `kubelet` (`v1.33.1`), with the `nodeInfo` fields the API
/// server requires.
pub fn node(name: &str, kubelet: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
        "status": {"nodeInfo": {"kubeletVersion": kubelet,
            "architecture": "", "bootID": "", "containerRuntimeVersion": "",
            "kernelVersion": "", "kubeProxyVersion": "", "machineID": "",
            "operatingSystem": "", "osImage": "", "systemUUID": ""}}})
}

/// Istio's ConfigMaps in `istio-system` holding the embedded configuration:
/// `istio-sidecar-injector` (`config`, `values`) and `istio` (`mesh`).
pub fn put_istio_configmaps(c: &mut Cluster) {
    use outrigger_inject::config::defaults;
    c.put(configmap(
        "istio-system",
        "istio-sidecar-injector",
        "1",
        &[("config", defaults::CONFIG), ("values", defaults::VALUES)],
    ));
    c.put(configmap(
        "istio-system",
        "istio",
        "1",
        &[("mesh", defaults::MESH)],
    ));
}

/// A kubeconfig with context `fake` (this server, the current context, namespace `outrigger`)
/// and context `dead` (a port nothing listens on).
pub fn kubeconfig(port: u16) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: http://127.0.0.1:{port}\n\
         - name: dead\n  cluster:\n    server: http://127.0.0.1:1\nusers:\n- name: u\n  user:\n    token: t\n\
         contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: u\n    namespace: outrigger\n\
         - name: dead\n  context:\n    cluster: dead\n    user: u\ncurrent-context: fake\n"
    )
}

/// The fake API server, serving on a thread of its own.
#[derive(Clone)]
pub struct FakeApi {
    /// Its port on 127.0.0.1.
    pub port: u16,
    cluster: Arc<Mutex<Cluster>>,
}

impl FakeApi {
    /// Serve `cluster`.
    pub fn start(cluster: Cluster) -> FakeApi {
        FakeApi::start_on(cluster, 0)
    }

    /// Serve `cluster` on 127.0.0.1:`port` (0: any free port).
    pub fn start_on(cluster: Cluster, port: u16) -> FakeApi {
        let cluster = Arc::new(Mutex::new(cluster));
        let listener = std::net::TcpListener::bind(("127.0.0.1", port)).expect("bind");
        let port = listener.local_addr().expect("addr").port();
        listener.set_nonblocking(true).expect("nonblocking");
        let shared = cluster.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(accept_loop(listener, shared));
        });
        FakeApi { port, cluster }
    }

    /// The store and what the server saw.
    pub fn lock(&self) -> MutexGuard<'_, Cluster> {
        self.cluster.lock().expect("fake API lock")
    }

    /// Create a pod in `ns` through mutating admission ([`super::admission::create_pod`]), as
    /// `POST /api/v1/namespaces/{ns}/pods[?dryRun=All]` does.
    pub async fn create_pod(
        &self,
        ns: &str,
        pod: Value,
        dry_run: bool,
    ) -> Result<super::admission::Admitted, super::admission::Refused> {
        super::admission::create_pod(&self.cluster, ns, pod, dry_run).await
    }

    /// `"METHOD /path"` of the requests so far.
    pub fn requests(&self) -> Vec<String> {
        self.lock().requests.clone()
    }
}

async fn accept_loop(listener: std::net::TcpListener, cluster: Arc<Mutex<Cluster>>) {
    let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
    loop {
        let Ok((tcp, _)) = listener.accept().await else {
            continue;
        };
        let cluster = cluster.clone();
        tokio::spawn(async move {
            let svc = service_fn(move |req| {
                let cluster = cluster.clone();
                async move {
                    let (code, body) = answer(&cluster, req).await;
                    let resp = Response::builder()
                        .status(code)
                        .header("content-type", "application/json")
                        .body(Full::new(Bytes::from(body)))
                        .expect("response");
                    Ok::<_, Infallible>(resp)
                }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(tcp), svc)
                .await;
        });
    }
}

/// The object or collection a path names.
struct Target<'a> {
    group: &'a str,
    resource: &'a str,
    namespace: &'a str,
    name: Option<&'a str>,
}

/// Parse `/api/v1/...` and `/apis/{group}/{version}/...`; `None` for other paths and for
/// resources outside their group.
fn target(path: &str) -> Option<Target<'_>> {
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let (group, version, rest) = match parts[..] {
        ["api", version, ref rest @ ..] => ("", version, rest),
        ["apis", group, version, ref rest @ ..] => (group, version, rest),
        _ => return None,
    };
    let (namespace, resource, name) = match *rest {
        ["namespaces", ns, resource] => (ns, resource, None),
        ["namespaces", ns, resource, name] => (ns, resource, Some(name)),
        [resource] => ("", resource, None),
        [resource, name] => ("", resource, Some(name)),
        _ => return None,
    };
    let (g, v, _, namespaced) = resource_type(resource)?;
    // A namespaced resource is listed in a namespace or across all of them (`/api/v1/pods`).
    let scoped = namespaced != namespace.is_empty() || (namespaced && name.is_none());
    (g == group && v == version && scoped).then_some(Target {
        group,
        resource,
        namespace,
        name,
    })
}

/// The name a list or watch selects with `fieldSelector=metadata.name=...`.
fn selected_name(query: &str) -> Option<String> {
    query.split('&').find_map(|kv| {
        let v = kv.strip_prefix("fieldSelector=")?;
        let v = v.replace("%3D", "=").replace("%3d", "=");
        v.strip_prefix("metadata.name=").map(str::to_string)
    })
}

/// The request verb as RBAC names it.
fn verb(method: &str, t: &Target, watch: bool) -> &'static str {
    match (method, t.name, watch) {
        ("GET", _, true) => "watch",
        ("GET", None, _) => "list",
        ("GET", Some(_), _) => "get",
        ("POST", ..) => "create",
        ("PUT", ..) => "update",
        ("PATCH", ..) => "patch",
        ("DELETE", ..) => "delete",
        _ => "unknown",
    }
}

async fn answer(cluster: &Mutex<Cluster>, req: Request<hyper::body::Incoming>) -> (u16, Vec<u8>) {
    let method = req.method().to_string();
    let path = req.uri().path().to_string();
    let query = req.uri().query().unwrap_or("").to_string();
    let content_type = req
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let impersonate = req
        .headers()
        .get("impersonate-user")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let request = format!("{method} {path}");
    let forbidden = {
        let mut c = cluster.lock().expect("fake API lock");
        c.tick();
        c.requests.push(request.clone());
        if !query.is_empty() {
            c.queries.push(format!("{request}?{query}"));
        }
        c.forbidden.contains(&request).then(|| c.user.clone())
    };
    if path == "/version" && method == "GET" {
        return json_body(200, version());
    }
    let Some(t) = target(&path) else {
        return json_body_pair(no_such_resource());
    };
    let watch = query.split('&').any(|kv| kv == "watch=true");
    let forbidden = forbidden.or_else(|| {
        let mut c = cluster.lock().expect("fake API lock");
        let user = impersonate.clone().unwrap_or_else(|| c.user.clone());
        let verb = verb(&method, &t, watch);
        let name = match (t.name, verb) {
            (Some(n), _) => n.to_string(),
            (None, "list" | "watch") => selected_name(&query).unwrap_or_default(),
            _ => String::new(),
        };
        let attrs = json!({"group": t.group, "resource": t.resource, "verb": verb,
                           "namespace": t.namespace, "name": name});
        let refused = c.enforce_rbac
            && t.resource != "selfsubjectaccessreviews"
            && !super::rbac::allows(&c, &user, &attrs);
        refused.then(|| {
            c.denied.push(format!(
                "{verb} {}/{} {}/{name} ({user})",
                t.group, t.resource, t.namespace
            ));
            user
        })
    });
    if let Some(user) = forbidden {
        let name = t.name.map(|n| format!("{n:?} ")).unwrap_or_default();
        let scope = if t.namespace.is_empty() {
            "at the cluster scope".to_string()
        } else {
            format!("in the namespace {:?}", t.namespace)
        };
        let msg = format!(
            "{} {name}is forbidden: User {user:?} cannot {} resource {:?} in API group {:?} {scope}",
            t.resource,
            verb(&method, &t, watch),
            t.resource,
            t.group
        );
        return json_body(403, status_of(403, "Forbidden", &msg, &t));
    }
    if watch && method == "GET" {
        let from = query.split('&').find_map(|kv| {
            kv.strip_prefix("resourceVersion=")
                .and_then(|v| v.parse::<u64>().ok())
        });
        return watch_answer(cluster, &t, selected_name(&query), from).await;
    }
    let parsed: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if method == "POST" && t.resource == "pods" && t.name.is_none() {
        let dry_run = query.split('&').any(|kv| kv == "dryRun=All");
        return match super::admission::create_pod(cluster, t.namespace, parsed, dry_run).await {
            Ok(a) => json_body(201, a.pod),
            Err(r) => {
                let reason = match r.code {
                    400 => "BadRequest",
                    403 => "Forbidden",
                    404 => "NotFound",
                    409 => "AlreadyExists",
                    500 => "InternalError",
                    _ => "",
                };
                json_body(r.code, status(r.code, reason, &r.message))
            }
        };
    }
    let mut c = cluster.lock().expect("fake API lock");
    if t.resource == "endpointslices" && method == "GET" && t.name.is_none() {
        return json_body(200, super::rbac::endpoint_slices(&c, t.namespace, &query));
    }
    if t.resource == "selfsubjectaccessreviews" && method == "POST" {
        let user = impersonate.unwrap_or_else(|| c.user.clone());
        return json_body(201, super::rbac::access_review(&c, &user, parsed));
    }
    json_body_pair(match (method.as_str(), t.name) {
        ("GET", Some(name)) => match c.get(t.resource, t.namespace, name) {
            Some(o) => (200, o.clone()),
            None => not_found(&t),
        },
        ("GET", None) => (200, list(&c, &t, &query)),
        ("POST", None) => create(&mut c, &t, &content_type, parsed),
        ("PUT" | "PATCH", Some(name)) => {
            let patch = if method == "PATCH" {
                match PatchType::of(&content_type) {
                    Some(p) => Some(p),
                    None => return json_body_pair(unsupported(&content_type)),
                }
            } else {
                None
            };
            let write = if query.split('&').any(|kv| kv == "dryRun=All") {
                dry_run_write
            } else {
                Cluster::write
            };
            match write(&mut c, t.resource, t.namespace, name, &parsed, patch) {
                Ok(next) => (200, next),
                Err(e) => e,
            }
        }
        _ => {
            let msg = "the server does not allow this method on the requested resource";
            (405, status_of(405, "MethodNotAllowed", msg, &t))
        }
    })
}

fn json_body(code: u16, v: Value) -> (u16, Vec<u8>) {
    (code, serde_json::to_vec(&v).expect("JSON"))
}

fn json_body_pair((code, v): (u16, Value)) -> (u16, Vec<u8>) {
    json_body(code, v)
}

fn version() -> Value {
    json!({"major": "1", "minor": "33", "gitVersion": "v1.33.0", "gitCommit": "x",
           "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.24",
           "compiler": "gc", "platform": "linux/amd64"})
}

/// The objects of `t`'s collection (in its namespace, if any) that `name` selects.
fn selection(c: &Cluster, t: &Target, name: Option<&str>) -> BTreeMap<Key, Value> {
    c.objects
        .iter()
        .filter(|((r, ns, n), _)| {
            r == t.resource
                && (t.namespace.is_empty() || ns == t.namespace)
                && name.is_none_or(|want| n == want)
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// A list as the API server answers it, in pages when the query has `limit`: the items after
/// the `continue` token's position, and a `continue` token while more remain (with
/// `remainingItemCount`). The token is opaque to clients; here it is `<revision>/<offset>`.
fn list(c: &Cluster, t: &Target, query: &str) -> Value {
    let (group, version, kind, _) = resource_type(t.resource).expect("served resource");
    let api_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    let param = |key: &str| {
        query
            .split('&')
            .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
    };
    let name = selected_name(query);
    // Only the page's objects are copied (a list of 10,000 pods is paged 20 times).
    let selected = c.objects.iter().filter(|((r, ns, n), _)| {
        r == t.resource
            && (t.namespace.is_empty() || ns == t.namespace)
            && name.as_deref().is_none_or(|want| n == want)
    });
    let offset: usize = param("continue")
        .and_then(|t| t.split_once("%2F").or_else(|| t.split_once('/')))
        .and_then(|(_, o)| o.parse().ok())
        .unwrap_or(0);
    let limit = param("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .filter(|l| *l > 0);
    let total = selected.clone().count();
    let items: Vec<Value> = selected
        .skip(offset)
        .take(limit.unwrap_or(usize::MAX))
        .map(|(_, v)| v.clone())
        .collect();
    let mut metadata = json!({"resourceVersion": c.revision.to_string()});
    let next = offset + items.len();
    if next < total {
        metadata["continue"] = json!(format!("{}/{next}", c.revision));
        metadata["remainingItemCount"] = json!(total - next);
    }
    json!({"apiVersion": api_version, "kind": format!("{kind}List"),
           "metadata": metadata, "items": items})
}

fn create(c: &mut Cluster, t: &Target, content_type: &str, mut object: Value) -> (u16, Value) {
    if !content_type.starts_with("application/json") {
        return unsupported(content_type);
    }
    let name = match object["metadata"]["name"].as_str() {
        Some(n) => n.to_string(),
        None => match object["metadata"]["generateName"].as_str() {
            Some(prefix) => format!("{prefix}{}", c.revision + 1),
            None => {
                let msg = format!(
                    "{} \"\" is invalid: metadata.name: Required value",
                    t.resource
                );
                return (422, status_of(422, "Invalid", &msg, t));
            }
        },
    };
    if c.get(t.resource, t.namespace, &name).is_some() {
        let named = Target {
            name: Some(&name),
            ..*t
        };
        let msg = format!("{} {name:?} already exists", t.resource);
        return (409, status_of(409, "AlreadyExists", &msg, &named));
    }
    object["metadata"]["name"] = json!(name);
    if let Some(msg) = invalid_webhook_configuration(&object) {
        let named = Target {
            name: Some(&name),
            ..*t
        };
        return (422, status_of(422, "Invalid", &msg, &named));
    }
    if !t.namespace.is_empty() {
        object["metadata"]["namespace"] = json!(t.namespace);
    }
    object["metadata"]["resourceVersion"] = json!(c.next_revision());
    c.put(object.clone());
    (201, object)
}

fn unsupported(content_type: &str) -> (u16, Value) {
    let msg = format!(
        "the body of the request was in an unknown format ({content_type:?}) - accepted media \
         types include: application/json-patch+json, application/merge-patch+json, \
         application/apply-patch+yaml"
    );
    (415, status(415, "UnsupportedMediaType", &msg))
}

/// A PUT or PATCH with `?dryRun=All`, as the API server answers it: checked as [`Cluster::write`]
/// checks (RBAC before it, [`update`]'s validation), the object it would store returned (a spec
/// change raises `metadata.generation`, as the workload's registry strategy does), and nothing
/// stored: the stored `resourceVersion` stays, no watch sees a change, no rollout starts.
fn dry_run_write(
    c: &mut Cluster,
    resource: &str,
    ns: &str,
    name: &str,
    incoming: &Value,
    patch: Option<PatchType>,
) -> Result<Value, (u16, Value)> {
    let (stored, mut next) = c.updated(resource, ns, name, incoming, patch)?;
    if stored.get("spec") != next.get("spec") && stored["metadata"].get("generation").is_some() {
        let generation = stored["metadata"]["generation"].as_i64().unwrap_or(1) + 1;
        next["metadata"]["generation"] = json!(generation);
    }
    next["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"].clone();
    Ok(next)
}

/// The patch types the fake applies. JSON Patch and server-side apply are not modelled: a PATCH
/// of those types is refused with 415, as a type the server does not accept.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PatchType {
    /// `application/merge-patch+json` (RFC 7386).
    Merge,
    /// `application/strategic-merge-patch+json`: as a merge, except that lists of objects with
    /// a `name` merge by name (the merge key of the lists the fake's objects have).
    Strategic,
}

impl PatchType {
    fn of(content_type: &str) -> Option<PatchType> {
        match content_type {
            "application/merge-patch+json" => Some(PatchType::Merge),
            "application/strategic-merge-patch+json" => Some(PatchType::Strategic),
            _ => None,
        }
    }
}

/// A write of `incoming` over `stored` (a PUT when `patch` is `None`), checked as the API server
/// checks it: a stale `resourceVersion` is a 409 Conflict, a change of a Secret's `type` is a 422
/// Invalid (it is immutable). [`Cluster::write`] stores it with its new `resourceVersion`.
fn update(
    stored: &Value,
    incoming: &Value,
    patch: Option<PatchType>,
) -> Result<Value, (u16, Value)> {
    let kind = stored["kind"].as_str().unwrap_or("");
    let name = stored["metadata"]["name"].as_str().unwrap_or("");
    let resource = resource_of(kind);
    let t = Target {
        group: resource_type(resource).map_or("", |r| r.0),
        resource,
        namespace: stored["metadata"]["namespace"].as_str().unwrap_or(""),
        name: Some(name),
    };
    let rv = &incoming["metadata"]["resourceVersion"];
    if !rv.is_null() && rv != &stored["metadata"]["resourceVersion"] {
        let msg = format!(
            "Operation cannot be fulfilled on {resource} {name:?}: the object has been modified; \
             please apply your changes to the latest version and try again"
        );
        return Err((409, status_of(409, "Conflict", &msg, &t)));
    }
    let mut next = match patch {
        Some(PatchType::Merge) => {
            let mut next = stored.clone();
            json_patch::merge(&mut next, incoming);
            next
        }
        Some(PatchType::Strategic) => {
            let mut next = stored.clone();
            strategic_merge(&mut next, incoming);
            next
        }
        None => incoming.clone(),
    };
    if kind == "Secret" {
        let stored_type = stored["type"].as_str().unwrap_or("Opaque");
        if let Some(t2) = next["type"].as_str().filter(|t2| *t2 != stored_type) {
            let msg = format!(
                "Secret {name:?} is invalid: type: Invalid value: {t2:?}: field is immutable"
            );
            return Err((422, status_of(422, "Invalid", &msg, &t)));
        }
        next["type"] = json!(stored_type);
    }
    if let Some(msg) = invalid_webhook_configuration(&next) {
        return Err((422, status_of(422, "Invalid", &msg, &t)));
    }
    Ok(next)
}

/// Two rules of kube-apiserver's validation of admission webhook configurations
/// (kubernetes/kubernetes `pkg/apis/admissionregistration/validation/validation.go`,
/// `validateMutatingWebhookConfiguration`/`validateValidatingWebhookConfiguration` and
/// `validateMutatingWebhook`/`validateValidatingWebhook`): the entries' names are unique
/// (`field.Duplicate` at `webhooks[i].name`, for configurations of
/// `admissionregistration.k8s.io/v1`), and `timeoutSeconds`, when set, is between 1 and 30
/// (`field.Invalid`: "the timeout value must be between 1 and 30 seconds"). The answer is the
/// API server's `NewInvalid` message (`<Kind>.<group> "<name>" is invalid: ...`, several
/// causes in brackets), or `None` for an object these rules accept or another kind.
pub fn invalid_webhook_configuration(object: &Value) -> Option<String> {
    let kind = object["kind"].as_str()?;
    if kind != "MutatingWebhookConfiguration" && kind != "ValidatingWebhookConfiguration" {
        return None;
    }
    let mut causes = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for (i, w) in object["webhooks"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        if let Some(name) = w["name"].as_str() {
            if !seen.insert(name) {
                causes.push(format!("webhooks[{i}].name: Duplicate value: {name:?}"));
            }
        }
        if let Some(t) = w["timeoutSeconds"].as_i64() {
            if !(1..=30).contains(&t) {
                causes.push(format!(
                    "webhooks[{i}].timeoutSeconds: Invalid value: {t}: the timeout value must \
                     be between 1 and 30 seconds"
                ));
            }
        }
    }
    let name = object["metadata"]["name"].as_str().unwrap_or("");
    match causes.as_slice() {
        [] => None,
        [one] => Some(format!(
            "{kind}.admissionregistration.k8s.io {name:?} is invalid: {one}"
        )),
        many => Some(format!(
            "{kind}.admissionregistration.k8s.io {name:?} is invalid: [{}]",
            many.join(", ")
        )),
    }
}

/// A strategic merge of `patch` into `target`: a merge patch where lists of objects that all
/// carry a `name` merge element by element on it.
fn strategic_merge(target: &mut Value, patch: &Value) {
    let by_name = |v: &Value| {
        v.as_array()
            .is_some_and(|a| a.iter().all(|e| e["name"].is_string()))
    };
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, pv) in p {
                match t.get_mut(k) {
                    _ if pv.is_null() => {
                        t.remove(k);
                    }
                    Some(tv) if by_name(tv) && by_name(pv) => {
                        let list = tv.as_array_mut().expect("list");
                        for pe in pv.as_array().expect("list") {
                            match list.iter_mut().find(|e| e["name"] == pe["name"]) {
                                Some(e) => strategic_merge(e, pe),
                                None => list.push(pe.clone()),
                            }
                        }
                    }
                    Some(tv) => strategic_merge(tv, pv),
                    None => {
                        t.insert(k.clone(), pv.clone());
                    }
                }
            }
        }
        (t, p) => *t = p.clone(),
    }
}

/// A watch: a scripted one delivers its events; the first watch of a resource listed in
/// `expire_first_watch` ends with 410 Gone; any other delivers the changes of the objects it
/// selects made while it is open (polled every 50 ms), ending after 30 s without one.
/// A watch from `resourceVersion` `from` first delivers the selected objects written after it
/// (between the client's list and its watch) and those deleted after it ([`Cluster::remove`]
/// keeps the deletions).
async fn watch_answer(
    cluster: &Mutex<Cluster>,
    t: &Target<'_>,
    name: Option<String>,
    from: Option<u64>,
) -> (u16, Vec<u8>) {
    let (gone, script, since) = {
        let mut c = cluster.lock().expect("fake API lock");
        let gone = c.count_watch(t.resource);
        let script = name
            .as_deref()
            .and_then(|n| c.scripted.remove(&key(t.resource, t.namespace, n)));
        let mut since = selection(&c, t, name.as_deref());
        if let Some(from) = from {
            since.retain(|_, o| {
                o["metadata"]["resourceVersion"]
                    .as_str()
                    .and_then(|v| v.parse::<u64>().ok())
                    .is_none_or(|v| v <= from)
            });
            let rv = |o: &Value| {
                o["metadata"]["resourceVersion"]
                    .as_str()
                    .and_then(|v| v.parse::<u64>().ok())
            };
            for (k, o) in &c.deleted {
                let (r, ns, n) = k;
                let selected = r == t.resource
                    && (t.namespace.is_empty() || ns == t.namespace)
                    && name.as_deref().is_none_or(|want| n == want);
                if selected && rv(o).is_some_and(|v| v > from) && !c.objects.contains_key(k) {
                    since.insert(k.clone(), o.clone());
                }
            }
        }
        (gone, script, since)
    };
    if gone {
        let msg = "too old resource version: 1 (2)";
        let event = json!({"type": "ERROR", "object": status(410, "Expired", msg)});
        return (200, format!("{event}\n").into_bytes());
    }
    if let Some(script) = script {
        tokio::time::sleep(script.after).await;
        let mut c = cluster.lock().expect("fake API lock");
        let mut lines = String::new();
        for (kind, object) in &script.events {
            c.apply(kind, object);
            lines.push_str(&format!("{}\n", json!({"type": kind, "object": object})));
        }
        return (200, lines.into_bytes());
    }
    let mut tick = tokio::time::interval(Duration::from_millis(50));
    for _ in 0..600 {
        tick.tick().await;
        let now = selection(&cluster.lock().expect("fake API lock"), t, name.as_deref());
        if now != since {
            return (200, changes(&since, &now).into_bytes());
        }
    }
    (200, Vec::new())
}

/// Watch event lines turning `before` into `after`.
fn changes(before: &BTreeMap<Key, Value>, after: &BTreeMap<Key, Value>) -> String {
    let mut lines = VecDeque::new();
    for (k, v) in after {
        match before.get(k) {
            None => lines.push_back(json!({"type": "ADDED", "object": v})),
            Some(old) if old != v => lines.push_back(json!({"type": "MODIFIED", "object": v})),
            Some(_) => {}
        }
    }
    for (k, v) in before {
        if !after.contains_key(k) {
            lines.push_back(json!({"type": "DELETED", "object": v}));
        }
    }
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// The Secret of the server, `outrigger/outrigger-tls`, as stored.
pub fn stored_secret(api: &FakeApi) -> Option<Value> {
    api.lock()
        .get("secrets", "outrigger", "outrigger-tls")
        .cloned()
}

/// The CA bundle the server stored in the fake's Secret (`what` names the expectation).
pub fn secret_ca(api: &FakeApi, what: &str) -> Vec<u8> {
    let b64 = stored_secret(api)
        .and_then(|s| {
            s.pointer("/data/ca-bundle.crt")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .expect(what);
    base64::engine::general_purpose::STANDARD
        .decode(b64)
        .expect("base64 CA")
}

/// `outrigger serve --kube --namespace outrigger` with `args` against `api` (kubeconfig and
/// HOME in a scratch directory named `name`, the proxy bypassed for the fake, `env` added).
pub fn serve_against(api: &FakeApi, name: &str, args: &[&str], env: &[(&str, &str)]) -> Server {
    super::Outrigger::builder(name)
        .kube(api)
        .envs(env)
        .flags(args)
        .start()
}

/// A kubeconfig for `api` in `dir`.
pub fn write_kubeconfig(dir: &std::path::Path, api: &FakeApi) -> String {
    let path = dir.join("kubeconfig");
    std::fs::write(&path, kubeconfig(api.port)).expect("write kubeconfig");
    path.display().to_string()
}
