//! Kubernetes `resource.Quantity`: parsing and canonical formatting.

use crate::Result;

/// Canonical form of a quantity string (`2000m` → `2`, `1024Mi` → `1Gi`, `0.5` → `500m`).
pub fn canonicalize(s: &str) -> Result<String> {
    let _ = s;
    todo!("quantity: canonicalize")
}
