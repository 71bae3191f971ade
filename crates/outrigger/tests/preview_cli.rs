//! `outrigger preview -f` on inputs of Istio's corpus: the corpus' chart settings
//! (`settings/default`) in force, each release's (`releases/<tag>/`) as the candidate. Every
//! change reported is a real difference between what `outrigger inject` writes with the one and
//! with the other (its pointers lead, inside the workload's pod template, to its two values),
//! the exit status is 1 exactly when the two injections differ, and a configuration previewed
//! against itself exits 0 with no change. The corpus is `$OUTRIGGER_CORPUS`, else
//! `../shared/conformance/istio`; without it those runs are reported ignored (`tests/harness`),
//! and fail under CI (`CI=true`) or with `OUTRIGGER_REQUIRE_CORPUS=1`.

mod harness;
#[allow(dead_code)]
mod support;

use std::path::{Path, PathBuf};

use serde_json::Value;
use support::{docs, json_rows, repo_root, Inject};

const RELEASES: [&str; 3] = ["1.24.6", "1.26.8", "1.28.10"];

/// Inputs of the corpus with one workload kind each (and a List of several).
const INPUTS: [&str; 6] = [
    "hello.yaml",
    "daemonset.yaml",
    "cronjob.yaml",
    "statefulset.yaml",
    "list.yaml",
    "hello-probes.yaml",
];

/// The corpus (the harness has checked that it is there).
fn corpus() -> PathBuf {
    harness::absent::corpus_dir()
}

fn files(dir: &Path) -> [PathBuf; 3] {
    ["config.yaml", "values.json", "mesh.yaml"].map(|f| dir.join(f))
}

fn inject(input: &Path, config: &[PathBuf; 3]) -> Vec<Value> {
    let run = Inject::file(input)
        .path_arg("--injectConfigFile", &config[0])
        .path_arg("--valuesFile", &config[1])
        .path_arg("--meshConfigFile", &config[2])
        .arg("-q")
        .run();
    docs(run.success())
}

fn preview(input: &Path, current: &[PathBuf; 3], candidate: &[PathBuf; 3]) -> support::Run {
    Inject::command("preview")
        .path_arg("-f", input)
        .path_arg("--injectConfigFile", &current[0])
        .path_arg("--valuesFile", &current[1])
        .path_arg("--meshConfigFile", &current[2])
        .path_arg("--candidateInjectConfigFile", &candidate[0])
        .path_arg("--candidate-values-file", &candidate[1])
        .path_arg("--candidate-mesh-config-file", &candidate[2])
        .args(["-o", "json"])
        .run()
}

/// Where a workload of `kind` keeps its pod template.
fn template_pointer(kind: &str) -> &'static str {
    match kind {
        "Pod" => "",
        "CronJob" => "/spec/jobTemplate/spec/template",
        _ => "/spec/template",
    }
}

/// The workload document a row is about, in the injected documents (a List's items among
/// them).
fn document<'a>(docs: &'a [Value], row: &Value) -> &'a Value {
    let kind = row["kind"].as_str().unwrap_or("");
    let name = row["name"].as_str().unwrap_or("");
    docs.iter()
        .flat_map(|d| match d["items"].as_array() {
            Some(items) if d["kind"] == "List" => items.iter().collect(),
            _ => vec![d],
        })
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name} in the injected documents"))
}

fn every_change_is_a_real_difference_between_the_two_injections() {
    let root = corpus();
    let current = files(&root.join("settings/default"));
    let mut changes = 0;
    for release in RELEASES {
        let candidate = files(&root.join("releases").join(release));
        for input in INPUTS {
            let path = root.join("cases").join(input);
            let (a, b) = (inject(&path, &current), inject(&path, &candidate));
            let run = preview(&path, &current, &candidate);
            let want = if a == b { 0 } else { 1 };
            let rows = json_rows(run.exited(want));
            assert!(!rows.is_empty(), "{input} {release}: no workload");
            for row in &rows {
                let prefix = template_pointer(row["kind"].as_str().unwrap_or(""));
                let (da, db) = (document(&a, row), document(&b, row));
                for c in row["changes"].as_array().expect("changes") {
                    let at = |doc: &Value, ptr: &Value| {
                        ptr.as_str()
                            .and_then(|p| doc.pointer(&format!("{prefix}{p}")))
                            .cloned()
                            .unwrap_or(Value::Null)
                    };
                    let context = format!("{input} {release} {}", c["path"]);
                    assert_eq!(at(da, &c["currentPointer"]), c["current"], "{context}");
                    assert_eq!(at(db, &c["candidatePointer"]), c["candidate"], "{context}");
                    assert_ne!(c["current"], c["candidate"], "{context}");
                    changes += 1;
                }
            }
        }
    }
    assert!(changes > 0, "no release changed anything");
}

fn a_configuration_previewed_against_itself_changes_nothing() {
    let root = corpus();
    let current = files(&root.join("settings/default"));
    for input in INPUTS {
        let run = preview(&root.join("cases").join(input), &current, &current);
        for row in json_rows(run.exited(0)) {
            assert_eq!(row["changes"], Value::Array(Vec::new()), "{input}");
            assert_eq!(row["refused"], false, "{input}");
        }
    }
}

fn the_candidate_is_required_and_offline_needs_no_cluster() {
    let example = repo_root().join("examples/hello.yaml");
    let run = Inject::command("preview").path_arg("-f", &example).run();
    assert_eq!(run.code, Some(2));
    assert!(
        run.stderr.contains("--candidate-revision"),
        "{}",
        run.stderr
    );
    // The embedded default against itself made for a revision: the revision's changes only.
    let run = Inject::command("preview")
        .path_arg("-f", &example)
        .args(["--candidate-revision", "canary"])
        .run();
    let out = run.exited(1);
    assert!(
        out.contains("metadata.annotations[istio.io/rev]: \"default\" -> \"canary\" (revision)"),
        "{out}"
    );
    assert!(
        out.contains("1 workload: 1 changed, 0 would be refused"),
        "{out}"
    );
}

/// `examples/hello.yaml` (a Deployment and its Service) `n` times, the Deployments named
/// `hello-0`, `hello-1`, ...: 2n documents.
fn hellos(n: usize) -> String {
    let hello = std::fs::read_to_string(repo_root().join("examples/hello.yaml")).expect("example");
    (0..n)
        .map(|i| hello.replacen("name: hello\n", &format!("name: hello-{i}\n"), 1) + "---\n")
        .collect()
}

fn preview_stdin(input: &str, output: &str) -> support::Run {
    Inject::command("preview")
        .args(["-f", "-", "--candidate-revision", "canary", "-o", output])
        .stdin(input)
        .run()
}

fn rows_come_in_document_order_across_batches() {
    // More documents than one batch, previewed on several threads.
    let n = 150;
    let run = preview_stdin(&hellos(n), "json");
    let rows = json_rows(run.exited(1));
    let got: Vec<(u64, String)> = rows
        .iter()
        .map(|r| {
            let doc = r["document"].as_u64().unwrap_or(u64::MAX);
            (doc, r["name"].as_str().unwrap_or("").to_string())
        })
        .collect();
    let want: Vec<(u64, String)> = (0..n)
        .map(|i| (2 * i as u64, format!("hello-{i}")))
        .collect();
    assert_eq!(got, want);
    let table = preview_stdin(&hellos(n), "table");
    let out = table.exited(1);
    let names: Vec<&str> = out
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .filter(|w| w.starts_with("Deployment/"))
        .collect();
    let want: Vec<String> = (0..n).map(|i| format!("Deployment/hello-{i}")).collect();
    assert_eq!(names, want);
    assert!(
        out.contains(&format!("{n} workloads: {n} changed, 0 would be refused")),
        "{out}"
    );
}

fn a_bad_document_stops_the_run_after_the_rows_before_it() {
    let input = hellos(70) + "kind: Deployment\nmetadata: [\n";
    let run = preview_stdin(&input, "json");
    let err = run.failure();
    assert_eq!(run.code, Some(2));
    assert!(err.contains("document 140"), "{err}");
    // Its line in the stream, as `inject` reports it.
    let line = input.lines().count();
    assert!(err.contains(&format!("line {line}")), "{err}");
    assert!(
        err.contains("the 70 workload(s) before it were written to standard output"),
        "{err}"
    );
    // The rows before it are out, in an array left open: never read as a whole answer.
    assert!(run.stdout.starts_with("[\n  {"), "{}", run.stdout);
    assert!(serde_json::from_str::<Value>(&run.stdout).is_err());
    assert_eq!(run.stdout.matches("\"name\": \"hello-").count(), 70);
    // The table is aligned on all its rows, so nothing of it is written.
    let run = preview_stdin(&input, "table");
    run.failure();
    assert_eq!(run.stdout, "");
    assert!(!run.stderr.contains("were written"), "{}", run.stderr);
}

fn main() {
    harness::run(trials![
        &[harness::Need::Corpus] => [
            every_change_is_a_real_difference_between_the_two_injections,
            a_configuration_previewed_against_itself_changes_nothing,
        ],
        &[] => [
            the_candidate_is_required_and_offline_needs_no_cluster,
            rows_come_in_document_order_across_batches,
            a_bad_document_stops_the_run_after_the_rows_before_it,
            a_candidate_pod_the_api_server_refuses_is_a_preflight_finding,
        ],
    ]);
}

/// A candidate whose injection leaves a pod the API server refuses (native sidecars moving the
/// only container, `istio-proxy`, out of `containers`) is a preflight finding naming the rule,
/// and the workload is counted as refused (exit 3).
fn a_candidate_pod_the_api_server_refuses_is_a_preflight_finding() {
    let pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: gw\nspec:\n  containers:\n  - name: istio-proxy\n    image: auto\n";
    let run = Inject::command("preview")
        .args([
            "-f",
            "-",
            "--native-sidecars",
            "false",
            "--candidate-native-sidecars",
            "true",
        ])
        .stdin(pod)
        .run();
    let out = run.exited(3);
    assert!(
        out.contains("! api-validation validateContainers: spec.containers: Required value"),
        "{out}"
    );
    let run = Inject::command("preview")
        .args([
            "-f",
            "-",
            "--native-sidecars",
            "false",
            "--candidate-native-sidecars",
            "false",
        ])
        .stdin(pod)
        .run();
    assert!(!run.stdout.contains("api-validation"), "{}", run.stdout);
}
