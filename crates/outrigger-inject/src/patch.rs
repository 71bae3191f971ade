//! (lead) patch
