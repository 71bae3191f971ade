//! `outrigger inject --kube` end to end: the real binary reads Istio's ConfigMaps from the fake
//! API server of the tests (`common::kube_api`, plain HTTP on 127.0.0.1), which answers a
//! ConfigMap GET as the API server does: the object, a 404 `Status`, or a 403 RBAC `Status`.

mod common;
#[allow(dead_code)] // the helpers of the inject tests; this file uses some
mod support;

use common::kube_api::{self, configmap, Cluster, FakeApi};
use support::{docs, fixture, Inject, TempDir};

/// A kubeconfig for `api` written into `dir` (contexts `fake`, current, and `dead`).
fn kubeconfig(dir: &TempDir, api: &FakeApi) -> String {
    dir.write("kubeconfig", &kube_api::kubeconfig(api.port))
        .display()
        .to_string()
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

/// A fake cluster with Istio's ConfigMaps (named with `suffix`) in `istio-system`; RBAC lets
/// the user `alice` read them.
fn cluster_with(d: &Docs, suffix: &str) -> FakeApi {
    let mut c = Cluster::default();
    c.user = "alice".into();
    c.put(configmap(
        "istio-system",
        &format!("istio-sidecar-injector{suffix}"),
        "1",
        &[("config", &d.config), ("values", &d.values)],
    ));
    c.put(configmap(
        "istio-system",
        &format!("istio{suffix}"),
        "1",
        &[("mesh", &d.mesh)],
    ));
    FakeApi::start(c)
}

/// One test's fake cluster ([`cluster_with`] `suffix`), its documents, a scratch directory and
/// a kubeconfig in it.
struct Setup {
    d: Docs,
    cluster: FakeApi,
    dir: TempDir,
    kc: String,
}

fn setup(test: &str, suffix: &str) -> Setup {
    let d = docs_under_test();
    let cluster = cluster_with(&d, suffix);
    let dir = TempDir::new(test);
    let kc = kubeconfig(&dir, &cluster);
    Setup {
        d,
        cluster,
        dir,
        kc,
    }
}

/// `outrigger inject -f pod --kube --kubeconfig kc`.
fn inject_kube(pod: &std::path::Path, kc: &str) -> Inject {
    Inject::file(pod).args(["--kube", "--kubeconfig", kc])
}

const INJECTOR: &str = "GET /api/v1/namespaces/istio-system/configmaps/istio-sidecar-injector";
const MESH: &str = "GET /api/v1/namespaces/istio-system/configmaps/istio";

#[test]
fn injection_with_the_cluster_config_equals_injection_with_the_same_files() {
    let t = setup("kube-equal", "");
    let pod = fixture("deployment.yaml");
    let live = inject_kube(&pod, &t.kc).run();
    let live = live.success().to_string();
    assert_eq!(t.cluster.requests(), [INJECTOR, MESH]);
    let files = Inject::file(&pod)
        .path_arg(
            "--injectConfigFile",
            &t.dir.write("config.yaml", &t.d.config),
        )
        .path_arg("--valuesFile", &t.dir.write("values.json", &t.d.values))
        .path_arg("--meshConfigFile", &t.dir.write("mesh.yaml", &t.d.mesh))
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
    let t = setup("kube-override", "");
    let pod = fixture("pod.yaml");
    let embedded_mesh = t
        .dir
        .write("mesh.yaml", outrigger_inject::config::defaults::MESH);
    let out = inject_kube(&pod, &t.kc)
        .path_arg("--mesh-config-file", &embedded_mesh)
        .run();
    let out = out.success();
    assert_eq!(t.cluster.requests(), [INJECTOR], "no mesh ConfigMap read");
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
    t.cluster
        .lock()
        .get_mut("configmaps", "istio-system", "istio-sidecar-injector")
        .and_then(|cm| cm["data"].as_object_mut())
        .expect("stored")
        .remove("values");
    let values = t
        .dir
        .write("values.json", outrigger_inject::config::defaults::VALUES);
    let out = inject_kube(&pod, &t.kc)
        .path_arg("--valuesFile", &values)
        .run();
    assert!(out.success().contains("docker.io/istio/proxyv2"));
    // Every input a file: no request at all.
    t.cluster.lock().requests.clear();
    let out = inject_kube(&pod, &t.kc)
        .path_arg("--injectConfigFile", &t.dir.write("c.yaml", &t.d.config))
        .path_arg("--valuesFile", &values)
        .path_arg("--meshConfigFile", &embedded_mesh)
        .run();
    out.success();
    assert!(
        t.cluster.requests().is_empty(),
        "{:?}",
        t.cluster.requests()
    );
}

#[test]
fn revision_names_the_configmaps_as_istioctl_does() {
    let t = setup("kube-revision", "-canary");
    let pod = fixture("pod.yaml");
    let out = inject_kube(&pod, &t.kc)
        .args(["--revision", "canary"])
        .run();
    assert!(out.success().contains("registry.example/mesh"));
    assert_eq!(
        t.cluster.requests(),
        [format!("{INJECTOR}-canary"), format!("{MESH}-canary")]
    );
    // An explicit name is used as given; the namespace comes from -i.
    {
        let mut c = t.cluster.lock();
        c.requests.clear();
        for (from, to) in [
            ("istio-sidecar-injector-canary", "my-injector"),
            ("istio-canary", "istio-canary"),
        ] {
            let mut cm = c
                .get("configmaps", "istio-system", from)
                .cloned()
                .expect("stored");
            cm["metadata"]["namespace"] = "mesh-ns".into();
            cm["metadata"]["name"] = to.into();
            c.put(cm);
        }
    }
    let out = Inject::file(&pod)
        .args([
            "--kube",
            "--kubeconfig",
            &t.kc,
            "--revision",
            "canary",
            "-i",
            "mesh-ns",
        ])
        .args(["--inject-config-map-name", "my-injector"])
        .run();
    out.success();
    assert_eq!(
        t.cluster.requests(),
        [
            "GET /api/v1/namespaces/mesh-ns/configmaps/my-injector",
            "GET /api/v1/namespaces/mesh-ns/configmaps/istio-canary"
        ]
    );
}

#[test]
fn missing_configmap_missing_key_and_rbac_denial_are_errors_naming_them() {
    let t = setup("kube-errors", "");
    let pod = fixture("pod.yaml");
    // No ConfigMap of the revision.
    let out = inject_kube(&pod, &t.kc)
        .args(["--revision", "stable"])
        .run();
    assert_eq!(out.code, Some(2));
    assert_eq!(
        out.failure().trim_end(),
        "Error: --kube: ConfigMap istio-system/istio-sidecar-injector-stable not found (is Istio \
         installed in namespace istio-system? choose it with --istioNamespace, \
         --injectConfigMapName or --revision, or pass --injectConfigFile and --valuesFile)"
    );
    assert!(out.stdout.is_empty());
    // The mesh ConfigMap without its key.
    t.cluster.lock().put(configmap(
        "istio-system",
        "istio",
        "2",
        &[("meshNetworks", "{}")],
    ));
    let out = inject_kube(&pod, &t.kc).run();
    assert_eq!(out.code, Some(2));
    assert_eq!(
        out.failure().trim_end(),
        "Error: --kube: ConfigMap istio-system/istio has no key \"mesh\" (its keys: meshNetworks)"
    );
    // RBAC.
    t.cluster.lock().forbidden.push(INJECTOR.to_string());
    let out = inject_kube(&pod, &t.kc).run();
    assert_eq!(out.code, Some(2));
    assert_eq!(
        out.failure().trim_end(),
        "Error: --kube: reading ConfigMap istio-system/istio-sidecar-injector: forbidden (RBAC): \
         configmaps \"istio-sidecar-injector\" is forbidden: User \"alice\" cannot get resource \
         \"configmaps\" in API group \"\" in the namespace \"istio-system\""
    );
    // A broken key is named as its ConfigMap key.
    let broken = cluster_with(&t.d, "");
    broken.lock().put(configmap(
        "istio-system",
        "istio-sidecar-injector",
        "2",
        &[("config", &t.d.config), ("values", "{\"global\": 42}")],
    ));
    let kc2 = t
        .dir
        .write("kubeconfig-broken", &kube_api::kubeconfig(broken.port))
        .display()
        .to_string();
    let out = inject_kube(&pod, &kc2).run();
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
    let t = setup("kube-context", "");
    let pod = fixture("pod.yaml");
    let out = inject_kube(&pod, &t.kc).args(["--context", "dead"]).run();
    let err = out.failure();
    // The context's server is named with the kubeconfig, once, and the cause said once.
    assert!(
        err.starts_with(&format!(
            "Error: --kube: cannot reach the Kubernetes API server http://127.0.0.1:1/ \
             (kubeconfig {}, context dead): reading ConfigMap \
             istio-system/istio-sidecar-injector: ",
            t.kc
        )) && err.matches("Connection refused").count() == 1,
        "{err}"
    );
    assert!(t.cluster.requests().is_empty());
    let out = Inject::file(&pod)
        .args(["--kube", "--context", "fake"])
        .env("KUBECONFIG", &t.kc)
        .run();
    assert_eq!(docs(out.success()).len(), 1);
    assert_eq!(t.cluster.requests(), [INJECTOR, MESH]);
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

/// `check --kube` names the injector ConfigMap as `inject --kube` does (`--injectConfigMapName`,
/// `-i`); the old `--injectConfigMap NAMESPACE/NAME` still works, with a deprecation warning.
#[test]
fn check_names_the_injector_configmap_as_inject_does() {
    let t = setup("check-configmap", "");
    t.cluster.lock().put(serde_json::json!({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "apps", "labels": {"istio.io/rev": "outrigger"}}}));
    let check = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_outrigger"))
            .args([
                "check",
                "--kube",
                "--kubeconfig",
                &t.kc,
                "-n",
                "apps",
                "-o",
                "json",
            ])
            .args(args)
            .output()
            .expect("binary runs")
    };
    let new = check(&[
        "--injectConfigMapName",
        "istio-sidecar-injector",
        "-i",
        "istio-system",
    ]);
    let old = check(&["--injectConfigMap", "istio-system/istio-sidecar-injector"]);
    let stderr = |o: &std::process::Output| String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(new.status.code(), Some(0), "{}", stderr(&new));
    assert_eq!((old.status.code(), &old.stdout), (Some(0), &new.stdout));
    assert!(!stderr(&new).contains("deprecated"), "{}", stderr(&new));
    assert!(
        stderr(&old).contains("--injectConfigMap NAMESPACE/NAME is deprecated"),
        "{}",
        stderr(&old)
    );
    assert_eq!(
        t.cluster
            .requests()
            .iter()
            .filter(|r| r.as_str() == INJECTOR)
            .count(),
        2
    );
}
