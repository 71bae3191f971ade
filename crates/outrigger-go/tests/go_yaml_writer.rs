//! Differential test of the YAML writer against Go: `yaml::json_to_yaml` (and so
//! `yaml::to_string`) must be byte-identical to sigs.k8s.io/yaml `JSONToYAML`, run by the Go
//! oracle on the same JSON text, or fail as it fails.
//!
//! Inputs: every YAML and JSON file of this repository and of Istio's conformance corpus
//! (`../shared/conformance/istio`, read in place), each document converted to JSON by Go's own
//! `YAMLToJSON`; a table of values covering every class of string the emitter treats
//! specially; and seeded random values built from those strings (`OUTRIGGER_DIFF_ITERATIONS`,
//! default 3,000; `OUTRIGGER_DIFF_SEED`).
//!
//! Versions: the oracle is built from Istio's pins (sigs.k8s.io/yaml v1.6.0 over
//! go.yaml.in/yaml/v2 v2.4.4, `../shared/go`) by Istio's Go, so every difference found here is
//! outrigger's to fix.

mod go_oracle;
mod harness;

use std::path::{Path, PathBuf};

use go_oracle::{Answer, Oracle, Rng};
use outrigger_go::go::json as gojson;
use outrigger_go::yaml;
use serde_json::{json, Value};

fn ours(json_text: &str) -> Answer {
    let v: Value = serde_json::from_str(json_text).map_err(|e| format!("serde_json: {e}"))?;
    yaml::json_to_yaml(&v).map_err(|e| e.to_string())
}

#[derive(Default)]
struct Tally {
    compared: usize,
    same_text: usize,
    /// go-yaml's key comparison is not a total order on some key sets (`007`, `0b2-a`, ...):
    /// Go's output order then depends on map iteration order and varies between runs. Such
    /// inputs count when Go, asked again, also gives outrigger's text.
    go_varies: usize,
    both_fail: usize,
    same_error: usize,
    disagreements: Vec<String>,
}

impl Tally {
    fn add(&mut self, label: &str, input: &str, ours: Answer, go: Answer) {
        self.compared += 1;
        match (&ours, &go) {
            (Ok(a), Ok(b)) if a == b => self.same_text += 1,
            (Err(a), Err(b)) => {
                self.both_fail += 1;
                if a == b {
                    self.same_error += 1;
                } else if std::env::var_os("OUTRIGGER_DIFF_VERBOSE").is_some() {
                    let short: String = input.chars().take(200).collect();
                    eprintln!("message differs: {label}\n  json {short}\n  ours {a}\n  go   {b}");
                }
            }
            _ => {
                let short: String = input.chars().take(300).collect();
                self.disagreements.push(format!(
                    "{label}\n  json {short}\n  ours {ours:?}\n  go   {go:?}"
                ))
            }
        }
    }

    fn check(&self, what: &str) {
        eprintln!(
            "{what}: {} inputs; byte-identical {} (of which {} only in one of Go's varying key \
             orders); both fail {} (same message {}); disagreements {}",
            self.compared,
            self.same_text + self.go_varies,
            self.go_varies,
            self.both_fail,
            self.same_error,
            self.disagreements.len()
        );
        go_oracle::assert_no_disagreements(what, &self.disagreements, 30);
    }
}

/// Compare many JSON texts, labelled.
fn compare(o: &mut Oracle, inputs: &[(String, String)], tally: &mut Tally) {
    for chunk in inputs.chunks(1000) {
        let reqs: Vec<Value> = chunk
            .iter()
            .map(|(_, j)| json!({"mode": "json2yaml", "input": j}))
            .collect();
        let answers = o.ask_many(&reqs);
        for ((label, j), go) in chunk.iter().zip(answers) {
            let mine = ours(j);
            if let (Ok(a), Ok(b)) = (&mine, &go) {
                if a != b && go_order_varies(o, j, a) {
                    tally.compared += 1;
                    tally.go_varies += 1;
                    continue;
                }
            }
            tally.add(label, j, mine, go);
        }
    }
}

/// Ask Go again: does it give `ours` on some run (its key order varying between runs)?
fn go_order_varies(o: &mut Oracle, json_text: &str, ours: &str) -> bool {
    let reqs: Vec<Value> = (0..24)
        .map(|_| json!({"mode": "json2yaml", "input": json_text}))
        .collect();
    let answers = o.ask_many(&reqs);
    let distinct: std::collections::BTreeSet<_> = answers.iter().collect();
    distinct.len() > 1 && answers.iter().any(|a| a.as_deref() == Ok(ours))
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// YAML, JSON and injected-output files under `dir` (recursively), skipping build output.
fn data_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if p.is_dir() {
            if !matches!(name, "target" | ".git" | "node_modules") {
                data_files(&p, out);
            }
        } else if [".yaml", ".yml", ".json", ".injected"]
            .iter()
            .any(|s| name.ends_with(s))
        {
            out.push(p);
        }
    }
}

/// Each document of each file as the JSON Go's `YAMLToJSON` makes of it (documents Go cannot
/// read are counted and left out).
fn documents_as_json(o: &mut Oracle, files: &[PathBuf]) -> (Vec<(String, String)>, usize) {
    let mut docs: Vec<(String, String)> = Vec::new();
    for f in files {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        let parts: Vec<std::borrow::Cow<'_, str>> = if f.extension().is_some_and(|e| e == "json") {
            vec![std::borrow::Cow::Borrowed(text.as_str())]
        } else {
            match yaml::split_documents(&text) {
                Ok(p) => p,
                Err(_) => vec![std::borrow::Cow::Borrowed(text.as_str())],
            }
        };
        for (i, p) in parts.iter().enumerate() {
            docs.push((format!("{}#{i}", f.display()), p.to_string()));
        }
    }
    let reqs: Vec<Value> = docs
        .iter()
        .map(|(_, d)| json!({"mode": "yaml2json", "input": d}))
        .collect();
    let answers = o.ask_many(&reqs);
    let mut out = Vec::new();
    let mut unreadable = 0;
    for ((label, _), a) in docs.into_iter().zip(answers) {
        match a {
            Ok(j) if j != "null" => out.push((label, j)),
            Ok(_) => {}
            Err(_) => unreadable += 1,
        }
    }
    (out, unreadable)
}

fn writer_agrees_with_go_on_repository_files() {
    let mut o = Oracle::get("writer_agrees_with_go_on_repository_files");
    let mut files = Vec::new();
    data_files(&workspace_root(), &mut files);
    assert!(
        !files.is_empty(),
        "no YAML/JSON files found in the repository"
    );
    let (docs, unreadable) = documents_as_json(&mut o, &files);
    eprintln!(
        "repository: {} files, {} documents, {unreadable} unreadable by Go",
        files.len(),
        docs.len()
    );
    let mut t = Tally::default();
    compare(&mut o, &docs, &mut t);
    t.check("writer, repository files");
}

fn writer_agrees_with_go_on_the_istio_corpus() {
    let dir = harness::corpus_dir();
    let mut o = Oracle::get("writer_agrees_with_go_on_the_istio_corpus");
    let mut files = Vec::new();
    data_files(&dir, &mut files);
    let (docs, unreadable) = documents_as_json(&mut o, &files);
    eprintln!(
        "corpus: {} files, {} documents, {unreadable} unreadable by Go",
        files.len(),
        docs.len()
    );
    assert!(docs.len() > 100, "too few corpus documents: {}", docs.len());
    let mut t = Tally::default();
    compare(&mut o, &docs, &mut t);
    t.check("writer, Istio corpus");
}

/// Strings of every class the emitter treats specially.
fn special_strings() -> Vec<String> {
    let mut v: Vec<String> = [
        // YAML 1.1 words.
        "y",
        "Y",
        "yes",
        "Yes",
        "YES",
        "n",
        "N",
        "no",
        "No",
        "NO",
        "true",
        "True",
        "TRUE",
        "false",
        "False",
        "FALSE",
        "on",
        "On",
        "ON",
        "off",
        "Off",
        "OFF",
        "null",
        "Null",
        "NULL",
        "~",
        "",
        ".nan",
        ".NaN",
        ".NAN",
        ".inf",
        ".Inf",
        ".INF",
        "+.inf",
        "-.Inf",
        "-.INF",
        "<<",
        "=",
        "yEs",
        "nULL",
        "tRUE",
        "Yes!",
        "NO?",
        // Numbers as strings.
        "0",
        "1",
        "-1",
        "+1",
        "010",
        "0o10",
        "0x1F",
        "0X1f",
        "0b101",
        "0B1",
        "1_000",
        "1__0",
        "_1",
        "1_",
        "1e3",
        "1E3",
        "1e+3",
        "1.5",
        ".5",
        "5.",
        "-.5",
        "+.5",
        "1e+21",
        "6.8523015e+5",
        "685.230_15e+03",
        "190:20:30",
        "1:20",
        "0:0",
        "-1:20",
        "1:20.5",
        "12e3.5",
        "0x",
        "0b2",
        "-0",
        "007",
        "1_2_3.4_5",
        "0.",
        ".",
        "-",
        "+",
        "1e",
        "e1",
        "0x_1",
        "1.2.3",
        "99999999999999999999",
        "4.",
        "+.",
        "1_000.5",
        "0o",
        "08",
        "09",
        "0777",
        "1:2:3:4",
        // Timestamps.
        "2001-12-14",
        "2001-12-14t21:59:43.10-05:00",
        "2001-12-14 21:59:43.10 -5",
        "2001-12-15T02:59:43.1Z",
        "2002-12-14",
        "2024-1-1",
        "2024-01-01T00:00:00Z",
        "2024-13-45",
        "20240101",
        "2024-01-01 ",
        // Indicators.
        "-",
        "- a",
        "-a",
        "?",
        "? a",
        "?a",
        ":",
        ": a",
        ":a",
        "a:",
        "a: b",
        "a:b",
        ",",
        ",a",
        "a,b",
        "[",
        "[a]",
        "]",
        "{",
        "{a: 1}",
        "}",
        "#",
        "#a",
        "a #b",
        "a#b",
        "&",
        "&a",
        "*",
        "*a",
        "!",
        "!a",
        "!!str",
        "|",
        "|a",
        ">",
        ">a",
        "'",
        "'a'",
        "a'b",
        "\"",
        "\"a\"",
        "a\"b",
        "%",
        "%a",
        "@",
        "@a",
        "`",
        "`a",
        "a: ",
        "a :b",
        "a\\b",
        "\\",
        "a\\nb",
        "...",
        "---",
        "--- a",
        "--",
        "....",
        // Spaces.
        " ",
        "  ",
        " a",
        "a ",
        " a ",
        "\t",
        "\ta",
        "a\t",
        "a\tb",
        "a  b",
        " \t ",
        // Unicode.
        "é",
        "日本語",
        "😀",
        "a\u{85}b",
        "\u{85}",
        "a\u{2028}b",
        "\u{2029}",
        "\u{feff}a",
        "a\u{a0}",
        "\u{a0}",
        "e\u{301}",
        "\u{200b}",
        "\u{fffd}",
        "שלום",
        "\u{10ffff}",
        "\u{e000}",
        // Control characters.
        "\u{0}",
        "a\u{1}b",
        "\u{7}",
        "\u{8}",
        "\u{b}",
        "\u{c}",
        "\r",
        "a\rb",
        "\u{1b}[0m",
        "\u{7f}",
        "\u{80}",
        "\u{9f}",
        // Multi-line.
        "a\nb",
        "a\n",
        "a\n\n",
        "\n",
        "\n\n",
        "\na",
        " a\nb",
        "a\n b",
        "a \nb",
        "a\n\nb",
        "\t\n",
        "a\r\nb",
        "a\nb\n ",
        "\n a",
        "a\n\t",
        "#\n#",
        "- a\n- b",
        "a: b\nc: d",
        "a\n \nb",
        "x\n\u{85}y",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // Long lines for folding, in every style.
    let words = "word ".repeat(30);
    v.push(words.trim_end().to_string());
    v.push(format!("{} end", "x".repeat(85)));
    v.push(format!("'{}", words));
    v.push(format!("{}\"q\"", words));
    v.push(format!("{}\u{1}", words));
    v.push(format!("a  {}  b", words));
    v.push(format!("{}\n{}", words, words));
    v.push(format!(" {}", words));
    v.push("a ".repeat(60));
    v.push(format!("{}: x", "y".repeat(90)));
    v.push(format!("{}é {}", "ab ".repeat(26), "cd ".repeat(10)));
    v
}

/// Values covering the table's strings as values and keys, and keys of every length class.
fn table_values() -> Vec<Value> {
    let strings = special_strings();
    let mut out = Vec::new();
    for s in &strings {
        out.push(json!(s));
        out.push(json!({ s.clone(): s }));
        out.push(json!([s, { "k": [s] }]));
        out.push(json!({"a": { s.clone(): {"b": s} }}));
    }
    for n in [127, 128, 129, 200, 1021, 1022, 1023, 1024, 2000] {
        let k = "k".repeat(n);
        out.push(json!({ k.clone(): 1 }));
        out.push(json!({"outer": [{ k.clone(): "v" }]}));
    }
    // Escapes count in the key length Go's scanner sees.
    out.push(json!({ "<".repeat(170): 1 }));
    out.push(json!({ "<".repeat(171): 1 }));
    out.push(json!({ "é".repeat(1022): 1 }));
    out.push(json!({ "é".repeat(1023): 1 }));
    for n in [
        json!(0),
        json!(-0.0),
        json!(1.0),
        json!(1.5),
        json!(1e21),
        json!(1e-7),
        json!(123456789),
        json!(9007199254740993u64),
        json!(18446744073709551615u64),
        json!(-9223372036854775808i64),
        json!(0.1),
        json!(100000000000000000000.0),
        json!(1e6),
        json!(2.5e-5),
        json!(-1255437099447527.2),
        json!(273134863607606.12),
    ] {
        out.push(json!({ "n": n.clone(), "l": [n] }));
    }
    out.push(json!({}));
    out.push(json!([]));
    out.push(json!(null));
    out.push(json!({"e": {}, "l": [], "n": null, "t": true, "f": false}));
    out.push(json!([[[]], [{}], [[1, [2, {"a": []}]]]]));
    out.push(json!({"b": 1, "a": 2, "B": 3, "10": 4, "9": 5, "a10": 6, "a9": 7, "_": 8, "": 9}));
    out
}

fn writer_agrees_with_go_on_special_values() {
    let mut o = Oracle::get("writer_agrees_with_go_on_special_values");
    let inputs: Vec<(String, String)> = table_values()
        .iter()
        .enumerate()
        .map(|(i, v)| (format!("table #{i}"), gojson::to_string(v)))
        .collect();
    let mut t = Tally::default();
    compare(&mut o, &inputs, &mut t);
    t.check("writer, special values");
}

/// A random string: pieces of the table joined, sometimes with spaces, breaks or lengthened.
fn gen_string(r: &mut Rng, pool: &[String]) -> String {
    let mut s = String::new();
    for _ in 0..1 + r.below(3) {
        s.push_str(&pool[r.below(pool.len())]);
        match r.below(6) {
            0 => s.push(' '),
            1 => s.push('\n'),
            _ => {}
        }
    }
    if r.below(10) == 0 {
        s = s.repeat(1 + r.below(12));
    }
    s
}

fn gen_value(r: &mut Rng, pool: &[String], depth: usize) -> Value {
    match if depth == 0 { r.below(3) } else { r.below(6) } {
        0 => json!(gen_string(r, pool)),
        1 => match r.below(6) {
            0 => json!(r.below(100_000) as i64 - 50_000),
            1 => json!((r.next() % 2_000_000) as f64 / 1000.0 - 1000.0),
            2 => json!(f64::from_bits(r.next() >> 2)),
            3 => json!(r.next()),
            4 => json!(r.below(2) == 0),
            _ => Value::Null,
        },
        2 => json!(pool[r.below(pool.len())]),
        3 | 4 => {
            let mut m = serde_json::Map::new();
            for _ in 0..r.below(5) {
                m.insert(gen_string(r, pool), gen_value(r, pool, depth - 1));
            }
            Value::Object(m)
        }
        _ => Value::Array(
            (0..r.below(4))
                .map(|_| gen_value(r, pool, depth - 1))
                .collect(),
        ),
    }
}

fn writer_agrees_with_go_on_generated_values() {
    let mut o = Oracle::get("writer_agrees_with_go_on_generated_values");
    let (n, seed, mut r) = go_oracle::generator(3000);
    let pool = special_strings();
    let inputs: Vec<(String, String)> = (0..n)
        .map(|i| {
            let v = gen_value(&mut r, &pool, 3);
            (
                format!("generated #{i} (seed {seed:#x})"),
                gojson::to_string(&v),
            )
        })
        .collect();
    let mut t = Tally::default();
    compare(&mut o, &inputs, &mut t);
    t.check("writer, generated values");
}

fn main() {
    harness::run(vec![
        harness::trial(
            "writer_agrees_with_go_on_repository_files",
            &[harness::Need::Oracle],
            writer_agrees_with_go_on_repository_files,
        ),
        harness::trial(
            "writer_agrees_with_go_on_the_istio_corpus",
            &[harness::Need::Oracle, harness::Need::Corpus],
            writer_agrees_with_go_on_the_istio_corpus,
        ),
        harness::trial(
            "writer_agrees_with_go_on_special_values",
            &[harness::Need::Oracle],
            writer_agrees_with_go_on_special_values,
        ),
        harness::trial(
            "writer_agrees_with_go_on_generated_values",
            &[harness::Need::Oracle],
            writer_agrees_with_go_on_generated_values,
        ),
    ]);
}
