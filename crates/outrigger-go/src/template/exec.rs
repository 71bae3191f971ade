//! Template execution, following Go's `text/template/exec.go` step by step over the
//! [`V`] value model: the same evaluation order, the same argument conversion, the same node
//! recorded for error messages (`executing "NAME" at <NODE>: ...`).

use std::collections::BTreeMap;
use std::rc::Rc;

use serde_json::Value;

use super::ast::{
    cmd_str, expr_str, list_str, node_str, pipe_str, BranchNode, CommandNode, Expr, ListNode, Node,
    NumberLit, PipeNode, Pos, TemplateNode, NO_MEMO,
};
use super::funcs::{self, P};
use super::value::{
    self, duration_parts, is_wrapper, k8s_elem_value, k8s_lookup, proto_field_value, proto_plain,
    IntTy, PairKind, V,
};
use super::{dates, istio, reuse, semver, Clock, Template, TemplateData};
use crate::json::lookup as jsonmap;
use crate::kube::schema;
use crate::work::Meter;

/// Go's `maxExecDepth`: `template` calls nest at most this deep (`exceeded maximum template
/// depth (100000)`). Every recursive step runs through [`crate::go::stack::grow`], so the
/// native stack follows Go's growable one that deep.
pub const MAX_DEPTH: usize = 100_000;

/// outrigger's bound on the nesting of maps and lists a template builds (Go has none; the YAML
/// reader has the same bound of 512 for documents).
pub const MAX_VALUE_DEPTH: usize = 512;

/// The name Istio parses every template under (`template.New("inject")`).
const PARSE_NAME: &str = "inject";

/// Control flow out of a list: `break` / `continue`.
enum Ctl {
    Break,
    Continue,
}

/// The node execution is at (Go's `state.node`), for error messages.
#[derive(Clone, Copy)]
enum At<'t> {
    None,
    Node(&'t Node),
    List(&'t ListNode),
    Pipe(&'t PipeNode),
    Cmd(&'t CommandNode),
    Expr(&'t Expr),
}

/// The execution state of one render.
pub struct Exec<'t> {
    tmpl: &'t Template,
    /// Rendered output.
    pub out: String,
    /// Variables in scope: name, value, and whether Go holds the value as `interface{}` (an
    /// element of a generic list or map bound by `range`), which Go names in some errors.
    vars: Vec<(&'t str, V<'t>, bool)>,
    /// Is dot an `interface{}` value (inside `range` over a generic list or map)?
    dot_iface: bool,
    depth: usize,
    cur: &'t str,
    at: At<'t>,
    /// What `env` and `expandenv` read.
    env: &'t BTreeMap<String, String>,
    /// How `protoToJSON` writes a protobuf message.
    proto_json: fn(&str, &Value) -> String,
    /// What `now`, `date`, `ago` and `durationRound` read.
    clock: &'t Clock,
    /// This render's own mutable copy of `.Values`, for a template that changes maps in place
    /// (`set`, `unset`, `merge`): a change is seen later in the same render, as in Go, and never
    /// in another render.
    values: Option<V<'t>>,
    /// Steps counted against the review's work budget ([`crate::work`]): a render stops with
    /// an error once its review's deadline passes.
    meter: Meter,
    /// What each field-chain prefix gave from the root so far in this render, by slot, with
    /// whether the value is held as `interface{}`; empty where values are not remembered (the
    /// template changes maps in place, or dot is not the typed root).
    chains: Vec<Option<(V<'t>, bool)>>,
    /// Argument buffers of the calls in progress' callers, cleared, for the next calls.
    argv_pool: Vec<Vec<V<'t>>>,
    /// What each pure pipeline of the root gave so far in this render, by its
    /// [`PipeNode::memo`] number ([`Exec::eval_pipeline`]); empty where `chains` is.
    memos: Vec<Option<Memo<'t>>>,
}

/// A pipeline's value from the root, with what its evaluation did besides: the steps it
/// counted and the node it left execution at, in the pipeline evaluated (`pipe`).
struct Memo<'t> {
    value: V<'t>,
    steps: u64,
    pipe: &'t PipeNode,
    at: At<'t>,
    /// `at`'s place in `pipe` ([`at_index`]), found on the first use from another pipeline.
    place: Option<u32>,
}

/// The environment of a render over generic JSON: no variable is set.
static NO_ENV: BTreeMap<String, String> = BTreeMap::new();

/// `protoToJSON` of a render over generic JSON, which holds no protobuf message: never called
/// with one (an argument that is not a message is `{}` before the encoder is asked).
fn no_proto_json(_: &str, _: &Value) -> String {
    "{}".into()
}

type R<T> = Result<T, String>;

/// A field chain's names and the slots of its prefixes ([`super::ast::Slots`]; empty for a chain
/// whose prefixes are not remembered).
type Chain<'t> = (&'t [String], &'t [u32]);

/// A receiver in a field chain: the operand's own value, borrowed, or a step's result.
enum Recv<'r, 't> {
    Borrowed(&'r V<'t>),
    Owned(V<'t>),
}

impl<'t> Recv<'_, 't> {
    #[inline]
    fn get(&self) -> &V<'t> {
        match self {
            Recv::Borrowed(v) => v,
            Recv::Owned(v) => v,
        }
    }
}

/// Is this the pipeline's "no value yet" marker (Go's `missingVal`)?
type Final<'t> = Option<V<'t>>;

impl<'t> Exec<'t> {
    /// Run the template's main body with `data` as dot.
    pub fn run(tmpl: &'t Template, data: &'t TemplateData<'t>, clock: &'t Clock) -> R<String> {
        let values = tmpl.mutates_maps.then(|| match data.values {
            Value::Object(_) => super::value::owned(data.values.clone()),
            _ => V::map(BTreeMap::new()),
        });
        let run = || {
            Self::run_dot_with(
                tmpl,
                V::Root(data),
                values,
                data.env,
                data.proto_json,
                clock,
            )
        };
        if tmpl.reuse.is_some() && crate::work::current().is_none() {
            // Reuse records a segment only when it counted no work on the budget directly,
            // which a private budget (unlimited, as no budget is) measures.
            let budget = crate::work::Budget::new(None);
            return crate::work::scope(&budget, run);
        }
        run()
    }

    /// Run the template's main body over a generic JSON value, as Go executes a template over
    /// the result of `json.Unmarshal` into `interface{}`; a top-level `null` is the invalid
    /// value (`reflect.ValueOf(nil)`), which prints `<no value>`. `owned` turns objects and
    /// arrays into template maps and lists first (mutable by `set`, `unset`, `merge`, as Go's
    /// maps are); otherwise the JSON is viewed in place, as Istio's `.Values` is.
    pub fn run_json(
        tmpl: &'t Template,
        data: &'t Value,
        owned: bool,
        clock: &'t Clock,
    ) -> R<String> {
        let dot = match data {
            Value::Null => V::Missing,
            v if owned => super::value::owned(v.clone()),
            v => V::json(v),
        };
        Self::run_dot_with(tmpl, dot, None, &NO_ENV, no_proto_json, clock)
    }

    fn run_dot_with(
        tmpl: &'t Template,
        dot: V<'t>,
        values: Option<V<'t>>,
        env: &'t BTreeMap<String, String>,
        proto_json: fn(&str, &Value) -> String,
        clock: &'t Clock,
    ) -> R<String> {
        let mut ex = Exec {
            tmpl,
            out: String::with_capacity(tmpl.source_len * 2),
            vars: Vec::with_capacity(16),
            dot_iface: false,
            depth: 0,
            cur: PARSE_NAME,
            at: At::None,
            env,
            proto_json,
            clock,
            values,
            meter: Meter::current(),
            chains: Vec::new(),
            argv_pool: Vec::new(),
            memos: Vec::new(),
        };
        if !tmpl.mutates_maps && matches!(dot, V::Root(_)) {
            ex.chains.resize(tmpl.chain_slots, None);
            ex.memos.resize_with(tmpl.memo_pure.len(), || None);
        }
        ex.vars.push(("$", dot.clone(), false));
        let root = tmpl.root();
        if let (Some(plan), V::Root(data)) = (&tmpl.reuse, &dot) {
            let mut st = plan.take(crate::go::zone::local());
            let budget = crate::work::current();
            let r = ex.walk_root_reusing(plan, &mut st, root, data, &dot, budget.as_deref());
            plan.give(st);
            r?;
            return Ok(ex.out);
        }
        ex.walk_list(root, &dot)?;
        Ok(ex.out)
    }

    /// [`Exec::walk_list`] of the main body, replaying what a segment rendered before where
    /// [`reuse`] finds that everything it reads is the same, and recording what it renders
    /// otherwise.
    fn walk_root_reusing(
        &mut self,
        plan: &'t reuse::Plan,
        st: &mut reuse::State,
        root: &'t ListNode,
        data: &TemplateData<'_>,
        dot: &V<'t>,
        budget: Option<&crate::work::Budget>,
    ) -> R<()> {
        const EVERY: u64 = Meter::EVERY;
        self.at = At::List(root);
        for (i, n) in root.nodes.iter().enumerate() {
            if !plan.reusable(i) {
                if self.walk(n, dot)?.is_some() {
                    return Ok(());
                }
                continue;
            }
            let key = match plan.lookup(st, i, data, &self.vars) {
                reuse::Found::Hit(e) => {
                    // Not where the run would check the budget or pass the output limit.
                    if self.meter.steps() % EVERY + e.steps < EVERY
                        && self.out.len() + e.text.len() <= value::MAX_OUTPUT
                    {
                        self.out.push_str(&e.text);
                        for _ in 0..e.steps {
                            // Within the budget's check interval: never fails.
                            let _ = self.meter.step();
                        }
                        for (name, v, iface) in e.assigned(plan, i) {
                            self.set_var(name, v, iface)?;
                        }
                        if let Node::Action(a) = n {
                            if !a.pipe.is_assign {
                                for ((_, name), (v, iface)) in a.pipe.decl.iter().zip(e.pushes()) {
                                    self.vars.push((name.as_str(), v, iface));
                                }
                            }
                        }
                        st.hits += 1;
                        continue;
                    }
                    None
                }
                reuse::Found::Record(k) => Some(k),
                reuse::Found::Run => None,
            };
            let (out0, steps0, vars0) = (self.out.len(), self.meter.steps(), self.vars.len());
            let work0 = budget.map(|b| b.work());
            let ctl = self.walk(n, dot)?;
            if let (Some(key), Some(work0), Some(b), None) = (key, work0, budget, &ctl) {
                let steps1 = self.meter.steps();
                // What the meter added to the budget; any other work was counted directly.
                let flushed = (steps1 - steps1 % EVERY) - (steps0 - steps0 % EVERY);
                if b.work() - work0 == flushed {
                    plan.record(
                        st,
                        i,
                        key,
                        (&self.out[out0..], steps1 - steps0),
                        &self.vars,
                        vars0,
                    );
                }
            }
            if ctl.is_some() {
                return Ok(());
            }
        }
        Ok(())
    }

    fn at_pos_str(&self) -> Option<(Pos, String)> {
        Some(match self.at {
            At::None => return None,
            At::Node(n) => (node_pos(n), node_str(n)),
            At::List(l) => (l.pos, list_str(l)),
            At::Pipe(p) => (p.pos, pipe_str(p)),
            At::Cmd(c) => (c.pos, cmd_str(c)),
            At::Expr(e) => (e.pos(), expr_str(e)),
        })
    }

    /// Format an execution error at the current node.
    fn errorf(&self, msg: &str) -> String {
        let Some((pos, ctx)) = self.at_pos_str() else {
            return format!("template: {}: {msg}", self.cur);
        };
        let src = &self.tmpl.source;
        let off = pos.offset.min(src.len());
        let line_start = src[..off].rfind('\n').map_or(0, |i| i + 1);
        let line = 1 + src[..off].matches('\n').count();
        format!(
            "template: {PARSE_NAME}:{line}:{}: executing \"{}\" at <{ctx}>: {msg}",
            off - line_start,
            self.cur
        )
    }

    fn walk_list(&mut self, list: &'t ListNode, dot: &V<'t>) -> R<Option<Ctl>> {
        self.at = At::List(list);
        for n in &list.nodes {
            if let Some(c) = self.walk(n, dot)? {
                return Ok(Some(c));
            }
        }
        Ok(None)
    }

    /// Count one step of work; fail once the review's budget is exhausted.
    #[inline(always)]
    fn tick(&mut self) -> R<()> {
        match self.meter.step() {
            Ok(()) => Ok(()),
            Err(e) => Err(self.tick_error(e)),
        }
    }

    #[cold]
    #[inline(never)]
    fn tick_error(&self, e: crate::work::Exhausted) -> String {
        self.errorf(&e.to_string())
    }

    /// Fail once the output passes [`value::MAX_OUTPUT`] (outrigger's bound, as for the strings
    /// functions build; Go has none).
    #[inline]
    fn check_output(&self) -> R<()> {
        if self.out.len() > value::MAX_OUTPUT {
            return Err(self.errorf(&format!(
                "output exceeds {} bytes (outrigger's limit; Go has none)",
                value::MAX_OUTPUT
            )));
        }
        Ok(())
    }

    fn walk(&mut self, node: &'t Node, dot: &V<'t>) -> R<Option<Ctl>> {
        self.at = At::Node(node);
        self.tick()?;
        match node {
            Node::Text(t) => {
                self.out.push_str(&t.text);
                self.check_output()?;
            }
            Node::Action(a) => {
                let v = self.eval_pipeline(dot, &a.pipe)?;
                if a.pipe.decl.is_empty() {
                    self.at = At::Node(node);
                    self.print(&v);
                    self.check_output()?;
                }
            }
            Node::If(b) => return crate::go::stack::grow(|| self.walk_if_or_with(b, dot, false)),
            Node::With(b) => return crate::go::stack::grow(|| self.walk_if_or_with(b, dot, true)),
            Node::Range(b) => return crate::go::stack::grow(|| self.walk_range(node, b, dot)),
            Node::Template(t) => self.walk_template(node, t, dot)?,
            Node::Break(_) => return Ok(Some(Ctl::Break)),
            Node::Continue(_) => return Ok(Some(Ctl::Continue)),
        }
        Ok(None)
    }

    fn walk_template(&mut self, node: &'t Node, t: &'t TemplateNode, dot: &V<'t>) -> R<()> {
        let Some(body) = self.tmpl.trees.get(t.name.as_str()) else {
            return Err(self.errorf(&format!(
                "template {} not defined",
                crate::go::quote::quote(&t.name)
            )));
        };
        if self.depth >= MAX_DEPTH {
            return Err(self.errorf(&format!("exceeded maximum template depth ({MAX_DEPTH})")));
        }
        let newdot = match &t.pipe {
            Some(p) => self.eval_pipeline(dot, p)?,
            None => V::Missing,
        };
        let saved_vars = std::mem::replace(&mut self.vars, vec![("$", newdot.clone(), false)]);
        let saved_cur = std::mem::replace(&mut self.cur, t.name.as_str());
        let saved_iface = std::mem::replace(&mut self.dot_iface, false);
        self.depth += 1;
        let r = crate::go::stack::grow(|| self.walk_list(body, &newdot));
        self.depth -= 1;
        self.dot_iface = saved_iface;
        self.cur = saved_cur;
        self.vars = saved_vars;
        self.at = At::Node(node);
        r.map(|_| ())
    }

    fn print(&mut self, v: &V<'t>) {
        match v {
            V::Str(s) => self.out.push_str(s),
            V::Missing => self.out.push_str("<no value>"),
            v => v.write_sprint(&mut self.out, true),
        }
    }

    fn walk_if_or_with(&mut self, b: &'t BranchNode, dot: &V<'t>, with: bool) -> R<Option<Ctl>> {
        let mark = self.vars.len();
        let r = (|| {
            let v = self.eval_pipeline(dot, &b.pipe)?;
            if v.truth() {
                if with {
                    let saved = std::mem::replace(&mut self.dot_iface, false);
                    let r = self.walk_list(&b.body, &v);
                    self.dot_iface = saved;
                    r
                } else {
                    self.walk_list(&b.body, dot)
                }
            } else if let Some(e) = &b.else_body {
                self.walk_list(e, dot)
            } else {
                Ok(None)
            }
        })();
        self.vars.truncate(mark);
        r
    }

    fn walk_range(&mut self, node: &'t Node, b: &'t BranchNode, dot: &V<'t>) -> R<Option<Ctl>> {
        let mark = self.vars.len();
        let r = self.range_inner(node, b, dot);
        self.vars.truncate(mark);
        // `break` and `continue` end at their range.
        r.map(|_| None)
    }

    fn range_inner(&mut self, node: &'t Node, b: &'t BranchNode, dot: &V<'t>) -> R<()> {
        self.at = At::Node(node);
        let v = self.eval_pipeline(dot, &b.pipe)?;
        let mark = self.vars.len();
        let v = match v {
            V::Ptr(inner) => (*inner).clone(),
            v => v,
        };
        match v {
            V::Int(..) | V::Uint(_) => {
                if b.pipe.decl.len() > 1 {
                    return Err(self.errorf(&format!(
                        "can't use {} to iterate over more than one variable",
                        v.sprint()
                    )));
                }
                let n: i128 = match v {
                    V::Int(i, _) => i128::from(i),
                    V::Uint(u) => i128::from(u),
                    _ => 0,
                };
                if n > 0 {
                    for i in 0..n {
                        let x = match v {
                            V::Int(_, ty) => V::Int(i as i64, ty),
                            _ => V::Uint(i as u64),
                        };
                        let saved = std::mem::replace(&mut self.dot_iface, false);
                        let r = self.range_iteration(b, x.clone(), x, mark, false);
                        self.dot_iface = saved;
                        if !r? {
                            break;
                        }
                    }
                    return Ok(());
                }
            }
            v => {
                let items = match self.range_items(&v) {
                    Ok(items) => items,
                    Err(m) => {
                        return Err(self.errorf(&m));
                    }
                };
                if !items.is_empty() {
                    let generic = matches!(v, V::Json(_) | V::List(_) | V::Map(_));
                    let saved = std::mem::replace(&mut self.dot_iface, generic);
                    let mut r = Ok(());
                    for (k, elem) in items {
                        match self.range_iteration(b, k, elem, mark, generic) {
                            Ok(true) => {}
                            Ok(false) => break,
                            Err(e) => {
                                r = Err(e);
                                break;
                            }
                        }
                    }
                    self.dot_iface = saved;
                    return r;
                }
            }
        }
        if let Some(e) = &b.else_body {
            self.walk_list(e, dot)?;
        }
        Ok(())
    }

    /// One iteration of a range body; false when the loop must stop (`break`).
    fn range_iteration(
        &mut self,
        b: &'t BranchNode,
        k: V<'t>,
        elem: V<'t>,
        mark: usize,
        iface: bool,
    ) -> R<bool> {
        self.tick()?;
        let decl = &b.pipe.decl;
        if !decl.is_empty() {
            if b.pipe.is_assign {
                let (first, fi) = if decl.len() > 1 {
                    (k.clone(), false)
                } else {
                    (elem.clone(), iface)
                };
                self.set_var(&decl[0].1, first, fi)?;
            } else {
                self.set_top_var(1, elem.clone(), iface);
            }
        }
        if decl.len() > 1 {
            if b.pipe.is_assign {
                self.set_var(&decl[1].1, elem.clone(), iface)?;
            } else {
                self.set_top_var(2, k, false);
            }
        }
        let r = self.walk_list(&b.body, &elem);
        self.vars.truncate(mark);
        Ok(!matches!(r?, Some(Ctl::Break)))
    }

    fn set_top_var(&mut self, n: usize, v: V<'t>, iface: bool) {
        let len = self.vars.len();
        if let Some(slot) = len.checked_sub(n).and_then(|i| self.vars.get_mut(i)) {
            slot.1 = v;
            slot.2 = iface;
        }
    }

    fn set_var(&mut self, name: &str, v: V<'t>, iface: bool) -> R<()> {
        match self.vars.iter_mut().rev().find(|(n, _, _)| *n == name) {
            Some(slot) => {
                slot.1 = v;
                slot.2 = iface;
                Ok(())
            }
            None => Err(self.errorf(&format!("undefined variable: {name}"))),
        }
    }

    fn range_items(&self, v: &V<'t>) -> R<Vec<(V<'t>, V<'t>)>> {
        let idx = |i: usize| V::Int(i as i64, IntTy::Int);
        Ok(match v {
            V::Missing | V::Nil | V::NilPtr(_) => vec![],
            V::Json(Value::Array(a)) => a
                .iter()
                .enumerate()
                .map(|(i, x)| (idx(i), V::json(x)))
                .collect(),
            V::Json(Value::Object(o)) => {
                let mut e: Vec<_> = o.iter().collect();
                e.sort_by(|a, b| a.0.cmp(b.0));
                e.into_iter().map(|(k, x)| (V::s(k), V::json(x))).collect()
            }
            V::List(l) => l
                .to_vec()
                .into_iter()
                .enumerate()
                .map(|(i, x)| (idx(i), x))
                .collect(),
            V::TList(_, l) => l
                .to_vec()
                .into_iter()
                .enumerate()
                .map(|(i, x)| (idx(i), x))
                .collect(),
            V::NilOf(_) => vec![],
            V::Map(m) => m
                .borrow()
                .iter()
                .map(|(k, x)| (V::string(k.clone()), x.clone()))
                .collect(),
            V::StrMapJ(m) => {
                let mut e: Vec<_> = m.iter().flat_map(|m| m.iter()).collect();
                e.sort_by(|a, b| a.0.cmp(b.0));
                e.into_iter()
                    .map(|(k, x)| (V::s(k), V::s(x.as_str().unwrap_or(""))))
                    .collect()
            }
            V::StrMap(m) => m
                .iter()
                .flat_map(|m| m.iter())
                .map(|(k, x)| (V::string(k.clone()), V::string(x.clone())))
                .collect(),
            V::K8sSlice(f, s) => s
                .iter()
                .flat_map(|s| s.iter())
                .enumerate()
                .map(|(i, j)| (idx(i), k8s_elem_value(f, Some(j))))
                .collect(),
            V::K8sMap(f, m) => {
                let mut e: Vec<_> = m.iter().flat_map(|m| m.iter()).collect();
                e.sort_by(|a, b| a.0.cmp(b.0));
                e.into_iter()
                    .map(|(k, j)| (V::s(k), k8s_elem_value(f, Some(j))))
                    .collect()
            }
            V::ProtoList(f, s) => s
                .iter()
                .flat_map(|s| s.iter())
                .enumerate()
                .map(|(i, j)| (idx(i), super::value::proto_scalar(f, Some(j))))
                .collect(),
            other => return Err(format!("range can't iterate over {}", other.sprint())),
        })
    }

    fn lookup_var(&self, name: &str) -> Option<(&V<'t>, bool)> {
        self.vars
            .iter()
            .rev()
            .find(|(n, _, _)| *n == name)
            .map(|(_, v, i)| (v, *i))
    }

    /// Go's `evalPipeline`: commands left to right, the previous result as the final argument;
    /// then the declarations.
    ///
    /// A pure pipeline ([`memo_pure`]) evaluated from the root in a render whose data no function
    /// changes gives the same value each time, and its evaluation counts the same steps and
    /// leaves execution at the same node: the first value is remembered by the pipeline's
    /// text, and a later pipeline of that text takes it, counts the steps and moves to its own
    /// node at that place, as its evaluation would have. Only values are remembered, never
    /// errors; a value that would count steps across a check of the work budget is evaluated
    /// again, so the check fails where it always would.
    fn eval_pipeline(&mut self, dot: &V<'t>, pipe: &'t PipeNode) -> R<V<'t>> {
        let slot = pipe.memo as usize;
        if pipe.memo == NO_MEMO
            || self.memos.is_empty()
            || !self.tmpl.memo_pure[slot]
            || !matches!(dot, V::Root(_))
        {
            return crate::go::stack::grow(|| self.eval_pipeline_here(dot, pipe));
        }
        let counted = self.meter.steps() % Meter::EVERY;
        if let Some(m) = &mut self.memos[slot] {
            if counted + m.steps < Meter::EVERY {
                // The same place in this pipeline as in the one evaluated (alike: same text).
                let at = if std::ptr::eq(m.pipe, pipe) {
                    Some(m.at)
                } else {
                    if m.place.is_none() {
                        m.place = at_index(m.pipe, m.at);
                    }
                    m.place.and_then(|k| at_by_index(pipe, k))
                };
                if let Some(at) = at {
                    let (steps, value) = (m.steps, m.value.clone());
                    for _ in 0..steps {
                        // Within the budget's check interval: never fails.
                        let _ = self.meter.step();
                    }
                    self.at = at;
                    return Ok(value);
                }
            }
        }
        let before = self.meter.steps();
        let r = crate::go::stack::grow(|| self.eval_pipeline_here(dot, pipe));
        if let Ok(v) = &r {
            // Lists and maps built by functions are values of their own, not shared.
            if !matches!(v, V::List(_) | V::TList(..) | V::Map(_)) {
                self.memos[slot] = Some(Memo {
                    value: v.clone(),
                    steps: self.meter.steps() - before,
                    pipe,
                    at: self.at,
                    place: None,
                });
            }
        }
        r
    }

    fn eval_pipeline_here(&mut self, dot: &V<'t>, pipe: &'t PipeNode) -> R<V<'t>> {
        self.at = At::Pipe(pipe);
        let mut value: Final<'t> = None;
        for cmd in &pipe.commands {
            let v = self.eval_command(dot, cmd, value.take())?;
            // Go unwraps empty interfaces after each command: a nil interface becomes invalid.
            value = Some(match v {
                V::Nil => V::Missing,
                v => v,
            });
        }
        let value = value.unwrap_or(V::Missing);
        for (_, name) in &pipe.decl {
            if pipe.is_assign {
                self.set_var(name, value.clone(), false)?;
            } else {
                self.vars.push((name.as_str(), value.clone(), false));
            }
        }
        Ok(value)
    }

    fn eval_command(&mut self, dot: &V<'t>, cmd: &'t CommandNode, fin: Final<'t>) -> R<V<'t>> {
        self.tick()?;
        let first = &cmd.args[0];
        match first {
            Expr::Field(_, idents, slots) => {
                self.at = At::Expr(first);
                let iface = self.dot_iface;
                return self.eval_field_chain(
                    dot,
                    first,
                    dot,
                    iface,
                    (idents, slots),
                    &cmd.args,
                    fin,
                );
            }
            Expr::Chain(_, inner, idents) => {
                return self.eval_chain_node(dot, first, inner, idents, &cmd.args, fin)
            }
            Expr::Identifier(_, name, id) => {
                return self.eval_function(
                    dot,
                    first,
                    name,
                    *id,
                    At::Cmd(cmd),
                    Some(&cmd.args),
                    fin,
                )
            }
            Expr::Pipe(_, p) => {
                self.not_a_function(&cmd.args, &fin)?;
                return self.eval_pipeline(dot, p);
            }
            Expr::Variable(_, name, idents, slots) => {
                return self.eval_variable_node(dot, first, name, (idents, slots), &cmd.args, fin)
            }
            _ => {}
        }
        self.at = At::Expr(first);
        self.not_a_function(&cmd.args, &fin)?;
        Ok(match first {
            Expr::Bool(_, b) => V::Bool(*b),
            Expr::Dot(_) => dot.clone(),
            Expr::Nil(_) => return Err(self.errorf("nil is not a command")),
            Expr::Number(_, n) => self.ideal_constant(first, n)?,
            Expr::String(_, _, s) => V::s(s),
            _ => return Err(self.errorf(&format!("can't evaluate command {}", expr_str(first)))),
        })
    }

    fn not_a_function(&self, args: &[Expr], fin: &Final<'t>) -> R<()> {
        if args.len() > 1 || fin.is_some() {
            return Err(self.errorf(&format!(
                "can't give argument to non-function {}",
                expr_str(&args[0])
            )));
        }
        Ok(())
    }

    /// Go's `idealConstant`: a number with no type to convert to.
    fn ideal_constant(&mut self, e: &'t Expr, n: &NumberLit) -> R<V<'t>> {
        self.at = At::Expr(e);
        if let Some((re, im)) = n.complex {
            return Ok(V::Complex(re, im));
        }
        let t = &n.text;
        let hex_int = {
            let b = t.trim_start_matches(['+', '-']).as_bytes();
            b.len() > 1 && b[0] == b'0' && matches!(b[1], b'x' | b'X') && !t.contains(['p', 'P'])
        };
        if n.float.is_some()
            && !hex_int
            && !t.starts_with('\'')
            && t.contains(['.', 'e', 'E', 'p', 'P'])
        {
            return Ok(V::Float(n.float.unwrap_or(0.0)));
        }
        if let Some(i) = n.int {
            return Ok(V::Int(i, IntTy::Int));
        }
        if n.uint.is_some() {
            return Err(self.errorf(&format!("{t} overflows int")));
        }
        Ok(V::Missing)
    }

    fn eval_variable_node(
        &mut self,
        dot: &V<'t>,
        e: &'t Expr,
        name: &str,
        chain: Chain<'t>,
        args: &'t [Expr],
        fin: Final<'t>,
    ) -> R<V<'t>> {
        self.at = At::Expr(e);
        let Some((value, iface)) = self.lookup_var(name).map(|(v, i)| (v.clone(), i)) else {
            return Err(self.errorf(&format!("undefined variable: {name}")));
        };
        if chain.0.is_empty() {
            self.not_a_function(args, &fin)?;
            return Ok(value);
        }
        self.eval_field_chain(dot, e, &value, iface, chain, args, fin)
    }

    fn eval_chain_node(
        &mut self,
        dot: &V<'t>,
        e: &'t Expr,
        inner: &'t Expr,
        idents: &'t [String],
        args: &'t [Expr],
        fin: Final<'t>,
    ) -> R<V<'t>> {
        self.at = At::Expr(e);
        if let Expr::Nil(_) = inner {
            return Err(self.errorf(&format!(
                "indirection through explicit nil in {}",
                expr_str(e)
            )));
        }
        let base = self.eval_arg(dot, P::Raw, inner)?;
        self.eval_field_chain(dot, e, &base, false, (idents, &[]), args, fin)
    }

    /// Go's `evalFieldChain`; `iface`: the receiver is held as `interface{}`.
    ///
    /// A chain evaluated from the root in a render whose data no function changes
    /// ([`Exec::chains`]) gives the same value at each prefix every time: each prefix's value is
    /// remembered in its slot, and a chain resumes after the longest prefix already evaluated.
    /// Only values are remembered, never errors, so a failing step fails as it always would.
    #[allow(clippy::too_many_arguments)]
    fn eval_field_chain(
        &mut self,
        dot: &V<'t>,
        node: &'t Expr,
        receiver: &V<'t>,
        mut iface: bool,
        (idents, slots): Chain<'t>,
        args: &'t [Expr],
        fin: Final<'t>,
    ) -> R<V<'t>> {
        let n = idents.len();
        let has_args = args.len() > 1 || fin.is_some();
        // How many leading steps are remembered or may be (a call with arguments is not).
        let cached =
            if slots.len() == n && !self.chains.is_empty() && matches!(receiver, V::Root(_)) {
                n - usize::from(has_args)
            } else {
                0
            };
        let mut recv = Recv::Borrowed(receiver);
        let mut start = 0;
        for i in (0..cached).rev() {
            if let Some((v, f)) = &self.chains[slots[i] as usize] {
                if i + 1 == n {
                    return Ok(v.clone());
                }
                recv = Recv::Owned(v.clone());
                iface = *f;
                start = i + 1;
                break;
            }
        }
        for (i, name) in idents.iter().enumerate().take(n - 1).skip(start) {
            // A value looked up in a generic map is an `interface{}` in Go.
            let from_generic = matches!(recv.get(), V::Json(_) | V::Map(_));
            if let V::Semver(v, ptr) = recv.get() {
                if let Some((want, on_value)) = semver::method_arity(name) {
                    if *ptr || on_value {
                        let v = v.clone();
                        recv = Recv::Owned(self.call_semver_method(
                            dot,
                            node,
                            &v,
                            name,
                            want,
                            &[],
                            None,
                        )?);
                        iface = false;
                        continue;
                    }
                }
            }
            let next = self.eval_field(name, false, recv.get(), iface)?;
            iface = from_generic;
            if i < cached {
                self.chains[slots[i] as usize] = Some((next.clone(), iface));
            }
            recv = Recv::Owned(next);
        }
        if let V::Semver(v, ptr) = recv.get() {
            let name = &idents[n - 1];
            if let Some((want, on_value)) = semver::method_arity(name) {
                if *ptr || on_value {
                    let v = v.clone();
                    return self.call_semver_method(dot, node, &v, name, want, args, fin);
                }
            }
        }
        let from_generic = matches!(recv.get(), V::Json(_) | V::Map(_));
        let v = self.eval_field(&idents[n - 1], has_args, recv.get(), iface)?;
        if n - 1 < cached {
            self.chains[slots[n - 1] as usize] = Some((v.clone(), from_generic));
        }
        Ok(v)
    }

    /// Go's `evalCall` of a method of a semver version (`.Minor`, `.LessThan (semver "2")`,
    /// `.SetPrerelease "rc.1"`): the number of arguments, their types, the results.
    #[allow(clippy::too_many_arguments)]
    fn call_semver_method(
        &mut self,
        dot: &V<'t>,
        node: &'t Expr,
        v: &semver::Version,
        name: &str,
        want: usize,
        args: &'t [Expr],
        fin: Final<'t>,
    ) -> R<V<'t>> {
        let args = args.get(1..).unwrap_or(&[]);
        let got = args.len() + usize::from(fin.is_some());
        if got != want {
            return Err(self.errorf(&format!(
                "wrong number of args for {name}: want {want} got {got}"
            )));
        }
        let p = match name {
            "SetPrerelease" | "SetMetadata" => P::Str,
            _ => P::Semver,
        };
        let mut argv = Vec::with_capacity(got);
        for a in args {
            argv.push(self.eval_arg(dot, p, a)?);
        }
        if let Some(f) = fin {
            argv.push(self.validate(f, p)?);
        }
        let held: Vec<semver::Arg<'_>> = argv
            .iter()
            .filter_map(|a| match a {
                V::Semver(o, _) => Some(semver::Arg::Version(o)),
                V::Str(s) => Some(semver::Arg::Str(s)),
                _ => None,
            })
            .collect();
        let outcome = if held.len() < argv.len() {
            // A nil *semver.Version: the method dereferences it.
            semver::Call::Err(
                "runtime error: invalid memory address or nil pointer dereference".into(),
            )
        } else {
            semver::call(v, name, &held).unwrap_or_else(|| {
                semver::Call::Err(format!("method {name} is not implemented by outrigger"))
            })
        };
        Ok(match outcome {
            semver::Call::Uint(u) => V::Uint(u),
            semver::Call::Int(i) => V::Int(i, IntTy::Int),
            semver::Call::Str(s) => V::string(s),
            semver::Call::Bool(b) => V::Bool(b),
            semver::Call::Version(n) => V::Semver(Rc::new(n), false),
            semver::Call::Err(m) => {
                // Go reports a failed call at the field or chain node that named the method.
                self.at = At::Expr(node);
                return Err(self.errorf(&format!("error calling {name}: {m}")));
            }
        })
    }

    /// Go's `evalField` on one step of a chain.
    fn eval_field(&self, name: &str, has_args: bool, receiver: &V<'t>, iface: bool) -> R<V<'t>> {
        if has_args {
            match receiver {
                V::Missing => return Ok(V::Missing),
                V::Json(Value::Object(_))
                | V::Map(_)
                | V::NilOf(_)
                | V::StrMapJ(_)
                | V::StrMap(_)
                | V::K8sMap(..) => {
                    return Err(self.errorf(&format!("{name} is not a method but has arguments")))
                }
                V::K8s { st, json, .. } if k8s_lookup(st, *json, name).is_some() => {
                    return Err(self.errorf(&format!(
                        "{name} has arguments but cannot be invoked as function"
                    )))
                }
                _ => {}
            }
        }
        if let (V::Root(_), "Values", Some(values)) = (receiver, name, &self.values) {
            return Ok(values.clone());
        }
        field(receiver, name).map_err(|m| {
            // Go names the receiver's static type: `interface {}` for values held in generic
            // lists and maps, the dynamic type otherwise.
            let generic = matches!(
                receiver,
                V::Json(_)
                    | V::List(_)
                    | V::TList(..)
                    | V::Map(_)
                    | V::Float(_)
                    | V::Bool(_)
                    | V::Str(_)
                    | V::Int(..)
                    | V::Uint(_)
                    | V::Complex(..)
            );
            if generic && m.starts_with("can't evaluate field ") {
                let ty = if iface {
                    "interface {}".to_string()
                } else {
                    receiver.type_name()
                };
                return self.errorf(&format!("can't evaluate field {name} in type {ty}"));
            }
            self.errorf(&m)
        })
    }

    /// Go's `evalFunction` + `evalCall`: `args` are the command's operands (the function name
    /// first) or `None` when the function is an operand itself; `id` is the function's, as the
    /// parser resolved it ([`funcs::id`]).
    #[allow(clippy::too_many_arguments)]
    fn eval_function(
        &mut self,
        dot: &V<'t>,
        ident: &'t Expr,
        name: &str,
        id: u32,
        call_node: At<'t>,
        args: Option<&'t [Expr]>,
        fin: Final<'t>,
    ) -> R<V<'t>> {
        self.at = At::Expr(ident);
        let args: &'t [Expr] = args.map_or(&[], |a| &a[1..]);
        let Some(func) = funcs::by_id(id) else {
            return Err(self.errorf(&format!(
                "{} is not a defined function",
                crate::go::quote::quote(name)
            )));
        };
        match func.kind {
            funcs::Kind::And => return self.eval_and_or(dot, true, args, fin),
            funcs::Kind::Or => return self.eval_and_or(dot, false, args, fin),
            _ => {}
        }
        let def = &func.def;
        let nargs = args.len() + usize::from(fin.is_some());
        let fixed = def.params.len();
        if def.variadic.is_some() {
            if nargs < fixed {
                return Err(self.errorf(&format!(
                    "wrong number of args for {name}: want at least {fixed} got {}",
                    args.len()
                )));
            }
        } else if nargs != fixed {
            return Err(self.errorf(&format!(
                "wrong number of args for {name}: want {fixed} got {nargs}"
            )));
        }
        let param = |i: usize| {
            def.params
                .get(i)
                .copied()
                .or(def.variadic)
                .unwrap_or(P::Any)
        };
        // The arguments go into a buffer of the render's, not a new vector for each call.
        let mut argv = self.argv_pool.pop().unwrap_or_default();
        argv.reserve(nargs + usize::from(func.kind == funcs::Kind::Call));
        for (i, a) in args.iter().enumerate() {
            argv.push(self.eval_arg(dot, param(i), a)?);
        }
        if let Some(f) = fin {
            argv.push(self.validate(f, param(nargs - 1))?);
        }
        let result = match func.kind {
            funcs::Kind::Call => {
                // Go hands `call` the callee's name for its error: the first argument's text, or
                // the piped value's `reflect.Value.String()`.
                let callee = match (args.first(), argv.first()) {
                    (Some(a), _) => expr_str(a),
                    (None, Some(v)) => super::builtins::value_string(v),
                    (None, None) => String::new(),
                };
                argv.insert(0, V::string(callee));
                (def.f)(&mut argv)
            }
            funcs::Kind::Env => match funcs::call_env(name, self.env, &argv) {
                Some(r) => r,
                None => (def.f)(&mut argv),
            },
            funcs::Kind::Clock => match dates::call_clock(name, self.clock, &argv) {
                Some(r) => r,
                None => (def.f)(&mut argv),
            },
            funcs::Kind::ProtoJson => match istio::call_proto_json(name, self.proto_json, &argv) {
                Some(r) => r,
                None => (def.f)(&mut argv),
            },
            _ => (def.f)(&mut argv),
        };
        argv.clear();
        self.argv_pool.push(argv);
        // Functions that put their arguments into a new or updated map or list are the only way
        // a template nests values deeper; bounded so printing, encoding and dropping them fit
        // any thread's stack.
        let result = result.and_then(|v| {
            if func.nests && value::nested_deeper_than(&v, MAX_VALUE_DEPTH) {
                Err(format!(
                    "value nested deeper than {MAX_VALUE_DEPTH} maps and lists \
                     (outrigger's limit; Go has none)"
                ))
            } else {
                Ok(v)
            }
        });
        result.map_err(|m| self.call_error(call_node, ident, name, &m))
    }

    /// The error of a failed call, at the call's node (the identifier's when the function is
    /// an operand).
    #[cold]
    fn call_error(&self, call_node: At<'t>, ident: &'t Expr, name: &str, m: &str) -> String {
        let mut s = Exec {
            tmpl: self.tmpl,
            out: String::new(),
            vars: Vec::new(),
            dot_iface: false,
            depth: 0,
            cur: self.cur,
            at: call_node,
            env: self.env,
            proto_json: self.proto_json,
            clock: self.clock,
            values: None,
            meter: Meter::current(),
            chains: Vec::new(),
            argv_pool: Vec::new(),
            memos: Vec::new(),
        };
        if let At::None = call_node {
            s.at = At::Expr(ident);
        }
        s.errorf(&format!("error calling {name}: {m}"))
    }

    /// Go's `validateType`: convert an evaluated value to parameter type `p`.
    #[inline]
    fn validate(&self, v: V<'t>, p: P) -> R<V<'t>> {
        // What every conversion keeps as it is, decided here (as `convert` decides it).
        match (p, &v) {
            (P::Raw, _)
            | (P::Str, V::Str(_))
            | (P::Int, V::Int(_, IntTy::Int))
            | (P::Float, V::Float(_))
            | (P::Bool, V::Bool(_))
            | (P::StrMap, V::StrMapJ(_) | V::StrMap(_))
            | (P::Map, V::Json(Value::Object(_)) | V::Map(_))
            | (P::Proto, V::Proto { .. })
            | (
                P::Meta,
                V::K8s {
                    ty: "metav1.ObjectMeta",
                    ..
                },
            ) => return Ok(v),
            (P::Any, V::Missing) => {}
            (P::Any, _) => return Ok(v),
            _ => {}
        }
        self.convert_arg(v, p)
    }

    fn convert_arg(&self, v: V<'t>, p: P) -> R<V<'t>> {
        funcs::convert(v, p).map_err(|m| self.errorf(&m))
    }

    /// Go's `evalArg`: evaluate an operand for a parameter of type `p`.
    fn eval_arg(&mut self, dot: &V<'t>, p: P, a: &'t Expr) -> R<V<'t>> {
        self.at = At::Expr(a);
        match a {
            Expr::Dot(_) => return self.validate(dot.clone(), p),
            Expr::Nil(_) => {
                if p.can_be_nil() {
                    return Ok(if p == P::Raw { V::Missing } else { V::Nil });
                }
                return Err(self.errorf(&format!("cannot assign nil to {}", p.go_name())));
            }
            Expr::Field(_, idents, slots) => {
                let iface = self.dot_iface;
                let v = self.eval_field_chain(
                    dot,
                    a,
                    dot,
                    iface,
                    (idents, slots),
                    std::slice::from_ref(a),
                    None,
                )?;
                return self.validate(v, p);
            }
            Expr::Variable(_, name, idents, slots) => {
                let v = self.eval_variable_node(dot, a, name, (idents, slots), &[], None)?;
                return self.validate(v, p);
            }
            Expr::Pipe(_, pipe) => {
                let v = self.eval_pipeline(dot, pipe)?;
                return self.validate(v, p);
            }
            Expr::Identifier(_, name, id) => {
                let v = self.eval_function(dot, a, name, *id, At::None, None, None)?;
                return self.validate(v, p);
            }
            Expr::Chain(_, inner, idents) => {
                let v = self.eval_chain_node(dot, a, inner, idents, &[], None)?;
                return self.validate(v, p);
            }
            _ => {}
        }
        // The literal's text is formatted only for an error.
        let lit = || expr_str(a);
        match p {
            P::Bool => match a {
                Expr::Bool(_, b) => Ok(V::Bool(*b)),
                _ => Err(self.errorf(&format!("expected bool; found {}", lit()))),
            },
            P::Int => match a {
                Expr::Number(_, n) if n.int.is_some() => Ok(V::Int(n.int.unwrap_or(0), IntTy::Int)),
                _ => Err(self.errorf(&format!("expected integer; found {}", lit()))),
            },
            P::Float => match a {
                Expr::Number(_, n) if n.float.is_some() => Ok(V::Float(n.float.unwrap_or(0.0))),
                _ => Err(self.errorf(&format!("expected float; found {}", lit()))),
            },
            P::Str => match a {
                Expr::String(_, _, s) => Ok(V::s(s)),
                _ => Err(self.errorf(&format!("expected string; found {}", lit()))),
            },
            P::Any | P::Raw => match a {
                Expr::Bool(_, b) => Ok(V::Bool(*b)),
                Expr::Number(_, n) => self.ideal_constant(a, n),
                Expr::String(_, _, s) => Ok(V::s(s)),
                _ => Err(self.errorf(&format!(
                    "can't handle assignment of {} to empty interface argument",
                    lit()
                ))),
            },
            other => Err(self.errorf(&format!(
                "can't handle {} for arg of type {}",
                lit(),
                other.go_name()
            ))),
        }
    }

    fn eval_and_or(
        &mut self,
        dot: &V<'t>,
        and: bool,
        args: &'t [Expr],
        fin: Final<'t>,
    ) -> R<V<'t>> {
        let n = args.len() + usize::from(fin.is_some());
        if n < 1 {
            let name = if and { "and" } else { "or" };
            return Err(self.errorf(&format!(
                "wrong number of args for {name}: want at least 1 got 0"
            )));
        }
        let mut last = V::Missing;
        for a in args {
            last = self.eval_arg(dot, P::Raw, a)?;
            if last.truth() != and {
                return Ok(last);
            }
        }
        if let Some(f) = fin {
            last = f;
        }
        Ok(last)
    }
}

/// Whether the pipelines given each [`PipeNode::memo`] number are remembered: pure (no
/// declarations or variables, every function one whose value depends on its arguments alone in a
/// render: not a clock or unimplemented function, nor `call`), so that from the same dot they
/// give the same value, calling a function (a field chain alone has its slots), and able to run
/// again in a render (written twice, or in a defined template, which may be run again). Functions
/// that change maps in place turn every memo off (see [`Exec::run`]).
pub fn memo_pure(
    trees: &std::collections::HashMap<String, ListNode>,
    main: &str,
    n: usize,
) -> Vec<bool> {
    let mut pure = vec![false; n];
    let mut seen = vec![0u8; n];
    let mut work: Vec<(&ListNode, bool)> = trees
        .iter()
        .map(|(name, l)| (l, name.as_str() != main))
        .collect();
    let mut pipes: Vec<(&PipeNode, bool)> = Vec::new();
    while let Some((l, defined)) = work.pop() {
        for node in &l.nodes {
            match node {
                Node::Action(a) => pipes.push((&a.pipe, defined)),
                Node::If(b) | Node::Range(b) | Node::With(b) => {
                    pipes.push((&b.pipe, defined));
                    work.push((&b.body, defined));
                    work.extend(b.else_body.iter().map(|e| (e, defined)));
                }
                Node::Template(t) => pipes.extend(t.pipe.iter().map(|p| (p, defined))),
                Node::Text(_) | Node::Break(_) | Node::Continue(_) => {}
            }
        }
    }
    let mut exprs: Vec<(&Expr, bool)> = Vec::new();
    while !pipes.is_empty() || !exprs.is_empty() {
        while let Some((p, defined)) = pipes.pop() {
            if p.memo != NO_MEMO {
                let m = p.memo as usize;
                // Twice, or once where it may run again.
                seen[m] = seen[m].saturating_add(1 + u8::from(defined));
                // A memo's pipeline spans a few hundred bytes: checking it recurses that little.
                pure[m] = pure_pipe(p) && calls(p);
            }
            exprs.extend(
                p.commands
                    .iter()
                    .flat_map(|c| c.args.iter())
                    .map(|e| (e, defined)),
            );
        }
        while let Some((e, defined)) = exprs.pop() {
            match e {
                Expr::Pipe(_, p) => pipes.push((p, defined)),
                Expr::Chain(_, inner, _) => exprs.push((inner, defined)),
                _ => {}
            }
        }
    }
    for (p, s) in pure.iter_mut().zip(seen) {
        *p &= s >= 2;
    }
    pure
}

/// Whether pipeline `p` calls a function (at any depth).
fn calls(p: &PipeNode) -> bool {
    fn expr(e: &Expr) -> bool {
        match e {
            Expr::Identifier(..) => true,
            Expr::Pipe(_, p) => calls(p),
            Expr::Chain(_, inner, _) => expr(inner),
            _ => false,
        }
    }
    p.commands.iter().flat_map(|c| c.args.iter()).any(expr)
}

fn pure_pipe(p: &PipeNode) -> bool {
    p.decl.is_empty() && p.commands.iter().all(|c| c.args.iter().all(pure_expr))
}

fn pure_expr(e: &Expr) -> bool {
    match e {
        Expr::Dot(_)
        | Expr::Field(..)
        | Expr::String(..)
        | Expr::Number(..)
        | Expr::Bool(..)
        | Expr::Nil(_) => true,
        Expr::Variable(..) => false,
        Expr::Identifier(_, name, id) => funcs::by_id(*id).is_some_and(|f| {
            matches!(
                f.kind,
                funcs::Kind::Plain | funcs::Kind::Env | funcs::Kind::And | funcs::Kind::Or
            ) && funcs::is_pure(name)
        }),
        Expr::Pipe(_, p) => pure_pipe(p),
        Expr::Chain(_, inner, _) => pure_expr(inner),
    }
}

/// The place of node `at` in pipeline `p`, in the order of the nodes evaluating it can leave
/// execution at (the pipeline, then each operand followed by what it holds), if it is in it.
fn at_index(p: &PipeNode, at: At<'_>) -> Option<u32> {
    fn pipe(p: &PipeNode, at: At<'_>, i: &mut u32) -> bool {
        if matches!(at, At::Pipe(q) if std::ptr::eq(p, q)) {
            return true;
        }
        *i += 1;
        for c in &p.commands {
            for e in &c.args {
                if expr(e, at, i) {
                    return true;
                }
            }
        }
        false
    }
    fn expr(e: &Expr, at: At<'_>, i: &mut u32) -> bool {
        if matches!(at, At::Expr(x) if std::ptr::eq(e, x)) {
            return true;
        }
        *i += 1;
        match e {
            Expr::Pipe(_, p) => pipe(p, at, i),
            Expr::Chain(_, inner, _) => expr(inner, at, i),
            _ => false,
        }
    }
    let mut i = 0;
    pipe(p, at, &mut i).then_some(i)
}

/// The node at place `k` of pipeline `p` ([`at_index`]).
fn at_by_index(p: &PipeNode, k: u32) -> Option<At<'_>> {
    fn pipe<'t>(p: &'t PipeNode, k: u32, i: &mut u32) -> Option<At<'t>> {
        if *i == k {
            return Some(At::Pipe(p));
        }
        *i += 1;
        for c in &p.commands {
            for e in &c.args {
                if let Some(at) = expr(e, k, i) {
                    return Some(at);
                }
            }
        }
        None
    }
    fn expr<'t>(e: &'t Expr, k: u32, i: &mut u32) -> Option<At<'t>> {
        if *i == k {
            return Some(At::Expr(e));
        }
        *i += 1;
        match e {
            Expr::Pipe(_, p) => pipe(p, k, i),
            Expr::Chain(_, inner, _) => expr(inner, k, i),
            _ => None,
        }
    }
    pipe(p, k, &mut 0)
}

fn node_pos(n: &Node) -> Pos {
    match n {
        Node::Text(t) => t.pos,
        Node::Action(a) => a.pos,
        Node::If(b) | Node::Range(b) | Node::With(b) => b.pos,
        Node::Template(t) => t.pos,
        Node::Break(p) | Node::Continue(p) => *p,
    }
}

/// Field or method `name` of `v` (Go `evalField`).
pub fn field<'a>(v: &V<'a>, name: &str) -> Result<V<'a>, String> {
    match v {
        V::Missing => Ok(V::Missing),
        V::Nil => Err(format!("nil pointer evaluating interface {{}}.{name}")),
        V::Json(Value::Object(o)) => Ok(jsonmap::get(o, name).map_or(V::Missing, V::json)),
        V::Map(m) => Ok(m.borrow().get(name).cloned().unwrap_or(V::Missing)),
        V::NilOf(t) if t.starts_with("map[") => Ok(V::Missing),
        V::StrMapJ(m) => Ok(m
            .and_then(|m| jsonmap::get(m, name))
            .map_or(V::Missing, |s| V::s(s.as_str().unwrap_or("")))),
        V::StrMap(m) => Ok(m
            .as_ref()
            .and_then(|m| m.get(name))
            .map_or(V::Missing, |s| V::string(s.clone()))),
        V::K8sMap(f, m) => Ok(m
            .and_then(|m| jsonmap::get(m, name))
            .map_or(V::Missing, |j| k8s_elem_value(f, Some(j)))),
        V::Root(d) => root_field(d, name).ok_or_else(|| cant(v, name)),
        V::Pair(kind, a, b) => match (kind, name) {
            (PairKind::TypeMeta, "Kind") | (PairKind::DeploymentMeta, "Namespace") => Ok(V::s(a)),
            (PairKind::TypeMeta, "APIVersion") | (PairKind::DeploymentMeta, "Name") => Ok(V::s(b)),
            (PairKind::DeploymentMeta, "String") => Ok(V::string(format!("{a}/{b}"))),
            _ => Err(cant(v, name)),
        },
        V::K8s { ty, st, json, .. } => k8s_lookup(st, *json, name)
            .or_else(|| {
                // metav1.Object accessors (GetName, GetAnnotations, ...) on ObjectMeta.
                let f = name
                    .strip_prefix("Get")
                    .filter(|_| *ty == "metav1.ObjectMeta")?;
                k8s_lookup(st, *json, f)
            })
            .ok_or_else(|| cant(v, name)),
        V::NilPtr(t) => Err(format!(
            "nil pointer evaluating *{}.{name}",
            super::value::k8s_go_name(t)
        )),
        V::Proto {
            name: mname,
            m,
            json,
        } => proto_member(mname, m, *json, name, v),
        V::Enum(..) if name == "String" => Ok(V::string(v.sprint())),
        V::Enum(..) if name == "Number" => Ok(V::Int(enum_num(v), IntTy::I32)),
        V::Leaf(..) if name == "String" => Ok(V::string(v.sprint())),
        V::Time(t) => dates::method(t, name).ok_or_else(|| cant(v, name)),
        V::Semver(ver, ptr) => semver_field(v, ver, *ptr, name),
        _ => Err(cant(v, name)),
    }
}

/// A field or argument-less method of a semver version reached without arguments (a method
/// with arguments is called by `Exec::call_semver_method`).
fn semver_field<'a>(
    v: &V<'a>,
    ver: &semver::Version,
    ptr: bool,
    name: &str,
) -> Result<V<'a>, String> {
    match semver::method_arity(name) {
        Some((0, on_value)) if ptr || on_value => match semver::call(ver, name, &[]) {
            Some(semver::Call::Uint(u)) => Ok(V::Uint(u)),
            Some(semver::Call::Str(s)) => Ok(V::string(s)),
            Some(semver::Call::Version(n)) => Ok(V::Semver(Rc::new(n), false)),
            Some(semver::Call::Err(m)) => Err(format!("error calling {name}: {m}")),
            _ => Err(cant(v, name)),
        },
        Some((want, on_value)) if ptr || on_value => Err(format!(
            "wrong number of args for {name}: want {want} got 0"
        )),
        _ if matches!(
            name,
            "major" | "minor" | "patch" | "pre" | "metadata" | "original"
        ) =>
        {
            Err(format!(
                "{name} is an unexported field of struct type {}",
                v.type_name()
            ))
        }
        _ if matches!(
            name,
            "MarshalJSON" | "MarshalText" | "UnmarshalJSON" | "UnmarshalText" | "Scan" | "Value"
        ) =>
        {
            Err(format!("method {name} is not implemented by outrigger"))
        }
        _ => Err(cant(v, name)),
    }
}

fn enum_num(v: &V<'_>) -> i64 {
    match v {
        V::Enum(_, n) => *n,
        _ => 0,
    }
}

fn cant(v: &V<'_>, name: &str) -> String {
    // Generic values come out of `map[string]interface{}`: Go names the static type.
    let ty = match v {
        V::Json(_) | V::List(_) | V::Map(_) | V::Float(_) | V::Bool(_) => {
            "interface {}".to_string()
        }
        other => other.type_name(),
    };
    format!("can't evaluate field {name} in type {ty}")
}

fn root_field<'a>(d: &'a TemplateData<'a>, name: &str) -> Option<V<'a>> {
    let k8s = |ty: Option<(&'static str, &'static schema::K8sStruct)>, j: &'a Value| {
        ty.map(|(n, st)| V::K8s {
            ty: n,
            st,
            json: Some(j).filter(|j| !j.is_null()),
            ptr: false,
        })
    };
    let proto = |ty: Option<(&'static str, &'static schema::ProtoMessage)>, j: &'a Value| {
        ty.map(|(n, m)| V::Proto {
            name: n,
            m,
            json: Some(j),
        })
    };
    Some(match name {
        "TypeMeta" => V::Pair(PairKind::TypeMeta, d.kind, d.api_version),
        "DeploymentMeta" => V::Pair(
            PairKind::DeploymentMeta,
            d.deployment_namespace,
            d.deployment_name,
        ),
        "ObjectMeta" => k8s(root_types().object_meta, d.object_meta)?,
        "Spec" => k8s(root_types().pod_spec, d.spec)?,
        "ProxyConfig" => proto(root_types().proxy_config, d.proxy_config)?,
        "MeshConfig" => proto(root_types().mesh_config, d.mesh_config)?,
        "Values" => match d.values {
            Value::Object(_) => V::Json(d.values),
            _ => V::map(BTreeMap::new()),
        },
        "Revision" => V::s(d.revision),
        "NativeSidecars" => V::Bool(d.native_sidecars),
        "ProxyImage" => V::s(d.proxy_image),
        "ProxyInitImage" => V::s(d.proxy_init_image),
        "ProxyUID" => V::Int(d.proxy_uid, IntTy::I64),
        "ProxyGID" => V::Int(d.proxy_gid, IntTy::I64),
        "InboundTrafficPolicyMode" => V::s(d.inbound_traffic_policy_mode),
        "CompliancePolicy" => V::s(d.compliance_policy),
        _ => return None,
    })
}

/// Schema entries of the root's typed fields, looked up once.
struct RootTypes {
    object_meta: Option<(&'static str, &'static schema::K8sStruct)>,
    pod_spec: Option<(&'static str, &'static schema::K8sStruct)>,
    proxy_config: Option<(&'static str, &'static schema::ProtoMessage)>,
    mesh_config: Option<(&'static str, &'static schema::ProtoMessage)>,
}

fn root_types() -> &'static RootTypes {
    static TYPES: std::sync::OnceLock<RootTypes> = std::sync::OnceLock::new();
    TYPES.get_or_init(|| {
        let k8s = |ty: &str| {
            schema::k8s()
                .structs
                .get_key_value(ty)
                .map(|(n, st)| (n.as_str(), st))
        };
        let proto = |ty: &str| {
            schema::proto()
                .messages
                .get_key_value(ty)
                .map(|(n, m)| (n.as_str(), m))
        };
        RootTypes {
            object_meta: k8s("metav1.ObjectMeta"),
            pod_spec: k8s("corev1.PodSpec"),
            proxy_config: proto(schema::PROXY_CONFIG),
            mesh_config: proto(schema::MESH_CONFIG),
        }
    })
}

/// Field, getter or method of a protobuf message pointer.
fn proto_member<'a>(
    mname: &'static str,
    m: &'static schema::ProtoMessage,
    json: Option<&'a Value>,
    name: &str,
    v: &V<'a>,
) -> Result<V<'a>, String> {
    if is_wrapper(mname) {
        let ty = m.fields.first().map_or("string", |f| f.ty.as_str());
        return match name {
            "GetValue" => Ok(proto_plain(ty, json)),
            "Value" => match json {
                Some(_) => Ok(proto_plain(ty, json)),
                None => Err(format!("nil pointer evaluating {}.Value", v.type_name())),
            },
            _ => Err(cant(v, name)),
        };
    }
    if mname == "google.protobuf.Duration" {
        let (s, n) = json.map_or((0, 0), duration_parts);
        return match name {
            "GetSeconds" | "Seconds" => Ok(V::Int(s, IntTy::I64)),
            "GetNanos" | "Nanos" => Ok(V::Int(n, IntTy::I32)),
            _ => Err(cant(v, name)),
        };
    }
    if let Some(f) = m.field_by_getter(name) {
        // Getters are nil-safe; a oneof getter returns zero unless that member is set.
        return Ok(proto_field_value(f, json));
    }
    if let Some(f) = m.field_by_go(name).filter(|f| f.oneof.is_none()) {
        return match json {
            Some(_) => Ok(proto_field_value(f, json)),
            None => Err(format!("nil pointer evaluating {}.{name}", v.type_name())),
        };
    }
    if name == "String" {
        return Ok(V::string(json.map_or(String::new(), |j| j.to_string())));
    }
    Err(cant(v, name))
}
