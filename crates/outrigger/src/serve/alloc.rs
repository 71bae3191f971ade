//! Allocator settings of the webhook server, for a resident set that follows the live heap.
//!
//! With its defaults, mimalloc (the binary's allocator) asks for transparent huge pages and keeps
//! freed pages committed for a second. A large review builds and drops pod-sized JSON trees of
//! many small objects within a few milliseconds, so pages freed by one tree were not reused by
//! the next and the peak RSS of a 3 MiB review was about twice its live heap. Two settings bring
//! the peak down to the live heap: no huge pages for this process, and freed pages returned to
//! the OS at once (measured on the load test: no visible CPU cost).
//!
//! The one module of the binary allowed `unsafe` (FFI calls with no preconditions, each with
//! its SAFETY note).
#![allow(unsafe_code)]

use std::os::raw::{c_int, c_long};

// mimalloc's C API (linked through the `mimalloc` crate).
extern "C" {
    fn mi_version() -> c_int;
    fn mi_option_set(option: c_int, value: c_long);
}

/// `mi_option_purge_delay` in mimalloc 3.x's `mi_option_t`.
const MI3_OPTION_PURGE_DELAY: c_int = 15;
/// `mi_option_allow_thp` in mimalloc 3.x's `mi_option_t`.
const MI3_OPTION_ALLOW_THP: c_int = 43;

/// Apply the settings; call before the server allocates. Options are set only for the mimalloc
/// major version whose option numbers are known here.
pub fn tune() {
    // SAFETY: prctl(PR_SET_THP_DISABLE) only sets a flag of this process; the arguments are
    // the documented ones.
    let thp = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
    // SAFETY: mi_version has no preconditions.
    let version = unsafe { mi_version() };
    if version / 10000 == 3 {
        // SAFETY: mimalloc options may be set at any time; the option numbers belong to the
        // version checked above.
        unsafe {
            mi_option_set(MI3_OPTION_ALLOW_THP, 0);
            mi_option_set(MI3_OPTION_PURGE_DELAY, 0);
        }
    }
    ALLOCATOR.get_or_init(|| (version, thp == 0));
}

static ALLOCATOR: std::sync::OnceLock<(c_int, bool)> = std::sync::OnceLock::new();

/// What [`tune`] did, for the start-up log: mimalloc's version and whether huge pages are off.
pub fn describe() -> String {
    match ALLOCATOR.get() {
        Some((v, thp_off)) => format!(
            "mimalloc {}.{}.{}, transparent huge pages {}, purge delay {}",
            v / 10000,
            v / 100 % 100,
            v % 100,
            if *thp_off { "off" } else { "unchanged" },
            if v / 10000 == 3 { "0" } else { "default" }
        ),
        None => "allocator defaults".to_string(),
    }
}
