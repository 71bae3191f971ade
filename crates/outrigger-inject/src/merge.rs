//! Strategic merge patch (Kubernetes semantics) of a rendered template onto a pod.
//!
//! CONTRACT (owned by the k8s/merge work stream): [`strategic_merge`] applies `patch` (a JSON
//! tree shaped like Go type `ty`) onto `target` in place with the patch strategies and merge keys
//! of the schema, `$patch` directives, null deletion and Kubernetes' list re-ordering.

use serde_json::Value;

use crate::Result;

/// Apply `patch` onto `target` (both of Go type `ty`, usually `corev1.Pod`).
pub fn strategic_merge(ty: &str, target: &mut Value, patch: &Value) -> Result<()> {
    let _ = (ty, target, patch);
    todo!("merge: strategic_merge")
}
