//! Peak heap of one webhook review: reads an AdmissionReview file, answers it with the embedded
//! default configuration and prints the peak of live heap bytes during the review (above what
//! was live before it), with the body size for the ratio:
//!
//! ```sh
//! cargo run --release -p outrigger-inject --example review_memory -- review.json
//! ```
//!
//! The allocator is the server's (mimalloc) behind a counting wrapper; the process's peak RSS
//! (`VmHWM`, with mimalloc's defaults) is printed too. `scripts/faults.sh` measures the server's
//! RSS and writes such a review. To see where the bytes go, forward the wrapper to
//! `std::alloc::System` and run it under `valgrind --tool=massif`.

use outrigger_inject::decide::native::NativeMode;
use outrigger_inject::webhook::{self, Context};

// mimalloc behind a counting wrapper (the unsafe forwarding lives in outrigger-alloc).
#[global_allocator]
static GLOBAL: outrigger_alloc::Counting = outrigger_alloc::Counting;

/// `VmHWM` (peak resident set) of this process in KiB, 0 where `/proc` is absent.
fn vm_hwm_kib() -> usize {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
            line.split_whitespace().nth(1)?.parse().ok()
        })
        .unwrap_or(0)
}

fn mib(n: usize) -> f64 {
    n as f64 / (1024.0 * 1024.0)
}

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: review_memory REVIEW.json");
    let snapshot = outrigger_inject::config::defaults::snapshot().expect("embedded default");
    let ctx = Context {
        snapshot: &snapshot,
        native_mode: NativeMode::Disabled,
        cluster: &outrigger_inject::decide::native::NoCluster,
        openshift: false,
        compliance_policy: "",
        revision: outrigger_inject::webhook::REVISION,
        keep_metadata: false,
        max_list_entries: outrigger_inject::webhook::MAX_LIST_ENTRIES,
    };
    let body = std::fs::read(&path).expect("read the review");
    // A small review first, so lazily built tables are not counted.
    let warm = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"w","namespace":"default","object":{"metadata":{"name":"w"},"spec":{"containers":[{"name":"a"}]}}}}"#;
    drop(webhook::review(warm, "/inject", &ctx));
    let hwm_before = vm_hwm_kib();
    let base = outrigger_alloc::Counting::live();
    outrigger_alloc::Counting::reset_peak();
    let reviewed = webhook::review(&body, "/inject", &ctx);
    let peak = outrigger_alloc::Counting::peak() - base;
    println!(
        "body {:.2} MiB, response {:.2} MiB, outcome {:?}, review peak {:.1} MiB above the start ({:.1}x the body)",
        mib(body.len()),
        mib(reviewed.response.len()),
        reviewed.outcome,
        mib(peak),
        peak as f64 / body.len() as f64
    );
    println!(
        "process peak RSS {:.1} MiB before the review, {:.1} MiB after",
        hwm_before as f64 / 1024.0,
        vm_hwm_kib() as f64 / 1024.0
    );
}
