//! Arbitrary bytes into the YAML reader and writer: `split_documents`, `from_str` and
//! `to_string` must never panic; every document is a run of the input's lines as apimachinery's `YAMLReader`
//! writes them (`\n`-terminated);
//! a tree `from_str` accepts survives `to_string` → `from_str` unchanged, except a tree with a
//! `<<` key: go-yaml writes that string key plain and then reads it as a merge key, and the
//! writer follows go-yaml (sigs.k8s.io/yaml `JSONToYAML` gives `<<: a`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use outrigger_go::yaml;
use serde_json::Value;

/// Equality with numbers compared by value (`1` and `1.0` are the same YAML number).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// Does the tree hold a mapping key `<<`?
fn has_merge_key(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.iter().any(|(k, x)| k == "<<" || has_merge_key(x)),
        Value::Array(a) => a.iter().any(has_merge_key),
        _ => false,
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Some(v) = yaml::from_str(text).ok().filter(|v| !has_merge_key(v)) {
        let emitted = yaml::to_string(&v);
        match yaml::from_str(&emitted) {
            Ok(back) => assert!(
                same(&v, &back),
                "round trip changed {v}\nemitted:\n{emitted}"
            ),
            Err(e) => panic!("emitted YAML does not parse: {e}\ntree: {v}\nemitted:\n{emitted}"),
        }
    }
    if let Ok(docs) = yaml::split_documents(text) {
        let lines = yaml::reader_lines(text);
        for d in docs {
            assert!(
                lines.contains(d.as_ref()),
                "split_documents returned text not in the input's lines"
            );
            let _ = yaml::from_str(&d);
        }
    }
});
