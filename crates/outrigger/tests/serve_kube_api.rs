//! `outrigger serve --kube` end to end against the fake API server of the tests
//! (`common::kube_api`, plain HTTP on 127.0.0.1): the certificate is bootstrapped into the Secret
//! and served, the configuration comes from the injector ConfigMap, and the requests made are
//! exactly the expected ones.

mod common;

use std::io::{Read, Write};
use std::time::Duration;

use base64::Engine as _;
use common::kube_api::{
    configmap, secret_ca, serve_against, stored_secret, write_kubeconfig, Cluster, FakeApi,
    PatchType, ScriptedWatch,
};
use common::*;
use serde_json::{json, Value};

/// The ConfigMap of the injector as these tests store it: the embedded configuration with
/// `policy: disabled`, so that its origin shows (the embedded default would inject).
fn policy_disabled_configmap() -> Value {
    let config = outrigger_inject::config::defaults::CONFIG.replacen(
        "policy: enabled",
        "policy: disabled",
        1,
    );
    assert_ne!(
        config,
        outrigger_inject::config::defaults::CONFIG,
        "policy replaced"
    );
    configmap_with(&config, "7")
}

/// The injector ConfigMap `istio-system/istio-sidecar-injector` with `config` at version `rv`.
fn configmap_with(config: &str, rv: &str) -> Value {
    configmap(
        "istio-system",
        "istio-sidecar-injector",
        rv,
        &[
            ("config", config),
            ("values", outrigger_inject::config::defaults::VALUES),
        ],
    )
}

fn webhook_config() -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "outrigger-sidecar-injector", "resourceVersion": "5"},
        "webhooks": [{"name": "namespace.sidecar-injector.istio.io", "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "clientConfig": {"service": {"name": "outrigger", "namespace": "outrigger"}}}]})
}

/// The cluster of these tests: the injector ConfigMap ([`policy_disabled_configmap`]), the
/// webhook configuration, namespace `team` (with OpenShift's UID/GID ranges), node `n1`
/// (kubelet 1.33), no Secret; the first Secret watch ends with 410 Gone, as when the
/// resourceVersion it started from was compacted away (the client must relist).
fn cluster() -> Cluster {
    let mut c = Cluster::default();
    c.expire_first_watch.push("secrets".into());
    c.put(policy_disabled_configmap());
    c.put(webhook_config());
    c.put(json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "team", "resourceVersion": "4", "annotations": {
            "openshift.io/sa.scc.uid-range": "1000620000/10000",
            "openshift.io/sa.scc.supplemental-groups": "1000620000/10000"}}}));
    c.put(json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "n1", "resourceVersion": "3"},
        "status": {"nodeInfo": {"kubeletVersion": "v1.33.2",
            "architecture": "", "bootID": "", "containerRuntimeVersion": "",
            "kernelVersion": "", "kubeProxyVersion": "", "machineID": "",
            "operatingSystem": "", "osImage": "", "systemUUID": ""}}}));
    c
}

/// The webhook configuration `outrigger-sidecar-injector` as stored.
fn stored_webhook(api: &FakeApi) -> Value {
    api.lock()
        .get(
            "mutatingwebhookconfigurations",
            "",
            "outrigger-sidecar-injector",
        )
        .cloned()
        .expect("webhook configuration stored")
}

/// Publish the Secret's CA bundle in every entry of the webhook configuration, as the external
/// owner of the caBundle (`--ca-bundle-managed-externally`) does.
fn publish_ca(api: &FakeApi) {
    let ca = base64::engine::general_purpose::STANDARD.encode(secret_ca(api, "Secret created"));
    set_ca_bundle(api, &ca);
}

/// Replace the caBundle of every entry of the webhook configuration (base64) with a write the
/// fake versions, as the API server does.
fn set_ca_bundle(api: &FakeApi, encoded: &str) {
    let mut a = api.lock();
    let mut mwc = a
        .get(
            "mutatingwebhookconfigurations",
            "",
            "outrigger-sidecar-injector",
        )
        .cloned()
        .expect("webhook configuration");
    for w in mwc["webhooks"].as_array_mut().expect("webhooks") {
        w["clientConfig"]["caBundle"] = json!(encoded);
    }
    a.write(
        "mutatingwebhookconfigurations",
        "",
        "outrigger-sidecar-injector",
        &mwc,
        None,
    )
    .expect("written");
}

/// A client of `server` trusting only the CA bundle the server stored in the Secret.
/// A client CA in a scratch directory (`--clientCaFile`): the API server's side of mutual TLS.
fn client_ca(name: &str) -> (common::client_ca::TestCa, String) {
    let ca = common::client_ca::TestCa::new("apiserver client CA");
    let file = scratch(name).join("client-ca.pem");
    std::fs::write(&file, &ca.pem).expect("write the client CA");
    (ca, file.display().to_string())
}

/// Connect as the API server does with its admission kubeconfig: trusting the Secret's CA and
/// presenting a client certificate of `ca`.
async fn connect_as_api_server(
    server: &Server,
    api: &FakeApi,
    ca: &common::client_ca::TestCa,
) -> H2 {
    let server_ca = secret_ca(api, "Secret created");
    let (chain, key) = ca.client("kube-apiserver", &[]);
    let cfg = client_config_with_cert(&[&server_ca], &[b"h2"], chain.as_bytes(), key.as_bytes());
    H2::connect_with(server.addr, cfg)
        .await
        .expect("mutual TLS")
}

async fn connect_trusting_the_secret(server: &Server, api: &FakeApi) -> H2 {
    let ca = secret_ca(api, "Secret created");
    H2::connect(server.addr, &ca).await.expect("TLS")
}

/// `outrigger serve --kube --namespace outrigger --port 0` with `args` against `api`, expected to
/// fail start-up: its stderr.
fn serve_fails_to_start(api: &FakeApi, name: &str, args: &[&str]) -> String {
    let dir = scratch(name);
    let kc = write_kubeconfig(&dir, api);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_outrigger"))
        .args(["serve", "--kube", "--namespace", "outrigger", "--port", "0"])
        .args(args)
        .env("KUBECONFIG", &kc)
        .env("HOME", &dir)
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env("no_proxy", "127.0.0.1,localhost")
        .output()
        .expect("run outrigger");
    assert!(!out.status.success());
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn pod(name: &str, annotations: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "annotations": annotations},
           "spec": {"containers": [{"name": "app", "image": "nginx"}]}})
}

/// Send an `admission.k8s.io/v1` review of `pod` in namespace `ns`.
async fn review_pod(c: &H2, uid: &str, ns: &str, pod: Value) -> Resp {
    c.request(
        "POST",
        "/inject",
        Some("application/json"),
        full(review("admission.k8s.io/v1", uid, ns, pod)),
    )
    .await
    .expect("review")
}

/// The JSON patch of an answered review, decoded (panics when the pod was not injected).
fn decoded_patch(r: &Resp) -> String {
    let patch = r.json()["response"]["patch"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| panic!("injected: {}", r.text()));
    String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(patch)
            .expect("base64"),
    )
    .expect("utf-8")
}

/// The `outrigger_reloads_total` of configuration reloads with `result` in `metrics`.
fn config_reloads(metrics: &str, result: &str) -> Option<f64> {
    metric(
        metrics,
        &format!(r#"outrigger_reloads_total{{kind="config",result="{result}"}}"#),
    )
}

/// The flags of the tests reading the configuration from the injector ConfigMap, the caBundle
/// managed externally, native sidecars off.
const CONFIGMAP_SERVER: &[&str] = &[
    "--dns-name",
    "localhost",
    "--ca-bundle-managed-externally",
    "--injectConfigMap",
    "istio-system/istio-sidecar-injector",
    "--native-sidecars",
    "false",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn certificate_from_the_secret_and_configuration_from_the_configmap() {
    let api = FakeApi::start(cluster());
    // Mounted files (policy enabled) are ignored when the configuration comes from the API.
    let mounted = scratch("kube-api-mounted").join("config");
    std::fs::write(&mounted, outrigger_inject::config::defaults::CONFIG).expect("write config");
    let mounted_arg = mounted.display().to_string();
    let mut args = CONFIGMAP_SERVER.to_vec();
    args.extend(["--injectConfig", mounted_arg.as_str()]);
    let server = serve_against(&api, "kube-api", &args, &[]);
    // The certificate served is the one the server stored in the Secret.
    let ca = secret_ca(&api, "Secret created with a CA bundle");
    let c = H2::connect(server.addr, &ca)
        .await
        .expect("TLS trusting only the Secret's CA");

    // policy: disabled from the ConfigMap (the embedded default would inject this pod).
    let r = review_pod(&c, "u1", "team", pod("plain", json!({}))).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    assert_eq!(v["response"]["allowed"], true);
    assert!(v["response"].get("patch").is_none(), "not injected: {v}");
    let opted_in = pod("opted", json!({"sidecar.istio.io/inject": "true"}));
    let r = review_pod(&c, "u2", "team", opted_in).await;
    assert!(
        r.json()["response"]["patch"].is_string(),
        "opt-in injects: {}",
        r.text()
    );
    assert!(
        server
            .wait_log(
                "ConfigMap istio-system/istio-sidecar-injector",
                Duration::from_secs(1)
            )
            .await
    );
    // A change of the mounted file does not override the ConfigMap configuration.
    std::fs::write(
        &mounted,
        format!("{}\n", outrigger_inject::config::defaults::CONFIG),
    )
    .expect("rewrite");
    // Nothing must happen, so there is no event to wait for: give a file watch (debounce 100 ms)
    // ample time to have reacted if it wrongly existed.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let r = review_pod(&c, "u3", "team", pod("plain2", json!({}))).await;
    assert!(
        r.json()["response"].get("patch").is_none(),
        "still the ConfigMap's policy: {}",
        r.text()
    );
    assert!(
        !server.log_text().contains("configuration reloaded"),
        "{}",
        server.log_text()
    );

    let seen = api.requests();
    assert_eq!(
        seen.first().map(String::as_str),
        Some("GET /version"),
        "{seen:?}"
    );
    assert!(
        seen.contains(&"POST /api/v1/namespaces/outrigger/secrets".to_string()),
        "{seen:?}"
    );
    assert!(
        !seen
            .iter()
            .any(|s| s.contains("mutatingwebhookconfigurations") && !s.starts_with("GET ")),
        "caBundle managed externally: observed (read-only), never written: {seen:?}"
    );
    assert!(
        !seen
            .iter()
            .any(|s| s.contains("/nodes") || s.contains("/events")),
        "no node watch with native sidecars off, no Events without --events: {seen:?}"
    );
}

/// A dry-run review (`request.dryRun: true`) causes no side effect: no Event, while the same
/// review without it records one. Without client authentication the Event says the facts are
/// what the review claimed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_reviews_create_no_event() {
    let api = FakeApi::start(cluster());
    // No configuration flag: the embedded default (Istio's mount path is absent here).
    let (ca, ca_file) = client_ca("kube-api-dry-run-client-ca");
    let server = serve_against(
        &api,
        "kube-api-dry-run",
        &[
            "--dns-name",
            "localhost",
            "--events",
            "--clientCaFile",
            &ca_file,
        ],
        &[("POD_NAME", "outrigger-0")],
    );
    let c = connect_as_api_server(&server, &api, &ca).await;
    let owned = |name: &str| {
        let mut p = pod(name, json!({}));
        p["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "name": name, "uid": name, "controller": true}]);
        p
    };
    let mut dry: Value = serde_json::from_slice(&review(
        "admission.k8s.io/v1",
        "dry",
        "team",
        owned("dry-rs"),
    ))
    .unwrap();
    dry["request"]["dryRun"] = json!(true);
    let r = c
        .post("/inject", serde_json::to_vec(&dry).unwrap())
        .await
        .expect("dry run");
    assert!(
        r.json()["response"]["patch"].is_string(),
        "still injected: {}",
        r.text()
    );
    let r = review_pod(&c, "real", "team", owned("real-rs")).await;
    assert!(r.json()["response"]["patch"].is_string());
    eventually("the Event of the real review", || async {
        !api.lock().all("events").is_empty()
    })
    .await;
    // Events are written in order by one publisher: the dry run's, had it been queued, would
    // have come first.
    let events = api.lock().all("events");
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["regarding"]["name"], "real-rs");
    let note = events[0]["note"].as_str().unwrap_or_default();
    assert!(note.starts_with("injected: "), "{note}");
}

/// Events are written only for callers authenticated by a client certificate: a review from
/// anyone else (here: a server without --clientCaFile) writes none, and says so in the metrics.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthenticated_callers_write_no_events() {
    let api = FakeApi::start(cluster());
    // No configuration flag: the embedded default (Istio's mount path is absent here).
    let server = serve_against(
        &api,
        "kube-api-anon-events",
        &["--dns-name", "localhost", "--events"],
        &[("POD_NAME", "outrigger-0")],
    );
    let c = connect_trusting_the_secret(&server, &api).await;
    let mut p = pod("anon", json!({}));
    p["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet",
        "name": "victim-rs", "uid": "victim", "controller": true}]);
    let r = review_pod(&c, "anon", "team", p).await;
    assert!(r.json()["response"]["patch"].is_string(), "{}", r.text());
    let series = "outrigger_events_dropped_total{reason=\"unauthenticated\"}";
    eventually("the Event to be dropped", || async {
        metric(&metrics(&c).await, series) == Some(1.0)
    })
    .await;
    // The drop happens when the review is answered, before anything is queued.
    assert!(api.lock().all("events").is_empty());
    assert!(server
        .log_text()
        .contains("Events are written only for callers authenticated"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn native_sidecars_from_the_node_cache_and_events_for_each_outcome() {
    let api = FakeApi::start(cluster());
    // No configuration flag: the embedded default (Istio's mount path is absent here).
    let (ca, ca_file) = client_ca("kube-api-events-client-ca");
    let server = serve_against(
        &api,
        "kube-api-events",
        &[
            "--dns-name",
            "localhost",
            "--events",
            "--clientCaFile",
            &ca_file,
            "--native-sidecars",
            "auto",
        ],
        &[("POD_NAME", "outrigger-0")],
    );
    let c = connect_as_api_server(&server, &api, &ca).await;
    let mut on_node = pod("web-abc", json!({}));
    on_node["spec"]["nodeName"] = json!("n1");
    on_node["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet",
        "name": "web-7d9f", "uid": "rs-1", "controller": true}]);
    let patch = decoded_patch(&review_pod(&c, "u1", "team", on_node).await);
    assert!(
        patch.contains(r#""restartPolicy":"Always""#),
        "native sidecar (kubelet 1.33 on n1)"
    );
    let skipped = pod("off", json!({"sidecar.istio.io/inject": "false"}));
    let r = review_pod(&c, "u2", "team", skipped).await;
    assert!(r.json()["response"].get("patch").is_none());

    eventually("two Events recorded", || async {
        api.lock().all("events").len() >= 2
    })
    .await;
    let events = api.lock().all("events");
    assert_eq!(events.len(), 2, "{events:?}");
    let injected = events
        .iter()
        .find(|e| e["reason"] == "SidecarInjected")
        .expect("injected Event");
    assert_eq!(injected["regarding"]["kind"], "ReplicaSet");
    assert_eq!(injected["regarding"]["name"], "web-7d9f");
    assert_eq!(injected["reportingController"], "outrigger");
    let skip = events
        .iter()
        .find(|e| e["reason"] == "SidecarInjectionSkipped")
        .expect("skip Event");
    assert_eq!(skip["regarding"]["kind"], "Pod", "no owner: the pod itself");
    assert!(
        skip["note"].as_str().is_some_and(|n| n.contains(':')),
        "{skip}"
    );
    // The caBundle of the webhook configuration carries the Secret's CA bundle (one patch).
    let stored = stored_webhook(&api);
    let secret_bundle = stored_secret(&api)
        .and_then(|s| s.pointer("/data/ca-bundle.crt").cloned())
        .expect("bundle");
    assert_eq!(
        stored["webhooks"][0]["clientConfig"]["caBundle"],
        secret_bundle
    );
    let seen = api.requests();
    assert_eq!(
        seen.iter().filter(|s| s.starts_with("PATCH ")).count(),
        1,
        "caBundle written once, then found current: {seen:?}"
    );
    assert_eq!(
        seen.iter()
            .filter(|s| s.as_str() == "GET /api/v1/nodes")
            .count(),
        2,
        "one list and one watch of nodes, none per request: {seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configmap_changes_swap_in_and_broken_ones_keep_the_last_good() {
    let mut cluster = cluster();
    cluster.scripted.insert(
        (
            "configmaps".into(),
            "istio-system".into(),
            "istio-sidecar-injector".into(),
        ),
        ScriptedWatch {
            after: Duration::from_millis(300),
            events: vec![
                ("MODIFIED", configmap_with("policy: [unclosed\n", "8")),
                (
                    "MODIFIED",
                    configmap_with(outrigger_inject::config::defaults::CONFIG, "9"),
                ),
            ],
        },
    );
    let api = FakeApi::start(cluster);
    let server = serve_against(&api, "kube-api-reload", CONFIGMAP_SERVER, &[]);
    let c = connect_trusting_the_secret(&server, &api).await;
    // The watch delivers a broken version (rejected) then policy: enabled (swapped in).
    assert!(
        server
            .wait_log("configuration reloaded", Duration::from_secs(10))
            .await,
        "{}",
        server.log_text()
    );
    assert!(
        server
            .log_text()
            .contains("failed to read injection config from ConfigMap"),
        "{}",
        server.log_text()
    );
    let r = review_pod(&c, "u1", "team", pod("plain", json!({}))).await;
    assert!(
        r.json()["response"]["patch"].is_string(),
        "policy enabled now: {}",
        r.text()
    );
    let m = metrics(&c).await;
    assert_eq!(config_reloads(&m, "failure"), Some(1.0), "{m}");
    assert_eq!(
        config_reloads(&m, "success"),
        Some(2.0),
        "start-up + reload: {m}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openshift_proxy_ids_from_the_namespace_cache() {
    let api = FakeApi::start(cluster());
    let server = serve_against(
        &api,
        "kube-api-openshift",
        &[
            "--dns-name",
            "localhost",
            "--ca-bundle-managed-externally",
            "--native-sidecars",
            "false",
        ],
        &[("PLATFORM", "openshift")],
    );
    let c = connect_trusting_the_secret(&server, &api).await;
    let mut patches = Vec::new();
    for ns in ["team", "unknown"] {
        let r = review_pod(&c, "u1", ns, pod("p", json!({}))).await;
        patches.push(decoded_patch(&r));
    }
    assert!(
        patches[0].contains("1000629999"),
        "UID/GID from the cached namespace: {}",
        patches[0]
    );
    assert!(
        !patches[1].contains("1000629999"),
        "unknown namespace: defaults"
    );
    let seen = api.requests();
    assert_eq!(
        seen.iter()
            .filter(|s| s.as_str() == "GET /api/v1/namespaces")
            .count(),
        2,
        "one list and one watch, none per request: {seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_configmaps_keep_the_last_good_configuration() {
    const MESH: &str = "defaultConfig:\n  proxyMetadata:\n    FAILSAFE_MARK: kept\n";
    let mut cluster = cluster();
    let injector = configmap_with(outrigger_inject::config::defaults::CONFIG, "7");
    let mesh = configmap("istio-system", "istio", "3", &[("mesh", MESH)]);
    cluster.put(injector.clone());
    cluster.put(mesh.clone());
    // Both ConfigMaps are deleted through their first watch, after the fake API server's
    // latency (part of the scenario): the mesh one first.
    for (object, after) in [(mesh, 300), (injector, 600)] {
        let name = object["metadata"]["name"]
            .as_str()
            .expect("name")
            .to_string();
        cluster.scripted.insert(
            ("configmaps".into(), "istio-system".into(), name),
            ScriptedWatch {
                after: Duration::from_millis(after),
                events: vec![("DELETED", object)],
            },
        );
    }
    let api = FakeApi::start(cluster);
    let mut args = CONFIGMAP_SERVER.to_vec();
    args.extend(["--meshConfigMap", "istio-system/istio"]);
    let server = serve_against(&api, "kube-api-deleted", &args, &[]);
    let c = connect_trusting_the_secret(&server, &api).await;
    // Both ConfigMaps are deleted through their watches: each is a failed reload, logged at
    // error level, and the configuration read at start-up (with its mesh) stays in force.
    for needle in [
        "update error: failed to read injection config from ConfigMap: no mesh ConfigMap found; keeping the last good configuration",
        "update error: failed to read injection config from ConfigMap: no ConfigMap found; keeping the last good configuration",
    ] {
        assert!(
            server.wait_log(needle, Duration::from_secs(10)).await,
            "{needle}:\n{}",
            server.log_text()
        );
    }
    assert!(
        api.lock()
            .get("configmaps", "istio-system", "istio")
            .is_none(),
        "mesh deleted"
    );
    let m = metrics(&c).await;
    assert_eq!(config_reloads(&m, "failure"), Some(2.0), "{m}");
    let patch = decoded_patch(&review_pod(&c, "u1", "team", pod("p", json!({}))).await);
    assert!(
        patch.contains("FAILSAFE_MARK"),
        "the deleted mesh ConfigMap's settings stay in force: {patch}"
    );
    publish_ca(&api);
    eventually("ready once the caBundle trusts the certificate", || async {
        c.get("/readyz").await.expect("readyz").status == 200
    })
    .await;
}

#[test]
fn a_webhook_configuration_name_mismatch_fails_start_up_naming_it() {
    let api = FakeApi::start(cluster());
    let err = serve_fails_to_start(
        &api,
        "kube-api-mismatch",
        &[
            "--native-sidecars",
            "false",
            "--webhook-config-name",
            "istio-sidecar-injector",
        ],
    );
    assert!(
        err.contains(
            "MutatingWebhookConfiguration \"istio-sidecar-injector\" not found: generate it with \
             `outrigger webhook-config --name istio-sidecar-injector` or pass --webhook-config-name"
        ),
        "{err}"
    );
}

/// A CA and a serving certificate for `localhost` it signed: (CA PEM, certificate PEM, key PEM).
fn issue(ca_name: &str) -> (String, String, String) {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
        KeyPair, KeyUsagePurpose,
    };
    let ca_key = KeyPair::generate().expect("key");
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("params");
    ca.distinguished_name.push(DnType::CommonName, ca_name);
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_pem = ca.self_signed(&ca_key).expect("CA").pem();
    let issuer = Issuer::from_ca_cert_pem(&ca_pem, ca_key).expect("issuer");
    let mut leaf = CertificateParams::new(vec!["localhost".to_string()]).expect("params");
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let key = KeyPair::generate().expect("key");
    let cert = leaf.signed_by(&key, &issuer).expect("leaf");
    (ca_pem, cert.pem(), key.serialize_pem())
}

/// The Secret cert-manager writes for a Certificate: type kubernetes.io/tls, no CA key.
fn cert_manager_secret(ca: &str, cert: &str, key: &str, rv: &str) -> Value {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
        "metadata": {"name": "outrigger-tls", "namespace": "outrigger", "resourceVersion": rv,
            "labels": {"controller.cert-manager.io/fao": "true"},
            "annotations": {"cert-manager.io/certificate-name": "outrigger",
                            "cert-manager.io/issuer-name": "ca-issuer"}},
        "data": {"tls.crt": b64(cert), "tls.key": b64(key), "ca.crt": b64(ca)}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cert_manager_secret_is_served_read_only_and_hot_reloaded() {
    let (ca1, cert1, key1) = issue("issuer-ca-1");
    let mut cluster = cluster();
    cluster.put(cert_manager_secret(&ca1, &cert1, &key1, "10"));
    let api = FakeApi::start(cluster);
    let server = serve_against(
        &api,
        "kube-api-cert-manager",
        &["--native-sidecars", "false"],
        &[],
    );
    // The issuer's certificate is served, and its ca.crt went into the caBundle.
    let c = H2::connect(server.addr, ca1.as_bytes())
        .await
        .expect("TLS trusting the issuer's CA");
    assert_eq!(c.get("/readyz").await.expect("readyz").status, 200);
    let bundle = stored_webhook(&api);
    let encoded = base64::engine::general_purpose::STANDARD.encode(&ca1);
    assert_eq!(
        bundle["webhooks"][0]["clientConfig"]["caBundle"],
        json!(encoded)
    );
    // The issuer renews: the Secret changes, the watch delivers it, new handshakes use it.
    let (ca2, cert2, key2) = issue("issuer-ca-2");
    api.lock()
        .put(cert_manager_secret(&ca2, &cert2, &key2, "11"));
    eventually(
        "the renewed certificate is served without a restart",
        || async { H2::connect(server.addr, ca2.as_bytes()).await.is_ok() },
    )
    .await;
    // After 410 Gone the client lists, then watches again; the renewal may arrive through the
    // list before the second watch opens (a loaded machine), so wait for that watch.
    eventually("the Secret watched again after 410 Gone", || async {
        api.lock().watches.get("secrets").copied().unwrap_or(0) >= 2
    })
    .await;
    let a = api.lock();
    let writes: Vec<&String> = a
        .requests
        .iter()
        .filter(|r| r.contains("/secrets") && !r.starts_with("GET "))
        .collect();
    assert!(
        writes.is_empty(),
        "the issuer's Secret was written: {writes:?}"
    );
    let secret_watches = a.watches.get("secrets").copied().unwrap_or(0);
    assert!(
        secret_watches >= 2,
        "the Secret is watched and relisted after 410 Gone: {secret_watches} watches",
    );
    let s = a
        .get("secrets", "outrigger", "outrigger-tls")
        .expect("secret");
    assert_eq!(s["type"], "kubernetes.io/tls");
}

#[test]
fn an_rbac_denial_on_the_secret_fails_start_up_naming_it() {
    let mut cluster = cluster();
    cluster
        .forbidden
        .push("GET /api/v1/namespaces/outrigger/secrets/outrigger-tls".into());
    let api = FakeApi::start(cluster);
    let err = serve_fails_to_start(&api, "kube-api-forbidden", &["--native-sidecars", "false"]);
    assert!(
        err.contains("forbidden to get secrets \"outrigger-tls\""),
        "{err}"
    );
}

#[test]
fn the_fake_refuses_type_changes_and_stale_writes_as_the_api_server() {
    let stored = cert_manager_secret("ca", "c", "k", "10");
    let mut c = Cluster::default();
    c.put(stored.clone());
    let mut write =
        |incoming: &Value, patch| c.write("secrets", "outrigger", "outrigger-tls", incoming, patch);
    let mut opaque = stored.clone();
    opaque["type"] = json!("Opaque");
    let (code, body) = write(&opaque, None).expect_err("type is immutable");
    assert_eq!(code, 422);
    assert!(body["message"]
        .as_str()
        .is_some_and(|m| m.contains("field is immutable")));
    let stale = json!({"metadata": {"resourceVersion": "9"}, "data": {"x": "eA=="}});
    assert_eq!(
        write(&stale, Some(PatchType::Merge)).expect_err("stale").0,
        409
    );
    let fresh = json!({"metadata": {"resourceVersion": "10"}, "data": {"x": "eA=="}});
    let next = write(&fresh, Some(PatchType::Merge)).expect("merge");
    assert_eq!(next["metadata"]["resourceVersion"], "11");
    assert_eq!(
        next["metadata"]["annotations"],
        stored["metadata"]["annotations"]
    );
    assert_eq!(next["data"]["tls.crt"], stored["data"]["tls.crt"]);
    assert_eq!(next["type"], "kubernetes.io/tls");
}

/// The fake refuses webhook configurations as kube-apiserver's validation does
/// (`pkg/apis/admissionregistration/validation/validation.go`; the expected texts are those of
/// its `validation_test.go`: "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value
/// must be between 1 and 30 seconds", and `field.Duplicate` on a repeated entry name), on create
/// and on update, and stores nothing it refused.
#[test]
fn the_fake_refuses_webhook_configurations_as_the_api_server() {
    let config = |timeouts: &[(&str, Option<i64>)]| {
        let hooks: Vec<Value> = timeouts
            .iter()
            .map(|(name, t)| {
                let mut w = json!({"name": name, "sideEffects": "None",
                                   "admissionReviewVersions": ["v1"],
                                   "clientConfig": {"url": "https://x.example/inject"}});
                if let Some(t) = t {
                    w["timeoutSeconds"] = json!(t);
                }
                w
            })
            .collect();
        json!({"apiVersion": "admissionregistration.k8s.io/v1",
               "kind": "MutatingWebhookConfiguration",
               "metadata": {"name": "hooks"}, "webhooks": hooks})
    };
    let path = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations";
    let api = FakeApi::start(Cluster::default());
    for (hooks, want) in [
        (
            config(&[("a.example.com", Some(31))]),
            "MutatingWebhookConfiguration.admissionregistration.k8s.io \"hooks\" is invalid: \
             webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 \
             and 30 seconds",
        ),
        (
            config(&[("a.example.com", Some(5)), ("a.example.com", Some(0))]),
            "MutatingWebhookConfiguration.admissionregistration.k8s.io \"hooks\" is invalid: \
             [webhooks[1].name: Duplicate value: \"a.example.com\", webhooks[1].timeoutSeconds: \
             Invalid value: 0: the timeout value must be between 1 and 30 seconds]",
        ),
    ] {
        let (code, _, body) = ask(&api, "POST", path, "application/json", &hooks.to_string());
        assert_eq!(code, 422, "{body}");
        assert_eq!(body["reason"], "Invalid");
        assert_eq!(body["message"], want);
        assert!(api
            .lock()
            .get("mutatingwebhookconfigurations", "", "hooks")
            .is_none());
    }
    let good = config(&[("a.example.com", Some(30)), ("b.example.com", None)]);
    let (code, _, body) = ask(&api, "POST", path, "application/json", &good.to_string());
    assert_eq!(code, 201, "{body}");
    let mut c = api.lock();
    let patch = json!({"webhooks": [{"name": "a.example.com", "timeoutSeconds": 45}]});
    let (code, body) = c
        .write(
            "mutatingwebhookconfigurations",
            "",
            "hooks",
            &patch,
            Some(PatchType::Strategic),
        )
        .expect_err("a timeout over 30 s");
    assert_eq!(code, 422);
    assert!(
        body["message"].as_str().is_some_and(|m| m.ends_with(
            "webhooks[0].timeoutSeconds: Invalid value: 45: the timeout value must be between 1 \
             and 30 seconds"
        )),
        "{body}"
    );
    let stored = c
        .get("mutatingwebhookconfigurations", "", "hooks")
        .expect("stored");
    assert_eq!(stored["webhooks"][0]["timeoutSeconds"], 30);
}

/// One HTTP/1.1 request to the fake: (status, content type, body as JSON).
fn ask(
    api: &FakeApi,
    method: &str,
    path: &str,
    content_type: &str,
    body: &str,
) -> (u16, String, Value) {
    let mut tcp = std::net::TcpStream::connect(("127.0.0.1", api.port)).expect("connect");
    write!(
        tcp,
        "{method} {path} HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\
         content-type: {content_type}\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    let mut text = String::new();
    tcp.read_to_string(&mut text).expect("read");
    let (head, body) = text.split_once("\r\n\r\n").expect("head and body");
    let code = head[9..12].parse().expect("status code");
    let content_type = head
        .lines()
        .find_map(|l| l.strip_prefix("content-type: "))
        .unwrap_or("")
        .to_string();
    (
        code,
        content_type,
        serde_json::from_str(body).unwrap_or(Value::Null),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fake_answers_errors_with_status_objects_as_the_api_server() {
    let mut cluster = cluster();
    cluster
        .forbidden
        .push("GET /api/v1/namespaces/istio-system/configmaps/istio".into());
    let api = FakeApi::start(cluster);
    let cm = "/api/v1/namespaces/istio-system/configmaps";
    let (code, content_type, cm_obj) =
        ask(&api, "GET", &format!("{cm}/istio-sidecar-injector"), "", "");
    assert_eq!((code, content_type.as_str()), (200, "application/json"));
    assert_eq!(cm_obj["metadata"]["resourceVersion"], "7");
    let (code, _, st) = ask(&api, "GET", &format!("{cm}/absent"), "", "");
    assert_eq!(code, 404);
    assert_eq!(
        st,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "configmaps \"absent\" not found", "reason": "NotFound",
               "details": {"name": "absent", "kind": "configmaps"}, "code": 404})
    );
    let (code, _, st) = ask(&api, "GET", &format!("{cm}/istio"), "", "");
    assert_eq!(
        (code, &st["reason"], &st["code"]),
        (403, &json!("Forbidden"), &json!(403))
    );
    assert_eq!(
        st["message"],
        "configmaps \"istio\" is forbidden: User \"system:serviceaccount:outrigger:outrigger\" \
         cannot get resource \"configmaps\" in API group \"\" in the namespace \"istio-system\""
    );
    let body = cm_obj.to_string();
    let (code, _, st) = ask(&api, "POST", cm, "application/json", &body);
    assert_eq!((code, &st["reason"]), (409, &json!("AlreadyExists")));
    let injector = format!("{cm}/istio-sidecar-injector");
    let (code, _, st) = ask(
        &api,
        "PATCH",
        &injector,
        "application/json-patch+json",
        "[]",
    );
    assert_eq!((code, &st["reason"]), (415, &json!("UnsupportedMediaType")));
    // The same replacement twice: the second carries a resourceVersion the first made stale.
    let replace_injector = || ask(&api, "PUT", &injector, "application/json", &body);
    let (code, _, st) = replace_injector();
    assert_eq!(
        (code, &st["metadata"]["resourceVersion"]),
        (200, &json!("8"))
    );
    let (code, _, st) = replace_injector();
    assert_eq!(
        (code, &st["reason"]),
        (409, &json!("Conflict")),
        "stale resourceVersion 7"
    );
    let mwc = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations";
    let (code, _, list) = ask(&api, "GET", mwc, "", "");
    assert_eq!(
        (code, &list["kind"]),
        (200, &json!("MutatingWebhookConfigurationList"))
    );
    let (code, _, st) = ask(&api, "GET", "/api/v1/mutatingwebhookconfigurations", "", "");
    assert_eq!(
        (code, &st["kind"]),
        (404, &json!("Status")),
        "not in the core group"
    );
    // The first Secret watch ends with 410 Gone; a ConfigMap watch delivers a change.
    let (code, _, gone) = ask(
        &api,
        "GET",
        "/api/v1/namespaces/outrigger/secrets?watch=true",
        "",
        "",
    );
    assert_eq!(
        (code, &gone["type"], &gone["object"]["code"]),
        (200, &json!("ERROR"), &json!(410))
    );
    let watcher = api.clone();
    let watch = std::thread::spawn(move || {
        ask(&watcher, "GET", "/api/v1/namespaces/istio-system/configmaps?watch=true&fieldSelector=metadata.name%3Distio-sidecar-injector", "", "")
    });
    eventually("the ConfigMap watch is open", || async {
        api.lock().watches.get("configmaps") == Some(&1)
    })
    .await;
    let cm_obj = api
        .lock()
        .remove("configmaps", "istio-system", "istio-sidecar-injector");
    let (code, _, event) = watch.join().expect("watch");
    assert_eq!((code, &event["type"]), (200, &json!("DELETED")));
    assert_eq!(event["object"], cm_obj.expect("stored"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn istio_configmaps_of_a_revision_are_awaited_not_replaced_by_the_default() {
    // Istio's revision `canary`: the server reads istio-sidecar-injector-canary and
    // istio-canary, which do not exist yet (the default revision's do, and must not be read).
    let mut cluster = cluster();
    cluster.remove("configmaps", "istio-system", "istio-sidecar-injector");
    cluster.put(configmap(
        "istio-system",
        "istio",
        "3",
        &[(
            "mesh",
            "defaultConfig:\n  proxyMetadata:\n    WRONG_REVISION: read\n",
        )],
    ));
    let api = FakeApi::start(cluster);
    let args = [
        "--dns-name",
        "localhost",
        "--ca-bundle-managed-externally",
        "--istio-configmaps",
        "--istioNamespace",
        "istio-system",
        "--revision",
        "canary",
        "--native-sidecars",
        "false",
    ];
    let server = serve_against(&api, "kube-api-istio-cms", &args, &[]);
    let c = connect_trusting_the_secret(&server, &api).await;
    publish_ca(&api);
    eventually("the caBundle trusts the certificate", || async {
        !c.get("/readyz")
            .await
            .expect("readyz")
            .text()
            .contains("caBundle")
    })
    .await;
    let r = c.get("/readyz").await.expect("readyz");
    assert_eq!(r.status, 503, "{}", r.text());
    assert!(
        r.text()
            .contains("istio-system/istio-sidecar-injector-canary")
            && r.text().contains("istio-system/istio-canary")
            && r.text().contains("no ConfigMap found"),
        "the readiness message names the ConfigMaps: {}",
        r.text()
    );
    // Admission requests fail (the API server applies failurePolicy), never pass uninjected.
    let r = review_pod(&c, "u0", "team", pod("early", json!({}))).await;
    assert_eq!(r.status, 503, "{}", r.text());
    // The injector ConfigMap alone: still waiting, now for the mesh ConfigMap.
    api.lock().put(configmap(
        "istio-system",
        "istio-sidecar-injector-canary",
        "20",
        &[
            ("config", outrigger_inject::config::defaults::CONFIG),
            ("values", outrigger_inject::config::defaults::VALUES),
        ],
    ));
    eventually(
        "the readiness message moves on to the mesh ConfigMap",
        || async {
            let r = c.get("/readyz").await.expect("readyz");
            r.status == 503 && r.text().contains("no mesh ConfigMap found")
        },
    )
    .await;
    api.lock().put(configmap(
        "istio-system",
        "istio-canary",
        "21",
        &[(
            "mesh",
            "defaultConfig:\n  proxyMetadata:\n    CANARY_MESH: read\n",
        )],
    ));
    eventually("ready once both ConfigMaps are read", || async {
        c.get("/readyz").await.expect("readyz").status == 200
    })
    .await;
    let patch = decoded_patch(&review_pod(&c, "u1", "team", pod("p", json!({}))).await);
    assert!(
        patch.contains("CANARY_MESH"),
        "the revision's mesh: {patch}"
    );
    assert!(!patch.contains("WRONG_REVISION"), "{patch}");
    let reads: Vec<String> = api
        .requests()
        .into_iter()
        .filter(|r| r.contains("/configmaps"))
        .collect();
    assert!(
        reads
            .iter()
            .all(|r| r.starts_with("GET /api/v1/namespaces/istio-system/configmaps")),
        "{reads:?}"
    );
}

/// The failure policies of the stored webhook configuration's entries.
fn failure_policies(api: &FakeApi) -> Vec<Value> {
    let a = api.lock();
    let mwc = a
        .get(
            "mutatingwebhookconfigurations",
            "",
            "outrigger-sidecar-injector",
        )
        .expect("webhook configuration");
    mwc["webhooks"]
        .as_array()
        .expect("webhooks")
        .iter()
        .map(|w| w["failurePolicy"].clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_webhook_fails_open_until_a_ready_replica_activates_it_and_owns_it_by_namespace() {
    let mut cluster = cluster();
    let mut mwc = webhook_config();
    mwc["webhooks"][0]["failurePolicy"] = json!("Ignore");
    cluster.put(mwc);
    cluster.put(json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "outrigger", "uid": "0f1e-outrigger-ns", "resourceVersion": "2"}}));
    cluster.put(common::kube_api::outrigger_deployment(2));
    // Istio's ConfigMaps are missing: the replica is not ready and must not activate.
    cluster.remove("configmaps", "istio-system", "istio-sidecar-injector");
    let api = FakeApi::start(cluster);
    let server = Outrigger::builder("kube-api-activation")
        .kube(&api)
        .flags(common::admission::DEPLOY_BASE_FLAGS)
        .flags(&["--activation-delay", "300ms"])
        .start();
    let c = connect_trusting_the_secret(&server, &api).await;
    assert_eq!(c.get("/readyz").await.expect("readyz").status, 503);
    // Five times the activation delay: a replica that is not ready never activates (no event to
    // wait for, so the absence is checked over a bounded time).
    assert!(
        !holds_within(Duration::from_millis(1500), || async {
            failure_policies(&api) != [json!("Ignore")]
        })
        .await,
        "a replica that is not ready leaves the configuration failing open"
    );
    api.lock().put(configmap_with(
        outrigger_inject::config::defaults::CONFIG,
        "30",
    ));
    api.lock().put(configmap(
        "istio-system",
        "istio",
        "31",
        &[("mesh", "defaultConfig: {}\n")],
    ));
    eventually("activated once ready", || async {
        failure_policies(&api) == [json!("Fail")]
    })
    .await;
    let a = api.lock();
    let mwc = a
        .get(
            "mutatingwebhookconfigurations",
            "",
            "outrigger-sidecar-injector",
        )
        .expect("mwc");
    assert_eq!(
        mwc["metadata"]["ownerReferences"],
        json!([{"apiVersion": "v1", "kind": "Namespace", "name": "outrigger", "uid": "0f1e-outrigger-ns"}]),
        "deleting the namespace deletes the configuration (garbage collector)"
    );
    assert!(
        !mwc["webhooks"][0]["clientConfig"]["caBundle"].is_null(),
        "caBundle synced too"
    );
    let writes: Vec<&String> = a
        .requests
        .iter()
        .filter(|r| r.contains("mutatingwebhookconfigurations") && !r.starts_with("GET "))
        .collect();
    assert!(
        writes.iter().all(|r| r.starts_with("PATCH /apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/outrigger-sidecar-injector")),
        "by name, never a create: {writes:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_up_waits_for_an_api_server_that_comes_up_late() {
    // A port with nothing behind it yet: the kubeconfig points there before the API server runs.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let start_up = Outrigger::builder("kube-api-late")
        .kube_at(port)
        .flags(CONFIGMAP_SERVER);
    // The API server comes up after 1.5 s; the server retries with backoff meanwhile.
    let late = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1500));
        FakeApi::start_on(cluster(), port)
    });
    let server = start_up.start();
    let api = late.join().expect("API server started");
    assert!(
        server
            .log_text()
            .contains("cannot reach the Kubernetes API server"),
        "{}",
        server.log_text()
    );
    let c = connect_trusting_the_secret(&server, &api).await;
    publish_ca(&api);
    eventually("ready", || async {
        c.get("/readyz").await.expect("readyz").status == 200
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn not_ready_while_the_ca_bundle_lacks_the_serving_certificates_issuer() {
    let api = FakeApi::start(cluster());
    let server = serve_against(&api, "kube-api-trust", CONFIGMAP_SERVER, &[]);
    let c = connect_trusting_the_secret(&server, &api).await;
    // The caBundle is managed externally and nobody has published the Secret's CA yet.
    eventually("not ready, naming the caBundle", || async {
        let r = c.get("/readyz").await.expect("readyz");
        r.status == 503
            && r.text().contains("not in the caBundle of MutatingWebhookConfiguration \"outrigger-sidecar-injector\"")
    })
    .await;
    publish_ca(&api);
    eventually("ready once published", || async {
        c.get("/readyz").await.expect("readyz").status == 200
    })
    .await;
    // Another CA replaces it: not ready again.
    let stranger = rcgen::generate_simple_self_signed(vec!["stranger".to_string()])
        .expect("certificate")
        .cert
        .pem();
    set_ca_bundle(
        &api,
        &base64::engine::general_purpose::STANDARD.encode(stranger),
    );
    eventually("not ready after the caBundle lost the issuer", || async {
        c.get("/readyz").await.expect("readyz").status == 503
    })
    .await;
}
