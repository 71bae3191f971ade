//! Merge stage: rendered templates are strategic-merged onto the pod, then the user's own
//! definitions of injected containers are applied over them.

pub mod overrides;
pub mod pod;
pub mod strategic;
