//! Istio's own golden injection cases, run in process.
//!
//! Reads the corpus in place from `../shared/conformance/istio` (never copied into the repo). Each
//! case is its own test (libtest-mimic harness), so `cargo test` reports them one by one; when the
//! corpus is absent a single ignored test says so in the summary (`1 ignored`), and with
//! `OUTRIGGER_REQUIRE_CORPUS=1` (set by CI) that test fails instead. Comparison follows the corpus' `check.py`:
//! both sides parsed as multi-document YAML, the status annotation's `version` blanked and the
//! annotation compared as parsed JSON, keys whose value is null, `{}` or `[]` deleted recursively.

use std::path::{Path, PathBuf};

use libtest_mimic::{Arguments, Failed, Trial};

use outrigger_inject::config::{InjectorConfig, Snapshot};
use outrigger_inject::kube_inject::{self, KubeInjectOptions};
use outrigger_inject::yaml;
use serde_json::{Map, Value};

/// Cases known not to pass yet, with the reason. Every other case must pass.
const KNOWN_FAILURES: &[(&str, &str)] = &[];

/// `../shared/conformance/istio` beside the checkout, or `$OUTRIGGER_SHARED/conformance/istio`.
fn corpus() -> Option<PathBuf> {
    let shared = std::env::var_os("OUTRIGGER_SHARED").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared"),
        PathBuf::from,
    );
    let p = shared.join("conformance/istio");
    p.join("cases.json").exists().then_some(p)
}

fn normalise(v: Value, key: Option<&str>) -> Value {
    match v {
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, x) in m {
                let x = if k == "sidecar.istio.io/status" {
                    match x
                        .as_str()
                        .and_then(|s| serde_json::from_str::<Value>(s).ok())
                    {
                        Some(Value::Object(mut js)) => {
                            if js.contains_key("version") {
                                js.insert("version".into(), Value::String(String::new()));
                            }
                            let mut wrap = Map::new();
                            wrap.insert("<json>".into(), Value::Object(js));
                            Value::Object(wrap)
                        }
                        _ => x,
                    }
                } else {
                    x
                };
                let x = normalise(x, Some(&k));
                let empty = matches!(&x, Value::Null)
                    || x.as_object().is_some_and(Map::is_empty)
                    || x.as_array().is_some_and(Vec::is_empty);
                if !empty {
                    out.insert(k, x);
                }
            }
            let _ = key;
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.into_iter().map(|x| normalise(x, None)).collect()),
        other => other,
    }
}

fn load_docs(text: &str) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    for d in yaml::split_documents(text).map_err(|e| e.to_string())? {
        let v = yaml::from_str(&d).map_err(|e| e.to_string())?;
        if !v.is_null() {
            out.push(normalise(v, None));
        }
    }
    Ok(out)
}

fn first_diff(want: &Value, got: &Value, path: &str) -> Option<String> {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            for k in w.keys().chain(g.keys().filter(|k| !w.contains_key(*k))) {
                let p = format!("{path}.{k}");
                match (w.get(k), g.get(k)) {
                    (Some(a), Some(b)) => {
                        if let Some(d) = first_diff(a, b, &p) {
                            return Some(d);
                        }
                    }
                    (a, b) => return Some(format!("{p}: want {a:?} got {b:?}")),
                }
            }
            None
        }
        (Value::Array(w), Value::Array(g)) => {
            for i in 0..w.len().max(g.len()) {
                let p = format!("{path}[{i}]");
                match (w.get(i), g.get(i)) {
                    (Some(a), Some(b)) => {
                        if let Some(d) = first_diff(a, b, &p) {
                            return Some(d);
                        }
                    }
                    (a, b) => return Some(format!("{p}: want {a:?} got {b:?}")),
                }
            }
            None
        }
        (Value::Number(a), Value::Number(b)) if a.as_f64() == b.as_f64() => None,
        _ if want == got => None,
        _ => Some(format!("{path}: want {want} got {got}")),
    }
}

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
    let compliance = env
        .and_then(|e| e.get("COMPLIANCE_POLICY"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let opts = KubeInjectOptions {
        snapshot: &snapshot,
        native_sidecars: c
            .get("native_sidecars")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        revision: "",
        compliance_policy: compliance,
    };
    let input = read(&root.join(s("input")))?;
    let result = kube_inject::inject_manifests(&input, &opts);
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
    Ok(())
}

fn main() {
    let args = Arguments::from_args();
    let trials = match corpus() {
        Some(root) => trials(&root),
        None => {
            let required = std::env::var("OUTRIGGER_REQUIRE_CORPUS").is_ok_and(|v| v == "1");
            let name = "istio_golden_cases::corpus_absent_see_README";
            if required {
                vec![Trial::test(name, || {
                    Err(Failed::from(
                        "../shared/conformance/istio is required (OUTRIGGER_REQUIRE_CORPUS=1) \
                         but absent",
                    ))
                })]
            } else {
                eprintln!(
                    "NOTICE: ../shared/conformance/istio not found; Istio conformance cases \
                     not run (shown as 1 ignored test)"
                );
                vec![Trial::test(name, || Ok(())).with_ignored_flag(true)]
            }
        }
    };
    libtest_mimic::run(&args, trials).exit();
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
