//! Istio's conformance corpus, read in place from `../shared/conformance/istio`, and the
//! comparison the corpus' `check.py` makes: documents parsed as YAML, the status annotation's
//! `version` blanked and the annotation compared as parsed JSON, keys whose value is null, `{}`
//! or `[]` deleted recursively.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use libtest_mimic::{Failed, Trial};
use outrigger_inject::yaml;
use serde_json::{Map, Value};

/// Where Istio's conformance corpus is looked for: `OUTRIGGER_CORPUS` when set (a checkout whose
/// `../shared` is elsewhere, such as a git worktree), else `../shared/conformance/istio` beside
/// the workspace (whether it is there or not).
pub fn corpus_dir() -> PathBuf {
    match std::env::var_os("OUTRIGGER_CORPUS") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/conformance/istio"),
    }
}

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

/// The one trial of a corpus suite (`suite::corpus_absent_see_README`) when the corpus is absent:
/// ignored, with a notice naming `what` was not run, or failing when `OUTRIGGER_REQUIRE_CORPUS=1`
/// (CI).
pub fn absent_trial(suite: &str, what: &str) -> Trial {
    let name = format!("{suite}::corpus_absent_see_README");
    if std::env::var("OUTRIGGER_REQUIRE_CORPUS").is_ok_and(|v| v == "1") {
        return Trial::test(name, || {
            Err(Failed::from(
                "../shared/conformance/istio is required (OUTRIGGER_REQUIRE_CORPUS=1) but absent",
            ))
        });
    }
    eprintln!(
        "NOTICE: ../shared/conformance/istio not found (OUTRIGGER_CORPUS unset); {what} not run \
         (shown as 1 ignored test)"
    );
    Trial::test(name, || Ok(())).with_ignored_flag(true)
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
