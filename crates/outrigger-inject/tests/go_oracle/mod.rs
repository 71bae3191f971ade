//! Client of the Go oracle (`tests/go-oracle`): Go's own sigs.k8s.io/yaml, encoding/json and
//! text/template + Sprig, asked over a line protocol (one JSON request per line in, one JSON
//! answer per line out).
//!
//! The oracle binary is found at `$OUTRIGGER_GO_ORACLE`, else at `target/go-oracle/go-oracle`;
//! when it is missing and `go` is on the PATH it is built once with `tests/go-oracle/build.sh`.
//! Without it the differential tests print a notice and return, unless
//! `OUTRIGGER_REQUIRE_GO_ORACLE=1` (set by CI), in which case they fail.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};

use serde_json::{json, Value};

/// What the oracle answered: the result text (`Ok`) or Go's error text (`Err`).
pub type Answer = Result<String, String>;

/// A running oracle process.
pub struct Oracle {
    child: Child,
    stdin: Option<BufWriter<ChildStdin>>,
    stdout: BufReader<ChildStdout>,
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn required() -> bool {
    std::env::var("OUTRIGGER_REQUIRE_GO_ORACLE").is_ok_and(|v| v == "1")
}

fn binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("OUTRIGGER_GO_ORACLE") {
        return Some(PathBuf::from(p));
    }
    let root = workspace_root();
    let bin = root.join("target/go-oracle/go-oracle");
    // The newest Go source of the oracle (main.go and the k8s package).
    let newest_src = ["tests/go-oracle/main.go", "tests/go-oracle/k8s/types.go"]
        .iter()
        .filter_map(|p| root.join(p).metadata().ok()?.modified().ok())
        .max();
    let stale = match (bin.metadata().and_then(|b| b.modified()), newest_src) {
        (Ok(b), Some(s)) => b < s,
        (Err(_), _) => true,
        _ => false,
    };
    if stale {
        let built = Command::new("bash")
            .arg(root.join("tests/go-oracle/build.sh"))
            .arg(&bin)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .status();
        if !matches!(built, Ok(s) if s.success()) {
            return None;
        }
    }
    bin.exists().then_some(bin)
}

impl Oracle {
    fn spawn() -> Option<Oracle> {
        let bin = binary()?;
        let mut child = Command::new(&bin)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .ok()?;
        let stdin = BufWriter::new(child.stdin.take()?);
        let stdout = BufReader::new(child.stdout.take()?);
        Some(Oracle {
            child,
            stdin: Some(stdin),
            stdout,
        })
    }

    /// The oracle shared by the tests of this binary, or `None` (after a visible notice) when
    /// it cannot be had. Panics when CI requires it (`OUTRIGGER_REQUIRE_GO_ORACLE=1`).
    pub fn get(test: &str) -> Option<MutexGuard<'static, Oracle>> {
        static ORACLE: OnceLock<Option<Mutex<Oracle>>> = OnceLock::new();
        let o = ORACLE.get_or_init(|| Oracle::spawn().map(Mutex::new));
        match o {
            Some(m) => Some(m.lock().unwrap_or_else(|e| e.into_inner())),
            None => {
                assert!(
                    !required(),
                    "{test}: the Go oracle is required (OUTRIGGER_REQUIRE_GO_ORACLE=1) but could \
                     not be built or started: install golang-go golang-k8s-sigs-yaml-dev \
                     golang-gopkg-yaml.v2-dev golang-github-masterminds-sprig-dev"
                );
                eprintln!(
                    "NOTICE: {test} skipped: no Go oracle (install golang-go and the Debian Go \
                     packages listed in tests/go-oracle/build.sh)"
                );
                None
            }
        }
    }

    /// Ask many questions at once (pipelined: a writer thread sends while this thread reads).
    pub fn ask_many(&mut self, requests: &[Value]) -> Vec<Answer> {
        self.ask_many_raw(requests)
            .into_iter()
            .map(|v| match (v.get("ok"), v.get("err")) {
                (Some(Value::String(s)), _) => Ok(s.clone()),
                (_, Some(Value::String(s))) => Err(s.clone()),
                _ => panic!("malformed oracle answer {v}"),
            })
            .collect()
    }

    /// sigs.k8s.io/yaml.YAMLToJSON of many texts (mode `yaml2json_info`): each answer, and
    /// whether Go's own answer depends on its random map iteration order.
    pub fn yaml_to_json_info(&mut self, inputs: &[&str]) -> Vec<(Answer, bool)> {
        let requests: Vec<Value> = inputs
            .iter()
            .map(|i| json!({"mode": "yaml2json_info", "input": i}))
            .collect();
        self.ask_many_raw(&requests)
            .into_iter()
            .map(|v| {
                let ambiguous = v.get("ambiguous").and_then(Value::as_bool) == Some(true);
                let a = match (v.get("ok"), v.get("err")) {
                    (Some(Value::String(s)), _) => Ok(s.clone()),
                    (_, Some(Value::String(s))) => Err(s.clone()),
                    _ => panic!("malformed oracle answer {v}"),
                };
                (a, ambiguous)
            })
            .collect()
    }

    /// Ask many questions at once and return the raw answer objects.
    pub fn ask_many_raw(&mut self, requests: &[Value]) -> Vec<Value> {
        let mut lines = Vec::with_capacity(requests.len());
        for r in requests {
            lines.push(serde_json::to_string(r).expect("request serialises"));
        }
        let mut stdin = self.stdin.take().expect("oracle stdin");
        let writer = std::thread::spawn(move || {
            for l in &lines {
                stdin.write_all(l.as_bytes()).expect("write to oracle");
                stdin.write_all(b"\n").expect("write to oracle");
            }
            stdin.flush().expect("flush to oracle");
            stdin
        });
        let mut out = Vec::with_capacity(requests.len());
        let mut line = String::new();
        for _ in requests {
            line.clear();
            let n = self.stdout.read_line(&mut line).expect("read from oracle");
            assert!(n > 0, "the Go oracle exited early");
            let v: Value = serde_json::from_str(&line).expect("oracle answers JSON");
            out.push(v);
        }
        self.stdin = Some(writer.join().expect("oracle writer thread"));
        out
    }

    /// One question.
    pub fn ask(&mut self, mode: &str, input: &str) -> Answer {
        self.ask_many(&[json!({"mode": mode, "input": input})])
            .pop()
            .expect("one answer")
    }

    /// sigs.k8s.io/yaml.YAMLToJSON of one document: the JSON text, or Go's error text.
    pub fn yaml_to_json(&mut self, input: &str) -> Answer {
        self.ask("yaml2json", input)
    }

    /// sigs.k8s.io/yaml.JSONToYAML: the YAML text, or Go's error text.
    pub fn json_to_yaml(&mut self, input: &str) -> Answer {
        self.ask("json2yaml", input)
    }

    /// Execute `template` (named `name`) over `data` with Sprig and Istio's overrides.
    pub fn render(&mut self, name: &str, template: &str, data: &Value) -> Answer {
        self.ask_many(&[json!({"mode": "template", "name": name, "input": template, "data": data})])
            .pop()
            .expect("one answer")
    }

    /// Execute many `(template, data)` pairs (each parsed as template `name`); an error answer
    /// starts with the phase that failed, `parse: ` or `exec: `, followed by Go's text.
    pub fn render_phase_many(&mut self, name: &str, cases: &[(&str, &Value)]) -> Vec<Answer> {
        let reqs: Vec<Value> = cases
            .iter()
            .map(|(t, d)| json!({"mode": "template_phase", "name": name, "input": t, "data": d}))
            .collect();
        self.ask_many(&reqs)
    }
}

/// `OUTRIGGER_DIFF_ITERATIONS` (how many generated inputs a differential test compares), else
/// `default`.
pub fn iterations(default: usize) -> usize {
    std::env::var("OUTRIGGER_DIFF_ITERATIONS")
        .ok()
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(default)
}

/// `OUTRIGGER_DIFF_SEED` (decimal, or hexadecimal with `0x`), else `default`.
pub fn seed(default: u64) -> u64 {
    std::env::var("OUTRIGGER_DIFF_SEED")
        .ok()
        .and_then(|s| {
            let s = s.trim();
            match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
                Some(hex) => u64::from_str_radix(hex, 16).ok(),
                None => s.parse().ok(),
            }
        })
        .unwrap_or(default)
}

/// The default seed of the generated differential tests.
pub const DEFAULT_SEED: u64 = 0x5EED_0F0E_7166;

/// How many inputs a generated differential test compares and what draws them:
/// ([`iterations`]`(default_iterations)`, the seed ([`seed`]`(`[`DEFAULT_SEED`]`)`), its [`Rng`]).
pub fn generator(default_iterations: usize) -> (usize, u64, Rng) {
    let seed = seed(DEFAULT_SEED);
    (iterations(default_iterations), seed, Rng(seed))
}

/// Fail when a differential test found `disagreements` with Go, naming `what` and listing the
/// first `shown` of them (all of them with `OUTRIGGER_DIFF_VERBOSE`).
pub fn assert_no_disagreements(what: &str, disagreements: &[String], shown: usize) {
    let shown = if std::env::var_os("OUTRIGGER_DIFF_VERBOSE").is_some() {
        usize::MAX
    } else {
        shown
    };
    assert!(
        disagreements.is_empty(),
        "{what}: {} disagreements with Go:\n{}",
        disagreements.len(),
        disagreements
            .iter()
            .take(shown)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// A small deterministic PRNG (splitmix64), so generated inputs reproduce from their seed.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// True with the given percentage.
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    /// One of `items` (which must not be empty).
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

impl Drop for Oracle {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}
