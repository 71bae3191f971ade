//! Go's growable goroutine stacks, for the readers that recurse as Go's do.
//!
//! Go's parsers and executors recurse freely: a goroutine's stack grows up to 1 GiB, so Go
//! refuses a deep input only where it has a limit of its own (`text/template`'s 10,000 nested
//! parentheses and 100,000 nested `template` calls, go-yaml's 10,000 nesting levels). A Rust
//! thread's stack is fixed (2 MiB for spawned threads, 8 MiB for the main thread), so every
//! recursive step of a reader that must follow Go that deep goes through [`grow`]: when less than
//! [`RED_ZONE`] bytes of the current stack remain, the rest of the recursion runs on a fresh
//! heap-allocated segment of [`SEGMENT`] bytes, freed when that step returns. Deep input then
//! costs memory in proportion to its depth (as in Go) instead of aborting the process.

/// Stack that must remain before a recursive step runs on the current stack: more than any
/// one step between two [`grow`] calls uses, in debug builds too.
pub const RED_ZONE: usize = 256 * 1024;

/// Size of each additional stack segment.
pub const SEGMENT: usize = 8 * 1024 * 1024;

/// Run `f` on the current stack, or on a fresh segment when the current one is nearly used up.
#[inline]
pub fn grow<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(RED_ZONE, SEGMENT, f)
}
