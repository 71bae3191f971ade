//! Sprig's case functions (`snakecase`, `kebabcase`, `camelcase`, ...): ports of xstrings
//! 1.3.3's word splitting (snake and kebab case) and of v1.5.0's `ToPascalCase` (camel case).

use super::*;

/// xstrings 1.3.3 word kinds.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Word {
    Invalid,
    Number,
    Upper,
    Alphabet,
    Connector,
    Punct,
    Other,
}

fn is_connector(r: char) -> bool {
    r == '-' || r == '_' || crate::template::gostr::is_space(r)
}

/// xstrings' `isAlphabet`: a letter that is not a CJK ideograph.
fn is_alphabet(r: char) -> bool {
    crate::template::gostr::is_letter(r)
        && !matches!(r, '\u{4E00}'..='\u{9FCC}' | '\u{3400}'..='\u{4D85}' | '\u{20000}'..='\u{2B81D}')
}

/// xstrings 1.3.3 `nextWord`.
fn next_word(s: &str) -> (Word, &str, &str) {
    use crate::template::gostr::{is_number, is_punct, is_upper};
    if s.is_empty() {
        return (Word::Invalid, "", "");
    }
    let mut chars = s.char_indices().peekable();
    let (_, r) = chars.next().unwrap_or((0, ' '));
    let mut offset = r.len_utf8();
    let take_while = |offset: &mut usize, pred: &dyn Fn(char) -> bool| {
        for c in s[*offset..].chars() {
            if !pred(c) {
                break;
            }
            *offset += c.len_utf8();
        }
    };
    let wt = if is_connector(r) {
        take_while(&mut offset, &is_connector);
        Word::Connector
    } else if is_punct(r) {
        take_while(&mut offset, &is_punct);
        Word::Punct
    } else if is_upper(r) {
        let rest = &s[offset..];
        if let Some(r2) = rest.chars().next() {
            if is_upper(r2) {
                let mut prev_size = r2.len_utf8();
                offset += r2.len_utf8();
                let mut last = r2;
                for c in s[offset..].chars() {
                    last = c;
                    if !is_upper(c) {
                        break;
                    }
                    prev_size = c.len_utf8();
                    offset += c.len_utf8();
                }
                if offset < s.len() && is_alphabet(last) {
                    offset -= prev_size;
                }
            } else if is_alphabet(r2) {
                offset += r2.len_utf8();
                take_while(&mut offset, &|c| is_alphabet(c) && !is_upper(c));
            }
        }
        Word::Upper
    } else if is_alphabet(r) {
        take_while(&mut offset, &|c| is_alphabet(c) && !is_upper(c));
        Word::Alphabet
    } else if is_number(r) {
        take_while(&mut offset, &is_number);
        Word::Number
    } else {
        take_while(&mut offset, &|c| {
            !(is_connector(c) || is_alphabet(c) || is_number(c) || is_punct(c))
        });
        Word::Other
    };
    (wt, &s[..offset], &s[offset..])
}

/// xstrings 1.3.3 `toLower`.
fn word_lower(out: &mut String, wt: Word, w: &str, connector: char) {
    if wt != Word::Upper && wt != Word::Connector {
        out.push_str(w);
        return;
    }
    for c in w.chars() {
        if is_connector(c) {
            out.push(connector);
        } else if crate::template::gostr::is_upper(c) {
            out.push(crate::template::gostr::to_lower(c));
        } else {
            out.push(c);
        }
    }
}

/// xstrings 1.3.3 `camelCaseToLowerCase` (`snakecase`, `kebabcase`).
fn camel_to_lower(s: &str, connector: char) -> String {
    if s.is_empty() {
        return String::new();
    }
    let mut out = String::with_capacity(s.len() + 4);
    let (mut wt, mut word, mut remaining) = next_word(s);
    while !remaining.is_empty() {
        if wt != Word::Connector {
            word_lower(&mut out, wt, word, connector);
        }
        let prev = wt;
        let last = word;
        (wt, word, remaining) = next_word(remaining);
        match prev {
            Word::Number => {
                while wt == Word::Alphabet || wt == Word::Number {
                    word_lower(&mut out, wt, word, connector);
                    (wt, word, remaining) = next_word(remaining);
                }
                if wt != Word::Invalid && wt != Word::Punct && wt != Word::Connector {
                    out.push(connector);
                }
            }
            Word::Connector => word_lower(&mut out, prev, last, connector),
            Word::Punct => {}
            _ => {
                if wt != Word::Number {
                    if wt != Word::Connector && wt != Word::Punct {
                        out.push(connector);
                    }
                    continue;
                }
                if remaining.is_empty() {
                    continue;
                }
                let last = word;
                (wt, word, remaining) = next_word(remaining);
                if wt != Word::Alphabet {
                    word_lower(&mut out, Word::Number, last, connector);
                    if wt != Word::Connector && wt != Word::Punct {
                        out.push(connector);
                    }
                    continue;
                }
                out.push(connector);
                word_lower(&mut out, Word::Number, last, connector);
                while wt == Word::Alphabet || wt == Word::Number {
                    word_lower(&mut out, wt, word, connector);
                    (wt, word, remaining) = next_word(remaining);
                }
                if wt != Word::Invalid && wt != Word::Connector && wt != Word::Punct {
                    out.push(connector);
                }
            }
        }
    }
    word_lower(&mut out, wt, word, connector);
    out
}

/// xstrings v1.5.0 `ToPascalCase`, which Sprig 3.3.0's `camelcase` calls: connectors dropped
/// (but for a run's extra ones and leading ones), the first letter of the text and of each word
/// after a connector upper-cased, and in a word that began upper-case the upper-case letters
/// following it lower-cased up to its first other rune (`"GOLANG_IS_GREAT"` gives
/// `"GolangIsGreat"`, `"fooBar_baz"` gives `"FooBarBaz"`).
fn to_pascal(s: &str) -> String {
    use crate::template::gostr::{is_upper, to_lower, to_upper};
    if s.is_empty() {
        return String::new();
    }
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars();
    let mut r0 = ' ';
    let mut any = false;
    let mut upper_run = false;
    for c in it.by_ref() {
        any = true;
        r0 = c;
        if !is_connector(c) {
            upper_run = is_upper(c);
            r0 = to_upper(c);
            break;
        }
        out.push(c);
    }
    let rest: Vec<char> = it.collect();
    if rest.is_empty() {
        // Go writes the last rune read again, even a connector (`"__"` gives `"___"`).
        if any {
            out.push(r0);
        }
        return out;
    }
    for c in rest {
        let r1 = r0;
        r0 = c;
        if is_connector(r0) && is_connector(r1) {
            out.push(r1);
            continue;
        }
        if is_connector(r1) {
            upper_run = is_upper(r0);
            r0 = to_upper(r0);
        } else {
            if upper_run {
                if is_upper(r0) {
                    r0 = to_lower(r0);
                } else {
                    upper_run = false;
                }
            }
            out.push(r1);
        }
    }
    out.push(r0);
    out
}

/// Register Sprig's case functions.
pub(super) fn register_case(m: &mut Table) {
    use P::*;
    register(m, "snakecase", &[Str], None, |a| {
        Ok(V::string(camel_to_lower(str_of(&a[0]), '_')))
    });
    register(m, "kebabcase", &[Str], None, |a| {
        Ok(V::string(camel_to_lower(str_of(&a[0]), '-')))
    });
    register(m, "camelcase", &[Str], None, |a| {
        Ok(V::string(to_pascal(str_of(&a[0]))))
    });
}
