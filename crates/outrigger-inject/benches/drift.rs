//! Drift over a cluster's worth of pods: 10,000 pods (three application containers, env,
//! probes, 4 KB of managedFields), injected as the webhook injects them and stored as
//! kube-apiserver stores them (`tests/model/apiserver.rs`), served as the API server pages a
//! list (500 a page, JSON bytes). One iteration decodes each page and runs
//! [`drift::stored_pod_drift`] on each of its pods, as `outrigger drift --kube` does, a page at a
//! time. Before measuring, one run prints its time and the process' peak resident set (pages
//! included; mimalloc, the allocator the binary ships with); target: under 5 s and 200 MiB.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use outrigger_inject::drift::{self, State};
use outrigger_inject::inject::{inject_pod, InjectParams};
use serde_json::{json, Value};

#[path = "../tests/model/apiserver.rs"]
mod apiserver;
mod support;

use support::{hello_pod, params, snapshot};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The process' peak resident set (`VmHWM`), in bytes.
fn peak_rss() -> usize {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        })
        .map_or(0, |kb| kb * 1024)
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

/// What one `drift --kube` run over `pages` does with them: the number of current pods.
fn run(pages: &[Vec<u8>], p: &InjectParams<'_>) -> usize {
    let mut current = 0;
    for page in pages {
        let list: Value = serde_json::from_slice(page).expect("decode page");
        for pod in list["items"].as_array().expect("items") {
            let d = drift::stored_pod_drift(pod, p, true).expect("drift");
            current += usize::from(d.state == State::Current);
        }
    }
    current
}

fn bench(c: &mut Criterion) {
    let s = snapshot();
    let p = params(&s);
    let pages = pages(&p);
    let bytes: usize = pages.iter().map(Vec::len).sum();
    // Linux: writing 5 to clear_refs resets the peak to the current resident set.
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let first: Value = serde_json::from_slice(&pages[0]).expect("page");
    let d = drift::stored_pod_drift(&first["items"][0], &p, true).expect("drift");
    assert_eq!(
        d.state,
        State::Current,
        "a stored pod is current: {:#?}",
        d.fields
    );
    let start = std::time::Instant::now();
    assert_eq!(run(&pages, &p), PODS, "every stored pod is current");
    eprintln!(
        "drift over {PODS} pods ({} MiB of list pages held): one run {:.2} s, peak resident \
         set {:.1} MiB{}",
        bytes >> 20,
        start.elapsed().as_secs_f64(),
        peak_rss() as f64 / (1024.0 * 1024.0),
        if reset {
            ""
        } else {
            " (the peak since start: clear_refs unavailable)"
        }
    );
    let mut g = c.benchmark_group("drift");
    g.sample_size(10);
    g.throughput(Throughput::Elements(PODS as u64));
    g.bench_function("10000-stored-pods-paged", |b| b.iter(|| run(&pages, &p)));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
