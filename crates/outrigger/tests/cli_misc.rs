//! `outrigger version`, `outrigger completion` and the two spellings of every flag, running the
//! built binary.

use std::process::Command;

fn outrigger(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_outrigger"))
        .args(args)
        .env_remove("ENABLE_NATIVE_SIDECARS")
        .output()
        .expect("binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn repo_file(rel: &str) -> String {
    format!("{}/../../{rel}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn version_names_the_build_and_what_it_was_verified_against() {
    let (code, out, err) = outrigger(&["version"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], format!("outrigger {}", env!("CARGO_PKG_VERSION")));
    let commit = lines[1].strip_prefix("git commit: ").expect("commit line");
    assert!(
        commit == "unknown" || commit.chars().all(|c| c.is_ascii_hexdigit()),
        "{commit}"
    );
    assert!(lines[2].starts_with("verified against: ") && lines[2].contains("istio/istio commit"));
}

#[test]
fn completion_scripts_for_each_shell() {
    for (shell, marker) in [
        ("bash", "complete -F _outrigger"),
        ("zsh", "#compdef outrigger"),
        ("fish", "complete -c outrigger"),
    ] {
        let (code, out, err) = outrigger(&["completion", shell]);
        assert_eq!(code, 0, "{shell}: {err}");
        assert!(out.contains(marker), "{shell}: no {marker:?}");
        assert!(
            out.contains("inject-config-file"),
            "{shell}: aliases completed"
        );
    }
    let (code, _, err) = outrigger(&["completion", "tcsh"]);
    assert_eq!(code, 2, "unknown shell is a usage error: {err}");
}

#[test]
fn inject_flags_work_in_both_spellings() {
    let input = repo_file("tests/fixtures/pod.yaml");
    let config = repo_file("crates/outrigger-inject/defaults/config.yaml");
    let values = repo_file("crates/outrigger-inject/defaults/values.json");
    let mesh = repo_file("crates/outrigger-inject/defaults/mesh.yaml");
    let camel = outrigger(&[
        "inject",
        "-f",
        &input,
        "--injectConfigFile",
        &config,
        "--valuesFile",
        &values,
        "--meshConfigFile",
        &mesh,
        "--nativeSidecars",
        "true",
    ]);
    let kebab = outrigger(&[
        "inject",
        "-f",
        &input,
        "--inject-config-file",
        &config,
        "--values-file",
        &values,
        "--mesh-config-file",
        &mesh,
        "--native-sidecars",
        "true",
    ]);
    assert_eq!(camel.0, 0, "{}", camel.2);
    assert_eq!(camel, kebab);
    assert!(
        camel.1.contains("restartPolicy: Always"),
        "--nativeSidecars applied"
    );
}

#[test]
fn webhook_config_and_check_flags_work_in_both_spellings() {
    let dir = std::env::temp_dir().join(format!("outrigger-cli-misc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let ca = dir.join("ca.pem");
    std::fs::write(
        &ca,
        "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----\n",
    )
    .expect("write CA");
    let ca = ca.to_str().expect("UTF-8 path");
    let a = outrigger(&[
        "webhook-config",
        "--caBundleFile",
        ca,
        "--failurePolicy",
        "Ignore",
    ]);
    let b = outrigger(&[
        "webhook-config",
        "--ca-bundle-file",
        ca,
        "--failure-policy",
        "Ignore",
    ]);
    assert_eq!(a.0, 0, "{}", a.2);
    assert_eq!(a, b);
    assert!(a.1.contains("caBundle:") && a.1.contains("failurePolicy: Ignore"));
    let pod = repo_file("tests/fixtures/pod.yaml");
    let a = outrigger(&[
        "check",
        "-f",
        &pod,
        "--namespaceLabels",
        "istio-injection=enabled",
    ]);
    let b = outrigger(&[
        "check",
        "-f",
        &pod,
        "--namespace-labels",
        "istio-injection=enabled",
    ]);
    assert_eq!(a, b);
    assert!(a.1.contains("INJECTED"), "{}", a.1);
}
