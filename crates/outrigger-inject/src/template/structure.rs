//! Block structure check that Go's parser performs and gotmpl 0.6.1 does not: every `if`,
//! `range`, `with`, `define` and `block` is closed by `{{end}}`, `{{else}}` only appears inside
//! `if`/`range`/`with`, and no `{{end}}` is left over.
//!
//! It scans actions lexically (strings, raw strings, character constants and comments may
//! contain `}}`), so it runs before gotmpl builds the tree.

use crate::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    If,
    Range,
    With,
    Define,
}

/// Check the block structure of template `name`; errors are Go's
/// (`template: NAME:LINE: unexpected EOF`, `unexpected {{end}}`, `unexpected {{else}}`).
pub(super) fn check(name: &str, src: &str) -> Result<()> {
    let bytes = src.as_bytes();
    let mut stack: Vec<(Block, usize)> = Vec::new();
    let mut i = 0;
    let mut line = 1;
    while let Some(off) = src[i..].find("{{") {
        line += src[i..i + off].matches('\n').count();
        let start_line = line;
        let mut j = i + off + 2;
        if bytes.get(j) == Some(&b'-') && bytes.get(j + 1).is_some_and(|b| b.is_ascii_whitespace())
        {
            j += 1;
        }
        while bytes.get(j).is_some_and(|b| b.is_ascii_whitespace()) {
            j += 1;
        }
        let (word, end) = if src[j..].starts_with("/*") {
            match src[j + 2..].find("*/") {
                Some(k) => ("", close_of(src, j + 2 + k + 2)),
                None => return Ok(()), // unterminated comment: gotmpl reports it
            }
        } else {
            let w_end = src[j..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .map_or(src.len(), |k| j + k);
            (&src[j..w_end], close_of(src, j))
        };
        let Some(end) = end else { return Ok(()) }; // unclosed action: gotmpl reports it
        line += src[i + off..end].matches('\n').count();
        let err = |what: &str| {
            Err(Error::Template(format!(
                "template: {name}:{start_line}: unexpected {what}"
            )))
        };
        match word {
            "if" => stack.push((Block::If, start_line)),
            "range" => stack.push((Block::Range, start_line)),
            "with" => stack.push((Block::With, start_line)),
            "define" | "block" => stack.push((Block::Define, start_line)),
            "else" => match stack.last() {
                Some((Block::If | Block::Range | Block::With, _)) => {
                    // `else if` / `else with` open no new block: they share the outer `end`.
                }
                _ => return err("{{else}}"),
            },
            "end" if stack.pop().is_none() => return err("{{end}}"),
            _ => {}
        }
        i = end;
    }
    match stack.last() {
        Some(_) => Err(Error::Template(format!(
            "template: {name}:{}: unexpected EOF",
            line + src[i..].matches('\n').count()
        ))),
        None => Ok(()),
    }
}

/// Byte offset just past the `}}` closing the action whose body starts at `from`, skipping
/// quoted strings, raw strings and character constants.
fn close_of(src: &str, from: usize) -> Option<usize> {
    let b = src.as_bytes();
    let mut k = from;
    while k < b.len() {
        match b[k] {
            b'"' | b'\'' => {
                let q = b[k];
                k += 1;
                while k < b.len() && b[k] != q {
                    if b[k] == b'\\' {
                        k += 1;
                    }
                    k += 1;
                }
                k += 1;
            }
            b'`' => {
                k += 1;
                while k < b.len() && b[k] != b'`' {
                    k += 1;
                }
                k += 1;
            }
            b'}' if b.get(k + 1) == Some(&b'}') => return Some(k + 2),
            _ => k += 1,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(src: &str) -> String {
        check("t", src).unwrap_err().to_string()
    }

    #[test]
    fn balanced_templates_pass() {
        for src in [
            "{{ if .A }}a{{ else if .B }}b{{ else }}c{{ end }}",
            "{{- range $k, $v := .M }}{{ $k }}{{ else }}none{{ end -}}",
            "{{ define \"x\" }}{{ with .Y }}y{{ end }}{{ end }}{{ template \"x\" . }}",
            "{{/* {{ if }} */}}{{ \"}}\" }}{{ `{{end}}` }}{{ '}' }}",
            "{{- /* comment */ -}}{{ block \"b\" . }}z{{ end }}",
            "plain text {{ .X | printf \"%s}}\" }}",
        ] {
            assert!(check("t", src).is_ok(), "{src}");
        }
    }

    #[test]
    fn go_errors_for_broken_structure() {
        assert_eq!(err("{{ if .X }}abc"), "template: t:1: unexpected EOF");
        assert_eq!(err("a\n\n{{ end }}"), "template: t:3: unexpected {{end}}");
        assert_eq!(err("{{ else }}"), "template: t:1: unexpected {{else}}");
        assert_eq!(
            err("{{ define \"a\" }}\n{{ range .X }}\n{{ end }}"),
            "template: t:3: unexpected EOF"
        );
    }
}
