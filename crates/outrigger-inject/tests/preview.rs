//! `outrigger preview`'s engine on Istio's corpus: every kube-inject input, its case's settings
//! as the configuration in force, each release's chart settings (`releases/<tag>/`) as the
//! candidate. Every change the preview reports is a real difference between the two injections
//! (its pointers lead to its two values, which differ), it reports none exactly when the two
//! injected pods are equal, and a configuration previewed against itself changes nothing.
//!
//! Each (case, release) is its own test. Without the corpus a single ignored test says so; with
//! `OUTRIGGER_REQUIRE_CORPUS=1` (CI) it fails instead.

mod corpus;

use std::path::Path;
use std::sync::Arc;

use libtest_mimic::{Failed, Trial};
use outrigger_go::yaml;
use outrigger_inject::config::{InjectorConfig, Snapshot};
use outrigger_inject::inject::Settings;
use outrigger_inject::kube_inject::{self, KubeInjectOptions};
use outrigger_inject::preview::preview_pod;
use serde_json::Value;

/// The injector settings of the last three Istio minors.
const RELEASES: [&str; 3] = ["1.24.6", "1.26.8", "1.28.10"];

fn snapshot(dir: &Path, mesh: &Path) -> Result<Snapshot, String> {
    let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()));
    let config = InjectorConfig::parse_for_kube_inject(&read(&dir.join("config.yaml"))?)
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    Snapshot::with_config(config, &read(&dir.join("values.json"))?, Some(&read(mesh)?))
        .map_err(|e| format!("{}: {e}", dir.display()))
}

fn run(root: &Path, c: &Value, release: &str) -> Result<(), String> {
    let s = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("");
    let settings = root.join(s("settings"));
    let mesh = |dir: &Path| match c.get("mesh_override").and_then(Value::as_str) {
        Some(m) => root.join(m),
        None => dir.join("mesh.yaml"),
    };
    let current = snapshot(&settings, &mesh(&settings))?;
    let rel = root.join("releases").join(release);
    let candidate = snapshot(&rel, &mesh(&rel))?;
    let compliance = c
        .pointer("/env/COMPLIANCE_POLICY")
        .and_then(Value::as_str)
        .unwrap_or("");
    let native = c.get("native_sidecars").and_then(Value::as_bool) == Some(true);
    let opts = |snapshot| KubeInjectOptions {
        settings: Settings {
            snapshot,
            native_sidecars: native,
            revision: "",
            compliance_policy: compliance,
        },
        reinject: false,
    };
    let (cur, cand) = (opts(&current), opts(&candidate));
    let input = std::fs::read_to_string(root.join(s("input"))).map_err(|e| e.to_string())?;
    for raw in yaml::split_documents(&input).map_err(|e| e.to_string())? {
        let doc = yaml::from_str(&raw).map_err(|e| e.to_string())?;
        if doc.is_null() {
            continue;
        }
        for t in kube_inject::pod_templates(doc).map_err(|e| e.to_string())? {
            let wanted = kube_inject::skip_reason(&t.pod).is_none();
            let pc = kube_inject::inject_params(&cur, t.workload.clone());
            let pn = kube_inject::inject_params(&cand, t.workload.clone());
            let p = preview_pod(&t.pod, (&pc, wanted), (&pn, wanted));
            let (Some(a), Some(b)) = (p.current.pod(), p.candidate.pod()) else {
                // A failure is reported as such, never as changes.
                if !p.changes.is_empty() {
                    return Err("changes reported beside a failed injection".into());
                }
                continue;
            };
            if p.changes.is_empty() != (a == b) {
                return Err(format!(
                    "{} changes reported but the injections are {}",
                    p.changes.len(),
                    if a == b { "equal" } else { "different" }
                ));
            }
            for ch in &p.changes {
                let at = |pod: &Value, ptr: &Option<String>| {
                    ptr.as_ref().and_then(|ptr| pod.pointer(ptr)).cloned()
                };
                if at(a, &ch.current_pointer) != ch.current
                    || at(b, &ch.candidate_pointer) != ch.candidate
                {
                    return Err(format!("{}: the values are not the pods'", ch.path));
                }
                if ch.current == ch.candidate {
                    return Err(format!("{}: reported but equal", ch.path));
                }
            }
            let same = preview_pod(&t.pod, (&pc, wanted), (&pc, wanted));
            if !same.changes.is_empty() {
                return Err(format!(
                    "the configuration in force against itself: {:?}",
                    same.changes
                ));
            }
        }
    }
    Ok(())
}

fn main() {
    corpus::run_suite("preview", "preview cases", trials)
}

/// One trial per kube-inject case without an expected error and release.
fn trials(root: &Path) -> Vec<Trial> {
    let mut out = Vec::new();
    for (name, c) in corpus::kube_inject_cases(root) {
        let c = Arc::new(c);
        for release in RELEASES {
            let (root, c) = (root.to_path_buf(), c.clone());
            out.push(Trial::test(
                format!("preview::{name}::{release}"),
                move || run(&root, &c, release).map_err(Failed::from),
            ));
        }
    }
    out
}
