//! `outrigger drift -f manifests` end to end: the states, the fields, the formats and the exit
//! statuses (0 nothing drifted, 1 drift, 2 error), on manifests injected by `outrigger inject`.

#[path = "../../outrigger-inject/tests/model/apiserver.rs"]
mod apiserver;
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

/// Pods as `kubectl get pods -o yaml|json` writes them: the examples' pod templates made pods,
/// injected as the webhook injects them (`--native-sidecars native`) and stored as the API
/// server stores them (the independent model of `tests/model/apiserver.rs`), in a `List`.
fn stored_list(native: bool) -> Value {
    use outrigger_inject::config::defaults;
    use outrigger_inject::ingest::workload::workload_from_pod;
    use outrigger_inject::inject::{inject_pod, InjectParams, Mode};
    let s = defaults::snapshot().expect("defaults");
    let mut items = Vec::new();
    for example in ["hello.yaml", "probes.yaml", "statefulset.yaml"] {
        let text =
            std::fs::read_to_string(repo_root().join("examples").join(example)).expect("example");
        for raw in outrigger_go::yaml::split_documents(&text).expect("documents") {
            let doc = outrigger_go::yaml::from_str(&raw).expect("yaml");
            for t in outrigger_inject::kube_inject::pod_templates(doc).expect("templates") {
                let mut pod = t.pod;
                pod["apiVersion"] = serde_json::json!("v1");
                pod["kind"] = serde_json::json!("Pod");
                pod["metadata"]["name"] =
                    serde_json::json!(format!("{}-{}", t.workload.name, items.len()));
                pod["metadata"]["namespace"] = serde_json::json!("default");
                pod["metadata"]["resourceVersion"] = serde_json::json!("12345");
                apiserver::as_apiserver_stores(&mut pod, true);
                let params = InjectParams {
                    snapshot: &s,
                    mode: Mode::Webhook,
                    workload: workload_from_pod(&pod),
                    revision: "",
                    native_sidecars: native,
                    proxy_envs: Default::default(),
                    proxy_uid_gid: None,
                    compliance_policy: "",
                };
                let mut stored = inject_pod(&pod, &params).expect("inject").pod;
                stored["apiVersion"] = serde_json::json!("v1");
                stored["kind"] = serde_json::json!("Pod");
                apiserver::as_apiserver_stores(&mut stored, false);
                items.push(stored);
            }
        }
    }
    assert!(items.len() >= 3);
    serde_json::json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
                       "items": items})
}

/// `kubectl get -o yaml` and `-o json` output (a List of stored pods) is judged as `--kube`
/// judges the cluster's: current under the configuration that injected it, where judged as
/// manifests the API server's defaults (`fieldRef.apiVersion`, `imagePullPolicy`, probe
/// defaults, the token mount, `emptyDir: {}`) would all be drift.
#[test]
fn stored_objects_are_judged_as_the_cluster_judges_them() {
    for native in [false, true] {
        let list = stored_list(native);
        let flag = if native { "true" } else { "false" };
        let yaml = outrigger_go::yaml::json_to_yaml(&list).expect("yaml");
        for text in [yaml, serde_json::to_string_pretty(&list).expect("json")] {
            let rows =
                json_rows(drift(&text, &["--native-sidecars", flag, "-o", "json"]).exited(0));
            assert_eq!(rows.len(), list["items"].as_array().map_or(0, Vec::len));
            for r in &rows {
                assert_eq!(r["state"], "current", "native {native}: {r}");
            }
        }
        // The same pods without what marks them stored are manifests: the defaults are drift.
        let mut manifests = list.clone();
        for item in manifests["items"].as_array_mut().expect("items") {
            let meta = item["metadata"].as_object_mut().expect("metadata");
            for k in ["uid", "resourceVersion", "creationTimestamp"] {
                meta.remove(k);
            }
        }
        let text = serde_json::to_string(&manifests).expect("json");
        let rows = json_rows(drift(&text, &["--native-sidecars", flag, "-o", "json"]).exited(1));
        assert!(rows.iter().all(|r| r["state"] == "stale"), "{rows:?}");
        // Under another configuration (native sidecars the other way) stored pods are stale.
        let other = if native { "false" } else { "true" };
        let text = serde_json::to_string(&list).expect("json");
        let rows = json_rows(drift(&text, &["--native-sidecars", other, "-o", "json"]).exited(1));
        assert!(rows.iter().all(|r| r["state"] == "stale"), "{rows:?}");
    }
}

/// Bad stored input is an error naming the document, and nothing is judged: a List item
/// without a kind, a stored pod with a field the API server does not have, a stream cut in the
/// middle of a stored object.
#[test]
fn bad_stored_input_is_an_error_naming_the_document() {
    let list = stored_list(false);
    let mut foreign = list.clone();
    foreign["items"][1]
        .as_object_mut()
        .expect("item")
        .remove("kind");
    let mut unknown = list.clone();
    unknown["items"][0]["spec"]["containers"][0]["imagePullPolicyy"] = serde_json::json!("Always");
    let yaml = outrigger_go::yaml::json_to_yaml(&list).expect("yaml");
    let json = serde_json::to_string_pretty(&list).expect("json");
    let cases = [
        (serde_json::to_string(&foreign).expect("json"), "document 0 (List \"\"): items[1] is an object without a kind"),
        (
            format!("{}---\n{}", outrigger_go::yaml::json_to_yaml(&list["items"][0]).expect("yaml"),
                    outrigger_go::yaml::json_to_yaml(&unknown).expect("yaml")),
            "document 1 (List \"\"): items[0].spec.containers[0].imagePullPolicyy: a field the API server does not store",
        ),
        (yaml[..yaml.len() / 2].trim_end_matches('\n').to_string(), "document 0"),
        (json[..json.len() / 2].to_string(), "document 0"),
    ];
    for (text, want) in cases {
        let run = drift(&text, &["-o", "json"]);
        let err = run.failure();
        assert_eq!(run.code, Some(2), "{err}");
        assert!(err.contains(want), "want {want:?} in:\n{err}");
        assert!(run.stdout.is_empty(), "nothing judged: {}", run.stdout);
    }
}
