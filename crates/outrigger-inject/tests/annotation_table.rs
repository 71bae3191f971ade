//! Every annotation Istio's templates and post-processing write is declared in the annotation
//! table (`kube::annotations`), as written by injection: over Istio's corpus, the annotations a
//! golden injected pod has and its input pod has not. A template or post-processing change that
//! writes a new annotation fails here until the table declares it (and so its validation,
//! re-injection and drift handling).
//!
//! Without the corpus a single ignored test says so; with `OUTRIGGER_REQUIRE_CORPUS=1` (CI) it
//! fails instead.

mod corpus;

use std::collections::BTreeSet;
use std::path::Path;

use libtest_mimic::{Failed, Trial};
use outrigger_inject::kube::annotations::{annotation, Writer};
use serde_json::Value;

/// (case, annotation, why): written by something other than Istio's own templates.
const NOT_ISTIOS: &[(&str, &str, &str)] = &[(
    "53_custom-template.yaml.injected",
    "foo",
    "the case's own custom template writes it",
)];

fn main() {
    corpus::run_suite("annotation_table", "the annotation table check", |root| {
        corpus::kube_inject_cases(root)
            .into_iter()
            .map(|(name, case)| {
                let root = root.to_path_buf();
                Trial::test(format!("annotation_table::{name}"), move || {
                    run(&root, &name, &case)
                })
            })
            .collect()
    })
}

/// The pods (objects with `spec.containers`) anywhere in `v`.
fn pods<'a>(v: &'a Value, out: &mut Vec<&'a Value>) {
    match v {
        Value::Object(m) => {
            if m.get("spec").and_then(|s| s.get("containers")).is_some() {
                out.push(v);
            } else {
                m.values().for_each(|x| pods(x, out));
            }
        }
        Value::Array(a) => a.iter().for_each(|x| pods(x, out)),
        _ => {}
    }
}

fn annotation_names(pod: &Value) -> BTreeSet<&str> {
    pod.pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|m| m.keys().map(String::as_str))
        .collect()
}

fn run(root: &Path, name: &str, case: &Value) -> Result<(), Failed> {
    let read = |key: &str| -> Result<Vec<Value>, Failed> {
        let path = root.join(case.get(key).and_then(Value::as_str).unwrap_or_default());
        let text = std::fs::read_to_string(&path)
            .map_err(|e| Failed::from(format!("{}: {e}", path.display())))?;
        corpus::load_docs(&text).map_err(Failed::from)
    };
    let (input, expected) = (read("input")?, read("expected")?);
    let (mut before, mut after) = (Vec::new(), Vec::new());
    input.iter().for_each(|d| pods(d, &mut before));
    expected.iter().for_each(|d| pods(d, &mut after));
    if before.len() != after.len() {
        return Err(format!("{} input pods, {} injected", before.len(), after.len()).into());
    }
    let mut undeclared = Vec::new();
    for (b, a) in before.iter().zip(&after) {
        let had = annotation_names(b);
        for written in annotation_names(a).difference(&had) {
            let declared = annotation(written).is_some_and(|r| r.writer != Writer::User);
            let excused = NOT_ISTIOS
                .iter()
                .any(|(c, n, _)| *c == name && n == written);
            if !declared && !excused {
                undeclared.push(*written);
            }
        }
    }
    if undeclared.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "written by injection but not declared as written by it in kube::annotations: {undeclared:?}"
        )
        .into())
    }
}
