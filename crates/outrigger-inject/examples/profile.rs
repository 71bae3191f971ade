//! Profiling harness: injects the corpus hello pod N times (optionally with E env vars), for
//! instruction counts with callgrind:
//!
//! ```sh
//! cargo build --profile bench -p outrigger-inject --example profile   # release + debug info
//! valgrind --tool=callgrind --toggle-collect='profile::measured' \
//!     target/release/examples/profile 20 [E]
//! ```
//!
//! Same pod and settings as the criterion benches (`benches/support`): Istio's chart defaults
//! from the corpus when present, else the embedded default.

use outrigger_inject::config::Snapshot;
use outrigger_inject::inject::{self, InjectParams};
use serde_json::json;

#[path = "../benches/support/mod.rs"]
mod support;

use support::{hello_pod, params, snapshot};

/// The allocator the `outrigger` binary ships with, so profiles match the server.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let s = snapshot();
    let n: usize = std::env::args()
        .nth(1)
        .map(|x| x.parse().unwrap())
        .unwrap_or(200);
    let envs: usize = std::env::args()
        .nth(2)
        .map(|x| x.parse().unwrap())
        .unwrap_or(0);
    let pod = hello_pod(1, envs, 0);
    let p = params(&s);
    match std::env::args().nth(3).as_deref() {
        Some("render") => return render_only(&s, &pod, n),
        Some("webhook") => return webhook(&s, &pod, n, false),
        Some("webhook-unique") => return webhook(&s, &pod, n, true),
        _ => {}
    }
    // One injection outside the measured loop builds the lazily initialised tables.
    inject::inject_pod(&pod, &p).unwrap();
    let t = std::time::Instant::now();
    measured(&pod, &p, n);
    eprintln!("{:?} per injection", t.elapsed() / n as u32);
}

/// The steady-state loop (callgrind: `--toggle-collect=profile::measured`).
#[inline(never)]
fn measured(pod: &serde_json::Value, p: &InjectParams<'_>, n: usize) {
    for _ in 0..n {
        inject::inject_pod(pod, p).unwrap();
    }
}

/// Third argument `render`: only execute the sidecar template (`--toggle-collect=profile::render_loop`).
fn render_only(s: &Snapshot, pod: &serde_json::Value, n: usize) {
    let null = serde_json::Value::Null;
    let data = outrigger_go::template::TemplateData {
        kind: "Deployment",
        api_version: "apps/v1",
        deployment_name: "hello",
        deployment_namespace: "default",
        object_meta: pod.get("metadata").unwrap_or(&null),
        spec: pod.get("spec").unwrap_or(&null),
        proxy_config: s.mesh.get("defaultConfig").unwrap_or(&null),
        mesh_config: &s.mesh,
        values: &s.values,
        revision: "default",
        native_sidecars: true,
        proxy_image: "proxy",
        proxy_init_image: "proxy",
        proxy_uid: 1337,
        proxy_gid: 1337,
        inbound_traffic_policy_mode: "passthrough",
        compliance_policy: "",
        env: &s.template_env,
        proto_json: outrigger_inject::mesh::proto_to_json,
    };
    let t = &s.config.templates["sidecar"];
    let text = t.render(&data).unwrap();
    let start = std::time::Instant::now();
    render_loop(t, &data, n);
    eprintln!(
        "{} bytes, {:?} per render",
        text.len(),
        start.elapsed() / n as u32
    );
}

/// The measured render loop.
#[inline(never)]
fn render_loop(
    t: &outrigger_go::template::Template,
    data: &outrigger_go::template::TemplateData<'_>,
    n: usize,
) {
    for _ in 0..n {
        std::hint::black_box(t.render(data).unwrap());
    }
}

/// Third argument `webhook`: whole AdmissionReviews (`--toggle-collect=profile::review_loop`),
/// the same review `n` times; `webhook-unique`: `n` reviews of pods that differ in a label, so
/// that no render is answered from the snapshot's memo.
fn webhook(s: &Snapshot, pod: &serde_json::Value, n: usize, unique: bool) {
    use outrigger_inject::decide::native::NativeMode;
    use outrigger_inject::webhook::{self, Context};
    let mut pod = pod.clone();
    pod["metadata"]["generateName"] = json!("hello-7d4f9-");
    pod["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet",
        "name": "hello-7d4f9", "uid": "u1", "controller": true}]);
    let body = |i: usize| {
        let mut pod = pod.clone();
        if unique {
            pod["metadata"]["labels"]["pod-template-hash"] = json!(format!("h{i}"));
        }
        serde_json::to_vec(&json!({"apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview", "request": {"uid": "u", "namespace": "default",
            "operation": "CREATE", "object": pod}}))
        .unwrap()
    };
    let bodies: Vec<Vec<u8>> = (0..n.max(1) + 1).map(body).collect();
    let ctx = Context {
        snapshot: s,
        native_mode: NativeMode::Enabled,
        cluster: &outrigger_inject::decide::native::NoCluster,
        openshift: false,
        compliance_policy: "",
        revision: outrigger_inject::webhook::REVISION,
        keep_metadata: false,
        max_list_entries: outrigger_inject::webhook::MAX_LIST_ENTRIES,
    };
    let first = webhook::review(&bodies[n.max(1)], "/inject", &ctx);
    assert!(matches!(first.outcome, webhook::Outcome::Injected));
    let start = std::time::Instant::now();
    review_loop(&bodies[..n], &ctx);
    eprintln!("{:?} per review", start.elapsed() / n as u32);
}

/// The measured review loop.
#[inline(never)]
fn review_loop(bodies: &[Vec<u8>], ctx: &outrigger_inject::webhook::Context<'_>) {
    for body in bodies {
        std::hint::black_box(outrigger_inject::webhook::review(body, "/inject", ctx));
    }
}
