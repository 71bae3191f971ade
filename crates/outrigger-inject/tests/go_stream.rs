//! Whole-stream differential test against Go: outrigger reads a multi-document manifest as
//! `istioctl kube-inject` does. The Go oracle (`tests/go-oracle`, mode `stream`) splits each
//! text with apimachinery's `YAMLReader` and converts each document with sigs.k8s.io/yaml
//! `YAMLToJSON`; outrigger splits the same text with `yaml::DocumentReader` (the CLI's path;
//! `yaml::split_documents` is checked to return the same documents) and reads each document with
//! `yaml::from_str`. They must agree on every document's text, on each document's JSON (or its
//! error text, exactly), and on the error that stops the stream.
//!
//! Inputs: (a) every YAML file of this repository, the stream fixtures of `tests/fixtures/streams`
//! among them (files without a final newline, directives, `...`, CRLF, errors in later
//! documents); (b) every file of Istio's conformance corpus; (c) seeded random streams assembled
//! from documents, separators, directives, end markers and line endings
//! (`OUTRIGGER_DIFF_ITERATIONS`, `OUTRIGGER_DIFF_SEED`). Each test prints its counts.

#[path = "../../outrigger-go/tests/go_oracle/mod.rs"]
mod go_oracle;
#[path = "../../outrigger-go/tests/harness/mod.rs"]
mod harness;
mod inputs;

use std::io::Write;
use std::path::{Path, PathBuf};

use go_oracle::{assert_no_disagreements, generator, replacement_chars, GoStream, Oracle};
use harness::{trial, Need};
use outrigger_go::go::json as gojson;
use outrigger_go::yaml;

fn main() {
    harness::run(vec![
        trial("repository_streams", &[Need::Oracle], repository_streams),
        trial(
            "corpus_streams",
            &[Need::Oracle, Need::Corpus],
            corpus_streams,
        ),
        trial("generated_streams", &[Need::Oracle], generated_streams),
    ]);
}

/// Print a line on standard error even while the harness captures output.
fn show(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Each document's text and its reading (the JSON text Go prints, or the error text).
type Documents = Vec<(String, Result<String, String>)>;

/// outrigger's reading of a stream: its documents, then the error that stopped the reader.
fn ours(text: &str) -> (Documents, Option<String>) {
    let mut docs = Vec::new();
    for d in yaml::DocumentReader::new(text.as_bytes()) {
        match d {
            Ok(d) => {
                let json = yaml::from_str(&d.text)
                    .map(|v| gojson::to_string_sorted(&v))
                    .map_err(|e| e.to_string());
                docs.push((d.text, json));
            }
            Err(e) => return (docs, Some(e.to_string())),
        }
    }
    (docs, None)
}

/// Counts of one comparison.
#[derive(Default)]
struct Tally {
    streams: usize,
    documents: usize,
    agree: usize,
    ambiguous: usize,
    both_err: usize,
    stream_errors: usize,
    disagreements: Vec<String>,
}

impl Tally {
    fn compare(&mut self, o: &mut Oracle, inputs: &[(String, String)]) {
        for chunk in inputs.chunks(500) {
            let texts: Vec<&str> = chunk.iter().map(|(_, t)| t.as_str()).collect();
            for ((label, text), go) in chunk.iter().zip(o.streams(&texts)) {
                self.stream(label, text, &go);
            }
        }
    }

    fn stream(&mut self, label: &str, text: &str, go: &GoStream) {
        self.streams += 1;
        let (mine, my_error) = ours(text);
        if let (None, Ok(split)) = (&my_error, yaml::split_documents(text)) {
            let split: Vec<&str> = split.iter().map(|d| d.as_ref()).collect();
            let read: Vec<&str> = mine.iter().map(|(t, _)| t.as_str()).collect();
            assert_eq!(
                split, read,
                "{label}: split_documents and DocumentReader differ"
            );
        }
        self.stream_errors += usize::from(go.error.is_some());
        if go.error != my_error {
            self.disagreements.push(format!(
                "{label}: {text:?}\n    stream error go:   {:?}\n    stream error ours: {my_error:?}",
                go.error
            ));
        }
        for i in 0..go.docs.len().max(mine.len()) {
            self.documents += 1;
            let (g, m) = (go.docs.get(i), mine.get(i));
            if g.is_some_and(|g| g.ambiguous) {
                self.ambiguous += 1;
                continue;
            }
            let agree = match (g, m) {
                (Some(g), Some((mt, mj))) => {
                    g.text == *mt
                        && match (&g.json, mj) {
                            (Ok(gj), Ok(mj)) => gj == mj || replacement_chars(gj) == *mj,
                            (Err(ge), Err(me)) => {
                                self.both_err += 1;
                                ge == me
                            }
                            _ => false,
                        }
                }
                _ => false,
            };
            if agree {
                self.agree += 1;
            } else {
                self.disagreements.push(format!(
                    "{label} document {i}: {text:?}\n    go:   {:?}\n    ours: {:?}",
                    g.map(|g| (&g.text, &g.json)),
                    m
                ));
            }
        }
    }

    fn report(&self, what: &str) {
        show(&format!(
            "go_stream {what}: {} streams, {} of {} documents agree ({} skipped: Go's answer \
             depends on map order; {} errors on both sides, texts compared), {} streams stopped \
             by YAMLReader's error, {} disagreements",
            self.streams,
            self.agree,
            self.documents - self.ambiguous,
            self.ambiguous,
            self.both_err,
            self.stream_errors,
            self.disagreements.len()
        ));
        assert_no_disagreements(what, &self.disagreements, 10);
    }
}

/// The YAML files below `dir` (`*.yaml`, `*.yml`, `*.injected`), sorted.
fn yaml_files(dir: &Path, skip: &[&str]) -> Vec<PathBuf> {
    let mut all = Vec::new();
    inputs::walk(dir, skip, &mut all);
    all.retain(|p| {
        p.extension()
            .is_some_and(|e| e == "yaml" || e == "yml" || e == "injected")
    });
    all.sort();
    all
}

fn read_all(root: &Path, paths: &[PathBuf]) -> Vec<(String, String)> {
    paths
        .iter()
        .filter_map(|p| {
            let text = std::fs::read_to_string(p).ok()?;
            Some((
                p.strip_prefix(root).unwrap_or(p).display().to_string(),
                text,
            ))
        })
        .collect()
}

/// (a) Every YAML file of the repository, the stream fixtures among them.
fn repository_streams() {
    let mut o = Oracle::get("repository_streams");
    let root = inputs::workspace();
    let paths = yaml_files(&root, &["target", ".git", "corpus", "node_modules"]);
    let streams = root.join("tests/fixtures/streams");
    assert!(
        paths.iter().filter(|p| p.starts_with(&streams)).count() >= 10,
        "the stream fixtures are missing"
    );
    let mut t = Tally::default();
    t.compare(&mut o, &read_all(&root, &paths));
    t.report("(a) repository YAML files as streams");
}

/// (b) Every file of Istio's conformance corpus.
fn corpus_streams() {
    let root = inputs::corpus().expect("corpus");
    let mut o = Oracle::get("corpus_streams");
    let paths = yaml_files(&root, &[]);
    let mut t = Tally::default();
    t.compare(&mut o, &read_all(&root, &paths));
    t.report("(b) conformance corpus files as streams");
}

/// Documents the generated streams are assembled from.
const DOCUMENTS: &[&str] = &[
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  k: v\n",
    "kind: Pod\nmetadata:\n  annotations:\n    script: |\n      echo a\n      echo b\n",
    "args:\n- |\n  run\n",
    "k: >\n  folded\n  text\n",
    "k: |+\n  kept\n\n",
    "k: |-\n  stripped\n",
    "# only a comment\n",
    "\n",
    "a: [1, 2\n",
    "a: 1\n...\nb: 2\n",
    "x: 'single\n  quoted'\n",
    "- a\n- b\n",
    "plain scalar\n",
    "a: 1\n  b: 2\n",
    "? complex\n: key\n",
    "anchor: &a 1\nalias: *a\n",
    "",
];

/// Lines that may stand between documents.
const SEPARATORS: &[&str] = &[
    "---\n",
    "---\n",
    "--- # comment\n",
    "---   \n",
    "---\t\n",
    "...\n",
    "...\n---\n",
    "%YAML 1.1\n---\n",
    "%TAG ! tag:example.com,2000:\n---\n",
    " ---\n",
    "",
];

/// Separator lines that YAMLReader refuses (`invalid Yaml document separator`).
const BAD_SEPARATORS: &[&str] = &["--- x\n", "----\n", "--- |\n", "---a: 1\n"];

/// Lines between two documents: mostly [`SEPARATORS`], sometimes one of [`BAD_SEPARATORS`].
fn separator(rng: &mut go_oracle::Rng) -> &'static str {
    if rng.chance(4) {
        rng.pick::<&str>(BAD_SEPARATORS)
    } else {
        rng.pick::<&str>(SEPARATORS)
    }
}

/// (c) Seeded random streams: documents, separators, directives, end markers, CRLF endings,
/// with or without a final newline.
fn generated_streams() {
    let mut o = Oracle::get("generated_streams");
    let (n, seed, mut rng) = generator(3000);
    let mut inputs = Vec::with_capacity(n);
    for i in 0..n {
        let mut text = String::new();
        if rng.chance(30) {
            text.push_str(separator(&mut rng));
        }
        for _ in 0..1 + rng.below(4) {
            text.push_str(rng.pick::<&str>(DOCUMENTS));
            text.push_str(separator(&mut rng));
        }
        text.push_str(rng.pick::<&str>(DOCUMENTS));
        if rng.chance(50) {
            while text.ends_with('\n') {
                text.pop();
            }
        }
        if rng.chance(20) {
            text = text.replace('\n', "\r\n");
        }
        inputs.push((format!("seed {seed:#x} stream {i}"), text));
    }
    let mut t = Tally::default();
    t.compare(&mut o, &inputs);
    t.report(&format!("(c) {n} generated streams (seed {seed:#x})"));
}
