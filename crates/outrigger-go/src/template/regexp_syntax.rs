//! Go's `regexp/syntax` parser as far as it accepts or refuses (Perl flags, as
//! `regexp.Compile` parses): which patterns Go refuses that Rust's `regex` accepts and the
//! reverse, and Go's error for each (`error parsing regexp: CODE: ` + "`" + EXPR + "`", with
//! the fragment Go names). A pattern this accepts is translated for Rust's engine by
//! [`super::regexp::regex`]. Written from Go's rules (`parse.go` of Go 1.26): the parse stack's
//! shape (what a repetition applies to), counted repetitions and their nesting limit (1,000
//! copies), the nesting depth (1,000) and the compiled size (128 MiB of instructions); the
//! last two on a tree shaped as Go's before simplification, an approximation at the limits.

/// Go's `regexp/syntax` error: its code's text and the fragment it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    /// `ErrorCode.String()`.
    pub code: &'static str,
    /// The part of the pattern Go names.
    pub expr: String,
}

impl std::fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "error parsing regexp: {}: `{}`", self.code, self.expr)
    }
}

const MISSING_PAREN: &str = "missing closing )";
const UNEXPECTED_PAREN: &str = "unexpected )";
const MISSING_BRACKET: &str = "missing closing ]";
const INVALID_CHAR_RANGE: &str = "invalid character class range";
const INVALID_ESCAPE: &str = "invalid escape sequence";
const INVALID_NAMED_CAPTURE: &str = "invalid named capture";
const INVALID_PERL_OP: &str = "invalid or unsupported Perl syntax";
const INVALID_REPEAT_OP: &str = "invalid nested repetition operator";
const INVALID_REPEAT_SIZE: &str = "invalid repeat count";
const MISSING_REPEAT_ARGUMENT: &str = "missing argument to repetition operator";
const TRAILING_BACKSLASH: &str = "trailing backslash at end of expression";
const NESTING_DEPTH: &str = "expression nests too deeply";
const LARGE: &str = "expression too large";

/// Go's limits: `maxHeight`, `maxSize` (instructions in 128 MiB).
const MAX_HEIGHT: usize = 1000;
const MAX_SIZE: i64 = (128 << 20) / 40;

/// `unicode.Categories`' keys (Go 1.26).
const CATEGORIES: &[&str] = &[
    "C", "Cc", "Cf", "Cn", "Co", "Cs", "L", "LC", "Ll", "Lm", "Lo", "Lt", "Lu", "M", "Mc", "Me",
    "Mn", "N", "Nd", "Nl", "No", "P", "Pc", "Pd", "Pe", "Pf", "Pi", "Po", "Ps", "S", "Sc", "Sk",
    "Sm", "So", "Z", "Zl", "Zp", "Zs",
];

/// `unicode.Scripts`' keys (Go 1.26).
const SCRIPTS: &[&str] = &[
    "Adlam",
    "Ahom",
    "Anatolian_Hieroglyphs",
    "Arabic",
    "Armenian",
    "Avestan",
    "Balinese",
    "Bamum",
    "Bassa_Vah",
    "Batak",
    "Bengali",
    "Bhaiksuki",
    "Bopomofo",
    "Brahmi",
    "Braille",
    "Buginese",
    "Buhid",
    "Canadian_Aboriginal",
    "Carian",
    "Caucasian_Albanian",
    "Chakma",
    "Cham",
    "Cherokee",
    "Chorasmian",
    "Common",
    "Coptic",
    "Cuneiform",
    "Cypriot",
    "Cypro_Minoan",
    "Cyrillic",
    "Deseret",
    "Devanagari",
    "Dives_Akuru",
    "Dogra",
    "Duployan",
    "Egyptian_Hieroglyphs",
    "Elbasan",
    "Elymaic",
    "Ethiopic",
    "Georgian",
    "Glagolitic",
    "Gothic",
    "Grantha",
    "Greek",
    "Gujarati",
    "Gunjala_Gondi",
    "Gurmukhi",
    "Han",
    "Hangul",
    "Hanifi_Rohingya",
    "Hanunoo",
    "Hatran",
    "Hebrew",
    "Hiragana",
    "Imperial_Aramaic",
    "Inherited",
    "Inscriptional_Pahlavi",
    "Inscriptional_Parthian",
    "Javanese",
    "Kaithi",
    "Kannada",
    "Katakana",
    "Kawi",
    "Kayah_Li",
    "Kharoshthi",
    "Khitan_Small_Script",
    "Khmer",
    "Khojki",
    "Khudawadi",
    "Lao",
    "Latin",
    "Lepcha",
    "Limbu",
    "Linear_A",
    "Linear_B",
    "Lisu",
    "Lycian",
    "Lydian",
    "Mahajani",
    "Makasar",
    "Malayalam",
    "Mandaic",
    "Manichaean",
    "Marchen",
    "Masaram_Gondi",
    "Medefaidrin",
    "Meetei_Mayek",
    "Mende_Kikakui",
    "Meroitic_Cursive",
    "Meroitic_Hieroglyphs",
    "Miao",
    "Modi",
    "Mongolian",
    "Mro",
    "Multani",
    "Myanmar",
    "Nabataean",
    "Nag_Mundari",
    "Nandinagari",
    "New_Tai_Lue",
    "Newa",
    "Nko",
    "Nushu",
    "Nyiakeng_Puachue_Hmong",
    "Ogham",
    "Ol_Chiki",
    "Old_Hungarian",
    "Old_Italic",
    "Old_North_Arabian",
    "Old_Permic",
    "Old_Persian",
    "Old_Sogdian",
    "Old_South_Arabian",
    "Old_Turkic",
    "Old_Uyghur",
    "Oriya",
    "Osage",
    "Osmanya",
    "Pahawh_Hmong",
    "Palmyrene",
    "Pau_Cin_Hau",
    "Phags_Pa",
    "Phoenician",
    "Psalter_Pahlavi",
    "Rejang",
    "Runic",
    "Samaritan",
    "Saurashtra",
    "Sharada",
    "Shavian",
    "Siddham",
    "SignWriting",
    "Sinhala",
    "Sogdian",
    "Sora_Sompeng",
    "Soyombo",
    "Sundanese",
    "Syloti_Nagri",
    "Syriac",
    "Tagalog",
    "Tagbanwa",
    "Tai_Le",
    "Tai_Tham",
    "Tai_Viet",
    "Takri",
    "Tamil",
    "Tangsa",
    "Tangut",
    "Telugu",
    "Thaana",
    "Thai",
    "Tibetan",
    "Tifinagh",
    "Tirhuta",
    "Toto",
    "Ugaritic",
    "Vai",
    "Vithkuqi",
    "Wancho",
    "Warang_Citi",
    "Yezidi",
    "Yi",
    "Zanabazar_Square",
];

/// `unicode.CategoryAliases` (Go 1.26): long name, category.
const CATEGORY_ALIASES: &[(&str, &str)] = &[
    ("Cased_Letter", "LC"),
    ("Close_Punctuation", "Pe"),
    ("Combining_Mark", "M"),
    ("Connector_Punctuation", "Pc"),
    ("Control", "Cc"),
    ("Currency_Symbol", "Sc"),
    ("Dash_Punctuation", "Pd"),
    ("Decimal_Number", "Nd"),
    ("Enclosing_Mark", "Me"),
    ("Final_Punctuation", "Pf"),
    ("Format", "Cf"),
    ("Initial_Punctuation", "Pi"),
    ("Letter", "L"),
    ("Letter_Number", "Nl"),
    ("Line_Separator", "Zl"),
    ("Lowercase_Letter", "Ll"),
    ("Mark", "M"),
    ("Math_Symbol", "Sm"),
    ("Modifier_Letter", "Lm"),
    ("Modifier_Symbol", "Sk"),
    ("Nonspacing_Mark", "Mn"),
    ("Number", "N"),
    ("Open_Punctuation", "Ps"),
    ("Other", "C"),
    ("Other_Letter", "Lo"),
    ("Other_Number", "No"),
    ("Other_Punctuation", "Po"),
    ("Other_Symbol", "So"),
    ("Paragraph_Separator", "Zp"),
    ("Private_Use", "Co"),
    ("Punctuation", "P"),
    ("Separator", "Z"),
    ("Space_Separator", "Zs"),
    ("Spacing_Mark", "Mc"),
    ("Surrogate", "Cs"),
    ("Symbol", "S"),
    ("Titlecase_Letter", "Lt"),
    ("Unassigned", "Cn"),
    ("Uppercase_Letter", "Lu"),
    ("cntrl", "Cc"),
    ("digit", "Nd"),
    ("punct", "P"),
];

/// POSIX classes Go knows inside brackets (`[:alpha:]`, `[:^alpha:]`).
const POSIX: &[&str] = &[
    "alnum", "alpha", "ascii", "blank", "cntrl", "digit", "graph", "lower", "print", "punct",
    "space", "upper", "word", "xdigit",
];

/// Go's `canonicalName`: a leading upper-case letter, then lower-case, without `_`, `-`, ` `.
fn canonical_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut first = true;
    for c in name.bytes() {
        match c {
            b'_' | b'-' | b' ' => {}
            _ if first => {
                out.push(c.to_ascii_uppercase() as char);
                first = false;
            }
            _ => out.push(c.to_ascii_lowercase() as char),
        }
    }
    out
}

/// What a Go Unicode class name stands for, in terms Rust's `regex` reads: `None` when Go does
/// not know the name. `\p{Any}`, `\p{Assigned}`, `\p{ASCII}`, a general category or a script.
pub fn unicode_class(name: &str) -> Option<String> {
    let name = canonical_name(name);
    match name.as_str() {
        "Any" => return Some("Any".into()),
        "Assigned" => return Some("Assigned".into()),
        "Ascii" => return Some("ASCII".into()),
        "Lc" => return Some("gc=LC".into()),
        _ => {}
    }
    if CATEGORIES.contains(&name.as_str()) {
        return Some(format!("gc={name}"));
    }
    if SCRIPTS.contains(&name.as_str()) {
        return Some(format!("sc={name}"));
    }
    CATEGORY_ALIASES
        .iter()
        .find(|(long, _)| canonical_name(long) == name)
        .map(|(_, short)| format!("gc={short}"))
}

/// A node of the tree Go's parser builds, as far as its limits need it.
#[derive(Debug)]
enum Node {
    /// A literal rune, a class, an assertion: size 1, height 1.
    Leaf,
    /// The empty expression.
    Empty,
    Concat(Vec<Node>),
    Alternate(Vec<Node>),
    Capture(Box<Node>),
    /// `*` (min 0, max -1, star), `+`, `?`, `{min,max}` (max -1: unbounded).
    Repeat {
        op: RepeatOp,
        min: i64,
        max: i64,
        sub: Box<Node>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RepeatOp {
    Star,
    Plus,
    Quest,
    Counted,
}

impl Node {
    /// Go's `calcSize` (instructions of the compiled program, pessimistically).
    fn size(&self) -> i64 {
        let s = match self {
            Node::Leaf | Node::Empty => 1,
            Node::Concat(v) => v.iter().map(Node::size).sum(),
            Node::Alternate(v) => {
                v.iter().map(Node::size).sum::<i64>() + (v.len() as i64 - 1).max(0)
            }
            Node::Capture(s) => 2 + s.size(),
            Node::Repeat { op, min, max, sub } => {
                let sub = sub.size();
                match op {
                    RepeatOp::Star => 2 + sub,
                    RepeatOp::Plus | RepeatOp::Quest => 1 + sub,
                    RepeatOp::Counted if *max == -1 && *min == 0 => 2 + sub,
                    RepeatOp::Counted if *max == -1 => 1i64.saturating_add(min.saturating_mul(sub)),
                    RepeatOp::Counted => max.saturating_mul(sub).saturating_add(max - min),
                }
            }
        };
        s.max(1)
    }

    /// Go's `calcHeight`.
    fn height(&self) -> usize {
        1 + match self {
            Node::Leaf | Node::Empty => 0,
            Node::Concat(v) | Node::Alternate(v) => v.iter().map(Node::height).max().unwrap_or(0),
            Node::Capture(s) | Node::Repeat { sub: s, .. } => s.height(),
        }
    }

    /// Go's `repeatIsValid`: nested counted repetitions make at most `n` copies.
    fn repeat_is_valid(&self, mut n: i64) -> bool {
        if let Node::Repeat {
            op: RepeatOp::Counted,
            min,
            max,
            ..
        } = self
        {
            let mut m = *max;
            if m == 0 {
                return true;
            }
            if m < 0 {
                m = *min;
            }
            if m > n {
                return false;
            }
            if m > 0 {
                n /= m;
            }
        }
        match self {
            Node::Leaf | Node::Empty => true,
            Node::Concat(v) | Node::Alternate(v) => v.iter().all(|s| s.repeat_is_valid(n)),
            Node::Capture(s) | Node::Repeat { sub: s, .. } => s.repeat_is_valid(n),
        }
    }
}

/// One open group: its alternatives so far (each a sequence), and whether it captures.
struct Frame {
    alts: Vec<Vec<Node>>,
    capture: bool,
}

fn collapse(mut v: Vec<Node>, alternate: bool) -> Node {
    match v.len() {
        0 => Node::Empty,
        1 => v.pop().unwrap_or(Node::Empty),
        _ if alternate => Node::Alternate(v),
        _ => Node::Concat(v),
    }
}

fn close(f: Frame) -> Node {
    let alts: Vec<Node> = f.alts.into_iter().map(|a| collapse(a, false)).collect();
    let n = collapse(alts, true);
    if f.capture {
        Node::Capture(Box::new(n))
    } else {
        n
    }
}

fn err(code: &'static str, expr: &str) -> SyntaxError {
    SyntaxError {
        code,
        expr: expr.to_string(),
    }
}

/// The first rune of `s` and its length (Go's `nextRune`; `s` is UTF-8).
fn next_rune(s: &str) -> (char, usize) {
    s.chars()
        .next()
        .map_or(('\u{FFFD}', 0), |c| (c, c.len_utf8()))
}

fn unhex(c: char) -> Option<u32> {
    c.to_digit(16)
}

/// Go's `parseEscape` at `s` (starting with `\`): the rune and the length of the escape.
fn parse_escape(s: &str) -> Result<(char, usize), SyntaxError> {
    let t = &s[1..];
    if t.is_empty() {
        return Err(err(TRAILING_BACKSLASH, ""));
    }
    let (c, n) = next_rune(t);
    let mut used = 1 + n;
    let bad = |used: usize| err(INVALID_ESCAPE, &s[..used]);
    match c {
        '1'..='7' if !matches!(s.as_bytes().get(used), Some(b'0'..=b'7')) => Err(bad(used)),
        '0'..='7' => {
            let mut r = c as u32 - '0' as u32;
            for _ in 1..3 {
                match s.as_bytes().get(used) {
                    Some(d @ b'0'..=b'7') => {
                        r = r * 8 + u32::from(d - b'0');
                        used += 1;
                    }
                    _ => break,
                }
            }
            Ok((char::from_u32(r).unwrap_or('\0'), used))
        }
        'x' => {
            if used == s.len() {
                return Err(bad(used));
            }
            let (c2, n2) = next_rune(&s[used..]);
            used += n2;
            if c2 == '{' {
                let mut r: u32 = 0;
                let mut nhex = 0;
                loop {
                    if used == s.len() {
                        return Err(bad(used));
                    }
                    let (d, nd) = next_rune(&s[used..]);
                    used += nd;
                    if d == '}' {
                        break;
                    }
                    let Some(v) = unhex(d) else {
                        return Err(bad(used));
                    };
                    r = r * 16 + v;
                    if r > 0x10FFFF {
                        return Err(bad(used));
                    }
                    nhex += 1;
                }
                if nhex == 0 {
                    return Err(bad(used));
                }
                // Surrogates are not Rust chars; Go's regexp matches none of them in UTF-8 text.
                return Ok((char::from_u32(r).unwrap_or('\u{FFFD}'), used));
            }
            let (c3, n3) = next_rune(&s[used..]);
            used += n3;
            match (unhex(c2), unhex(c3)) {
                (Some(x), Some(y)) if n3 > 0 => {
                    Ok((char::from_u32(x * 16 + y).unwrap_or('\0'), used))
                }
                _ => Err(bad(used)),
            }
        }
        'a' => Ok(('\u{7}', used)),
        'f' => Ok(('\u{c}', used)),
        'n' => Ok(('\n', used)),
        'r' => Ok(('\r', used)),
        't' => Ok(('\t', used)),
        'v' => Ok(('\u{b}', used)),
        c if c.is_ascii() && !c.is_ascii_alphanumeric() => Ok((c, used)),
        _ => Err(bad(used)),
    }
}

/// Go's `parseUnicodeClass` at `s` (starting with `\p` or `\P`): the length of the class.
fn parse_unicode_class(s: &str) -> Result<usize, SyntaxError> {
    let t = &s[2..];
    let (c, n) = next_rune(t);
    let (seq, name) = if c != '{' {
        let seq = &s[..2 + n];
        (seq, &seq[2..])
    } else {
        let Some(end) = s.find('}') else {
            return Err(err(INVALID_CHAR_RANGE, s));
        };
        (&s[..end + 1], &s[3..end])
    };
    let name = name.strip_prefix('^').unwrap_or(name);
    if unicode_class(name).is_none() {
        return Err(err(INVALID_CHAR_RANGE, seq));
    }
    Ok(seq.len())
}

fn is_perl_class(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2 && b[0] == b'\\' && matches!(b[1], b'd' | b'D' | b's' | b'S' | b'w' | b'W')
}

/// Go's `parseClass` at `s` (starting with `[`): the length of the class.
fn parse_class(s: &str) -> Result<usize, SyntaxError> {
    let mut i = 1;
    if s[i..].starts_with('^') {
        i += 1;
    }
    let mut first = true;
    loop {
        let t = &s[i..];
        if !t.is_empty() && t.starts_with(']') && !first {
            return Ok(i + 1);
        }
        first = false;
        if t.len() > 2 && t.starts_with("[:") {
            if let Some(j) = t[2..].find(":]") {
                let name = &t[..j + 4];
                let inner = &name[2..name.len() - 2];
                if !POSIX.contains(&inner.strip_prefix('^').unwrap_or(inner)) {
                    return Err(err(INVALID_CHAR_RANGE, name));
                }
                i += name.len();
                continue;
            }
        }
        if t.starts_with("\\p") || t.starts_with("\\P") {
            i += parse_unicode_class(t)?;
            continue;
        }
        if is_perl_class(t) {
            i += 2;
            continue;
        }
        let (lo, n) = class_char(t, s)?;
        let mut j = i + n;
        let rest = &s[j..];
        if rest.len() >= 2 && rest.starts_with('-') && !rest[1..].starts_with(']') {
            j += 1;
            let (hi, m) = class_char(&s[j..], s)?;
            j += m;
            if hi < lo {
                return Err(err(INVALID_CHAR_RANGE, &s[i..j]));
            }
        }
        i = j;
    }
}

/// Go's `parseClassChar`: a character of a class (an escape or a rune) and its length.
fn class_char(t: &str, whole_class: &str) -> Result<(char, usize), SyntaxError> {
    if t.is_empty() {
        return Err(err(MISSING_BRACKET, whole_class));
    }
    if t.starts_with('\\') {
        return parse_escape(t);
    }
    Ok(next_rune(t))
}

/// Go's `parseRepeat` at `s` (starting with `{`): `(min, max, length)`, max -1 for `{n,}`,
/// min -1 for a number too big; `None` when `s` is no repetition (the `{` is a literal).
fn parse_repeat(s: &str) -> Option<(i64, i64, usize)> {
    let b = s.as_bytes();
    let int = |i: usize| -> Option<(i64, usize)> {
        let d = b.get(i).filter(|c| c.is_ascii_digit())?;
        if *d == b'0' && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
            return None;
        }
        let mut j = i;
        let mut n: i64 = 0;
        while let Some(c) = b.get(j).filter(|c| c.is_ascii_digit()) {
            if n >= 100_000_000 {
                n = -1;
            } else if n >= 0 {
                n = n * 10 + i64::from(c - b'0');
            }
            j += 1;
        }
        Some((n, j))
    };
    let (mut min, mut i) = int(1)?;
    let max;
    match b.get(i)? {
        b',' => {
            i += 1;
            if *b.get(i)? == b'}' {
                max = -1;
            } else {
                let (m, j) = int(i)?;
                i = j;
                max = m;
                if m < 0 {
                    min = -1;
                }
            }
        }
        _ => max = min,
    }
    (*b.get(i)? == b'}').then_some((min, max, i + 1))
}

/// Go's `parsePerlFlags` at `s` (starting with `(?`): the length read and whether it opens a
/// group (and a capturing one).
fn parse_perl_flags(s: &str) -> Result<(usize, Option<bool>), SyntaxError> {
    let b = s.as_bytes();
    let with_p = b.len() > 4 && b[2] == b'P' && b[3] == b'<';
    let with_name = b.len() > 3 && b[2] == b'<';
    if with_p || with_name {
        let start = if with_p { 4 } else { 3 };
        let Some(end) = s.find('>') else {
            return Err(err(INVALID_NAMED_CAPTURE, s));
        };
        let name = &s[start..end];
        if name.is_empty() || !name.bytes().all(|c| c == b'_' || c.is_ascii_alphanumeric()) {
            return Err(err(INVALID_NAMED_CAPTURE, &s[..end + 1]));
        }
        return Ok((end + 1, Some(true)));
    }
    let mut i = 2;
    let mut negated = false;
    let mut saw_flag = false;
    while i < s.len() {
        let (c, n) = next_rune(&s[i..]);
        i += n;
        match c {
            'i' | 'm' | 's' | 'U' => saw_flag = true,
            '-' if !negated => {
                negated = true;
                saw_flag = false;
            }
            ':' | ')' if !negated || saw_flag => {
                return Ok((i, (c == ':').then_some(false)));
            }
            _ => break,
        }
    }
    Err(err(INVALID_PERL_OP, &s[..i]))
}

/// The sequence being built: the last alternative of the innermost group.
fn cur(frames: &mut [Frame]) -> &mut Vec<Node> {
    frames
        .last_mut()
        .and_then(|f| f.alts.last_mut())
        .expect("a frame with an alternative")
}

/// Check `re` as Go's `regexp.Compile` parses it (`syntax.Perl`).
pub fn check(re: &str) -> Result<(), SyntaxError> {
    let whole = re;
    let mut frames = vec![Frame {
        alts: vec![Vec::new()],
        capture: false,
    }];
    let large = || err(LARGE, whole);
    let deep = || err(NESTING_DEPTH, whole);
    let mut i = 0;
    let mut last_repeat: Option<usize> = None;
    while i < re.len() {
        let t = &re[i..];
        let mut repeat = None;
        match t.as_bytes()[0] {
            b'(' if t.as_bytes().get(1) == Some(&b'?') => {
                let (n, group) = parse_perl_flags(t)?;
                if let Some(capture) = group {
                    frames.push(Frame {
                        alts: vec![Vec::new()],
                        capture,
                    });
                }
                i += n;
            }
            b'(' => {
                frames.push(Frame {
                    alts: vec![Vec::new()],
                    capture: true,
                });
                i += 1;
            }
            b'|' => {
                frames
                    .last_mut()
                    .expect("the outer frame")
                    .alts
                    .push(Vec::new());
                i += 1;
            }
            b')' => {
                if frames.len() < 2 {
                    return Err(err(UNEXPECTED_PAREN, whole));
                }
                let f = frames.pop().expect("an open group");
                let node = close(f);
                if node.height() > MAX_HEIGHT {
                    return Err(deep());
                }
                cur(&mut frames).push(node);
                i += 1;
            }
            b'[' => {
                i += parse_class(t)?;
                cur(&mut frames).push(Node::Leaf);
            }
            c @ (b'*' | b'+' | b'?' | b'{') => {
                let (op, min, max, mut after) = if c == b'{' {
                    match parse_repeat(t) {
                        None => {
                            // Not a repetition: `{` is a literal.
                            cur(&mut frames).push(Node::Leaf);
                            i += 1;
                            last_repeat = None;
                            continue;
                        }
                        Some((min, max, n)) => {
                            if !(0..=1000).contains(&min) || max > 1000 || (max >= 0 && min > max) {
                                return Err(err(INVALID_REPEAT_SIZE, &t[..n]));
                            }
                            (RepeatOp::Counted, min, max, i + n)
                        }
                    }
                } else {
                    let op = match c {
                        b'*' => RepeatOp::Star,
                        b'+' => RepeatOp::Plus,
                        _ => RepeatOp::Quest,
                    };
                    (op, 0, 0, i + 1)
                };
                if re.as_bytes().get(after) == Some(&b'?') {
                    after += 1;
                }
                if let Some(l) = last_repeat {
                    return Err(err(INVALID_REPEAT_OP, &re[l..after]));
                }
                let seq = cur(&mut frames);
                let Some(sub) = seq.pop() else {
                    return Err(err(MISSING_REPEAT_ARGUMENT, &re[i..after]));
                };
                let node = Node::Repeat {
                    op,
                    min,
                    max,
                    sub: Box::new(sub),
                };
                if op == RepeatOp::Counted && (min >= 2 || max >= 2) && !node.repeat_is_valid(1000)
                {
                    return Err(err(INVALID_REPEAT_SIZE, &re[i..after]));
                }
                if node.size() > MAX_SIZE {
                    return Err(large());
                }
                if node.height() > MAX_HEIGHT {
                    return Err(deep());
                }
                seq.push(node);
                repeat = Some(i);
                i = after;
            }
            b'\\' => {
                let b = t.as_bytes();
                let n = match b.get(1) {
                    Some(b'A' | b'b' | b'B' | b'z') => 2,
                    Some(b'C') => return Err(err(INVALID_ESCAPE, &t[..2])),
                    Some(b'Q') => {
                        let body = &t[2..];
                        let (lit, used) = match body.find("\\E") {
                            Some(e) => (&body[..e], 2 + e + 2),
                            None => (body, t.len()),
                        };
                        let seq = cur(&mut frames);
                        for _ in lit.chars() {
                            seq.push(Node::Leaf);
                        }
                        i += used;
                        last_repeat = None;
                        continue;
                    }
                    Some(b'p' | b'P') => parse_unicode_class(t)?,
                    _ if is_perl_class(t) => 2,
                    _ => parse_escape(t)?.1,
                };
                cur(&mut frames).push(Node::Leaf);
                i += n;
            }
            _ => {
                let (_, n) = next_rune(t);
                cur(&mut frames).push(Node::Leaf);
                i += n;
            }
        }
        last_repeat = repeat;
    }
    if frames.len() != 1 {
        return Err(err(MISSING_PAREN, whole));
    }
    let root = close(frames.pop().expect("the outer frame"));
    if root.size() > MAX_SIZE {
        return Err(large());
    }
    if root.height() > MAX_HEIGHT {
        return Err(deep());
    }
    Ok(())
}
