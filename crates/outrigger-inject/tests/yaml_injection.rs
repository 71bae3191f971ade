//! Injection of manifests whose YAML Kubernetes' reader accepts where a stricter reader would not
//! (library level, `kube_inject::inject_manifests`): a rendered sidecar template with a repeated
//! key (`sidecar.istio.io/userVolumeMount` as a JSON list), a multi-line flow sequence closed at
//! its key's column, and text after a document end marker, which is dropped with a warning.
//! Runs with the embedded default and, when the Istio conformance corpus is present, with
//! Istio's chart settings. The fixtures are `tests/fixtures/yaml/` at the repository root.

use std::path::{Path, PathBuf};

use outrigger_inject::config::defaults;
use outrigger_inject::config::{InjectorConfig, Snapshot};
use outrigger_inject::kube_inject::{self, KubeInjectOptions, KubeInjectOutput};
use outrigger_inject::yaml;
use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixture(name: &str) -> String {
    let p = root().join("tests/fixtures/yaml").join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()))
}

/// The embedded default, and Istio's chart settings when the corpus is present.
fn snapshots() -> Vec<(&'static str, Snapshot)> {
    let mut out = vec![("embedded default", defaults::snapshot().expect("default"))];
    let dir = root().join("../shared/conformance/istio/settings/default");
    match std::fs::read_to_string(dir.join("config.yaml")) {
        Ok(config) => {
            let read = |n: &str| std::fs::read_to_string(dir.join(n)).expect("settings file");
            let config = InjectorConfig::parse_for_kube_inject(&config).expect("Istio config");
            let s = Snapshot::with_config(config, &read("values.json"), Some(&read("mesh.yaml")))
                .expect("Istio settings");
            out.push(("Istio settings", s));
        }
        Err(_) => {
            eprintln!("NOTICE: ../shared/conformance/istio not found; Istio settings skipped")
        }
    }
    out
}

fn inject(text: &str, snapshot: &Snapshot, what: &str) -> KubeInjectOutput {
    let opts = KubeInjectOptions {
        snapshot,
        native_sidecars: false,
        revision: "",
        compliance_policy: "",
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

#[test]
fn user_volume_mount_list_renders_a_repeated_key_and_injects() {
    let text = fixture("user-volume-mount.yaml");
    let input = documents(&text);
    let spec = "/spec/template/spec";
    let mounts: Vec<Value> = input[0]
        .pointer("/spec/template/metadata/annotations/sidecar.istio.io~1userVolumeMount")
        .and_then(Value::as_str)
        .and_then(|a| serde_json::from_str(a).ok())
        .expect("fixture annotation");
    for (what, s) in snapshots() {
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

#[test]
fn multi_line_flow_sequence_closed_at_its_key_column_injects() {
    let text = fixture("flow-args.yaml");
    let input = documents(&text);
    let spec = "/spec/template/spec";
    let want = container(&input[0], spec, "agent");
    for (what, s) in snapshots() {
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

#[test]
fn text_after_a_document_end_is_reported_not_read() {
    let text = fixture("ignored-after-end.yaml");
    for (what, s) in snapshots() {
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
