//! `outrigger drift --kube` end to end: the real binary reads Istio's ConfigMaps, the namespaces
//! and the pods (page by page) from the fake API server of the tests (`common::kube_api`). The
//! pods are injected by the library as the webhook injects them and stored as kube-apiserver
//! stores them (the model in outrigger-inject's `tests/model/apiserver.rs`: defaults, token
//! volume and mounts, a LimitRange's additions, managedFields, status, another webhook's label).

#[path = "../../outrigger-inject/tests/model/apiserver.rs"]
mod apiserver;
mod common;
#[allow(dead_code)] // the helpers of the inject tests; this file uses some
mod support;

use common::kube_api::{self, configmap, Cluster, FakeApi};
use outrigger_inject::config::{defaults, Snapshot, ValuesFacts};
use outrigger_inject::ingest::workload::workload_from_pod;
use outrigger_inject::inject::{inject_pod, InjectParams, Mode};
use serde_json::{json, Value};
use support::{json_rows, Inject, TempDir};

/// A pod of Deployment `deploy` (its ReplicaSet `deploy-hash`), as the API server stores it:
/// injected with `snapshot` when given (by the webhook, between the two storing steps).
fn pod(ns: &str, deploy: &str, i: usize, labels: Value, snapshot: Option<&Snapshot>) -> Value {
    let hash = "7c9d8f6b5d";
    let mut labels = labels;
    labels["app"] = json!(deploy);
    labels["pod-template-hash"] = json!(hash);
    let mut pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("{deploy}-{hash}-{i:05}"),
                     "generateName": format!("{deploy}-{hash}-"), "namespace": ns,
                     "labels": labels,
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                         "name": format!("{deploy}-{hash}"), "uid": "u", "controller": true}]},
        "spec": {"containers": [
            {"name": "app", "image": "example/app:2", "ports": [{"containerPort": 8080}],
             "readinessProbe": {"httpGet": {"port": 8080, "path": "/ready"}}},
            {"name": "log", "image": "fluent-bit",
             "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]}
        ]}
    });
    apiserver::as_apiserver_stores(&mut pod, true);
    if let Some(s) = snapshot {
        let params = InjectParams {
            snapshot: s,
            mode: Mode::Webhook,
            workload: workload_from_pod(&pod),
            revision: "",
            native_sidecars: false,
            proxy_envs: Default::default(),
            proxy_uid_gid: None,
            compliance_policy: "",
        };
        let injected = inject_pod(&pod, &params).expect("inject").pod;
        pod["metadata"] = injected["metadata"].clone();
        pod["spec"] = injected["spec"].clone();
    }
    apiserver::as_apiserver_stores(&mut pod, false);
    pod
}

fn namespace(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace",
           "metadata": {"name": name, "labels": labels}})
}

/// The fake cluster: Istio's embedded configuration in its ConfigMaps; in `shop` (injection
/// enabled) 3 current pods of `web`, 2 pods of `api` injected with another hub, 1 pod of
/// `batch` without a sidecar and 1 of `tools` opted out but injected; in `legacy` (no label) 1
/// pod without a sidecar; in `next` (revision `canary`) 1 pod.
fn cluster() -> FakeApi {
    let current = defaults::snapshot().expect("defaults");
    let mut old = current.clone();
    old.values["global"]["hub"] = json!("registry.example/old");
    old.values_facts = ValuesFacts::from_values(&old.values);
    let mut c = Cluster::default();
    c.user = "alice".into();
    c.put(configmap(
        "istio-system",
        "istio-sidecar-injector",
        "1",
        &[("config", defaults::CONFIG), ("values", defaults::VALUES)],
    ));
    c.put(configmap(
        "istio-system",
        "istio",
        "1",
        &[("mesh", defaults::MESH)],
    ));
    c.put(namespace("shop", json!({"istio-injection": "enabled"})));
    c.put(namespace("legacy", json!({})));
    c.put(namespace("next", json!({"istio.io/rev": "canary"})));
    for i in 0..3 {
        c.put(pod("shop", "web", i, json!({}), Some(&current)));
    }
    for i in 0..2 {
        c.put(pod("shop", "api", i, json!({}), Some(&old)));
    }
    c.put(pod("shop", "batch", 0, json!({}), None));
    let optout = json!({"sidecar.istio.io/inject": "false"});
    let mut tools = pod("shop", "tools", 0, json!({}), Some(&current));
    tools["metadata"]["labels"]["sidecar.istio.io/inject"] =
        optout["sidecar.istio.io/inject"].clone();
    c.put(tools);
    c.put(pod("legacy", "old", 0, json!({}), None));
    c.put(pod("next", "new", 0, json!({}), Some(&current)));
    FakeApi::start(c)
}

fn drift(kc: &str, flags: &[&str]) -> support::Run {
    Inject::command("drift")
        .args(["--kube", "--kubeconfig", kc])
        .args(flags.iter().copied())
        .run()
}

fn setup(test: &str) -> (FakeApi, TempDir, String) {
    let api = cluster();
    let dir = TempDir::new(test);
    let kc = dir
        .write("kubeconfig", &kube_api::kubeconfig(api.port))
        .display()
        .to_string();
    (api, dir, kc)
}

#[test]
fn the_clusters_pods_grouped_by_workload_in_pages() {
    let (api, _dir, kc) = setup("drift-kube-all");
    let run = drift(&kc, &["-A", "--chunk-size", "2", "-o", "json"]);
    let got = json_rows(run.exited(1));
    let summary: Vec<(String, String, String, usize)> = got
        .iter()
        .map(|r| {
            (
                format!(
                    "{}/{}",
                    r["namespace"].as_str().unwrap_or(""),
                    r["name"].as_str().unwrap_or("")
                ),
                r["kind"].as_str().unwrap_or("").to_string(),
                r["state"].as_str().unwrap_or("").to_string(),
                r["pods"].as_array().map_or(0, Vec::len),
            )
        })
        .collect();
    let want = [
        ("legacy/old", "Deployment", "not-injected", 1),
        ("shop/api", "Deployment", "stale", 2),
        ("shop/batch", "Deployment", "missing-sidecar", 1),
        ("shop/tools", "Deployment", "unwanted-sidecar", 1),
        ("shop/web", "Deployment", "current", 3),
    ]
    .map(|(n, k, s, p)| (n.to_string(), k.to_string(), s.to_string(), p));
    assert_eq!(summary, want, "{got:#?}");
    // The stale pods differ by the proxy images alone (the rest is the API server's).
    let api_row = &got[1];
    let fields = api_row["fields"].as_array().expect("fields");
    assert!(!fields.is_empty());
    for f in fields {
        assert_eq!(f["cause"], "proxy image", "{f}");
        assert!(
            f["actual"]
                .as_str()
                .is_some_and(|i| i.starts_with("registry.example/old/")),
            "{f}"
        );
    }
    // 9 pods, 2 a page: 5 list requests, each continuing where the last stopped.
    let c = api.lock();
    let lists: Vec<&String> = c
        .queries
        .iter()
        .filter(|q| q.starts_with("GET /api/v1/pods?"))
        .collect();
    assert_eq!(lists.len(), 5, "{lists:#?}");
    assert!(lists.iter().all(|q| q.contains("limit=2")), "{lists:#?}");
    assert!(!lists[0].contains("continue="), "{lists:#?}");
    assert!(
        lists[1..].iter().all(|q| q.contains("continue=")),
        "{lists:#?}"
    );
}

#[test]
fn one_namespace_a_table_and_the_exit_status() {
    let (api, _dir, kc) = setup("drift-kube-ns");
    let run = drift(&kc, &["-n", "shop"]);
    let out = run.exited(1);
    let lines: Vec<Vec<&str>> = out
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        lines[0],
        ["NAMESPACE", "WORKLOAD", "PODS", "STATE", "REVISION"]
    );
    assert!(
        lines.contains(&vec!["shop", "Deployment/web", "3", "current", "default"]),
        "{out}"
    );
    assert!(
        lines.contains(&vec!["shop", "Deployment/api", "2", "stale", "default"]),
        "{out}"
    );
    assert!(
        out.contains("spec.containers[istio-proxy].image: \"registry.example/old/"),
        "{out}"
    );
    assert!(
        out.ends_with("7 pods of 4 workloads: 4 drifted, 3 current or rightly not injected\n"),
        "{out}"
    );
    let requests = api.requests();
    assert!(
        requests.contains(&"GET /api/v1/namespaces/shop".to_string()),
        "{requests:?}"
    );
    assert!(
        requests.contains(&"GET /api/v1/namespaces/shop/pods".to_string()),
        "{requests:?}"
    );
    drop(api);

    // Nothing drifted in `legacy`: 0. Another revision's pods are counted, not judged.
    let (_api, _dir, kc) = setup("drift-kube-quiet");
    assert!(drift(&kc, &["-n", "legacy"])
        .exited(0)
        .contains("1 pods of 1 workloads: 0 drifted"));
    let next = drift(&kc, &["-n", "next"]);
    assert!(
        next.exited(0)
            .contains("1 pods selected by another revision's webhook were not examined"),
        "{}",
        next.exited(0)
    );
}

#[test]
fn the_same_pods_are_current_under_their_revision() {
    let (_api, _dir, kc) = setup("drift-kube-rev");
    // Under --revision canary, `next`'s pod (injected as `default`) is on the wrong revision;
    // the ConfigMaps of canary do not exist, so the files are given.
    let dir = TempDir::new("drift-kube-rev-files");
    let run = drift(
        &kc,
        &[
            "-n",
            "next",
            "--revision",
            "canary",
            "-o",
            "json",
            "--injectConfigFile",
            &dir.write("c.yaml", defaults::CONFIG).display().to_string(),
            "--valuesFile",
            &dir.write("v.json", defaults::VALUES).display().to_string(),
            "--meshConfigFile",
            &dir.write("m.yaml", defaults::MESH).display().to_string(),
        ],
    );
    let got = json_rows(run.exited(1));
    assert_eq!(got.len(), 1, "{got:#?}");
    assert_eq!(got[0]["state"], "wrong-revision");
    assert_eq!(got[0]["injectedRevision"], "default");
    assert_eq!(got[0]["expectedRevision"], "canary");
}

#[test]
fn a_denied_list_is_an_error_naming_it() {
    let (api, _dir, kc) = setup("drift-kube-denied");
    api.lock()
        .forbidden
        .push("GET /api/v1/namespaces/shop/pods".into());
    let run = drift(&kc, &["-n", "shop"]);
    run.exited(2);
    let err = &run.stderr;
    assert!(
        err.contains("listing pods in namespace shop: pods is forbidden: User \"alice\" cannot list resource \"pods\""),
        "{err}"
    );
}
