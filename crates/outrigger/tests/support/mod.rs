//! Helpers of the `outrigger inject` integration tests: run the real binary, read fixtures,
//! compare YAML streams semantically.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use outrigger_go::yaml;
use serde_json::Value;

/// Environment variables of the injector that must not leak from the caller into a test run.
const ISOLATED_ENV: [&str; 4] = [
    "ENABLE_NATIVE_SIDECARS",
    "COMPLIANCE_POLICY",
    "PLATFORM",
    "UPDATE_GOLDEN",
];

/// Root of the repository (two levels above this crate).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A file under `tests/fixtures/`.
pub fn fixture(name: &str) -> PathBuf {
    repo_root().join("tests/fixtures").join(name)
}

/// Text of a file, panicking with its path when unreadable (test set-up only).
pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// Outcome of one run of the binary.
#[derive(Debug)]
pub struct Run {
    /// Exit status was success.
    pub ok: bool,
    /// Exit code (`None` when killed by a signal).
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Run {
    /// Assert the run succeeded without a panic, returning stdout.
    pub fn success(&self) -> &str {
        assert!(self.ok, "outrigger failed:\nstderr:\n{}", self.stderr);
        self.no_panic();
        &self.stdout
    }

    /// Assert the run failed cleanly (non-zero exit, no panic, an `Error:` line), returning stderr.
    pub fn failure(&self) -> &str {
        assert!(
            !self.ok,
            "outrigger unexpectedly succeeded:\nstdout:\n{}",
            self.stdout
        );
        self.no_panic();
        assert!(
            self.stderr.contains("Error: "),
            "no error message on stderr:\n{}",
            self.stderr
        );
        &self.stderr
    }

    /// Assert the run exited with `code` without a panic, returning stdout.
    pub fn exited(&self, code: i32) -> &str {
        assert_eq!(
            self.code,
            Some(code),
            "exit status:\nstdout:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
        self.no_panic();
        &self.stdout
    }

    fn no_panic(&self) {
        assert!(
            !self.stderr.contains("panicked") && !self.stderr.contains("RUST_BACKTRACE"),
            "outrigger panicked:\n{}",
            self.stderr
        );
    }
}

/// Builder for one invocation of `outrigger inject`.
#[derive(Debug, Default)]
pub struct Inject {
    /// The subcommand (empty: `inject`).
    sub: String,
    args: Vec<String>,
    stdin: Option<String>,
    env: Vec<(String, String)>,
}

impl Inject {
    /// `outrigger inject` with no flags yet.
    pub fn new() -> Inject {
        Inject::default()
    }

    /// Another subcommand of `outrigger` (`drift`), with the same helpers.
    pub fn command(sub: &str) -> Inject {
        Inject {
            sub: sub.to_string(),
            ..Inject::default()
        }
    }

    /// `outrigger inject -f <path>`.
    pub fn file(path: &Path) -> Inject {
        Inject::new()
            .arg("-f")
            .arg(path.to_str().expect("fixture paths are UTF-8"))
    }

    /// Add one argument.
    pub fn arg(mut self, a: &str) -> Inject {
        self.args.push(a.to_string());
        self
    }

    /// Add several arguments.
    pub fn args<'a>(mut self, a: impl IntoIterator<Item = &'a str>) -> Inject {
        self.args.extend(a.into_iter().map(str::to_string));
        self
    }

    /// Add a flag with a path value.
    pub fn path_arg(self, flag: &str, p: &Path) -> Inject {
        self.arg(flag)
            .arg(p.to_str().expect("fixture paths are UTF-8"))
    }

    /// Feed `text` on standard input.
    pub fn stdin(mut self, text: &str) -> Inject {
        self.stdin = Some(text.to_string());
        self
    }

    /// Set an environment variable for the run.
    pub fn env(mut self, k: &str, v: &str) -> Inject {
        self.env.push((k.to_string(), v.to_string()));
        self
    }

    /// Run the binary and collect its output.
    pub fn run(self) -> Run {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_outrigger"));
        let sub = if self.sub.is_empty() {
            "inject"
        } else {
            &self.sub
        };
        cmd.arg(sub).args(&self.args);
        for k in ISOLATED_ENV {
            cmd.env_remove(k);
        }
        cmd.env("RUST_BACKTRACE", "0");
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd.stdin(if self.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawning outrigger");
        if let Some(text) = &self.stdin {
            let mut pipe = child.stdin.take().expect("stdin is piped");
            pipe.write_all(text.as_bytes()).expect("writing stdin");
        }
        let out = child.wait_with_output().expect("waiting for outrigger");
        Run {
            ok: out.status.success(),
            code: out.status.code(),
            stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
            stderr: String::from_utf8(out.stderr).expect("stderr is UTF-8"),
        }
    }
}

/// Parse a multi-document YAML stream into its non-empty documents.
pub fn docs(text: &str) -> Vec<Value> {
    yaml::split_documents(text)
        .unwrap_or_else(|e| panic!("output is not a YAML stream: {e}\n{text}"))
        .into_iter()
        .map(|d| {
            yaml::from_str(&d).unwrap_or_else(|e| panic!("output document is not YAML: {e}\n{d}"))
        })
        .filter(|v| !v.is_null())
        .collect()
}

/// Names of the containers in the list at `ptr` (e.g. `/spec/template/spec/containers`).
pub fn names_at(doc: &Value, ptr: &str) -> Vec<String> {
    doc.pointer(ptr)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|c| {
                    c.get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string()
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Temporary directory for one test, removed when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    /// A fresh directory named after the test.
    pub fn new(test: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("outrigger-cli-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("creating temp dir");
        TempDir(dir)
    }

    /// Write `text` to `name` inside the directory and return its path.
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, text).expect("writing temp file");
        p
    }

    /// Path of `name` inside the directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The JSON array `text` (a command's `-o json` output), its elements.
pub fn json_rows(text: &str) -> Vec<serde_json::Value> {
    match serde_json::from_str(text) {
        Ok(serde_json::Value::Array(rows)) => rows,
        other => panic!("not a JSON array: {other:?}\n{text}"),
    }
}

/// `examples/hello.yaml`: a Deployment and a Service.
pub fn hello() -> std::path::PathBuf {
    repo_root().join("examples/hello.yaml")
}

/// The one document of `text` (panics unless there is exactly one).
pub fn single(text: &str) -> Value {
    let d = docs(text);
    assert_eq!(d.len(), 1, "expected one document:\n{text}");
    d.into_iter().next().expect("one document")
}

/// The count of a scale run: `OUTRIGGER_SCALE_COUNT` when set (the linearity runs of
/// `scripts/scale-linearity.sh` take 5,000 and 10,000), else `default`.
pub fn scale_count(default: usize) -> usize {
    std::env::var("OUTRIGGER_SCALE_COUNT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A scale run's `outrigger ARGS` (the binary of `OUTRIGGER_SCALE_BIN`, else the test's) under
/// `/usr/bin/time`: its output, and the line of figures to print (wall, user and system time,
/// peak RSS, the binary and the load average before the run).
pub fn timed_scale_run(args: &[&str]) -> (std::process::Output, String) {
    let bin = std::env::var("OUTRIGGER_SCALE_BIN")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_outrigger").to_string());
    let time = std::path::Path::new("/usr/bin/time");
    assert!(time.exists(), "/usr/bin/time is needed for the figures");
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let out = std::process::Command::new(time)
        .args([
            "-f",
            "SCALE wall %e s, user %U s, system %S s, peak RSS %M KiB",
        ])
        .arg(&bin)
        .args(args)
        .output()
        .expect("run outrigger under /usr/bin/time");
    let figures = String::from_utf8_lossy(&out.stderr)
        .lines()
        .find(|l| l.starts_with("SCALE "))
        .unwrap_or("no figures")
        .to_string();
    let line = format!("{figures} ({bin}; load average before: {})", load.trim());
    (out, line)
}
