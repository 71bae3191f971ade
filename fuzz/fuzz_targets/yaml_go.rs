//! Coverage-guided differential fuzzing of the YAML reader against Go: every input goes to
//! `yaml::from_str` and to the Go oracle (`tests/go-oracle`, sigs.k8s.io/yaml `YAMLToJSON`), and
//! both must agree: both fail, or both succeed with the same JSON text (Go's key order; Go 1.19
//! `\u0008`/`\u000c` escapes and `\ufffd` for bytes that are not UTF-8 normalised as in the
//! `go_yaml` test). Inputs on which Go's own answer depends on its random map order, and
//! documents nested deeper than the reader's limit, are skipped.
//!
//! The oracle binary is `$OUTRIGGER_GO_ORACLE`, else `target/go-oracle/go-oracle` of the
//! repository (build it with `tests/go-oracle/build.sh`).
#![no_main]

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Mutex;

use libfuzzer_sys::fuzz_target;
use outrigger_inject::go::json as gojson;
use outrigger_inject::yaml;
use serde_json::{json, Value};

struct Oracle {
    _child: Child,
    stdin: BufWriter<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

fn oracle() -> &'static Mutex<Oracle> {
    static ORACLE: std::sync::OnceLock<Mutex<Oracle>> = std::sync::OnceLock::new();
    ORACLE.get_or_init(|| {
        let bin = std::env::var_os("OUTRIGGER_GO_ORACLE").map_or_else(
            || {
                std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../target/go-oracle/go-oracle")
            },
            std::path::PathBuf::from,
        );
        let mut child = Command::new(&bin)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("starting the Go oracle {}: {e}", bin.display()));
        let stdin = BufWriter::new(child.stdin.take().expect("oracle stdin"));
        let stdout = BufReader::new(child.stdout.take().expect("oracle stdout"));
        Mutex::new(Oracle {
            _child: child,
            stdin,
            stdout,
        })
    })
}

/// Go's answer: (Ok JSON | Err message, ambiguous).
fn go(text: &str) -> (Result<String, String>, bool) {
    let mut o = oracle().lock().unwrap_or_else(|e| e.into_inner());
    let req = json!({"mode": "yaml2json_info", "input": text}).to_string();
    o.stdin.write_all(req.as_bytes()).expect("write to oracle");
    o.stdin.write_all(b"\n").expect("write to oracle");
    o.stdin.flush().expect("flush to oracle");
    let mut line = String::new();
    o.stdout.read_line(&mut line).expect("read from oracle");
    let v: Value = serde_json::from_str(&line).expect("oracle answers JSON");
    let ambiguous = v["ambiguous"] == true;
    match (&v["ok"], &v["err"]) {
        (Value::String(s), _) => (Ok(s.clone()), ambiguous),
        (_, Value::String(s)) => (Err(s.clone()), ambiguous),
        _ => panic!("malformed oracle answer {line}"),
    }
}

/// Rewrite JSON escapes: `\b`/`\f` as Go 1.19 writes them, and Go's `\ufffd` as the character.
fn normalise(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let mut rest = json;
    while let Some(i) = rest.find('\\') {
        out.push_str(&rest[..i]);
        let esc = &rest[i..];
        if let Some(after) = esc.strip_prefix("\\ufffd") {
            out.push('\u{FFFD}');
            rest = after;
        } else if let Some(after) = esc.strip_prefix("\\b") {
            out.push_str("\\u0008");
            rest = after;
        } else if let Some(after) = esc.strip_prefix("\\f") {
            out.push_str("\\u000c");
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

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let ours = yaml::from_str(text).map(|v| gojson::to_string_sorted(&v));
    if matches!(&ours, Err(e) if e.to_string().contains("exceeded max depth of 512")) {
        return;
    }
    let (theirs, ambiguous) = go(text);
    if ambiguous {
        return;
    }
    match (&ours, &theirs) {
        (Ok(a), Ok(b)) => assert_eq!(
            normalise(a),
            normalise(b),
            "different values for {text:?}"
        ),
        (Err(_), Err(_)) => {}
        _ => panic!("disagreement on {text:?}:\n ours: {ours:?}\n go:   {theirs:?}"),
    }
});
