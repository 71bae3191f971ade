//! Splitting a multi-document stream the way kube-inject does (apimachinery's `YAMLReader`).

use std::io::BufRead;
use std::ops::Range;

use super::YamlError;
use crate::{Error, Result};

/// Split `text` on lines starting with `---`; see [`crate::yaml::split_documents`].
pub(crate) fn split_documents(text: &str) -> Result<Vec<&str>> {
    let mut docs = Vec::new();
    let mut splitter = Splitter::default();
    for line in text.split_inclusive('\n') {
        if let Some(span) = splitter.push_line(line)? {
            docs.push(&text[span.bytes]);
        }
    }
    if let Some(span) = splitter.finish() {
        docs.push(&text[span.bytes]);
    }
    Ok(docs)
}

/// Where one document lies in the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentSpan {
    /// Byte range of the document in the stream (separator lines excluded).
    pub bytes: Range<usize>,
    /// 0-based line of the stream on which the document starts.
    pub first_line: usize,
}

/// The splitting rule of [`crate::yaml::split_documents`] as a state machine fed one line at a
/// time, so that a stream can be split without holding it whole.
#[derive(Debug, Default)]
pub struct Splitter {
    /// Byte offset where the current document starts.
    start: usize,
    /// Line where the current document starts.
    start_line: usize,
    /// Bytes and lines seen so far.
    pos: usize,
    lines: usize,
    /// Whether the current document has a line that is not blank, a comment, `...` or `%`.
    content: bool,
}

impl Splitter {
    /// Feed the next line of the stream, with its `\n` if it has one. Returns the span of the
    /// document this line ends when it is a separator and that document has content.
    pub fn push_line(&mut self, line: &str) -> Result<Option<DocumentSpan>> {
        let line_start = self.pos;
        self.pos += line.len();
        self.lines += 1;
        let Some(rest) = line.strip_prefix("---") else {
            self.content |= !is_blank_line(line);
            return Ok(None);
        };
        let trimmed = rest.trim();
        if !trimmed.is_empty() && !trimmed.starts_with('#') {
            return Err(YamlError::Separator(trimmed.to_string()).into());
        }
        let span = self.take(line_start);
        self.start = self.pos;
        self.start_line = self.lines;
        Ok(span)
    }

    /// End of the stream: the span of the last document, if it has content.
    pub fn finish(mut self) -> Option<DocumentSpan> {
        let end = self.pos;
        self.take(end)
    }

    fn take(&mut self, end: usize) -> Option<DocumentSpan> {
        let content = std::mem::take(&mut self.content);
        content.then_some(DocumentSpan {
            bytes: self.start..end,
            first_line: self.start_line,
        })
    }
}

/// True when `line` is blank, a comment, a `...` end marker or a `%` directive.
fn is_blank_line(line: &str) -> bool {
    let line = line.strip_suffix('\n').unwrap_or(line);
    let line = line.strip_suffix('\r').unwrap_or(line);
    let t = line.trim();
    t.is_empty()
        || t.starts_with('#')
        || line.starts_with('%')
        || line
            .strip_prefix("...")
            .is_some_and(|r| r.trim().is_empty() || r.trim_start().starts_with('#'))
}

/// One document read by [`DocumentReader`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawDocument {
    /// The exact text of the document (separator lines excluded).
    pub text: String,
    /// 0-based line of the stream on which the document starts.
    pub first_line: usize,
}

/// Why [`DocumentReader`] could not produce the next document.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The stream could not be read (or is not UTF-8).
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The stream is not a valid document stream (a bad separator).
    #[error("{0}")]
    Split(#[from] Error),
}

/// Streaming form of [`crate::yaml::split_documents`]: reads a stream line by line and yields
/// each document with content as soon as its closing separator (or the end) is read, holding
/// one document at a time. The documents are exactly those `split_documents` returns.
#[derive(Debug)]
pub struct DocumentReader<R> {
    input: R,
    splitter: Option<Splitter>,
    /// Text of the current document, from `offset` in the stream.
    doc: String,
    offset: usize,
}

impl<R: BufRead> DocumentReader<R> {
    /// Read documents from `input`.
    pub fn new(input: R) -> DocumentReader<R> {
        DocumentReader {
            input,
            splitter: Some(Splitter::default()),
            doc: String::new(),
            offset: 0,
        }
    }

    /// The current document, which starts at `self.offset`, cut at the end of `span`.
    fn document(&mut self, span: DocumentSpan) -> RawDocument {
        debug_assert_eq!(span.bytes.start, self.offset);
        let mut text = std::mem::take(&mut self.doc);
        text.truncate(span.bytes.end - self.offset);
        RawDocument {
            text,
            first_line: span.first_line,
        }
    }
}

impl<R: BufRead> Iterator for DocumentReader<R> {
    type Item = std::result::Result<RawDocument, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let splitter = self.splitter.as_mut()?;
            let line_start = self.doc.len();
            match self.input.read_line(&mut self.doc) {
                Ok(0) => {
                    let span = self.splitter.take()?.finish()?;
                    return Some(Ok(self.document(span)));
                }
                Ok(_) => {}
                Err(e) => {
                    self.splitter = None;
                    return Some(Err(e.into()));
                }
            }
            let line_end = self.doc.len();
            let line = &self.doc[line_start..];
            // Every line starting with `---` that `push_line` accepts is a separator.
            let separator = line.starts_with("---");
            match splitter.push_line(line) {
                Err(e) => {
                    self.splitter = None;
                    return Some(Err(e.into()));
                }
                Ok(Some(span)) => {
                    let doc = self.document(span);
                    self.offset += line_end;
                    return Some(Ok(doc));
                }
                Ok(None) if separator => {
                    // A separator closing a document without content: drop its text.
                    self.offset += line_end;
                    self.doc.clear();
                }
                Ok(None) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{split_documents, DocumentReader, RawDocument, ReadError};

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

    /// Documents of the streaming reader, read through a 1-byte buffer to split lines across reads.
    fn read_all(text: &str) -> Result<Vec<RawDocument>, String> {
        let input = std::io::BufReader::with_capacity(1, text.as_bytes());
        DocumentReader::new(input)
            .map(|d| d.map_err(|e| e.to_string()))
            .collect()
    }

    #[test]
    fn reader_yields_what_split_documents_returns() {
        let cases = [
            "",
            "\n  \n",
            "a: 1\n---\nb: 2\n",
            "---\na: 1\n---\nb: 2",
            "# head\na: 1 # c\n\n--- # sep comment\n  b:  2\n",
            "---\n---\n# only\n---\n\n---\na: 1\n---\n",
            "a: 1\n...\n---\n...\n",
            "a: 1\r\n---\r\nb: 2\r\n",
            "a: |\n  ---\n  x\n",
            " ---\n",
            "%YAML 1.1\n---\nk: v\n---\n# c\n---\nlast: 1",
        ];
        for text in cases {
            let want = split(text);
            let got = read_all(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
            let got_text: Vec<&str> = got.iter().map(|d| d.text.as_str()).collect();
            assert_eq!(got_text, want, "{text:?}");
            for (d, w) in got.iter().zip(&want) {
                let offset = w.as_ptr() as usize - text.as_ptr() as usize;
                assert_eq!(
                    d.first_line,
                    text[..offset].matches('\n').count(),
                    "{text:?}"
                );
            }
        }
    }

    #[test]
    fn reader_reports_a_bad_separator_after_earlier_documents() {
        let mut r = DocumentReader::new("a: 1\n---\nb: 2\n--- foo\nc: 3\n".as_bytes());
        assert_eq!(
            r.next().and_then(Result::ok).map(|d| d.text),
            Some("a: 1\n".into())
        );
        let e = r.next().and_then(Result::err).map(|e| e.to_string());
        assert_eq!(e.as_deref(), Some("invalid Yaml document separator: foo"));
        assert!(r.next().is_none(), "the reader stops after an error");
    }

    #[test]
    fn reader_reports_invalid_utf8() {
        let mut r = DocumentReader::new(&b"a: \xff\n"[..]);
        assert!(matches!(r.next(), Some(Err(ReadError::Io(_)))));
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
