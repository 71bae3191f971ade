//! The parse tree of a Go `text/template`, as Go's `text/template/parse` builds it (node kinds,
//! positions, number literals with all their Go interpretations, and each node's `String()`,
//! which Go prints in execution errors).

use std::fmt::Write as _;

/// A byte offset into the template source and the 1-based line it is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pos {
    /// Byte offset from the start of the source.
    pub offset: usize,
    /// 1-based line number.
    pub line: usize,
}

impl Pos {
    /// A position.
    pub fn new(offset: usize, line: usize) -> Pos {
        Pos { offset, line }
    }
}

/// A statement-level node.
#[derive(Debug, Clone)]
pub enum Node {
    /// Plain text.
    Text(TextNode),
    /// `{{pipeline}}`.
    Action(ActionNode),
    /// `{{if}}`.
    If(BranchNode),
    /// `{{range}}`.
    Range(BranchNode),
    /// `{{with}}`.
    With(BranchNode),
    /// `{{template "name" pipeline}}` (also what `{{block}}` leaves in place).
    Template(TemplateNode),
    /// `{{break}}`.
    Break(Pos),
    /// `{{continue}}`.
    Continue(Pos),
}

/// A sequence of nodes.
#[derive(Debug, Clone, Default)]
pub struct ListNode {
    /// Position of the list.
    pub pos: Pos,
    /// The nodes.
    pub nodes: Vec<Node>,
}

/// Text outside actions.
#[derive(Debug, Clone)]
pub struct TextNode {
    /// Position.
    pub pos: Pos,
    /// The text (after trimming).
    pub text: String,
}

/// An action that prints (or declares).
#[derive(Debug, Clone)]
pub struct ActionNode {
    /// Position of the pipeline.
    pub pos: Pos,
    /// The pipeline.
    pub pipe: PipeNode,
}

/// `{{if}}`, `{{range}}` or `{{with}}`.
#[derive(Debug, Clone)]
pub struct BranchNode {
    /// Position (of the pipeline, as in Go).
    pub pos: Pos,
    /// The condition or range pipeline (with the range variables as declarations).
    pub pipe: PipeNode,
    /// The body.
    pub body: ListNode,
    /// The `{{else}}` body.
    pub else_body: Option<ListNode>,
}

/// `{{template "name" pipeline}}`.
#[derive(Debug, Clone)]
pub struct TemplateNode {
    /// Position of the name token.
    pub pos: Pos,
    /// Template name.
    pub name: String,
    /// The pipeline giving dot, if any.
    pub pipe: Option<PipeNode>,
}

/// A pipeline: declarations and commands separated by `|`.
#[derive(Debug, Clone)]
pub struct PipeNode {
    /// Position.
    pub pos: Pos,
    /// Declared or assigned variables (`$x`), with their positions.
    pub decl: Vec<(Pos, String)>,
    /// `=` rather than `:=`.
    pub is_assign: bool,
    /// The commands.
    pub commands: Vec<CommandNode>,
    /// A number naming the pipeline's text in its template (pipelines written alike, without
    /// declarations, share it), or [`NO_MEMO`]: the executor can remember what a pipeline of
    /// the root gives during one render.
    pub memo: u32,
}

/// [`PipeNode::memo`] of a pipeline that is not remembered.
pub const NO_MEMO: u32 = u32::MAX;

/// One command: operands separated by spaces.
#[derive(Debug, Clone)]
pub struct CommandNode {
    /// Position.
    pub pos: Pos,
    /// The operands; the first decides what the command is.
    pub args: Vec<Expr>,
}

/// A number literal with every interpretation Go's parser found valid.
#[derive(Debug, Clone, PartialEq)]
pub struct NumberLit {
    /// The source text.
    pub text: String,
    /// As a signed integer.
    pub int: Option<i64>,
    /// As an unsigned integer.
    pub uint: Option<u64>,
    /// As a float.
    pub float: Option<f64>,
    /// As a complex number (real, imaginary).
    pub complex: Option<(f64, f64)>,
}

/// For each prefix of a field chain (`.A`, `.A.B`, ...), a number naming that prefix in its
/// template: the same prefix has the same number wherever it is written (`.A.B` and `$.A.B`
/// too), so the executor can remember what a prefix gives from the root during one render.
pub type Slots = Vec<u32>;

/// An operand.
#[derive(Debug, Clone)]
pub enum Expr {
    /// `.`.
    Dot(Pos),
    /// `.A.B`: field names, and each prefix's [`Slots`] entry.
    Field(Pos, Vec<String>, Slots),
    /// `$x.A.B`: variable name, field names, and each prefix's [`Slots`] entry.
    Variable(Pos, String, Vec<String>, Slots),
    /// A function name, with the id the parser's function resolver gave it.
    Identifier(Pos, String, u32),
    /// A string literal: source text (with quotes) and value.
    String(Pos, String, String),
    /// A number literal.
    Number(Pos, Box<NumberLit>),
    /// `true` / `false`.
    Bool(Pos, bool),
    /// `nil`.
    Nil(Pos),
    /// `(pipeline)`.
    Pipe(Pos, Box<PipeNode>),
    /// `(pipeline).A.B` or `fn.A`: the term and field names.
    Chain(Pos, Box<Expr>, Vec<String>),
}

impl Expr {
    /// The node's position.
    pub fn pos(&self) -> Pos {
        match self {
            Expr::Dot(p)
            | Expr::Field(p, _, _)
            | Expr::Variable(p, _, _, _)
            | Expr::Identifier(p, _, _)
            | Expr::String(p, _, _)
            | Expr::Number(p, _)
            | Expr::Bool(p, _)
            | Expr::Nil(p)
            | Expr::Pipe(p, _)
            | Expr::Chain(p, _, _) => *p,
        }
    }
}

/// Go's `String()` of an operand.
pub fn expr_str(e: &Expr) -> String {
    let mut s = String::new();
    write_expr(&mut s, e);
    s
}

fn write_expr(s: &mut String, e: &Expr) {
    crate::go::stack::grow(|| write_expr_inner(s, e));
}

fn write_expr_inner(s: &mut String, e: &Expr) {
    match e {
        Expr::Dot(_) => s.push('.'),
        Expr::Field(_, f, _) => {
            for x in f {
                s.push('.');
                s.push_str(x);
            }
        }
        Expr::Variable(_, n, f, _) => {
            s.push_str(n);
            for x in f {
                s.push('.');
                s.push_str(x);
            }
        }
        Expr::Identifier(_, n, _) => s.push_str(n),
        Expr::String(_, quoted, _) => s.push_str(quoted),
        Expr::Number(_, n) => s.push_str(&n.text),
        Expr::Bool(_, b) => s.push_str(if *b { "true" } else { "false" }),
        Expr::Nil(_) => s.push_str("nil"),
        Expr::Pipe(_, p) => write_pipe(s, p),
        Expr::Chain(_, inner, f) => {
            if let Expr::Pipe(_, p) = &**inner {
                s.push('(');
                write_pipe(s, p);
                s.push(')');
            } else {
                write_expr(s, inner);
            }
            for x in f {
                s.push('.');
                s.push_str(x);
            }
        }
    }
}

/// Go's `String()` of a command.
pub fn cmd_str(c: &CommandNode) -> String {
    let mut s = String::new();
    write_cmd(&mut s, c);
    s
}

fn write_cmd(s: &mut String, c: &CommandNode) {
    for (i, a) in c.args.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        if let Expr::Pipe(_, p) = a {
            s.push('(');
            write_pipe(s, p);
            s.push(')');
        } else {
            write_expr(s, a);
        }
    }
}

/// Go's `String()` of a pipeline.
pub fn pipe_str(p: &PipeNode) -> String {
    let mut s = String::new();
    write_pipe(&mut s, p);
    s
}

fn write_pipe(s: &mut String, p: &PipeNode) {
    crate::go::stack::grow(|| write_pipe_inner(s, p));
}

fn write_pipe_inner(s: &mut String, p: &PipeNode) {
    if !p.decl.is_empty() {
        for (i, (_, v)) in p.decl.iter().enumerate() {
            if i > 0 {
                s.push_str(", ");
            }
            s.push_str(v);
        }
        s.push_str(if p.is_assign { " = " } else { " := " });
    }
    for (i, c) in p.commands.iter().enumerate() {
        if i > 0 {
            s.push_str(" | ");
        }
        write_cmd(s, c);
    }
}

/// Go's `String()` of a list of nodes.
pub fn list_str(l: &ListNode) -> String {
    let mut s = String::new();
    write_list(&mut s, l);
    s
}

fn write_list(s: &mut String, l: &ListNode) {
    for n in &l.nodes {
        write_node(s, n);
    }
}

/// Go's `String()` of a node.
pub fn node_str(n: &Node) -> String {
    let mut s = String::new();
    write_node(&mut s, n);
    s
}

fn write_node(s: &mut String, n: &Node) {
    crate::go::stack::grow(|| write_node_inner(s, n));
}

fn write_node_inner(s: &mut String, n: &Node) {
    match n {
        Node::Text(t) => s.push_str(&t.text),
        Node::Action(a) => {
            s.push_str("{{");
            write_pipe(s, &a.pipe);
            s.push_str("}}");
        }
        Node::If(b) | Node::Range(b) | Node::With(b) => {
            let kw = match n {
                Node::If(_) => "if",
                Node::Range(_) => "range",
                _ => "with",
            };
            let _ = write!(s, "{{{{{kw} ");
            write_pipe(s, &b.pipe);
            s.push_str("}}");
            write_list(s, &b.body);
            if let Some(e) = &b.else_body {
                s.push_str("{{else}}");
                write_list(s, e);
            }
            s.push_str("{{end}}");
        }
        Node::Template(t) => {
            let _ = write!(s, "{{{{template {}", crate::go::quote::quote(&t.name));
            if let Some(p) = &t.pipe {
                s.push(' ');
                write_pipe(s, p);
            }
            s.push_str("}}");
        }
        Node::Break(_) => s.push_str("{{break}}"),
        Node::Continue(_) => s.push_str("{{continue}}"),
    }
}

// Dropping a tree: the derived drop glue recurses once per level, which a tree nested as deep as
// the parser allows would overflow the stack with. Lists and pipelines take their nested lists
// and pipelines apart with an explicit stack instead.

/// Does this node hold a nested list?
fn holds_list(n: &Node) -> bool {
    matches!(n, Node::If(_) | Node::Range(_) | Node::With(_))
}

impl Drop for ListNode {
    fn drop(&mut self) {
        if !self.nodes.iter().any(holds_list) {
            return;
        }
        let mut pending = std::mem::take(&mut self.nodes);
        while let Some(node) = pending.pop() {
            if let Node::If(mut b) | Node::Range(mut b) | Node::With(mut b) = node {
                pending.append(&mut b.body.nodes);
                if let Some(e) = b.else_body.as_mut() {
                    pending.append(&mut e.nodes);
                }
            }
        }
    }
}

/// Does this operand hold a nested pipeline?
fn holds_pipe(e: &Expr) -> bool {
    matches!(e, Expr::Pipe(..) | Expr::Chain(..))
}

impl Drop for PipeNode {
    fn drop(&mut self) {
        if !self.commands.iter().any(|c| c.args.iter().any(holds_pipe)) {
            return;
        }
        let mut pending: Vec<Expr> = Vec::new();
        for c in &mut self.commands {
            pending.append(&mut c.args);
        }
        while let Some(e) = pending.pop() {
            match e {
                Expr::Pipe(_, mut p) => {
                    for c in &mut p.commands {
                        pending.append(&mut c.args);
                    }
                }
                Expr::Chain(_, inner, _) => pending.push(*inner),
                _ => {}
            }
        }
    }
}
