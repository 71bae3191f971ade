//! (lead) workload
