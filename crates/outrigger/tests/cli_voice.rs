//! One voice across the commands (docs/design.md, "CLI conventions"): many failing invocations
//! of every command, each of which must fail cleanly with one `Error: ...` (or clap's `error:`)
//! message that never says the same thing twice (in that line, or anywhere on stderr), and name
//! what failed. The case over Istio's chart templates needs the corpus (reported ignored without
//! it, failing under CI: `tests/harness`).

mod harness;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Outcome of one run.
struct Run {
    code: Option<i32>,
    stderr: String,
}

/// Run `outrigger ARGS` with `env` set (and the kube variables cleared unless set there).
fn outrigger(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_outrigger"));
    cmd.args(args)
        .env_remove("KUBECONFIG")
        .env_remove("POD_NAMESPACE")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("running outrigger");
    Run {
        code: out.status.code(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// One failing invocation: its arguments, its environment, and a word its message must contain.
type Case<'a> = (Vec<&'a str>, &'a [(&'a str, &'a str)], &'a str);

/// A [`Case`] run with no environment of its own.
fn case<'a>(args: &[&'a str], names: &'a str) -> Case<'a> {
    (args.to_vec(), &[], names)
}

/// A scratch directory for this test binary.
fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("outrigger-voice-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p.display().to_string()
}

fn repo(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
        .display()
        .to_string()
}

/// The part of an error message that repeats itself, if any: a `: `-separated segment (of at
/// least 12 characters: a sentence, not a word such as Go's `template` prefix) that occurs again
/// elsewhere in the message.
fn repeated_segment(message: &str) -> Option<String> {
    let segments: Vec<&str> = message.split(": ").map(str::trim).collect();
    segments
        .iter()
        .filter(|s| s.len() >= 12)
        .find(|s| message.matches(**s).count() > 1)
        .map(|s| s.to_string())
}

/// A sentence said twice anywhere on stderr: stderr cut into lines and each line into its
/// `: `-separated segments; a segment of at least 12 characters (so not a bare word, a path's
/// tail or a number) that is said again as a segment of its own, on the same line or another.
/// clap's usage block is not a sentence.
fn repeated_sentence(stderr: &str) -> Option<String> {
    let said: Vec<&str> = stderr
        .lines()
        .take_while(|l| !l.starts_with("Usage:"))
        .flat_map(|l| l.split(": "))
        .map(|s| s.trim().trim_end_matches('.'))
        .filter(|s| s.len() >= 12)
        .collect();
    said.iter()
        .enumerate()
        .find(|(i, s)| said[i + 1..].contains(s))
        .map(|(_, s)| s.to_string())
}

/// Why a failing run does not speak with one voice (`None` when it does): `names` is a word its
/// message must contain.
fn voice_problem(run: &Run, names: &str) -> Option<String> {
    let line = run
        .stderr
        .lines()
        .find(|l| l.starts_with("Error: ") || l.starts_with("error: "))
        .unwrap_or("")
        .to_string();
    if run.code == Some(0) || run.code.is_none() {
        Some(format!("exit status {:?}", run.code))
    } else if run.stderr.contains("panicked") {
        Some("panicked".to_string())
    } else if line.is_empty() {
        Some("no `Error:` line".to_string())
    } else if let Some(seg) = repeated_segment(&line) {
        Some(format!("repeats {seg:?}"))
    } else if let Some(seg) = repeated_sentence(&run.stderr) {
        Some(format!("says {seg:?} twice on stderr"))
    } else if !run.stderr.contains(names) {
        Some(format!("does not name {names:?}"))
    } else if run
        .stderr
        .lines()
        .filter(|l| l.starts_with("Error: ") || l.starts_with("error: "))
        .count()
        > 1
    {
        Some("more than one error line".to_string())
    } else {
        None
    }
}

fn the_repetition_check_catches_the_known_repeats() {
    for bad in [
        "Error: loading values v.yaml: could not parse configuration values: global: expected a \
         map, got 42: global: expected a map, got 42",
        "Error: injecting a.yaml: document 0: Object 'Kind' is missing: Object 'Kind' is missing",
        "Error: injecting /tmp: Is a directory (os error 21): Is a directory (os error 21)",
        "Error: --kube: reading ConfigMap a/b: client error (Connect): client error (Connect): \
         tcp connect error",
    ] {
        assert!(repeated_segment(bad).is_some(), "{bad}");
    }
    assert_eq!(
        repeated_segment("Error: injecting a.yaml: document 1: yaml: line 9: bad"),
        None
    );
    // Across lines: a warning that the error line says again, and the other way round.
    assert_eq!(
        repeated_sentence(
            "warning: document 0: could not parse the template\nError: injecting a.yaml: \
             document 0: could not parse the template\n"
        )
        .as_deref(),
        Some("could not parse the template")
    );
    assert_eq!(
        repeated_sentence("Error: injecting a.yaml: document 1: yaml: line 9: bad\n"),
        None
    );
    assert_eq!(
        repeated_sentence("error: unexpected argument '--nosuch' found\n\nUsage: outrigger inject [OPTIONS]\n\nFor more information, try '--help'.\nUsage: outrigger inject [OPTIONS]\n"),
        None
    );
}

fn no_error_message_repeats_itself() {
    let dir = scratch();
    let d = |name: &str, text: &str| write(&dir, name, text);
    let hello = repo("examples/hello.yaml");
    let values = repo("crates/outrigger-inject/defaults/values.json");
    let mesh = repo("crates/outrigger-inject/defaults/mesh.yaml");
    let config = repo("crates/outrigger-inject/defaults/config.yaml");
    let bad_values = d("bad-values.yaml", "global: 42\n");
    let no_kind = d("no-kind.yaml", "apiVersion: v1\nmetadata:\n  name: x\n");
    let bad_yaml = d(
        "bad.yaml",
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n---\napiVersion: v1\nkind: Pod\n\
         metadata:\n  name: p\n  labels: {a: [}\n",
    );
    let unreachable = d(
        "kubeconfig",
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: \
         https://127.0.0.1:1\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n  \
         context: {cluster: c, user: u}\ncurrent-context: x\n",
    );
    let template_config = |body: &str| {
        format!(
            "policy: enabled\ndefaultTemplates: [sidecar]\ntemplates:\n  sidecar: |\n    \
             spec:\n      containers:\n      - name: {body}\n"
        )
    };
    let unparsable_template = d("bad-template.yaml", &template_config("{{ .Nope }"));
    let failing_template = d(
        "fail-template.yaml",
        &template_config("{{ fail \"boom\" }}"),
    );
    let values_syntax = d("values-syntax.yaml", "global: [\n");
    let mesh_syntax = d("mesh-syntax.yaml", "defaultConfig: {\n");
    let wrong_type = d(
        "wrong-type.yaml",
        "kind: Pod\napiVersion: v1\nmetadata: {name: p}\nspec:\n  containers: 5\n",
    );
    let tab_indent = d(
        "tab.yaml",
        "kind: Pod\napiVersion: v1\nmetadata:\n\tname: p\n",
    );
    let tmp = dir.display().to_string();
    let home = [("HOME", tmp.as_str())];
    let missing = format!("{tmp}/missing.yaml");
    let cases: Vec<Case> = vec![
        case(
            &["inject", "-f", &hello, "--valuesFile", &bad_values],
            "global",
        ),
        case(&["inject", "-f", &no_kind], "Kind"),
        case(
            &[
                "inject",
                "-f",
                &hello,
                "--injectConfigFile",
                &unparsable_template,
            ],
            "sidecar",
        ),
        case(
            &[
                "inject",
                "-f",
                &hello,
                "--injectConfigFile",
                &failing_template,
                "--valuesFile",
                &values,
            ],
            "boom",
        ),
        case(
            &["inject", "-f", &hello, "--valuesFile", &values_syntax],
            "line 1",
        ),
        case(
            &["inject", "-f", &hello, "--meshConfigFile", &mesh_syntax],
            "line 1",
        ),
        case(&["inject", "-f", &wrong_type], "containers"),
        case(&["inject", "-f", &tab_indent], "line 4"),
        case(&["check", "-f", &tab_indent], "line 4"),
        case(&["inject", "--nosuch"], "--nosuch"),
        case(
            &["inject", "-f", &hello, "--native-sidecars", "maybe"],
            "maybe",
        ),
        case(&["drift", "-f", &bad_yaml], "document 1"),
        case(&["inject", "-f", &tmp], "directory"),
        case(&["inject", "-f", &missing], "missing.yaml"),
        case(&["inject", "-f", &bad_yaml], "line 9"),
        case(
            &["inject", "-f", &hello, "--meshConfigFile", &values],
            "--valuesFile",
        ),
        case(
            &["inject", "-f", &hello, "--valuesFile", &config],
            "--injectConfigFile",
        ),
        case(
            &["inject", "-f", &hello, "--valuesFile", &mesh],
            "--meshConfigFile",
        ),
        case(
            &["inject", "-f", &hello, "--injectConfigFile", &mesh],
            "--meshConfigFile",
        ),
        case(&["inject", "-f", &hello, "-o", "json"], "./json"),
        case(
            &["inject", "--kube", "-f", &hello, "--kubeconfig", &missing],
            "missing.yaml",
        ),
        case(
            &[
                "inject",
                "--kube",
                "-f",
                &hello,
                "--kubeconfig",
                &unreachable,
            ],
            "127.0.0.1:1",
        ),
        case(
            &[
                "inject",
                "--kube",
                "-f",
                &hello,
                "--kubeconfig",
                &unreachable,
                "--context",
                "nope",
            ],
            "nope",
        ),
        (
            vec!["inject", "--kube", "-f", &hello],
            &home,
            "--kubeconfig",
        ),
        case(&["check", "-f", &bad_yaml], "line 9"),
        case(&["check", "-f", &missing], "missing.yaml"),
        case(
            &[
                "check",
                "-f",
                &hello,
                "--namespace-labels",
                "istio-injection",
            ],
            "istio-injection",
        ),
        case(
            &[
                "check",
                "-f",
                &hello,
                "--injectConfigFile",
                &config,
                "--valuesFile",
                &mesh,
            ],
            "--meshConfigFile",
        ),
        case(
            &["check", "--kube", "--kubeconfig", &unreachable],
            "127.0.0.1:1",
        ),
        case(&["doctor", "--kubeconfig", &unreachable], "127.0.0.1:1"),
        case(&["doctor", "--kubeconfig", &missing], "missing.yaml"),
        case(&["doctor", "--expiry-warning", "soon"], "soon"),
        case(&["webhook-config", "--revision", "Bad_Rev"], "Bad_Rev"),
        case(&["serve", "--revision", "Bad_Rev"], "Bad_Rev"),
        case(&["webhook-config", "--url", "http://x/inject"], "https"),
        case(
            &["webhook-config", "--ca-bundle-file", &missing],
            "missing.yaml",
        ),
        case(&["man", "bogus"], "bogus"),
        case(
            &[
                "serve",
                "--port",
                "0",
                "--tlsCertFile",
                &missing,
                "--tlsKeyFile",
                &missing,
            ],
            "missing.yaml",
        ),
        (
            vec!["serve", "--kube", "--port", "0"],
            &home,
            "--kubeconfig",
        ),
        case(
            &["preview", "-f", &missing, "--candidate-revision", "canary"],
            "missing.yaml",
        ),
        case(
            &[
                "preview",
                "-f",
                &hello,
                "--candidateValuesFile",
                &bad_values,
            ],
            "global",
        ),
        case(
            &[
                "preview",
                "--kube",
                "--kubeconfig",
                &unreachable,
                "--candidate-revision",
                "canary",
            ],
            "127.0.0.1:1",
        ),
        case(
            &[
                "drift",
                "--kube",
                "--kubeconfig",
                &unreachable,
                "--restart",
                "--yes",
            ],
            "127.0.0.1:1",
        ),
    ];
    let mut failures = Vec::new();
    for (args, env, names) in &cases {
        let run = outrigger(args, env);
        if let Some(p) = voice_problem(&run, names) {
            failures.push(format!("outrigger {}: {p}\n{}", args.join(" "), run.stderr));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(cases.len() >= 25, "{} cases", cases.len());
}

/// Usage errors (an unknown flag, an unknown man page, `inject -o FORMAT`) are clap's: `error:`
/// and exit status 2; failures of a command are `Error:` and exit status 1 (2 where 1 means
/// something else: `check`'s "not injected", `inject --diff`'s "changed", `doctor`'s "a check
/// failed").
fn exit_statuses_follow_the_conventions() {
    let hello = repo("examples/hello.yaml");
    for (args, code, prefix) in [
        (vec!["inject", "--nosuch"], 2, "error: "),
        (vec!["man", "bogus"], 2, "error: "),
        (vec!["inject", "-f", &hello, "-o", "yaml"], 2, "error: "),
        (vec!["inject", "-f", "/nonexistent/x.yaml"], 2, "Error: "),
        (
            vec!["inject", "-f", "/nonexistent/x.yaml", "--diff"],
            2,
            "Error: ",
        ),
        (vec!["check", "-f", "/nonexistent/x.yaml"], 2, "Error: "),
        (
            vec!["doctor", "--kubeconfig", "/nonexistent/kubeconfig"],
            2,
            "Error: ",
        ),
        (
            vec!["webhook-config", "--revision", "Bad_Rev"],
            2,
            "Error: ",
        ),
    ] {
        let run = outrigger(&args, &[]);
        assert_eq!(run.code, Some(code), "{args:?}: {}", run.stderr);
        assert!(run.stderr.starts_with(prefix), "{args:?}: {}", run.stderr);
    }
}

/// The same failure is worded the same way by `inject`, `check` and `serve`: a values file whose
/// `global` is not a map.
fn a_bad_values_file_is_worded_alike_by_inject_check_and_serve() {
    let dir = scratch().join("values-alike");
    std::fs::create_dir_all(&dir).expect("dir");
    let config = write(
        &dir,
        "config",
        &std::fs::read_to_string(repo("crates/outrigger-inject/defaults/config.yaml"))
            .expect("embedded config"),
    );
    let values = write(&dir, "values", "global: 42\n");
    let mesh = dir.join("mesh").display().to_string();
    let ca = dir.join("ca.pem").display().to_string();
    let hello = repo("examples/hello.yaml");
    let files = [
        "-f",
        &hello,
        "--injectConfigFile",
        &config,
        "--valuesFile",
        &values,
    ];
    let runs = [
        outrigger(&[&["inject"][..], &files].concat(), &[]),
        outrigger(&[&["check"][..], &files].concat(), &[]),
        outrigger(
            &[
                "serve",
                "--address",
                "127.0.0.1",
                "--port",
                "0",
                "--injectConfigFile",
                &config,
                "--valuesFile",
                &values,
                "--meshConfigFile",
                &mesh,
                "--caBundleFile",
                &ca,
            ],
            &[],
        ),
    ];
    let want = format!(
        "Error: loading values {values}: could not parse configuration values: global: expected \
         a map, got 42"
    );
    for run in &runs {
        let line = run
            .stderr
            .lines()
            .find(|l| l.starts_with("Error: "))
            .unwrap_or_default();
        assert_eq!(line, want, "{}", run.stderr);
    }
}

/// Istio's chart templates without their values: the same unmarshal chain was once printed five
/// times.
fn istio_chart_templates_without_values_are_said_once() {
    let hello = repo("examples/hello.yaml");
    let config = harness::absent::corpus_dir().join("settings/default/config.yaml");
    let config = config.display().to_string();
    let args = ["inject", "-f", &hello, "--injectConfigFile", &config];
    let run = outrigger(&args, &[]);
    if let Some(p) = voice_problem(&run, "failureThreshold") {
        panic!("outrigger {}: {p}\n{}", args.join(" "), run.stderr);
    }
}

fn main() {
    use harness::Need;
    harness::run(trials![
        &[] => [
            the_repetition_check_catches_the_known_repeats,
            no_error_message_repeats_itself,
            exit_statuses_follow_the_conventions,
            a_bad_values_file_is_worded_alike_by_inject_check_and_serve,
        ],
        &[Need::Corpus] => [istio_chart_templates_without_values_are_said_once],
    ])
}
