//! Fault tests of `outrigger serve`: the real binary with Istio's mounted layout, reviews sent
//! continuously while the test breaks the configuration the way operators do (a wrong-typed
//! values file, a config file truncated then rewritten by `cp`, a deleted mesh file). Every
//! review must be answered `allowed: true` with an `istio-proxy` patch, and the rejection must
//! show in the log and in `outrigger_reloads_total{kind="config",result="failure"}`.

mod common;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use common::*;
use outrigger_inject::config::defaults;
use serde_json::{json, Value};

const V1: &str = "admission.k8s.io/v1";
const FAILURES: &str = r#"outrigger_reloads_total{kind="config",result="failure"}"#;
const SUCCESSES: &str = r#"outrigger_reloads_total{kind="config",result="success"}"#;

/// A mesh config whose effect is visible in every patch (an extra proxy environment variable).
const MESH: &str = "defaultConfig:\n  proxyMetadata:\n    FAILSAFE_MARK: kept\n";

/// Files of one test: `dir/config`, `dir/values`, `dir/mesh` (plain files, written in place).
struct Files {
    dir: PathBuf,
}

impl Files {
    fn new(name: &str) -> Files {
        let dir = scratch(name);
        let files = Files { dir };
        files.write("config", defaults::CONFIG);
        files.write("values", defaults::VALUES);
        files.write("mesh", MESH);
        files
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn write(&self, name: &str, text: &str) {
        std::fs::write(self.path(name), text).expect("write");
    }

    fn start(&self, extra: &[&str]) -> (Server, H2Fut) {
        let server = Outrigger::in_dir(&self.dir)
            .config_in(&self.dir)
            .generated_ca()
            .native_sidecars(false)
            .flags(extra)
            .start();
        let ca = server.ca();
        let addr = server.addr;
        (server, H2Fut { addr, ca })
    }
}

/// What is needed to open connections to a started server.
struct H2Fut {
    addr: std::net::SocketAddr,
    ca: Vec<u8>,
}

impl H2Fut {
    async fn connect(&self) -> H2 {
        H2::connect(self.addr, &self.ca).await.expect("connect")
    }
}

/// Counters of a load run.
#[derive(Default)]
struct Counts {
    injected: AtomicU64,
    /// Answered `allowed: true` without an istio-proxy patch.
    uninjected: AtomicU64,
    /// Transport errors, HTTP errors and `allowed: false`.
    failed: AtomicU64,
    /// The first few problems, for the assertion message.
    problems: Mutex<Vec<String>>,
    /// Injections whose patch lacks the mesh config's FAILSAFE_MARK.
    mesh_lost: AtomicU64,
}

impl Counts {
    fn problem(&self, what: String) {
        let mut p = self.problems.lock().expect("lock");
        if p.len() < 5 {
            p.push(what);
        }
    }
}

/// Reviews of plain pods (the embedded default injects them) until `stop`.
async fn load_loop(c: H2, stop: Arc<AtomicBool>, counts: Arc<Counts>, worker: usize) {
    let mut i = 0u64;
    while !stop.load(Ordering::Relaxed) {
        i += 1;
        let name = format!("w{worker}-{i}");
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "app", "image": "nginx"}]}});
        match c.post("/inject", review(V1, &name, "team", pod)).await {
            Ok(r) if r.status == 200 => {
                let v = r.json();
                let resp = &v["response"];
                if resp["allowed"] != true {
                    counts.failed.fetch_add(1, Ordering::Relaxed);
                    counts.problem(format!("refused: {resp}"));
                    continue;
                }
                let patch = resp["patch"]
                    .as_str()
                    .and_then(|p| base64::engine::general_purpose::STANDARD.decode(p).ok())
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .unwrap_or_default();
                if patch.contains("\"istio-proxy\"") {
                    counts.injected.fetch_add(1, Ordering::Relaxed);
                    if !patch.contains("FAILSAFE_MARK") {
                        counts.mesh_lost.fetch_add(1, Ordering::Relaxed);
                    }
                } else {
                    counts.uninjected.fetch_add(1, Ordering::Relaxed);
                    counts.problem(format!("admitted without a sidecar: {resp}"));
                }
            }
            Ok(r) => {
                counts.failed.fetch_add(1, Ordering::Relaxed);
                counts.problem(format!("status {}: {}", r.status, r.text()));
            }
            Err(e) => {
                counts.failed.fetch_add(1, Ordering::Relaxed);
                counts.problem(e);
            }
        }
    }
}

/// Reviews flowing on two connections, two streams each.
struct Load {
    stop: Arc<AtomicBool>,
    counts: Arc<Counts>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    async fn start(target: &H2Fut) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let counts = Arc::new(Counts::default());
        let mut tasks = Vec::new();
        for conn in 0..2 {
            let c = target.connect().await;
            for s in 0..2 {
                tasks.push(tokio::spawn(load_loop(
                    c.clone(),
                    stop.clone(),
                    counts.clone(),
                    conn * 2 + s,
                )));
            }
        }
        Load {
            stop,
            counts,
            tasks,
        }
    }

    /// Injections so far.
    fn injected(&self) -> u64 {
        self.counts.injected.load(Ordering::Relaxed)
    }

    /// Wait until `more` further injections have been answered (the load is flowing).
    async fn flowing(&self, more: u64) {
        let target = self.injected() + more;
        let flowing = holds_within(Duration::from_secs(20), || async {
            self.injected() >= target
        })
        .await;
        assert!(flowing, "load stalled");
    }

    /// Stop and return (injected, uninjected, failed, mesh lost, first problems).
    async fn finish(mut self, scenario: &str) -> (u64, u64, u64, u64, Vec<String>) {
        self.stop.store(true, Ordering::Relaxed);
        for t in std::mem::take(&mut self.tasks) {
            t.await.expect("load task");
        }
        let c = &self.counts;
        let out = (
            c.injected.load(Ordering::Relaxed),
            c.uninjected.load(Ordering::Relaxed),
            c.failed.load(Ordering::Relaxed),
            c.mesh_lost.load(Ordering::Relaxed),
            c.problems.lock().expect("lock").clone(),
        );
        eprintln!(
            "{scenario}: {} injected, {} uninjected, {} failed, {} without the mesh setting",
            out.0, out.1, out.2, out.3
        );
        out
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in &self.tasks {
            t.abort();
        }
    }
}

async fn metric_value(c: &H2, series: &str) -> f64 {
    metric(&metrics(c).await, series).unwrap_or(0.0)
}

/// Poll `/metrics` until `series` reaches `want` (deadline [`EVENTUALLY`]: the configuration
/// check runs beside the load's reviews, so a loaded machine makes it slower).
async fn wait_metric(c: &H2, series: &str, want: f64, server: &Server) {
    let reached = metric_reaches(c, series, want, EVENTUALLY).await;
    let got = metric_value(c, series).await;
    assert!(
        reached,
        "{series} stayed at {got}, want {want}:\n{}",
        server.log_text()
    );
}

/// Wait (deadline 10 s) for an error log line mentioning `needle`; return all such lines.
async fn wait_error(server: &Server, needle: &str) -> Vec<Value> {
    wait_errors(server, needle, 1).await
}

/// Wait (deadline 10 s) for `n` error log lines mentioning `needle`; return all such lines.
async fn wait_errors(server: &Server, needle: &str, n: usize) -> Vec<Value> {
    holds_within(Duration::from_secs(10), || async {
        error_lines(server, needle).len() >= n
    })
    .await;
    error_lines(server, needle)
}

/// The error log lines that mention `needle`.
fn error_lines(server: &Server, needle: &str) -> Vec<Value> {
    server
        .log_text()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["level"] == "ERROR")
        .filter(|v| v.to_string().contains(needle))
        .collect()
}

fn assert_clean(result: (u64, u64, u64, u64, Vec<String>), min: u64) {
    let (injected, uninjected, failed, mesh_lost, problems) = result;
    assert_eq!(
        (uninjected, failed, mesh_lost),
        (0, 0, 0),
        "every pod must be injected with the last good configuration: {problems:?}"
    );
    assert!(injected >= min, "only {injected} injections");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_typed_values_are_refused_while_requests_flow() {
    let files = Files::new("failsafe-values");
    let (server, target) = files.start(&[]);
    let c = target.connect().await;
    let load = Load::start(&target).await;
    load.flowing(50).await;
    let failures = metric_value(&c, FAILURES).await;
    files.write("values", "global: 42\n");
    wait_metric(&c, FAILURES, failures + 1.0, &server).await;
    load.flowing(100).await;
    let lines = wait_error(&server, "global: expected a map, got 42").await;
    assert_eq!(lines.len(), 1, "{}", server.log_text());
    let msg = lines[0]["message"].as_str().unwrap_or_default();
    assert!(
        msg.contains("could not parse configuration values: global: expected a map, got 42")
            && msg.contains("keeping the last good configuration"),
        "{msg}"
    );
    assert!(
        lines[0]["source"]
            .as_str()
            .is_some_and(|s| s.contains(&files.path("values").display().to_string())),
        "the log names the files: {}",
        lines[0]
    );
    // A nested wrong type, then a deleted values file: refused the same way.
    let mut nested: Value = serde_json::from_str(defaults::VALUES).expect("JSON");
    nested["global"]["proxy"]["resources"] = json!("x");
    files.write("values", &nested.to_string());
    wait_metric(&c, FAILURES, failures + 2.0, &server).await;
    assert_eq!(
        wait_error(
            &server,
            "global.proxy.resources: expected a map, got \\\"x\\\""
        )
        .await
        .len(),
        1,
        "{}",
        server.log_text()
    );
    std::fs::remove_file(files.path("values")).expect("remove values");
    wait_metric(&c, FAILURES, failures + 3.0, &server).await;
    assert_eq!(
        wait_error(&server, "values document disappeared")
            .await
            .len(),
        1
    );
    load.flowing(100).await;
    // Fixed: loaded again.
    let successes = metric_value(&c, SUCCESSES).await;
    files.write("values", defaults::VALUES);
    wait_metric(&c, SUCCESSES, successes + 1.0, &server).await;
    load.flowing(50).await;
    assert_eq!(metric_value(&c, "outrigger_config_usable").await, 1.0);
    assert_clean(load.finish("wrong-typed values").await, 300);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn truncated_then_rewritten_config_admits_no_pod_uninjected() {
    let files = Files::new("failsafe-truncate");
    let (server, target) = files.start(&[]);
    let c = target.connect().await;
    let load = Load::start(&target).await;
    load.flowing(50).await;
    let failures = metric_value(&c, FAILURES).await;
    let successes = metric_value(&c, SUCCESSES).await;
    // `cp` opens the destination with O_TRUNC, then writes: a reader in between sees an empty
    // file, then a partial one. Hold each state long enough for a reload to read it.
    let path = files.path("config");
    let f = std::fs::File::create(&path).expect("truncate");
    wait_metric(&c, FAILURES, failures + 1.0, &server).await;
    load.flowing(100).await;
    // The first lines (valid YAML, no templates yet), then a cut inside the sidecar template.
    let first_line = defaults::CONFIG.find('\n').expect("lines") + 1;
    std::fs::write(&path, &defaults::CONFIG[..first_line]).expect("partial write");
    wait_metric(&c, FAILURES, failures + 2.0, &server).await;
    load.flowing(100).await;
    let cut = defaults::CONFIG.len() * 2 / 5;
    std::fs::write(&path, &defaults::CONFIG[..cut]).expect("partial write");
    wait_metric(&c, FAILURES, failures + 3.0, &server).await;
    load.flowing(100).await;
    std::fs::write(&path, defaults::CONFIG).expect("complete write");
    drop(f);
    wait_metric(&c, SUCCESSES, successes + 1.0, &server).await;
    load.flowing(50).await;
    for needle in [
        "the config document is empty (truncated?)",
        "the injector config defines no templates; the configuration in force injects pods",
        "failed to parse template",
    ] {
        assert_eq!(
            wait_error(&server, needle).await.len(),
            1,
            "{needle}:\n{}",
            server.log_text()
        );
    }
    assert_eq!(
        wait_errors(&server, "keeping the last good configuration", 3)
            .await
            .len(),
        3
    );
    assert_clean(load.finish("truncate then rewrite").await, 300);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_or_emptied_mesh_file_keeps_the_mesh_in_force() {
    let files = Files::new("failsafe-mesh");
    let (server, target) = files.start(&[]);
    let c = target.connect().await;
    let load = Load::start(&target).await;
    load.flowing(50).await;
    let failures = metric_value(&c, FAILURES).await;
    std::fs::remove_file(files.path("mesh")).expect("delete mesh");
    wait_metric(&c, FAILURES, failures + 1.0, &server).await;
    load.flowing(100).await;
    assert_eq!(
        wait_error(&server, "the mesh document disappeared")
            .await
            .len(),
        1,
        "{}",
        server.log_text()
    );
    files.write("mesh", "");
    wait_metric(&c, FAILURES, failures + 2.0, &server).await;
    assert_eq!(
        wait_error(&server, "the mesh document is empty")
            .await
            .len(),
        1
    );
    load.flowing(100).await;
    let successes = metric_value(&c, SUCCESSES).await;
    files.write("mesh", MESH);
    wait_metric(&c, SUCCESSES, successes + 1.0, &server).await;
    assert_clean(load.finish("deleted mesh").await, 250);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unusable_config_at_start_up_is_not_ready_until_fixed() {
    let files = Files::new("failsafe-startup");
    files.write("config", "");
    let (server, target) = files.start(&[]);
    let c = target.connect().await;
    let r = c.get("/readyz").await.expect("readyz");
    assert_eq!(r.status, 503);
    assert_eq!(
        r.text(),
        "configuration cannot inject pods: the injector config defines no templates (--allow-empty-config serves it anyway)\n"
    );
    assert_eq!(metric_value(&c, "outrigger_config_usable").await, 0.0);
    assert_eq!(
        wait_error(&server, "configuration cannot inject pods")
            .await
            .len(),
        1,
        "{}",
        server.log_text()
    );
    // A usable configuration replaces it and the server becomes ready. Waited for on the
    // usable gauge itself: a reload counted for an intermediate write of the file (a watcher
    // event between truncation and the last byte) must not end the wait early.
    let successes = metric_value(&c, SUCCESSES).await;
    files.write("config", defaults::CONFIG);
    wait_metric(&c, "outrigger_config_usable", 1.0, &server).await;
    assert!(metric_value(&c, SUCCESSES).await > successes);
    let r = c.get("/readyz").await.expect("readyz");
    assert_eq!((r.status, r.text().as_str()), (200, "ok\n"));
    drop(server);

    // --allow-empty-config: ready with it.
    files.write("config", "policy: disabled\n");
    let (_server, target) = files.start(&["--allow-empty-config"]);
    let c = target.connect().await;
    let r = c.get("/readyz").await.expect("readyz");
    assert_eq!((r.status, r.text().as_str()), (200, "ok\n"));
    assert_eq!(metric_value(&c, "outrigger_config_usable").await, 0.0);
}

/// The scratch directory is removed with the test's files (best effort).
impl Drop for Files {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The embedded config with `head` and `tail` wrapped around the `sidecar` template's text.
fn wrapped_sidecar(head: &str, tail: &str) -> String {
    let marker = "\n  sidecar: |\n";
    let start = defaults::CONFIG.find(marker).expect("sidecar template") + marker.len();
    let rest = &defaults::CONFIG[start..];
    // The template is the block of lines indented by four spaces.
    let len = rest
        .split_inclusive('\n')
        .take_while(|l| l.starts_with("    ") || l.trim().is_empty())
        .map(str::len)
        .sum::<usize>();
    let indent = |t: &str| -> String { t.lines().map(|l| format!("    {l}\n")).collect() };
    format!(
        "{}{}{}{}{}",
        &defaults::CONFIG[..start],
        indent(head),
        &rest[..len],
        indent(tail),
        &rest[len..]
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deep_templates_are_refused_on_reload_and_the_last_good_config_injects() {
    let files = Files::new("failsafe-deep-template");
    let (server, target) = files.start(&[]);
    let c = target.connect().await;
    let load = Load::start(&target).await;
    load.flowing(50).await;
    let failures = metric_value(&c, FAILURES).await;
    // 20,000 nested ifs: beyond outrigger's bound, refused when parsed (it used to overflow the
    // server's stack and kill it).
    let deep = wrapped_sidecar(&"{{if true}}\n".repeat(20_000), &"{{end}}\n".repeat(20_000));
    files.write("config", &deep);
    wait_metric(&c, FAILURES, failures + 1.0, &server).await;
    load.flowing(100).await;
    // A template that parses but recurses 100,001 calls deep: Go's execution error, found by the
    // probe render before the config could replace the one in force.
    let rec = "{{define \"r\"}}{{if lt . 100000}}{{template \"r\" (add1 .)}}{{end}}{{end}}\
               {{template \"r\" 0}}\n";
    files.write("config", &wrapped_sidecar(rec, ""));
    wait_metric(&c, FAILURES, failures + 2.0, &server).await;
    load.flowing(100).await;
    for needle in [
        "{{if}} nested too deep: more than 10000",
        "exceeded maximum template depth (100000)",
    ] {
        assert_eq!(
            wait_error(&server, needle).await.len(),
            1,
            "{needle}:\n{}",
            server.log_text()
        );
    }
    assert_eq!(metric_value(&c, "outrigger_config_usable").await, 1.0);
    assert_clean(load.finish("deep templates").await, 250);
}

/// The JSON Patch of one review of a plain pod, as text (empty when there is none). The pod has
/// the `app-logs` volume the log shipper of examples/custom-template mounts (without it the
/// injected pod would be one the API server refuses, and is refused).
async fn patch_of_plain_pod(c: &H2, name: &str) -> String {
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "image": "nginx"}],
                 "volumes": [{"name": "app-logs", "emptyDir": {}}]}});
    let r = c
        .post("/inject", review(V1, name, "team", pod))
        .await
        .expect("review");
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    assert_eq!(v["response"]["allowed"], true, "{v}");
    v["response"]["patch"]
        .as_str()
        .and_then(|p| base64::engine::general_purpose::STANDARD.decode(p).ok())
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

/// The repository's own files (examples, fixtures).
fn repo_text(path: &str) -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::fs::read_to_string(root.join(path)).expect("repository file")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sidecars_other_than_istio_proxy_are_served_and_ready() {
    for (name, config, values, container) in [
        (
            "failsafe-log-shipper",
            "examples/custom-template/config.yaml",
            "examples/custom-template/values.yaml",
            "log-shipper",
        ),
        (
            "failsafe-strategic-merge",
            "tests/fixtures/configs/strategic-merge/config.yaml",
            "tests/fixtures/configs/strategic-merge/values.json",
            "injected",
        ),
    ] {
        let files = Files::new(name);
        files.write("config", &repo_text(config));
        files.write("values", &repo_text(values));
        let (server, target) = files.start(&[]);
        let c = target.connect().await;
        let r = c.get("/readyz").await.expect("readyz");
        assert_eq!(
            (r.status, r.text().as_str()),
            (200, "ok\n"),
            "{name}: {}",
            server.log_text()
        );
        assert_eq!(metric_value(&c, "outrigger_config_usable").await, 1.0);
        let patch = patch_of_plain_pod(&c, "p1").await;
        assert!(
            patch.contains(&format!("\"{container}\"")),
            "{name}: {patch}"
        );
        assert!(!patch.contains("istio-proxy"), "{name}: {patch}");
        if container == "injected" {
            // `$patch: replace` on labels: the pod's own label is gone, the template's is set.
            assert!(patch.contains("strategic-merge-fixture"), "{patch}");
            assert!(server.log_text().contains("adds containers injected"));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_that_loses_every_container_is_refused_naming_them() {
    let files = Files::new("failsafe-lost");
    let (server, target) = files.start(&[]);
    let c = target.connect().await;
    assert!(patch_of_plain_pod(&c, "before")
        .await
        .contains("istio-proxy"));
    let failures = metric_value(&c, FAILURES).await;
    // The log shipper's config, read by mistake in place of Istio's: it injects, but none of
    // what the configuration in force adds.
    files.write("config", &repo_text("examples/custom-template/config.yaml"));
    files.write("values", &repo_text("examples/custom-template/values.yaml"));
    wait_metric(&c, FAILURES, failures + 1.0, &server).await;
    let lines = wait_error(&server, "adds none of what").await;
    let text = lines[0].to_string();
    assert!(
        text.contains("missing: istio-proxy, istio-init; it adds containers log-shipper instead"),
        "{text}"
    );
    // The configuration in force keeps injecting, and the server stays ready.
    assert!(patch_of_plain_pod(&c, "after")
        .await
        .contains("istio-proxy"));
    let r = c.get("/readyz").await.expect("readyz");
    assert_eq!(r.status, 200);
}

/// A newer Istio's templates: a template calls what outrigger does not implement (here Sprig's
/// `uuidv4`, in a branch the probe pod never takes). At start-up the server is not ready and
/// says which feature and which template; a reload with it keeps the last good configuration;
/// the log and `outrigger_config_unsupported_features` name it each time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn templates_using_what_outrigger_lacks_are_named_not_served() {
    const SERIES: &str =
        r#"outrigger_config_unsupported_features{template="sidecar",feature="sprig:uuidv4"}"#;
    let newer = wrapped_sidecar(
        "{{ if .ObjectMeta.Annotations.newer }}\n{{ uuidv4 }}\n{{ end }}\n",
        "",
    );
    let files = Files::new("failsafe-unsupported");
    files.write("config", &newer);
    let (server, target) = files.start(&[]);
    let c = target.connect().await;
    let r = c.get("/readyz").await.expect("readyz");
    assert_eq!(r.status, 503);
    assert!(
        r.text().starts_with(
            "configuration cannot inject pods: the templates use what outrigger does not implement: \
             template \"sidecar\" line 2 calls Sprig function \"uuidv4\", which outrigger does not implement"
        ),
        "{}",
        r.text()
    );
    assert_eq!(metric_value(&c, SERIES).await, 1.0);
    let lines = wait_error(&server, "unsupported template feature").await;
    assert_eq!(lines.len(), 1, "{}", server.log_text());
    assert_eq!(lines[0]["feature"], "sprig:uuidv4", "{}", lines[0]);
    assert_eq!(lines[0]["template"], "sidecar", "{}", lines[0]);

    // Istio's own templates: ready, the series gone. (Waiting on readiness, not on the success
    // counter: a watcher event for the files written before start-up may count one first.)
    files.write("config", defaults::CONFIG);
    let ready = holds_within(Duration::from_secs(10), || async {
        c.get("/readyz").await.is_ok_and(|r| r.status == 200)
    })
    .await;
    assert!(ready, "{}", server.log_text());
    assert!(metric(&metrics(&c).await, SERIES).is_none());

    // The newer templates again, as a reload: refused, the last good configuration injects.
    let failures = metric_value(&c, FAILURES).await;
    files.write("config", &newer);
    wait_metric(&c, FAILURES, failures + 1.0, &server).await;
    assert_eq!(metric_value(&c, SERIES).await, 1.0);
    assert!(
        !wait_error(&server, "keeping the last good configuration")
            .await
            .is_empty(),
        "{}",
        server.log_text()
    );
    let r = c.get("/readyz").await.expect("readyz");
    assert_eq!(r.status, 200);
    assert!(patch_of_plain_pod(&c, "after")
        .await
        .contains("istio-proxy"));
}
