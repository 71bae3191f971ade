//! Ingest stage: what arrives, read as Kubernetes and Istio would read it, before any decision:
//! a previous injection (status and overrides annotations) and the workload a pod belongs to.

pub mod admission;
pub(crate) mod list_scan;
pub mod params;
pub mod previous;
pub mod recover;
pub mod workload;
