//! Sprig's list functions (`list`, `append`, `first`, `uniq`, `slice`, `chunk`, `until`, ...).

use super::*;

/// Register Sprig's lists functions.
pub(super) fn register_lists(m: &mut Table) {
    use P::*;
    let list_f: Func = |a| Ok(list(std::mem::take(a)));
    register(m, "list", &[], Some(Any), list_f);
    register(m, "tuple", &[], Some(Any), list_f);
    // Sprig copies the list and appends to the copy: the argument is unchanged. A template
    // list shares its elements instead of copying them (see `GoList::push`), which keeps a
    // loop of appends linear.
    let push: Func = |a| match &a[0] {
        V::List(l) => Ok(V::List(l.push(a[1].clone()))),
        other => {
            let mut l = list_or("push", other)?;
            l.push(a[1].clone());
            Ok(list(l))
        }
    };
    register(m, "append", &[Any, Any], None, push);
    register(m, "push", &[Any, Any], None, push);
    register(m, "mustAppend", &[Any, Any], None, push);
    register(m, "mustPush", &[Any, Any], None, push);
    let prepend: Func = |a| {
        let mut l = list_or("prepend", &a[0])?;
        l.insert(0, a[1].clone());
        Ok(list(l))
    };
    register(m, "prepend", &[Any, Any], None, prepend);
    register(m, "mustPrepend", &[Any, Any], None, prepend);
    let first: Func = |a| {
        let l = to_list(&a[0]).ok_or_else(|| not_list("find first", &a[0]))?;
        Ok(l.first().cloned().unwrap_or(V::Nil))
    };
    register(m, "first", &[Any], None, first);
    register(m, "mustFirst", &[Any], None, first);
    let last: Func = |a| {
        let l = to_list(&a[0]).ok_or_else(|| not_list("find last", &a[0]))?;
        Ok(l.last().cloned().unwrap_or(V::Nil))
    };
    register(m, "last", &[Any], None, last);
    register(m, "mustLast", &[Any], None, last);
    let rest: Func = |a| {
        let l = to_list(&a[0]).ok_or_else(|| not_list("find rest", &a[0]))?;
        if l.is_empty() {
            return Ok(V::NilOf("[]interface {}"));
        }
        Ok(list(l[1..].to_vec()))
    };
    register(m, "rest", &[Any], None, rest);
    register(m, "mustRest", &[Any], None, rest);
    let initial: Func = |a| {
        let l = to_list(&a[0]).ok_or_else(|| not_list("find initial", &a[0]))?;
        if l.is_empty() {
            return Ok(V::NilOf("[]interface {}"));
        }
        Ok(list(l[..l.len() - 1].to_vec()))
    };
    register(m, "initial", &[Any], None, initial);
    register(m, "mustInitial", &[Any], None, initial);
    let reverse: Func = |a| {
        let mut l = to_list(&a[0]).ok_or_else(|| not_list("find reverse", &a[0]))?;
        l.reverse();
        Ok(list(l))
    };
    register(m, "reverse", &[Any], None, reverse);
    register(m, "mustReverse", &[Any], None, reverse);
    let has: Func = |a| {
        if matches!(a[1], V::Nil | V::Missing) {
            return Ok(V::Bool(false));
        }
        let l = to_list(&a[1]).ok_or_else(|| not_list("find has", &a[1]))?;
        Ok(V::Bool(l.iter().any(|x| deep_equal(&a[0], x))))
    };
    register(m, "has", &[Any, Any], None, has);
    register(m, "mustHas", &[Any, Any], None, has);
    let uniq: Func = |a| {
        let l = to_list(&a[0]).ok_or_else(|| not_list("find uniq", &a[0]))?;
        let mut out: Vec<V<'_>> = Vec::new();
        for x in l {
            if !out.iter().any(|y| deep_equal(&x, y)) {
                out.push(x);
            }
        }
        Ok(list(out))
    };
    register(m, "uniq", &[Any], None, uniq);
    register(m, "mustUniq", &[Any], None, uniq);
    let without: Func = |a| {
        let l = to_list(&a[0]).ok_or_else(|| not_list("find without", &a[0]))?;
        Ok(list(
            l.into_iter()
                .filter(|x| !a[1..].iter().any(|o| deep_equal(x, o)))
                .collect(),
        ))
    };
    register(m, "without", &[Any], Some(Any), without);
    register(m, "mustWithout", &[Any], Some(Any), without);
    let compact: Func = |a| {
        let l = list_or("compact", &a[0])?;
        Ok(list(l.into_iter().filter(|x| !empty(x)).collect()))
    };
    register(m, "compact", &[Any], None, compact);
    register(m, "mustCompact", &[Any], None, compact);
    register(m, "concat", &[], Some(Any), |a| {
        let mut out = Vec::new();
        for l in a.iter() {
            match to_list(l) {
                Some(items) => out.extend(items),
                None if matches!(l, V::Nil | V::Missing) => {
                    return Err(
                        "runtime error: invalid memory address or nil pointer dereference".into(),
                    )
                }
                None => return Err(format!("Cannot concat type {} as list", go_kind(l))),
            }
        }
        if out.is_empty() {
            return Ok(V::NilOf("[]interface {}"));
        }
        Ok(list(out))
    });
    let slice: Func = |a| {
        let Some(l) = to_list(&a[0]) else {
            return Err(match &a[0] {
                V::Nil | V::Missing => {
                    "runtime error: invalid memory address or nil pointer dereference".into()
                }
                other => format!(
                    "list should be type of slice or array but {}",
                    go_kind(other)
                ),
            });
        };
        if l.is_empty() {
            return Ok(V::Nil);
        }
        let cap = go_cap(&a[0]) as i64;
        let start = a.get(1).map_or(0, to_i64);
        let end = a.get(2).map_or(l.len() as i64, to_i64);
        if start < 0 || end < start || end > cap {
            return Err("reflect.Value.Slice: slice index out of bounds".into());
        }
        let items: Vec<V<'_>> = (start..end)
            .map(|i| l.get(i as usize).cloned().unwrap_or(V::Nil))
            .collect();
        Ok(match &a[0] {
            V::TList(t, _) => V::TList(t, GoList::new(items)),
            _ => list(items),
        })
    };
    register(m, "slice", &[Any], Some(Any), slice);
    register(m, "mustSlice", &[Any], Some(Any), slice);
    register(m, "until", &[Int], None, |a| {
        let n = to_i64(&a[0]);
        until_step(0, n, if n < 0 { -1 } else { 1 }).map(ints)
    });
    register(m, "untilStep", &[Int, Int, Int], None, |a| {
        until_step(to_i64(&a[0]), to_i64(&a[1]), to_i64(&a[2])).map(ints)
    });
    let chunk_f: Func = |a| {
        let size = to_i64(&a[0]);
        let items = to_list(&a[1]).ok_or_else(|| match &a[1] {
            V::Nil | V::Missing => {
                "runtime error: invalid memory address or nil pointer dereference".to_string()
            }
            other => format!("Cannot chunk type {}", go_kind(other)),
        })?;
        let l = items.len() as i64;
        // Go's `int(math.Floor(...))`: a size of 0 gives an infinity or NaN here, which amd64
        // converts to the smallest int, and `make` refuses the negative length.
        let cs = go_int(((l - 1) as f64 / size as f64).floor()).wrapping_add(1);
        if cs < 0 {
            return Err("runtime error: makeslice: len out of range".into());
        }
        let mut out = Vec::new();
        for i in 0..cs {
            let mut clen = size;
            if i == cs - 1 {
                clen = go_int(((l as f64) % (size as f64)).floor());
                if clen == 0 {
                    clen = size;
                }
            }
            if clen < 0 {
                return Err("runtime error: makeslice: len out of range".into());
            }
            let mut c = Vec::new();
            for j in 0..clen {
                let ix = i * size + j;
                match items.get(ix as usize) {
                    Some(x) if ix >= 0 => c.push(x.clone()),
                    _ => return Err("reflect: slice index out of range".to_string()),
                }
            }
            out.push(list(c));
        }
        Ok(V::TList("[][]interface {}", GoList::new(out)))
    };
    register(m, "chunk", &[Int, Any], None, chunk_f);
    register(m, "mustChunk", &[Int, Any], None, chunk_f);
}

/// The elements `until_step` builds between two charges of its work.
const UNTIL_CHARGE: usize = 1024;

/// Sprig's `untilStep`: from `start` towards `stop` (exclusive) by `step`; empty when `step` does
/// not lead there. Capped at 2^20 items (Go has no cap).
pub(super) fn until_step(start: i64, stop: i64, step: i64) -> R<Vec<i64>> {
    let mut out = Vec::new();
    if (stop < start && step >= 0) || (stop >= start && step <= 0) {
        return Ok(out);
    }
    let mut i = start;
    let going = |i: i64| if stop < start { i > stop } else { i < stop };
    while going(i) {
        if out.len() >= 1 << 20 {
            return Err("untilStep: more than 1048576 items".into());
        }
        // A long list is work in proportion to its length, counted as it is built, so a
        // review's work bound stops it (a review tried on a worker thread gives way early).
        if out.len() % UNTIL_CHARGE == UNTIL_CHARGE - 1 {
            crate::work::charge(UNTIL_CHARGE as u64).map_err(|e| e.to_string())?;
        }
        out.push(i);
        match i.checked_add(step) {
            Some(n) => i = n,
            None => break,
        }
    }
    Ok(out)
}
