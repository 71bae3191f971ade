//! Post-processing of the merged pod (spec §8): cluster/network env, Prometheus merge, secure
//! port, probe rewriting, status annotation, injected annotations, container order.
//!
//! CONTRACT (owned by the decision/post-processing work stream).
