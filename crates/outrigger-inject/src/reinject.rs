//! Re-injection from scratch: a previously injected pod is taken back to the pod it was before
//! injection ([`recover_pod`]) and injected with the given configuration ([`reinject_pod`]), so
//! nothing of the old sidecar stays behind (Istio's own re-injection merges the new templates
//! onto the old pod).
//!
//! A label or annotation that injection writes may also have been set by the user; the pod
//! alone cannot tell. [`recover_pod`] asks the configuration it will inject with: such an entry
//! is dropped when injecting the pod without it writes it back with the same value (so dropping
//! it changes nothing), and kept as the user's otherwise.

use serde_json::Value;

use crate::ingest::recover::{recover, Recovered};
use crate::inject::{inject_pod, InjectParams, Injected};
use crate::kube::pod::{map_object, object_mut};
use crate::Result;

/// The pod as it was before its previous injection, for injecting with `params` (see the module
/// documentation). A pod without a previous injection is returned as it is.
pub fn recover_pod(pod: &Value, params: &InjectParams<'_>) -> Result<Value> {
    let Recovered { mut pod, removed } = recover(pod)?;
    if removed.is_empty() {
        return Ok(pod);
    }
    let fresh = inject_pod(&pod, params)?.pod;
    for r in removed {
        let written = fresh
            .get("metadata")
            .and_then(|m| m.get(r.field.key()))
            .and_then(|m| m.get(&r.key));
        if written != Some(&r.value) {
            map_object(object_mut(&mut pod, "metadata"), r.field.key()).insert(r.key, r.value);
        }
    }
    Ok(pod)
}

/// Inject `pod` with `params` after removing its previous injection completely
/// ([`recover_pod`]); a pod never injected is injected as [`inject_pod`] would.
pub fn reinject_pod(pod: &Value, params: &InjectParams<'_>) -> Result<Injected> {
    let recovered = recover_pod(pod, params)?;
    inject_pod(&recovered, params)
}
