//! `outrigger inject` on YAML that Kubernetes' reader (sigs.k8s.io/yaml over go-yaml v2) accepts
//! in ways a stricter reader does not: a rendered sidecar template with a repeated key, a flow
//! sequence closed at its key's column, text after a document's end marker. Fixtures are our own,
//! under `tests/fixtures/yaml/`; each runs with the embedded default (`NAME`) and with Istio's
//! chart settings from the conformance corpus (`NAME::istio_settings`, reported ignored without
//! the corpus and failing under CI: `tests/harness`).
//! That our reading of each fixture equals Go's is checked by the `go_yaml` differential test.

mod harness;
#[allow(dead_code)] // the helpers of the inject tests; this file uses some
mod support;

use serde_json::Value;
use support::{docs, fixture, names_at, read, Inject};

/// `outrigger inject -f <fixture>` with the embedded default, or with Istio's chart settings
/// from the corpus (which the harness made sure is there).
fn runs(name: &str, istio: bool) -> Vec<(&'static str, support::Run)> {
    let path = fixture(&format!("yaml/{name}"));
    if !istio {
        return vec![("embedded default", Inject::file(&path).run())];
    }
    let dir = harness::absent::corpus_dir().join("settings/default");
    let run = Inject::file(&path)
        .path_arg("--injectConfigFile", &dir.join("config.yaml"))
        .path_arg("--valuesFile", &dir.join("values.json"))
        .path_arg("--meshConfigFile", &dir.join("mesh.yaml"))
        .run();
    vec![("Istio settings", run)]
}

/// The container named `name` in the pod spec at `spec`.
fn container<'a>(doc: &'a Value, spec: &str, name: &str) -> &'a Value {
    doc.pointer(&format!("{spec}/containers"))
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["name"] == name))
        .unwrap_or_else(|| panic!("no container {name} at {spec} in {doc}"))
}

fn repeated_key_in_the_rendered_template_is_injected(istio: bool) {
    let input = docs(&read(&fixture("yaml/user-volume-mount.yaml")));
    let annotation = input[0]
        .pointer("/spec/template/metadata/annotations/sidecar.istio.io~1userVolumeMount")
        .and_then(Value::as_str)
        .expect("fixture annotation");
    let mounts: Vec<Value> = serde_json::from_str(annotation).expect("annotation is JSON");
    for (what, run) in runs("user-volume-mount.yaml", istio) {
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

fn flow_sequence_closed_at_its_key_column_is_accepted(istio: bool) {
    let input = docs(&read(&fixture("yaml/flow-args.yaml")));
    let spec = "/spec/template/spec";
    let want = container(&input[0], spec, "agent");
    assert!(want["args"].as_array().is_some_and(|a| a.len() == 3));
    for (what, run) in runs("flow-args.yaml", istio) {
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

fn text_after_a_document_end_is_dropped_with_a_warning(istio: bool) {
    for (what, run) in runs("ignored-after-end.yaml", istio) {
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

fn no_warning_without_ignored_text(istio: bool) {
    for (what, run) in runs("flow-args.yaml", istio) {
        run.success();
        assert!(
            !run.stderr.contains("ignored"),
            "{what}: unexpected warning:\n{}",
            run.stderr
        );
    }
}

/// A test, run with Istio's settings (`true`) or the embedded default.
type Test = fn(bool);

/// Each test with the embedded default, and with Istio's settings where the corpus is.
fn main() {
    let tests: [(&str, Test); 4] = [
        (
            "repeated_key_in_the_rendered_template_is_injected",
            repeated_key_in_the_rendered_template_is_injected,
        ),
        (
            "flow_sequence_closed_at_its_key_column_is_accepted",
            flow_sequence_closed_at_its_key_column_is_accepted,
        ),
        (
            "text_after_a_document_end_is_dropped_with_a_warning",
            text_after_a_document_end_is_dropped_with_a_warning,
        ),
        (
            "no_warning_without_ignored_text",
            no_warning_without_ignored_text,
        ),
    ];
    let mut trials = Vec::new();
    for (name, test) in tests {
        trials.push(harness::trial(name, &[], move || test(false)));
        trials.push(harness::trial(
            &format!("{name}::istio_settings"),
            &[harness::Need::Corpus],
            move || test(true),
        ));
    }
    harness::run(trials)
}
