//! Whether a pod gets a sidecar, with a reason code for every outcome.
//!
//! CONTRACT (owned by the decision/post-processing work stream): spec §2.1 evaluated in order.
