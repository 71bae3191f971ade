//! Validation of Istio pod annotations, with Istio-compatible messages.
//!
//! CONTRACT (owned by the mesh/validation work stream): [`validate_annotations`] checks every
//! annotation of spec §10 and returns `Error::InvalidAnnotations` with Istio's multierror text.

use serde_json::{Map, Value};

use crate::Result;

/// Validate the pod's annotations.
pub fn validate_annotations(annotations: &Map<String, Value>) -> Result<()> {
    let _ = annotations;
    todo!("validate: validate_annotations")
}
