//! Go `text/template` rendering with Go struct semantics and Istio's function library.
//!
//! Templates are parsed once (per configuration snapshot) with gotmpl's parser; execution is
//! ours, over a value model that keeps Go's distinctions: *missing* vs nil vs zero values, typed
//! Kubernetes structs and protobuf messages seen through their Go field names (driven by
//! [`crate::schema`]), methods (`GetValue`, `String`, `GetX` getters), Go printing rules.
//!
//! CONTRACT (owned by the template-engine work stream):
//! - [`Template::parse`] parses a template source; errors name the template and line
//!   (`template: NAME:LINE: ...`). Unknown function names and undeclared variables are parse
//!   errors, as in Go.
//! - [`Template::render`] executes it with [`TemplateData`]; errors are Go-shaped
//!   (`template: inject:LINE:COL: executing "inject" at <...>: ...`).
//!
//! Layout: `value` (the value model: lazy views over the pod/proto JSON), `exec` (the
//! executor), `funcs` (argument conversion against Go parameter types, Go builtins, Istio
//! functions), `sprig` (Sprig v3: every name parses, the common ones are implemented, the rest
//! fail with `error calling X: not implemented by outrigger`), `printf` (`fmt.Sprintf`), `gofmt`
//! (float `%v`, `strconv.Quote`, `time.Duration`).
//!
//! gotmpl 0.6.1 trims the text *after* `{{- /* ... */}}` (Go trims only before): such comments
//! are rewritten before parsing into the equivalent empty action `{{- ""   }}`, padded so that
//! byte offsets and line numbers stay those of the original source.

use std::collections::HashMap;

use gotmpl::parse::{Expr, ListNode, Node, Parser, PipeNode};
use serde_json::Value;

use crate::{Error, Result};

mod digest;
mod exec;
mod funcs;
mod gofmt;
mod gopath;
mod printf;
mod sprig;
mod structure;
mod value;

#[cfg(test)]
mod tests;

/// The template root object (Istio's `SidecarTemplateData`), in Go field order.
///
/// Kubernetes objects and protobuf messages are JSON trees: `object_meta` and `spec` use
/// Kubernetes JSON names (typed as `metav1.ObjectMeta` / `corev1.PodSpec`), `proxy_config` and
/// `mesh_config` are canonical proto-JSON (camelCase names, enums as names, durations as
/// strings, wrappers as bare values; typed as Istio's `ProxyConfig` / `MeshConfig`), `values` is the
/// generic values tree (numbers are float64 to templates, `null` is a nil interface).
#[derive(Debug, Clone, Copy)]
pub struct TemplateData<'a> {
    /// `.TypeMeta.Kind`.
    pub kind: &'a str,
    /// `.TypeMeta.APIVersion`.
    pub api_version: &'a str,
    /// `.DeploymentMeta.Name`.
    pub deployment_name: &'a str,
    /// `.DeploymentMeta.Namespace`.
    pub deployment_namespace: &'a str,
    /// `.ObjectMeta` (JSON of `metav1.ObjectMeta`; `Value::Null` means zero value).
    pub object_meta: &'a Value,
    /// `.Spec` (JSON of `corev1.PodSpec`).
    pub spec: &'a Value,
    /// `.ProxyConfig` (canonical proto-JSON of `istio.mesh.v1alpha1.ProxyConfig`).
    pub proxy_config: &'a Value,
    /// `.MeshConfig` (canonical proto-JSON of `istio.mesh.v1alpha1.MeshConfig`).
    pub mesh_config: &'a Value,
    /// `.Values` (generic map).
    pub values: &'a Value,
    /// `.Revision`.
    pub revision: &'a str,
    /// `.NativeSidecars`.
    pub native_sidecars: bool,
    /// `.ProxyImage`.
    pub proxy_image: &'a str,
    /// `.ProxyInitImage`.
    pub proxy_init_image: &'a str,
    /// `.ProxyUID`.
    pub proxy_uid: i64,
    /// `.ProxyGID`.
    pub proxy_gid: i64,
    /// `.InboundTrafficPolicyMode` (`localhost` or `passthrough`).
    pub inbound_traffic_policy_mode: &'a str,
    /// `.CompliancePolicy`.
    pub compliance_policy: &'a str,
}

/// A parsed template, ready to execute many times.
#[derive(Debug)]
pub struct Template {
    name: String,
    /// Source after the comment-trim workaround (same length and line structure as the input).
    source: String,
    /// The main body.
    root: ListNode,
    /// `define`d templates by name.
    defines: HashMap<String, ListNode>,
}

impl Template {
    /// Parse `text` as the template called `name`.
    ///
    /// Errors are `template: NAME:LINE: ...`; a function name that is neither a Go builtin, a
    /// Sprig v3 function nor an Istio function is a parse error, as in Go.
    pub fn parse(name: &str, text: &str) -> Result<Template> {
        let source = fix_comment_trim(text);
        structure::check(name, &source)?;
        let parser =
            Parser::with_name(Some(name), &source, "{{", "}}").map_err(|e| parse_error(name, e))?;
        let (root, defs) = parser.parse().map_err(|e| parse_error(name, e))?;
        let mut defines = HashMap::new();
        for d in defs {
            check_list(name, &d.body)?;
            defines.insert(d.name.to_string(), d.body);
        }
        check_list(name, &root)?;
        Ok(Template {
            name: name.to_string(),
            source,
            root,
            defines,
        })
    }

    /// The template's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Execute the template with `data`, returning the rendered text.
    ///
    /// Execution errors are Go-shaped: `template: inject:LINE:COL: executing "inject" at <...>: ...`.
    pub fn render(&self, data: &TemplateData<'_>) -> Result<String> {
        exec::Exec::run(self, data).map_err(Error::Template)
    }

    /// Execute the template over a generic JSON value, as Go's `text/template` executes over
    /// the result of `json.Unmarshal` into `interface{}` (objects are `map[string]interface{}`,
    /// arrays `[]interface{}`, numbers `float64`, `null` a nil interface). Istio's own data is
    /// typed ([`Template::render`]); this entry point serves users' generic data and lets the
    /// engine be compared with Go's on arbitrary values.
    pub fn render_json(&self, data: &Value) -> Result<String> {
        exec::Exec::run_json(self, data).map_err(Error::Template)
    }
}

fn parse_error(name: &str, e: gotmpl::TemplateError) -> Error {
    match e {
        gotmpl::TemplateError::Parse { line, message, .. }
        | gotmpl::TemplateError::Lex { line, message, .. } => {
            Error::Template(format!("template: {name}:{line}: {message}"))
        }
        other => Error::Template(format!("template: {name}: {other}")),
    }
}

/// Work around gotmpl 0.6.1 trimming the text after `{{- /* ... */}}` (Go trims only before):
/// such a comment is rewritten into the equivalent empty action `{{- ""   }}`, padded so that
/// byte offsets and line numbers are unchanged.
fn fix_comment_trim(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    let mut copied = 0;
    while let Some(off) = src[i..].find("{{-") {
        let open = i + off;
        let mut j = open + 3;
        i = open + 2;
        if !b
            .get(j)
            .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\r' | b'\n'))
        {
            continue;
        }
        while b
            .get(j)
            .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\r' | b'\n'))
        {
            j += 1;
        }
        if !src[j..].starts_with("/*") {
            continue;
        }
        let Some(end) = src[j + 2..].find("*/").map(|e| j + 2 + e + 2) else {
            break;
        };
        let mut k = end;
        while b
            .get(k)
            .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\r' | b'\n'))
        {
            k += 1;
        }
        let close_trim = k > end && src[k..].starts_with("-}}");
        if !close_trim && src[k..].starts_with("}}") {
            out.push_str(&src[copied..j]);
            out.push_str("\"\"");
            for &c in &b[j + 2..end] {
                out.push(if c == b'\n' { '\n' } else { ' ' });
            }
            copied = end;
        }
        i = end;
    }
    out.push_str(&src[copied..]);
    out
}

/// Parse-time checks Go performs that gotmpl does not: every function must be defined and every
/// variable declared in scope (`template: NAME:LINE: undefined variable "$x"`).
struct Checker<'n> {
    name: &'n str,
    vars: Vec<String>,
}

fn check_list(name: &str, list: &ListNode) -> Result<()> {
    Checker {
        name,
        vars: vec!["$".into()],
    }
    .list(list)
}

impl Checker<'_> {
    fn err(&self, line: usize, msg: String) -> Error {
        Error::Template(format!("template: {}:{line}: {msg}", self.name))
    }

    fn list(&mut self, list: &ListNode) -> Result<()> {
        list.nodes.iter().try_for_each(|n| self.node(n))
    }

    fn node(&mut self, n: &Node) -> Result<()> {
        match n {
            Node::List(l) => self.list(l),
            Node::Text(_) | Node::Break(_) | Node::Continue(_) => Ok(()),
            Node::Action(a) => self.pipe(&a.pipe),
            Node::If(b) | Node::With(b) | Node::Range(b) => {
                let mark = self.vars.len();
                self.pipe(&b.pipe)?;
                self.list(&b.body)?;
                if let Some(e) = &b.else_body {
                    self.list(e)?;
                }
                self.vars.truncate(mark);
                Ok(())
            }
            Node::Template(t) => t.pipe.as_ref().map_or(Ok(()), |p| self.pipe(p)),
            Node::Define(d) => {
                let saved = std::mem::replace(&mut self.vars, vec!["$".into()]);
                let r = self.list(&d.body);
                self.vars = saved;
                r
            }
        }
    }

    fn pipe(&mut self, p: &PipeNode) -> Result<()> {
        if p.is_assign {
            if let Some(v) = p
                .decl
                .iter()
                .find(|v| !self.vars.iter().any(|x| x == v.as_str()))
            {
                return Err(self.err(p.pos.line, format!("undefined variable {:?}", v.as_str())));
            }
        }
        for e in p.commands.iter().flat_map(|c| c.args.iter()) {
            self.expr(e)?;
        }
        if !p.is_assign {
            self.vars.extend(p.decl.iter().map(|v| v.to_string()));
        }
        Ok(())
    }

    fn expr(&mut self, e: &Expr) -> Result<()> {
        match e {
            Expr::Identifier(pos, f) if !funcs::is_defined(f) => {
                Err(self.err(pos.line, format!("function {:?} not defined", f.as_str())))
            }
            Expr::Variable(pos, v, _) if !self.vars.iter().any(|x| x == v.as_str()) => {
                Err(self.err(pos.line, format!("undefined variable {:?}", v.as_str())))
            }
            Expr::Pipe(_, p) => {
                // Declarations inside a parenthesised pipeline stay visible, as in Go.
                self.pipe(p)
            }
            Expr::Chain(_, inner, _) => self.expr(inner),
            _ => Ok(()),
        }
    }
}
