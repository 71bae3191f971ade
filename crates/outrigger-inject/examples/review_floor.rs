//! The AdmissionReviews of `scripts/cpu-per-injection.sh`, and their floor: what parsing the
//! review into a `serde_json::Value` and writing it back costs in process, the least any
//! injector that reads the whole review must spend on it.
//!
//! ```sh
//! cargo run --release -p outrigger-inject --example review_floor -- CLASS OUT.json [ITERATIONS]
//! ```
//!
//! Writes the review of size class CLASS to OUT.json and prints `floor_us=<median µs>` (the
//! median of 15 batches of ITERATIONS parse + serialise rounds, default 20,000, each timed by the
//! CPU time of this thread, from `/proc/thread-self/schedstat`, so that other processes on a
//! busy machine do not count; wall time where that file is missing). A running thread's
//! schedstat moves at the scheduler's ticks (4 ms here), so a batch spans many ticks: at 2,000
//! rounds of ~5 µs the median fell on 4.00, 6.00 or 8.00 µs. Classes:
//! `hello` (the pod of `scripts/load.sh`), `env-N` (N env vars in the one container),
//! `containers-N` (N containers of 10 env vars each), `managedfields-KB` (KB kilobytes of
//! managedFields), all Deployment pods as a ReplicaSet creates them.

use std::time::Instant;

use serde_json::Value;

#[path = "../benches/support/mod.rs"]
mod support;

/// The allocator the `outrigger` binary ships with, so the floor is measured as the server would.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let mut args = std::env::args().skip(1);
    let usage = "usage: review_floor CLASS OUT.json [ITERATIONS]";
    let (Some(class), Some(out)) = (args.next(), args.next()) else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let iterations: u32 = match args.next().map(|s| s.parse()) {
        None => 20_000,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("{usage}: ITERATIONS must be a positive number");
            std::process::exit(2);
        }
    };
    let Some(pod) = support::class_pod(&class) else {
        eprintln!("unknown class {class:?}: hello, env-N, containers-N or managedfields-KB");
        std::process::exit(2);
    };
    let body = serde_json::to_vec(&support::admission_review(pod)).expect("encode review");
    if let Err(e) = std::fs::write(&out, &body) {
        eprintln!("writing {out}: {e}");
        std::process::exit(1);
    }
    let mut batches: Vec<f64> = (0..15)
        .map(|_| {
            let (t, cpu) = (Instant::now(), thread_cpu_ns());
            for _ in 0..iterations {
                let v: Value = serde_json::from_slice(std::hint::black_box(&body)).expect("parse");
                std::hint::black_box(serde_json::to_vec(&v).expect("serialise"));
            }
            let ns = match (cpu, thread_cpu_ns()) {
                (Some(a), Some(b)) => (b - a) as f64,
                _ => t.elapsed().as_secs_f64() * 1e9,
            };
            ns / 1e3 / f64::from(iterations)
        })
        .collect();
    batches.sort_by(f64::total_cmp);
    println!(
        "floor_us={:.2} bytes={}",
        batches[batches.len() / 2],
        body.len()
    );
}

/// CPU time of the calling thread in nanoseconds (the first field of its schedstat).
fn thread_cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}
