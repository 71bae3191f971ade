//! How every command writes its result to standard output: `-o json` is pretty-printed JSON
//! ending with a newline, and a write error names standard output (a closed pipe, a full disk).

use std::io::Write;

use anyhow::{Context, Result};
use serde::Serialize;

/// `n` and the noun, singular for one: `1 workload`, `2 workloads` (`plural` is the noun's
/// plural form).
pub fn count(n: usize, singular: &str, plural: &str) -> String {
    format!("{n} {}", if n == 1 { singular } else { plural })
}

/// `value` as pretty-printed JSON (two-space indent, as `kubectl -o json`) with a final newline.
pub fn pretty_json(value: &impl Serialize) -> Result<String> {
    let mut text = serde_json::to_string_pretty(value).context("encoding JSON")?;
    text.push('\n');
    Ok(text)
}

/// Write `text` to standard output in one piece and flush it.
pub fn stdout(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .context("writing standard output")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_singular_for_one() {
        assert_eq!(count(1, "workload", "workloads"), "1 workload");
        assert_eq!(count(0, "workload", "workloads"), "0 workloads");
        assert_eq!(count(2, "pod template", "pod templates"), "2 pod templates");
    }

    #[test]
    fn pretty_json_is_indented_and_ends_with_a_newline() {
        let text = pretty_json(&serde_json::json!({"a": [1]})).expect("encodes");
        assert_eq!(text, "{\n  \"a\": [\n    1\n  ]\n}\n");
    }
}
