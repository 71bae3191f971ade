//! Splitting a multi-document stream the way kube-inject does (apimachinery's `YAMLReader`).
//!
//! `YAMLReader` reads the stream line by line (bufio's `ReadLine`, which drops the `\n` or
//! `\r\n` ending a line) and writes each line back followed by `\n`, the last line of the stream
//! too when it has none. A line starting with `---` is a separator when the rest of it, trimmed
//! of white space, is empty or starts with `#`; any other text there is the error
//! `invalid Yaml document separator: <text>`, which ends the stream (the document being read
//! is lost with it). A separator closes the document being read when that document has a line;
//! the separator itself is dropped. A separator that closes nothing (at the start of the stream,
//! or right after another separator) is the first line of the next document. Nothing else is
//! special: `...`, `%YAML`/`%TAG` directives, blank and comment lines are document lines.

use std::borrow::Cow;
use std::io::BufRead;
use std::ops::Range;

use super::{Result, YamlError};

/// Split `text` as `YAMLReader` does; see [`crate::yaml::split_documents`].
pub(crate) fn split_documents(text: &str) -> Result<Vec<Cow<'_, str>>> {
    Ok(split_with_lines(text)?
        .into_iter()
        .map(|(d, _)| d)
        .collect())
}

/// [`split_documents`], each document with the 0-based line of the stream it starts on.
pub(crate) fn split_with_lines(text: &str) -> Result<Vec<(Cow<'_, str>, usize)>> {
    let mut docs = Vec::new();
    let mut splitter = Splitter::default();
    for line in text.split_inclusive('\n') {
        if let Some(span) = splitter.push_line(line)? {
            docs.push((reader_lines(&text[span.bytes]), span.first_line));
        }
    }
    if let Some(span) = splitter.finish() {
        docs.push((reader_lines(&text[span.bytes]), span.first_line));
    }
    Ok(docs)
}

/// `text` as `YAMLReader` writes its lines: each ends with `\n` (a `\r\n` ending becomes `\n`,
/// a last line without an ending gets one). Borrowed when that is `text` itself.
pub fn reader_lines(text: &str) -> Cow<'_, str> {
    if text.is_empty() || (text.ends_with('\n') && !text.contains("\r\n")) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 1);
    for line in text.split_inclusive('\n') {
        let body = line.strip_suffix('\n').unwrap_or(line);
        let body = if line.ends_with('\n') {
            body.strip_suffix('\r').unwrap_or(body)
        } else {
            body
        };
        out.push_str(body);
        out.push('\n');
    }
    Cow::Owned(out)
}

/// Where one document lies in the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentSpan {
    /// Byte range of the document in the stream: its lines as written there (before
    /// [`reader_lines`]), the separator that closes it excluded.
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
    /// Whether the current document has a line (`YAMLReader`'s buffer is not empty).
    open: bool,
}

impl Splitter {
    /// Feed the next line of the stream, with its `\n` if it has one. Returns the span of the
    /// document this line closes when it is a separator and a document is open.
    pub fn push_line(&mut self, line: &str) -> Result<Option<DocumentSpan>> {
        let line_start = self.pos;
        self.pos += line.len();
        self.lines += 1;
        if let Some(rest) = line.strip_prefix("---") {
            let trimmed = rest.trim();
            if !trimmed.is_empty() && !trimmed.starts_with('#') {
                return Err(YamlError::Separator(trimmed.to_string()));
            }
            if self.open {
                let span = self.take(line_start);
                self.start = self.pos;
                self.start_line = self.lines;
                return Ok(span);
            }
        }
        self.open = true;
        Ok(None)
    }

    /// End of the stream: the span of the last document, if one is open.
    pub fn finish(mut self) -> Option<DocumentSpan> {
        let end = self.pos;
        self.take(end)
    }

    fn take(&mut self, end: usize) -> Option<DocumentSpan> {
        std::mem::take(&mut self.open).then_some(DocumentSpan {
            bytes: self.start..end,
            first_line: self.start_line,
        })
    }
}

/// One document read by [`DocumentReader`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawDocument {
    /// The text of the document as `YAMLReader` returns it: every line ending with `\n`, a
    /// leading separator line kept, the closing one dropped.
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
    Split(#[from] YamlError),
}

/// Streaming form of [`crate::yaml::split_documents`]: reads a stream line by line and yields
/// each document as soon as its closing separator (or the end) is read, holding one document at
/// a time. The documents are exactly those `split_documents` returns.
#[derive(Debug)]
pub struct DocumentReader<R> {
    input: R,
    splitter: Option<Splitter>,
    /// Text of the current document, as written in the stream.
    doc: String,
}

impl<R: BufRead> DocumentReader<R> {
    /// Read documents from `input`.
    pub fn new(input: R) -> DocumentReader<R> {
        DocumentReader {
            input,
            splitter: Some(Splitter::default()),
            doc: String::new(),
        }
    }

    /// The first `len` bytes of the current document, as `YAMLReader` returns them.
    fn document(&mut self, len: usize, span: &DocumentSpan) -> RawDocument {
        let mut text = std::mem::take(&mut self.doc);
        text.truncate(len);
        if let Cow::Owned(lines) = reader_lines(&text) {
            text = lines;
        }
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
                    return Some(Ok(self.document(line_start, &span)));
                }
                Ok(_) => {}
                Err(e) => {
                    self.splitter = None;
                    return Some(Err(e.into()));
                }
            }
            match splitter.push_line(&self.doc[line_start..]) {
                Err(e) => {
                    self.splitter = None;
                    return Some(Err(e.into()));
                }
                Ok(Some(span)) => return Some(Ok(self.document(line_start, &span))),
                Ok(None) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{reader_lines, split_documents, DocumentReader, RawDocument, ReadError};

    fn split(text: &str) -> Vec<String> {
        match split_documents(text) {
            Ok(d) => d.into_iter().map(|d| d.into_owned()).collect(),
            Err(e) => panic!("split failed: {e}"),
        }
    }

    #[test]
    fn splits_as_yaml_reader() {
        assert_eq!(split("a: 1\n---\nb: 2\n"), ["a: 1\n", "b: 2\n"]);
        // A separator that closes nothing starts the next document; the last line gets its `\n`.
        assert_eq!(split("---\na: 1\n---\nb: 2"), ["---\na: 1\n", "b: 2\n"]);
        assert_eq!(
            split("# head\na: 1 # c\n\n--- # sep comment\n  b:  2\n"),
            ["# head\na: 1 # c\n\n", "  b:  2\n"]
        );
    }

    #[test]
    fn a_block_scalar_ending_the_stream_keeps_its_newline() {
        assert_eq!(split("a: |\n  x"), ["a: |\n  x\n"]);
        assert_eq!(
            split("a: 1\n---\ns: |\n  echo"),
            ["a: 1\n", "s: |\n  echo\n"]
        );
    }

    #[test]
    fn only_empty_documents_are_skipped() {
        assert!(split("").is_empty());
        assert_eq!(split("\n  \n"), ["\n  \n"]);
        assert_eq!(
            split("---\n---\n# only\n---\n\n---\na: 1\n---\n"),
            ["---\n", "# only\n", "\n", "a: 1\n"]
        );
        assert_eq!(split("a: 1\n...\n---\n...\n"), ["a: 1\n...\n", "...\n"]);
        assert_eq!(split("---\n"), ["---\n"]);
    }

    #[test]
    fn directives_are_document_lines() {
        assert_eq!(split("%YAML 1.1\n---\nk: v\n"), ["%YAML 1.1\n", "k: v\n"]);
    }

    #[test]
    fn crlf_line_endings_become_lf() {
        assert_eq!(split("a: 1\r\n---\r\nb: 2\r\n"), ["a: 1\n", "b: 2\n"]);
        // A lone `\r` is not a line ending.
        assert_eq!(split("a: 1\r"), ["a: 1\r\n"]);
        assert_eq!(reader_lines("x\r\r\ny"), "x\r\ny\n");
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
            ("", vec![]),
            ("\n  \n", vec![0]),
            ("a: 1\n---\nb: 2\n", vec![0, 2]),
            ("---\na: 1\n---\nb: 2", vec![0, 3]),
            (
                "# head\na: 1 # c\n\n--- # sep comment\n  b:  2\n",
                vec![0, 4],
            ),
            (
                "---\n---\n# only\n---\n\n---\na: 1\n---\n",
                vec![0, 2, 4, 6],
            ),
            ("a: 1\n...\n---\n...\n", vec![0, 3]),
            ("a: 1\r\n---\r\nb: 2\r\n", vec![0, 2]),
            ("a: |\n  ---\n  x\n", vec![0]),
            (" ---\n", vec![0]),
            (
                "%YAML 1.1\n---\nk: v\n---\n# c\n---\nlast: 1",
                vec![0, 2, 4, 6],
            ),
        ];
        for (text, lines) in cases {
            let want = split(text);
            let got = read_all(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
            let got_text: Vec<&str> = got.iter().map(|d| d.text.as_str()).collect();
            assert_eq!(got_text, want, "{text:?}");
            let got_lines: Vec<usize> = got.iter().map(|d| d.first_line).collect();
            assert_eq!(got_lines, lines, "{text:?}");
        }
    }

    #[test]
    fn reader_reports_a_bad_separator_after_earlier_documents() {
        let mut r = DocumentReader::new("a: 1\n---\nb: 2\n--- foo\nc: 3\n".as_bytes());
        assert_eq!(
            r.next().and_then(Result::ok).map(|d| d.text),
            Some("a: 1\n".into())
        );
        // `b: 2` is lost with the error, as YAMLReader loses it.
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
        assert!(split_documents("--- |\n  x\n").is_err());
    }
}
