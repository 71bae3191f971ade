//! Drift over a cluster's worth of pods: 10,000 pods (three application containers, env,
//! probes, 4 KB of managedFields), injected as the webhook injects them and stored as
//! kube-apiserver stores them (`tests/model/apiserver.rs`), served as the API server pages a
//! list (500 a page, JSON bytes). One iteration decodes each page into a [`PodPage`]
//! (managedFields skipped) and runs [`drift::stored_pod_drift_owned`] on each of its pods, a page at a
//! time, the pods of a page spread over the machine's cores ([`drift::in_parallel`]), as
//! `outrigger drift --kube` does (`OUTRIGGER_DRIFT_THREADS=N` sets another thread count).
//!
//! Before measuring, one run prints its wall and CPU time (all threads), the resident set before
//! it (the pages the bench holds as the fake, and what building them left) and the peak during
//! it (mimalloc, the allocator the binary ships with); target: under 5 s and 200 MiB.
//! `OUTRIGGER_DRIFT_SETUP_ONLY=1` stops after building the pages, to measure the setup alone.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use outrigger_inject::drift::{self, State};
use outrigger_inject::inject::{inject_pod, InjectParams};
use outrigger_inject::kube::pod_list::PodPage;
use serde_json::{json, Value};

#[path = "../tests/model/apiserver.rs"]
mod apiserver;
mod support;

use support::{hello_pod, params, snapshot};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A field of `/proc/self/status` in kB (`VmHWM`: the peak resident set; `VmRSS`: now), in
/// bytes.
fn status_kb(field: &str) -> usize {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// CPU time the process has used, user and system, all threads (`/proc/self/stat`, in clock
/// ticks of 10 ms), in seconds: the figure to compare on a loaded machine.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name, which is in parentheses: utime and stime are the 12th and
    // 13th of them.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let ticks: u64 = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|v| v.parse::<u64>().ok())
        .sum();
    ticks as f64 / 100.0
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

const PODS: usize = 10_000;
const PAGE: usize = 500;

/// Pod `i`: one of 50 Deployments, stored after injection with `p`.
fn stored_pod(i: usize, p: &InjectParams<'_>) -> Value {
    let mut pod = hello_pod(3, 10, 4096);
    let managed = pod["metadata"]["managedFields"].take();
    let deploy = format!("app-{}", i % 50);
    pod["metadata"]["name"] = json!(format!("{deploy}-5d8f7c9b6-{i:05}"));
    pod["metadata"]["generateName"] = json!(format!("{deploy}-5d8f7c9b6-"));
    pod["metadata"]["namespace"] = json!(format!("team-{}", i % 20));
    pod["metadata"]["labels"]["pod-template-hash"] = json!("5d8f7c9b6");
    pod["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1",
        "kind": "ReplicaSet", "name": format!("{deploy}-5d8f7c9b6"), "uid": "u",
        "controller": true}]);
    apiserver::as_apiserver_stores(&mut pod, true);
    let mut pod = inject_pod(&pod, p).expect("inject").pod;
    apiserver::as_apiserver_stores(&mut pod, false);
    pod["metadata"]["managedFields"] = managed;
    pod["apiVersion"] = json!("v1");
    pod["kind"] = json!("Pod");
    pod
}

/// The list pages the API server would send.
fn pages(p: &InjectParams<'_>) -> Vec<Vec<u8>> {
    (0..PODS)
        .step_by(PAGE)
        .map(|start| {
            let items: Vec<Value> = (start..start + PAGE).map(|i| stored_pod(i, p)).collect();
            serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "PodList",
                "metadata": {"continue": "x"}, "items": items}))
            .expect("encode page")
        })
        .collect()
}

/// What one `drift --kube` run over `pages` does with them, the pods of a page spread over
/// `threads` threads as the command spreads them: the number of current pods.
fn run(pages: &[Vec<u8>], p: &InjectParams<'_>, threads: usize) -> usize {
    let mut current = 0;
    for page in pages {
        let list: PodPage = serde_json::from_slice(page).expect("decode page");
        let states = drift::in_parallel(list.items, threads, |pod| {
            drift::stored_pod_drift_owned(pod, p, true)
                .expect("drift")
                .state
        });
        current += states.iter().filter(|s| **s == State::Current).count();
    }
    current
}

/// Threads: the machine's cores, as the command uses, or `OUTRIGGER_DRIFT_THREADS`.
fn threads() -> usize {
    std::env::var("OUTRIGGER_DRIFT_THREADS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

fn bench(c: &mut Criterion) {
    let s = snapshot();
    let p = params(&s);
    let pages = pages(&p);
    let bytes: usize = pages.iter().map(Vec::len).sum();
    // With OUTRIGGER_DRIFT_SETUP_ONLY set, stop here: what the setup costs (instructions,
    // resident set) is then measured alone, to be subtracted from a whole run's figures.
    if std::env::var_os("OUTRIGGER_DRIFT_SETUP_ONLY").is_some() {
        eprintln!(
            "setup only: {} MiB of list pages, resident set {:.1} MiB",
            bytes >> 20,
            mib(status_kb("VmRSS:"))
        );
        return;
    }
    // Linux: writing 5 to clear_refs resets the peak to the current resident set.
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let first: PodPage = serde_json::from_slice(&pages[0]).expect("page");
    let d = drift::stored_pod_drift(&first.items[0], &p, true).expect("drift");
    assert_eq!(
        d.state,
        State::Current,
        "a stored pod is current: {:#?}",
        d.fields
    );
    let held = status_kb("VmRSS:");
    let (start, cpu) = (std::time::Instant::now(), cpu_seconds());
    let threads = threads();
    assert_eq!(
        run(&pages, &p, threads),
        PODS,
        "every stored pod is current"
    );
    eprintln!(
        "drift over {PODS} pods ({} MiB of list pages held), {threads} threads: one run {:.2} s wall, {:.2} s CPU; \
         resident set {:.1} MiB before the run (the pages and the setup), peak {:.1} MiB{}",
        bytes >> 20,
        start.elapsed().as_secs_f64(),
        cpu_seconds() - cpu,
        mib(held),
        mib(status_kb("VmHWM:")),
        if reset {
            ""
        } else {
            " (the peak since start: clear_refs unavailable)"
        }
    );
    let mut g = c.benchmark_group("drift");
    g.sample_size(10);
    g.throughput(Throughput::Elements(PODS as u64));
    g.bench_function("10000-stored-pods-paged", |b| {
        b.iter(|| run(&pages, &p, threads))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
