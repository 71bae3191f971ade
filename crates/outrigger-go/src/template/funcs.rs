//! The function table: every name a template may call (Go's builtins, Sprig v3 with the date
//! functions, Istio's functions, in Go's precedence), whether it is implemented and pure, and
//! the environment hooks (`env`, `expandenv`) the executor runs itself.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use super::value::str_of;
use super::value::V;
use super::{builtins, dates, istio, sprig};

type R<T> = Result<T, String>;

pub use super::signature::{convert, FuncDef, Table, P};

/// Is `name` a Sprig function outrigger parses but does not implement?
pub fn is_unimplemented(name: &str) -> bool {
    table().get(name).is_some_and(|d| !d.implemented)
}

/// Is every call of `name` a function of its arguments alone (with the template's environment
/// map)? False for the functions that read the clock and for the Sprig names outrigger does not
/// implement (randomness, keys, the network: none of them would be).
pub fn is_pure(name: &str) -> bool {
    !super::dates::reads_clock(name) && !is_unimplemented(name)
}

fn table() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(build)
}

/// How the executor runs a function: the special forms it evaluates itself, the functions it
/// hands the render's environment, clock or protobuf encoder, and the plain table entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `and`: evaluates its arguments lazily.
    And,
    /// `or`: evaluates its arguments lazily.
    Or,
    /// `call`: is handed the callee's name for its error.
    Call,
    /// `env`, `expandenv`: run over the render's environment ([`call_env`]).
    Env,
    /// A function of the clock ([`dates::call_clock`]).
    Clock,
    /// `protoToJSON`: runs the render's encoder ([`istio::call_proto_json`]).
    ProtoJson,
    /// Any other: the table entry's implementation.
    Plain,
}

/// A function name resolved once, when a template is parsed, so that a call does not look the
/// name up again ([`id`], [`by_id`]).
#[derive(Clone, Copy)]
pub struct Resolved {
    /// The function's name.
    pub name: &'static str,
    /// The table entry (for `and` and `or`, which have none, a variadic entry never called).
    pub def: FuncDef,
    /// How the executor runs it.
    pub kind: Kind,
    /// [`nests_values`] of the name.
    pub nests: bool,
}

/// Every defined name, resolved, with its index by name.
struct Ids {
    all: Vec<Resolved>,
    by_name: rustc_hash::FxHashMap<&'static str, u32>,
}

fn ids() -> &'static Ids {
    static I: OnceLock<Ids> = OnceLock::new();
    I.get_or_init(|| {
        let special = FuncDef {
            params: &[],
            variadic: Some(P::Raw),
            f: not_implemented_stub,
            implemented: true,
        };
        let mut names: Vec<(&'static str, FuncDef)> =
            table().iter().map(|(n, d)| (*n, *d)).collect();
        names.push(("and", special));
        names.push(("or", special));
        names.sort_by_key(|(n, _)| *n);
        let all: Vec<Resolved> = names
            .into_iter()
            .map(|(name, def)| Resolved {
                name,
                def,
                kind: match name {
                    "and" => Kind::And,
                    "or" => Kind::Or,
                    "call" => Kind::Call,
                    "env" | "expandenv" => Kind::Env,
                    "protoToJSON" => Kind::ProtoJson,
                    n if dates::reads_clock(n) => Kind::Clock,
                    _ => Kind::Plain,
                },
                nests: nests_values(name),
            })
            .collect();
        let by_name = all
            .iter()
            .enumerate()
            .map(|(i, r)| (r.name, i as u32))
            .collect();
        Ids { all, by_name }
    })
}

/// The id of function `name` (`and` and `or` included), `None` for an undefined name: what the
/// parser keeps in the call's node.
pub fn id(name: &str) -> Option<u32> {
    ids().by_name.get(name).copied()
}

/// The function of an [`id`].
#[inline]
pub fn by_id(id: u32) -> Option<&'static Resolved> {
    ids().all.get(id as usize)
}

fn build() -> Table {
    let mut m = Table::default();
    // Go consults the template's FuncMap before its builtins, so Sprig's `slice` wins; Istio's
    // map is merged last (`indent`, `contains`, `env`, `omit` override Sprig's).
    builtins::register_builtins(&mut m);
    sprig::register_all(&mut m);
    dates::register_dates(&mut m);
    // Sprig's `mustX` differs from `X` only by returning its error instead of panicking, and a
    // panicking function fails the template execution in Go as an error does here.
    for name in sprig::SPRIG_NAMES {
        if m.contains_key(name) {
            continue;
        }
        let base = name.strip_prefix("must").and_then(|rest| {
            let mut c = rest.chars();
            let first = c.next()?.to_ascii_lowercase();
            let base: String = std::iter::once(first).chain(c).collect();
            m.get(base.as_str()).copied()
        });
        match base {
            Some(d) => {
                m.insert(name, d);
            }
            // Every other Sprig name parses; unimplemented ones fail at execution.
            None => {
                m.insert(
                    name,
                    FuncDef {
                        params: &[],
                        variadic: Some(P::Any),
                        f: not_implemented_stub,
                        implemented: false,
                    },
                );
            }
        }
    }
    istio::register_istio(&mut m);
    m
}

fn not_implemented_stub<'a>(_: &mut Vec<V<'a>>) -> R<V<'a>> {
    Err("not implemented by outrigger".into())
}

/// Does function `name` put its arguments (or its arguments' elements) into a new or updated map
/// or list, so that its result can be nested deeper than its arguments?
pub fn nests_values(name: &str) -> bool {
    let base = name.strip_prefix("must").unwrap_or(name);
    matches!(
        base,
        "dict"
            | "list"
            | "tuple"
            | "append"
            | "Append"
            | "push"
            | "Push"
            | "prepend"
            | "Prepend"
            | "set"
            | "merge"
            | "Merge"
            | "mergeOverwrite"
            | "MergeOverwrite"
            | "concat"
            | "chunk"
            | "Chunk"
            | "deepCopy"
            | "DeepCopy"
            | "fromJson"
            | "FromJson"
            | "fromYaml"
            | "fromYamlArray"
            | "fromJsonArray"
            | "splitList"
            | "dig"
    )
}

/// The functions that read the environment: `env` and `expandenv` run over `env` (the
/// variables the caller allows), `None` for every other name.
pub fn call_env<'a>(
    name: &str,
    env: &BTreeMap<String, String>,
    args: &[V<'a>],
) -> Option<R<V<'a>>> {
    let arg = |i: usize| args.get(i).map_or("", str_of);
    match name {
        "env" => Some(Ok(V::string(match env.get(arg(0)) {
            Some(v) if !v.is_empty() => v.clone(),
            _ => arg(1).to_string(),
        }))),
        "expandenv" => Some(Ok(V::string(expand_env(arg(0), |k| {
            env.get(k).map_or("", String::as_str)
        })))),
        _ => None,
    }
}

/// Go's `os.Expand`: `$NAME` and `${NAME}` replaced by `mapping(NAME)`; `$` before anything
/// else is kept, bad syntax (`${}`, an unclosed `${`) is dropped.
pub fn expand_env<'e>(s: &str, mapping: impl Fn(&str) -> &'e str) -> String {
    fn special(c: u8) -> bool {
        matches!(
            c,
            b'*' | b'#' | b'$' | b'@' | b'!' | b'?' | b'-' | b'0'..=b'9'
        )
    }
    fn alnum(c: u8) -> bool {
        c == b'_' || c.is_ascii_alphanumeric()
    }
    /// Go's `getShellName`: the name after `$` and how many bytes it takes.
    fn shell_name(s: &[u8]) -> (&[u8], usize) {
        if s[0] == b'{' {
            if s.len() > 2 && special(s[1]) && s[2] == b'}' {
                return (&s[1..2], 3);
            }
            for i in 1..s.len() {
                if s[i] == b'}' {
                    if i == 1 {
                        return (&[], 2);
                    }
                    return (&s[1..i], i + 1);
                }
            }
            return (&[], 1);
        }
        if special(s[0]) {
            return (&s[0..1], 1);
        }
        let n = s.iter().take_while(|&&c| alnum(c)).count();
        (&s[..n], n)
    }
    let b = s.as_bytes();
    let mut out: Vec<u8> = Vec::new();
    let mut i = 0;
    let mut j = 0;
    while j < b.len() {
        if b[j] == b'$' && j + 1 < b.len() {
            out.extend_from_slice(&b[i..j]);
            let (name, w) = shell_name(&b[j + 1..]);
            if name.is_empty() && w > 0 {
                // Bad syntax: dropped.
            } else if name.is_empty() {
                out.push(b'$');
            } else {
                out.extend_from_slice(mapping(&String::from_utf8_lossy(name)).as_bytes());
            }
            j += w;
            i = j + 1;
        }
        j += 1;
    }
    if i == 0 && out.is_empty() {
        return s.to_string();
    }
    out.extend_from_slice(&b[i.min(b.len())..]);
    String::from_utf8_lossy(&out).into_owned()
}
