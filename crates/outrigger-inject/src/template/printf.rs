//! A Go `fmt.Sprintf` subset: verbs `%v %s %d %t %q %f %g %e %x %X %o %b %c %%`, flags, width,
//! precision; wrong verb/type pairs render as `%!d(string=x)`, like Go.

use super::gofmt::quote;
use super::value::V;
use crate::gofloat::format_g64;

/// Go `fmt.Sprintf(format, args...)`.
pub fn sprintf(format: &str, args: &[V<'_>]) -> String {
    let mut out = String::with_capacity(format.len() + 16);
    let mut chars = format.char_indices().peekable();
    let mut argi = 0;
    while let Some((_, c)) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut minus = false;
        let mut plus = false;
        let mut zero = false;
        let mut sharp = false;
        let mut space = false;
        while let Some(&(_, f)) = chars.peek() {
            match f {
                '-' => minus = true,
                '+' => plus = true,
                '0' => zero = true,
                '#' => sharp = true,
                ' ' => space = true,
                _ => break,
            }
            chars.next();
        }
        let mut overflow = false;
        let width = parse_num(&mut chars, &mut overflow);
        let mut prec: Option<usize> = None;
        if !overflow {
            if let Some(&(_, '.')) = chars.peek() {
                chars.next();
                prec = Some(parse_num(&mut chars, &mut overflow).unwrap_or(0));
            }
        }
        // Go's parsenum gives up on numbers above 1e6 and skips to the end of the format.
        if overflow {
            out.push_str("%!(NOVERB)");
            break;
        }
        let Some((_, verb)) = chars.next() else {
            out.push_str("%!(NOVERB)");
            break;
        };
        if verb == '%' {
            out.push('%');
            continue;
        }
        let Some(arg) = args.get(argi) else {
            out.push_str(&format!("%!{verb}(MISSING)"));
            continue;
        };
        argi += 1;
        let s = match format_one(verb, arg, prec, plus, sharp, space) {
            Some(s) => s,
            None => {
                out.push_str(&bad_verb(verb, arg));
                continue;
            }
        };
        let len = s.chars().count();
        match width {
            Some(w) if w > len => {
                let pad = w - len;
                if minus {
                    out.push_str(&s);
                    out.push_str(&" ".repeat(pad));
                } else if zero && matches!(verb, 'd' | 'f' | 'x' | 'X' | 'e' | 'g' | 'o' | 'b') {
                    let (sign, digits) = match s.strip_prefix('-') {
                        Some(d) => ("-", d),
                        None => ("", s.as_str()),
                    };
                    out.push_str(sign);
                    out.push_str(&"0".repeat(pad));
                    out.push_str(digits);
                } else {
                    out.push_str(&" ".repeat(pad));
                    out.push_str(&s);
                }
            }
            _ => out.push_str(&s),
        }
    }
    if argi < args.len() {
        out.push_str("%!(EXTRA ");
        let extra: Vec<String> = args[argi..]
            .iter()
            .map(|a| format!("{}={}", type_of(a), a.sprint()))
            .collect();
        out.push_str(&extra.join(", "));
        out.push(')');
    }
    out
}

/// Go's `parsenum`: digits up to a value of 1e6; a longer number sets `overflow`.
fn parse_num(
    chars: &mut std::iter::Peekable<std::str::CharIndices<'_>>,
    overflow: &mut bool,
) -> Option<usize> {
    let mut num: Option<usize> = None;
    while let Some(&(_, d)) = chars.peek() {
        let Some(n) = d.to_digit(10) else { break };
        if num.is_some_and(|x| x > 1_000_000) {
            *overflow = true;
            return None;
        }
        num = Some(num.unwrap_or(0) * 10 + n as usize);
        chars.next();
    }
    num
}

fn type_of(v: &V<'_>) -> String {
    match v {
        V::Nil | V::Missing => "<nil>".into(),
        v => v.type_name(),
    }
}

fn bad_verb(verb: char, arg: &V<'_>) -> String {
    match arg {
        V::Nil | V::Missing => format!("%!{verb}(<nil>)"),
        a => format!("%!{verb}({}={})", a.type_name(), a.sprint()),
    }
}

fn format_one(
    verb: char,
    arg: &V<'_>,
    prec: Option<usize>,
    plus: bool,
    sharp: bool,
    space: bool,
) -> Option<String> {
    let sign = |s: String, neg: bool| -> String {
        if neg {
            s
        } else if plus {
            format!("+{s}")
        } else if space {
            format!(" {s}")
        } else {
            s
        }
    };
    match (verb, arg) {
        ('v', V::Str(s)) if sharp => Some(quote(s)),
        ('v', _) => Some(arg.sprint()),
        ('s', V::Str(s)) => Some(match prec {
            Some(p) => s.chars().take(p).collect(),
            None => s.to_string(),
        }),
        ('s', V::Bool(_) | V::Int(..) | V::Uint(_) | V::Float(_)) => None,
        ('s', V::Nil | V::Missing) => None,
        ('s', _) => Some(arg.sprint()),
        ('q', V::Str(s)) => Some(quote(s)),
        ('q', V::Int(i, _)) => char::from_u32(u32::try_from(*i).ok()?).map(|c| format!("'{c}'")),
        ('t', V::Bool(b)) => Some(b.to_string()),
        ('d', V::Int(i, _)) => Some(sign(i.to_string(), *i < 0)),
        ('d', V::Uint(u)) => Some(sign(u.to_string(), false)),
        ('d', V::Enum(_, i)) => Some(i.to_string()),
        ('x', V::Int(i, _)) => Some(if *i < 0 {
            format!("-{:x}", i.unsigned_abs())
        } else {
            format!("{i:x}")
        }),
        ('X', V::Int(i, _)) => Some(if *i < 0 {
            format!("-{:X}", i.unsigned_abs())
        } else {
            format!("{i:X}")
        }),
        ('x', V::Str(s)) => Some(s.bytes().map(|b| format!("{b:02x}")).collect()),
        ('X', V::Str(s)) => Some(s.bytes().map(|b| format!("{b:02X}")).collect()),
        ('o', V::Int(i, _)) => Some(format!("{i:o}")),
        ('b', V::Int(i, _)) => Some(format!("{i:b}")),
        ('c', V::Int(i, _)) => char::from_u32(u32::try_from(*i).ok()?).map(String::from),
        ('f' | 'F', V::Float(f)) => Some(sign(format!("{:.*}", prec.unwrap_or(6), f), *f < 0.0)),
        ('e', V::Float(f)) => Some(sign(go_exp(*f, prec.unwrap_or(6)), *f < 0.0)),
        ('g', V::Float(f)) => Some(sign(format_g64(*f), *f < 0.0)),
        _ => None,
    }
}

fn go_exp(f: f64, prec: usize) -> String {
    let s = format!("{f:.prec$e}");
    match s.split_once('e') {
        Some((m, e)) => {
            let n: i32 = e.parse().unwrap_or(0);
            format!("{m}e{}{:02}", if n < 0 { '-' } else { '+' }, n.abs())
        }
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::value::IntTy;

    #[test]
    fn printf_verbs() {
        assert_eq!(sprintf("%t", &[V::Bool(true)]), "true");
        assert_eq!(sprintf("%s-%d", &[V::s("a"), V::Int(5, IntTy::Int)]), "a-5");
        assert_eq!(sprintf("%d", &[V::s("abc")]), "%!d(string=abc)");
        assert_eq!(sprintf("%s", &[V::Int(5, IntTy::Int)]), "%!s(int=5)");
        assert_eq!(sprintf("%q", &[V::s("a\"b")]), "\"a\\\"b\"");
        assert_eq!(sprintf("%v %v", &[V::Float(2e6), V::Nil]), "2e+06 <nil>");
        assert_eq!(sprintf("%s", &[]), "%!s(MISSING)");
        assert_eq!(sprintf("x", &[V::s("y")]), "x%!(EXTRA string=y)");
        assert_eq!(
            sprintf("%05d|%-3s|", &[V::Int(42, IntTy::Int), V::s("a")]),
            "00042|a  |"
        );
        assert_eq!(sprintf("%.2f", &[V::Float(1.5)]), "1.50");
    }
}
