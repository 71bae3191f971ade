//! Sprig's dictionary functions (`dict`, `get`, `set`, `unset`, `keys`, `pluck`, `merge`, `dig`, ...), with mergo v1.0.2's merge rules.

use super::*;

/// Register Sprig's dicts functions.
pub(super) fn register_dicts(m: &mut Table) {
    use P::*;
    register(m, "dict", &[], Some(Any), |a| {
        let mut out = BTreeMap::new();
        for pair in a.chunks(2) {
            out.insert(strval(&pair[0]), pair.get(1).cloned().unwrap_or(V::s("")));
        }
        Ok(V::map(out))
    });
    register(m, "get", &[Map, Str], None, |a| {
        Ok(to_map(&a[0]).remove(str_of(&a[1])).unwrap_or(V::s("")))
    });
    register(m, "set", &[Map, Str, Any], None, |a| {
        if matches!(a[0], V::Nil) {
            return Err("assignment to entry in nil map".into());
        }
        let d = shared_map(&a[0]);
        if contains_map(&a[2], &d) {
            return Err(SELF_MAP.into());
        }
        d.borrow_mut()
            .insert(str_of(&a[1]).to_string(), a[2].clone());
        Ok(V::Map(d))
    });
    register(m, "unset", &[Map, Str], None, |a| {
        if matches!(a[0], V::Nil) {
            return Ok(V::NilOf("map[string]interface {}"));
        }
        let d = shared_map(&a[0]);
        d.borrow_mut().remove(str_of(&a[1]));
        Ok(V::Map(d))
    });
    register(m, "hasKey", &[Map, Str], None, |a| {
        Ok(V::Bool(to_map(&a[0]).contains_key(str_of(&a[1]))))
    });
    register(m, "keys", &[], Some(Map), |a| {
        let k: Vec<String> = a.iter().flat_map(|d| to_map(d).into_keys()).collect();
        Ok(strs(k))
    });
    register(m, "values", &[Map], None, |a| {
        Ok(list(to_map(&a[0]).into_values().collect()))
    });
    register(m, "pick", &[Map], Some(Str), |a| {
        let d = to_map(&a[0]);
        let keys: Vec<&str> = a[1..].iter().map(str_of).collect();
        Ok(V::map(
            d.into_iter()
                .filter(|(k, _)| keys.contains(&k.as_str()))
                .collect(),
        ))
    });
    register(m, "pluck", &[Str], Some(Map), |a| {
        let k = str_of(&a[0]);
        Ok(list(
            a[1..].iter().filter_map(|d| to_map(d).remove(k)).collect(),
        ))
    });
    let merge: Func = |a| merge_maps(a, false);
    register(m, "merge", &[Map], Some(Map), merge);
    register(m, "mustMerge", &[Map], Some(Map), merge);
    let merge_ow: Func = |a| merge_maps(a, true);
    register(m, "mergeOverwrite", &[Map], Some(Map), merge_ow);
    register(m, "mustMergeOverwrite", &[Map], Some(Map), merge_ow);
    register(m, "dig", &[], Some(Any), |a| {
        if a.len() < 3 {
            return Err("dig needs at least three arguments".into());
        }
        let n = a.len();
        let def = a[n - 2].clone();
        let mut cur = a[n - 1].clone();
        let bad = |v: &V<'_>, want: &str| {
            format!(
                "interface conversion: interface {{}} is {}, not {want}",
                match v {
                    V::Nil | V::Missing => "nil".to_string(),
                    other => other.type_name(),
                }
            )
        };
        if !matches!(cur, V::Json(Value::Object(_)) | V::Map(_)) {
            return Err(bad(&cur, "map[string]interface {}"));
        }
        for k in &a[..n - 2] {
            if !matches!(k, V::Str(_)) {
                return Err(bad(k, "string"));
            }
        }
        for k in &a[..n - 2] {
            if !matches!(cur, V::Json(Value::Object(_)) | V::Map(_)) {
                return Err(bad(&cur, "map[string]interface {}"));
            }
            cur = match to_map(&cur).remove(str_of(k)) {
                Some(v) => v,
                None => return Ok(def),
            };
        }
        // The value at the last key, whatever it is.
        Ok(cur)
    });
}

/// Go accepts making a map contain itself and then overflows its stack printing, encoding or
/// merging it (a fatal error, not a template error); outrigger refuses at `set` / `merge`.
const SELF_MAP: &str = "outrigger does not support a map that contains itself";

/// Does `v` hold the map `m`, at any depth?
fn contains_map<'a>(v: &V<'a>, m: &crate::template::value::GoMap<'a>) -> bool {
    match v {
        V::Map(x) => {
            Rc::ptr_eq(x, m)
                || x.try_borrow()
                    .map_or(true, |x| x.values().any(|y| contains_map(y, m)))
        }
        V::List(l) | V::TList(_, l) => l.items().iter().any(|y| contains_map(y, m)),
        _ => false,
    }
}

/// mergo v1.0.2 `Merge` / `MergeWithOverwrite` of generic maps into the first (changed in place).
fn merge_maps<'a>(a: &[V<'a>], overwrite: bool) -> R<V<'a>> {
    let dst = shared_map(&a[0]);
    let holds_dst = |src: &V<'a>| match src {
        V::Map(m) => m.borrow().values().any(|v| contains_map(v, &dst)),
        _ => false,
    };
    if a[1..].iter().any(holds_dst) {
        return Err(SELF_MAP.into());
    }
    for src in &a[1..] {
        // Copy the source first: it may be the destination map itself.
        let src_entries = to_map(src);
        let Ok(mut d) = dst.try_borrow_mut() else {
            return Err(SELF_MAP.into());
        };
        deep_merge(&mut d, &src_entries, overwrite);
    }
    Ok(V::Map(dst))
}

fn is_mapish(v: &V<'_>) -> bool {
    matches!(v, V::Map(_) | V::Json(Value::Object(_)))
}

/// mergo v1.0.2 `deepMerge` of one `map[string]interface{}` into another, as Sprig 3.3.0's
/// `merge` (`overwrite` false) and `mergeOverwrite` use it, key by key:
/// * a nil source value is copied only when overwriting;
/// * a slice source value replaces the destination value when overwriting (even an empty slice,
///   even over a non-slice value), and otherwise only a missing or empty one;
/// * a map source value is merged into a map destination value (recursively, in place); a
///   destination map that is not empty afterwards is kept; otherwise, as for any other value:
/// * the source value is copied when overwriting or when the destination value is missing or
///   empty (`mergeOverwrite (dict "a" "x") (dict "a" (dict "b" 1))` replaces `"x"`).
fn deep_merge<'a>(
    dst: &mut BTreeMap<String, V<'a>>,
    src: &BTreeMap<String, V<'a>>,
    overwrite: bool,
) {
    for (k, sv) in src {
        if matches!(sv, V::Nil | V::Missing | V::Json(Value::Null)) {
            if overwrite {
                dst.insert(k.clone(), V::Nil);
            }
            continue;
        }
        // A map into a map: merged in place.
        if let Some(dv) = dst.get_mut(k) {
            if is_mapish(dv) && is_mapish(sv) {
                // Copy the source first: it may be the destination map itself.
                let src_entries = to_map(sv);
                let m = shared_map(dv);
                if let Ok(mut inner) = m.try_borrow_mut() {
                    deep_merge(&mut inner, &src_entries, overwrite);
                }
                *dv = V::Map(m);
                if !empty(dv) {
                    continue;
                }
            }
        }
        // Any other value (a slice too: mergo's slice rule is this one).
        if overwrite || dst.get(k).is_none_or(empty) {
            dst.insert(k.clone(), sv.clone());
        }
    }
}
