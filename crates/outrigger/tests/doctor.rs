//! `outrigger doctor` against the fake API server with kube-apiserver's admission chain
//! (`common::kube_api`, `common::admission`, `common::rbac`) and the real `outrigger serve
//! --kube` behind its Service: deploy/base applied as it ships passes every check (exit 0);
//! each seeded fault fails the check it belongs to, naming the object (exit 1).

mod common;

use std::path::Path;

use base64::Engine as _;
use common::admission::{activated, start_outrigger};
use common::kube_api::{self, write_kubeconfig, Cluster, FakeApi};
use common::*;
use serde_json::{json, Value};

fn deploy_file(path: &str) -> String {
    let p = format!("{}/../../deploy/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

/// Every object of deploy/base, as `kubectl apply -k deploy/base` creates them (the base's
/// files already carry their namespaces; the kustomization adds nothing else).
fn apply_base(c: &mut Cluster) {
    let kustomization = outrigger_go::yaml::from_str(&deploy_file("base/kustomization.yaml"))
        .expect("kustomization");
    for file in kustomization["resources"].as_array().expect("resources") {
        let file = file.as_str().expect("a file");
        for doc in outrigger_go::yaml::split_documents(&deploy_file(&format!("base/{file}")))
            .expect("YAML")
        {
            c.put(outrigger_go::yaml::from_str(&doc).expect("a manifest"));
        }
    }
}

fn namespace(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": name, "uid": format!("uid-{name}"), "resourceVersion": "2", "labels": labels}})
}

/// deploy/base applied, namespaces `kube-system`, `istio-system` and `apps` (labelled for
/// injection), Istio's ConfigMaps with the embedded configuration.
fn cluster() -> Cluster {
    let mut c = Cluster::default();
    apply_base(&mut c);
    // The Deployment says how the test's server runs (native sidecars off: no nodes here).
    let dep = c
        .get_mut("deployments", "outrigger", "outrigger")
        .expect("Deployment");
    dep["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array_mut()
        .expect("args")
        .push(json!("--native-sidecars=false"));
    // The API server gives every object a uid (the server's owner reference needs it).
    c.get_mut("namespaces", "", "outrigger").expect("namespace")["metadata"]["uid"] =
        json!("uid-outrigger");
    for ns in ["kube-system", "istio-system"] {
        c.put(namespace(ns, json!({})));
    }
    c.put(namespace("apps", json!({"istio.io/rev": "outrigger"})));
    kube_api::put_istio_configmaps(&mut c);
    c
}

/// A doctor run: its exit status and its JSON report.
struct Report {
    status: i32,
    json: Value,
}

impl Report {
    /// (verdict, finding) of check `name`.
    fn check(&self, name: &str) -> (String, String) {
        let c = self.json["checks"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no check {name}: {}", self.json));
        (
            c["verdict"].as_str().unwrap_or("").to_string(),
            c["finding"].as_str().unwrap_or("").to_string(),
        )
    }

    /// The checks whose verdict is `verdict`.
    fn with(&self, verdict: &str) -> Vec<String> {
        self.json["checks"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|c| c["verdict"] == verdict)
            .map(|c| c["name"].as_str().unwrap_or("").to_string())
            .collect()
    }

    /// Assert that exactly `failed` fail, with findings containing each `words`.
    fn fails(&self, failed: &[&str], words: &[&str]) {
        assert_eq!(self.with("fail"), failed, "{:#}", self.json);
        assert_eq!(self.status, 1, "{:#}", self.json);
        for w in words {
            let all: String = failed.iter().map(|f| self.check(f).1).collect();
            assert!(all.contains(w), "{w:?} not in {all}");
        }
    }
}

async fn doctor(api: &FakeApi, dir: &Path, extra: &[&str]) -> Report {
    let kc = write_kubeconfig(dir, api);
    let mut args: Vec<String> = ["doctor", "--kubeconfig", &kc, "-o", "json"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_outrigger"))
            .args(&args)
            .env("NO_PROXY", "127.0.0.1,localhost")
            .env("no_proxy", "127.0.0.1,localhost")
            .output()
            .expect("runs")
    })
    .await
    .expect("joined");
    let json: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    Report {
        status: out.status.code().unwrap_or(-1),
        json,
    }
}

/// An istiod-like injector: `outrigger serve` on its own (files, no cluster) with proxy images
/// from hub `istiod.example`, its certificate for `istiod.istio-system.svc`; the server and its
/// CA (base64 PEM, for a caBundle).
fn start_istiod_like(dir: &Path) -> (Server, String) {
    let mut values: Value =
        serde_json::from_str(outrigger_inject::config::defaults::VALUES).expect("values");
    values["global"]["hub"] = json!("istiod.example");
    let files = [
        (
            "config",
            outrigger_inject::config::defaults::CONFIG.to_string(),
        ),
        ("values", values.to_string()),
        ("mesh", outrigger_inject::config::defaults::MESH.to_string()),
    ];
    for (name, text) in &files {
        std::fs::write(dir.join(name), text).expect("write");
    }
    let server = Outrigger::in_dir(dir)
        .config_in(dir)
        .flags(&["--service", "istiod", "--namespace", "istio-system"])
        .generated_ca_at(&dir.join("istiod-ca.pem"))
        .native_sidecars(false)
        .start();
    let pem = server.ca();
    (
        server,
        base64::engine::general_purpose::STANDARD.encode(pem),
    )
}

/// Change every entry of outrigger's configuration; the previous configuration.
fn edit_entries(api: &FakeApi, f: impl Fn(&mut Value)) -> Value {
    let mut a = api.lock();
    let cfg = a
        .get_mut(
            "mutatingwebhookconfigurations",
            "",
            "outrigger-sidecar-injector",
        )
        .expect("configuration");
    let before = cfg.clone();
    for e in cfg["webhooks"].as_array_mut().expect("entries") {
        f(e);
    }
    before
}

fn restore(api: &FakeApi, cfg: Value) {
    api.lock().put(cfg);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_healthy_install_passes_and_each_seeded_fault_is_named() {
    let api = FakeApi::start(cluster());
    let server = start_outrigger(&api, "doctor-faults", &[]);
    activated(&api, "outrigger-sidecar-injector").await;
    let dir = scratch("doctor-runs");
    let probe = ["--probe-namespace", "apps"];

    // Healthy: every check passes, exit 0; the probe was injected as rendered.
    let r = doctor(&api, &dir, &probe).await;
    assert_eq!(r.with("pass").len(), 13, "{:#}", r.json);
    assert_eq!(r.status, 0);
    assert_eq!(r.json["verdict"], "pass");
    assert!(
        r.check("probe")
            .1
            .contains("injected exactly as outrigger renders it"),
        "{:?}",
        r.check("probe")
    );
    assert!(r.check("namespace-selection").1.contains("apps"));
    assert!(
        api.lock()
            .get("pods", "apps", "outrigger-doctor-probe")
            .is_none(),
        "dry run: not stored"
    );
    // A probe namespace that does not exist.
    doctor(&api, &dir, &["--probe-namespace", "nosuch"])
        .await
        .fails(
            &["probe"],
            &["cannot probe in nosuch: namespaces \"nosuch\" not found"],
        );
    // Without --probe-namespace the probe is skipped, still exit 0.
    let r = doctor(&api, &dir, &[]).await;
    assert_eq!(r.with("skipped"), ["probe"]);
    assert_eq!(r.status, 0);

    // Takeover while istiod's webhooks remain: outrigger's configuration switched to the
    // takeover's entries (istiod's default revision's selectors, `webhook-config
    // --selector-revision default`), `apps` labelled for istiod, and an istiod-like injector
    // (another server, proxy images from another hub) still selecting the same pods. Its
    // configuration sorts after outrigger's: it is called last and its sidecar wins (one sorting
    // first would be overridden by outrigger, Istio's webhook re-injecting an injected pod).
    let shipped = {
        let mut a = api.lock();
        let cfg = a
            .get_mut(
                "mutatingwebhookconfigurations",
                "",
                "outrigger-sidecar-injector",
            )
            .expect("configuration");
        let before = cfg.clone();
        let live = before["webhooks"][0].clone();
        let mut entries = printed_webhook_config(&["--selector-revision", "default"])["webhooks"]
            .as_array()
            .cloned()
            .expect("entries");
        for e in &mut entries {
            e["clientConfig"]["caBundle"] = live["clientConfig"]["caBundle"].clone();
            e["failurePolicy"] = live["failurePolicy"].clone();
        }
        cfg["webhooks"] = Value::Array(entries);
        before
    };
    api.lock()
        .put(namespace("apps", json!({"istio-injection": "enabled"})));
    let (istiod, istiod_ca) = start_istiod_like(&dir);
    let mut istiod_config = printed_webhook_config(&["--istio"]);
    istiod_config["metadata"]["name"] = json!("vendor-sidecar-injector");
    for e in istiod_config["webhooks"].as_array_mut().expect("entries") {
        e["clientConfig"]["caBundle"] = json!(istiod_ca);
    }
    let svc = istiod_config["webhooks"][0]["clientConfig"]["service"].clone();
    api.lock().endpoints.insert(
        (
            svc["namespace"].as_str().expect("ns").into(),
            svc["name"].as_str().expect("name").into(),
        ),
        vec![istiod.addr],
    );
    api.lock().put(istiod_config);
    let r = doctor(&api, &dir, &probe).await;
    r.fails(
        &["overlaps", "probe"],
        &[
            "outrigger-sidecar-injector/object.sidecar-injector.istio.io and \
             vendor-sidecar-injector/object.sidecar-injector.istio.io both select a pod \
             (namespace labels none, pod labels sidecar.istio.io/inject=true)",
            "of 225 label combinations",
            "selected together now: vendor-sidecar-injector (namespaces apps)",
            "spec.containers[istio-proxy].image: rendered \"docker.io/istio/proxyv2",
            "got \"istiod.example/proxyv2",
            "changed by vendor-sidecar-injector/namespace.sidecar-injector.istio.io",
        ],
    );
    assert_eq!(
        r.check("webhook-order").0,
        "warn",
        "{:?}",
        r.check("webhook-order")
    );
    assert!(r.check("webhook-order").1.contains(
        "call order for its pods: outrigger-sidecar-injector → \
         vendor-sidecar-injector/namespace.sidecar-injector.istio.io"
    ));
    // The takeover alone, istiod's configuration still there but no namespace labelled for
    // both (apps now labelled for outrigger's own value, which the takeover does not select):
    // doctor still fails, from the selectors.
    api.lock()
        .put(namespace("apps", json!({"istio.io/rev": "outrigger"})));
    doctor(&api, &dir, &[]).await.fails(
        &["namespace-selection", "overlaps"],
        &["outrigger-sidecar-injector/object.sidecar-injector.istio.io and vendor-sidecar-injector/object.sidecar-injector.istio.io both select"],
    );
    api.lock().remove(
        "mutatingwebhookconfigurations",
        "",
        "vendor-sidecar-injector",
    );
    drop(istiod);
    restore(&api, shipped);

    // Selector gap: a namespace labelled for a revision nothing serves.
    api.lock()
        .put(namespace("canary", json!({"istio.io/rev": "canary"})));
    doctor(&api, &dir, &[])
        .await
        .fails(&["namespace-selection"], &["canary (istio.io/rev=canary)"]);
    api.lock().remove("namespaces", "", "canary");

    // Selector gap: kube-system and outrigger's namespace no longer excluded.
    let before = edit_entries(&api, |e| {
        e["namespaceSelector"]["matchExpressions"]
            .as_array_mut()
            .expect("expressions")
            .retain(|x| x["key"] != "kubernetes.io/metadata.name");
    });
    doctor(&api, &dir, &[])
        .await
        .fails(&["excluded-namespaces"], &["outrigger (", "kube-system ("]);
    restore(&api, before);

    // timeoutSeconds not above the server's deadline (4s), and above the API server's 30.
    let before = edit_entries(&api, |e| e["timeoutSeconds"] = json!(4));
    doctor(&api, &dir, &[]).await.fails(
        &["timeout"],
        &["timeoutSeconds 4 is not above the injector's request deadline 4s"],
    );
    edit_entries(&api, |e| e["timeoutSeconds"] = json!(40));
    doctor(&api, &dir, &[])
        .await
        .fails(&["timeout"], &["outside the API server's 1-30"]);
    restore(&api, before);

    // No endpoints: the Service check fails, and the probe is refused naming the webhook.
    let addr = server.addr;
    api.lock()
        .endpoints
        .insert(("outrigger".into(), "outrigger".into()), vec![]);
    let r = doctor(&api, &dir, &probe).await;
    r.fails(
        &["service-endpoints", "probe"],
        &[
            "Service outrigger/outrigger has no ready endpoints",
            "by outrigger-sidecar-injector/rev.namespace.sidecar-injector.istio.io",
        ],
    );

    // Blocked port: an endpoint that accepts no connection. Endpoints pass; the probe names it.
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr");
    api.lock()
        .endpoints
        .insert(("outrigger".into(), "outrigger".into()), vec![dead]);
    let r = doctor(&api, &dir, &probe).await;
    r.fails(
        &["probe"],
        &["refused", "namespace.sidecar-injector.istio.io"],
    );
    let hint = r.json["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["name"] == "probe")
        .expect("probe")["hint"]
        .clone();
    assert!(hint.as_str().unwrap_or("").contains("targetPort"), "{hint}");
    api.lock()
        .endpoints
        .insert(("outrigger".into(), "outrigger".into()), vec![addr]);

    // RBAC: the ClusterRole loses its rule on the webhook configuration.
    let role = api
        .lock()
        .get("clusterroles", "", "outrigger")
        .cloned()
        .expect("ClusterRole");
    let mut cut = role.clone();
    cut["rules"]
        .as_array_mut()
        .expect("rules")
        .retain(|r| r["resources"] != json!(["mutatingwebhookconfigurations"]));
    api.lock().put(cut);
    doctor(&api, &dir, &[]).await.fails(
        &["rbac"],
        &["service account outrigger/outrigger may not: get \
           mutatingwebhookconfigurations.admissionregistration.k8s.io outrigger-sidecar-injector \
           (caBundle sync, activation once ready); list "],
    );
    api.lock().put(role);

    // Expiry close: a warning, exit 0.
    let r = doctor(&api, &dir, &["--expiry-warning", "8760h"]).await;
    assert_eq!(
        r.check("certificate-expiry").0,
        "warn",
        "{:?}",
        r.check("certificate-expiry")
    );
    assert_eq!(r.status, 0);

    // With the server gone (it would restore both at once): failurePolicy Ignore while
    // endpoints are ready, and a caBundle of another CA.
    drop(server);
    let before = edit_entries(&api, |e| e["failurePolicy"] = json!("Ignore"));
    doctor(&api, &dir, &[]).await.fails(
        &["failure-policy"],
        &[
            "failurePolicy Ignore on rev.namespace.sidecar-injector.istio.io",
            "although 1 endpoint(s) are ready",
        ],
    );
    restore(&api, before);
    // A newer Istio's templates: a call of a Sprig function outrigger lacks, named with its
    // template; then the ConfigMap gone, which the server would wait for (not ready).
    let injector = api
        .lock()
        .get("configmaps", "istio-system", "istio-sidecar-injector")
        .cloned()
        .expect("ConfigMap");
    let mut newer = injector.clone();
    let config = newer["data"]["config"].as_str().expect("config").replacen(
        "containers:",
        "containers:{{ if false }}{{ uuidv4 }}{{ end }}",
        1,
    );
    newer["data"]["config"] = json!(config);
    api.lock().put(newer);
    doctor(&api, &dir, &[])
        .await
        .fails(&["templates"], &["calls Sprig function \"uuidv4\""]);
    api.lock()
        .delete("configmaps", "istio-system", "istio-sidecar-injector");
    doctor(&api, &dir, &[]).await.fails(
        &["templates"],
        &[
            "cannot read the configuration outrigger serves",
            "istio-sidecar-injector",
        ],
    );
    api.lock().put(injector);
    let other_ca = {
        let key = rcgen::KeyPair::generate().expect("key");
        let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Constrained(0));
        p.self_signed(&key).expect("CA").pem()
    };
    let b64 = base64::engine::general_purpose::STANDARD.encode(other_ca);
    edit_entries(&api, |e| e["clientConfig"]["caBundle"] = json!(b64));
    doctor(&api, &dir, &[]).await.fails(
        &["ca-bundle"],
        &[
            "does not verify against the caBundle of rev.namespace.sidecar-injector.istio.io (",
            "UnknownIssuer",
        ],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_install_fails_and_an_unreachable_cluster_exits_2() {
    let mut c = Cluster::default();
    c.put(namespace("apps", json!({"istio.io/rev": "outrigger"})));
    let api = FakeApi::start(c);
    let dir = scratch("doctor-missing");
    let r = doctor(&api, &dir, &[]).await;
    assert_eq!(r.check("webhook-configuration").0, "fail");
    assert!(r
        .check("webhook-configuration")
        .1
        .contains("outrigger-sidecar-injector not found"));
    assert_eq!(
        r.check("service-endpoints").1,
        "Service outrigger/outrigger not found: every call to the injector fails"
    );
    assert_eq!(
        r.check("rbac"),
        (
            "skipped".to_string(),
            "Deployment outrigger/outrigger not found: the server's service account and flags \
             are unknown"
                .to_string()
        )
    );
    assert_eq!(r.status, 1);

    // The table: a row per check, the hint under a failed one, the summary last; same status.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_outrigger"))
        .args(["doctor", "--kubeconfig", &write_kubeconfig(&dir, &api)])
        .env("NO_PROXY", "127.0.0.1,localhost")
        .output()
        .expect("runs");
    let table = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{table}");
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("VERDICT  CHECK"), "{table}");
    assert!(
        lines[1].starts_with("fail     webhook-configuration MutatingWebhookConfiguration outrigger-sidecar-injector not found")
            && lines[2].trim_start().starts_with("hint: install it (kubectl apply -k deploy/base)"),
        "{table}"
    );
    assert!(
        lines
            .last()
            .is_some_and(|l| l.starts_with("fail: ") && l.ends_with(" skipped")),
        "{table}"
    );

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_outrigger"))
        .args([
            "doctor",
            "--kubeconfig",
            &write_kubeconfig(&dir, &api),
            "--context",
            "dead",
        ])
        .env("NO_PROXY", "127.0.0.1,localhost")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("Error: cannot reach the Kubernetes API server http://127.0.0.1:1/")
            && err.contains("reading its version: ")
            && err.contains("Connection refused"),
        "{err}"
    );
}
