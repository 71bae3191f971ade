//! The workload controllers of the fake API server ([`super::kube_api`]), modelled as far as
//! `drift --restart` needs them: a change of a Deployment's, StatefulSet's or DaemonSet's
//! `spec` raises its `metadata.generation`; a tick later ([`Rollouts::delay`]) its `status`
//! catches up (observed generation, updated, ready and available replicas), unless the test
//! made its rollouts hang. Nothing else of a controller is modelled (no ReplicaSets, no pods).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::kube_api::Key;

/// Resources whose rollouts are modelled.
pub const WORKLOADS: [&str; 3] = ["deployments", "statefulsets", "daemonsets"];

/// Rollouts under way, and what the test asked of them.
pub struct Rollouts {
    /// How long after a spec change the status catches up.
    pub delay: Duration,
    /// Workloads whose rollouts never complete.
    pub hung: Vec<Key>,
    /// When each pending rollout completes.
    pending: BTreeMap<Key, Instant>,
    /// `"patched KIND ns/name"` and `"rolled out KIND ns/name"`, in order.
    pub log: Vec<String>,
}

impl Default for Rollouts {
    fn default() -> Rollouts {
        Rollouts {
            delay: Duration::from_millis(150),
            hung: Vec::new(),
            pending: BTreeMap::new(),
            log: Vec::new(),
        }
    }
}

impl Rollouts {
    /// A write of `key` replaced `stored` by `next`: a spec change raises the generation and
    /// starts a rollout.
    pub fn written(&mut self, key: &Key, stored: &Value, next: &mut Value) {
        if !WORKLOADS.contains(&key.0.as_str()) || stored.get("spec") == next.get("spec") {
            return;
        }
        let generation = stored["metadata"]["generation"].as_i64().unwrap_or(1) + 1;
        next["metadata"]["generation"] = json!(generation);
        self.log
            .push(format!("patched {}/{}/{}", key.0, key.1, key.2));
        if !self.hung.contains(key) {
            self.pending
                .insert(key.clone(), Instant::now() + self.delay);
        }
    }

    /// The rollouts due by now: their keys, removed from the pending ones.
    pub fn due(&mut self) -> Vec<Key> {
        let now = Instant::now();
        let due: Vec<Key> = self
            .pending
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(k, _)| k.clone())
            .collect();
        for k in &due {
            self.pending.remove(k);
            self.log.push(format!("rolled out {}/{}/{}", k.0, k.1, k.2));
        }
        due
    }
}

/// `object`'s status caught up with its spec, as its controller leaves it when the rollout is
/// complete.
pub fn settle(object: &mut Value) {
    let generation = object["metadata"]["generation"].as_i64().unwrap_or(1);
    object["metadata"]["generation"] = json!(generation);
    let replicas = object["spec"]["replicas"].as_i64().unwrap_or(1);
    let status = match object["kind"].as_str().unwrap_or("") {
        "Deployment" => json!({"observedGeneration": generation, "replicas": replicas,
                               "updatedReplicas": replicas, "readyReplicas": replicas,
                               "availableReplicas": replicas}),
        "StatefulSet" => {
            let rev = format!(
                "{}-{generation}",
                object["metadata"]["name"].as_str().unwrap_or("")
            );
            json!({"observedGeneration": generation, "replicas": replicas,
                   "readyReplicas": replicas, "updatedReplicas": replicas,
                   "currentReplicas": replicas, "currentRevision": rev, "updateRevision": rev})
        }
        "DaemonSet" => {
            let desired = object["status"]["desiredNumberScheduled"]
                .as_i64()
                .unwrap_or(1);
            json!({"observedGeneration": generation, "desiredNumberScheduled": desired,
                   "currentNumberScheduled": desired, "updatedNumberScheduled": desired,
                   "numberReady": desired, "numberAvailable": desired})
        }
        _ => return,
    };
    object["status"] = status;
}
