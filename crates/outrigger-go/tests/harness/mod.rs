//! The test harness of the tests that need something outside the crate (libtest-mimic, so that
//! a test that cannot run is reported `ignored` in the `cargo test` summary, with its reason,
//! instead of `ok`): the Go oracle (`tests/go-oracle`) and Istio's conformance corpus
//! (`$OUTRIGGER_CORPUS`, else `../shared/conformance/istio` beside the checkout). The rule for
//! "absent" and "required" is `absent.rs`'s, shared with the binary crate's tests: under CI
//! (`CI=true`) or with `OUTRIGGER_REQUIRE_GO_ORACLE=1` / `OUTRIGGER_REQUIRE_CORPUS=1` a test
//! whose need is missing fails instead.
#![allow(dead_code)] // each test binary takes some

use libtest_mimic::{Arguments, Trial};

// A test binary may take this file through more than one of the helpers that share it.
#[allow(clippy::duplicate_mod)]
pub mod absent;

#[allow(unused_imports)] // the tests that read the corpus themselves take it
pub use absent::corpus_dir;

/// What a test needs besides the crate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// The Go oracle (built from `tests/go-oracle` by `build.sh`).
    Oracle,
    /// Istio's conformance corpus.
    Corpus,
    /// Go's own source (`$GOROOT/src`, for the tables of Go's tests).
    GoSource,
}

/// What of `needs` cannot be had here (`None` when all can).
fn missing(needs: &[Need]) -> Option<absent::Missing> {
    needs.iter().find_map(|need| match need {
        Need::Oracle => super::go_oracle::Oracle::unavailable().map(|why| absent::Missing {
            why,
            var: "OUTRIGGER_REQUIRE_GO_ORACLE",
        }),
        Need::Corpus => absent::corpus(),
        Need::GoSource => match super::go_oracle::go_root() {
            Ok(r) if r.join("src/regexp/syntax/parse_test.go").is_file() => None,
            Ok(r) => Some(absent::Missing {
                why: format!("no Go source under {}", r.display()),
                var: "OUTRIGGER_REQUIRE_GO_ORACLE",
            }),
            Err(why) => Some(absent::Missing {
                why,
                var: "OUTRIGGER_REQUIRE_GO_ORACLE",
            }),
        },
    })
}

/// A test that runs `body` (which fails by panicking, as a `#[test]` does) when all of `needs`
/// can be had; otherwise it is ignored with the reason, or fails when that need is required.
pub fn trial(name: &str, needs: &'static [Need], body: fn()) -> Trial {
    absent::trial(name, move || missing(needs), body)
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
