//! Sprig's string functions (`trim`, `upper`, `replace`, `split`, `substr`, `indent`, `quote`,
//! `abbrev`, `wrap`, `regex*`, ...), with Go's `strings` rules where Sprig relies on them.

use super::*;

/// Register Sprig's strings functions.
pub(super) fn register_strings(m: &mut Table) {
    use crate::template::gostr;
    use P::*;
    register(m, "hello", &[], None, |_| Ok(V::s("Hello!")));
    register(m, "upper", &[Str], None, |a| {
        Ok(V::string(gostr::upper(str_of(&a[0]))))
    });
    register(m, "lower", &[Str], None, |a| {
        Ok(V::string(gostr::lower(str_of(&a[0]))))
    });
    register(m, "title", &[Str], None, |a| {
        Ok(V::string(gostr::title(str_of(&a[0]))))
    });
    register(m, "trim", &[Str], None, |a| {
        Ok(V::string(gostr::trim_space(str_of(&a[0])).to_string()))
    });
    let trim_all: Func = |a| {
        let cut: Vec<char> = str_of(&a[0]).chars().collect();
        Ok(V::string(
            str_of(&a[1]).trim_matches(|c| cut.contains(&c)).to_string(),
        ))
    };
    register(m, "trimAll", &[Str, Str], None, trim_all);
    register(m, "trimall", &[Str, Str], None, trim_all);
    register(m, "trimPrefix", &[Str, Str], None, |a| {
        let s = str_of(&a[1]);
        Ok(V::string(
            s.strip_prefix(str_of(&a[0])).unwrap_or(s).to_string(),
        ))
    });
    register(m, "trimSuffix", &[Str, Str], None, |a| {
        let s = str_of(&a[1]);
        Ok(V::string(
            s.strip_suffix(str_of(&a[0])).unwrap_or(s).to_string(),
        ))
    });
    register(m, "trunc", &[Int, Str], None, |a| {
        let c = to_i64(&a[0]);
        let s = str_of(&a[1]);
        let len = s.len() as i64;
        if c < 0 && len + c > 0 {
            return gostr::slice_bytes(s, Some(len + c), None).map(V::string);
        }
        if c >= 0 && len > c {
            return gostr::slice_bytes(s, None, Some(c)).map(V::string);
        }
        Ok(V::string(s.to_string()))
    });
    register(m, "replace", &[Str, Str, Str], None, |a| {
        Ok(V::string(go_replace(
            str_of(&a[2]),
            str_of(&a[0]),
            str_of(&a[1]),
        )))
    });
    register(m, "hasPrefix", &[Str, Str], None, |a| {
        Ok(V::Bool(str_of(&a[1]).starts_with(str_of(&a[0]))))
    });
    register(m, "hasSuffix", &[Str, Str], None, |a| {
        Ok(V::Bool(str_of(&a[1]).ends_with(str_of(&a[0]))))
    });
    register(m, "quote", &[], Some(Any), |a| {
        let mut out = String::new();
        for v in a.iter().filter(|v| !matches!(v, V::Nil)) {
            if !out.is_empty() {
                out.push(' ');
            }
            match v {
                V::Str(s) => out.push_str(&quote_str(s)),
                v => out.push_str(&quote_str(&strval(v))),
            }
        }
        Ok(V::string(out))
    });
    register(m, "squote", &[], Some(Any), |a| {
        let q: Vec<String> = a
            .iter()
            .filter(|v| !matches!(v, V::Nil))
            .map(|v| {
                format!(
                    "'{}'",
                    crate::template::printf::sprintf("%v", std::slice::from_ref(v))
                )
            })
            .collect();
        Ok(V::string(q.join(" ")))
    });
    register(m, "cat", &[], Some(Any), |a| {
        let q: Vec<V<'_>> = std::mem::take(a)
            .into_iter()
            .filter(|v| !matches!(v, V::Nil))
            .collect();
        let f = vec!["%v"; q.len()].join(" ");
        Ok(V::string(crate::template::printf::sprintf(&f, &q)))
    });
    register(m, "nindent", &[Int, Str], None, |a| {
        let n = to_i64(&a[0]);
        let pad = go_repeat(" ", n)?;
        let s = str_of(&a[1]);
        check_size(s.len() + 1, s.matches('\n').count() + 1, pad.len())?;
        Ok(V::string(format!(
            "\n{pad}{}",
            s.replace('\n', &format!("\n{pad}"))
        )))
    });
    register(m, "repeat", &[Int, Str], None, |a| {
        go_repeat(str_of(&a[1]), to_i64(&a[0])).map(V::string)
    });
    register(m, "substr", &[Int, Int, Str], None, |a| {
        let s = str_of(&a[2]);
        let (start, end) = (to_i64(&a[0]), to_i64(&a[1]));
        let len = s.len() as i64;
        let r = if start < 0 {
            gostr::slice_bytes(s, None, Some(end))
        } else if end < 0 || end > len {
            gostr::slice_bytes(s, Some(start), None)
        } else {
            gostr::slice_bytes(s, Some(start), Some(end))
        };
        r.map(V::string)
    });
    register(m, "nospace", &[Str], None, |a| {
        // goutils DeleteWhiteSpace works on bytes, each written back as a rune.
        let s = str_of(&a[0]);
        let kept: Vec<u8> = s
            .bytes()
            .filter(|&b| !gostr::is_space(char::from(b)))
            .collect();
        if kept.len() == s.len() {
            return Ok(V::string(s.to_string()));
        }
        Ok(V::string(kept.into_iter().map(char::from).collect()))
    });
    register(m, "initials", &[Str], None, |a| {
        // goutils Initials works on bytes, each written back as a rune.
        let mut out = String::new();
        let mut gap = true;
        for b in str_of(&a[0]).bytes() {
            let ch = char::from(b);
            if gostr::is_space(ch) {
                gap = true;
            } else if gap {
                out.push(ch);
                gap = false;
            }
        }
        Ok(V::string(out))
    });
    register(m, "untitle", &[Str], None, |a| {
        let mut out = String::new();
        let mut next = true;
        for c in str_of(&a[0]).chars() {
            if gostr::is_space(c) {
                next = true;
                out.push(c);
            } else if next {
                out.push(gostr::to_lower(c));
                next = false;
            } else {
                out.push(c);
            }
        }
        Ok(V::string(out))
    });
    register(m, "swapcase", &[Str], None, |a| {
        let mut out = String::new();
        let mut ws = true;
        for c in str_of(&a[0]).chars() {
            if gostr::is_upper(c) || gostr::is_title(c) {
                out.push(gostr::to_lower(c));
                ws = false;
            } else if gostr::is_lower(c) {
                if ws {
                    out.push(gostr::to_title(c));
                    ws = false;
                } else {
                    out.push(gostr::to_upper(c));
                }
            } else {
                out.push(c);
                ws = gostr::is_space(c);
            }
        }
        Ok(V::string(out))
    });
    register(m, "abbrev", &[Int, Str], None, |a| {
        let (n, s) = (to_i64(&a[0]), str_of(&a[1]));
        if n < 4 {
            return Ok(V::string(s.to_string()));
        }
        Ok(V::string(abbreviate_full(s, 0, n).unwrap_or_default()))
    });
    register(m, "abbrevboth", &[Int, Int, Str], None, |a| {
        let (l, r, s) = (to_i64(&a[0]), to_i64(&a[1]), str_of(&a[2]));
        if r < 4 || (l > 0 && r < 7) {
            return Ok(V::string(s.to_string()));
        }
        Ok(V::string(abbreviate_full(s, l, r).unwrap_or_default()))
    });
    register(m, "wrap", &[Int, Str], None, |a| {
        Ok(V::string(wrap_custom(
            str_of(&a[1]),
            to_i64(&a[0]),
            "",
            false,
        )))
    });
    register(m, "wrapWith", &[Int, Str, Str], None, |a| {
        Ok(V::string(wrap_custom(
            str_of(&a[2]),
            to_i64(&a[0]),
            str_of(&a[1]),
            true,
        )))
    });
    register(m, "plural", &[Str, Str, Int], None, |a| {
        Ok(if to_i64(&a[2]) == 1 {
            a[0].clone()
        } else {
            a[1].clone()
        })
    });
    register(m, "split", &[Str, Str], None, |a| {
        let mut out = BTreeMap::new();
        for (i, p) in go_split(str_of(&a[1]), str_of(&a[0]), -1)
            .into_iter()
            .enumerate()
        {
            out.insert(format!("_{i}"), p);
        }
        Ok(V::StrMap(Some(Rc::new(out))))
    });
    register(m, "splitn", &[Str, Int, Str], None, |a| {
        let mut out = BTreeMap::new();
        let parts = go_split(str_of(&a[2]), str_of(&a[0]), to_i64(&a[1]));
        for (i, p) in parts.into_iter().enumerate() {
            out.insert(format!("_{i}"), p);
        }
        Ok(V::StrMap(Some(Rc::new(out))))
    });
    register(m, "splitList", &[Str, Str], None, |a| {
        Ok(strs(go_split(str_of(&a[1]), str_of(&a[0]), -1)))
    });
    register(m, "join", &[Str, Any], None, |a| {
        Ok(V::string(strslice(&a[1]).join(str_of(&a[0]))))
    });
    register(m, "toString", &[Any], None, |a| {
        Ok(V::string(strval(&a[0])))
    });
    register(m, "toStrings", &[Any], None, |a| Ok(strs(strslice(&a[0]))));
    register(m, "sortAlpha", &[Any], None, |a| {
        let mut items = match to_list(&a[0]) {
            Some(_) => strslice(&a[0]),
            None => vec![strval(&a[0])],
        };
        items.sort();
        Ok(strs(items))
    });
    register(m, "regexMatch", &[Str, Str], None, |a| {
        Ok(V::Bool(
            regex(str_of(&a[0])).is_ok_and(|r| r.is_match(str_of(&a[1]))),
        ))
    });
    register(m, "mustRegexMatch", &[Str, Str], None, |a| {
        Ok(V::Bool(regex(str_of(&a[0]))?.is_match(str_of(&a[1]))))
    });
    register(m, "regexReplaceAll", &[Str, Str, Str], None, |a| {
        let re = must_compile(str_of(&a[0]))?;
        Ok(V::string(replace_all(
            &re,
            str_of(&a[1]),
            str_of(&a[2]),
            false,
        )))
    });
    register(m, "mustRegexReplaceAll", &[Str, Str, Str], None, |a| {
        let re = regex(str_of(&a[0]))?;
        Ok(V::string(replace_all(
            &re,
            str_of(&a[1]),
            str_of(&a[2]),
            false,
        )))
    });
    register(m, "regexReplaceAllLiteral", &[Str, Str, Str], None, |a| {
        let re = must_compile(str_of(&a[0]))?;
        Ok(V::string(replace_all(
            &re,
            str_of(&a[1]),
            str_of(&a[2]),
            true,
        )))
    });
    register(
        m,
        "mustRegexReplaceAllLiteral",
        &[Str, Str, Str],
        None,
        |a| {
            let re = regex(str_of(&a[0]))?;
            Ok(V::string(replace_all(
                &re,
                str_of(&a[1]),
                str_of(&a[2]),
                true,
            )))
        },
    );
    register(m, "regexFind", &[Str, Str], None, |a| {
        let re = must_compile(str_of(&a[0]))?;
        Ok(V::string(
            re.find(str_of(&a[1]))
                .map_or(String::new(), |x| x.as_str().to_string()),
        ))
    });
    register(m, "mustRegexFind", &[Str, Str], None, |a| {
        let re = regex(str_of(&a[0]))?;
        Ok(V::string(
            re.find(str_of(&a[1]))
                .map_or(String::new(), |x| x.as_str().to_string()),
        ))
    });
    register(m, "regexFindAll", &[Str, Str, Int], None, |a| {
        let re = must_compile(str_of(&a[0]))?;
        Ok(strs(find_all(&re, str_of(&a[1]), to_i64(&a[2]))))
    });
    register(m, "mustRegexFindAll", &[Str, Str, Int], None, |a| {
        let re = regex(str_of(&a[0]))?;
        Ok(strs(find_all(&re, str_of(&a[1]), to_i64(&a[2]))))
    });
    register(m, "regexSplit", &[Str, Str, Int], None, |a| {
        let re = must_compile(str_of(&a[0]))?;
        Ok(strs(regex_split(&re, str_of(&a[1]), to_i64(&a[2]))))
    });
    register(m, "mustRegexSplit", &[Str, Str, Int], None, |a| {
        let re = regex(str_of(&a[0]))?;
        Ok(strs(regex_split(&re, str_of(&a[1]), to_i64(&a[2]))))
    });
    register(m, "regexQuoteMeta", &[Str], None, |a| {
        let mut out = String::new();
        for c in str_of(&a[0]).chars() {
            if "\\.+*?()|[]{}^$".contains(c) {
                out.push('\\');
            }
            out.push(c);
        }
        Ok(V::string(out))
    });
}

/// Go's `strings.Replace(s, old, new, -1)` (an empty `old` inserts between every rune).
fn go_replace(s: &str, old: &str, new: &str) -> String {
    if old.is_empty() {
        let mut out = String::with_capacity(s.len() + new.len() * (s.len() + 1));
        out.push_str(new);
        for c in s.chars() {
            out.push(c);
            out.push_str(new);
        }
        return out;
    }
    s.replace(old, new)
}

/// Go's `strings.SplitN(s, sep, n)` (`n < 0`: all; an empty `sep` splits into runes).
fn go_split(s: &str, sep: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if sep.is_empty() {
        let chars: Vec<String> = s.chars().map(String::from).collect();
        if n < 0 || chars.len() as i64 <= n {
            return chars;
        }
        let k = (n - 1) as usize;
        let head_len: usize = s.chars().take(k).map(char::len_utf8).sum();
        let mut out: Vec<String> = chars[..k].to_vec();
        out.push(s[head_len..].to_string());
        return out;
    }
    if n < 0 {
        s.split(sep).map(str::to_string).collect()
    } else {
        s.splitn(n as usize, sep).map(str::to_string).collect()
    }
}

/// Sprig's `strslice`: the non-nil elements of a slice as strings; a scalar as one string; nil
/// as none.
fn strslice(v: &V<'_>) -> Vec<String> {
    match to_list(v) {
        Some(items) => items
            .iter()
            .filter(|x| !matches!(x, V::Nil | V::Missing))
            .map(strval)
            .collect(),
        None if matches!(v, V::Nil | V::Missing) => Vec::new(),
        None => vec![strval(v)],
    }
}

/// goutils `AbbreviateFull` (byte offsets, as in Go).
fn abbreviate_full(s: &str, mut offset: i64, max: i64) -> R<String> {
    if s.is_empty() {
        return Ok(String::new());
    }
    if max < 4 {
        return Err("stringutils illegal argument: Minimum abbreviation width is 4".into());
    }
    let len = s.len() as i64;
    if len <= max {
        return Ok(s.to_string());
    }
    let b = s.as_bytes();
    if offset > len {
        offset = len;
    }
    if len - offset < max - 3 {
        offset = len - (max - 3);
    }
    if offset <= 4 {
        return Ok(crate::template::gostr::lossy(&b[..(max - 3) as usize]) + "...");
    }
    if max < 7 {
        return Err(
            "stringutils illegal argument: Minimum abbreviation width with offset is 7".into(),
        );
    }
    if offset + max - 3 < len {
        let inner = abbreviate_full(
            &crate::template::gostr::lossy(&b[offset as usize..]),
            0,
            max - 3,
        )?;
        return Ok(format!("...{inner}"));
    }
    Ok(format!(
        "...{}",
        crate::template::gostr::lossy(&b[(len - (max - 3)) as usize..])
    ))
}

/// goutils `WrapCustom` (byte offsets, as in Go).
fn wrap_custom(s: &str, wrap_len: i64, nl: &str, long_words: bool) -> String {
    if s.is_empty() {
        return String::new();
    }
    let nl = if nl.is_empty() { "\n" } else { nl };
    let wl = wrap_len.max(1) as usize;
    let b = s.as_bytes();
    let len = b.len();
    let mut offset = 0usize;
    let mut out: Vec<u8> = Vec::with_capacity(len + 8);
    while len - offset > wl {
        if b[offset] == b' ' {
            offset += 1;
            continue;
        }
        let end = wl + offset + 1;
        let space = b[offset..end].iter().rposition(|&c| c == b' ');
        if let Some(sp) = space {
            let at = sp + offset;
            out.extend_from_slice(&b[offset..at]);
            out.extend_from_slice(nl.as_bytes());
            offset = at + 1;
        } else if long_words {
            let end = wl + offset;
            out.extend_from_slice(&b[offset..end]);
            out.extend_from_slice(nl.as_bytes());
            offset += wl;
        } else {
            let end = wl + offset;
            match b[end..].iter().position(|&c| c == b' ') {
                None => {
                    out.extend_from_slice(&b[offset..]);
                    offset = len;
                }
                Some(ix) => {
                    let at = ix + end;
                    out.extend_from_slice(&b[offset..at]);
                    out.extend_from_slice(nl.as_bytes());
                    offset = at + 1;
                }
            }
        }
    }
    out.extend_from_slice(&b[offset..]);
    crate::template::gostr::lossy(&out)
}

/// Go's `strings.Repeat` with its panics.
fn go_repeat(s: &str, n: i64) -> R<String> {
    if n < 0 {
        return Err("strings: negative Repeat count".into());
    }
    let total = (s.len() as u128) * (n as u128);
    if total > i64::MAX as u128 {
        return Err("strings: Repeat output length overflow".into());
    }
    check_size(0, n as usize, s.len())?;
    Ok(s.repeat(n as usize))
}
