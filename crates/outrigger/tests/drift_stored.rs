//! `drift --kube` on pods the fake API server stores as kube-apiserver does (its own model of
//! the defaulting and in-tree admission plugins, `common::admission::store_admitted`): every
//! pod template of Istio's test inputs, injected by the library as the webhook injects it with
//! Istio 1.24.6, 1.26.8 and 1.28.10 settings (`releases/` of the corpus), native sidecars on
//! and off, is current under the configuration that injected it (0 false positives); the same
//! pods injected with another proxy hub, or the other native-sidecar mode, are stale by exactly
//! those fields. Needs the corpus: ignored with the reason where it is absent, failing under CI.

mod common;
mod harness;
#[allow(dead_code)]
mod support;

use std::collections::BTreeSet;

use common::admission::store_admitted;
use common::kube_api::{self, Cluster, FakeApi};
use harness::Need;
use outrigger_go::yaml;
use outrigger_inject::config::{Snapshot, ValuesFacts};
use outrigger_inject::decide::inject_required;
use outrigger_inject::ingest::workload::workload_from_pod;
use outrigger_inject::inject::{inject_pod, InjectParams, Mode};
use outrigger_inject::kube_inject;
use serde_json::{json, Value};
use support::{json_rows, Inject, TempDir};

const RELEASES: [&str; 3] = ["1.24.6", "1.26.8", "1.28.10"];

fn release_dir(tag: &str) -> std::path::PathBuf {
    harness::absent::corpus_dir().join("releases").join(tag)
}

fn read(p: &std::path::Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The release's three ConfigMap texts: config, values, mesh.
fn release(tag: &str) -> (String, String, String) {
    let d = release_dir(tag);
    (
        read(&d.join("config.yaml")),
        read(&d.join("values.json")),
        read(&d.join("mesh.yaml")),
    )
}

/// Every pod template of the corpus inputs, as a pod (named after its case and position).
fn corpus_pods() -> Vec<Value> {
    let dir = harness::absent::corpus_dir();
    let cases: Value = serde_json::from_str(&read(&dir.join("cases.json"))).expect("cases.json");
    let inputs: BTreeSet<String> = cases
        .as_array()
        .expect("cases")
        .iter()
        .filter_map(|c| c["input"].as_str().map(str::to_string))
        .collect();
    let mut pods = Vec::new();
    for input in inputs {
        let text = read(&dir.join(&input));
        let Ok(docs) = yaml::split_documents(&text) else {
            continue;
        };
        for raw in docs {
            let Ok(doc) = yaml::from_str(&raw) else {
                continue;
            };
            let Ok(templates) = kube_inject::pod_templates(doc) else {
                continue;
            };
            for t in templates {
                // A template injected already (Istio's merge-probers input) is injected twice:
                // what the first injection left in the proxy is the pod's own to drift, not
                // told apart from a template's change (a known limitation).
                if t.pod
                    .pointer("/metadata/annotations/sidecar.istio.io~1status")
                    .is_some()
                {
                    continue;
                }
                let n = pods.len();
                let mut pod = t.pod;
                let meta = pod["metadata"].as_object_mut().expect("metadata");
                meta.remove("creationTimestamp");
                meta.insert("name".into(), json!(format!("p{n:03}")));
                meta.insert("namespace".into(), json!("shop"));
                pod["apiVersion"] = json!("v1");
                pod["kind"] = json!("Pod");
                pods.push(pod);
            }
        }
    }
    assert!(pods.len() > 50, "corpus pod templates: {}", pods.len());
    pods
}

/// The webhook: inject `pod` with `s` when the configuration injects it (as drift decides),
/// else leave it.
fn webhook(s: &Snapshot, native: bool) -> impl Fn(&Value) -> Value + '_ {
    move |pod: &Value| {
        let c = &s.config;
        let wanted = !pod["spec"]["hostNetwork"].as_bool().unwrap_or(false)
            && inject_required(
                pod,
                &c.policy,
                &c.never_inject_selector,
                &c.always_inject_selector,
            )
            .inject;
        if !wanted {
            return pod.clone();
        }
        let params = InjectParams {
            snapshot: s,
            mode: Mode::Webhook,
            workload: workload_from_pod(pod),
            revision: "",
            native_sidecars: native,
            proxy_envs: Default::default(),
            proxy_uid_gid: None,
            compliance_policy: "",
        };
        match inject_pod(pod, &params) {
            Ok(i) => i.pod,
            // What the configuration cannot inject the webhook refuses: not stored.
            Err(_) => json!(null),
        }
    }
}

/// The fake cluster with `tag`'s ConfigMaps and `shop` (injection enabled) holding `pods`,
/// each stored through the fake's admission with `hook` as the webhook.
fn cluster(tag: &str, pods: &[Value], hook: &dyn Fn(&Value) -> Value) -> (FakeApi, usize) {
    let (config, values, mesh) = release(tag);
    let mut c = Cluster::default();
    c.put(kube_api::configmap(
        "istio-system",
        "istio-sidecar-injector",
        "1",
        &[("config", &config), ("values", &values)],
    ));
    c.put(kube_api::configmap(
        "istio-system",
        "istio",
        "1",
        &[("mesh", &mesh)],
    ));
    c.put(json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "shop", "labels": {"istio-injection": "enabled"}}}));
    let mut stored = 0;
    for pod in pods {
        let mut refused = false;
        store_admitted(&mut c, "shop", pod.clone(), |p| {
            let out = hook(p);
            refused = out.is_null();
            if refused {
                p.clone()
            } else {
                out
            }
        });
        if refused {
            let name = pod["metadata"]["name"].as_str().unwrap_or("");
            c.remove("pods", "shop", name);
        } else {
            stored += 1;
        }
    }
    (FakeApi::start(c), stored)
}

fn drift(api: &FakeApi, dir: &TempDir, native: bool) -> Vec<Value> {
    let kc = dir
        .write("kubeconfig", &kube_api::kubeconfig(api.port))
        .display()
        .to_string();
    let run = Inject::command("drift")
        .args(["--kube", "--kubeconfig", &kc, "-A", "-o", "json"])
        .args(["--native-sidecars", if native { "true" } else { "false" }])
        .run();
    assert!(
        matches!(run.code, Some(0 | 1)),
        "drift failed:\n{}",
        run.stderr
    );
    json_rows(&run.stdout)
}

fn snapshot(tag: &str) -> Snapshot {
    let (config, values, mesh) = release(tag);
    Snapshot::load(&config, &values, Some(&mesh)).expect("release settings")
}

/// Pods stored under the configuration that injected them are current (or rightly not
/// injected): no false positive, on each release, native sidecars on and off.
fn stored_pods_are_current_under_their_configuration() {
    let pods = corpus_pods();
    let mut failures = Vec::new();
    for tag in RELEASES {
        let s = snapshot(tag);
        for native in [false, true] {
            let (api, stored) = cluster(tag, &pods, &webhook(&s, native));
            let dir = TempDir::new(&format!("drift-stored-{tag}-{native}"));
            let rows = drift(&api, &dir, native);
            let drifted: Vec<&Value> = rows
                .iter()
                .filter(|r| !matches!(r["state"].as_str(), Some("current" | "not-injected")))
                .collect();
            let examined: usize = rows
                .iter()
                .map(|r| r["pods"].as_array().map_or(0, Vec::len))
                .sum();
            assert_eq!(
                examined, stored,
                "{tag} native {native}: every stored pod judged"
            );
            let current: usize = rows
                .iter()
                .filter(|r| r["state"] == "current")
                .map(|r| r["pods"].as_array().map_or(0, Vec::len))
                .sum();
            assert!(
                current * 2 > stored,
                "{tag} native {native}: {current} of {stored} current"
            );
            if !drifted.is_empty() {
                failures.push(format!(
                    "{tag} native {native}: false positives:\n{}",
                    serde_json::to_string_pretty(&drifted).unwrap_or_default()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The same pods injected with another proxy hub are stale by their images alone (cause
/// `proxy image`); injected in the other native-sidecar mode, stale with the proxy moved
/// (cause `native sidecars`).
fn truly_stale_pods_are_found_with_their_fields() {
    let pods = corpus_pods();
    for tag in RELEASES {
        let s = snapshot(tag);
        let mut old = s.clone();
        old.values["global"]["hub"] = json!("registry.example/old");
        old.values_facts = ValuesFacts::from_values(&old.values);
        let (api, _) = cluster(tag, &pods, &webhook(&old, false));
        let dir = TempDir::new(&format!("drift-stale-{tag}"));
        let rows = drift(&api, &dir, false);
        let stale: Vec<&Value> = rows.iter().filter(|r| r["state"] == "stale").collect();
        assert!(stale.len() > 10, "{tag}: {} stale groups", stale.len());
        for r in &stale {
            let fields = r["fields"].as_array().expect("fields");
            assert!(!fields.is_empty(), "{r}");
            for f in fields {
                let path = f["path"].as_str().unwrap_or("");
                assert!(
                    path.ends_with(".image") && f["cause"] == "proxy image",
                    "{tag}: {f}"
                );
                assert!(
                    f["actual"]
                        .as_str()
                        .is_some_and(|a| a.starts_with("registry.example/old")),
                    "{tag}: {f}"
                );
            }
        }

        let (api, _) = cluster(tag, &pods, &webhook(&s, false));
        let dir = TempDir::new(&format!("drift-native-{tag}"));
        let rows = drift(&api, &dir, true);
        let moved = rows.iter().filter(|r| {
            r["state"] == "stale"
                && r["fields"].as_array().is_some_and(|f| {
                    f.iter().any(|f| {
                        f["path"] == "spec.initContainers[istio-proxy]"
                            && f["cause"] == "native sidecars"
                    })
                })
        });
        assert!(
            moved.count() > 10,
            "{tag}: native sidecars expected, classic found"
        );
    }
}

fn main() {
    harness::run(trials![
        &[Need::Corpus] => [
            stored_pods_are_current_under_their_configuration,
            truly_stale_pods_are_found_with_their_fields,
        ],
    ]);
}
