//! Go's `fmt.Sprintf` over template values, ported from `fmt/print.go` and `fmt/format.go`:
//! flags (`#0+- `), width and precision (also `*` and `[n]` argument indexes), every verb for
//! booleans, integers, floats, complex numbers, strings, slices and maps, `%T`, and Go's error
//! forms (`%!d(string=x)`, `%!v(MISSING)`, `%!(EXTRA ...)`, `%!(NOVERB)`, `%!(BADWIDTH)`).

use super::value::V;
use crate::go::float::format_float;
use crate::go::quote::{is_print, quote, quote_ascii, quote_rune};

/// Go `fmt.Sprintf(format, args...)`.
pub fn sprintf(format: &str, args: &[V<'_>]) -> String {
    let mut p = Printer::default();
    p.do_printf(format, args);
    p.buf
}

#[derive(Default, Clone, Copy)]
struct Flags {
    plus: bool,
    minus: bool,
    sharp: bool,
    space: bool,
    zero: bool,
    plus_v: bool,
    sharp_v: bool,
    wid: Option<usize>,
    prec: Option<usize>,
}

#[derive(Default)]
struct Printer {
    buf: String,
    f: Flags,
    good_arg_num: bool,
    reordered: bool,
}

const MAX_NUM: usize = 1_000_000;

/// Go's `parsenum`: digits from `i`; `None` when absent or too large (then `i` is `end`).
fn parsenum(b: &[u8], start: usize, end: usize) -> (Option<usize>, usize) {
    if start >= end {
        return (None, end);
    }
    let mut num: usize = 0;
    let mut isnum = false;
    let mut i = start;
    while i < end && b[i].is_ascii_digit() {
        if num > MAX_NUM {
            return (None, end);
        }
        num = num * 10 + usize::from(b[i] - b'0');
        isnum = true;
        i += 1;
    }
    (isnum.then_some(num), i)
}

/// Go's kind of a template value, for formatting.
enum Kind<'v, 'a> {
    Nil,
    Bool(bool),
    Signed(i64),
    Unsigned(u64),
    Float(f64),
    Complex(f64, f64),
    Str(&'v str),
    List(Vec<V<'a>>),
    Map(Vec<(String, V<'a>)>),
    /// A value printed through its `String()` method (enums, quantities, ...).
    Stringer(String),
    /// Anything else: printed with `fmt.Sprint` rules for `%v`/`%s`.
    Other,
}

fn kind<'v, 'a>(v: &'v V<'a>) -> Kind<'v, 'a> {
    match v {
        V::Missing | V::Nil => Kind::Nil,
        V::Bool(b) => Kind::Bool(*b),
        V::Int(i, _) => Kind::Signed(*i),
        V::Uint(u) => Kind::Unsigned(*u),
        V::Float(f) => Kind::Float(*f),
        V::Complex(re, im) => Kind::Complex(*re, *im),
        V::Str(s) => Kind::Str(s),
        V::NilOf(t) if t.starts_with("map[") => Kind::Map(Vec::new()),
        V::Enum(..) | V::Leaf(..) | V::Time(_) | V::Semver(..) => Kind::Stringer(v.sprint()),
        V::Json(serde_json::Value::Array(_))
        | V::List(_)
        | V::K8sSlice(..)
        | V::ProtoList(..)
        | V::TList(..)
        | V::NilOf(_) => Kind::List(super::value::to_list(v).unwrap_or_default()),
        V::Json(serde_json::Value::Object(_)) | V::Map(_) | V::StrMap(_) | V::StrMapJ(_) => {
            Kind::Map(super::value::map_entries(v))
        }
        _ => Kind::Other,
    }
}

impl Printer {
    fn write_padding(&mut self, n: usize) {
        let c = if self.f.zero { '0' } else { ' ' };
        for _ in 0..n {
            self.buf.push(c);
        }
    }

    /// Go's `fmt.pad` / `padString`: pad to the width, counting runes.
    fn pad(&mut self, s: &str) {
        let Some(w) = self.f.wid.filter(|&w| w > 0) else {
            self.buf.push_str(s);
            return;
        };
        let n = w.saturating_sub(s.chars().count());
        if self.f.minus {
            self.buf.push_str(s);
            self.write_padding(n);
        } else {
            self.write_padding(n);
            self.buf.push_str(s);
        }
    }

    fn pad_no_zero(&mut self, s: &str) {
        let z = self.f.zero;
        self.f.zero = false;
        self.pad(s);
        self.f.zero = z;
    }

    fn do_printf(&mut self, format: &str, a: &[V<'_>]) {
        let b = format.as_bytes();
        let end = b.len();
        let mut arg_num = 0usize;
        let mut after_index;
        self.reordered = false;
        let mut i = 0;
        'format: while i < end {
            self.good_arg_num = true;
            let last = i;
            while i < end && b[i] != b'%' {
                i += 1;
            }
            if i > last {
                self.buf.push_str(&format[last..i]);
            }
            if i >= end {
                break;
            }
            i += 1;
            self.f = Flags::default();
            while i < end {
                let c = b[i];
                match c {
                    b'#' => self.f.sharp = true,
                    b'0' => self.f.zero = !self.f.minus,
                    b'+' => self.f.plus = true,
                    b'-' => {
                        self.f.minus = true;
                        self.f.zero = false;
                    }
                    b' ' => self.f.space = true,
                    _ => {
                        if c.is_ascii_lowercase() && arg_num < a.len() {
                            if c == b'v' {
                                self.f.sharp_v = self.f.sharp;
                                self.f.sharp = false;
                                self.f.plus_v = self.f.plus;
                                self.f.plus = false;
                            }
                            self.print_arg(&a[arg_num], c as char);
                            arg_num += 1;
                            i += 1;
                            continue 'format;
                        }
                        break;
                    }
                }
                i += 1;
            }
            (arg_num, i, after_index) = self.arg_number(arg_num, b, i, a.len());
            if i < end && b[i] == b'*' {
                i += 1;
                let (n, ok, next) = int_from_arg(a, arg_num);
                arg_num = next;
                if !ok {
                    self.buf.push_str("%!(BADWIDTH)");
                    self.f.wid = None;
                } else if n < 0 {
                    self.f.wid = Some(n.unsigned_abs() as usize);
                    self.f.minus = true;
                    self.f.zero = false;
                } else {
                    self.f.wid = Some(n as usize);
                }
                after_index = false;
            } else {
                let (w, ni) = parsenum(b, i, end);
                self.f.wid = w;
                i = ni;
                if after_index && w.is_some() {
                    self.good_arg_num = false;
                }
            }
            if i + 1 < end && b[i] == b'.' {
                i += 1;
                if after_index {
                    self.good_arg_num = false;
                }
                (arg_num, i, after_index) = self.arg_number(arg_num, b, i, a.len());
                if i < end && b[i] == b'*' {
                    i += 1;
                    let (n, ok, next) = int_from_arg(a, arg_num);
                    arg_num = next;
                    if n < 0 || !ok {
                        self.f.prec = None;
                    } else {
                        self.f.prec = Some(n as usize);
                    }
                    if !ok {
                        self.buf.push_str("%!(BADPREC)");
                    }
                    after_index = false;
                } else {
                    let (p, ni) = parsenum(b, i, end);
                    i = ni;
                    self.f.prec = Some(p.unwrap_or(0));
                }
            }
            if !after_index {
                (arg_num, i, _) = self.arg_number(arg_num, b, i, a.len());
            }
            if i >= end {
                self.buf.push_str("%!(NOVERB)");
                break;
            }
            let verb = format[i..].chars().next().unwrap_or('?');
            i += verb.len_utf8();
            if verb == '%' {
                self.buf.push('%');
            } else if !self.good_arg_num {
                self.buf.push_str("%!");
                self.buf.push(verb);
                self.buf.push_str("(BADINDEX)");
            } else if arg_num >= a.len() {
                self.buf.push_str("%!");
                self.buf.push(verb);
                self.buf.push_str("(MISSING)");
            } else if verb == 'w' {
                self.bad_verb(verb, &a[arg_num]);
            } else {
                if verb == 'v' {
                    self.f.sharp_v = self.f.sharp;
                    self.f.sharp = false;
                    self.f.plus_v = self.f.plus;
                    self.f.plus = false;
                }
                self.print_arg(&a[arg_num], verb);
                arg_num += 1;
            }
        }
        if !self.reordered && arg_num < a.len() {
            self.f = Flags::default();
            self.buf.push_str("%!(EXTRA ");
            for (k, arg) in a[arg_num..].iter().enumerate() {
                if k > 0 {
                    self.buf.push_str(", ");
                }
                if matches!(arg, V::Nil | V::Missing) {
                    self.buf.push_str("<nil>");
                } else {
                    self.buf.push_str(&arg.type_name());
                    self.buf.push('=');
                    self.print_arg(arg, 'v');
                }
            }
            self.buf.push(')');
        }
    }

    fn arg_number(
        &mut self,
        arg_num: usize,
        b: &[u8],
        i: usize,
        num_args: usize,
    ) -> (usize, usize, bool) {
        if b.len() <= i || b[i] != b'[' {
            return (arg_num, i, false);
        }
        self.reordered = true;
        // Go's parseArgNumber.
        let rest = &b[i..];
        let (index, wid, ok) = 'parse: {
            if rest.len() < 3 {
                break 'parse (0usize, 1usize, false);
            }
            for k in 1..rest.len() {
                if rest[k] == b']' {
                    let (w, newi) = parsenum(rest, 1, k);
                    match w {
                        Some(w) if newi == k => break 'parse (w.wrapping_sub(1), k + 1, true),
                        _ => break 'parse (0, k + 1, false),
                    }
                }
            }
            (0, 1, false)
        };
        if ok && index < num_args {
            return (index, i + wid, true);
        }
        self.good_arg_num = false;
        (arg_num, i + wid, ok)
    }

    fn bad_verb(&mut self, verb: char, arg: &V<'_>) {
        self.buf.push_str("%!");
        self.buf.push(verb);
        self.buf.push('(');
        if matches!(arg, V::Nil | V::Missing) {
            self.buf.push_str("<nil>");
        } else {
            self.buf.push_str(&arg.type_name());
            self.buf.push('=');
            self.print_arg(arg, 'v');
        }
        self.buf.push(')');
    }

    fn print_arg(&mut self, arg: &V<'_>, verb: char) {
        if matches!(arg, V::Nil | V::Missing) {
            match verb {
                'T' | 'v' => self.pad("<nil>"),
                _ => self.bad_verb(verb, arg),
            }
            return;
        }
        if verb == 'T' {
            let t = arg.type_name();
            self.fmt_s(&t);
            return;
        }
        self.print_value(arg, verb, 0);
    }

    fn print_value(&mut self, v: &V<'_>, verb: char, depth: usize) {
        match kind(v) {
            Kind::Nil => {
                if self.f.sharp_v {
                    self.buf.push_str("interface {}(nil)");
                } else if verb == 'v' || depth > 0 {
                    self.buf.push_str("<nil>");
                } else {
                    self.bad_verb(verb, v);
                }
            }
            Kind::Bool(b) => match verb {
                't' | 'v' => self.pad(if b { "true" } else { "false" }),
                _ => self.bad_verb(verb, v),
            },
            Kind::Signed(i) => self.fmt_integer(i as u64, true, verb, v),
            Kind::Unsigned(u) => self.fmt_integer(u, false, verb, v),
            Kind::Float(f) => self.fmt_float_verb(f, verb, v),
            Kind::Complex(re, im) => match verb {
                'v' | 'b' | 'g' | 'G' | 'x' | 'X' | 'f' | 'F' | 'e' | 'E' => {
                    let old_plus = self.f.plus;
                    self.buf.push('(');
                    self.fmt_float_verb(re, verb, v);
                    self.f.plus = true;
                    self.fmt_float_verb(im, verb, v);
                    self.buf.push_str("i)");
                    self.f.plus = old_plus;
                }
                _ => self.bad_verb(verb, v),
            },
            Kind::Str(s) => self.fmt_string(s, verb, v),
            Kind::Stringer(s) => match verb {
                'v' | 's' | 'x' | 'X' | 'q' if !self.f.sharp_v => self.fmt_string(&s, verb, v),
                _ => match v {
                    V::Enum(_, n) => self.fmt_integer(*n as u64, true, verb, v),
                    _ => self.fmt_string(&s, verb, v),
                },
            },
            Kind::List(items) => {
                if self.f.sharp_v {
                    self.buf.push_str(&v.type_name());
                    self.buf.push('{');
                    for (k, x) in items.iter().enumerate() {
                        if k > 0 {
                            self.buf.push_str(", ");
                        }
                        self.print_value(x, verb, depth + 1);
                    }
                    self.buf.push('}');
                } else {
                    self.buf.push('[');
                    for (k, x) in items.iter().enumerate() {
                        if k > 0 {
                            self.buf.push(' ');
                        }
                        self.print_value(x, verb, depth + 1);
                    }
                    self.buf.push(']');
                }
            }
            Kind::Map(entries) => {
                let nil_map = matches!(v, V::StrMap(None) | V::StrMapJ(None) | V::NilOf(_));
                if self.f.sharp_v {
                    self.buf.push_str(&v.type_name());
                    if nil_map {
                        self.buf.push_str("(nil)");
                        return;
                    }
                    self.buf.push('{');
                } else {
                    self.buf.push_str("map[");
                }
                for (k, (key, x)) in entries.iter().enumerate() {
                    if k > 0 {
                        if self.f.sharp_v {
                            self.buf.push_str(", ");
                        } else {
                            self.buf.push(' ');
                        }
                    }
                    self.fmt_string(key, verb, &V::s(key));
                    self.buf.push(':');
                    self.print_value(x, verb, depth + 1);
                }
                self.buf.push(if self.f.sharp_v { '}' } else { ']' });
            }
            Kind::Other => match verb {
                'v' | 's' => {
                    let s = v.sprint();
                    self.pad(&s);
                }
                _ => self.bad_verb(verb, v),
            },
        }
    }

    fn fmt_s(&mut self, s: &str) {
        let s = self.truncate(s);
        self.pad(&s);
    }

    fn truncate(&self, s: &str) -> String {
        match self.f.prec {
            Some(p) => s.chars().take(p).collect(),
            None => s.to_string(),
        }
    }

    fn fmt_string(&mut self, s: &str, verb: char, v: &V<'_>) {
        match verb {
            'v' => {
                if self.f.sharp_v {
                    self.fmt_q(s);
                } else {
                    self.fmt_s(s);
                }
            }
            's' => self.fmt_s(s),
            'x' => self.fmt_sx(s, false),
            'X' => self.fmt_sx(s, true),
            'q' => self.fmt_q(s),
            _ => self.bad_verb(verb, v),
        }
    }

    fn fmt_q(&mut self, s: &str) {
        let s = self.truncate(s);
        if self.f.sharp && can_backquote(&s) {
            self.pad(&format!("`{s}`"));
            return;
        }
        let q = if self.f.plus {
            quote_ascii(&s)
        } else {
            quote(&s)
        };
        self.pad(&q);
    }

    fn fmt_sx(&mut self, s: &str, upper: bool) {
        let digits: &[u8] = if upper {
            b"0123456789ABCDEFX"
        } else {
            b"0123456789abcdefx"
        };
        let bytes = s.as_bytes();
        let mut length = bytes.len();
        if let Some(p) = self.f.prec {
            length = length.min(p);
        }
        let mut width = 2 * length;
        if width > 0 {
            if self.f.space {
                if self.f.sharp {
                    width *= 2;
                }
                width += length - 1;
            } else if self.f.sharp {
                width += 2;
            }
        } else {
            if let Some(w) = self.f.wid {
                self.write_padding(w);
            }
            return;
        }
        let wid = self.f.wid.unwrap_or(0);
        if wid > width && !self.f.minus {
            self.write_padding(wid - width);
        }
        if self.f.sharp {
            self.buf.push('0');
            self.buf.push(digits[16] as char);
        }
        for (i, &c) in bytes[..length].iter().enumerate() {
            if self.f.space && i > 0 {
                self.buf.push(' ');
                if self.f.sharp {
                    self.buf.push('0');
                    self.buf.push(digits[16] as char);
                }
            }
            self.buf.push(digits[usize::from(c >> 4)] as char);
            self.buf.push(digits[usize::from(c & 0xF)] as char);
        }
        if wid > width && self.f.minus {
            self.write_padding(wid - width);
        }
    }

    fn fmt_integer(&mut self, u: u64, signed: bool, verb: char, v: &V<'_>) {
        match verb {
            'v' => {
                if self.f.sharp_v && !signed {
                    let old = self.f.sharp;
                    self.f.sharp = true;
                    self.fmt_int_base(u, 16, signed, 'v', false);
                    self.f.sharp = old;
                } else {
                    self.fmt_int_base(u, 10, signed, verb, false);
                }
            }
            'd' => self.fmt_int_base(u, 10, signed, verb, false),
            'b' => self.fmt_int_base(u, 2, signed, verb, false),
            'o' | 'O' => self.fmt_int_base(u, 8, signed, verb, false),
            'x' => self.fmt_int_base(u, 16, signed, verb, false),
            'X' => self.fmt_int_base(u, 16, signed, verb, true),
            'c' => {
                let r = char_of(u);
                self.pad(&r.to_string());
            }
            'q' => {
                let r = char_of(u);
                let q = quote_rune(r, self.f.plus);
                self.pad(&q);
            }
            'U' => self.fmt_unicode(u),
            _ => self.bad_verb(verb, v),
        }
    }

    fn fmt_int_base(&mut self, mut u: u64, base: u64, signed: bool, verb: char, upper: bool) {
        let digits: &[u8] = if upper {
            b"0123456789ABCDEFX"
        } else {
            b"0123456789abcdefx"
        };
        let negative = signed && (u as i64) < 0;
        if negative {
            u = u.wrapping_neg();
        }
        let mut prec = 0usize;
        if let Some(p) = self.f.prec {
            prec = p;
            if p == 0 && u == 0 {
                let z = self.f.zero;
                self.f.zero = false;
                self.write_padding(self.f.wid.unwrap_or(0));
                self.f.zero = z;
                return;
            }
        } else if self.f.zero && self.f.wid.is_some() {
            prec = self.f.wid.unwrap_or(0);
            if negative || self.f.plus || self.f.space {
                prec = prec.saturating_sub(1);
            }
        }
        let mut rev: Vec<u8> = Vec::with_capacity(24);
        loop {
            rev.push(digits[(u % base) as usize]);
            u /= base;
            if u == 0 {
                break;
            }
        }
        while rev.len() < prec {
            rev.push(b'0');
        }
        if self.f.sharp {
            match base {
                2 => rev.extend_from_slice(b"b0"),
                8 if rev.last() != Some(&b'0') => rev.push(b'0'),
                16 => {
                    rev.push(digits[16]);
                    rev.push(b'0');
                }
                _ => {}
            }
        }
        if verb == 'O' {
            rev.extend_from_slice(b"o0");
        }
        if negative {
            rev.push(b'-');
        } else if self.f.plus {
            rev.push(b'+');
        } else if self.f.space {
            rev.push(b' ');
        }
        rev.reverse();
        let s = String::from_utf8(rev).unwrap_or_default();
        self.pad_no_zero(&s);
    }

    fn fmt_unicode(&mut self, u: u64) {
        let mut prec = 4usize;
        if let Some(p) = self.f.prec {
            if p > 4 {
                prec = p;
            }
        }
        let mut s = format!("{u:X}");
        while s.len() < prec {
            s.insert(0, '0');
        }
        s.insert_str(0, "U+");
        if self.f.sharp {
            if let Some(c) = u32::try_from(u).ok().and_then(char::from_u32) {
                if is_print(c) {
                    s.push_str(&format!(" '{c}'"));
                }
            }
        }
        self.pad_no_zero(&s);
    }

    fn fmt_float_verb(&mut self, f: f64, verb: char, v: &V<'_>) {
        let (fmt, prec) = match verb {
            'v' => ('g', -1),
            'b' | 'g' | 'G' | 'x' | 'X' => (verb, -1),
            'f' | 'e' | 'E' | 'F' => (verb, 6),
            _ => return self.bad_verb(verb, v),
        };
        self.fmt_float(f, fmt, prec);
    }

    fn fmt_float(&mut self, v: f64, verb: char, prec: i32) {
        let prec = self.f.prec.map_or(prec, |p| p as i32);
        let s = format_float(v, verb, prec);
        let mut num = if s.starts_with(['-', '+']) {
            s
        } else {
            format!("+{s}")
        };
        if self.f.space && num.starts_with('+') && !self.f.plus {
            num.replace_range(..1, " ");
        }
        if num[1..].starts_with(['I', 'N']) {
            if num[1..].starts_with('N') && !self.f.space && !self.f.plus {
                num.remove(0);
            }
            self.pad_no_zero(&num);
            return;
        }
        if self.f.sharp && verb != 'b' {
            let mut digits: i32 = match verb {
                'v' | 'g' | 'G' | 'x' => {
                    if prec == -1 {
                        6
                    } else {
                        prec
                    }
                }
                _ => 0,
            };
            let bytes: Vec<u8> = num.bytes().collect();
            let mut body: Vec<u8> = vec![bytes[0]];
            let mut tail: Vec<u8> = Vec::new();
            let mut has_point = false;
            let mut saw_nonzero = false;
            let mut k = 1;
            while k < bytes.len() {
                let c = bytes[k];
                match c {
                    b'.' => {
                        has_point = true;
                        body.push(c);
                    }
                    b'p' | b'P' => {
                        tail.extend_from_slice(&bytes[k..]);
                        break;
                    }
                    b'e' | b'E' if verb != 'x' && verb != 'X' => {
                        tail.extend_from_slice(&bytes[k..]);
                        break;
                    }
                    _ => {
                        if c != b'0' {
                            saw_nonzero = true;
                        }
                        if saw_nonzero {
                            digits -= 1;
                        }
                        body.push(c);
                    }
                }
                k += 1;
            }
            if !has_point {
                if body.len() == 2 && body[1] == b'0' {
                    digits -= 1;
                }
                body.push(b'.');
            }
            while digits > 0 {
                body.push(b'0');
                digits -= 1;
            }
            body.extend_from_slice(&tail);
            num = String::from_utf8(body).unwrap_or_default();
        }
        if self.f.plus || !num.starts_with('+') {
            let wid = self.f.wid.unwrap_or(0);
            if self.f.zero && self.f.wid.is_some() && wid > num.len() {
                let sign = num.remove(0);
                self.buf.push(sign);
                self.write_padding(wid - num.len() - 1);
                self.buf.push_str(&num);
                return;
            }
            self.pad(&num);
            return;
        }
        let rest = num[1..].to_string();
        self.pad(&rest);
    }
}

/// Go's `rune(c)` with out-of-range values as U+FFFD.
fn char_of(u: u64) -> char {
    u32::try_from(u)
        .ok()
        .and_then(char::from_u32)
        .unwrap_or('\u{FFFD}')
}

/// Go's `strconv.CanBackquote`.
pub(super) fn can_backquote(s: &str) -> bool {
    s.chars()
        .all(|c| c != '`' && c != '\u{FEFF}' && (c == '\t' || !(c < ' ' || c == '\u{7f}')))
}

/// Go's `intFromArg`: an `int`-kind argument used as width or precision.
fn int_from_arg(a: &[V<'_>], arg_num: usize) -> (i64, bool, usize) {
    let Some(v) = a.get(arg_num) else {
        return (0, false, arg_num);
    };
    let (n, ok) = match v {
        V::Int(i, _) => (*i, true),
        V::Uint(u) => match i64::try_from(*u) {
            Ok(i) => (i, true),
            Err(_) => (0, false),
        },
        V::Enum(_, i) => (*i, true),
        _ => (0, false),
    };
    if n.unsigned_abs() > MAX_NUM as u64 {
        return (0, false, arg_num + 1);
    }
    (n, ok, arg_num + 1)
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
