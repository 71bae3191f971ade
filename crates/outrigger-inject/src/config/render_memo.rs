//! A small, bounded memo of template renders for one [`super::Snapshot`]: the rendered text and
//! the tree read from it, keyed by everything the render could read (built by `render::memo`):
//! a few bytes for the template's name and the data's scalars, and the pod's metadata and spec
//! as the trees they are, hashed and compared in place (nothing is serialised). Pods of one
//! workload reach the webhook identical (same labels, annotations and spec, no name yet), so
//! after the first of them the others skip the template and the YAML reader. A template render
//! is a pure function of its data and the snapshot only when the template calls no clock,
//! random or network function, which `render::memo` checks first.
//!
//! Bounded in entries and in key size; admission on the second sighting of a key (a doorkeeper
//! of recent key hashes) so that a stream of distinct pods pays for no copies it never reuses.
//! Keys are compared in full (trees node by node, keys in order, numbers by representation),
//! so a hash collision (the hash is not keyed: the input is the client's) costs a comparison,
//! never a wrong answer, and at most [`ENTRIES`] comparisons happen per lookup. An answer is
//! shared ([`Arc`]): a hit copies neither the text nor the tree.
//!
//! The same kind of memo ([`Memo`]) holds the webhook's answers ([`Answered`]: the JSON Patch
//! and warnings of injecting a pod), keyed by the whole pod as received and every parameter of
//! its injection, used only when every template the pod selects is deterministic.

use std::hash::Hasher;
use std::sync::{Arc, Mutex, PoisonError};

use rustc_hash::FxHasher;
use serde_json::{Number, Value};

/// Entries kept at most.
pub const ENTRIES: usize = 32;

/// Largest key remembered, weighed as the bytes of its scalars and of the strings of its trees
/// plus [`NODE_WEIGHT`] per node (about its size in memory): larger pods are rendered every time.
pub const MAX_KEY: usize = 1024 * 1024;

/// What a tree node weighs besides its strings (a `Value` and its map entry).
pub const NODE_WEIGHT: usize = 64;

/// Total weight of the keys one [`Memo`] holds: the oldest entries go first past it, so a memo's
/// trees hold a few MiB at most whatever the pods.
pub const BUDGET: usize = 4 * 1024 * 1024;

/// Key hashes remembered as seen once.
const DOORKEEPER: usize = 256;

/// One remembered render.
#[derive(Debug)]
pub struct Rendered {
    /// The rendered text.
    pub text: String,
    /// The tree read from it.
    pub tree: Value,
}

/// What names a render, borrowed from the render's data: `head` holds the bytes of its scalars
/// (and of any tree that is not the pod's), `trees` the pod's metadata and spec.
#[derive(Debug, Clone, Copy)]
pub struct Key<'a> {
    /// Length-prefixed scalars and serialised small trees.
    pub head: &'a [u8],
    /// The pod's trees, compared node by node.
    pub trees: [&'a Value; 2],
    /// For each tree, the only top-level fields the key covers when it is an object (the fields
    /// a template can read: pods that differ elsewhere share the key), or `None` for all of it.
    pub fields: [Option<&'a [String]>; 2],
}

/// The top-level fields of `tree` a key covers ([`Key::fields`]), when it covers only some.
fn covered<'v>(
    tree: &'v Value,
    fields: Option<&'v [String]>,
) -> Option<impl Iterator<Item = (&'v String, &'v Value)>> {
    match (tree, fields) {
        (Value::Object(m), Some(f)) => Some(m.iter().filter(move |(k, _)| f.contains(k))),
        _ => None,
    }
}

impl Key<'_> {
    /// The key's weight (its head, the strings of its trees and [`NODE_WEIGHT`] per node).
    pub fn weight(&self) -> usize {
        fn tree(v: &Value) -> usize {
            NODE_WEIGHT
                + match v {
                    Value::String(s) => s.len(),
                    Value::Array(a) => a.iter().map(tree).sum(),
                    Value::Object(m) => m.iter().map(|(k, x)| k.len() + tree(x)).sum(),
                    _ => 0,
                }
        }
        let part = |t: &Value, f: Option<&[String]>| match covered(t, f) {
            Some(entries) => NODE_WEIGHT + entries.map(|(k, x)| k.len() + tree(x)).sum::<usize>(),
            None => tree(t),
        };
        self.head.len() + part(self.trees[0], self.fields[0]) + part(self.trees[1], self.fields[1])
    }

    /// A copy of the part of each tree the key covers.
    fn copy(&self) -> [Value; 2] {
        let one = |t: &Value, f: Option<&[String]>| match covered(t, f) {
            Some(entries) => Value::Object(
                entries
                    .map(|(k, x)| (k.clone(), crate::json::compact::clone(x)))
                    .collect(),
            ),
            None => crate::json::compact::clone(t),
        };
        [
            one(self.trees[0], self.fields[0]),
            one(self.trees[1], self.fields[1]),
        ]
    }

    /// Whether `kept` (a [`Key::copy`]) is the covered part of tree `i`.
    fn covers(&self, i: usize, kept: &Value) -> bool {
        match (covered(self.trees[i], self.fields[i]), kept) {
            (Some(mut entries), Value::Object(m)) => {
                m.iter().all(|(ka, va)| {
                    entries
                        .next()
                        .is_some_and(|(kb, vb)| ka == kb && same(va, vb))
                }) && entries.next().is_none()
            }
            (Some(_), _) => false,
            (None, _) => same(kept, self.trees[i]),
        }
    }

    /// The key's hash (FxHash: fast; collisions only cost a comparison), or `None` when the key
    /// is larger than [`MAX_KEY`] (counted as it is hashed; the walk stops there).
    pub fn hash(&self) -> Option<u64> {
        let mut h = FxHasher::default();
        let mut left = MAX_KEY.checked_sub(self.head.len())?;
        h.write(self.head);
        h.write_usize(self.head.len());
        for (t, f) in self.trees.into_iter().zip(self.fields) {
            match covered(t, f) {
                Some(entries) => {
                    h.write_u8(7);
                    let mut n = 0usize;
                    for (k, x) in entries {
                        left = left.checked_sub(k.len())?;
                        h.write(k.as_bytes());
                        h.write_usize(k.len());
                        hash_value(&mut h, x, &mut left)?;
                        n += 1;
                    }
                    h.write_usize(n);
                }
                None => hash_value(&mut h, t, &mut left)?,
            }
        }
        Some(h.finish())
    }
}

/// Hash `v` into `h`, counting its weight against `left` (`None` when it runs out).
fn hash_value(h: &mut FxHasher, v: &Value, left: &mut usize) -> Option<()> {
    *left = left.checked_sub(NODE_WEIGHT)?;
    match v {
        Value::Null => h.write_u8(0),
        Value::Bool(b) => h.write_u8(1 + u8::from(*b)),
        Value::Number(n) => {
            h.write_u8(3);
            match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => h.write_u64(u),
                (None, Some(i)) => h.write_i64(i),
                _ => h.write_u64(n.as_f64().map_or(0, f64::to_bits)),
            }
        }
        Value::String(s) => {
            *left = left.checked_sub(s.len())?;
            h.write_u8(4);
            h.write(s.as_bytes());
            h.write_usize(s.len());
        }
        Value::Array(a) => {
            h.write_u8(5);
            h.write_usize(a.len());
            for x in a {
                hash_value(h, x, left)?;
            }
        }
        Value::Object(m) => {
            h.write_u8(6);
            h.write_usize(m.len());
            for (k, x) in m {
                *left = left.checked_sub(k.len())?;
                h.write(k.as_bytes());
                h.write_usize(k.len());
                hash_value(h, x, left)?;
            }
        }
    }
    Some(())
}

/// Whether `a` and `b` are the same tree: object keys in the same order (the templates' output
/// may follow it), numbers of the same representation (`1` is not `1.0`, `0.0` not `-0.0`).
pub fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y.iter())
                    .all(|((ka, va), (kb, vb))| ka == kb && same(va, vb))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(va, vb)| same(va, vb))
        }
        (Value::Number(x), Value::Number(y)) => same_number(x, y),
        _ => a == b,
    }
}

fn same_number(x: &Number, y: &Number) -> bool {
    match (x.is_f64(), y.is_f64()) {
        (true, true) => x.as_f64().map(f64::to_bits) == y.as_f64().map(f64::to_bits),
        (false, false) => x == y,
        _ => false,
    }
}

/// One remembered webhook answer for a pod (`webhook`'s injection memo): the JSON Patch and the
/// warnings of injecting it.
#[derive(Debug)]
pub struct Answered {
    /// The JSON Patch (compact JSON).
    pub patch: String,
    /// The injection's warnings.
    pub warnings: Vec<String>,
}

#[derive(Debug)]
struct Entry<T> {
    hash: u64,
    weight: usize,
    head: Box<[u8]>,
    trees: [Value; 2],
    value: Arc<T>,
}

impl<T> Entry<T> {
    fn is(&self, hash: u64, key: &Key<'_>) -> bool {
        self.hash == hash
            && *self.head == *key.head
            && key.covers(0, &self.trees[0])
            && key.covers(1, &self.trees[1])
    }
}

#[derive(Debug)]
struct Slots<T> {
    /// Oldest first.
    entries: Vec<Entry<T>>,
    /// Their total weight.
    total: usize,
    /// Hashes of keys seen once, not yet admitted.
    seen: Vec<u64>,
    seen_next: usize,
}

impl<T> Default for Slots<T> {
    fn default() -> Self {
        Slots {
            entries: Vec::new(),
            total: 0,
            seen: Vec::new(),
            seen_next: 0,
        }
    }
}

/// A bounded memo of values of type `T` by [`Key`]: [`ENTRIES`] at most, admitted on the second
/// sighting of a key's hash. A clone starts empty.
pub struct Memo<T> {
    slots: Mutex<Slots<T>>,
}

impl<T> Default for Memo<T> {
    fn default() -> Self {
        Memo {
            slots: Mutex::default(),
        }
    }
}

impl<T> Clone for Memo<T> {
    fn clone(&self) -> Self {
        Memo::default()
    }
}

impl<T> std::fmt::Debug for Memo<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memo")
            .field("entries", &self.len())
            .finish()
    }
}

impl<T> Memo<T> {
    /// The value remembered under `key` (with its [`Key::hash`]), if any: shared, not copied.
    pub fn get(&self, hash: u64, key: &Key<'_>) -> Option<Arc<T>> {
        let slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        slots
            .entries
            .iter()
            .find(|e| e.is(hash, key))
            .map(|e| e.value.clone())
    }

    /// Whether a value for the key with hash `hash` should be remembered: true on the second
    /// sighting of its hash (the first is noted).
    pub fn admit(&self, hash: u64) -> bool {
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(i) = slots.seen.iter().position(|&h| h == hash) {
            slots.seen.swap_remove(i);
            return true;
        }
        if slots.seen.len() < DOORKEEPER {
            slots.seen.push(hash);
        } else {
            let i = slots.seen_next;
            slots.seen[i] = hash;
            slots.seen_next = (i + 1) % DOORKEEPER;
        }
        false
    }

    /// Remember `value` under `key` (a copy of its trees), dropping the oldest entries while
    /// the memo would hold more than [`ENTRIES`] or weigh more than [`BUDGET`].
    pub fn insert(&self, hash: u64, key: &Key<'_>, value: Arc<T>) {
        let weight = key.weight();
        if weight > MAX_KEY {
            return;
        }
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        if slots.entries.iter().any(|e| e.is(hash, key)) {
            return;
        }
        while !slots.entries.is_empty()
            && (slots.entries.len() >= ENTRIES || slots.total + weight > BUDGET)
        {
            let old = slots.entries.remove(0);
            slots.total -= old.weight;
        }
        slots.total += weight;
        slots.entries.push(Entry {
            hash,
            weight,
            head: key.head.into(),
            trees: key.copy(),
            value,
        });
    }

    /// How many values are remembered.
    pub fn len(&self) -> usize {
        self.slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entries
            .len()
    }

    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A snapshot's memos: template renders by their data, and the webhook's answers by the pod and
/// the review's parameters. A clone starts empty: a snapshot changed after cloning must not
/// answer from the renders of the one it was cloned from.
#[derive(Debug, Default, Clone)]
pub struct RenderMemo {
    /// Renders ([`Rendered`]), keyed by `render::memo`.
    pub renders: Memo<Rendered>,
    /// Webhook answers ([`Answered`]), keyed by `webhook`.
    pub answers: Memo<Answered>,
}

impl RenderMemo {
    /// The render remembered under `key`, if any ([`Memo::get`]).
    pub fn get(&self, hash: u64, key: &Key<'_>) -> Option<Arc<Rendered>> {
        self.renders.get(hash, key)
    }

    /// Whether a render should be remembered ([`Memo::admit`]).
    pub fn admit(&self, hash: u64) -> bool {
        self.renders.admit(hash)
    }

    /// Remember a render ([`Memo::insert`]).
    pub fn insert(&self, hash: u64, key: &Key<'_>, value: Arc<Rendered>) {
        self.renders.insert(hash, key, value)
    }

    /// How many renders are remembered.
    pub fn len(&self) -> usize {
        self.renders.len()
    }

    /// Whether no render is remembered.
    pub fn is_empty(&self) -> bool {
        self.renders.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rendered(text: &str) -> Arc<Rendered> {
        Arc::new(Rendered {
            text: text.into(),
            tree: Value::String(text.into()),
        })
    }

    fn key<'a>(head: &'a [u8], meta: &'a Value, spec: &'a Value) -> Key<'a> {
        Key {
            head,
            trees: [meta, spec],
            fields: [None, None],
        }
    }

    #[test]
    fn admits_on_the_second_sighting_and_answers_by_whole_key() {
        let m = RenderMemo::default();
        let (meta, spec) = (json!({"labels": {"app": "a"}}), json!({"containers": []}));
        let a = key(b"head", &meta, &spec);
        let ha = a.hash().expect("small key");
        assert!(!m.admit(ha));
        assert!(m.admit(ha));
        m.insert(ha, &a, rendered("A"));
        assert_eq!(m.get(ha, &a).map(|r| r.text.clone()), Some("A".into()));
        // Same hash, other head or trees: no answer.
        let other = json!({"labels": {"app": "b"}});
        assert!(m.get(ha, &key(b"other", &meta, &spec)).is_none());
        assert!(m.get(ha, &key(b"head", &other, &spec)).is_none());
        assert!(m.clone().is_empty(), "a clone starts empty");
    }

    /// Equal keys hash alike; trees that print differently are different keys, whatever
    /// `Value`'s `==` says (key order, integer and float, the sign of zero).
    #[test]
    fn keys_are_the_trees_as_they_print() {
        let spec = json!({});
        let pairs = [
            (json!({"a": 1, "b": 2}), json!({"b": 2, "a": 1})),
            (json!({"n": 1}), json!({"n": 1.0})),
            (json!({"n": 0.0}), json!({"n": -0.0})),
            (json!({"s": "ab", "t": ""}), json!({"s": "a", "t": "b"})),
            (json!([1, [2]]), json!([[1], 2])),
        ];
        for (x, y) in &pairs {
            assert_ne!(x.to_string(), y.to_string());
            assert!(!same(x, y), "{x} vs {y}");
            let m = RenderMemo::default();
            let kx = key(b"", x, &spec);
            m.insert(kx.hash().unwrap(), &kx, rendered("x"));
            let ky = key(b"", y, &spec);
            let hy = ky.hash().unwrap();
            assert!(m.get(hy, &ky).is_none(), "{y} answered as {x}");
            let copy = x.clone();
            let kc = key(b"", &copy, &spec);
            assert_eq!(kc.hash(), kx.hash());
            assert!(m.get(kc.hash().unwrap(), &kc).is_some());
        }
    }

    #[test]
    fn stays_bounded() {
        let m = RenderMemo::default();
        let spec = json!({});
        let metas: Vec<Value> = (0..3 * ENTRIES).map(|i| json!({"i": i})).collect();
        for (i, meta) in metas.iter().enumerate() {
            let k = key(b"", meta, &spec);
            m.insert(k.hash().unwrap(), &k, rendered(&i.to_string()));
        }
        assert_eq!(m.len(), ENTRIES);
        let last = key(b"", &metas[3 * ENTRIES - 1], &spec);
        assert!(m.get(last.hash().unwrap(), &last).is_some());
        let first = key(b"", &metas[0], &spec);
        assert!(m.get(first.hash().unwrap(), &first).is_none());
        // Past the budget, the oldest go first.
        let m = RenderMemo::default();
        let heavy: Vec<Value> = (0..5)
            .map(|i| json!({"x": i.to_string().repeat(MAX_KEY - 1024)}))
            .collect();
        for meta in &heavy {
            let k = key(b"", meta, &spec);
            m.insert(k.hash().expect("under MAX_KEY"), &k, rendered("heavy"));
            assert!(m.len() <= BUDGET / (MAX_KEY - 1024));
        }
        let newest = key(b"", &heavy[4], &spec);
        assert!(m.get(newest.hash().unwrap(), &newest).is_some());
        let big = json!({"x": "y".repeat(MAX_KEY)});
        assert!(key(b"", &big, &spec).hash().is_none());
        let long_head = vec![0u8; MAX_KEY + 1];
        assert!(key(&long_head, &spec, &spec).hash().is_none());
    }
}
