//! JSON → YAML as sigs.k8s.io/yaml `JSONToYAML` writes it: go-yaml v2's encoder (`encode.go`:
//! sorted keys, scalar style choice) over a port of its libyaml emitter (`emitterc.go`: block
//! style, 2-space indent, width 80, quoting analysis). Only what JSON values need is ported: no
//! anchors, tags or flow collections other than `{}` and `[]`.

use std::borrow::Cow;
#[cfg(test)]
use std::cmp::Ordering;

use serde_json::{Map, Number, Value};

use super::resolve::{is_base60_float, resolve_plain, Resolved};
use super::YamlError;
use crate::go::float::format_g64;
use crate::go::json as gojson;

/// go-yaml's default preferred line width.
const BEST_WIDTH: usize = 80;
/// go-yaml's default indentation step.
const BEST_INDENT: isize = 2;
/// Longest key (in bytes) written as a simple `key: value` pair.
const MAX_SIMPLE_KEY: usize = 128;

/// Longest mapping key, in characters of its Go JSON encoding between the quotes, that
/// go-yaml's scanner reads back: a possible simple key is dropped once it is more than 1024
/// characters behind.
const MAX_JSON_KEY: usize = 1022;

/// Why sigs.k8s.io/yaml `JSONToYAML` cannot read back the Go JSON encoding of `v`, if it cannot:
/// go-yaml's reader refuses raw C1 controls, DEL and U+FFFE/U+FFFF (Go's JSON escapes only
/// C0 controls), and its scanner cannot take a key spanning lines (a raw U+0085 is a line break
/// to YAML) or longer than 1,022 characters. The message is go-yaml's; when both kinds occur,
/// the one go-yaml meets first wins (its reader decodes 512-byte chunks ahead of the scanner).
pub(crate) fn json_read_error(v: &Value) -> Option<YamlError> {
    if !needs_scan(v) {
        return None;
    }
    let text = gojson::to_string(v);
    let control_at = text.char_indices().find_map(|(i, c)| {
        matches!(c, '\u{7f}'..='\u{84}' | '\u{86}'..='\u{9f}' | '\u{fffe}' | '\u{ffff}')
            .then_some(i)
    });
    let key_at = key_error_at(&text);
    let indicator_at = document_indicator_at(&text);
    let first = match (key_at, indicator_at) {
        (Some(k), Some(d)) => Some(k.min(d)),
        (k, d) => k.or(d),
    };
    let control_wins = match (control_at, first) {
        (Some(b), Some(p)) => chunk_start(&text, b) <= p + 4,
        (Some(_), None) => true,
        _ => false,
    };
    if control_wins {
        return Some(syntax(None, "control characters are not allowed"));
    }
    let p = first?;
    let line = text[..p].matches('\u{85}').count();
    if Some(p) == indicator_at {
        // A scanner error: go-yaml reports the 1-based line.
        return Some(syntax(
            Some(line + 1),
            "found unexpected document indicator",
        ));
    }
    Some(syntax(
        (line != 0).then_some(line),
        "did not find expected ',' or '}'",
    ))
}

fn syntax(line: Option<usize>, problem: &str) -> YamlError {
    YamlError::Syntax {
        line,
        problem: problem.to_string(),
    }
}

/// Byte offset of the first `---` or `...` that starts a line inside a quoted scalar of JSON
/// `text` (right after a raw U+0085) and is followed by a blank or break: go-yaml's scanner
/// stops there (`found unexpected document indicator`).
fn document_indicator_at(text: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = text[from..].find('\u{85}') {
        let mut j = from + i;
        while text[j..].starts_with('\u{85}') {
            j += '\u{85}'.len_utf8();
        }
        let rest = &text[j..];
        if (rest.starts_with("---") || rest.starts_with("..."))
            && rest[3..]
                .chars()
                .next()
                .is_none_or(|c| matches!(c, ' ' | '\t' | '\u{85}'))
        {
            return Some(j);
        }
        from = j;
    }
    None
}

/// Does `v` hold anything `json_read_error` must look at (a U+0085 or a character go-yaml's
/// reader refuses anywhere, or a key long enough to matter)?
fn needs_scan(v: &Value) -> bool {
    let odd = |s: &str| {
        s.chars()
            .any(|c| matches!(c, '\u{7f}'..='\u{9f}' | '\u{fffe}' | '\u{ffff}'))
    };
    match v {
        Value::String(s) => odd(s),
        Value::Array(a) => a.iter().any(needs_scan),
        // A JSON escape is at most 6 characters: shorter keys cannot be too long.
        Value::Object(m) => m
            .iter()
            .any(|(k, x)| k.len() * 6 > MAX_JSON_KEY || odd(k) || needs_scan(x)),
        _ => false,
    }
}

/// Byte offset of the `:` after the first key of compact JSON `text` that go-yaml cannot take
/// as a key (one holding U+0085, or longer than [`MAX_JSON_KEY`] characters).
fn key_error_at(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'"' {
            i += 1;
            continue;
        }
        let start = i + 1;
        let mut j = start;
        while j < b.len() && b[j] != b'"' {
            j += if b[j] == b'\\' { 2 } else { 1 };
        }
        let end = j.min(b.len());
        if b.get(end + 1) == Some(&b':') {
            let key = &text[start..end];
            if key.contains('\u{85}') || key.chars().count() > MAX_JSON_KEY {
                return Some(end + 1);
            }
        }
        i = end + 1;
    }
    None
}

/// Start of the 512-byte chunk go-yaml's reader decodes byte `at` in (a chunk ends before a
/// character that does not fit whole; the next starts there).
fn chunk_start(text: &str, at: usize) -> usize {
    let mut start = 0;
    loop {
        let mut end = (start + 512).min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        if at < end || end == text.len() || end == start {
            return start;
        }
        start = end;
    }
}

/// Emit `v`; see [`crate::yaml::to_string`].
pub(crate) fn to_string(v: &Value) -> String {
    let mut e = Emitter::new();
    e.node(v, Ctx::ROOT);
    // Document end: finish the last line.
    e.indent = -1;
    e.write_indent();
    e.out
}

/// Scalar styles of the emitter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

/// The node context flags of libyaml's `yaml_emitter_emit_node`.
#[derive(Debug, Clone, Copy)]
struct Ctx {
    mapping: bool,
    simple_key: bool,
}

impl Ctx {
    const ROOT: Ctx = Ctx {
        mapping: false,
        simple_key: false,
    };
    const SEQUENCE_ITEM: Ctx = Ctx {
        mapping: false,
        simple_key: false,
    };
    const MAPPING_VALUE: Ctx = Ctx {
        mapping: true,
        simple_key: false,
    };
    const SIMPLE_KEY: Ctx = Ctx {
        mapping: true,
        simple_key: true,
    };
}

/// The result of libyaml's `yaml_emitter_analyze_scalar`.
#[derive(Debug, Clone, Copy)]
struct Analysis {
    multiline: bool,
    block_plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

/// Writer state of the libyaml emitter.
struct Emitter {
    out: String,
    column: usize,
    indent: isize,
    indents: Vec<isize>,
    whitespace: bool,
    indention: bool,
}

impl Emitter {
    fn new() -> Self {
        Emitter {
            out: String::new(),
            column: 0,
            indent: -1,
            indents: Vec::new(),
            whitespace: true,
            indention: true,
        }
    }

    // ----- low-level writers (emitterc.go: put, put_break, write_indent, write_indicator) -----

    fn put(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    fn put_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
    }

    /// Copy a line break character of a value (`write_break`).
    fn write_break(&mut self, c: char) {
        if c == '\n' {
            self.put_break();
        } else {
            self.out.push(c);
            self.column = 0;
        }
    }

    fn write_indent(&mut self) {
        let indent = usize::try_from(self.indent.max(0)).unwrap_or(0);
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    fn write_indicator(
        &mut self,
        indicator: &str,
        need_whitespace: bool,
        is_whitespace: bool,
        is_indention: bool,
    ) {
        if need_whitespace && !self.whitespace {
            self.put(' ');
        }
        for c in indicator.chars() {
            self.put(c);
        }
        self.whitespace = is_whitespace;
        self.indention = self.indention && is_indention;
    }

    fn increase_indent(&mut self, flow: bool, indentless: bool) {
        self.indents.push(self.indent);
        if self.indent < 0 {
            self.indent = if flow { BEST_INDENT } else { 0 };
        } else if !indentless {
            self.indent += BEST_INDENT;
        }
    }

    fn pop_indent(&mut self) {
        self.indent = self.indents.pop().unwrap_or(-1);
    }

    // ----- nodes -----

    fn node(&mut self, v: &Value, ctx: Ctx) {
        match v {
            Value::Null => self.scalar("null", Style::Plain, ctx),
            Value::Bool(b) => self.scalar(if *b { "true" } else { "false" }, Style::Plain, ctx),
            Value::Number(n) => self.scalar(&number_text(n), Style::Plain, ctx),
            Value::String(s) => {
                let s = fold_next_lines(s);
                self.scalar(&s, string_style(&s), ctx);
            }
            Value::Array(items) if items.is_empty() => self.empty_flow("[", "]"),
            Value::Object(map) if map.is_empty() => self.empty_flow("{", "}"),
            Value::Array(items) => self.block_sequence(items, ctx),
            Value::Object(map) => self.block_mapping(map),
        }
    }

    /// `[]` / `{}` (flow collection with no items).
    fn empty_flow(&mut self, open: &str, close: &str) {
        self.write_indicator(open, true, true, false);
        self.increase_indent(true, false);
        self.pop_indent();
        self.write_indicator(close, false, false, false);
    }

    fn block_sequence(&mut self, items: &[Value], ctx: Ctx) {
        let indentless = ctx.mapping && !self.indention;
        self.increase_indent(false, indentless);
        for item in items {
            self.write_indent();
            self.write_indicator("-", true, false, true);
            self.node(item, Ctx::SEQUENCE_ITEM);
        }
        self.pop_indent();
    }

    fn block_mapping(&mut self, map: &Map<String, Value>) {
        self.increase_indent(false, false);
        for (k, v) in sorted_entries(map) {
            let k = k.as_ref();
            self.write_indent();
            let style = string_style(k);
            let a = analyze(k);
            // `yaml_emitter_check_simple_key`.
            if !a.multiline && k.len() <= MAX_SIMPLE_KEY {
                self.scalar_analyzed(k, &a, style, Ctx::SIMPLE_KEY);
                self.write_indicator(":", false, false, false);
            } else {
                self.write_indicator("?", true, false, true);
                self.scalar_analyzed(k, &a, style, Ctx::MAPPING_VALUE);
                self.write_indent();
                self.write_indicator(":", true, false, true);
            }
            self.node(v, Ctx::MAPPING_VALUE);
        }
        self.pop_indent();
    }

    /// `yaml_emitter_emit_scalar`: choose the final style, then write at an increased indent.
    fn scalar(&mut self, value: &str, requested: Style, ctx: Ctx) {
        self.scalar_analyzed(value, &analyze(value), requested, ctx);
    }

    /// [`Emitter::scalar`] with the analysis of `value` already done.
    fn scalar_analyzed(&mut self, value: &str, a: &Analysis, requested: Style, ctx: Ctx) {
        let style = select_style(requested, a, value.is_empty(), ctx.simple_key);
        self.increase_indent(true, false);
        let allow_breaks = !ctx.simple_key;
        match style {
            Style::Plain => self.write_plain(value, allow_breaks),
            Style::Single => self.write_single(value, allow_breaks),
            Style::Double => self.write_double(value, allow_breaks),
            Style::Literal => self.write_literal(value),
        }
        self.pop_indent();
    }

    // ----- scalar writers -----

    /// Fast path of the scalar writers: when no character of `value` needs special treatment
    /// (`special`) and no space can be reached past column 80 (so no folding), copy it as is.
    fn push_unfoldable(
        &mut self,
        value: &str,
        allow_breaks: bool,
        special: impl Fn(char) -> bool,
    ) -> bool {
        let (ascii, len) = if value.is_ascii() {
            (true, value.len())
        } else {
            (false, value.chars().count())
        };
        let may_fold = allow_breaks && self.column + len > BEST_WIDTH && value.contains(' ');
        let has_special = if ascii {
            value.bytes().any(|b| special(char::from(b)))
        } else {
            value.chars().any(&special)
        };
        if may_fold || has_special {
            return false;
        }
        self.out.push_str(value);
        self.column += len;
        true
    }

    fn write_plain(&mut self, value: &str, allow_breaks: bool) {
        if !self.whitespace {
            self.put(' ');
        }
        // Plain scalars have no line breaks; without a space past column 80 nothing folds.
        if self.push_unfoldable(value, allow_breaks, |_| false) {
            self.whitespace = false;
            self.indention = false;
            return;
        }
        let mut spaces = false;
        let mut breaks = false;
        let mut chars = value.chars().peekable();
        while let Some(c) = chars.next() {
            if c == ' ' {
                let next_space = chars.peek() == Some(&' ');
                if allow_breaks && !spaces && self.column > BEST_WIDTH && !next_space {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else if is_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.put(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.whitespace = false;
        self.indention = false;
    }

    fn write_single(&mut self, value: &str, allow_breaks: bool) {
        self.write_indicator("'", true, false, false);
        if self.push_unfoldable(value, allow_breaks, |c| c == '\'' || is_break(c)) {
            self.write_indicator("'", false, false, false);
            self.whitespace = false;
            self.indention = false;
            return;
        }
        let mut spaces = false;
        let mut breaks = false;
        let mut chars = value.chars().peekable();
        let mut first = true;
        while let Some(c) = chars.next() {
            let (is_first, next) = (first, chars.peek().copied());
            first = false;
            if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && !is_first
                    && next.is_some_and(|n| n != ' ')
                {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else if is_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if c == '\'' {
                    self.put('\'');
                }
                self.put(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.write_indicator("'", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_double(&mut self, value: &str, allow_breaks: bool) {
        self.write_indicator("\"", true, false, false);
        let starts_with_bom = value.starts_with('\u{FEFF}');
        let needs_escape = |c: char| !is_printable(c) || is_break(c) || c == '"' || c == '\\';
        if !starts_with_bom && self.push_unfoldable(value, allow_breaks, needs_escape) {
            self.write_indicator("\"", false, false, false);
            self.whitespace = false;
            self.indention = false;
            return;
        }
        let mut spaces = false;
        let mut chars = value.chars().peekable();
        let mut first = true;
        while let Some(c) = chars.next() {
            let (is_first, next) = (first, chars.peek().copied());
            first = false;
            if !is_printable(c) || starts_with_bom || is_break(c) || c == '"' || c == '\\' {
                self.put('\\');
                self.write_escape(c);
                spaces = false;
            } else if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && !is_first
                    && next.is_some()
                {
                    self.write_indent();
                    if next == Some(' ') {
                        self.put('\\');
                    }
                } else {
                    self.put(c);
                }
                spaces = true;
            } else {
                self.put(c);
                spaces = false;
            }
        }
        self.write_indicator("\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    /// The escape sequence (after `\`) for `c` in a double-quoted scalar.
    fn write_escape(&mut self, c: char) {
        let short = match c {
            '\0' => Some('0'),
            '\u{7}' => Some('a'),
            '\u{8}' => Some('b'),
            '\t' => Some('t'),
            '\n' => Some('n'),
            '\u{b}' => Some('v'),
            '\u{c}' => Some('f'),
            '\r' => Some('r'),
            '\u{1b}' => Some('e'),
            '"' => Some('"'),
            '\\' => Some('\\'),
            '\u{85}' => Some('N'),
            '\u{a0}' => Some('_'),
            '\u{2028}' => Some('L'),
            '\u{2029}' => Some('P'),
            _ => None,
        };
        if let Some(s) = short {
            self.put(s);
            return;
        }
        let v = u32::from(c);
        let (prefix, digits) = if v <= 0xFF {
            ('x', 2)
        } else if v <= 0xFFFF {
            ('u', 4)
        } else {
            ('U', 8)
        };
        self.put(prefix);
        for k in (0..digits).rev() {
            let d = (v >> (k * 4)) & 0xF;
            self.put(char::from_digit(d, 16).map_or('0', |h| h.to_ascii_uppercase()));
        }
    }

    fn write_literal(&mut self, value: &str) {
        self.write_indicator("|", true, false, false);
        self.write_block_hints(value);
        self.put_break();
        self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        let mut rest = value;
        while let Some(c) = rest.chars().next() {
            if is_break(c) {
                self.write_break(c);
                self.indention = true;
                breaks = true;
                rest = &rest[c.len_utf8()..];
            } else {
                if breaks {
                    self.write_indent();
                }
                // Copy the run of characters up to the next break at once.
                let end = rest.find(is_break).unwrap_or(rest.len());
                let run = &rest[..end];
                self.out.push_str(run);
                self.column += if run.is_ascii() {
                    run.len()
                } else {
                    run.chars().count()
                };
                self.indention = false;
                breaks = false;
                rest = &rest[end..];
            }
        }
    }

    /// Indentation indicator (when the text starts with a space or break) and chomping indicator.
    fn write_block_hints(&mut self, value: &str) {
        if value.starts_with(' ') || value.chars().next().is_some_and(is_break) {
            self.write_indicator("2", false, false, false);
        }
        let mut rev = value.chars().rev();
        let chomp = match (rev.next(), rev.next()) {
            (None, _) => Some("-"),
            (Some(last), _) if !is_break(last) => Some("-"),
            (Some(_), None) => Some("+"),
            (Some(_), Some(prev)) if is_break(prev) => Some("+"),
            _ => None,
        };
        if let Some(h) = chomp {
            self.write_indicator(h, false, false, false);
        }
    }
}

/// go-yaml's `stringv`: literal for multi-line text, plain when the text reads back as the same
/// string, double-quoted otherwise (the emitter may still change plain to quoted).
fn string_style(s: &str) -> Style {
    if s.contains('\n') {
        Style::Literal
    } else if resolve_plain(s) == Resolved::Str && !is_base60_float(s) {
        // `<<` included: go-yaml's encoder resolves it as a string (no resolve hint for `<`)
        // and writes it plain, although its decoder reads a plain `<<` key as a merge.
        Style::Plain
    } else {
        Style::Double
    }
}

/// `yaml_emitter_select_scalar_style` for block context (flow level 0, implicit tags).
fn select_style(requested: Style, a: &Analysis, empty: bool, simple_key: bool) -> Style {
    let mut style = requested;
    if simple_key && a.multiline {
        style = Style::Double;
    }
    if style == Style::Plain && (!a.block_plain_allowed || (empty && simple_key)) {
        style = Style::Single;
    }
    if style == Style::Single && !a.single_quoted_allowed {
        style = Style::Double;
    }
    if style == Style::Literal && (!a.block_allowed || simple_key) {
        style = Style::Double;
    }
    style
}

/// libyaml's line break characters.
fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// libyaml's `is_printable` (note: characters above U+FFFF are not "printable").
fn is_printable(c: char) -> bool {
    let v = u32::from(c);
    v == 0x0A
        || (0x20..=0x7E).contains(&v)
        || (0xA0..=0xD7FF).contains(&v)
        || ((0xE000..=0xFFFD).contains(&v) && v != 0xFEFF)
}

/// `yaml_emitter_analyze_scalar` (block-context fields only).
fn analyze(value: &str) -> Analysis {
    // Fast path: starting with a letter or digit, then only visible ASCII (no space), not
    // ending with `:`: nothing to flag in block context.
    let b = value.as_bytes();
    if b.first().is_some_and(u8::is_ascii_alphanumeric)
        && b.iter().all(u8::is_ascii_graphic)
        && b.last() != Some(&b':')
    {
        return Analysis {
            multiline: false,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: true,
        };
    }
    if value.is_empty() {
        return Analysis {
            multiline: false,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: false,
        };
    }
    let mut block_indicators = value.starts_with("---") || value.starts_with("...");
    let mut line_breaks = false;
    let mut special_characters = false;
    let (mut leading_space, mut leading_break) = (false, false);
    let (mut trailing_space, mut trailing_break) = (false, false);
    let (mut break_space, mut space_break) = (false, false);
    let (mut previous_space, mut previous_break) = (false, false);
    let mut preceded_by_whitespace = true;
    let mut chars = value.chars().peekable();
    let mut i = 0;
    while let Some(c) = chars.next() {
        let next = chars.peek().copied();
        let is_last = next.is_none();
        let followed_by_whitespace = matches!(next, None | Some(' ' | '\t'));
        if i == 0 {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => block_indicators = true,
                '?' | ':' | '-' if followed_by_whitespace => block_indicators = true,
                _ => {}
            }
        } else {
            match c {
                ':' if followed_by_whitespace => block_indicators = true,
                '#' if preceded_by_whitespace => block_indicators = true,
                _ => {}
            }
        }
        if !is_printable(c) {
            special_characters = true;
        }
        if c == ' ' {
            leading_space |= i == 0;
            trailing_space |= is_last;
            break_space |= previous_break;
            previous_space = true;
            previous_break = false;
        } else if is_break(c) {
            line_breaks = true;
            leading_break |= i == 0;
            trailing_break |= is_last;
            space_break |= previous_space;
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_whitespace = matches!(c, ' ' | '\t' | '\0') || is_break(c);
        i += 1;
    }
    let mut a = Analysis {
        multiline: line_breaks,
        block_plain_allowed: true,
        single_quoted_allowed: true,
        block_allowed: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        a.block_plain_allowed = false;
    }
    if trailing_space {
        a.block_allowed = false;
    }
    if break_space {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
    }
    if space_break || special_characters {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
        a.block_allowed = false;
    }
    if line_breaks || block_indicators {
        a.block_plain_allowed = false;
    }
    a
}

/// A JSON number as go-yaml re-reads Go's JSON text of it and writes it back: integers as
/// integers (also integral floats, which Go's JSON writes without a fraction), other floats in
/// Go's shortest `'g'` format.
fn number_text(n: &Number) -> String {
    let mut json = String::new();
    gojson::write_number(&mut json, n);
    match resolve_plain(&json) {
        Resolved::Int(i) => i.to_string(),
        Resolved::Uint(u) => u.to_string(),
        Resolved::Float(f) => format_g64(f),
        _ => json,
    }
}

/// The entries of `map` in go-yaml v2's key order (`sorter.go` `keyList.Less`): runs of digits
/// compare numerically, non-letters sort before letters, otherwise by code point.
///
/// That order is not always transitive (`0o7`, `1_000`, `010~` form a cycle); Go then depends
/// on its random map iteration order, so any result is as good. A hand-written merge sort is
/// used because the standard sorts may panic on such comparators.
fn sorted_entries(map: &Map<String, Value>) -> Vec<(Cow<'_, str>, &Value)> {
    let entries: Vec<(Cow<'_, str>, &Value)> =
        map.iter().map(|(k, v)| (fold_next_lines(k), v)).collect();
    let mut order: Vec<usize> = (0..entries.len()).collect();
    if entries.iter().all(|(k, _)| k.is_ascii()) {
        // Byte positions are character positions: compare the bytes in place.
        let keys: Vec<&[u8]> = entries.iter().map(|(k, _)| k.as_bytes()).collect();
        merge_sort(&mut order, &|a, b| key_less(keys[a], keys[b]));
    } else {
        let keys: Vec<Vec<char>> = entries.iter().map(|(k, _)| k.chars().collect()).collect();
        merge_sort(&mut order, &|a, b| key_less(&keys[a], &keys[b]));
    }
    let mut slots: Vec<Option<(Cow<'_, str>, &Value)>> = entries.into_iter().map(Some).collect();
    order.into_iter().filter_map(|i| slots[i].take()).collect()
}

/// Go's JSON encoder leaves U+0085 (NEL) unescaped, and go-yaml, re-reading that JSON text as
/// a double-quoted YAML scalar, takes it for a line break and folds it: the spaces around a run
/// of NELs go, one NEL becomes a space, `n` NELs become `n - 1` newlines.
fn fold_next_lines(s: &str) -> Cow<'_, str> {
    if !s.contains('\u{85}') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(pos) = rest.find('\u{85}') {
        out.push_str(rest[..pos].trim_end_matches(' '));
        let after = &rest[pos..];
        let run_end = after
            .find(|c| c != '\u{85}' && c != ' ')
            .unwrap_or(after.len());
        let breaks = after[..run_end].matches('\u{85}').count();
        if breaks == 1 {
            out.push(' ');
        } else {
            out.extend(std::iter::repeat_n('\n', breaks - 1));
        }
        rest = &after[run_end..];
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// Stable merge sort (insertion sort for short runs) that tolerates inconsistent comparators.
fn merge_sort(v: &mut [usize], less: &dyn Fn(usize, usize) -> bool) {
    if v.len() <= 12 {
        for i in 1..v.len() {
            let mut j = i;
            while j > 0 && less(v[j], v[j - 1]) {
                v.swap(j, j - 1);
                j -= 1;
            }
        }
        return;
    }
    let mid = v.len() / 2;
    merge_sort(&mut v[..mid], less);
    merge_sort(&mut v[mid..], less);
    let mut merged = Vec::with_capacity(v.len());
    let (mut i, mut j) = (0, mid);
    while i < mid && j < v.len() {
        if less(v[j], v[i]) {
            merged.push(v[j]);
            j += 1;
        } else {
            merged.push(v[i]);
            i += 1;
        }
    }
    merged.extend_from_slice(&v[i..mid]);
    merged.extend_from_slice(&v[j..]);
    v.copy_from_slice(&merged);
}

/// Compare two keys as go-yaml v2 does (see [`sorted_entries`]).
#[cfg(test)]
pub(crate) fn key_order(a: &str, b: &str) -> Ordering {
    let (ar, br): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    if key_less(&ar, &br) {
        Ordering::Less
    } else if key_less(&br, &ar) {
        Ordering::Greater
    } else {
        Ordering::Equal
    }
}

fn key_less<T: Copy + Into<char>>(ar: &[T], br: &[T]) -> bool {
    for i in 0..ar.len().min(br.len()) {
        let (ac, bc): (char, char) = (ar[i].into(), br[i].into());
        if ac == bc {
            continue;
        }
        let al = ac.is_alphabetic();
        let bl = bc.is_alphabetic();
        if al && bl {
            return ac < bc;
        }
        if al || bl {
            return bl;
        }
        let (mut an, mut bn): (i64, i64) = (0, 0);
        if ac == '0' || bc == '0' {
            for j in (0..i).rev() {
                let cj: char = ar[j].into();
                if !cj.is_numeric() {
                    break;
                }
                if cj != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let ai = digit_run(ar, i, &mut an);
        let bi = digit_run(br, i, &mut bn);
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return ac < bc;
    }
    ar.len() < br.len()
}

/// Accumulate the digit run starting at `i` into `n` (wrapping like Go); return its end.
fn digit_run<T: Copy + Into<char>>(s: &[T], i: usize, n: &mut i64) -> usize {
    let mut k = i;
    while k < s.len() && s[k].into().is_numeric() {
        let d = i64::from(u32::from(s[k].into())) - i64::from(u32::from('0'));
        *n = n.wrapping_mul(10).wrapping_add(d);
        k += 1;
    }
    k
}
