//! JSON Patch (RFC 6902) from the original pod to the injected pod.
//!
//! Istio's reference diff iterates Go maps, so its operation order is random; only the effect is
//! specified. We diff as the `json-patch` crate's diff does (objects key by key, arrays index by
//! index, which is linear in the pod size; same operations in the same order) but build the JSON
//! operations directly, writing a pointer only for an operation.
//!
//! [`create_json_reusing`] is the webhook's writer: it keeps the values of the last patch it
//! wrote on the thread (moved out of the injected pod, which is dropped anyway) with their text,
//! and copies the text of an operation's value when the value is [`gojson::identical`] to the
//! one written under the same path before (consecutive pods of a cluster get the same sidecar:
//! the same containers, volumes and annotations), instead of encoding it again.

use std::cell::RefCell;
use std::ops::Range;

use serde_json::{Map, Value};

use crate::go::json as gojson;

/// One RFC 6902 operation, borrowing its value from the modified document.
#[derive(Debug, Clone, PartialEq)]
pub struct Op<'a> {
    /// `add`, `remove` or `replace`.
    pub op: &'static str,
    /// RFC 6901 pointer (escaped).
    pub path: String,
    /// The new value (`None` for `remove`).
    pub value: Option<&'a Value>,
}

/// The RFC 6902 operations turning `original` into `modified`, borrowing from `modified`.
pub fn ops<'a>(original: &Value, modified: &'a Value) -> Vec<Op<'a>> {
    let mut diff = Diff {
        at: Vec::new(),
        ops: Vec::new(),
    };
    diff.value(original, modified);
    diff.ops
}

/// The RFC 6902 operations turning `original` into `modified`, as a JSON array.
pub fn create(original: &Value, modified: &Value) -> Value {
    Value::Array(
        ops(original, modified)
            .into_iter()
            .map(|o| {
                let mut m = Map::new();
                m.insert("op".into(), Value::from(o.op));
                m.insert("path".into(), Value::String(o.path));
                if let Some(v) = o.value {
                    m.insert("value".into(), v.clone());
                }
                Value::Object(m)
            })
            .collect(),
    )
}

/// The operations of [`create`] encoded as Go's `json.Marshal` would (the webhook's patch),
/// written straight from the documents without building the operation values.
pub fn create_json(original: &Value, modified: &Value) -> String {
    write_ops(&ops(original, modified), |_, _, v, out| {
        gojson::write_value(out, v)
    })
}

/// `ops` as Go's `json.Marshal` writes them, each operation's value written by `value` (given
/// the operation's index and the operation).
fn write_ops(ops: &[Op<'_>], mut value: impl FnMut(usize, &Op<'_>, &Value, &mut String)) -> String {
    // An injection's patch is a few KiB (the sidecar's containers and volumes): room for it
    // from the start instead of five doublings from a few hundred bytes.
    let mut out = String::with_capacity(if ops.is_empty() { 2 } else { 4096 });
    out.push('[');
    for (i, o) in ops.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"op\":");
        gojson::write_str(&mut out, o.op);
        out.push_str(",\"path\":");
        gojson::write_str(&mut out, &o.path);
        if let Some(v) = o.value {
            out.push_str(",\"value\":");
            value(i, o, v, &mut out);
        }
        out.push('}');
    }
    out.push(']');
    out
}

/// What [`create_json_reusing`] keeps of the last patch it wrote on a thread: the value of each
/// operation whose value is an object or an array, with its path and where its text is.
struct Written {
    /// `(path, value, range of its text in `text`)`, in the order of the operations.
    values: Vec<(String, Value, Range<usize>)>,
    /// The patch's text.
    text: String,
    /// What it weighs, taken from [`outrigger_go::cache_memory::CACHES`] (held while kept).
    _charge: outrigger_go::cache_memory::Charge,
}

/// A patch larger than this is not kept ([`Written`]): the memory per thread stays bounded.
const KEEP_TEXT_UP_TO: usize = 64 * 1024;

/// At most this many values are kept, and looked for among when a path is not where it was.
const KEEP_VALUES_UP_TO: usize = 64;

thread_local! {
    /// The last patch [`create_json_reusing`] wrote on this thread.
    static LAST_WRITTEN: RefCell<Option<Written>> = const { RefCell::new(None) };
}

/// [`create_json`], taking the modified document (consumed: its operation values are kept for
/// the next call on this thread) and copying the text of a value identical to the one written
/// under the same path by the previous call on this thread. Byte for byte [`create_json`]'s
/// text: a copied text is that of an [`gojson::identical`] value, which encodes the same.
pub fn create_json_reusing(original: &Value, mut modified: Value) -> String {
    let last = LAST_WRITTEN.with(|l| l.borrow_mut().take());
    let ops = ops(original, &modified);
    // `(op index, range of its value's text)` of the values to keep.
    let mut kept: Vec<(usize, Range<usize>)> = Vec::new();
    let out = write_ops(&ops, |i, o, v, out| {
        if !matches!(v, Value::Object(_) | Value::Array(_)) {
            return gojson::write_value(out, v);
        }
        let start = out.len();
        match last.as_ref().and_then(|w| w.text_of(i, &o.path, v)) {
            Some(text) => out.push_str(text),
            None => gojson::write_value(out, v),
        }
        if kept.len() < KEEP_VALUES_UP_TO {
            kept.push((i, start..out.len()));
        }
    });
    // The last patch's charge is given back before this one's is taken.
    drop(last);
    // The values kept weigh about what their text does, in a few `Value`s per scalar.
    let charge = (out.len() <= KEEP_TEXT_UP_TO && !kept.is_empty())
        .then(|| outrigger_go::cache_memory::CACHES.charge(out.len().saturating_mul(8)))
        .flatten();
    if let Some(charge) = charge {
        let paths: Vec<String> = kept.iter().map(|(i, _)| ops[*i].path.clone()).collect();
        drop(ops);
        let values = paths
            .into_iter()
            .zip(kept)
            .filter_map(|(path, (_, range))| {
                let v = std::mem::take(pointer_mut(&mut modified, &path)?);
                Some((path, v, range))
            })
            .collect();
        let written = Written {
            values,
            text: out.clone(),
            _charge: charge,
        };
        LAST_WRITTEN.with(|l| *l.borrow_mut() = Some(written));
    }
    out
}

impl Written {
    /// The text written for a value identical to `v` under `path` (the `i`th operation's), if
    /// there is one.
    fn text_of(&self, i: usize, path: &str, v: &Value) -> Option<&str> {
        let same_path = |(p, _, _): &&(String, Value, Range<usize>)| p == path;
        let (_, old, range) = self
            .values
            .get(i)
            .filter(same_path)
            .or_else(|| self.values.iter().find(same_path))?;
        gojson::identical(old, v).then(|| &self.text[range.clone()])
    }
}

/// The value at RFC 6901 `pointer` in `doc`, for the pointers [`ops`] writes.
fn pointer_mut<'v>(doc: &'v mut Value, pointer: &str) -> Option<&'v mut Value> {
    let mut at = doc;
    for step in pointer.split('/').skip(1) {
        let key: std::borrow::Cow<'_, str> = if step.contains('~') {
            step.replace("~1", "/").replace("~0", "~").into()
        } else {
            step.into()
        };
        at = match at {
            Value::Object(m) => crate::json::lookup::get_mut(m, &key)?,
            Value::Array(a) => a.get_mut(key.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(at)
}

/// One step of the path to the node being compared: an object key or an array index.
#[derive(Clone, Copy)]
enum Step<'k> {
    Key(&'k str),
    Index(usize),
}

/// Diff state: the path to the node being compared, and the operations so far. The path is
/// kept as steps and written out as an RFC 6901 pointer only for an operation, so walking the
/// parts the injection left alone (most of a large pod) costs no text.
struct Diff<'a, 'k> {
    /// Steps from the root to the current node.
    at: Vec<Step<'k>>,
    /// Operations, in `json_patch::diff` order.
    ops: Vec<Op<'a>>,
}

impl<'a: 'k, 'k> Diff<'a, 'k> {
    fn value(&mut self, left: &'k Value, right: &'a Value) {
        match (left, right) {
            (Value::Object(l), Value::Object(r)) => self.object(l, r),
            (Value::Array(l), Value::Array(r)) => self.array(l, r),
            _ if left == right => {}
            _ => self.push("replace", Some(right)),
        }
    }

    fn array(&mut self, left: &'k [Value], right: &'a [Value]) {
        let mut shift = 0usize;
        for idx in 0..left.len().max(right.len()) {
            let (l, r) = (left.get(idx), right.get(idx));
            if let (Some(l), Some(r)) = (l, r) {
                if same_scalar(l, r) {
                    continue;
                }
            }
            self.at.push(Step::Index(idx - shift));
            match (l, r) {
                (Some(l), Some(r)) => self.value(l, r),
                (Some(_), None) => {
                    shift += 1;
                    self.push("remove", None);
                }
                (None, Some(r)) => self.push("add", Some(r)),
                (None, None) => {}
            }
            self.at.pop();
        }
    }

    fn object(&mut self, left: &'k Map<String, Value>, right: &'a Map<String, Value>) {
        // Keys usually come in the same order on both sides: pair them up without hashing while
        // they do, look them up otherwise.
        let mut in_step = left.iter();
        let mut aligned = left.len() == right.len();
        for (key, r) in right {
            let l = match in_step.next() {
                Some((k, l)) if aligned && k == key => Some(l),
                _ => {
                    aligned = false;
                    crate::json::lookup::get(left, key)
                }
            };
            if l.is_some_and(|l| same_scalar(l, r)) {
                continue;
            }
            self.at.push(Step::Key(key));
            match l {
                Some(l) => self.value(l, r),
                None => self.push("add", Some(r)),
            }
            self.at.pop();
        }
        if aligned {
            // Same length, every key of `right` paired with the same key of `left`: no removals.
            return;
        }
        for key in left
            .keys()
            .filter(|k| !crate::json::lookup::contains(right, k))
        {
            self.at.push(Step::Key(key));
            self.push("remove", None);
            self.at.pop();
        }
    }

    /// The RFC 6901 pointer (escaped) of the current node.
    fn pointer(&self) -> String {
        let mut out = String::new();
        for step in &self.at {
            out.push('/');
            match *step {
                Step::Index(i) => out.push_str(itoa::Buffer::new().format(i)),
                Step::Key(key) if !key.bytes().any(|b| b == b'~' || b == b'/') => out.push_str(key),
                Step::Key(key) => {
                    for c in key.chars() {
                        match c {
                            '~' => out.push_str("~0"),
                            '/' => out.push_str("~1"),
                            c => out.push(c),
                        }
                    }
                }
            }
        }
        out
    }

    fn push(&mut self, op: &'static str, value: Option<&'a Value>) {
        let path = self.pointer();
        self.ops.push(Op { op, path, value });
    }
}

/// Whether `l` and `r` are equal scalars (no operation, decided without entering them).
#[inline]
fn same_scalar(l: &Value, r: &Value) -> bool {
    match (l, r) {
        (Value::String(a), Value::String(b)) => a == b,
        (Value::Object(_) | Value::Array(_), _) | (_, Value::Object(_) | Value::Array(_)) => false,
        _ => l == r,
    }
}

/// Apply RFC 6902 `ops` to `doc`, failing with the offending operation's message.
pub fn apply(doc: &mut Value, ops: &Value) -> Result<(), crate::json::JsonError> {
    let patch: json_patch::Patch =
        serde_json::from_value(ops.clone()).map_err(crate::json::JsonError::PatchFormat)?;
    json_patch::patch(doc, &patch).map_err(crate::json::JsonError::PatchApply)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn patch_applies_back_to_target() {
        let a = json!({"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "app"}]}});
        let b = json!({"metadata": {"labels": {"app": "x", "security.istio.io/tlsMode": "istio"}},
                       "spec": {"initContainers": [{"name": "istio-proxy"}], "containers": [{"name": "app", "env": []}]}});
        let ops = create(&a, &b);
        assert!(ops.as_array().is_some_and(|o| !o.is_empty()));
        assert!(ops.to_string().contains("security.istio.io~1tlsMode"));
        let mut c = a.clone();
        apply(&mut c, &ops).unwrap();
        assert_eq!(c, b);
        assert_eq!(create(&a, &a), json!([]));
    }

    /// The reference: `json_patch::diff` serialised, which `create` must reproduce exactly.
    fn reference(a: &Value, b: &Value) -> Value {
        serde_json::to_value(json_patch::diff(a, b)).expect("serialise reference patch")
    }

    #[test]
    fn same_operations_as_json_patch_diff() {
        let cases = [
            (json!({}), json!({})),
            (json!(1), json!("x")),
            (json!(null), json!({"a": 1})),
            (
                json!({"a": [1, 2, 3], "b~/c": {"x": 1}}),
                json!({"a": [1], "d": null}),
            ),
            (
                json!({"a": [1], "k/1": 0}),
                json!({"a": [1, {"z": []}, 3], "k/1": 1}),
            ),
            (
                json!({"a": {"b": [{"n": 1}, {"n": 2}]}}),
                json!({"a": {"b": [{"n": 2}]}}),
            ),
            (
                json!([1, [2, 3], {"~": 1}]),
                json!([[2], [2, 3, 4], {"~": 2}, true]),
            ),
            (json!({"x": {}}), json!({"x": []})),
            (json!({"a": 1, "b": 2}), json!({"b": 2, "c": 3})),
            (json!({"a": 1, "b": 2}), json!({"b": 3, "a": 1})),
            (json!({"a": 1, "b": 2}), json!({"a": 1, "c": 2, "b": 2})),
            (json!({"a": 1, "b": 2, "c": 3}), json!({"a": 0, "c": 3})),
            (
                json!({"l": (0..25).collect::<Vec<_>>()}),
                json!({"l": (0..112).map(|i| i % 23).collect::<Vec<_>>()}),
            ),
            (
                json!({"l": (0..112).collect::<Vec<_>>()}),
                json!({"l": [0, {"x~y/z": 1}]}),
            ),
        ];
        for (a, b) in &cases {
            let ops = create(a, b);
            assert_eq!(ops, reference(a, b), "diff of {a} -> {b}");
            assert_eq!(create_json(a, b), gojson::to_string(&ops), "{a} -> {b}");
            let mut c = a.clone();
            apply(&mut c, &ops).unwrap();
            assert_eq!(&c, b, "applying the patch of {a} -> {b}");
        }
    }

    /// A small deterministic generator for the mutation tests.
    struct Lcg(u64);

    impl Lcg {
        fn below(&mut self, n: usize) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((self.0 >> 33) as usize) % n
        }
    }

    /// An injected-looking pod with objects, arrays, numbers and strings to mutate.
    fn injected_pod() -> Value {
        json!({"metadata": {"labels": {"app": "a", "security.istio.io/tlsMode": "istio"},
                            "annotations": {"sidecar.istio.io/status": "{\"a\":1}", "x": "<&>"}},
               "spec": {"initContainers": [{"name": "istio-proxy", "image": "proxy:1",
                           "args": ["proxy", "sidecar"], "resources": {"limits": {"cpu": "2"}},
                           "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "x/y~z"}],
                           "securityContext": {"runAsUser": 1337, "ratio": 0.0}}],
                        "containers": [{"name": "app", "image": "app:1"}],
                        "volumes": [{"name": "v1", "emptyDir": {}}, {"name": "v2",
                           "configMap": {"name": "c", "defaultMode": 420}}]}})
    }

    /// Change `pod` in one of the ways that must change (or keep) a value's text.
    fn mutate(pod: &mut Value, rng: &mut Lcg) {
        let proxy = &mut pod["spec"]["initContainers"][0];
        match rng.below(10) {
            0 => {}
            1 => proxy["env"][1]["value"] = json!(format!("v{}", rng.below(3))),
            2 => {
                // The same entries in another order: `==` but not identical.
                let m = proxy["resources"].as_object_mut().unwrap();
                m.insert("requests".into(), json!({"cpu": "1"}));
                let entries: Vec<(String, Value)> = std::mem::take(m).into_iter().rev().collect();
                m.extend(entries);
            }
            3 => proxy["securityContext"]["ratio"] = json!(-0.0),
            4 => proxy["securityContext"]["runAsUser"] = json!(1337.0),
            5 => proxy["env"]
                .as_array_mut()
                .unwrap()
                .push(json!({"name": "C", "value": "\u{2028}"})),
            6 => {
                pod["spec"]["volumes"].as_array_mut().unwrap().pop();
            }
            7 => pod["metadata"]["annotations"]["x"] = json!("<&>\""),
            8 => pod["spec"]["containers"][0]["image"] = json!("app:2"),
            _ => proxy["args"] = json!(["proxy", "router"]),
        }
    }

    /// The reusing writer's text is the plain writer's, over a stream of mutated pods on one
    /// thread (each pod written after others that share, or nearly share, its values).
    #[test]
    fn reusing_writer_matches_the_plain_one() {
        let original = json!({"metadata": {"labels": {"app": "a"}},
                              "spec": {"containers": [{"name": "app", "image": "app:1"}]}});
        let mut rng = Lcg(7);
        let mut copied = 0;
        for round in 0..400 {
            let mut pod = injected_pod();
            for _ in 0..rng.below(3) {
                mutate(&mut pod, &mut rng);
            }
            let want = create_json(&original, &pod);
            let before = LAST_WRITTEN.with(|l| {
                l.borrow().as_ref().map(|w| {
                    w.values
                        .iter()
                        .filter(|(_, v, _)| {
                            ops(&original, &pod)
                                .iter()
                                .any(|o| o.value.is_some_and(|x| gojson::identical(x, v)))
                        })
                        .count()
                })
            });
            copied += before.unwrap_or(0);
            assert_eq!(create_json_reusing(&original, pod), want, "round {round}");
        }
        assert!(copied > 100, "only {copied} values could be copied");
    }

    /// Documents of a corpus YAML file (unparseable documents are left out).
    fn documents(path: &std::path::Path) -> Vec<Value> {
        let Ok(text) = std::fs::read_to_string(path) else {
            return Vec::new();
        };
        let Ok(docs) = crate::yaml::split_documents(&text) else {
            return Vec::new();
        };
        docs.into_iter()
            .filter_map(|d| crate::yaml::from_str(&d).ok())
            .collect()
    }

    #[cfg_attr(
        not(corpus_present),
        ignore = "needs Istio's conformance corpus in ../shared beside the checkout"
    )]
    #[test]
    fn corpus_patches_match_reference() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/conformance/istio/cases"
        );
        let Ok(entries) = std::fs::read_dir(dir) else {
            eprintln!("conformance corpus absent at {dir}: skipped");
            return;
        };
        let mut checked = 0;
        for e in entries.flatten() {
            let golden = e.path();
            if golden.extension().is_none_or(|x| x != "injected") {
                continue;
            }
            let input = golden.with_extension("");
            for (a, b) in documents(&input).iter().zip(&documents(&golden)) {
                assert_eq!(create(a, b), reference(a, b), "{}", golden.display());
                assert_eq!(
                    create_json(a, b),
                    gojson::to_string(&reference(a, b)),
                    "{}",
                    golden.display()
                );
                assert_eq!(create(b, a), reference(b, a), "{}", golden.display());
                // One corpus pod after another on this thread: the reusing writer copies the
                // values the previous pod shares and writes the others.
                assert_eq!(
                    create_json_reusing(a, b.clone()),
                    create_json(a, b),
                    "{}",
                    golden.display()
                );
                checked += 1;
            }
        }
        assert!(
            checked > 50,
            "only {checked} corpus document pairs compared"
        );
    }
}
