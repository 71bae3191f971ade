//! YAML → JSON as sigs.k8s.io/yaml (`YAMLToJSON`, over go-yaml v2) does it, on yaml-rust2's
//! event parser.

use std::collections::{HashMap, HashSet};
use std::str::Chars;

use serde_json::{Map, Number, Value};
use yaml_rust2::parser::{Event, Parser, Tag};
use yaml_rust2::scanner::{Marker, ScanError, TScalarStyle};

use super::resolve::{resolve_plain, Resolved};
use crate::gofloat::format_g32;
use crate::{Error, Result};

/// Deepest nesting accepted (yaml-rust2 also stops flow collections at this depth); keeps the
/// recursion far from the stack limit of small threads.
const MAX_DEPTH: usize = 256;
/// Absolute cap on decoded nodes, counting alias expansions.
const MAX_NODES: usize = 20_000_000;
/// The YAML core tag prefix that `!!` stands for.
const CORE: &str = "tag:yaml.org,2002:";

/// Retries allowed for tabs after `:` (see [`from_str`]).
const MAX_TAB_FIXES: usize = 100;
/// yaml-rust2's message for a tab separating `:` from a value.
const TAB_AFTER_COLON: &str = "':' must be followed by a valid YAML whitespace";

/// Parse one YAML document into JSON; see [`crate::yaml::from_str`].
///
/// libyaml accepts a tab between `:` and a value (`a:\t1`); yaml-rust2 rejects it. When that is
/// the failure, the tabs at the reported spot are turned into spaces (same meaning) and the
/// text is parsed again.
pub(crate) fn from_str(text: &str) -> Result<Value> {
    // A byte order mark at the start is not content (libyaml's reader drops it).
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    let mut fixed: Option<String> = None;
    for _ in 0..MAX_TAB_FIXES {
        let current = fixed.as_deref().unwrap_or(text);
        let mut l = Loader::new(current);
        let result = l.document();
        match (result, l.tab_after_colon) {
            (Err(e), Some(mark)) => match untab_after_colon(current, mark) {
                Some(next) => fixed = Some(next),
                None => return Err(e),
            },
            (result, _) => return result,
        }
    }
    Err(Error::Yaml(
        "yaml: too many tabs after ':' to repair".to_string(),
    ))
}

/// Replace the tabs between a `:` and the position `mark` (just after them) by spaces.
fn untab_after_colon(text: &str, mark: Marker) -> Option<String> {
    let at = text
        .char_indices()
        .nth(mark.index())
        .map_or(text.len(), |(i, _)| i);
    let before = &text[..at];
    let run = before.len() - before.trim_end_matches([' ', '\t']).len();
    let start = at - run;
    if run == 0 || !before[..start].ends_with(':') || !before[start..].contains('\t') {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    out.push_str(&text[..start]);
    out.push_str(&" ".repeat(run));
    out.push_str(&text[at..]);
    Some(out)
}

/// A mapping key after resolution.
enum Key {
    /// The merge key `<<`.
    Merge,
    /// A key converted to its JSON string form.
    Name(String),
}

/// Event-driven builder of the JSON tree.
struct Loader<'a> {
    parser: Parser<Chars<'a>>,
    /// Completed anchored nodes and their node counts.
    anchors: HashMap<usize, (Value, usize)>,
    /// Present when the text lacks a final newline (see [`EofFix`]).
    eof_fix: Option<EofFix>,
    /// Where yaml-rust2 stopped on a tab after `:` (see [`from_str`]).
    tab_after_colon: Option<Marker>,
    /// Nodes decoded so far, alias expansions included.
    decoded: usize,
    /// Nodes decoded through aliases.
    aliased: usize,
}

impl<'a> Loader<'a> {
    fn new(text: &'a str) -> Self {
        Loader {
            parser: Parser::new_from_str(text),
            anchors: HashMap::new(),
            eof_fix: EofFix::new(text),
            tab_after_colon: None,
            decoded: 0,
            aliased: 0,
        }
    }

    /// The whole stream: nothing, or one document (plus empty ones).
    fn document(&mut self) -> Result<Value> {
        let (ev, mark) = self.next()?;
        if ev != Event::StreamStart {
            return Err(self.err(mark, "did not find expected <stream-start>"));
        }
        let (ev, mark) = self.next()?;
        match ev {
            Event::StreamEnd => return Ok(Value::Null),
            Event::DocumentStart => {}
            _ => return Err(self.err(mark, "did not find expected <document-start>")),
        }
        let (ev, mark) = self.next()?;
        let value = self.node(ev, mark, 0)?;
        self.expect_document_end()?;
        self.expect_no_more_documents()?;
        Ok(value)
    }

    fn next(&mut self) -> Result<(Event, Marker)> {
        self.parser.next_token().map_err(|e| {
            if e.info() == TAB_AFTER_COLON {
                self.tab_after_colon = Some(*e.marker());
            }
            scan_error(e)
        })
    }

    fn err(&self, mark: Marker, msg: &str) -> Error {
        error_at(mark, msg)
    }

    fn expect_document_end(&mut self) -> Result<()> {
        let (ev, mark) = self.next()?;
        if ev == Event::DocumentEnd {
            Ok(())
        } else {
            Err(self.err(mark, "did not find expected <document end>"))
        }
    }

    /// Further documents are an error unless they are empty (a trailing `---`).
    fn expect_no_more_documents(&mut self) -> Result<()> {
        loop {
            let (ev, mark) = self.next()?;
            match ev {
                Event::StreamEnd => return Ok(()),
                Event::DocumentStart => {
                    let (ev, _) = self.next()?;
                    let empty = matches!(&ev, Event::Scalar(s, TScalarStyle::Plain, 0, None) if s.is_empty());
                    if !empty {
                        return Err(self.err(
                            mark,
                            "expected a single document in the stream, found another one",
                        ));
                    }
                    self.expect_document_end()?;
                }
                _ => return Err(self.err(mark, "did not find expected <document-start>")),
            }
        }
    }

    /// Build the node that starts with `ev`.
    fn node(&mut self, ev: Event, mark: Marker, depth: usize) -> Result<Value> {
        if depth > MAX_DEPTH {
            return Err(self.err(mark, &format!("exceeded max depth of {MAX_DEPTH}")));
        }
        let start = self.decoded;
        self.count(mark, 1, false)?;
        let (value, anchor) = match ev {
            Event::Scalar(mut text, style, anchor, tag) => {
                if matches!(style, TScalarStyle::Literal | TScalarStyle::Folded)
                    && self.eof_fix.as_ref().is_some_and(|f| f.reaches_eof(mark))
                    && text.ends_with('\n')
                {
                    text.pop();
                }
                (scalar(text, style, tag.as_ref(), mark)?, anchor)
            }
            Event::SequenceStart(anchor, _) => (self.sequence(depth)?, anchor),
            Event::MappingStart(anchor, _) => (Value::Object(self.mapping(depth)?), anchor),
            Event::Alias(id) => return self.alias(id, mark),
            _ => return Err(self.err(mark, "did not find expected node content")),
        };
        if anchor != 0 {
            let size = self.decoded - start;
            self.anchors.insert(anchor, (value.clone(), size));
        }
        Ok(value)
    }

    /// Account for `n` decoded nodes, go-yaml's guard against alias bombs included.
    fn count(&mut self, mark: Marker, n: usize, via_alias: bool) -> Result<()> {
        self.decoded = self.decoded.saturating_add(n);
        if via_alias {
            self.aliased = self.aliased.saturating_add(n);
        }
        let ratio = self.aliased as f64 / self.decoded.max(1) as f64;
        if self.decoded > MAX_NODES
            || (self.aliased > 100
                && self.decoded > 1000
                && ratio > allowed_alias_ratio(self.decoded))
        {
            return Err(self.err(mark, "document contains excessive aliasing"));
        }
        Ok(())
    }

    fn alias(&mut self, id: usize, mark: Marker) -> Result<Value> {
        let Some((value, size)) = self.anchors.get(&id) else {
            return Err(self.err(mark, "unknown anchor (or alias inside its own anchor)"));
        };
        let (value, size) = (value.clone(), *size);
        // The alias node itself was counted by `node`; count the expansion.
        self.count(mark, size, true)?;
        Ok(value)
    }

    fn sequence(&mut self, depth: usize) -> Result<Value> {
        let mut items = Vec::new();
        loop {
            let (ev, mark) = self.next()?;
            if ev == Event::SequenceEnd {
                return Ok(Value::Array(items));
            }
            items.push(self.node(ev, mark, depth + 1)?);
        }
    }

    /// A mapping. Explicit keys may not repeat; a merge (`<<`) sets keys in document order (go-yaml
    /// v2), and a key whose value came from a merge may be set explicitly afterwards.
    fn mapping(&mut self, depth: usize) -> Result<Map<String, Value>> {
        let mut map = Map::new();
        // Keys whose current value came from a merge (allocates only when merges add keys).
        let mut merged: HashSet<String> = HashSet::new();
        loop {
            let (ev, mark) = self.next()?;
            if ev == Event::MappingEnd {
                return Ok(map);
            }
            let key = self.key(ev, mark, depth + 1)?;
            let (ev, vmark) = self.next()?;
            let value = self.node(ev, vmark, depth + 1)?;
            match key {
                Key::Merge => {
                    merge_into(&mut map, &mut merged, value).map_err(|m| self.err(vmark, m))?
                }
                Key::Name(name) => {
                    if map.contains_key(&name) && !merged.remove(&name) {
                        return Err(
                            self.err(mark, &format!("key {} already set in map", go_quote(&name)))
                        );
                    }
                    map.insert(name, value);
                }
            }
        }
    }

    /// Read a mapping key and convert it to its JSON name (sigs.k8s.io/yaml rules).
    fn key(&mut self, ev: Event, mark: Marker, depth: usize) -> Result<Key> {
        if let Event::Scalar(text, style, _, tag) = &ev {
            let merge_tag = tag
                .as_ref()
                .is_some_and(|t| full_tag(t) == "tag:yaml.org,2002:merge");
            if text == "<<" && ((*style == TScalarStyle::Plain && tag.is_none()) || merge_tag) {
                // Still registers a possible anchor on the key; harmless to build it.
                self.node(ev, mark, depth)?;
                return Ok(Key::Merge);
            }
        }
        let value = self.node(ev, mark, depth)?;
        key_string(value)
            .map(Key::Name)
            .map_err(|m| self.err(mark, &m))
    }
}

/// yaml-rust2 adds a line break to a block scalar that runs to the end of a text lacking a final
/// newline; libyaml does not (`a: |\n  x` is `"x"`). yaml-rust2 marks a block scalar event at its
/// first content line, after the content indentation; the scalar runs to the end of the text when
/// no later non-blank line is indented less.
struct EofFix {
    /// Minimum indentation of the non-blank lines from each (0-based) line to the end.
    suffix_min: Vec<usize>,
}

impl EofFix {
    fn new(text: &str) -> Option<Self> {
        if text.is_empty() || text.ends_with('\n') {
            return None;
        }
        let mut indents: Vec<Option<usize>> = text
            .split('\n')
            .map(|l| {
                let l = l.strip_suffix('\r').unwrap_or(l);
                let n = l.len() - l.trim_start_matches(' ').len();
                (!l.trim().is_empty()).then_some(n)
            })
            .collect();
        // The unterminated last line counts even when blank: its spaces decide whether it is
        // part of the scalar.
        if let (Some(last), Some(line)) = (indents.last_mut(), text.rsplit('\n').next()) {
            *last = Some(line.len() - line.trim_start_matches(' ').len());
        }
        let mut suffix_min = vec![usize::MAX; indents.len() + 1];
        for i in (0..indents.len()).rev() {
            suffix_min[i] = suffix_min[i + 1].min(indents[i].unwrap_or(usize::MAX));
        }
        Some(EofFix { suffix_min })
    }

    /// Whether the block scalar marked at `mark` runs to the end of the text.
    fn reaches_eof(&self, mark: Marker) -> bool {
        let line = mark.line().saturating_sub(1);
        self.suffix_min.get(line).is_some_and(|&m| m >= mark.col())
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

/// go-yaml v2 merge: a mapping, or a sequence of mappings applied last-to-first; merged keys
/// overwrite keys already present (v2 processes keys in document order). Keys new to `map` are
/// recorded in `merged`.
fn merge_into(
    map: &mut Map<String, Value>,
    merged: &mut HashSet<String>,
    value: Value,
) -> std::result::Result<(), &'static str> {
    const WANT_MAP: &str = "map merge requires map or sequence of maps as the value";
    let mut apply = |m: Map<String, Value>| {
        for (k, v) in m {
            if !map.contains_key(&k) {
                merged.insert(k.clone());
            }
            map.insert(k, v);
        }
    };
    match value {
        Value::Object(m) => {
            apply(m);
            Ok(())
        }
        Value::Array(items) => {
            if !items.iter().all(Value::is_object) {
                return Err(WANT_MAP);
            }
            for item in items.into_iter().rev() {
                if let Value::Object(m) = item {
                    apply(m);
                }
            }
            Ok(())
        }
        _ => Err(WANT_MAP),
    }
}

/// The JSON name of a decoded key, as sigs.k8s.io/yaml `convertToJSONableObject` writes it.
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
                Ok(format_g32(n.as_f64().unwrap_or(0.0)))
            }
        }
        Value::Null => Err("unsupported map key: null".to_string()),
        Value::Array(_) | Value::Object(_) => {
            Err("unsupported map key: a sequence or mapping".to_string())
        }
    }
}

/// The full name of a tag (`tag:yaml.org,2002:str`, `!foo`).
fn full_tag(t: &Tag) -> String {
    format!("{}{}", t.handle, t.suffix)
}

/// Decode one scalar: plain untagged scalars are resolved, quoted/block ones are strings, and
/// explicit core tags force a type.
fn scalar(text: String, style: TScalarStyle, tag: Option<&Tag>, mark: Marker) -> Result<Value> {
    let Some(tag) = tag else {
        if style == TScalarStyle::Plain {
            return resolved_value(resolve_plain(&text), text, mark);
        }
        return Ok(Value::String(text));
    };
    let full = full_tag(tag);
    let Some(short) = full.strip_prefix(CORE) else {
        // Unknown / local tags: go-yaml keeps the text.
        return Ok(Value::String(text));
    };
    let r = resolve_plain(&text);
    let ok = match (short, &r) {
        ("str", _) => return Ok(Value::String(text)),
        ("binary", _) => return decode_binary(&text, mark),
        ("null", Resolved::Null)
        | ("bool", Resolved::Bool(_))
        | ("int", Resolved::Int(_) | Resolved::Uint(_))
        | ("float", Resolved::Float(_))
        | ("timestamp", Resolved::Timestamp) => true,
        ("float", Resolved::Int(i)) => {
            #[allow(clippy::cast_precision_loss)]
            return float_value(*i as f64, mark);
        }
        ("float", Resolved::Uint(u)) => {
            #[allow(clippy::cast_precision_loss)]
            return float_value(*u as f64, mark);
        }
        ("null" | "bool" | "int" | "float" | "timestamp", _) => false,
        // Other core tags (`!!seq`, `!!map`, `!!merge`, ...) on scalars: keep the text.
        _ => return Ok(Value::String(text)),
    };
    if !ok {
        let msg = format!(
            "cannot decode {} `{}` as a !!{short}",
            short_tag_of(&r),
            text
        );
        return Err(error_at(mark, &msg));
    }
    resolved_value(r, text, mark)
}

/// go-yaml's short tag of a resolution, for error messages.
fn short_tag_of(r: &Resolved) -> &'static str {
    match r {
        Resolved::Null => "!!null",
        Resolved::Bool(_) => "!!bool",
        Resolved::Int(_) | Resolved::Uint(_) => "!!int",
        Resolved::Float(_) => "!!float",
        Resolved::Timestamp => "!!timestamp",
        Resolved::Str => "!!str",
    }
}

/// The JSON value of a resolution (timestamps and merge keys in value position stay strings).
fn resolved_value(r: Resolved, text: String, mark: Marker) -> Result<Value> {
    resolved_json(r, text).or_else(|f| float_value(f, mark))
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

/// A float as JSON; NaN and infinities cannot be encoded (Go's `json: unsupported value`).
fn float_value(f: f64, mark: Marker) -> Result<Value> {
    match Number::from_f64(f) {
        Some(n) => Ok(Value::Number(n)),
        None => {
            let go = if f.is_nan() {
                "NaN"
            } else if f > 0.0 {
                "+Inf"
            } else {
                "-Inf"
            };
            Err(error_at(mark, &format!("json: unsupported value: {go}")))
        }
    }
}

/// `!!binary`: standard base64 (line breaks ignored) decoded to a string.
fn decode_binary(text: &str, mark: Marker) -> Result<Value> {
    let bad = || error_at(mark, "!!binary value contains invalid base64 data");
    let clean: Vec<u8> = text
        .bytes()
        .filter(|b| !matches!(b, b'\r' | b'\n'))
        .collect();
    if !clean.len().is_multiple_of(4) {
        return Err(bad());
    }
    let mut out = Vec::with_capacity(clean.len() / 4 * 3);
    for (ci, chunk) in clean.chunks(4).enumerate() {
        let last = ci + 1 == clean.len() / 4;
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
    Ok(Value::String(String::from_utf8_lossy(&out).into_owned()))
}

/// Go `%q`-like quoting for key names in messages.
fn go_quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

/// An error at `mark`: `yaml: line L: message (column C)`.
fn error_at(mark: Marker, msg: &str) -> Error {
    Error::Yaml(format!(
        "yaml: line {}: {} (column {})",
        mark.line(),
        msg,
        mark.col() + 1
    ))
}

fn scan_error(e: ScanError) -> Error {
    error_at(*e.marker(), e.info())
}
