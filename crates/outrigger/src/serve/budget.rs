//! The webhook's memory budget: request body bytes held at once by all requests
//! (`--max-inflight-bytes`), charged as they arrive, capped per connection
//! (`--max-connection-bytes`) and shared fairly between connections.
//!
//! Fair sharing: when a charge does not fit, a connection holding less than its fair share (the
//! budget divided by the connections holding bytes, itself included) takes the room from bodies
//! still being read on the connection that holds the most above its share: those requests are
//! *preempted* (their bytes are released at once and their read ends with
//! [`Refusal::Preempted`]). So connections that send a body slowly, or stall, cannot keep a
//! review that arrives in full from finding room; a connection within its share is never
//! preempted, and neither is a review whose body has been read (it is being processed).
//!
//! Answers are charged too (by [`super::answer`]) until they are handed over in full, and can be
//! preempted like bodies being read: that ends their connection.
//!
//! Processing a review takes several times its size (pod trees), so large reviews also take one
//! of a few processing slots (as many as worker threads: more at once would not finish sooner);
//! the others wait holding only their body.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

/// Why bytes were not granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The budget is full and the connection already holds its fair share (429).
    #[error("too many request bytes in flight (limit {0}); retry later")]
    OverBudget(usize),
    /// The connection holds its cap of request bytes (429).
    #[error("too many request bytes in flight on this connection (limit {0}); retry later")]
    ConnectionCap(usize),
    /// The request's bytes were given to a connection holding less than its fair share (429).
    #[error("request bytes preempted by another connection's review (the budget of {0} bytes is full); retry later")]
    Preempted(usize),
}

impl Refusal {
    /// Reason label in metrics and logs.
    pub fn reason(self) -> &'static str {
        match self {
            Refusal::OverBudget(_) => "inflight_bytes",
            Refusal::ConnectionCap(_) => "connection_bytes",
            Refusal::Preempted(_) => "preempted",
        }
    }
}

/// One connection's account in a [`ByteBudget`] (one per connection; requests without a
/// connection, as in unit tests, get one each).
#[derive(Debug)]
pub struct Account {
    id: u64,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Account {
    /// A fresh account.
    pub fn new() -> Arc<Account> {
        Arc::new(Account {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        })
    }
}

/// What else a preemption does (an answer's: end its connection).
type Hook = Box<dyn Fn() + Send + Sync>;

/// A charge's slot: its bytes live in the budget's table (changed under its lock); the flag and
/// the notification tell the reader it was preempted, and the hook acts on it.
#[derive(Default)]
struct Signal {
    preempted: AtomicBool,
    notify: Notify,
    hook: std::sync::OnceLock<Hook>,
}

impl std::fmt::Debug for Signal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signal")
            .field("preempted", &self.preempted)
            .finish_non_exhaustive()
    }
}

#[derive(Debug)]
struct Slot {
    conn: u64,
    bytes: usize,
    /// Still reading its body (only such charges can be preempted).
    reading: bool,
    signal: Arc<Signal>,
}

#[derive(Debug, Default)]
struct Table {
    used: usize,
    /// Bytes held per connection id.
    conns: HashMap<u64, usize>,
    slots: HashMap<u64, Slot>,
}

#[derive(Debug)]
struct Shared {
    table: Mutex<Table>,
    limit: usize,
    per_conn: usize,
    gauge: Gauge,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The budget of request body bytes held at once, shared by all connections.
#[derive(Debug)]
pub struct ByteBudget {
    shared: Arc<Shared>,
    large: Arc<Semaphore>,
}

/// Bytes charged to a [`ByteBudget`] by one request; returned when dropped.
#[derive(Debug)]
pub struct Charge {
    shared: Arc<Shared>,
    id: u64,
    conn: u64,
    signal: Arc<Signal>,
}

impl ByteBudget {
    /// A budget of `limit` bytes, at most `per_conn` of them on one connection, reporting its
    /// use to `gauge`, with `large_slots` slots for processing large reviews.
    pub fn new(limit: usize, per_conn: usize, large_slots: usize, gauge: Gauge) -> ByteBudget {
        ByteBudget {
            shared: Arc::new(Shared {
                table: Mutex::new(Table::default()),
                limit: limit.max(1),
                per_conn: per_conn.max(1),
                gauge,
            }),
            large: Arc::new(Semaphore::new(large_slots.clamp(1, Semaphore::MAX_PERMITS))),
        }
    }

    /// The bound on bytes held at once.
    pub fn limit(&self) -> usize {
        self.shared.limit
    }

    /// Wait for a slot to process a large review (held until dropped).
    pub async fn large_slot(&self) -> OwnedSemaphorePermit {
        self.large
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed")
    }

    /// An empty charge of `account`'s connection, to be grown with [`Charge::grow`].
    pub fn charge(&self, account: &Account) -> Charge {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let signal = Arc::new(Signal::default());
        self.shared.lock().slots.insert(
            id,
            Slot {
                conn: account.id,
                bytes: 0,
                reading: true,
                signal: signal.clone(),
            },
        );
        Charge {
            shared: self.shared.clone(),
            id,
            conn: account.id,
            signal,
        }
    }
}

impl Default for ByteBudget {
    /// No bound (for tests and embedders that bound memory otherwise).
    fn default() -> ByteBudget {
        ByteBudget::new(usize::MAX, usize::MAX, 4, Gauge::default())
    }
}

impl Charge {
    /// Bytes held.
    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        self.shared
            .lock()
            .slots
            .get(&self.id)
            .map_or(0, |s| s.bytes)
    }

    /// Whether the charge was preempted (its bytes given to another connection).
    pub fn is_preempted(&self) -> bool {
        self.signal.preempted.load(Ordering::Acquire)
    }

    /// Resolves when the charge is preempted.
    pub async fn preempted(&self) {
        loop {
            let notified = self.signal.notify.notified();
            if self.is_preempted() {
                return;
            }
            notified.await;
        }
    }

    /// Call `hook` (once, under the budget's lock: it must be quick) if the charge is preempted.
    pub fn on_preempt(&self, hook: impl Fn() + Send + Sync + 'static) {
        let _ = self.signal.hook.set(Box::new(hook));
    }

    /// The body is read in full: from now on the charge cannot be preempted.
    pub fn done_reading(&self) {
        if let Some(s) = self.shared.lock().slots.get_mut(&self.id) {
            s.reading = false;
        }
    }

    /// Add `n` bytes if the connection's cap and the budget allow, preempting bodies still
    /// being read on the connection furthest above its fair share when this connection is
    /// within its own.
    pub fn grow(&mut self, n: usize) -> Result<(), Refusal> {
        if n == 0 {
            return Ok(());
        }
        let sh = &*self.shared;
        let mut t = sh.lock();
        if self.is_preempted() {
            return Err(Refusal::Preempted(sh.limit));
        }
        let mine = t.conns.get(&self.conn).copied().unwrap_or(0);
        if mine.saturating_add(n) > sh.per_conn {
            return Err(Refusal::ConnectionCap(sh.per_conn));
        }
        if t.used.saturating_add(n) > sh.limit {
            let holders = t.conns.len() + usize::from(mine == 0);
            let fair = sh.limit / holders.max(1);
            if mine + n > fair {
                return Err(Refusal::OverBudget(sh.limit));
            }
            while t.used + n > sh.limit {
                if !preempt_one(&mut t, self.conn, fair, sh) {
                    return Err(Refusal::OverBudget(sh.limit));
                }
            }
        }
        t.used += n;
        *t.conns.entry(self.conn).or_insert(0) += n;
        if let Some(s) = t.slots.get_mut(&self.id) {
            s.bytes += n;
        }
        sh.gauge.inc_by(n as i64);
        Ok(())
    }
}

/// Preempt the largest body still being read on the connection holding the most above `fair`
/// (never `requester`'s); whether one was found.
fn preempt_one(t: &mut Table, requester: u64, fair: usize, sh: &Shared) -> bool {
    let Some((&victim_conn, _)) = t
        .conns
        .iter()
        .filter(|(&c, &held)| c != requester && held > fair)
        .filter(|(&c, _)| {
            t.slots
                .values()
                .any(|s| s.conn == c && s.reading && s.bytes > 0)
        })
        .max_by_key(|(_, &held)| held)
    else {
        return false;
    };
    // Its largest body being read: one with bytes, as the victim has one (above).
    let Some((&slot_id, _)) = t
        .slots
        .iter()
        .filter(|(_, s)| s.conn == victim_conn && s.reading)
        .max_by_key(|(_, s)| s.bytes)
    else {
        return false;
    };
    let slot = t.slots.get_mut(&slot_id).expect("slot just found");
    let freed = std::mem::take(&mut slot.bytes);
    slot.reading = false;
    slot.signal.preempted.store(true, Ordering::Release);
    slot.signal.notify.notify_waiters();
    if let Some(hook) = slot.signal.hook.get() {
        hook();
    }
    release(t, victim_conn, freed, sh);
    true
}

/// Return `n` bytes of connection `conn` to the budget.
fn release(t: &mut Table, conn: u64, n: usize, sh: &Shared) {
    t.used -= n;
    if let Some(held) = t.conns.get_mut(&conn) {
        *held -= n;
        if *held == 0 {
            t.conns.remove(&conn);
        }
    }
    sh.gauge.dec_by(n as i64);
}

impl Drop for Charge {
    fn drop(&mut self) {
        let mut t = self.shared.lock();
        if let Some(slot) = t.slots.remove(&self.id) {
            release(&mut t, self.conn, slot.bytes, &self.shared);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn budget(limit: usize, per_conn: usize) -> ByteBudget {
        ByteBudget::new(limit, per_conn, 1, Gauge::default())
    }

    #[test]
    fn bytes_are_charged_as_granted_and_released_on_drop() {
        let b = budget(100, 1000);
        let a = Account::new();
        let mut c = b.charge(&a);
        c.grow(10).unwrap();
        c.grow(15).unwrap();
        assert_eq!((c.bytes(), b.shared.gauge.get()), (25, 25));
        let mut d = b.charge(&a);
        assert_eq!(d.grow(76), Err(Refusal::OverBudget(100)));
        assert_eq!(b.shared.gauge.get(), 25, "a refused grow charges nothing");
        drop(c);
        assert_eq!(b.shared.gauge.get(), 0);
        d.grow(76).unwrap();
        drop(d);
        let t = b.shared.lock();
        assert_eq!((t.used, t.conns.len(), t.slots.len()), (0, 0, 0));
    }

    #[test]
    fn one_connection_holds_at_most_its_cap() {
        let b = budget(1000, 100);
        let a = Account::new();
        let (mut c1, mut c2) = (b.charge(&a), b.charge(&a));
        c1.grow(60).unwrap();
        assert_eq!(c2.grow(41), Err(Refusal::ConnectionCap(100)));
        c2.grow(40).unwrap();
        // Another connection is not affected.
        let mut other = b.charge(&Account::new());
        other.grow(100).unwrap();
    }

    #[test]
    fn a_connection_within_its_share_preempts_the_largest_reader_above_its_share() {
        let b = budget(100, 100);
        let (slow, fast) = (Account::new(), Account::new());
        let mut held = b.charge(&slow);
        held.grow(70).unwrap();
        let mut small = b.charge(&slow);
        small.grow(20).unwrap();
        // 90 of 100 used by one connection; another asks for 30 (its fair share is 50).
        let mut review = b.charge(&fast);
        review.grow(30).unwrap();
        assert!(
            held.is_preempted(),
            "the largest body of the connection above its share"
        );
        assert!(!small.is_preempted());
        assert_eq!(held.bytes(), 0);
        assert_eq!(held.grow(1), Err(Refusal::Preempted(100)));
        assert_eq!(b.shared.gauge.get(), 50);
        drop(held);
        assert_eq!(
            b.shared.gauge.get(),
            50,
            "a preempted charge released its bytes once"
        );
    }

    #[test]
    fn the_connection_most_above_its_share_is_preempted_first() {
        let b = budget(120, 120);
        let (a, c, newcomer) = (Account::new(), Account::new(), Account::new());
        let mut less = b.charge(&a);
        less.grow(45).unwrap();
        let mut most = b.charge(&c);
        most.grow(60).unwrap();
        // Three holders: a fair share of 40; both are above it, the second the most.
        let mut review = b.charge(&newcomer);
        review.grow(20).unwrap();
        assert!(most.is_preempted(), "the connection holding the most");
        assert!(!less.is_preempted(), "one preemption freed enough");
        assert_eq!(b.shared.gauge.get(), 65);
    }

    #[test]
    fn no_preemption_beyond_the_fair_share_nor_of_bodies_read_in_full() {
        let b = budget(100, 100);
        let (a, c) = (Account::new(), Account::new());
        let mut read = b.charge(&a);
        read.grow(90).unwrap();
        read.done_reading();
        let mut r = b.charge(&c);
        assert_eq!(
            r.grow(20),
            Err(Refusal::OverBudget(100)),
            "the 90 are being processed"
        );
        assert!(!read.is_preempted());
        drop(read);
        let mut held = b.charge(&a);
        held.grow(60).unwrap();
        // 60 (fair share 50) is more than a newcomer may take.
        assert_eq!(r.grow(51), Err(Refusal::OverBudget(100)));
        assert!(!held.is_preempted());
    }

    #[test]
    fn the_budget_fills_to_its_last_byte() {
        let b = budget(100, 100);
        let (a, c) = (Account::new(), Account::new());
        let mut first = b.charge(&a);
        first.grow(30).unwrap();
        // 70 is above the fair share of two connections (50), and fits exactly: no share applies.
        let mut second = b.charge(&c);
        second.grow(70).unwrap();
        assert_eq!(b.shared.gauge.get(), 100);
        assert!(!first.is_preempted());
        // And one connection up to its cap exactly.
        let b = budget(1000, 100);
        let mut full = b.charge(&a);
        full.grow(100).unwrap();
        assert_eq!(full.grow(1), Err(Refusal::ConnectionCap(100)));
    }

    #[test]
    fn preemption_stops_as_soon_as_the_request_fits() {
        let b = budget(100, 100);
        let (a, c) = (Account::new(), Account::new());
        let mut bodies: Vec<Charge> = (0..3).map(|_| b.charge(&a)).collect();
        for body in &mut bodies {
            body.grow(30).unwrap();
        }
        // 90 held by one connection, 40 asked by another (fair share 50): one body of 30 makes
        // room to the last byte; the second body is not taken, though its connection is still
        // above its share.
        let mut review = b.charge(&c);
        review.grow(40).unwrap();
        let preempted = bodies.iter().filter(|c| c.is_preempted()).count();
        assert_eq!(preempted, 1);
        assert_eq!(b.shared.gauge.get(), 100);
    }

    #[test]
    fn a_connection_at_its_share_is_not_preempted() {
        let b = budget(90, 90);
        let (a, c, d) = (Account::new(), Account::new(), Account::new());
        let mut at_share = b.charge(&a);
        at_share.grow(30).unwrap();
        let mut processed = b.charge(&c);
        processed.grow(55).unwrap();
        processed.done_reading();
        // Three holders, a share of 30: the reader holds its share, not more; the connection
        // above it has nothing being read.
        let mut review = b.charge(&d);
        assert_eq!(review.grow(30), Err(Refusal::OverBudget(90)));
        assert!(!at_share.is_preempted());
        assert_eq!(b.shared.gauge.get(), 85);
    }

    #[test]
    fn the_victim_is_the_connection_most_above_its_share_with_a_body_being_read() {
        let b = budget(100, 100);
        let (reader, processing, newcomer) = (Account::new(), Account::new(), Account::new());
        let mut read = b.charge(&reader);
        read.grow(40).unwrap();
        // The connection holding the most has only a body read in full and an empty one.
        let mut done = b.charge(&processing);
        done.grow(50).unwrap();
        done.done_reading();
        let empty = b.charge(&processing);
        // Three holders, a share of 33: both are above it; only the reader can give room.
        let mut review = b.charge(&newcomer);
        review.grow(20).unwrap();
        assert!(read.is_preempted());
        assert!(!done.is_preempted() && !empty.is_preempted());
        assert_eq!(b.shared.gauge.get(), 70);
    }

    #[test]
    fn only_the_victims_bodies_are_taken() {
        let b = budget(100, 100);
        let (over, under, newcomer) = (Account::new(), Account::new(), Account::new());
        let mut over_bodies = [b.charge(&over), b.charge(&over)];
        for body in &mut over_bodies {
            body.grow(25).unwrap();
        }
        // A larger body than either of the victim's, on a connection within its share (33).
        let mut large = b.charge(&under);
        large.grow(30).unwrap();
        let mut review = b.charge(&newcomer);
        review.grow(30).unwrap();
        assert!(!large.is_preempted());
        assert_eq!(over_bodies.iter().filter(|c| c.is_preempted()).count(), 1);
        let t = b.shared.lock();
        assert_eq!(t.conns.get(&over.id), Some(&25));
        assert_eq!(t.conns.get(&under.id), Some(&30));
        assert_eq!(t.used, 85);
    }

    #[test]
    fn a_preemption_calls_the_hook_and_refusals_name_their_reason() {
        let b = budget(10, 10);
        assert_eq!(b.limit(), 10);
        let called = Arc::new(AtomicBool::new(false));
        let mut held = b.charge(&Account::new());
        let flag = called.clone();
        held.on_preempt(move || flag.store(true, Ordering::Release));
        held.grow(10).unwrap();
        assert!(!called.load(Ordering::Acquire));
        b.charge(&Account::new()).grow(5).unwrap();
        assert!(held.is_preempted() && called.load(Ordering::Acquire));
        // The metric and log labels.
        assert_eq!(
            [
                Refusal::OverBudget(1),
                Refusal::ConnectionCap(1),
                Refusal::Preempted(1)
            ]
            .map(Refusal::reason),
            ["inflight_bytes", "connection_bytes", "preempted"]
        );
    }

    #[tokio::test]
    async fn preemption_wakes_the_reader() {
        let b = budget(10, 10);
        let mut held = b.charge(&Account::new());
        held.grow(10).unwrap();
        let waiter = tokio::spawn(async move {
            held.preempted().await;
            held.bytes()
        });
        tokio::task::yield_now().await;
        let mut other = b.charge(&Account::new());
        other.grow(5).unwrap();
        let left = tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("woken")
            .unwrap();
        assert_eq!(left, 0);
    }

    #[tokio::test]
    async fn large_reviews_take_turns() {
        let b = budget(100, 100);
        let first = b.large_slot().await;
        let waiting = tokio::time::timeout(Duration::from_millis(20), b.large_slot()).await;
        assert!(waiting.is_err(), "a second slot while the only one is held");
        drop(first);
        let _second = b.large_slot().await;
    }
}
