//! `outrigger inject`'s flags on the real binary with the embedded default configuration:
//! input and output (`-f -`, `-o`), `--diff`, native sidecars, the configuration files
//! (`--valuesFile`, `--meshConfigFile`, `--injectConfigFile`), `--revision` and `--reinject`.

#[allow(dead_code)] // the helpers of the inject tests; this file uses some
mod support;

use serde_json::{json, Value};
use support::{docs, fixture, hello, names_at, read, repo_root, single, Inject, TempDir};

#[test]
fn stdin_input_matches_file_input() {
    let from_file = Inject::file(&hello()).run();
    let from_stdin = Inject::new().args(["-f", "-"]).stdin(&read(&hello())).run();
    assert_eq!(from_stdin.success(), from_file.success());
    assert!(!from_file.stdout.is_empty());
}

#[test]
fn output_flag_writes_the_file_and_nothing_to_stdout() {
    let dir = TempDir::new("output-flag");
    let target = dir.path("out.yaml");
    let to_file = Inject::file(&hello()).path_arg("-o", &target).run();
    assert_eq!(to_file.success(), "", "stdout must stay empty with -o");
    let to_stdout = Inject::file(&hello()).run();
    assert_eq!(read(&target), to_stdout.success());
}

#[test]
fn output_flag_may_name_the_input_file() {
    // The input is read while the output goes to a file beside it, renamed at the end.
    let dir = TempDir::new("output-in-place");
    let path = dir.write("app.yaml", &read(&hello()));
    let expected = Inject::file(&hello()).run();
    Inject::file(&path).path_arg("-o", &path).run().success();
    assert_eq!(read(&path), expected.success());
}

#[test]
fn output_flag_to_an_unwritable_path_fails_cleanly() {
    let dir = TempDir::new("output-unwritable");
    let target = dir.path("no/such/dir/out.yaml");
    let run = Inject::file(&hello()).path_arg("-o", &target).run();
    let err = run.failure();
    assert!(err.contains("out.yaml"), "{err}");
}

#[test]
fn revision_flag_reaches_the_template() {
    let meta = "/spec/template/metadata/annotations/istio.io~1rev";
    let canary = single(
        Inject::file(&fixture("deployment.yaml"))
            .arg("--revision")
            .arg("canary")
            .run()
            .success(),
    );
    assert_eq!(canary.pointer(meta), Some(&json!("canary")));
    let default = single(
        Inject::file(&fixture("deployment.yaml"))
            .arg("--revision")
            .arg("default")
            .run()
            .success(),
    );
    assert_eq!(default.pointer(meta), Some(&json!("default")));
}

// ---------------------------------------------------------------------------------------------
// --diff
// ---------------------------------------------------------------------------------------------

#[test]
fn diff_shows_the_added_sidecar_lines() {
    let out = Inject::file(&hello()).arg("--diff").run();
    // Something changed: exit status 1, as `diff` and `kubectl diff`.
    let text = out.exited(1);
    assert!(!text.contains('\x1b'), "no colour when not on a terminal");
    let added: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with('+') && !l.starts_with("+++"))
        .collect();
    assert!(
        added.iter().any(|l| l.contains("name: istio-proxy")),
        "no istio-proxy line:\n{text}"
    );
    assert!(
        added.iter().any(|l| l.contains("name: istio-init")),
        "no istio-init line:\n{text}"
    );
    assert!(
        text.contains("--- Deployment demo/hello (document 0, as read)")
            && text.contains("+++ Deployment demo/hello (document 0, injected)"),
        "diff header should name the workload:\n{text}"
    );
    // The Service is not part of the diff. The original side is the document's bytes as
    // written, so its comment (which the output does not keep) is shown removed; the
    // application image is still there.
    assert!(!text.contains("kind: Service"), "{text}");
    assert!(text.contains("\n-# A small Deployment"), "{text}");
    let image = |l: &str| l[1..].trim_start_matches([' ', '-']).to_string();
    let removed: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with('-') && !l.starts_with("---") && l.contains("image:"))
        .map(image)
        .collect();
    let added: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with('+') && l.contains("image:"))
        .map(image)
        .collect();
    for r in &removed {
        assert!(
            added.contains(r),
            "{r:?} removed and not added back:\n{text}"
        );
    }
}

/// The original side is the input's bytes as written, as `diff` would compare them: its
/// comments and its key order are kept (the output's own order then shows as changes), and
/// every line it shows as removed or unchanged is a line of the input, verbatim.
#[test]
fn diff_compares_with_the_bytes_as_written() {
    let pod = "# my pod\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - \
               image: nginx # pinned\n    name: web\n    ports:\n    - name: http\n      containerPort: \
               8080\n    args: [\"--a\"]\n";
    let out = Inject::new().args(["-f", "-", "--diff"]).stdin(pod).run();
    let text = out.exited(1);
    let input: Vec<&str> = pod.lines().collect();
    let original: Vec<&str> = text
        .lines()
        .skip(2)
        .filter(|l| !l.starts_with('+') && !l.starts_with("@@"))
        .map(|l| &l[1..])
        .collect();
    assert!(!original.is_empty(), "{text}");
    for l in &original {
        assert!(
            input.contains(l),
            "{l:?} is not a line of the input:\n{text}"
        );
    }
    assert!(text.contains("\n-# my pod\n"), "{text}");
    assert!(text.contains("\n-  - image: nginx # pinned\n"), "{text}");
    assert!(text.contains("name: istio-proxy"), "{text}");
}

/// Re-injecting an injected manifest changes nothing, and the summary says so.
#[test]
fn reinjection_is_reported_unchanged() {
    let first = Inject::file(&hello()).run();
    let again = Inject::new().args(["-f", "-"]).stdin(first.success()).run();
    assert_eq!(docs(again.success()), docs(first.success()));
    assert!(
        again
            .stderr
            .contains("2 documents: 1 unchanged (already injected), 1 passed through"),
        "{}",
        again.stderr
    );
    assert!(first
        .stderr
        .contains("2 documents: 1 injected, 1 passed through"));
}

#[test]
fn diff_of_an_output_reinjected_is_empty_and_exits_0() {
    let first = Inject::file(&hello()).run();
    let out = Inject::new()
        .arg("-f")
        .arg("-")
        .arg("--diff")
        .stdin(first.success())
        .run();
    assert_eq!(out.success(), "");
}

#[test]
fn diff_colour_follows_the_flag_and_no_color() {
    let coloured = Inject::file(&hello())
        .arg("--diff")
        .arg("--color")
        .arg("always")
        .run();
    let text = coloured.exited(1);
    assert!(
        text.contains("\x1b[32m+") && text.contains("\x1b[31m-") && text.contains("\x1b[36m@@"),
        "{text}"
    );
    assert!(text.contains("\x1b[1m--- Deployment demo/hello"), "{text}");
    let plain = Inject::file(&hello())
        .arg("--diff")
        .arg("--color")
        .arg("never")
        .run();
    assert!(!plain.exited(1).contains('\x1b'));
    // auto: never when standard output is not a terminal, whatever NO_COLOR says.
    let auto = Inject::file(&hello())
        .arg("--diff")
        .env("NO_COLOR", "")
        .run();
    assert_eq!(auto.exited(1), plain.stdout);
}

#[test]
fn diff_error_exits_2() {
    let run = Inject::new()
        .arg("-f")
        .arg("-")
        .arg("--diff")
        .stdin("kind: Pod\nmetadata: {name: p}\nspec: {}\n")
        .run();
    run.failure();
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    let plain = Inject::new()
        .arg("-f")
        .arg("-")
        .stdin("kind: Pod\nmetadata: {name: p}\nspec: {}\n")
        .run();
    plain.failure();
    assert_eq!(plain.code, Some(2));
}

#[test]
fn diff_of_pass_through_only_input_is_empty() {
    let input = read(&hello());
    let service = outrigger_go::yaml::split_documents(&input).expect("hello splits")[1].clone();
    let out = Inject::new()
        .arg("-f")
        .arg("-")
        .arg("--diff")
        .stdin(&service)
        .run();
    assert_eq!(out.success(), "");
}

#[test]
fn diff_of_skipped_workloads_is_empty() {
    for name in ["hostnetwork.yaml", "inject-disabled.yaml"] {
        let out = Inject::file(&fixture(name)).arg("--diff").run();
        assert_eq!(out.success(), "", "{name}");
    }
}

// ---------------------------------------------------------------------------------------------
// Native sidecars
// ---------------------------------------------------------------------------------------------

/// Where istio-proxy landed: `(in initContainers with restartPolicy Always, in containers)`.
fn proxy_placement(run: &support::Run) -> (bool, bool) {
    let doc = single(run.success());
    let native = doc["spec"]["initContainers"]
        .as_array()
        .map(|a| {
            a.iter()
                .any(|c| c["name"] == "istio-proxy" && c["restartPolicy"] == "Always")
        })
        .unwrap_or(false);
    let sidecar = names_at(&doc, "/spec/containers").contains(&"istio-proxy".into());
    (native, sidecar)
}

#[test]
fn native_sidecars_flag_places_the_proxy() {
    let pod = fixture("pod.yaml");
    let on = Inject::file(&pod)
        .arg("--native-sidecars")
        .arg("true")
        .run();
    assert_eq!(
        proxy_placement(&on),
        (true, false),
        "--native-sidecars true"
    );
    let off = Inject::file(&pod)
        .arg("--native-sidecars")
        .arg("false")
        .run();
    assert_eq!(
        proxy_placement(&off),
        (false, true),
        "--native-sidecars false"
    );
    let native = single(on.success());
    let inits = names_at(&native, "/spec/initContainers");
    assert_eq!(
        inits,
        ["istio-init", "istio-proxy"],
        "native proxy follows istio-init"
    );
}

#[test]
fn native_sidecars_auto_follows_the_environment() {
    let pod = fixture("pod.yaml");
    let auto_on = Inject::file(&pod)
        .arg("--native-sidecars")
        .arg("auto")
        .env("ENABLE_NATIVE_SIDECARS", "true")
        .run();
    assert_eq!(
        proxy_placement(&auto_on),
        (true, false),
        "auto + ENABLE_NATIVE_SIDECARS=true"
    );
    let unset_on = Inject::file(&pod)
        .env("ENABLE_NATIVE_SIDECARS", "true")
        .run();
    assert_eq!(
        proxy_placement(&unset_on),
        (true, false),
        "no flag + ENABLE_NATIVE_SIDECARS=true"
    );
    let auto_off = Inject::file(&pod)
        .arg("--native-sidecars")
        .arg("auto")
        .run();
    assert_eq!(
        proxy_placement(&auto_off),
        (false, true),
        "auto without the variable"
    );
    let flag_wins = Inject::file(&pod)
        .arg("--native-sidecars")
        .arg("false")
        .env("ENABLE_NATIVE_SIDECARS", "true")
        .run();
    assert_eq!(
        proxy_placement(&flag_wins),
        (false, true),
        "explicit false beats the variable"
    );
}

#[test]
fn unknown_enable_native_sidecars_value_is_warned_about() {
    let run = Inject::file(&fixture("pod.yaml"))
        .env("ENABLE_NATIVE_SIDECARS", "bogus")
        .run();
    run.success();
    assert!(
        run.stderr.contains(
            "warning: Unknown value for ENABLE_NATIVE_SIDECARS: bogus, defaulting to false (accepted values: true, false, auto)"
        ),
        "{}",
        run.stderr
    );
    assert_eq!(proxy_placement(&run), (false, true), "off, as Istio");
    // Known values and an explicit flag: no warning.
    for (value, flag) in [("auto", None), ("true", None), ("bogus", Some("false"))] {
        let mut cmd = Inject::file(&fixture("pod.yaml")).env("ENABLE_NATIVE_SIDECARS", value);
        if let Some(f) = flag {
            cmd = cmd.arg("--native-sidecars").arg(f);
        }
        let run = cmd.run();
        run.success();
        assert!(!run.stderr.contains("warning"), "{value}: {}", run.stderr);
    }
}

#[test]
fn native_sidecar_annotation_overrides_the_flag() {
    let input = read(&fixture("pod.yaml"))
        .replace("team: payments", "sidecar.istio.io/nativeSidecar: \"true\"");
    let out = Inject::new()
        .arg("-f")
        .arg("-")
        .arg("--native-sidecars")
        .arg("false")
        .stdin(&input)
        .run();
    assert_eq!(proxy_placement(&out), (true, false));
}

#[test]
fn per_pod_annotations_reach_the_output() {
    let doc = single(Inject::file(&fixture("annotations.yaml")).run().success());
    let init = doc["spec"]["initContainers"][0].clone();
    assert_eq!(init["name"], json!("istio-init"));
    let args: Vec<&str> = init["args"]
        .as_array()
        .expect("init args")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let after = |flag: &str| {
        args.iter()
            .position(|a| *a == flag)
            .and_then(|i| args.get(i + 1))
            .copied()
    };
    assert_eq!(after("-m"), Some("TPROXY"));
    assert_eq!(after("-i"), Some("10.0.0.0/8,172.16.0.0/12"));
    assert_eq!(after("-x"), Some("10.96.0.1/32"));
    assert_eq!(after("-b"), Some("8080,9090"));
    assert_eq!(after("-o"), Some("5432"));
    assert!(
        after("-d").is_some_and(|d| d.split(',').any(|p| p == "9091")),
        "{args:?}"
    );
    // holdApplicationUntilProxyStarts (proxy.istio.io/config) puts the proxy first.
    assert_eq!(
        names_at(&doc, "/spec/containers"),
        ["istio-proxy", "sidecar-helper", "web"]
    );
    let proxy = proxy_of(&doc);
    assert_eq!(
        proxy["resources"]["requests"],
        json!({"cpu": "50m", "memory": "64Mi"})
    );
    assert_eq!(
        proxy["resources"]["limits"],
        json!({"cpu": "1", "memory": "256Mi"})
    );
    assert_eq!(
        env_value(&proxy, "ISTIO_META_INTERCEPTION_MODE").as_deref(),
        Some("TPROXY")
    );
    let pc: Value = serde_json::from_str(&env_value(&proxy, "PROXY_CONFIG").expect("PROXY_CONFIG"))
        .expect("JSON");
    assert_eq!(pc["holdApplicationUntilProxyStarts"], json!(true));
    // Prometheus merge: the app's scrape settings move into the proxy's environment.
    let prom: Value = serde_json::from_str(
        &env_value(&proxy, "ISTIO_PROMETHEUS_ANNOTATIONS").expect("prometheus env"),
    )
    .expect("JSON");
    assert_eq!(
        prom,
        json!({"scrape": "true", "path": "/metrics", "port": "9090"})
    );
    assert_eq!(
        doc.pointer("/metadata/annotations/prometheus.io~1port"),
        Some(&json!("15020"))
    );
    // Probe rewriting.
    let web = &doc["spec"]["containers"][2];
    assert_eq!(
        web["readinessProbe"]["httpGet"]["path"],
        json!("/app-health/web/readyz")
    );
    assert_eq!(
        web["livenessProbe"]["httpGet"]["path"],
        json!("/app-health/web/livez")
    );
    let probers: Value =
        serde_json::from_str(&env_value(&proxy, "ISTIO_KUBE_APP_PROBERS").expect("probers env"))
            .expect("JSON");
    assert_eq!(
        probers["/app-health/web/livez"]["httpGet"]["path"],
        json!("/live")
    );
    // A user-set default container is kept.
    assert_eq!(
        doc.pointer("/metadata/annotations/kubectl.kubernetes.io~1default-container"),
        Some(&json!("web"))
    );
}

// ---------------------------------------------------------------------------------------------
// Configuration flags
// ---------------------------------------------------------------------------------------------

/// The proxy container of an injected single-pod output.
fn proxy_of(doc: &Value) -> Value {
    let containers = doc
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    containers
        .into_iter()
        .find(|c| c["name"] == "istio-proxy")
        .expect("an istio-proxy container")
}

fn env_value(container: &Value, name: &str) -> Option<String> {
    container["env"]
        .as_array()?
        .iter()
        .find(|e| e["name"] == name)?["value"]
        .as_str()
        .map(str::to_string)
}

#[test]
fn values_file_replaces_the_embedded_values() {
    let dir = TempDir::new("values-file");
    let values = read(&repo_root().join("crates/outrigger-inject/defaults/values.json")).replace(
        "\"hub\": \"docker.io/istio\"",
        "\"hub\": \"registry.example.com/mesh\"",
    );
    assert!(
        values.contains("registry.example.com/mesh"),
        "embedded values changed shape"
    );
    let file = dir.write("values.json", &values);
    let doc = single(
        Inject::file(&fixture("pod.yaml"))
            .path_arg("--valuesFile", &file)
            .run()
            .success(),
    );
    let image = proxy_of(&doc)["image"].as_str().unwrap_or("").to_string();
    assert!(
        image.starts_with("registry.example.com/mesh/proxyv2:"),
        "{image}"
    );
}

#[test]
fn mesh_config_file_reaches_the_proxy_config() {
    let dir = TempDir::new("mesh-file");
    let mesh = dir.write(
        "mesh.yaml",
        "defaultConfig:\n  discoveryAddress: istiod.mesh-x.svc:15012\n",
    );
    let doc = single(
        Inject::file(&fixture("pod.yaml"))
            .path_arg("--meshConfigFile", &mesh)
            .run()
            .success(),
    );
    let pc = env_value(&proxy_of(&doc), "PROXY_CONFIG").expect("PROXY_CONFIG env");
    let pc: Value = serde_json::from_str(&pc).expect("PROXY_CONFIG is JSON");
    assert_eq!(pc["discoveryAddress"], json!("istiod.mesh-x.svc:15012"));
}

#[test]
fn inject_config_file_may_be_a_bare_template() {
    // As istioctl: a file that is not an injector config with templates is the template `sidecar`.
    let dir = TempDir::new("bare-template");
    let template = dir.write(
        "template.yaml",
        "spec:\n  containers:\n  - name: istio-proxy\n    image: example/proxy:{{ .Revision | default \"none\" }}\n",
    );
    let doc = single(
        Inject::file(&fixture("pod.yaml"))
            .path_arg("--injectConfigFile", &template)
            .run()
            .success(),
    );
    assert_eq!(proxy_of(&doc)["image"], json!("example/proxy:none"));
    assert!(
        names_at(&doc, "/spec/initContainers").is_empty(),
        "only what the template adds"
    );
}

#[test]
fn inject_config_file_with_several_templates_uses_sidecar() {
    let dir = TempDir::new("config-templates");
    let config = dir.write(
        "config.yaml",
        "templates:\n  sidecar: |\n    spec:\n      containers:\n      - name: istio-proxy\n        image: from-sidecar\n  \
         other: |\n    metadata:\n      labels: {other: applied}\n",
    );
    let doc = single(
        Inject::file(&fixture("pod.yaml"))
            .path_arg("--injectConfigFile", &config)
            .run()
            .success(),
    );
    assert_eq!(proxy_of(&doc)["image"], json!("from-sidecar"));
    assert!(
        doc.pointer("/metadata/labels/other").is_none(),
        "kube-inject applies only `sidecar`"
    );
    // The pod can ask for several templates, applied in order.
    let input = read(&fixture("pod.yaml"))
        .replace("team: payments", "inject.istio.io/templates: sidecar,other");
    let run = Inject::new()
        .arg("-f")
        .arg("-")
        .path_arg("--injectConfigFile", &config)
        .stdin(&input)
        .run();
    let doc = single(run.success());
    assert_eq!(
        doc.pointer("/metadata/labels/other"),
        Some(&json!("applied"))
    );
}

#[test]
fn broken_second_template_is_named() {
    let dir = TempDir::new("config-broken-other");
    let config = dir.write(
        "config.yaml",
        "templates:\n  sidecar: |\n    spec: {}\n  gateway: |\n    metadata:\n      labels: {{ nosuchfunc }}\n",
    );
    let run = Inject::file(&hello())
        .path_arg("--injectConfigFile", &config)
        .run();
    let err = run.failure();
    assert!(
        err.contains("template \"gateway\"") && err.contains("gateway:2"),
        "{err}"
    );
}

#[test]
fn warnings_follow_an_empty_line_on_stderr() {
    // As istioctl: an empty line, then each warning.
    let out = Inject::file(&fixture("hostnetwork.yaml")).run();
    out.success();
    assert!(
        out.stderr.starts_with("\n===> Skipping injection because "),
        "{:?}",
        out.stderr
    );
}

// ---------------------------------------------------------------------------------------------
// revisions
// ---------------------------------------------------------------------------------------------

const CANARY_POD: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  labels:\n    istio.io/rev: canary\nspec:\n  containers:\n  - name: app\n    image: app\n";

/// The value of env var `name` of the istio-proxy container of a pod document.
fn proxy_env(doc: &Value, name: &str) -> Option<String> {
    let containers = doc["spec"]["containers"].as_array()?;
    let proxy = containers.iter().find(|c| c["name"] == "istio-proxy")?;
    proxy["env"]
        .as_array()?
        .iter()
        .find(|e| e["name"] == name)
        .and_then(|e| e["value"].as_str())
        .map(str::to_string)
}

/// A pod asking for revision canary, injected without `--revision`: the output is istioctl's
/// (annotated with the default revision), and a warning names the revision it asked for.
#[test]
fn a_pod_asking_for_another_revision_is_warned_about() {
    let out = Inject::new().args(["-f", "-"]).stdin(CANARY_POD).run();
    let d = docs(out.success());
    assert_eq!(d[0]["metadata"]["annotations"]["istio.io/rev"], "default");
    assert!(
        out.stderr.contains(
            "Pod \"p\" asks for revision \"canary\" (label istio.io/rev) but is injected with \
             revision \"default\"; pass --revision canary"
        ),
        "{}",
        out.stderr
    );
    let out = Inject::new()
        .args(["-f", "-", "--revision", "canary"])
        .stdin(CANARY_POD)
        .run();
    let d = docs(out.success());
    assert!(!out.stderr.contains("asks for revision"), "{}", out.stderr);
    assert_eq!(d[0]["metadata"]["annotations"]["istio.io/rev"], "canary");
}

/// `--revision canary` with the embedded default: the proxies talk to the revision's istiod, as
/// Istio's chart renders a revision (`istiod-canary` in CA_ADDR and the discovery address).
#[test]
fn a_revision_with_the_embedded_default_points_at_its_istiod() {
    let run = |args: &[&str]| {
        let out = Inject::new()
            .args(["-f", "-"])
            .args(args.iter().copied())
            .stdin(CANARY_POD)
            .run();
        docs(out.success()).remove(0)
    };
    let default = run(&[]);
    let canary = run(&["--revision", "canary"]);
    let spelled = run(&["--revision", "default"]);
    assert_eq!(
        proxy_env(&default, "CA_ADDR").as_deref(),
        Some("istiod.istio-system.svc:15012")
    );
    assert_eq!(
        proxy_env(&spelled, "CA_ADDR"),
        proxy_env(&default, "CA_ADDR")
    );
    assert_eq!(
        proxy_env(&canary, "CA_ADDR").as_deref(),
        Some("istiod-canary.istio-system.svc:15012")
    );
    let proxy_config = proxy_env(&canary, "PROXY_CONFIG").unwrap_or_default();
    assert!(
        proxy_config.contains("\"discoveryAddress\":\"istiod-canary.istio-system.svc:15012\""),
        "{proxy_config}"
    );
}

// ---------------------------------------------------------------------------------------------
// --reinject
// ---------------------------------------------------------------------------------------------

/// A manifest injected under one configuration (native sidecars, revision `canary`) and
/// re-injected with `--reinject` under another (the defaults) is what the defaults inject into
/// the original; Istio's re-injection, without the flag, keeps the first sidecar next to the new
/// one.
#[test]
fn reinject_removes_the_previous_injection_completely() {
    let probes = repo_root().join("examples/probes.yaml");
    let first = Inject::file(&probes)
        .args(["--native-sidecars", "true", "--revision", "canary"])
        .run();
    let first = first.success();
    let fresh = Inject::file(&probes).run();
    let reinjected = Inject::new()
        .args(["-f", "-", "--reinject"])
        .stdin(first)
        .run();
    assert_eq!(reinjected.success(), fresh.success());
    // Istio's own re-injection would leave a second `istio-proxy` (an init container and a
    // container), a pod the API server refuses: written as istioctl writes it, with a warning
    // naming the rule.
    let istio = Inject::new().args(["-f", "-"]).stdin(first).run();
    istio.success();
    let err = &istio.stderr;
    assert!(
        err.contains("Duplicate value: \"istio-proxy\"") && err.contains("validateInitContainers"),
        "{err}"
    );
    // On a manifest never injected, the flag changes nothing.
    let plain = Inject::file(&probes).arg("--reinject").run();
    assert_eq!(plain.success(), fresh.success());
}
