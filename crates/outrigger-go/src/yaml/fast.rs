//! Fast path of [`super::from_str`]: a single-pass loader for the block-YAML subset that rendered
//! sidecar templates are written in.
//!
//! It produces exactly the tree that [`super::parse`] (the go-yaml v2 port) produces, or
//! gives up with `None`, after which the caller runs the full loader on the original text. It never
//! reports errors: anything it does not recognise, and every error, is a `None`.
//!
//! Covered: block mappings with plain or quoted single-line keys; block sequences, including
//! compact `- key: v` mappings, nested `- - x` and a sequence at the indentation of its parent key;
//! single-line plain scalars (resolved by [`resolve_plain`]), single- and double-quoted scalars
//! (go-yaml's escapes but `\'` and `\<TAB>`); literal block scalars `|`, `|-`, `|+` with auto-detected
//! indentation; flow sequences and mappings of those scalars, nested, over several lines; comments,
//! blank lines, a leading BOM and a leading `---`.
//!
//! Gives up on: tabs, CR and other control characters anywhere, U+0085/U+2028/U+2029/U+FEFF in
//! the text, anchors, aliases, tags, `?` keys, `<<` merge keys, folded scalars, block indentation
//! indicators, multi-line plain or quoted scalars, a scalar on the line after its key, directives,
//! `...` and further documents, duplicate keys, keys that are null or too long, NaN/infinite
//! numbers, empty flow entries and values, nesting deeper than [`MAX_DEPTH`].
//!
//! Subtrees read from text that is byte-identical, at the same place in the tree, to the previous
//! document read on the thread are rebuilt from a per-thread memo instead of read again: see
//! [`super::memo`] for what is remembered and why the tree is the same.
//!
//! Mappings are built from a per-thread cache of the key sequences read before ([`Shapes`]):
//! a clone of the remembered map copies the SipHash hashes serde_json's map stores, where
//! inserting would compute them key by key; the tree is the same.

use std::borrow::Cow;
use std::cell::RefCell;
use std::hash::Hasher;

use rustc_hash::FxHasher;
use serde_json::{Map, Value};

use super::memo::{self, Kind, Memo, Reuse};
use super::parse::{key_string, resolved_json};
use super::resolve::{resolve_plain, Resolved};

/// Deepest nesting handled here (the full loader's limit is 256).
const MAX_DEPTH: usize = 100;
/// Longest key handled here (go-yaml stops looking for a simple key's `:` after 1024
/// characters).
const MAX_KEY_LEN: usize = 1000;
/// Longest text handled here (the full loader caps the number of nodes).
const MAX_LEN: usize = 16 << 20;

/// Load `text` if it is in the subset; `None` otherwise (and on any error).
pub(crate) fn from_str(text: &str) -> Option<Value> {
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    if text.len() > MAX_LEN {
        return None;
    }
    SHAPES.with(|shapes| {
        MEMO.with(
            |memo| match (shapes.try_borrow_mut(), memo.try_borrow_mut()) {
                (Ok(mut shapes), Ok(mut memo)) => {
                    if !chars_ok_beside(text.as_bytes(), memo.text.as_bytes()) {
                        return None;
                    }
                    load(text, &mut shapes, Some(&mut memo))
                }
                // Not reached (the loader does not call itself); fresh caches keep it correct.
                _ => {
                    if !chars_ok(text.as_bytes()) {
                        return None;
                    }
                    load(text, &mut Shapes::new(), None)
                }
            },
        )
    })
}

/// [`chars_ok`] of `b`, given `old`, a text that passed it (or an empty one). The bytes that
/// `b` shares with `old` at its start and at its end are not looked at again, except the two
/// next to the bytes that differ: a byte refused alone is refused wherever it is, and every
/// sequence of bytes refused together (at most three) that has a byte among those that differ
/// lies within two bytes of them (one that does not lies in the shared start or end, which
/// `old` has too).
fn chars_ok_beside(b: &[u8], old: &[u8]) -> bool {
    let start = common_prefix(b, old);
    let rest = (b.get(start..), old.get(start..));
    let end = match rest {
        (Some(b), Some(old)) => common_suffix(b, old),
        _ => 0,
    };
    let from = start.saturating_sub(2);
    let to = (b.len() - end + 2).min(b.len());
    b.get(from..to).is_some_and(chars_ok)
}

/// Bytes that `a` and `b` share at their start.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    for step in [256, 16, 1] {
        while i + step <= n && a.get(i..i + step) == b.get(i..i + step) {
            i += step;
        }
    }
    i
}

/// Bytes that `a` and `b` share at their end.
fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let (a, b) = (
        a.get(a.len() - n..).unwrap_or_default(),
        b.get(b.len() - n..).unwrap_or_default(),
    );
    let mut i = 0;
    for step in [256, 16, 1] {
        while i + step <= n && a.get(n - i - step..n - i) == b.get(n - i - step..n - i) {
            i += step;
        }
    }
    i
}

/// [`from_str`] without this thread's caches: a fresh shape cache and no memo (for the
/// differential tests of the memo).
#[cfg(any(test, feature = "test-support"))]
pub(crate) fn cold(text: &str) -> Option<Value> {
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    if text.len() > MAX_LEN || !chars_ok(text.as_bytes()) {
        return None;
    }
    load(text, &mut Shapes::new(), None)
}

/// This thread's memo: units reused and units read again since the thread started, and the
/// number of units and bytes of text it holds (for tests).
#[cfg(any(test, feature = "test-support"))]
pub(crate) fn memo_counts() -> (u64, u64, usize, usize) {
    MEMO.with_borrow(|m| {
        fn units(n: &memo::Node) -> usize {
            1 + n.kids.iter().map(units).sum::<usize>()
        }
        (
            m.hits,
            m.misses,
            m.root.as_ref().map_or(0, units),
            m.text.len(),
        )
    })
}

/// Load `text` with `shapes`, reusing the units of `memo` (see [`super::memo`]) and leaving
/// this text's there, when the text's size is in the memo's range.
fn load(text: &str, shapes: &mut Shapes, memo: Option<&mut Memo>) -> Option<Value> {
    let memo = memo.filter(|_| (memo::MIN_LEN..=memo::MAX_LEN).contains(&text.len()));
    let Some(memo) = memo else {
        return Loader::new(text, shapes, None).document();
    };
    let Memo {
        text: old_text,
        root,
        frames,
        hits,
        misses,
        charge,
    } = memo;
    frames.clear();
    let reuse = Reuse {
        old_text: old_text.as_bytes(),
        old_root: root.take(),
        root: None,
        frames,
        hits,
        misses,
    };
    let mut loader = Loader::new(text, shapes, Some(reuse));
    let v = loader.document();
    let new_root = loader.reuse.and_then(|r| r.root);
    old_text.clear();
    // The old text's charge is given back before the new one is taken.
    *charge = None;
    if v.is_some() {
        *charge = crate::cache_memory::CACHES.charge(memo::weight(text.len()));
        if charge.is_some() {
            old_text.push_str(text);
            *root = new_root;
        }
    }
    v
}

thread_local! {
    /// This thread's [`Memo`]: the units of the last document read in full.
    static MEMO: RefCell<Memo> = RefCell::new(Memo::default());
    /// This thread's [`Shapes`]: the rendered templates read on a thread have the same
    /// mappings render after render, whatever the pod.
    static SHAPES: RefCell<Shapes> = const { RefCell::new(Shapes::new()) };
}

/// Slots of a [`Shapes`] cache: `1 << SHAPE_BITS`.
const SHAPE_BITS: u32 = 10;
/// Most keys of a mapping kept in a [`Shapes`] cache.
const SHAPE_MAX_KEYS: usize = 32;
/// Most bytes of keys of a mapping kept in a [`Shapes`] cache.
const SHAPE_MAX_BYTES: usize = 1024;
/// Most keys, and most bytes of keys, that a [`Shapes`] cache holds in all.
const SHAPES_BUDGET: (usize, usize) = (4096, 64 << 10);

/// A mapping's keys in order ("shape"), as a map with null values.
struct Shape {
    /// The FxHash of the keys.
    hash: u64,
    /// Bytes of the keys.
    bytes: usize,
    proto: Map<String, Value>,
}

/// Mappings by their keys in order: a mapping of a shape seen before is a clone of the shape's
/// map with the values filled in, which copies the hashes of the keys that the map (an
/// `IndexMap` with SipHash) stores instead of computing them again and probing, key by key.
/// The clone is made only after comparing the keys one by one, so the tree is the one that
/// inserting the entries builds (the same keys, order and values; only the hasher's seeds are
/// shared by the clones of a shape). Two slots for each FxHash of keys (a new shape moves the
/// one in its first slot to the second), at most [`SHAPES_BUDGET`] in all: the cache stays small
/// whatever the texts, and a shape it has no room for is built by insertion.
struct Shapes {
    slots: Vec<Option<Box<Shape>>>,
    /// Keys and bytes of keys held.
    held: (usize, usize),
}

impl Shapes {
    const fn new() -> Shapes {
        Shapes {
            slots: Vec::new(),
            held: (0, 0),
        }
    }

    /// The mapping of the entries of `entries` from `base` on (keys in document order), which
    /// are drained; `None` on a duplicate key.
    fn mapping(
        &mut self,
        entries: &mut Vec<(Cow<'_, str>, Value)>,
        base: usize,
    ) -> Option<Map<String, Value>> {
        let staged = entries.get(base..)?;
        let n = staged.len();
        let mut h = FxHasher::default();
        let mut bytes = 0;
        for (k, _) in staged {
            h.write(k.as_bytes());
            h.write_u8(0xff);
            bytes += k.len();
        }
        if n > SHAPE_MAX_KEYS || bytes > SHAPE_MAX_BYTES {
            return insert_all(entries.drain(base..));
        }
        let hash = h.finish();
        if self.slots.is_empty() {
            self.slots.resize_with(1 << SHAPE_BITS, || None);
        }
        let i = (hash.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - SHAPE_BITS)) as usize;
        let same = |slot: &Option<Box<Shape>>| {
            slot.as_ref().is_some_and(|s| {
                s.hash == hash
                    && s.proto.len() == n
                    && s.proto
                        .keys()
                        .zip(staged)
                        .all(|(a, (b, _))| a.as_str() == b.as_ref())
            })
        };
        let at = if same(self.slots.get(i)?) {
            i
        } else if same(self.slots.get(i ^ 1)?) {
            i ^ 1
        } else {
            // A new shape takes the first slot; the shape there moves to the second, whose
            // shape is dropped.
            self.slots.swap(i, i ^ 1);
            if let Some(old) = self.slots.get_mut(i)?.take() {
                self.held = (
                    self.held.0.saturating_sub(old.proto.len()),
                    self.held.1.saturating_sub(old.bytes),
                );
            }
            let held = (self.held.0 + n, self.held.1 + bytes);
            if held.0 > SHAPES_BUDGET.0 || held.1 > SHAPES_BUDGET.1 {
                return insert_all(entries.drain(base..));
            }
            let mut proto = Map::with_capacity(n);
            for (k, _) in staged {
                if proto.insert(k.to_string(), Value::Null).is_some() {
                    return None;
                }
            }
            self.held = held;
            *self.slots.get_mut(i)? = Some(Box::new(Shape { hash, bytes, proto }));
            i
        };
        let mut map = self.slots.get(at)?.as_ref()?.proto.clone();
        for (dst, (_, v)) in map.values_mut().zip(entries.drain(base..)) {
            // The shape's values are all null: nothing to drop.
            std::mem::forget(std::mem::replace(dst, v));
        }
        Some(map)
    }
}

/// The mapping of `entries` built by insertion; `None` on a duplicate key.
fn insert_all<'a>(
    entries: impl ExactSizeIterator<Item = (Cow<'a, str>, Value)>,
) -> Option<Map<String, Value>> {
    let mut map = Map::with_capacity(entries.len());
    for (k, v) in entries {
        if map.insert(k.into_owned(), v).is_some() {
            return None;
        }
    }
    Some(map)
}

/// No control character other than LF (so byte 0 can mark the end of the text), no DEL, no C1
/// control (U+0080..U+009F, U+0085 included), no U+2028/U+2029, no BOM and no U+FFFE/U+FFFF.
fn chars_ok(b: &[u8]) -> bool {
    let mut high = 0u8;
    for chunk in b.chunks(128) {
        // Branch-free over the chunk so that it vectorises.
        let mut bad = 0u8;
        for &c in chunk {
            bad |= u8::from(c < 0x20 && c != b'\n') | u8::from(c == 0x7f);
            high |= c;
        }
        if bad != 0 {
            return false;
        }
    }
    high < 0x80 || non_ascii_ok(b)
}

/// The non-ASCII part of [`chars_ok`].
fn non_ascii_ok(b: &[u8]) -> bool {
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        let bad = match c {
            0xc2 => b.get(i + 1).is_some_and(|&n| n < 0xa0),
            0xe2 => b.get(i + 1) == Some(&0x80) && matches!(b.get(i + 2), Some(0xa8 | 0xa9)),
            0xef => matches!(
                (b.get(i + 1), b.get(i + 2)),
                (Some(0xbb), Some(0xbf)) | (Some(0xbf), Some(0xbe | 0xbf))
            ),
            _ => false,
        };
        if bad {
            return false;
        }
        i += 1;
    }
    true
}

/// Chomping indicator of a literal block scalar.
#[derive(Clone, Copy, PartialEq)]
enum Chomp {
    /// `|`: one final line break.
    Clip,
    /// `|-`: no final line break.
    Strip,
    /// `|+`: all final line breaks.
    Keep,
}

/// The loader's cursor. Invariant between nodes: `pos` is at the first content byte of the next
/// content line (or at the end of the text), `line_start` at the start of that line.
struct Loader<'a> {
    src: &'a str,
    b: &'a [u8],
    pos: usize,
    line_start: usize,
    /// Entries of the mappings being read (innermost last), moved into maps of the exact size.
    entries: Vec<(Cow<'a, str>, Value)>,
    /// Items of the sequences being read (innermost last), moved into vectors of the exact size.
    items: Vec<Value>,
    /// Mappings by shape.
    shapes: &'a mut Shapes,
    /// The previous document's units, and this one's being stored.
    reuse: Option<Reuse<'a>>,
}

impl<'a> Loader<'a> {
    fn new(text: &'a str, shapes: &'a mut Shapes, reuse: Option<Reuse<'a>>) -> Loader<'a> {
        Loader {
            src: text,
            b: text.as_bytes(),
            pos: 0,
            line_start: 0,
            entries: Vec::new(),
            items: Vec::new(),
            shapes,
            reuse,
        }
    }

    /// A unit (see [`super::memo`]) starting at `pos` on the line at `line_start`: reused from
    /// the memo when its remembered counterpart (the unit of `kind` at `index` or `key` of
    /// the enclosing unit) has the same text, the same three bytes after it, column and depth;
    /// else read by `read`, and remembered.
    fn unit(
        &mut self,
        kind: Kind,
        index: usize,
        key: Option<&str>,
        depth: usize,
        read: impl FnOnce(&mut Self) -> Option<Value>,
    ) -> Option<Value> {
        let Some(r) = self.reuse.as_mut() else {
            return read(self);
        };
        let start = self.line_start;
        let col = self.pos - start;
        let parent = r.frames.last().map_or(0, |f| f.start);
        let mut old = r.counterpart(kind, index, key);
        if let Some((mut n, old_start)) = old.take() {
            let end = start + n.len;
            if n.depth == depth
                && n.col == col
                && n.tail == memo::tail(self.b, end)
                && self
                    .b
                    .get(start..end)
                    .is_some_and(|t| r.old_text.get(old_start..old_start + n.len) == Some(t))
            {
                *r.hits += 1;
                n.rel = start - parent;
                n.index = index;
                let v = memo::materialize(&n);
                let end_col = n.end_col;
                r.place(n);
                self.pos = end;
                self.line_start = end - end_col;
                return Some(v);
            }
            *r.misses += 1;
            old = Some((n, old_start));
        }
        let (old, old_start) = old.map_or((None, 0), |(n, s)| (Some(n), s));
        r.frames.push(memo::Frame {
            old,
            old_start,
            start,
            cursor: 0,
            kids: Vec::new(),
        });
        let v = read(self);
        let r = self.reuse.as_mut()?;
        let frame = r.frames.pop()?;
        let mut v = v?;
        if !(v.is_object() || v.is_array()) || self.pos - start < memo::MIN_UNIT {
            // A scalar entry or a short collection: cheaper to read again than to look up,
            // compare and rebuild (its value stays in the enclosing unit's skeleton).
            return Some(v);
        }
        let skel = memo::skeleton(&mut v, &frame.kids);
        r.place(memo::Node {
            rel: start - parent,
            len: self.pos - start,
            col,
            end_col: self.pos - self.line_start,
            tail: memo::tail(self.b, self.pos),
            depth,
            kind,
            index,
            key: key.map(Box::from),
            kids: frame.kids,
            skel,
        });
        Some(v)
    }

    /// The byte at `i`, 0 past the end (the text holds no NUL).
    fn at(&self, i: usize) -> u8 {
        self.b.get(i).copied().unwrap_or(0)
    }

    fn peek(&self) -> u8 {
        self.at(self.pos)
    }

    fn col(&self) -> usize {
        self.pos - self.line_start
    }

    fn eof(&self) -> bool {
        self.pos >= self.b.len()
    }

    /// Space, line break or end of text at `i`.
    fn blank_at(&self, i: usize) -> bool {
        matches!(self.at(i), b' ' | b'\n' | 0)
    }

    /// A block sequence entry indicator (`-` then a blank) at `pos`.
    fn at_entry(&self) -> bool {
        self.peek() == b'-' && self.blank_at(self.pos + 1)
    }

    fn skip_spaces(&mut self) {
        self.pos = skip_spaces(self.b, self.pos);
    }

    /// Move to just after the next line break (or to the end of the text).
    fn next_line(&mut self) {
        self.pos = match self
            .b
            .get(self.pos..)
            .and_then(|r| r.iter().position(|&c| c == b'\n'))
        {
            Some(n) => self.pos + n + 1,
            None => self.b.len(),
        };
        self.line_start = self.pos;
    }

    /// From a line start, skip blank and comment lines; `pos` ends at the first content byte.
    fn skip_ignorable(&mut self) {
        loop {
            self.line_start = self.pos;
            self.skip_spaces();
            match self.peek() {
                b'\n' | b'#' => self.next_line(),
                _ => return,
            }
        }
    }

    /// [`Self::skip_ignorable`], giving up on a document marker (`---`, `...`) line.
    fn skip_to_content(&mut self) -> Option<()> {
        self.skip_ignorable();
        self.no_marker()
    }

    /// `None` when the content at `pos` starts a line with a document marker (`---`, `...`).
    fn no_marker(&self) -> Option<()> {
        if self.col() != 0 {
            return Some(());
        }
        let rest = self.b.get(self.pos..).unwrap_or_default();
        (!rest.starts_with(b"---") && !rest.starts_with(b"...")).then_some(())
    }

    /// The rest of a line after a node: spaces, then a comment (after a space) or the line end.
    fn finish_line(&mut self) -> Option<()> {
        if self.peek() == b'\n' {
            self.pos += 1;
            self.line_start = self.pos;
            return Some(());
        }
        self.skip_spaces();
        match self.peek() {
            0 => Some(()),
            b'\n' => {
                self.pos += 1;
                self.line_start = self.pos;
                Some(())
            }
            b'#' if self.at(self.pos.wrapping_sub(1)) == b' ' => {
                self.next_line();
                Some(())
            }
            _ => None,
        }
    }

    /// [`Self::finish_line`] then [`Self::skip_to_content`].
    fn end_node(&mut self) -> Option<()> {
        self.finish_line()?;
        self.skip_to_content()
    }

    /// The whole text: nothing (null), or one block or flow collection.
    fn document(&mut self) -> Option<Value> {
        self.skip_ignorable();
        let rest = self.b.get(self.pos..).unwrap_or_default();
        if self.col() == 0 && rest.starts_with(b"---") && self.blank_at(self.pos + 3) {
            self.pos += 3;
            self.end_node()?;
        } else {
            self.no_marker()?;
        }
        if self.eof() {
            return Some(Value::Null);
        }
        let col = self.col();
        let v = self.unit(Kind::Node, 0, None, 0, |l| l.block_node(col, 0))?;
        self.eof().then_some(v)
    }

    /// A collection starting a line at column `col`.
    fn block_node(&mut self, col: usize, depth: usize) -> Option<Value> {
        match self.peek() {
            b'-' if self.at_entry() => self.sequence(col, depth),
            b'[' | b'{' => {
                let v = self.flow(depth)?;
                self.end_node()?;
                Some(v)
            }
            _ => {
                let key = self.key()?;
                self.mapping(col, key, depth)
            }
        }
    }

    /// The value of a key or entry with nothing after it on its line: a block collection on the
    /// following lines, or null. `same_col_seq`: a sequence at `indent` belongs to the key.
    /// `slot`: the value's index and key in its mapping, which make it a unit (the value of an
    /// entry is part of the entry's unit).
    fn after_empty(
        &mut self,
        indent: usize,
        slot: Option<(usize, &str)>,
        depth: usize,
    ) -> Option<Value> {
        if self.eof() {
            return Some(Value::Null);
        }
        let col = self.col();
        // A sequence at the key's column belongs to the key (`block_node` reads it too).
        if col > indent || (col == indent && slot.is_some() && self.at_entry()) {
            return match slot {
                Some((index, key)) => self.unit(Kind::Node, index, Some(key), depth, |l| {
                    l.block_node(col, depth)
                }),
                None => self.block_node(col, depth),
            };
        }
        Some(Value::Null)
    }

    /// A block sequence whose entries start at column `indent`; `pos` is at the first `-`.
    fn sequence(&mut self, indent: usize, depth: usize) -> Option<Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        let base = self.items.len();
        loop {
            let index = self.items.len() - base;
            let item = self.unit(Kind::Item, index, None, depth + 1, |l| {
                l.pos += 1;
                l.entry(indent, depth + 1)
            })?;
            self.items.push(item);
            if self.eof() || self.col() < indent {
                break;
            }
            if self.col() > indent {
                return None;
            }
            if !self.at_entry() {
                break;
            }
        }
        Some(self.take_items(base))
    }

    /// The node of a sequence entry; `pos` is just after its `-`.
    fn entry(&mut self, indent: usize, depth: usize) -> Option<Value> {
        self.skip_spaces();
        match self.peek() {
            0 | b'\n' | b'#' => {
                self.end_node()?;
                self.after_empty(indent, None, depth)
            }
            _ => self.inline_node(indent, depth),
        }
    }

    /// A node starting after `- ` on the line of its entry, in the sequence at `parent`: a
    /// compact sequence or mapping, a literal block, a flow collection or a scalar.
    fn inline_node(&mut self, parent: usize, depth: usize) -> Option<Value> {
        let (start, col) = (self.pos, self.col());
        match self.peek() {
            b'-' if self.at_entry() => self.sequence(col, depth),
            b'|' => self.literal(parent),
            b'[' | b'{' => {
                let v = self.flow(depth)?;
                self.end_node()?;
                Some(v)
            }
            b'"' | b'\'' => {
                let s = self.quoted()?;
                if self.peek() == b':' && self.blank_at(self.pos + 1) {
                    self.compact_mapping(start, col, s, depth)
                } else {
                    self.end_node()?;
                    Some(Value::String(s.into_owned()))
                }
            }
            _ => {
                let (text, colon) = self.plain_block()?;
                if colon {
                    let key = plain_key(text)?;
                    self.compact_mapping(start, col, key, depth)
                } else {
                    let v = plain_value(text)?;
                    self.end_node()?;
                    Some(v)
                }
            }
        }
    }

    /// A mapping whose first key (read from `start`) sits on the line of a sequence entry; `pos`
    /// is at the `:` after the key.
    fn compact_mapping(
        &mut self,
        start: usize,
        col: usize,
        key: Cow<'a, str>,
        depth: usize,
    ) -> Option<Value> {
        if self.pos - start > MAX_KEY_LEN {
            return None;
        }
        self.pos += 1;
        self.mapping(col, key, depth)
    }

    /// A block mapping at column `indent` whose first key was read; `pos` is just after its `:`.
    fn mapping(&mut self, indent: usize, first: Cow<'a, str>, depth: usize) -> Option<Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        let base = self.entries.len();
        let mut key = first;
        loop {
            let slot = (self.entries.len() - base, key.as_ref());
            let v = self.map_value(indent, slot, depth + 1)?;
            self.entries.push((key, v));
            if self.eof() || self.col() < indent {
                break;
            }
            if self.col() > indent {
                return None;
            }
            key = self.key()?;
        }
        self.take_entries(base)
    }

    /// A mapping key and its `:`; `pos` ends just after the `:`.
    fn key(&mut self) -> Option<Cow<'a, str>> {
        let start = self.pos;
        let key = match self.peek() {
            b'"' | b'\'' => {
                let key = self.quoted()?;
                let colon = self.peek() == b':' && self.blank_at(self.pos + 1);
                if self.pos - start > MAX_KEY_LEN || !colon {
                    return None;
                }
                key
            }
            // `plain_block` stops at a `:` followed by a blank, and `plain_key` refuses keys
            // longer than `MAX_KEY_LEN`.
            _ => match self.plain_block()? {
                (text, true) => plain_key(text)?,
                (_, false) => return None,
            },
        };
        self.pos += 1;
        Some(key)
    }

    /// The value after `key:` in the block mapping at `indent`, at `slot` (index, key) of it.
    fn map_value(&mut self, indent: usize, slot: (usize, &str), depth: usize) -> Option<Value> {
        self.skip_spaces();
        match self.peek() {
            0 | b'\n' | b'#' => {
                self.end_node()?;
                self.after_empty(indent, Some(slot), depth)
            }
            b'|' => self.literal(indent),
            b'[' | b'{' => self.unit(Kind::Flow, slot.0, Some(slot.1), depth, |l| {
                let v = l.flow(depth)?;
                l.end_node()?;
                Some(v)
            }),
            b'"' | b'\'' => {
                let s = self.quoted()?;
                self.end_node()?;
                Some(Value::String(s.into_owned()))
            }
            _ => match self.plain_block()? {
                (_, true) => None,
                (text, false) => {
                    let v = plain_value(text)?;
                    self.end_node()?;
                    Some(v)
                }
            },
        }
    }

    /// The items pushed since `base`, as an array.
    fn take_items(&mut self, base: usize) -> Value {
        Value::Array(self.items.split_off(base))
    }

    /// The entries pushed since `base`, as an object; `None` on a duplicate key.
    fn take_entries(&mut self, base: usize) -> Option<Value> {
        self.shapes
            .mapping(&mut self.entries, base)
            .map(Value::Object)
    }

    /// A single-line plain scalar in block context, from `pos`. Returns its text and whether it
    /// ends at a `:` followed by a blank (a key; `pos` at the `:`), else `pos` ends after the text.
    fn plain_block(&mut self) -> Option<(&'a str, bool)> {
        let start = self.pos;
        if !plain_start(self.peek(), self.at(start + 1)) {
            return None;
        }
        let rest = self.b.get(start..)?;
        let mut i = 0;
        let (stop, colon) = loop {
            let j = find_stop(rest, i);
            match rest.get(j) {
                Some(b':') if matches!(rest.get(j + 1), None | Some(b' ' | b'\n')) => {
                    break (j, true)
                }
                Some(b'#') if j > 0 && rest.get(j - 1) == Some(&b' ') => break (j, false),
                Some(b'\n') | None => break (j, false),
                _ => i = j + 1,
            }
        };
        let mut end = start + stop;
        if colon {
            // A key ends at its `:` (a space before it would make it a different text).
            if end > start && self.at(end - 1) == b' ' {
                return None;
            }
        } else {
            while end > start && self.at(end - 1) == b' ' {
                end -= 1;
            }
        }
        self.pos = if colon { start + stop } else { end };
        Some((self.src.get(start..end)?, colon))
    }

    /// Index of the first byte at or after `start` that is one of `stops`.
    fn find_from(&self, start: usize, stops: [u8; 3]) -> Option<usize> {
        let i = find_any(self.b, start, stops);
        (i < self.b.len()).then_some(i)
    }

    /// A quoted scalar on one line; `pos` ends just after the closing quote.
    fn quoted(&mut self) -> Option<Cow<'a, str>> {
        let q = self.peek();
        self.pos += 1;
        if q == b'\'' {
            self.single_quoted()
        } else {
            self.double_quoted()
        }
    }

    fn single_quoted(&mut self) -> Option<Cow<'a, str>> {
        let mut out: Option<String> = None;
        loop {
            let start = self.pos;
            let end = self.find_from(start, [b'\'', b'\n', b'\n'])?;
            if self.at(end) != b'\'' {
                return None;
            }
            let part = self.src.get(start..end)?;
            if self.at(end + 1) == b'\'' {
                let out = out.get_or_insert_with(String::new);
                out.push_str(part);
                out.push('\'');
                self.pos = end + 2;
            } else {
                self.pos = end + 1;
                return Some(match out {
                    None => Cow::Borrowed(part),
                    Some(mut out) => {
                        out.push_str(part);
                        Cow::Owned(out)
                    }
                });
            }
        }
    }

    fn double_quoted(&mut self) -> Option<Cow<'a, str>> {
        let mut out: Option<String> = None;
        loop {
            let start = self.pos;
            let end = self.find_from(start, [b'"', b'\\', b'\n'])?;
            let part = self.src.get(start..end)?;
            self.pos = end + 1;
            match self.at(end) {
                b'"' => {
                    return Some(match out {
                        None => Cow::Borrowed(part),
                        Some(mut out) => {
                            out.push_str(part);
                            Cow::Owned(out)
                        }
                    })
                }
                b'\\' => {
                    let c = self.escape()?;
                    let out = out.get_or_insert_with(String::new);
                    out.push_str(part);
                    out.push(c);
                }
                _ => return None,
            }
        }
    }

    /// The character of the escape sequence after a `\` (go-yaml's set; `\/` is not one).
    fn escape(&mut self) -> Option<char> {
        let c = self.peek();
        self.pos += 1;
        Some(match c {
            b'0' => '\0',
            b'a' => '\x07',
            b'b' => '\x08',
            b't' => '\t',
            b'n' => '\n',
            b'v' => '\x0b',
            b'f' => '\x0c',
            b'r' => '\r',
            b'e' => '\x1b',
            b' ' => ' ',
            b'"' => '"',
            b'\\' => '\\',
            b'N' => '\u{85}',
            b'_' => '\u{a0}',
            b'L' => '\u{2028}',
            b'P' => '\u{2029}',
            b'x' => self.hex(2)?,
            b'u' => self.hex(4)?,
            b'U' => self.hex(8)?,
            _ => return None,
        })
    }

    /// `n` hexadecimal digits as a character.
    fn hex(&mut self, n: usize) -> Option<char> {
        let digits = self.src.get(self.pos..self.pos + n)?;
        if !digits.bytes().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        self.pos += n;
        char::from_u32(u32::from_str_radix(digits, 16).ok()?)
    }

    /// A literal block scalar (`|`, `|-`, `|+`) in the block collection at `parent`; `pos` is at
    /// the `|`.
    fn literal(&mut self, parent: usize) -> Option<Value> {
        self.pos += 1;
        let chomp = match self.peek() {
            b'-' => Chomp::Strip,
            b'+' => Chomp::Keep,
            _ => Chomp::Clip,
        };
        if chomp != Chomp::Clip {
            self.pos += 1;
        }
        self.finish_line()?;
        let (indent, leading) = self.literal_indent(parent)?;
        let mut out = "\n".repeat(leading);
        let at_eof = self.literal_lines(indent, chomp, &mut out)?;
        if !at_eof {
            self.skip_to_content()?;
        }
        Some(Value::String(out))
    }

    /// Skip the empty lines before the first content line of a literal block and return its
    /// indentation and the number of lines skipped; `pos` ends at the content line's start.
    fn literal_indent(&mut self, parent: usize) -> Option<(usize, usize)> {
        let (mut leading, mut widest) = (0, 0);
        loop {
            let start = self.pos;
            self.skip_spaces();
            let n = self.pos - start;
            match self.peek() {
                0 => return None,
                b'\n' => {
                    widest = widest.max(n);
                    leading += 1;
                    self.pos += 1;
                }
                _ => {
                    self.pos = start;
                    return (n > parent && widest <= n).then_some((n, leading));
                }
            }
        }
    }

    /// The lines of a literal block at `indent`, chomped into `out`; `pos` starts at the first
    /// content line and ends at the start of the first line after the block. Returns whether the
    /// block ended at the end of a text without a final line break.
    fn literal_lines(&mut self, indent: usize, chomp: Chomp, out: &mut String) -> Option<bool> {
        let mut first = true;
        loop {
            let start = self.pos + indent;
            let end = match self.b.get(start..)?.iter().position(|&c| c == b'\n') {
                Some(n) => start + n,
                None => self.b.len(),
            };
            if !first {
                out.push('\n');
            }
            first = false;
            out.push_str(self.src.get(start..end)?);
            if end == self.b.len() {
                // go-yaml adds no line break that the text lacks.
                self.pos = end;
                self.line_start = end;
                return Some(true);
            }
            self.pos = end + 1;
            let empty = self.literal_empty_lines(indent)?;
            let more = !self.eof() && self.pos - self.line_start >= indent;
            if more {
                out.extend(std::iter::repeat_n('\n', empty));
                self.pos = self.line_start;
                continue;
            }
            self.pos = self.line_start;
            match chomp {
                Chomp::Strip => {}
                Chomp::Clip => out.push('\n'),
                Chomp::Keep => out.extend(std::iter::repeat_n('\n', empty + 1)),
            }
            return Some(false);
        }
    }

    /// Skip the empty lines after a literal block's content line; `line_start` ends at the next
    /// non-empty line (or the end of the text), `pos` after its leading spaces. Gives up on
    /// whitespace-only lines longer than the indentation and on trailing spaces at the end.
    fn literal_empty_lines(&mut self, indent: usize) -> Option<usize> {
        let mut empty = 0;
        loop {
            self.line_start = self.pos;
            self.skip_spaces();
            let n = self.pos - self.line_start;
            match self.peek() {
                b'\n' if n <= indent => {
                    empty += 1;
                    self.pos += 1;
                }
                b'\n' => return None,
                0 if n > 0 => return None,
                _ => return Some(empty),
            }
        }
    }

    /// A flow collection; `pos` is at its `[` or `{`. Indentation does not matter inside flow
    /// collections (go-yaml checks none there).
    fn flow(&mut self, depth: usize) -> Option<Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        let open = self.peek();
        self.pos += 1;
        if open == b'[' {
            self.flow_sequence(depth)
        } else {
            self.flow_mapping(depth)
        }
    }

    fn flow_sequence(&mut self, depth: usize) -> Option<Value> {
        let base = self.items.len();
        loop {
            self.flow_skip()?;
            if self.peek() == b']' {
                break;
            }
            let item = self.flow_node(depth + 1)?;
            self.items.push(item);
            self.flow_skip()?;
            match self.peek() {
                b',' => self.pos += 1,
                b']' => break,
                _ => return None,
            }
        }
        self.pos += 1;
        Some(self.take_items(base))
    }

    fn flow_mapping(&mut self, depth: usize) -> Option<Value> {
        let base = self.entries.len();
        loop {
            self.flow_skip()?;
            if self.peek() == b'}' {
                break;
            }
            let key = self.flow_key()?;
            self.flow_skip()?;
            let v = self.flow_node(depth + 1)?;
            self.entries.push((key, v));
            self.flow_skip()?;
            match self.peek() {
                b',' => self.pos += 1,
                b'}' => break,
                _ => return None,
            }
        }
        self.pos += 1;
        self.take_entries(base)
    }

    /// A key in a flow mapping and its `:` (followed by a space or line break).
    fn flow_key(&mut self) -> Option<Cow<'a, str>> {
        let start = self.pos;
        let key = match self.peek() {
            b'"' | b'\'' => self.quoted()?,
            _ => plain_key(self.plain_flow()?)?,
        };
        let after = self.at(self.pos + 1);
        if self.pos - start > MAX_KEY_LEN || self.peek() != b':' || !matches!(after, b' ' | b'\n') {
            return None;
        }
        self.pos += 1;
        Some(key)
    }

    /// A node inside a flow collection: a nested collection or a scalar.
    fn flow_node(&mut self, depth: usize) -> Option<Value> {
        match self.peek() {
            b'[' | b'{' => self.flow(depth),
            b'"' | b'\'' => self.quoted().map(|s| Value::String(s.into_owned())),
            _ => plain_value(self.plain_flow()?),
        }
    }

    /// A single-line plain scalar in flow context; `pos` ends after its text.
    fn plain_flow(&mut self) -> Option<&'a str> {
        let start = self.pos;
        let first = self.peek();
        let ok = match first {
            b'-' => self.at(start + 1).is_ascii_alphanumeric(),
            b'?' | b':' => false,
            _ => plain_start(first, self.at(start + 1)),
        };
        if !ok {
            return None;
        }
        let (mut p, mut end) = (start, start);
        loop {
            match self.at(p) {
                0 | b'\n' | b',' | b'[' | b']' | b'{' | b'}' => break,
                // go-yaml ends the scalar there; `?` then starts a key.
                b'?' => return None,
                b':' if matches!(
                    self.at(p + 1),
                    0 | b' ' | b'\n' | b',' | b'[' | b']' | b'{' | b'}'
                ) =>
                {
                    break
                }
                b' ' if self.at(p + 1) == b'#' => break,
                b' ' => {}
                _ => end = p + 1,
            }
            p += 1;
        }
        self.pos = end;
        self.src.get(start..end)
    }

    /// Skip spaces, comments and line breaks between flow tokens; gives up at the end of the text
    /// and on document markers.
    fn flow_skip(&mut self) -> Option<()> {
        loop {
            match self.peek() {
                b' ' => self.pos += 1,
                b'#' if matches!(self.at(self.pos.wrapping_sub(1)), b' ' | b'\n') => {
                    while !matches!(self.peek(), b'\n' | 0) {
                        self.pos += 1;
                    }
                }
                b'\n' => self.flow_line()?,
                0 | b'#' => return None,
                _ => return Some(()),
            }
        }
    }

    /// Move past a line break inside a flow collection; gives up on a document marker.
    fn flow_line(&mut self) -> Option<()> {
        self.pos += 1;
        self.line_start = self.pos;
        let rest = self.b.get(self.pos..).unwrap_or_default();
        if rest.starts_with(b"---") || rest.starts_with(b"...") {
            return None;
        }
        self.skip_spaces();
        Some(())
    }
}

/// The index of the first byte other than a space in `b` from `from` on (`b.len()` if none).
fn skip_spaces(b: &[u8], from: usize) -> usize {
    let mut i = from;
    while let Some(word) = b.get(i..i + 8).and_then(|w| <[u8; 8]>::try_from(w).ok()) {
        let other = u64::from_le_bytes(word) ^ 0x2020_2020_2020_2020;
        if other != 0 {
            return i + (other.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while b.get(i) == Some(&b' ') {
        i += 1;
    }
    i
}

/// The index of the first `:`, `#` or line break in `b` from `from` on (`b.len()` if none).
fn find_stop(b: &[u8], from: usize) -> usize {
    find_any(b, from, [b':', b'#', b'\n'])
}

/// The index of the first byte of `b` from `from` on that is one of `stops` (`b.len()` if
/// none), eight bytes at a time.
#[inline(always)]
fn find_any(b: &[u8], from: usize, stops: [u8; 3]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    /// High bit of each byte of `x` equal to `c` (exact for the lowest one).
    fn eq(x: u64, c: u8) -> u64 {
        let y = x ^ (ONES * u64::from(c));
        y.wrapping_sub(ONES) & !y & (ONES << 7)
    }
    let [s0, s1, s2] = stops;
    let mut i = from;
    while let Some(word) = b.get(i..i + 8).and_then(|w| <[u8; 8]>::try_from(w).ok()) {
        let x = u64::from_le_bytes(word);
        let hits = eq(x, s0) | eq(x, s1) | eq(x, s2);
        if hits != 0 {
            return i + (hits.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while let Some(&c) = b.get(i) {
        if c == s0 || c == s1 || c == s2 {
            return i;
        }
        i += 1;
    }
    b.len()
}

/// Whether a plain scalar may start with `c` followed by `next` (block context rules; flow
/// indicators excluded as well).
fn plain_start(c: u8, next: u8) -> bool {
    match c {
        b'-' | b'?' | b':' => !matches!(next, b' ' | b'\n' | 0),
        b',' | b'[' | b']' | b'{' | b'}' | b'#' | b'&' | b'*' | b'!' | b'|' | b'>' | b'\''
        | b'"' | b'%' | b'@' | b'`' | b' ' | b'\n' | 0 => false,
        _ => true,
    }
}

/// The value of a plain scalar; `None` for NaN and infinities.
fn plain_value(text: &str) -> Option<Value> {
    if !may_resolve(text) {
        return Some(Value::String(text.to_owned()));
    }
    resolved_json(resolve_plain(text), text).ok()
}

/// Whether [`resolve_plain`] may read `text` as something other than a string: it starts with
/// a byte that starts a YAML 1.1 word (`yes`, `null`, `.inf`, ...), a number or a timestamp, or
/// is empty. Texts that start otherwise are strings without its steps.
fn may_resolve(text: &str) -> bool {
    text.as_bytes().first().is_none_or(|c| {
        matches!(
            c,
            b'y' | b'Y'
                | b'n'
                | b'N'
                | b't'
                | b'T'
                | b'f'
                | b'F'
                | b'o'
                | b'O'
                | b'~'
                | b'.'
                | b'+'
                | b'-'
                | b'0'..=b'9'
        )
    })
}

/// The JSON name of a plain key; `None` for merge keys, null keys and keys JSON cannot name.
fn plain_key(text: &str) -> Option<Cow<'_, str>> {
    if text == "<<" || text.len() > MAX_KEY_LEN {
        return None;
    }
    if !may_resolve(text) {
        return Some(Cow::Borrowed(text));
    }
    match resolve_plain(text) {
        Resolved::Str | Resolved::Timestamp => Some(Cow::Borrowed(text)),
        r => key_string(resolved_json(r, text).ok()?)
            .ok()
            .map(Cow::Owned),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plain scalar that [`may_resolve`] lets through as a string is one that go-yaml's
    /// resolution reads as a string, whatever follows its first byte.
    #[test]
    fn texts_taken_as_strings_resolve_as_strings() {
        for c in (0x20u8..0x7f).map(char::from).chain(['é', '√']) {
            for rest in [
                "",
                "es",
                "ull",
                "rue",
                "x",
                "1",
                ".5",
                "001-01-01",
                "inf",
                "_0",
            ] {
                let text = format!("{c}{rest}");
                if !may_resolve(&text) {
                    assert_eq!(resolve_plain(&text), Resolved::Str, "{text:?}");
                }
            }
        }
        assert!(may_resolve(""));
    }

    fn json(v: &Value) -> String {
        serde_json::to_string(v).expect("serialise")
    }

    /// Mappings built from a remembered shape are the mappings insertion builds: the same keys
    /// in the same order with their own values, duplicate keys still refused, whether the shape
    /// was seen before, pushed out of its slots by many others, or over the cache's budget.
    #[test]
    fn mappings_of_remembered_shapes_are_those_insertion_builds() {
        let texts: Vec<String> = (0..3000)
            .map(|i| match i % 4 {
                0 => format!("b: {i}\na: [x, {{k{i}: v, z: 1}}]\n"),
                1 => format!("a: {i}\nb:\n  c: {{z: 1, k{}: v}}\n", i % 50),
                2 if i % 3 == 0 => (0..40).map(|j| format!("k{}x{j}: {i}\n", i % 7)).collect(),
                2 => (0..30).map(|j| format!("k{i}x{j}: {i}\n")).collect(),
                _ => format!("- {{a: 1, b: 2}}\n- c: 3\n  a: '{i}'\n- b: {i}\n  c: 2\n"),
            })
            .collect();
        for round in 0..2 {
            for text in &texts {
                let fast = load(text, &mut Shapes::new(), None).expect("in the subset");
                let cached = from_str(text).expect("in the subset");
                let slow = super::super::parse::from_str(text).expect("valid");
                assert_eq!(json(&cached), json(&slow), "round {round}: {text}");
                assert_eq!(json(&fast), json(&slow), "round {round}: {text}");
            }
            for dup in [
                "b: 1\na: 2\nb: 3\n",
                "- {a: 1, b: 2, a: 3}\n",
                "a: 1\na: 2\n",
            ] {
                assert_eq!(from_str(dup), None, "{dup}");
            }
        }
        SHAPES.with_borrow(|s| {
            assert!(s.held.0 <= SHAPES_BUDGET.0 && s.held.1 <= SHAPES_BUDGET.1);
            let (keys, bytes) = s.slots.iter().flatten().fold((0, 0), |(k, b), shape| {
                (k + shape.proto.len(), b + shape.bytes)
            });
            assert_eq!(
                (keys, bytes),
                s.held,
                "the budget counts what the slots hold"
            );
            assert!(
                keys + SHAPE_MAX_KEYS > SHAPES_BUDGET.0,
                "the budget was reached"
            );
        });
    }
}
