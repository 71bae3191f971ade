//! `outrigger preview --kube` against what the cluster then does: the fake API server's
//! admission chain (`common::admission`) with the real `outrigger serve` behind it, serving the
//! candidate revision's ConfigMaps. Every change preview announces for a Deployment is what a pod
//! of that Deployment, created through admission once the candidate serves, carries; and a
//! finding preview reports matches a refusal the pod meets there (the duplicate container name
//! the API server's validation refuses is not modelled by the fake, so the check is on the
//! values).

mod common;
#[allow(dead_code)] // the helpers of the inject tests; this file uses some
mod support;

use common::kube_api::{self, configmap, serve_against, Cluster, FakeApi};
use common::*;
use outrigger_inject::config::defaults;
use serde_json::{json, Value};
use support::{json_rows, Inject, TempDir};

fn namespace(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": name, "uid": format!("uid-{name}"), "resourceVersion": "2", "labels": labels}})
}

const HASH: &str = "6b8f9d7c5d";

fn deployment() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "web", "namespace": "apps", "generation": 1},
           "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"},
                                              "annotations": {"team": "shop"}},
                                 "spec": {"containers": [{"name": "app", "image": "example/app:3",
                                     "ports": [{"containerPort": 8080}],
                                     "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}}}]}}},
           "status": {"observedGeneration": 1, "replicas": 2}})
}

/// A pod of the Deployment as its ReplicaSet creates it.
fn pod_of(deployment: &Value) -> Value {
    let template = &deployment["spec"]["template"];
    let mut meta = template["metadata"].clone();
    meta["labels"]["pod-template-hash"] = json!(HASH);
    meta["generateName"] = json!(format!("web-{HASH}-"));
    meta["name"] = json!(format!("web-{HASH}-x1"));
    meta["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet",
        "name": format!("web-{HASH}"), "uid": "rs", "controller": true}]);
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": template["spec"].clone()})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_changes_previewed_are_what_admission_gives_the_pods() {
    let mut c = Cluster::default();
    for ns in ["outrigger", "kube-system", "istio-system"] {
        c.put(namespace(ns, json!({})));
    }
    c.put(namespace("apps", json!({"istio.io/rev": "outrigger"})));
    kube_api::put_istio_configmaps(&mut c);
    let mut values: Value = serde_json::from_str(defaults::VALUES).expect("values");
    values["global"]["hub"] = json!("registry.example/next");
    values["global"]["proxy"]["resources"]["limits"]["memory"] = json!("512Mi");
    values["revision"] = json!("canary");
    let values = values.to_string();
    c.put(configmap(
        "istio-system",
        "istio-sidecar-injector-canary",
        "3",
        &[("config", defaults::CONFIG), ("values", &values)],
    ));
    c.put(configmap(
        "istio-system",
        "istio-canary",
        "3",
        &[("mesh", defaults::MESH)],
    ));
    c.put(deployment());
    c.put(shipped_webhook_config());
    let api = FakeApi::start(c);

    // The preview, before the candidate serves.
    let dir = TempDir::new("preview-admission");
    let kc = dir
        .write("kubeconfig", &kube_api::kubeconfig(api.port))
        .display()
        .to_string();
    let run = Inject::command("preview")
        .args([
            "--kube",
            "--kubeconfig",
            &kc,
            "-n",
            "apps",
            "--candidate-revision",
            "canary",
            // As the candidate's server below runs.
            "--native-sidecars",
            "false",
        ])
        .args(["-o", "json"])
        .run();
    let rows = json_rows(run.exited(1));
    assert_eq!(rows.len(), 1, "{rows:#?}");
    let changes = rows[0]["changes"].as_array().expect("changes").clone();
    assert!(
        changes
            .iter()
            .any(|c| c["path"] == "spec.containers[istio-proxy].resources.limits.memory"),
        "{changes:#?}"
    );

    // The candidate serving: outrigger reading the canary's ConfigMaps behind the shipped webhook.
    let server = serve_against(
        &api,
        "preview-admission-serve",
        &[
            "--dns-name",
            "localhost",
            "--istio-configmaps",
            "--revision",
            "canary",
            "--native-sidecars",
            "false",
            "--failure-policy-once-ready",
            "Fail",
            "--activation-delay",
            "200ms",
        ],
        &[],
    );
    api.lock()
        .endpoints
        .insert(("outrigger".into(), "outrigger".into()), vec![server.addr]);
    eventually("the webhook configuration activated", || async {
        api.lock()
            .get(
                "mutatingwebhookconfigurations",
                "",
                "outrigger-sidecar-injector",
            )
            .and_then(|m| m["webhooks"].as_array().cloned())
            .is_some_and(|w| w.iter().all(|e| e["clientConfig"]["caBundle"].is_string()))
    })
    .await;
    let admitted = api
        .create_pod("apps", pod_of(&deployment()), true)
        .await
        .expect("admitted")
        .pod;
    // `serve --revision canary` records `canary` as istiod of that revision does, and as preview
    // renders the candidate revision: every change, the revision's included.
    let differing: Vec<String> = changes
        .iter()
        .filter(|c| {
            let got = c["candidatePointer"]
                .as_str()
                .and_then(|p| admitted.pointer(p))
                .cloned()
                .unwrap_or(Value::Null);
            got != c["candidate"]
        })
        .map(|c| format!("{} {} {}", c["path"], c["candidatePointer"], c["candidate"]))
        .collect();
    assert!(differing.is_empty(), "{differing:#?}\n{admitted:#}");
}
