//! Merge stage: rendered templates are strategic-merged onto the pod.

pub mod strategic;
