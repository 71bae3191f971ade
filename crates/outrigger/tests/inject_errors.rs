//! `outrigger inject` refusing what it cannot inject: inputs that would silently inject
//! nothing or give a pod Kubernetes refuses, and bad input (issue 2, item 7): a non-zero exit,
//! a message naming the cause, never a panic.

#[allow(dead_code)] // the helpers of the inject tests; this file uses some
mod support;

use support::{docs, fixture, hello, names_at, read, repo_root, single, Inject, TempDir};

// ---------------------------------------------------------------------------------------------
// Silent traps: inputs that would inject nothing, or a pod Kubernetes refuses
// ---------------------------------------------------------------------------------------------

/// The embedded default's values, mesh config and `config`, written as files.
fn default_files(dir: &TempDir) -> (std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
    (
        dir.write("values.json", outrigger_inject::config::defaults::VALUES),
        dir.write("mesh.yaml", outrigger_inject::config::defaults::MESH),
        dir.write("config.yaml", outrigger_inject::config::defaults::CONFIG),
    )
}

#[test]
fn values_or_mesh_or_empty_config_as_inject_config_is_refused() {
    let dir = TempDir::new("config-not-templates");
    let (values, mesh, _) = default_files(&dir);
    let empty = dir.write("empty.json", "{}\n");
    let no_templates = dir.write("no-templates.yaml", "templates: {}\n");
    let blank = dir.write("blank.yaml", "# nothing\n");
    for (file, hint) in [
        (&values, "--valuesFile"),
        (&mesh, "--meshConfigFile"),
        (&empty, "empty mapping"),
        (&no_templates, "`templates` is empty"),
        (&blank, "empty"),
    ] {
        let run = Inject::file(&fixture("pod.yaml"))
            .path_arg("--injectConfigFile", file)
            .run();
        let err = run.failure();
        let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
        for want in [name, "not an injector config", "templates:", hint] {
            assert!(err.contains(want), "{name}: {want:?} missing:\n{err}");
        }
        assert_eq!(run.stdout, "", "{name}: nothing is written");
    }
}

#[test]
fn template_that_adds_no_container_is_refused() {
    let dir = TempDir::new("config-no-container");
    let template = dir.write(
        "labels.yaml",
        "metadata:\n  labels:\n    injected-by: \"{{ .Revision | default \"x\" }}\"\n",
    );
    let run = Inject::file(&fixture("pod.yaml"))
        .path_arg("--injectConfigFile", &template)
        .run();
    let err = run.failure();
    for want in [
        "document 0 (Pod ",
        "sidecar added no container",
        "istio-proxy",
    ] {
        assert!(err.contains(want), "{want:?} missing:\n{err}");
    }
}

#[test]
fn whole_configmap_as_inject_config_uses_its_config_key() {
    let dir = TempDir::new("config-configmap");
    let (values, _, _) = default_files(&dir);
    let mut config = String::new();
    for line in outrigger_inject::config::defaults::CONFIG.lines() {
        config.push_str("    ");
        config.push_str(line);
        config.push('\n');
    }
    let cm = dir.write(
        "cm.yaml",
        &format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: istio-sidecar-injector\n  \
             namespace: istio-system\ndata:\n  config: |\n{config}"
        ),
    );
    let run = Inject::file(&fixture("pod.yaml"))
        .path_arg("--injectConfigFile", &cm)
        .path_arg("--valuesFile", &values)
        .run();
    let doc = single(run.success());
    assert!(
        names_at(&doc, "/spec/containers").contains(&"istio-proxy".to_string()),
        "{doc}"
    );
    assert!(
        run.stderr
            .contains("cm.yaml is a whole ConfigMap; using its data.config key"),
        "{}",
        run.stderr
    );
    // The same as passing the `config` key itself.
    let plain = Inject::file(&fixture("pod.yaml"))
        .path_arg("--injectConfigFile", &dir.path("config.yaml"))
        .path_arg("--valuesFile", &values)
        .run();
    assert_eq!(docs(plain.success()), [doc]);

    // With its `values` key and no --valuesFile, the ConfigMap's values are used too.
    let mut values_block = String::new();
    for line in outrigger_inject::config::defaults::VALUES.lines() {
        values_block.push_str("    ");
        values_block.push_str(line);
        values_block.push('\n');
    }
    let whole = dir.write(
        "cm-whole.yaml",
        &format!("{}  values: |\n{values_block}", read(&cm)),
    );
    let run = Inject::file(&fixture("pod.yaml"))
        .path_arg("--injectConfigFile", &whole)
        .run();
    assert_eq!(docs(run.success()), [docs(plain.success()).remove(0)]);
    assert!(
        run.stderr
            .contains("using its data.config and data.values keys"),
        "{}",
        run.stderr
    );
    // Templates without values: a warning naming the missing flag.
    let run = Inject::file(&fixture("pod.yaml"))
        .path_arg("--injectConfigFile", &dir.path("config.yaml"))
        .run();
    assert!(
        run.stderr
            .contains("config.yaml has templates but no --valuesFile was given"),
        "{}",
        run.stderr
    );

    let without = dir.write("cm-values.yaml", "kind: ConfigMap\ndata:\n  values: '{}'\n");
    let run = Inject::file(&fixture("pod.yaml"))
        .path_arg("--injectConfigFile", &without)
        .run();
    let err = run.failure();
    for want in ["cm-values.yaml", "data.config", "jsonpath='{.data.config}'"] {
        assert!(err.contains(want), "{want:?} missing:\n{err}");
    }
}

#[test]
fn workload_without_containers_or_pod_template_is_refused() {
    let cases = [
        (
            "kind: Service\nmetadata: {name: s}\n---\napiVersion: apps/v1\nkind: Deployment\n\
             metadata: {name: web, namespace: shop}\nspec:\n  template:\n    spec:\n      containers: []\n",
            "document 1 (Deployment \"shop/web\")",
            "spec.template.spec.containers",
        ),
        (
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: bare}\nspec: {replicas: 1}\n",
            "document 0 (Deployment \"bare\")",
            "no pod template",
        ),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {}\n",
            "document 0 (Pod \"p\")",
            "spec.containers",
        ),
        (
            "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: c}\nspec:\n  jobTemplate:\n    spec: {}\n",
            "document 0 (CronJob \"c\")",
            "spec.jobTemplate.spec.template.spec",
        ),
        (
            "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: p}\n",
            "items[0]",
            "spec.containers",
        ),
    ];
    for (input, who, what) in cases {
        let run = Inject::new().arg("-f").arg("-").stdin(input).run();
        let err = run.failure();
        assert!(
            err.contains(who) && err.contains(what) && err.contains("nothing to inject into"),
            "{who}: {err}"
        );
    }
    // Not injected anyway: passed on as they are.
    let skipped = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations: {sidecar.istio.io/inject: \"false\"}\nspec: {}\n";
    Inject::new()
        .arg("-f")
        .arg("-")
        .stdin(skipped)
        .run()
        .success();
}

// ---------------------------------------------------------------------------------------------
// Bad input (issue 2, item 7): non-zero exit, a message naming the cause, never a panic
// ---------------------------------------------------------------------------------------------

mod bad_input {
    use super::*;

    fn bad(name: &str) -> std::path::PathBuf {
        fixture(&format!("bad/{name}"))
    }

    /// Assert `err` contains every piece.
    fn says(err: &str, pieces: &[&str]) {
        for p in pieces {
            assert!(err.contains(p), "expected {p:?} in the error:\n{err}");
        }
    }

    /// Whether `err` has `line N` for some number N.
    fn has_line(err: &str) -> bool {
        err.match_indices("line ")
            .any(|(i, _)| err[i + 5..].starts_with(|c: char| c.is_ascii_digit()))
    }

    #[test]
    fn malformed_yaml_names_the_document_and_line() {
        let run = Inject::file(&bad("malformed-yaml.yaml")).run();
        // The parser notices the unclosed flow mapping of line 10 of the file at line 6 of the
        // document, which go-yaml reports as line 5 (it numbers parser errors from 0): the
        // message gives that line of the file.
        says(
            run.failure(),
            &["malformed-yaml.yaml", "document 1", "yaml: line 10:"],
        );
    }

    #[test]
    fn failed_run_keeps_earlier_documents_on_stdout_and_writes_no_file() {
        // Documents are written as they are injected (memory follows the largest document), so,
        // as with istioctl, the documents before the failing one are on standard output
        // and the error says so. With -o the file is only created when the whole run succeeds.
        let run = Inject::file(&bad("malformed-yaml.yaml")).run();
        let err = run.failure();
        let written = docs(&run.stdout);
        assert_eq!(written.len(), 1, "document 0 only:\n{}", run.stdout);
        assert!(
            err.contains("the 1 document before it was written to standard output"),
            "{err}"
        );
        let dir = TempDir::new("failed-run-output");
        let target = dir.path("out.yaml");
        let run = Inject::file(&bad("malformed-yaml.yaml"))
            .path_arg("-o", &target)
            .run();
        run.failure();
        assert!(!target.exists(), "-o file written by a failed run");
        let left: Vec<_> = std::fs::read_dir(dir.path("."))
            .expect("temp dir")
            .collect();
        assert!(left.is_empty(), "files left behind: {left:?}");
        // An existing file is left as it was.
        std::fs::write(&target, "previous\n").expect("writing the old output");
        Inject::file(&bad("malformed-yaml.yaml"))
            .path_arg("-o", &target)
            .run()
            .failure();
        assert_eq!(read(&target), "previous\n");
    }

    #[test]
    fn bad_document_separator_is_reported() {
        let run = Inject::new()
            .arg("-f")
            .arg("-")
            .stdin("kind: Service\n--- junk\nkind: Pod\n")
            .run();
        says(run.failure(), &["invalid Yaml document separator", "junk"]);
    }

    #[test]
    fn malformed_values_json_names_the_file_and_line() {
        let run = Inject::file(&hello())
            .path_arg("--valuesFile", &bad("values-malformed.json"))
            .run();
        let err = run.failure();
        says(err, &["values-malformed.json"]);
        assert!(has_line(err), "no line number: {err}");
    }

    #[test]
    fn values_that_are_not_an_object_are_rejected() {
        let dir = TempDir::new("values-array");
        let values = dir.write("values.json", "[1, 2, 3]\n");
        let run = Inject::file(&hello())
            .path_arg("--valuesFile", &values)
            .run();
        says(run.failure(), &["values.json"]);
    }

    #[test]
    fn malformed_mesh_config_names_the_file() {
        let dir = TempDir::new("mesh-bad");
        let mesh = dir.write("mesh.yaml", "defaultConfig:\n  concurrency: [1\n");
        let run = Inject::file(&hello())
            .path_arg("--meshConfigFile", &mesh)
            .run();
        says(run.failure(), &["mesh.yaml"]);
    }

    #[test]
    fn document_without_kind_names_the_document() {
        let run = Inject::file(&bad("no-kind.yaml")).run();
        says(run.failure(), &["document 1", "Kind"]);
    }

    #[test]
    fn non_mapping_document_is_rejected() {
        let run = Inject::file(&bad("not-a-mapping.yaml")).run();
        says(run.failure(), &["document 0", "mapping"]);
        let scalar = Inject::new()
            .arg("-f")
            .arg("-")
            .stdin("kind: Service\n---\njust a string\n")
            .run();
        says(scalar.failure(), &["document 1", "mapping"]);
    }

    #[test]
    fn containers_of_the_wrong_type_name_the_field() {
        let run = Inject::file(&bad("containers-not-list.yaml")).run();
        says(run.failure(), &["document 0", "containers"]);
    }

    #[test]
    fn run_as_user_string_names_the_field() {
        let run = Inject::file(&bad("runasuser-string.yaml")).run();
        says(run.failure(), &["document 0", "runAsUser"]);
    }

    #[test]
    fn template_parse_error_names_the_template_and_line() {
        let run = Inject::file(&hello())
            .path_arg("--injectConfigFile", &bad("template-parse-error.yaml"))
            .run();
        // The broken action is on line 5 of the template.
        says(
            run.failure(),
            &[
                "template-parse-error.yaml",
                "template \"sidecar\"",
                "sidecar:5:",
            ],
        );
    }

    // An `{{ if }}` left open and a stray `{{ end }}` are parse errors, as in Go
    // (`unexpected EOF` / `unexpected {{end}}`).
    #[test]
    fn template_with_an_unclosed_if_is_a_parse_error() {
        let run = Inject::file(&hello())
            .path_arg("--injectConfigFile", &bad("template-unclosed-if.yaml"))
            .run();
        says(run.failure(), &["template \"sidecar\""]);
    }

    #[test]
    fn template_with_a_stray_end_is_a_parse_error() {
        let run = Inject::file(&hello())
            .path_arg("--injectConfigFile", &bad("template-stray-end.yaml"))
            .run();
        says(run.failure(), &["template \"sidecar\"", "sidecar:3:"]);
    }

    #[test]
    fn template_execution_error_names_the_line() {
        let run = Inject::file(&hello())
            .path_arg("--injectConfigFile", &bad("template-exec-error.yaml"))
            .run();
        let err = run.failure();
        // The failing action is on line 4 of the template.
        says(err, &["inject:4:", "document 0", "index out of range"]);
    }

    #[test]
    fn unknown_template_name_is_reported() {
        let run = Inject::file(&bad("unknown-template.yaml")).run();
        says(
            run.failure(),
            &[
                "requested template \"no-such-template\" not found",
                "have sidecar",
            ],
        );
    }

    /// One bad value per validated annotation, with a fragment of the expected reason.
    const BAD_ANNOTATIONS: [(&str, &str, &str); 19] = [
        (
            "sidecar.istio.io/interceptionMode",
            "BOGUS",
            "interceptionMode invalid",
        ),
        (
            "status.sidecar.istio.io/port",
            "99999",
            // [quirk] the status port error is labelled excludeInboundPorts.
            "excludeInboundPorts invalid: failed parsing port '99999'",
        ),
        (
            "readiness.status.sidecar.istio.io/initialDelaySeconds",
            "-1",
            "strconv.ParseUint",
        ),
        (
            "readiness.status.sidecar.istio.io/periodSeconds",
            "x",
            "invalid syntax",
        ),
        (
            "readiness.status.sidecar.istio.io/failureThreshold",
            "99999999999",
            "value out of range",
        ),
        (
            "traffic.sidecar.istio.io/includeOutboundIPRanges",
            "10.0.0.0",
            "no '/'",
        ),
        (
            "traffic.sidecar.istio.io/excludeOutboundIPRanges",
            "*",
            "excludeIPRanges invalid",
        ),
        (
            "traffic.sidecar.istio.io/includeInboundPorts",
            "80,,90",
            "includeInboundPorts invalid",
        ),
        (
            "traffic.sidecar.istio.io/excludeInboundPorts",
            "abc",
            "excludeInboundPorts invalid",
        ),
        (
            "traffic.sidecar.istio.io/excludeOutboundPorts",
            "70000",
            "excludeOutboundPorts invalid",
        ),
        (
            "traffic.sidecar.istio.io/excludeInterfaces",
            "eth0,,eth1",
            "empty interface name",
        ),
        (
            "traffic.sidecar.istio.io/kubevirtInterfaces",
            "averyveryverylongname",
            "too long",
        ),
        (
            "istio.io/reroute-virtual-interfaces",
            "1eth",
            "invalid characters",
        ),
        (
            "prometheus.istio.io/merge-metrics",
            "maybe",
            "strconv.ParseBool",
        ),
        ("proxy.istio.io/config", "proxyAdminPort: 70000", "70000"),
        ("sidecar.istio.io/proxyCPU", "lots", "quantities must match"),
        (
            "sidecar.istio.io/proxyMemory",
            "1Qi",
            "quantities must match",
        ),
        (
            "sidecar.istio.io/proxyCPULimit",
            "1.2.3",
            "quantities must match",
        ),
        (
            "sidecar.istio.io/proxyMemoryLimit",
            "12\u{7}",
            "control characters",
        ),
    ];

    fn pod_with_annotation(name: &str, value: &str) -> String {
        let quoted = serde_json::to_string(value).expect("string encodes");
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: annotated\n  annotations:\n    {name}: {quoted}\n\
             spec:\n  containers:\n  - name: app\n    image: example/app:1\n"
        )
    }

    #[test]
    fn invalid_annotation_values_name_the_annotation() {
        let mut failures = Vec::new();
        for (name, value, reason) in BAD_ANNOTATIONS {
            let run = Inject::new()
                .arg("-f")
                .arg("-")
                .stdin(&pod_with_annotation(name, value))
                .run();
            assert!(
                !run.stderr.contains("panicked"),
                "{name}: panic\n{}",
                run.stderr
            );
            let expected_prefix = if name == "proxy.istio.io/config" {
                // Applied to the mesh config before validation (as istioctl does): any message naming it.
                name.to_string()
            } else {
                format!("invalid value '{value}' for annotation '{name}'")
            };
            if run.ok || !run.stderr.contains(&expected_prefix) || !run.stderr.contains(reason) {
                failures.push(format!(
                    "{name}={value:?}: ok={} stderr={}",
                    run.ok, run.stderr
                ));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn valid_annotation_values_are_accepted() {
        let good = [
            ("sidecar.istio.io/interceptionMode", "TPROXY"),
            ("status.sidecar.istio.io/port", " 15021 "),
            ("traffic.sidecar.istio.io/includeOutboundIPRanges", "*"),
            ("traffic.sidecar.istio.io/excludeInboundPorts", "8080, 9090"),
            ("prometheus.istio.io/merge-metrics", "F"),
            ("sidecar.istio.io/proxyCPU", "500m"),
        ];
        for (name, value) in good {
            let run = Inject::new()
                .arg("-f")
                .arg("-")
                .stdin(&pod_with_annotation(name, value))
                .run();
            run.success();
        }
    }

    #[test]
    fn missing_input_file_is_reported() {
        let run = Inject::file(std::path::Path::new("/nonexistent/outrigger/input.yaml")).run();
        says(run.failure(), &["/nonexistent/outrigger/input.yaml"]);
    }

    #[test]
    fn missing_config_files_are_reported() {
        for flag in ["--injectConfigFile", "--valuesFile", "--meshConfigFile"] {
            let run = Inject::file(&hello())
                .arg(flag)
                .arg("/nonexistent/outrigger/cfg")
                .run();
            says(run.failure(), &["/nonexistent/outrigger/cfg"]);
        }
    }

    #[test]
    fn directory_as_input_is_reported() {
        let run = Inject::file(&repo_root().join("tests/fixtures")).run();
        says(run.failure(), &["fixtures"]);
    }

    #[test]
    fn non_utf8_input_is_reported() {
        let dir = TempDir::new("non-utf8");
        let p = dir.path("latin1.yaml");
        std::fs::write(&p, b"kind: Pod\nmetadata: {name: caf\xe9}\n").expect("writing");
        let run = Inject::file(&p).run();
        says(run.failure(), &["latin1.yaml"]);
    }

    #[test]
    fn empty_input_is_an_error() {
        let dir = TempDir::new("empty");
        for (name, text) in [
            ("empty.yaml", ""),
            ("comments.yaml", "# nothing here\n---\n\n---\n"),
        ] {
            let p = dir.write(name, text);
            let run = Inject::file(&p).run();
            says(run.failure(), &[name, "no Kubernetes objects"]);
        }
        let stdin = Inject::new().arg("-f").arg("-").stdin("").run();
        says(stdin.failure(), &["standard input"]);
    }

    #[test]
    fn bad_flag_values_are_usage_errors() {
        let run = Inject::file(&hello())
            .arg("--native-sidecars")
            .arg("maybe")
            .run();
        assert!(!run.ok);
        assert!(run.stderr.contains("maybe"), "{}", run.stderr);
        assert!(!run.stderr.contains("panicked"));
        let no_file = Inject::new().run();
        assert!(!no_file.ok);
        assert!(no_file.stderr.contains("--filename"), "{}", no_file.stderr);
    }
}

/// `inject --native-sidecars true` of a pod whose only container is `istio-proxy` would leave
/// it no containers: written as istioctl kube-inject writes it, with a warning naming the API
/// server's rule; the same pod without native sidecars gets no warning.
#[test]
fn an_injection_the_api_server_would_refuse_names_the_rule() {
    let pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: gw\nspec:\n  containers:\n  - name: istio-proxy\n    image: auto\n";
    let run = Inject::new()
        .args(["-f", "-", "--native-sidecars", "true"])
        .stdin(pod)
        .run();
    run.success();
    let err = &run.stderr;
    assert!(
        err.contains(
            "the injected pod would be refused by the API server: spec.containers: Required \
             value (validateContainers)"
        ),
        "{err}"
    );
    assert!(run.stdout.contains("initContainers:"), "{}", run.stdout);
    let run = Inject::new()
        .args(["-f", "-", "--native-sidecars", "false"])
        .stdin(pod)
        .run();
    run.success();
    assert!(!run.stderr.contains("would be refused"), "{}", run.stderr);
}
