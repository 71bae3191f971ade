//! The log's writer: lines below `WARN` (a line per review at `info`) are gathered and written
//! to stderr together, from a thread of their own, a batch at most [`BATCH`] after its first
//! line; a `WARN` or `ERROR` line is written at once, after the lines before it. One write per
//! reviewed pod was a system call per review (a tenth of a repeated review's CPU); batched, it
//! is one for a few hundred.
//!
//! No line is lost at an ordinary exit: [`LogBuffer::flush`] writes what is pending, and the
//! server calls it when it stops ([`Flush`], dropped at the end of `serve::run`) and before it
//! exits at a second signal. Lines keep their order: every write of the buffer and every line
//! written at once holds the buffer's lock.

use std::io::{self, Write};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use tracing::{Level, Metadata};
use tracing_subscriber::fmt::MakeWriter;

/// The longest a line below `WARN` waits in the buffer.
pub const BATCH: Duration = Duration::from_millis(20);

/// Pending bytes past which a writer writes the buffer itself.
const HIGH_WATER: usize = 64 * 1024;

/// Lines waiting to be written to the sink `W`.
#[derive(Debug)]
struct Shared<W> {
    pending: Mutex<Pending<W>>,
    /// Signalled when the buffer goes from empty to not.
    filled: Condvar,
}

#[derive(Debug)]
struct Pending<W> {
    bytes: Vec<u8>,
    sink: W,
}

impl<W: Write> Pending<W> {
    fn write_out(&mut self) {
        if !self.bytes.is_empty() {
            // As the unbuffered writer did: a failed write of the log is not the server's
            // failure (stderr closed); the lines are dropped.
            let _ = self.sink.write_all(&self.bytes);
            let _ = self.sink.flush();
            self.bytes.clear();
        }
    }
}

/// A [`MakeWriter`] batching lines below `WARN` (see the module documentation). Cheap to clone.
#[derive(Debug)]
pub struct LogBuffer<W> {
    shared: Arc<Shared<W>>,
}

impl<W> Clone for LogBuffer<W> {
    fn clone(&self) -> Self {
        LogBuffer {
            shared: self.shared.clone(),
        }
    }
}

impl<W: Write + Send + 'static> LogBuffer<W> {
    /// A buffer in front of `sink`, with its writing thread.
    pub fn new(sink: W) -> io::Result<LogBuffer<W>> {
        LogBuffer::with_batch(sink, BATCH)
    }

    /// [`LogBuffer::new`] with lines waiting at most `batch`.
    fn with_batch(sink: W, batch: Duration) -> io::Result<LogBuffer<W>> {
        let shared = Arc::new(Shared {
            pending: Mutex::new(Pending {
                bytes: Vec::with_capacity(HIGH_WATER),
                sink,
            }),
            filled: Condvar::new(),
        });
        let s = shared.clone();
        std::thread::Builder::new()
            .name("log-writer".into())
            .spawn(move || s.run(batch))?;
        Ok(LogBuffer { shared })
    }
}

impl<W: Write> LogBuffer<W> {
    /// Write every pending line now.
    pub fn flush(&self) {
        self.shared.lock().write_out();
    }

    /// A guard that flushes the buffer when dropped.
    pub fn flush_on_drop(&self) -> Flush<W> {
        Flush(self.clone())
    }
}

impl<W: Write> Shared<W> {
    fn lock(&self) -> MutexGuard<'_, Pending<W>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The writing thread: waits for a first line, lets the batch gather for `batch`, writes it.
    /// It lives as long as the process.
    fn run(&self, batch: Duration) {
        loop {
            let mut p = self.lock();
            while p.bytes.is_empty() {
                p = self.filled.wait(p).unwrap_or_else(|e| e.into_inner());
            }
            drop(p);
            std::thread::sleep(batch);
            self.lock().write_out();
        }
    }
}

/// Flushes its [`LogBuffer`] when dropped.
#[derive(Debug)]
pub struct Flush<W: Write>(LogBuffer<W>);

impl<W: Write> Drop for Flush<W> {
    fn drop(&mut self) {
        self.0.flush();
    }
}

/// The writer of one line: buffered, or written at once (with what is pending before it).
#[derive(Debug)]
pub struct LineWriter<'a, W> {
    shared: &'a Shared<W>,
    at_once: bool,
}

impl<W: Write> Write for LineWriter<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut p = self.shared.lock();
        let was_empty = p.bytes.is_empty();
        p.bytes.extend_from_slice(buf);
        if self.at_once || p.bytes.len() >= HIGH_WATER {
            p.write_out();
        } else if was_empty {
            drop(p);
            self.shared.filled.notify_one();
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a, W: Write + 'a> MakeWriter<'a> for LogBuffer<W> {
    type Writer = LineWriter<'a, W>;

    fn make_writer(&'a self) -> Self::Writer {
        LineWriter {
            shared: &self.shared,
            at_once: true,
        }
    }

    fn make_writer_for(&'a self, meta: &Metadata<'_>) -> Self::Writer {
        LineWriter {
            shared: &self.shared,
            at_once: *meta.level() <= Level::WARN,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Captured {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    /// Info lines wait for the batch (or a flush); a warning is written at once, after them,
    /// and the guard writes what is left when dropped.
    #[test]
    fn info_batched_warnings_at_once_in_order_nothing_lost() {
        let out = Captured::default();
        // A batch longer than the test: only warnings and the guard write.
        let log = LogBuffer::with_batch(out.clone(), Duration::from_secs(3600)).unwrap();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .without_time()
            .with_writer(log.clone())
            .finish();
        let guard = log.flush_on_drop();
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!("one");
            tracing::info!("two");
            tracing::warn!("three");
            let text = out.text();
            let lines: Vec<&str> = text.lines().collect();
            assert_eq!(lines.len(), 3, "{text}");
            assert!(lines[0].ends_with("one") && lines[1].ends_with("two"));
            assert!(lines[2].contains("WARN") && lines[2].ends_with("three"));
            tracing::info!("four");
        });
        drop(guard);
        let text = out.text();
        assert_eq!(text.lines().count(), 4, "{text}");
        assert!(text.lines().last().unwrap().ends_with("four"), "{text}");
    }

    /// Behind the text log's escaping writer (`OneLine`), info lines are batched as well.
    #[test]
    fn behind_the_escaping_writer_too() {
        let out = Captured::default();
        let log = LogBuffer::with_batch(out.clone(), Duration::from_secs(3600)).unwrap();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(super::super::log_line::OneLine(log.clone()))
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!("batched\nline");
            assert_eq!(out.text(), "", "an info line waits for its batch");
            tracing::error!("at once");
            let text = out.text();
            assert!(
                text.contains("batched\\nline") && text.contains("at once"),
                "{text}"
            );
        });
    }

    /// A batch is written by the writing thread without a flush.
    #[test]
    fn the_writing_thread_writes_a_batch() {
        let out = Captured::default();
        let log = LogBuffer::new(out.clone()).unwrap();
        let mut w = LineWriter {
            shared: &log.shared,
            at_once: false,
        };
        w.write_all(b"a line\n").unwrap();
        // The thread writes the batch once BATCH has passed; wait for it by polling the sink
        // (bounded), not by a fixed sleep.
        let mut waited = Duration::ZERO;
        while out.text().is_empty() && waited < Duration::from_secs(30) {
            std::thread::sleep(BATCH);
            waited += BATCH;
        }
        assert_eq!(out.text(), "a line\n");
    }
}
