//! (lead) inject
