//! `outrigger drift -f manifests` end to end: the states, the fields, the formats and the exit
//! statuses (0 nothing drifted, 1 drift, 2 error), on manifests injected by `outrigger inject`.

#[allow(dead_code)] // the helpers of the inject tests; this file uses some
mod support;

use serde_json::Value;
use support::{json_rows, repo_root, Inject, TempDir};

/// `outrigger inject` of an example, with extra flags.
fn injected(example: &str, flags: &[&str]) -> String {
    let run = Inject::file(&repo_root().join("examples").join(example))
        .args(flags.iter().copied())
        .run();
    run.success().to_string()
}

fn drift(stdin: &str, flags: &[&str]) -> support::Run {
    Inject::command("drift")
        .args(["-f", "-"])
        .args(flags.iter().copied())
        .stdin(stdin)
        .run()
}

#[test]
fn what_inject_wrote_is_current_under_the_same_configuration() {
    for example in [
        "hello.yaml",
        "probes.yaml",
        "statefulset.yaml",
        "cronjob.yaml",
    ] {
        for native in ["false", "true"] {
            let text = injected(example, &["--native-sidecars", native]);
            let run = drift(&text, &["--native-sidecars", native, "-o", "json"]);
            let rows = json_rows(run.exited(0));
            assert!(!rows.is_empty(), "{example}");
            for r in rows {
                assert_eq!(r["state"], "current", "{example} native={native}: {r}");
            }
        }
    }
}

#[test]
fn a_configuration_change_makes_pods_stale_with_the_fields_and_cause() {
    let text = injected("hello.yaml", &["--native-sidecars", "true"]);
    let run = drift(&text, &["--native-sidecars", "false", "-o", "json"]);
    let rows = json_rows(run.exited(1));
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["state"], "stale");
    assert_eq!(rows[0]["kind"], "Deployment");
    let fields = rows[0]["fields"].as_array().expect("fields");
    assert!(
        fields
            .iter()
            .any(|f| f["path"] == "spec.initContainers[istio-proxy]"
                && f["cause"] == "native sidecars"
                && f["expected"].is_null()),
        "{fields:?}"
    );
    // The table names the same field, with the cause.
    let table = drift(&text, &["--native-sidecars", "false"]);
    let table = table.exited(1);
    assert!(table.contains("stale"), "{table}");
    assert!(
        table.contains("spec.initContainers[istio-proxy]: {"),
        "{table}"
    );
    assert!(table.contains("(native sidecars)"), "{table}");
    assert!(
        table.ends_with("1 pod template: 1 drifted, 0 current or rightly not injected\n"),
        "{table}"
    );
}

#[test]
fn missing_unwanted_and_wrong_revision_are_told_apart() {
    let plain = std::fs::read_to_string(repo_root().join("examples/hello.yaml")).expect("example");
    let rows = json_rows(drift(&plain, &["-o", "json"]).exited(1));
    assert_eq!(rows[0]["state"], "missing-sidecar");
    assert_eq!(rows[0]["injectedRevision"], Value::Null);

    let text = injected("hello.yaml", &[]);
    let rows = json_rows(drift(&text, &["--revision", "canary", "-o", "json"]).exited(1));
    assert_eq!(rows[0]["state"], "wrong-revision");
    assert_eq!(rows[0]["injectedRevision"], "default");
    assert_eq!(rows[0]["expectedRevision"], "canary");

    // Opted out after injection: the sidecar is unwanted.
    let opted_out = text.replacen(
        "      labels:\n",
        "      labels:\n        sidecar.istio.io/inject: \"false\"\n",
        1,
    );
    assert_ne!(opted_out, text);
    let rows = json_rows(drift(&opted_out, &["-o", "json"]).exited(1));
    assert_eq!(rows[0]["state"], "unwanted-sidecar");
}

#[test]
fn errors_name_the_input_and_exit_2() {
    let dir = TempDir::new("drift-errors");
    let missing = dir.path("absent.yaml");
    let run = Inject::command("drift").path_arg("-f", &missing).run();
    let err = run.failure();
    assert_eq!(run.code, Some(2));
    assert!(err.contains("absent.yaml"), "{err}");
    let bad =
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\nspec:\n  replicas: many\n";
    let run = drift(bad, &[]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(
        run.stderr.contains("document 0 (Deployment \"x\")"),
        "{}",
        run.stderr
    );
}

/// hello.yaml's pod template labelled with revision tag `prod`, injected with `flags`.
fn tagged_injected(flags: &[&str]) -> String {
    let plain = std::fs::read_to_string(repo_root().join("examples/hello.yaml")).expect("example");
    let tagged = plain.replacen(
        "      labels:\n",
        "      labels:\n        istio.io/rev: prod\n",
        1,
    );
    assert_ne!(tagged, plain);
    Inject::command("inject")
        .args(["-f", "-"])
        .args(flags.iter().copied())
        .stdin(&tagged)
        .run()
        .success()
        .to_string()
}

#[test]
fn a_revision_tag_flag_puts_tagged_pods_on_the_tags_revision() {
    // Injected by the default revision; the tag points there: current.
    let text = tagged_injected(&[]);
    let rows = json_rows(drift(&text, &["--revision-tag", "prod=default", "-o", "json"]).exited(0));
    assert_eq!(rows[0]["state"], "current");
    // The tag moved to canary: the pod is on the wrong revision, canary expected.
    let rows = json_rows(drift(&text, &["--revision-tag", "prod=canary", "-o", "json"]).exited(1));
    assert_eq!(rows[0]["state"], "wrong-revision");
    assert_eq!(rows[0]["injectedRevision"], "default");
    assert_eq!(rows[0]["expectedRevision"], "canary");
    assert_eq!(rows[0]["fields"], Value::Array(Vec::new()));
    // Injected by canary, where the tag points: canary's pod, not the default revision's.
    let text = tagged_injected(&["--revision", "canary"]);
    let run = drift(&text, &["--revision-tag", "prod=canary"]);
    let out = run.exited(0);
    assert!(
        out.contains("0 pod templates: 0 drifted")
            && out.contains(
                "1 pod template on the revision their revision tag points to, not --revision, \
                 was not examined"
            ),
        "{out}"
    );
    // Without the flag, as before: judged against --revision.
    let rows = json_rows(drift(&text, &["-o", "json"]).exited(1));
    assert_eq!(rows[0]["state"], "wrong-revision");
    assert_eq!(rows[0]["expectedRevision"], "default");
    // A malformed tag is refused by the flag parser.
    let run = drift(&text, &["--revision-tag", "prod"]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(
        run.stderr.contains("expected TAG=REVISION"),
        "{}",
        run.stderr
    );
}
