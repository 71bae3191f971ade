//! The lexer of Go's `text/template/parse`, token for token: trim markers, comments, numbers
//! (including the imaginary and complex forms), character constants, raw strings, keywords, and
//! Go's error messages.

/// Token kinds (Go's `itemType`; keywords last).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tok {
    Error,
    Bool,
    Char,
    CharConstant,
    Comment,
    Complex,
    Assign,
    Declare,
    Eof,
    Field,
    Identifier,
    LeftDelim,
    LeftParen,
    Number,
    Pipe,
    RawString,
    RightDelim,
    RightParen,
    Space,
    String,
    Text,
    Variable,
    // Keywords (Go's itemKeyword and above).
    Keyword,
    Block,
    Break,
    Continue,
    Dot,
    Define,
    Else,
    End,
    If,
    Nil,
    Range,
    Template,
    With,
}

/// A token.
#[derive(Debug, Clone)]
pub struct Item {
    /// Kind.
    pub typ: Tok,
    /// Byte offset of its start.
    pub pos: usize,
    /// Text (the message for errors).
    pub val: String,
    /// Line of its start.
    pub line: usize,
}

impl Item {
    /// Go's `item.String()`, used in parse errors.
    pub fn describe(&self) -> String {
        match self.typ {
            Tok::Eof => "EOF".into(),
            Tok::Error => self.val.clone(),
            t if t > Tok::Keyword => format!("<{}>", self.val),
            _ if self.val.chars().count() > 10 => {
                let head: String = self.val.chars().take(10).collect();
                format!("{}...", crate::go::quote::quote(&head))
            }
            _ => crate::go::quote::quote(&self.val),
        }
    }
}

fn keyword(word: &str) -> Option<Tok> {
    Some(match word {
        "." => Tok::Dot,
        "block" => Tok::Block,
        "break" => Tok::Break,
        "continue" => Tok::Continue,
        "define" => Tok::Define,
        "else" => Tok::Else,
        "end" => Tok::End,
        "if" => Tok::If,
        "range" => Tok::Range,
        "nil" => Tok::Nil,
        "template" => Tok::Template,
        "with" => Tok::With,
        _ => return None,
    })
}

const LEFT: &str = "{{";
const RIGHT: &str = "}}";
const LEFT_COMMENT: &str = "/*";
const RIGHT_COMMENT: &str = "*/";
const TRIM_MARKER_LEN: usize = 2;

fn is_space(c: Option<char>) -> bool {
    matches!(c, Some(' ' | '\t' | '\r' | '\n'))
}

fn is_alnum(c: Option<char>) -> bool {
    c.is_some_and(|c| c == '_' || c.is_alphabetic() || is_go_digit(c))
}

/// Go's `unicode.IsDigit` (category Nd).
fn is_go_digit(c: char) -> bool {
    c.is_ascii_digit() || (!c.is_ascii() && is_nd(c))
}

/// Unicode category Nd (decimal digits) outside ASCII: every Nd block is a run of ten code
/// points starting at a multiple of 16 or at a known offset; Rust's `char::is_numeric` also
/// covers No/Nl, so the ranges are listed.
fn is_nd(c: char) -> bool {
    const STARTS: &[u32] = &[
        0x660, 0x6F0, 0x7C0, 0x966, 0x9E6, 0xA66, 0xAE6, 0xB66, 0xBE6, 0xC66, 0xCE6, 0xD66, 0xDE6,
        0xE50, 0xED0, 0xF20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80, 0x1A90,
        0x1B50, 0x1BB0, 0x1C40, 0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0,
        0xFF10, 0x104A0, 0x10D30, 0x11066, 0x110F0, 0x11136, 0x111D0, 0x112F0, 0x11450, 0x114D0,
        0x11650, 0x116C0, 0x11730, 0x118E0, 0x11950, 0x11C50, 0x11D50, 0x11DA0, 0x16A60, 0x16AC0,
        0x16B50, 0x1D7CE, 0x1D7D8, 0x1D7E2, 0x1D7EC, 0x1D7F6, 0x1E140, 0x1E2F0, 0x1E950, 0x1FBF0,
    ];
    let u = c as u32;
    STARTS.iter().any(|&s| (s..s + 10).contains(&u))
}

fn has_left_trim(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2 && b[0] == b'-' && matches!(b[1], b' ' | b'\t' | b'\r' | b'\n')
}

fn has_right_trim(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2 && matches!(b[0], b' ' | b'\t' | b'\r' | b'\n') && b[1] == b'-'
}

fn trim_right_len(s: &str) -> usize {
    s.len() - s.trim_end_matches([' ', '\t', '\r', '\n']).len()
}

fn trim_left_len(s: &str) -> usize {
    s.len() - s.trim_start_matches([' ', '\t', '\r', '\n']).len()
}

#[derive(Clone, Copy)]
enum State {
    Text,
    LeftDelim,
    Comment,
    RightDelim,
    InsideAction,
    Space,
    Identifier,
    Field,
    Variable,
    Char,
    Number,
    Quote,
    RawQuote,
}

/// The lexer.
pub struct Lexer<'s> {
    input: &'s str,
    pos: usize,
    start: usize,
    at_eof: bool,
    paren_depth: usize,
    line: usize,
    start_line: usize,
    inside_action: bool,
    done: bool,
}

enum Step {
    Go(State),
    Emit(Item),
}

impl<'s> Lexer<'s> {
    /// A lexer over `input` with `{{` `}}` delimiters.
    pub fn new(input: &'s str) -> Lexer<'s> {
        Lexer {
            input,
            pos: 0,
            start: 0,
            at_eof: false,
            paren_depth: 0,
            line: 1,
            start_line: 1,
            inside_action: false,
            done: false,
        }
    }

    fn next(&mut self) -> Option<char> {
        match self.input[self.pos..].chars().next() {
            None => {
                self.at_eof = true;
                None
            }
            Some(c) => {
                self.pos += c.len_utf8();
                if c == '\n' {
                    self.line += 1;
                }
                Some(c)
            }
        }
    }

    fn peek(&self) -> Option<char> {
        self.input[self.pos..].chars().next()
    }

    fn backup(&mut self) {
        if !self.at_eof && self.pos > 0 {
            if let Some(c) = self.input[..self.pos].chars().next_back() {
                self.pos -= c.len_utf8();
                if c == '\n' {
                    self.line -= 1;
                }
            }
        }
    }

    fn this_item(&mut self, typ: Tok) -> Item {
        let i = Item {
            typ,
            pos: self.start,
            val: self.input[self.start..self.pos].to_string(),
            line: self.start_line,
        };
        self.start = self.pos;
        self.start_line = self.line;
        i
    }

    fn emit(&mut self, typ: Tok) -> Step {
        Step::Emit(self.this_item(typ))
    }

    fn ignore(&mut self) {
        self.line += self.input[self.start..self.pos].matches('\n').count();
        self.start = self.pos;
        self.start_line = self.line;
    }

    fn accept(&mut self, valid: &str) -> bool {
        match self.next() {
            Some(c) if valid.contains(c) => true,
            _ => {
                self.backup();
                false
            }
        }
    }

    fn accept_run(&mut self, valid: &str) {
        while let Some(c) = self.next() {
            if !valid.contains(c) {
                break;
            }
        }
        self.backup();
    }

    fn errorf(&mut self, msg: String) -> Step {
        let i = Item {
            typ: Tok::Error,
            pos: self.start,
            val: msg,
            line: self.start_line,
        };
        self.done = true;
        Step::Emit(i)
    }

    /// The next token; after an error or EOF, EOF forever.
    pub fn next_item(&mut self) -> Item {
        if self.done {
            return Item {
                typ: Tok::Eof,
                pos: self.pos,
                val: "EOF".into(),
                line: self.start_line,
            };
        }
        let mut state = if self.inside_action {
            State::InsideAction
        } else {
            State::Text
        };
        loop {
            match self.step(state) {
                Step::Go(s) => state = s,
                Step::Emit(item) => {
                    if item.typ == Tok::Eof {
                        self.done = true;
                    }
                    return item;
                }
            }
        }
    }

    fn at_right_delim(&self) -> (bool, bool) {
        let rest = &self.input[self.pos..];
        if has_right_trim(rest) && rest[TRIM_MARKER_LEN..].starts_with(RIGHT) {
            return (true, true);
        }
        (rest.starts_with(RIGHT), false)
    }

    fn at_terminator(&self) -> bool {
        let r = self.peek();
        if is_space(r) {
            return true;
        }
        match r {
            None | Some('.' | ',' | '|' | ':' | ')' | '(') => true,
            _ => self.input[self.pos..].starts_with(RIGHT),
        }
    }

    fn step(&mut self, state: State) -> Step {
        match state {
            State::Text => self.lex_text(),
            State::LeftDelim => self.lex_left_delim(),
            State::Comment => self.lex_comment(),
            State::RightDelim => self.lex_right_delim(),
            State::InsideAction => self.lex_inside_action(),
            State::Space => self.lex_space(),
            State::Identifier => self.lex_identifier(),
            State::Field => self.lex_field_or_variable(Tok::Field),
            State::Variable => {
                if self.at_terminator() {
                    return self.emit(Tok::Variable);
                }
                self.lex_field_or_variable(Tok::Variable)
            }
            State::Char => self.lex_char(),
            State::Number => self.lex_number(),
            State::Quote => self.lex_quote(),
            State::RawQuote => self.lex_raw_quote(),
        }
    }

    fn lex_text(&mut self) -> Step {
        if let Some(x) = self.input[self.pos..].find(LEFT) {
            if x > 0 {
                self.pos += x;
                let delim_end = self.pos + LEFT.len();
                let trim = if has_left_trim(&self.input[delim_end..]) {
                    trim_right_len(&self.input[self.start..self.pos])
                } else {
                    0
                };
                self.pos -= trim;
                self.line += self.input[self.start..self.pos].matches('\n').count();
                let i = self.this_item(Tok::Text);
                self.pos += trim;
                self.ignore();
                if !i.val.is_empty() {
                    return Step::Emit(i);
                }
            }
            return Step::Go(State::LeftDelim);
        }
        self.pos = self.input.len();
        if self.pos > self.start {
            self.line += self.input[self.start..self.pos].matches('\n').count();
            return self.emit(Tok::Text);
        }
        self.emit(Tok::Eof)
    }

    fn lex_left_delim(&mut self) -> Step {
        self.pos += LEFT.len();
        let trim = has_left_trim(&self.input[self.pos..]);
        let after = if trim { TRIM_MARKER_LEN } else { 0 };
        if self.input[self.pos + after..].starts_with(LEFT_COMMENT) {
            self.pos += after;
            self.ignore();
            return Step::Go(State::Comment);
        }
        let i = self.this_item(Tok::LeftDelim);
        self.inside_action = true;
        self.pos += after;
        self.ignore();
        self.paren_depth = 0;
        Step::Emit(i)
    }

    fn lex_comment(&mut self) -> Step {
        self.pos += LEFT_COMMENT.len();
        let Some(x) = self.input[self.pos..].find(RIGHT_COMMENT) else {
            return self.errorf("unclosed comment".into());
        };
        self.pos += x + RIGHT_COMMENT.len();
        let (delim, trim) = self.at_right_delim();
        if !delim {
            return self.errorf("comment ends before closing delimiter".into());
        }
        self.this_item(Tok::Comment);
        if trim {
            self.pos += TRIM_MARKER_LEN;
        }
        self.pos += RIGHT.len();
        if trim {
            self.pos += trim_left_len(&self.input[self.pos..]);
        }
        self.ignore();
        Step::Go(State::Text)
    }

    fn lex_right_delim(&mut self) -> Step {
        let (_, trim) = self.at_right_delim();
        if trim {
            self.pos += TRIM_MARKER_LEN;
            self.ignore();
        }
        self.pos += RIGHT.len();
        let i = self.this_item(Tok::RightDelim);
        if trim {
            self.pos += trim_left_len(&self.input[self.pos..]);
            self.ignore();
        }
        self.inside_action = false;
        Step::Emit(i)
    }

    fn lex_inside_action(&mut self) -> Step {
        let (delim, _) = self.at_right_delim();
        if delim {
            if self.paren_depth == 0 {
                return Step::Go(State::RightDelim);
            }
            return self.errorf("unclosed left paren".into());
        }
        let r = self.next();
        match r {
            None => self.errorf("unclosed action".into()),
            Some(' ' | '\t' | '\r' | '\n') => {
                self.backup();
                Step::Go(State::Space)
            }
            Some('=') => self.emit(Tok::Assign),
            Some(':') => {
                if self.next() != Some('=') {
                    return self.errorf("expected :=".into());
                }
                self.emit(Tok::Declare)
            }
            Some('|') => self.emit(Tok::Pipe),
            Some('"') => Step::Go(State::Quote),
            Some('`') => Step::Go(State::RawQuote),
            Some('$') => Step::Go(State::Variable),
            Some('\'') => Step::Go(State::Char),
            Some('.') => {
                if let Some(&b) = self.input.as_bytes().get(self.pos) {
                    if !b.is_ascii_digit() {
                        return Step::Go(State::Field);
                    }
                }
                self.backup();
                Step::Go(State::Number)
            }
            Some('+' | '-' | '0'..='9') => {
                self.backup();
                Step::Go(State::Number)
            }
            Some(c) if is_alnum(Some(c)) => {
                self.backup();
                Step::Go(State::Identifier)
            }
            Some('(') => {
                self.paren_depth += 1;
                self.emit(Tok::LeftParen)
            }
            Some(')') => {
                if self.paren_depth == 0 {
                    return self.errorf("unexpected right paren".into());
                }
                self.paren_depth -= 1;
                self.emit(Tok::RightParen)
            }
            Some(c) if c.is_ascii() && !c.is_ascii_control() => self.emit(Tok::Char),
            Some(c) => self.errorf(format!(
                "unrecognized character in action: {}",
                go_sharp_u(c)
            )),
        }
    }

    fn lex_space(&mut self) -> Step {
        let mut n = 0;
        while is_space(self.peek()) {
            self.next();
            n += 1;
        }
        let rest = &self.input[self.pos - 1..];
        if has_right_trim(rest) && rest[TRIM_MARKER_LEN..].starts_with(RIGHT) {
            self.backup();
            if n == 1 {
                return Step::Go(State::RightDelim);
            }
        }
        self.emit(Tok::Space)
    }

    fn lex_identifier(&mut self) -> Step {
        loop {
            let r = self.next();
            if is_alnum(r) {
                continue;
            }
            self.backup();
            if !self.at_terminator() {
                return self.bad_char(r);
            }
            let word = &self.input[self.start..self.pos];
            let typ = match keyword(word) {
                Some(k) => k,
                None if word.starts_with('.') => Tok::Field,
                None if word == "true" || word == "false" => Tok::Bool,
                None => Tok::Identifier,
            };
            return self.emit(typ);
        }
    }

    fn bad_char(&mut self, r: Option<char>) -> Step {
        let c = r.unwrap_or('\u{FFFD}');
        self.errorf(format!("bad character {}", go_sharp_u(c)))
    }

    fn lex_field_or_variable(&mut self, typ: Tok) -> Step {
        if self.at_terminator() {
            let t = if typ == Tok::Variable {
                Tok::Variable
            } else {
                Tok::Dot
            };
            return self.emit(t);
        }
        let mut r;
        loop {
            r = self.next();
            if !is_alnum(r) {
                self.backup();
                break;
            }
        }
        if !self.at_terminator() {
            return self.bad_char(r);
        }
        self.emit(typ)
    }

    fn lex_char(&mut self) -> Step {
        loop {
            match self.next() {
                Some('\\') => {
                    let r = self.next();
                    if r.is_some() && r != Some('\n') {
                        continue;
                    }
                    return self.errorf("unterminated character constant".into());
                }
                None | Some('\n') => return self.errorf("unterminated character constant".into()),
                Some('\'') => break,
                _ => {}
            }
        }
        self.emit(Tok::CharConstant)
    }

    fn lex_number(&mut self) -> Step {
        if !self.scan_number() {
            let t = self.input[self.start..self.pos].to_string();
            return self.errorf(format!(
                "bad number syntax: {}",
                crate::go::quote::quote(&t)
            ));
        }
        if matches!(self.peek(), Some('+' | '-')) {
            if !self.scan_number() || !self.input[..self.pos].ends_with('i') {
                let t = self.input[self.start..self.pos].to_string();
                return self.errorf(format!(
                    "bad number syntax: {}",
                    crate::go::quote::quote(&t)
                ));
            }
            return self.emit(Tok::Complex);
        }
        self.emit(Tok::Number)
    }

    fn scan_number(&mut self) -> bool {
        self.accept("+-");
        let mut digits = "0123456789_";
        if self.accept("0") {
            if self.accept("xX") {
                digits = "0123456789abcdefABCDEF_";
            } else if self.accept("oO") {
                digits = "01234567_";
            } else if self.accept("bB") {
                digits = "01_";
            }
        }
        self.accept_run(digits);
        if self.accept(".") {
            self.accept_run(digits);
        }
        if digits.len() == 11 && self.accept("eE") {
            self.accept("+-");
            self.accept_run("0123456789_");
        }
        if digits.len() == 23 && self.accept("pP") {
            self.accept("+-");
            self.accept_run("0123456789_");
        }
        self.accept("i");
        if is_alnum(self.peek()) {
            self.next();
            return false;
        }
        true
    }

    fn lex_quote(&mut self) -> Step {
        loop {
            match self.next() {
                Some('\\') => {
                    let r = self.next();
                    if r.is_some() && r != Some('\n') {
                        continue;
                    }
                    return self.errorf("unterminated quoted string".into());
                }
                None | Some('\n') => return self.errorf("unterminated quoted string".into()),
                Some('"') => break,
                _ => {}
            }
        }
        self.emit(Tok::String)
    }

    fn lex_raw_quote(&mut self) -> Step {
        loop {
            match self.next() {
                None => return self.errorf("unterminated raw quoted string".into()),
                Some('`') => break,
                _ => {}
            }
        }
        self.emit(Tok::RawString)
    }
}

/// Go's `%#U`: `U+0041 'A'` (the character only when printable).
pub fn go_sharp_u(c: char) -> String {
    let code = format!("U+{:04X}", c as u32);
    if crate::go::quote::is_print(c) {
        format!("{code} '{c}'")
    } else {
        code
    }
}
