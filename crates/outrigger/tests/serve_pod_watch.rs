//! `outrigger serve --kube --watch-pods` end to end against the fake API server of the tests
//! (`common::kube_api`): the server watches every pod and exports
//! `outrigger_pods{namespace,state,cause}`. The pods are injected by the library as the webhook
//! injects them (outrigger's marked, istiod's not) and stored as kube-apiserver stores them (the
//! model in outrigger-inject's `tests/model/apiserver.rs`); the webhook configuration is
//! deploy/base's (it selects namespaces labelled `istio.io/rev=outrigger`).

mod common;
use common::apiserver_model as apiserver;

use common::kube_api::{self, secret_ca, serve_against, Cluster, FakeApi};
use common::*;
use outrigger_inject::config::{defaults, Snapshot, ValuesFacts};
use outrigger_inject::decide::selection::mark_injected;
use outrigger_inject::ingest::workload::workload_from_pod;
use outrigger_inject::inject::{inject_pod, InjectParams, Mode};
use serde_json::{json, Value};

/// A pod of Deployment `deploy` in `ns` as the API server stores it: injected with `snapshot`
/// when given (by the webhook, between the two storing steps), with outrigger's marker when
/// `by_outrigger`.
fn pod(ns: &str, deploy: &str, snapshot: Option<&Snapshot>, by_outrigger: bool) -> Value {
    let hash = "6b8f7c5d9";
    let mut pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("{deploy}-{hash}-x1"), "namespace": ns,
                     "labels": {"app": deploy, "pod-template-hash": hash},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                         "name": format!("{deploy}-{hash}"), "uid": "u", "controller": true}]},
        "spec": {"containers": [
            {"name": "app", "image": "example/app:2", "ports": [{"containerPort": 8080}]}]}
    });
    apiserver::as_apiserver_stores(&mut pod, true);
    if let Some(s) = snapshot {
        let params = InjectParams {
            snapshot: s,
            mode: Mode::Webhook,
            workload: workload_from_pod(&pod),
            revision: "default",
            native_sidecars: false,
            proxy_envs: Default::default(),
            proxy_uid_gid: None,
            compliance_policy: "",
        };
        let mut injected = inject_pod(&pod, &params).expect("inject").pod;
        if by_outrigger {
            mark_injected(&mut injected);
        }
        pod["metadata"] = injected["metadata"].clone();
        pod["spec"] = injected["spec"].clone();
    }
    apiserver::as_apiserver_stores(&mut pod, false);
    pod["metadata"]["resourceVersion"] = json!("2");
    pod
}

fn namespace(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace",
           "metadata": {"name": name, "labels": labels, "resourceVersion": "2"}})
}

/// The fake cluster: Istio's embedded configuration in its ConfigMaps, deploy/base's webhook
/// configuration; in `apps` (`istio.io/rev=outrigger`) a current pod of `web`, a pod of `api`
/// injected with another hub, a pod of `batch` without a sidecar, and a pod of `legacy`
/// istiod injected with the other hub; in `mesh` (`istio-injection=enabled`: istiod's) a pod
/// istiod injected and one without a sidecar.
fn cluster() -> FakeApi {
    let current = defaults::snapshot().expect("defaults");
    let mut old = current.clone();
    old.values["global"]["hub"] = json!("registry.example/old");
    old.values_facts = ValuesFacts::from_values(&old.values);
    let mut c = Cluster::default();
    kube_api::put_istio_configmaps(&mut c);
    let mut webhook = shipped_webhook_config();
    webhook["metadata"]["resourceVersion"] = json!("2");
    c.put(webhook);
    c.put(namespace("apps", json!({"istio.io/rev": "outrigger"})));
    c.put(namespace("mesh", json!({"istio-injection": "enabled"})));
    c.put(pod("apps", "web", Some(&current), true));
    c.put(pod("apps", "api", Some(&old), true));
    c.put(pod("apps", "batch", None, false));
    c.put(pod("apps", "legacy", Some(&old), false));
    c.put(pod("mesh", "shop", Some(&current), false));
    c.put(pod("mesh", "bare", None, false));
    FakeApi::start(c)
}

const SERVER: &[&str] = &[
    "--dns-name",
    "localhost",
    "--ca-bundle-managed-externally",
    "--istio-configmaps",
    "--native-sidecars",
    "false",
    "--watch-pods",
];

/// `outrigger_pods{namespace="NS",state="STATE",cause="CAUSE"}`, 0 when absent.
fn pods(metrics: &str, ns: &str, state: &str, cause: &str) -> f64 {
    let series =
        format!("outrigger_pods{{namespace=\"{ns}\",state=\"{state}\",cause=\"{cause}\"}}");
    metric(metrics, &series).unwrap_or(0.0)
}

/// Every `outrigger_pods` series, sorted.
fn all_series(metrics: &str) -> Vec<String> {
    let mut v: Vec<String> = metrics
        .lines()
        .filter(|l| l.starts_with("outrigger_pods{"))
        .map(str::to_string)
        .collect();
    v.sort();
    v
}

/// Store `pod` as a write made now: a resourceVersion after every earlier one (the fake's watch
/// from a version delivers the objects written after it).
fn write_now(api: &FakeApi, mut pod: Value, rv: u64) {
    pod["metadata"]["resourceVersion"] = json!((1000 * rv).to_string());
    api.lock().put(pod);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pods_the_webhook_selects_counted_per_namespace_and_kept_current() {
    let api = cluster();
    let server = serve_against(&api, "serve-pod-watch", SERVER, &[]);
    let ca = secret_ca(&api, "Secret created");
    let c = H2::connect(server.addr, &ca).await.expect("TLS");
    eventually("the pods judged", || async {
        server.log_text().contains("every pod judged")
    })
    .await;
    let m = metrics(&c).await;
    // The current pod, the stale one by its image; the pod without a sidecar is missing; the
    // pod istiod injected is not outrigger's (neither missing nor stale), nor is anything in
    // istiod's namespace.
    assert_eq!(
        all_series(&m),
        [
            "outrigger_pods{namespace=\"apps\",state=\"current\",cause=\"\"} 1",
            "outrigger_pods{namespace=\"apps\",state=\"missing\",cause=\"\"} 1",
            "outrigger_pods{namespace=\"apps\",state=\"stale\",cause=\"image\"} 1",
        ],
        "{m}\n{}",
        server.log_text()
    );
    // A pod created without a sidecar while the webhook failed open: counted once the watch
    // delivers it.
    write_now(&api, pod("apps", "late", None, false), 1);
    eventually("the new pod counted as missing", || async {
        pods(&metrics(&c).await, "apps", "missing", "") == 2.0
    })
    .await;
    // Deleted (the object alone: the garbage collector's cascade is not what is tested):
    // counted no more.
    let gone = api.lock().remove("pods", "apps", "batch-6b8f7c5d9-x1");
    assert!(gone.is_some());
    eventually("the deleted pod no longer counted", || async {
        pods(&metrics(&c).await, "apps", "missing", "") == 1.0
    })
    .await;
    // The stale pod replaced by a current one (a restart): the stale series goes.
    let current = defaults::snapshot().expect("defaults");
    api.lock().remove("pods", "apps", "api-6b8f7c5d9-x1");
    eventually("the stale series removed", || async {
        !metrics(&c).await.contains("state=\"stale\"")
    })
    .await;
    write_now(&api, pod("apps", "api", Some(&current), true), 2);
    eventually("two current pods", || async {
        pods(&metrics(&c).await, "apps", "current", "") == 2.0
    })
    .await;
    let requests = api.requests();
    assert!(
        requests.iter().any(|r| r == "GET /api/v1/pods"),
        "pods listed and watched across namespaces: {requests:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_newly_selected_has_its_pods_judged_again() {
    let api = cluster();
    let server = serve_against(&api, "serve-pod-watch-ns", SERVER, &[]);
    let ca = secret_ca(&api, "Secret created");
    let c = H2::connect(server.addr, &ca).await.expect("TLS");
    eventually("the pods judged", || async {
        server.log_text().contains("every pod judged")
    })
    .await;
    assert!(!metrics(&c).await.contains("namespace=\"mesh\""));
    // `mesh` moves to outrigger: its pod without a sidecar is now missing; istiod's stays
    // istiod's.
    {
        let mut c = api.lock();
        let ns = c.get_mut("namespaces", "", "mesh").expect("mesh");
        ns["metadata"]["labels"] = json!({"istio.io/rev": "outrigger"});
        ns["metadata"]["resourceVersion"] = json!("99");
    }
    eventually("the namespace's pods judged again", || async {
        pods(&metrics(&c).await, "mesh", "missing", "") == 1.0
    })
    .await;
    let m = metrics(&c).await;
    assert_eq!(pods(&m, "mesh", "current", ""), 0.0, "{m}");
    assert!(
        server
            .log_text()
            .contains("the labels of namespace mesh changed"),
        "{}",
        server.log_text()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configuration_reload_judges_every_pod_again() {
    let api = cluster();
    let server = serve_against(&api, "serve-pod-watch-reload", SERVER, &[]);
    let ca = secret_ca(&api, "Secret created");
    let c = H2::connect(server.addr, &ca).await.expect("TLS");
    eventually("the pods judged", || async {
        server.log_text().contains("every pod judged")
    })
    .await;
    // The injector ConfigMap now names a third hub: both injected pods are stale by their
    // image.
    let mut values: Value = serde_json::from_str(defaults::VALUES).expect("values");
    values["global"]["hub"] = json!("registry.example/next");
    let values = values.to_string();
    api.lock().put(kube_api::configmap(
        "istio-system",
        "istio-sidecar-injector",
        "3000",
        &[("config", defaults::CONFIG), ("values", values.as_str())],
    ));
    eventually("the pods judged against the new configuration", || async {
        let m = metrics(&c).await;
        pods(&m, "apps", "current", "") == 0.0 && pods(&m, "apps", "stale", "image") == 2.0
    })
    .await;
    assert!(
        server
            .log_text()
            .contains("the configuration in force changed: judging every pod again"),
        "{}",
        server.log_text()
    );
    let m = metrics(&c).await;
    assert_eq!(pods(&m, "apps", "missing", ""), 1.0, "{m}");
}

/// Issue 36 (Events from anyone): where the API server presents no client certificate (a
/// managed control plane: no `--clientCaFile`), a review's Event is written only once the pod
/// watch sees the pod it named created; reviews of pods that never appear (or that existed
/// before the review) write none, and are dropped when their hold ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthenticated_callers_get_events_only_for_pods_seen_created() {
    let api = cluster();
    let mut args = SERVER.to_vec();
    args.extend(["--events", "--events-hold", "2s"]);
    let server = serve_against(
        &api,
        "serve-pod-watch-events",
        &args,
        &[("POD_NAME", "outrigger-0")],
    );
    let ca = secret_ca(&api, "Secret created");
    let c = H2::connect(server.addr, &ca).await.expect("TLS");
    eventually("the pods judged", || async {
        server.log_text().contains("every pod judged")
    })
    .await;
    // What a ReplicaSet's pod looks like at admission: a generateName, no name yet.
    let claimed = |deploy: &str, uid: &str| {
        json!({"metadata": {"generateName": format!("{deploy}-6b8f7c5d9-"), "namespace": "apps",
                "labels": {"app": deploy},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                    "name": format!("{deploy}-6b8f7c5d9"), "uid": uid, "controller": true}]},
               "spec": {"containers": [{"name": "app", "image": "example/app:2"}]}})
    };
    let mut existing = claimed("web", "u");
    existing["metadata"]["name"] = json!("web-6b8f7c5d9-x1");
    for (uid, pod) in [
        ("shop", claimed("shop", "u")),
        ("ghost", claimed("ghost", "g")),
        ("existing", existing),
    ] {
        let r = c
            .post("/inject", review("admission.k8s.io/v1", uid, "apps", pod))
            .await
            .expect("review");
        assert!(
            r.json()["response"]["patch"].is_string(),
            "{uid}: {}",
            r.text()
        );
    }
    // The API server stores the pod of `shop` (named from its generateName, injected by
    // outrigger): its Event is written, on its ReplicaSet.
    let current = defaults::snapshot().expect("defaults");
    let mut shop = pod("apps", "shop", Some(&current), true);
    shop["metadata"]["name"] = json!("shop-6b8f7c5d9-q7x2k");
    write_now(&api, shop, 1);
    eventually("the Event of the pod seen created", || async {
        !api.lock().all("events").is_empty()
    })
    .await;
    // The two others are dropped when their hold ends: no Event for them.
    let dropped = "outrigger_events_dropped_total{reason=\"not_created\"}";
    eventually("the held Events of pods never created dropped", || async {
        metric(&metrics(&c).await, dropped) == Some(2.0)
    })
    .await;
    let events = api.lock().all("events");
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["regarding"]["kind"], "ReplicaSet");
    assert_eq!(events[0]["regarding"]["name"], "shop-6b8f7c5d9");
    assert_eq!(events[0]["reason"], "SidecarInjected");
    let m = metrics(&c).await;
    assert_eq!(
        metric(
            &m,
            "outrigger_events_dropped_total{reason=\"unauthenticated\"}"
        )
        .unwrap_or(0.0),
        0.0,
        "{m}"
    );
}
