//! Rollouts and node drains of deploy/ cannot deadlock: the kustomize output of the base and the
//! HA overlay is read, and a small model of the Deployment controller, the scheduler and the
//! eviction API (PodDisruptionBudget) plays, for 2-, 3- and 5-node pools, a rolling update and a
//! drain of every node in turn. Both must complete. The model is also run on the HA overlay as it
//! was before (surge 1, unavailable 0, *required* anti-affinity, `minAvailable: 2`), which must
//! deadlock: the simulation can fail. Reported ignored when `kubectl` is absent (failing under CI:
//! tests/harness).
//!
//! The model (see docs/kubernetes.md, "Rollouts and drains"):
//! * scheduler: a pod goes to a schedulable (not cordoned) node that satisfies the hard
//!   constraints (required pod anti-affinity on `kubernetes.io/hostname`, topology spread with
//!   `DoNotSchedule`), preferring the node with the fewest replicas (the soft constraints);
//!   otherwise it stays Pending. A scheduled pod is Ready at once.
//! * Deployment controller: creates new-version pods while `total < replicas + maxSurge`, deletes
//!   unavailable old pods freely and available old pods while `available - 1 >= replicas -
//!   maxUnavailable`; a rollout is complete when every replica is new and available (the
//!   controller's `DeploymentComplete`). An evicted pod is replaced at once.
//! * eviction API: allowed while `healthy - desiredHealthy > 0`, where `desiredHealthy` is
//!   `minAvailable` or `replicas - maxUnavailable`; not-Ready pods are always evictable with
//!   `unhealthyPodEvictionPolicy: AlwaysAllow`. A drain cordons the node and evicts its pods
//!   until none is left; it deadlocks when no eviction is allowed and nothing else moves.

mod harness;
mod support_validate;

use harness::Need;
use serde_json::Value;
use support_validate::kustomize;

/// What the model reads from the manifests.
#[derive(Debug, Clone, PartialEq)]
struct Spec {
    replicas: usize,
    max_surge: usize,
    max_unavailable: usize,
    /// Required pod anti-affinity on kubernetes.io/hostname.
    required_anti_affinity: bool,
    /// Topology spread on kubernetes.io/hostname with `DoNotSchedule` (max skew).
    hard_spread: Option<usize>,
    pdb_min_available: Option<usize>,
    pdb_max_unavailable: Option<usize>,
    unhealthy_always_allow: bool,
}

/// An int-or-percent field, resolved as the controllers do (surge rounds up, unavailable down).
fn int_or_percent(v: &Value, replicas: usize, round_up: bool) -> usize {
    match v {
        Value::Number(n) => n.as_u64().unwrap_or(0) as usize,
        Value::String(s) => {
            let pct: usize = s.trim_end_matches('%').parse().expect("a percentage");
            let scaled = pct * replicas;
            if round_up {
                scaled.div_ceil(100)
            } else {
                scaled / 100
            }
        }
        _ => 0,
    }
}

fn spec_from_documents(docs: &[Value]) -> Spec {
    let dep = docs
        .iter()
        .find(|d| d["kind"] == "Deployment")
        .expect("a Deployment");
    let pdb = docs
        .iter()
        .find(|d| d["kind"] == "PodDisruptionBudget")
        .expect("a PodDisruptionBudget");
    let replicas = dep["spec"]["replicas"].as_u64().unwrap_or(1) as usize;
    let ru = &dep["spec"]["strategy"]["rollingUpdate"];
    // Kubernetes' defaults: 25% each.
    let surge = ru.get("maxSurge").cloned().unwrap_or(Value::from("25%"));
    let unavail = ru
        .get("maxUnavailable")
        .cloned()
        .unwrap_or(Value::from("25%"));
    let pod = &dep["spec"]["template"]["spec"];
    let required_anti_affinity = pod["affinity"]["podAntiAffinity"]
        ["requiredDuringSchedulingIgnoredDuringExecution"]
        .as_array()
        .is_some_and(|terms| {
            terms
                .iter()
                .any(|t| t["topologyKey"] == "kubernetes.io/hostname")
        });
    let hard_spread = pod["topologySpreadConstraints"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| {
            c["topologyKey"] == "kubernetes.io/hostname"
                && c["whenUnsatisfiable"] == "DoNotSchedule"
        })
        .map(|c| c["maxSkew"].as_u64().unwrap_or(1) as usize);
    let p = &pdb["spec"];
    assert!(
        p.get("minAvailable").is_none() || p.get("maxUnavailable").is_none(),
        "a PodDisruptionBudget may not set both minAvailable and maxUnavailable"
    );
    Spec {
        replicas,
        max_surge: int_or_percent(&surge, replicas, true),
        max_unavailable: int_or_percent(&unavail, replicas, false),
        required_anti_affinity,
        hard_spread,
        pdb_min_available: p
            .get("minAvailable")
            .map(|v| int_or_percent(v, replicas, true)),
        pdb_max_unavailable: p
            .get("maxUnavailable")
            .map(|v| int_or_percent(v, replicas, false)),
        unhealthy_always_allow: p["unhealthyPodEvictionPolicy"] == "AlwaysAllow",
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Pod {
    new: bool,
    node: Option<usize>,
}

#[derive(Debug, Clone)]
struct Cluster {
    spec: Spec,
    cordoned: Vec<bool>,
    pods: Vec<Pod>,
}

impl Cluster {
    /// A pool of `nodes` nodes with the Deployment's replicas of the old version, settled.
    fn new(spec: &Spec, nodes: usize) -> Cluster {
        let mut c = Cluster {
            spec: spec.clone(),
            cordoned: vec![false; nodes],
            pods: Vec::new(),
        };
        for _ in 0..spec.replicas {
            c.pods.push(Pod {
                new: false,
                node: None,
            });
        }
        c.schedule_pending();
        c
    }

    fn on_node(&self, n: usize) -> usize {
        self.pods.iter().filter(|p| p.node == Some(n)).count()
    }

    fn available(&self) -> usize {
        self.pods.iter().filter(|p| p.node.is_some()).count()
    }

    /// The node the scheduler picks, if any.
    fn pick(&self) -> Option<usize> {
        let nodes = self.cordoned.len();
        let min_count = (0..nodes).map(|n| self.on_node(n)).min().unwrap_or(0);
        (0..nodes)
            .filter(|&n| !self.cordoned[n])
            .filter(|&n| !(self.spec.required_anti_affinity && self.on_node(n) > 0))
            .filter(|&n| {
                self.spec
                    .hard_spread
                    .is_none_or(|skew| self.on_node(n) + 1 - min_count <= skew)
            })
            .min_by_key(|&n| self.on_node(n))
    }

    /// Schedule every Pending pod that fits; whether anything moved.
    fn schedule_pending(&mut self) -> bool {
        let mut moved = false;
        for i in 0..self.pods.len() {
            if self.pods[i].node.is_none() {
                if let Some(n) = self.pick() {
                    self.pods[i].node = Some(n);
                    moved = true;
                }
            }
        }
        moved
    }

    /// One pass of the Deployment controller's rolling update; whether anything moved.
    fn rollout_step(&mut self) -> bool {
        let s = self.spec.clone();
        let mut moved = self.schedule_pending();
        // Scale up the new ReplicaSet within the surge.
        while self.pods.len() < s.replicas + s.max_surge
            && self.pods.iter().filter(|p| p.new).count() < s.replicas
        {
            self.pods.push(Pod {
                new: true,
                node: None,
            });
            moved = true;
        }
        moved |= self.schedule_pending();
        // Scale down the old ReplicaSet: unavailable pods first, then within maxUnavailable.
        if let Some(i) = self.pods.iter().position(|p| !p.new && p.node.is_none()) {
            self.pods.remove(i);
            return true;
        }
        let min_available = s.replicas.saturating_sub(s.max_unavailable);
        if self.available() > min_available {
            if let Some(i) = self.pods.iter().position(|p| !p.new) {
                self.pods.remove(i);
                moved = true;
            }
        }
        moved
    }

    fn rollout_complete(&self) -> bool {
        self.pods.len() == self.spec.replicas && self.pods.iter().all(|p| p.new && p.node.is_some())
    }

    /// Whether the eviction API allows evicting pod `i` now.
    fn eviction_allowed(&self, i: usize) -> bool {
        let s = &self.spec;
        if self.pods[i].node.is_none() {
            return s.unhealthy_always_allow;
        }
        let healthy = self.available();
        let desired = match (s.pdb_min_available, s.pdb_max_unavailable) {
            (Some(m), _) => m,
            (None, Some(u)) => s.replicas.saturating_sub(u),
            (None, None) => 0,
        };
        healthy > desired
    }

    /// Drain node `n` (cordon, evict until empty), then uncordon and settle. Ok(()) when the
    /// drain completed, Err with the state when it deadlocked.
    fn drain(&mut self, n: usize) -> Result<(), String> {
        self.cordoned[n] = true;
        for _ in 0..100 {
            if self.on_node(n) == 0 {
                self.cordoned[n] = false;
                self.schedule_pending();
                return Ok(());
            }
            let mut moved = false;
            if let Some(i) = (0..self.pods.len())
                .find(|&i| self.pods[i].node == Some(n) && self.eviction_allowed(i))
            {
                // Evicted; the ReplicaSet replaces it at once.
                let new = self.pods[i].new;
                self.pods.remove(i);
                self.pods.push(Pod { new, node: None });
                moved = true;
            }
            moved |= self.schedule_pending();
            if !moved {
                break;
            }
        }
        Err(format!(
            "drain of node {n} deadlocked: {} pod(s) left on it, pods {:?}",
            self.on_node(n),
            self.pods
        ))
    }
}

/// Roll out a new version, then drain every node in turn: (rollout completes, every drain
/// completes), with the first failure described.
fn simulate(spec: &Spec, nodes: usize) -> Result<(), String> {
    let mut c = Cluster::new(spec, nodes);
    for _ in 0..100 {
        if c.rollout_complete() {
            break;
        }
        if !c.rollout_step() {
            break;
        }
    }
    if !c.rollout_complete() {
        return Err(format!(
            "rolling update on {nodes} nodes deadlocked: pods {:?}",
            c.pods
        ));
    }
    for n in 0..nodes {
        c.drain(n).map_err(|e| format!("on {nodes} nodes: {e}"))?;
    }
    Ok(())
}

fn documents(text: &str) -> Vec<Value> {
    outrigger_go::yaml::split_documents(text)
        .expect("documents")
        .into_iter()
        .map(|d| outrigger_go::yaml::from_str(&d).expect("YAML"))
        .filter(|v: &Value| !v.is_null())
        .collect()
}

fn base_and_ha_roll_out_and_drain_on_2_3_and_5_nodes() {
    for dir in ["base", "overlays/ha"] {
        let text = kustomize(dir);
        let spec = spec_from_documents(&documents(&text));
        for nodes in [2, 3, 5] {
            if let Err(e) = simulate(&spec, nodes) {
                panic!("{dir}: {e}\nspec: {spec:?}");
            }
        }
    }
}

fn ha_overlay_has_three_replicas_and_no_required_anti_affinity() {
    let text = kustomize("overlays/ha");
    let spec = spec_from_documents(&documents(&text));
    assert_eq!(spec.replicas, 3);
    assert!(!spec.required_anti_affinity);
    assert_eq!((spec.max_surge, spec.max_unavailable), (0, 1));
    assert_eq!(
        (spec.pdb_min_available, spec.pdb_max_unavailable),
        (None, Some(1))
    );
    assert!(text.contains("preferredDuringSchedulingIgnoredDuringExecution"));
}

/// The HA overlay as it was: 3 replicas, surge 1 / unavailable 0, required anti-affinity,
/// `minAvailable: 2`.
const OLD_HA: &str = r#"
apiVersion: apps/v1
kind: Deployment
spec:
  replicas: 3
  strategy:
    rollingUpdate: {maxSurge: 1, maxUnavailable: 0}
  template:
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - topologyKey: kubernetes.io/hostname
---
apiVersion: policy/v1
kind: PodDisruptionBudget
spec:
  minAvailable: 2
"#;

fn the_simulation_catches_the_old_ha_overlay() {
    let spec = spec_from_documents(&documents(OLD_HA));
    // 3 nodes: the surge pod has no node, and no old pod may go first.
    let e = simulate(&spec, 3).expect_err("surge + required anti-affinity on 3 nodes");
    assert!(e.contains("rolling update on 3 nodes deadlocked"), "{e}");
    // 2 nodes: a replica is Pending forever, so the rollout never completes either.
    assert!(simulate(&spec, 2).is_err());
    // 5 nodes leave room for the surge pod and the drains.
    assert_eq!(simulate(&spec, 5), Ok(()));
    // Required anti-affinity alone, with a safe strategy: the 2-node drain deadlocks on the PDB.
    let required_only = Spec {
        max_surge: 0,
        max_unavailable: 1,
        pdb_min_available: None,
        pdb_max_unavailable: Some(1),
        ..spec
    };
    let mut c = Cluster::new(&required_only, 2);
    assert_eq!(c.available(), 2, "one replica Pending on 2 nodes");
    assert!(c.drain(0).is_err(), "PDB blocks with a replica Pending");
}

fn main() {
    harness::run(trials![
        &[] => [the_simulation_catches_the_old_ha_overlay],
        &[Need::Kubectl] => [
            base_and_ha_roll_out_and_drain_on_2_3_and_5_nodes,
            ha_overlay_has_three_replicas_and_no_required_anti_affinity,
        ],
    ])
}
