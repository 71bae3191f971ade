//! A small, bounded memo of template renders for one [`super::Snapshot`]: the rendered text and
//! the tree read from it, keyed by the bytes of everything the render could read (built by
//! `render::memo`). Pods of one workload reach the webhook identical (same labels, annotations
//! and spec, no name yet), so after the first of them the others skip the template and the YAML
//! reader. A template render is a pure function of its data and the snapshot only when the
//! template calls no clock, random or network function, which `render::memo` checks first.
//!
//! Bounded in entries and in key size; admission on the second sighting of a key (a doorkeeper
//! of recent key hashes) so that a stream of distinct pods pays for no copies it never reuses.
//! Keys are compared in full, so a hash collision (the hash is not keyed: the input is the
//! client's) costs a comparison, never a wrong answer, and at most [`ENTRIES`] comparisons
//! happen per lookup.

use std::hash::Hasher;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;

/// Entries kept at most.
pub const ENTRIES: usize = 32;

/// Longest key remembered, in bytes: larger pods are rendered every time.
pub const MAX_KEY: usize = 64 * 1024;

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

#[derive(Debug)]
struct Entry {
    hash: u64,
    key: Box<[u8]>,
    value: Arc<Rendered>,
}

#[derive(Debug, Default)]
struct Slots {
    entries: Vec<Entry>,
    /// Next entry to replace when full (round robin).
    next: usize,
    /// Hashes of keys seen once, not yet admitted.
    seen: Vec<u64>,
    seen_next: usize,
}

/// The memo. A clone starts empty: a snapshot changed after cloning must not answer from the
/// renders of the one it was cloned from.
#[derive(Default)]
pub struct RenderMemo {
    slots: Mutex<Slots>,
}

impl std::fmt::Debug for RenderMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RenderMemo")
            .field("entries", &self.len())
            .finish()
    }
}

impl Clone for RenderMemo {
    fn clone(&self) -> Self {
        RenderMemo::default()
    }
}

/// The hash of a key (FxHash over its bytes: fast; collisions only cost a comparison).
pub fn key_hash(key: &[u8]) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    h.write(key);
    h.write_usize(key.len());
    h.finish()
}

impl RenderMemo {
    /// The render remembered under `key` (with its [`key_hash`]), if any.
    pub fn get(&self, hash: u64, key: &[u8]) -> Option<Arc<Rendered>> {
        let slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        slots
            .entries
            .iter()
            .find(|e| e.hash == hash && *e.key == *key)
            .map(|e| e.value.clone())
    }

    /// Whether a render of `key` should be remembered: true on the second sighting of its hash
    /// (the first is noted). Keys longer than [`MAX_KEY`] never are.
    pub fn admit(&self, hash: u64, key: &[u8]) -> bool {
        if key.len() > MAX_KEY {
            return false;
        }
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

    /// Remember `value` under `key`, replacing the oldest entry when full.
    pub fn insert(&self, hash: u64, key: &[u8], value: Arc<Rendered>) {
        if key.len() > MAX_KEY {
            return;
        }
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        if slots
            .entries
            .iter()
            .any(|e| e.hash == hash && *e.key == *key)
        {
            return;
        }
        let entry = Entry {
            hash,
            key: key.into(),
            value,
        };
        if slots.entries.len() < ENTRIES {
            slots.entries.push(entry);
        } else {
            let i = slots.next;
            slots.entries[i] = entry;
            slots.next = (i + 1) % ENTRIES;
        }
    }

    /// How many renders are remembered.
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

#[cfg(test)]
mod tests {
    use super::*;

    fn rendered(text: &str) -> Arc<Rendered> {
        Arc::new(Rendered {
            text: text.into(),
            tree: Value::String(text.into()),
        })
    }

    #[test]
    fn admits_on_the_second_sighting_and_answers_by_whole_key() {
        let m = RenderMemo::default();
        let (a, b) = (b"key a".as_slice(), b"key b".as_slice());
        assert!(!m.admit(key_hash(a), a));
        assert!(m.admit(key_hash(a), a));
        m.insert(key_hash(a), a, rendered("A"));
        assert_eq!(
            m.get(key_hash(a), a).map(|r| r.text.clone()),
            Some("A".into())
        );
        // Same hash, other bytes: no answer.
        assert!(m.get(key_hash(a), b).is_none());
        assert!(m.get(key_hash(b), b).is_none());
        assert!(m.clone().is_empty(), "a clone starts empty");
    }

    #[test]
    fn stays_bounded() {
        let m = RenderMemo::default();
        for i in 0..(3 * ENTRIES) {
            let k = format!("key {i}");
            m.insert(key_hash(k.as_bytes()), k.as_bytes(), rendered(&k));
        }
        assert_eq!(m.len(), ENTRIES);
        let last = format!("key {}", 3 * ENTRIES - 1);
        assert!(m.get(key_hash(last.as_bytes()), last.as_bytes()).is_some());
        assert!(m.get(key_hash(b"key 0"), b"key 0").is_none());
        let big = vec![b'x'; MAX_KEY + 1];
        assert!(!m.admit(key_hash(&big), &big));
        assert!(!m.admit(key_hash(&big), &big));
    }
}
