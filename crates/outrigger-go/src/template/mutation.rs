//! What a template's calls tell about its renders. Whether it changes maps in place: Sprig's
//! `set`, `unset` and the `merge` family write into the map they are given, as Go maps are
//! shared; the executor gives such a template a mutable copy of `.Values` for the render (see
//! [`super::Template::render`]). Whether its output depends on its data alone: no call of a
//! clock, random, key-generating or network function. [`calls`] lists every function a template
//! names, for these and for [`super::Template::unimplemented_calls`].

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

/// Does any of `calls` (as [`calls`] lists them) name a function of [`MUTATING`]?
pub(super) fn mutates_maps(calls: &[(&str, usize)]) -> bool {
    calls.iter().any(|(name, _)| MUTATING.contains(name))
}

/// Is every render a function of its data (and the template's environment map) alone: does
/// every one of `calls` name a [`super::funcs::is_pure`] function?
pub(super) fn deterministic(calls: &[(&str, usize)]) -> bool {
    calls.iter().all(|(name, _)| super::funcs::is_pure(name))
}

/// Every function named in `trees` (identifiers: Go's builtins, Sprig's and Istio's
/// functions), with the 1-based line of each use, in no particular order. The walk keeps its own
/// stack, so trees nested as deep as the parser allows are read on any thread's stack.
pub(super) fn calls<'a>(trees: impl Iterator<Item = &'a ListNode>) -> Vec<(&'a str, usize)> {
    let mut found = Vec::new();
    let mut work: Vec<Item<'a>> = trees.map(Item::List).collect();
    while let Some(item) = work.pop() {
        match item {
            Item::List(l) => work.extend(l.nodes.iter().map(Item::Node)),
            Item::Node(n) => match n {
                Node::Action(a) => work.push(Item::Pipe(&a.pipe)),
                Node::If(b) | Node::Range(b) | Node::With(b) => {
                    work.push(Item::Pipe(&b.pipe));
                    work.push(Item::List(&b.body));
                    if let Some(e) = &b.else_body {
                        work.push(Item::List(e));
                    }
                }
                Node::Template(t) => {
                    if let Some(p) = &t.pipe {
                        work.push(Item::Pipe(p));
                    }
                }
                Node::Text(_) | Node::Break(_) | Node::Continue(_) => {}
            },
            Item::Pipe(p) => work.extend(
                p.commands
                    .iter()
                    .flat_map(|c| c.args.iter())
                    .map(Item::Expr),
            ),
            Item::Expr(e) => match e {
                Expr::Identifier(pos, name, _) => found.push((name.as_str(), pos.line)),
                Expr::Pipe(_, p) => work.push(Item::Pipe(p)),
                Expr::Chain(_, inner, _) => work.push(Item::Expr(inner)),
                _ => {}
            },
        }
    }
    found
}

/// A part of a tree still to be read.
enum Item<'a> {
    List(&'a ListNode),
    Node(&'a Node),
    Pipe(&'a PipeNode),
    Expr(&'a Expr),
}
