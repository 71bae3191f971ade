//! Go `text/template` rendering with Go struct semantics and Istio's function library.
//!
//! Templates are parsed once (per configuration snapshot) by a port of Go's
//! `text/template/parse` (`lex`, `parse`, `ast`); execution (`exec`) follows Go's `exec.go` over
//! a value model that keeps Go's distinctions: *missing* vs nil vs zero values, typed
//! Kubernetes structs and protobuf messages seen through their Go field names (driven by
//! [`crate::kube::schema`]), methods (`GetValue`, `String`, `GetX` getters), Go printing rules.
//!
//! Provides:
//! - [`Template::parse`] parses a template source; errors name the template and line
//!   (`template: NAME:LINE: ...`). Unknown function names and undeclared variables are parse
//!   errors, as in Go.
//! - [`Template::render`] executes it with [`TemplateData`]; errors are Go-shaped
//!   (`template: inject:LINE:COL: executing "inject" at <...>: ...`).
//!
//! Layout: `lex`/`parse`/`ast` (Go's lexer, parser and parse tree, with Go's messages), `value`
//! (the value model: lazy views over the pod/proto JSON, and the conversions, JSON encoding and
//! size guard every function family uses), `signature` (a function's Go parameter types and the
//! argument conversion against them, the table entry), `exec` (the executor), `reuse` (what a
//! top-level node rendered, replayed in a later render whose inputs to it are the same),
//! `funcs` (the function table), `builtins` (Go's builtin functions), `istio` (Istio's functions), `sprig`
//! (Sprig v3: every name parses; all but randomness, cryptography, the network and URLs are
//! implemented, the rest fail with `error calling X: not implemented by outrigger`), `dates`
//! (Sprig's date functions over Go's `time.Time`, layouts and zones, read from a [`Clock`]),
//! `printf` (`fmt.Sprintf`), `regexp` (Go's `regexp` behaviour for Sprig). Imports go one way: value <- signature/printf <- the families <-
//! the table <- exec (`tests/layering.rs` checks it).

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

/// Why a template failed, in Go's words.
#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    /// The text does not parse: `template: NAME:LINE: msg`.
    #[error("template: {template}:{line}: {msg}")]
    Parse {
        /// The template's name.
        template: String,
        /// 1-based line of the offending token.
        line: usize,
        /// Go's description (`unexpected "}" in operand`, `function "x" not defined`, ...).
        msg: String,
    },
    /// Execution failed; Go's text, which names the template, line, column and the action
    /// being executed (`template: inject:LINE:COL: executing "inject" at <...>: ...`).
    #[error("{0}")]
    Exec(String),
}

mod ast;
mod builtins;
mod dates;
mod digest;
mod exec;
mod funcs;
mod gopath;
mod gostr;
mod istio;
mod lex;
mod list;
mod mutation;
mod parse;
mod printf;
mod reads;
mod regexp;
mod regexp_syntax;
mod reuse;
mod semver;
mod signature;
mod sprig;
mod value;

use ast::ListNode;
pub use dates::Clock;
pub use reads::{FieldSet, Reads};

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_limits;
#[cfg(test)]
mod tests_reuse;

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
    /// What the functions `env` and `expandenv` read, instead of the process environment (a
    /// name absent from the map is an unset variable).
    pub env: &'a BTreeMap<String, String>,
    /// How `protoToJSON` writes a protobuf message (`.ProxyConfig`, `.MeshConfig` or one of their
    /// fields), given its full name and canonical proto-JSON: the rules are the caller's (the
    /// injector's are Istio's, which prune the proxy config's defaults).
    pub proto_json: fn(&str, &Value) -> String,
}

/// A parsed template, ready to execute many times.
#[derive(Debug)]
pub struct Template {
    name: String,
    /// The source text (error positions are offsets into it).
    source: String,
    /// Capacity hint for the output.
    source_len: usize,
    /// The tree set: the main body under `name`, every `define`/`block` under its own name.
    trees: HashMap<String, ListNode>,
    /// How many distinct field-chain prefixes its trees name ([`ast::Slots`]).
    chain_slots: usize,
    /// By [`ast::PipeNode::memo`] number: whether the pipelines of that text give the same value
    /// from the root every time in a render ([`exec::memo_pure`]).
    memo_pure: Vec<bool>,
    /// Whether the template calls `set`, `unset` or a `merge` function (which change maps in
    /// place): its renders then work on a mutable copy of `.Values`.
    mutates_maps: bool,
    /// Whether a render depends on its data alone (no clock, random or network function).
    deterministic: bool,
    /// What it can read of `.ObjectMeta` and `.Spec` ([`reads`]).
    reads: Reads,
    /// The JSON names of the `.ObjectMeta` and `.Spec` fields it can read (`None`: any).
    read_json: (Option<Vec<String>>, Option<Vec<String>>),
    /// Which top-level nodes a render may replay from an earlier render, and the states that
    /// remember them ([`reuse`]); `None` when none may (or the template changes maps).
    reuse: Option<reuse::Plan>,
}

impl Template {
    /// Parse `text` as the template called `name`, as Go's `text/template` does with Sprig's
    /// and Istio's functions.
    ///
    /// Errors are Go's, `template: NAME:LINE: ...`; a function name that is neither a Go
    /// builtin, a Sprig v3 function nor an Istio function is a parse error, as in Go.
    pub fn parse(name: &str, text: &str) -> Result<Template, TemplateError> {
        let parse::Trees {
            trees,
            chain_slots,
            memo_slots,
        } = parse::parse(name, text, &funcs::id)?;
        let memo_pure = exec::memo_pure(&trees, name, memo_slots);
        let calls = mutation::calls(trees.values());
        let (mutates_maps, deterministic) = (
            mutation::mutates_maps(&calls),
            mutation::deterministic(&calls),
        );
        let reads = reads::reads(name, &trees);
        let read_json = (
            reads::json_names("metav1.ObjectMeta", &reads.object_meta),
            reads::json_names("corev1.PodSpec", &reads.spec),
        );
        let reuse = if mutates_maps {
            None
        } else {
            reuse::plan(name, &trees)
        };
        Ok(Template {
            name: name.to_string(),
            source: text.to_string(),
            source_len: text.len(),
            trees,
            chain_slots,
            memo_pure,
            mutates_maps,
            deterministic,
            reads,
            read_json,
            reuse,
        })
    }

    /// The main body.
    fn root(&self) -> &ListNode {
        static EMPTY: ListNode = ListNode {
            pos: ast::Pos { offset: 0, line: 1 },
            nodes: Vec::new(),
        };
        self.trees.get(&self.name).unwrap_or(&EMPTY)
    }

    /// The Sprig functions this template calls that outrigger does not implement, with the
    /// 1-based line of each call, in line order (what the injector reports of a configuration).
    pub fn unimplemented_calls(&self) -> Vec<(String, usize)> {
        let mut found: Vec<(String, usize)> = mutation::calls(self.trees.values())
            .into_iter()
            .filter(|(name, _)| funcs::is_unimplemented(name))
            .map(|(name, line)| (name.to_string(), line))
            .collect();
        found.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
        found
    }

    /// Whether [`Template::render`] gives the same text for the same [`TemplateData`] every
    /// time: true unless the template calls a clock, random, key-generating or network function
    /// (`now`, `randAlphaNum`, `uuidv4`, `genCA`, `getHostByName`, ...), so its renders may be
    /// remembered by their data.
    pub fn is_deterministic(&self) -> bool {
        self.deterministic
    }

    /// What the template can read of `.ObjectMeta` and `.Spec`, from its parse tree
    /// (conservative: a field used in any way counts as read).
    pub fn reads(&self) -> &Reads {
        &self.reads
    }

    /// The JSON names of the `.ObjectMeta` fields (`.0`) and `.Spec` fields (`.1`) the template
    /// can read ([`Template::reads`]); `None` where it can read any. Renders of data that agree
    /// on these fields (and on the rest of [`TemplateData`]) give the same text.
    pub fn read_json_fields(&self) -> (Option<&[String]>, Option<&[String]>) {
        (self.read_json.0.as_deref(), self.read_json.1.as_deref())
    }

    /// Segments replayed from earlier renders so far ([`reuse`]; for tests).
    #[cfg(test)]
    pub(crate) fn reuse_hits(&self) -> u64 {
        self.reuse.as_ref().map_or(0, reuse::Plan::hits)
    }

    /// The template's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Execute the template with `data`, returning the rendered text.
    ///
    /// Execution errors are Go-shaped: `template: inject:LINE:COL: executing "inject" at <...>: ...`.
    pub fn render(&self, data: &TemplateData<'_>) -> Result<String, TemplateError> {
        self.render_at(data, &Clock::system())
    }

    /// [`Template::render`] with `clock` as Sprig's clock and local zone (`now`, `date`, `ago`,
    /// `toDate`, `metav1.Time` values): a fixed one in tests.
    pub fn render_at(
        &self,
        data: &TemplateData<'_>,
        clock: &Clock,
    ) -> Result<String, TemplateError> {
        crate::go::zone::with_local(clock.local(), || exec::Exec::run(self, data, clock))
            .map_err(TemplateError::Exec)
    }

    /// Execute the template over a generic JSON value, as Go's `text/template` executes over
    /// the result of `json.Unmarshal` into `interface{}` (objects are `map[string]interface{}`,
    /// arrays `[]interface{}`, numbers `float64`, `null` a nil interface). Istio's own data is
    /// typed ([`Template::render`]); this entry point serves users' generic data and lets the
    /// engine be compared with Go's on arbitrary values.
    pub fn render_json(&self, data: &Value) -> Result<String, TemplateError> {
        self.render_json_at(data, &Clock::system())
    }

    /// [`Template::render_json`] with `clock` as Sprig's clock and local zone.
    pub fn render_json_at(&self, data: &Value, clock: &Clock) -> Result<String, TemplateError> {
        crate::go::zone::with_local(clock.local(), || {
            exec::Exec::run_json(self, data, true, clock)
        })
        .map_err(TemplateError::Exec)
    }

    /// Like [`Template::render_json`], but the JSON is viewed in place, as Istio's `.Values`
    /// is during injection: the same results, except that `set`, `unset` and `merge` on a map
    /// of the data return an updated copy instead of changing the data.
    pub fn render_json_view(&self, data: &Value) -> Result<String, TemplateError> {
        exec::Exec::run_json(self, data, false, &Clock::system()).map_err(TemplateError::Exec)
    }
}
