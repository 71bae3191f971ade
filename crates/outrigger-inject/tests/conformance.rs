//! Istio's own golden injection cases, run in process.
//!
//! Reads the corpus in place from `../shared/conformance/istio` (never copied into the repo). Each
//! case is its own test (libtest-mimic harness), so `cargo test` reports them one by one; when the
//! corpus is absent a single ignored test says so in the summary (`1 ignored`), and with
//! `OUTRIGGER_REQUIRE_CORPUS=1` (set by CI) that test fails instead. Two comparisons, both
//! required: the output **byte for byte** against the golden file (as Istio's own test compares
//! its output, after `StripVersion`: a status annotation's leading `"version":"<hex>"` blanked),
//! and, for a readable report of what differs, the corpus' `check.py` way: both sides parsed as
//! multi-document YAML, the status annotation compared as parsed JSON, keys whose value is null,
//! `{}` or `[]` deleted recursively.

mod corpus;

use std::path::Path;

use libtest_mimic::{Failed, Trial};

use corpus::{first_diff, load_docs, normalise};
use outrigger_go::yaml;
use outrigger_inject::config::{InjectorConfig, Snapshot};
use outrigger_inject::inject::Settings;
use outrigger_inject::kube_inject::{self, KubeInjectOptions};
use serde_json::Value;

/// Cases known not to pass yet, with the reason. Every other case must pass.
const KNOWN_FAILURES: &[(&str, &str)] = &[];

/// Cases whose golden pod template the API server refuses (Istio writes it; the API server's
/// pod validation would not store it): injection writes the golden as istioctl does, with a
/// warning naming the rule: (case, the API server's field error).
const REFUSED: &[(&str, &str)] = &[(
    "69_sidecar-spire.yaml.injected",
    "spec.initContainers[1].name: Duplicate value: \"istio-proxy\" (validateInitContainers)",
)];

fn run_case(root: &Path, c: &Value) -> Result<(), String> {
    let s = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("");
    let settings = root.join(s("settings"));
    let mesh_path = match c.get("mesh_override").and_then(Value::as_str) {
        Some(m) => root.join(m),
        None => settings.join("mesh.yaml"),
    };
    let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()));
    let config = InjectorConfig::parse_for_kube_inject(&read(&settings.join("config.yaml"))?)
        .map_err(|e| format!("config: {e}"))?;
    let snapshot = Snapshot::with_config(
        config,
        &read(&settings.join("values.json"))?,
        Some(&read(&mesh_path)?),
    )
    .map_err(|e| format!("snapshot: {e}"))?;
    let env = c.get("env").and_then(Value::as_object);
    // The case's environment is what the templates' `env` reads (istioctl reads its own).
    let snapshot = snapshot.with_template_env(
        env.into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
            .collect(),
    );
    let compliance = env
        .and_then(|e| e.get("COMPLIANCE_POLICY"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let opts = KubeInjectOptions {
        settings: Settings {
            snapshot: &snapshot,
            native_sidecars: c
                .get("native_sidecars")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            revision: "",
            compliance_policy: compliance,
        },
        reinject: false,
    };
    let input = read(&root.join(s("input")))?;
    let result = kube_inject::inject_manifests(&input, &opts);
    if let Some((_, rule)) = REFUSED.iter().find(|(n, _)| *n == s("name")) {
        match &result {
            Ok(out) if out.warnings.iter().any(|w| w.contains(rule)) => {}
            Ok(out) => return Err(format!("no warning naming {rule:?}: {:?}", out.warnings)),
            Err(e) => return Err(format!("expected the golden with a warning, got: {e}")),
        }
    }
    if let Some(expected) = c.get("expected_error").and_then(Value::as_str) {
        return match result {
            Ok(_) => Err(format!(
                "expected an error containing {expected:?}, injection succeeded"
            )),
            Err(e)
                if e.to_string()
                    .to_lowercase()
                    .contains(&expected.to_lowercase()) =>
            {
                Ok(())
            }
            Err(e) => Err(format!("error lacks {expected:?}: {e}")),
        };
    }
    let out = result.map_err(|e| format!("injection failed: {e}"))?;
    // The same manifests twice more on the same snapshot: the third time, template renders are
    // answered from the snapshot's memo (a render is remembered on its second sighting), which
    // must change nothing.
    let _ = kube_inject::inject_manifests(&input, &opts);
    let again = kube_inject::inject_manifests(&input, &opts)
        .map_err(|e| format!("third injection (render memo) failed: {e}"))?;
    let afters = |o: &kube_inject::KubeInjectOutput| -> Vec<Option<Value>> {
        o.changes
            .iter()
            .map(|c| c.before_after.as_ref().map(|(_, a)| a.clone()))
            .collect()
    };
    if afters(&again) != afters(&out) || again.warnings != out.warnings {
        return Err("third injection (render memo) differs from the first".into());
    }
    if let Some(log) = c.get("expected_log").and_then(Value::as_str) {
        if !out.warnings.iter().any(|w| w.contains(log)) {
            return Err(format!(
                "expected warning {log:?} not produced: {:?}",
                out.warnings
            ));
        }
    }
    let want = load_docs(&read(&root.join(s("expected")))?).map_err(|e| format!("golden: {e}"))?;
    // The pipeline's documents as produced (the emitted text is checked by check.py in CI and by
    // the YAML emitter's own golden tests); pass-through documents are read from the input.
    let raw_docs = yaml::split_documents(&input).map_err(|e| e.to_string())?;
    let mut got = Vec::new();
    for ch in &out.changes {
        let doc = match &ch.before_after {
            Some((_, after)) => after.clone(),
            None => yaml::from_str(&raw_docs[ch.index]).map_err(|e| e.to_string())?,
        };
        got.push(normalise(doc, None));
    }
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
    let golden = read(&root.join(s("expected")))?;
    let text = strip_version(&out.text);
    if text != golden {
        return Err(format!(
            "output differs from the golden file byte for byte: {}",
            first_text_diff(&golden, &text)
        ));
    }
    Ok(())
}

/// Istio's `StripVersion` (pilot/test/util): the status annotation's leading
/// `"version":"<hex>"` written as `"version":""`.
fn strip_version(text: &str) -> String {
    const KEY: &str = "sidecar.istio.io/status: '{\"version\":\"";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(KEY) {
        out.push_str(&rest[..i + KEY.len()]);
        rest = &rest[i + KEY.len()..];
        let hex = rest.bytes().take_while(u8::is_ascii_hexdigit).count();
        if hex > 0 && rest[hex..].starts_with("\",") {
            rest = &rest[hex..];
        }
    }
    out.push_str(rest);
    out
}

/// The first line where two texts differ, both sides shown.
fn first_text_diff(want: &str, got: &str) -> String {
    let (w, g): (Vec<&str>, Vec<&str>) = (want.split('\n').collect(), got.split('\n').collect());
    for i in 0..w.len().max(g.len()) {
        let (a, b) = (w.get(i), g.get(i));
        if a != b {
            return format!("line {}: want {:?}, got {:?}", i + 1, a, b);
        }
    }
    "same lines".into()
}

fn main() {
    corpus::run_suite("istio_golden_cases", "Istio conformance cases", trials)
}

/// One trial per kube-inject case of the corpus; cases listed in [`KNOWN_FAILURES`] are ignored
/// with their reason in the name.
fn trials(root: &Path) -> Vec<Trial> {
    let cases: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(root.join("cases.json")).expect("cases.json"),
    )
    .expect("cases.json");
    cases
        .into_iter()
        .filter(|c| c.get("kube_inject").and_then(Value::as_bool) == Some(true))
        .map(|c| {
            let name = c
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_owned();
            let known = KNOWN_FAILURES.iter().find(|(n, _)| *n == name);
            let root = root.to_path_buf();
            let trial = Trial::test(format!("istio_golden_cases::{name}"), move || {
                run_case(&root, &c).map_err(Failed::from)
            });
            match known {
                Some((_, why)) => trial.with_ignored_flag(true).with_kind(*why),
                None => trial,
            }
        })
        .collect()
}
