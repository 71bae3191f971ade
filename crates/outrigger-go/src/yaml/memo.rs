//! Reuse, by the fast loader ([`super::fast`]), of the subtrees it built from byte-identical text
//! of the previous document read on the thread.
//!
//! Rendered sidecar templates of consecutive pods differ in a few lines (a label, an env var):
//! most of each text is byte-identical to the previous render's, and so is most of the tree read
//! from it. Each thread keeps a [`Memo`] of the last document the fast loader read in full:
//! its text and, for each *unit* (below), where the unit sat, how long it was, what followed it,
//! and its value with the values of its inner units left out (its *skeleton*). Reading the next
//! text, the loader looks at each unit where it starts for the remembered unit at the same place
//! in the tree (the same key of the parent mapping, or the same index of the parent sequence);
//! when the remembered unit's text and the bytes after it are equal (compared in full, `==` on
//! the byte slices: never a hash), it builds the value from the skeletons (clones, which copy the
//! maps' stored key hashes) and jumps over the text; otherwise it reads the unit as it would
//! without a memo, and the units inside it are looked up in turn.
//!
//! # Units, and why a remembered value is exact
//!
//! A unit starts at the start `S` of a line and is one of:
//! - *node*: the block node read by `Loader::block_node` at the first content byte of its line
//!   (at column `c`): the document's root, or the value of a `key:` with nothing after it on
//!   its line (`after_empty`, both of its branches call the same reading of a node at `c`);
//! - *item*: a block sequence entry, read by `Loader::entry` after its `-` at column `c` (for a
//!   compact `- - x`, the inner entry's line starts at the outer `-`);
//! - *flow*: a flow collection after `key: ` on the key's line (at column `c`), read by
//!   `Loader::flow` and then the end of its line: `S` is the key's line start, so the key's
//!   text is compared too.
//!
//! Units shorter than [`MIN_UNIT`] bytes, and entries whose value is a scalar, are not
//! remembered on their own: their values stay in the enclosing unit's skeleton (reading them
//! again costs less than comparing and rebuilding them).
//!
//! Reading a unit is a function of: the bytes from `S` to where it ends (`E`), the three bytes
//! at `E` (zeros past the end), its kind, `c` and its depth. Nothing else:
//! - the loader reads forward from its cursor; the only bytes it reads before the cursor are the
//!   one before a `#` (is it a comment?), always on a line inside the unit, after `S`, and
//!   those of the unit's first line before `c` (for the column). Its
//!   decisions use columns (`pos - line_start`), lengths and differences of positions, never an
//!   absolute position, except the end of the text, which inside the unit is never reached (its
//!   bytes are there) and at `E` shows as a NUL (the text holds none: the loader gives up on
//!   control characters before reading);
//! - a unit ends at the first content byte of a line (after `skip_to_content`) or at the end of
//!   the text. The loops that end there read the column of `E` (from the line breaks inside the
//!   unit), whether `E` starts an entry (`-` then a blank: two bytes) and whether it starts a
//!   document marker (`---`, `...` at column 0: three bytes). Blank and comment lines before
//!   `E`, and the lines after a literal block that decide its chomping, are inside the unit;
//! - the unit's own indentation is `c`, and every comparison of columns inside it is with `c` or
//!   with columns inside it: the parent's indentation decides only whether the parent calls the
//!   unit (made before, outside the unit) and where the parent goes on after it (after, outside);
//! - the loader's other state does not enter: the entries and items of the collections being read
//!   are stacks of which a unit takes only its own, and the shape cache changes how maps are
//!   built, not what they hold. The depth counts toward [`super::fast`]'s nesting limit, so it is
//!   compared (it follows from the place in the tree, as `c` follows from the bytes, so both
//!   checks are belts);
//! - the fast loader gives up on everything that would tie a node to text elsewhere (anchors,
//!   aliases, tags, merge keys, directives, multi-line scalars outside literal blocks), and on
//!   every error, by failing the whole document: a remembered unit is one that was read without
//!   failing, and reading the same bytes again cannot fail. Duplicate keys are checked where the
//!   mapping is built, which is inside the unit for its own mappings and outside it for the key
//!   that holds it (the parent compares its keys whether the value was read or reused).
//!
//! So when the text at `S` equals the remembered unit's text, the bytes after it equal, and the
//! kind, column and depth are the same, reading would give the remembered value and end at
//! `S + len` with the remembered column: reuse is exact. A document the fast loader gives up on
//! reaches the full loader exactly as without a memo, and leaves an empty memo.
//!
//! The fast loader's check of the characters (no control characters, no NUL) is made, with a
//! memo, only on the bytes a text does not share with the remembered text at its start and end
//! (and two either side): the remembered text passed the same check.
//!
//! The tests (`tests_memo.rs`, and `tests/yaml_fast.rs` of outrigger-inject on the rendered
//! templates of distinct pods) compare reads with the memo warm from a previous text against
//! cold reads, over thousands of line edits; leaving the bytes after a unit, its kind or the
//! last byte of its text out of the comparison makes them fail.
//!
//! # Bounds
//!
//! One memo per thread: the last document's text and units (at most one per line), texts of
//! [`MIN_LEN`]..=[`MAX_LEN`] bytes only (a shorter text neither uses nor replaces the memo). The
//! skeletons hold each value once. A unit reused is moved into the new memo, with its inner
//! units, not copied. Nothing grows with distinct inputs. What all threads' memos keep is
//! bounded too: each memo takes a charge of [`weight`] from [`crate::cache_memory::CACHES`], and
//! keeps nothing when the pool is full (the next text is read without reuse).

use serde_json::Value;

/// Longest text whose units are remembered.
pub(super) const MAX_LEN: usize = 64 << 10;
/// Shortest text whose units are remembered (shorter ones gain nothing, and must not push out
/// the memo of a rendered template, as an annotation read between two renders would).
pub(super) const MIN_LEN: usize = 256;

/// Shortest unit remembered on its own (a shorter one stays in its enclosing unit's skeleton).
pub(super) const MIN_UNIT: usize = 64;

/// What a unit is read as.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub(super) enum Kind {
    /// A block node (`Loader::block_node`): the root, or a mapping value on the lines after
    /// its key.
    #[default]
    Node,
    /// A block sequence entry (`Loader::entry`, after its `-`).
    Item,
    /// A flow collection after its key, on the key's line (`Loader::flow`, then the end of
    /// the node's line).
    Flow,
}

/// A unit of a document: where it is, what it was read from, and its value.
#[derive(Default)]
pub(super) struct Node {
    /// Start of the unit's first line: for the root, in the text; for others, from the start of
    /// the enclosing unit.
    pub(super) rel: usize,
    /// Bytes of the unit; 0 once the unit was taken out of the remembered tree.
    pub(super) len: usize,
    /// Column at which the unit was read (the node's or flow collection's first byte, or an
    /// item's `-`).
    pub(super) col: usize,
    /// Column of the first content byte after the unit (0 at the end of the text).
    pub(super) end_col: usize,
    /// The three bytes after the unit (zeros past the end of the text).
    pub(super) tail: [u8; 3],
    /// Depth at which it was read.
    pub(super) depth: usize,
    /// What it was read as.
    pub(super) kind: Kind,
    /// Position in the enclosing unit's collection.
    pub(super) index: usize,
    /// Key in the enclosing unit's mapping (for a node that is a mapping value).
    pub(super) key: Option<Box<str>>,
    /// The units directly inside this one, in document order.
    pub(super) kids: Vec<Node>,
    /// The value with the values of the inner units replaced by null.
    pub(super) skel: Value,
}

/// A unit being read after a miss: its remembered counterpart and its inner units so far.
pub(super) struct Frame {
    /// The remembered unit at the same place, if any (its inner units are taken out as they
    /// are looked up).
    pub(super) old: Option<Node>,
    /// Where that unit starts in the remembered text.
    pub(super) old_start: usize,
    /// Where this unit starts in the text read.
    pub(super) start: usize,
    /// The next remembered inner unit to look at first.
    pub(super) cursor: usize,
    /// The inner units read or reused so far.
    pub(super) kids: Vec<Node>,
}

/// The last document's units on this thread.
#[derive(Default)]
pub(super) struct Memo {
    /// The text the units were read from.
    pub(super) text: String,
    /// The root unit, when the text was read in full.
    pub(super) root: Option<Node>,
    /// Storage for the frames of the document being read.
    pub(super) frames: Vec<Frame>,
    /// Units reused (for tests).
    pub(super) hits: u64,
    /// Units that had a remembered counterpart but were read again (for tests).
    pub(super) misses: u64,
    /// What the text and units weigh, taken from [`crate::cache_memory::CACHES`] (`None` with
    /// nothing remembered).
    pub(super) charge: Option<crate::cache_memory::Charge>,
}

/// What a remembered text of `len` bytes is charged: its bytes and its units' skeletons (a
/// `Value` per scalar and map entry: a few times the text).
pub(super) fn weight(len: usize) -> usize {
    len.saturating_mul(8)
}

/// The memo as the loader uses it while reading one document.
pub(super) struct Reuse<'m> {
    /// The remembered text.
    pub(super) old_text: &'m [u8],
    /// The remembered root, until it is looked up.
    pub(super) old_root: Option<Node>,
    /// The root of the document read, once read.
    pub(super) root: Option<Node>,
    /// The units being read after a miss, innermost last.
    pub(super) frames: &'m mut Vec<Frame>,
    pub(super) hits: &'m mut u64,
    pub(super) misses: &'m mut u64,
}

impl Reuse<'_> {
    /// Take out the remembered unit at the place of a unit about to be read (of `kind`, at
    /// `index` of its collection, under `key`), with where it starts in the remembered text.
    pub(super) fn counterpart(
        &mut self,
        kind: Kind,
        index: usize,
        key: Option<&str>,
    ) -> Option<(Node, usize)> {
        let Some(frame) = self.frames.last_mut() else {
            let root = self.old_root.take()?;
            let start = root.rel;
            return Some((root, start));
        };
        let kids = &mut frame.old.as_mut()?.kids;
        let fits = |n: &Node| {
            n.len != 0
                && n.kind == kind
                && match key {
                    Some(k) => n.key.as_deref() == Some(k),
                    None => n.index == index,
                }
        };
        // From the cursor on, then before it.
        let from = frame.cursor.min(kids.len());
        let j = (from..kids.len())
            .chain(0..from)
            .find(|&j| kids.get(j).is_some_and(fits))?;
        frame.cursor = j + 1;
        let n = std::mem::take(kids.get_mut(j)?);
        let start = frame.old_start + n.rel;
        Some((n, start))
    }

    /// Put a unit read or reused where it belongs: among the enclosing unit's, or at the root.
    pub(super) fn place(&mut self, n: Node) {
        match self.frames.last_mut() {
            Some(f) => f.kids.push(n),
            None => self.root = Some(n),
        }
    }
}

/// The value of the unit `n`: its skeleton with the values of its inner units.
pub(super) fn materialize(n: &Node) -> Value {
    let mut v = n.skel.clone();
    match &mut v {
        Value::Object(m) => {
            let mut slots = m.values_mut().enumerate();
            for k in &n.kids {
                if let Some((_, slot)) = slots.by_ref().find(|(p, _)| *p == k.index) {
                    *slot = materialize(k);
                }
            }
        }
        Value::Array(a) => {
            for k in &n.kids {
                if let Some(slot) = a.get_mut(k.index) {
                    *slot = materialize(k);
                }
            }
        }
        _ => {}
    }
    v
}

/// A copy of `v` with the values at the positions of the inner units `kids` replaced by null.
pub(super) fn skeleton(v: &mut Value, kids: &[Node]) -> Value {
    if kids.is_empty() {
        return v.clone();
    }
    let mut held: Vec<Value> = Vec::with_capacity(kids.len());
    swap_kids(v, kids, |slot| held.push(std::mem::take(slot)));
    let skel = v.clone();
    let mut held = held.into_iter();
    swap_kids(v, kids, |slot| *slot = held.next().unwrap_or_default());
    skel
}

/// Call `f` on the values of `v` at the positions of `kids`, in order.
fn swap_kids(v: &mut Value, kids: &[Node], mut f: impl FnMut(&mut Value)) {
    match v {
        Value::Object(m) => {
            let mut kid = kids.iter().peekable();
            for (p, slot) in m.values_mut().enumerate() {
                if kid.next_if(|k| k.index == p).is_some() {
                    f(slot);
                }
            }
        }
        Value::Array(a) => {
            for k in kids {
                if let Some(slot) = a.get_mut(k.index) {
                    f(slot);
                }
            }
        }
        _ => {}
    }
}

/// The three bytes of `b` from `at` on, zeros past its end.
pub(super) fn tail(b: &[u8], at: usize) -> [u8; 3] {
    let byte = |k: usize| b.get(at + k).copied().unwrap_or(0);
    [byte(0), byte(1), byte(2)]
}
