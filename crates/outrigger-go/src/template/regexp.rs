//! Go's `regexp` behaviour on Rust's `regex` engine, for Sprig's `regex*` functions: Go's
//! syntax where it differs (ASCII-only Perl classes, counted repetitions), `ReplaceAllString`'s
//! `$name` expansion, `FindAllString` and `Split` with their limits and empty-match rules, and
//! `MustCompile`'s panic text.

type R<T> = Result<T, String>;

/// A Go regular expression compiled for Rust's engine: refused with Go's error where Go's
/// parser refuses it ([`super::regexp_syntax::check`]), then translated (Go's Perl classes are
/// ASCII-only, its escapes, Unicode class names and literal braces are Go's).
pub fn regex(re: &str) -> R<regex::Regex> {
    super::regexp_syntax::check(re).map_err(|e| e.to_string())?;
    let mut out = String::with_capacity(re.len() + 8);
    let b = re.as_bytes();
    let mut i = 0;
    let mut in_class = false;
    while i < b.len() {
        let c = b[i];
        if c == b'\\' && b.get(i + 1) == Some(&b'Q') {
            // `\Q...\E`: literal text.
            let rest = &re[i + 2..];
            let end = rest.find("\\E").unwrap_or(rest.len());
            out.push_str(&regex::escape(&rest[..end]));
            i += 2 + end + if end < rest.len() { 2 } else { 0 };
            continue;
        }
        if c == b'\\' && i + 1 < b.len() {
            let e = b[i + 1];
            let rep = match (e, in_class) {
                (b'd', false) => Some("[0-9]"),
                (b'd', true) => Some("0-9"),
                (b'D', false) => Some("[^0-9]"),
                (b'w', false) => Some("[0-9A-Za-z_]"),
                (b'w', true) => Some("0-9A-Za-z_"),
                (b'W', false) => Some("[^0-9A-Za-z_]"),
                (b's', false) => Some("[\\t\\n\\f\\r ]"),
                (b's', true) => Some("\\t\\n\\f\\r "),
                (b'S', false) => Some("[^\\t\\n\\f\\r ]"),
                (b'b', false) => Some("(?-u:\\b)"),
                (b'B', false) => Some("(?-u:\\B)"),
                _ => None,
            };
            match rep {
                Some(r) => out.push_str(r),
                None => {
                    // Go's own reading of the escape (the pattern passed Go's syntax check).
                    i += translate_escape(&re[i..], &mut out);
                    continue;
                }
            }
            i += 2;
            continue;
        }
        if c == b'[' && !in_class {
            in_class = true;
            out.push('[');
            i += 1;
            if b.get(i) == Some(&b'^') {
                out.push('^');
                i += 1;
            }
            if b.get(i) == Some(&b']') {
                out.push_str("\\]");
                i += 1;
            }
            continue;
        }
        if in_class {
            match c {
                b']' => in_class = false,
                // Go's POSIX classes `[:alpha:]` stay; any other `[` is a literal in Go and a
                // nested class in Rust.
                b'[' if b.get(i + 1) == Some(&b':') => {
                    if let Some(e) = re[i..].find(":]") {
                        out.push_str(&re[i..i + e + 2]);
                        i += e + 2;
                        continue;
                    }
                    out.push_str("\\[");
                    i += 1;
                    continue;
                }
                // Rust's class set operators (`&&`, `--`, `~~`) are literals in Go.
                b'[' | b'&' | b'~' => {
                    out.push('\\');
                    out.push(c as char);
                    i += 1;
                    continue;
                }
                b'-' if b.get(i + 1) == Some(&b'-') => {
                    out.push_str("\\-");
                    i += 1;
                    continue;
                }
                _ => {}
            }
        } else if c == b'{' && !is_repeat(&re[i..]) {
            // A `{` that does not start a counted repetition is a literal in Go.
            out.push_str("\\{");
            i += 1;
            continue;
        }
        let ch = re[i..].chars().next().unwrap_or(' ');
        out.push(ch);
        i += ch.len_utf8();
    }
    regex::Regex::new(&out).map_err(|e| {
        if matches!(e, regex::Error::CompiledTooBig(_)) {
            // Go's own limits are counted differently (`regexp_syntax`); past Rust's, Go's text.
            return format!("error parsing regexp: expression too large: `{re}`");
        }
        let m = e.to_string();
        if m.contains("exceed the maximum number of nested parentheses") {
            // Rust's parser nests groups 250 deep (its compiler recurses); Go's, 1,000.
            return format!(
                "error parsing regexp: expression nests too deeply for outrigger (groups more \
                 than 250 deep; Go allows 1,000): `{re}`"
            );
        }
        let last = m.lines().last().unwrap_or("").trim().to_string();
        format!(
            "error parsing regexp: {}: `{re}`",
            last.trim_start_matches("error: ")
        )
    })
}

/// Translate the escape at the start of `s` (a `\` and what follows, valid in Go) for Rust's
/// engine, appending it to `out`; the length read. Octal escapes become `\x{..}`, escaped
/// punctuation a `\x{..}` literal (Rust reads `\<`, `\>` as assertions), Unicode classes
/// Go's names as Rust's (`\p{Greek}` is `\p{sc=Greek}`, `\p{cntrl}` is `\p{gc=Cc}`).
fn translate_escape(s: &str, out: &mut String) -> usize {
    use std::fmt::Write as _;
    let b = s.as_bytes();
    match b.get(1) {
        Some(b'p' | b'P') => {
            let negated = b[1] == b'P';
            let (seq_len, name) = if b.get(2) == Some(&b'{') {
                let end = s.find('}').unwrap_or(s.len() - 1);
                (end + 1, &s[3..end])
            } else {
                let c = s[2..].chars().next().unwrap_or('L');
                (2 + c.len_utf8(), &s[2..2 + c.len_utf8()])
            };
            let (negated, name) = match name.strip_prefix('^') {
                Some(n) => (!negated, n),
                None => (negated, name),
            };
            let rust = super::regexp_syntax::unicode_class(name).unwrap_or_default();
            let _ = write!(out, "\\{}{{{rust}}}", if negated { 'P' } else { 'p' });
            seq_len
        }
        Some(b'x') => {
            if b.get(2) == Some(&b'{') {
                let end = s.find('}').unwrap_or(s.len() - 1);
                out.push_str(&s[..end + 1]);
                end + 1
            } else {
                out.push_str(&s[..4.min(s.len())]);
                4.min(s.len())
            }
        }
        Some(d @ b'0'..=b'7') => {
            let mut r = u32::from(d - b'0');
            let mut n = 2;
            while n < 4 {
                match b.get(n) {
                    Some(d @ b'0'..=b'7') => {
                        r = r * 8 + u32::from(d - b'0');
                        n += 1;
                    }
                    _ => break,
                }
            }
            let _ = write!(out, "\\x{{{r:x}}}");
            n
        }
        Some(&c) if c.is_ascii() && !c.is_ascii_alphanumeric() => {
            let _ = write!(out, "\\x{{{c:x}}}");
            2
        }
        _ => {
            let ch = s[1..].chars().next().unwrap_or('\\');
            out.push('\\');
            out.push(ch);
            1 + ch.len_utf8()
        }
    }
}

/// Does `s` start with a counted repetition `{n}`, `{n,}` or `{n,m}`?
fn is_repeat(s: &str) -> bool {
    let Some(end) = s.find('}') else { return false };
    let body = &s[1..end];
    let (a, b) = body.split_once(',').unwrap_or((body, "0"));
    !a.is_empty() && a.bytes().all(|c| c.is_ascii_digit()) && b.bytes().all(|c| c.is_ascii_digit())
}

/// Go's `regexp.ReplaceAllString` template expansion: `$name` / `${name}` (longest run of
/// letters, digits and `_`), `$$` for `$`; unknown or out-of-range groups are empty.
fn expand(caps: &regex::Captures<'_>, repl: &str, out: &mut String) {
    let b = repl.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'$' {
            let ch = repl[i..].chars().next().unwrap_or(' ');
            out.push(ch);
            i += ch.len_utf8();
            continue;
        }
        if b.get(i + 1) == Some(&b'$') {
            out.push('$');
            i += 2;
            continue;
        }
        let (name, next) = if b.get(i + 1) == Some(&b'{') {
            match repl[i + 2..].find('}') {
                Some(e) => {
                    let n = &repl[i + 2..i + 2 + e];
                    if n.is_empty() || !n.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_') {
                        out.push('$');
                        i += 1;
                        continue;
                    }
                    (n, i + 3 + e)
                }
                None => {
                    out.push('$');
                    i += 1;
                    continue;
                }
            }
        } else {
            let start = i + 1;
            let mut e = start;
            while e < b.len() && (b[e].is_ascii_alphanumeric() || b[e] == b'_') {
                e += 1;
            }
            if e == start {
                out.push('$');
                i += 1;
                continue;
            }
            (&repl[start..e], e)
        };
        let group = match name.parse::<usize>() {
            Ok(n) if !name.starts_with('+') => caps.get(n),
            _ => caps.name(name),
        };
        if let Some(g) = group {
            out.push_str(g.as_str());
        }
        i = next;
    }
}

pub fn replace_all(re: &regex::Regex, s: &str, repl: &str, literal: bool) -> String {
    let mut out = String::with_capacity(s.len());
    let mut last = 0;
    for caps in re.captures_iter(s) {
        let Some(m) = caps.get(0) else { continue };
        out.push_str(&s[last..m.start()]);
        if literal {
            out.push_str(repl);
        } else {
            expand(&caps, repl, &mut out);
        }
        last = m.end();
    }
    out.push_str(&s[last..]);
    out
}

/// Go's `regexp.FindAllString(s, n)`: `n < 0` means all; empty matches right after a match are
/// skipped, as Go does.
pub fn find_all(re: &regex::Regex, s: &str, n: i64) -> Vec<String> {
    let mut out = Vec::new();
    if n == 0 {
        return out;
    }
    let mut prev_end: Option<usize> = None;
    for m in re.find_iter(s) {
        if m.start() == m.end() && prev_end == Some(m.start()) {
            continue;
        }
        out.push(m.as_str().to_string());
        prev_end = Some(m.end());
        if n > 0 && out.len() as i64 >= n {
            break;
        }
    }
    out
}

/// Go's `regexp.Split(s, n)`.
pub fn regex_split(re: &regex::Regex, s: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if !re.as_str().is_empty() && s.is_empty() {
        return vec![String::new()];
    }
    let mut matches: Vec<(usize, usize)> = Vec::new();
    let mut prev_end: Option<usize> = None;
    for m in re.find_iter(s) {
        if m.start() == m.end() && prev_end == Some(m.start()) {
            continue;
        }
        matches.push((m.start(), m.end()));
        prev_end = Some(m.end());
        if n > 0 && matches.len() as i64 >= n {
            break;
        }
    }
    let mut out = Vec::new();
    let mut beg = 0;
    let mut end = 0;
    for (a, b) in matches {
        if n > 0 && out.len() as i64 == n - 1 {
            break;
        }
        end = a;
        if b != 0 {
            out.push(s[beg..end].to_string());
        }
        beg = b;
    }
    if end != s.len() {
        out.push(s[beg..].to_string());
    }
    out
}

/// Sprig's `regexMatch` etc. on a `MustCompile` (panicking) path: the panic text, with the
/// expression quoted as `regexp`'s `quote` does (backquoted when it can be).
pub fn must_compile(re: &str) -> R<regex::Regex> {
    regex(re).map_err(|e| {
        let quoted = if super::printf::can_backquote(re) {
            format!("`{re}`")
        } else {
            crate::go::quote::quote(re)
        };
        format!("regexp: Compile({quoted}): {e}")
    })
}
