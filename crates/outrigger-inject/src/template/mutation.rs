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

/// Parts of the names of Sprig's functions whose result is not a function of their arguments
/// (`now`, `ago`, `date`, `randAlphaNum`, `uuidv4`, `genCA`, `htpasswd`, `shuffle`,
/// `getHostByName`, `encryptAES`, `unixEpoch`, ...), lower case. Matching by part errs on the
/// side of "depends on more than the data".
const NONDETERMINISTIC: &[&str] = &[
    "now",
    "ago",
    "date",
    "rand",
    "uuid",
    "gen",
    "htpasswd",
    "bcrypt",
    "shuffle",
    "gethostbyname",
    "encrypt",
    "epoch",
    // `durationRound` of a time measures from the clock (`time.Since`).
    "durationround",
];

/// Does any of `trees` call a function of [`MUTATING`]?
pub(super) fn mutates_maps<'a>(trees: impl Iterator<Item = &'a ListNode>) -> bool {
    calls(trees).iter().any(|(name, _)| MUTATING.contains(name))
}

/// Is every render of `trees` a function of its data (and the template's environment map)
/// alone: no call of a [`NONDETERMINISTIC`] function?
pub(super) fn deterministic<'a>(trees: impl Iterator<Item = &'a ListNode>) -> bool {
    !calls(trees).iter().any(|(name, _)| {
        let lower = name.to_ascii_lowercase();
        NONDETERMINISTIC.iter().any(|part| lower.contains(part))
    })
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
                Expr::Identifier(pos, name) => found.push((name.as_str(), pos.line)),
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
