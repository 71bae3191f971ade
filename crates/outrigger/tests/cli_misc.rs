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

/// The quoted strings of the first line of `file` (repository-relative) containing `marker`.
fn quoted_on_line(file: &str, marker: &str) -> Vec<String> {
    let text = std::fs::read_to_string(repo_file(file)).expect(file);
    let line = text
        .lines()
        .find(|l| l.contains(marker))
        .unwrap_or_else(|| panic!("{file}: no line with {marker:?}"));
    line.split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

#[test]
fn version_json_names_the_build_and_the_verified_versions() {
    let (code, out, err) = outrigger(&["version", "-o", "json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
    let (_, text, _) = outrigger(&["version"]);
    let commit = text
        .lines()
        .nth(1)
        .and_then(|l| l.strip_prefix("git commit: "));
    assert_eq!(v["gitCommit"].as_str(), commit, "the text's commit");
    // The compiler cargo ran for this build (rustup resolves `rustc` to the same toolchain).
    let rustc = Command::new("rustc")
        .arg("--version")
        .output()
        .expect("rustc");
    assert_eq!(
        v["rustVersion"].as_str(),
        Some(String::from_utf8_lossy(&rustc.stdout).trim()),
        "{out}"
    );
    assert!(
        v["target"]
            .as_str()
            .is_some_and(|t| t.contains("-linux-") || t.contains("-apple-")),
        "{out}"
    );
    // The releases the tests verify, and the versions the manifests are validated on.
    let releases = quoted_on_line(
        "crates/outrigger-inject/tests/verified_istio.rs",
        "const RELEASES",
    );
    assert_eq!(v["istio"]["verifiedReleases"], serde_json::json!(releases));
    let matrix = std::fs::read_to_string(repo_file("docs/kubernetes.md")).expect("docs");
    assert!(matrix.contains(&format!("| {} (each release", releases.join(", "))));
    let validated: Vec<String> = quoted_on_line(
        "crates/outrigger/tests/deploy_manifests.rs",
        "for version in [",
    )
    .iter()
    .map(|v| v.trim_end_matches(".0").to_string())
    .collect();
    assert_eq!(
        v["kubernetes"]["validatedVersions"],
        serde_json::json!(validated)
    );
    assert_eq!(
        v["kubernetes"]["minimum"].as_str(),
        validated.first().map(String::as_str)
    );
    // -o yaml: the same object.
    let (code, yaml, err) = outrigger(&["version", "-o", "yaml"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(outrigger_go::yaml::from_str(&yaml).expect("YAML"), v);
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
        assert!(
            out.contains("tls-cert-file") && out.contains("tlsCertFile"),
            "{shell}: serve's flags complete in both spellings"
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
        "istio.io/rev=outrigger",
    ]);
    let b = outrigger(&[
        "check",
        "-f",
        &pod,
        "--namespace-labels",
        "istio.io/rev=outrigger",
    ]);
    assert_eq!(a, b);
    assert!(a.1.contains("INJECTED"), "{}", a.1);
}

#[test]
fn serve_flags_work_in_both_spellings() {
    // A bad value reaches serve's own validation under either spelling of the flag: the
    // spelling was accepted and routed to the same argument.
    for flag in ["--max-request-bytes", "--maxRequestBytes"] {
        let (code, _, err) = outrigger(&["serve", flag, "lots"]);
        assert_eq!(code, 2, "{flag}: {err}");
        assert!(
            err.contains("invalid value 'lots' for '--max-request-bytes"),
            "{flag}: {err}"
        );
    }
    for flag in ["--tls-cert-file", "--tlsCertFile"] {
        let (code, _, err) = outrigger(&["serve", flag, "c.pem"]);
        assert_eq!(code, 2, "{flag}: {err}");
        assert!(
            err.contains("--tlsKeyFile"),
            "{flag}: requires the key: {err}"
        );
    }
}

#[test]
fn man_pages_name_every_subcommand_and_their_flags() {
    let (code, root, err) = outrigger(&["man"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        root.starts_with(".ie") || root.contains(".TH outrigger 1"),
        "{root}"
    );
    assert!(root.contains(".TH outrigger 1"), "{root}");
    for sub in [
        "inject",
        "serve",
        "webhook\\-config",
        "check",
        "version",
        "completion",
        "man",
    ] {
        assert!(
            root.contains(&format!("outrigger\\-{sub}(1)")),
            "{sub} listed: {root}"
        );
    }
    for (sub, flags) in [
        (
            "inject",
            &["\\-\\-injectConfigFile", "\\-\\-filename", "\\-\\-diff"][..],
        ),
        (
            "serve",
            &[
                "\\-\\-tlsCertFile",
                "\\-\\-max\\-inflight\\-bytes",
                "\\-\\-kube",
            ][..],
        ),
        (
            "webhook-config",
            &["\\-\\-ca\\-bundle\\-file", "\\-\\-revision"][..],
        ),
        (
            "check",
            &["\\-\\-namespace\\-labels", "\\-\\-injectConfigMap"][..],
        ),
        (
            "drift",
            &["\\-\\-injectConfigFile", "\\-\\-native\\-sidecars"][..],
        ),
        (
            "doctor",
            &["\\-\\-probe\\-namespace", "\\-\\-webhook\\-config\\-name"][..],
        ),
    ] {
        let (code, page, err) = outrigger(&["man", sub]);
        assert_eq!(code, 0, "{sub}: {err}");
        let title = format!(".TH outrigger-{sub} 1");
        assert!(page.contains(&title), "{sub}: {title}: {page}");
        for f in flags {
            assert!(page.contains(f), "{sub}: {f}: {page}");
        }
        assert!(
            page.contains("camelCase"),
            "{sub}: the alias rule is stated"
        );
    }
    // An unknown page is a usage error, like an unknown flag: clap's `error:` and status 2.
    let (code, _, err) = outrigger(&["man", "nosuch"]);
    let (flag_code, _, flag_err) = outrigger(&["man", "--nosuch"]);
    assert_eq!((code, flag_code), (2, 2), "{err}\n{flag_err}");
    assert!(
        err.starts_with("error: no man page for 'nosuch'")
            && err.contains("[possible values: inject, serve")
            && flag_err.starts_with("error: "),
        "{err}"
    );

    let dir = std::env::temp_dir().join(format!("outrigger-man-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (code, out, err) = outrigger(&["man", "--dir", dir.to_str().expect("UTF-8")]);
    assert_eq!(code, 0, "{err}");
    let mut written: Vec<String> = std::fs::read_dir(&dir)
        .expect("pages written")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    written.sort();
    // One page per subcommand (inject, serve, webhook-config, check, drift, doctor, preview,
    // version, completion, man) and the root's.
    assert_eq!(written.len(), 11, "{written:?}");
    assert!(
        written.contains(&"outrigger.1".to_string())
            && written.contains(&"outrigger-inject.1".to_string())
            && written.contains(&"outrigger-preview.1".to_string())
    );
    assert_eq!(out.lines().count(), written.len());
    assert_eq!(
        std::fs::read_to_string(dir.join("outrigger.1")).expect("page"),
        root
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn check_warns_about_text_kubernetes_ignores_as_inject_does() {
    let dir = std::env::temp_dir().join(format!("outrigger-cli-ignored-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("pods.yaml");
    // The `labels` after the end marker are not part of pod b for Kubernetes.
    std::fs::write(
        &file,
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\nspec:\n  containers:\n  - name: a\n    image: a\n---\n\
         apiVersion: v1\nkind: Pod\nmetadata:\n  name: b\nspec:\n  containers:\n  - name: b\n    image: b\n...\n  labels: {x: y}\n",
    )
    .expect("write manifest");
    let path = file.to_str().expect("UTF-8 path");
    let (code, out, err) = outrigger(&[
        "check",
        "-f",
        path,
        "--namespace-labels",
        "istio.io/rev=outrigger",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("default    Pod   b     INJECTED"), "{out}");
    assert_eq!(
        err,
        format!(
            "{path}: warning: document 1: line 19: content after the end of the document is ignored \
             by Kubernetes' YAML reader (and is not valid YAML: yaml: line 18: did not find expected \
             <document start>)\n"
        )
    );
    // inject names the same line.
    let out = Command::new(env!("CARGO_BIN_EXE_outrigger"))
        .args(["inject", "-q", "-f", path])
        .output()
        .expect("binary runs");
    let inject_err = String::from_utf8_lossy(&out.stderr);
    assert!(
        inject_err.contains("document 1: the content from line 19 on"),
        "{inject_err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
