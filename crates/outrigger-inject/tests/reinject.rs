//! `inject --reinject` on Istio's corpus: re-injecting with configuration B what configuration A
//! injected equals injecting the original with B, for every kube-inject case of the corpus and
//! every pair (A, B) of the injector settings of the last three Istio minors
//! (`releases/<tag>/` of the corpus, rendered from each release's chart).
//!
//! The drift engine is checked on the same pairs: every pod A injected is current under A (no
//! false positive), and under B current exactly when B injects the original into the same pod,
//! stale otherwise.
//!
//! Each (case, A, B) is its own test. Without the corpus a single ignored test says so; with
//! `OUTRIGGER_REQUIRE_CORPUS=1` (CI) it fails instead. `OUTRIGGER_CORPUS` points at the corpus
//! when `../shared` is not beside the workspace.

mod corpus;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use corpus::{first_diff, load_docs};
use libtest_mimic::{Failed, Trial};
use outrigger_go::yaml;
use outrigger_inject::config::{InjectorConfig, Snapshot};
use outrigger_inject::drift::{pod_drift, State};
use outrigger_inject::inject::Settings;
use outrigger_inject::kube_inject::{self, KubeInjectOptions};
use serde_json::Value;

/// The injector settings of the last three Istio minors, oldest first.
const RELEASES: [&str; 3] = ["1.24.6", "1.26.8", "1.28.10"];

/// (case, release on either side or `None` for any, reason): where re-injection cannot equal a
/// fresh injection. They run as ignored tests, with the reason.
const NOT_FIXED_POINTS: &[(&str, Option<&str>, &str)] = &[
    (
        "56_merge-probers.yaml.injected",
        None,
        "the input is itself a pod injected by an older istiod: its fresh injection is Istio's \
         re-injection, which keeps that sidecar's args and env, while --reinject removes them",
    ),
    (
        "98_init-no-intercept-no-native-sidecar.yaml.injected",
        Some("1.24.6"),
        "Istio 1.24's template drops the pod's own init containers under interceptionMode NONE \
         without native sidecars: what injection deleted cannot be recovered, and drift compares \
         only what injection owns, not the application's own init containers",
    ),
];

/// Snapshots by (release, mesh file), built once and shared by the trials.
type Snapshots = Arc<Mutex<HashMap<(String, PathBuf), Arc<Snapshot>>>>;

fn snapshot(
    root: &Path,
    cache: &Snapshots,
    release: &str,
    mesh: &Path,
) -> Result<Arc<Snapshot>, String> {
    let key = (release.to_string(), mesh.to_path_buf());
    if let Some(s) = cache.lock().expect("cache").get(&key) {
        return Ok(s.clone());
    }
    let dir = root.join("releases").join(release);
    let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()));
    let config = InjectorConfig::parse_for_kube_inject(&read(&dir.join("config.yaml"))?)
        .map_err(|e| format!("{release} config: {e}"))?;
    let s = Snapshot::with_config(config, &read(&dir.join("values.json"))?, Some(&read(mesh)?))
        .map_err(|e| format!("{release} snapshot: {e}"))?;
    let s = Arc::new(s);
    cache.lock().expect("cache").insert(key, s.clone());
    Ok(s)
}

fn run(root: &Path, cache: &Snapshots, c: &Value, a: &str, b: &str) -> Result<(), String> {
    let s = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("");
    let mesh_for = |release: &str| match c.get("mesh_override").and_then(Value::as_str) {
        Some(m) => root.join(m),
        None => root.join("releases").join(release).join("mesh.yaml"),
    };
    let compliance = c
        .pointer("/env/COMPLIANCE_POLICY")
        .and_then(Value::as_str)
        .unwrap_or("");
    let native = c.get("native_sidecars").and_then(Value::as_bool) == Some(true);
    let (sa, sb) = (
        snapshot(root, cache, a, &mesh_for(a))?,
        snapshot(root, cache, b, &mesh_for(b))?,
    );
    let opts = |snapshot, reinject| KubeInjectOptions {
        settings: Settings {
            snapshot,
            native_sidecars: native,
            revision: "",
            compliance_policy: compliance,
        },
        reinject,
    };
    let input = std::fs::read_to_string(root.join(s("input"))).map_err(|e| e.to_string())?;
    let fresh_b = kube_inject::inject_manifests(&input, &opts(&sb, false));
    let injected_a = match kube_inject::inject_manifests(&input, &opts(&sa, false)) {
        Ok(out) => out,
        // Nothing injected with A, nothing to re-inject: the same error with B is all we ask.
        Err(ea) => {
            return match fresh_b {
                Err(_) => Ok(()),
                Ok(_) => Err(format!("injection with {a} failed but not with {b}: {ea}")),
            };
        }
    };
    if let Ok(fresh) = &fresh_b {
        check_drift(&injected_a.text, &injected_a.text, &opts(&sa, false))
            .map_err(|e| format!("drift under {a} of what {a} injected: {e}"))?;
        check_drift(&injected_a.text, &fresh.text, &opts(&sb, false))
            .map_err(|e| format!("drift under {b} of what {a} injected: {e}"))?;
    }
    let reinjected = kube_inject::inject_manifests(&injected_a.text, &opts(&sb, true));
    let (want, got) = match (fresh_b, reinjected) {
        (Ok(w), Ok(g)) => (w, g),
        (Err(e), Ok(_)) => {
            return Err(format!(
                "fresh injection with {b} failed ({e}), re-injection did not"
            ))
        }
        (Ok(_), Err(e)) => return Err(format!("re-injection failed: {e}")),
        (Err(_), Err(_)) => return Ok(()),
    };
    let want = load_docs(&want.text)?;
    let got = load_docs(&got.text)?;
    if want.len() != got.len() {
        return Err(format!(
            "document count: want {} got {}",
            want.len(),
            got.len()
        ));
    }
    for (i, (w, g)) in want.iter().zip(&got).enumerate() {
        if let Some(d) = first_diff(w, g, "") {
            return Err(format!("[doc {i}] {d}"));
        }
    }
    Ok(())
}

/// The pod templates of a kube-inject output, document by document.
fn templates(text: &str) -> Result<Vec<kube_inject::PodTemplate>, String> {
    let mut out = Vec::new();
    for (i, raw) in yaml::split_documents(text)
        .map_err(|e| e.to_string())?
        .into_iter()
        .enumerate()
    {
        let doc = yaml::from_str(&raw).map_err(|e| e.to_string())?;
        if !doc.is_null() {
            out.extend(kube_inject::pod_templates(doc).map_err(|e| format!("doc {i}: {e}"))?);
        }
    }
    Ok(out)
}

/// Drift under `opts` of every pod template of `text` (kube-inject output): a pod kube-inject
/// does not inject is `not-injected`; one it injects is current when it equals the pod at the
/// same place of `fresh` (what `opts` injects into the original), stale otherwise.
fn check_drift(text: &str, fresh: &str, opts: &KubeInjectOptions<'_>) -> Result<(), String> {
    let (got, fresh) = (templates(text)?, templates(fresh)?);
    if got.len() != fresh.len() {
        return Err(format!(
            "{} pod templates, {} in the fresh injection",
            got.len(),
            fresh.len()
        ));
    }
    for (i, (t, f)) in got.into_iter().zip(fresh).enumerate() {
        let wanted = kube_inject::skip_reason(&t.pod).is_none();
        let want = match (wanted, t.pod == f.pod) {
            (false, _) => State::NotInjected,
            (true, true) => State::Current,
            (true, false) => State::Stale,
        };
        let params = kube_inject::inject_params(opts, t.workload);
        let d = pod_drift(&t.pod, &params, wanted).map_err(|e| format!("pod {i}: {e}"))?;
        if d.state != want {
            return Err(format!(
                "pod {i} {}: {} instead of {}: {:?}",
                t.item,
                d.state.as_str(),
                want.as_str(),
                d.fields.iter().take(3).collect::<Vec<_>>()
            ));
        }
    }
    Ok(())
}

fn main() {
    corpus::run_suite("reinject", "re-injection and drift cases", trials)
}

/// One trial per kube-inject case without an expected error and pair of releases.
fn trials(root: &Path) -> Vec<Trial> {
    let cache: Snapshots = Arc::default();
    let mut out = Vec::new();
    for (name, c) in corpus::kube_inject_cases(root) {
        let c = Arc::new(c);
        for a in RELEASES {
            for b in RELEASES {
                let (root, cache, c) = (root.to_path_buf(), cache.clone(), c.clone());
                let trial = Trial::test(format!("reinject::{name}::{a}->{b}"), move || {
                    run(&root, &cache, &c, a, b).map_err(Failed::from)
                });
                let known = NOT_FIXED_POINTS
                    .iter()
                    .find(|(n, with, _)| *n == name && with.is_none_or(|r| r == a || r == b));
                out.push(match known {
                    Some((_, _, why)) => trial.with_ignored_flag(true).with_kind(*why),
                    None => trial,
                });
            }
        }
    }
    out
}
