//! Sprig's reflection functions (`typeOf`, `typeIs`, `typeIsLike`, `kindOf`, `kindIs`,
//! `deepEqual`, `deepCopy`).

use super::*;

/// Register Sprig's reflection functions.
pub(super) fn register_reflect(m: &mut Table) {
    use P::*;
    let deep_copy: Func = |a| match &a[0] {
        V::Nil | V::Missing => Err("reflect: call of reflect.Value.Type on zero Value".into()),
        v => Ok(deep_copy(v)),
    };
    register(m, "deepCopy", &[Any], None, deep_copy);
    register(m, "mustDeepCopy", &[Any], None, deep_copy);
    register(m, "typeOf", &[Any], None, |a| Ok(V::string(type_of(&a[0]))));
    register(m, "typeIs", &[Str, Any], None, |a| {
        Ok(V::Bool(str_of(&a[0]) == type_of(&a[1])))
    });
    register(m, "typeIsLike", &[Str, Any], None, |a| {
        let t = type_of(&a[1]);
        let target = str_of(&a[0]);
        Ok(V::Bool(target == t || format!("*{target}") == t))
    });
    register(m, "kindOf", &[Any], None, |a| Ok(V::s(go_kind(&a[0]))));
    register(m, "kindIs", &[Str, Any], None, |a| {
        Ok(V::Bool(str_of(&a[0]) == go_kind(&a[1])))
    });
    register(m, "deepEqual", &[Any, Any], None, |a| {
        Ok(V::Bool(deep_equal(&a[0], &a[1])))
    });
}

/// Sprig's `deepCopy` (copystructure): maps and lists copied deeply.
fn deep_copy<'a>(v: &V<'a>) -> V<'a> {
    match v {
        V::Map(m) => V::map(
            m.borrow()
                .iter()
                .map(|(k, x)| (k.clone(), deep_copy(x)))
                .collect(),
        ),
        V::List(l) => list(l.items().iter().map(deep_copy).collect()),
        other => other.clone(),
    }
}
