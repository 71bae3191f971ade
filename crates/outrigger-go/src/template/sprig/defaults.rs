//! Sprig's defaults and flow functions (`default`, `empty`, `coalesce`, `all`, `any`, `ternary`,
//! `fail`).

use super::*;

/// Register Sprig's defaults functions.
pub(super) fn register_defaults(m: &mut Table) {
    use P::*;
    register(m, "default", &[Any], Some(Any), |a| {
        Ok(match a.get(1) {
            Some(g) if !empty(g) => g.clone(),
            _ => a[0].clone(),
        })
    });
    register(m, "empty", &[Any], None, |a| Ok(V::Bool(empty(&a[0]))));
    register(m, "coalesce", &[], Some(Any), |a| {
        Ok(a.iter().find(|v| !empty(v)).cloned().unwrap_or(V::Nil))
    });
    register(m, "all", &[], Some(Any), |a| {
        Ok(V::Bool(a.iter().all(|v| !empty(v))))
    });
    register(m, "any", &[], Some(Any), |a| {
        Ok(V::Bool(a.iter().any(|v| !empty(v))))
    });
    register(m, "ternary", &[Any, Any, Bool], None, |a| {
        Ok(if a[2].truth() {
            a[0].clone()
        } else {
            a[1].clone()
        })
    });
    register(m, "fail", &[Str], None, |a| Err(str_of(&a[0]).to_string()));
}
