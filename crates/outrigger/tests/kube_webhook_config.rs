//! `outrigger webhook-config` end to end: every flag combination yields a manifest that
//! `kubernetes-validate --strict` accepts (skipped with a notice when the tool is absent).

use std::path::PathBuf;
use std::process::Command;

mod support_validate;

use support_validate::{kubernetes_validate, tool_available};

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
    "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ==\n-----END CERTIFICATE-----\n";

#[test]
fn every_variant_validates_strictly() {
    if !tool_available("kubernetes-validate", "--version") {
        eprintln!(
            "NOTICE: kubernetes-validate not found; strict validation of webhook-config skipped"
        );
        return;
    }
    let dir = tmp_dir("variants");
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, CA_PEM).expect("write CA");
    let ca_arg = ca.to_string_lossy().to_string();
    let variants: Vec<Vec<&str>> = vec![
        vec![],
        vec!["--enable-namespaces-by-default"],
        vec!["--revision", "canary"],
        vec!["-o", "json"],
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

#[test]
fn the_validator_rejects_a_broken_configuration() {
    if !tool_available("kubernetes-validate", "--version") {
        eprintln!("NOTICE: kubernetes-validate not found; negative validation check skipped");
        return;
    }
    // Guards the test above: a misspelt field must fail strict validation.
    let text = generate(&[]).replace("sideEffects: None", "sideEffect: None");
    let path = tmp_dir("broken").join("wh.yaml");
    std::fs::write(&path, text).expect("write manifest");
    assert!(
        !kubernetes_validate(&[&path]).0,
        "strict validation accepted an unknown field"
    );
}

#[test]
fn json_and_yaml_describe_the_same_object() {
    let json: serde_json::Value =
        serde_json::from_str(&generate(&["-o", "json", "--revision", "1-24"])).expect("JSON");
    assert_eq!(json["metadata"]["name"], "istio-sidecar-injector-1-24");
    assert_eq!(json["webhooks"].as_array().map(Vec::len), Some(2));
    assert_eq!(
        json["webhooks"][0]["clientConfig"]["service"]["name"],
        "istiod-1-24"
    );
    let yaml = generate(&["--revision", "1-24"]);
    assert!(
        yaml.contains("name: istio-sidecar-injector-1-24\n"),
        "{yaml}"
    );
    assert!(
        yaml.contains("      - \"1-24\"\n"),
        "a value starting with a digit is quoted: {yaml}"
    );
}

#[test]
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
    let encoded = json["webhooks"][3]["clientConfig"]["caBundle"]
        .as_str()
        .expect("caBundle set")
        .to_string();
    assert!(
        encoded.starts_with("LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t"),
        "{encoded}"
    );
}

#[test]
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
    let out = Command::new(bin())
        .args(["webhook-config", "--timeout", "31"])
        .output()
        .expect("runs");
    assert!(
        !out.status.success(),
        "timeouts above 30 s are rejected as the API server does"
    );
}
