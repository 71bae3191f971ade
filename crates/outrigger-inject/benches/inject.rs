//! Injection speed: the hello pod with Istio's default settings, a large pod (1,500 env vars and
//! 200 KB of managedFields), and how the cost grows with pod size.
//!
//! `inject/*` measures the library pipeline (`inject::inject_pod`) alone; `webhook/*` measures
//! a whole AdmissionReview through `webhook::review` (decode, managedFields removal, decision,
//! injection, patch, response encoding), which is what the server does per request. Both use
//! mimalloc, the allocator the `outrigger` binary ships with. Each benchmark repeats one pod, so
//! its template renders are answered from the snapshot's render memo after the first two;
//! `webhook/hello-distinct-pods` cycles through 1,024 pods that differ in a label, the cost of
//! pods seen for the first time.
//!
//! Uses the corpus' default settings from `../shared/conformance/istio/settings/default` when
//! present, else the embedded default (the bench prints which).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use outrigger_inject::decide::native::NativeMode;
use outrigger_inject::inject;
use outrigger_inject::webhook::{self, Context as ReviewContext};
use serde_json::{json, Value};

mod support;

use support::{hello_pod, params, snapshot};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn review_body(pod: &Value) -> Vec<u8> {
    let mut pod = pod.clone();
    pod["metadata"]["generateName"] = json!("hello-7d4f9-");
    pod["metadata"]["labels"]["pod-template-hash"] = json!("7d4f9");
    pod["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "hello-7d4f9", "uid": "u1", "controller": true}]);
    serde_json::to_vec(
        &json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "00000000-0000-0000-0000-000000000001", "namespace": "default",
                    "operation": "CREATE", "object": pod}}),
    )
    .expect("encode review")
}

fn bench(c: &mut Criterion) {
    let s = snapshot();
    let p = params(&s);
    let ctx = ReviewContext {
        snapshot: &s,
        native_mode: NativeMode::Enabled,
        cluster: &outrigger_inject::decide::native::NoCluster,
        openshift: false,
        compliance_policy: "",
        revision: outrigger_inject::webhook::REVISION,
        keep_metadata: false,
        max_list_entries: outrigger_inject::webhook::MAX_LIST_ENTRIES,
    };
    for (name, pod) in [
        ("webhook/hello", hello_pod(1, 0, 0)),
        (
            "webhook/1500-env-200KB-managedFields",
            hello_pod(1, 1500, 200 * 1024),
        ),
    ] {
        let body = review_body(&pod);
        let first = webhook::review(&body, "/inject", &ctx);
        assert!(
            matches!(first.outcome, webhook::Outcome::Injected),
            "{name}: expected an injection, got {:?}",
            first.outcome
        );
        c.bench_function(name, |b| b.iter(|| webhook::review(&body, "/inject", &ctx)));
    }
    // Pods that all differ (a label), cycled through more of them than the render memo's
    // doorkeeper remembers: every render takes the general path (the cost of a pod seen first).
    let distinct: Vec<Vec<u8>> = (0..1024)
        .map(|i| {
            let mut pod = hello_pod(1, 0, 0);
            pod["metadata"]["labels"]["version"] = json!(format!("v{i}"));
            review_body(&pod)
        })
        .collect();
    let mut next = 0;
    c.bench_function("webhook/hello-distinct-pods", |b| {
        b.iter(|| {
            next = (next + 1) % distinct.len();
            webhook::review(&distinct[next], "/inject", &ctx)
        })
    });
    let hello = hello_pod(1, 0, 0);
    c.bench_function("inject/hello", |b| {
        b.iter(|| inject::inject_pod(&hello, &p).expect("inject"))
    });
    let large = hello_pod(1, 1500, 200 * 1024);
    c.bench_function("inject/1500-env-200KB-managedFields", |b| {
        b.iter(|| inject::inject_pod(&large, &p).expect("inject"))
    });
    let mut g = c.benchmark_group("inject/scaling-env-vars");
    for n in [10usize, 100, 400, 1600] {
        let pod = hello_pod(1, n, 0);
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(BenchmarkId::from_parameter(n), &pod, |b, pod| {
            b.iter(|| inject::inject_pod(pod, &p).expect("inject"))
        });
    }
    g.finish();
    let mut g = c.benchmark_group("inject/scaling-containers");
    for n in [1usize, 4, 16] {
        let pod = hello_pod(n, 10, 0);
        g.bench_with_input(BenchmarkId::from_parameter(n), &pod, |b, pod| {
            b.iter(|| inject::inject_pod(pod, &p).expect("inject"))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
