//! The one rule for a test that needs something outside the workspace (Istio's corpus, the Go
//! oracle, kubectl, kubernetes-validate): where it cannot be had, the test is reported
//! **ignored**, with the reason, in the `cargo test` summary (libtest-mimic; never `ok`), and
//! where it is required it **fails** instead. It is required under CI (`CI=true`, which
//! `.ci/run` runs with) and wherever its `OUTRIGGER_REQUIRE_*` variable is `1`.
//!
//! Shared by path by every crate's test harness (`crates/outrigger-go/tests/harness`, which
//! outrigger-inject's tests include by path too, and `crates/outrigger/tests/harness`) and the
//! corpus helpers.
#![allow(dead_code)] // each test binary takes some

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use libtest_mimic::{Completion, Failed, Trial};

/// Why something a test needs cannot be had, and the variable that requires it.
#[derive(Debug, Clone)]
pub struct Missing {
    /// What is missing and where it was looked for.
    pub why: String,
    /// The `OUTRIGGER_REQUIRE_*` variable that makes it required.
    pub var: &'static str,
}

/// Whether what `var` names is required here: `var=1`, or any CI run (`CI=true`).
pub fn required(var: &str) -> bool {
    std::env::var(var).is_ok_and(|v| v == "1") || std::env::var("CI").is_ok_and(|v| v == "true")
}

/// Where Istio's conformance corpus is looked for: `OUTRIGGER_CORPUS` when set (a checkout whose
/// `../shared` is elsewhere, such as a git worktree), else `../shared/conformance/istio` beside
/// the workspace (whether it is there or not).
pub fn corpus_dir() -> PathBuf {
    match std::env::var_os("OUTRIGGER_CORPUS") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/conformance/istio"),
    }
}

/// Istio's corpus, unless its `cases.json` is there.
pub fn corpus() -> Option<Missing> {
    let dir = corpus_dir();
    (!dir.join("cases.json").exists()).then(|| Missing {
        why: format!(
            "Istio's conformance corpus not found at {} (set OUTRIGGER_CORPUS)",
            dir.display()
        ),
        var: "OUTRIGGER_REQUIRE_CORPUS",
    })
}

/// A command-line tool, unless `tool ARGS` runs and succeeds.
pub fn tool(tool: &str, args: &[&str]) -> Option<Missing> {
    let runs = Command::new(tool)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    (!runs).then(|| Missing {
        why: format!(
            "{tool} not found on the PATH (or `{tool} {}` failed)",
            args.join(" ")
        ),
        var: "OUTRIGGER_REQUIRE_TOOLS",
    })
}

/// A test that runs `body` (which fails by panicking, as a `#[test]` does) when nothing `check`
/// reports is missing; otherwise it is ignored with the reason, or fails when that is required.
pub fn trial(
    name: &str,
    check: impl FnOnce() -> Option<Missing> + Send + 'static,
    body: impl FnOnce() + Send + 'static,
) -> Trial {
    Trial::ignorable_test(name, move || {
        if let Some(m) = check() {
            if required(m.var) {
                return Err(Failed::from(format!(
                    "{}, and this run requires it ({}=1 or CI=true)",
                    m.why, m.var
                )));
            }
            return Ok(Completion::ignored_with(m.why));
        }
        body();
        Ok(Completion::Completed)
    })
}
