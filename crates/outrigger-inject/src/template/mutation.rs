//! Whether a template changes maps in place: Sprig's `set`, `unset` and the `merge` family write
//! into the map they are given, as Go maps are shared. The executor gives such a template a
//! mutable copy of `.Values` for the render (see [`super::Template::render`]).

use super::ast::{Expr, ListNode, Node, PipeNode};

/// Sprig's functions that change their map argument.
const MUTATING: &[&str] = &[
    "set",
    "unset",
    "merge",
    "mergeOverwrite",
    "mustMerge",
    "mustMergeOverwrite",
];

/// Does any of `trees` call a function of [`MUTATING`]?
pub(super) fn mutates_maps<'a>(mut trees: impl Iterator<Item = &'a ListNode>) -> bool {
    trees.any(list)
}

fn list(l: &ListNode) -> bool {
    l.nodes.iter().any(node)
}

fn node(n: &Node) -> bool {
    match n {
        Node::Action(a) => pipe(&a.pipe),
        Node::If(b) | Node::Range(b) | Node::With(b) => {
            pipe(&b.pipe) || list(&b.body) || b.else_body.as_ref().is_some_and(list)
        }
        Node::Template(t) => t.pipe.as_ref().is_some_and(pipe),
        Node::Text(_) | Node::Break(_) | Node::Continue(_) => false,
    }
}

fn pipe(p: &PipeNode) -> bool {
    p.commands.iter().any(|c| c.args.iter().any(expr))
}

fn expr(e: &Expr) -> bool {
    match e {
        Expr::Identifier(_, name) => MUTATING.contains(&name.as_str()),
        Expr::Pipe(_, p) => pipe(p),
        Expr::Chain(_, inner, _) => expr(inner),
        _ => false,
    }
}
