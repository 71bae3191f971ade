//! The webhook's `matchConditions` ([`decide::match_conditions`]) evaluated by a CEL
//! implementation (the `cel` crate, cel-rust) against the library's decision: they must never
//! keep from the injector a pod it would inject, and they filter out exactly the pods that no
//! configuration injects (host network, ignored namespaces, `sidecar.istio.io/inject: "false"`).
//! Every expression must evaluate to a boolean, without error, on every object (an error applies
//! the failure policy).
//!
//! Pods: every pod template of the Istio corpus' inputs (`OUTRIGGER_CORPUS` or `../shared`; a
//! notice without it, a failure with `OUTRIGGER_REQUIRE_CORPUS=1`) in several namespaces, and
//! generated pods (fixed seed) over the fields the decision reads.

mod corpus;
mod inputs;

use cel::{Context, Program};
use inputs::XorShift;
use libtest_mimic::{Arguments, Failed, Trial};
use outrigger_go::yaml;
use outrigger_inject::config::Policy;
use outrigger_inject::decide::match_conditions::match_conditions;
use outrigger_inject::decide::{inject_required, Decision};
use outrigger_inject::ingest::workload::{is_supported_kind, template_pointers};
use serde_json::{json, Map, Value};

const NAMESPACES: [&str; 6] = [
    "default",
    "apps",
    "kube-system",
    "kube-public",
    "kube-node-lease",
    "local-path-storage",
];

/// All conditions true (the API server calls the webhook), or the first evaluation problem.
fn admitted(programs: &[(String, Program)], pod: &Value, namespace: &str) -> Result<bool, String> {
    let mut ctx = Context::default();
    let object = cel::to_value(pod).map_err(|e| format!("object: {e}"))?;
    ctx.add_variable_from_value("object", object);
    let request = cel::to_value(json!({"namespace": namespace, "operation": "CREATE"}))
        .map_err(|e| format!("request: {e}"))?;
    ctx.add_variable_from_value("request", request);
    let mut all = true;
    for (name, p) in programs {
        match p.execute(&ctx) {
            Ok(cel::Value::Bool(b)) => all &= b,
            Ok(other) => return Err(format!("{name}: not a boolean: {other:?}")),
            Err(e) => return Err(format!("{name}: {e}")),
        }
    }
    Ok(all)
}

fn programs() -> Vec<(String, Program)> {
    match_conditions()
        .into_iter()
        .map(|c| {
            let p = Program::compile(&c.expression)
                .unwrap_or_else(|e| panic!("{}: {e}\n{}", c.name, c.expression));
            (c.name.to_string(), p)
        })
        .collect()
}

/// The library's decision for `pod` arriving in `namespace` (the webhook fills an empty
/// namespace from the request), under `policy` with no selectors.
fn decision(pod: &Value, namespace: &str, policy: &Policy) -> Decision {
    let mut pod = pod.clone();
    if let Some(meta) = pod.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("namespace".into(), json!(namespace));
    } else if let Some(p) = pod.as_object_mut() {
        p.insert("metadata".into(), json!({"namespace": namespace}));
    }
    inject_required(&pod, policy, &[], &[])
}

/// Compare one pod in one namespace; `Err` describes a disagreement.
fn check(programs: &[(String, Program)], pod: &Value, namespace: &str) -> Result<(), String> {
    let admitted = admitted(programs, pod, namespace)?;
    let permissive = decision(pod, namespace, &Policy::Enabled);
    if !admitted && permissive.inject {
        return Err(format!(
            "filtered out a pod the injector injects ({}) in {namespace}: {pod}",
            permissive.reason.code()
        ));
    }
    if admitted && !permissive.inject {
        return Err(format!(
            "sent a pod no configuration injects ({}) in {namespace}: {pod}",
            permissive.reason.code()
        ));
    }
    // Under any policy a filtered-out pod is not injected.
    for policy in [Policy::Disabled, Policy::Invalid("x".into())] {
        if !admitted && decision(pod, namespace, &policy).inject {
            return Err(format!(
                "filtered out a pod injected under {policy:?}: {pod}"
            ));
        }
    }
    Ok(())
}

/// The pod templates of every supported document of the corpus' inputs.
fn corpus_pods() -> Option<Vec<(String, Value)>> {
    let root = corpus::corpus()?;
    let mut out = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(root.join("cases"))
        .expect("cases")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    for path in files {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let Ok(docs) = yaml::split_documents(&text) else {
            continue;
        };
        for d in docs {
            let Ok(doc) = yaml::from_str(&d) else {
                continue;
            };
            let kind = doc.get("kind").and_then(Value::as_str).unwrap_or("");
            let items = if kind == "List" {
                doc.get("items")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default()
            } else {
                vec![doc.clone()]
            };
            for item in items {
                let kind = item.get("kind").and_then(Value::as_str).unwrap_or("");
                if !is_supported_kind(kind) || kind == "List" {
                    continue;
                }
                let (meta, spec) = template_pointers(kind);
                let mut pod = Map::new();
                for (k, ptr) in [("metadata", meta), ("spec", spec)] {
                    if let Some(v) = item.pointer(ptr) {
                        pod.insert(k.into(), v.clone());
                    }
                }
                out.push((path.display().to_string(), Value::Object(pod)));
            }
        }
    }
    Some(out)
}

fn corpus_pods_are_filtered_out_only_when_never_injected(
    pods: &[(String, Value)],
) -> Result<(), Failed> {
    if pods.len() <= 50 {
        return Err(format!("only {} pods in the corpus", pods.len()).into());
    }
    let programs = programs();
    let mut filtered = 0;
    for (file, pod) in pods {
        for ns in NAMESPACES {
            check(&programs, pod, ns).map_err(|e| format!("{file}: {e}"))?;
            filtered += usize::from(!admitted(&programs, pod, ns)?);
        }
    }
    // The corpus has host-network and opted-out pods besides the ignored namespaces.
    if filtered <= pods.len() * 4 {
        return Err(format!("{filtered} filtered of {}", pods.len() * 6).into());
    }
    Ok(())
}

/// A generated pod over what the decision reads, in every shape the API server can send: maps
/// absent or present, the inject key on the label, the annotation, both or neither, with valid,
/// invalid and differently cased values, `hostNetwork` absent, true or false.
fn generated_pod(rng: &mut XorShift) -> Value {
    const VALUES: [&str; 7] = ["true", "false", "False", "FALSE", "", "yes", "0"];
    let key = "sidecar.istio.io/inject";
    let mut meta = Map::new();
    for field in ["labels", "annotations"] {
        match rng.below(4) {
            0 => {}
            1 => {
                meta.insert(field.into(), json!({}));
            }
            _ => {
                let mut m = Map::new();
                if rng.below(3) > 0 {
                    m.insert(key.into(), json!(rng.pick(&VALUES)));
                }
                if rng.below(2) == 0 {
                    m.insert("app".into(), json!(rng.pick(&["web", "false"])));
                }
                meta.insert(field.into(), Value::Object(m));
            }
        }
    }
    if rng.below(3) == 0 {
        meta.insert("name".into(), json!("p"));
    }
    let mut pod = Map::new();
    if !meta.is_empty() || rng.below(2) == 0 {
        pod.insert("metadata".into(), Value::Object(meta));
    }
    let mut spec = Map::new();
    match rng.below(3) {
        0 => {}
        1 => {
            spec.insert("hostNetwork".into(), json!(true));
        }
        _ => {
            spec.insert("hostNetwork".into(), json!(false));
        }
    }
    spec.insert("containers".into(), json!([{"name": "app"}]));
    if rng.below(8) > 0 {
        pod.insert("spec".into(), Value::Object(spec));
    }
    Value::Object(pod)
}

fn generated_pods_are_filtered_out_only_when_never_injected() -> Result<(), Failed> {
    let programs = programs();
    let mut rng = XorShift(0x5eed_cafe);
    let (mut filtered, mut sent) = (0, 0);
    for _ in 0..5_000 {
        let pod = generated_pod(&mut rng);
        let ns = rng.pick(&NAMESPACES);
        check(&programs, &pod, ns)?;
        if admitted(&programs, &pod, ns)? {
            sent += 1;
        } else {
            filtered += 1;
        }
    }
    // Both outcomes are exercised.
    if filtered <= 500 || sent <= 500 {
        return Err(format!("{filtered} filtered, {sent} sent").into());
    }
    Ok(())
}

/// The label decides when present, whatever the annotation says (as `injectRequired`).
fn label_wins_over_annotation() -> Result<(), Failed> {
    let programs = programs();
    let pod = json!({"metadata": {
        "labels": {"sidecar.istio.io/inject": "true"},
        "annotations": {"sidecar.istio.io/inject": "false"}
    }, "spec": {}});
    assert_eq!(admitted(&programs, &pod, "apps"), Ok(true));
    let pod = json!({"metadata": {
        "labels": {"sidecar.istio.io/inject": "yes"},
        "annotations": {"sidecar.istio.io/inject": "false"}
    }, "spec": {}});
    assert_eq!(admitted(&programs, &pod, "apps"), Ok(true));
    let pod = json!({"metadata": {"annotations": {"sidecar.istio.io/inject": "false"}}});
    assert_eq!(admitted(&programs, &pod, "apps"), Ok(false));
    Ok(())
}

fn main() {
    let args = Arguments::from_args();
    let mut trials = vec![
        Trial::test(
            "match_conditions::generated_pods",
            generated_pods_are_filtered_out_only_when_never_injected,
        ),
        Trial::test(
            "match_conditions::label_wins_over_annotation",
            label_wins_over_annotation,
        ),
    ];
    trials.push(match corpus_pods() {
        Some(pods) => Trial::test("match_conditions::corpus_pods", move || {
            corpus_pods_are_filtered_out_only_when_never_injected(&pods)
        }),
        None => corpus::absent_trial("match_conditions", "corpus pods"),
    });
    libtest_mimic::run(&args, trials).exit();
}
