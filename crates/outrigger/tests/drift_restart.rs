//! `outrigger drift --kube --restart` end to end against the fake API server, whose workload
//! controllers roll out a tick after a template change (`common::controllers`): the plan
//! without `--yes` (nothing changed), the restarts one at a time in order, the wait for a
//! PodDisruptionBudget, and the timeouts (a PDB that never allows a disruption, a rollout that
//! hangs). Bare pods and Jobs are named and never touched.

mod common;
use common::apiserver_model as apiserver;
#[allow(dead_code)] // the helpers of the inject tests; this file uses some
mod support;

use std::time::Duration;

use common::controllers::settle;
use common::kube_api::{self, Cluster, FakeApi};
use outrigger_inject::config::{defaults, ValuesFacts};
use outrigger_inject::ingest::workload::workload_from_pod;
use outrigger_inject::inject::{inject_pod, InjectParams, Mode};
use serde_json::{json, Value};
use support::{Inject, TempDir};

/// A pod of `app` owned by `owner` (`(kind, name)`; `None`: a bare pod), injected with an older
/// hub than the configuration in force and stored as the API server stores it.
fn stale_pod(app: &str, i: usize, owner: Option<(&str, &str)>) -> Value {
    let mut old = defaults::snapshot().expect("defaults");
    old.values["global"]["hub"] = json!("registry.example/old");
    old.values_facts = ValuesFacts::from_values(&old.values);
    let mut meta = json!({"name": format!("{app}-{i}"), "namespace": "shop",
                          "labels": {"app": app}});
    if let Some((kind, name)) = owner {
        let hash = "5f7d9c8b6d";
        let (owner_kind, owner_name) = if kind == "Deployment" {
            meta["labels"]["pod-template-hash"] = json!(hash);
            ("ReplicaSet", format!("{name}-{hash}"))
        } else {
            (kind, name.to_string())
        };
        meta["name"] = json!(format!("{owner_name}-{i}"));
        meta["generateName"] = json!(format!("{owner_name}-"));
        let group = if kind == "Job" { "batch/v1" } else { "apps/v1" };
        meta["ownerReferences"] = json!([{"apiVersion": group, "kind": owner_kind,
            "name": owner_name, "uid": "u", "controller": true}]);
    }
    let mut pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                         "spec": {"containers": [{"name": "app", "image": "example/app:2"}]}});
    apiserver::as_apiserver_stores(&mut pod, true);
    let params = InjectParams {
        snapshot: &old,
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
    apiserver::as_apiserver_stores(&mut pod, false);
    pod
}

fn workload(kind: &str, name: &str, replicas: i64) -> Value {
    let mut w = json!({
        "apiVersion": "apps/v1", "kind": kind,
        "metadata": {"name": name, "namespace": "shop", "generation": 1},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "app", "image": "example/app:2"}]}}}
    });
    settle(&mut w);
    w
}

fn pdb(name: &str, app: &str, allowed: i64) -> Value {
    json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
           "metadata": {"name": name, "namespace": "shop"},
           "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": app}}},
           "status": {"disruptionsAllowed": allowed, "currentHealthy": 2, "desiredHealthy": 1,
                      "expectedPods": 2}})
}

/// Istio's embedded configuration in force; in `shop` (injection enabled) stale pods of
/// Deployments `api` and `web`, StatefulSet `db`, a bare pod `debug` and Job `once`; a PDB of
/// `web` that allows a disruption. `seed` adds to it.
fn cluster(seed: impl FnOnce(&mut Cluster)) -> FakeApi {
    let mut c = Cluster::default();
    kube_api::put_istio_configmaps(&mut c);
    c.put(json!({"apiVersion": "v1", "kind": "Namespace",
                 "metadata": {"name": "shop", "labels": {"istio-injection": "enabled"}}}));
    for name in ["api", "web"] {
        c.put(workload("Deployment", name, 2));
        for i in 0..2 {
            c.put(stale_pod(name, i, Some(("Deployment", name))));
        }
    }
    c.put(workload("StatefulSet", "db", 1));
    c.put(stale_pod("db", 0, Some(("StatefulSet", "db"))));
    c.put(stale_pod("debug", 0, None));
    c.put(stale_pod("once", 0, Some(("Job", "once"))));
    c.put(pdb("web-pdb", "web", 1));
    c.rollouts.delay = Duration::from_millis(100);
    seed(&mut c);
    FakeApi::start(c)
}

fn restart(api: &FakeApi, test: &str, flags: &[&str]) -> (support::Run, TempDir) {
    let dir = TempDir::new(test);
    let kc = dir
        .write("kubeconfig", &kube_api::kubeconfig(api.port))
        .display()
        .to_string();
    let run = Inject::command("drift")
        .args([
            "--kube",
            "--kubeconfig",
            kc.as_str(),
            "-n",
            "shop",
            "--restart",
        ])
        .args(["--poll-interval", "50ms"])
        .args(flags.iter().copied())
        .run();
    (run, dir)
}

fn writes(api: &FakeApi) -> Vec<String> {
    api.requests()
        .into_iter()
        .filter(|r| !r.starts_with("GET "))
        .collect()
}

fn restarted_at(api: &FakeApi, resource: &str, name: &str) -> Option<String> {
    api.lock()
        .get(resource, "shop", name)
        .and_then(|o| {
            o.pointer("/spec/template/metadata/annotations/kubectl.kubernetes.io~1restartedAt")
        })
        .and_then(Value::as_str)
        .map(str::to_string)
}

#[test]
fn without_yes_the_plan_is_printed_and_nothing_changes() {
    let api = cluster(|_| {});
    let (run, _dir) = restart(&api, "restart-plan", &[]);
    let out = run.exited(1);
    let plan: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("restart plan"))
        .collect();
    assert_eq!(
        plan[..4],
        [
            "restart plan: 3 workloads, one at a time (PodDisruptionBudget, then rollout):",
            "  1. Deployment shop/api (2 drifted pods)",
            "  2. Deployment shop/web (2 drifted pods)",
            "  3. StatefulSet shop/db (1 drifted pod)",
        ],
        "{out}"
    );
    assert!(
        out.contains("not restarted: Job shop/once (1 drifted pod)"),
        "{out}"
    );
    assert!(
        out.contains("not restarted: Pod shop/debug-0 (1 drifted pod)"),
        "{out}"
    );
    assert!(out.contains("nothing was changed: pass --yes"), "{out}");
    assert_eq!(writes(&api), Vec::<String>::new());
    assert!(api.lock().rollouts.log.is_empty());
}

#[test]
fn with_yes_each_workload_rolls_out_before_the_next_is_restarted() {
    let api = cluster(|_| {});
    let (run, _dir) = restart(&api, "restart-yes", &["--yes"]);
    run.exited(1);
    assert_eq!(
        api.lock().rollouts.log,
        [
            "patched deployments/shop/api",
            "rolled out deployments/shop/api",
            "patched deployments/shop/web",
            "rolled out deployments/shop/web",
            "patched statefulsets/shop/db",
            "rolled out statefulsets/shop/db",
        ],
        "{}",
        run.stderr
    );
    for (resource, name) in [
        ("deployments", "api"),
        ("deployments", "web"),
        ("statefulsets", "db"),
    ] {
        let at = restarted_at(&api, resource, name).unwrap_or_default();
        assert!(
            at.len() == 20 && at.ends_with('Z'),
            "{resource}/{name}: {at:?}"
        );
    }
    // Only the three template patches: no pod, Job or ReplicaSet written or deleted.
    let w = writes(&api);
    assert_eq!(w.len(), 3, "{w:#?}");
    assert!(
        w.iter()
            .all(|r| r.starts_with("PATCH /apis/apps/v1/namespaces/shop/")),
        "{w:#?}"
    );
    assert!(
        run.stderr.contains("restarted StatefulSet shop/db (3/3)"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_pdb_that_allows_no_disruption_is_waited_for() {
    let api = cluster(|c| c.put(pdb("api-pdb", "api", 0)));
    let later = api.clone();
    let opener = std::thread::spawn(move || {
        // Opened once the restart has found it closed, a few polls later.
        let pdbs = "GET /apis/policy/v1/namespaces/shop/poddisruptionbudgets".to_string();
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while !later.requests().contains(&pdbs) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(300));
        later
            .lock()
            .get_mut("poddisruptionbudgets", "shop", "api-pdb")
            .expect("pdb")["status"]["disruptionsAllowed"] = json!(1);
    });
    let (run, _dir) = restart(&api, "restart-pdb-wait", &["--yes", "--timeout", "30s"]);
    opener.join().expect("opener");
    run.exited(1);
    assert!(
        run.stderr
            .contains("waiting for PodDisruptionBudget api-pdb of Deployment shop/api"),
        "{}",
        run.stderr
    );
    let polls = api
        .requests()
        .iter()
        .filter(|r| r.ends_with("/poddisruptionbudgets"))
        .count();
    assert!(polls >= 3, "the PDB was read {polls} times");
    let log = api.lock().rollouts.log.clone();
    assert_eq!(log.len(), 6, "{log:#?}");
    assert_eq!(log[0], "patched deployments/shop/api");
}

#[test]
fn a_pdb_that_never_allows_a_disruption_times_out_before_any_change() {
    let api = cluster(|c| c.put(pdb("api-pdb", "api", 0)));
    let (run, _dir) = restart(
        &api,
        "restart-pdb-timeout",
        &["--yes", "--timeout", "500ms"],
    );
    let err = run.failure();
    assert_eq!(run.code, Some(2));
    assert!(
        err.contains("restarting Deployment shop/api: PodDisruptionBudget api-pdb allowed no disruption within 500ms"),
        "{err}"
    );
    assert!(
        err.contains("not restarted: Deployment shop/web, StatefulSet shop/db"),
        "{err}"
    );
    assert_eq!(writes(&api), Vec::<String>::new());
}

#[test]
fn a_rollout_that_hangs_times_out_and_stops_there() {
    let api = cluster(|c| {
        c.rollouts
            .hung
            .push(("deployments".into(), "shop".into(), "api".into()));
    });
    let (run, _dir) = restart(&api, "restart-hang", &["--yes", "--timeout", "500ms"]);
    let err = run.failure();
    assert_eq!(run.code, Some(2));
    assert!(
        err.contains("the rollout did not complete within 500ms: Waiting for deployment spec update to be observed..."),
        "{err}"
    );
    assert_eq!(api.lock().rollouts.log, ["patched deployments/shop/api"]);
    assert!(restarted_at(&api, "deployments", "web").is_none());
}

/// `(resource, name, resourceVersion, generation)` of the three restartable workloads.
fn versions(api: &FakeApi) -> Vec<(String, String, Value, Value)> {
    [
        ("deployments", "api"),
        ("deployments", "web"),
        ("statefulsets", "db"),
    ]
    .iter()
    .map(|(r, n)| {
        let c = api.lock();
        let o = c.get(r, "shop", n).expect("workload");
        (
            r.to_string(),
            n.to_string(),
            o["metadata"]["resourceVersion"].clone(),
            o["metadata"]["generation"].clone(),
        )
    })
    .collect()
}

/// The requests with `dryRun=All`.
fn dry_runs(api: &FakeApi) -> Vec<String> {
    api.lock()
        .queries
        .iter()
        .filter(|q| q.contains("dryRun=All"))
        .cloned()
        .collect()
}

#[test]
fn a_server_dry_run_sends_each_patch_with_dry_run_and_stores_nothing() {
    // --yes or not: a dry run changes nothing, as kubectl's.
    for (test, flags) in [
        ("restart-server-dry-run", &["--dry-run", "server"][..]),
        (
            "restart-server-dry-run-yes",
            &["--dry-run=server", "--yes"][..],
        ),
    ] {
        let api = cluster(|c| c.put(pdb("api-pdb", "api", 0)));
        let before = versions(&api);
        let (run, _dir) = restart(&api, test, flags);
        let out = run.exited(1);
        assert!(!out.contains("nothing was changed"), "{out}");
        let sent = dry_runs(&api);
        assert_eq!(sent.len(), 3, "{sent:#?}");
        assert!(
            sent[0].starts_with("PATCH /apis/apps/v1/namespaces/shop/deployments/api?"),
            "{sent:#?}"
        );
        assert!(sent.iter().all(|q| q.starts_with("PATCH ")), "{sent:#?}");
        assert_eq!(writes(&api).len(), 3, "only the dry-run patches");
        assert_eq!(versions(&api), before, "nothing stored");
        assert!(api.lock().rollouts.log.is_empty());
        assert!(restarted_at(&api, "deployments", "api").is_none());
        for what in [
            "Deployment shop/api restarted (server dry run)",
            "Deployment shop/web restarted (server dry run)",
            "StatefulSet shop/db restarted (server dry run)",
            "PodDisruptionBudget api-pdb allows no disruption now",
        ] {
            assert!(run.stderr.contains(what), "{what}: {}", run.stderr);
        }
        // The PDB is reported, not waited for: read once per workload.
        let polls = api
            .requests()
            .iter()
            .filter(|r| r.ends_with("/poddisruptionbudgets"))
            .count();
        assert_eq!(polls, 3);
    }
}

#[test]
fn a_server_dry_run_reports_every_refusal_and_fails() {
    let api = cluster(|c| {
        c.forbidden
            .push("PATCH /apis/apps/v1/namespaces/shop/deployments/api".into());
    });
    let before = versions(&api);
    let (run, _dir) = restart(
        &api,
        "restart-server-dry-run-refused",
        &["--dry-run=server"],
    );
    let err = run.failure();
    assert_eq!(run.code, Some(2));
    assert!(
        err.contains("the API server refused the restart of Deployment shop/api (server dry run; nothing was changed)"),
        "{err}"
    );
    assert!(
        run.stderr
            .contains("Deployment shop/api refused (server dry run)")
            && run.stderr.contains("cannot patch resource \"deployments\""),
        "{}",
        run.stderr
    );
    // The others were still sent and judged (the refused one was sent too).
    assert!(
        run.stderr
            .contains("StatefulSet shop/db restarted (server dry run)"),
        "{}",
        run.stderr
    );
    assert_eq!(dry_runs(&api).len(), 3);
    assert_eq!(versions(&api), before);
}

#[test]
fn a_client_dry_run_sends_nothing_even_with_yes() {
    let api = cluster(|_| {});
    let (run, _dir) = restart(
        &api,
        "restart-client-dry-run",
        &["--dry-run=client", "--yes"],
    );
    let out = run.exited(1);
    assert!(
        out.contains("nothing was changed (client dry run)"),
        "{out}"
    );
    assert_eq!(writes(&api), Vec::<String>::new());
    assert!(api.lock().rollouts.log.is_empty());
    let (run, _dir) = restart(&api, "restart-bad-dry-run", &["--dry-run=maybe"]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(run.stderr.contains("maybe"), "{}", run.stderr);
}
