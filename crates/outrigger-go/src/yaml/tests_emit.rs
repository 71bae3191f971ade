//! Unit tests of [`super::to_string`]. Expected texts were produced by sigs.k8s.io/yaml
//! `JSONToYAML` (go-yaml v2.4.0) on the same values.

use serde_json::{json, Value};

use super::emit::key_order;
use super::split_documents;
use super::tests_fast::check;

/// [`super::to_string`], with its output also read by the fast path and the full loader (which
/// must agree when the fast path answers).
fn to_string(v: &Value) -> String {
    let out = super::to_string(v);
    check(&out);
    out
}

/// [`super::from_str`], with the fast path checked against the full loader on `text`.
fn from_str(text: &str) -> Result<Value, super::YamlError> {
    check(text);
    super::from_str(text)
}

/// Emit `{"k": v}` and strip the `k:` prefix (and the space after it), as the tables are written.
fn emit_value(v: Value) -> String {
    let out = to_string(&json!({ "k": v }));
    match out.strip_prefix("k:") {
        Some(rest) => rest.strip_prefix(' ').unwrap_or(rest).to_string(),
        None => panic!("unexpected output {out:?}"),
    }
}

#[test]
fn string_quoting_matches_go_yaml() {
    let cases: &[(&str, &str)] = &[
        ("true", "\"true\"\n"),
        ("yes", "\"yes\"\n"),
        ("on", "\"on\"\n"),
        ("y", "\"y\"\n"),
        ("Y", "\"Y\"\n"),
        ("n", "\"n\"\n"),
        ("no", "\"no\"\n"),
        ("off", "\"off\"\n"),
        ("null", "\"null\"\n"),
        ("~", "\"~\"\n"),
        ("", "\"\"\n"),
        ("15020", "\"15020\"\n"),
        ("1.0", "\"1.0\"\n"),
        ("010", "\"010\"\n"),
        ("0x1F", "\"0x1F\"\n"),
        ("1e3", "\"1e3\"\n"),
        (".5", "\".5\"\n"),
        ("1_000", "\"1_000\"\n"),
        ("+1", "\"+1\"\n"),
        ("-1", "\"-1\"\n"),
        ("2024-01-01", "\"2024-01-01\"\n"),
        ("2024-13-01", "2024-13-01\n"),
        ("2001-12-14 21:59:43.10", "\"2001-12-14 21:59:43.10\"\n"),
        ("1:20", "\"1:20\"\n"),
        ("12:30:45", "\"12:30:45\"\n"),
        ("*", "'*'\n"),
        ("&a", "'&a'\n"),
        ("!x", "'!x'\n"),
        ("|", "'|'\n"),
        (">", "'>'\n"),
        ("'", "''''\n"),
        ("\"", "'\"'\n"),
        ("%x", "'%x'\n"),
        ("@x", "'@x'\n"),
        ("`x", "'`x'\n"),
        ("{\"a\":1}", "'{\"a\":1}'\n"),
        ("[a]", "'[a]'\n"),
        ("#x", "'#x'\n"),
        ("a #b", "'a #b'\n"),
        ("a#b", "a#b\n"),
        ("a: b", "'a: b'\n"),
        ("a:b", "a:b\n"),
        ("x:", "'x:'\n"),
        ("- a", "'- a'\n"),
        ("-a", "-a\n"),
        ("-", "'-'\n"),
        ("? x", "'? x'\n"),
        ("?x", "?x\n"),
        (":x", ":x\n"),
        ("---", "'---'\n"),
        ("--- x", "'--- x'\n"),
        ("...x", "'...x'\n"),
        (" lead", "' lead'\n"),
        ("trail ", "'trail '\n"),
        (" ", "' '\n"),
        ("a\tb", "\"a\\tb\"\n"),
        ("\t", "\"\\t\"\n"),
        ("\u{e9}", "\u{e9}\n"),
        ("\u{1f600}", "\"\\U0001F600\"\n"),
        ("\u{a0}x", "\u{a0}x\n"),
        ("\u{feff}x", "\"\\uFEFF\\x78\"\n"),
        ("a\\b", "a\\b\n"),
        ("http://x:80/y", "http://x:80/y\n"),
        ("<<", "<<\n"),
        ("=", "=\n"),
        ("a,b", "a,b\n"),
        ("1.", "\"1.\"\n"),
        ("1e400", "1e400\n"),
        (".inf", "\".inf\"\n"),
        ("istio-iptables", "istio-iptables\n"),
        (
            "$(POD_NAMESPACE).svc.cluster.local",
            "$(POD_NAMESPACE).svc.cluster.local\n",
        ),
        (
            "--log_output_level=default:info",
            "--log_output_level=default:info\n",
        ),
        ("'{\"a\":1}'", "'''{\"a\":1}'''\n"),
        ("\u{2028}x", "'\u{2028}  x'\n"),
        ("a\u{d}b", "\"a\\rb\"\n"),
        ("\u{0}", "\"\\0\"\n"),
        ("\u{7f}", "\"\\x7F\"\n"),
        ("\u{1b}[0m", "\"\\e[0m\"\n"),
    ];
    for &(s, want) in cases {
        assert_eq!(emit_value(json!(s)), want, "string {s:?}");
    }
}

#[test]
fn multi_line_strings() {
    let cases: &[(&str, &str)] = &[
        ("a\nb", "|-\n  a\n  b\n"),
        ("a\nb\n", "|\n  a\n  b\n"),
        ("a\nb\n\n", "|+\n  a\n  b\n\n"),
        ("\n", "|2+\n\n"),
        (" a\nb", "|2-\n   a\n  b\n"),
        ("\na", "|2-\n\n  a\n"),
        ("a \nb", "\"a \\nb\"\n"),
        ("a\n b", "|-\n  a\n   b\n"),
        ("a\n\tb", "\"a\\n\\tb\"\n"),
        ("x\n\n\ny", "|-\n  x\n\n\n  y\n"),
        ("a\u{d}\nb", "\"a\\r\\nb\"\n"),
        ("{}\n", "|\n  {}\n"),
        (
            "[\n    {\"name\":\"http\",\"containerPort\":80}\n]",
            "|-\n  [\n      {\"name\":\"http\",\"containerPort\":80}\n  ]\n",
        ),
    ];
    for &(s, want) in cases {
        assert_eq!(emit_value(json!(s)), want, "string {s:?}");
    }
}

#[test]
fn numbers_and_literals() {
    let cases: Vec<(Value, &str)> = vec![
        (json!(0), "0\n"),
        (json!(1), "1\n"),
        (json!(-1), "-1\n"),
        (json!(600), "600\n"),
        (json!(i64::MAX), "9223372036854775807\n"),
        (json!(i64::MIN), "-9223372036854775808\n"),
        (json!(u64::MAX), "18446744073709551615\n"),
        (json!(1.5), "1.5\n"),
        (json!(0.1), "0.1\n"),
        (json!(-0.5), "-0.5\n"),
        (json!(3.0), "3\n"),
        // Go encodes float64 1e6 as `1000000` in JSON, which go-yaml reads back as an int.
        (json!(1000000.0), "1000000\n"),
        (json!(1234567.5), "1.2345675e+06\n"),
        (json!(123456.5), "123456.5\n"),
        (json!(1e+21), "1e+21\n"),
        (json!(1e+20), "1e+20\n"),
        (json!(1e-07), "1e-07\n"),
        (json!(0.0001), "0.0001\n"),
        (json!(1e-05), "1e-05\n"),
        (json!(2.5e-300), "2.5e-300\n"),
        (json!(true), "true\n"),
        (json!(false), "false\n"),
        (Value::Null, "null\n"),
        (json!({}), "{}\n"),
        (json!([]), "[]\n"),
    ];
    for (v, want) in cases {
        assert_eq!(emit_value(v.clone()), want, "value {v}");
    }
}

#[test]
fn top_level_values() {
    assert_eq!(to_string(&json!({})), "{}\n");
    assert_eq!(to_string(&json!([])), "[]\n");
    assert_eq!(to_string(&Value::Null), "null\n");
    assert_eq!(to_string(&json!("foo")), "foo\n");
    assert_eq!(to_string(&json!("on")), "\"on\"\n");
    assert_eq!(to_string(&json!("a\nb")), "|-\n  a\n  b\n");
    assert_eq!(to_string(&json!([1, "a"])), "- 1\n- a\n");
    assert_eq!(to_string(&json!(1.5)), "1.5\n");
}

#[test]
fn block_structure() {
    let v = json!({
        "spec": {
            "containers": [
                {"name": "c", "args": ["a", "-p", "15001"], "resources": {}},
                {"name": "d", "env": []}
            ],
            "nested": [[1, [2]], [], {"x": {"w": "z"}}],
        },
        "apiVersion": "v1",
    });
    let want = "apiVersion: v1
spec:
  containers:
  - args:
    - a
    - -p
    - \"15001\"
    name: c
    resources: {}
  - env: []
    name: d
  nested:
  - - 1
    - - 2
  - []
  - x:
      w: z
";
    assert_eq!(to_string(&v), want);
}

#[test]
fn key_order_is_go_yaml_order() {
    let keys = [
        "b", "a", "a10", "a9", "a_b", "aB", "a-b", "A", "_x", "~", "1", "01", "10", "9", "x.y/z",
        "x.y", "\u{e9}", "Z",
    ];
    let map: serde_json::Map<String, Value> =
        keys.iter().map(|k| (k.to_string(), json!(1))).collect();
    let want = "_x: 1\n\"~\": 1\n\"1\": 1\n\"01\": 1\n\"9\": 1\n\"10\": 1\nA: 1\nZ: 1\na: 1\n\
                a-b: 1\na_b: 1\na9: 1\na10: 1\naB: 1\nb: 1\nx.y: 1\nx.y/z: 1\n\u{e9}: 1\n";
    assert_eq!(to_string(&Value::Object(map)), want);
    assert_eq!(key_order("a9", "a10"), std::cmp::Ordering::Less);
    assert_eq!(key_order("a_b", "aB"), std::cmp::Ordering::Less);
    assert_eq!(key_order("x", "x"), std::cmp::Ordering::Equal);
}

#[test]
fn inconsistent_key_order_does_not_panic() {
    // go-yaml's comparison is cyclic on these keys; any order is acceptable, but no panic.
    let mut m = serde_json::Map::new();
    for i in 0..40 {
        for k in ["0o7", "1_000", "010~"] {
            m.insert(format!("{k}{i}"), json!(i));
        }
        m.insert(format!("{i}0o7"), json!(i));
    }
    let out = to_string(&Value::Object(m.clone()));
    assert_eq!(out.lines().count(), m.len());
}

#[test]
fn long_and_complex_keys() {
    let long = "x".repeat(129);
    let ok = "y".repeat(128);
    let v = json!({ long.clone(): 1, ok.clone(): 2, "a\nb": {"c": 1}, "l": ["p", {"q": [1, []]}, [["r"]]] });
    let want = format!(
        "? |-\n  a\n  b\n: c: 1\nl:\n- p\n- q:\n  - 1\n  - []\n- - - r\n? {long}\n: 1\n{ok}: 2\n"
    );
    assert_eq!(to_string(&v), want);
}

#[test]
fn long_lines_fold_at_80_columns() {
    let words = "word ".repeat(30);
    let v = json!({ "k": words, "q": format!("'{words}:"), "d": format!("tab\t{words}") });
    let want =
        "d: \"tab\\tword word word word word word word word word word word word word word word
  word word word word word word word word word word word word word word word \"
k: 'word word word word word word word word word word word word word word word word
  word word word word word word word word word word word word word word '
q: '''word word word word word word word word word word word word word word word word
  word word word word word word word word word word word word word word :'
";
    assert_eq!(to_string(&v), want);
    // A long unbroken string is never folded.
    let s = "a".repeat(200);
    assert_eq!(to_string(&json!({ "k": s.clone() })), format!("k: {s}\n"));
}

#[test]
fn round_trip_through_from_str() {
    let v = json!({
        "strings": ["yes", "on", "", " ", "1.0", "010", "a: b", "#x", "a\nb\n", " lead\n", "\t",
                    "2024-01-01", "1:20", "\u{1F600}", "'q'", "\"dq\"", "a\\b", "~", "<<",
                    "word ".repeat(40)],
        "numbers": [0, -1, 1.5, 1e21, 18446744073709551615u64],
        "nested": {"a": {"b": [{"c": null}]}, "e": {}, "f": []},
        "bools": [true, false],
    });
    let back = match from_str(&to_string(&v)) {
        Ok(b) => b,
        Err(e) => panic!("re-parse failed: {e}"),
    };
    assert_eq!(back, v);
}

/// Location of the Istio conformance corpus (read in place, never copied).
const CORPUS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/conformance/istio"
);

/// Kinds kube-inject decodes and re-serialises.
const SUPPORTED: &[&str] = &[
    "Pod",
    "ReplicationController",
    "Deployment",
    "DaemonSet",
    "ReplicaSet",
    "StatefulSet",
    "Job",
    "CronJob",
    "DeploymentConfig",
    "List",
];

/// Every supported-kind document of every golden `*.injected` file was written by Go's
/// kube-inject through go-yaml v2: parsing and re-emitting it must give the same bytes.
#[cfg_attr(
    not(corpus_present),
    ignore = "needs Istio's conformance corpus in ../shared beside the checkout"
)]
#[test]
fn golden_documents_round_trip_byte_for_byte() {
    let dir = format!("{CORPUS}/cases");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        eprintln!("conformance corpus not found at {dir}: skipping");
        return;
    };
    let mut paths: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "injected"))
        .collect();
    paths.sort();
    let (mut checked, mut failures) = (0, Vec::new());
    for path in &paths {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        let docs = match split_documents(&text) {
            Ok(d) => d,
            Err(e) => panic!("{}: {e}", path.display()),
        };
        for doc in docs {
            let v = match from_str(&doc) {
                Ok(v) => v,
                Err(e) => panic!("{}: {e}", path.display()),
            };
            let kind = v.get("kind").and_then(Value::as_str).unwrap_or("");
            if !SUPPORTED.contains(&kind) {
                continue;
            }
            checked += 1;
            if to_string(&v) != doc {
                failures.push(path.display().to_string());
            }
        }
    }
    eprintln!(
        "golden documents: {} of {checked} identical",
        checked - failures.len()
    );
    assert!(checked > 0, "no supported documents found in {dir}");
    assert!(failures.is_empty(), "not byte-identical: {failures:?}");
}

#[test]
fn merge_key_string_is_plain_as_in_go() {
    // go-yaml writes the string `<<` plain (JSONToYAML gives `<<: a`), and its reader then
    // takes that key for a merge: Go's own output does not read back. outrigger follows Go.
    let v = serde_json::json!({"<<": "a", "b": "<<"});
    let text = to_string(&v);
    assert_eq!(text, "<<: a\nb: <<\n");
    assert!(from_str(&text).is_err());
}

#[test]
fn next_line_characters_fold_as_after_go_json() {
    // Go's JSON leaves U+0085 raw and go-yaml folds it when re-reading the JSON text.
    let cases: &[(&str, &str)] = &[
        ("\u{85}", "' '\n"),
        ("a\u{85}b", "a b\n"),
        ("a \u{85}  b", "a b\n"),
        ("a\u{85}\u{85}b", "|-\n  a\n  b\n"),
        ("a\u{85} \u{85}b", "|-\n  a\n  b\n"),
        ("\u{85}a", "' a'\n"),
        ("a\u{85}", "'a '\n"),
        ("x\u{85}\u{85}", "|\n  x\n"),
        ("a\tb\u{85}c", "\"a\\tb c\"\n"),
        (" \u{85} ", "' '\n"),
    ];
    for &(s, want) in cases {
        assert_eq!(emit_value(json!(s)), want, "string {s:?}");
    }
    assert_eq!(to_string(&json!({"a\u{85}b": 1})), "a b: 1\n");
}
