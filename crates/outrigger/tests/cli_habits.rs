//! The output habits and flag names every command shares (README, "Exit status"): a closed pipe
//! ends quietly, errors exit 2, messages carry no `(os error N)`, `doctor` tells a server that is
//! no Kubernetes API from a refusal, `-n` is never outrigger's own namespace, and the three
//! configuration inputs are taken alike by every command: from a directory (`--config-dir`) or
//! as whole ConfigMaps.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Exit status, stdout and stderr of `outrigger ARGS` (kube variables cleared).
fn outrigger(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_outrigger"))
        .args(args)
        .env_remove("KUBECONFIG")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("ENABLE_NATIVE_SIDECARS")
        .stdin(Stdio::null())
        .output()
        .expect("binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn repo(rel: &str) -> String {
    format!("{}/../../{rel}", env!("CARGO_MANIFEST_DIR"))
}

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("outrigger-habits-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p.display().to_string()
}

/// The embedded default inputs as files: (config, values, mesh) texts.
fn embedded() -> (String, String, String) {
    let read = |f: &str| {
        std::fs::read_to_string(repo(&format!("crates/outrigger-inject/defaults/{f}")))
            .expect("embedded input")
    };
    (read("config.yaml"), read("values.json"), read("mesh.yaml"))
}

/// A ConfigMap holding `data` (each value a block scalar), as `kubectl get cm -o yaml` prints.
fn configmap(name: &str, data: &[(&str, &str)]) -> String {
    let mut out = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: istio-system\ndata:\n"
    );
    for (key, value) in data {
        out.push_str(&format!("  {key}: |\n"));
        for line in value.lines() {
            out.push_str(&format!("    {line}\n"));
        }
    }
    out
}

#[test]
fn a_closed_pipe_ends_quietly_with_status_141() {
    let mut many = String::new();
    for i in 0..3000 {
        many.push_str(&format!(
            "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p{i}\nspec:\n  containers:\n  - \
             name: a\n    image: nginx\n"
        ));
    }
    let dir = scratch("pipe");
    let input = write(&dir, "many.yaml", &many);
    for extra in [&[][..], &["--diff"][..]] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_outrigger"))
            .args(["inject", "-f", &input])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        // Read one line's worth, then hang up, as `| head -1` does.
        let mut stdout = child.stdout.take().expect("stdout");
        let mut first = [0u8; 16];
        stdout.read_exact(&mut first).expect("some output");
        drop(stdout);
        let out = child.wait_with_output().expect("wait");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(141), "{extra:?}: {stderr}");
        assert!(stderr.is_empty(), "{extra:?}: nothing said: {stderr}");
    }
}

#[test]
fn every_error_exits_2_and_no_message_shows_an_os_error_number() {
    let dir = scratch("exit");
    let not_a_dir = write(&dir, "file", "x");
    for args in [
        vec!["inject", "-f", "/nonexistent/x.yaml"],
        vec!["check", "-f", "/nonexistent/x.yaml"],
        vec!["drift", "-f", "/nonexistent/x.yaml"],
        vec![
            "preview",
            "-f",
            "/nonexistent/x.yaml",
            "--candidate-revision",
            "x",
        ],
        vec!["webhook-config", "--revision", "Bad_Rev"],
        vec!["man", "--dir", &not_a_dir],
        vec![
            "serve",
            "--tlsCertFile",
            "/nonexistent/c",
            "--tlsKeyFile",
            "/nonexistent/k",
        ],
    ] {
        let (code, _, err) = outrigger(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains("Error: "), "{args:?}: {err}");
        assert!(!err.contains("os error"), "{args:?}: {err}");
    }
    let (_, _, err) = outrigger(&["inject", "-f", "/nonexistent/x.yaml"]);
    assert!(
        err.contains("/nonexistent/x.yaml: No such file or directory"),
        "{err}"
    );
}

/// A kubeconfig whose cluster is `server`.
fn kubeconfig(dir: &Path, server: &str) -> String {
    write(
        dir,
        "kubeconfig",
        &format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: \
             {server}\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n  \
             context: {{cluster: c, user: u}}\ncurrent-context: x\n"
        ),
    )
}

/// A plain HTTP server on loopback answering every request `404 page not found` (a proxy or a
/// web server where the API server was expected), until the test process ends.
fn not_an_api_server() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 4096];
            let mut head = Vec::new();
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&buf[..n]),
                }
            }
            let body = "404 page not found\n";
            let _ = write!(
                stream,
                "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    format!("http://{addr}")
}

#[test]
fn doctor_tells_a_server_that_is_no_kubernetes_api_and_exits_2() {
    let dir = scratch("doctor-404");
    let kc = kubeconfig(&dir, &not_an_api_server());
    let (code, out, err) = outrigger(&["doctor", "--kubeconfig", &kc]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("is not a Kubernetes API server: GET /version answered 404"),
        "{err}"
    );
    assert!(!err.to_lowercase().contains("forbidden"), "{err}");
    assert!(!err.contains("RBAC"), "{err}");
}

#[test]
fn doctor_refuses_n_naming_its_own_namespace_flag() {
    for flag in ["-n", "--namespace"] {
        let (code, _, err) = outrigger(&["doctor", flag, "mesh-injector"]);
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains("--outrigger-namespace mesh-injector"),
            "{flag}: {err}"
        );
    }
    // The new flag parses (and then fails to connect, with no kubeconfig).
    let (code, _, err) = outrigger(&[
        "doctor",
        "--outrigger-namespace",
        "mesh-injector",
        "--kubeconfig",
        "/nonexistent/kubeconfig",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("/nonexistent/kubeconfig"), "{err}");
}

#[test]
fn serve_names_its_files_as_every_command_and_keeps_the_old_names() {
    let (code, help, _) = outrigger(&["serve", "--help"]);
    assert_eq!(code, 0);
    for flag in [
        "--injectConfigFile",
        "--valuesFile",
        "--meshConfigFile",
        "--kubeconfig",
        "--context",
    ] {
        assert!(help.contains(flag), "{flag} in serve --help");
    }
    for old in ["--injectConfig <", "--injectValues <", "--meshConfig <"] {
        assert!(!help.contains(old), "{old} hidden");
    }
    // The old names and the new are the same flag: given both, clap refuses the second.
    let (code, _, err) = outrigger(&["serve", "--injectConfig", "/a", "--injectConfigFile", "/b"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cannot be used multiple times"), "{err}");
    // --kubeconfig belongs to --kube, and is the one read.
    let (code, _, err) = outrigger(&["serve", "--kubeconfig", "/x"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--kube"), "{err}");
    let (code, _, err) = outrigger(&[
        "serve",
        "--kube",
        "--kubeconfig",
        "/nonexistent/kubeconfig",
        "--kube-connect-timeout",
        "1s",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("reading kubeconfig /nonexistent/kubeconfig"),
        "{err}"
    );
}

#[test]
fn config_dir_and_whole_configmaps_read_as_the_three_files() {
    let (config, values, mesh) = embedded();
    let dir = scratch("config-dir");
    let hello = repo("examples/hello.yaml");
    let files = dir.join("files");
    std::fs::create_dir_all(&files).expect("dir");
    let c = write(&files, "config", &config);
    let v = write(&files, "values", &values);
    let m = write(&files, "mesh", &mesh);
    let files_dir = files.display().to_string();
    let by_flags = outrigger(&[
        "inject",
        "-f",
        &hello,
        "--injectConfigFile",
        &c,
        "--valuesFile",
        &v,
        "--meshConfigFile",
        &m,
    ]);
    assert_eq!(by_flags.0, 0, "{}", by_flags.2);
    let by_dir = outrigger(&["inject", "-f", &hello, "--config-dir", &files_dir]);
    assert_eq!(by_dir.0, 0, "{}", by_dir.2);
    assert_eq!(by_dir.1, by_flags.1);
    // Whole ConfigMaps given to each flag: the injector's for the config and the values, the
    // mesh one for the mesh.
    let injector = write(
        &dir,
        "injector-cm.yaml",
        &configmap(
            "istio-sidecar-injector",
            &[("config", &config), ("values", &values)],
        ),
    );
    let mesh_cm = write(
        &dir,
        "mesh-cm.yaml",
        &configmap("istio", &[("mesh", &mesh), ("meshNetworks", "{}")]),
    );
    let by_cm = outrigger(&[
        "inject",
        "-f",
        &hello,
        "--injectConfigFile",
        &c,
        "--valuesFile",
        &injector,
        "--meshConfigFile",
        &mesh_cm,
    ]);
    assert_eq!(by_cm.0, 0, "{}", by_cm.2);
    assert_eq!(by_cm.1, by_flags.1);
    assert!(
        by_cm
            .2
            .contains("is a whole ConfigMap; using its data.values key")
            && by_cm
                .2
                .contains("is a whole ConfigMap; using its data.mesh key"),
        "{}",
        by_cm.2
    );
    // check, drift and preview take them alike.
    let check_flags = outrigger(&["check", "-f", &hello, "--config-dir", &files_dir]);
    let check_cm = outrigger(&[
        "check",
        "-f",
        &hello,
        "--injectConfigFile",
        &injector,
        "--meshConfigFile",
        &mesh_cm,
    ]);
    assert_eq!(check_flags.0, 1, "{}", check_flags.2);
    assert_eq!(check_cm.1, check_flags.1, "{}", check_cm.2);
    let injected = write(&dir, "injected.yaml", &by_flags.1);
    let (code, out, err) = outrigger(&["drift", "-f", &injected, "--config-dir", &files_dir]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = outrigger(&[
        "preview",
        "-f",
        &hello,
        "--config-dir",
        &files_dir,
        "--candidate-config-dir",
        &files_dir,
    ]);
    assert_eq!(code, 0, "{out}{err}");
    // A ConfigMap without the input's key is refused, naming the keys it has.
    let (code, _, err) = outrigger(&[
        "inject",
        "-f",
        &hello,
        "--injectConfigFile",
        &c,
        "--valuesFile",
        &mesh_cm,
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("is a ConfigMap without the key \"values\" (its keys: mesh, meshNetworks)"),
        "{err}"
    );
    // A directory without the values: named, with the kubectl line that writes it.
    std::fs::remove_file(&v).expect("remove");
    let (code, _, err) = outrigger(&["inject", "-f", &hello, "--config-dir", &files_dir]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no file \"values\""), "{err}");
    assert!(err.contains("hint: write it with `kubectl get cm istio-sidecar-injector"));
    // A mesh file is optional: without it the embedded mesh config.
    write(&files, "values", &values);
    std::fs::remove_file(&m).expect("remove");
    let (code, out, err) = outrigger(&["inject", "-f", &hello, "--config-dir", &files_dir]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, by_flags.1);
    let (code, _, err) = outrigger(&["inject", "-f", &hello, "--config-dir", "/nonexistent"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--config-dir /nonexistent: no such directory"),
        "{err}"
    );
}

#[test]
fn a_values_quantity_that_is_none_is_named_by_its_field_path() {
    let (config, _, _) = embedded();
    let dir = scratch("quantity");
    let c = write(&dir, "config", &config);
    let v = write(
        &dir,
        "values",
        "global:\n  proxy:\n    resources:\n      requests:\n        cpu: lots\n",
    );
    let (code, _, err) = outrigger(&[
        "inject",
        "-f",
        &repo("examples/hello.yaml"),
        "--injectConfigFile",
        &c,
        "--valuesFile",
        &v,
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!(
            "warning: values {v}: global.proxy.resources.requests.cpu: \"lots\" is not a \
             Kubernetes quantity"
        )),
        "{err}"
    );
}

#[test]
fn drift_takes_the_namespace_labels_check_takes_and_agrees_with_it() {
    let hello = repo("examples/hello.yaml");
    // No label selects the Deployment: check says not selected, drift says rightly not injected.
    let (code, out, _) = outrigger(&["check", "-f", &hello, "--namespace-labels", "team=a"]);
    assert_eq!(code, 1);
    assert!(out.contains("NOT INJECTED  webhook_not_selected"), "{out}");
    let (code, out, err) = outrigger(&["drift", "-f", &hello, "--namespace-labels", "team=a"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("demo/hello  not-injected"), "{out}");
    // Without the labels, drift expects what inject gives: a missing sidecar.
    let (code, out, _) = outrigger(&["drift", "-f", &hello]);
    assert_eq!(code, 1);
    assert!(out.contains("missing-sidecar"), "{out}");
    // Labelled for outrigger: both expect the sidecar.
    let (code, _, _) = outrigger(&[
        "check",
        "-f",
        &hello,
        "--namespace-labels",
        "istio.io/rev=outrigger",
    ]);
    assert_eq!(code, 0);
    let (code, out, _) = outrigger(&[
        "drift",
        "-f",
        &hello,
        "--namespace-labels",
        "istio.io/rev=outrigger",
    ]);
    assert_eq!(code, 1);
    assert!(out.contains("missing-sidecar"), "{out}");
    // Another revision's namespace: not this revision's to judge.
    let (code, out, _) = outrigger(&[
        "drift",
        "-f",
        &hello,
        "--namespace-labels",
        "istio.io/rev=canary",
    ]);
    assert_eq!(code, 0);
    assert!(
        out.contains("1 pod template selected by another revision's webhook was not examined"),
        "{out}"
    );
    let (code, _, err) = outrigger(&["drift", "-f", &hello, "--namespace-labels", "bad"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--namespace-labels: \"bad\" has no value"),
        "{err}"
    );
}

#[test]
fn inject_warns_as_check_does_of_an_invalid_inject_value() {
    let dir = scratch("maybe");
    let pod = |value: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: apps\n  annotations:\n    \
             sidecar.istio.io/inject: \"{value}\"\nspec:\n  containers:\n  - name: a\n    image: nginx\n"
        )
    };
    let maybe = write(&dir, "maybe.yaml", &pod("maybe"));
    let warning = "Invalid value for sidecar.istio.io/inject: \"maybe\". Only 'true' and 'false' \
                   are accepted. Falling back to default injection policy.";
    let (code, check_out, err) = outrigger(&[
        "check",
        "-f",
        &maybe,
        "--namespace-labels",
        "istio.io/rev=outrigger",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        check_out.contains(&format!("warning: Pod/p: {warning}")),
        "{check_out}"
    );
    let (code, injected, err) = outrigger(&["inject", "-f", &maybe]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains(&format!("warning: Pod/p: {warning}")), "{err}");
    // The output is the injection's alone, as before.
    assert!(!injected.contains("Invalid value"), "{injected}");
    assert!(injected.contains("name: istio-proxy"), "{injected}");
    // A valid value: no warning.
    let yes = write(&dir, "yes.yaml", &pod("true"));
    let (_, _, err) = outrigger(&["inject", "-f", &yes]);
    assert!(!err.contains("Invalid value"), "{err}");
}

#[test]
fn check_says_when_injected_assumes_a_revisions_control_plane() {
    let dir = scratch("canary");
    let pod = write(
        &dir,
        "canary.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: apps\n  labels:\n    \
         istio.io/rev: canary\nspec:\n  containers:\n  - name: a\n    image: nginx\n",
    );
    let (code, out, err) = outrigger(&["check", "-f", &pod]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("INJECTED  policy_enabled  canary"), "{out}");
    assert!(
        err.contains("note: Pod/p is INJECTED by revision \"canary\"'s webhooks")
            && err.contains("only if a control plane of revision canary runs"),
        "{err}"
    );
    // Named with --revision (and its entries with --selector-revision), nothing is assumed.
    let (code, _, err) = outrigger(&[
        "check",
        "-f",
        &pod,
        "--revision",
        "canary",
        "--selector-revision",
        "canary",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("note:"), "{err}");
}

/// A boutique-like manifest for the one-decision test: a plain Deployment, one whose pods ask
/// `sidecar.istio.io/inject: "maybe"` (Istio warns and falls back to the policy) and one whose
/// pods opt out.
const SHOP: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: frontend\n  \
namespace: shop\nspec:\n  selector:\n    matchLabels: {app: frontend}\n  template:\n    metadata:\n      \
labels: {app: frontend}\n    spec:\n      containers:\n      - name: server\n        image: frontend\n\
---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: cart\n  namespace: shop\nspec:\n  \
selector:\n    matchLabels: {app: cart}\n  template:\n    metadata:\n      labels: {app: cart}\n      \
annotations:\n        sidecar.istio.io/inject: \"maybe\"\n    spec:\n      containers:\n      - name: \
server\n        image: cart\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: legacy\n  \
namespace: shop\nspec:\n  selector:\n    matchLabels: {app: legacy}\n  template:\n    metadata:\n      \
labels: {app: legacy, sidecar.istio.io/inject: \"false\"}\n    spec:\n      containers:\n      - name: \
server\n        image: legacy\n";

/// Each command's verdict per workload (`Deployment/cart` → injected or expected injected), and
/// its stderr: `check -o json`, `inject` (the documents carrying a sidecar), `drift -o json`
/// (`missing-sidecar`: expected injected; `not-injected`: rightly not) and `preview -o json`
/// (the configuration in force's outcome).
fn four_verdicts(
    file: &str,
    extra: &[&str],
) -> Vec<(
    &'static str,
    std::collections::BTreeMap<String, bool>,
    String,
)> {
    use serde_json::Value;
    let run = |cmd: &[&str]| {
        let (code, out, err) = outrigger(&[cmd, &["-f", file], extra].concat());
        assert!(
            code == 0 || code == 1,
            "{cmd:?} {extra:?}: {code}\n{out}\n{err}"
        );
        (out, err)
    };
    let mut all = Vec::new();
    let (out, err) = run(&["check", "-o", "json"]);
    let v: Value = serde_json::from_str(&out).expect("check JSON");
    let check = v
        .as_array()
        .expect("array")
        .iter()
        .map(|r| {
            let w = r["workload"].as_str().expect("workload").to_string();
            (w, r["injected"].as_bool().expect("injected"))
        })
        .collect();
    all.push(("check", check, err));
    let (out, err) = run(&["inject", "-q"]);
    let inject = out
        .split("\n---\n")
        .filter(|d| !d.trim().is_empty() && d.trim() != "---")
        .map(|d| {
            let doc = outrigger_go::yaml::from_str(d).expect("injected document");
            let name = format!(
                "{}/{}",
                doc["kind"].as_str().unwrap_or(""),
                doc["metadata"]["name"].as_str().unwrap_or("")
            );
            (name, d.contains("name: istio-proxy"))
        })
        .collect();
    all.push(("inject", inject, err));
    let (out, err) = run(&["drift", "-o", "json"]);
    let v: Value = serde_json::from_str(&out).expect("drift JSON");
    let drift = v
        .as_array()
        .expect("array")
        .iter()
        .map(|r| {
            let name = r["name"].as_str().unwrap_or("");
            let name = name.rsplit('/').next().unwrap_or(name);
            let state = r["state"].as_str().unwrap_or("");
            assert!(
                state == "missing-sidecar" || state == "not-injected",
                "drift: {r}"
            );
            (
                format!("{}/{name}", r["kind"].as_str().unwrap_or("")),
                state == "missing-sidecar",
            )
        })
        .collect();
    all.push(("drift", drift, err));
    let (out, err) = run(&[
        "preview",
        "-o",
        "json",
        "--candidate-native-sidecars",
        "false",
    ]);
    let v: Value = serde_json::from_str(&out).expect("preview JSON");
    let preview = v
        .as_array()
        .expect("array")
        .iter()
        .map(|r| {
            (
                format!(
                    "{}/{}",
                    r["kind"].as_str().unwrap_or(""),
                    r["name"].as_str().unwrap_or("")
                ),
                r["current"] == "injected",
            )
        })
        .collect();
    all.push(("preview", preview, err));
    all
}

/// `check`, `inject`, `drift` and `preview` take the same decision flags and judge each pod
/// with the one decision: on the same inputs they agree on injected or not, and say the same
/// warnings and notes (check's table, the others' stderr).
#[test]
fn the_four_commands_agree_on_one_decision_and_its_warnings() {
    let dir = scratch("one-decision");
    let shop = write(&dir, "shop.yaml", SHOP);
    let maybe = "warning: Deployment/cart: Invalid value for sidecar.istio.io/inject: \"maybe\". \
                 Only 'true' and 'false' are accepted. Falling back to default injection policy.";
    // A namespace labelled for outrigger: frontend and cart injected, legacy opted out.
    let runs = four_verdicts(&shop, &["--namespace-labels", "istio.io/rev=outrigger"]);
    let expected: std::collections::BTreeMap<String, bool> = [
        ("Deployment/frontend", true),
        ("Deployment/cart", true),
        ("Deployment/legacy", false),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    for (cmd, verdicts, err) in &runs {
        assert_eq!(verdicts, &expected, "{cmd}: {err}");
        if *cmd != "check" {
            assert_eq!(err.matches(maybe).count(), 1, "{cmd}: {err}");
        }
    }
    let (_, table, _) = outrigger(&[
        "check",
        "-f",
        &shop,
        "--namespace-labels",
        "istio.io/rev=outrigger",
    ]);
    assert!(table.lines().any(|l| l == maybe), "{table}");
    // A namespace no entry selects: nothing is injected, by any of them; inject says why.
    let runs = four_verdicts(&shop, &["--namespace-labels", "team=shop"]);
    for (cmd, verdicts, err) in &runs {
        assert!(
            verdicts.len() == 3 && verdicts.values().all(|v| !v),
            "{cmd}: {verdicts:?}\n{err}"
        );
        if *cmd != "check" {
            assert_eq!(err.matches(maybe).count(), 1, "{cmd}: {err}");
        }
    }
    let (_, inject_err) = (&runs[1].0, &runs[1].2);
    assert!(
        inject_err.contains(
            "note: Deployment/frontend: left as written: no webhook entry selects it in \
             namespace shop (--namespace-labels); to inject it: kubectl label namespace shop \
             istio.io/rev=outrigger --overwrite"
        ),
        "{inject_err}"
    );
    // A pod asking for revision canary, with the default revision's configuration: injected by
    // all four (its own label selects canary's entries), each saying what that assumes.
    let canary = write(
        &dir,
        "canary.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: apps\n  labels:\n    \
         istio.io/rev: canary\nspec:\n  containers:\n  - name: a\n    image: nginx\n",
    );
    let note = "note: Pod/p is INJECTED by revision \"canary\"'s webhooks (label \
                istio.io/rev=canary) only if a control plane of revision canary runs; the \
                configuration given is the default revision's (pass revision canary's files, or \
                --revision canary to evaluate it as such)";
    for (cmd, verdicts, err) in four_verdicts(&canary, &[]) {
        assert_eq!(
            verdicts.into_iter().collect::<Vec<_>>(),
            [("Pod/p".to_string(), true)],
            "{cmd}: {err}"
        );
        assert_eq!(err.matches(note).count(), 1, "{cmd}: {err}");
    }
}

/// `drift` and `preview` take `--template-env` as `inject` and `check` do: a manifest injected
/// with a variable the template reads is current under the same flag and stale without it.
#[test]
fn drift_and_preview_take_the_template_env_inject_takes() {
    let dir = scratch("template-env");
    let config = write(
        &dir,
        "config",
        "policy: enabled\ndefaultTemplates: [sidecar]\ntemplates:\n  sidecar: |\n    spec:\n      \
         containers:\n      - name: istio-proxy\n        image: proxy\n        env:\n        - \
         name: FOO\n          value: {{ env \"FOO\" \"none\" | quote }}\n",
    );
    let values = write(&dir, "values", "{}");
    let hello = repo("examples/hello.yaml");
    let files = ["--injectConfigFile", &config, "--valuesFile", &values];
    let env = ["--template-env", "FOO=bar"];
    let (code, injected, err) =
        outrigger(&[&["inject", "-q", "-f", &hello][..], &files, &env].concat());
    assert_eq!(code, 0, "{err}");
    assert!(injected.contains("value: bar"), "{injected}");
    let injected = write(&dir, "injected.yaml", &injected);
    let (code, out, err) = outrigger(&[&["drift", "-f", &injected][..], &files, &env].concat());
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("current"), "{out}");
    let (code, out, err) = outrigger(&[&["drift", "-f", &injected][..], &files].concat());
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("env[FOO].value: \"bar\" -> \"none\""), "{out}");
    let (code, out, err) = outrigger(
        &[
            &[
                "preview",
                "-f",
                &hello,
                "-o",
                "json",
                "--candidate-native-sidecars",
                "true",
            ][..],
            &files,
            &env,
        ]
        .concat(),
    );
    assert!(code == 0 || code == 1, "{out}{err}");
    assert!(out.contains("\"bar\""), "{out}");
}
