//! `outrigger inject --kube` end to end: the real binary reads Istio's ConfigMaps from a small
//! fake API server (plain HTTP on 127.0.0.1, as in `serve_kube_api.rs`) that answers a ConfigMap
//! GET as the API server does: the object, a 404 `Status`, or a 403 RBAC `Status`.

#[allow(dead_code)] // the helpers of the inject tests; this file uses some
mod support;

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use support::{docs, fixture, Inject, TempDir};

/// What the fake API server holds and saw.
#[derive(Default)]
struct Cluster {
    /// ConfigMaps by (namespace, name): their `data`.
    configmaps: BTreeMap<(String, String), BTreeMap<String, String>>,
    /// (namespace, name) of ConfigMaps RBAC refuses to this user.
    forbidden: Vec<(String, String)>,
    /// `"METHOD /path"` of every request.
    requests: Vec<String>,
}

fn status(code: u16, reason: &str, message: String, name: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": message, "reason": reason,
           "details": {"name": name, "kind": "configmaps"}, "code": code})
}

/// The API server's answer to one request.
fn answer(cluster: &Mutex<Cluster>, method: &str, path: &str) -> (u16, Value) {
    let mut c = cluster.lock().expect("lock");
    c.requests.push(format!("{method} {path}"));
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let ["api", "v1", "namespaces", ns, "configmaps", name] = parts[..] else {
        return (
            404,
            status(
                404,
                "NotFound",
                "the server could not find the requested resource".into(),
                "",
            ),
        );
    };
    if method != "GET" {
        return (
            405,
            status(
                405,
                "MethodNotAllowed",
                format!("{method} not allowed"),
                name,
            ),
        );
    }
    let key = (ns.to_string(), name.to_string());
    if c.forbidden.contains(&key) {
        return (
            403,
            status(
                403,
                "Forbidden",
                format!(
                    "configmaps {name:?} is forbidden: User \"alice\" cannot get resource \
                     \"configmaps\" in API group \"\" in the namespace {ns:?}"
                ),
                name,
            ),
        );
    }
    match c.configmaps.get(&key) {
        Some(data) => (
            200,
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": name, "namespace": ns, "resourceVersion": "1"},
                   "data": data}),
        ),
        None => (
            404,
            status(
                404,
                "NotFound",
                format!("configmaps {name:?} not found"),
                name,
            ),
        ),
    }
}

/// Serve the fake on a thread of its own; returns its port.
fn serve(cluster: Arc<Mutex<Cluster>>) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    listener.set_nonblocking(true).expect("nonblocking");
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            while let Ok((tcp, _)) = listener.accept().await {
                let cluster = cluster.clone();
                tokio::spawn(async move {
                    let svc = service_fn(move |req: Request<hyper::body::Incoming>| {
                        let (code, body) =
                            answer(&cluster, req.method().as_str(), req.uri().path());
                        let resp = Response::builder()
                            .status(code)
                            .header("content-type", "application/json")
                            .body(Full::new(Bytes::from(body.to_string())))
                            .expect("response");
                        async move { Ok::<_, Infallible>(resp) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tcp), svc)
                        .await;
                });
            }
        });
    });
    port
}

/// A kubeconfig with context `fake` (the fake API server, the current context) and context
/// `dead` (a port nothing listens on).
fn kubeconfig(dir: &TempDir, port: u16) -> String {
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: http://127.0.0.1:{port}\n\
         - name: dead\n  cluster:\n    server: http://127.0.0.1:1\nusers:\n- name: u\n  user:\n    token: t\n\
         contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: u\n\
         - name: dead\n  context:\n    cluster: dead\n    user: u\ncurrent-context: fake\n"
    );
    dir.write("kubeconfig", &text).display().to_string()
}

/// Istio's three documents, changed from the embedded defaults so that their origin shows in
/// the output: another hub (values), another discovery address (mesh), one more environment
/// variable of the proxy (config).
struct Docs {
    config: String,
    values: String,
    mesh: String,
}

fn docs_under_test() -> Docs {
    let values = outrigger_inject::config::defaults::VALUES.replacen(
        "\"docker.io/istio\"",
        "\"registry.example/mesh\"",
        1,
    );
    let mesh = outrigger_inject::config::defaults::MESH.replacen(
        "istiod.istio-system.svc:15012",
        "istiod.mesh.svc:15012",
        1,
    );
    let config = outrigger_inject::config::defaults::CONFIG.replacen(
        "        - name: PILOT_CERT_PROVIDER\n",
        "        - name: FROM_CLUSTER\n          value: \"yes\"\n        - name: PILOT_CERT_PROVIDER\n",
        1,
    );
    assert_ne!(values, outrigger_inject::config::defaults::VALUES);
    assert_ne!(mesh, outrigger_inject::config::defaults::MESH);
    assert_ne!(config, outrigger_inject::config::defaults::CONFIG);
    Docs {
        config,
        values,
        mesh,
    }
}

/// A fake cluster with Istio's ConfigMaps (named with `suffix`) in `istio-system`.
fn cluster_with(d: &Docs, suffix: &str) -> Arc<Mutex<Cluster>> {
    let mut c = Cluster::default();
    c.configmaps.insert(
        (
            "istio-system".into(),
            format!("istio-sidecar-injector{suffix}"),
        ),
        BTreeMap::from([
            ("config".to_string(), d.config.clone()),
            ("values".to_string(), d.values.clone()),
        ]),
    );
    c.configmaps.insert(
        ("istio-system".into(), format!("istio{suffix}")),
        BTreeMap::from([("mesh".to_string(), d.mesh.clone())]),
    );
    Arc::new(Mutex::new(c))
}

fn requests(c: &Arc<Mutex<Cluster>>) -> Vec<String> {
    c.lock().expect("lock").requests.clone()
}

const INJECTOR: &str = "GET /api/v1/namespaces/istio-system/configmaps/istio-sidecar-injector";
const MESH: &str = "GET /api/v1/namespaces/istio-system/configmaps/istio";

#[test]
fn injection_with_the_cluster_config_equals_injection_with_the_same_files() {
    let d = docs_under_test();
    let cluster = cluster_with(&d, "");
    let dir = TempDir::new("kube-equal");
    let kc = kubeconfig(&dir, serve(cluster.clone()));
    let pod = fixture("deployment.yaml");
    let live = Inject::file(&pod)
        .arg("--kube")
        .arg("--kubeconfig")
        .arg(&kc)
        .run();
    let live = live.success().to_string();
    assert_eq!(requests(&cluster), [INJECTOR, MESH]);
    let files = Inject::file(&pod)
        .path_arg("--injectConfigFile", &dir.write("config.yaml", &d.config))
        .path_arg("--valuesFile", &dir.write("values.json", &d.values))
        .path_arg("--meshConfigFile", &dir.write("mesh.yaml", &d.mesh))
        .run();
    assert_eq!(live, files.success(), "byte-identical output");
    // Each of the three documents came from the cluster.
    assert!(
        live.contains("image: registry.example/mesh/proxyv2:"),
        "{live}"
    );
    assert!(live.contains("istiod.mesh.svc:15012"), "{live}");
    assert!(live.contains("name: FROM_CLUSTER"), "{live}");
    let embedded = Inject::file(&pod).run();
    assert_ne!(live, embedded.success());
}

#[test]
fn files_override_their_input_and_the_cluster_is_not_asked_for_the_rest() {
    let d = docs_under_test();
    let cluster = cluster_with(&d, "");
    let dir = TempDir::new("kube-override");
    let kc = kubeconfig(&dir, serve(cluster.clone()));
    let pod = fixture("pod.yaml");
    let embedded_mesh = dir.write("mesh.yaml", outrigger_inject::config::defaults::MESH);
    let out = Inject::file(&pod)
        .args(["--kube", "--kubeconfig", &kc])
        .path_arg("--mesh-config-file", &embedded_mesh)
        .run();
    let out = out.success();
    assert_eq!(requests(&cluster), [INJECTOR], "no mesh ConfigMap read");
    assert!(
        out.contains("registry.example/mesh/proxyv2"),
        "values from the cluster"
    );
    assert!(
        !out.contains("istiod.mesh.svc") && out.contains("istiod.istio-system.svc:15012"),
        "mesh from the file"
    );
    // The values file alone: the injector ConfigMap is read for its config key only, and a
    // values key it lacks is not an error.
    cluster
        .lock()
        .expect("lock")
        .configmaps
        .get_mut(&("istio-system".into(), "istio-sidecar-injector".into()))
        .expect("stored")
        .remove("values");
    let values = dir.write("values.json", outrigger_inject::config::defaults::VALUES);
    let out = Inject::file(&pod)
        .args(["--kube", "--kubeconfig", &kc])
        .path_arg("--valuesFile", &values)
        .run();
    assert!(out.success().contains("docker.io/istio/proxyv2"));
    // Every input a file: no request at all.
    cluster.lock().expect("lock").requests.clear();
    let out = Inject::file(&pod)
        .args(["--kube", "--kubeconfig", &kc])
        .path_arg("--injectConfigFile", &dir.write("c.yaml", &d.config))
        .path_arg("--valuesFile", &values)
        .path_arg("--meshConfigFile", &embedded_mesh)
        .run();
    out.success();
    assert!(requests(&cluster).is_empty(), "{:?}", requests(&cluster));
}

#[test]
fn revision_names_the_configmaps_as_istioctl_does() {
    let d = docs_under_test();
    let cluster = cluster_with(&d, "-canary");
    let dir = TempDir::new("kube-revision");
    let kc = kubeconfig(&dir, serve(cluster.clone()));
    let pod = fixture("pod.yaml");
    let out = Inject::file(&pod)
        .args(["--kube", "--kubeconfig", &kc, "--revision", "canary"])
        .run();
    assert!(out.success().contains("registry.example/mesh"));
    assert_eq!(
        requests(&cluster),
        [format!("{INJECTOR}-canary"), format!("{MESH}-canary")]
    );
    // An explicit name is used as given; the namespace comes from -i.
    {
        let mut c = cluster.lock().expect("lock");
        c.requests.clear();
        let cm = c.configmaps[&(
            "istio-system".into(),
            "istio-sidecar-injector-canary".into(),
        )]
            .clone();
        c.configmaps
            .insert(("mesh-ns".into(), "my-injector".into()), cm);
        let mesh = c.configmaps[&("istio-system".into(), "istio-canary".into())].clone();
        c.configmaps
            .insert(("mesh-ns".into(), "istio-canary".into()), mesh);
    }
    let out = Inject::file(&pod)
        .args([
            "--kube",
            "--kubeconfig",
            &kc,
            "--revision",
            "canary",
            "-i",
            "mesh-ns",
        ])
        .args(["--inject-config-map-name", "my-injector"])
        .run();
    out.success();
    assert_eq!(
        requests(&cluster),
        [
            "GET /api/v1/namespaces/mesh-ns/configmaps/my-injector",
            "GET /api/v1/namespaces/mesh-ns/configmaps/istio-canary"
        ]
    );
}

#[test]
fn missing_configmap_missing_key_and_rbac_denial_are_errors_naming_them() {
    let d = docs_under_test();
    let dir = TempDir::new("kube-errors");
    let pod = fixture("pod.yaml");
    // No ConfigMap of the revision.
    let cluster = cluster_with(&d, "");
    let kc = kubeconfig(&dir, serve(cluster.clone()));
    let out = Inject::file(&pod)
        .args(["--kube", "--kubeconfig", &kc, "--revision", "stable"])
        .run();
    assert_eq!(out.code, Some(1));
    assert_eq!(
        out.failure().trim_end(),
        "Error: --kube: ConfigMap istio-system/istio-sidecar-injector-stable not found (is Istio \
         installed in namespace istio-system? choose it with --istioNamespace, \
         --injectConfigMapName or --revision, or pass --injectConfigFile and --valuesFile)"
    );
    assert!(out.stdout.is_empty());
    // The mesh ConfigMap without its key.
    cluster.lock().expect("lock").configmaps.insert(
        ("istio-system".into(), "istio".into()),
        BTreeMap::from([("meshNetworks".to_string(), "{}".to_string())]),
    );
    let out = Inject::file(&pod)
        .args(["--kube", "--kubeconfig", &kc])
        .run();
    assert_eq!(out.code, Some(1));
    assert_eq!(
        out.failure().trim_end(),
        "Error: --kube: ConfigMap istio-system/istio has no key \"mesh\" (its keys: meshNetworks)"
    );
    // RBAC.
    cluster
        .lock()
        .expect("lock")
        .forbidden
        .push(("istio-system".into(), "istio-sidecar-injector".into()));
    let out = Inject::file(&pod)
        .args(["--kube", "--kubeconfig", &kc])
        .run();
    assert_eq!(out.code, Some(1));
    assert_eq!(
        out.failure().trim_end(),
        "Error: --kube: reading ConfigMap istio-system/istio-sidecar-injector: forbidden (RBAC): \
         configmaps \"istio-sidecar-injector\" is forbidden: User \"alice\" cannot get resource \
         \"configmaps\" in API group \"\" in the namespace \"istio-system\""
    );
    // A broken key is named as its ConfigMap key.
    let broken = cluster_with(&d, "");
    broken.lock().expect("lock").configmaps.insert(
        ("istio-system".into(), "istio-sidecar-injector".into()),
        BTreeMap::from([
            ("config".to_string(), d.config.clone()),
            ("values".to_string(), "{\"global\": 42}".to_string()),
        ]),
    );
    let kc2 = {
        let d2 = TempDir::new("kube-errors-broken");
        let kc = kubeconfig(&d2, serve(broken));
        let text = std::fs::read_to_string(&kc).expect("kubeconfig");
        dir.write("kubeconfig-broken", &text).display().to_string()
    };
    let out = Inject::file(&pod)
        .args(["--kube", "--kubeconfig", &kc2])
        .run();
    let err = out.failure();
    assert!(
        err.starts_with(
            "Error: loading values ConfigMap istio-system/istio-sidecar-injector key \"values\": "
        ),
        "{err}"
    );
}

#[test]
fn context_selects_the_cluster_and_flags_need_kube() {
    let d = docs_under_test();
    let cluster = cluster_with(&d, "");
    let dir = TempDir::new("kube-context");
    let kc = kubeconfig(&dir, serve(cluster.clone()));
    let pod = fixture("pod.yaml");
    let out = Inject::file(&pod)
        .args(["--kube", "--kubeconfig", &kc, "--context", "dead"])
        .run();
    let err = out.failure();
    assert!(
        err.starts_with("Error: --kube: reading ConfigMap istio-system/istio-sidecar-injector: "),
        "{err}"
    );
    assert!(requests(&cluster).is_empty());
    let out = Inject::file(&pod)
        .args(["--kube", "--context", "fake"])
        .env("KUBECONFIG", &kc)
        .run();
    assert_eq!(docs(out.success()).len(), 1);
    assert_eq!(requests(&cluster), [INJECTOR, MESH]);
    // Cluster flags without --kube are a usage error, not silently ignored.
    for flag in [
        "--injectConfigMapName",
        "--meshConfigMapName",
        "--istioNamespace",
        "--context",
    ] {
        let out = Inject::file(&pod).args([flag, "x"]).run();
        assert_eq!(out.code, Some(2), "{flag}");
        assert!(out.stderr.contains("--kube"), "{flag}: {}", out.stderr);
    }
}
