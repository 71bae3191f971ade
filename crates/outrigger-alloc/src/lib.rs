//! # outrigger-alloc
//!
//! The allocator of outrigger's webhook server, for a resident set that follows the live heap,
//! and a counting wrapper of it for memory measurements.
//!
//! With its defaults, mimalloc (the binary's allocator) asks for transparent huge pages and keeps
//! freed pages committed for a second. A large review builds and drops pod-sized JSON trees of
//! many small objects within a few milliseconds, so pages freed by one tree were not reused by
//! the next and the peak RSS of a 3 MiB review was about twice its live heap. Two settings bring
//! the peak down to the live heap: no huge pages for this process, and freed pages returned to
//! the OS at once (measured on the load test: no visible CPU cost).
//!
//! This crate is the only one of the workspace with `unsafe` code (the others forbid it): the
//! FFI calls below, which have no preconditions, and the [`GlobalAlloc`] forwarding of
//! [`Counting`], each with its SAFETY note.

use std::alloc::{GlobalAlloc, Layout};
use std::os::raw::{c_int, c_long};
use std::sync::atomic::{AtomicUsize, Ordering};

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

/// Apply the settings of a command that lists the cluster a page at a time (`drift --kube`,
/// `preview --kube`); call before the first page is read. Each page of pods is decoded, judged
/// and dropped, and the next one takes the same amount of memory again. With mimalloc's
/// defaults its arenas are huge pages and freed pages are returned to the OS after 10 ms, so the
/// next page faulted them back in, each zeroed again: a quarter of the CPU time of `drift --kube`
/// was the kernel clearing pages (`clear_page_erms` under `folio_zero_user`, 2,000 pods). No
/// huge pages for this process and no returning of freed pages (the process ends soon; its
/// resident set is the peak of its heap, one page's pods) take that away.
pub fn tune_batch() {
    // SAFETY: as in `tune`: prctl(PR_SET_THP_DISABLE) only sets a flag of this process.
    let thp = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
    // SAFETY: mi_version has no preconditions.
    let version = unsafe { mi_version() };
    if version / 10000 == 3 {
        // SAFETY: as in `tune`: option numbers of the version checked above; -1 is mimalloc's
        // "never" for the purge delay.
        unsafe {
            mi_option_set(MI3_OPTION_ALLOW_THP, 0);
            mi_option_set(MI3_OPTION_PURGE_DELAY, -1);
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

/// mimalloc, counting live heap bytes and their peak: for measuring examples and benchmarks
/// (`#[global_allocator] static A: outrigger_alloc::Counting = outrigger_alloc::Counting;`).
pub struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

impl Counting {
    /// Bytes currently allocated through [`Counting`].
    pub fn live() -> usize {
        LIVE.load(Ordering::Relaxed)
    }

    /// The highest [`Counting::live`] since the start or the last [`Counting::reset_peak`].
    pub fn peak() -> usize {
        PEAK.load(Ordering::Relaxed)
    }

    /// Start a new peak measurement from the bytes live now.
    pub fn reset_peak() {
        PEAK.store(LIVE.load(Ordering::Relaxed), Ordering::Relaxed);
    }
}

// SAFETY: every call is forwarded unchanged to mimalloc, a correct allocator; the counters do
// not touch the memory.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc` is passed on to mimalloc unchanged.
        let p = unsafe { mimalloc::MiMalloc.alloc(layout) };
        if !p.is_null() {
            let now = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc` above, i.e. from mimalloc, with this layout.
        unsafe { mimalloc::MiMalloc.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}
