//! Parser of go-yaml v2 (gopkg.in/yaml.v2 `parserc.go`, a port of libyaml's), re-written in
//! safe Rust: tokens → events. A line-by-line port, like [`super::scan`]; it accepts only
//! `%YAML 1.1` directives, as go-yaml does.
//!
//! The port and libyaml are MIT licensed (Copyright (c) 2006 Kirill Simonov), see
//! `LICENSE-libyaml` next to this file.

use super::scan::{ErrorKind, Mark, ScalarStyle, ScanError, ScanResult, Scanner, Token, TokenKind};

/// What an event is, with its data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum EventKind {
    StreamStart,
    StreamEnd,
    DocumentStart,
    DocumentEnd,
    Alias {
        anchor: Vec<u8>,
    },
    Scalar {
        anchor: Option<Vec<u8>>,
        tag: Vec<u8>,
        value: Vec<u8>,
        /// A plain scalar without a tag, or with the non-specific tag `!`.
        implicit: bool,
        style: ScalarStyle,
    },
    SequenceStart {
        anchor: Option<Vec<u8>>,
    },
    SequenceEnd,
    MappingStart {
        anchor: Option<Vec<u8>>,
    },
    MappingEnd,
}

/// An event and where it starts.
#[derive(Clone, Debug)]
pub(super) struct Event {
    pub kind: EventKind,
    pub start: Mark,
}

/// The parser states of go-yaml.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    StreamStart,
    ImplicitDocumentStart,
    DocumentStart,
    DocumentContent,
    DocumentEnd,
    BlockNode,
    BlockSequenceFirstEntry,
    BlockSequenceEntry,
    IndentlessSequenceEntry,
    BlockMappingFirstKey,
    BlockMappingKey,
    BlockMappingValue,
    FlowSequenceFirstEntry,
    FlowSequenceEntry,
    FlowSequenceEntryMappingKey,
    FlowSequenceEntryMappingValue,
    FlowSequenceEntryMappingEnd,
    FlowMappingFirstKey,
    FlowMappingKey,
    FlowMappingValue,
    FlowMappingEmptyValue,
    End,
}

/// The kind of a token without its data, for cheap comparisons.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tk {
    StreamStart,
    StreamEnd,
    VersionDirective,
    TagDirective,
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
    Alias,
    Anchor,
    Tag,
    Scalar,
}

fn tk(t: &Token) -> Tk {
    match t.kind {
        TokenKind::StreamStart => Tk::StreamStart,
        TokenKind::StreamEnd => Tk::StreamEnd,
        TokenKind::VersionDirective { .. } => Tk::VersionDirective,
        TokenKind::TagDirective { .. } => Tk::TagDirective,
        TokenKind::DocumentStart => Tk::DocumentStart,
        TokenKind::DocumentEnd => Tk::DocumentEnd,
        TokenKind::BlockSequenceStart => Tk::BlockSequenceStart,
        TokenKind::BlockMappingStart => Tk::BlockMappingStart,
        TokenKind::BlockEnd => Tk::BlockEnd,
        TokenKind::FlowSequenceStart => Tk::FlowSequenceStart,
        TokenKind::FlowSequenceEnd => Tk::FlowSequenceEnd,
        TokenKind::FlowMappingStart => Tk::FlowMappingStart,
        TokenKind::FlowMappingEnd => Tk::FlowMappingEnd,
        TokenKind::BlockEntry => Tk::BlockEntry,
        TokenKind::FlowEntry => Tk::FlowEntry,
        TokenKind::Key => Tk::Key,
        TokenKind::Value => Tk::Value,
        TokenKind::Alias(_) => Tk::Alias,
        TokenKind::Anchor(_) => Tk::Anchor,
        TokenKind::Tag { .. } => Tk::Tag,
        TokenKind::Scalar { .. } => Tk::Scalar,
    }
}

/// The event parser (the parser half of go-yaml's `yaml_parser_t`).
pub(super) struct Parser<'a> {
    scanner: Scanner<'a>,
    state: State,
    states: Vec<State>,
    marks: Vec<Mark>,
    tag_directives: Vec<(Vec<u8>, Vec<u8>)>,
}

fn parser_error(problem: &str, problem_mark: Mark) -> ScanError {
    ScanError {
        kind: ErrorKind::Parser,
        context_mark: Mark::default(),
        problem: problem.to_string(),
        problem_mark,
    }
}

fn parser_error_context(context_mark: Mark, problem: &str, problem_mark: Mark) -> ScanError {
    ScanError {
        kind: ErrorKind::Parser,
        context_mark,
        problem: problem.to_string(),
        problem_mark,
    }
}

impl<'a> Parser<'a> {
    /// A parser over `input`.
    pub(super) fn new(input: &'a str) -> Self {
        Parser {
            scanner: Scanner::new(input),
            state: State::StreamStart,
            states: Vec::new(),
            marks: Vec::new(),
            tag_directives: Vec::new(),
        }
    }

    /// The next event, or `None` after the end of the stream (go-yaml's `yaml_parser_parse`).
    pub(super) fn parse(&mut self) -> ScanResult<Option<Event>> {
        if self.scanner.stream_end_produced || self.state == State::End {
            return Ok(None);
        }
        self.state_machine().map(Some)
    }

    fn peek(&mut self) -> ScanResult<(Tk, Mark, Mark)> {
        let t = self.scanner.peek_token()?;
        Ok((tk(t), t.start, t.end))
    }

    fn take(&mut self) -> Option<Token> {
        self.scanner.skip_token()
    }

    fn pop_state(&mut self) -> State {
        self.states.pop().unwrap_or(State::End)
    }

    fn pop_mark(&mut self) -> Mark {
        self.marks.pop().unwrap_or_default()
    }

    fn state_machine(&mut self) -> ScanResult<Event> {
        match self.state {
            State::StreamStart => self.parse_stream_start(),
            State::ImplicitDocumentStart => self.parse_document_start(true),
            State::DocumentStart => self.parse_document_start(false),
            State::DocumentContent => self.parse_document_content(),
            State::DocumentEnd => self.parse_document_end(),
            State::BlockNode => self.parse_node(true, false),
            State::BlockSequenceFirstEntry => self.parse_block_sequence_entry(true),
            State::BlockSequenceEntry => self.parse_block_sequence_entry(false),
            State::IndentlessSequenceEntry => self.parse_indentless_sequence_entry(),
            State::BlockMappingFirstKey => self.parse_block_mapping_key(true),
            State::BlockMappingKey => self.parse_block_mapping_key(false),
            State::BlockMappingValue => self.parse_block_mapping_value(),
            State::FlowSequenceFirstEntry => self.parse_flow_sequence_entry(true),
            State::FlowSequenceEntry => self.parse_flow_sequence_entry(false),
            State::FlowSequenceEntryMappingKey => self.parse_flow_sequence_entry_mapping_key(),
            State::FlowSequenceEntryMappingValue => self.parse_flow_sequence_entry_mapping_value(),
            State::FlowSequenceEntryMappingEnd => self.parse_flow_sequence_entry_mapping_end(),
            State::FlowMappingFirstKey => self.parse_flow_mapping_key(true),
            State::FlowMappingKey => self.parse_flow_mapping_key(false),
            State::FlowMappingValue => self.parse_flow_mapping_value(false),
            State::FlowMappingEmptyValue => self.parse_flow_mapping_value(true),
            State::End => Err(parser_error("invalid parser state", Mark::default())),
        }
    }

    fn event(kind: EventKind, start: Mark) -> Event {
        Event { kind, start }
    }

    fn parse_stream_start(&mut self) -> ScanResult<Event> {
        let (t, start, _) = self.peek()?;
        if t != Tk::StreamStart {
            return Err(parser_error("did not find expected <stream-start>", start));
        }
        self.state = State::ImplicitDocumentStart;
        self.take();
        Ok(Self::event(EventKind::StreamStart, start))
    }

    fn parse_document_start(&mut self, implicit: bool) -> ScanResult<Event> {
        let (mut t, mut start, _) = self.peek()?;
        if !implicit {
            while t == Tk::DocumentEnd {
                self.take();
                (t, start, _) = self.peek()?;
            }
        }
        if implicit
            && !matches!(
                t,
                Tk::VersionDirective | Tk::TagDirective | Tk::DocumentStart | Tk::StreamEnd
            )
        {
            self.process_directives()?;
            self.states.push(State::DocumentEnd);
            self.state = State::BlockNode;
            Ok(Self::event(EventKind::DocumentStart, start))
        } else if t != Tk::StreamEnd {
            self.process_directives()?;
            let (t, mark, _) = self.peek()?;
            if t != Tk::DocumentStart {
                return Err(parser_error("did not find expected <document start>", mark));
            }
            self.states.push(State::DocumentEnd);
            self.state = State::DocumentContent;
            self.take();
            Ok(Self::event(EventKind::DocumentStart, start))
        } else {
            self.state = State::End;
            self.take();
            Ok(Self::event(EventKind::StreamEnd, start))
        }
    }

    fn parse_document_content(&mut self) -> ScanResult<Event> {
        let (t, start, _) = self.peek()?;
        if matches!(
            t,
            Tk::VersionDirective
                | Tk::TagDirective
                | Tk::DocumentStart
                | Tk::DocumentEnd
                | Tk::StreamEnd
        ) {
            self.state = self.pop_state();
            return Ok(Self::empty_scalar(start));
        }
        self.parse_node(true, false)
    }

    fn parse_document_end(&mut self) -> ScanResult<Event> {
        let (t, start, _) = self.peek()?;
        if t == Tk::DocumentEnd {
            self.take();
        }
        self.tag_directives.clear();
        self.state = State::DocumentStart;
        Ok(Self::event(EventKind::DocumentEnd, start))
    }

    fn parse_node(&mut self, block: bool, indentless_sequence: bool) -> ScanResult<Event> {
        let (mut t, mut mark, _) = self.peek()?;
        if t == Tk::Alias {
            self.state = self.pop_state();
            let anchor = match self.take().map(|t| t.kind) {
                Some(TokenKind::Alias(a)) => a,
                _ => Vec::new(),
            };
            return Ok(Self::event(EventKind::Alias { anchor }, mark));
        }
        let start = mark;
        let mut tag_token: Option<(Vec<u8>, Vec<u8>)> = None;
        let mut tag_mark = Mark::default();
        let mut anchor: Option<Vec<u8>> = None;
        if t == Tk::Anchor {
            if let Some(TokenKind::Anchor(a)) = self.take().map(|t| t.kind) {
                anchor = Some(a);
            }
            (t, mark, _) = self.peek()?;
            if t == Tk::Tag {
                tag_mark = mark;
                if let Some(TokenKind::Tag { handle, suffix }) = self.take().map(|t| t.kind) {
                    tag_token = Some((handle, suffix));
                }
                (t, mark, _) = self.peek()?;
            }
        } else if t == Tk::Tag {
            tag_mark = mark;
            if let Some(TokenKind::Tag { handle, suffix }) = self.take().map(|t| t.kind) {
                tag_token = Some((handle, suffix));
            }
            (t, mark, _) = self.peek()?;
            if t == Tk::Anchor {
                if let Some(TokenKind::Anchor(a)) = self.take().map(|t| t.kind) {
                    anchor = Some(a);
                }
                (t, mark, _) = self.peek()?;
            }
        }
        let mut tag: Vec<u8> = Vec::new();
        if let Some((handle, suffix)) = tag_token {
            if handle.is_empty() {
                tag = suffix;
            } else {
                if let Some((_, prefix)) = self.tag_directives.iter().find(|(h, _)| *h == handle) {
                    tag = prefix.clone();
                    tag.extend_from_slice(&suffix);
                }
                if tag.is_empty() {
                    return Err(parser_error_context(
                        start,
                        "found undefined tag handle",
                        tag_mark,
                    ));
                }
            }
        }
        if indentless_sequence && t == Tk::BlockEntry {
            self.state = State::IndentlessSequenceEntry;
            return Ok(Self::event(EventKind::SequenceStart { anchor }, start));
        }
        match t {
            Tk::Scalar => {
                self.state = self.pop_state();
                let Some(Token {
                    kind: TokenKind::Scalar { value, style },
                    ..
                }) = self.take()
                else {
                    return Err(parser_error("internal error: scalar token expected", mark));
                };
                let implicit = (tag.is_empty() && style == ScalarStyle::Plain) || tag == b"!";
                Ok(Self::event(
                    EventKind::Scalar {
                        anchor,
                        tag,
                        value,
                        implicit,
                        style,
                    },
                    start,
                ))
            }
            Tk::FlowSequenceStart => {
                self.state = State::FlowSequenceFirstEntry;
                Ok(Self::event(EventKind::SequenceStart { anchor }, start))
            }
            Tk::FlowMappingStart => {
                self.state = State::FlowMappingFirstKey;
                Ok(Self::event(EventKind::MappingStart { anchor }, start))
            }
            Tk::BlockSequenceStart if block => {
                self.state = State::BlockSequenceFirstEntry;
                Ok(Self::event(EventKind::SequenceStart { anchor }, start))
            }
            Tk::BlockMappingStart if block => {
                self.state = State::BlockMappingFirstKey;
                Ok(Self::event(EventKind::MappingStart { anchor }, start))
            }
            _ if anchor.is_some() || !tag.is_empty() => {
                self.state = self.pop_state();
                let implicit = tag.is_empty();
                Ok(Self::event(
                    EventKind::Scalar {
                        anchor,
                        tag,
                        value: Vec::new(),
                        implicit,
                        style: ScalarStyle::Plain,
                    },
                    start,
                ))
            }
            _ => Err(parser_error_context(
                start,
                "did not find expected node content",
                mark,
            )),
        }
    }

    fn parse_block_sequence_entry(&mut self, first: bool) -> ScanResult<Event> {
        if first {
            let (_, mark, _) = self.peek()?;
            self.marks.push(mark);
            self.take();
        }
        let (t, start, end) = self.peek()?;
        if t == Tk::BlockEntry {
            self.take();
            let (t, _, _) = self.peek()?;
            if t != Tk::BlockEntry && t != Tk::BlockEnd {
                self.states.push(State::BlockSequenceEntry);
                return self.parse_node(true, false);
            }
            self.state = State::BlockSequenceEntry;
            return Ok(Self::empty_scalar(end));
        }
        if t == Tk::BlockEnd {
            self.state = self.pop_state();
            self.pop_mark();
            self.take();
            return Ok(Self::event(EventKind::SequenceEnd, start));
        }
        let context = self.pop_mark();
        Err(parser_error_context(
            context,
            "did not find expected '-' indicator",
            start,
        ))
    }

    fn parse_indentless_sequence_entry(&mut self) -> ScanResult<Event> {
        let (t, start, end) = self.peek()?;
        if t == Tk::BlockEntry {
            self.take();
            let (t, _, _) = self.peek()?;
            if !matches!(t, Tk::BlockEntry | Tk::Key | Tk::Value | Tk::BlockEnd) {
                self.states.push(State::IndentlessSequenceEntry);
                return self.parse_node(true, false);
            }
            self.state = State::IndentlessSequenceEntry;
            return Ok(Self::empty_scalar(end));
        }
        self.state = self.pop_state();
        Ok(Self::event(EventKind::SequenceEnd, start))
    }

    fn parse_block_mapping_key(&mut self, first: bool) -> ScanResult<Event> {
        if first {
            let (_, mark, _) = self.peek()?;
            self.marks.push(mark);
            self.take();
        }
        let (t, start, end) = self.peek()?;
        if t == Tk::Key {
            self.take();
            let (t, _, _) = self.peek()?;
            if !matches!(t, Tk::Key | Tk::Value | Tk::BlockEnd) {
                self.states.push(State::BlockMappingValue);
                return self.parse_node(true, true);
            }
            self.state = State::BlockMappingValue;
            return Ok(Self::empty_scalar(end));
        }
        if t == Tk::BlockEnd {
            self.state = self.pop_state();
            self.pop_mark();
            self.take();
            return Ok(Self::event(EventKind::MappingEnd, start));
        }
        let context = self.pop_mark();
        Err(parser_error_context(
            context,
            "did not find expected key",
            start,
        ))
    }

    fn parse_block_mapping_value(&mut self) -> ScanResult<Event> {
        let (t, start, end) = self.peek()?;
        if t == Tk::Value {
            self.take();
            let (t, _, _) = self.peek()?;
            if !matches!(t, Tk::Key | Tk::Value | Tk::BlockEnd) {
                self.states.push(State::BlockMappingKey);
                return self.parse_node(true, true);
            }
            self.state = State::BlockMappingKey;
            return Ok(Self::empty_scalar(end));
        }
        self.state = State::BlockMappingKey;
        Ok(Self::empty_scalar(start))
    }

    fn parse_flow_sequence_entry(&mut self, first: bool) -> ScanResult<Event> {
        if first {
            let (_, mark, _) = self.peek()?;
            self.marks.push(mark);
            self.take();
        }
        let (mut t, mut start, _) = self.peek()?;
        if t != Tk::FlowSequenceEnd {
            if !first {
                if t == Tk::FlowEntry {
                    self.take();
                    (t, start, _) = self.peek()?;
                } else {
                    let context = self.pop_mark();
                    return Err(parser_error_context(
                        context,
                        "did not find expected ',' or ']'",
                        start,
                    ));
                }
            }
            if t == Tk::Key {
                self.state = State::FlowSequenceEntryMappingKey;
                self.take();
                return Ok(Self::event(EventKind::MappingStart { anchor: None }, start));
            } else if t != Tk::FlowSequenceEnd {
                self.states.push(State::FlowSequenceEntry);
                return self.parse_node(false, false);
            }
        }
        self.state = self.pop_state();
        self.pop_mark();
        self.take();
        Ok(Self::event(EventKind::SequenceEnd, start))
    }

    fn parse_flow_sequence_entry_mapping_key(&mut self) -> ScanResult<Event> {
        let (t, _, end) = self.peek()?;
        if !matches!(t, Tk::Value | Tk::FlowEntry | Tk::FlowSequenceEnd) {
            self.states.push(State::FlowSequenceEntryMappingValue);
            return self.parse_node(false, false);
        }
        self.take();
        self.state = State::FlowSequenceEntryMappingValue;
        Ok(Self::empty_scalar(end))
    }

    fn parse_flow_sequence_entry_mapping_value(&mut self) -> ScanResult<Event> {
        // go-yaml marks the empty value at the `:` token (its second `token` is shadowed).
        let (t, start, _) = self.peek()?;
        if t == Tk::Value {
            self.take();
            let (t, _, _) = self.peek()?;
            if t != Tk::FlowEntry && t != Tk::FlowSequenceEnd {
                self.states.push(State::FlowSequenceEntryMappingEnd);
                return self.parse_node(false, false);
            }
        }
        self.state = State::FlowSequenceEntryMappingEnd;
        Ok(Self::empty_scalar(start))
    }

    fn parse_flow_sequence_entry_mapping_end(&mut self) -> ScanResult<Event> {
        let (_, start, _) = self.peek()?;
        self.state = State::FlowSequenceEntry;
        Ok(Self::event(EventKind::MappingEnd, start))
    }

    fn parse_flow_mapping_key(&mut self, first: bool) -> ScanResult<Event> {
        if first {
            let (_, mark, _) = self.peek()?;
            self.marks.push(mark);
            self.take();
        }
        let (mut t, mut start, _) = self.peek()?;
        if t != Tk::FlowMappingEnd {
            if !first {
                if t == Tk::FlowEntry {
                    self.take();
                    (t, start, _) = self.peek()?;
                } else {
                    let context = self.pop_mark();
                    return Err(parser_error_context(
                        context,
                        "did not find expected ',' or '}'",
                        start,
                    ));
                }
            }
            if t == Tk::Key {
                self.take();
                let (t, start, _) = self.peek()?;
                if !matches!(t, Tk::Value | Tk::FlowEntry | Tk::FlowMappingEnd) {
                    self.states.push(State::FlowMappingValue);
                    return self.parse_node(false, false);
                }
                self.state = State::FlowMappingValue;
                return Ok(Self::empty_scalar(start));
            } else if t != Tk::FlowMappingEnd {
                self.states.push(State::FlowMappingEmptyValue);
                return self.parse_node(false, false);
            }
        }
        self.state = self.pop_state();
        self.pop_mark();
        self.take();
        Ok(Self::event(EventKind::MappingEnd, start))
    }

    fn parse_flow_mapping_value(&mut self, empty: bool) -> ScanResult<Event> {
        let (mut t, mut start, _) = self.peek()?;
        if empty {
            self.state = State::FlowMappingKey;
            return Ok(Self::empty_scalar(start));
        }
        if t == Tk::Value {
            self.take();
            (t, start, _) = self.peek()?;
            if t != Tk::FlowEntry && t != Tk::FlowMappingEnd {
                self.states.push(State::FlowMappingKey);
                return self.parse_node(false, false);
            }
        }
        self.state = State::FlowMappingKey;
        Ok(Self::empty_scalar(start))
    }

    fn empty_scalar(mark: Mark) -> Event {
        Self::event(
            EventKind::Scalar {
                anchor: None,
                tag: Vec::new(),
                value: Vec::new(),
                implicit: true,
                style: ScalarStyle::Plain,
            },
            mark,
        )
    }

    fn process_directives(&mut self) -> ScanResult<()> {
        let mut version_seen = false;
        let (mut t, mut mark, _) = self.peek()?;
        while t == Tk::VersionDirective || t == Tk::TagDirective {
            let token = self.take();
            match token.map(|t| t.kind) {
                Some(TokenKind::VersionDirective { major, minor }) => {
                    if version_seen {
                        return Err(parser_error("found duplicate %YAML directive", mark));
                    }
                    if major != 1 || minor != 1 {
                        return Err(parser_error("found incompatible YAML document", mark));
                    }
                    version_seen = true;
                }
                Some(TokenKind::TagDirective { handle, prefix }) => {
                    self.append_tag_directive(handle, prefix, false, mark)?;
                }
                _ => {}
            }
            (t, mark, _) = self.peek()?;
        }
        self.append_tag_directive(b"!".to_vec(), b"!".to_vec(), true, mark)?;
        self.append_tag_directive(b"!!".to_vec(), b"tag:yaml.org,2002:".to_vec(), true, mark)?;
        Ok(())
    }

    fn append_tag_directive(
        &mut self,
        handle: Vec<u8>,
        prefix: Vec<u8>,
        allow_duplicates: bool,
        mark: Mark,
    ) -> ScanResult<()> {
        if self.tag_directives.iter().any(|(h, _)| *h == handle) {
            if allow_duplicates {
                return Ok(());
            }
            return Err(parser_error("found duplicate %TAG directive", mark));
        }
        self.tag_directives.push((handle, prefix));
        Ok(())
    }
}
