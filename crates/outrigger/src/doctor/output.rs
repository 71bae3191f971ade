//! How `doctor` prints its checks: a table for people (verdict, check, finding; the hint on the
//! line below a check that did not pass; a summary line), or JSON for tools.

use crate::print;
use anyhow::Result;
use serde_json::json;

use super::{Check, DoctorOutput, Verdict};

/// The overall verdict: the worst of the checks' (skipped counts as pass).
pub fn overall(checks: &[Check]) -> Verdict {
    checks
        .iter()
        .map(|c| c.verdict)
        .filter(|v| *v != Verdict::Skipped)
        .max()
        .unwrap_or(Verdict::Pass)
}

fn count(checks: &[Check], v: Verdict) -> usize {
    checks.iter().filter(|c| c.verdict == v).count()
}

/// The table.
pub fn table(checks: &[Check]) -> String {
    let width = checks
        .iter()
        .map(|c| c.name.len())
        .max()
        .unwrap_or(5)
        .max(5);
    let mut out = format!("{:<8} {:<width$} FINDING\n", "VERDICT", "CHECK");
    for c in checks {
        out.push_str(&format!(
            "{:<8} {:<width$} {}\n",
            c.verdict.word(),
            c.name,
            c.finding
        ));
        if let Some(h) = c.hint.as_deref().filter(|h| !h.is_empty()) {
            if c.verdict != Verdict::Pass {
                out.push_str(&format!("{:<8} {:<width$} hint: {h}\n", "", ""));
            }
        }
    }
    out.push_str(&format!(
        "{}: {} passed, {} warning(s), {} failed, {} skipped\n",
        overall(checks).word(),
        count(checks, Verdict::Pass),
        count(checks, Verdict::Warn),
        count(checks, Verdict::Fail),
        count(checks, Verdict::Skipped)
    ));
    out
}

/// The JSON document.
pub fn json(checks: &[Check]) -> serde_json::Value {
    json!({
        "verdict": overall(checks).word(),
        "counts": {
            "pass": count(checks, Verdict::Pass),
            "warn": count(checks, Verdict::Warn),
            "fail": count(checks, Verdict::Fail),
            "skipped": count(checks, Verdict::Skipped),
        },
        "checks": checks,
    })
}

/// Print the checks to standard output.
pub fn print(checks: &[Check], format: DoctorOutput) -> Result<()> {
    let text = match format {
        DoctorOutput::Table => table(checks),
        DoctorOutput::Json => print::pretty_json(&json(checks))?,
    };
    print::stdout(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worst_verdict_wins_and_hints_follow_failures_only() {
        let checks = vec![
            Check::pass("a", "fine"),
            Check::with("b", Verdict::Fail, "broken", "fix it"),
            Check::with("c", Verdict::Skipped, "not asked", "ask"),
        ];
        assert_eq!(overall(&checks), Verdict::Fail);
        assert_eq!(overall(&checks[..1]), Verdict::Pass);
        assert_eq!(overall(&checks[2..]), Verdict::Pass);
        let t = table(&checks);
        assert!(
            t.contains("fail     b     broken\n               hint: fix it\n"),
            "{t}"
        );
        assert!(
            t.ends_with("fail: 1 passed, 0 warning(s), 1 failed, 1 skipped\n"),
            "{t}"
        );
        assert_eq!(json(&checks)["checks"][1]["verdict"], "fail");
        assert!(json(&checks)["checks"][0].get("hint").is_none());
    }
}
