//! Template execution: walks gotmpl's parse tree over the [`V`] value model.

use std::collections::BTreeMap;
use std::rc::Rc;

use gotmpl::parse::{BranchNode, CommandNode, Expr, ListNode, Node, Number, PipeNode, Pos};
use serde_json::Value;

use super::funcs::{self, P};
use super::value::{
    duration_parts, is_wrapper, k8s_elem_value, k8s_lookup, proto_field_value, proto_plain, IntTy,
    PairKind, V,
};
use super::{Template, TemplateData};
use crate::{jsonmap, schema};

/// Maximum `template` call depth (Go uses 100000 on growable stacks; ours keeps the native
/// stack safe and is far above what real templates use).
const MAX_DEPTH: usize = 200;

/// Control flow out of a list: `break` / `continue`.
enum Ctl {
    Break,
    Continue,
}

/// The execution state of one render.
pub struct Exec<'t> {
    tmpl: &'t Template,
    /// Rendered output.
    pub out: String,
    vars: Vec<(&'t str, V<'t>)>,
    depth: usize,
    cur: &'t str,
}

type R<T> = Result<T, String>;

impl<'t> Exec<'t> {
    /// Run the template's main body with `data` as dot.
    pub fn run(tmpl: &'t Template, data: &'t TemplateData<'t>) -> R<String> {
        Self::run_dot(tmpl, V::Root(data))
    }

    /// Run the template's main body over a generic JSON value, as Go executes a template over
    /// the result of `json.Unmarshal` into `interface{}`: objects are `map[string]interface{}`,
    /// arrays `[]interface{}`, numbers `float64`; a top-level `null` is the invalid value
    /// (`reflect.ValueOf(nil)`), which prints `<no value>`.
    pub fn run_json(tmpl: &'t Template, data: &'t Value) -> R<String> {
        let dot = match data {
            Value::Null => V::Missing,
            v => V::json(v),
        };
        Self::run_dot(tmpl, dot)
    }

    fn run_dot(tmpl: &'t Template, dot: V<'t>) -> R<String> {
        let mut ex = Exec {
            tmpl,
            out: String::with_capacity(tmpl.source.len() * 2),
            vars: Vec::with_capacity(16),
            depth: 0,
            cur: "inject",
        };
        ex.vars.push(("$", dot.clone()));
        ex.walk_list(&tmpl.root, &dot)?;
        Ok(ex.out)
    }

    /// Format an execution error at `pos` about node text `at`.
    fn err(&self, pos: Pos, at: &str, msg: &str) -> String {
        let src = &self.tmpl.source;
        let off = pos.offset.min(src.len());
        let line_start = src[..off].rfind('\n').map_or(0, |i| i + 1);
        let line = 1 + src[..off].matches('\n').count();
        format!(
            "template: inject:{line}:{}: executing \"{}\" at <{at}>: {msg}",
            off - line_start,
            self.cur
        )
    }

    /// Position of the name string of a `template` action (Go reports it there).
    fn template_name_pos(&self, pos: Pos) -> Pos {
        let src = &self.tmpl.source;
        let from = pos.offset.min(src.len());
        match src[from..].find(['"', '`']) {
            Some(i) => Pos::new(from + i, pos.line),
            None => pos,
        }
    }

    fn walk_list(&mut self, list: &'t ListNode, dot: &V<'t>) -> R<Option<Ctl>> {
        for n in &list.nodes {
            if let Some(c) = self.walk(n, dot)? {
                return Ok(Some(c));
            }
        }
        Ok(None)
    }

    fn walk(&mut self, node: &'t Node, dot: &V<'t>) -> R<Option<Ctl>> {
        match node {
            Node::Text(t) => self.out.push_str(&t.text),
            Node::Action(a) => {
                let v = self.eval_pipe(&a.pipe, dot)?;
                if a.pipe.decl.is_empty() {
                    self.print(&v, a.pos, &a.pipe)?;
                }
            }
            Node::List(l) => return self.walk_list(l, dot),
            Node::If(b) => return self.walk_if(b, dot, false),
            Node::With(b) => return self.walk_if(b, dot, true),
            Node::Range(b) => return self.walk_range(b, dot),
            Node::Template(t) => {
                let newdot = match &t.pipe {
                    Some(p) => self.eval_pipe(p, dot)?,
                    None => V::Missing,
                };
                let Some(body) = self.tmpl.defines.get(t.name.as_str()) else {
                    return Err(self.err(
                        self.template_name_pos(t.pos),
                        &format!("{{{{template {:?}}}}}", t.name.as_str()),
                        &format!("template {:?} not defined", t.name.as_str()),
                    ));
                };
                if self.depth >= MAX_DEPTH {
                    return Err(self.err(t.pos, "template", "exceeded maximum template depth"));
                }
                let saved_vars = std::mem::replace(&mut self.vars, vec![("$", newdot.clone())]);
                let saved_cur = std::mem::replace(&mut self.cur, t.name.as_str());
                self.depth += 1;
                let r = self.walk_list(body, &newdot);
                self.depth -= 1;
                self.cur = saved_cur;
                self.vars = saved_vars;
                r?;
            }
            Node::Define(_) => {}
            Node::Break(_) => return Ok(Some(Ctl::Break)),
            Node::Continue(_) => return Ok(Some(Ctl::Continue)),
        }
        Ok(None)
    }

    fn print(&mut self, v: &V<'t>, _pos: Pos, _pipe: &PipeNode) -> R<()> {
        match v {
            V::Str(s) => self.out.push_str(s),
            V::Missing => self.out.push_str("<no value>"),
            v => v.write_sprint(&mut self.out, true),
        }
        Ok(())
    }

    fn walk_if(&mut self, b: &'t BranchNode, dot: &V<'t>, with: bool) -> R<Option<Ctl>> {
        let mark = self.vars.len();
        let v = self.eval_pipe(&b.pipe, dot)?;
        let r = if v.truth() {
            if with {
                self.walk_list(&b.body, &v)
            } else {
                self.walk_list(&b.body, dot)
            }
        } else if let Some(e) = &b.else_body {
            self.walk_list(e, dot)
        } else {
            Ok(None)
        };
        self.vars.truncate(mark);
        r
    }

    fn walk_range(&mut self, b: &'t BranchNode, dot: &V<'t>) -> R<Option<Ctl>> {
        let mark = self.vars.len();
        // Evaluate without binding the declared loop variables.
        let v = self.eval_pipe_raw(&b.pipe, dot)?;
        let r = match v {
            // Integers iterate lazily (no item list for `range 1000000000`).
            V::Int(n, _) if n > 0 => {
                let mut res = Ok(None);
                for i in 0..n {
                    let x = V::Int(i, IntTy::Int);
                    match self.range_iteration(b, x.clone(), x, mark) {
                        Ok(true) => {}
                        Ok(false) => break,
                        Err(e) => {
                            res = Err(e);
                            break;
                        }
                    }
                }
                res
            }
            v => self.range_list(b, &v, dot, mark),
        };
        self.vars.truncate(mark);
        r
    }

    fn range_list(
        &mut self,
        b: &'t BranchNode,
        v: &V<'t>,
        dot: &V<'t>,
        mark: usize,
    ) -> R<Option<Ctl>> {
        let items: Vec<(V<'t>, V<'t>)> = match self.range_items(v) {
            Ok(items) => items,
            Err(m) => {
                // Go reports the last node evaluated by the pipeline.
                let last = b.pipe.commands.last().and_then(|c| c.args.last());
                return Err(match last {
                    Some(e) => self.err(expr_pos(e), &expr_str(e), &m),
                    None => self.err(b.pos, &pipe_str(&b.pipe), &m),
                });
            }
        };
        if items.is_empty() {
            return match &b.else_body {
                Some(e) => self.walk_list(e, dot),
                None => Ok(None),
            };
        }
        for (k, elem) in items {
            if !self.range_iteration(b, k, elem, mark)? {
                break;
            }
        }
        Ok(None)
    }

    /// One iteration of a range body; false when the loop must stop (`break`).
    fn range_iteration(
        &mut self,
        b: &'t BranchNode,
        k: V<'t>,
        elem: V<'t>,
        mark: usize,
    ) -> R<bool> {
        let inner = self.vars.len().max(mark);
        self.bind_range_vars(&b.pipe, k, elem.clone());
        let r = self.walk_list(&b.body, &elem);
        self.vars.truncate(inner);
        Ok(!matches!(r?, Some(Ctl::Break)))
    }

    fn bind_range_vars(&mut self, pipe: &'t PipeNode, k: V<'t>, elem: V<'t>) {
        let vals: Vec<V<'t>> = match pipe.decl.len() {
            0 => vec![],
            1 => vec![elem],
            _ => vec![k, elem],
        };
        for (name, val) in pipe.decl.iter().zip(vals) {
            if pipe.is_assign {
                self.assign(name.as_str(), val);
            } else {
                self.vars.push((name.as_str(), val));
            }
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
                .iter()
                .cloned()
                .enumerate()
                .map(|(i, x)| (idx(i), x))
                .collect(),
            V::Map(m) => m
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
            V::Int(..) => vec![],
            other => return Err(format!("range can't iterate over {}", other.sprint())),
        })
    }

    fn lookup_var(&self, name: &str) -> Option<&V<'t>> {
        self.vars
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v)
    }

    fn assign(&mut self, name: &str, v: V<'t>) {
        if let Some(slot) = self.vars.iter_mut().rev().find(|(n, _)| *n == name) {
            slot.1 = v;
        }
    }

    /// Evaluate a pipeline, binding declared/assigned variables.
    fn eval_pipe(&mut self, pipe: &'t PipeNode, dot: &V<'t>) -> R<V<'t>> {
        let v = self.eval_pipe_raw(pipe, dot)?;
        for name in &pipe.decl {
            if pipe.is_assign {
                if self.lookup_var(name).is_none() {
                    return Err(self.err(pipe.pos, name, &format!("undefined variable: {name}")));
                }
                self.assign(name.as_str(), v.clone());
            } else {
                self.vars.push((name.as_str(), v.clone()));
            }
        }
        Ok(v)
    }

    /// Evaluate the commands of a pipeline (no variable binding).
    fn eval_pipe_raw(&mut self, pipe: &'t PipeNode, dot: &V<'t>) -> R<V<'t>> {
        let mut final_v: Option<V<'t>> = None;
        for cmd in &pipe.commands {
            let v = self.eval_command(cmd, dot, final_v.take())?;
            // Go unwraps empty interfaces after each command: a nil interface becomes invalid.
            final_v = Some(match v {
                V::Nil => V::Missing,
                v => v,
            });
        }
        Ok(final_v.unwrap_or(V::Missing))
    }

    fn eval_command(&mut self, cmd: &'t CommandNode, dot: &V<'t>, fin: Option<V<'t>>) -> R<V<'t>> {
        let Some(first) = cmd.args.first() else {
            return Err(self.err(cmd.pos, "", "empty command"));
        };
        match first {
            Expr::Identifier(pos, name) => {
                self.eval_function(*pos, name, Some(cmd), &cmd.args[1..], dot, fin)
            }
            Expr::Field(_, chain) => {
                self.no_args(cmd, fin.is_some())?;
                self.eval_chain(first, dot.clone(), chain)
            }
            other => {
                self.no_args(cmd, fin.is_some())?;
                self.eval_arg_value(other, dot)
            }
        }
    }

    fn no_args(&self, cmd: &CommandNode, has_final: bool) -> R<()> {
        if cmd.args.len() > 1 || has_final {
            let first = &cmd.args[0];
            return Err(self.err(
                first.pos(),
                &expr_str(first),
                &format!("can't give argument to non-function {}", expr_str(first)),
            ));
        }
        Ok(())
    }

    /// Evaluate an expression as a value (no function call semantics for identifiers).
    fn eval_arg_value(&mut self, e: &'t Expr, dot: &V<'t>) -> R<V<'t>> {
        Ok(match e {
            Expr::Dot(_) => dot.clone(),
            Expr::Nil(p) => return Err(self.err(*p, "nil", "nil is not a command")),
            Expr::Field(_, chain) => self.eval_chain(e, dot.clone(), chain)?,
            Expr::Variable(p, name, chain) => {
                let Some(v) = self.lookup_var(name).cloned() else {
                    return Err(self.err(*p, name, &format!("undefined variable: {name}")));
                };
                if chain.is_empty() {
                    v
                } else {
                    self.eval_chain(e, v, chain)?
                }
            }
            Expr::Identifier(p, name) => self.eval_function(*p, name, None, &[], dot, None)?,
            Expr::String(_, s) => V::s(s),
            Expr::Number(_, n) => num_value(*n),
            Expr::Bool(_, b) => V::Bool(*b),
            Expr::Pipe(_, p) => {
                let mark = self.vars.len();
                let v = self.eval_pipe(p, dot);
                self.vars.truncate(mark);
                v?
            }
            Expr::Chain(_, inner, chain) => {
                let base = self.eval_arg_value(inner, dot)?;
                self.eval_chain(e, base, chain)?
            }
        })
    }

    fn eval_chain(&self, node: &Expr, mut v: V<'t>, chain: &[gotmpl::parse::SmolStr]) -> R<V<'t>> {
        for name in chain {
            v = match field(&v, name) {
                Ok(x) => x,
                Err(m) => return Err(self.err(expr_pos(node), &expr_str(node), &m)),
            };
        }
        Ok(v)
    }

    fn eval_function(
        &mut self,
        pos: Pos,
        name: &str,
        cmd: Option<&CommandNode>,
        args: &'t [Expr],
        dot: &V<'t>,
        fin: Option<V<'t>>,
    ) -> R<V<'t>> {
        if name == "and" || name == "or" {
            return self.eval_and_or(pos, name == "and", args, dot, fin);
        }
        let Some(def) = funcs::lookup(name) else {
            return Err(self.err(pos, name, &format!("{name:?} is not a defined function")));
        };
        let nargs = args.len() + usize::from(fin.is_some());
        let fixed = def.params.len();
        if nargs < fixed || (def.variadic.is_none() && nargs != fixed) {
            let want = if def.variadic.is_some() {
                format!("at least {fixed}")
            } else {
                fixed.to_string()
            };
            return Err(self.err(
                pos,
                name,
                &format!("wrong number of args for {name}: want {want} got {nargs}"),
            ));
        }
        let mut argv: Vec<V<'t>> = Vec::with_capacity(nargs);
        for (i, a) in args.iter().enumerate() {
            let p = def
                .params
                .get(i)
                .copied()
                .or(def.variadic)
                .unwrap_or(P::Any);
            let v = self.eval_typed_arg(a, p, dot)?;
            argv.push(v);
        }
        if let Some(f) = fin {
            let p = def
                .params
                .get(nargs - 1)
                .copied()
                .or(def.variadic)
                .unwrap_or(P::Any);
            let v = funcs::convert(f, p).map_err(|m| self.err(pos, name, &m))?;
            argv.push(v);
        }
        (def.f)(argv).map_err(|m| {
            let at = cmd.map_or_else(|| name.to_string(), cmd_str);
            self.err(pos, &at, &format!("error calling {name}: {m}"))
        })
    }

    fn eval_typed_arg(&mut self, a: &'t Expr, p: P, dot: &V<'t>) -> R<V<'t>> {
        match a {
            Expr::Nil(pos) => {
                if p.can_be_nil() {
                    Ok(V::Nil)
                } else {
                    Err(self.err(
                        *pos,
                        "nil",
                        &format!("cannot assign nil to {}", p.go_name()),
                    ))
                }
            }
            Expr::Number(pos, n) => {
                let v = num_value(*n);
                match p {
                    P::Str | P::Bool | P::StrMap | P::Meta => Err(self.err(
                        *pos,
                        &expr_str(a),
                        &format!("expected {}; found {}", p.go_name(), expr_str(a)),
                    )),
                    _ => Ok(v),
                }
            }
            _ => {
                let v = self.eval_arg_value(a, dot)?;
                funcs::convert(v, p).map_err(|m| self.err(expr_pos(a), &expr_str(a), &m))
            }
        }
    }

    fn eval_and_or(
        &mut self,
        pos: Pos,
        and: bool,
        args: &'t [Expr],
        dot: &V<'t>,
        fin: Option<V<'t>>,
    ) -> R<V<'t>> {
        let n = args.len() + usize::from(fin.is_some());
        if n < 1 {
            let name = if and { "and" } else { "or" };
            return Err(self.err(
                pos,
                name,
                &format!("wrong number of args for {name}: want at least 1 got 0"),
            ));
        }
        let mut last = V::Missing;
        for a in args {
            last = self.eval_typed_arg(a, P::Raw, dot)?;
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

/// Value of a number literal when no parameter type applies.
fn num_value(n: Number) -> V<'static> {
    match n {
        Number::Int(i) => V::Int(i, IntTy::Int),
        Number::Uint(u) => V::Uint(u),
        Number::Float(f) => V::Float(f),
    }
}

/// Field or method `name` of `v` (Go `evalField`).
pub fn field<'a>(v: &V<'a>, name: &str) -> Result<V<'a>, String> {
    match v {
        V::Missing => Ok(V::Missing),
        V::Nil => Err(format!("nil pointer evaluating interface {{}}.{name}")),
        V::Json(Value::Object(o)) => Ok(jsonmap::get(o, name).map_or(V::Missing, V::json)),
        V::Map(m) => Ok(m.get(name).cloned().unwrap_or(V::Missing)),
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
            _ => V::Map(Rc::new(BTreeMap::new())),
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

/// Go's `String()` of a pipeline (approximate, used in `at <...>`).
fn pipe_str(p: &PipeNode) -> String {
    let mut s = String::new();
    if !p.decl.is_empty() {
        s.push_str(&p.decl.join(", "));
        s.push_str(if p.is_assign { " = " } else { " := " });
    }
    let cmds: Vec<String> = p.commands.iter().map(cmd_str).collect();
    s.push_str(&cmds.join(" | "));
    s
}

/// Go's position of an expression node: a field chain `.A.B` is positioned at `.B`.
fn expr_pos(e: &Expr) -> Pos {
    match e {
        Expr::Field(p, c) if c.len() > 1 => Pos::new(p.offset + 1 + c[0].len(), p.line),
        Expr::Variable(p, n, c) if !c.is_empty() => Pos::new(p.offset + n.len(), p.line),
        other => other.pos(),
    }
}

/// Go's `String()` of a command node.
fn cmd_str(c: &CommandNode) -> String {
    c.args.iter().map(expr_str).collect::<Vec<_>>().join(" ")
}

/// Go's `String()` of an expression node.
pub fn expr_str(e: &Expr) -> String {
    match e {
        Expr::Dot(_) => ".".into(),
        Expr::Field(_, c) => c.iter().map(|f| format!(".{f}")).collect(),
        Expr::Variable(_, n, c) => format!(
            "{n}{}",
            c.iter().map(|f| format!(".{f}")).collect::<String>()
        ),
        Expr::Identifier(_, n) => n.to_string(),
        Expr::String(_, s) => format!("{s:?}"),
        Expr::Number(_, Number::Int(i)) => i.to_string(),
        Expr::Number(_, Number::Uint(u)) => u.to_string(),
        Expr::Number(_, Number::Float(f)) => crate::gofloat::format_g64(*f),
        Expr::Bool(_, b) => b.to_string(),
        Expr::Nil(_) => "nil".into(),
        Expr::Pipe(_, p) => format!("({})", pipe_str(p)),
        Expr::Chain(_, inner, c) => {
            format!(
                "{}{}",
                expr_str(inner),
                c.iter().map(|f| format!(".{f}")).collect::<String>()
            )
        }
    }
}
