//! Reader and scanner of go-yaml v2 (gopkg.in/yaml.v2 `readerc.go`, `scannerc.go`), itself a
//! port of libyaml's, re-written in safe Rust: characters → tokens.
//!
//! It is a line-by-line port, kept close to the original so that it can be compared with it:
//! every error, and every input go-yaml accepts, comes from the same code path. go-yaml's own
//! departures from libyaml are kept on purpose, because Kubernetes reads YAML with them:
//!
//! * the reader decodes (and checks for control characters) in 512-byte chunks of input as the
//!   scanner asks for more characters, so a bad character far after the end of the first document
//!   may never be seen;
//! * a byte order mark is skipped at a line start only when the *read buffer* starts with one;
//! * the scanner stops fetching tokens as soon as the head token is not a possible simple key
//!   (go-yaml's `simple_keys_by_tok`), which decides what `[]: b` means;
//! * escapes are libyaml's plus `\'` and `\<TAB>`; `\/` is an error.
//!
//! The port and libyaml are MIT licensed (Copyright (c) 2006 Kirill Simonov), see
//! `LICENSE-libyaml` next to this file.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

/// Size of go-yaml's raw input buffer: the reader validates input in chunks of this size.
const RAW_BUFFER_SIZE: usize = 512;
/// go-yaml's limit on the flow nesting level.
const MAX_FLOW_LEVEL: usize = 10_000;
/// go-yaml's limit on the number of block indentation levels.
const MAX_INDENTS: usize = 10_000;

/// A position in the text: character index, line and column (all 0-based, in characters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Mark {
    /// Characters before the position.
    pub index: usize,
    /// Line (0-based).
    pub line: usize,
    /// Column (0-based, in characters).
    pub column: usize,
}

/// Style of a scalar token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ScalarStyle {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
    Folded,
}

/// What a token is, with its data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum TokenKind {
    StreamStart,
    StreamEnd,
    VersionDirective { major: i8, minor: i8 },
    TagDirective { handle: Vec<u8>, prefix: Vec<u8> },
    DocumentStart,
    DocumentEnd,
    BlockSequenceStart,
    BlockMappingStart,
    BlockEnd,
    FlowSequenceStart,
    FlowSequenceEnd,
    FlowMappingStart,
    FlowMappingEnd,
    BlockEntry,
    FlowEntry,
    Key,
    Value,
    Alias(Vec<u8>),
    Anchor(Vec<u8>),
    Tag { handle: Vec<u8>, suffix: Vec<u8> },
    Scalar { value: Vec<u8>, style: ScalarStyle },
}

/// A token and where it starts and ends.
#[derive(Clone, Debug)]
pub(super) struct Token {
    pub kind: TokenKind,
    pub start: Mark,
    pub end: Mark,
}

/// Which stage failed (it decides how go-yaml prints the line).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ErrorKind {
    Reader,
    Scanner,
    Parser,
}

/// go-yaml's parser error fields.
#[derive(Clone, Debug)]
pub(super) struct ScanError {
    pub kind: ErrorKind,
    pub context_mark: Mark,
    pub problem: String,
    pub problem_mark: Mark,
}

impl ScanError {
    /// The error go-yaml's `parser.fail` builds (`yaml: line L: problem`), where L is the
    /// problem line (1-based for scanner errors, 0-based for parser errors: go-yaml's own
    /// off-by-one) or else the context line, and no line at all when both are 0.
    pub fn to_error(&self) -> super::YamlError {
        let mut line = 0;
        if self.problem_mark.line != 0 {
            line = self.problem_mark.line;
            if self.kind == ErrorKind::Scanner {
                line += 1;
            }
        } else if self.context_mark.line != 0 {
            line = self.context_mark.line;
        }
        let problem = if self.problem.is_empty() {
            "unknown problem parsing YAML content"
        } else {
            &self.problem
        };
        super::YamlError::Syntax {
            line: (line != 0).then_some(line),
            problem: problem.to_string(),
        }
    }
}

/// Result of the scanner's steps.
pub(super) type ScanResult<T> = Result<T, ScanError>;

/// A possible simple key (go-yaml's `yaml_simple_key_t`).
#[derive(Clone, Copy, Debug, Default)]
struct SimpleKey {
    possible: bool,
    required: bool,
    token_number: usize,
    mark: Mark,
}

/// The reader and scanner state (the scanner half of go-yaml's `yaml_parser_t`).
pub(super) struct Scanner<'a> {
    input: &'a [u8],

    // Reader. The read buffer holds the input's own bytes (UTF-8 in, UTF-8 out), so instead of a
    // copy it is tracked as positions in `input`; bytes past the end read as 0, as go-yaml pads.
    /// Input position of the next character (go-yaml's `buffer_pos`).
    pos: usize,
    /// Characters decoded but not consumed (go-yaml's `unread`, end-of-input NULs included).
    unread: usize,
    /// Input position up to which characters were decoded (the raw buffer's read position).
    decoded: usize,
    /// Input position where the raw buffer starts.
    raw_start: usize,
    /// Input position up to which input was read into the raw buffer.
    raw_end: usize,
    /// The input was read to its end.
    eof: bool,
    /// The encoding (and a leading byte order mark) was looked at.
    encoding_set: bool,
    /// Input position of the read buffer's first byte (go-yaml checks for a byte order mark
    /// there, not at the current position).
    buf_base: usize,
    /// Input position of the read buffer's end (past the input: NULs added at its end).
    buf_end: usize,
    /// Current position.
    mark: Mark,

    // Scanner.
    stream_start_produced: bool,
    /// The parser consumed the stream end token.
    pub(super) stream_end_produced: bool,
    flow_level: usize,
    tokens: VecDeque<Token>,
    tokens_parsed: usize,
    token_available: bool,
    indent: isize,
    indents: Vec<isize>,
    simple_key_allowed: bool,
    simple_keys: Vec<SimpleKey>,
    simple_keys_by_tok: FxHashMap<usize, usize>,
}

/// Width in bytes of the UTF-8 character starting with `b` (1 for a stray continuation byte,
/// which valid input never has at a character start).
fn width(b: u8) -> usize {
    if b & 0x80 == 0 {
        1
    } else if b & 0xE0 == 0xC0 {
        2
    } else if b & 0xF0 == 0xE0 {
        3
    } else if b & 0xF8 == 0xF0 {
        4
    } else {
        1
    }
}

fn is_alpha(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
}

fn is_hex(c: u8) -> bool {
    c.is_ascii_hexdigit()
}

fn as_hex(c: u8) -> u32 {
    match c {
        b'A'..=b'F' => u32::from(c - b'A') + 10,
        b'a'..=b'f' => u32::from(c - b'a') + 10,
        _ => u32::from(c.wrapping_sub(b'0')),
    }
}

/// Append the UTF-8 encoding of `value` (already checked to be a scalar value) to `s`.
fn push_code_point(s: &mut Vec<u8>, value: u32) {
    let mut buf = [0u8; 4];
    let c = char::from_u32(value).unwrap_or('\u{FFFD}');
    s.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
}

impl<'a> Scanner<'a> {
    /// A scanner over `input` (go-yaml replaces an empty input by a line break).
    pub(super) fn new(input: &'a str) -> Self {
        let input = if input.is_empty() {
            b"\n".as_slice()
        } else {
            input.as_bytes()
        };
        Scanner {
            input,
            pos: 0,
            unread: 0,
            decoded: 0,
            raw_start: 0,
            raw_end: 0,
            eof: false,
            encoding_set: false,
            buf_base: 0,
            buf_end: 0,
            mark: Mark::default(),
            stream_start_produced: false,
            stream_end_produced: false,
            flow_level: 0,
            tokens: VecDeque::new(),
            tokens_parsed: 0,
            token_available: false,
            indent: 0,
            indents: Vec::new(),
            simple_key_allowed: false,
            simple_keys: Vec::new(),
            simple_keys_by_tok: FxHashMap::default(),
        }
    }

    // ---------------------------------------------------------------------------------------
    // Reader

    /// The byte `k` places after the current position (0 past the input, as go-yaml pads).
    #[inline]
    fn at(&self, k: usize) -> u8 {
        self.input.get(self.pos + k).copied().unwrap_or(0)
    }

    fn reader_error(&self, problem: &str) -> ScanError {
        ScanError {
            kind: ErrorKind::Reader,
            context_mark: Mark::default(),
            problem: problem.to_string(),
            problem_mark: Mark::default(),
        }
    }

    /// go-yaml's `yaml_parser_update_raw_buffer` over the input string.
    fn update_raw_buffer(&mut self) {
        if self.decoded == self.raw_start && self.raw_end - self.raw_start == RAW_BUFFER_SIZE {
            return;
        }
        if self.eof {
            return;
        }
        self.raw_start = self.decoded;
        let room = RAW_BUFFER_SIZE - (self.raw_end - self.decoded);
        if self.raw_end == self.input.len() {
            self.eof = true;
        } else {
            self.raw_end += room.min(self.input.len() - self.raw_end);
        }
    }

    /// go-yaml's `yaml_parser_determine_encoding` (UTF-8 only: the input is a Rust string).
    fn determine_encoding(&mut self) {
        while !self.eof && self.raw_end - self.decoded < 3 {
            self.update_raw_buffer();
        }
        if self.input[self.decoded..self.raw_end].starts_with(b"\xEF\xBB\xBF") {
            self.decoded += 3;
            self.pos = self.decoded;
            self.buf_base = self.decoded;
            self.buf_end = self.decoded;
        }
        self.encoding_set = true;
    }

    /// go-yaml's `yaml_parser_update_buffer`: make at least `length` characters available.
    #[inline(never)]
    fn update_buffer(&mut self, length: usize) -> ScanResult<()> {
        if self.unread >= length {
            return Ok(());
        }
        if !self.encoding_set {
            self.determine_encoding();
        }
        if (self.pos > self.buf_base && self.pos < self.buf_end) || self.pos == self.buf_end {
            self.buf_base = self.pos;
        }
        let mut first = true;
        while self.unread < length {
            if !first || self.decoded == self.raw_end {
                self.update_raw_buffer();
            }
            first = false;
            while self.decoded != self.raw_end {
                let octet = self.input[self.decoded];
                if octet < 0x80 {
                    // ASCII: the common case, checked without decoding.
                    if !matches!(octet, 0x09 | 0x0A | 0x0D | 0x20..=0x7E) {
                        return Err(self.reader_error("control characters are not allowed"));
                    }
                    self.decoded += 1;
                    self.unread += 1;
                    continue;
                }
                let w = match octet {
                    _ if octet & 0x80 == 0 => 1,
                    _ if octet & 0xE0 == 0xC0 => 2,
                    _ if octet & 0xF0 == 0xE0 => 3,
                    _ if octet & 0xF8 == 0xF0 => 4,
                    _ => return Err(self.reader_error("invalid leading UTF-8 octet")),
                };
                if w > self.raw_end - self.decoded {
                    if self.eof {
                        return Err(self.reader_error("incomplete UTF-8 octet sequence"));
                    }
                    break;
                }
                let value = std::str::from_utf8(&self.input[self.decoded..self.decoded + w])
                    .ok()
                    .and_then(|s| s.chars().next())
                    .map_or(0xFFFD, u32::from);
                let allowed = matches!(value, 0x09 | 0x0A | 0x0D | 0x20..=0x7E | 0x85)
                    || (0xA0..=0xD7FF).contains(&value)
                    || (0xE000..=0xFFFD).contains(&value)
                    || (0x10000..=0x10_FFFF).contains(&value);
                if !allowed {
                    return Err(self.reader_error("control characters are not allowed"));
                }
                self.decoded += w;
                self.unread += 1;
            }
            self.buf_end = self.buf_end.max(self.decoded);
            if self.eof {
                self.buf_end = self.buf_end.max(self.input.len()) + 1;
                self.unread += 1;
                break;
            }
        }
        Ok(())
    }

    /// go-yaml's `cache`: at least `length` characters available.
    #[inline]
    fn cache(&mut self, length: usize) -> ScanResult<()> {
        if self.unread >= length {
            Ok(())
        } else {
            self.update_buffer(length)
        }
    }

    fn skip(&mut self) {
        self.mark.index += 1;
        self.mark.column += 1;
        self.unread = self.unread.saturating_sub(1);
        self.pos += width(self.at(0));
    }

    fn skip_line(&mut self) {
        if self.is_crlf() {
            self.mark.index += 2;
            self.mark.column = 0;
            self.mark.line += 1;
            self.unread = self.unread.saturating_sub(2);
            self.pos += 2;
        } else if self.is_break(0) {
            self.mark.index += 1;
            self.mark.column = 0;
            self.mark.line += 1;
            self.unread = self.unread.saturating_sub(1);
            self.pos += width(self.at(0));
        }
    }

    /// Append the current character to `s` and move past it.
    fn read(&mut self, s: &mut Vec<u8>) {
        let w = width(self.at(0));
        let end = (self.pos + w).min(self.input.len());
        s.extend_from_slice(&self.input[self.pos.min(end)..end]);
        self.pos += w;
        self.mark.index += 1;
        self.mark.column += 1;
        self.unread = self.unread.saturating_sub(1);
    }

    /// Append the current line break (normalised as go-yaml does) to `s` and move past it.
    fn read_line(&mut self, s: &mut Vec<u8>) {
        let (b0, b1, b2) = (self.at(0), self.at(1), self.at(2));
        if b0 == b'\r' && b1 == b'\n' {
            s.push(b'\n');
            self.pos += 2;
            self.mark.index += 1;
            self.unread = self.unread.saturating_sub(1);
        } else if b0 == b'\r' || b0 == b'\n' {
            s.push(b'\n');
            self.pos += 1;
        } else if b0 == 0xC2 && b1 == 0x85 {
            s.push(b'\n');
            self.pos += 2;
        } else if b0 == 0xE2 && b1 == 0x80 && (b2 == 0xA8 || b2 == 0xA9) {
            s.extend_from_slice(&[b0, b1, b2]);
            self.pos += 3;
        } else {
            return;
        }
        self.mark.index += 1;
        self.mark.column = 0;
        self.mark.line += 1;
        self.unread = self.unread.saturating_sub(1);
    }

    // Character classes at offset `k` from the current position.

    fn is_z(&self, k: usize) -> bool {
        self.at(k) == 0
    }
    fn is_space(&self, k: usize) -> bool {
        self.at(k) == b' '
    }
    fn is_tab(&self, k: usize) -> bool {
        self.at(k) == b'\t'
    }
    fn is_blank(&self, k: usize) -> bool {
        matches!(self.at(k), b' ' | b'\t')
    }
    fn is_crlf(&self) -> bool {
        self.at(0) == b'\r' && self.at(1) == b'\n'
    }
    fn is_break(&self, k: usize) -> bool {
        match self.at(k) {
            b'\r' | b'\n' => true,
            0xC2 => self.at(k + 1) == 0x85,
            0xE2 => self.at(k + 1) == 0x80 && matches!(self.at(k + 2), 0xA8 | 0xA9),
            _ => false,
        }
    }
    fn is_breakz(&self, k: usize) -> bool {
        self.is_break(k) || self.is_z(k)
    }
    fn is_blankz(&self, k: usize) -> bool {
        self.is_blank(k) || self.is_breakz(k)
    }
    /// go-yaml's `is_bom`, which looks at the start of the read buffer.
    fn buffer_starts_with_bom(&self) -> bool {
        self.input
            .get(self.buf_base..)
            .is_some_and(|b| b.starts_with(b"\xEF\xBB\xBF"))
    }

    // ---------------------------------------------------------------------------------------
    // Token queue

    fn scanner_error(&self, context_mark: Mark, problem: impl Into<String>) -> ScanError {
        ScanError {
            kind: ErrorKind::Scanner,
            context_mark,
            problem: problem.into(),
            problem_mark: self.mark,
        }
    }

    /// go-yaml's `yaml_insert_token`: at `pos` places after the head, or at the end when
    /// `pos` is negative.
    fn insert_token(&mut self, pos: isize, token: Token) {
        match usize::try_from(pos) {
            Ok(p) if p <= self.tokens.len() => self.tokens.insert(p, token),
            _ => self.tokens.push_back(token),
        }
    }

    fn push_token(&mut self, kind: TokenKind, start: Mark, end: Mark) {
        self.insert_token(-1, Token { kind, start, end });
    }

    /// The next token, fetching more when needed (go-yaml's `peek_token`).
    pub(super) fn peek_token(&mut self) -> ScanResult<&Token> {
        if !self.token_available {
            self.fetch_more_tokens()?;
        }
        match self.tokens.front() {
            Some(t) => Ok(t),
            None => Err(self.scanner_error(self.mark, "internal error: no token")),
        }
    }

    /// Consume the head token (go-yaml's `skip_token`) and return it.
    pub(super) fn skip_token(&mut self) -> Option<Token> {
        self.token_available = false;
        self.tokens_parsed += 1;
        let t = self.tokens.pop_front();
        self.stream_end_produced = t.as_ref().is_some_and(|t| t.kind == TokenKind::StreamEnd);
        t
    }

    fn fetch_more_tokens(&mut self) -> ScanResult<()> {
        loop {
            if !self.tokens.is_empty() {
                let Some(&i) = self.simple_keys_by_tok.get(&self.tokens_parsed) else {
                    break;
                };
                if !self.simple_key_is_valid(i)? {
                    break;
                }
            }
            self.fetch_next_token()?;
        }
        self.token_available = true;
        Ok(())
    }

    fn fetch_next_token(&mut self) -> ScanResult<()> {
        self.cache(1)?;
        if !self.stream_start_produced {
            self.fetch_stream_start();
            return Ok(());
        }
        self.scan_to_next_token()?;
        self.unroll_indent(self.mark.column as isize);
        self.cache(4)?;
        if self.is_z(0) {
            return self.fetch_stream_end();
        }
        let c = self.at(0);
        if self.mark.column == 0 && c == b'%' {
            return self.fetch_directive();
        }
        if self.mark.column == 0
            && c == b'-'
            && self.at(1) == b'-'
            && self.at(2) == b'-'
            && self.is_blankz(3)
        {
            return self.fetch_document_indicator(TokenKind::DocumentStart);
        }
        if self.mark.column == 0
            && c == b'.'
            && self.at(1) == b'.'
            && self.at(2) == b'.'
            && self.is_blankz(3)
        {
            return self.fetch_document_indicator(TokenKind::DocumentEnd);
        }
        match c {
            b'[' => return self.fetch_flow_collection_start(TokenKind::FlowSequenceStart),
            b'{' => return self.fetch_flow_collection_start(TokenKind::FlowMappingStart),
            b']' => return self.fetch_flow_collection_end(TokenKind::FlowSequenceEnd),
            b'}' => return self.fetch_flow_collection_end(TokenKind::FlowMappingEnd),
            b',' => return self.fetch_flow_entry(),
            _ => {}
        }
        if c == b'-' && self.is_blankz(1) {
            return self.fetch_block_entry();
        }
        if c == b'?' && (self.flow_level > 0 || self.is_blankz(1)) {
            return self.fetch_key();
        }
        if c == b':' && (self.flow_level > 0 || self.is_blankz(1)) {
            return self.fetch_value();
        }
        match c {
            b'*' => return self.fetch_anchor(true),
            b'&' => return self.fetch_anchor(false),
            b'!' => return self.fetch_tag(),
            b'|' if self.flow_level == 0 => return self.fetch_block_scalar(true),
            b'>' if self.flow_level == 0 => return self.fetch_block_scalar(false),
            b'\'' => return self.fetch_flow_scalar(true),
            b'"' => return self.fetch_flow_scalar(false),
            _ => {}
        }
        let indicator = self.is_blankz(0)
            || matches!(
                c,
                b'-' | b'?'
                    | b':'
                    | b','
                    | b'['
                    | b']'
                    | b'{'
                    | b'}'
                    | b'#'
                    | b'&'
                    | b'*'
                    | b'!'
                    | b'|'
                    | b'>'
                    | b'\''
                    | b'"'
                    | b'%'
                    | b'@'
                    | b'`'
            );
        if !indicator
            || (c == b'-' && !self.is_blank(1))
            || (self.flow_level == 0 && (c == b'?' || c == b':') && !self.is_blankz(1))
        {
            return self.fetch_plain_scalar();
        }
        Err(self.scanner_error(self.mark, "found character that cannot start any token"))
    }

    /// go-yaml's `yaml_simple_key_is_valid` on `simple_keys[i]`.
    fn simple_key_is_valid(&mut self, i: usize) -> ScanResult<bool> {
        let mark = self.mark;
        let Some(key) = self.simple_keys.get_mut(i) else {
            // go-yaml indexes out of range here (a runtime panic in Go).
            return Err(
                self.scanner_error(self.mark, "internal error: simple key index out of range")
            );
        };
        if !key.possible {
            return Ok(false);
        }
        if key.mark.line < mark.line || key.mark.index + 1024 < mark.index {
            if key.required {
                let key_mark = key.mark;
                return Err(self.scanner_error(key_mark, "could not find expected ':'"));
            }
            key.possible = false;
            return Ok(false);
        }
        Ok(true)
    }

    fn save_simple_key(&mut self) -> ScanResult<()> {
        let required = self.flow_level == 0 && self.indent == self.mark.column as isize;
        if self.simple_key_allowed {
            let key = SimpleKey {
                possible: true,
                required,
                token_number: self.tokens_parsed + self.tokens.len(),
                mark: self.mark,
            };
            self.remove_simple_key()?;
            let last = self.simple_keys.len().saturating_sub(1);
            if let Some(slot) = self.simple_keys.get_mut(last) {
                *slot = key;
                self.simple_keys_by_tok.insert(key.token_number, last);
            }
        }
        Ok(())
    }

    fn remove_simple_key(&mut self) -> ScanResult<()> {
        let Some(key) = self.simple_keys.last_mut() else {
            return Ok(());
        };
        if key.possible {
            if key.required {
                let key_mark = key.mark;
                return Err(self.scanner_error(key_mark, "could not find expected ':'"));
            }
            key.possible = false;
            let n = key.token_number;
            self.simple_keys_by_tok.remove(&n);
        }
        Ok(())
    }

    fn increase_flow_level(&mut self) -> ScanResult<()> {
        self.simple_keys.push(SimpleKey {
            possible: false,
            required: false,
            token_number: self.tokens_parsed + self.tokens.len(),
            mark: self.mark,
        });
        self.flow_level += 1;
        if self.flow_level > MAX_FLOW_LEVEL {
            let mark = self.simple_keys.last().map_or(self.mark, |k| k.mark);
            return Err(self.scanner_error(mark, format!("exceeded max depth of {MAX_FLOW_LEVEL}")));
        }
        Ok(())
    }

    fn decrease_flow_level(&mut self) {
        if self.flow_level > 0 {
            self.flow_level -= 1;
            if let Some(key) = self.simple_keys.pop() {
                self.simple_keys_by_tok.remove(&key.token_number);
            }
        }
    }

    fn roll_indent(
        &mut self,
        column: usize,
        number: Option<usize>,
        kind: TokenKind,
        mark: Mark,
    ) -> ScanResult<()> {
        if self.flow_level > 0 {
            return Ok(());
        }
        let column = column as isize;
        if self.indent < column {
            self.indents.push(self.indent);
            self.indent = column;
            if self.indents.len() > MAX_INDENTS {
                let mark = self.simple_keys.last().map_or(self.mark, |k| k.mark);
                return Err(
                    self.scanner_error(mark, format!("exceeded max depth of {MAX_INDENTS}"))
                );
            }
            let pos = match number {
                Some(n) => n as isize - self.tokens_parsed as isize,
                None => -1,
            };
            self.insert_token(
                pos,
                Token {
                    kind,
                    start: mark,
                    end: mark,
                },
            );
        }
        Ok(())
    }

    fn unroll_indent(&mut self, column: isize) {
        if self.flow_level > 0 {
            return;
        }
        while self.indent > column {
            self.push_token(TokenKind::BlockEnd, self.mark, self.mark);
            self.indent = self.indents.pop().unwrap_or(-1);
        }
    }

    fn fetch_stream_start(&mut self) {
        self.indent = -1;
        self.simple_keys.push(SimpleKey::default());
        self.simple_keys_by_tok.clear();
        self.simple_key_allowed = true;
        self.stream_start_produced = true;
        self.push_token(TokenKind::StreamStart, self.mark, self.mark);
    }

    fn fetch_stream_end(&mut self) -> ScanResult<()> {
        if self.mark.column != 0 {
            self.mark.column = 0;
            self.mark.line += 1;
        }
        self.unroll_indent(-1);
        self.remove_simple_key()?;
        self.simple_key_allowed = false;
        self.push_token(TokenKind::StreamEnd, self.mark, self.mark);
        Ok(())
    }

    fn fetch_directive(&mut self) -> ScanResult<()> {
        self.unroll_indent(-1);
        self.remove_simple_key()?;
        self.simple_key_allowed = false;
        let token = self.scan_directive()?;
        self.insert_token(-1, token);
        Ok(())
    }

    fn fetch_document_indicator(&mut self, kind: TokenKind) -> ScanResult<()> {
        self.unroll_indent(-1);
        self.remove_simple_key()?;
        self.simple_key_allowed = false;
        let start = self.mark;
        self.skip();
        self.skip();
        self.skip();
        self.push_token(kind, start, self.mark);
        Ok(())
    }

    fn fetch_flow_collection_start(&mut self, kind: TokenKind) -> ScanResult<()> {
        self.save_simple_key()?;
        self.increase_flow_level()?;
        self.simple_key_allowed = true;
        let start = self.mark;
        self.skip();
        self.push_token(kind, start, self.mark);
        Ok(())
    }

    fn fetch_flow_collection_end(&mut self, kind: TokenKind) -> ScanResult<()> {
        self.remove_simple_key()?;
        self.decrease_flow_level();
        self.simple_key_allowed = false;
        let start = self.mark;
        self.skip();
        self.push_token(kind, start, self.mark);
        Ok(())
    }

    fn fetch_flow_entry(&mut self) -> ScanResult<()> {
        self.remove_simple_key()?;
        self.simple_key_allowed = true;
        let start = self.mark;
        self.skip();
        self.push_token(TokenKind::FlowEntry, start, self.mark);
        Ok(())
    }

    fn fetch_block_entry(&mut self) -> ScanResult<()> {
        if self.flow_level == 0 {
            if !self.simple_key_allowed {
                return Err(self.scanner_error(
                    self.mark,
                    "block sequence entries are not allowed in this context",
                ));
            }
            self.roll_indent(
                self.mark.column,
                None,
                TokenKind::BlockSequenceStart,
                self.mark,
            )?;
        }
        self.remove_simple_key()?;
        self.simple_key_allowed = true;
        let start = self.mark;
        self.skip();
        self.push_token(TokenKind::BlockEntry, start, self.mark);
        Ok(())
    }

    fn fetch_key(&mut self) -> ScanResult<()> {
        if self.flow_level == 0 {
            if !self.simple_key_allowed {
                return Err(
                    self.scanner_error(self.mark, "mapping keys are not allowed in this context")
                );
            }
            self.roll_indent(
                self.mark.column,
                None,
                TokenKind::BlockMappingStart,
                self.mark,
            )?;
        }
        self.remove_simple_key()?;
        self.simple_key_allowed = self.flow_level == 0;
        let start = self.mark;
        self.skip();
        self.push_token(TokenKind::Key, start, self.mark);
        Ok(())
    }

    fn fetch_value(&mut self) -> ScanResult<()> {
        let last = self.simple_keys.len().saturating_sub(1);
        if self.simple_key_is_valid(last)? {
            let key = self.simple_keys[last];
            let pos = key.token_number as isize - self.tokens_parsed as isize;
            self.insert_token(
                pos,
                Token {
                    kind: TokenKind::Key,
                    start: key.mark,
                    end: key.mark,
                },
            );
            self.roll_indent(
                key.mark.column,
                Some(key.token_number),
                TokenKind::BlockMappingStart,
                key.mark,
            )?;
            self.simple_keys[last].possible = false;
            self.simple_keys_by_tok.remove(&key.token_number);
            self.simple_key_allowed = false;
        } else {
            if self.flow_level == 0 {
                if !self.simple_key_allowed {
                    return Err(self.scanner_error(
                        self.mark,
                        "mapping values are not allowed in this context",
                    ));
                }
                self.roll_indent(
                    self.mark.column,
                    None,
                    TokenKind::BlockMappingStart,
                    self.mark,
                )?;
            }
            self.simple_key_allowed = self.flow_level == 0;
        }
        let start = self.mark;
        self.skip();
        self.push_token(TokenKind::Value, start, self.mark);
        Ok(())
    }

    fn fetch_anchor(&mut self, alias: bool) -> ScanResult<()> {
        self.save_simple_key()?;
        self.simple_key_allowed = false;
        let token = self.scan_anchor(alias)?;
        self.insert_token(-1, token);
        Ok(())
    }

    fn fetch_tag(&mut self) -> ScanResult<()> {
        self.save_simple_key()?;
        self.simple_key_allowed = false;
        let token = self.scan_tag()?;
        self.insert_token(-1, token);
        Ok(())
    }

    fn fetch_block_scalar(&mut self, literal: bool) -> ScanResult<()> {
        self.remove_simple_key()?;
        self.simple_key_allowed = true;
        let token = self.scan_block_scalar(literal)?;
        self.insert_token(-1, token);
        Ok(())
    }

    fn fetch_flow_scalar(&mut self, single: bool) -> ScanResult<()> {
        self.save_simple_key()?;
        self.simple_key_allowed = false;
        let token = self.scan_flow_scalar(single)?;
        self.insert_token(-1, token);
        Ok(())
    }

    fn fetch_plain_scalar(&mut self) -> ScanResult<()> {
        self.save_simple_key()?;
        self.simple_key_allowed = false;
        let token = self.scan_plain_scalar()?;
        self.insert_token(-1, token);
        Ok(())
    }

    fn scan_to_next_token(&mut self) -> ScanResult<()> {
        loop {
            self.cache(1)?;
            if self.mark.column == 0 && self.buffer_starts_with_bom() {
                self.skip();
            }
            self.cache(1)?;
            while self.at(0) == b' '
                || ((self.flow_level > 0 || !self.simple_key_allowed) && self.at(0) == b'\t')
            {
                self.skip();
                self.cache(1)?;
            }
            if self.at(0) == b'#' {
                while !self.is_breakz(0) {
                    self.skip();
                    self.cache(1)?;
                }
            }
            if self.is_break(0) {
                self.cache(2)?;
                self.skip_line();
                if self.flow_level == 0 {
                    self.simple_key_allowed = true;
                }
            } else {
                return Ok(());
            }
        }
    }

    /// Skip blanks and a comment, then require a line break or the end of the input (and move
    /// past the line break).
    fn finish_line(&mut self, context_mark: Mark, problem: &str) -> ScanResult<()> {
        self.cache(1)?;
        while self.is_blank(0) {
            self.skip();
            self.cache(1)?;
        }
        if self.at(0) == b'#' {
            while !self.is_breakz(0) {
                self.skip();
                self.cache(1)?;
            }
        }
        if !self.is_breakz(0) {
            return Err(self.scanner_error(context_mark, problem));
        }
        if self.is_break(0) {
            self.cache(2)?;
            self.skip_line();
        }
        Ok(())
    }

    fn scan_directive(&mut self) -> ScanResult<Token> {
        let start = self.mark;
        self.skip();
        let name = self.scan_directive_name(start)?;
        let kind = if name == b"YAML" {
            let (major, minor) = self.scan_version_directive_value(start)?;
            TokenKind::VersionDirective { major, minor }
        } else if name == b"TAG" {
            let (handle, prefix) = self.scan_tag_directive_value(start)?;
            TokenKind::TagDirective { handle, prefix }
        } else {
            return Err(self.scanner_error(start, "found unknown directive name"));
        };
        let end = self.mark;
        self.finish_line(start, "did not find expected comment or line break")?;
        Ok(Token { kind, start, end })
    }

    fn scan_directive_name(&mut self, start: Mark) -> ScanResult<Vec<u8>> {
        self.cache(1)?;
        let mut s = Vec::new();
        while is_alpha(self.at(0)) {
            self.read(&mut s);
            self.cache(1)?;
        }
        if s.is_empty() {
            return Err(self.scanner_error(start, "could not find expected directive name"));
        }
        if !self.is_blankz(0) {
            return Err(self.scanner_error(start, "found unexpected non-alphabetical character"));
        }
        Ok(s)
    }

    fn skip_blanks(&mut self) -> ScanResult<()> {
        self.cache(1)?;
        while self.is_blank(0) {
            self.skip();
            self.cache(1)?;
        }
        Ok(())
    }

    fn scan_version_directive_value(&mut self, start: Mark) -> ScanResult<(i8, i8)> {
        self.skip_blanks()?;
        let major = self.scan_version_directive_number(start)?;
        if self.at(0) != b'.' {
            return Err(self.scanner_error(start, "did not find expected digit or '.' character"));
        }
        self.skip();
        let minor = self.scan_version_directive_number(start)?;
        Ok((major, minor))
    }

    fn scan_version_directive_number(&mut self, start: Mark) -> ScanResult<i8> {
        self.cache(1)?;
        let (mut value, mut length) = (0i8, 0);
        while self.at(0).is_ascii_digit() {
            length += 1;
            if length > 2 {
                return Err(self.scanner_error(start, "found extremely long version number"));
            }
            value = value * 10 + (self.at(0) - b'0') as i8;
            self.skip();
            self.cache(1)?;
        }
        if length == 0 {
            return Err(self.scanner_error(start, "did not find expected version number"));
        }
        Ok(value)
    }

    fn scan_tag_directive_value(&mut self, start: Mark) -> ScanResult<(Vec<u8>, Vec<u8>)> {
        self.skip_blanks()?;
        let handle = self.scan_tag_handle(true, start)?;
        self.cache(1)?;
        if !self.is_blank(0) {
            return Err(self.scanner_error(start, "did not find expected whitespace"));
        }
        self.skip_blanks()?;
        let prefix = self.scan_tag_uri(true, None, start)?;
        self.cache(1)?;
        if !self.is_blankz(0) {
            return Err(self.scanner_error(start, "did not find expected whitespace or line break"));
        }
        Ok((handle, prefix))
    }

    fn scan_anchor(&mut self, alias: bool) -> ScanResult<Token> {
        let start = self.mark;
        self.skip();
        self.cache(1)?;
        let mut s = Vec::new();
        while is_alpha(self.at(0)) {
            self.read(&mut s);
            self.cache(1)?;
        }
        let end = self.mark;
        let follows = self.is_blankz(0)
            || matches!(
                self.at(0),
                b'?' | b':' | b',' | b']' | b'}' | b'%' | b'@' | b'`'
            );
        if s.is_empty() || !follows {
            return Err(self.scanner_error(
                start,
                "did not find expected alphabetic or numeric character",
            ));
        }
        let kind = if alias {
            TokenKind::Alias(s)
        } else {
            TokenKind::Anchor(s)
        };
        Ok(Token { kind, start, end })
    }

    fn scan_tag(&mut self) -> ScanResult<Token> {
        let start = self.mark;
        self.cache(2)?;
        let (handle, suffix);
        if self.at(1) == b'<' {
            self.skip();
            self.skip();
            suffix = self.scan_tag_uri(false, None, start)?;
            if self.at(0) != b'>' {
                return Err(self.scanner_error(start, "did not find the expected '>'"));
            }
            self.skip();
            handle = Vec::new();
        } else {
            let h = self.scan_tag_handle(false, start)?;
            if h.len() > 1 && h[0] == b'!' && h[h.len() - 1] == b'!' {
                suffix = self.scan_tag_uri(false, None, start)?;
                handle = h;
            } else {
                let s = self.scan_tag_uri(false, Some(&h), start)?;
                if s.is_empty() {
                    handle = Vec::new();
                    suffix = b"!".to_vec();
                } else {
                    handle = b"!".to_vec();
                    suffix = s;
                }
            }
        }
        self.cache(1)?;
        if !self.is_blankz(0) {
            return Err(self.scanner_error(start, "did not find expected whitespace or line break"));
        }
        Ok(Token {
            kind: TokenKind::Tag { handle, suffix },
            start,
            end: self.mark,
        })
    }

    fn scan_tag_handle(&mut self, directive: bool, start: Mark) -> ScanResult<Vec<u8>> {
        self.cache(1)?;
        if self.at(0) != b'!' {
            return Err(self.scanner_error(start, "did not find expected '!'"));
        }
        let mut s = Vec::new();
        self.read(&mut s);
        self.cache(1)?;
        while is_alpha(self.at(0)) {
            self.read(&mut s);
            self.cache(1)?;
        }
        if self.at(0) == b'!' {
            self.read(&mut s);
        } else if directive && s != b"!" {
            return Err(self.scanner_error(start, "did not find expected '!'"));
        }
        Ok(s)
    }

    fn scan_tag_uri(
        &mut self,
        directive: bool,
        head: Option<&[u8]>,
        start: Mark,
    ) -> ScanResult<Vec<u8>> {
        let mut s = Vec::new();
        let mut has_tag = head.is_some_and(|h| !h.is_empty());
        if let Some(h) = head {
            if h.len() > 1 {
                s.extend_from_slice(&h[1..]);
            }
        }
        self.cache(1)?;
        loop {
            let c = self.at(0);
            let uri = is_alpha(c)
                || matches!(
                    c,
                    b';' | b'/'
                        | b'?'
                        | b':'
                        | b'@'
                        | b'&'
                        | b'='
                        | b'+'
                        | b'$'
                        | b','
                        | b'.'
                        | b'!'
                        | b'~'
                        | b'*'
                        | b'\''
                        | b'('
                        | b')'
                        | b'['
                        | b']'
                        | b'%'
                );
            if !uri {
                break;
            }
            if c == b'%' {
                self.scan_uri_escapes(directive, start, &mut s)?;
            } else {
                self.read(&mut s);
            }
            self.cache(1)?;
            has_tag = true;
        }
        if !has_tag {
            return Err(self.scanner_error(start, "did not find expected tag URI"));
        }
        Ok(s)
    }

    fn scan_uri_escapes(
        &mut self,
        _directive: bool,
        start: Mark,
        s: &mut Vec<u8>,
    ) -> ScanResult<()> {
        let mut w = 1024usize;
        while w > 0 {
            self.cache(3)?;
            if !(self.at(0) == b'%' && is_hex(self.at(1)) && is_hex(self.at(2))) {
                return Err(self.scanner_error(start, "did not find URI escaped octet"));
            }
            let octet = ((as_hex(self.at(1)) << 4) + as_hex(self.at(2))) as u8;
            if w == 1024 {
                w = match octet {
                    _ if octet & 0x80 == 0 => 1,
                    _ if octet & 0xE0 == 0xC0 => 2,
                    _ if octet & 0xF0 == 0xE0 => 3,
                    _ if octet & 0xF8 == 0xF0 => 4,
                    _ => {
                        return Err(
                            self.scanner_error(start, "found an incorrect leading UTF-8 octet")
                        )
                    }
                };
            } else if octet & 0xC0 != 0x80 {
                return Err(self.scanner_error(start, "found an incorrect trailing UTF-8 octet"));
            }
            s.push(octet);
            self.skip();
            self.skip();
            self.skip();
            w -= 1;
        }
        Ok(())
    }

    fn scan_block_scalar(&mut self, literal: bool) -> ScanResult<Token> {
        let start = self.mark;
        self.skip();
        self.cache(1)?;
        let (mut chomping, mut increment) = (0i32, 0usize);
        if matches!(self.at(0), b'+' | b'-') {
            chomping = if self.at(0) == b'+' { 1 } else { -1 };
            self.skip();
            self.cache(1)?;
            if self.at(0).is_ascii_digit() {
                if self.at(0) == b'0' {
                    return Err(
                        self.scanner_error(start, "found an indentation indicator equal to 0")
                    );
                }
                increment = usize::from(self.at(0) - b'0');
                self.skip();
            }
        } else if self.at(0).is_ascii_digit() {
            if self.at(0) == b'0' {
                return Err(self.scanner_error(start, "found an indentation indicator equal to 0"));
            }
            increment = usize::from(self.at(0) - b'0');
            self.skip();
            self.cache(1)?;
            if matches!(self.at(0), b'+' | b'-') {
                chomping = if self.at(0) == b'+' { 1 } else { -1 };
                self.skip();
            }
        }
        self.finish_line(start, "did not find expected comment or line break")?;
        let mut end = self.mark;
        let mut indent: usize = 0;
        if increment > 0 {
            indent = if self.indent >= 0 {
                self.indent as usize + increment
            } else {
                increment
            };
        }
        let (mut s, mut leading_break, mut trailing_breaks) = (Vec::new(), Vec::new(), Vec::new());
        self.scan_block_scalar_breaks(&mut indent, &mut trailing_breaks, start, &mut end)?;
        self.cache(1)?;
        let mut leading_blank = false;
        while self.mark.column == indent && !self.is_z(0) {
            let trailing_blank = self.is_blank(0);
            if !literal
                && !leading_blank
                && !trailing_blank
                && leading_break.first() == Some(&b'\n')
            {
                if trailing_breaks.is_empty() {
                    s.push(b' ');
                }
            } else {
                s.extend_from_slice(&leading_break);
            }
            leading_break.clear();
            s.extend_from_slice(&trailing_breaks);
            trailing_breaks.clear();
            leading_blank = self.is_blank(0);
            while !self.is_breakz(0) {
                self.read(&mut s);
                self.cache(1)?;
            }
            self.cache(2)?;
            self.read_line(&mut leading_break);
            self.scan_block_scalar_breaks(&mut indent, &mut trailing_breaks, start, &mut end)?;
        }
        if chomping != -1 {
            s.extend_from_slice(&leading_break);
        }
        if chomping == 1 {
            s.extend_from_slice(&trailing_breaks);
        }
        let style = if literal {
            ScalarStyle::Literal
        } else {
            ScalarStyle::Folded
        };
        Ok(Token {
            kind: TokenKind::Scalar { value: s, style },
            start,
            end,
        })
    }

    fn scan_block_scalar_breaks(
        &mut self,
        indent: &mut usize,
        breaks: &mut Vec<u8>,
        start: Mark,
        end: &mut Mark,
    ) -> ScanResult<()> {
        *end = self.mark;
        let mut max_indent = 0;
        loop {
            self.cache(1)?;
            while (*indent == 0 || self.mark.column < *indent) && self.is_space(0) {
                self.skip();
                self.cache(1)?;
            }
            max_indent = max_indent.max(self.mark.column);
            if (*indent == 0 || self.mark.column < *indent) && self.is_tab(0) {
                return Err(self.scanner_error(
                    start,
                    "found a tab character where an indentation space is expected",
                ));
            }
            if !self.is_break(0) {
                break;
            }
            self.cache(2)?;
            self.read_line(breaks);
            *end = self.mark;
        }
        if *indent == 0 {
            let floor = (self.indent + 1).max(1) as usize;
            *indent = max_indent.max(floor);
        }
        Ok(())
    }

    /// At a `---` or `...` document marker at the start of a line.
    fn at_document_indicator(&self) -> bool {
        self.mark.column == 0
            && ((self.at(0) == b'-' && self.at(1) == b'-' && self.at(2) == b'-')
                || (self.at(0) == b'.' && self.at(1) == b'.' && self.at(2) == b'.'))
            && self.is_blankz(3)
    }

    fn scan_flow_scalar(&mut self, single: bool) -> ScanResult<Token> {
        let start = self.mark;
        self.skip();
        let mut s = Vec::new();
        let mut leading_break = Vec::new();
        let mut trailing_breaks = Vec::new();
        let mut whitespaces = Vec::new();
        loop {
            self.cache(4)?;
            if self.at_document_indicator() {
                return Err(self.scanner_error(start, "found unexpected document indicator"));
            }
            if self.is_z(0) {
                return Err(self.scanner_error(start, "found unexpected end of stream"));
            }
            let mut leading_blanks = false;
            while !self.is_blankz(0) {
                let c = self.at(0);
                if single && c == b'\'' && self.at(1) == b'\'' {
                    s.push(b'\'');
                    self.skip();
                    self.skip();
                } else if (single && c == b'\'') || (!single && c == b'"') {
                    break;
                } else if !single && c == b'\\' && self.is_break(1) {
                    self.cache(3)?;
                    self.skip();
                    self.skip_line();
                    leading_blanks = true;
                    break;
                } else if !single && c == b'\\' {
                    let mut code_length = 0;
                    match self.at(1) {
                        b'0' => s.push(0),
                        b'a' => s.push(0x07),
                        b'b' => s.push(0x08),
                        b't' | b'\t' => s.push(0x09),
                        b'n' => s.push(0x0A),
                        b'v' => s.push(0x0B),
                        b'f' => s.push(0x0C),
                        b'r' => s.push(0x0D),
                        b'e' => s.push(0x1B),
                        b' ' => s.push(b' '),
                        b'"' => s.push(b'"'),
                        b'\'' => s.push(b'\''),
                        b'\\' => s.push(b'\\'),
                        b'N' => s.extend_from_slice(b"\xC2\x85"),
                        b'_' => s.extend_from_slice(b"\xC2\xA0"),
                        b'L' => s.extend_from_slice(b"\xE2\x80\xA8"),
                        b'P' => s.extend_from_slice(b"\xE2\x80\xA9"),
                        b'x' => code_length = 2,
                        b'u' => code_length = 4,
                        b'U' => code_length = 8,
                        _ => {
                            return Err(self.scanner_error(start, "found unknown escape character"))
                        }
                    }
                    self.skip();
                    self.skip();
                    if code_length > 0 {
                        self.cache(code_length)?;
                        let mut value: u32 = 0;
                        for k in 0..code_length {
                            if !is_hex(self.at(k)) {
                                return Err(self.scanner_error(
                                    start,
                                    "did not find expected hexdecimal number",
                                ));
                            }
                            value = (value << 4) + as_hex(self.at(k));
                        }
                        if (0xD800..=0xDFFF).contains(&value) || value > 0x10_FFFF {
                            return Err(self.scanner_error(
                                start,
                                "found invalid Unicode character escape code",
                            ));
                        }
                        push_code_point(&mut s, value);
                        for _ in 0..code_length {
                            self.skip();
                        }
                    }
                } else {
                    self.read(&mut s);
                }
                self.cache(2)?;
            }
            self.cache(1)?;
            if (single && self.at(0) == b'\'') || (!single && self.at(0) == b'"') {
                break;
            }
            while self.is_blank(0) || self.is_break(0) {
                if self.is_blank(0) {
                    if !leading_blanks {
                        self.read(&mut whitespaces);
                    } else {
                        self.skip();
                    }
                } else {
                    self.cache(2)?;
                    if !leading_blanks {
                        whitespaces.clear();
                        self.read_line(&mut leading_break);
                        leading_blanks = true;
                    } else {
                        self.read_line(&mut trailing_breaks);
                    }
                }
                self.cache(1)?;
            }
            if leading_blanks {
                if leading_break.first() == Some(&b'\n') {
                    if trailing_breaks.is_empty() {
                        s.push(b' ');
                    } else {
                        s.extend_from_slice(&trailing_breaks);
                    }
                } else {
                    s.extend_from_slice(&leading_break);
                    s.extend_from_slice(&trailing_breaks);
                }
                trailing_breaks.clear();
                leading_break.clear();
            } else {
                s.extend_from_slice(&whitespaces);
                whitespaces.clear();
            }
        }
        self.skip();
        let style = if single {
            ScalarStyle::SingleQuoted
        } else {
            ScalarStyle::DoubleQuoted
        };
        Ok(Token {
            kind: TokenKind::Scalar { value: s, style },
            start,
            end: self.mark,
        })
    }

    /// Length of the run of ASCII characters from the current position that a plain scalar
    /// reads one by one without any other effect: no blank, break, `:`, `#` or (in flow context)
    /// flow indicator, leaving at least 2 decoded characters unread after it.
    fn plain_run(&self) -> usize {
        let limit = self.unread.saturating_sub(2);
        let bytes = &self.input[self.pos.min(self.input.len())..];
        let flow = self.flow_level > 0;
        bytes
            .iter()
            .take(limit)
            .take_while(|&&c| {
                c > b' '
                    && c < 0x7F
                    && c != b':'
                    && c != b'#'
                    && !(flow && matches!(c, b',' | b'?' | b'[' | b']' | b'{' | b'}'))
            })
            .count()
    }

    fn scan_plain_scalar(&mut self) -> ScanResult<Token> {
        let mut s = Vec::new();
        let mut leading_break = Vec::new();
        let mut trailing_breaks = Vec::new();
        let mut whitespaces = Vec::new();
        let mut leading_blanks = false;
        let indent = self.indent + 1;
        let start = self.mark;
        let mut end = self.mark;
        loop {
            self.cache(4)?;
            if self.at_document_indicator() {
                break;
            }
            if self.at(0) == b'#' {
                break;
            }
            while !self.is_blankz(0) {
                let c = self.at(0);
                if (c == b':' && self.is_blankz(1))
                    || (self.flow_level > 0 && matches!(c, b',' | b'?' | b'[' | b']' | b'{' | b'}'))
                {
                    break;
                }
                if leading_blanks || !whitespaces.is_empty() {
                    if leading_blanks {
                        if leading_break.first() == Some(&b'\n') {
                            if trailing_breaks.is_empty() {
                                s.push(b' ');
                            } else {
                                s.extend_from_slice(&trailing_breaks);
                            }
                        } else {
                            s.extend_from_slice(&leading_break);
                            s.extend_from_slice(&trailing_breaks);
                        }
                        trailing_breaks.clear();
                        leading_break.clear();
                        leading_blanks = false;
                    } else {
                        s.extend_from_slice(&whitespaces);
                        whitespaces.clear();
                    }
                }
                self.read(&mut s);
                end = self.mark;
                self.cache(2)?;
                // A run of ASCII characters that cannot end the scalar, among those already
                // decoded (so that every `cache(2)` it skips would have done nothing), is read at
                // once.
                let run = self.plain_run();
                if run > 0 {
                    s.extend_from_slice(&self.input[self.pos..self.pos + run]);
                    self.pos += run;
                    self.mark.index += run;
                    self.mark.column += run;
                    self.unread -= run;
                    end = self.mark;
                }
            }
            if !(self.is_blank(0) || self.is_break(0)) {
                break;
            }
            self.cache(1)?;
            while self.is_blank(0) || self.is_break(0) {
                if self.is_blank(0) {
                    if leading_blanks && (self.mark.column as isize) < indent && self.is_tab(0) {
                        return Err(self.scanner_error(
                            start,
                            "found a tab character that violates indentation",
                        ));
                    }
                    if !leading_blanks {
                        self.read(&mut whitespaces);
                    } else {
                        self.skip();
                    }
                } else {
                    self.cache(2)?;
                    if !leading_blanks {
                        whitespaces.clear();
                        self.read_line(&mut leading_break);
                        leading_blanks = true;
                    } else {
                        self.read_line(&mut trailing_breaks);
                    }
                }
                self.cache(1)?;
            }
            if self.flow_level == 0 && (self.mark.column as isize) < indent {
                break;
            }
        }
        if leading_blanks {
            self.simple_key_allowed = true;
        }
        Ok(Token {
            kind: TokenKind::Scalar {
                value: s,
                style: ScalarStyle::Plain,
            },
            start,
            end,
        })
    }
}
