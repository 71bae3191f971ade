//! YAML → JSON exactly as sigs.k8s.io/yaml `YAMLToJSON` does it.
//!
//! 1. go-yaml v2's parser ([`super::events`] over [`super::scan`]) builds the node tree of the
//!    *first* document; go-yaml never reads past that document's end, so the rest of the text is
//!    ignored (it is parsed here only to report it, see [`Ignored`]).
//! 2. go-yaml's decoder turns the nodes into Go values, as `yaml.Unmarshal` into an
//!    `interface{}` does: YAML 1.1 resolution, tags, anchors and aliases (with go-yaml's guard
//!    against alias bombs), merge keys in document order, maps keyed by Go values where a
//!    repeated key replaces the earlier value (non-strict `yaml.Unmarshal`).
//! 3. sigs.k8s.io/yaml converts map keys to strings (`convertToJSONableObject`) and
//!    `encoding/json` refuses NaN and infinities.
//!
//! Errors carry go-yaml's messages (`yaml: line L: ...`, line numbering included).

use std::collections::HashMap;

use serde_json::{Map, Number, Value};

use super::events::{Event, EventKind, Parser};
use super::resolve::{resolve_scalar, Resolved};
use super::scan::{ScalarStyle, ScanError};
use super::{Result, YamlError};
use crate::go::float::{format_g32, format_g64};

/// Deepest collection nesting accepted. go-yaml allows 10,000 flow levels and 10,000
/// indentation levels; every consumer of the tree here recurses, so documents are kept to a
/// depth that is safe on small thread stacks.
pub(crate) const MAX_DEPTH: usize = 512;
/// The YAML core tag prefix that `!!` stands for.
const CORE: &[u8] = b"tag:yaml.org,2002:";

/// A loaded document and what go-yaml left unread.
pub(crate) struct Loaded {
    /// The JSON tree of the first document.
    pub value: Value,
    /// Text after the first document that go-yaml ignores, if any.
    pub ignored: Option<Ignored>,
}

/// Text after the end of the first document that go-yaml does not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ignored {
    /// 1-based line where the ignored content starts.
    pub line: usize,
    /// go-yaml's error on that text when it is not valid YAML either.
    pub error: Option<YamlError>,
}

/// Parse `text` into the JSON tree of its first document; see [`crate::yaml::from_str`].
pub(crate) fn from_str(text: &str) -> Result<Value> {
    load(text).map(|l| l.value)
}

/// Parse `text` and also report text after the first document.
pub(crate) fn load(text: &str) -> Result<Loaded> {
    let mut parser = Parser::new(text);
    let Some(tree) = build(&mut parser)? else {
        return Ok(Loaded {
            value: Value::Null,
            ignored: None,
        });
    };
    let go = Decoder::new(&tree).document()?;
    let value = to_json(go)?;
    let ignored = rest_of_stream(&mut parser);
    Ok(Loaded { value, ignored })
}

fn yaml_error(e: &ScanError) -> YamlError {
    e.to_error()
}

/// go-yaml's `failf`: `yaml: <message>`, no line.
fn fail(msg: impl std::fmt::Display) -> YamlError {
    YamlError::Decode(msg.to_string())
}

// -------------------------------------------------------------------------------------------
// Node tree (go-yaml's `parser.parse`)

/// A node of the first document.
enum Node {
    Scalar {
        value: String,
        tag: Vec<u8>,
        implicit: bool,
    },
    Sequence(Vec<usize>),
    Mapping(Vec<usize>),
    Alias {
        name: String,
        target: usize,
    },
}

/// The nodes of a document; the root is the last node completed at depth 0.
struct Tree {
    nodes: Vec<Node>,
    root: usize,
    /// Nodes that carry an anchor (only they can be the target of an alias).
    anchored: Vec<bool>,
}

fn next_event(parser: &mut Parser<'_>) -> Result<Event> {
    match parser.parse() {
        Ok(Some(e)) => Ok(e),
        Ok(None) => Err(fail(
            "attempted to go past the end of stream; corrupted value?",
        )),
        Err(e) => Err(yaml_error(&e)),
    }
}

/// The node tree of the first document, or `None` for a stream without documents.
fn build(parser: &mut Parser<'_>) -> Result<Option<Tree>> {
    let ev = next_event(parser)?;
    if ev.kind != EventKind::StreamStart {
        return Err(fail("expected STREAM-START event"));
    }
    match next_event(parser)?.kind {
        EventKind::StreamEnd => return Ok(None),
        EventKind::DocumentStart => {}
        _ => return Err(fail("expected DOCUMENT-START event")),
    }
    let mut tree = Tree {
        nodes: Vec::new(),
        root: 0,
        anchored: Vec::new(),
    };
    let mut anchors: HashMap<String, usize> = HashMap::new();
    let mut open: Vec<usize> = Vec::new();
    loop {
        let ev = next_event(parser)?;
        let id = tree.nodes.len();
        let (node, anchor, opens) = match ev.kind {
            EventKind::Scalar {
                anchor,
                tag,
                value,
                implicit,
                style: _,
            } => {
                let value = String::from_utf8(value)
                    .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
                (
                    Node::Scalar {
                        value,
                        tag,
                        implicit,
                    },
                    anchor,
                    false,
                )
            }
            EventKind::SequenceStart { anchor } => (Node::Sequence(Vec::new()), anchor, true),
            EventKind::MappingStart { anchor } => (Node::Mapping(Vec::new()), anchor, true),
            EventKind::Alias { anchor } => {
                let name = String::from_utf8_lossy(&anchor).into_owned();
                let Some(&target) = anchors.get(&name) else {
                    return Err(fail(format!("unknown anchor '{name}' referenced")));
                };
                (Node::Alias { name, target }, None, false)
            }
            EventKind::SequenceEnd | EventKind::MappingEnd => {
                open.pop();
                if open.is_empty() {
                    break;
                }
                continue;
            }
            _ => return Err(fail("expected a node event")),
        };
        tree.nodes.push(node);
        tree.anchored.push(anchor.is_some());
        if let Some(a) = anchor {
            anchors.insert(String::from_utf8_lossy(&a).into_owned(), id);
        }
        if let Some(&parent) = open.last() {
            if let Node::Sequence(c) | Node::Mapping(c) = &mut tree.nodes[parent] {
                c.push(id);
            }
        } else {
            tree.root = id;
        }
        if opens {
            open.push(id);
            if open.len() > MAX_DEPTH {
                return Err(fail(format!("exceeded max depth of {MAX_DEPTH}")));
            }
        } else if open.is_empty() {
            break;
        }
    }
    if next_event(parser)?.kind != EventKind::DocumentEnd {
        return Err(fail("expected DOCUMENT-END event"));
    }
    Ok(Some(tree))
}

/// What follows the first document: `None` when only empty documents (and comments,
/// directives, markers) follow, else where the ignored content starts.
fn rest_of_stream(parser: &mut Parser<'_>) -> Option<Ignored> {
    let mut in_document = false;
    let mut empty_seen = false;
    loop {
        let ev = match parser.parse() {
            Ok(Some(ev)) => ev,
            Ok(None) => return None,
            Err(e) => {
                return Some(Ignored {
                    line: e.problem_mark.line.max(e.context_mark.line) + 1,
                    error: Some(e.to_error()),
                })
            }
        };
        let empty_scalar = matches!(
            &ev.kind,
            EventKind::Scalar { anchor: None, tag, value, style: ScalarStyle::Plain, .. }
                if tag.is_empty() && value.is_empty()
        );
        match ev.kind {
            EventKind::StreamEnd => return None,
            EventKind::DocumentStart => {
                in_document = true;
                empty_seen = false;
            }
            EventKind::DocumentEnd => in_document = false,
            _ if in_document && empty_scalar && !empty_seen => empty_seen = true,
            _ => {
                return Some(Ignored {
                    line: ev.start.line + 1,
                    error: None,
                })
            }
        }
    }
}

// -------------------------------------------------------------------------------------------
// Go values (go-yaml's decoder into `interface{}`)

/// A value as go-yaml decodes it into an `interface{}`.
#[derive(Clone, Debug)]
enum Go {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(String),
    Seq(Vec<Go>),
    Map(GoMap),
}

/// A map key: a hashable Go value.
#[derive(Clone, Debug)]
enum GoKey {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(String),
}

/// The hashable identity of a key (`None` for NaN, which equals nothing).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum KeyId {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(u64),
    Str(String),
}

impl GoKey {
    /// Go's `==` on two keys (NaN equals nothing, -0 equals 0).
    fn same(&self, other: &GoKey) -> bool {
        match (self, other) {
            (GoKey::Null, GoKey::Null) => true,
            (GoKey::Bool(a), GoKey::Bool(b)) => a == b,
            (GoKey::Int(a), GoKey::Int(b)) => a == b,
            (GoKey::Uint(a), GoKey::Uint(b)) => a == b,
            #[allow(clippy::float_cmp)]
            (GoKey::Float(a), GoKey::Float(b)) => a == b,
            (GoKey::Str(a), GoKey::Str(b)) => a == b,
            _ => false,
        }
    }

    fn id(&self) -> Option<KeyId> {
        Some(match self {
            GoKey::Null => KeyId::Null,
            GoKey::Bool(b) => KeyId::Bool(*b),
            GoKey::Int(i) => KeyId::Int(*i),
            GoKey::Uint(u) => KeyId::Uint(*u),
            GoKey::Float(f) if f.is_nan() => return None,
            // -0 and 0 are the same key in Go.
            GoKey::Float(f) => KeyId::Float((f + 0.0).to_bits()),
            GoKey::Str(s) => KeyId::Str(s.clone()),
        })
    }
}

/// A Go map in insertion order (the order only decides our key order; Go's JSON is sorted).
#[derive(Clone, Debug, Default)]
struct GoMap {
    entries: Vec<(GoKey, Go)>,
    /// Key positions, once the map is too large for linear search (boxed: the value sits in
    /// every frame of the recursive decoder).
    #[allow(clippy::box_collection)]
    index: Option<Box<HashMap<KeyId, usize>>>,
}

/// Maps up to this size are searched linearly.
const LINEAR: usize = 16;

impl GoMap {
    /// `out.SetMapIndex(k, v)`: replace the value of an equal key, else add the key.
    fn set(&mut self, k: GoKey, v: Go) {
        let Some(id) = k.id() else {
            // NaN: never equal to a key already there.
            self.entries.push((k, v));
            return;
        };
        let found = match &self.index {
            Some(index) => index.get(&id).copied(),
            None => self.entries.iter().position(|(e, _)| e.same(&k)),
        };
        match found {
            Some(i) => self.entries[i].1 = v,
            None => {
                if let Some(index) = &mut self.index {
                    index.insert(id, self.entries.len());
                }
                self.entries.push((k, v));
                if self.index.is_none() && self.entries.len() > LINEAR {
                    let index = self
                        .entries
                        .iter()
                        .enumerate()
                        .filter_map(|(i, (e, _))| e.id().map(|id| (id, i)))
                        .collect();
                    self.index = Some(Box::new(index));
                }
            }
        }
    }
}

/// go-yaml's `allowedAliasRatio`.
fn allowed_alias_ratio(decoded: usize) -> f64 {
    const LOW: f64 = 400_000.0;
    const HIGH: f64 = 4_000_000.0;
    let d = decoded as f64;
    if d <= LOW {
        0.99
    } else if d >= HIGH {
        0.10
    } else {
        0.99 - 0.89 * ((d - LOW) / (HIGH - LOW))
    }
}

/// go-yaml's decoder over a [`Tree`], into [`Go`] values.
struct Decoder<'t> {
    tree: &'t Tree,
    /// Decoded value and decode count of anchored nodes (what an alias expands to).
    memo: HashMap<usize, (Go, usize)>,
    /// Collection nodes being decoded (an alias to one of them contains itself).
    active: Vec<bool>,
    decode_count: usize,
    alias_count: usize,
    /// Current recursion depth (alias expansions included).
    depth: usize,
}

impl<'t> Decoder<'t> {
    fn new(tree: &'t Tree) -> Self {
        Decoder {
            tree,
            memo: HashMap::new(),
            active: vec![false; tree.nodes.len()],
            decode_count: 0,
            alias_count: 0,
            depth: 0,
        }
    }

    /// The document node, then its root.
    fn document(&mut self) -> Result<Go> {
        self.count(1, false)?;
        self.value(self.tree.root, false)
    }

    /// Count `n` decode steps (`aliased`: inside an alias expansion) and apply go-yaml's
    /// excessive-aliasing check. Within a run of aliased steps the ratio only grows and the
    /// allowance only shrinks, so checking once after a run decides as go-yaml's per-step check.
    fn count(&mut self, n: usize, aliased: bool) -> Result<()> {
        self.decode_count += n;
        if aliased {
            self.alias_count += n;
        }
        if self.alias_count > 100
            && self.decode_count > 1000
            && self.alias_count as f64 / self.decode_count as f64
                > allowed_alias_ratio(self.decode_count)
        {
            return Err(fail("document contains excessive aliasing"));
        }
        Ok(())
    }

    /// `d.unmarshal(n, out)` into an `interface{}`. The recursive functions keep their frames
    /// small (errors and scalars are built out of line) so that nesting up to [`MAX_DEPTH`] fits
    /// small thread stacks.
    fn value(&mut self, id: usize, aliased: bool) -> Result<Go> {
        let before = self.decode_count;
        self.count(1, aliased)?;
        let v = match &self.tree.nodes[id] {
            Node::Alias { .. } => return self.expand(id),
            Node::Scalar { .. } => scalar_node(&self.tree.nodes[id])?,
            Node::Sequence(_) => self.sequence(id, aliased)?,
            Node::Mapping(_) => {
                self.enter(id)?;
                let mut map = GoMap::default();
                self.fill_mapping(id, &mut map, aliased)?;
                self.leave(id);
                Go::Map(map)
            }
        };
        if self.tree.anchored[id] {
            self.remember(id, &v, before);
        }
        Ok(v)
    }

    #[inline(never)]
    fn remember(&mut self, id: usize, v: &Go, before: usize) {
        if !self.memo.contains_key(&id) {
            self.memo
                .insert(id, (v.clone(), self.decode_count - before));
        }
    }

    fn sequence(&mut self, id: usize, aliased: bool) -> Result<Go> {
        let tree = self.tree;
        let Node::Sequence(children) = &tree.nodes[id] else {
            return Ok(Go::Null);
        };
        self.enter(id)?;
        let mut items = Vec::with_capacity(children.len());
        for &c in children {
            items.push(self.value(c, aliased)?);
        }
        self.leave(id);
        Ok(Go::Seq(items))
    }

    fn enter(&mut self, id: usize) -> Result<()> {
        self.depth += 1;
        if self.depth > 2 * MAX_DEPTH {
            return Err(too_deep());
        }
        self.active[id] = true;
        Ok(())
    }

    fn leave(&mut self, id: usize) {
        self.depth -= 1;
        self.active[id] = false;
    }

    /// The value of alias node `id`, counted as aliased steps.
    fn expand(&mut self, id: usize) -> Result<Go> {
        let Node::Alias { target, .. } = self.tree.nodes[id] else {
            return Ok(Go::Null);
        };
        if self.active[target] {
            return Err(contains_itself(&self.tree.nodes[id]));
        }
        if let Some((v, size)) = self.memo.get(&target) {
            let (v, size) = (v.clone(), *size);
            self.count(size, true)?;
            return Ok(v);
        }
        // Not decoded yet (a merge sequence decodes its items last to first).
        self.value(target, true)
    }

    /// `d.mapping(n, out)` into an existing map: keys in document order, merges applied where
    /// they stand, a repeated key replacing the earlier value.
    fn fill_mapping(&mut self, id: usize, map: &mut GoMap, aliased: bool) -> Result<()> {
        let tree = self.tree;
        let Node::Mapping(children) = &tree.nodes[id] else {
            return Ok(());
        };
        for pair in children.chunks_exact(2) {
            let (k, v) = (pair[0], pair[1]);
            if is_merge(&tree.nodes[k]) {
                self.merge(v, map, aliased)?;
                continue;
            }
            let key = go_key(self.value(k, aliased)?)?;
            let value = self.value(v, aliased)?;
            map.set(key, value);
        }
        Ok(())
    }

    /// `d.merge(n, out)`.
    fn merge(&mut self, id: usize, map: &mut GoMap, aliased: bool) -> Result<()> {
        const WANT_MAP: &str = "map merge requires map or sequence of maps as the value";
        let tree = self.tree;
        match &tree.nodes[id] {
            Node::Mapping(_) => self.merge_one(id, map, aliased),
            Node::Alias { target, .. } => {
                if !matches!(tree.nodes[*target], Node::Mapping(_)) {
                    return Err(fail(WANT_MAP));
                }
                self.merge_one(id, map, aliased)
            }
            Node::Sequence(children) => {
                for &c in children.iter().rev() {
                    let ok = match &tree.nodes[c] {
                        Node::Alias { target, .. } => {
                            matches!(tree.nodes[*target], Node::Mapping(_))
                        }
                        Node::Mapping(_) => true,
                        _ => false,
                    };
                    if !ok {
                        return Err(fail(WANT_MAP));
                    }
                    self.merge_one(c, map, aliased)?;
                }
                Ok(())
            }
            Node::Scalar { .. } => Err(fail(WANT_MAP)),
        }
    }

    /// `d.unmarshal(n, out)` of a mapping node, or an alias to one, into an existing map.
    fn merge_one(&mut self, id: usize, map: &mut GoMap, aliased: bool) -> Result<()> {
        self.count(1, aliased)?;
        let tree = self.tree;
        match &tree.nodes[id] {
            Node::Alias { .. } => {
                if let Go::Map(m) = self.expand(id)? {
                    for (k, v) in m.entries {
                        map.set(k, v);
                    }
                }
                Ok(())
            }
            _ => {
                self.enter(id)?;
                self.fill_mapping(id, map, aliased)?;
                self.leave(id);
                Ok(())
            }
        }
    }
}

#[cold]
#[inline(never)]
fn too_deep() -> YamlError {
    fail(format!("exceeded max depth of {MAX_DEPTH}"))
}

#[cold]
#[inline(never)]
fn contains_itself(alias: &Node) -> YamlError {
    let name = match alias {
        Node::Alias { name, .. } => name.as_str(),
        _ => "",
    };
    fail(format!("anchor '{name}' value contains itself"))
}

#[inline(never)]
fn scalar_node(n: &Node) -> Result<Go> {
    match n {
        Node::Scalar {
            value,
            tag,
            implicit,
        } => scalar(value, tag, *implicit),
        _ => Ok(Go::Null),
    }
}

/// A decoded key as a map key; collections cannot be keys.
fn go_key(v: Go) -> Result<GoKey> {
    Ok(match v {
        Go::Null => GoKey::Null,
        Go::Bool(b) => GoKey::Bool(b),
        Go::Int(i) => GoKey::Int(i),
        Go::Uint(u) => GoKey::Uint(u),
        Go::Float(f) => GoKey::Float(f),
        Go::Str(s) => GoKey::Str(s),
        other @ (Go::Seq(_) | Go::Map(_)) => return Err(invalid_key(&other)),
    })
}

#[cold]
#[inline(never)]
fn invalid_key(v: &Go) -> YamlError {
    fail(format!("invalid map key: {}", go_sharp_v(v)))
}

/// go-yaml's `isMerge`: a `<<` scalar, plain or tagged `!!merge`.
fn is_merge(n: &Node) -> bool {
    matches!(n, Node::Scalar { value, tag, implicit }
        if value == "<<" && (*implicit || tag.strip_prefix(CORE) == Some(b"merge".as_slice())))
}

/// The short form of a tag for messages (`!!int`).
fn short_tag(tag: &[u8]) -> String {
    match tag.strip_prefix(CORE) {
        Some(rest) => format!("!!{}", String::from_utf8_lossy(rest)),
        None => String::from_utf8_lossy(tag).into_owned(),
    }
}

/// `d.scalar(n, out)` into an `interface{}`.
fn scalar(value: &str, tag: &[u8], implicit: bool) -> Result<Go> {
    if tag.is_empty() && !implicit {
        return Ok(Go::Str(value.to_string()));
    }
    let short = tag.strip_prefix(CORE);
    let resolvable = tag.is_empty()
        || matches!(
            short,
            Some(b"str" | b"bool" | b"int" | b"float" | b"null" | b"timestamp")
        );
    if !resolvable {
        if short == Some(b"binary") {
            return decode_binary(value).map(Go::Str);
        }
        return Ok(Go::Str(value.to_string()));
    }
    if short == Some(b"str") {
        return Ok(Go::Str(value.to_string()));
    }
    let timestamps = tag.is_empty() || short == Some(b"timestamp");
    let r = resolve_scalar(value, timestamps);
    let rtag: &[u8] = match r {
        Resolved::Null => b"null",
        Resolved::Bool(_) => b"bool",
        Resolved::Int(_) | Resolved::Uint(_) => b"int",
        Resolved::Float(_) => b"float",
        Resolved::Timestamp => b"timestamp",
        Resolved::Str => b"str",
    };
    if let Some(want) = short {
        if want != rtag {
            if want == b"float" {
                if let Resolved::Int(i) = r {
                    #[allow(clippy::cast_precision_loss)]
                    return Ok(Go::Float(i as f64));
                }
            }
            return Err(fail(format!(
                "cannot decode !!{} `{value}` as a {}",
                String::from_utf8_lossy(rtag),
                short_tag(tag)
            )));
        }
    }
    Ok(match r {
        Resolved::Null => Go::Null,
        Resolved::Bool(b) => Go::Bool(b),
        Resolved::Int(i) => Go::Int(i),
        Resolved::Uint(u) => Go::Uint(u),
        Resolved::Float(f) => Go::Float(f),
        Resolved::Timestamp | Resolved::Str => Go::Str(value.to_string()),
    })
}

/// A Go string of arbitrary bytes as `encoding/json` writes it: each byte that does not start
/// a valid UTF-8 sequence becomes U+FFFD.
fn go_string(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    let mut rest = bytes;
    while !rest.is_empty() {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                out.push_str(s);
                break;
            }
            Err(e) => {
                let (good, bad) = rest.split_at(e.valid_up_to());
                out.push_str(std::str::from_utf8(good).unwrap_or_default());
                out.push('\u{FFFD}');
                rest = &bad[1..];
            }
        }
    }
    out
}

/// `!!binary`: Go's `base64.StdEncoding.DecodeString` (line breaks ignored, padding required).
fn decode_binary(text: &str) -> Result<String> {
    let bad = || fail("!!binary value contains invalid base64 data");
    let clean: Vec<u8> = text
        .bytes()
        .filter(|b| !matches!(b, b'\r' | b'\n'))
        .collect();
    if !clean.len().is_multiple_of(4) {
        return Err(bad());
    }
    let mut out = Vec::with_capacity(clean.len() / 4 * 3);
    let chunks = clean.len() / 4;
    for (ci, chunk) in clean.chunks(4).enumerate() {
        let last = ci + 1 == chunks;
        let mut acc: u32 = 0;
        let mut pad = 0;
        for &c in chunk {
            let v = match c {
                b'A'..=b'Z' => c - b'A',
                b'a'..=b'z' => c - b'a' + 26,
                b'0'..=b'9' => c - b'0' + 52,
                b'+' => 62,
                b'/' => 63,
                b'=' if last => {
                    pad += 1;
                    0
                }
                _ => return Err(bad()),
            };
            if pad > 0 && c != b'=' {
                return Err(bad());
            }
            acc = (acc << 6) | u32::from(v);
        }
        if pad > 2 {
            return Err(bad());
        }
        let bytes = acc.to_be_bytes();
        out.extend_from_slice(&bytes[1..4 - pad]);
    }
    Ok(go_string(&out))
}

// -------------------------------------------------------------------------------------------
// sigs.k8s.io/yaml conversion and encoding/json

/// Go's `%#v` of a decoded value (for messages).
fn go_sharp_v(v: &Go) -> String {
    match v {
        Go::Null => "interface {}(nil)".to_string(),
        Go::Bool(b) => b.to_string(),
        Go::Int(i) => i.to_string(),
        Go::Uint(u) => format!("0x{u:x}"),
        Go::Float(f) => format_g64(*f),
        Go::Str(s) => crate::go::quote::quote(s),
        Go::Seq(items) => {
            let inner: Vec<String> = items.iter().map(go_sharp_v).collect();
            format!("[]interface {{}}{{{}}}", inner.join(", "))
        }
        Go::Map(m) => {
            // fmt prints map entries sorted by key (keys of different Go types in an order of
            // its own; nil first and strings last here).
            let mut entries: Vec<&(GoKey, Go)> = m.entries.iter().collect();
            entries.sort_by(|(a, _), (b, _)| key_order(a, b));
            let inner: Vec<String> = entries
                .into_iter()
                .map(|(k, v)| format!("{}:{}", go_sharp_v(&key_value(k)), go_sharp_v(v)))
                .collect();
            format!("map[interface {{}}]interface {{}}{{{}}}", inner.join(", "))
        }
    }
}

/// fmt's order of map keys for messages: by value within a type (NaN first among floats); keys
/// of different types in the order of their type descriptors, which depends on the Go build (this
/// is the oracle's: nil, bool, float64, int, string, uint64).
fn key_order(a: &GoKey, b: &GoKey) -> std::cmp::Ordering {
    fn rank(k: &GoKey) -> u8 {
        match k {
            GoKey::Null => 0,
            GoKey::Bool(_) => 1,
            GoKey::Float(_) => 2,
            GoKey::Int(_) => 3,
            GoKey::Str(_) => 4,
            GoKey::Uint(_) => 5,
        }
    }
    match (a, b) {
        (GoKey::Bool(x), GoKey::Bool(y)) => x.cmp(y),
        (GoKey::Int(x), GoKey::Int(y)) => x.cmp(y),
        (GoKey::Uint(x), GoKey::Uint(y)) => x.cmp(y),
        (GoKey::Float(x), GoKey::Float(y)) => match (x.is_nan(), y.is_nan()) {
            (true, true) => std::cmp::Ordering::Equal,
            (true, false) => std::cmp::Ordering::Less,
            (false, true) => std::cmp::Ordering::Greater,
            _ => x.partial_cmp(y).unwrap_or(std::cmp::Ordering::Equal),
        },
        (GoKey::Str(x), GoKey::Str(y)) => x.cmp(y),
        _ => rank(a).cmp(&rank(b)),
    }
}

fn key_value(k: &GoKey) -> Go {
    match k {
        GoKey::Null => Go::Null,
        GoKey::Bool(b) => Go::Bool(*b),
        GoKey::Int(i) => Go::Int(*i),
        GoKey::Uint(u) => Go::Uint(*u),
        GoKey::Float(f) => Go::Float(*f),
        GoKey::Str(s) => Go::Str(s.clone()),
    }
}

/// The first problem met while converting, in go's order of precedence.
#[derive(Default)]
struct Problems {
    /// sigs.k8s.io/yaml: a key it cannot turn into a string.
    key: Option<String>,
    /// encoding/json: NaN or an infinity (they are left in the tree as [`NOT_FINITE`] strings).
    float: bool,
}

/// Marks a NaN or infinity in a converted tree that is about to be refused.
const NOT_FINITE: &str = "\u{0}not finite:";

/// `convertToJSONableObject` then `json.Marshal`, as a JSON tree.
fn to_json(go: Go) -> Result<Value> {
    let mut p = Problems::default();
    let v = convert(go, &mut p);
    match (p.key, p.float) {
        (Some(k), _) => Err(YamlError::ToJson(k)),
        (None, true) => {
            // json.Marshal reports the first one in its (sorted key) order.
            let go = first_not_finite(&v).unwrap_or("NaN");
            Err(YamlError::ToJson(format!("json: unsupported value: {go}")))
        }
        (None, false) => Ok(v),
    }
}

/// The first [`NOT_FINITE`] mark in `v` in Go's encoding order (object keys sorted).
fn first_not_finite(v: &Value) -> Option<&str> {
    match v {
        Value::String(s) => s.strip_prefix(NOT_FINITE),
        Value::Array(items) => items.iter().find_map(first_not_finite),
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            keys.into_iter().find_map(|k| first_not_finite(&m[k]))
        }
        _ => None,
    }
}

fn convert(go: Go, p: &mut Problems) -> Value {
    match go {
        Go::Seq(items) => {
            let mut out = Vec::with_capacity(items.len());
            for x in items {
                out.push(convert(x, p));
            }
            Value::Array(out)
        }
        Go::Map(m) => {
            let mut out = Map::with_capacity(m.entries.len());
            for (k, v) in m.entries {
                if let Some(name) = key_name(k, &v, p) {
                    out.insert(name, convert(v, p));
                }
            }
            Value::Object(out)
        }
        other => convert_scalar(other, p),
    }
}

#[inline(never)]
fn convert_scalar(go: Go, p: &mut Problems) -> Value {
    match go {
        Go::Bool(b) => Value::Bool(b),
        Go::Int(i) => Value::from(i),
        Go::Uint(u) => Value::from(u),
        Go::Float(f) => match Number::from_f64(f) {
            Some(n) => Value::Number(n),
            None => {
                p.float = true;
                let s = if f.is_nan() {
                    "NaN"
                } else if f > 0.0 {
                    "+Inf"
                } else {
                    "-Inf"
                };
                Value::String(format!("{NOT_FINITE}{s}"))
            }
        },
        Go::Str(s) => Value::String(s),
        Go::Null | Go::Seq(_) | Go::Map(_) => Value::Null,
    }
}

/// The JSON name sigs.k8s.io/yaml gives a key, or `None` (and a problem) when it has none.
#[inline(never)]
fn key_name(k: GoKey, v: &Go, p: &mut Problems) -> Option<String> {
    Some(match k {
        GoKey::Str(s) => s,
        GoKey::Int(i) => i.to_string(),
        GoKey::Float(f) => float_key(f),
        GoKey::Bool(b) => b.to_string(),
        GoKey::Null | GoKey::Uint(_) => {
            if p.key.is_none() {
                let (ty, key) = match &k {
                    GoKey::Null => ("%!s(<nil>)", "<nil>".to_string()),
                    other => ("uint64", go_sharp_v(&key_value(other))),
                };
                let value = match v {
                    Go::Null => "<nil>".to_string(),
                    other => go_sharp_v(other),
                };
                p.key = Some(format!(
                    "unsupported map key of type: {ty}, key: {key}, value: {value}"
                ));
            }
            return None;
        }
    })
}

// -------------------------------------------------------------------------------------------
// Helpers shared with the fast path

/// The JSON name of a float key: Go's `FormatFloat(f, 'g', -1, 32)` (float32 precision, so
/// `1e103` overflows to an infinity) with the infinities and NaN spelled as YAML does.
fn float_key(f: f64) -> String {
    match format_g32(f).as_str() {
        "+Inf" => ".inf".to_string(),
        "-Inf" => "-.inf".to_string(),
        "NaN" => ".nan".to_string(),
        s => s.to_string(),
    }
}

/// The JSON name of a decoded non-string key, as sigs.k8s.io/yaml `convertToJSONableObject`
/// writes it.
pub(super) fn key_string(v: Value) -> std::result::Result<String, String> {
    match v {
        Value::String(s) => Ok(s),
        Value::Bool(b) => Ok(b.to_string()),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Ok(i.to_string())
            } else if n.is_u64() {
                Err(format!("unsupported map key of type uint64: {n}"))
            } else {
                Ok(float_key(n.as_f64().unwrap_or(0.0)))
            }
        }
        Value::Null => Err("unsupported map key: null".to_string()),
        Value::Array(_) | Value::Object(_) => {
            Err("unsupported map key: a sequence or mapping".to_string())
        }
    }
}

/// The JSON value of a resolution, or `Err` with the float when it is NaN or infinite (not
/// representable in JSON). `text` becomes the string of timestamps and strings.
pub(super) fn resolved_json(
    r: Resolved,
    text: impl Into<String>,
) -> std::result::Result<Value, f64> {
    Ok(match r {
        Resolved::Null => Value::Null,
        Resolved::Bool(b) => Value::Bool(b),
        Resolved::Int(i) => Value::from(i),
        Resolved::Uint(u) => Value::from(u),
        Resolved::Float(f) => return Number::from_f64(f).map(Value::Number).ok_or(f),
        Resolved::Timestamp | Resolved::Str => Value::String(text.into()),
    })
}
