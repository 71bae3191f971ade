//! The test harness of the tests that need something outside the crate (libtest-mimic, so that
//! a test that cannot run is reported `ignored` in the `cargo test` summary, with its reason,
//! instead of `ok`): the Go oracle (`tests/go-oracle`) and Istio's conformance corpus
//! (`$OUTRIGGER_CORPUS`, else `../shared/conformance/istio` beside the checkout).
//! When CI requires what is missing (`OUTRIGGER_REQUIRE_GO_ORACLE=1`,
//! `OUTRIGGER_REQUIRE_CORPUS=1`) the test fails instead.
#![allow(dead_code)] // each test binary takes some

use libtest_mimic::{Arguments, Completion, Failed, Trial};

/// What a test needs besides the crate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// The Go oracle (built from `tests/go-oracle` by `build.sh`).
    Oracle,
    /// Istio's conformance corpus.
    Corpus,
}

/// The corpus' one locating rule, shared with the corpus suites.
#[path = "../corpus/mod.rs"]
mod corpus_files;

pub use corpus_files::corpus_dir;

fn required(var: &str) -> bool {
    std::env::var(var).is_ok_and(|v| v == "1")
}

/// Why `need` cannot be had here (`None` when it can), and the variable that makes it required.
fn missing(need: Need) -> Option<(String, &'static str)> {
    match need {
        Need::Oracle => {
            super::go_oracle::Oracle::unavailable().map(|why| (why, "OUTRIGGER_REQUIRE_GO_ORACLE"))
        }
        Need::Corpus => {
            let dir = corpus_dir();
            (!dir.join("cases.json").exists()).then(|| {
                (
                    format!("Istio's conformance corpus not found at {}", dir.display()),
                    "OUTRIGGER_REQUIRE_CORPUS",
                )
            })
        }
    }
}

/// A test that runs `body` (which fails by panicking, as a `#[test]` does) when all of `needs`
/// can be had; otherwise it is ignored with the reason, or fails when that need is required.
pub fn trial(name: &str, needs: &'static [Need], body: fn()) -> Trial {
    Trial::ignorable_test(name, move || {
        for &need in needs {
            if let Some((why, var)) = missing(need) {
                if required(var) {
                    return Err(Failed::from(format!("{why}, and {var}=1 requires it")));
                }
                return Ok(Completion::ignored_with(why));
            }
        }
        body();
        Ok(Completion::Completed)
    })
}

/// A long run, ignored unless asked for (`--ignored` or `--include-ignored`), like
/// `#[ignore]`; otherwise as [`trial`].
pub fn long(name: &str, needs: &'static [Need], body: fn()) -> Trial {
    trial(name, needs, body).with_ignored_flag(true)
}

/// Run `trials` with libtest's command line (filters, `--ignored`, `--list`, ...) and exit.
pub fn run(trials: Vec<Trial>) -> ! {
    libtest_mimic::run(&Arguments::from_args(), trials).exit()
}
