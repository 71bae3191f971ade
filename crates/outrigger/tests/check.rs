//! `outrigger check` end to end on a manifest.

use std::process::Command;

const MANIFEST: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    metadata:\n      labels:\n        app: web\n    spec:\n      containers:\n      - name: web\n        image: nginx\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: opted-out\n  labels:\n    sidecar.istio.io/inject: \"false\"\nspec:\n  containers:\n  - name: app\n    image: app\n";

/// Run `outrigger check -f <MANIFEST> ARGS`: (exit code, stdout, stderr).
fn check(args: &[&str]) -> (i32, String, String) {
    check_manifest(MANIFEST, args)
}

/// Run `outrigger check -f <manifest> ARGS`: (exit code, stdout, stderr).
fn check_manifest(manifest: &str, args: &[&str]) -> (i32, String, String) {
    let dir = std::env::temp_dir().join(format!("outrigger-kube-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    // One file per call: the tests run in parallel.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let file = dir.join(format!("m{n}.yaml"));
    std::fs::write(&file, manifest).expect("write manifest");
    let out = Command::new(env!("CARGO_BIN_EXE_outrigger"))
        .arg("check")
        .arg("-f")
        .arg(&file)
        .args(args)
        .output()
        .expect("binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// Namespace `apps`, labelled for injection by outrigger (what the shipped webhook selects).
const LABELLED_APPS: &[&str] = &["-n", "apps", "--namespace-labels", "istio.io/rev=outrigger"];

#[test]
fn check_explains_each_workload_in_json() {
    let (code, out, err) = check(&[
        "--namespace",
        "apps",
        "--namespace-labels",
        "istio.io/rev=outrigger",
        "-o",
        "json",
    ]);
    // One of the two pods is not injected: exit status 1.
    assert_eq!(code, 1, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON array");
    assert_eq!(v[0]["workload"], "Deployment/web");
    assert_eq!(v[0]["injected"], true);
    assert_eq!(v[0]["reason"], "policy_enabled");
    assert_eq!(v[1]["workload"], "Pod/opted-out");
    assert_eq!(v[1]["injected"], false);
    assert_eq!(
        v[1]["reason"], "webhook_not_selected",
        "the label opt-out is seen by the objectSelector"
    );
}

#[test]
fn check_table_without_namespace_labels() {
    let (code, out, err) = check(&[]);
    assert_eq!(code, 1, "{err}");
    // kubectl's habit: a line per workload, the changes that inject below, the summary last.
    assert_eq!(
        out,
        "NAMESPACE  KIND        NAME       VERDICT       REASON                REVISION\n\
         default    Deployment  web        NOT INJECTED  webhook_not_selected  -\n\
         default    Pod         opted-out  NOT INJECTED  webhook_not_selected  -\n\
         Deployment/web: to inject it: kubectl label namespace default istio.io/rev=outrigger \
         --overwrite\n\
         Pod/opted-out: to inject it: change the labels of the pod: sidecar.istio.io/inject- \
         istio.io/rev=outrigger\n\
         2 workloads: 0 injected, 2 not injected\n"
    );
    // The long form, per workload, with -o wide.
    let (code, out, err) = check(&["-o", "wide"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        out.contains("Deployment/web in namespace default: NOT INJECTED (webhook_not_selected)"),
        "{out}"
    );
}

#[test]
fn exit_status_is_the_verdict() {
    let (code, out, err) = check(LABELLED_APPS);
    assert_eq!(code, 1, "a pod is not injected: {err}");
    assert!(
        out.lines().any(|l| l.split_whitespace().collect::<Vec<_>>()
            == [
                "apps",
                "Deployment",
                "web",
                "INJECTED",
                "policy_enabled",
                "outrigger"
            ]),
        "{out}"
    );
    // Errors are 2, distinct from "not injected".
    let (code, _, err) = check(&["--injectConfigFile", "/no/such/file"]);
    assert_eq!(code, 2, "{err}");
    // Only injected pods: 0.
    let web = MANIFEST.split("---").next().expect("first document");
    let (code, _, err) = check_manifest(web, LABELLED_APPS);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn every_not_injected_verdict_ends_with_the_change_that_injects_it() {
    let (_, out, _) = check(&["-n", "apps", "-o", "wide"]);
    // Each report's last line is the fix, and the table ends with the summary. In an
    // unlabelled namespace the opted-out pod is injected by its own labels (the `rev.object.`
    // entry of the shipped default: outrigger's label, the opt-out removed), one change;
    // removing the opt-out is not enough there.
    let (reports, summary) = out.trim_end().rsplit_once('\n').expect("lines");
    assert_eq!(summary, "2 workloads: 0 injected, 2 not injected", "{out}");
    let lines: Vec<&str> = reports.lines().collect();
    let mut ends = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if i + 1 == lines.len() || !lines[i + 1].starts_with(' ') {
            ends.push(*l);
        }
    }
    assert_eq!(
        ends,
        [
            "  to inject it: kubectl label namespace apps istio.io/rev=outrigger --overwrite",
            "  to inject it: change the labels of the pod: sidecar.istio.io/inject- istio.io/rev=outrigger",
        ],
        "{out}"
    );
    // The labelled namespace: the opted-out pod needs its label removed.
    let (_, json, _) = check(&[LABELLED_APPS, &["-o", "json"]].concat());
    let v: serde_json::Value = serde_json::from_str(&json).expect("JSON array");
    assert!(v[0].get("fix").is_none(), "injected: no fix");
    assert_eq!(
        v[1]["fix"],
        "remove the label sidecar.istio.io/inject=\"false\" from the pod"
    );
    // Another selector is labelled with its istio.io/rev value.
    let (_, json, _) = check(&["-n", "apps", "--selector-revision", "canary", "-o", "json"]);
    let v: serde_json::Value = serde_json::from_str(&json).expect("JSON array");
    assert_eq!(
        v[0]["fix"],
        "kubectl label namespace apps istio.io/rev=canary --overwrite"
    );
    // A namespace labelled for istiod is moved to outrigger: its label replaced, istiod's
    // istio-injection removed (istiod's namespace entry selects it whatever istio.io/rev says).
    let (_, json, _) = check(&[
        "-n",
        "apps",
        "--namespace-labels",
        "istio-injection=enabled",
        "-o",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&json).expect("JSON array");
    assert_eq!(
        v[0]["fix"],
        "kubectl label namespace apps istio.io/rev=outrigger istio-injection- --overwrite"
    );
}

#[test]
fn steps_not_evaluated_are_marked() {
    let (_, out, _) = check(&[LABELLED_APPS, &["-o", "wide"]].concat());
    // The opted-out pod is decided at the label: the later steps are marked, facts not shown.
    assert!(
        out.contains("  policy                   NOT EVALUATED  -                      (not evaluated: decided at injectLabelOrAnnotation)"),
        "{out}"
    );
    let (_, out, _) = check(&["-n", "apps", "-o", "wide"]);
    assert!(
        out.contains("injector steps: NOT EVALUATED (no webhook sends the pod to the injector)"),
        "{out}"
    );
}

#[test]
fn namespace_label_without_value_is_refused() {
    let (code, _, err) = check(&["--namespace-labels", "istio-injection"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("\"istio-injection\" has no value") && err.contains("istio-injection=enabled"),
        "{err}"
    );
    // `k=` is an explicit empty value.
    let (code, _, err) = check(&["--namespace-labels", "istio-injection="]);
    assert_eq!(code, 1, "{err}");
}

#[test]
fn auto_entry_of_a_revision_is_reported_as_dropped() {
    for cmd in [&["webhook-config"][..], &["check", "-f", "-"][..]] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_outrigger"))
            .args(cmd)
            .args([
                "--selector-revision",
                "canary",
                "--enable-namespaces-by-default",
            ])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("binary runs");
        {
            use std::io::Write;
            let mut stdin = child.stdin.take().expect("stdin");
            stdin.write_all(MANIFEST.as_bytes()).expect("write stdin");
        }
        let out = child.wait_with_output().expect("binary runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(
                "--enable-namespaces-by-default has no effect with --selector-revision canary"
            ),
            "{cmd:?}: {err}"
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(!stdout.contains("auto.sidecar-injector"), "{stdout}");
    }
    // The default revision's selectors (the takeover) render the entry, silently.
    let out = Command::new(env!("CARGO_BIN_EXE_outrigger"))
        .args([
            "webhook-config",
            "--enable-namespaces-by-default",
            "--selector-revision",
            "default",
            "--failure-policy",
            "Ignore",
        ])
        .output()
        .expect("binary runs");
    assert!(String::from_utf8_lossy(&out.stdout).contains("auto.sidecar-injector"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with(
            "note: --selector-revision default selects what istiod's default revision selects"
        ) && err.lines().count() == 1,
        "{err}"
    );
}

const CANARY_POD: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  labels:\n    istio.io/rev: canary\nspec:\n  containers:\n  - name: app\n    image: app\n";

/// A pod asking for a revision is evaluated against that revision's webhooks: the verdict and
/// the fix name the revision, never `istio-injection=enabled`; an explicit other `--revision` is
/// evaluated as asked, with a warning.
#[test]
fn a_pod_asking_for_a_revision_is_checked_against_it() {
    let (code, out, err) = check_manifest(CANARY_POD, &["-n", "apps", "-o", "wide"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("rev.object.sidecar-injector.istio.io"),
        "{out}"
    );
    let (code, out, err) = check_manifest(
        CANARY_POD,
        &["-n", "apps", "--namespace-labels", "istio.io/rev=stable"],
    );
    assert_eq!(code, 1, "{out}{err}");
    let fix = out
        .lines()
        .find(|l| l.contains("to inject it:"))
        .unwrap_or_default();
    assert!(
        fix.contains("istio.io/rev=canary") && !fix.contains("istio-injection"),
        "{out}"
    );
    let (_, _, err) = check_manifest(CANARY_POD, &["-n", "apps", "--selector-revision", "stable"]);
    assert!(
        err.contains("Pod/p asks for revision \"canary\" (label istio.io/rev) but --selector-revision stable is evaluated"),
        "{err}"
    );
    let (_, _, err) = check_manifest(CANARY_POD, &["-n", "apps", "--revision", "stable"]);
    assert!(
        err.contains("Pod/p asks for revision \"canary\" (label istio.io/rev) but --revision stable (entries selecting istio.io/rev=outrigger) is evaluated"),
        "{err}"
    );
}

/// `--namespace` is for manifests without one: a namespace written in the manifest wins.
#[test]
fn namespace_flag_applies_only_to_manifests_without_one() {
    let with_ns = MANIFEST.replace("  name: web\n", "  name: web\n  namespace: shop\n");
    let (_, out, err) = check_manifest(&with_ns, &["-n", "apps", "-o", "json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {err}"));
    assert_eq!(v[0]["namespace"], "shop", "{out}");
    assert_eq!(v[1]["namespace"], "apps", "{out}");
}

/// `check` and `inject` report a YAML error at the same line of the file, in the same words.
#[test]
fn yaml_errors_are_reported_as_inject_reports_them() {
    let bad = "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  labels: {a: [}\n";
    let (code, _, err) = check_manifest(bad, &[]);
    assert_eq!(code, 2, "{err}");
    let dir = std::env::temp_dir().join(format!("outrigger-check-yaml-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("bad.yaml");
    std::fs::write(&file, bad).expect("write");
    let inject = Command::new(env!("CARGO_BIN_EXE_outrigger"))
        .arg("inject")
        .arg("-f")
        .arg(&file)
        .output()
        .expect("binary runs");
    let inject_err = String::from_utf8_lossy(&inject.stderr);
    let cause = |e: &str| {
        e.lines()
            .find(|l| l.starts_with("Error: "))
            .and_then(|l| l.split_once(": document "))
            .map(|(_, rest)| rest.to_string())
    };
    assert_eq!(cause(&err), cause(&inject_err), "{err}\n{inject_err}");
    assert!(
        cause(&err).is_some_and(|c| c.starts_with("1: yaml: line 9: ")),
        "{err}"
    );
}
