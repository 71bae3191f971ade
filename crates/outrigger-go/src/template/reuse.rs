//! Reuse between renders: what a top-level node of the main body (a *segment*: an action, an
//! `if`, a `range`, a `{{template}}` call, ...) rendered last time is replayed when everything it
//! can read is the same, so consecutive pods of a cluster, which differ in a label or two, re-run
//! only the segments that read what differs.
//!
//! **What a segment can read** is found from the parse tree ([`plan`]), as [`super::reads`]
//! finds what a template reads of the pod: the root fields its field chains name (of
//! `.ObjectMeta` and `.Spec`, the field after them: `.ObjectMeta.Labels` reads the labels only,
//! Istio's `annotation .ObjectMeta` the annotations only; `.Values`, `.MeshConfig`,
//! `.ProxyConfig` whole; every scalar of the root by itself), including through the
//! `{{define}}`d bodies it calls with the root as dot; the variables of the main body it names
//! (by name, whatever scope declared them); the environment map if it calls `env` or
//! `expandenv`; the protobuf encoder if it calls `protoToJSON`. Besides, every render reads
//! the local zone (time values print in it), so that is part of every key. A segment is never
//! reused when it uses the root whole (`.`/`$` bare: `toJson .`), calls a function that is not
//! a function of its arguments (clock, randomness, network: [`super::funcs::is_pure`]; `call`),
//! or when the template changes maps in place (`set`, `unset`, `merge`: the whole reuse is off)
//! or declares `$` anywhere. The work budget, the output limit and the executor's per-render
//! state are dealt with below; the stack depth of `{{template}}` calls starts at zero at every
//! top-level node; nothing else of a render is seen by a segment (the executor reads no other
//! global state: the environment is the data's map, the clock is only read by clock functions).
//!
//! **The key** of a segment is those inputs' values, compared in full, never hashed: each root
//! input is copied once into the reuse state (an owned JSON tree or string) with a version
//! number that changes whenever a render's value differs from the copy (compared in order, key
//! by key, numbers by their exact representation, so trees that print differently never
//! match), and an entry holds the versions it was rendered with; variables are compared by value
//! (strings, numbers, booleans and lists of them; a segment that reads a variable holding
//! anything else, such as a view into the pod, is not reused then).
//!
//! **What a segment does** besides reading: it appends text, counts steps of work, (a top-level
//! `{{ $x := ... }}`) declares variables and (`{{ $x = ... }}` at any depth) assigns variables of
//! the main body (the names assigned are part of the key, so the same variables are in scope);
//! an entry records all of it (a declared or assigned value must be a string, number or boolean:
//! a list is a shared buffer whose later appends count work by how it is shared, so it is not
//! replayed) and a replay repeats it: the same text, the same number of steps counted on the
//! render's meter, the same variables pushed, the same final values assigned. A segment leaves
//! nothing else: the executor's position, dot and scope are reset by the next node, and the
//! per-render memos (chain slots, pure pipelines) are caches whose absence changes no result.
//! Entries record successful runs only. A replay happens only where it cannot differ from a run
//! at the edges: its steps must not reach a check of the work budget (else the segment runs,
//! so a budget stop falls on the node it always falls on), and its text must not take the
//! output past its limit (else the segment runs and fails where it always fails). A run that
//! counted work on the budget directly (list functions copying elements) is not recorded (the
//! budget is measured around the run: a render without one gets a private unlimited budget).
//!
//! **Bounds and threads**: a template holds up to [`MAX_STATES`] states in a pool behind a
//! mutex (taken for one render, given back after), each with at most one entry per segment,
//! whose text is at most [`MAX_ENTRY_TEXT`] bytes. A segment that missed twice in a row is not
//! looked up for the next [`BACKOFF`] renders (its inputs change with every pod). A new
//! configuration parses new templates, so reuse starts afresh; within one template, changed
//! inputs change versions, so a stale entry never matches.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Mutex;

use serde_json::Value;

use super::ast::{Expr, ListNode, Node, PipeNode};
use super::funcs::{self, Kind};
use super::reads::{json_names, FieldSet};
use super::value::{IntTy, V};
use super::TemplateData;
use crate::go::zone::Location;

/// States kept per template (about one per thread rendering it at once).
pub const MAX_STATES: usize = 8;

/// The longest text an entry keeps.
pub const MAX_ENTRY_TEXT: usize = 64 << 10;

/// Renders during which a segment that missed twice in a row is not looked up.
pub const BACKOFF: u32 = 32;

/// The most JSON values a copy of a field of the pod holds: a larger field (a long list of
/// containers) is not held, so the segments that read it are not reused, and no render copies
/// it (comparing a larger field with a held one stops at the first difference in length); an
/// input found too large is not looked at again for [`BACKOFF`] renders.
pub const MAX_POD_VALUES: usize = 256;

/// The most JSON values a copy of `.Values`, `.MeshConfig` or `.ProxyConfig` holds.
pub const MAX_CONFIG_VALUES: usize = 16 << 10;

/// The version of an input too large to hold: never recorded, never matched.
const UNHELD: u64 = u64::MAX;

/// One input of the root a segment can read.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Item {
    TypeMeta,
    DeploymentMeta,
    /// A field of `.ObjectMeta` by JSON name, or the whole of it.
    Meta(Option<String>),
    /// A field of `.Spec` by JSON name, or the whole of it.
    Spec(Option<String>),
    ProxyConfig,
    MeshConfig,
    Values,
    Revision,
    NativeSidecars,
    ProxyImage,
    ProxyInitImage,
    ProxyUid,
    ProxyGid,
    Inbound,
    Compliance,
    Env,
    ProtoJson,
}

/// What may be reused of one top-level node: the inputs it can read.
#[derive(Debug)]
pub(super) struct Seg {
    /// Indices into [`Plan::items`].
    items: Vec<usize>,
    /// Names of the variables it reads (and those it assigns).
    vars: Vec<String>,
    /// Names of the variables of the main body it assigns (`$x = v`).
    assigns: Vec<String>,
}

/// Which top-level nodes of a template may be reused, and the states of its renders.
#[derive(Debug)]
pub(super) struct Plan {
    items: Vec<Item>,
    /// By index in the main body's list.
    segs: Vec<Option<Seg>>,
    pool: Mutex<Vec<State>>,
}

/// The analysis of a template: `None` when nothing of it may be reused.
pub(super) fn plan(main: &str, trees: &HashMap<String, ListNode>) -> Option<Plan> {
    let root = trees.get(main)?;
    if trees.values().any(declares_dollar) {
        return None;
    }
    let mut items: Vec<Item> = Vec::new();
    let segs: Vec<Option<Seg>> = root
        .nodes
        .iter()
        .map(|n| {
            if matches!(n, Node::Text(_) | Node::Break(_) | Node::Continue(_)) {
                return None;
            }
            let mut w = Walk {
                trees,
                ok: true,
                items: Vec::new(),
                vars: BTreeSet::new(),
                assigns: BTreeSet::new(),
                visited: HashSet::new(),
            };
            w.node(
                n,
                Ctx {
                    dot: true,
                    dollar: true,
                    outer: true,
                },
            );
            if !w.ok {
                return None;
            }
            let idx = w
                .items
                .into_iter()
                .map(|it| match items.iter().position(|x| *x == it) {
                    Some(i) => i,
                    None => {
                        items.push(it);
                        items.len() - 1
                    }
                })
                .collect();
            Some(Seg {
                items: idx,
                vars: w.vars.into_iter().collect(),
                assigns: w.assigns.into_iter().collect(),
            })
        })
        .collect();
    if segs.iter().all(Option::is_none) {
        return None;
    }
    Some(Plan {
        items,
        segs,
        pool: Mutex::new(Vec::new()),
    })
}

/// Whether any pipeline of `l` declares or assigns `$`.
fn declares_dollar(l: &ListNode) -> bool {
    let mut work: Vec<&ListNode> = vec![l];
    let mut pipes: Vec<&PipeNode> = Vec::new();
    while let Some(l) = work.pop() {
        for n in &l.nodes {
            match n {
                Node::Action(a) => pipes.push(&a.pipe),
                Node::If(b) | Node::Range(b) | Node::With(b) => {
                    pipes.push(&b.pipe);
                    work.push(&b.body);
                    work.extend(b.else_body.iter());
                }
                Node::Template(t) => pipes.extend(t.pipe.iter()),
                _ => {}
            }
        }
    }
    let mut exprs: Vec<&Expr> = Vec::new();
    while !pipes.is_empty() || !exprs.is_empty() {
        while let Some(p) = pipes.pop() {
            if p.decl.iter().any(|(_, v)| v == "$") {
                return true;
            }
            exprs.extend(p.commands.iter().flat_map(|c| c.args.iter()));
        }
        while let Some(e) = exprs.pop() {
            match e {
                Expr::Pipe(_, p) => pipes.push(p),
                Expr::Chain(_, inner, _) => exprs.push(inner),
                _ => {}
            }
        }
    }
    false
}

/// Where a node is: is dot the root, is `$` the root, are variables the main body's.
#[derive(Debug, Clone, Copy)]
struct Ctx {
    dot: bool,
    dollar: bool,
    outer: bool,
}

struct Walk<'a> {
    trees: &'a HashMap<String, ListNode>,
    ok: bool,
    items: Vec<Item>,
    vars: BTreeSet<String>,
    assigns: BTreeSet<String>,
    visited: HashSet<(&'a str, bool)>,
}

impl<'a> Walk<'a> {
    fn item(&mut self, it: Item) {
        if !self.items.contains(&it) {
            self.items.push(it);
        }
    }

    fn list(&mut self, l: &'a ListNode, c: Ctx) {
        for n in &l.nodes {
            crate::go::stack::grow(|| self.node(n, c));
        }
    }

    fn node(&mut self, n: &'a Node, c: Ctx) {
        match n {
            Node::Action(a) => self.pipe(&a.pipe, c),
            Node::If(b) => {
                self.pipe(&b.pipe, c);
                self.list(&b.body, c);
                if let Some(e) = &b.else_body {
                    self.list(e, c);
                }
            }
            Node::Range(b) | Node::With(b) => {
                self.pipe(&b.pipe, c);
                self.list(&b.body, Ctx { dot: false, ..c });
                if let Some(e) = &b.else_body {
                    self.list(e, c);
                }
            }
            Node::Template(t) => {
                let rooted = t.pipe.as_ref().is_some_and(|p| is_root(p, c));
                if let Some(p) = &t.pipe {
                    if !rooted {
                        self.pipe(p, c);
                    }
                }
                if let Some((name, body)) = self.trees.get_key_value(t.name.as_str()) {
                    if self.visited.insert((name.as_str(), rooted)) {
                        self.list(
                            body,
                            Ctx {
                                dot: rooted,
                                dollar: rooted,
                                outer: false,
                            },
                        );
                    }
                }
            }
            Node::Text(_) | Node::Break(_) | Node::Continue(_) => {}
        }
    }

    fn pipe(&mut self, p: &'a PipeNode, c: Ctx) {
        // An assignment in a defined body is to that body's own variables.
        if p.is_assign && c.outer {
            for (_, v) in &p.decl {
                self.vars.insert(v.clone());
                self.assigns.insert(v.clone());
            }
        }
        for cmd in &p.commands {
            let annotation =
                matches!(cmd.args.first(), Some(Expr::Identifier(_, f, _)) if f == "annotation");
            for (i, a) in cmd.args.iter().enumerate() {
                if annotation && i == 1 && is_meta(a, c) {
                    self.item(Item::Meta(Some("annotations".into())));
                    continue;
                }
                self.expr(a, c);
            }
        }
    }

    fn expr(&mut self, e: &'a Expr, c: Ctx) {
        match e {
            Expr::Dot(_) if c.dot => self.ok = false,
            Expr::Field(_, f, _) if c.dot => self.chain(f),
            Expr::Variable(_, v, f, _) if v == "$" && c.dollar => self.chain(f),
            Expr::Variable(_, v, _, _) if v != "$" && c.outer => {
                self.vars.insert(v.clone());
            }
            Expr::Pipe(_, p) => crate::go::stack::grow(|| self.pipe(p, c)),
            Expr::Chain(_, inner, fields) => match inner.as_ref() {
                Expr::Dot(_) if c.dot => self.chain(fields),
                inner => crate::go::stack::grow(|| self.expr(inner, c)),
            },
            Expr::Identifier(_, name, id) => match funcs::by_id(*id) {
                Some(f) if funcs::is_pure(name) => match f.kind {
                    Kind::Plain | Kind::And | Kind::Or => {}
                    Kind::Env => self.item(Item::Env),
                    Kind::ProtoJson => self.item(Item::ProtoJson),
                    Kind::Call | Kind::Clock => self.ok = false,
                },
                _ => self.ok = false,
            },
            _ => {}
        }
    }

    /// A field chain from the root.
    fn chain(&mut self, f: &[String]) {
        let Some(head) = f.first() else {
            // The root whole.
            self.ok = false;
            return;
        };
        let field = |ty: &str| {
            let next = f.get(1)?;
            let set = FieldSet::Fields([next.clone()].into_iter().collect());
            json_names(ty, &set)?.pop()
        };
        let it = match head.as_str() {
            "TypeMeta" => Item::TypeMeta,
            "DeploymentMeta" => Item::DeploymentMeta,
            "ObjectMeta" => Item::Meta(field("metav1.ObjectMeta")),
            "Spec" => Item::Spec(field("corev1.PodSpec")),
            "ProxyConfig" => Item::ProxyConfig,
            "MeshConfig" => Item::MeshConfig,
            "Values" => Item::Values,
            "Revision" => Item::Revision,
            "NativeSidecars" => Item::NativeSidecars,
            "ProxyImage" => Item::ProxyImage,
            "ProxyInitImage" => Item::ProxyInitImage,
            "ProxyUID" => Item::ProxyUid,
            "ProxyGID" => Item::ProxyGid,
            "InboundTrafficPolicyMode" => Item::Inbound,
            "CompliancePolicy" => Item::Compliance,
            // Not a field of the root: the evaluation fails, reading nothing.
            _ => return,
        };
        self.item(it);
    }
}

/// Whether pipeline `p` is the root alone (`.` where dot is the root, or `$` where it is).
fn is_root(p: &PipeNode, c: Ctx) -> bool {
    p.decl.is_empty()
        && matches!(p.commands.as_slice(), [cmd] if match cmd.args.as_slice() {
            [Expr::Dot(_)] => c.dot,
            [Expr::Variable(_, v, f, _)] => v == "$" && f.is_empty() && c.dollar,
            _ => false,
        })
}

/// Whether `e` is `.ObjectMeta` (or `$.ObjectMeta`) of the root.
fn is_meta(e: &Expr, c: Ctx) -> bool {
    match e {
        Expr::Field(_, f, _) => c.dot && f.len() == 1 && f[0] == "ObjectMeta",
        Expr::Variable(_, v, f, _) => c.dollar && v == "$" && f.len() == 1 && f[0] == "ObjectMeta",
        _ => false,
    }
}

// ------------------------------------------------------------------------------ the state

/// A copy of one root input.
#[derive(Debug)]
enum Held {
    /// A JSON tree (`None`: a field absent from its object).
    Json(Option<Value>),
    /// An object that is not a JSON object, held whole (a field of it reads as absent, but
    /// held whole all the same).
    Whole(Value),
    Strs(String, String),
    Str(String),
    Bool(bool),
    Int(i64),
    Env(BTreeMap<String, String>),
    Proto(fn(&str, &Value) -> String),
}

/// What an input is in this render, borrowed.
enum View<'a> {
    Json(Option<&'a Value>),
    Whole(&'a Value),
    Strs(&'a str, &'a str),
    Str(&'a str),
    Bool(bool),
    Int(i64),
    Env(&'a BTreeMap<String, String>),
    Proto(fn(&str, &Value) -> String),
}

fn view<'a>(it: &Item, d: &'a TemplateData<'a>) -> View<'a> {
    let sub = |obj: &'a Value, f: &Option<String>| match (obj, f) {
        (Value::Object(m), Some(f)) => View::Json(crate::json::lookup::get(m, f)),
        _ => View::Whole(obj),
    };
    match it {
        Item::TypeMeta => View::Strs(d.kind, d.api_version),
        Item::DeploymentMeta => View::Strs(d.deployment_namespace, d.deployment_name),
        Item::Meta(f) => sub(d.object_meta, f),
        Item::Spec(f) => sub(d.spec, f),
        Item::ProxyConfig => View::Whole(d.proxy_config),
        Item::MeshConfig => View::Whole(d.mesh_config),
        Item::Values => View::Whole(d.values),
        Item::Revision => View::Str(d.revision),
        Item::NativeSidecars => View::Bool(d.native_sidecars),
        Item::ProxyImage => View::Str(d.proxy_image),
        Item::ProxyInitImage => View::Str(d.proxy_init_image),
        Item::ProxyUid => View::Int(d.proxy_uid),
        Item::ProxyGid => View::Int(d.proxy_gid),
        Item::Inbound => View::Str(d.inbound_traffic_policy_mode),
        Item::Compliance => View::Str(d.compliance_policy),
        Item::Env => View::Env(d.env),
        Item::ProtoJson => View::Proto(d.proto_json),
    }
}

impl View<'_> {
    fn matches(&self, h: &Held) -> bool {
        match (self, h) {
            (View::Json(a), Held::Json(b)) => match (a, b) {
                (Some(a), Some(b)) => same_json(a, b),
                (None, None) => true,
                _ => false,
            },
            (View::Whole(a), Held::Whole(b)) => same_json(a, b),
            (View::Strs(a, b), Held::Strs(c, d)) => a == c && b == d,
            (View::Str(a), Held::Str(b)) => a == b,
            (View::Bool(a), Held::Bool(b)) => a == b,
            (View::Int(a), Held::Int(b)) => a == b,
            (View::Env(a), Held::Env(b)) => *a == b,
            (View::Proto(a), Held::Proto(b)) => std::ptr::fn_addr_eq(*a, *b),
            _ => false,
        }
    }

    /// A copy of the input, if it is not larger than `max` JSON values.
    fn hold(&self, max: usize) -> Option<Held> {
        Some(match self {
            View::Json(None) => Held::Json(None),
            View::Json(Some(a)) => Held::Json(Some(clone_bounded(a, max)?)),
            View::Whole(a) => Held::Whole(clone_bounded(a, max)?),
            View::Strs(a, b) => Held::Strs(a.to_string(), b.to_string()),
            View::Str(a) => Held::Str(a.to_string()),
            View::Bool(b) => Held::Bool(*b),
            View::Int(i) => Held::Int(*i),
            View::Env(e) => Held::Env((*e).clone()),
            View::Proto(f) => Held::Proto(*f),
        })
    }
}

/// Whether two JSON trees are the same to a template: objects with the same keys in the same
/// order (iteration order is an input as far as this module knows), numbers of the same
/// representation and bits (`1` and `1.0`, `0` and `-0.0` print differently).
pub(super) fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => {
            (
                x.as_u64(),
                x.as_i64(),
                x.is_f64(),
                x.as_f64().map(f64::to_bits),
            ) == (
                y.as_u64(),
                y.as_i64(),
                y.is_f64(),
                y.as_f64().map(f64::to_bits),
            )
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len()
                && x.iter().zip(y).all(|(v, w)| match (v, w) {
                    (Value::Array(_) | Value::Object(_), _) => {
                        crate::go::stack::grow(|| same_json(v, w))
                    }
                    _ => same_json(v, w),
                })
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter().zip(y).all(|((k1, v), (k2, w))| {
                    k1 == k2
                        && match (v, w) {
                            (Value::Array(_) | Value::Object(_), _) => {
                                crate::go::stack::grow(|| same_json(v, w))
                            }
                            _ => same_json(v, w),
                        }
                })
        }
        _ => false,
    }
}

/// Whether `v` holds at most `*left` JSON values (counted down as they are seen).
fn fits(v: &Value, left: &mut usize) -> bool {
    if *left == 0 {
        return false;
    }
    *left -= 1;
    match v {
        Value::Array(a) => a.iter().all(|x| match x {
            Value::Array(_) | Value::Object(_) => crate::go::stack::grow(|| fits(x, left)),
            _ => fits(x, left),
        }),
        Value::Object(m) => m.values().all(|x| match x {
            Value::Array(_) | Value::Object(_) => crate::go::stack::grow(|| fits(x, left)),
            _ => fits(x, left),
        }),
        _ => true,
    }
}

/// A copy of `v` if it holds at most `max` JSON values.
fn clone_bounded(v: &Value, max: usize) -> Option<Value> {
    fits(v, &mut { max }).then(|| v.clone())
}

/// A variable's value held across renders: what can be held without borrowing the data.
#[derive(Debug, Clone)]
enum Own {
    Missing,
    Nil,
    Bool(bool),
    Int(i64, IntTy),
    Uint(u64),
    /// A float by its bits.
    Float(u64),
    Str(String),
    /// A generic list of such values (compared only, never replayed).
    List(Vec<Own>),
}

impl Own {
    fn of(v: &V<'_>) -> Option<Own> {
        Some(match v {
            V::Missing => Own::Missing,
            V::Nil => Own::Nil,
            V::Bool(b) => Own::Bool(*b),
            V::Int(i, t) => Own::Int(*i, *t),
            V::Uint(u) => Own::Uint(*u),
            V::Float(f) => Own::Float(f.to_bits()),
            V::Str(s) => Own::Str(s.to_string()),
            V::List(l) => Own::List(l.items().iter().map(Own::of).collect::<Option<_>>()?),
            _ => return None,
        })
    }

    fn is(&self, v: &V<'_>) -> bool {
        match (self, v) {
            (Own::Missing, V::Missing) | (Own::Nil, V::Nil) => true,
            (Own::Bool(a), V::Bool(b)) => a == b,
            (Own::Int(a, s), V::Int(b, t)) => a == b && s == t,
            (Own::Uint(a), V::Uint(b)) => a == b,
            (Own::Float(a), V::Float(b)) => *a == b.to_bits(),
            (Own::Str(a), V::Str(b)) => a.as_str() == b.as_ref(),
            (Own::List(a), V::List(l)) => {
                let items = l.items();
                a.len() == items.len() && a.iter().zip(items.iter()).all(|(a, b)| a.is(b))
            }
            _ => false,
        }
    }

    /// The value again (`None` for a list, which is not replayed).
    fn value<'t>(&self) -> Option<V<'t>> {
        Some(match self {
            Own::Missing => V::Missing,
            Own::Nil => V::Nil,
            Own::Bool(b) => V::Bool(*b),
            Own::Int(i, t) => V::Int(*i, *t),
            Own::Uint(u) => V::Uint(*u),
            Own::Float(f) => V::Float(f64::from_bits(*f)),
            Own::Str(s) => V::string(s.clone()),
            Own::List(_) => return None,
        })
    }
}

/// A segment's last successful run.
#[derive(Debug)]
pub(super) struct Entry {
    /// Versions of the segment's inputs ([`Seg::items`]).
    versions: Vec<u64>,
    /// The variables it read (`None`: not in scope), with whether each was held as
    /// `interface{}`.
    vars: Vec<Option<(Own, bool)>>,
    /// The text it appended.
    pub text: String,
    /// The steps it counted.
    pub steps: u64,
    /// The variables it declared, in order.
    pushes: Vec<(Own, bool)>,
    /// What the variables it assigns ([`Seg::assigns`]) hold after it.
    assigned: Vec<(Own, bool)>,
}

impl Entry {
    /// The declared variables' values, in order.
    pub fn pushes<'t>(&self) -> impl Iterator<Item = (V<'t>, bool)> + '_ {
        self.pushes
            .iter()
            .map(|(o, i)| (o.value().unwrap_or(V::Missing), *i))
    }

    /// The assigned variables' names and values after the segment.
    pub fn assigned<'p, 't>(
        &'p self,
        plan: &'p Plan,
        i: usize,
    ) -> impl Iterator<Item = (&'p str, V<'t>, bool)> + 'p {
        let names = plan.segs.get(i).and_then(Option::as_ref);
        names
            .into_iter()
            .flat_map(|s| s.assigns.iter())
            .zip(&self.assigned)
            .map(|(n, (o, f))| (n.as_str(), o.value().unwrap_or(V::Missing), *f))
    }
}

/// The reuse state of one render at a time.
#[derive(Debug, Default)]
pub(super) struct State {
    zone: Option<Location>,
    /// Copies of the inputs, with their versions, by [`Plan::items`] index.
    held: Vec<Option<(Held, u64)>>,
    /// The version of each input in the current render (0: not compared yet).
    cur: Vec<u64>,
    next: u64,
    entries: Vec<Option<Entry>>,
    /// Per segment: misses in a row, and the render count until which it is not looked up.
    misses: Vec<(u8, u64)>,
    /// Per input: the render count until which an input too large to hold is not looked at.
    unheld_until: Vec<u64>,
    renders: u64,
    /// Segments replayed (the executor counts them).
    pub hits: u64,
}

/// A key computed for a segment about to run.
pub(super) struct Key {
    versions: Vec<u64>,
    vars: Vec<Option<(Own, bool)>>,
}

/// What [`Plan::lookup`] found.
pub(super) enum Found<'s> {
    /// The segment is not reused this time: run it.
    Run,
    /// Run it and record the run under this key.
    Record(Key),
    /// Replay this entry (if the budget and the output limit allow).
    Hit(&'s Entry),
}

fn same_zone(a: &Location, b: &Location) -> bool {
    match (a, b) {
        (Location::Utc, Location::Utc) | (Location::Local, Location::Local) => true,
        (Location::Fixed(n, o), Location::Fixed(m, p)) => n == m && o == p,
        (Location::Tz(x), Location::Tz(y)) => x == y,
        _ => false,
    }
}

impl Plan {
    /// Whether node `i` of the main body may be reused.
    #[inline]
    pub fn reusable(&self, i: usize) -> bool {
        matches!(self.segs.get(i), Some(Some(_)))
    }

    /// A state for one render (from the pool or new), ready for a render in `zone`.
    pub fn take(&self, zone: Location) -> State {
        let mut st = self
            .pool
            .lock()
            .ok()
            .and_then(|mut p| p.pop())
            .unwrap_or_default();
        let n = self.items.len();
        if st.held.len() != n || st.entries.len() != self.segs.len() {
            st.held = (0..n).map(|_| None).collect();
            st.cur = vec![0; n];
            st.entries = (0..self.segs.len()).map(|_| None).collect();
            st.misses = vec![(0, 0); self.segs.len()];
            st.unheld_until = vec![0; n];
            st.zone = None;
        }
        if !st.zone.as_ref().is_some_and(|z| same_zone(z, &zone)) {
            st.entries.iter_mut().for_each(|e| *e = None);
            st.zone = Some(zone);
        }
        st.cur.iter_mut().for_each(|v| *v = 0);
        st.renders += 1;
        st
    }

    /// How many top-level nodes may be reused (for tests).
    #[cfg(test)]
    pub fn planned(&self) -> usize {
        self.segs.iter().flatten().count()
    }

    /// Segments replayed by the states in the pool (for tests).
    #[cfg(test)]
    pub fn hits(&self) -> u64 {
        self.pool
            .lock()
            .map(|p| p.iter().map(|s| s.hits).sum())
            .unwrap_or(0)
    }

    /// Give a state back after its render.
    pub fn give(&self, st: State) {
        if let Ok(mut p) = self.pool.lock() {
            if p.len() < MAX_STATES {
                p.push(st);
            }
        }
    }

    /// The version of input `k` in this render.
    fn version(&self, st: &mut State, k: usize, d: &TemplateData<'_>) -> u64 {
        if st.cur[k] != 0 {
            return st.cur[k];
        }
        if st.held[k].is_none() && st.unheld_until[k] > st.renders {
            st.cur[k] = UNHELD;
            return UNHELD;
        }
        let it = &self.items[k];
        let v = view(it, d);
        let ver = match &st.held[k] {
            Some((h, ver)) if v.matches(h) => *ver,
            _ => {
                let max = match it {
                    Item::Meta(_) | Item::Spec(_) => MAX_POD_VALUES,
                    _ => MAX_CONFIG_VALUES,
                };
                match v.hold(max) {
                    Some(h) => {
                        st.next += 1;
                        st.held[k] = Some((h, st.next));
                        st.next
                    }
                    None => {
                        // Too large: not looked at again for a while.
                        st.held[k] = None;
                        st.unheld_until[k] = st.renders + u64::from(BACKOFF);
                        UNHELD
                    }
                }
            }
        };
        st.cur[k] = ver;
        ver
    }

    /// Look segment `i` up before it runs, with the variables in scope `vars`.
    pub fn lookup<'s>(
        &self,
        st: &'s mut State,
        i: usize,
        d: &TemplateData<'_>,
        vars: &[(&str, V<'_>, bool)],
    ) -> Found<'s> {
        let Some(Some(seg)) = self.segs.get(i) else {
            return Found::Run;
        };
        if st.misses[i].1 > st.renders {
            return Found::Run;
        }
        let lookup = |name: &str| {
            vars.iter()
                .rev()
                .find(|(n, _, _)| *n == name)
                .map(|(_, v, f)| (v, *f))
        };
        let mut hit = st.entries[i].is_some();
        if hit {
            // Inputs first (compared at most once a render), then variables.
            for (j, &k) in seg.items.iter().enumerate() {
                let ver = self.version(st, k, d);
                if ver == UNHELD || st.entries[i].as_ref().map(|e| e.versions[j]) != Some(ver) {
                    hit = false;
                    break;
                }
            }
        }
        if hit {
            if let Some(e) = &st.entries[i] {
                hit = seg
                    .vars
                    .iter()
                    .zip(&e.vars)
                    .all(|(name, held)| match (lookup(name), held) {
                        (None, None) => true,
                        (Some((v, f)), Some((o, g))) => f == *g && o.is(v),
                        _ => false,
                    });
            }
        }
        if hit {
            st.misses[i].0 = 0;
            return match &st.entries[i] {
                Some(e) => Found::Hit(e),
                None => Found::Run,
            };
        }
        if st.entries[i].is_some() {
            let m = &mut st.misses[i];
            m.0 = m.0.saturating_add(1);
            if m.0 >= 2 {
                m.0 = 0;
                m.1 = st.renders + u64::from(BACKOFF);
            }
        }
        let mut versions = Vec::with_capacity(seg.items.len());
        for &k in &seg.items {
            match self.version(st, k, d) {
                // Too large to hold: the run is not recorded.
                UNHELD => return Found::Run,
                v => versions.push(v),
            }
        }
        let mut held_vars = Vec::with_capacity(seg.vars.len());
        for name in &seg.vars {
            match lookup(name) {
                None => held_vars.push(None),
                Some((v, f)) => match Own::of(v) {
                    Some(o) => held_vars.push(Some((o, f))),
                    None => return Found::Run,
                },
            }
        }
        Found::Record(Key {
            versions,
            vars: held_vars,
        })
    }

    /// Record the successful run of segment `i` under `key`: its text, steps and declared
    /// variables (not recorded if one of them cannot be held, or the text is too long).
    pub fn record(
        &self,
        st: &mut State,
        i: usize,
        key: Key,
        (text, steps): (&str, u64),
        vars: &[(&str, V<'_>, bool)],
        pushed_from: usize,
    ) {
        let Some(Some(seg)) = self.segs.get(i) else {
            return;
        };
        if text.len() > MAX_ENTRY_TEXT {
            return;
        }
        let mut assigned = Vec::with_capacity(seg.assigns.len());
        for name in &seg.assigns {
            let found = vars[..pushed_from]
                .iter()
                .rev()
                .find(|(n, _, _)| *n == name.as_str());
            match found.map(|(_, v, f)| (Own::of(v), *f)) {
                Some((Some(o), f)) if !matches!(o, Own::List(_)) => assigned.push((o, f)),
                _ => return,
            }
        }
        let pushed = &vars[pushed_from..];
        let mut pushes = Vec::with_capacity(pushed.len());
        for (_, v, f) in pushed {
            match Own::of(v) {
                Some(o) if !matches!(o, Own::List(_)) => pushes.push((o, *f)),
                _ => return,
            }
        }
        st.entries[i] = Some(Entry {
            versions: key.versions,
            vars: key.vars,
            text: text.to_string(),
            steps,
            pushes,
            assigned,
        });
    }
}
