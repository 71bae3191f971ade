//! The parser of Go's `text/template/parse`, with Go's checks (undefined functions and
//! variables, `break` outside `range`, block structure, redefinition) and Go's error messages
//! (`template: NAME:LINE: ...`, the line being that of the last token read, as in Go).

use std::collections::HashMap;

use super::ast::{
    ActionNode, BranchNode, CommandNode, Expr, ListNode, Node, NumberLit, PipeNode, Pos,
    TemplateNode, TextNode, NO_MEMO,
};
use super::lex::{Item, Lexer, Tok};
use super::TemplateError;
use crate::go::strconv::{parse_float, parse_int, parse_uint};

type R<T> = Result<T, TemplateError>;

/// Go's `maxStackDepth`: parenthesized pipelines nest at most this deep
/// (`max expression depth exceeded`).
pub const MAX_PAREN_DEPTH: usize = 10_000;

/// outrigger's bound on nested `{{if}}`, `{{range}}`, `{{with}}`, `{{block}}` actions and links
/// of `{{else if}}`/`{{else with}}` chains. Go has none (its stack grows); real templates nest
/// a few levels, so a template beyond this is refused rather than parsed with ever more memory.
pub const MAX_CONTROL_DEPTH: usize = 10_000;

/// Pipelines whose source spans more than this many bytes are not given a
/// [`PipeNode::memo`] (naming one takes its text).
const MAX_MEMO_SPAN: usize = 256;

/// A parsed tree set: the main tree under the template's name, every `define`/`block` under its
/// own name; the number of distinct field-chain prefixes its [`Slots`](super::ast::Slots) name
/// and of distinct pipeline texts its [`PipeNode::memo`]s name.
pub struct Trees {
    /// The trees by name.
    pub trees: HashMap<String, ListNode>,
    /// The number of field-chain slots.
    pub chain_slots: usize,
    /// The number of pipeline memo numbers.
    pub memo_slots: usize,
}

/// Parse `text` as template `name`. `func_id` gives a defined function's id (kept in its
/// identifier's node), `None` for a name that is not a function.
pub fn parse(name: &str, text: &str, func_id: &dyn Fn(&str) -> Option<u32>) -> R<Trees> {
    let mut p = Parser {
        name,
        lex: Lexer::new(text),
        func_id,
        trees: HashMap::new(),
        slots: HashMap::new(),
        memos: HashMap::new(),
        control_depth: 0,
    };
    let mut t = TreeState::new();
    let root = p.parse_main(&mut t)?;
    p.add(&t, name, root)?;
    Ok(Trees {
        trees: p.trees,
        chain_slots: p.slots.len(),
        memo_slots: p.memos.len(),
    })
}

struct Parser<'a> {
    name: &'a str,
    lex: Lexer<'a>,
    func_id: &'a dyn Fn(&str) -> Option<u32>,
    trees: HashMap<String, ListNode>,
    /// The field-chain prefixes seen (`A`, `A.B`, ...), numbered in order.
    slots: HashMap<String, u32>,
    /// The texts of the pipelines given a memo number, numbered in order.
    memos: HashMap<String, u32>,
    /// Nesting of control actions and blocks being parsed (bounded by [`MAX_CONTROL_DEPTH`]).
    control_depth: usize,
}

/// Per-tree parser state (Go's `Tree`: token look-ahead, variables in scope, range depth).
struct TreeState {
    token: [Item; 3],
    peek_count: usize,
    vars: Vec<String>,
    range_depth: usize,
    action_line: usize,
    /// Go's `stackDepth`: nesting of parenthesized pipelines.
    paren_depth: usize,
}

impl TreeState {
    fn new() -> TreeState {
        let blank = Item {
            typ: Tok::Eof,
            pos: 0,
            val: String::new(),
            line: 1,
        };
        TreeState {
            token: [blank.clone(), blank.clone(), blank],
            peek_count: 0,
            vars: vec!["$".into()],
            range_depth: 0,
            action_line: 0,
            paren_depth: 0,
        }
    }
}

/// Go's `parse.IsEmptyTree` of a list: only whitespace text.
fn is_empty(list: &ListNode) -> bool {
    list.nodes
        .iter()
        .all(|n| matches!(n, Node::Text(t) if t.text.trim().is_empty()))
}

impl<'a> Parser<'a> {
    fn errorf(&self, t: &TreeState, msg: String) -> TemplateError {
        TemplateError::Parse {
            template: self.name.to_string(),
            line: t.token[0].line,
            msg,
        }
    }

    fn next(&mut self, t: &mut TreeState) -> Item {
        if t.peek_count > 0 {
            t.peek_count -= 1;
        } else {
            t.token[0] = self.lex.next_item();
        }
        t.token[t.peek_count].clone()
    }

    fn backup(&self, t: &mut TreeState) {
        t.peek_count += 1;
    }

    fn backup2(&self, t: &mut TreeState, t1: Item) {
        t.token[1] = t1;
        t.peek_count = 2;
    }

    fn backup3(&self, t: &mut TreeState, t2: Item, t1: Item) {
        t.token[1] = t1;
        t.token[2] = t2;
        t.peek_count = 3;
    }

    fn peek(&mut self, t: &mut TreeState) -> Item {
        if t.peek_count > 0 {
            return t.token[t.peek_count - 1].clone();
        }
        t.peek_count = 1;
        t.token[0] = self.lex.next_item();
        t.token[0].clone()
    }

    fn next_non_space(&mut self, t: &mut TreeState) -> Item {
        loop {
            let tok = self.next(t);
            if tok.typ != Tok::Space {
                return tok;
            }
        }
    }

    fn peek_non_space(&mut self, t: &mut TreeState) -> Item {
        let tok = self.next_non_space(t);
        self.backup(t);
        tok
    }

    fn expect(&mut self, t: &mut TreeState, want: Tok, context: &str) -> R<Item> {
        let tok = self.next_non_space(t);
        if tok.typ != want {
            return Err(self.unexpected(t, &tok, context));
        }
        Ok(tok)
    }

    fn unexpected(&self, t: &TreeState, tok: &Item, context: &str) -> TemplateError {
        if tok.typ == Tok::Error {
            let mut extra = String::new();
            if t.action_line != 0 && t.action_line != tok.line {
                extra = format!(" in action started at {}:{}", self.name, t.action_line);
                if tok.val.ends_with(" action") {
                    extra = extra[" in action".len()..].to_string();
                }
            }
            return self.errorf(t, format!("{}{extra}", tok.describe()));
        }
        self.errorf(t, format!("unexpected {} in {context}", tok.describe()))
    }

    /// Go's `Tree.add`: install a tree unless a non-empty one of that name exists.
    fn add(&mut self, t: &TreeState, name: &str, root: ListNode) -> R<()> {
        match self.trees.get(name) {
            Some(existing) if !is_empty(existing) => {
                if !is_empty(&root) {
                    return Err(self.errorf(
                        t,
                        format!(
                            "template: multiple definition of template {}",
                            crate::go::quote::quote(name)
                        ),
                    ));
                }
                Ok(())
            }
            _ => {
                self.trees.insert(name.to_string(), root);
                Ok(())
            }
        }
    }

    fn parse_main(&mut self, t: &mut TreeState) -> R<ListNode> {
        let first = self.peek(t);
        let mut root = ListNode {
            pos: Pos::new(first.pos, first.line),
            nodes: Vec::new(),
        };
        while self.peek(t).typ != Tok::Eof {
            if self.peek(t).typ == Tok::LeftDelim {
                let delim = self.next(t);
                if self.next_non_space(t).typ == Tok::Define {
                    let mut nt = TreeState::new();
                    self.parse_definition(&mut nt)?;
                    continue;
                }
                self.backup2(t, delim);
            }
            match self.text_or_action(t)? {
                Parsed::Node(n) => root.nodes.push(n),
                Parsed::End => return Err(self.errorf(t, "unexpected {{end}}".into())),
                Parsed::Else(..) => return Err(self.errorf(t, "unexpected {{else}}".into())),
            }
        }
        Ok(root)
    }

    fn parse_definition(&mut self, t: &mut TreeState) -> R<()> {
        let context = "define clause";
        let tok = self.next_non_space(t);
        if tok.typ != Tok::String && tok.typ != Tok::RawString {
            return Err(self.unexpected(t, &tok, context));
        }
        let name = unquote(&tok.val).map_err(|e| self.errorf(t, e))?;
        self.expect(t, Tok::RightDelim, context)?;
        let (root, end) = self.item_list(t)?;
        match end {
            Parsed::End => {}
            other => {
                return Err(self.errorf(t, format!("unexpected {} in {context}", other.describe())))
            }
        }
        self.add(t, &name, root)
    }

    /// Nodes up to `{{end}}` or `{{else}}`, which is returned separately.
    fn item_list(&mut self, t: &mut TreeState) -> R<(ListNode, Parsed)> {
        let first = self.peek_non_space(t);
        let mut list = ListNode {
            pos: Pos::new(first.pos, first.line),
            nodes: Vec::new(),
        };
        while self.peek_non_space(t).typ != Tok::Eof {
            match self.text_or_action(t)? {
                Parsed::Node(n) => list.nodes.push(n),
                end => return Ok((list, end)),
            }
        }
        Err(self.errorf(t, "unexpected EOF".into()))
    }

    fn text_or_action(&mut self, t: &mut TreeState) -> R<Parsed> {
        let tok = self.next_non_space(t);
        match tok.typ {
            Tok::Text => Ok(Parsed::Node(Node::Text(TextNode {
                pos: Pos::new(tok.pos, tok.line),
                text: tok.val,
            }))),
            Tok::LeftDelim => {
                t.action_line = tok.line;
                let r = self.action(t);
                t.action_line = 0;
                r
            }
            _ => Err(self.unexpected(t, &tok, "input")),
        }
    }

    fn action(&mut self, t: &mut TreeState) -> R<Parsed> {
        let tok = self.next_non_space(t);
        let pos = Pos::new(tok.pos, tok.line);
        match tok.typ {
            Tok::Block => return self.block_control(t).map(Parsed::Node),
            Tok::Break | Tok::Continue => {
                let what = if tok.typ == Tok::Break {
                    "{{break}}"
                } else {
                    "{{continue}}"
                };
                let next = self.next_non_space(t);
                if next.typ != Tok::RightDelim {
                    return Err(self.unexpected(t, &next, what));
                }
                if t.range_depth == 0 {
                    return Err(self.errorf(t, format!("{what} outside {{{{range}}}}")));
                }
                return Ok(Parsed::Node(if tok.typ == Tok::Break {
                    Node::Break(pos)
                } else {
                    Node::Continue(pos)
                }));
            }
            Tok::Else => {
                let peek = self.peek_non_space(t);
                if peek.typ == Tok::If || peek.typ == Tok::With {
                    return Ok(Parsed::Else(Pos::new(peek.pos, peek.line)));
                }
                let tok = self.expect(t, Tok::RightDelim, "else")?;
                return Ok(Parsed::Else(Pos::new(tok.pos, tok.line)));
            }
            Tok::End => {
                self.expect(t, Tok::RightDelim, "end")?;
                return Ok(Parsed::End);
            }
            Tok::If => return self.control(t, Ctl::If).map(Parsed::Node),
            Tok::Range => return self.control(t, Ctl::Range).map(Parsed::Node),
            Tok::With => return self.control(t, Ctl::With).map(Parsed::Node),
            Tok::Template => return self.template_control(t).map(Parsed::Node),
            _ => {}
        }
        self.backup(t);
        let tok = self.peek(t);
        let pipe = self.pipeline(t, "command", Tok::RightDelim)?;
        Ok(Parsed::Node(Node::Action(ActionNode {
            pos: Pos::new(tok.pos, tok.line),
            pipe,
        })))
    }

    /// Enter one more level of control nesting, or refuse the template beyond
    /// [`MAX_CONTROL_DEPTH`].
    fn enter_control(&mut self, t: &TreeState, context: &str) -> R<()> {
        if self.control_depth >= MAX_CONTROL_DEPTH {
            return Err(self.errorf(
                t,
                format!(
                    "{{{{{context}}}}} nested too deep: more than {MAX_CONTROL_DEPTH} nested \
                     if/range/with/block actions (outrigger's limit; Go has none)"
                ),
            ));
        }
        self.control_depth += 1;
        Ok(())
    }

    fn control(&mut self, t: &mut TreeState, ctl: Ctl) -> R<Node> {
        let context = match ctl {
            Ctl::If => "if",
            Ctl::Range => "range",
            Ctl::With => "with",
        };
        self.enter_control(t, context)?;
        let mark = t.vars.len();
        let r = crate::go::stack::grow(|| self.control_body(t, ctl, context));
        self.control_depth -= 1;
        t.vars.truncate(mark);
        let (pipe, body, else_body) = r?;
        let b = BranchNode {
            pos: pipe.pos,
            pipe,
            body,
            else_body,
        };
        Ok(match ctl {
            Ctl::If => Node::If(b),
            Ctl::Range => Node::Range(b),
            Ctl::With => Node::With(b),
        })
    }

    fn control_body(
        &mut self,
        t: &mut TreeState,
        ctl: Ctl,
        context: &str,
    ) -> R<(PipeNode, ListNode, Option<ListNode>)> {
        let pipe = self.pipeline(t, context, Tok::RightDelim)?;
        if ctl == Ctl::Range {
            t.range_depth += 1;
        }
        let r = self.item_list(t);
        if ctl == Ctl::Range {
            t.range_depth -= 1;
        }
        let (list, next) = r?;
        let mut else_list = None;
        match next {
            Parsed::End => {}
            Parsed::Else(pos) => {
                // `{{else if}}` / `{{else with}}` (Go 1.23) nest the chained block in the else
                // list; its `{{end}}` closes both.
                let peek = self.peek(t);
                if ctl == Ctl::If && peek.typ == Tok::If {
                    self.next(t);
                    let inner = self.control(t, Ctl::If)?;
                    else_list = Some(ListNode {
                        pos,
                        nodes: vec![inner],
                    });
                } else if ctl == Ctl::With && peek.typ == Tok::With {
                    self.next(t);
                    let inner = self.control(t, Ctl::With)?;
                    else_list = Some(ListNode {
                        pos,
                        nodes: vec![inner],
                    });
                } else {
                    let (l, next) = self.item_list(t)?;
                    if !matches!(next, Parsed::End) {
                        return Err(
                            self.errorf(t, format!("expected end; found {}", next.describe()))
                        );
                    }
                    else_list = Some(l);
                }
            }
            Parsed::Node(_) => {}
        }
        Ok((pipe, list, else_list))
    }

    fn block_control(&mut self, t: &mut TreeState) -> R<Node> {
        let context = "block clause";
        let tok = self.next_non_space(t);
        let name = self.template_name(t, &tok, context)?;
        let pipe = self.pipeline(t, context, Tok::RightDelim)?;
        let mut bt = TreeState::new();
        self.enter_control(t, "block")?;
        let r = crate::go::stack::grow(|| self.item_list(&mut bt));
        self.control_depth -= 1;
        let (root, end) = r?;
        if !matches!(end, Parsed::End) {
            return Err(self.errorf(t, format!("unexpected {} in {context}", end.describe())));
        }
        self.add(&bt, &name, root)?;
        Ok(Node::Template(TemplateNode {
            pos: Pos::new(tok.pos, tok.line),
            name,
            pipe: Some(pipe),
        }))
    }

    fn template_control(&mut self, t: &mut TreeState) -> R<Node> {
        let context = "template clause";
        let tok = self.next_non_space(t);
        let name = self.template_name(t, &tok, context)?;
        let mut pipe = None;
        if self.next_non_space(t).typ != Tok::RightDelim {
            self.backup(t);
            pipe = Some(self.pipeline(t, context, Tok::RightDelim)?);
        }
        Ok(Node::Template(TemplateNode {
            pos: Pos::new(tok.pos, tok.line),
            name,
            pipe,
        }))
    }

    fn template_name(&self, t: &TreeState, tok: &Item, context: &str) -> R<String> {
        match tok.typ {
            Tok::String | Tok::RawString => unquote(&tok.val).map_err(|e| self.errorf(t, e)),
            _ => Err(self.unexpected(t, tok, context)),
        }
    }

    fn pipeline(&mut self, t: &mut TreeState, context: &str, end: Tok) -> R<PipeNode> {
        let tok = self.peek_non_space(t);
        let mut pipe = PipeNode {
            pos: Pos::new(tok.pos, tok.line),
            decl: Vec::new(),
            is_assign: false,
            commands: Vec::new(),
            memo: NO_MEMO,
        };
        // Declarations or assignments.
        loop {
            let v = self.peek_non_space(t);
            if v.typ != Tok::Variable {
                break;
            }
            self.next(t);
            let after = self.peek(t);
            let next = self.peek_non_space(t);
            if next.typ == Tok::Assign || next.typ == Tok::Declare {
                pipe.is_assign = next.typ == Tok::Assign;
                self.next_non_space(t);
                pipe.decl.push((Pos::new(v.pos, v.line), v.val.clone()));
                t.vars.push(v.val);
            } else if next.typ == Tok::Char && next.val == "," {
                self.next_non_space(t);
                pipe.decl.push((Pos::new(v.pos, v.line), v.val.clone()));
                t.vars.push(v.val);
                if context == "range" && pipe.decl.len() < 2 {
                    match self.peek_non_space(t).typ {
                        Tok::Variable | Tok::RightDelim | Tok::RightParen => continue,
                        _ => {
                            return Err(self.errorf(t, "range can only initialize variables".into()))
                        }
                    }
                }
                return Err(self.errorf(t, format!("too many declarations in {context}")));
            } else if after.typ == Tok::Space {
                self.backup3(t, v, after);
            } else {
                self.backup2(t, v);
            }
            break;
        }
        loop {
            let tok = self.next_non_space(t);
            match tok.typ {
                x if x == end => {
                    self.check_pipeline(t, &pipe, context)?;
                    if pipe.decl.is_empty()
                        && tok.pos.saturating_sub(pipe.pos.offset) <= MAX_MEMO_SPAN
                    {
                        // Go's `String()` of the pipeline: alike only for pipelines parsed alike.
                        let next = self.memos.len() as u32;
                        pipe.memo = *self
                            .memos
                            .entry(super::ast::pipe_str(&pipe))
                            .or_insert(next);
                    }
                    return Ok(pipe);
                }
                Tok::Bool
                | Tok::CharConstant
                | Tok::Complex
                | Tok::Dot
                | Tok::Field
                | Tok::Identifier
                | Tok::Number
                | Tok::Nil
                | Tok::RawString
                | Tok::String
                | Tok::Variable
                | Tok::LeftParen => {
                    self.backup(t);
                    let c = self.command(t)?;
                    pipe.commands.push(c);
                }
                _ => return Err(self.unexpected(t, &tok, context)),
            }
        }
    }

    fn check_pipeline(&self, t: &TreeState, pipe: &PipeNode, context: &str) -> R<()> {
        if pipe.commands.is_empty() {
            return Err(self.errorf(t, format!("missing value for {context}")));
        }
        for (i, c) in pipe.commands.iter().enumerate().skip(1) {
            if matches!(
                c.args.first(),
                Some(
                    Expr::Bool(..)
                        | Expr::Dot(_)
                        | Expr::Nil(_)
                        | Expr::Number(..)
                        | Expr::String(..)
                )
            ) {
                return Err(self.errorf(
                    t,
                    format!("non executable command in pipeline stage {}", i + 1),
                ));
            }
        }
        Ok(())
    }

    fn command(&mut self, t: &mut TreeState) -> R<CommandNode> {
        let first = self.peek_non_space(t);
        let mut cmd = CommandNode {
            pos: Pos::new(first.pos, first.line),
            args: Vec::new(),
        };
        loop {
            self.peek_non_space(t);
            if let Some(op) = self.operand(t)? {
                cmd.args.push(op);
            }
            let tok = self.next(t);
            match tok.typ {
                Tok::Space => continue,
                Tok::RightDelim | Tok::RightParen => self.backup(t),
                Tok::Pipe => {}
                _ => return Err(self.unexpected(t, &tok, "operand")),
            }
            break;
        }
        if cmd.args.is_empty() {
            return Err(self.errorf(t, "empty command".into()));
        }
        Ok(cmd)
    }

    /// The slot of each prefix of the field chain `fields`.
    fn slots_of(&mut self, fields: &[String]) -> Vec<u32> {
        let mut key = String::new();
        fields
            .iter()
            .map(|f| {
                key.push('.');
                key.push_str(f);
                let next = self.slots.len() as u32;
                *self.slots.entry(key.clone()).or_insert(next)
            })
            .collect()
    }

    fn operand(&mut self, t: &mut TreeState) -> R<Option<Expr>> {
        let node = self.operand_unslotted(t)?;
        Ok(node.map(|node| match node {
            Expr::Field(p, f, _) => {
                let s = self.slots_of(&f);
                Expr::Field(p, f, s)
            }
            Expr::Variable(p, n, f, _) => {
                let s = self.slots_of(&f);
                Expr::Variable(p, n, f, s)
            }
            other => other,
        }))
    }

    fn operand_unslotted(&mut self, t: &mut TreeState) -> R<Option<Expr>> {
        let Some(node) = self.term(t)? else {
            return Ok(None);
        };
        if self.peek(t).typ != Tok::Field {
            return Ok(Some(node));
        }
        let first = self.peek(t);
        let cpos = Pos::new(first.pos, first.line);
        let mut fields = Vec::new();
        while self.peek(t).typ == Tok::Field {
            let f = self.next(t);
            fields.extend(f.val[1..].split('.').map(str::to_string));
        }
        Ok(Some(match node {
            Expr::Field(_, mut f, _) => {
                f.extend(fields);
                Expr::Field(cpos, f, Vec::new())
            }
            Expr::Variable(_, n, mut f, _) => {
                f.extend(fields);
                Expr::Variable(cpos, n, f, Vec::new())
            }
            Expr::Bool(..) | Expr::String(..) | Expr::Number(..) | Expr::Nil(_) | Expr::Dot(_) => {
                return Err(self.errorf(
                    t,
                    format!(
                        "unexpected . after term {}",
                        crate::go::quote::quote(&super::ast::expr_str(&node))
                    ),
                ))
            }
            other => Expr::Chain(cpos, Box::new(other), fields),
        }))
    }

    fn term(&mut self, t: &mut TreeState) -> R<Option<Expr>> {
        let tok = self.next_non_space(t);
        let pos = Pos::new(tok.pos, tok.line);
        Ok(Some(match tok.typ {
            Tok::Identifier => {
                let Some(id) = (self.func_id)(&tok.val) else {
                    return Err(self.errorf(
                        t,
                        format!("function {} not defined", crate::go::quote::quote(&tok.val)),
                    ));
                };
                Expr::Identifier(pos, tok.val, id)
            }
            Tok::Dot => Expr::Dot(pos),
            Tok::Nil => Expr::Nil(pos),
            Tok::Variable => {
                if !t.vars.contains(&tok.val) {
                    return Err(self.errorf(
                        t,
                        format!("undefined variable {}", crate::go::quote::quote(&tok.val)),
                    ));
                }
                Expr::Variable(pos, tok.val, Vec::new(), Vec::new())
            }
            Tok::Field => Expr::Field(
                pos,
                tok.val[1..].split('.').map(str::to_string).collect(),
                Vec::new(),
            ),
            Tok::Bool => Expr::Bool(pos, tok.val == "true"),
            Tok::CharConstant | Tok::Complex | Tok::Number => {
                let n = new_number(&tok.val, tok.typ).map_err(|e| self.errorf(t, e))?;
                Expr::Number(pos, Box::new(n))
            }
            Tok::LeftParen => {
                if t.paren_depth >= MAX_PAREN_DEPTH {
                    return Err(self.errorf(t, "max expression depth exceeded".into()));
                }
                t.paren_depth += 1;
                let p = crate::go::stack::grow(|| {
                    self.pipeline(t, "parenthesized pipeline", Tok::RightParen)
                });
                t.paren_depth -= 1;
                let p = p?;
                Expr::Pipe(p.pos, Box::new(p))
            }
            Tok::String | Tok::RawString => {
                let s = unquote(&tok.val).map_err(|e| self.errorf(t, e))?;
                Expr::String(pos, tok.val, s)
            }
            _ => {
                self.backup(t);
                return Ok(None);
            }
        }))
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Ctl {
    If,
    Range,
    With,
}

/// What `textOrAction` produced: a node, or the `{{end}}` / `{{else}}` closing a list.
enum Parsed {
    Node(Node),
    End,
    Else(Pos),
}

impl Parsed {
    fn describe(&self) -> String {
        match self {
            Parsed::End => "{{end}}".into(),
            Parsed::Else(_) => "{{else}}".into(),
            Parsed::Node(n) => super::ast::node_str(n),
        }
    }
}

const SYNTAX: &str = "invalid syntax";

/// Go's `strconv.Unquote` (string and raw string literals; invalid UTF-8 from `\x`/octal escapes
/// becomes U+FFFD).
pub fn unquote(s: &str) -> Result<String, String> {
    let b = s.as_bytes();
    if b.len() < 2 {
        return Err(SYNTAX.into());
    }
    let q = b[0];
    if q == b'`' {
        if b[b.len() - 1] != b'`' || s[1..s.len() - 1].contains('`') {
            return Err(SYNTAX.into());
        }
        return Ok(s[1..s.len() - 1].replace('\r', ""));
    }
    if q != b'"' || b[b.len() - 1] != b'"' {
        return Err(SYNTAX.into());
    }
    let mut rest = &s[1..s.len() - 1];
    let mut out: Vec<u8> = Vec::with_capacity(rest.len());
    while !rest.is_empty() {
        if rest.starts_with('\n') {
            return Err(SYNTAX.into());
        }
        let (v, multibyte, tail) = unquote_char(rest, b'"')?;
        if v < 0x80 || !multibyte {
            out.push(v as u8);
        } else {
            let c = char::from_u32(v).ok_or_else(|| SYNTAX.to_string())?;
            let mut buf = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        }
        rest = tail;
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Go's `strconv.UnquoteChar`: the value, whether it is a multi-byte character, and the rest.
fn unquote_char(s: &str, quote: u8) -> Result<(u32, bool, &str), String> {
    let b = s.as_bytes();
    let Some(&c) = b.first() else {
        return Err(SYNTAX.into());
    };
    if c == quote && (quote == b'\'' || quote == b'"') {
        return Err(SYNTAX.into());
    }
    if c >= 0x80 {
        let ch = s.chars().next().unwrap_or('\u{FFFD}');
        return Ok((ch as u32, true, &s[ch.len_utf8()..]));
    }
    if c != b'\\' {
        return Ok((u32::from(c), false, &s[1..]));
    }
    let Some(&e) = b.get(1) else {
        return Err(SYNTAX.into());
    };
    let rest = &s[2..];
    let simple = |v: u8| Ok((u32::from(v), false, rest));
    match e {
        b'a' => simple(7),
        b'b' => simple(8),
        b'f' => simple(12),
        b'n' => simple(b'\n'),
        b'r' => simple(b'\r'),
        b't' => simple(b'\t'),
        b'v' => simple(11),
        b'x' | b'u' | b'U' => {
            let n = match e {
                b'x' => 2,
                b'u' => 4,
                _ => 8,
            };
            let digits = rest.as_bytes().get(..n).ok_or_else(|| SYNTAX.to_string())?;
            let mut v: u32 = 0;
            for &d in digits {
                let x = (d as char).to_digit(16).ok_or_else(|| SYNTAX.to_string())?;
                v = (v << 4) | x;
            }
            let tail = &rest[n..];
            if e == b'x' {
                return Ok((v, false, tail));
            }
            if char::from_u32(v).is_none() {
                return Err(SYNTAX.into());
            }
            Ok((v, true, tail))
        }
        b'0'..=b'7' => {
            let digits = rest.as_bytes().get(..2).ok_or_else(|| SYNTAX.to_string())?;
            let mut v = u32::from(e - b'0');
            for &d in digits {
                if !(b'0'..=b'7').contains(&d) {
                    return Err(SYNTAX.into());
                }
                v = (v << 3) | u32::from(d - b'0');
            }
            if v > 255 {
                return Err(SYNTAX.into());
            }
            Ok((v, false, &rest[2..]))
        }
        b'\\' => simple(b'\\'),
        b'\'' | b'"' => {
            if e != quote {
                return Err(SYNTAX.into());
            }
            simple(e)
        }
        _ => Err(SYNTAX.into()),
    }
}

/// Go's `parse.newNumber`: every interpretation of a number token.
fn new_number(text: &str, typ: Tok) -> Result<NumberLit, String> {
    let mut n = NumberLit {
        text: text.to_string(),
        int: None,
        uint: None,
        float: None,
        complex: None,
    };
    match typ {
        Tok::CharConstant => {
            let (r, _, tail) = unquote_char(&text[1..], b'\'')?;
            if tail != "'" {
                return Err(format!("malformed character constant: {text}"));
            }
            n.int = Some(i64::from(r));
            n.uint = Some(u64::from(r));
            n.float = Some(f64::from(r));
            return Ok(n);
        }
        Tok::Complex => {
            let (re, im) = scan_complex(text)?;
            n.complex = Some((re, im));
            simplify_complex(&mut n);
            return Ok(n);
        }
        _ => {}
    }
    if let Some(head) = text.strip_suffix('i') {
        if let Ok(f) = parse_float(head) {
            n.complex = Some((0.0, f));
            simplify_complex(&mut n);
            return Ok(n);
        }
    }
    let u = parse_uint(text, 0, 64);
    if let Ok(u) = u {
        n.uint = Some(u);
    }
    if let Ok(i) = parse_int(text, 0, 64) {
        n.int = Some(i);
        if i == 0 {
            n.uint = Some(u.unwrap_or(0));
        }
    }
    if let Some(i) = n.int {
        n.float = Some(i as f64);
    } else if let Some(u) = n.uint {
        n.float = Some(u as f64);
    } else if let Ok(f) = parse_float(text) {
        if !text.contains(['.', 'e', 'E', 'p', 'P']) {
            return Err(format!(
                "integer overflow: {}",
                crate::go::quote::quote(text)
            ));
        }
        n.float = Some(f);
        if f_is_int(f) {
            n.int = Some(f as i64);
        }
        if f_is_uint(f) {
            n.uint = Some(f as u64);
        }
    }
    if n.int.is_none() && n.uint.is_none() && n.float.is_none() {
        return Err(format!(
            "illegal number syntax: {}",
            crate::go::quote::quote(text)
        ));
    }
    Ok(n)
}

/// `float64(int64(f)) == f` on amd64 (out-of-range conversions give `MinInt64`).
fn f_is_int(f: f64) -> bool {
    (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&f) && f.trunc() == f
}

/// `float64(uint64(f)) == f` on amd64.
fn f_is_uint(f: f64) -> bool {
    (0.0..18_446_744_073_709_551_616.0).contains(&f) && f.trunc() == f
}

fn simplify_complex(n: &mut NumberLit) {
    let Some((re, im)) = n.complex else { return };
    if im == 0.0 {
        n.float = Some(re);
        if f_is_int(re) {
            n.int = Some(re as i64);
        }
        if f_is_uint(re) {
            n.uint = Some(re as u64);
        }
    }
}

/// `fmt.Sscan` of a complex literal `R+Ii` / `R-Ii`.
fn scan_complex(text: &str) -> Result<(f64, f64), String> {
    let b = text.as_bytes();
    let split = (1..b.len())
        .rev()
        .find(|&i| matches!(b[i], b'+' | b'-') && !matches!(b[i - 1], b'e' | b'E' | b'p' | b'P'));
    let bad = || {
        format!(
            "strconv.ParseFloat: parsing {}: invalid syntax",
            crate::go::quote::quote(text)
        )
    };
    let Some(i) = split else { return Err(bad()) };
    let im = text[i..].strip_suffix('i').ok_or_else(bad)?;
    let re = parse_float(&text[..i]).map_err(|_| bad())?;
    let im = parse_float(im).map_err(|_| bad())?;
    Ok((re, im))
}
