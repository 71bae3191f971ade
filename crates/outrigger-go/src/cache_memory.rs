//! One process-wide bound on the memory that per-thread caches keep between calls.
//!
//! The YAML reader's memo of the last document ([`crate::yaml`]) and the patch writer's memo of
//! the last patch (in `outrigger-inject`) are kept per thread, each bounded in size. A server
//! runs reviews on as many threads as it runs reviews at once (the blocking pool grows to
//! `--max-concurrency`), so per-thread bounds alone would let a burst of large reviews keep
//! hundreds of MiB after the reviews are answered. Each cache therefore takes a [`Charge`] from
//! [`CACHES`] for what it keeps: when the pool is full, the cache keeps nothing (its next use is
//! a miss: the caches are exact, so only the speed changes), and the charge is given back when
//! the cache lets the memory go, or when its thread ends.

use std::sync::atomic::{AtomicUsize, Ordering};

/// What all the per-thread caches of the process may keep at once, weighed (bytes).
pub const CACHES_LIMIT: usize = 16 << 20;

/// The pool the per-thread caches of the process charge.
pub static CACHES: Pool = Pool::new(CACHES_LIMIT);

/// A bounded amount of memory shared by many holders.
#[derive(Debug)]
pub struct Pool {
    held: AtomicUsize,
    limit: usize,
}

/// Memory taken from a [`Pool`]; given back when dropped.
#[derive(Debug)]
pub struct Charge {
    pool: &'static Pool,
    weight: usize,
}

impl Pool {
    /// A pool of `limit` (weighed bytes), none held.
    pub const fn new(limit: usize) -> Pool {
        Pool {
            held: AtomicUsize::new(0),
            limit,
        }
    }

    /// Take `weight` from the pool, or `None` when that would hold more than its limit.
    pub fn charge(&'static self, weight: usize) -> Option<Charge> {
        self.held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                held.checked_add(weight).filter(|&h| h <= self.limit)
            })
            .ok()
            .map(|_| Charge { pool: self, weight })
    }

    /// What the pool's charges hold now.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.pool.held.fetch_sub(self.weight, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_charge_past_the_limit_is_refused_and_a_dropped_one_is_given_back() {
        static POOL: Pool = Pool::new(100);
        let a = POOL.charge(60).expect("60 of 100");
        assert!(POOL.charge(41).is_none(), "60 + 41 is over 100");
        assert_eq!(POOL.held(), 60, "a refused charge holds nothing");
        let b = POOL.charge(40).expect("60 + 40 is the limit");
        assert!(POOL.charge(1).is_none());
        drop(a);
        assert_eq!(POOL.held(), 40);
        let c = POOL.charge(60).expect("given back");
        drop((b, c));
        assert_eq!(POOL.held(), 0);
        assert!(POOL.charge(usize::MAX).is_none(), "no overflow");
    }

    #[test]
    fn a_charge_kept_by_a_thread_local_is_given_back_when_the_thread_ends() {
        static POOL: Pool = Pool::new(1000);
        thread_local! {
            static KEPT: std::cell::RefCell<Option<Charge>> = const { std::cell::RefCell::new(None) };
        }
        std::thread::spawn(|| KEPT.with(|k| *k.borrow_mut() = POOL.charge(700)))
            .join()
            .expect("thread");
        assert_eq!(POOL.held(), 0, "the thread's cache went with it");
        let kept = POOL.charge(1000);
        assert!(kept.is_some());
    }
}
