//! The AdmissionReviews of `scripts/cpu-per-injection.sh`, and their floor: what parsing the
//! review into a `serde_json::Value` and writing it back costs in process, the least any
//! injector that reads the whole review must spend on it.
//!
//! ```sh
//! cargo run --release -p outrigger-inject --example review_floor -- CLASS OUT.json [ITERATIONS]
//! ```
//!
//! Writes the review of size class CLASS to OUT.json and prints `floor_us=<median µs>` (the
//! median of 15 batches of ITERATIONS parse + serialise rounds, default 2,000, each timed by the
//! CPU time of this thread, from `/proc/thread-self/schedstat`, so that other processes on a
//! busy machine do not count; wall time where that file is missing). Classes:
//! `hello` (the pod of `scripts/load.sh`), `env-N` (N env vars in the one container),
//! `containers-N` (N containers of 10 env vars each), `managedfields-KB` (KB kilobytes of
//! managedFields), all Deployment pods as a ReplicaSet creates them.

use std::time::Instant;

use serde_json::{json, Value};

#[path = "../benches/support/mod.rs"]
#[allow(dead_code)]
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
        None => 2000,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("{usage}: ITERATIONS must be a positive number");
            std::process::exit(2);
        }
    };
    let Some(pod) = pod(&class) else {
        eprintln!("unknown class {class:?}: hello, env-N, containers-N or managedfields-KB");
        std::process::exit(2);
    };
    let body = serde_json::to_vec(&review(pod)).expect("encode review");
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

/// The pod of a size class.
fn pod(class: &str) -> Option<Value> {
    let num = |prefix: &str| class.strip_prefix(prefix)?.parse::<usize>().ok();
    let mut pod = if class == "hello" {
        json!({"metadata": {"labels": {"app": "hello"}},
               "spec": {"containers": [{"name": "hello", "image": "fake.docker.io/google-samples/hello-go-gke:1.0",
                        "ports": [{"name": "http", "containerPort": 80}], "resources": {}}]}})
    } else if let Some(n) = num("env-") {
        support::hello_pod(1, n, 0)
    } else if let Some(n) = num("containers-") {
        support::hello_pod(n, 10, 0)
    } else if let Some(kb) = num("managedfields-") {
        support::hello_pod(1, 0, kb * 1024)
    } else {
        return None;
    };
    pod["apiVersion"] = json!("v1");
    pod["kind"] = json!("Pod");
    let meta = &mut pod["metadata"];
    if let Some(m) = meta.as_object_mut() {
        m.remove("name");
    }
    meta["generateName"] = json!("hello-7d4f9-");
    meta["namespace"] = json!("default");
    meta["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "hello-7d4f9",
        "uid": "6b1e0f7e-0000-0000-0000-000000000000", "controller": true, "blockOwnerDeletion": true}]);
    Some(pod)
}

/// The AdmissionReview creating `pod`.
fn review(pod: Value) -> Value {
    json!({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1",
           "request": {"uid": "load-test", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                       "resource": {"group": "", "version": "v1", "resource": "pods"},
                       "namespace": "default", "operation": "CREATE", "object": pod}})
}
