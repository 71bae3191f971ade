//! Differential test of the YAML reader against Go: `outrigger_go::yaml::from_str` must agree
//! with sigs.k8s.io/yaml `YAMLToJSON` (the Go oracle, `tests/go-oracle`) on
//!
//! * (a) every YAML file of this repository (whole, and split into documents),
//! * (b) every file of the Istio conformance corpus (`../shared/conformance/istio`, read in place;
//!   skipped with a notice when absent), whole and split as kube-inject splits,
//! * (c) every text parsed while injecting: the corpus' kube-inject cases and a plain pod through
//!   every settings variant of the corpus (rendered sidecar templates included),
//! * (d) [`TRAPS`], a table of Kubernetes YAML traps (inputs only: Go supplies the answers),
//! * (e) seeded random mutations of the traps and of template-like snippets
//!   (`OUTRIGGER_DIFF_ITERATIONS=N` for longer runs, `OUTRIGGER_DIFF_SEED=S` for another seed).
//!
//! "Agree" means the same acceptance (both Ok or both Err) and, when Ok, the same JSON text as Go
//! prints (`gojson::to_string_sorted`, Go's map key order; see [`replacement_chars`] for the one
//! escape a Rust string cannot tell apart). Inputs on which Go's own answer depends
//! on its random map iteration order (two keys such as `1` and `"1"` naming the same JSON key) are
//! counted apart and not compared. Where both fail, the error texts must be the same too, but for
//! the known difference of [`known_error_difference`] (the order Go prints a mapping used as a
//! key in: the same entries required) and, where Go itself answers with more than one text
//! (which of several conversion errors it reports follows its random map order), ours must be
//! one Go gives when asked again ([`one_of_gos_answers`]). Every test prints its counts
//! (directly on standard error, so they show without `--nocapture`) and fails on any
//! disagreement.

#[path = "../../outrigger-go/tests/go_oracle/mod.rs"]
mod go_oracle;
#[path = "../../outrigger-go/tests/harness/mod.rs"]
mod harness;
mod inputs;

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use go_oracle::{replacement_chars, Answer, Oracle};
use inputs::{corpus, hello_params, snapshot, walk, workspace, XorShift};
use outrigger_go::go::json as gojson;
use outrigger_go::yaml;
use outrigger_inject::inject;
use serde_json::json;

/// Print a line on the process' standard error even while the test harness captures output.
fn show(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Our answer in the oracle's form: the JSON text Go's `json.Marshal` would print, or the error
/// text.
fn ours(text: &str) -> Answer {
    match yaml::from_str(text) {
        Ok(v) => Ok(gojson::to_string_sorted(&v)),
        Err(e) => Err(e.to_string()),
    }
}

/// An error text that differs for a known reason: go-yaml prints a mapping used as a key with
/// Go's `%#v`, whose entries Go sorts by the address of each key's type in its binary; outrigger
/// sorts them by type name: the same entries (split at the map's top level), in another order.
/// (Errors of sigs.k8s.io/yaml's conversion to JSON, where Go's choice among several depends on
/// its map iteration order, are settled by asking Go again: [`one_of_gos_answers`].)
fn known_error_difference(go: &str, ours: &str) -> bool {
    const MAP_KEY: &str = "yaml: invalid map key: map[interface {}]interface {}{";
    /// The entries of the map literal that ends the text, split at its top level, sorted.
    fn entries(s: &str) -> Option<Vec<&str>> {
        let body = s.strip_prefix(MAP_KEY)?.strip_suffix('}')?;
        let (mut out, mut depth, mut start, mut quoted) = (Vec::new(), 0i32, 0, false);
        let b = body.as_bytes();
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'\\' if quoted => i += 1,
                b'"' => quoted = !quoted,
                b'{' | b'[' | b'(' if !quoted => depth += 1,
                b'}' | b']' | b')' if !quoted => depth -= 1,
                b',' if !quoted && depth == 0 && b.get(i + 1) == Some(&b' ') => {
                    out.push(&body[start..i]);
                    start = i + 2;
                }
                _ => {}
            }
            i += 1;
        }
        out.push(&body[start..]);
        out.sort_unstable();
        Some(out)
    }
    matches!((entries(go), entries(ours)), (Some(a), Some(b)) if a == b)
}

/// Whether `ours` is one of the texts Go gives for `text` when asked again (at most 32 times):
/// for a document holding several things sigs.k8s.io/yaml cannot convert to JSON, which one Go
/// reports depends on its random map iteration order. Where Go has one text, ours must be it.
fn one_of_gos_answers(oracle: &mut Oracle, text: &str, ours: &str) -> bool {
    let conversion = |e: &str| !e.starts_with("yaml: ") && !e.contains(": yaml: ");
    if !conversion(ours) {
        return false;
    }
    let again: Vec<&str> = std::iter::repeat_n(text, 32).collect();
    oracle
        .yaml_to_json_info(&again)
        .into_iter()
        .any(|(a, _)| a.err().as_deref() == Some(ours))
}

/// The `yaml: line N:` part of an error text (empty when it has none).
fn line_part(e: &str) -> &str {
    let e = e
        .strip_prefix("error converting YAML to JSON: ")
        .unwrap_or(e);
    match e.strip_prefix("yaml: line ") {
        Some(rest) => {
            let digits = rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len());
            &e[..("yaml: line ".len() + digits).min(e.len())]
        }
        None => "",
    }
}

/// Counts of one comparison run.
#[derive(Default)]
struct Tally {
    compared: usize,
    agree: usize,
    ambiguous: usize,
    both_err: usize,
    same_error: usize,
    same_error_line: usize,
    disagreements: Vec<String>,
    /// Inputs on which both fail with different texts (shown with `OUTRIGGER_DIFF_SHOW_ERRORS=1`).
    other_errors: Vec<String>,
}

impl Tally {
    fn report(&self, source: &str) {
        show(&format!(
            "go_yaml {source}: {} inputs compared, {} agree, {} disagree, {} skipped (Go's answer \
             depends on map order); errors on both sides: {}, same error text: {}, same \
             `yaml: line N:` part: {}",
            self.compared,
            self.agree,
            self.disagreements.len(),
            self.ambiguous,
            self.both_err,
            self.same_error,
            self.same_error_line
        ));
        for d in self.disagreements.iter().take(40) {
            show(&format!("  DISAGREE {d}"));
        }
        if std::env::var("OUTRIGGER_DIFF_SHOW_ERRORS").is_ok_and(|v| v == "1") {
            for d in self.other_errors.iter().take(40) {
                show(&format!("  ERROR TEXT {d}"));
            }
        }
    }

    /// Fail on any disagreement.
    fn assert_ok(&self, test: &str) {
        assert!(
            self.disagreements.is_empty(),
            "{test}: {} disagreements with Go's YAMLToJSON; first: {}",
            self.disagreements.len(),
            self.disagreements.first().map_or("", String::as_str)
        );
    }
}

/// Compare our reader with Go on every input (deduplicated), labelled by `label(i)`.
fn compare(oracle: &mut Oracle, inputs: &[(String, String)], tally: &mut Tally) {
    for chunk in inputs.chunks(2000) {
        let texts: Vec<&str> = chunk.iter().map(|(_, t)| t.as_str()).collect();
        let answers = oracle.yaml_to_json_info(&texts);
        for ((label, text), (go, ambiguous)) in chunk.iter().zip(answers) {
            if ambiguous {
                tally.ambiguous += 1;
                continue;
            }
            tally.compared += 1;
            let mine = ours(text);
            let agree = match (&go, &mine) {
                (Ok(g), Ok(m)) => g == m || replacement_chars(g) == *m,
                (Err(g), Err(m)) => {
                    tally.both_err += 1;
                    tally.same_error += usize::from(g == m);
                    tally.same_error_line += usize::from(line_part(g) == line_part(m));
                    if g != m {
                        tally
                            .other_errors
                            .push(format!("{label}: {text:?}\n    go:   {g}\n    ours: {m}"));
                    }
                    g == m || known_error_difference(g, m) || one_of_gos_answers(oracle, text, m)
                }
                _ => false,
            };
            if agree {
                tally.agree += 1;
            } else {
                tally.disagreements.push(format!(
                    "{label}: {text:?}\n    go:   {go:?}\n    ours: {mine:?}"
                ));
            }
        }
    }
}

/// Deduplicate `(label, text)` pairs by text, keeping the first label.
fn dedup(inputs: Vec<(String, String)>) -> Vec<(String, String)> {
    let mut seen = BTreeSet::new();
    inputs
        .into_iter()
        .filter(|(_, t)| seen.insert(t.clone()))
        .collect()
}

/// A text and the documents kube-inject would split it into.
fn with_documents(label: &str, text: &str, out: &mut Vec<(String, String)>) {
    out.push((label.to_string(), text.to_string()));
    if let Ok(docs) = yaml::split_documents(text) {
        for (i, d) in docs.into_iter().enumerate() {
            out.push((format!("{label} (document {i})"), d.to_string()));
        }
    }
}

/// (a) Every YAML file of the repository.
fn repository_yaml_files() {
    let mut o = Oracle::get("repository_yaml_files");
    let root = workspace();
    let mut paths = Vec::new();
    walk(
        &root,
        &["target", ".git", "artifacts", "corpus", "node_modules"],
        &mut paths,
    );
    paths.sort();
    let mut inputs = Vec::new();
    for p in &paths {
        let is_yaml = p
            .extension()
            .is_some_and(|e| e == "yaml" || e == "yml" || e == "injected");
        let in_regressions = p.components().any(|c| c.as_os_str() == "regressions");
        if !is_yaml && !in_regressions {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(p) else {
            continue;
        };
        let label = p.strip_prefix(&root).unwrap_or(p).display().to_string();
        with_documents(&label, &text, &mut inputs);
    }
    let inputs = dedup(inputs);
    assert!(!inputs.is_empty(), "no YAML files found under {root:?}");
    let mut t = Tally::default();
    compare(&mut o, &inputs, &mut t);
    t.report("(a) repository YAML files");
    t.assert_ok("repository_yaml_files");
}

/// (b) Every file of the Istio conformance corpus.
fn corpus_files() {
    let root = corpus().expect("the harness checked the corpus");
    let mut o = Oracle::get("corpus_files");
    let mut paths = Vec::new();
    walk(&root, &[], &mut paths);
    paths.sort();
    let mut inputs = Vec::new();
    for p in &paths {
        let Ok(text) = std::fs::read_to_string(p) else {
            continue;
        };
        let label = p.strip_prefix(&root).unwrap_or(p).display().to_string();
        with_documents(&label, &text, &mut inputs);
    }
    let inputs = dedup(inputs);
    let mut t = Tally::default();
    compare(&mut o, &inputs, &mut t);
    t.report("(b) corpus files");
    t.assert_ok("corpus_files");
}

/// (c) Every text parsed while injecting: the corpus' kube-inject cases, and a pod with a few
/// annotations through webhook injection with every settings variant, native sidecars on and off.
fn rendered_templates() {
    let root = corpus().expect("the harness checked the corpus");
    let mut o = Oracle::get("rendered_templates");
    let mut inputs: Vec<(String, String)> = inputs::corpus_injection_texts(&root)
        .into_iter()
        .map(|(name, t)| (format!("case {name}"), t))
        .collect();
    let pod = json!({"metadata":{"name":"hello","namespace":"default","labels":{"app":"hello"},
        "annotations":{"sidecar.istio.io/proxyCPU":"200m",
            "sidecar.istio.io/userVolumeMount":"[{\"name\": \"certs\", \"mountPath\": \"/etc/certs\"}]",
            "proxy.istio.io/config":"holdApplicationUntilProxyStarts: true"}},
      "spec":{"containers":[{"name":"hello","image":"x","env":[{"name":"A","value":"1"}],
        "ports":[{"name":"http","containerPort":80}]}]}});
    let mut variants = Vec::new();
    walk(&root.join("settings"), &[], &mut variants);
    let mut dirs: Vec<PathBuf> = variants
        .iter()
        .filter(|p| p.file_name().is_some_and(|n| n == "config.yaml"))
        .filter_map(|p| p.parent().map(Path::to_path_buf))
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty(), "no settings variants in the corpus");
    for dir in &dirs {
        let Some(s) = snapshot(dir, &dir.join("mesh.yaml"), false) else {
            continue;
        };
        for native in [false, true] {
            let p = hello_params(&s, native);
            let (_, texts) = yaml::traced(|| inject::inject_pod(&pod, &p).map(|_| ()));
            for t in texts {
                inputs.push((format!("settings {}", dir.display()), t));
            }
        }
    }
    let inputs = dedup(inputs);
    assert!(
        inputs.len() > 100,
        "too few rendered texts: {}",
        inputs.len()
    );
    let mut t = Tally::default();
    compare(&mut o, &inputs, &mut t);
    t.report("(c) texts parsed during injections");
    t.assert_ok("rendered_templates");
}

/// Kubernetes YAML traps: inputs only, Go's oracle supplies the expected answers. Rows named
/// after a disagreement that was fixed keep that input as a regression.
const TRAPS: &[(&str, &str)] = &[
    // YAML 1.1 scalars.
    ("bools", "a: yes\nb: No\nc: on\nd: OFF\ne: y\nf: N\ng: true\nh: False\ni: yEs\n"),
    ("octal and friends", "a: 010\nb: 08\nc: 0o17\nd: 0x1F\ne: 0b101\nf: -0b11\ng: 1_000\nh: +12\ni: 0x_1F\n"),
    // Found by the differential run: `0b` then a sign (Go's ParseInt after the prefix).
    ("binary with a sign after the prefix", "e: 0b+101\nf: 0b-11\ng: -0b-1\nh: 0b+\n"),
    ("big numbers", "a: 9223372036854775807\nb: 9223372036854775808\nc: 18446744073709551615\nd: 18446744073709551616\ne: -9223372036854775809\n"),
    // Found by the long differential run: shortest digits of a value halfway between two
    // (Go rounds the last digit to even).
    ("float halfway between shortest digits", "a: !!float 1844674473709551.15\nb: 1125899906842624.25\nc: 1125899906842624.75\n"),
    ("floats", "a: 1.5\nb: 1e3\nc: 1.\nd: .5\ne: -.5\nf: 1e21\ng: 0.000001\nh: 1e-7\ni: 1_0.5\nj: 1e400\nk: -0.0\nl: 6.02e+23\n"),
    ("dot floats with separators", "a: .5_0\nb: ._5\nc: .5e1_0\nd: .5_\ne: .e5\n"),
    ("nulls", "a: ~\nb: null\nc: Null\nd: NULL\ne:\nf: nULL\n"),
    ("infinities are errors", "a: .inf\n"),
    ("negative infinity", "a: -.Inf\n"),
    ("nan is an error", "a: .nan\n"),
    ("inf and nan keys", ".inf: 1\n-.inf: 2\n.nan: 3\n"),
    // Found by the differential run: a finite float key beyond float32's range.
    ("float key beyond float32", "   1e0103: 6.02e+23\n-1e39: x\n"),
    ("timestamps", "a: 2001-12-14\nb: 2001-12-14T21:59:43.10Z\nc: 2001-12-14 21:59:43.10\nd: 2001-12-14t21:59:43-05:00\ne: 2001-13-14\nf: 2024-02-29\ng: 2023-02-29\nh: 2001-1-2\n"),
    // Found by the long differential run (seed 0xc0ffee1234): time.Parse matches the layout's
    // space with a run of spaces.
    ("timestamp with several spaces", "a: !!timestamp 2001-12-14  21:59:43.10\nb: !!timestamp 2001-12-14 \nc: 2001-12-14   21:59:43\n"),
    ("version-like strings", "a: 1.20\nb: 1.2.3\nc: 1:20\nd: 190:20:30\ne: 0.1\n"),
    ("quoted stay strings", "a: \"yes\"\nb: '010'\nc: \"1e3\"\nd: '~'\ne: \"\"\nf: ''\n"),
    // Keys.
    ("non-string keys", "1: a\ntrue: b\n1.5: c\n0x10: d\nno: e\n1e6: f\n0.1: g\n"),
    ("null key", "~: a\n"),
    ("empty key", ": a\n"),
    ("uint key", "18446744073709551615: a\n"),
    ("sequence key", "[a]: b\n"),
    ("mapping key", "{a: 1}: b\n"),
    ("empty flow sequence key", "[]: b\n"),
    ("empty flow mapping key", "{}: b\n"),
    ("complex key", "? a\n: b\n? - c\n: d\n"),
    ("long key", concat!(
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        ": 1\n")),
    // Duplicate keys: YAMLToJSON keeps the last value.
    ("duplicate keys", "a: 1\nb: 2\na: 3\n"),
    ("duplicate nested keys", "x:\n  y: 1\n  y: 2\n"),
    ("duplicate keys after conversion", "0x1: a\n1: b\n"),
    ("duplicate key name in a container", "spec:\n  containers:\n  - name: a\n    image: i\n    name: b\n"),
    // Anchors, aliases, merges.
    ("anchors and aliases", "base: &b\n  x: 1\n  w: 2\nref: *b\nlist: &l [1, 2]\nl2: *l\ns: &s str\nt: *s\n"),
    ("merge", "base: &b {x: 1, w: 2}\nm:\n  <<: *b\n  w: 3\n"),
    ("merge sequence", "a: &a {k: 1, a: 1}\nb: &b {k: 2, b: 2}\nc:\n  <<: [*a, *b]\n"),
    ("merge overrides earlier keys", "a: &a {k: 1}\nb:\n  k: 0\n  <<: *a\n"),
    ("merge then duplicates", "b: &b {p: 1}\nm:\n  <<: *b\n  p: 2\n  p: 3\n"),
    ("merge of a scalar", "a: 1\nb:\n  <<: 5\n"),
    ("merge of inline mapping", "m:\n  <<: {a: 1}\n  b: 2\n"),
    ("merge tag", "b: &b {p: 1}\nm:\n  !!merge <<: *b\n"),
    ("quoted merge key", "m:\n  '<<': 1\n"),
    ("merge key as value", "a: <<\n"),
    ("unknown alias", "a: *nope\n"),
    ("alias inside its anchor", "a: &a [1, *a]\n"),
    ("alias as key", "a: &k x\n*k : z\n"),
    ("anchor with colon", "&an:chor a\n"),
    ("anchor before alias", "a: &x *y\n"),
    ("redefined anchor", "a: &x 1\nb: &x 2\nc: *x\n"),
    // Tags.
    ("core tags", "a: !!str 10\nb: !!int \"12\"\nc: !!float 3\nd: !!bool yes\ne: !!null ''\nf: !custom 5\ng: !!binary aGVsbG8=\nh: !!str true\ni: !!timestamp 2001-01-01\n"),
    ("bad core tags", "a: !!int foo\n"),
    ("tagged float uint", "a: !!float 18446744073709551615\n"),
    ("int tag on a date", "a: !!int 2001-01-01\n"),
    ("non-specific tag", "a: ! 12\nb: ! yes\n"),
    ("verbatim tag", "a: !<tag:yaml.org,2002:str> 5\n"),
    ("tag directive", "%TAG !e! tag:example.com,2000:\n---\na: !e!foo 1\n"),
    ("undefined tag handle", "a: !e!foo 1\n"),
    ("binary invalid utf-8", "a: !!binary 4oI=\n"),
    ("bad binary", "a: !!binary a\n"),
    ("tagged collections", "a: !!map {b: 1}\nc: !!seq [1]\nd: !!str [1]\n"),
    // Block scalars.
    ("literal chomping", "a: |\n  x\n\nb: |-\n  x\n\nc: |+\n  x\n\nd: >\n  x\n  y\n\n  z\n"),
    ("indentation indicators", "a: |2\n    x\n  y\nb: >-1\n  z\n"),
    ("indentation indicator zero", "a: |0\n  x\n"),
    ("block scalar more indented first line", "a: |\n    x\n  y\n"),
    ("empty block scalar at end of input", "v: |"),
    ("empty block scalar at end of line", "v: |\n"),
    ("block scalar at end without newline", "a: |\n  x"),
    ("block scalar keep at end", "a: |+\n  x\n\n\n"),
    ("block scalar with tab indent", "a: |\n\tx\n"),
    ("folded more indented lines", "a: >\n  x\n    y\n  z\n"),
    // Line breaks, whitespace, special characters.
    ("crlf", "a: 1\r\nb:\r\n  - x\r\n  - y\r\nc: |\r\n  l1\r\n  l2\r\n"),
    ("lone cr", "a: 1\rb: 2\r"),
    ("tab after colon", "a:\t1\nb:\t\tx\n"),
    ("tab inside value", "a: x\ty\n"),
    ("tab indentation", "a:\n\t- x\n"),
    ("tab before key", "\ta: 1\n"),
    ("tab in flow", "a: [1,\t2]\n"),
    ("bom", "\u{FEFF}a: 1\n"),
    ("bom only", "\u{FEFF}"),
    ("bom in second line", "a: 1\n\u{FEFF}b: 2\n"),
    ("control character", "a: \u{1}\n"),
    ("delete character", "a: \u{7f}\n"),
    ("control character after the document", "a: 1\n...\n\u{1}\n"),
    ("escapes", "a: \"\\x41\\u00e9\\U0001F600\\t\\n\\0\\a\\e\\N\\_\\L\\P\\ \\\"\"\n"),
    ("slash escape", "a: \"\\/\"\n"),
    ("quote escape", "a: \"\\'\"\n"),
    ("surrogate escape", "a: \"\\ud800\"\n"),
    ("nel and line separators", "a: x\u{85}y\nb: x\u{2028}y\n"),
    ("c1 control", "a: \u{86}\n"),
    ("multi-line plain scalar", "a: this is\n  a long\n\n  value\n"),
    ("multi-line quoted scalar", "a: \"x\n  y\n\n  z\"\nb: 'p\n  q'\n"),
    ("quoted scalar continued at parent indentation", "a:\n  b: \"x\n  y\"\n"),
    ("quoted scalar continued below parent indentation", "a:\n  b: \"x\ny\"\n"),
    // Documents.
    ("document end then text", "a: 1\n...\nb: 2\n"),
    ("second document", "a: 1\n---\nb: 2\n"),
    ("second document invalid", "a: 1\n---\nb: [\n"),
    ("leading document end", "...\na: 1\n"),
    ("leading document end only", "...\n"),
    ("explicit document", "---\na: 1\n...\n"),
    ("yaml directive 1.1", "%YAML 1.1\n---\na: 1\n"),
    ("yaml directive 1.2", "%YAML 1.2\n---\na: 1\n"),
    ("duplicate yaml directive", "%YAML 1.1\n%YAML 1.1\n---\na: 1\n"),
    ("unknown directive", "%FOO bar\n---\na: 1\n"),
    ("directive without document", "%YAML 1.1\na: 1\n"),
    ("empty", ""),
    ("only spaces", "   \n\n"),
    ("only comment", "# c\n"),
    ("scalar document", "hello\n"),
    ("sequence document", "- a\n- 1\n"),
    // Flow collections.
    ("flow collections", "a: {b: 1, c: [x, 'y', \"z\",], d: {}}\ne: []\n"),
    ("flow question key", "{ ?foo: bar }"),
    ("flow empty value", "{e:,}"),
    ("flow adjacent colon", "{a:b}"),
    ("flow json style", "{\"a\":1,\"b\":[true,null]}"),
    ("flow sequence of pairs", "[a: 1, b: 2]"),
    ("flow explicit key in sequence", "[? : x]"),
    ("flow trailing comma", "[1,\n]"),
    ("flow missing comma", "a: [1 2]\n"),
    ("flow unclosed", "a: 1\nb: [1, 2\n"),
    ("multi-line flow at key indentation", "      args: [\n          \"-a\", \"b\",\n      ]\n"),
    ("multi-line flow in a container", "spec:\n  containers:\n  - name: c\n    args: [\n        \"-a\", \"b\",\n    ]\n"),
    ("multi-line flow below key indentation", "a:\n  b: [\n1, 2\n]\n"),
    ("multi-line flow mapping at column 0", "a: {\nb: 1,\nc: 2\n}\n"),
    ("multi-line flow with document marker", "a: [\n---\n]\n"),
    ("multi-line flow sequence entries", "- [\n  a,\n  b\n  ]\n- x\n"),
    ("flow in block sequence below indentation", "k:\n  - [a,\n  b]\n"),
    // Structure.
    ("bad indentation", "a:\n  b: 1\n c: 2\n"),
    ("sequence at key indentation", "key:\n- a\n- b\nother: 1\n"),
    ("mapping values not allowed", "a: b: c\n"),
    ("block entry not allowed", "a: - b\n"),
    ("compact nested sequence", "- - x\n  - y\n- - z\n"),
    ("comment without space", "a: b#c\n"),
    ("key with colon", "a:b: c\n"),
    ("url value", "url: http://x:80/p # c\n"),
    ("spire-like args", "spec:\n  template:\n    spec:\n      containers:\n      - name: agent\n        args: [\n          \"-config\",\n          \"/run/spire/config/agent.conf\"\n        ]\n"),
    ("user volume mount annotation", "metadata:\n  annotations:\n    sidecar.istio.io/userVolumeMount: '[{\"name\": \"istio-certs\", \"mountPath\": \"/etc/istio-certs\"}]'\n"),
];

/// (d) The trap table.
fn kubernetes_yaml_traps() {
    let mut o = Oracle::get("kubernetes_yaml_traps");
    let names: BTreeSet<&str> = TRAPS.iter().map(|(n, _)| *n).collect();
    assert_eq!(names.len(), TRAPS.len(), "trap names must be unique");
    let mut inputs: Vec<(String, String)> = TRAPS
        .iter()
        .map(|(n, t)| ((*n).to_string(), (*t).to_string()))
        .collect();
    inputs.extend(deep_traps());
    let mut t = Tally::default();
    compare(&mut o, &inputs, &mut t);
    t.report("(d) trap table");
    t.assert_ok("kubernetes_yaml_traps");
}

/// Nesting at the depth limit of the reader (deeper documents are refused on purpose), and
/// control characters after the first document around go-yaml's 512-byte reader chunks (it
/// refuses them only in the chunks its scanner reaches).
fn deep_traps() -> Vec<(String, String)> {
    let n = 512;
    let comment = |len: usize| format!("#{}\n", "c".repeat(len));
    let mut chunks = Vec::new();
    for (name, pad, tail) in [
        ("control character after the end, first chunk", 100, ""),
        ("control character after the end, second chunk", 600, ""),
        ("control character after the end, third chunk", 1100, ""),
        (
            "control character after a second document, second chunk",
            600,
            "---\nb: 2\n",
        ),
    ] {
        chunks.push((
            name.to_string(),
            format!("a: 1\n...\n{tail}{}\u{1}\n", comment(pad)),
        ));
    }
    for at in [440, 470, 490, 500, 505, 508, 509, 510, 511, 512, 513, 520] {
        for gap in [0, 10, 30, 700] {
            chunks.push((
                format!("document at byte {at}, control character {gap} bytes after its end"),
                format!("{}a: 1\n...\n{}\u{1}\n", comment(at - 6), comment(gap)),
            ));
        }
    }
    chunks.push((
        "multi-byte character across a chunk boundary".to_string(),
        format!("{}a: é\n...\n{}\u{1}", comment(505), comment(600)),
    ));
    chunks.extend([
        (
            "flow nesting at the limit".to_string(),
            "[".repeat(n) + &"]".repeat(n),
        ),
        ("block nesting at the limit".to_string(), {
            let mut s = String::new();
            for i in 0..n {
                s.push_str(&" ".repeat(i));
                s.push_str("k:\n");
            }
            s
        }),
    ]);
    chunks
}

/// Template-like seeds besides the traps.
const SEEDS: &[&str] = &[
    "metadata:\n  labels:\n    app: \"hello\"\n    v: 1\n  annotations: {\n    a: \"x\",\n    b: y,\n  }\nspec:\n  containers:\n  - name: c\n    image: \"i:1\"\n    args:\n    - a\n    -  \"b\" \n    - --x=y:z\n    ports:\n    - containerPort: 80\n      protocol: TCP\n    env:\n    - name: X\n      value: |\n        {}\n    - name: Y\n      value: |-\n        [\n          {\"a\":1}\n        ]\n    # comment\n    - name: Z\n      valueFrom:\n        fieldRef:\n          fieldPath: status.podIP\n  volumes:\n  - emptyDir:\n    name: v\n  - emptyDir: {}\n    name: w\n",
    "a: 1\nb: yes\nc: 0x1F\nd: 1.5\ne: ~\nf: 'q''s'\ng: \"e\\n\\t\"\nh: [1, 'two', {t: 3}]\ni:\n- - x\n  - y\n- k: v\n  l: |+\n    keep\n\n",
    "key:\n- a\n- b: c\n  d:\n  - e\nz: url://h:80/p # c\n",
    "base: &b\n  x: 1\nm:\n  <<: *b\n  y: [*b, {z: *b}]\n? complex\n: !!str 2\n",
];

/// Fragments inserted by the mutations: YAML syntax and scalars that resolve differently.
const FRAGMENTS: &[&str] = &[
    "- ",
    ": ",
    "? ",
    ":",
    "-",
    "&a ",
    "*a",
    "&b",
    "*b ",
    "!!str ",
    "!!int ",
    "!!float ",
    "!!binary ",
    "!!null ",
    "!!bool ",
    "!!timestamp ",
    "!!merge ",
    "! ",
    "!x ",
    "!<u> ",
    "<<: ",
    "<<",
    "[",
    "]",
    "{",
    "}",
    ",",
    "\"",
    "'",
    "|",
    ">",
    "|-",
    "|+",
    "|2",
    ">-",
    "#",
    " #c",
    "...",
    "---",
    "%YAML 1.1\n",
    "%TAG ! tag:x,1:\n",
    "\t",
    "\r\n",
    "\r",
    "\u{FEFF}",
    "\u{1}",
    "\u{85}",
    "\u{2028}",
    "\u{a0}",
    "é",
    "😀",
    ".inf",
    ".nan",
    "-.Inf",
    "0x1F",
    "0o7",
    "010",
    "08",
    "1e3",
    "1_000",
    ".5",
    "1.",
    "~",
    "null",
    "y",
    "No",
    "on",
    "2001-12-14",
    "2001-12-14T21:59:43Z",
    "18446744073709551616",
    "-0",
    "\\",
    "\\x41",
    "\\u263A",
    "\\/",
    "\\'",
    "\\\t",
    "\n",
    "\n\n",
    "  ",
    "    ",
    "\n- ",
    "\n  ",
    "k: v",
    "- x",
    "{a: 1}",
    "[1, 2]",
    "''",
    "\"\"",
    "@",
    "`",
    "%",
];

/// One random edit: delete, duplicate, re-indent or join lines, or insert, substitute or delete
/// a fragment or character.
fn mutate(text: &str, rng: &mut XorShift) -> String {
    let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
    let i = rng.below(lines.len());
    match rng.below(10) {
        0 => {
            if lines.len() > 1 {
                lines.remove(i);
            }
        }
        1 => {
            let l = lines[i].clone();
            lines.insert(i, l);
        }
        2 => {
            let n = rng.below(5);
            lines[i] = format!("{}{}", " ".repeat(n), lines[i].trim_start());
        }
        3 => {
            let n = rng.below(3) + 1;
            lines[i] = format!("{}{}", " ".repeat(n), lines[i]);
        }
        4 if i + 1 < lines.len() => {
            let next = lines.remove(i + 1);
            lines[i].push_str(&next);
        }
        5 | 6 => {
            let chars: Vec<char> = lines[i].chars().collect();
            let at = rng.below(chars.len() + 1);
            let frag = rng.pick(FRAGMENTS);
            let mut s: String = chars[..at].iter().collect();
            s.push_str(frag);
            s.extend(&chars[at..]);
            lines[i] = s;
        }
        _ => {
            const CHARS: &[u8] = b" \n:-#'\"|>+[]{},&*!?%@`\\\t\r0aZ.~_";
            let mut chars: Vec<char> = lines[i].chars().collect();
            let at = rng.below(chars.len() + 1);
            let c = char::from(CHARS[rng.below(CHARS.len())]);
            match rng.below(3) {
                0 if at < chars.len() => chars[at] = c,
                1 if at < chars.len() => {
                    chars.remove(at);
                }
                _ => chars.insert(at, c),
            }
            lines[i] = chars.into_iter().collect();
        }
    }
    lines.join("\n")
}

/// Plain scalars that YAML 1.1 resolves in different ways, and plain words.
const SCALARS: &[&str] = &[
    "a",
    "hello world",
    "yes",
    "No",
    "on",
    "OFF",
    "y",
    "n",
    "true",
    "False",
    "~",
    "null",
    "NULL",
    "0",
    "-0",
    "010",
    "08",
    "0o17",
    "0x1F",
    "0b101",
    "-0b11",
    "1_000",
    "+12",
    "1.5",
    "1e3",
    "1.",
    ".5",
    "-.5",
    "1e400",
    ".inf",
    "-.Inf",
    ".nan",
    "2001-12-14",
    "2001-12-14T21:59:43.10Z",
    "2001-12-14 21:59:43.10",
    "1:20",
    "1.2.3",
    "9223372036854775808",
    "18446744073709551616",
    "http://x:80/p",
    "a:b",
    "a#b",
    "-x",
    ":x",
    "?x",
    "x,y",
    "x]y",
    "@x",
    "<<",
    "=",
    "é",
    "😀",
    ".5_0",
    "0.000001",
    "1e21",
    "6.02e+23",
    "100m",
    "128Mi",
    "--flag=v",
];

/// Tags, anchors and other node properties.
const PROPERTIES: &[&str] = &[
    "!!str ",
    "!!int ",
    "!!float ",
    "!!bool ",
    "!!null ",
    "!!binary ",
    "!!timestamp ",
    "!!map ",
    "!!seq ",
    "!!merge ",
    "! ",
    "!local ",
    "!<tag:yaml.org,2002:str> ",
    "!e!x ",
    "&a ",
    "&b ",
    "&a !!str ",
    "!!str &b ",
];

/// A random YAML text built from the grammar: block and flow collections, all scalar styles,
/// properties, aliases, merges, comments, odd indentation and document markers.
struct Gen<'r> {
    rng: &'r mut XorShift,
    out: String,
    anchors: usize,
}

impl Gen<'_> {
    fn chance(&mut self, n: usize) -> bool {
        self.rng.below(n) == 0
    }

    fn scalar(&mut self) -> String {
        let s = self.rng.pick(SCALARS).to_string();
        match self.rng.below(8) {
            0 => format!("'{}'", s.replace('\'', "''")),
            1 => {
                const ESC: &[&str] = &[
                    "\\n",
                    "\\t",
                    "\\x41",
                    "\\u00e9",
                    "\\\"",
                    "\\\\",
                    "\\ ",
                    "\\_",
                    "\\N",
                    "\\/",
                    "\\'",
                    "\\U0001F600",
                    "\\0",
                    "\\e",
                ];
                let esc = if self.chance(3) {
                    self.rng.pick(ESC)
                } else {
                    ""
                };
                format!("\"{}{esc}\"", s.replace(['\\', '"'], ""))
            }
            2 if self.anchors > 0 => format!("*a{}", self.rng.below(self.anchors + 1)),
            3 if self.chance(3) => format!("{}{s}", self.rng.pick(PROPERTIES)),
            _ => s,
        }
    }

    fn newline(&mut self, indent: usize) {
        if self.chance(12) {
            self.out.push_str(" # c");
        }
        self.out.push('\n');
        if self.chance(15) {
            self.out.push('\n');
        }
        let jitter = match self.rng.below(20) {
            0 => indent.saturating_sub(1),
            1 => indent + 1,
            _ => indent,
        };
        self.out.push_str(&" ".repeat(jitter));
    }

    fn anchor(&mut self) {
        if self.chance(8) {
            self.out.push_str(&format!("&a{} ", self.anchors));
            self.anchors += 1;
        }
    }

    /// A node at column `indent`, written after a key or `- ` on the current line.
    fn node(&mut self, indent: usize, depth: usize) {
        let choice = if depth > 4 { 0 } else { self.rng.below(9) };
        match choice {
            3 | 4 => {
                self.anchor();
                let step = 1 + self.rng.below(3);
                let inner = if self.chance(4) {
                    indent
                } else {
                    indent + step
                };
                self.newline(inner);
                self.mapping(inner, depth + 1);
            }
            5 => {
                self.anchor();
                let inner = if self.chance(2) { indent } else { indent + 2 };
                self.newline(inner);
                self.sequence(inner, depth + 1);
            }
            6 => self.flow(indent, depth + 1),
            7 => self.block_scalar(indent),
            _ => {
                let v = self.scalar();
                self.out.push_str(&v);
            }
        }
    }

    fn key(&mut self) -> String {
        match self.rng.below(12) {
            0 => "<<".to_string(),
            1 => format!("? {}", self.scalar()),
            2 => "\"k\"".to_string(),
            3 => "dup".to_string(),
            _ => {
                let k = self.scalar();
                if k.starts_with('*') || k.starts_with('!') || k.starts_with('&') {
                    format!("{k} ")
                } else {
                    k
                }
            }
        }
    }

    fn mapping(&mut self, indent: usize, depth: usize) {
        for i in 0..1 + self.rng.below(4) {
            if i > 0 {
                self.newline(indent);
            }
            let k = self.key();
            self.out.push_str(&k);
            let sep = if k.starts_with('?') && self.chance(2) {
                "\n: "
            } else {
                ": "
            };
            self.out.push_str(sep);
            self.node(indent, depth);
        }
    }

    fn sequence(&mut self, indent: usize, depth: usize) {
        for i in 0..1 + self.rng.below(4) {
            if i > 0 {
                self.newline(indent);
            }
            self.out.push_str("- ");
            if self.chance(4) {
                self.mapping(indent + 2, depth + 1);
            } else {
                self.node(indent + 2, depth);
            }
        }
    }

    fn flow(&mut self, indent: usize, depth: usize) {
        let map = self.chance(2);
        self.out.push(if map { '{' } else { '[' });
        let multi = self.chance(3);
        let n = self.rng.below(4);
        for i in 0..n {
            if i > 0 {
                self.out.push_str(", ");
            }
            if multi {
                let col = match self.rng.below(4) {
                    0 => 0,
                    1 => indent,
                    _ => indent + 2,
                };
                self.newline(col);
            }
            if depth < 6 && self.chance(5) {
                self.flow(indent, depth + 1);
            } else {
                let v = self.scalar();
                self.out.push_str(&v);
            }
            if map {
                let sep = if self.chance(6) { ":" } else { ": " };
                self.out.push_str(sep);
                let v = self.scalar();
                self.out.push_str(&v);
            }
        }
        if self.chance(4) {
            self.out.push(',');
        }
        if multi {
            let col = match self.rng.below(3) {
                0 => indent.saturating_sub(2),
                1 => indent,
                _ => indent + 2,
            };
            self.newline(col);
        }
        self.out.push(if map { '}' } else { ']' });
    }

    fn block_scalar(&mut self, indent: usize) {
        const HEADS: &[&str] = &[
            "|", "|-", "|+", ">", ">-", ">+", "|2", ">1-", "|+1", "| # c",
        ];
        let head = self.rng.pick(HEADS);
        self.out.push_str(head);
        let base = indent + 1 + self.rng.below(3);
        for _ in 0..self.rng.below(4) {
            self.out.push('\n');
            let extra = if self.chance(4) { 2 } else { 0 };
            if self.chance(5) {
                continue;
            }
            self.out.push_str(&" ".repeat(base + extra));
            let v = self.rng.pick(SCALARS);
            self.out.push_str(v);
        }
    }

    fn document(mut self) -> String {
        match self.rng.below(12) {
            0 => self.out.push_str("---\n"),
            1 => self.out.push_str("%YAML 1.1\n---\n"),
            2 => self.out.push_str("--- "),
            _ => {}
        }
        match self.rng.below(6) {
            0 => self.sequence(0, 0),
            1 => self.node(0, 0),
            _ => self.mapping(0, 0),
        }
        match self.rng.below(10) {
            0 => self.out.push_str("\n...\nleft: over\n"),
            1 => self.out.push_str("\n---\nsecond: doc\n"),
            2 => {}
            _ => self.out.push('\n'),
        }
        self.out
    }
}

/// `n` inputs from `seed`: grammar-built documents and mutated traps and seeds.
fn mutations(seed: u64, n: usize) -> Vec<(String, String)> {
    let mut rng = XorShift(seed | 1);
    let bases: Vec<&str> = TRAPS
        .iter()
        .map(|(_, t)| *t)
        .chain(SEEDS.iter().copied())
        .collect();
    let mut out = Vec::with_capacity(n);
    for k in 0..n {
        let generated = rng.below(2) == 0;
        let mut text = if generated {
            Gen {
                rng: &mut rng,
                out: String::new(),
                anchors: 0,
            }
            .document()
        } else {
            rng.pick(&bases).to_string()
        };
        if !generated && rng.below(8) == 0 {
            text.push_str(rng.pick(&bases));
        }
        let edits = if generated {
            rng.below(3)
        } else {
            1 + rng.below(4)
        };
        for _ in 0..edits {
            text = mutate(&text, &mut rng);
        }
        out.push((format!("input {k} of seed {seed:#x}"), text));
    }
    out
}

/// Compare `n` generated inputs from `seed`, in batches (memory stays flat on long runs).
fn random_inputs(o: &mut Oracle, n: usize, seed: u64) -> Tally {
    let mut t = Tally::default();
    let mut done = 0;
    let mut batch_seed = seed;
    while done < n {
        let batch = (n - done).min(20_000);
        compare(o, &mutations(batch_seed, batch), &mut t);
        done += batch;
        batch_seed = batch_seed
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(1);
    }
    t
}

/// (e) Seeded random inputs: grammar-built documents and mutations (fixed seed by default;
/// `OUTRIGGER_DIFF_ITERATIONS=N`, `OUTRIGGER_DIFF_SEED`: decimal, or hexadecimal with `0x`).
fn random_mutations() {
    let mut o = Oracle::get("random_mutations");
    let (n, seed) = (
        go_oracle::iterations(6000),
        go_oracle::seed(0x5EED_CAFE_F00D_1234),
    );
    let t = random_inputs(&mut o, n, seed);
    t.report(&format!("(e) {n} random inputs, seed {seed:#x}"));
    t.assert_ok("random_mutations");
}

/// The long differential run: a million generated inputs (`OUTRIGGER_DIFF_ITERATIONS` and
/// `OUTRIGGER_DIFF_SEED` apply). Run by `scripts/yaml-differential.sh`; see `fuzz/README.md`.
fn a_million_random_inputs() {
    let mut o = Oracle::get("a_million_random_inputs");
    let (n, seed) = (
        go_oracle::iterations(1_000_000),
        go_oracle::seed(0x0DD5_EED0_1234_5678),
    );
    let t = random_inputs(&mut o, n, seed);
    t.report(&format!("(e, long) {n} random inputs, seed {seed:#x}"));
    t.assert_ok("a_million_random_inputs");
}

fn main() {
    harness::run(vec![
        harness::trial(
            "repository_yaml_files",
            &[harness::Need::Oracle],
            repository_yaml_files,
        ),
        harness::trial(
            "corpus_files",
            &[harness::Need::Oracle, harness::Need::Corpus],
            corpus_files,
        ),
        harness::trial(
            "rendered_templates",
            &[harness::Need::Oracle, harness::Need::Corpus],
            rendered_templates,
        ),
        harness::trial(
            "kubernetes_yaml_traps",
            &[harness::Need::Oracle],
            kubernetes_yaml_traps,
        ),
        harness::trial(
            "random_mutations",
            &[harness::Need::Oracle],
            random_mutations,
        ),
        harness::long(
            "a_million_random_inputs",
            &[harness::Need::Oracle],
            a_million_random_inputs,
        ),
    ]);
}
