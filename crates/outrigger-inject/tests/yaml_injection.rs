//! Injection of manifests whose YAML Kubernetes' reader accepts where a stricter reader would not
//! (library level, `kube_inject::inject_manifests`): a rendered sidecar template with a repeated
//! key (`sidecar.istio.io/userVolumeMount` as a JSON list), a multi-line flow sequence closed at
//! its key's column, and text after a document end marker, which is dropped with a warning.
//! Runs with the embedded default (`NAME`) and with Istio's chart settings from the conformance
//! corpus (`NAME::istio_settings`: ignored without the corpus, failing under CI, by
//! `tests/harness/absent.rs`'s rule). The fixtures are `tests/fixtures/yaml/` at the repository
//! root.

use std::path::{Path, PathBuf};

use outrigger_go::yaml;
use outrigger_inject::config::defaults;
use outrigger_inject::config::{InjectorConfig, Snapshot};
use outrigger_inject::inject::Settings;
use outrigger_inject::kube_inject::{self, KubeInjectOptions, KubeInjectOutput};
use serde_json::Value;

#[path = "../../outrigger-go/tests/harness/absent.rs"]
mod absent;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixture(name: &str) -> String {
    let p = root().join("tests/fixtures/yaml").join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()))
}

/// The embedded default, or Istio's chart settings from the corpus (which the harness made
/// sure is there).
fn snapshots(istio: bool) -> Vec<(&'static str, Snapshot)> {
    if !istio {
        return vec![("embedded default", defaults::snapshot().expect("default"))];
    }
    let dir = absent::corpus_dir().join("settings/default");
    let read = |n: &str| std::fs::read_to_string(dir.join(n)).expect("settings file");
    let config = InjectorConfig::parse_for_kube_inject(&read("config.yaml")).expect("Istio config");
    let s = Snapshot::with_config(config, &read("values.json"), Some(&read("mesh.yaml")))
        .expect("Istio settings");
    vec![("Istio settings", s)]
}

fn inject(text: &str, snapshot: &Snapshot, what: &str) -> KubeInjectOutput {
    let opts = KubeInjectOptions {
        settings: Settings {
            snapshot,
            native_sidecars: false,
            revision: "",
            compliance_policy: "",
        },
        reinject: false,
    };
    kube_inject::inject_manifests(text, &opts).unwrap_or_else(|e| panic!("{what}: {e}"))
}

fn documents(text: &str) -> Vec<Value> {
    yaml::split_documents(text)
        .expect("stream")
        .into_iter()
        .map(|d| yaml::from_str(&d).expect("document"))
        .filter(|v| !v.is_null())
        .collect()
}

fn containers<'a>(doc: &'a Value, spec: &str) -> &'a [Value] {
    doc.pointer(&format!("{spec}/containers"))
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn container<'a>(doc: &'a Value, spec: &str, name: &str) -> &'a Value {
    containers(doc, spec)
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no container {name} in {doc}"))
}

fn user_volume_mount_list_renders_a_repeated_key_and_injects(istio: bool) {
    let text = fixture("user-volume-mount.yaml");
    let input = documents(&text);
    let spec = "/spec/template/spec";
    let mounts: Vec<Value> = input[0]
        .pointer("/spec/template/metadata/annotations/sidecar.istio.io~1userVolumeMount")
        .and_then(Value::as_str)
        .and_then(|a| serde_json::from_str(a).ok())
        .expect("fixture annotation");
    for (what, s) in snapshots(istio) {
        let (out, texts) = yaml::traced(|| inject(&text, &s, what));
        let doc = documents(&out.text).remove(0);
        let proxy = container(&doc, spec, "istio-proxy");
        if what == "Istio settings" {
            // The rendered template really holds the key twice in one mapping...
            let repeated = texts.iter().any(|t| {
                t.lines().collect::<Vec<_>>().windows(3).any(|w| {
                    w[0].trim_start().starts_with("- name: \"0\"") && w[2].contains("name:")
                })
            });
            assert!(repeated, "{what}: no rendered `- name: \"0\"` mapping");
            // ...and the mount comes out with the last value.
            let have = proxy["volumeMounts"].as_array().expect("mounts");
            for m in &mounts {
                assert!(have.contains(m), "{what}: {m} not in {have:?}");
            }
        }
        assert!(out.warnings.is_empty(), "{what}: {:?}", out.warnings);
    }
}

fn multi_line_flow_sequence_closed_at_its_key_column_injects(istio: bool) {
    let text = fixture("flow-args.yaml");
    let input = documents(&text);
    let spec = "/spec/template/spec";
    let want = container(&input[0], spec, "agent");
    for (what, s) in snapshots(istio) {
        let out = inject(&text, &s, what);
        let doc = documents(&out.text).remove(0);
        let got = container(&doc, spec, "agent");
        assert_eq!(got["args"], want["args"], "{what}");
        assert!(
            containers(&doc, spec)
                .iter()
                .any(|c| c["name"] == "istio-proxy"),
            "{what}: not injected"
        );
    }
}

fn text_after_a_document_end_is_reported_not_read(istio: bool) {
    let text = fixture("ignored-after-end.yaml");
    for (what, s) in snapshots(istio) {
        let out = inject(&text, &s, what);
        let kinds: Vec<String> = documents(&out.text)
            .iter()
            .filter_map(|d| d["kind"].as_str().map(str::to_string))
            .collect();
        assert_eq!(kinds, ["Pod", "Service"], "{what}");
        assert_eq!(out.warnings.len(), 1, "{what}: {:?}", out.warnings);
        let w = &out.warnings[0];
        let marker = text
            .lines()
            .position(|l| l == "...")
            .expect("fixture has an end marker");
        for piece in [
            "document 0".to_string(),
            format!("line {}", marker + 2),
            "ignored by Kubernetes' YAML reader".to_string(),
        ] {
            assert!(w.contains(&piece), "{what}: {piece:?} not in {w:?}");
        }
        assert!(w.ends_with('\n'), "{what}: warnings end with a newline");
    }
}

/// A test, run with Istio's settings (`true`) or the embedded default.
type Test = fn(bool);

/// Each test with the embedded default, and with Istio's settings where the corpus is.
fn main() {
    let tests: [(&str, Test); 3] = [
        (
            "user_volume_mount_list_renders_a_repeated_key_and_injects",
            user_volume_mount_list_renders_a_repeated_key_and_injects,
        ),
        (
            "multi_line_flow_sequence_closed_at_its_key_column_injects",
            multi_line_flow_sequence_closed_at_its_key_column_injects,
        ),
        (
            "text_after_a_document_end_is_reported_not_read",
            text_after_a_document_end_is_reported_not_read,
        ),
    ];
    let mut trials = Vec::new();
    for (name, test) in tests {
        trials.push(absent::trial(name, || None, move || test(false)));
        trials.push(absent::trial(
            &format!("{name}::istio_settings"),
            absent::corpus,
            move || test(true),
        ));
    }
    libtest_mimic::run(&libtest_mimic::Arguments::from_args(), trials).exit()
}
