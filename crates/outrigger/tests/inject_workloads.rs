//! `outrigger inject` on the workloads it meets, running the real binary on our own fixtures
//! (`tests/fixtures/` at the repository root) with the embedded default configuration: every
//! kind kube-inject injects, where it writes the pod, what passes through verbatim, what is
//! skipped (host network, injection disabled) and large streams, document by document.

#[allow(dead_code)] // the helpers of the inject tests; this file uses some
mod support;

use serde_json::{json, Value};
use support::{docs, fixture, hello, names_at, read, single, Inject, TempDir};

/// JSON pointers of (pod metadata, pod spec) where kube-inject writes its result, per fixture.
const KINDS: [(&str, &str, &str); 9] = [
    ("pod.yaml", "/metadata", "/spec"),
    (
        "deployment.yaml",
        "/spec/template/metadata",
        "/spec/template/spec",
    ),
    (
        "daemonset.yaml",
        "/spec/template/metadata",
        "/spec/template/spec",
    ),
    (
        "statefulset.yaml",
        "/spec/template/metadata",
        "/spec/template/spec",
    ),
    (
        "replicaset.yaml",
        "/spec/template/metadata",
        "/spec/template/spec",
    ),
    (
        "replicationcontroller.yaml",
        "/spec/template/metadata",
        "/spec/template/spec",
    ),
    ("job.yaml", "/spec/template/metadata", "/spec/template/spec"),
    // [quirk] As istioctl: a CronJob's injected metadata goes to the Job template, not the pod template.
    (
        "cronjob.yaml",
        "/spec/jobTemplate/metadata",
        "/spec/jobTemplate/spec/template/spec",
    ),
    (
        "deploymentconfig.yaml",
        "/spec/template/metadata",
        "/spec/template/spec",
    ),
];

/// Assert `doc` carries an injected pod at (meta, spec) and kept its own containers in order.
fn assert_injected(doc: &Value, input: &Value, meta: &str, spec: &str, what: &str) {
    let containers = names_at(doc, &format!("{spec}/containers"));
    let inits = names_at(doc, &format!("{spec}/initContainers"));
    assert!(
        containers.iter().any(|n| n == "istio-proxy"),
        "{what}: no istio-proxy in {containers:?}"
    );
    assert!(
        inits.iter().any(|n| n == "istio-init"),
        "{what}: no istio-init in {inits:?}"
    );
    let original = names_at(input, &format!("{spec}/containers"));
    let kept: Vec<_> = containers
        .iter()
        .filter(|n| *n != "istio-proxy")
        .cloned()
        .collect();
    assert_eq!(kept, original, "{what}: application containers changed");
    let m = doc
        .pointer(meta)
        .unwrap_or_else(|| panic!("{what}: no metadata at {meta}"));
    assert_eq!(
        m.pointer("/labels/security.istio.io~1tlsMode"),
        Some(&json!("istio")),
        "{what}: tlsMode label missing at {meta}"
    );
    let status = m
        .pointer("/annotations/sidecar.istio.io~1status")
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("{what}: no status annotation at {meta}"));
    let status: Value = serde_json::from_str(status).expect("status annotation is JSON");
    assert_eq!(
        status["containers"],
        json!(["istio-proxy"]),
        "{what}: status {status}"
    );
    for key in ["kind", "apiVersion"] {
        assert_eq!(doc.get(key), input.get(key), "{what}: {key} changed");
    }
    assert_eq!(
        doc.pointer("/metadata/name"),
        input.pointer("/metadata/name"),
        "{what}: name changed"
    );
}

// ---------------------------------------------------------------------------------------------
// The embedded default on examples/hello.yaml
// ---------------------------------------------------------------------------------------------

#[test]
fn hello_deployment_is_injected_and_service_passes_through_verbatim() {
    let input = read(&hello());
    let out = Inject::file(&hello()).run();
    let text = out.success();
    let d = docs(text);
    assert_eq!(d.len(), 2, "two documents out:\n{text}");
    let inputs = docs(&input);
    assert_injected(
        &d[0],
        &inputs[0],
        "/spec/template/metadata",
        "/spec/template/spec",
        "hello",
    );
    // The Service is written back byte for byte, followed by the separator.
    let raw = outrigger_go::yaml::split_documents(&input).expect("hello splits")[1].clone();
    assert!(raw.ends_with('\n'));
    assert!(
        text.ends_with(&format!("{raw}---\n")),
        "Service not verbatim:\n{text}"
    );
    // The injected proxy runs as a sidecar container, not natively, by default.
    assert!(!names_at(&d[0], "/spec/template/spec/initContainers").contains(&"istio-proxy".into()));
}

#[test]
fn hello_reinjection_changes_nothing() {
    let first = Inject::file(&hello()).run();
    let first = first.success();
    let second = Inject::new().arg("-f").arg("-").stdin(first).run();
    assert_eq!(
        second.success(),
        first,
        "re-injecting the output changed it"
    );
}

// ---------------------------------------------------------------------------------------------
// Every kind kube-inject injects
// ---------------------------------------------------------------------------------------------

#[test]
fn every_workload_kind_is_injected_where_kube_inject_puts_it() {
    for (name, meta, spec) in KINDS {
        let input = single(&read(&fixture(name)));
        let out = Inject::file(&fixture(name)).run();
        let doc = single(out.success());
        assert_injected(&doc, &input, meta, spec, name);
    }
}

#[test]
fn cronjob_pod_template_metadata_is_left_alone() {
    let input = single(&read(&fixture("cronjob.yaml")));
    let doc = single(Inject::file(&fixture("cronjob.yaml")).run().success());
    let ptr = "/spec/jobTemplate/spec/template/metadata/labels";
    assert_eq!(
        doc.pointer(ptr),
        input.pointer(ptr),
        "pod template labels changed"
    );
    assert_eq!(doc.pointer("/spec/schedule"), Some(&json!("30 2 * * *")));
}

#[test]
fn deploymentconfig_keeps_fields_outside_the_pod_template() {
    let input = single(&read(&fixture("deploymentconfig.yaml")));
    let doc = single(
        Inject::file(&fixture("deploymentconfig.yaml"))
            .run()
            .success(),
    );
    assert_eq!(
        doc.pointer("/spec/triggers"),
        input.pointer("/spec/triggers")
    );
    assert_eq!(doc.get("apiVersion"), Some(&json!("apps.openshift.io/v1")));
}

#[test]
fn list_items_are_injected_or_kept() {
    let input = single(&read(&fixture("list.yaml")));
    let doc = single(Inject::file(&fixture("list.yaml")).run().success());
    let items = doc["items"].as_array().expect("items");
    assert_eq!(items.len(), 4);
    let kinds: Vec<_> = items
        .iter()
        .map(|i| i["kind"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(kinds, ["ConfigMap", "Deployment", "Service", "Pod"]);
    assert_eq!(items[0], input["items"][0], "ConfigMap item changed");
    assert_eq!(items[2], input["items"][2], "Service item changed");
    let (d, p) = (&input["items"][1], &input["items"][3]);
    assert_injected(
        &items[1],
        d,
        "/spec/template/metadata",
        "/spec/template/spec",
        "List Deployment",
    );
    assert_injected(&items[3], p, "/metadata", "/spec", "List Pod");
}

#[test]
fn mixed_stream_keeps_other_kinds_verbatim_and_the_original_api_version() {
    let input = read(&fixture("mixed-stream.yaml"));
    let raw = outrigger_go::yaml::split_documents(&input).expect("fixture splits");
    let out = Inject::file(&fixture("mixed-stream.yaml")).run();
    let text = out.success();
    assert!(
        text.starts_with(&format!("{}---\n{}---\n", raw[0], raw[1])),
        "not verbatim:\n{text}"
    );
    let d = docs(text);
    assert_eq!(d.len(), 3);
    assert_eq!(d[2]["apiVersion"], json!("extensions/v1beta1"));
    assert!(names_at(&d[2], "/spec/template/spec/containers").contains(&"istio-proxy".into()));
    // Unquoted YAML 1.1 scalars in string fields become their string form.
    let env = &d[2]["spec"]["template"]["spec"]["containers"][0]["env"];
    assert_eq!(env[0], json!({"name": "FEATURE", "value": "true"}));
    assert_eq!(env[1], json!({"name": "MODE", "value": "8"}));
}

#[test]
fn unsupported_last_document_without_newline_is_followed_by_the_separator() {
    // [quirk] As istioctl: `---` lands on the same line as the verbatim document's last line.
    let out = Inject::new()
        .arg("-f")
        .arg("-")
        .stdin("kind: Service\nmetadata: {name: a}")
        .run();
    assert_eq!(out.success(), "kind: Service\nmetadata: {name: a}\n---\n");
}

#[test]
fn awkward_annotation_keys_survive_reinjection() {
    let input = read(&fixture("pod.yaml")).replace(
        "team: payments",
        "\"yes\": \"no\"\n    \"~\": tilde\n    \"010\": octal",
    );
    let first = Inject::new().arg("-f").arg("-").stdin(&input).run();
    let first = first.success();
    let doc = single(first);
    for (k, v) in [("yes", "no"), ("~", "tilde"), ("010", "octal")] {
        assert_eq!(
            doc["metadata"]["annotations"][k],
            json!(v),
            "annotation {k:?}"
        );
    }
    let second = Inject::new().arg("-f").arg("-").stdin(first).run();
    assert_eq!(second.success(), first);
}

#[test]
fn merge_key_annotation_is_written_as_go_writes_it() {
    // sigs.k8s.io/yaml `JSONToYAML` writes the string key `<<` plain (`<<: merge`), and go-yaml
    // then reads it back as a merge key: istioctl's output of such a pod cannot be injected
    // again. outrigger writes the same bytes and fails the same way on the second pass.
    let input = read(&fixture("pod.yaml")).replace("team: payments", "\"<<\": merge");
    let first = Inject::new().arg("-f").arg("-").stdin(&input).run();
    let first = first.success();
    assert!(first.contains("\n    <<: merge\n"), "{first}");
    let second = Inject::new().arg("-f").arg("-").stdin(first).run();
    let err = second.failure();
    assert!(
        err.contains("map merge requires map or sequence of maps as the value"),
        "{err}"
    );
}

#[test]
fn numbers_in_string_annotations_become_go_strings() {
    // istioctl's sigs.k8s.io/yaml `Unmarshal` writes a YAML number in a string field with
    // strconv.FormatFloat(f, 'g', -1, 32): `1e6` is "1e+06", for every annotation.
    let input = read(&fixture("deployment.yaml")).replace(
        "  namespace: shop\n",
        "  namespace: shop\n  annotations:\n    x: 1e6\n    o: 010\n    z: yes\n",
    );
    let out = Inject::new().arg("-f").arg("-").stdin(&input).run();
    let doc = single(out.success());
    let ann = &doc["metadata"]["annotations"];
    assert_eq!(ann["x"], json!("1e+06"), "{ann}");
    assert_eq!(ann["o"], json!("8"), "{ann}");
    assert_eq!(ann["z"], json!("true"), "{ann}");
}

#[test]
fn list_in_a_string_annotation_is_go_s_error() {
    let input = read(&fixture("deployment.yaml")).replace(
        "  namespace: shop\n",
        "  namespace: shop\n  annotations:\n    x: [a, b]\n",
    );
    let run = Inject::new().arg("-f").arg("-").stdin(&input).run();
    let err = run.failure();
    assert!(
        err.contains(
            "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array into Go \
             struct field ObjectMeta.metadata.annotations of type string"
        ),
        "{err}"
    );
}

#[test]
fn key_go_yaml_cannot_read_back_fails_as_in_istioctl() {
    // istioctl writes each object with sigs.k8s.io/yaml `Marshal`: JSON, then `JSONToYAML`,
    // whose YAML reader cannot take a key of more than 1,022 JSON characters.
    let key = "k".repeat(1100);
    // An explicit `? key` reads at any length.
    let input = read(&fixture("pod.yaml")).replace("team: payments", &format!("? {key}\n    : v"));
    let run = Inject::new().arg("-f").arg("-").stdin(&input).run();
    let err = run.failure();
    assert!(
        err.contains("error converting JSON to YAML: yaml: did not find expected ',' or '}'"),
        "{err}"
    );
}

/// Documents pass through as apimachinery's `YAMLReader` reads them, which istioctl writes back:
/// each line ends with `\n` (a CRLF ending too).
#[test]
fn crlf_documents_pass_through_with_the_readers_line_endings() {
    let input = "kind: ConfigMap\r\nmetadata:\r\n  name: a\r\n---\r\nkind: Secret\r\nmetadata: {name: b}\r\n";
    let out = Inject::new().arg("-f").arg("-").stdin(input).run();
    assert_eq!(out.success(), input.replace("\r\n", "\n") + "---\n");
}

/// A block scalar that ends a file without a final newline keeps its newline (`|`, not `|-`), as
/// Kubernetes' reader ends the last line with one: in a passed-through document and in an
/// injected workload alike.
#[test]
fn block_scalar_ending_the_file_keeps_its_newline() {
    let path = fixture("streams/two-docs-no-final-newline.yaml");
    let input = read(&path);
    assert!(!input.ends_with('\n'), "the fixture has no final newline");
    let out = Inject::file(&path).run();
    let d = docs(out.success());
    let pod = d.iter().find(|d| d["kind"] == "Pod").expect("the Pod");
    let app = &pod["spec"]["containers"][0];
    assert_eq!(app["args"][0], "echo a\necho b\n");
    let path = fixture("streams/block-scalar-at-end-no-newline.yaml");
    let out = Inject::file(&path).run();
    assert_eq!(out.success(), read(&path) + "\n---\n");
    assert_eq!(
        docs(out.success())[0]["data"]["run.sh"],
        "#!/bin/sh\necho hello\n"
    );
}

#[test]
fn crlf_workload_is_injected() {
    let input = read(&fixture("deployment.yaml")).replace('\n', "\r\n");
    let crlf = Inject::new().arg("-f").arg("-").stdin(&input).run();
    let lf = Inject::file(&fixture("deployment.yaml")).run();
    assert_eq!(docs(crlf.success()), docs(lf.success()));
}

// ---------------------------------------------------------------------------------------------
// Skips: host network, injection disabled
// ---------------------------------------------------------------------------------------------

#[test]
fn host_network_workload_is_skipped_with_a_warning() {
    let input = single(&read(&fixture("hostnetwork.yaml")));
    let out = Inject::file(&fixture("hostnetwork.yaml")).run();
    let doc = single(out.success());
    assert!(
        out.stderr.contains(
            "===> Skipping injection because DaemonSet \"monitoring/node-exporter\" has host networking enabled"
        ),
        "stderr: {}",
        out.stderr
    );
    let spec = "/spec/template/spec";
    assert_eq!(names_at(&doc, &format!("{spec}/containers")), ["exporter"]);
    assert!(doc.pointer(&format!("{spec}/initContainers")).is_none());
    assert_eq!(
        doc.pointer(&format!("{spec}/hostNetwork")),
        Some(&json!(true))
    );
    assert_eq!(
        doc.pointer("/spec/template/metadata/labels"),
        input.pointer("/spec/template/metadata/labels")
    );
    assert!(doc.pointer("/spec/template/metadata/annotations").is_none());
}

#[test]
fn inject_false_annotation_is_skipped_with_a_warning() {
    let input = single(&read(&fixture("inject-disabled.yaml")));
    let out = Inject::file(&fixture("inject-disabled.yaml")).run();
    let doc = single(out.success());
    assert!(
        out.stderr.contains(
            "===> Skipping injection because Deployment \"jobs/batch-worker\" has sidecar injection disabled"
        ),
        "stderr: {}",
        out.stderr
    );
    assert_eq!(names_at(&doc, "/spec/template/spec/containers"), ["worker"]);
    let ann = "/spec/template/metadata/annotations";
    assert_eq!(doc.pointer(ann), input.pointer(ann));
}

#[test]
fn summary_line_counts_what_was_done() {
    let dir = TempDir::new("summary");
    let input = format!(
        "{}---\n{}",
        read(&hello()),
        read(&fixture("hostnetwork.yaml"))
    );
    let path = dir.write("mixed.yaml", &input);
    let run = Inject::file(&path).run();
    run.success();
    // Istio's warnings come first, byte for byte; the summary is the last line.
    assert!(
        run.stderr.starts_with("\n===> Skipping injection because DaemonSet \"monitoring/node-exporter\" has host networking enabled\n\n"),
        "{:?}",
        run.stderr
    );
    assert!(
        run.stderr
            .ends_with("\n3 documents: 1 injected, 1 skipped (hostNetwork), 1 passed through\n"),
        "{:?}",
        run.stderr
    );
    let one = Inject::file(&fixture("deployment.yaml")).run();
    one.success();
    assert_eq!(one.stderr, "1 document: 1 injected\n");
    let quiet = Inject::file(&path).arg("-q").run();
    quiet.success();
    assert!(!quiet.stderr.contains("documents:"), "{}", quiet.stderr);
    assert!(quiet.stderr.contains("===> Skipping"), "warnings stay");
    let both = Inject::new()
        .arg("-f")
        .arg("-")
        .stdin(&format!(
            "{}---\n{}",
            read(&fixture("hostnetwork.yaml")),
            read(&fixture("inject-disabled.yaml"))
        ))
        .run();
    both.success();
    assert!(
        both.stderr
            .ends_with("\n2 documents: 2 skipped (1 hostNetwork, 1 injection disabled)\n"),
        "{}",
        both.stderr
    );
}

#[test]
fn successful_injection_prints_no_warning() {
    let out = Inject::file(&fixture("deployment.yaml")).run();
    out.success();
    assert!(!out.stderr.contains("Skipping"), "{}", out.stderr);
}

// ---------------------------------------------------------------------------------------------
// Large inputs: documents are streamed
// ---------------------------------------------------------------------------------------------

/// A stream of `n` Deployments, with a Service and a comment-only document every tenth.
fn many_deployments(n: usize) -> String {
    let mut s = String::new();
    for i in 0..n {
        s.push_str(&format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-{i}\n  namespace: team-{}\n\
             spec:\n  selector:\n    matchLabels: {{app: app-{i}}}\n  template:\n    metadata:\n      \
             labels: {{app: app-{i}}}\n    spec:\n      containers:\n      - name: app\n        \
             image: example/app:{i}\n---\n",
            i % 7
        ));
        if i % 10 == 0 {
            s.push_str(&format!(
                "# service {i}\napiVersion: v1\nkind: Service\nmetadata: {{name: svc-{i}}}\n---\n# nothing\n---\n"
            ));
        }
    }
    s
}

#[test]
fn large_stream_is_injected_document_by_document_in_order() {
    let n = 1000;
    let input = many_deployments(n);
    let dir = TempDir::new("large-stream");
    let path = dir.write("many.yaml", &input);
    let run = Inject::file(&path).run();
    let text = run.success();
    let raw = outrigger_go::yaml::split_documents(text).expect("output splits");
    assert_eq!(
        raw.len(),
        n + n.div_ceil(10),
        "one output document per input document"
    );
    let mut deployments = 0;
    for (doc, raw) in docs(text).iter().zip(&raw) {
        if doc["kind"] == "Service" {
            // Services pass through byte for byte, comment included.
            assert!(raw.starts_with("# service "), "{raw}");
            continue;
        }
        let i = deployments;
        deployments += 1;
        assert_eq!(
            doc.pointer("/metadata/name"),
            Some(&json!(format!("app-{i}")))
        );
        assert_eq!(
            names_at(doc, "/spec/template/spec/containers"),
            ["app", "istio-proxy"],
            "app-{i}"
        );
        assert_eq!(
            doc.pointer("/spec/template/spec/containers/0/image"),
            Some(&json!(format!("example/app:{i}")))
        );
    }
    assert_eq!(deployments, n);
    // The same as injecting each document alone.
    let one = Inject::new()
        .arg("-f")
        .arg("-")
        .stdin(&outrigger_go::yaml::split_documents(&input).expect("input splits")[n / 2 + 1])
        .run();
    assert!(
        text.contains(one.success()),
        "document {} differs",
        n / 2 + 1
    );
}
