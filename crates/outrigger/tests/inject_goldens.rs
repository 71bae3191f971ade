//! `outrigger inject`'s golden outputs: `tests/fixtures/<name>.injected.yaml` next to their
//! inputs and every example under `examples/` with its checked-in `<input>.injected.yaml`,
//! produced with the embedded default configuration. Run with `UPDATE_GOLDEN=1` to regenerate (each changed file's text diff is printed for review)
//! them, otherwise they are compared semantically (document by document, as parsed YAML).

#[allow(dead_code)] // the helpers of the inject tests; this file uses some
mod support;

use serde_json::{json, Value};
use support::{docs, fixture, names_at, read, repo_root, single, Inject};

// ---------------------------------------------------------------------------------------------
// Golden files for the embedded default
// ---------------------------------------------------------------------------------------------

/// Input fixtures: `tests/fixtures/*.yaml` except the golden outputs.
fn input_fixtures() -> Vec<std::path::PathBuf> {
    let dir = repo_root().join("tests/fixtures");
    let mut v: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            n.ends_with(".yaml") && !n.ends_with(".injected.yaml")
        })
        .collect();
    v.sort();
    v
}

#[test]
fn golden_outputs_of_the_embedded_default() {
    let update = std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1");
    let inputs = input_fixtures();
    assert!(inputs.len() >= 14, "fixtures missing: {inputs:?}");
    let mut failures = Vec::new();
    for input in &inputs {
        let golden = input.with_extension("injected.yaml");
        let run = Inject::file(input).run();
        let got = run.success();
        if update {
            bless(&golden, got);
            continue;
        }
        let Ok(want) = std::fs::read_to_string(&golden) else {
            failures.push(format!(
                "{}: golden file missing (run with UPDATE_GOLDEN=1)",
                golden.display()
            ));
            continue;
        };
        if got != want {
            failures.push(format!(
                "{}: output differs from the golden file byte for byte:\n{}",
                input.display(),
                text_diff(&want, got)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// `UPDATE_GOLDEN=1`: write `got` as the golden file `path`, printing the text diff against the
/// old golden first (to be reviewed before committing; never blessed unseen).
fn bless(path: &std::path::Path, got: &str) {
    let old = std::fs::read_to_string(path).unwrap_or_default();
    if old != got {
        eprintln!(
            "UPDATE_GOLDEN: {} changes:\n{}",
            path.display(),
            text_diff(&old, got)
        );
        std::fs::write(path, got).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    }
}

/// A line diff of two texts (the lines from the first difference to the last, `-` the golden's,
/// `+` the output's), at most 40 lines of each.
fn text_diff(want: &str, got: &str) -> String {
    let (w, g): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
    let head = w.iter().zip(&g).take_while(|(a, b)| a == b).count();
    let tail = w[head..]
        .iter()
        .rev()
        .zip(g[head..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let mut out = format!("@@ line {} @@\n", head + 1);
    for l in w[head..w.len() - tail].iter().take(40) {
        out.push_str(&format!("-{l}\n"));
    }
    for l in g[head..g.len() - tail].iter().take(40) {
        out.push_str(&format!("+{l}\n"));
    }
    if want.ends_with('\n') != got.ends_with('\n') {
        out.push_str("(final newline differs)\n");
    }
    out
}

/// Goldens that re-injection still changes.
const KNOWN_NOT_FIXED_POINTS: [&str; 0] = [];

// In TPROXY mode the embedded template runs the proxy as root with NET_ADMIN (as Istio's does;
// Envoy needs it for transparent proxying), so re-injection changes nothing.
#[test]
fn tproxy_injection_is_a_fixed_point() {
    let want = read(&fixture("annotations.injected.yaml"));
    let again = Inject::new().arg("-f").arg("-").stdin(&want).run();
    assert_eq!(docs(again.success()), docs(&want));
}

#[test]
fn golden_outputs_are_stable_under_reinjection() {
    for input in input_fixtures() {
        let golden = input.with_extension("injected.yaml");
        if KNOWN_NOT_FIXED_POINTS.iter().any(|k| golden.ends_with(k)) {
            continue;
        }
        let Ok(want) = std::fs::read_to_string(&golden) else {
            continue;
        };
        let again = Inject::new().arg("-f").arg("-").stdin(&want).run();
        assert_eq!(
            docs(again.success()),
            docs(&want),
            "re-injecting {}",
            golden.display()
        );
    }
}

// ---------------------------------------------------------------------------------------------
// examples/: every example with its checked-in output
// ---------------------------------------------------------------------------------------------

/// The examples (input under `examples/`, extra flags with paths relative to `examples/`) and
/// their outputs, `<input>.injected.yaml`, generated with the embedded defaults (and the
/// example's own files) and reviewed by hand. `UPDATE_GOLDEN=1` regenerates them.
const EXAMPLES: [(&str, &[&str]); 5] = [
    ("hello.yaml", &[]),
    ("statefulset.yaml", &[]),
    ("cronjob.yaml", &[]),
    ("probes.yaml", &[]),
    (
        "custom-template/deployment.yaml",
        &[
            "--injectConfigFile",
            "custom-template/config.yaml",
            "--valuesFile",
            "custom-template/values.yaml",
        ],
    ),
];

/// Files of `examples/` that are inputs of a flag, not examples of their own.
const EXAMPLE_SUPPORT_FILES: [&str; 5] = [
    "custom-template/config.yaml",
    "custom-template/values.yaml",
    // Values of each verified Istio release (tests/examples.rs loads them).
    "values/istio-1.24.6.yaml",
    "values/istio-1.26.8.yaml",
    "values/istio-1.28.10.yaml",
];

/// `examples/`-relative paths of every `.yaml` file under `examples/`, outputs excluded.
fn example_inputs(dir: &std::path::Path, prefix: &str, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("entry").path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_string();
        if path.is_dir() {
            example_inputs(&path, &format!("{prefix}{name}/"), out);
        } else if name.ends_with(".yaml") && !name.ends_with(".injected.yaml") {
            out.push(format!("{prefix}{name}"));
        }
    }
}

#[test]
fn every_example_gives_its_checked_in_output() {
    let root = repo_root().join("examples");
    let mut found = Vec::new();
    example_inputs(&root, "", &mut found);
    found.sort();
    let mut listed: Vec<String> = EXAMPLES
        .iter()
        .map(|(i, _)| i.to_string())
        .chain(EXAMPLE_SUPPORT_FILES.iter().map(|s| s.to_string()))
        .collect();
    listed.sort();
    assert_eq!(found, listed, "every example is run by this test");

    let update = std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1");
    let mut failures = Vec::new();
    for (input, flags) in EXAMPLES {
        let mut run = Inject::file(&root.join(input));
        for pair in flags.chunks(2) {
            run = run.path_arg(pair[0], &root.join(pair[1]));
        }
        let out = run.run();
        let got = out.success();
        let golden = root.join(input).with_extension("injected.yaml");
        if update {
            bless(&golden, got);
            continue;
        }
        let want = read(&golden);
        if got != want {
            failures.push(format!(
                "{input}: output differs from {} byte for byte:\n{}",
                golden.display(),
                text_diff(&want, got)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn examples_show_what_their_comments_say() {
    let root = repo_root().join("examples");
    let doc = |name: &str| single(&read(&root.join(name)));
    // Probes: HTTP and TCP probes call the agent, the originals are in ISTIO_KUBE_APP_PROBERS,
    // the exec probe is untouched.
    let pod = doc("probes.injected.yaml");
    let app = &pod["spec"]["containers"][0];
    assert_eq!(app["name"], "checkout");
    assert_eq!(
        app["livenessProbe"]["httpGet"],
        json!({"path": "/app-health/checkout/livez", "port": 15020,
               "httpHeaders": [{"name": "X-Probe", "value": "liveness"}]})
    );
    assert_eq!(
        app["readinessProbe"]["httpGet"],
        json!({"path": "/app-health/checkout/readyz", "port": 15020})
    );
    assert_eq!(
        app["startupProbe"]["exec"]["command"],
        json!(["cat", "/tmp/started"])
    );
    let proxy = &pod["spec"]["containers"][1];
    assert_eq!(proxy["name"], "istio-proxy");
    let probers = proxy["env"]
        .as_array()
        .expect("env")
        .iter()
        .find(|e| e["name"] == "ISTIO_KUBE_APP_PROBERS")
        .expect("ISTIO_KUBE_APP_PROBERS");
    let probers: Value =
        serde_json::from_str(probers["value"].as_str().expect("string")).expect("JSON");
    assert_eq!(
        probers,
        json!({"/app-health/checkout/livez": {"httpGet": {"path": "/healthz", "port": 8080,
                   "httpHeaders": [{"name": "X-Probe", "value": "liveness"}]}},
               "/app-health/checkout/readyz": {"tcpSocket": {"port": 9090}}})
    );
    // CronJob: the sidecar is in the Job template's pod template.
    let cron = doc("cronjob.injected.yaml");
    assert_eq!(
        names_at(&cron, "/spec/jobTemplate/spec/template/spec/containers"),
        ["report", "istio-proxy"]
    );
    assert_eq!(
        names_at(&cron, "/spec/jobTemplate/spec/template/spec/initContainers"),
        ["istio-init"]
    );
    // StatefulSet: the pod template is injected, the claim template kept; the Service passes.
    let sts = docs(&read(&root.join("statefulset.injected.yaml")));
    assert_eq!(sts.len(), 2);
    assert_eq!(
        names_at(&sts[0], "/spec/template/spec/containers"),
        ["ledger", "istio-proxy"]
    );
    assert_eq!(
        sts[0]["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"],
        "10Gi"
    );
    assert_eq!(sts[1]["kind"], "Service");
    assert!(sts[1]["spec"]["template"].is_null());
    // Custom template: its container and volume, and no Istio proxy.
    let custom = doc("custom-template/deployment.injected.yaml");
    assert_eq!(
        names_at(&custom, "/spec/template/spec/containers"),
        ["log-shipper", "billing"]
    );
    assert_eq!(
        names_at(&custom, "/spec/template/spec/volumes"),
        ["log-shipper-config", "app-logs"]
    );
    let status: Value = serde_json::from_str(
        custom["spec"]["template"]["metadata"]["annotations"]["sidecar.istio.io/status"]
            .as_str()
            .expect("status annotation"),
    )
    .expect("JSON");
    assert_eq!(status["containers"], json!(["log-shipper"]));
    assert_eq!(status["volumes"], json!(["log-shipper-config"]));
}
