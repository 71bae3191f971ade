//! Linear in the pod (issue 33, item 3): the instructions of one AdmissionReview of a pod with
//! 2N containers are at most 2.2 times those of N containers, counted by valgrind's callgrind
//! (deterministic: an instruction count does not depend on the machine's load). Each count is
//! this test binary run again as a child under callgrind, answering one review of
//! `containers-N` (`benches/support`: 10 env vars, a port and a readiness probe per container)
//! after a warm-up review, with collection on only inside [`measured`].
//!
//! The test runs the sizes 16, 32, ... up to `OUTRIGGER_LINEARITY_MAX` (default 512: this is
//! the unoptimised test build, where callgrind is slow); `scripts/linearity.sh` counts the full
//! range, 16 to 10,000, on the optimised build. Needs valgrind: reported ignored without it,
//! failing under CI (`CI=true`) or with `OUTRIGGER_REQUIRE_TOOLS=1`.

use std::process::Command;

use outrigger_inject::webhook::{self, Context, Outcome};

/// The harness' rule for a missing tool (ignored, failing where required).
#[path = "../../outrigger-go/tests/harness/absent.rs"]
mod absent;

#[path = "../benches/support/mod.rs"]
mod support;

/// The variable that makes this binary the measured child: the size class to review.
const CHILD: &str = "OUTRIGGER_LINEARITY_CHILD";

/// The allowed growth from N to 2N containers.
const MAX_RATIO: f64 = 2.2;

fn main() {
    if let Ok(class) = std::env::var(CHILD) {
        child(&class);
        return;
    }
    let trials = vec![absent::trial(
        "instructions_for_2n_containers_are_at_most_2_2_times_those_for_n",
        || absent::tool("valgrind", &["--version"]),
        instructions_for_2n_containers_are_at_most_2_2_times_those_for_n,
    )];
    libtest_mimic::run(&libtest_mimic::Arguments::from_args(), trials).exit()
}

/// The child: a warm-up review (the lazily initialised tables), then the measured review of
/// `class`, which must be injected.
fn child(class: &str) {
    let s = support::snapshot();
    let ctx = support::webhook_context(&s);
    let warm = webhook::review(&support::class_review_body("hello"), "/inject", &ctx);
    assert_eq!(warm.outcome, Outcome::Injected, "warm-up review");
    let body = support::class_review_body(class);
    let reviewed = measured(&body, &ctx);
    assert_eq!(reviewed.outcome, Outcome::Injected, "review of {class}");
}

/// The measured review (the only function callgrind collects in).
#[inline(never)]
fn measured(body: &[u8], ctx: &Context<'_>) -> webhook::Reviewed {
    std::hint::black_box(webhook::review(std::hint::black_box(body), "/inject", ctx))
}

/// Instructions callgrind counts inside [`measured`] for one review of `class`.
fn instructions(class: &str) -> u64 {
    let exe = std::env::current_exe().expect("test binary");
    let dir = std::env::temp_dir().join(format!("outrigger-linearity-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let out = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!(
            "--callgrind-out-file={}",
            dir.join("callgrind.out").display()
        ))
        .args([
            "--collect-atstart=no",
            "--toggle-collect=linearity::measured",
        ])
        .arg(&exe)
        .env(CHILD, class)
        .output()
        .expect("run valgrind");
    let _ = std::fs::remove_dir_all(&dir);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{class} under callgrind: {stderr}");
    let collected = stderr
        .lines()
        .filter_map(|l| l.split_once("Collected :"))
        .filter_map(|(_, n)| n.trim().parse::<u64>().ok())
        .next_back()
        .unwrap_or_else(|| panic!("no instruction count from callgrind: {stderr}"));
    assert!(collected > 0, "nothing collected for {class}: {stderr}");
    collected
}

fn instructions_for_2n_containers_are_at_most_2_2_times_those_for_n() {
    let max: usize = std::env::var("OUTRIGGER_LINEARITY_MAX")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(512);
    let mut sizes = vec![16usize];
    while sizes.last().unwrap() * 2 <= max {
        sizes.push(sizes.last().unwrap() * 2);
    }
    assert!(sizes.len() >= 2, "OUTRIGGER_LINEARITY_MAX {max} below 32");
    let counts: Vec<u64> = sizes
        .iter()
        .map(|n| instructions(&format!("containers-{n}")))
        .collect();
    let mut worst = Vec::new();
    for (i, pair) in counts.windows(2).enumerate() {
        let ratio = pair[1] as f64 / pair[0] as f64;
        eprintln!(
            "containers {:>6} -> {:>6}: {:>12} -> {:>12} instructions, {ratio:.3}x",
            sizes[i],
            sizes[i + 1],
            pair[0],
            pair[1]
        );
        if ratio > MAX_RATIO {
            worst.push(format!("{} -> {}: {ratio:.3}x", sizes[i], sizes[i + 1]));
        }
    }
    assert!(
        worst.is_empty(),
        "instructions grow faster than {MAX_RATIO}x per doubling: {worst:?}"
    );
}
