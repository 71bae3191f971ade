//! Splitting a multi-document stream the way kube-inject does (apimachinery's `YAMLReader`).

use crate::{Error, Result};

/// Split `text` on lines starting with `---`; see [`crate::yaml::split_documents`].
pub(crate) fn split_documents(text: &str) -> Result<Vec<&str>> {
    let mut docs = Vec::new();
    let mut start = 0;
    let mut pos = 0;
    for line in text.split_inclusive('\n') {
        let line_start = pos;
        pos += line.len();
        let Some(rest) = line.strip_prefix("---") else {
            continue;
        };
        let trimmed = rest.trim();
        if !trimmed.is_empty() && !trimmed.starts_with('#') {
            return Err(Error::Yaml(format!(
                "invalid Yaml document separator: {trimmed}"
            )));
        }
        push_doc(&mut docs, &text[start..line_start]);
        start = pos;
    }
    push_doc(&mut docs, &text[start..]);
    Ok(docs)
}

/// Keep `doc` unless it has no content.
fn push_doc<'a>(docs: &mut Vec<&'a str>, doc: &'a str) {
    if !is_blank_document(doc) {
        docs.push(doc);
    }
}

/// True when every line is blank, a comment, a `...` end marker or a `%` directive.
fn is_blank_document(doc: &str) -> bool {
    doc.lines().all(|line| {
        let t = line.trim();
        t.is_empty()
            || t.starts_with('#')
            || line.starts_with('%')
            || line
                .strip_prefix("...")
                .is_some_and(|r| r.trim().is_empty() || r.trim_start().starts_with('#'))
    })
}

#[cfg(test)]
mod tests {
    use super::split_documents;

    fn split(text: &str) -> Vec<&str> {
        match split_documents(text) {
            Ok(d) => d,
            Err(e) => panic!("split failed: {e}"),
        }
    }

    #[test]
    fn splits_and_keeps_exact_bytes() {
        assert_eq!(split("a: 1\n---\nb: 2\n"), ["a: 1\n", "b: 2\n"]);
        assert_eq!(split("---\na: 1\n---\nb: 2"), ["a: 1\n", "b: 2"]);
        assert_eq!(
            split("# head\na: 1 # c\n\n--- # sep comment\n  b:  2\n"),
            ["# head\na: 1 # c\n\n", "  b:  2\n"]
        );
    }

    #[test]
    fn skips_empty_and_comment_only_documents() {
        assert!(split("").is_empty());
        assert!(split("\n  \n").is_empty());
        assert_eq!(
            split("---\n---\n# only\n---\n\n---\na: 1\n---\n"),
            ["a: 1\n"]
        );
        assert_eq!(split("a: 1\n...\n---\n...\n"), ["a: 1\n...\n"]);
    }

    #[test]
    fn crlf() {
        assert_eq!(split("a: 1\r\n---\r\nb: 2\r\n"), ["a: 1\r\n", "b: 2\r\n"]);
    }

    #[test]
    fn separator_must_start_the_line() {
        assert_eq!(split("a: |\n  ---\n  x\n"), ["a: |\n  ---\n  x\n"]);
        assert_eq!(split(" ---\n"), [" ---\n"]);
    }

    #[test]
    fn bad_separator() {
        let e = split_documents("a: 1\n--- foo\nb: 2\n").map(|_| ()).err();
        assert_eq!(
            e.map(|e| e.to_string()).as_deref(),
            Some("invalid Yaml document separator: foo")
        );
        assert!(split_documents("----\n").is_err());
        assert!(split_documents("---x\n").is_err());
    }
}
