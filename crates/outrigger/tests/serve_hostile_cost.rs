//! Hostile work against `outrigger serve` (the real binary, loopback only): pods whose review
//! costs what the attacker chooses, and templates that run for long. A pod with many containers
//! (quadratic in the containers before lists shared their elements) is injected up to
//! `--max-list-entries` and refused beyond; a template a pod annotation sends into a loop of
//! 2^40 steps fails that review at its deadline while other reviews and `/healthz` answer; a
//! configuration whose check runs for long is refused at the deadline, certificates rotate
//! meanwhile, a later good configuration is applied and SIGTERM ends the server. Bounded in
//! count and time.
//!
//! `scripts/hostile-cost.sh` measures the same at full size against the release binary.

mod common;

use std::time::Duration;

use common::server::{start_embedded, Outrigger};
use common::*;
use serde_json::{json, Value};

const V1: &str = "admission.k8s.io/v1";

/// A pod of `n` containers, each with a port.
fn pod_of(n: usize) -> Value {
    let containers: Vec<Value> = (0..n)
        .map(|i| json!({"name": format!("c{i}"), "image": "nginx", "ports": [{"containerPort": 8000 + i % 1000}]}))
        .collect();
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "many", "namespace": "default"},
           "spec": {"containers": containers}})
}

fn hello(annotations: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "hello", "annotations": annotations},
           "spec": {"containers": [{"name": "hello", "image": "nginx"}]}})
}

fn injected(r: &Resp) -> bool {
    r.status == 200 && r.json()["response"]["patch"].is_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_containers_are_injected_up_to_the_bound_and_refused_beyond() {
    // A debug build is slow: a long deadline, so only the outcome is tested.
    let (server, ca) = start_embedded("cost-many", &["--request-timeout", "120s"]);
    let api = H2::connect(server.addr, &ca).await.expect("connects");
    let at = api
        .post("/inject", review(V1, "at", "default", pod_of(10_000)))
        .await
        .expect("answer");
    assert!(injected(&at), "{} {}", at.status, at.text());
    let over = api
        .post("/inject", review(V1, "over", "default", pod_of(10_001)))
        .await
        .expect("answer");
    assert_eq!(over.status, 200);
    let response = &over.json()["response"];
    assert_eq!(response["allowed"], json!(false), "{response}");
    assert_eq!(
        response["status"]["message"],
        json!("the pod has 10001 containers (init and ephemeral containers included); outrigger injects pods of at most 10000")
    );
    // 20,000 (issue 36's attack, 0.8 MB): refused from a scan of the body, the same answer.
    let far_over = api
        .post("/inject", review(V1, "far", "default", pod_of(20_000)))
        .await
        .expect("answer");
    assert_eq!(
        far_over.json()["response"]["status"]["message"],
        json!("the pod has 20000 containers (init and ephemeral containers included); outrigger injects pods of at most 10000"),
        "{}",
        far_over.text()
    );
    let m = metrics(&api).await;
    assert_eq!(
        metric(&m, "sidecar_injection_failure_total{reason=\"too_large\"}"),
        Some(2.0),
        "{m}"
    );
    // The server's own time for the refusal is logged (review_us), for scripts/hostile-cost.sh.
    assert!(
        server.log_text().contains("review_us"),
        "{}",
        server.log_text()
    );
}

/// A configuration whose template loops 2^40 times for pods annotated `slow` (for every pod
/// when `slow_for_every_pod`); it adds a container `shipper` of image `image`.
fn slow_config(slow_for_every_pod: bool, image: &str) -> String {
    let cond = if slow_for_every_pod {
        "true"
    } else {
        "index .ObjectMeta.Annotations \"slow\""
    };
    format!(
        "policy: enabled\ntemplates:\n  sidecar: |\n    {{{{- if {cond} }}}}{{{{ range until 1048576 }}}}{{{{ range until 1048576 }}}}{{{{ end }}}}{{{{ end }}}}{{{{ end }}}}\n    spec:\n      containers:\n      - name: shipper\n        image: {image}\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_template_a_pod_triggers_fails_that_review_only() {
    let dir = scratch("cost-slow-pod");
    let vol = dir.join("inject");
    write_volume(
        &vol,
        1,
        &[
            ("config", slow_config(false, "shipper").as_bytes()),
            ("values", b"{}"),
        ],
    );
    let server = Outrigger::in_dir(&dir)
        .config_in(&vol)
        .generated_ca()
        .quick_drain()
        .flags(&["--request-timeout", "3s"])
        .start();
    let ca = server.ca();
    let api = H2::connect(server.addr, &ca).await.expect("connects");
    // Two slow reviews, each on its own connection (as from two attackers).
    let mut slow = Vec::new();
    for i in 0..2 {
        let c = H2::connect(server.addr, &ca).await.expect("connects");
        let body = review(
            V1,
            &format!("slow-{i}"),
            "default",
            hello(json!({"slow": "yes"})),
        );
        slow.push(tokio::spawn(async move { c.post("/inject", body).await }));
    }
    eventually("both slow reviews to run", || async {
        metric(&metrics(&api).await, "outrigger_inflight_requests") == Some(2.0)
    })
    .await;
    // While they run: health, metrics and other reviews answer.
    let health = api.get("/healthz").await.expect("healthz");
    assert_eq!((health.status, health.text()), (200, "ok\n".to_string()));
    for i in 0..4 {
        let r = api
            .post(
                "/inject",
                review(V1, &format!("real-{i}"), "default", hello(json!({}))),
            )
            .await
            .expect("answer");
        assert!(injected(&r), "{} {}", r.status, r.text());
    }
    assert_eq!(
        metric(&metrics(&api).await, "outrigger_inflight_requests"),
        Some(2.0),
        "the slow reviews still ran while the others were answered"
    );
    // Each slow review fails at its deadline, an error the failurePolicy applies to.
    for t in slow {
        let r = t.await.expect("task").expect("answer");
        assert_eq!(r.status, 504, "{}", r.text());
        assert_eq!(r.text(), "request deadline of 3s exceeded\n");
    }
    let m = metrics(&api).await;
    assert_eq!(
        metric(
            &m,
            "sidecar_injection_failure_total{reason=\"deadline_exceeded\"}"
        ),
        Some(2.0),
        "{m}"
    );
    // The slots are free again: more reviews are injected.
    let r = api
        .post("/inject", review(V1, "after", "default", hello(json!({}))))
        .await
        .expect("answer");
    assert!(injected(&r), "{} {}", r.status, r.text());
}

/// A CA and a certificate for `localhost` it signs: (CA PEM, certificate PEM, key PEM).
fn ca_and_leaf(name: &str) -> (String, String, String) {
    use rcgen::{BasicConstraints, CertificateParams, DistinguishedName, DnType, IsCa, KeyPair};
    let ca_key = KeyPair::generate().expect("key");
    let mut ca = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, name);
    ca.distinguished_name = dn;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca.self_signed(&ca_key).expect("CA");
    let key = KeyPair::generate().expect("key");
    let leaf = CertificateParams::new(vec!["localhost".to_string()]).expect("params");
    let cert = leaf
        .signed_by(&key, &rcgen::Issuer::from_params(&ca, &ca_key))
        .expect("leaf");
    (ca_cert.pem(), cert.pem(), key.serialize_pem())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_template_on_reload_freezes_neither_reload_nor_shutdown() {
    let dir = scratch("cost-slow-reload");
    let vol = dir.join("inject");
    write_volume(
        &vol,
        1,
        &[
            ("config", slow_config(false, "first").as_bytes()),
            ("values", b"{}"),
        ],
    );
    let (ca_a, cert_a, key_a) = ca_and_leaf("CA A");
    let (ca_b, cert_b, key_b) = ca_and_leaf("CA B");
    let tls = dir.join("tls");
    let certs = |gen, cert: &str, key: &str| {
        write_volume(
            &tls,
            gen,
            &[("tls.crt", cert.as_bytes()), ("tls.key", key.as_bytes())],
        )
    };
    certs(1, &cert_a, &key_a);
    let mut server = Outrigger::in_dir(&dir)
        .config_in(&vol)
        .flag("--tlsCertFile")
        .flag(tls.join("tls.crt").display().to_string())
        .flag("--tlsKeyFile")
        .flag(tls.join("tls.key").display().to_string())
        .flags(&["--request-timeout", "4s", "--drain-delay", "0s"])
        .start();
    let both = client_config(&[ca_a.as_bytes(), ca_b.as_bytes()], &[b"h2"], false);
    let api = H2::connect_with(server.addr, both).await.expect("connects");
    // A configuration whose template loops for every pod, the check's probe pod included.
    write_volume(
        &vol,
        2,
        &[
            ("config", slow_config(true, "slow").as_bytes()),
            ("values", b"{}"),
        ],
    );
    // While its check runs, a rotated certificate is served.
    certs(2, &cert_b, &key_b);
    let only_b = || client_config(&[ca_b.as_bytes()], &[b"h2"], false);
    assert!(
        holds_within(Duration::from_secs(30), || async {
            H2::connect_with(server.addr, only_b()).await.is_ok()
        })
        .await,
        "rotated certificate not served:\n{}",
        server.log_text()
    );
    // The check stops at the deadline and refuses the configuration.
    assert!(
        metric_reaches(
            &api,
            "outrigger_reloads_total{kind=\"config\",result=\"failure\"}",
            1.0,
            Duration::from_secs(60)
        )
        .await,
        "the slow configuration must be refused:\n{}",
        server.log_text()
    );
    assert!(server
        .log_text()
        .contains("rendering a probe pod takes more than 4000000 template steps"));
    // A later good configuration is applied.
    write_volume(
        &vol,
        3,
        &[
            ("config", slow_config(false, "second").as_bytes()),
            ("values", b"{}"),
        ],
    );
    assert!(
        holds_within(Duration::from_secs(60), || async {
            let post = api.post("/inject", review(V1, "u", "default", hello(json!({}))));
            let r = tokio::time::timeout(Duration::from_secs(10), post).await;
            matches!(r, Ok(Ok(r)) if injected(&r) && patch_text(&r).contains("\"second\""))
        })
        .await,
        "the later configuration is not applied:\n{}",
        server.log_text()
    );
    // A slow review is running when SIGTERM comes: the server still exits.
    let c = H2::connect_with(server.addr, only_b())
        .await
        .expect("connects");
    let body = review(V1, "slow", "default", hello(json!({"slow": "yes"})));
    let running = tokio::spawn(async move { c.post("/inject", body).await });
    eventually("the slow review to run", || async {
        metric(&metrics(&api).await, "outrigger_inflight_requests") == Some(1.0)
    })
    .await;
    server.sigterm();
    let status = server.wait_exit(Duration::from_secs(30));
    assert!(
        status.is_some_and(|s| s.success()),
        "{status:?}\n{}",
        server.log_text()
    );
    running.abort();
}

/// The decoded JSON patch of an injected answer.
fn patch_text(r: &Resp) -> String {
    use base64::Engine as _;
    let b64 = r.json()["response"]["patch"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap_or_default();
    String::from_utf8_lossy(&bytes).into_owned()
}
