//! Which fields of `.ObjectMeta` and `.Spec` a template can read, found from its parse tree
//! alone, so that the render memo (`render::memo`) can key a render by those fields only: pods of
//! one workload differ in their names, uids and nodes, which Istio's templates never read, and
//! then share one render.
//!
//! The analysis is conservative: a field counts as read when any field chain from the root
//! names it (`.ObjectMeta.Labels`, `$.Spec.Containers`, `.ObjectMeta.GetAnnotations`), and the
//! whole object counts as read when it is used any other way (`.ObjectMeta` given to a function,
//! a variable or a `with`; the root `.` or `$` used bare; a `{{template}}` call given the
//! root). The one exception is Istio's `annotation .ObjectMeta KEY DEFAULT`, which reads the
//! annotations alone. The root is the dot of the main body outside `with` and `range` bodies
//! (which rebind it), and of a `{{define}}`d body called with the root (`{{template "x" .}}`,
//! read as such); `$` is taken as the root everywhere. A defined body's dot is otherwise what
//! its call passes, which the caller's analysis covers.

use std::collections::{BTreeSet, HashMap, HashSet};

use super::ast::{Expr, ListNode, Node, PipeNode};

/// The fields of one root object a template can read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldSet {
    /// Any of them (the object is used whole).
    All,
    /// Only these, by Go field name.
    Fields(BTreeSet<String>),
}

impl FieldSet {
    fn add(&mut self, go: &str) {
        if let FieldSet::Fields(s) = self {
            s.insert(go.to_string());
        }
    }
}

/// What a template can read of the pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reads {
    /// Of `.ObjectMeta`.
    pub object_meta: FieldSet,
    /// Of `.Spec`.
    pub spec: FieldSet,
}

impl Reads {
    fn all(&mut self) {
        self.object_meta = FieldSet::All;
        self.spec = FieldSet::All;
    }

    /// The fields named by a chain from the root: `ObjectMeta` or `Spec` and the next field.
    fn chain(&mut self, fields: &[String]) {
        let (Some(head), next) = (fields.first(), fields.get(1)) else {
            // The root itself.
            self.all();
            return;
        };
        let set = match head.as_str() {
            "ObjectMeta" => &mut self.object_meta,
            "Spec" => &mut self.spec,
            _ => return,
        };
        match next {
            Some(f) => set.add(f),
            None => *set = FieldSet::All,
        }
    }
}

/// What the template whose trees are `trees` (the main body under `main`) can read.
pub(super) fn reads(main: &str, trees: &HashMap<String, ListNode>) -> Reads {
    let mut w = Walk {
        trees,
        rooted: HashSet::new(),
        r: Reads {
            object_meta: FieldSet::Fields(BTreeSet::new()),
            spec: FieldSet::Fields(BTreeSet::new()),
        },
    };
    for (name, tree) in trees {
        if name == main {
            w.rooted.insert(name.clone());
        }
        w.list(tree, name == main);
    }
    w.r
}

/// The walk: the trees, those already read with the root as their dot, what is read so far.
struct Walk<'a> {
    trees: &'a HashMap<String, ListNode>,
    rooted: HashSet<String>,
    r: Reads,
}

impl Walk<'_> {
    /// A list whose dot is the root (`root`) or not.
    fn list(&mut self, l: &ListNode, root: bool) {
        for n in &l.nodes {
            crate::go::stack::grow(|| self.node(n, root));
        }
    }

    fn node(&mut self, n: &Node, root: bool) {
        match n {
            Node::Action(a) => pipe(&a.pipe, root, &mut self.r),
            Node::If(b) => {
                pipe(&b.pipe, root, &mut self.r);
                self.list(&b.body, root);
                if let Some(e) = &b.else_body {
                    self.list(e, root);
                }
            }
            Node::Range(b) | Node::With(b) => {
                pipe(&b.pipe, root, &mut self.r);
                self.list(&b.body, false);
                if let Some(e) = &b.else_body {
                    self.list(e, root);
                }
            }
            // `{{template "x" .}}` with the root as dot: what "x" reads of it (its body read
            // once so).
            Node::Template(t) if t.pipe.as_ref().is_some_and(|p| is_root(p, root)) => {
                if self.rooted.insert(t.name.clone()) {
                    if let Some(body) = self.trees.get(&t.name) {
                        self.list(body, true);
                    }
                }
            }
            Node::Template(t) => {
                if let Some(p) = &t.pipe {
                    pipe(p, root, &mut self.r);
                }
            }
            Node::Text(_) | Node::Break(_) | Node::Continue(_) => {}
        }
    }
}

/// Whether pipeline `p` is the root alone (`.` where dot is the root, or `$`).
fn is_root(p: &PipeNode, root: bool) -> bool {
    p.decl.is_empty()
        && matches!(p.commands.as_slice(), [c] if matches!(c.args.as_slice(),
            [Expr::Dot(_)] if root) || matches!(c.args.as_slice(),
            [Expr::Variable(_, v, f, _)] if v == "$" && f.is_empty()))
}

fn pipe(p: &PipeNode, root: bool, r: &mut Reads) {
    // `$` given another value: what reads through it can no longer be told.
    if p.decl.iter().any(|(_, v)| v == "$") {
        r.all();
    }
    for c in &p.commands {
        let annotation =
            matches!(c.args.first(), Some(Expr::Identifier(_, f, _)) if f == "annotation");
        for (i, a) in c.args.iter().enumerate() {
            if annotation && i == 1 && is_meta(a, root) {
                r.object_meta.add("Annotations");
                continue;
            }
            expr(a, root, r);
        }
    }
}

/// Whether `e` is `.ObjectMeta` (or `$.ObjectMeta`) of the root.
fn is_meta(e: &Expr, root: bool) -> bool {
    match e {
        Expr::Field(_, f, _) => root && f.len() == 1 && f[0] == "ObjectMeta",
        Expr::Variable(_, v, f, _) => v == "$" && f.len() == 1 && f[0] == "ObjectMeta",
        _ => false,
    }
}

fn expr(e: &Expr, root: bool, r: &mut Reads) {
    match e {
        Expr::Dot(_) if root => r.all(),
        Expr::Field(_, f, _) if root => r.chain(f),
        // `$` is the root in the main body, whatever dot is; in a defined body it is that body's
        // dot, taken as the root too (conservative: it reads less).
        Expr::Variable(_, v, f, _) if v == "$" => r.chain(f),
        // Nested parentheses nest pipelines as deep as the parser allows (10,000, as Go).
        Expr::Pipe(_, p) => crate::go::stack::grow(|| pipe(p, root, r)),
        Expr::Chain(_, inner, fields) => match inner.as_ref() {
            Expr::Dot(_) if root => r.chain(fields),
            inner => crate::go::stack::grow(|| expr(inner, root, r)),
        },
        _ => {}
    }
}

/// The JSON names of the fields of Kubernetes struct `ty` that `set` names (a Go field name, or
/// a `GetX` accessor of field `X`): `None` when the set is [`FieldSet::All`] or names something
/// else (a method), which reads the object whole.
pub(crate) fn json_names(ty: &str, set: &FieldSet) -> Option<Vec<String>> {
    let FieldSet::Fields(go) = set else {
        return None;
    };
    let st = crate::kube::schema::k8s().structs.get(ty)?;
    go.iter()
        .map(|g| {
            st.field_by_go(g)
                .or_else(|| g.strip_prefix("Get").and_then(|f| st.field_by_go(f)))
                .filter(|f| !f.embedded)
                .and_then(|f| f.json.clone())
                .filter(|j| !j.is_empty())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::Template;
    use super::*;

    fn reads_of(src: &str) -> Reads {
        Template::parse("t", src).expect("parse").reads().clone()
    }

    fn fields(names: &[&str]) -> FieldSet {
        FieldSet::Fields(names.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn field_chains_name_what_is_read() {
        let r = reads_of(
            "{{ .ObjectMeta.Labels.app }}{{ annotation .ObjectMeta `x` `d` }}\
             {{ range .Spec.Containers }}{{ .Name }}{{ $.Spec.HostNetwork }}{{ end }}\
             {{ with .Spec.InitContainers }}{{ . }}{{ else }}{{ .ObjectMeta.GetName }}{{ end }}",
        );
        assert_eq!(r.object_meta, fields(&["Annotations", "GetName", "Labels"]));
        assert_eq!(
            r.spec,
            fields(&["Containers", "HostNetwork", "InitContainers"])
        );
    }

    #[test]
    fn whole_uses_read_everything() {
        for src in [
            "{{ toJson . }}",
            "{{ $x := .ObjectMeta }}{{ $x.Name }}",
            "{{ with .ObjectMeta }}{{ .Name }}{{ end }}",
            "{{ (.ObjectMeta).Name }}",
            "{{ template \"x\" .Spec }}{{ define \"x\" }}{{ $.ObjectMeta }}{{ end }}",
            "{{ template \"x\" . }}{{ define \"x\" }}{{ toJson . }}{{ end }}",
            "{{ .ObjectMeta | toJson }}",
            "{{ with .Spec.Containers }}{{ toJson $ }}{{ end }}",
        ] {
            assert_eq!(reads_of(src).object_meta, FieldSet::All, "{src}");
        }
        assert_eq!(reads_of("{{ toJson .Spec }}").spec, FieldSet::All);
        assert_eq!(
            reads_of("{{ toJson .Spec }}").object_meta,
            fields(&[]),
            "the spec whole is not the metadata"
        );
    }

    #[test]
    fn a_defined_body_called_with_the_root_is_read_as_the_root() {
        let r = reads_of(
            "{{ template \"x\" . }}{{ template \"x\" $ }}{{ template \"y\" .Spec.Containers }}\
             {{ define \"x\" }}{{ .ObjectMeta.Labels }}{{ template \"x\" . }}{{ end }}\
             {{ define \"y\" }}{{ range . }}{{ .Name }}{{ end }}{{ end }}",
        );
        assert_eq!(r.object_meta, fields(&["Labels"]));
        assert_eq!(r.spec, fields(&["Containers"]));
    }

    #[test]
    fn dot_rebound_by_with_and_range_is_not_the_root() {
        let r = reads_of("{{ range .Spec.Containers }}{{ .Name }}{{ .ObjectMeta }}{{ end }}");
        assert_eq!(r.object_meta, fields(&[]));
        assert_eq!(r.spec, fields(&["Containers"]));
    }
}
