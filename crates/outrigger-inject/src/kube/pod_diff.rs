//! The one field-by-field comparison of two pods (or parts of them): `drift` compares a pod with
//! what injection would give it ([`crate::drift`]), `preview` a pod injected under two
//! configurations ([`crate::preview`]). Both name a field the same way
//! (`spec.containers[istio-proxy].image`: objects by key, lists of named objects by name, other
//! lists by index) and say what each difference comes from ([`cause`]).

use std::collections::BTreeSet;

use serde_json::Value;

use super::names::PROXY_CONTAINER;
use super::pod::container_name;

/// One side of a compared node: its value (`None`: absent) and, when the caller asked for them,
/// its JSON Pointer.
#[derive(Debug, Clone, Copy)]
pub struct Side<'a> {
    /// The value (`None`: absent on this side).
    pub value: Option<&'a Value>,
    /// Its JSON Pointer, when pointers are followed (`None` otherwise or when absent).
    pointer: Option<&'a str>,
}

/// One differing leaf: where, and each side (value and JSON Pointer).
#[derive(Debug, Clone)]
pub struct Leaf<'a> {
    /// Display path (`spec.containers[istio-proxy].image`).
    pub path: String,
    /// The first pod's value (`None`: absent).
    pub a: Option<&'a Value>,
    /// The second pod's value (`None`: absent).
    pub b: Option<&'a Value>,
    /// JSON Pointer of the field in the first pod (`None`: absent, or pointers not followed).
    pub a_pointer: Option<String>,
    /// JSON Pointer of the field in the second pod (`None`: absent, or pointers not followed).
    pub b_pointer: Option<String>,
}

/// How a list of named elements whose elements are equal but in another order counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reorder {
    /// One difference whenever the order of names differs (`drift`).
    AnyOrder,
    /// One difference only when both lists hold the same names, once each (`preview`).
    SameNames,
}

/// The comparison's settings.
#[derive(Debug, Clone, Copy)]
pub struct Compare {
    /// How a reordered list of named elements counts.
    pub reorder: Reorder,
}

/// A node of the comparison: its display path and its two sides, each with its JSON Pointer
/// when followed.
struct Node<'a> {
    path: String,
    a: Option<&'a Value>,
    b: Option<&'a Value>,
    pa: Option<String>,
    pb: Option<String>,
}

/// RFC 6901 escaping of one reference token.
pub fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// A side of a root of the comparison: `value` at JSON Pointer `pointer` (`None`: pointers are
/// not followed).
pub fn side<'a>(value: Option<&'a Value>, pointer: Option<&'a str>) -> Side<'a> {
    Side { value, pointer }
}

/// The leaf differences of `a` and `b` under display path `path`, each handed to `leaf` in
/// order: objects by key, lists of named objects by name (a list of the same elements in
/// another order is one difference, as `settings` says), other lists of the same length by
/// index, anything else as one difference. Equal subtrees are skipped before their paths are
/// built. Returns the number of leaves handed over.
pub fn leaves<'a>(
    path: String,
    a: Side<'a>,
    b: Side<'a>,
    settings: Compare,
    leaf: &mut dyn FnMut(Leaf<'a>),
) -> usize {
    walk(
        Node {
            path,
            a: a.value,
            b: b.value,
            pa: a.value.and(a.pointer).map(str::to_string),
            pb: b.value.and(b.pointer).map(str::to_string),
        },
        settings,
        leaf,
    )
}

/// Both present and equal: a subtree that yields no difference.
fn same(a: Option<&Value>, b: Option<&Value>) -> bool {
    a.is_some() && a == b
}

/// A non-empty list whose every element has a string `name`.
fn named_list(l: &[Value]) -> bool {
    !l.is_empty()
        && l.iter()
            .all(|x| x.get("name").and_then(Value::as_str).is_some())
}

fn walk<'a>(n: Node<'a>, settings: Compare, leaf: &mut dyn FnMut(Leaf<'a>)) -> usize {
    let child = |parent: &Option<String>, value: Option<&Value>, tail: &str| {
        value.and(parent.as_ref()).map(|p| format!("{p}/{tail}"))
    };
    match (n.a, n.b) {
        (Some(Value::Object(am)), Some(Value::Object(bm))) => {
            let keys: BTreeSet<&String> = am.keys().chain(bm.keys()).collect();
            let mut count = 0;
            for k in keys {
                let (a, b) = (am.get(k), bm.get(k));
                if same(a, b) {
                    continue;
                }
                let t = escape(k);
                let node = Node {
                    path: format!("{}.{k}", n.path),
                    a,
                    b,
                    pa: child(&n.pa, a, &t),
                    pb: child(&n.pb, b, &t),
                };
                count += walk(node, settings, leaf);
            }
            count
        }
        (Some(Value::Array(al)), Some(Value::Array(bl))) if named_list(al) && named_list(bl) => {
            let same_order = al
                .iter()
                .map(container_name)
                .eq(bl.iter().map(container_name));
            let mut names: Vec<&str> = al.iter().map(container_name).collect();
            for name in bl.iter().map(container_name) {
                if !names.contains(&name) {
                    names.push(name);
                }
            }
            let same_set = names.len() == al.len() && names.len() == bl.len();
            let mut count = 0;
            for name in names {
                let find = |l: &[Value]| l.iter().position(|x| container_name(x) == name);
                let (ia, ib) = (find(al), find(bl));
                let (a, b) = (ia.map(|i| &al[i]), ib.map(|i| &bl[i]));
                if same(a, b) {
                    continue;
                }
                let node = Node {
                    path: format!("{}[{name}]", n.path),
                    a,
                    b,
                    pa: ia.and_then(|i| child(&n.pa, a, &i.to_string())),
                    pb: ib.and_then(|i| child(&n.pb, b, &i.to_string())),
                };
                count += walk(node, settings, leaf);
            }
            let counts = match settings.reorder {
                Reorder::AnyOrder => true,
                Reorder::SameNames => same_set,
            };
            if count == 0 && counts && !same_order {
                return emit(n, leaf);
            }
            count
        }
        (Some(Value::Array(al)), Some(Value::Array(bl))) if al.len() == bl.len() => {
            let mut count = 0;
            for (i, (x, y)) in al.iter().zip(bl).enumerate() {
                if x == y {
                    continue;
                }
                let t = i.to_string();
                let node = Node {
                    path: format!("{}[{i}]", n.path),
                    a: Some(x),
                    b: Some(y),
                    pa: child(&n.pa, Some(x), &t),
                    pb: child(&n.pb, Some(y), &t),
                };
                count += walk(node, settings, leaf);
            }
            count
        }
        (x, y) if x != y => emit(n, leaf),
        _ => 0,
    }
}

fn emit<'a>(n: Node<'a>, leaf: &mut dyn FnMut(Leaf<'a>)) -> usize {
    leaf(Leaf {
        path: n.path,
        a: n.a,
        b: n.b,
        a_pointer: n.pa,
        b_pointer: n.pb,
    });
    1
}

/// What a difference at `path` comes from, where the path tells: `proxy image` (an image),
/// `native sidecars` (the proxy container present on one side only, in the other list),
/// `revision` (the `istio.io/rev` label), else `template`.
pub fn cause(path: &str, one_side_only: bool) -> &'static str {
    let proxy = format!("[{PROXY_CONTAINER}]");
    if path.ends_with(".image") {
        "proxy image"
    } else if one_side_only && path.ends_with(&proxy) && path.matches('.').count() == 1 {
        "native sidecars"
    } else if path.ends_with("[istio.io/rev]") {
        "revision"
    } else {
        "template"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn collect(a: &Value, b: &Value, pointers: bool, reorder: Reorder) -> Vec<String> {
        let mut out = Vec::new();
        let p = pointers.then_some("/spec");
        leaves(
            "spec".into(),
            side(Some(a), p),
            side(Some(b), p),
            Compare { reorder },
            &mut |l| {
                out.push(format!(
                    "{} {:?} {:?} {:?} {:?}",
                    l.path, l.a_pointer, l.b_pointer, l.a, l.b
                ))
            },
        );
        out
    }

    /// Named lists by name, other lists by index, pointers to each side's position.
    #[test]
    fn leaves_are_named_by_name_and_pointed_at_on_each_side() {
        let a = json!({"containers": [{"name": "app", "image": "a:1"},
                                      {"name": "istio-proxy", "args": ["x", "y"]}]});
        let b = json!({"containers": [{"name": "istio-proxy", "args": ["x", "z"]},
                                      {"name": "app", "image": "a:2"}]});
        assert_eq!(
            collect(&a, &b, true, Reorder::SameNames),
            [
                "spec.containers[app].image Some(\"/spec/containers/0/image\") \
                 Some(\"/spec/containers/1/image\") Some(String(\"a:1\")) Some(String(\"a:2\"))",
                "spec.containers[istio-proxy].args[1] Some(\"/spec/containers/1/args/1\") \
                 Some(\"/spec/containers/0/args/1\") Some(String(\"y\")) Some(String(\"z\"))",
            ]
        );
        let without = collect(&a, &b, false, Reorder::SameNames);
        assert!(without[0].starts_with("spec.containers[app].image None None"));
    }

    /// A reordered list is one difference; with duplicate names only when any order counts.
    #[test]
    fn a_reordered_list_is_one_difference_as_the_caller_counts_it() {
        let a = json!({"env": [{"name": "A"}, {"name": "B"}]});
        let b = json!({"env": [{"name": "B"}, {"name": "A"}]});
        for r in [Reorder::AnyOrder, Reorder::SameNames] {
            let d = collect(&a, &b, false, r);
            assert_eq!(d.len(), 1, "{d:?}");
            assert!(d[0].starts_with("spec.env None None"), "{d:?}");
        }
        let twice = json!({"env": [{"name": "A"}, {"name": "A"}]});
        let once = json!({"env": [{"name": "A"}]});
        assert_eq!(collect(&twice, &once, false, Reorder::AnyOrder).len(), 1);
        assert!(collect(&twice, &once, false, Reorder::SameNames).is_empty());
        assert!(collect(&a, &a, true, Reorder::AnyOrder).is_empty());
    }

    #[test]
    fn causes_follow_the_path() {
        assert_eq!(
            cause("spec.containers[istio-proxy].image", false),
            "proxy image"
        );
        assert_eq!(
            cause("spec.initContainers[istio-proxy]", true),
            "native sidecars"
        );
        assert_eq!(cause("spec.initContainers[istio-proxy]", false), "template");
        assert_eq!(cause("metadata.labels[istio.io/rev]", false), "revision");
        assert_eq!(cause("spec.volumes[x]", true), "template");
    }
}
