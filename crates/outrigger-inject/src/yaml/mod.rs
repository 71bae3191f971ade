//! YAML as Kubernetes' Go tooling reads and writes it (sigs.k8s.io/yaml over go-yaml v2).
//!
//! CONTRACT (owned by the YAML work stream):
//! - [`from_str`]: one document → JSON tree, YAML 1.1 scalar resolution (`yes`/`on` are bools,
//!   `010` octal, `1_000`), keys in document order, non-string keys stringified, duplicate keys
//!   an error; errors carry line/column. Empty/whitespace-only input → `Value::Null`.
//! - [`split_documents`]: kube-inject splitting on lines starting with `---`, returning the raw
//!   text of each document (for verbatim pass-through).
//! - [`to_string`]: go-yaml v2 style emission (sorted keys, 2-space indent, sequences not indented
//!   under their key, quoting of ambiguous strings, `|`/`|-` literal blocks), ends with `\n`.
//!
//! Layout: `resolve` (YAML 1.1 plain-scalar resolution shared by both directions), `fast` (a
//! single-pass loader for the block-YAML subset of rendered templates, tried first; it gives up
//! on anything else and on every error, and `parse` runs on the original text), `parse`
//! (events of yaml-rust2 → JSON), `split`, `emit` (port of go-yaml v2's encoder and libyaml's
//! emitter), `gofmt` (Go's `%g` float formatting).
//!
//! Known differences from Go: a raw U+0085/U+2028/U+2029 in YAML input is content here, a line
//! break for libyaml; key sets on which go-yaml's own key order is cyclic (`08`, `1:20`, `0x1F`)
//! come out in some order (Go's varies from run to run); duplicate keys are always an error
//! (go-yaml's strict mode) while a key set by a merge `<<` may still be overridden once.

use serde_json::Value;

use crate::Result;

mod emit;
mod fast;
mod parse;
mod resolve;
mod split;
#[cfg(test)]
mod tests_emit;
#[cfg(test)]
mod tests_fast;
#[cfg(test)]
mod tests_parse;

/// Parse one YAML document into a JSON tree, as sigs.k8s.io/yaml `YAMLToJSON` reads it.
///
/// Plain scalars follow YAML 1.1 (go-yaml v2): `yes`/`on`/`y` are `true`, `010` is 8, `0x1F`,
/// `0b101`, `1_000` are ints, `1.5`/`1e3` are floats (kept as f64 even when integral), `~`/`null`/
/// empty are null; quoted and block scalars are strings; explicit core tags (`!!str`, `!!int`,
/// ...) force the type. Anchors, aliases and merge keys (`<<`) are expanded. Keys keep document
/// order; non-string keys become their string form (`1`, `true`). Duplicate keys, `.inf`/`.nan`
/// values (not representable in JSON), more than one non-empty document and syntax errors are
/// [`crate::Error::Yaml`] errors of the form `yaml: line L: message (column C)`.
/// Empty, whitespace-only or comment-only input is `Value::Null`.
pub fn from_str(text: &str) -> Result<Value> {
    trace::record(text);
    match fast::from_str(text) {
        Some(v) => Ok(v),
        None => parse::from_str(text),
    }
}

/// The fast path of [`from_str`] alone: `Some` tree when the text is in the subset that the
/// single-pass loader reads (then equal to [`slow_from_str`]'s result), `None` when it gives up.
/// For tests and fuzzing.
#[doc(hidden)]
pub fn fast_from_str(text: &str) -> Option<Value> {
    fast::from_str(text)
}

/// The full loader of [`from_str`] (yaml-rust2), without the fast path. For tests and fuzzing.
#[doc(hidden)]
pub fn slow_from_str(text: &str) -> Result<Value> {
    parse::from_str(text)
}

/// Run `f` and return, with its result, every text that [`from_str`] read on this thread
/// meanwhile (lets tests check the fast path on the texts that real injections parse).
#[doc(hidden)]
pub fn traced<R>(f: impl FnOnce() -> R) -> (R, Vec<String>) {
    trace::traced(f)
}

/// Split a multi-document YAML stream into the raw text of its documents, as kube-inject reads
/// its input (apimachinery `YAMLReader`).
///
/// A separator is a line starting with `---` whose remainder is empty or a `#` comment (anything
/// else is the error `invalid Yaml document separator: <rest>`); the separator line itself is not
/// part of any document. Each returned document is the exact original text (CRLF, comments and
/// `...` end markers kept) for verbatim pass-through. Documents with no content (empty, blank,
/// comment-only, `...`-only) are skipped.
pub fn split_documents(text: &str) -> Result<Vec<&str>> {
    split::split_documents(text)
}

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
/// cannot read back ([`crate::Error::Yaml`] with go-yaml's message): a mapping key over 1,022
/// characters of JSON, or holding a raw U+0085 (a YAML line break), is
/// `yaml: [line N: ]did not find expected ',' or '}'`; a DEL, C1 control or U+FFFE/U+FFFF
/// anywhere (Go's JSON leaves them raw) is `yaml: control characters are not allowed`.
/// Otherwise the same text as [`to_string`]. istioctl's output and Istio's `toYaml` go
/// through `JSONToYAML`.
pub fn json_to_yaml(v: &Value) -> Result<String> {
    if let Some(e) = emit::json_read_error(v) {
        return Err(crate::Error::Yaml(e));
    }
    Ok(emit::to_string(v))
}

/// Recording of [`from_str`] inputs for [`traced`].
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
