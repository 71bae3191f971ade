//! `outrigger inject` on YAML that Kubernetes' reader (sigs.k8s.io/yaml over go-yaml v2) accepts
//! in ways a stricter reader does not: a rendered sidecar template with a repeated key, a flow
//! sequence closed at its key's column, text after a document's end marker. Fixtures are our own,
//! under `tests/fixtures/yaml/`; each runs with the embedded default and, when the Istio
//! conformance corpus is present (`../shared/conformance/istio`), with Istio's chart settings.
//! That our reading of each fixture equals Go's is checked by the `go_yaml` differential test.

#[allow(dead_code)]
mod support;

use std::path::PathBuf;

use serde_json::Value;
use support::{docs, fixture, names_at, read, repo_root, Inject};

/// Istio's chart settings from the corpus, if present: (config, values, mesh).
fn istio_settings() -> Option<(PathBuf, PathBuf, PathBuf)> {
    let dir = repo_root().join("../shared/conformance/istio/settings/default");
    let files = (
        dir.join("config.yaml"),
        dir.join("values.json"),
        dir.join("mesh.yaml"),
    );
    if files.0.exists() {
        Some(files)
    } else {
        eprintln!("NOTICE: ../shared/conformance/istio not found; Istio settings runs skipped");
        None
    }
}

/// `outrigger inject -f <fixture>` with the embedded default, then with Istio's settings.
fn runs(name: &str) -> Vec<(&'static str, support::Run)> {
    let path = fixture(&format!("yaml/{name}"));
    let mut out = vec![("embedded default", Inject::file(&path).run())];
    if let Some((config, values, mesh)) = istio_settings() {
        let run = Inject::file(&path)
            .path_arg("--injectConfigFile", &config)
            .path_arg("--valuesFile", &values)
            .path_arg("--meshConfigFile", &mesh)
            .run();
        out.push(("Istio settings", run));
    }
    out
}

/// The container named `name` in the pod spec at `spec`.
fn container<'a>(doc: &'a Value, spec: &str, name: &str) -> &'a Value {
    doc.pointer(&format!("{spec}/containers"))
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["name"] == name))
        .unwrap_or_else(|| panic!("no container {name} at {spec} in {doc}"))
}

#[test]
fn repeated_key_in_the_rendered_template_is_injected() {
    let input = docs(&read(&fixture("yaml/user-volume-mount.yaml")));
    let annotation = input[0]
        .pointer("/spec/template/metadata/annotations/sidecar.istio.io~1userVolumeMount")
        .and_then(Value::as_str)
        .expect("fixture annotation");
    let mounts: Vec<Value> = serde_json::from_str(annotation).expect("annotation is JSON");
    for (what, run) in runs("user-volume-mount.yaml") {
        let out = docs(run.success());
        assert_eq!(out.len(), 1, "{what}");
        let spec = "/spec/template/spec";
        assert!(
            names_at(&out[0], &format!("{spec}/containers")).contains(&"istio-proxy".to_string()),
            "{what}: not injected"
        );
        if what == "Istio settings" {
            // Istio's template renders the mount; the repeated `name` keeps its last value.
            let proxy = container(&out[0], spec, "istio-proxy");
            let have = proxy["volumeMounts"].as_array().expect("proxy mounts");
            for m in &mounts {
                assert!(have.contains(m), "{what}: {m} not in {have:?}");
            }
        }
    }
}

#[test]
fn flow_sequence_closed_at_its_key_column_is_accepted() {
    let input = docs(&read(&fixture("yaml/flow-args.yaml")));
    let spec = "/spec/template/spec";
    let want = container(&input[0], spec, "agent");
    assert!(want["args"].as_array().is_some_and(|a| a.len() == 3));
    for (what, run) in runs("flow-args.yaml") {
        let out = docs(run.success());
        let got = container(&out[0], spec, "agent");
        assert_eq!(got["args"], want["args"], "{what}");
        assert_eq!(got["env"], want["env"], "{what}");
        assert!(
            names_at(&out[0], &format!("{spec}/containers")).contains(&"istio-proxy".to_string()),
            "{what}: not injected"
        );
    }
}

#[test]
fn text_after_a_document_end_is_dropped_with_a_warning() {
    for (what, run) in runs("ignored-after-end.yaml") {
        let out = docs(run.success());
        let kinds: Vec<&str> = out.iter().filter_map(|d| d["kind"].as_str()).collect();
        assert_eq!(kinds, ["Pod", "Service"], "{what}");
        assert!(
            names_at(&out[0], "/spec/containers").contains(&"istio-proxy".to_string()),
            "{what}: not injected"
        );
        for piece in [
            "document 0",
            "line 12",
            "ignored by Kubernetes' YAML reader",
        ] {
            assert!(
                run.stderr.contains(piece),
                "{what}: expected {piece:?} on stderr:\n{}",
                run.stderr
            );
        }
    }
}

#[test]
fn no_warning_without_ignored_text() {
    for (what, run) in runs("flow-args.yaml") {
        run.success();
        assert!(
            !run.stderr.contains("ignored"),
            "{what}: unexpected warning:\n{}",
            run.stderr
        );
    }
}
