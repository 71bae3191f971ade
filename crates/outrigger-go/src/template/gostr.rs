//! Go's `unicode` and `strings` behaviour where Rust's differs: simple (one rune) case mapping,
//! `unicode.IsSpace`/`IsPunct`/`IsUpper`, `strings.Title`, `strings.Fields`, and turning bytes
//! that may not be UTF-8 (Go strings are bytes) into text the way Go's JSON encoder shows them
//! (each invalid byte becomes U+FFFD).

/// Go's `unicode.ToUpper`: the simple mapping (one rune; `ß` stays `ß`).
pub fn to_upper(c: char) -> char {
    let mut it = c.to_uppercase();
    match (it.next(), it.next()) {
        (Some(u), None) => u,
        _ => simple_special_upper(c),
    }
}

/// Go's `unicode.ToLower` (one rune; `İ` becomes `i`).
pub fn to_lower(c: char) -> char {
    if c == '\u{130}' {
        return 'i';
    }
    let mut it = c.to_lowercase();
    match (it.next(), it.next()) {
        (Some(l), None) => l,
        _ => c,
    }
}

/// Go's `unicode.ToTitle`: the upper-case mapping except for the digraphs, whose title case is
/// their mixed form.
pub fn to_title(c: char) -> char {
    match c {
        '\u{1C4}'..='\u{1C6}' => '\u{1C5}',
        '\u{1C7}'..='\u{1C9}' => '\u{1C8}',
        '\u{1CA}'..='\u{1CC}' => '\u{1CB}',
        '\u{1F1}'..='\u{1F3}' => '\u{1F2}',
        _ => to_upper(c),
    }
}

/// Simple upper-case mappings of characters whose full mapping has several characters.
fn simple_special_upper(c: char) -> char {
    match c {
        // Greek with ypogegrammeni: the simple mapping is the title-case form.
        '\u{1F80}'..='\u{1F87}' | '\u{1F90}'..='\u{1F97}' | '\u{1FA0}'..='\u{1FA7}' => {
            char::from_u32(c as u32 + 8).unwrap_or(c)
        }
        '\u{1FB3}' => '\u{1FBC}',
        '\u{1FC3}' => '\u{1FCC}',
        '\u{1FF3}' => '\u{1FFC}',
        _ => c,
    }
}

/// Go's `strings.ToUpper`.
pub fn upper(s: &str) -> String {
    s.chars().map(to_upper).collect()
}

/// Go's `strings.ToLower`.
pub fn lower(s: &str) -> String {
    s.chars().map(to_lower).collect()
}

/// Go's `unicode.IsSpace`.
pub fn is_space(c: char) -> bool {
    c.is_whitespace()
}

/// Go's `unicode.IsUpper` (category Lu).
pub fn is_upper(c: char) -> bool {
    c.is_uppercase() && !matches!(c, '\u{2160}'..='\u{216F}' | '\u{24B6}'..='\u{24CF}')
}

/// Go's `unicode.IsLower` (category Ll).
pub fn is_lower(c: char) -> bool {
    c.is_lowercase()
        && !matches!(c, '\u{2170}'..='\u{217F}' | '\u{24D0}'..='\u{24E9}' | '\u{AA}' | '\u{BA}')
        && !matches!(c, '\u{2B0}'..='\u{2B8}' | '\u{2C0}'..='\u{2C1}' | '\u{2E0}'..='\u{2E4}')
}

/// Go's `unicode.IsTitle` (category Lt).
pub fn is_title(c: char) -> bool {
    matches!(
        c,
        '\u{1C5}'
            | '\u{1C8}'
            | '\u{1CB}'
            | '\u{1F2}'
            | '\u{1F88}'..='\u{1F8F}'
            | '\u{1F98}'..='\u{1F9F}'
            | '\u{1FA8}'..='\u{1FAF}'
            | '\u{1FBC}'
            | '\u{1FCC}'
            | '\u{1FFC}'
    )
}

/// Go's `unicode.IsLetter` (categories L*).
pub fn is_letter(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphabetic();
    }
    c.is_alphabetic() && !c.is_numeric() && !is_mark(c)
}

/// Combining marks that Rust counts as alphabetic (Other_Alphabetic) but Go does not count as
/// letters (the common blocks).
fn is_mark(c: char) -> bool {
    matches!(c,
        '\u{300}'..='\u{36F}' | '\u{483}'..='\u{489}' | '\u{591}'..='\u{5C7}'
        | '\u{610}'..='\u{61A}' | '\u{64B}'..='\u{65F}' | '\u{670}' | '\u{6D6}'..='\u{6ED}'
        | '\u{900}'..='\u{903}' | '\u{93A}'..='\u{94F}' | '\u{951}'..='\u{957}'
        | '\u{962}'..='\u{963}' | '\u{981}'..='\u{983}' | '\u{9BC}'..='\u{9D7}'
        | '\u{1AB0}'..='\u{1AFF}' | '\u{1DC0}'..='\u{1DFF}' | '\u{20D0}'..='\u{20FF}'
        | '\u{FE20}'..='\u{FE2F}')
}

/// Go's `unicode.IsDigit` (category Nd).
pub fn is_digit(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_digit();
    }
    c.is_numeric() && c.to_digit(10).is_none() && is_nd(c)
}

fn is_nd(c: char) -> bool {
    // Decimal digit blocks: ten consecutive code points starting at a 0 digit.
    let u = c as u32;
    const ZEROS: &[u32] = &[
        0x660, 0x6F0, 0x7C0, 0x966, 0x9E6, 0xA66, 0xAE6, 0xB66, 0xBE6, 0xC66, 0xCE6, 0xD66, 0xDE6,
        0xE50, 0xED0, 0xF20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80, 0x1A90,
        0x1B50, 0x1BB0, 0x1C40, 0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0,
        0xFF10, 0x104A0, 0x1D7CE, 0x1D7D8, 0x1D7E2, 0x1D7EC, 0x1D7F6,
    ];
    ZEROS.iter().any(|&z| (z..z + 10).contains(&u))
}

/// Go's `unicode.IsNumber` (categories N*).
pub fn is_number(c: char) -> bool {
    c.is_numeric()
}

/// Go's `unicode.IsPunct` (categories P*): in ASCII, `!"#%&'()*,-./:;?@[\]_{}` (not the
/// symbols `$+<=>^`|~`).
pub fn is_punct(c: char) -> bool {
    if c.is_ascii() {
        return matches!(
            c,
            '!' | '"'
                | '#'
                | '%'
                | '&'
                | '\''
                | '('
                | ')'
                | '*'
                | ','
                | '-'
                | '.'
                | '/'
                | ':'
                | ';'
                | '?'
                | '@'
                | '['
                | '\\'
                | ']'
                | '_'
                | '{'
                | '}'
        );
    }
    matches!(c,
        '\u{A1}' | '\u{A7}' | '\u{AB}' | '\u{B6}' | '\u{B7}' | '\u{BB}' | '\u{BF}'
        | '\u{37E}' | '\u{387}' | '\u{55A}'..='\u{55F}' | '\u{589}' | '\u{58A}'
        | '\u{2010}'..='\u{2027}' | '\u{2030}'..='\u{2043}' | '\u{2045}'..='\u{2051}'
        | '\u{2053}'..='\u{205E}' | '\u{207D}' | '\u{207E}' | '\u{208D}' | '\u{208E}'
        | '\u{2308}'..='\u{230B}' | '\u{2329}' | '\u{232A}' | '\u{2768}'..='\u{2775}'
        | '\u{27C5}' | '\u{27C6}' | '\u{27E6}'..='\u{27EF}' | '\u{2983}'..='\u{2998}'
        | '\u{29D8}'..='\u{29DB}' | '\u{29FC}' | '\u{29FD}' | '\u{2CF9}'..='\u{2CFC}'
        | '\u{2CFE}' | '\u{2CFF}' | '\u{2E00}'..='\u{2E2E}' | '\u{2E30}'..='\u{2E4F}'
        | '\u{3001}'..='\u{3003}' | '\u{3008}'..='\u{3011}' | '\u{3014}'..='\u{301F}'
        | '\u{3030}' | '\u{303D}' | '\u{30A0}' | '\u{30FB}' | '\u{FE10}'..='\u{FE19}'
        | '\u{FE30}'..='\u{FE52}' | '\u{FE54}'..='\u{FE61}' | '\u{FE63}' | '\u{FE68}'
        | '\u{FE6A}' | '\u{FE6B}' | '\u{FF01}'..='\u{FF03}' | '\u{FF05}'..='\u{FF0A}'
        | '\u{FF0C}'..='\u{FF0F}' | '\u{FF1A}' | '\u{FF1B}' | '\u{FF1F}' | '\u{FF20}'
        | '\u{FF3B}'..='\u{FF3D}' | '\u{FF3F}' | '\u{FF5B}' | '\u{FF5D}' | '\u{FF5F}'..='\u{FF65}')
}

/// Go's `strings.Title` (deprecated but what Sprig's `title` calls).
pub fn title(s: &str) -> String {
    let is_sep = |r: char| -> bool {
        if r.is_ascii() {
            return !(r.is_ascii_alphanumeric() || r == '_');
        }
        if is_letter(r) || is_digit(r) {
            return false;
        }
        is_space(r)
    };
    let mut prev = ' ';
    s.chars()
        .map(|r| {
            let out = if is_sep(prev) { to_title(r) } else { r };
            prev = r;
            out
        })
        .collect()
}

/// Go's `strings.TrimSpace`.
pub fn trim_space(s: &str) -> &str {
    s.trim_matches(is_space)
}

/// Text of Go bytes that may not be UTF-8: each byte that does not start a valid UTF-8
/// sequence becomes U+FFFD (what Go's `utf8.DecodeRune` and JSON encoder do).
pub fn lossy(b: &[u8]) -> String {
    match std::str::from_utf8(b) {
        Ok(s) => s.to_string(),
        Err(_) => {
            let mut out = String::with_capacity(b.len() + 8);
            let mut i = 0;
            while i < b.len() {
                let n = utf8_len(&b[i..]);
                if n == 0 {
                    out.push('\u{FFFD}');
                    i += 1;
                } else {
                    // Validated by utf8_len.
                    out.push_str(std::str::from_utf8(&b[i..i + n]).unwrap_or("\u{FFFD}"));
                    i += n;
                }
            }
            out
        }
    }
}

/// Length of the valid UTF-8 sequence at the start of `b`, 0 when it is not one.
fn utf8_len(b: &[u8]) -> usize {
    let n = match b.first() {
        Some(0..=0x7F) => 1,
        Some(0xC2..=0xDF) => 2,
        Some(0xE0..=0xEF) => 3,
        Some(0xF0..=0xF4) => 4,
        _ => return 0,
    };
    match b.get(..n).map(std::str::from_utf8) {
        Some(Ok(_)) => n,
        _ => 0,
    }
}

/// Go's `s[a:b]` on the bytes of `s`, with Go's run-time panic text for bad bounds
/// (`runtime error: slice bounds out of range [...]`).
pub fn slice_bytes(s: &str, a: Option<i64>, b: Option<i64>) -> Result<String, String> {
    let len = s.len() as i64;
    let hi = b.unwrap_or(len);
    let lo = a.unwrap_or(0);
    if let Some(b) = b {
        if b < 0 {
            return Err(format!("runtime error: slice bounds out of range [:{b}]"));
        }
        if b > len {
            return Err(format!(
                "runtime error: slice bounds out of range [:{b}] with length {len}"
            ));
        }
    }
    if lo < 0 {
        return Err(format!("runtime error: slice bounds out of range [{lo}:]"));
    }
    if lo > hi {
        return Err(format!(
            "runtime error: slice bounds out of range [{lo}:{hi}]"
        ));
    }
    Ok(lossy(&s.as_bytes()[lo as usize..hi as usize]))
}
