//! A review's work budget: a deadline and a cancellation flag that the long-running steps of a
//! review (the template executor, the list functions, the strategic merge) check as they go, so
//! that no review runs past its deadline, and a count of the work done.
//!
//! The budget is installed for the current thread with [`scope`] by whoever runs a review (the
//! webhook server; the configuration check at reload) and read by the steps through [`charge`]
//! and [`exhausted`], so that the pipeline's signatures stay those of Go's. Without a budget in
//! scope (the offline commands) nothing is ever cut short and the checks cost one thread-local
//! read. A step that finds the budget exhausted fails with [`Exhausted`]'s message; the caller
//! tells a review cut short from one that failed by [`Budget::is_exhausted`].

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// The limit of one review: a deadline, a flag another thread may set to cancel, and the work
/// counted so far (template steps, list elements copied, merged list elements).
#[derive(Debug)]
pub struct Budget {
    deadline: Option<Instant>,
    /// The work after which the budget is exhausted (a deterministic bound).
    max_work: u64,
    cancelled: AtomicBool,
    work: AtomicU64,
}

/// Why a step stopped: its review's budget ran out (the deadline passed or it was cancelled).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the review's work budget is exhausted (deadline passed or cancelled)")]
pub struct Exhausted;

impl Budget {
    /// A budget ending at `deadline` (`None`: only [`Budget::cancel`] ends it).
    pub fn new(deadline: Option<Instant>) -> Arc<Budget> {
        Budget::with_work_limit(deadline, u64::MAX)
    }

    /// A budget ending at `deadline` or once `max_work` units of work are counted, whichever
    /// comes first: the work limit gives the same verdict on any machine, however loaded.
    pub fn with_work_limit(deadline: Option<Instant>, max_work: u64) -> Arc<Budget> {
        Arc::new(Budget {
            deadline,
            max_work,
            cancelled: AtomicBool::new(false),
            work: AtomicU64::new(0),
        })
    }

    /// End the budget now: the review's next check fails.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }

    /// Whether the budget has ended (cancelled, or its deadline has passed).
    pub fn is_exhausted(&self) -> bool {
        if self.cancelled.load(Ordering::Relaxed) {
            return true;
        }
        if self.work() >= self.max_work {
            self.cancel();
            return true;
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            self.cancel();
            return true;
        }
        false
    }

    /// The work counted so far (deterministic for a given review: a measure of its cost that
    /// does not depend on the machine).
    pub fn work(&self) -> u64 {
        self.work.load(Ordering::Relaxed)
    }

    fn add(&self, units: u64) {
        self.work.fetch_add(units, Ordering::Relaxed);
    }

    /// Add `units` and check the budget, reading the clock only when the work crosses a
    /// multiple of [`Meter::EVERY`] (so frequent small charges stay cheap).
    fn charge(&self, units: u64) -> Result<(), Exhausted> {
        let before = self.work.fetch_add(units, Ordering::Relaxed);
        let crossed = before / Meter::EVERY != (before + units) / Meter::EVERY;
        let exhausted = if crossed {
            self.is_exhausted()
        } else {
            self.cancelled.load(Ordering::Relaxed) || before + units >= self.max_work
        };
        if exhausted {
            Err(Exhausted)
        } else {
            Ok(())
        }
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<Budget>>> = const { RefCell::new(None) };
}

/// Run `f` with `budget` as the current thread's budget (the previous one is restored after,
/// also when `f` panics).
pub fn scope<R>(budget: &Arc<Budget>, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Arc<Budget>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let prev = self.0.take();
            CURRENT.with(|c| *c.borrow_mut() = prev);
        }
    }
    let prev = CURRENT.with(|c| c.borrow_mut().replace(budget.clone()));
    let _restore = Restore(prev);
    f()
}

/// The current thread's budget, if one is in scope.
pub fn current() -> Option<Arc<Budget>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// Count `units` of work against the current budget and fail when it is exhausted (nothing
/// without a budget in scope).
pub fn charge(units: u64) -> Result<(), Exhausted> {
    CURRENT.with(|c| match &*c.borrow() {
        Some(b) => b.charge(units),
        None => Ok(()),
    })
}

/// Count `units` of work against the current budget without checking it (for steps that
/// cannot fail; the next check sees the work).
pub fn count(units: u64) {
    CURRENT.with(|c| {
        if let Some(b) = &*c.borrow() {
            b.add(units);
        }
    });
}

/// Whether the current budget is exhausted (false without a budget in scope).
pub fn exhausted() -> bool {
    CURRENT.with(|c| c.borrow().as_ref().is_some_and(|b| b.is_exhausted()))
}

/// Counts steps against a budget fetched once, checking it every [`Meter::EVERY`] steps, for
/// loops too hot for a thread-local read per step (the template executor).
#[derive(Debug)]
pub struct Meter {
    budget: Option<Arc<Budget>>,
    steps: u64,
    uncounted: u64,
}

impl Meter {
    /// Steps between two checks of the budget.
    pub const EVERY: u64 = 1024;

    /// A meter on the current thread's budget (a meter that never stops without one).
    pub fn current() -> Meter {
        Meter {
            budget: current(),
            steps: 0,
            uncounted: 0,
        }
    }

    /// Count one step; every [`Meter::EVERY`] steps, add them to the budget and fail if it is
    /// exhausted.
    #[inline]
    pub fn step(&mut self) -> Result<(), Exhausted> {
        self.uncounted += 1;
        if self.uncounted >= Self::EVERY {
            return self.flush();
        }
        Ok(())
    }

    /// Add the steps counted since the last check to the budget and fail if it is exhausted.
    pub fn flush(&mut self) -> Result<(), Exhausted> {
        self.steps += self.uncounted;
        let n = std::mem::take(&mut self.uncounted);
        match &self.budget {
            Some(b) => {
                b.add(n);
                if b.is_exhausted() {
                    Err(Exhausted)
                } else {
                    Ok(())
                }
            }
            None => Ok(()),
        }
    }

    /// Steps counted by this meter.
    pub fn steps(&self) -> u64 {
        self.steps + self.uncounted
    }
}

impl Drop for Meter {
    fn drop(&mut self) {
        if let Some(b) = &self.budget {
            b.add(self.uncounted);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn without_a_budget_nothing_stops() {
        assert_eq!(charge(1_000_000), Ok(()));
        assert!(!exhausted());
        let mut m = Meter::current();
        for _ in 0..10_000 {
            assert_eq!(m.step(), Ok(()));
        }
        assert_eq!(m.steps(), 10_000);
    }

    #[test]
    fn a_budget_counts_work_and_stops_when_cancelled() {
        let b = Budget::new(None);
        scope(&b, || {
            assert_eq!(charge(5), Ok(()));
            let mut m = Meter::current();
            for _ in 0..Meter::EVERY + 3 {
                m.step().expect("not cancelled");
            }
            drop(m);
            assert_eq!(current().map(|c| c.work()), Some(5 + Meter::EVERY + 3));
            b.cancel();
            assert_eq!(charge(1), Err(Exhausted));
            assert!(exhausted());
            let mut m = Meter::current();
            let stopped = (0..=Meter::EVERY).map(|_| m.step()).find(Result::is_err);
            assert_eq!(
                stopped,
                Some(Err(Exhausted)),
                "a meter stops within EVERY steps"
            );
        });
        assert!(current().is_none(), "the scope ends with its closure");
        assert!(!exhausted());
    }

    #[test]
    fn a_work_limit_exhausts_the_budget() {
        let b = Budget::with_work_limit(None, 3 * Meter::EVERY);
        scope(&b, || {
            let mut m = Meter::current();
            let steps = (0..10 * Meter::EVERY)
                .take_while(|_| m.step().is_ok())
                .count() as u64;
            assert_eq!(steps + 1, 3 * Meter::EVERY, "stopped at the limit");
        });
        assert!(b.is_exhausted());
    }

    #[test]
    fn a_passed_deadline_exhausts_the_budget() {
        let past = Instant::now().checked_sub(Duration::from_millis(1));
        let b = Budget::new(past.or(Some(Instant::now())));
        assert!(b.is_exhausted());
        let later = Budget::new(Some(Instant::now() + Duration::from_secs(3600)));
        assert!(!later.is_exhausted());
    }

    #[test]
    fn scopes_nest_and_restore_after_a_panic() {
        let outer = Budget::new(None);
        let inner = Budget::new(None);
        scope(&outer, || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                scope(&inner, || panic!("inside"))
            }));
            assert!(r.is_err());
            let now = current().expect("outer restored");
            assert!(Arc::ptr_eq(&now, &outer));
        });
    }
}
