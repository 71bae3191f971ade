//! `outrigger webhook-config` end to end: every flag combination yields a manifest that
//! `kubernetes-validate --strict` accepts (reported ignored when the tool is absent, failing under CI: tests/harness).

use std::path::PathBuf;
use std::process::Command;

mod harness;
mod support_validate;

use harness::Need;
use support_validate::kubernetes_validate;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_outrigger")
}

fn tmp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("outrigger-kube-wh-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

fn generate(args: &[&str]) -> String {
    let out = Command::new(bin())
        .arg("webhook-config")
        .args(args)
        .output()
        .expect("binary runs");
    assert!(
        out.status.success(),
        "webhook-config {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

const CA_PEM: &str =
    "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----\n";

fn every_variant_validates_strictly() {
    let dir = tmp_dir("variants");
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, CA_PEM).expect("write CA");
    let ca_arg = ca.to_string_lossy().to_string();
    let variants: Vec<Vec<&str>> = vec![
        vec![],
        vec!["--enable-namespaces-by-default"],
        vec!["--revision", "canary"],
        vec!["--istio", "--revision", "canary"],
        vec!["--istio", "--revision", "1-24", "--tag", "stable"],
        vec!["--tag", "default", "--enable-namespaces-by-default"],
        vec!["--url", "https://injector.example.com:9443/inject"],
        vec!["-o", "json"],
        vec!["--match-conditions"],
        vec![
            "--match-conditions",
            "--istio",
            "--enable-namespaces-by-default",
        ],
        vec![
            "--service",
            "outrigger/outrigger",
            "--port",
            "8443",
            "--path",
            "/inject/cluster/c1/net/n1",
            "--ca-bundle-file",
            &ca_arg,
            "--failure-policy",
            "Ignore",
            "--timeout",
            "5",
            "--reinvocation-policy",
            "IfNeeded",
            "--exclude-namespaces",
            "outrigger,kube-system",
        ],
    ];
    for (i, args) in variants.iter().enumerate() {
        let text = generate(args);
        let path = dir.join(format!("wh-{i}.yaml"));
        std::fs::write(&path, &text).expect("write manifest");
        let (ok, report) = kubernetes_validate(&[&path]);
        assert!(ok, "variant {args:?} does not validate:\n{report}\n{text}");
    }
}

fn the_validator_rejects_a_broken_configuration() {
    // Guards the test above: a misspelt field must fail strict validation.
    let text = generate(&[]).replace("sideEffects: None", "sideEffect: None");
    let path = tmp_dir("broken").join("wh.yaml");
    std::fs::write(&path, text).expect("write manifest");
    assert!(
        !kubernetes_validate(&[&path]).0,
        "strict validation accepted an unknown field"
    );
}

fn json_and_yaml_describe_the_same_object() {
    let json: serde_json::Value =
        serde_json::from_str(&generate(&["-o", "json", "--istio", "--revision", "1-24"]))
            .expect("JSON");
    assert_eq!(json["metadata"]["name"], "istio-sidecar-injector-1-24");
    assert_eq!(json["webhooks"].as_array().map(Vec::len), Some(2));
    assert_eq!(
        json["webhooks"][0]["clientConfig"]["service"]["name"],
        "istiod-1-24"
    );
    let yaml = generate(&["--istio", "--revision", "1-24"]);
    assert!(
        yaml.contains("name: istio-sidecar-injector-1-24\n"),
        "{yaml}"
    );
    let from_yaml = outrigger_go::yaml::from_str(&yaml).expect("YAML reads back");
    assert_eq!(from_yaml, json, "YAML and JSON outputs differ");
    assert!(
        yaml.contains("  - \"false\"\n"),
        "a string YAML reads as a boolean is quoted: {yaml}"
    );
}

fn stderr_of(args: &[&str]) -> (bool, String) {
    let out = Command::new(bin())
        .arg("webhook-config")
        .args(args)
        .output()
        .expect("binary runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

fn standalone_output_never_carries_istios_revision_label() {
    // A default-revision istiod patches the caBundle of every configuration labelled
    // istio.io/rev=default to its own CA; outrigger patches it back: they would loop forever.
    for args in [
        vec![],
        vec!["--revision", "canary"],
        vec!["--tag", "stable"],
    ] {
        let v: serde_json::Value =
            serde_json::from_str(&generate(&[&["-o", "json"], args.as_slice()].concat()))
                .expect("JSON");
        let labels = &v["metadata"]["labels"];
        assert!(labels.get("istio.io/rev").is_none(), "{args:?}: {labels}");
        assert!(
            v["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("outrigger-")),
            "{args:?}: {}",
            v["metadata"]["name"]
        );
    }
    let (ok, err) = stderr_of(&["--failure-policy", "Ignore"]);
    assert!(ok && err.is_empty(), "{err}");
    // failurePolicy Fail (the default) without a caBundle: said on stderr, output unchanged.
    let (ok, err) = stderr_of(&[]);
    assert!(
        ok && err
            == "warning: failurePolicy Fail without a caBundle: until one is set (serve --kube \
                keeps it in step; or pass --ca-bundle-file) the API server cannot call the \
                injector and refuses every pod the entries select\n",
        "{err}"
    );
    assert_eq!(generate(&[]), generate(&["--failure-policy", "Fail"]));
    let (ok, err) = stderr_of(&["--istio"]);
    assert!(
        ok && err.contains("istiod's own sidecar injector must be off"),
        "{err}"
    );
}

fn defaults_agree_with_serve_and_rbac() {
    let v: serde_json::Value = serde_json::from_str(&generate(&["-o", "json"])).expect("JSON");
    assert_eq!(v["metadata"]["name"], "outrigger-sidecar-injector");
    assert_eq!(
        v["webhooks"][0]["clientConfig"]["service"],
        serde_json::json!({"name": "outrigger", "namespace": "outrigger", "path": "/inject", "port": 443})
    );
    assert_eq!(
        v["webhooks"][0]["admissionReviewVersions"],
        serde_json::json!(["v1"])
    );
    let help = Command::new(bin())
        .args(["serve", "--help"])
        .output()
        .expect("binary runs");
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("[default: outrigger-sidecar-injector]"),
        "serve --webhook-config-name default: {help}"
    );
    // Every entry's timeoutSeconds sits above serve's request deadline.
    assert!(
        help.contains("[default: 4s]"),
        "serve --request-timeout: {help}"
    );
    for w in v["webhooks"].as_array().expect("entries") {
        assert_eq!(w["timeoutSeconds"], 5, "{}", w["name"]);
    }
    let rbac = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/base/rbac.yaml"),
    )
    .expect("rbac.yaml");
    assert!(rbac.contains("resourceNames: [\"outrigger-sidecar-injector\"]"));
}

fn values_the_api_server_refuses_are_refused() {
    for (args, needle) in [
        (vec!["--port", "0"], "0 is not in 1..=65535"),
        (vec!["--port", "65536"], "65536 is not in 1..=65535"),
        (
            vec!["--name", "Outrigger_Injector"],
            "not a valid Kubernetes name",
        ),
        (vec!["--revision", "Canary"], "not a valid revision name"),
        (vec!["--revision", "a.b"], "not a valid revision name"),
        (vec!["--tag=-x"], "not a valid revision tag"),
        (
            vec!["--selector-revision", "Outrigger"],
            "--selector-revision \"Outrigger\" is not a valid revision name",
        ),
        (
            vec!["--selector-revision", "a", "--tag", "b"],
            "cannot be used with",
        ),
        (vec!["--timeout", "31"], "31 is not in 1..=30"),
        (vec!["--url", "http://x/inject"], "https://"),
        (vec!["--url", "https://x/inject?a=1"], "query"),
        (vec!["--service", "Mesh/outrigger"], "DNS-1123"),
        (
            vec!["--url", "https://x/inject", "--service", "a/b"],
            "cannot be used with",
        ),
    ] {
        let (ok, err) = stderr_of(&args);
        assert!(!ok, "{args:?} accepted");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

fn ca_bundle_file_is_base64_encoded() {
    let dir = tmp_dir("ca");
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, CA_PEM).expect("write CA");
    let json: serde_json::Value = serde_json::from_str(&generate(&[
        "-o",
        "json",
        "--ca-bundle-file",
        &ca.to_string_lossy(),
    ]))
    .expect("JSON");
    // Every entry carries it (the shipped default renders two).
    let entries = json["webhooks"].as_array().expect("webhooks");
    assert_eq!(entries.len(), 2);
    assert!(entries
        .iter()
        .all(|e| e["clientConfig"]["caBundle"] == entries[0]["clientConfig"]["caBundle"]));
    let encoded = json["webhooks"][1]["clientConfig"]["caBundle"]
        .as_str()
        .expect("caBundle set")
        .to_string();
    assert!(
        encoded.starts_with("LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t"),
        "{encoded}"
    );
}

fn bad_flags_name_the_cause() {
    let out = Command::new(bin())
        .args(["webhook-config", "--service", "nonamespace"])
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--service") && err.contains("NAMESPACE/NAME"),
        "{err}"
    );
    let dir = tmp_dir("badca");
    let not_pem = dir.join("x.pem");
    std::fs::write(&not_pem, "hello").expect("write");
    let out = Command::new(bin())
        .args(["webhook-config", "--ca-bundle-file"])
        .arg(&not_pem)
        .output()
        .expect("runs");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no PEM CERTIFICATE"));
    // A CERTIFICATE block that does not decode is refused too, naming the file and the cause.
    let bad_base64 = dir.join("bad.pem");
    std::fs::write(
        &bad_base64,
        "-----BEGIN CERTIFICATE-----\nMIIB!!\n-----END CERTIFICATE-----\n",
    )
    .expect("write");
    let out = Command::new(bin())
        .args(["webhook-config", "--ca-bundle-file"])
        .arg(&bad_base64)
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("CA bundle {}", bad_base64.display())) && err.contains("base64"),
        "{err}"
    );
    let out = Command::new(bin())
        .args(["webhook-config", "--timeout", "31"])
        .output()
        .expect("runs");
    assert!(
        !out.status.success(),
        "timeouts above 30 s are rejected as the API server does"
    );
}

fn main() {
    harness::run(trials![
        &[] => [
            json_and_yaml_describe_the_same_object,
            standalone_output_never_carries_istios_revision_label,
            defaults_agree_with_serve_and_rbac,
            values_the_api_server_refuses_are_refused,
            ca_bundle_file_is_base64_encoded,
            bad_flags_name_the_cause,
        ],
        &[Need::KubernetesValidate] => [
            every_variant_validates_strictly,
            the_validator_rejects_a_broken_configuration,
        ],
    ])
}
