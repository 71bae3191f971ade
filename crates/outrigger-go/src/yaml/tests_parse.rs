//! Unit tests of [`super::from_str`].

use serde_json::{json, Value};

use super::tests_fast::check;

/// [`super::from_str`], with the fast path checked against the full loader on `text`.
fn from_str(text: &str) -> Result<Value, super::YamlError> {
    check(text);
    super::from_str(text)
}

fn ok(text: &str) -> Value {
    match from_str(text) {
        Ok(v) => v,
        Err(e) => panic!("parse failed for {text:?}: {e}"),
    }
}

fn err(text: &str) -> String {
    match from_str(text) {
        Ok(v) => panic!("expected an error for {text:?}, got {v}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn empty_inputs_are_null() {
    for t in [
        "",
        "   \n\n",
        "# only a comment\n",
        "---\n",
        "--- # c\n...\n",
    ] {
        assert_eq!(ok(t), Value::Null, "{t:?}");
    }
}

#[test]
fn yaml11_scalars() {
    let v = ok(
        "a: yes\nb: 010\nc: 08\nd: 1e3\ne: 0x1F\nf: 2024-01-01\ng: 1_000\nh: 0b101\n\
                i: -0b11\nj: .5\nk: 1.0\nl: 0o17\nm: ~\nnn: On\no: n\np: NULL\nq:\nr: +12\n",
    );
    let want = json!({"a":true,"b":8,"c":8.0,"d":1000.0,"e":31,"f":"2024-01-01","g":1000,"h":5,
        "i":-3,"j":0.5,"k":1.0,"l":15,"m":null,"nn":true,"o":false,"p":null,"q":null,"r":12});
    assert_eq!(v, want);
    // Integral floats stay floats, ints stay ints.
    assert!(v["k"].is_f64());
    assert!(v["d"].is_f64());
    assert!(v["b"].is_i64());
    assert!(ok("x: 18446744073709551615")["x"].is_u64());
}

#[test]
fn quoted_and_block_scalars_are_strings() {
    let v = ok("a: \"yes\"\nb: '010'\nc: |\n  on\nd: >-\n  folded\n  text\ne: \"\"\nf: ''\n");
    assert_eq!(
        v,
        json!({"a":"yes","b":"010","c":"on\n","d":"folded text","e":"","f":""})
    );
}

#[test]
fn explicit_tags() {
    let v = ok(
        "a: !!str 10\nb: !!int \"12\"\nc: !!float 3\nd: !!bool yes\ne: !!null ''\n\
                f: !custom 5\ng: !!binary aGVsbG8=\nh: !!str true\n",
    );
    assert_eq!(
        v,
        json!({"a":"10","b":12,"c":3.0,"d":true,"e":null,"f":"5","g":"hello","h":"true"})
    );
    assert!(v["c"].is_f64());
    // go-yaml's decoder errors carry no line.
    assert_eq!(
        err("a: !!int foo\n"),
        "yaml: cannot decode !!str `foo` as a !!int"
    );
}

#[test]
fn non_string_keys_are_stringified() {
    let v = ok("1: a\ntrue: b\n1.5: c\n0x10: d\nno: e\n");
    assert_eq!(
        v,
        json!({"1":"a","true":"b","1.5":"c","16":"d","false":"e"})
    );
    let keys: Vec<&String> = v
        .as_object()
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    assert_eq!(keys, ["1", "true", "1.5", "16", "false"]);
    assert!(err("~: a\n").starts_with("unsupported map key of type: %!s(<nil>)"));
    assert!(err("[a]: b\n").starts_with("yaml: invalid map key: "));
}

#[test]
fn key_order_is_document_order() {
    let v = ok("z: 1\na: 2\nm: 3\n");
    let keys: Vec<&String> = v
        .as_object()
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    assert_eq!(keys, ["z", "a", "m"]);
}

#[test]
fn repeated_keys_keep_the_last_value() {
    // Non-strict `yaml.Unmarshal`, as YAMLToJSON: the key keeps its first position here.
    let v = ok("a: 1\nb: 2\na: 3\n");
    assert_eq!(v, json!({"a":3,"b":2}));
    let keys: Vec<&String> = v
        .as_object()
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    assert_eq!(keys, ["a", "b"]);
    assert_eq!(ok("x:\n  k: 1\n  k: 2\n"), json!({"x":{"k":2}}));
    // The same Go key written two ways.
    assert_eq!(ok("0x1: a\n1: b\n"), json!({"1":"b"}));
}

#[test]
fn anchors_aliases_and_merge() {
    let v = ok(
        "base: &b\n  x: 1\n  w: 2\nref: *b\nmerged:\n  <<: *b\n  w: 3\nlist: &l [1, 2]\nl2: *l\n",
    );
    assert_eq!(v["ref"], json!({"x":1,"w":2}));
    assert_eq!(v["merged"], json!({"x":1,"w":3}));
    assert_eq!(v["l2"], json!([1, 2]));
    // Sequence of maps: earlier maps take precedence.
    let v = ok("a: &a {k: 1, a: 1}\nb: &b {k: 2, b: 2}\nc:\n  <<: [*a, *b]\n");
    assert_eq!(v["c"], json!({"k":1,"b":2,"a":1}));
    let keys: Vec<&String> = v["c"]
        .as_object()
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    assert_eq!(keys, ["k", "b", "a"]);
    assert_eq!(v["c"]["k"], json!(1));
    // Merge overwrites earlier explicit keys (go-yaml v2 processes keys in order).
    assert_eq!(
        ok("a: &a {k: 1}\nb:\n  k: 0\n  <<: *a\n")["b"],
        json!({"k":1})
    );
    assert_eq!(
        err("a: 1\nb:\n  <<: 5\n"),
        "yaml: map merge requires map or sequence of maps as the value"
    );
    assert_eq!(err("a: *nope\n"), "yaml: unknown anchor 'nope' referenced");
    assert_eq!(
        err("a: &a [1, *a]\n"),
        "yaml: anchor 'a' value contains itself"
    );
}

#[test]
fn alias_bomb_is_rejected() {
    let mut doc = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..10 {
        let p = i - 1;
        doc.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
        ));
    }
    assert!(err(&doc).contains("excessive aliasing"));
}

#[test]
fn flow_collections() {
    let v = ok("a: {b: 1, c: [x, 'y', \"z\",], d: {}}\ne: []\n");
    assert_eq!(v, json!({"a":{"b":1,"c":["x","y","z"],"d":{}},"e":[]}));
}

#[test]
fn top_level_shapes() {
    assert_eq!(ok("- a\n- 1\n"), json!(["a", 1]));
    assert_eq!(ok("hello\n"), json!("hello"));
    assert_eq!(ok("'010'"), json!("010"));
    assert_eq!(ok("---\na: 1\n...\n"), json!({"a":1}));
    assert_eq!(ok("a: 1\n---\n"), json!({"a":1}));
}

#[test]
fn only_the_first_document_is_read() {
    assert_eq!(ok("a: 1\n---\nb: 2\n"), json!({"a":1}));
    assert_eq!(ok("a: 1\n...\nb: [\n"), json!({"a":1}));
    assert_eq!(ok("[]: b\n"), json!([]));
}

#[test]
fn ignored_text_is_reported() {
    let ignored = |t: &str| match super::read_document(t) {
        Ok(d) => d.ignored,
        Err(e) => panic!("{t:?}: {e}"),
    };
    for t in [
        "a: 1\n",
        "a: 1\n---\n",
        "a: 1\n...\n# c\n",
        "a: 1\n---\n---\n...\n",
        "a: 1\n...\n%YAML 1.1\n---\n",
    ] {
        assert_eq!(ignored(t), None, "{t:?}");
    }
    let i = ignored("a: 1\n---\nb: 2\n").expect("second document");
    assert_eq!((i.line, i.error.is_none()), (3, true));
    let i = ignored("a: 1\n...\nb: [\n").expect("text after ...");
    assert!(i.error.is_some(), "{i:?}");
    assert!(ignored("[]: b\n").is_some());
    assert!(ignored("a: 1\n--- !t\n").is_some());
    assert!(i.to_string().contains("ignored by Kubernetes' YAML reader"));
}

#[test]
fn non_finite_floats_are_errors() {
    assert!(err("a: .inf\n").contains("unsupported value: +Inf"));
    assert!(err("a: -.Inf\n").contains("unsupported value: -Inf"));
    assert!(err("a: .nan\n").contains("unsupported value: NaN"));
}

#[test]
fn syntax_errors_are_go_yamls() {
    assert_eq!(
        err("a: 1\nb: [1, 2\n"),
        "yaml: line 2: did not find expected ',' or ']'"
    );
    // go-yaml numbers parser errors from 0 (the error is on line 3).
    assert_eq!(
        err("a:\n  b: 1\n c: 2\n"),
        "yaml: line 2: did not find expected key"
    );
    assert_eq!(err("a: \"\\/\"\n"), "yaml: found unknown escape character");
    assert_eq!(
        err("a: \u{1}\n"),
        "yaml: control characters are not allowed"
    );
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let doc = "[".repeat(5000) + &"]".repeat(5000);
    let e = err(&doc);
    assert!(e.contains("depth") || e.contains("recursion limit"), "{e}");
    let doc = "- ".repeat(3000) + "x\n";
    let e = err(&doc);
    assert!(e.contains("depth") || e.contains("recursion limit"), "{e}");
}

#[test]
fn kubernetes_manifest() {
    let v = ok(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p # comment\n  annotations:\n    \
                a: \"true\"\nspec:\n  containers:\n  - name: c\n    image: i:1\n    ports:\n    \
                - containerPort: 80\n    env:\n    - name: X\n      value: yes\n",
    );
    assert_eq!(
        v,
        json!({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","annotations":{"a":"true"}},
            "spec":{"containers":[{"name":"c","image":"i:1","ports":[{"containerPort":80}],
            "env":[{"name":"X","value":true}]}]}})
    );
}

#[test]
fn block_scalar_at_end_of_text_without_newline() {
    // libyaml keeps no line break that the text does not have.
    assert_eq!(ok("a: |\n  x"), json!({"a":"x"}));
    assert_eq!(ok("a: |+\n  x"), json!({"a":"x"}));
    assert_eq!(ok("a: >\n  x\n  y"), json!({"a":"x y"}));
    assert_eq!(ok("a: |\n  x\n  "), json!({"a":"x\n"}));
    assert_eq!(ok("a: |\n  x\n "), json!({"a":"x\n"}));
    assert_eq!(ok("a: |\n  x\n# c"), json!({"a":"x\n"}));
    assert_eq!(ok("a: |\n  x\nb: |\n  y"), json!({"a":"x\n","b":"y"}));
    assert_eq!(ok("a: |\r\n  x\r\n  y"), json!({"a":"x\ny"}));
    assert_eq!(ok("a: |\n  x\n"), json!({"a":"x\n"}));
}

#[test]
fn merges_and_repeated_keys_apply_in_document_order() {
    let v = ok("b: &b {p: 1, q: 2}\nm:\n  <<: *b\n  q: 3\n");
    assert_eq!(v["m"], json!({"p":1,"q":3}));
    assert_eq!(
        ok("b: &b {p: 1}\nm:\n  <<: *b\n  p: 2\n  p: 3\n")["m"],
        json!({"p":3})
    );
    assert_eq!(
        ok("b: &b {p: 1}\nm:\n  p: 2\n  <<: *b\n")["m"],
        json!({"p":1})
    );
    // A merge key written with the explicit tag.
    assert_eq!(
        ok("b: &b {p: 1}\nm:\n  !!merge <<: *b\n")["m"],
        json!({"p":1})
    );
    // A quoted `<<` is an ordinary key.
    assert_eq!(ok("m:\n  '<<': 1\n")["m"], json!({"<<":1}));
}

#[test]
fn keys_from_other_scalars() {
    // go-yaml formats float keys with float32 precision.
    assert_eq!(ok("0.1: a\n1e3: b\n")["0.1"], json!("a"));
    assert_eq!(ok("0.1: a\n1e3: b\n")["1000"], json!("b"));
    assert!(err("18446744073709551615: a\n")
        .starts_with("unsupported map key of type: uint64, key: 0xffffffffffffffff"));
    // Infinities and NaN as keys are named, not refused.
    assert_eq!(ok(".inf: a\n"), json!({".inf":"a"}));
    // An alias as a key.
    assert_eq!(ok("a: &k x\n*k : z\n"), json!({"a":"x","x":"z"}));
}

#[test]
fn leading_byte_order_mark_is_ignored() {
    assert_eq!(ok("\u{FEFF}a: 1\n"), json!({"a":1}));
    assert_eq!(ok("\u{FEFF}"), Value::Null);
}

#[test]
fn tab_after_colon_is_a_separator() {
    assert_eq!(
        ok("a:\t1\nb:\t\tx\nc: \"q:\tw\"\n"),
        json!({"a":1,"b":"x","c":"q:\tw"})
    );
    assert_eq!(ok("a: x\ty\n"), json!({"a":"x\ty"}));
    assert!(err("a:\n\t- x\n").starts_with("yaml: line 2:"));
}
