//! (lead) config
