//! Every command in the README's `sh` code blocks, run: a user following only the README meets
//! no command that does not work.
//!
//! The blocks are read from README.md at test time and run in order, in one scratch directory
//! (where `examples/` and `deploy/` are the repository's), against one fake API server (the
//! kubeconfig's current context, as a user's shell would have it):
//!
//! - `outrigger ARGS` (and `cargo run --release -- ARGS`) runs the built binary; its exit status
//!   must be one the README's "Exit status" section allows for that command, and nothing panics.
//!   `serve` must start listening (on free ports, webhook and metrics: the one change made to a
//!   command) and is stopped.
//! - `kubectl` commands are carried out on the fake as kubectl would (`apply -k` renders with
//!   the real `kubectl kustomize`; `label`, `rollout restart`, `get -o jsonpath`): a shape the
//!   test does not know fails the test, so the README cannot grow an unchecked command.
//! - The install is real: once `kubectl apply -k deploy/base` has stored the install,
//!   outrigger's server runs as its Deployment would, behind its Service, and the fake's
//!   mutating admission chain calls it. `kubectl rollout restart` creates the Deployment's pods
//!   through admission, as its ReplicaSet would: a pod in a namespace labelled for outrigger
//!   (`istio.io/rev=outrigger`) must come out injected by outrigger, any other must not, so the
//!   README's install and migration steps are checked to do what they say.
//! - `cargo test --workspace` is the run this test is part of, and `cargo install` builds the
//!   release binary CI builds and runs (`.ci/run`); both are recognised, not run.

mod common;
mod harness;
#[allow(dead_code)]
mod support;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::admission::{activated, start_outrigger};
use common::kube_api::{self, configmap, node, Cluster, FakeApi};
use harness::Need;
use outrigger_inject::config::defaults;
use serde_json::{json, Value};

fn main() {
    harness::run(vec![harness::trial(
        "every_readme_command_runs",
        &[Need::Kubectl],
        every_readme_command_runs,
    )]);
}

/// One command of a code block: its words, where its standard output goes, and its line.
#[derive(Debug)]
struct Cmd {
    words: Vec<String>,
    stdout_to: Option<String>,
    line: String,
}

/// The `sh` code blocks of `text`, each as its commands (continuation lines joined, comments
/// dropped).
fn code_blocks(text: &str) -> Vec<Vec<Cmd>> {
    let mut blocks = Vec::new();
    let mut current: Option<Vec<String>> = None;
    for line in text.lines() {
        match (&mut current, line.trim_start()) {
            (None, l) if l.starts_with("```sh") => current = Some(Vec::new()),
            (Some(_), l) if l.starts_with("```") => {
                let lines = current.take().unwrap_or_default();
                blocks.push(commands(&lines));
            }
            (Some(lines), _) => lines.push(line.to_string()),
            (None, _) => {}
        }
    }
    assert!(current.is_none(), "README.md: a code block is not closed");
    blocks
}

/// The commands of a block's lines.
fn commands(lines: &[String]) -> Vec<Cmd> {
    let mut out = Vec::new();
    let mut pending = String::new();
    for line in lines {
        let (_, comment_free) = split_words(line);
        let joined = comment_free.trim_end();
        if let Some(head) = joined.strip_suffix('\\') {
            pending.push_str(head);
            pending.push(' ');
            continue;
        }
        pending.push_str(joined);
        let text = std::mem::take(&mut pending);
        if text.trim().is_empty() {
            continue;
        }
        let (mut words, _) = split_words(&text);
        let mut stdout_to = None;
        if let Some(i) = words.iter().position(|w| w == ">") {
            stdout_to = words.get(i + 1).cloned();
            words.truncate(i);
        }
        out.push(Cmd {
            words,
            stdout_to,
            line: text.trim().to_string(),
        });
    }
    out
}

/// A line's words as a POSIX shell splits them (single and double quotes, a comment from an
/// unquoted `#` that starts a word), and the line without its comment.
fn split_words(line: &str) -> (Vec<String>, String) {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    let mut kept = String::new();
    for c in line.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => word.get_or_insert_with(String::new).push(c),
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            None if c == '#' && word.is_none() => break,
            None if c.is_whitespace() => {
                if let Some(w) = word.take() {
                    words.push(w);
                }
            }
            None => word.get_or_insert_with(String::new).push(c),
        }
        kept.push(c);
    }
    assert!(quote.is_none(), "README.md: unclosed quote in {line:?}");
    if let Some(w) = word {
        words.push(w);
    }
    (words, kept)
}

/// The cluster a README reader has: Istio installed (its ConfigMaps, also for a `canary`
/// revision), a namespace `apps` running a Deployment, one node.
fn cluster() -> Cluster {
    let mut c = Cluster::default();
    for (name, labels) in [
        ("istio-system", json!({})),
        ("apps", json!({})),
        ("default", json!({})),
    ] {
        c.put(json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "uid": format!("uid-{name}"), "resourceVersion": "2",
                         "labels": with_name(labels, name)}}));
    }
    kube_api::put_istio_configmaps(&mut c);
    for (cm, key, text) in [
        ("istio-sidecar-injector-canary", "config", defaults::CONFIG),
        ("istio-canary", "mesh", defaults::MESH),
    ] {
        let mut data = vec![(key, text)];
        if key == "config" {
            data.push(("values", defaults::VALUES));
        }
        c.put(configmap("istio-system", cm, "1", &data));
    }
    c.put(node("node-1", "v1.33.2"));
    let hello = support::docs(&support::read(&support::hello()));
    for mut doc in hello {
        if doc["kind"] == "Deployment" {
            doc["metadata"]["namespace"] = json!("apps");
            doc["metadata"]["uid"] = json!("uid-hello");
            doc["metadata"]["resourceVersion"] = json!("2");
            c.put(doc);
        }
    }
    c
}

fn with_name(mut labels: Value, name: &str) -> Value {
    labels["kubernetes.io/metadata.name"] = json!(name);
    labels
}

/// The exit statuses the README's "Exit status" section allows for `args` (outrigger's own).
fn allowed_status(args: &[String]) -> &'static [i32] {
    let has = |f: &str| args.iter().any(|a| a == f);
    match args.first().map(String::as_str) {
        Some("inject") if has("--diff") => &[1],
        Some("check" | "drift" | "doctor") => &[0, 1],
        Some("preview") => &[0, 1, 3],
        _ => &[0],
    }
}

/// What one README command did, for the failure message.
fn describe(cmd: &Cmd, out: &std::process::Output) -> String {
    format!(
        "README command `{}` exited {:?}\nstdout:\n{}\nstderr:\n{}",
        cmd.line,
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

struct Reader {
    dir: PathBuf,
    api: FakeApi,
    kubeconfig: String,
    bin: PathBuf,
    ran: usize,
    runtime: tokio::runtime::Runtime,
    /// outrigger's server, once the install is applied.
    server: Option<common::Server>,
    /// Pods created by `rollout restart`, and how many came out injected by outrigger.
    pods: (usize, usize),
}

impl Reader {
    fn outrigger(&self, args: &[String]) -> Command {
        let mut c = Command::new(&self.bin);
        c.args(args)
            .current_dir(&self.dir)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("HOME", &self.dir)
            .env("NO_PROXY", "127.0.0.1")
            .env_remove("ENABLE_NATIVE_SIDECARS")
            .env_remove("HTTPS_PROXY")
            .env_remove("HTTP_PROXY")
            .stdin(Stdio::null());
        c
    }

    fn run(&mut self, cmd: &Cmd) {
        let words = &cmd.words;
        match words.first().map(String::as_str) {
            Some("outrigger") => self.run_outrigger(cmd, &words[1..]),
            Some("cargo") => match words.get(1).map(String::as_str) {
                Some("run") => {
                    let dash = words.iter().position(|w| w == "--").unwrap_or_else(|| {
                        panic!("README command `{}`: `cargo run` without `--`", cmd.line)
                    });
                    self.run_outrigger(cmd, &words[dash + 1..]);
                }
                Some("test") => assert_eq!(words[2..], ["--workspace"], "{}", cmd.line),
                Some("install") => assert!(
                    words.iter().any(|w| w == "--locked") && words.iter().any(|w| w == "--path"),
                    "README command `{}`: install from the checkout with Cargo.lock",
                    cmd.line
                ),
                _ => panic!("README command `{}` is not covered by this test", cmd.line),
            },
            Some("kubectl") => self.kubectl(cmd),
            Some("mkdir") => {
                for dir in &words[1..] {
                    std::fs::create_dir_all(self.dir.join(dir)).expect("mkdir");
                }
            }
            _ => panic!("README command `{}` is not covered by this test", cmd.line),
        }
    }

    fn run_outrigger(&mut self, cmd: &Cmd, args: &[String]) {
        self.ran += 1;
        if args.first().map(String::as_str) == Some("serve") {
            return self.serve(cmd, args);
        }
        let out = self.outrigger(args).output().expect("run outrigger");
        let text = describe(cmd, &out);
        assert!(
            !text.contains("panicked"),
            "README command panicked:\n{text}"
        );
        let allowed = allowed_status(args);
        assert!(
            out.status.code().is_some_and(|c| allowed.contains(&c)),
            "allowed exit status {allowed:?}; {text}"
        );
        if let Some(to) = &cmd.stdout_to {
            std::fs::write(self.dir.join(to), &out.stdout).expect("write redirected output");
        } else {
            assert!(
                !out.stdout.is_empty()
                    || !out.stderr.is_empty()
                    || args.first().is_some_and(|a| a == "man"),
                "README command said nothing: {text}"
            );
        }
    }

    /// `outrigger serve ...` must start and listen; it is then stopped.
    fn serve(&mut self, cmd: &Cmd, args: &[String]) {
        let mut args = args.to_vec();
        assert!(
            !args.iter().any(|a| a.starts_with("--port")),
            "README command `{}`: the test picks the port",
            cmd.line
        );
        args.push("--port=0".into());
        // And its metrics port (15014 by default), which parallel tests may hold.
        args.push("--metrics-port=0".into());
        let mut child = self
            .outrigger(&args)
            .env("POD_NAMESPACE", "outrigger")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start outrigger serve");
        let mut stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut all = Vec::new();
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut buf) {
                if n == 0 {
                    break;
                }
                all.extend_from_slice(&buf[..n]);
                let _ = tx.send(String::from_utf8_lossy(&all).into_owned());
            }
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut log = String::new();
        while Instant::now() < deadline {
            if let Ok(l) = rx.recv_timeout(Duration::from_millis(200)) {
                log = l;
            }
            if log.contains("listening") {
                break;
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!("README command `{}` exited {status}:\n{log}", cmd.line);
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        assert!(
            log.contains("listening"),
            "README command `{}` never listened:\n{log}",
            cmd.line
        );
    }

    /// kubectl, carried out on the fake as kubectl would.
    fn kubectl(&mut self, cmd: &Cmd) {
        let w: Vec<&str> = cmd.words.iter().map(String::as_str).collect();
        let flag = |name: &str| -> Option<&str> {
            w.iter()
                .position(|a| *a == name)
                .and_then(|i| w.get(i + 1).copied())
        };
        let ns = flag("-n").unwrap_or("outrigger");
        match w.get(1..).unwrap_or_default() {
            ["apply", "-k", dir] => self.apply(dir, cmd),
            ["label", "namespace", name, rest @ ..] => {
                let overwrite = rest.contains(&"--overwrite");
                let mut c = self.api.lock();
                let stored = c
                    .get_mut("namespaces", "", name)
                    .unwrap_or_else(|| panic!("`{}`: no namespace {name}", cmd.line));
                let labels = stored["metadata"]["labels"]
                    .as_object_mut()
                    .expect("labels");
                for change in rest.iter().filter(|a| !a.starts_with("--")) {
                    if let Some(key) = change.strip_suffix('-') {
                        labels.remove(key);
                    } else {
                        let (k, v) = change.split_once('=').unwrap_or_else(|| {
                            panic!("`{}`: a label change is KEY=VALUE or KEY-", cmd.line)
                        });
                        let old = labels.get(k).and_then(Value::as_str);
                        assert!(
                            overwrite || old.is_none() || old == Some(v),
                            "`{}`: kubectl refuses to change {k} without --overwrite",
                            cmd.line
                        );
                        labels.insert(k.into(), json!(v));
                    }
                }
            }
            ["rollout", "restart", "deployment", ..] => self.restart(ns, cmd),
            ["get", "cm", name, ..] => {
                let path = flag("-o")
                    .and_then(|o| o.strip_prefix("jsonpath={.data."))
                    .and_then(|k| k.strip_suffix('}'))
                    .unwrap_or_else(|| panic!("`{}`: -o jsonpath='{{.data.KEY}}'", cmd.line));
                let c = self.api.lock();
                let text = c
                    .get("configmaps", ns, name)
                    .and_then(|cm| cm["data"][path].as_str())
                    .unwrap_or_else(|| panic!("`{}`: no key {path} in {ns}/{name}", cmd.line))
                    .to_string();
                let to = cmd.stdout_to.as_ref().expect("redirected");
                std::fs::write(self.dir.join(to), text).expect("write");
            }
            _ => panic!("README command `{}` is not covered by this test", cmd.line),
        }
    }

    /// `kubectl rollout restart deployment -n NS`: each Deployment's template annotated, and its
    /// pod created anew through the admission chain (the old one deleted), as its ReplicaSet
    /// would. The pod must be injected by outrigger exactly when its namespace is labelled for
    /// outrigger.
    fn restart(&mut self, ns: &str, cmd: &Cmd) {
        let (templates, for_outrigger) = {
            let mut c = self.api.lock();
            let names: Vec<String> = c
                .all("deployments")
                .iter()
                .filter(|d| d["metadata"]["namespace"] == ns)
                .filter_map(|d| d["metadata"]["name"].as_str().map(String::from))
                .collect();
            assert!(!names.is_empty(), "`{}`: no Deployment in {ns}", cmd.line);
            let mut templates = Vec::new();
            for name in names {
                let d = c.get_mut("deployments", ns, &name).expect("deployment");
                d["spec"]["template"]["metadata"]["annotations"]
                    ["kubectl.kubernetes.io/restartedAt"] = json!("2026-01-01T00:00:00Z");
                templates.push((name, d["spec"]["template"].clone()));
            }
            let labels = &c.get("namespaces", "", ns).expect("namespace")["metadata"]["labels"];
            (templates, labels["istio.io/rev"] == "outrigger")
        };
        if self.server.is_none() {
            return;
        }
        for (name, template) in templates {
            let pod_name = format!("{name}-{}", self.pods.0);
            {
                let mut c = self.api.lock();
                let old: Vec<String> = c
                    .all("pods")
                    .iter()
                    .filter(|p| p["metadata"]["namespace"] == ns)
                    .filter(|p| {
                        p["metadata"]["labels"]["app"] == template["metadata"]["labels"]["app"]
                    })
                    .filter_map(|p| p["metadata"]["name"].as_str().map(String::from))
                    .collect();
                for old in old {
                    c.remove("pods", ns, &old);
                }
            }
            let mut pod = json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": template["metadata"].clone(), "spec": template["spec"].clone()});
            pod["metadata"]["name"] = json!(pod_name);
            pod["metadata"]["namespace"] = json!(ns);
            let admitted = self
                .runtime
                .block_on(self.api.create_pod(ns, pod, false))
                .unwrap_or_else(|e| panic!("`{}`: creating {ns}/{pod_name}: {e:?}", cmd.line));
            let by_outrigger = admitted.pod["metadata"]["annotations"]
                .get("outrigger.dev/injected-by")
                .is_some();
            let proxy = admitted.pod["spec"]["containers"]
                .as_array()
                .into_iter()
                .flatten()
                .chain(
                    admitted.pod["spec"]["initContainers"]
                        .as_array()
                        .into_iter()
                        .flatten(),
                )
                .any(|c| c["name"] == "istio-proxy");
            assert_eq!(
                (by_outrigger, proxy),
                (for_outrigger, for_outrigger),
                "`{}`: pod {ns}/{pod_name} (namespace labelled for outrigger: {for_outrigger}) \
                 marked injected by outrigger, has istio-proxy; webhooks called: {:?}",
                cmd.line,
                admitted.calls
            );
            self.pods.0 += 1;
            self.pods.1 += usize::from(by_outrigger);
        }
    }

    /// `kubectl apply -k DIR`: what `kubectl kustomize DIR` renders, stored; for the install,
    /// outrigger's server started as its Deployment runs it and its activation awaited.
    fn apply(&mut self, dir: &str, cmd: &Cmd) {
        let out = Command::new("kubectl")
            .args(["kustomize", dir])
            .current_dir(&self.dir)
            .output()
            .expect("kubectl kustomize");
        assert!(out.status.success(), "{}", describe(cmd, &out));
        let text = String::from_utf8(out.stdout).expect("UTF-8");
        let mut webhook = None;
        {
            let mut c = self.api.lock();
            for (i, mut doc) in support::docs(&text).into_iter().enumerate() {
                doc["metadata"]["uid"] = json!(format!("applied-{i}"));
                doc["metadata"]["resourceVersion"] = json!("3");
                if doc["kind"] == "MutatingWebhookConfiguration" {
                    webhook = doc["metadata"]["name"].as_str().map(String::from);
                }
                c.put(doc);
            }
        }
        if let (Some(name), None) = (webhook, &self.server) {
            let server = start_outrigger(&self.api, "readme-install", &[]);
            self.runtime.block_on(activated(&self.api, &name));
            self.server = Some(server);
        }
    }
}

fn every_readme_command_runs() {
    let root = support::repo_root();
    let readme = support::read(&root.join("README.md"));
    let blocks = code_blocks(&readme);
    assert!(blocks.len() >= 5, "README.md has its code blocks");
    let dir = common::scratch("readme");
    for linked in ["examples", "deploy"] {
        std::os::unix::fs::symlink(root.join(linked), dir.join(linked)).expect("link");
    }
    let api = FakeApi::start(cluster());
    let kubeconfig = kube_api::write_kubeconfig(&dir, &api);
    let mut reader = Reader {
        dir: dir.clone(),
        api,
        kubeconfig,
        bin: PathBuf::from(env!("CARGO_BIN_EXE_outrigger")),
        ran: 0,
        runtime: tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("tokio runtime"),
        server: None,
        pods: (0, 0),
    };
    let mut seen = BTreeMap::new();
    for cmd in blocks.iter().flatten() {
        *seen.entry(cmd.words[0].clone()).or_insert(0) += 1;
        reader.run(cmd);
    }
    assert!(reader.ran >= 15, "outrigger commands run: {}", reader.ran);
    assert!(reader.server.is_some(), "the README installs outrigger");
    assert!(
        reader.pods.1 >= 1 && reader.pods.1 < reader.pods.0,
        "pods created through admission, injected by outrigger: {:?} (the README injects a \
         first pod, and moves a namespace back to istiod)",
        reader.pods
    );
    eprintln!(
        "README: {seen:?} commands, {} outrigger runs, pods created {} (injected by outrigger {})",
        reader.ran, reader.pods.0, reader.pods.1
    );
    let _ = std::fs::remove_dir_all(Path::new(&dir));
}
