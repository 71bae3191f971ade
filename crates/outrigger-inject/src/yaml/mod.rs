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
//! Layout: `resolve` (YAML 1.1 plain-scalar resolution shared by both directions), `parse`
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
mod gofmt;
mod parse;
mod resolve;
mod split;
#[cfg(test)]
mod tests_emit;
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
    parse::from_str(text)
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
