//! `outrigger serve --kube` start-up failures: without a reachable cluster the server exits at
//! once with a clear message (never a panic, never a listening server without certificates).

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "outrigger-serve-kube-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// Run `outrigger serve` with `args` and a clean Kubernetes environment plus `env`.
fn serve(dir: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> (Output, Duration) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_outrigger"));
    cmd.arg("serve")
        .args(["--port", "0", "--address", "127.0.0.1"])
        .args(args)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("KUBERNETES_SERVICE_PORT")
        .env_remove("RUST_LOG")
        .env("HOME", dir)
        .env("KUBECONFIG", dir.join("no-kubeconfig"))
        .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let start = Instant::now();
    let out = cmd.output().expect("run outrigger");
    (out, start.elapsed())
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn assert_clean_failure(out: &Output, elapsed: Duration, want: &str) {
    let err = stderr(out);
    assert!(!out.status.success(), "must fail: {err}");
    assert_ne!(out.status.code(), Some(101), "no panic: {err}");
    assert!(!err.contains("panicked"), "no panic: {err}");
    assert!(err.contains(want), "want {want:?} in: {err}");
    assert!(!err.contains("webhook listening"), "never listens: {err}");
    assert!(elapsed < Duration::from_secs(25), "fails fast: {elapsed:?}");
}

#[test]
fn kube_without_any_cluster_configuration_fails_clearly() {
    let dir = scratch("noconfig");
    let (out, elapsed) = serve(&dir, &["--kube"], &[]);
    assert_clean_failure(&out, elapsed, "no usable Kubernetes configuration");
}

#[test]
fn kube_with_an_unreachable_api_server_fails_clearly() {
    let dir = scratch("unreachable");
    // Port 1 on loopback: connection refused at once.
    let kubeconfig = "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\n    insecure-skip-tls-verify: true\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n";
    let path = dir.join("kubeconfig");
    std::fs::write(&path, kubeconfig).expect("write kubeconfig");
    let path = path.display().to_string();
    let (out, elapsed) = serve(
        &dir,
        &["--kube", "--events", "--kube-connect-timeout", "2s"],
        &[("KUBECONFIG", path.as_str())],
    );
    assert_clean_failure(&out, elapsed, "cannot reach the Kubernetes API server");
    // Retried with backoff (0.5 s, 1 s, ...) for the timeout given, each failure logged.
    let err = stderr(&out);
    assert!(err.matches("retrying in").count() >= 2, "{err}");
    assert!(
        elapsed >= Duration::from_secs(2),
        "retried for 2 s: {elapsed:?}"
    );
}

#[test]
fn kube_only_flags_without_kube_are_refused() {
    let dir = scratch("nokube");
    let (out, elapsed) = serve(
        &dir,
        &["--injectConfigMap", "istio-system/istio-sidecar-injector"],
        &[],
    );
    assert_clean_failure(&out, elapsed, "--injectConfigMap needs --kube");
}

#[test]
fn mesh_configmap_alone_is_refused() {
    let dir = scratch("meshonly");
    let (out, elapsed) = serve(
        &dir,
        &["--kube", "--meshConfigMap", "istio-system/istio"],
        &[],
    );
    assert_clean_failure(&out, elapsed, "--meshConfigMap needs --injectConfigMap");
}
