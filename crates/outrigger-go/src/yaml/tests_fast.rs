//! Unit tests of the fast path ([`super::fast`]) against the full loader.

use serde_json::Value;

use super::{fast, parse};

/// Order- and number-kind-sensitive equality (serde_json's map equality ignores key order).
pub(super) fn same(a: &Value, b: &Value) -> bool {
    serde_json::to_string(a).ok() == serde_json::to_string(b).ok()
}

/// Assert that the fast path, when it answers, agrees with the full loader; return whether it
/// answered.
pub(super) fn check(text: &str) -> bool {
    let Some(fast) = fast::from_str(text) else {
        return false;
    };
    match parse::from_str(text) {
        Ok(slow) => assert!(
            same(&fast, &slow),
            "fast path differs on {text:?}:\\n fast {fast}\\n slow {slow}"
        ),
        Err(e) => panic!("fast path accepted {text:?} as {fast}, full loader: {e}"),
    }
    true
}

/// Snippets the fast path must read (and read as the full loader does).
const TAKEN: &[&str] = &[
    "",
    "\n\n   \n",
    "# only a comment\n",
    "---\n",
    "--- # c\na: 1\n",
    "\u{FEFF}a: 1\n",
    "a: 1",
    "a: value # c\n",
    "a: a#b\n",
    "a: x #c\nb: y#z\n",
    "- key:value\n",
    "url: http://x:80\n",
    "a: b:c\n",
    "a:b: c\n",
    "a: trailing   \n",
    "a: 'q'   # c\n",
    "- \n- x\n",
    "-\n-\n",
    "- # c\n- 1\n",
    "\"a b\": 1\n'c d': 2\n",
    "a:\nb: 1\n",
    "a:   \nb:\n",
    "a: # c\n  b: 1\n",
    "a:\n  b:\n    c: d\n  e: f\n",
    "key:\n- a\n- b\nother: 1\n",
    "key:\n  - a\n  - b\n",
    "- a:\n  - x\n  b: 1\n",
    "- a:\n- x\n",
    "- - x\n  - y\n- - z\n",
    "-   a: 1\n    b: 2\n",
    "- a: 1\n  b:\n    c: 2\n",
    "-\n  a: 1\n",
    "-\n a: 1\n b: 2\n",
    "a:\n - x\n",
    "- a:\n   b: 1\n",
    "- [\n  x]\n",
    "a: |\n  x\n  y\n",
    "a: |-\n  x\n  y\n",
    "a: |+\n  x\n\n\nb: 1\n",
    "a: |\n  x\n\n\n",
    "a: |+\n  x\n\n",
    "a: |\n\n  x\n",
    "a: |\n  x\n\n  y\n",
    "a: |\n    x\n   \n    y\n",
    "a: |\n  x\n    more\n  # not a comment\n",
    "a: | # c\n  x\n",
    "a: |\n  x",
    "a: |-\n  x",
    "a: |+\n  x",
    "a: |\n  x\nb: |\n  y",
    "a: |\n  x\n# c",
    "- |\n  x\n- |-\n  y\n",
    "- a: |\n    x\n  b: 1\n",
    "a: |\n             {}\n",
    "a: {}\nb: []\n",
    "a: {} # c\n",
    "a: [x, 'y', \"z\",]\n",
    "a: {b: 1, c: [1, 2], d: {e: f}}\n",
    "a:\n  [1, 2]\n",
    "- [a, b]\n- {c: d}\n",
    "annotations: {\n    istio.io/rev: \"default\",\n    k: \"v\",\n  }\n",
    "a: [\n  x, # c\n  y\n]\n",
    "m:\n  a: {\n    b: c,\n  }\n",
    "m:\n  a: [\n    x\n  ]\n",
    "m:\n  a: {b: [\n  ]}\n",
    "- {\n  }\n",
    "- [\n a]\n",
    "a:\n- [\n  ]\n",
    "[a, b]\n",
    "{a: 1}\n",
    "a: \"esc \\\\ \\\" \\n \\t \\x41 \\u00e9 \\U0001F600\"\n",
    // Multi-line flow collections: go-yaml checks no indentation inside them.
    "m:\n  a: {\n  }\n",
    "m:\n  a: [\n  ]\n",
    "m:\n  a: [\n    \"x\"\n  ]\n",
    "m:\n  a: {\n    b: c\n }\n",
    "m:\n  a: [[\n  ]]\n",
    "m:\n  a: {b: [\n  c]}\n",
    "- [\n]\n",
    "a: {\n}\n",
    "[FA- -,-A-$- -%%E%%E]",
    "a: [x -]\n",
    "a: {k: x -}\n",
    "a: 'it''s'\n",
    "a: \"\"\nb: ''\n",
    "a: yes\nb: 010\nc: 08\nd: 1e3\ne: 0x1F\nf: 2024-01-01\ng: 1_000\nh: ~\ni: -1\nj: .5\n",
    "a: 18446744073709551615\n",
    "a: 1.0\nb: 2\n",
    "1: a\ntrue: b\n1.5: c\n0x10: d\nno: e\n",
    "a: -x\nb: :x\nc: ?x\n",
    "a: x,y\nb: x]y\nc: x{y}\n",
    "a: caf\u{e9}\n\u{e9}: 1\n",
    "a:    spaced    words   \n",
    "  a: 1\n  b: 2\n",
    "a:\n    - x\n    - y\n",
    "a: 1\n\n\n# trailing comment\n",
    "a: 1\n   # indented comment\nb: 2\n",
];

/// Snippets the fast path must leave to the full loader.
const BAIL: &[&str] = &[
    "hello\n",
    "key:value\n",
    "a: 1\n---\nb: 2\n",
    "a: 1\n---\n",
    "a: 1\n...\n",
    "%YAML 1.1\n---\na: 1\n",
    "--- a: 1\n",
    "a: &x 1\nb: *x\n",
    "a: !!str 1\n",
    "? a\n: b\n",
    "<<: {a: 1}\n",
    "a: b\n  c\n",
    "a: 'b\n  c'\n",
    "a: \"b\n  c\"\n",
    "a: \"b\\\n  c\"\n",
    "a: b\n  # c\n  d\n",
    "a:\tb\n",
    "a:\n\t- x\n",
    "a: x\ty\n",
    "a: 1\r\nb: 2\r\n",
    "a: 1\nb: 2\na: 3\n",
    "1: a\n\"1\": b\n",
    "~: a\n",
    "a: .inf\n",
    "a: .nan\n",
    "18446744073709551615: a\n",
    "a: >\n  folded\n",
    "a: |2\n   x\n",
    "a: |\n",
    "a: |\nb: 1\n",
    "a: |\n    \n  x\n",
    "a: |\n  x\n     \n  y\n",
    "a: |\n  x\n  ",
    "a: b: c\n",
    "a: b:\n",
    "a : b\n",
    "a: - b\n",
    "a: [a: b]\n",
    "a: {b}\n",
    "a: {b: }\n",
    "a: [,]\n",
    "a: [a,,b]\n",
    "a: [x\n  y]\n",
    "a:\n  b\n",
    "a:\n    b: 1\n  c: 2\n",
    "- a\nb: 1\n",
    "a: 1\n- b\n",
    "a: @x\n",
    "a: `x\n",
    "a: \"\\q\"\n",
    "a: \"\\/\"\n",
    "a: [1 ?]\n",
    "\"a\" : b\n",
    "a: 'x'y\n",
    "a: \u{85}\n",
    "a: x\u{2028}y\n",
    "a: x\u{FEFF}\n",
    "a: \x01\n",
    "a: x\0\n",
];

#[test]
fn tricky_snippets_taken_and_equal() {
    for t in TAKEN {
        assert!(check(t), "fast path gave up on {t:?}");
    }
}

#[test]
fn tricky_snippets_left_to_the_full_loader() {
    for t in BAIL {
        assert!(fast::from_str(t).is_none(), "fast path took {t:?}");
    }
}

#[test]
fn deep_nesting_gives_up() {
    let doc = "- ".repeat(3000) + "x\n";
    assert!(fast::from_str(&doc).is_none());
    let doc = "[".repeat(300) + &"]".repeat(300);
    assert!(fast::from_str(&doc).is_none());
    let mut doc = String::new();
    for i in 0..90 {
        doc.push_str(&" ".repeat(i));
        doc.push_str("k:\n");
    }
    assert!(check(&doc));
}

#[test]
fn long_keys_give_up() {
    let k = "k".repeat(2000);
    assert!(fast::from_str(&format!("{k}: 1\n")).is_none());
    assert!(fast::from_str(&format!("\"{k}\": 1\n")).is_none());
    assert!(check(&format!("{}: 1\n", "k".repeat(900))));
}
