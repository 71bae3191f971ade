//! Istio's conformance corpus, read in place from `../shared/conformance/istio`, and the
//! comparison the corpus' `check.py` makes: documents parsed as YAML, the status annotation's
//! `version` blanked and the annotation compared as parsed JSON, keys whose value is null, `{}`
//! or `[]` deleted recursively.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use libtest_mimic::Trial;
use outrigger_go::yaml;
use serde_json::{Map, Value};

/// The rule for "absent" and "required", shared with the harness (`tests/harness/absent.rs`).
// A test binary may take this file through more than one of the helpers that share it.
#[allow(clippy::duplicate_mod)]
#[path = "../../../outrigger-go/tests/harness/absent.rs"]
mod absent;

pub use absent::corpus_dir;

/// The corpus directory ([`corpus_dir`]), when it is there.
pub fn corpus() -> Option<PathBuf> {
    let p = corpus_dir();
    p.join("cases.json").exists().then_some(p)
}

/// A document as `check.py` compares it.
pub fn normalise(v: Value, key: Option<&str>) -> Value {
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

/// The non-null documents of a stream, normalised.
pub fn load_docs(text: &str) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    for d in yaml::split_documents(text).map_err(|e| e.to_string())? {
        let v = yaml::from_str(&d).map_err(|e| e.to_string())?;
        if !v.is_null() {
            out.push(normalise(v, None));
        }
    }
    Ok(out)
}

/// Where two normalised documents first differ (`.path: want ... got ...`).
pub fn first_diff(want: &Value, got: &Value, path: &str) -> Option<String> {
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

/// The one trial of a corpus suite (`suite::corpus_absent`) when the corpus is absent: ignored
/// with the reason (naming `what` was not run), or failing where the corpus is required (CI),
/// by the harness' one rule.
pub fn absent_trial(suite: &str, what: &'static str) -> Trial {
    absent::trial(
        &format!("{suite}::corpus_absent"),
        move || {
            absent::corpus().map(|m| absent::Missing {
                why: format!("{}; {what} not run", m.why),
                ..m
            })
        },
        || {},
    )
}

/// The `main` of a suite over the corpus: `trials` of the corpus when it is there, else one
/// trial that says it is absent ([`absent_trial`]), run by libtest-mimic with the command line's
/// arguments.
pub fn run_suite(suite: &str, what: &'static str, trials: impl FnOnce(&Path) -> Vec<Trial>) -> ! {
    let args = libtest_mimic::Arguments::from_args();
    let trials = match corpus() {
        Some(root) => trials(&root),
        None => vec![absent_trial(suite, what)],
    };
    libtest_mimic::run(&args, trials).exit()
}

/// The corpus cases `istioctl kube-inject` runs without an expected error, from `cases.json`,
/// with their names.
pub fn kube_inject_cases(root: &Path) -> Vec<(String, Value)> {
    let cases: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(root.join("cases.json")).expect("cases.json"),
    )
    .expect("cases.json");
    cases
        .into_iter()
        .filter(|c| {
            c.get("kube_inject").and_then(Value::as_bool) == Some(true)
                && c.get("expected_error").is_none_or(Value::is_null)
        })
        .map(|c| {
            let name = c
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_owned();
            (name, c)
        })
        .collect()
}
