//! The harness of this crate's tests that need a tool or Istio's corpus (libtest-mimic): a test
//! whose need is missing is reported **ignored**, with the reason, in the `cargo test` summary
//! (never `ok`), and **fails** where it is required: under CI (`CI=true`) or with
//! `OUTRIGGER_REQUIRE_TOOLS=1` / `OUTRIGGER_REQUIRE_CORPUS=1`. The rule is the library crate's
//! (`crates/outrigger-go/tests/harness/absent.rs`), shared by path.
#![allow(dead_code)] // each test binary takes some

use libtest_mimic::{Arguments, Trial};

#[path = "../../../outrigger-go/tests/harness/absent.rs"]
pub mod absent;

/// What a test needs besides the crate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Istio's conformance corpus (`$OUTRIGGER_CORPUS`, else `../shared/conformance/istio`).
    Corpus,
    /// `kubectl` (its `kustomize`).
    Kubectl,
    /// `kubernetes-validate` (PyPI).
    KubernetesValidate,
    /// Helm's Go SDK for Python (PyPI `helm-python-sdk`), as `tools/chart.py` uses it.
    Helm,
    /// `promtool` (Debian `prometheus`).
    Promtool,
}

/// What of `needs` cannot be had here (`None` when all can).
fn missing(needs: &[Need]) -> Option<absent::Missing> {
    needs.iter().find_map(|need| match need {
        Need::Corpus => absent::corpus(),
        Need::Kubectl => absent::tool("kubectl", &["version", "--client"]),
        Need::KubernetesValidate => absent::tool("kubernetes-validate", &["--version"]),
        Need::Helm => absent::tool("python3", &["-c", "import helm_python, jsonschema"]),
        Need::Promtool => absent::tool("promtool", &["--version"]),
    })
}

/// A test that runs `body` (failing by panicking, as a `#[test]` does) when all of `needs` can
/// be had; otherwise ignored with the reason, or failing where the need is required.
pub fn trial(name: &str, needs: &'static [Need], body: impl FnOnce() + Send + 'static) -> Trial {
    absent::trial(name, move || missing(needs), body)
}

/// An async test body run on a multi-threaded Tokio runtime of `workers` threads (what
/// `#[tokio::test(flavor = "multi_thread")]` builds).
pub fn block_on<F: std::future::Future<Output = ()>>(workers: usize, f: F) {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .expect("tokio runtime")
        .block_on(f)
}

/// Run `trials` with libtest's command line (filters, `--ignored`, `--list`, ...) and exit.
pub fn run(trials: Vec<Trial>) -> ! {
    libtest_mimic::run(&Arguments::from_args(), trials).exit()
}

/// `trials![needs; name, name, ...]`: one [`trial`] per test function, named after it.
#[macro_export]
macro_rules! trials {
    ($($needs:expr => [$($name:ident),* $(,)?]),* $(,)?) => {
        vec![$($(harness::trial(stringify!($name), $needs, $name)),*),*]
    };
}
