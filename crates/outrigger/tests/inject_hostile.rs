//! Hostile configuration and input against the real `outrigger inject` binary: deep templates
//! answer Go's errors or ours (never a stack overflow), deeply nested manifests are refused,
//! the templates see only the environment they are allowed, and `-o` replaces its file safely.

#[allow(dead_code)] // the helpers of the inject tests; this file uses some
mod support;

use std::os::unix::fs::PermissionsExt;

use serde_json::Value;
use support::{docs, fixture, read, Inject, Run, TempDir};

/// An injector config whose `sidecar` template is `head`, an `istio-proxy` container with
/// `args` (one per line, quoted), then `tail`.
fn config(head: &str, args: &[&str], tail: &str) -> String {
    let mut t = String::from(head);
    t.push_str("spec:\n  containers:\n  - name: istio-proxy\n    image: x\n    args:\n");
    for a in args {
        t.push_str(&format!("    - {a}\n"));
    }
    t.push_str(tail);
    let body: String = t.lines().map(|l| format!("    {l}\n")).collect();
    format!("templates:\n  sidecar: |\n{body}")
}

fn inject_with(dir: &TempDir, config_text: &str) -> Inject {
    let cfg = dir.write("config.yaml", config_text);
    Inject::file(&fixture("pod.yaml")).path_arg("--injectConfigFile", &cfg)
}

/// The `args` of the injected pod's `istio-proxy`.
fn proxy_args(out: &str) -> Vec<String> {
    let d = docs(out);
    let containers = d[0]["spec"]["containers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let proxy = containers
        .iter()
        .find(|c| c["name"] == "istio-proxy")
        .expect("istio-proxy injected");
    proxy["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().unwrap_or_default().to_string())
        .collect()
}

/// A clean failure: exit status 2 (not a signal), an `Error:` line, no panic.
fn refused(run: &Run) -> &str {
    assert_eq!(run.code, Some(2), "not a clean exit:\n{}", run.stderr);
    run.failure()
}

#[test]
fn deep_templates_answer_errors_not_aborts() {
    let dir = TempDir::new("deep-templates");
    // 2,000 nested `if`s: Go renders them, so do we.
    let ok = config(
        &"{{if true}}\n".repeat(2_000),
        &["\"deep\""],
        &"{{end}}\n".repeat(2_000),
    );
    let out = inject_with(&dir, &ok).run();
    assert_eq!(proxy_args(out.success()), ["deep"]);

    // 20,000: beyond outrigger's bound (Go has none), refused naming the template and line.
    let deep = config(
        &"{{if true}}\n".repeat(20_000),
        &["x"],
        &"{{end}}\n".repeat(20_000),
    );
    let e = refused(&inject_with(&dir, &deep).run()).to_string();
    assert!(
        e.contains("template: sidecar:10001: {{if}} nested too deep: more than 10000"),
        "{e}"
    );

    // 20,000 nested parentheses: Go's parser error.
    let parens = format!("{{{{ {}1{} }}}}", "(".repeat(20_000), ")".repeat(20_000));
    let e = refused(&inject_with(&dir, &config("", &[&parens], "")).run()).to_string();
    assert!(
        e.contains("template: sidecar:6: max expression depth exceeded"),
        "{e}"
    );

    // 100,001 nested `template` calls: Go's execution error.
    let rec = "{{define \"r\"}}{{if lt . 100000}}{{template \"r\" (add1 .)}}{{end}}{{end}}\
               {{template \"r\" 0}}\n";
    let e = refused(&inject_with(&dir, &config(rec, &["x"], "")).run()).to_string();
    assert!(
        e.contains("exceeded maximum template depth (100000)"),
        "{e}"
    );
}

#[test]
fn deeply_nested_inputs_are_refused_cleanly() {
    let dir = TempDir::new("deep-inputs");
    let n = 20_000;
    let inputs = [
        (
            "flow.yaml",
            format!("a: {}{}\n", "[".repeat(n), "]".repeat(n)),
        ),
        (
            "doc.json",
            format!("{}1{}\n", "{\"a\":".repeat(n), "}".repeat(n)),
        ),
        ("seq.yaml", format!("{}x\n", "- ".repeat(n))),
        (
            "block.yaml",
            (0..3_000)
                .map(|i| format!("{}a:\n", " ".repeat(i)))
                .collect::<String>()
                + "   b\n",
        ),
        (
            "pod.yaml",
            format!(
                "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n    x: {}{}\n\
                 spec:\n  containers:\n  - name: c\n    image: i\n",
                "[".repeat(n),
                "]".repeat(n)
            ),
        ),
    ];
    for (name, text) in inputs {
        let path = dir.write(name, &text);
        let run = Inject::file(&path).run();
        let e = refused(&run);
        // go-yaml's message, with outrigger's documented bound of 512 levels.
        assert!(e.contains("exceeded max depth of 512"), "{name}: {e}");
    }
}

#[test]
fn templates_read_only_allowed_environment_variables() {
    let dir = TempDir::new("template-env");
    let cfg = config(
        "",
        &[
            "{{ env \"OUTRIGGER_TEST_SECRET\" \"hidden\" | quote }}",
            "{{ expandenv \"[$OUTRIGGER_TEST_SECRET]\" | quote }}",
            "{{ env \"ENABLE_NATIVE_SIDECARS\" \"unset\" | quote }}",
            "{{ env \"OUTRIGGER_TEST_SET\" \"unset\" | quote }}",
        ],
        "",
    );
    let base = || {
        inject_with(&dir, &cfg)
            .env("OUTRIGGER_TEST_SECRET", "s3cret")
            .env("ENABLE_NATIVE_SIDECARS", "false")
    };
    let out = base().run();
    assert_eq!(
        proxy_args(out.success()),
        ["hidden", "[]", "false", "unset"]
    );
    let out = base()
        .args([
            "--template-env",
            "OUTRIGGER_TEST_SECRET,OUTRIGGER_TEST_SET=on",
        ])
        .run();
    assert_eq!(
        proxy_args(out.success()),
        ["s3cret", "[s3cret]", "false", "on"]
    );
    // Both spellings, as every flag.
    let out = base()
        .args(["--templateEnv", "OUTRIGGER_TEST_SECRET"])
        .run();
    assert_eq!(proxy_args(out.success())[0], "s3cret");
}

fn mode(p: &std::path::Path) -> u32 {
    std::fs::metadata(p).expect("exists").permissions().mode() & 0o7777
}

#[test]
fn output_file_keeps_its_mode_and_planted_symlinks_are_not_followed() {
    let dir = TempDir::new("output-safe");
    let target = dir.write("secret.yaml", "old\n");
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    // A victim and symlinks to it at every name the old writer would have used for the next
    // few thousand process ids: none may be followed.
    let victim = dir.write("victim", "untouched\n");
    let me = std::process::id();
    for pid in me..me + 3_000 {
        let name = format!(".secret.yaml.outrigger-{pid}.tmp");
        std::os::unix::fs::symlink(&victim, dir.path(&name)).expect("symlink");
    }
    let expected = Inject::file(&fixture("pod.yaml")).run();
    Inject::file(&fixture("pod.yaml"))
        .path_arg("-o", &target)
        .run()
        .success();
    assert_eq!(read(&target), expected.success());
    assert_eq!(mode(&target), 0o600, "a 0600 file stays 0600");
    assert_eq!(read(&victim), "untouched\n");
    let leftovers = std::fs::read_dir(dir.path("."))
        .expect("list")
        .flatten()
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.starts_with(".secret.yaml.") && !n.contains(".outrigger-")
        })
        .count();
    assert_eq!(leftovers, 0, "no temporary file left behind");
}

#[test]
fn failed_run_leaves_the_output_file_untouched() {
    let dir = TempDir::new("output-failed");
    let target = dir.write("out.yaml", "old\n");
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    let input = dir.write(
        "in.yaml",
        &format!(
            "{}---\nkind: Pod\nmetadata: [\n",
            read(&fixture("pod.yaml"))
        ),
    );
    let run = Inject::file(&input).path_arg("-o", &target).run();
    refused(&run);
    assert_eq!(read(&target), "old\n");
    assert_eq!(mode(&target), 0o640);
    let names: Vec<_> = std::fs::read_dir(dir.path("."))
        .expect("list")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

#[test]
fn symlinked_output_is_written_through() {
    let dir = TempDir::new("output-symlink");
    let real = dir.write("real.yaml", "old\n");
    let link = dir.path("link.yaml");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    Inject::file(&fixture("pod.yaml"))
        .path_arg("-o", &link)
        .run()
        .success();
    let meta = std::fs::symlink_metadata(&link).expect("link");
    assert!(meta.file_type().is_symlink(), "the link stays a link");
    let out: Vec<Value> = docs(&read(&real));
    assert_eq!(out.len(), 1);
}

/// `-o` naming something that is not a regular file (here a FIFO; a device such as `/dev/null`
/// is the same case) writes into it in place: it is never replaced by a regular file.
#[test]
fn output_to_a_fifo_is_written_in_place_never_replaced() {
    use std::os::unix::fs::FileTypeExt;
    let dir = TempDir::new("output-fifo");
    let fifo = dir.path("out.fifo");
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .expect("mkfifo");
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(&fifo).expect("read the FIFO"))
    };
    let expected = Inject::file(&fixture("pod.yaml")).run();
    Inject::file(&fixture("pod.yaml"))
        .path_arg("-o", &fifo)
        .run()
        .success();
    assert_eq!(reader.join().expect("reader"), expected.success());
    let t = std::fs::symlink_metadata(&fifo).expect("there").file_type();
    assert!(t.is_fifo(), "the FIFO was replaced: {t:?}");
}

/// In a sticky world-writable directory (like /tmp), `-o` does not follow a symlink another
/// user planted there (root only: making a link owned by another user needs it).
#[test]
fn output_through_a_link_planted_by_another_user_is_refused() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("NOTICE: not root: a link owned by another user cannot be made here");
        return;
    }
    let dir = TempDir::new("output-planted");
    let shared = dir.path("tmp");
    std::fs::create_dir(&shared).expect("dir");
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).expect("chmod");
    let victim = dir.write("victim", "untouched\n");
    let planted = shared.join("out.yaml");
    std::os::unix::fs::symlink(&victim, &planted).expect("symlink");
    std::os::unix::fs::lchown(&planted, Some(65534), Some(65534)).expect("lchown");
    let run = Inject::file(&fixture("pod.yaml"))
        .path_arg("-o", &planted)
        .run();
    let err = run.failure();
    assert!(
        err.contains(
            "symlink owned by another user (uid 65534) in the sticky world-writable directory"
        ),
        "{err}"
    );
    assert_eq!(read(&victim), "untouched\n");
}
