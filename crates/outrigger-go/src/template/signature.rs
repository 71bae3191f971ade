//! A template function's signature: its implementation type, Go parameter types (which drive
//! the argument conversion Go's `text/template` does at a call) and the table entry every
//! function family registers into. Below the families and the table, so each family names
//! these without naming the table.

use serde_json::Value;

use super::value::{IntTy, V};

type R<T> = Result<T, String>;

/// A function implementation.
pub type Func = for<'a> fn(&mut Vec<V<'a>>) -> R<V<'a>>;

/// Go parameter types, driving argument conversion as Go's `text/template` converts call
/// arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum P {
    /// `reflect.Value`: passed through as-is (missing stays missing).
    Raw,
    /// `interface{}`: missing becomes nil.
    Any,
    /// `string`.
    Str,
    /// `int`.
    Int,
    /// `float64`.
    Float,
    /// `bool`.
    Bool,
    /// `map[string]string`.
    StrMap,
    /// `map[string]interface{}`.
    Map,
    /// `metav1.ObjectMeta`.
    Meta,
    /// `[]corev1.Container`.
    Containers,
    /// A protobuf message pointer (`proto.Message`, `*MeshConfig`, `*Duration`).
    Proto,
    /// `time.Time`.
    Time,
    /// `*semver.Version` (the argument of a version's comparison methods).
    Semver,
}

impl P {
    /// Can the Go type hold nil?
    pub fn can_be_nil(self) -> bool {
        matches!(
            self,
            P::Raw | P::Any | P::StrMap | P::Map | P::Containers | P::Proto | P::Semver
        )
    }

    /// Go type name for messages.
    pub fn go_name(self) -> &'static str {
        match self {
            P::Raw => "reflect.Value",
            P::Any => "interface {}",
            P::Str => "string",
            P::Int => "int",
            P::Float => "float64",
            P::Bool => "bool",
            P::StrMap => "map[string]string",
            P::Map => "map[string]interface {}",
            P::Meta => "v1.ObjectMeta",
            P::Containers => "[]v1.Container",
            P::Proto => "proto.Message",
            P::Time => "time.Time",
            P::Semver => "*semver.Version",
        }
    }
}

/// A registered function.
#[derive(Clone, Copy)]
pub struct FuncDef {
    /// Fixed parameter types.
    pub params: &'static [P],
    /// Element type of the variadic parameter.
    pub variadic: Option<P>,
    /// Implementation.
    pub f: Func,
    /// False for the Sprig names outrigger parses but does not implement (they fail at
    /// execution with `not implemented by outrigger`).
    pub implemented: bool,
}

/// Convert an evaluated argument to parameter type `p`.
pub fn convert(v: V<'_>, p: P) -> R<V<'_>> {
    let wrong = |v: &V<'_>| {
        format!(
            "wrong type for value; expected {}; got {}",
            p.go_name(),
            v.type_name()
        )
    };
    if v.is_missing() {
        return if p == P::Raw {
            Ok(V::Missing)
        } else if p.can_be_nil() {
            Ok(V::Nil)
        } else {
            Err(format!("invalid value; expected {}", p.go_name()))
        };
    }
    if let (V::Ptr(inner), P::Str | P::Int | P::Float | P::Bool) = (&v, p) {
        // One level of pointer indirection is attempted, as in Go.
        return convert((**inner).clone(), p);
    }
    match p {
        P::Raw | P::Any => Ok(v),
        P::Str => match v {
            V::Str(_) => Ok(v),
            _ => Err(wrong(&v)),
        },
        P::Int => match v {
            V::Int(_, IntTy::Int) => Ok(v),
            _ => Err(wrong(&v)),
        },
        P::Float => match v {
            V::Float(_) => Ok(v),
            _ => Err(wrong(&v)),
        },
        P::Bool => match v {
            V::Bool(_) => Ok(v),
            _ => Err(wrong(&v)),
        },
        P::StrMap => match v {
            V::StrMapJ(_) | V::StrMap(_) => Ok(v),
            _ => Err(wrong(&v)),
        },
        P::Map => match v {
            V::Json(Value::Object(_)) | V::Map(_) => Ok(v),
            V::NilOf(t) if t.starts_with("map[string]interface") => Ok(V::Nil),
            _ => Err(wrong(&v)),
        },
        P::Meta => match v {
            V::K8s {
                ty: "metav1.ObjectMeta",
                ..
            } => Ok(v),
            _ => Err(wrong(&v)),
        },
        P::Containers => match v {
            V::K8sSlice(f, _) if f.elem.as_deref() == Some("corev1.Container") => Ok(v),
            _ => Err(wrong(&v)),
        },
        P::Proto => match v {
            V::Proto { .. } => Ok(v),
            _ => Err(wrong(&v)),
        },
        P::Time => match v {
            V::Time(_) => Ok(v),
            _ => Err(wrong(&v)),
        },
        P::Semver => match v {
            V::Semver(_, true) | V::Nil => Ok(v),
            _ => Err(wrong(&v)),
        },
    }
}

/// The function table type.
pub type Table = rustc_hash::FxHashMap<&'static str, FuncDef>;

/// Register a function in the table being built.
pub fn register(
    m: &mut Table,
    name: &'static str,
    params: &'static [P],
    variadic: Option<P>,
    f: Func,
) {
    m.insert(
        name,
        FuncDef {
            params,
            variadic,
            f,
            implemented: true,
        },
    );
}
