//! How every command prints a failure (docs/design.md, "CLI conventions"): what failed and
//! where, then the underlying message once, then a hint on a line of its own where there is an
//! obvious fix.
//!
//! Errors are built with `anyhow` context (`reading app.yaml`, `document 0 (Deployment "x")`),
//! but many causes already carry their own cause's text (the library's `ErrorContext`, kube-rs'
//! and hyper's errors, `io::Error` wrapped by a YAML error), so printing the chain with `{:#}`
//! says the same thing several times. [`chain`] prints each cause only when its text is new.

use std::fmt;

/// A fix the user can apply ([`with_hint`]) or a fact about the failed run ([`with_note`]):
/// printed after the message, on its own line, as `hint: ...`; never part of the chain's text.
/// An error shows one hint, the outermost.
#[derive(Debug)]
pub struct Hint {
    /// `hint` (a fix) or `note` (a fact worth knowing, such as output already written).
    label: &'static str,
    /// The text.
    text: String,
}

impl fmt::Display for Hint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// `error` with a hint: a fix, printed as `hint: ...`.
pub fn with_hint(error: anyhow::Error, hint: impl Into<String>) -> anyhow::Error {
    error.context(Hint {
        label: "hint",
        text: hint.into(),
    })
}

/// `error` with a note: a fact about the failed run, printed as `note: ...`.
pub fn with_note(error: anyhow::Error, note: impl Into<String>) -> anyhow::Error {
    error.context(Hint {
        label: "note",
        text: note.into(),
    })
}

/// The error's causes joined with `: `, each said once: a cause whose text the message so far
/// already contains is dropped, and a cause that starts with the end of the message so far only
/// adds what is new. The hint is left out (see [`hint`]).
pub fn chain(error: &anyhow::Error) -> String {
    let hint = hint(error).map(|(_, text)| text);
    let mut out = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if hint.as_deref() != Some(text.as_str()) {
            append(&mut out, &text);
        }
    }
    out
}

/// The exit status of a run whose standard output was closed by its reader: 141 (128 + SIGPIPE),
/// what a shell reports for kubectl or any Go program writing to a closed pipe. Nothing is
/// printed.
pub const CLOSED_PIPE_STATUS: u8 = 141;

/// Whether `error` is a write to a pipe whose reader went away (`| head -1`).
pub fn is_closed_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// `text` without the ` (os error N)` that Rust's `io::Error` appends to the system's message
/// (`No such file or directory (os error 2)` → `No such file or directory`), as Go prints it.
fn without_os_error(text: &str) -> std::borrow::Cow<'_, str> {
    const MARK: &str = " (os error ";
    if !text.contains(MARK) {
        return text.into();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(MARK) {
        let after = &rest[at + MARK.len()..];
        let digits = after.chars().take_while(char::is_ascii_digit).count();
        if digits > 0 && after[digits..].starts_with(')') {
            out.push_str(&rest[..at]);
            rest = &after[digits + 1..];
        } else {
            out.push_str(&rest[..at + MARK.len()]);
            rest = after;
        }
    }
    out.push_str(rest);
    out.into()
}

/// Append `text` to `out` as the next cause: nothing when `out` already says it, the part after
/// the overlap when `text` starts with a `: `-separated tail of `out`.
fn append(out: &mut String, text: &str) {
    let text = without_os_error(text);
    let text = text.trim();
    if text.is_empty() || out.contains(text) {
        return;
    }
    if out.is_empty() {
        out.push_str(text);
        return;
    }
    // The longest tail of `out` (starting after a `: `) that `text` begins with.
    let overlap = out
        .match_indices(": ")
        .map(|(i, sep)| &out[i + sep.len()..])
        .find(|tail| text.starts_with(tail) && text[tail.len()..].starts_with(": "))
        .map_or(0, str::len);
    if overlap > 0 {
        out.push_str(&text[overlap..]);
    } else {
        out.push_str(": ");
        out.push_str(text);
    }
}

/// The hint or note attached to `error` (the outermost one when several were): its label and
/// text.
pub fn hint(error: &anyhow::Error) -> Option<(&'static str, String)> {
    error
        .downcast_ref::<Hint>()
        .map(|h| (h.label, h.text.clone()))
}

/// The full text a command prints on standard error for `error`: `Error: <chain>`, then a
/// `hint: ...` (or `note: ...`) line when there is one. `Error:` is istioctl's (cobra's) spelling; usage errors are
/// clap's (`error:`, exit status 2).
pub fn render(error: &anyhow::Error) -> String {
    let mut s = format!("Error: {}", chain(error));
    if let Some((label, text)) = hint(error) {
        s.push_str(&format!("\n{label}: {text}"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::anyhow;

    /// An error whose text embeds its source's text, as the library's `ErrorContext` does.
    #[derive(Debug)]
    struct Embeds(String, Box<dyn std::error::Error + Send + Sync>);
    impl fmt::Display for Embeds {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "{}: {}", self.0, self.1)
        }
    }
    impl std::error::Error for Embeds {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&*self.1)
        }
    }

    #[test]
    fn a_cause_already_said_is_dropped() {
        let io = std::io::Error::other("Is a directory (os error 21)");
        let inner = Embeds("document 0".into(), Box::new(io));
        let e = anyhow::Error::new(inner).context("injecting /tmp");
        assert_eq!(format!("{e:#}").matches("os error 21").count(), 2);
        assert_eq!(chain(&e), "injecting /tmp: document 0: Is a directory");
    }

    #[test]
    fn os_error_numbers_are_left_out() {
        assert_eq!(
            without_os_error("open a: No such file or directory (os error 2)"),
            "open a: No such file or directory"
        );
        assert_eq!(without_os_error("x (os error y) z"), "x (os error y) z");
        let pipe = anyhow::Error::new(std::io::Error::from(std::io::ErrorKind::BrokenPipe))
            .context("writing standard output");
        assert!(is_closed_pipe(&pipe));
        assert!(!is_closed_pipe(&anyhow!("Broken pipe")));
    }

    #[test]
    fn overlapping_causes_add_only_what_is_new() {
        let mut out = "loading values v.yaml: could not parse".to_string();
        append(&mut out, "could not parse: global: expected a map");
        assert_eq!(
            out,
            "loading values v.yaml: could not parse: global: expected a map"
        );
    }

    #[test]
    fn distinct_causes_are_all_kept_and_hints_go_last() {
        let e = with_hint(
            anyhow!("No such file or directory (os error 2)").context("reading a.yaml"),
            "check the path",
        )
        .context("inject");
        assert_eq!(
            render(&e),
            "Error: inject: reading a.yaml: No such file or directory\nhint: check the path"
        );
    }
}
