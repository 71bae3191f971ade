//! One event, one line: the text log's writer escapes what a request can put in a log line.
//!
//! Values from requests (a review's `uid`, a pod's `generateName`, annotation values, which may
//! legally hold newlines) reach log fields and messages. In the text format they would be written
//! as they are, so a CR or LF would start a forged log line and an ESC would drive the reader's
//! terminal. [`OneLine`] wraps the writer of the text format: each event arrives as one write of
//! one formatted line, and every control character in it (C0, DEL, C1), the Unicode line and
//! paragraph separators and the bidirectional overrides are written as Rust escapes (`\n`, `\r`,
//! `\t`, `\u{1b}`), the final newline excepted. The JSON format escapes them already.

use std::fmt::Write as _;
use std::io;

use tracing_subscriber::fmt::MakeWriter;

/// A [`MakeWriter`] whose writers escape control characters (see the module documentation).
#[derive(Debug, Clone, Copy)]
pub struct OneLine<M>(pub M);

impl<'a, M: MakeWriter<'a>> MakeWriter<'a> for OneLine<M> {
    type Writer = Escaping<M::Writer>;

    fn make_writer(&'a self) -> Self::Writer {
        Escaping(self.0.make_writer())
    }

    /// The inner writer for the event's level (the log's buffer writes warnings at once).
    fn make_writer_for(&'a self, meta: &tracing::Metadata<'_>) -> Self::Writer {
        Escaping(self.0.make_writer_for(meta))
    }
}

/// A writer escaping control characters of each write, its final newline excepted.
#[derive(Debug)]
pub struct Escaping<W>(W);

/// Whether `c` is written escaped.
fn escaped(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `s` with [`escaped`] characters written as Rust escapes.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if escaped(c) => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// Whether `line` has a byte that can start an escaped character: C0, DEL, and the lead bytes
/// of C1 (0xC2) and of U+2028..U+2069 (0xE2). Checked 32 bytes at a time without early exit, so
/// that the compiler vectorises it (every log line is checked).
fn needs_escaping(line: &[u8]) -> bool {
    let special = |b: u8| (b < 0x20) | (b == 0x7f) | (b == 0xc2) | (b == 0xe2);
    let mut chunks = line.chunks_exact(32);
    for c in &mut chunks {
        if c.iter().fold(false, |acc, &b| acc | special(b)) {
            return true;
        }
    }
    chunks.remainder().iter().any(|&b| special(b))
}

impl<W: io::Write> io::Write for Escaping<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let (line, newline) = match buf.strip_suffix(b"\n") {
            Some(l) => (l, true),
            None => (buf, false),
        };
        let plain = !needs_escaping(line);
        if plain {
            self.0.write_all(buf)?;
        } else {
            let mut out = escape(&String::from_utf8_lossy(line));
            if newline {
                out.push('\n');
            }
            self.0.write_all(out.as_bytes())?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Captured {
        type Writer = Captured;
        fn make_writer(&'a self) -> Captured {
            self.clone()
        }
    }

    #[test]
    fn escapes_controls_and_keeps_the_rest() {
        assert_eq!(escape("a\nb\r\tc\u{1b}[31m"), "a\\nb\\r\\tc\\u{1b}[31m");
        assert_eq!(
            escape("\u{9b}x\u{2028}\u{202e}"),
            "\\u{9b}x\\u{2028}\\u{202e}"
        );
        assert_eq!(escape("héllo ✓ \\n"), "héllo ✓ \\n");
    }

    /// Request values in fields (Display and string) and in the message stay on one line.
    #[test]
    fn forged_lines_stay_inside_their_event() {
        let out = Captured::default();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(OneLine(out.clone()))
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            let uid = "u1\nINFO outrigger: forged\r\u{1b}[2J";
            let pod = "web-\n";
            tracing::info!(uid = %uid, pod, "decision: {}", "annotation\nvalue");
            tracing::info!("plain ✓");
        });
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(
            lines[0].contains("decision: annotation\\nvalue")
                && lines[0].contains("uid=u1\\nINFO outrigger: forged\\r\\u{1b}[2J")
                && lines[0].contains("pod=\"web-\\n\""),
            "{}",
            lines[0]
        );
        assert!(!text.contains('\u{1b}') && !text.contains('\r'));
        assert!(lines[1].ends_with("plain ✓"), "{}", lines[1]);
    }
}
