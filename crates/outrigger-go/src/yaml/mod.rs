//! YAML as Kubernetes' Go tooling reads and writes it (sigs.k8s.io/yaml over go-yaml v2).
//!
//! Provides:
//! - [`from_str`]: exactly sigs.k8s.io/yaml `YAMLToJSON`: the first document → JSON tree, YAML 1.1
//!   scalar resolution (`yes`/`on` are bools, `010` octal, `1_000`), keys in document order,
//!   non-string keys stringified, a repeated key replacing the earlier value; text after the
//!   first document is ignored (as go-yaml does; [`read_document`] reports it); errors are
//!   go-yaml's (`yaml: line L: message`). Empty/whitespace-only input → `Value::Null`.
//! - [`split_documents`]: kube-inject's splitting (apimachinery `YAMLReader`) on lines starting
//!   with `---`, returning each document's text as that reader returns it (for pass-through).
//! - [`to_string`]: go-yaml v2 style emission (sorted keys, 2-space indent, sequences not indented
//!   under their key, quoting of ambiguous strings, `|`/`|-` literal blocks), ends with `\n`.
//!
//! Layout: `scan` and `events` (go-yaml v2's reader, scanner and parser, ported line by line:
//! characters → tokens → events), `parse` (go-yaml's node tree and decoder, then sigs.k8s.io/yaml's
//! key conversion), `resolve` (YAML 1.1 plain-scalar resolution shared by both directions), `fast`
//! (a single-pass loader for the block-YAML subset of rendered templates, tried first; it gives up
//! on anything else and on every error, and `parse` runs on the original text), `memo` (the fast
//! loader's per-thread memo of the subtrees of the last document, reused where the next text is
//! byte-identical), `split`, `emit`
//! (port of go-yaml v2's encoder and libyaml's emitter).
//!
//! Known differences from Go: documents nested deeper than 512 collections are refused (go-yaml
//! allows 10,000 flow and 10,000 indentation levels; the trees are processed recursively
//! downstream); where Go's own answer depends on its random map iteration order (two keys of a
//! mapping such as `1` and `"1"` becoming the same JSON key) the later key wins here; key sets on
//! which go-yaml's emitter key order is cyclic (`08`, `1:20`, `0x1F`) come out in some order.

use std::borrow::Cow;

use serde_json::Value;

/// Results of the YAML engine: its own error type, which converts into the crate's sum above the
/// stages.
type Result<T, E = YamlError> = std::result::Result<T, E>;

mod emit;
mod events;
mod fast;
mod memo;
mod parse;
mod resolve;
mod scan;
mod split;
#[cfg(test)]
mod tests_emit;
#[cfg(test)]
mod tests_fast;
#[cfg(test)]
mod tests_memo;
#[cfg(test)]
mod tests_parse;

/// Parse YAML into a JSON tree exactly as sigs.k8s.io/yaml `YAMLToJSON` reads it.
///
/// Only the first document is read; what follows it is ignored, as go-yaml does (see
/// [`read_document`] to learn about it). Plain scalars follow YAML 1.1 (go-yaml v2): `yes`/`on`/`y`
/// are `true`, `010` is 8, `0x1F`, `0b101`, `1_000` are ints, `1.5`/`1e3` are floats (kept as f64
/// even when integral), `~`/`null`/empty are null; quoted and block scalars are strings; explicit
/// core tags (`!!str`, `!!int`, ...) force the type. Anchors, aliases and merge keys (`<<`) are
/// expanded. Keys keep document order; non-string keys become their string form (`1`, `true`,
/// `.inf`); a repeated key replaces the earlier value (non-strict `yaml.Unmarshal`). Syntax errors,
/// `.inf`/`.nan` values (not representable in JSON), null keys and documents nested deeper than
/// 512 collections are [`YamlError`]s with go-yaml's message
/// (`yaml: line L: message`). Empty, whitespace-only or comment-only input is `Value::Null`.
pub fn from_str(text: &str) -> Result<Value> {
    #[cfg(feature = "test-support")]
    trace::record(text);
    match fast::from_str(text) {
        Some(v) => Ok(v),
        None => parse::from_str(text),
    }
}

/// Why a YAML text could not be read, or a tree could not be written as YAML that reads back.
/// Each message is the one Kubernetes' Go tooling gives for the same input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum YamlError {
    /// go-yaml's reader: `yaml: line L: problem`, without the line when go-yaml has none.
    #[error("yaml: {}{problem}", line_prefix(*.line))]
    Syntax {
        /// The line go-yaml reports (1-based, with go-yaml's own off-by-one for parser errors).
        line: Option<usize>,
        /// What is wrong (`mapping values are not allowed in this context`, ...).
        problem: String,
    },
    /// go-yaml's decoder (`failf`): `yaml: message` (unknown anchor, excessive aliasing,
    /// invalid map key, ...).
    #[error("yaml: {0}")]
    Decode(String),
    /// sigs.k8s.io/yaml's conversion of the decoded document to JSON (a key of an unsupported
    /// type, a NaN or infinite number).
    #[error("{0}")]
    ToJson(String),
    /// kube-inject's document splitter: a `---` line followed by something other than a comment.
    #[error("invalid Yaml document separator: {0}")]
    Separator(String),
}

fn line_prefix(line: Option<usize>) -> String {
    line.map(|l| format!("line {l}: ")).unwrap_or_default()
}

impl YamlError {
    /// The same error with its line moved down by `lines` (a document that starts on line
    /// `lines` + 1 of a stream, reported in stream lines).
    pub fn shifted(self, lines: usize) -> YamlError {
        match self {
            YamlError::Syntax {
                line: Some(l),
                problem,
            } => YamlError::Syntax {
                line: Some(l + lines),
                problem,
            },
            other => other,
        }
    }
}

/// A document read by [`read_document`].
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// The JSON tree of the first document (what [`from_str`] returns).
    pub value: Value,
    /// Content after the first document, which Kubernetes' YAML reader silently ignores.
    pub ignored: Option<IgnoredText>,
}

/// Content after the end of the first document of a text: go-yaml (and so `kubectl`,
/// `istioctl` and istiod) stops reading there without a word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IgnoredText {
    /// 1-based line of the text where the ignored content starts.
    pub line: usize,
    /// go-yaml's error on the ignored content, when it is not valid YAML either.
    pub error: Option<YamlError>,
}

impl IgnoredText {
    /// The same report for a document that starts on 0-based line `lines` of a stream: its
    /// line, and the line of its error, in stream lines.
    pub fn shifted(self, lines: usize) -> IgnoredText {
        IgnoredText {
            line: self.line + lines,
            error: self.error.map(|e| e.shifted(lines)),
        }
    }
}

impl std::fmt::Display for IgnoredText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "line {}: content after the end of the document is ignored by Kubernetes' YAML reader",
            self.line
        )?;
        if let Some(e) = &self.error {
            write!(f, " (and is not valid YAML: {e})")?;
        }
        Ok(())
    }
}

/// [`from_str`], also reporting content after the first document that go-yaml ignores (a `...`
/// end marker followed by more text, a second document, or text after a complete flow
/// collection such as `[]: b`). Empty documents, comments and directives after the first
/// document are not reported.
pub fn read_document(text: &str) -> Result<Document> {
    #[cfg(feature = "test-support")]
    trace::record(text);
    if let Some(value) = fast::from_str(text) {
        return Ok(Document {
            value,
            ignored: None,
        });
    }
    let loaded = parse::load(text)?;
    Ok(Document {
        value: loaded.value,
        ignored: loaded.ignored.map(|i| IgnoredText {
            line: i.line,
            error: i.error,
        }),
    })
}

/// The fast path of [`from_str`] alone: `Some` tree when the text is in the subset that the
/// single-pass loader reads (then equal to [`slow_from_str`]'s result), `None` when it gives up.
/// For tests and fuzzing (feature `test-support`).
#[cfg(feature = "test-support")]
pub fn fast_from_str(text: &str) -> Option<Value> {
    fast::from_str(text)
}

/// [`fast_from_str`] without the thread's caches (no memo of the previous document's units, a
/// fresh shape cache): what the fast path reads from `text` alone. For the differential tests
/// of the memo (feature `test-support`).
#[cfg(feature = "test-support")]
pub fn fast_from_str_cold(text: &str) -> Option<Value> {
    fast::cold(text)
}

/// Units that the fast path's memo on this thread reused and read again so far (feature
/// `test-support`).
#[cfg(feature = "test-support")]
pub fn fast_memo_counts() -> (u64, u64) {
    let (hits, misses, _, _) = fast::memo_counts();
    (hits, misses)
}

/// The full loader of [`from_str`] (the go-yaml port), without the fast path. For tests and
/// fuzzing (feature `test-support`).
#[cfg(feature = "test-support")]
pub fn slow_from_str(text: &str) -> Result<Value> {
    parse::from_str(text)
}

/// Run `f` and return, with its result, every text that [`from_str`] read on this thread
/// meanwhile (lets tests check the fast path on the texts that real injections parse; feature
/// `test-support`).
#[cfg(feature = "test-support")]
pub fn traced<R>(f: impl FnOnce() -> R) -> (R, Vec<String>) {
    trace::traced(f)
}

/// Split a multi-document YAML stream into the text of its documents exactly as kube-inject
/// reads its input (apimachinery `YAMLReader`).
///
/// A separator is a line starting with `---` whose remainder is empty or a `#` comment (anything
/// else is the error `invalid Yaml document separator: <rest>`, which ends the stream). It closes
/// the document being read when that document has at least one line, and is then dropped; a
/// separator that closes nothing is the first line of the next document. Every line of a
/// document ends with `\n`: `\r\n` becomes `\n` and a last line without an ending gets one (so a
/// block scalar ending the file keeps its newline). Documents are otherwise the stream's text,
/// comments, blank lines, `...` and `%` directive lines included; only a stream's empty stretches
/// (nothing between two separators) yield no document. Borrowed from `text` when nothing had to
/// change.
pub fn split_documents(text: &str) -> Result<Vec<Cow<'_, str>>> {
    split::split_documents(text)
}

/// [`split_documents`], each document with the 0-based line of the stream on which it starts.
pub fn split_documents_with_lines(text: &str) -> Result<Vec<(Cow<'_, str>, usize)>> {
    split::split_with_lines(text)
}

pub use split::{reader_lines, DocumentReader, DocumentSpan, RawDocument, ReadError, Splitter};

/// Emit `v` as YAML the way sigs.k8s.io/yaml `JSONToYAML` (go-yaml v2) does; ends with `\n`.
///
/// Block style with 2-space indentation; mapping keys in go-yaml's order (numeric runs compare
/// as numbers, non-letters before letters); sequences not indented under their key (`key:\n- a`);
/// `{}`, `[]`, `null`; integral numbers as integers, other floats in Go's shortest `%g` form
/// (`1.5`, `1e+06`); strings plain when they would read back as the same string, double-quoted
/// when YAML 1.1 would read them as something else (`"true"`, `"yes"`, `"15020"`, `""`,
/// `"2024-01-01"`, `"1:20"`), single-quoted when they start with an indicator (`'*'`, `'{"a":1}'`)
/// or have leading/trailing spaces or `: `/` #` inside, double-quoted with escapes when they hold
/// non-printable characters; multi-line strings as `|`/`|-`/`|+` literal blocks (`|2-` when the
/// text starts with a space). Long plain and quoted lines are folded at column 80 as go-yaml does.
pub fn to_string(v: &Value) -> String {
    emit::to_string(v)
}

/// sigs.k8s.io/yaml `JSONToYAML` of `v`'s Go JSON encoding, including its failures on JSON it
/// cannot read back ([`YamlError`] with go-yaml's message): a mapping key over 1,022
/// characters of JSON, or holding a raw U+0085 (a YAML line break), is
/// `yaml: [line N: ]did not find expected ',' or '}'`; a DEL, C1 control or U+FFFE/U+FFFF
/// anywhere (Go's JSON leaves them raw) is `yaml: control characters are not allowed`.
/// Otherwise the same text as [`to_string`]. istioctl's output and Istio's `toYaml` go
/// through `JSONToYAML`.
pub fn json_to_yaml(v: &Value) -> Result<String> {
    if let Some(e) = emit::json_read_error(v) {
        return Err(e);
    }
    Ok(emit::to_string(v))
}

/// Recording of [`from_str`] inputs for `traced` (feature `test-support`).
#[cfg(feature = "test-support")]
mod trace {
    use std::cell::{Cell, RefCell};

    thread_local! {
        static ON: Cell<bool> = const { Cell::new(false) };
        static TEXTS: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
    }

    /// Keep `text` when tracing is on for this thread.
    pub(super) fn record(text: &str) {
        if ON.with(Cell::get) {
            TEXTS.with(|t| t.borrow_mut().push(text.to_owned()));
        }
    }

    pub(super) fn traced<R>(f: impl FnOnce() -> R) -> (R, Vec<String>) {
        let was = ON.with(|on| on.replace(true));
        let r = f();
        ON.with(|on| on.set(was));
        let texts = if was {
            TEXTS.with(|t| t.borrow().clone())
        } else {
            TEXTS.with(|t| std::mem::take(&mut *t.borrow_mut()))
        };
        (r, texts)
    }
}
