//! Which accepted connections the server keeps: two pools, each with a share per source address.
//!
//! - The **handshake pool** (`--max-handshakes`, `--max-handshakes-per-address`): connections that
//!   have not finished TLS. It is small and each connection stays in it for at most the handshake
//!   deadline, so clients that connect and send nothing hold little, briefly. When it is full, a
//!   newcomer from an address holding fewer handshakes than the address holding the most (by more
//!   than one) takes the slot of that address's oldest handshake, which is abandoned: flooding
//!   from a few addresses cannot keep another address from connecting.
//! - The **connection pool** (`--max-connections`, `--max-connections-per-address`): connections
//!   past TLS. A newcomer that does not fit (the pool, or its address's share) closes the
//!   connection idle the longest (of its address, when the share is what is full) before it is
//!   refused.
//!
//! Trusted callers — a source address in `--api-server-cidrs`, or (past TLS) a verified client
//! certificate — are not held to the per-address shares, keep a quarter of each pool reserved
//! (when any trust is configured), and are never closed to make room for an untrusted newcomer.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;
use tokio::time::Instant;

use super::conn::Activity;

/// A range of source addresses (`10.0.0.0/8`, `fd00::/8`, or one address).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    net: IpAddr,
    prefix: u8,
}

impl std::str::FromStr for Cidr {
    type Err = String;

    fn from_str(s: &str) -> Result<Cidr, String> {
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let net: IpAddr = addr
            .parse()
            .map_err(|_| format!("{s:?}: not an IP address or CIDR range"))?;
        let max = if net.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| format!("{s:?}: the prefix length must be 0 to {max}"))?,
        };
        Ok(Cidr { net, prefix })
    }
}

impl Cidr {
    /// Whether `ip` (IPv4-mapped IPv6 addresses as IPv4) is in the range.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.net, ip.to_canonical()) {
            (IpAddr::V4(n), IpAddr::V4(a)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(n) & mask == u32::from(a) & mask
            }
            (IpAddr::V6(n), IpAddr::V6(a)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(n) & mask == u128::from(a) & mask
            }
            _ => false,
        }
    }
}

/// Sizes of the pools.
#[derive(Debug, Clone)]
pub struct AdmitLimits {
    /// Connections still in their TLS handshake (`--max-handshakes`).
    pub handshakes: usize,
    /// Of which from one address (`--max-handshakes-per-address`).
    pub handshakes_per_address: usize,
    /// Connections past TLS (`--max-connections`).
    pub connections: usize,
    /// Of which from one address (`--max-connections-per-address`).
    pub connections_per_address: usize,
    /// Trusted source ranges (`--api-server-cidrs`).
    pub trusted: Vec<Cidr>,
    /// Keep a quarter of each pool for trusted callers (some trust is configured).
    pub reserve: bool,
}

/// Why a connection was not kept (the `reason` of `outrigger_connections_closed_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The handshake pool is full and the address holds no less than the others.
    HandshakePool,
    /// The address holds its share of handshakes.
    HandshakeShare,
    /// The connection pool is full and no idle connection could be closed.
    ConnectionPool,
    /// The address holds its share of connections, none of them idle.
    ConnectionShare,
}

impl Refused {
    /// Reason label.
    pub fn reason(self) -> &'static str {
        match self {
            Refused::HandshakePool => "handshake_pool",
            Refused::HandshakeShare => "handshake_address_share",
            Refused::ConnectionPool => "connection_pool",
            Refused::ConnectionShare => "connection_address_share",
        }
    }
}

/// Tells one connection to go: abandon its handshake, or close (it was idle).
#[derive(Debug, Default)]
pub struct Evict {
    flag: AtomicBool,
    notify: Notify,
}

impl Evict {
    fn fire(&self) {
        self.flag.store(true, Ordering::Release);
        self.notify.notify_one();
    }

    /// Whether the connection was told to go.
    pub fn fired(&self) -> bool {
        self.flag.load(Ordering::Acquire)
    }

    /// Resolves once the connection is told to go.
    pub async fn wait(&self) {
        loop {
            let n = self.notify.notified();
            if self.fired() {
                return;
            }
            n.await;
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pool {
    Handshake,
    Open,
}

#[derive(Debug)]
struct Entry {
    addr: IpAddr,
    pool: Pool,
    trusted: bool,
    evict: Arc<Evict>,
    activity: Option<Arc<Activity>>,
    since: Instant,
}

#[derive(Debug, Default, Clone, Copy)]
struct Held {
    handshakes: usize,
    open: usize,
}

#[derive(Debug, Default)]
struct Table {
    entries: HashMap<u64, Entry>,
    by_addr: HashMap<IpAddr, Held>,
    /// Per pool: all, and untrusted only.
    handshakes: (usize, usize),
    open: (usize, usize),
}

impl Table {
    fn count(&mut self, e: &Entry, up: bool) {
        let held = self.by_addr.entry(e.addr).or_default();
        let (pool, n) = match e.pool {
            Pool::Handshake => (&mut self.handshakes, &mut held.handshakes),
            Pool::Open => (&mut self.open, &mut held.open),
        };
        if up {
            *n += 1;
            pool.0 += 1;
            pool.1 += usize::from(!e.trusted);
        } else {
            *n -= 1;
            pool.0 -= 1;
            pool.1 -= usize::from(!e.trusted);
        }
        if held.handshakes == 0 && held.open == 0 {
            self.by_addr.remove(&e.addr);
        }
    }

    fn insert(&mut self, id: u64, e: Entry) {
        self.count(&e, true);
        self.entries.insert(id, e);
    }

    fn remove(&mut self, id: u64) -> Option<Entry> {
        let e = self.entries.remove(&id)?;
        self.count(&e, false);
        Some(e)
    }

    fn held(&self, addr: IpAddr) -> Held {
        self.by_addr.get(&addr).copied().unwrap_or_default()
    }

    /// Evict the entry for which `pick` gives the earliest instant; whether there was one.
    fn evict_where(&mut self, pick: impl Fn(&Entry) -> Option<Instant>) -> bool {
        let victim = self
            .entries
            .iter()
            .filter_map(|(id, e)| pick(e).map(|t| (t, *id)))
            .min();
        match victim.and_then(|(_, id)| self.remove(id)) {
            Some(e) => {
                e.evict.fire();
                true
            }
            None => false,
        }
    }

    /// Abandon the oldest untrusted handshake of the address holding the most, if it holds
    /// more than `mine + 1`.
    fn evict_handshake_of_the_fullest(&mut self, mine: usize) -> bool {
        let fullest = self
            .entries
            .values()
            .filter(|e| e.pool == Pool::Handshake && !e.trusted)
            .map(|e| e.addr)
            .max_by_key(|a| self.held(*a).handshakes);
        let Some(addr) = fullest else { return false };
        if self.held(addr).handshakes <= mine + 1 {
            return false;
        }
        self.evict_where(|e| {
            (e.pool == Pool::Handshake && !e.trusted && e.addr == addr).then_some(e.since)
        })
    }

    /// Close the untrusted connection idle the longest (of `addr` when given).
    fn evict_idle(&mut self, addr: Option<IpAddr>, trusted_too: bool) -> bool {
        self.evict_where(|e| {
            if e.pool != Pool::Open || (e.trusted && !trusted_too) {
                return None;
            }
            if addr.is_some_and(|a| a != e.addr) {
                return None;
            }
            e.activity.as_ref()?.idle_since()
        })
    }
}

/// The pools of one listener.
#[derive(Debug)]
pub struct Admission {
    limits: AdmitLimits,
    table: Mutex<Table>,
    /// Tickets alive (evicted connections included, until they end).
    live: AtomicU64,
    ended: Notify,
}

static NEXT: AtomicU64 = AtomicU64::new(1);

/// A connection's place in the pools; given back when dropped.
#[derive(Debug)]
pub struct Ticket {
    admission: Arc<Admission>,
    id: u64,
    /// Fired when the connection must go.
    pub evict: Arc<Evict>,
}

impl Admission {
    /// Pools of the given sizes.
    pub fn new(limits: AdmitLimits) -> Arc<Admission> {
        Arc::new(Admission {
            limits,
            table: Mutex::new(Table::default()),
            live: AtomicU64::new(0),
            ended: Notify::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn reserve(&self, pool: usize) -> usize {
        if self.limits.reserve {
            pool / 4
        } else {
            0
        }
    }

    /// Whether `addr` is in a trusted range.
    pub fn trusted(&self, addr: IpAddr) -> bool {
        self.limits.trusted.iter().any(|c| c.contains(addr))
    }

    /// Admit a connection from `addr` into the handshake pool (see the module documentation).
    pub fn handshake(self: &Arc<Self>, addr: IpAddr) -> Result<Ticket, Refused> {
        let addr = addr.to_canonical();
        let trusted = self.trusted(addr);
        let l = &self.limits;
        let mut t = self.lock();
        let fits = if trusted {
            // Any untrusted handshake gives way to a trusted one.
            t.handshakes.0 < l.handshakes
                || t.evict_handshake_of_the_fullest(0)
                || t.evict_where(|e| (e.pool == Pool::Handshake && !e.trusted).then_some(e.since))
        } else {
            let mine = t.held(addr).handshakes;
            if mine >= l.handshakes_per_address {
                return Err(Refused::HandshakeShare);
            }
            let cap = l.handshakes - self.reserve(l.handshakes);
            (t.handshakes.1 < cap && t.handshakes.0 < l.handshakes)
                || t.evict_handshake_of_the_fullest(mine)
        };
        if !fits {
            return Err(Refused::HandshakePool);
        }
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        let evict = Arc::new(Evict::default());
        t.insert(
            id,
            Entry {
                addr,
                pool: Pool::Handshake,
                trusted,
                evict: evict.clone(),
                activity: None,
                since: Instant::now(),
            },
        );
        self.live.fetch_add(1, Ordering::AcqRel);
        Ok(Ticket {
            admission: self.clone(),
            id,
            evict,
        })
    }

    /// Move a connection whose handshake completed into the connection pool; `authenticated`:
    /// it presented a verified client certificate. On refusal the ticket still holds nothing.
    pub fn open(
        &self,
        ticket: &Ticket,
        authenticated: bool,
        activity: Arc<Activity>,
    ) -> Result<(), Refused> {
        let l = &self.limits;
        let mut t = self.lock();
        let Some(mut e) = t.remove(ticket.id) else {
            // Evicted at the last moment: it gives way.
            return Err(Refused::HandshakePool);
        };
        e.trusted |= authenticated;
        e.pool = Pool::Open;
        e.activity = Some(activity);
        let fits = if e.trusted {
            t.open.0 < l.connections || t.evict_idle(None, false) || t.evict_idle(None, true)
        } else {
            let mine = t.held(e.addr).open;
            if mine >= l.connections_per_address && !t.evict_idle(Some(e.addr), false) {
                return Err(Refused::ConnectionShare);
            }
            let cap = l.connections - self.reserve(l.connections);
            (t.open.1 < cap && t.open.0 < l.connections) || t.evict_idle(None, false)
        };
        if !fits {
            return Err(Refused::ConnectionPool);
        }
        t.insert(ticket.id, e);
        Ok(())
    }

    /// Connections open or in their handshake (evicted ones until they end).
    pub fn live(&self) -> u64 {
        self.live.load(Ordering::Acquire)
    }

    /// Resolves when no connection is left.
    pub async fn all_ended(&self) {
        loop {
            let n = self.ended.notified();
            if self.live() == 0 {
                return;
            }
            n.await;
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.admission.lock().remove(self.id);
        if self.admission.live.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.admission.ended.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(hs: usize, hs_addr: usize, open: usize, open_addr: usize) -> AdmitLimits {
        AdmitLimits {
            handshakes: hs,
            handshakes_per_address: hs_addr,
            connections: open,
            connections_per_address: open_addr,
            trusted: Vec::new(),
            reserve: false,
        }
    }

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, last])
    }

    #[test]
    fn cidrs_parse_and_match() {
        let c: Cidr = "10.1.0.0/16".parse().unwrap();
        assert!(c.contains("10.1.200.3".parse().unwrap()));
        assert!(
            c.contains("::ffff:10.1.0.9".parse().unwrap()),
            "IPv4-mapped"
        );
        assert!(!c.contains("10.2.0.1".parse().unwrap()));
        let one: Cidr = "127.0.0.1".parse().unwrap();
        assert!(one.contains(ip(1)) && !one.contains(ip(2)));
        let all: Cidr = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains(ip(9)) && !all.contains("::1".parse().unwrap()));
        let v6: Cidr = "fd00::/8".parse().unwrap();
        assert!(v6.contains("fd12::1".parse().unwrap()));
        assert!("10.0.0.0/33".parse::<Cidr>().is_err());
        assert!("nope/8".parse::<Cidr>().is_err());
    }

    #[tokio::test]
    async fn an_address_holds_at_most_its_share_of_handshakes() {
        let a = Admission::new(limits(100, 2, 100, 100));
        let t1 = a.handshake(ip(2)).unwrap();
        let _t2 = a.handshake(ip(2)).unwrap();
        assert_eq!(a.handshake(ip(2)).unwrap_err(), Refused::HandshakeShare);
        let _other = a.handshake(ip(3)).expect("another address is unaffected");
        drop(t1);
        let _t3 = a.handshake(ip(2)).expect("a slot given back");
        assert_eq!(a.live(), 3);
    }

    #[tokio::test]
    async fn a_full_handshake_pool_gives_the_fullest_addresses_oldest_slot_to_a_newcomer() {
        let a = Admission::new(limits(4, 4, 100, 100));
        let flood: Vec<_> = (0..4).map(|_| a.handshake(ip(2)).unwrap()).collect();
        let newcomer = a.handshake(ip(1)).expect("room taken from the flood");
        assert!(
            flood[0].evict.fired(),
            "the oldest handshake of the flood gave way"
        );
        assert!(flood[1..].iter().all(|t| !t.evict.fired()));
        assert!(!newcomer.evict.fired());
        // 3 against 1: one more newcomer fits, then the two addresses are even.
        let _second = a.handshake(ip(1)).unwrap();
        assert_eq!(a.handshake(ip(1)).unwrap_err(), Refused::HandshakePool);
        assert_eq!(a.handshake(ip(2)).unwrap_err(), Refused::HandshakePool);
    }

    #[tokio::test]
    async fn the_connection_idle_longest_is_closed_before_a_newcomer_is_refused() {
        let a = Admission::new(limits(100, 100, 2, 100));
        let open = |addr: u8, busy: bool| {
            let t = a.handshake(ip(addr)).unwrap();
            let act = Activity::for_test();
            let guard = busy.then(|| act.busy());
            a.open(&t, false, act.clone()).map(|()| (t, act, guard))
        };
        let (first, _a1, _b1) = open(2, false).unwrap();
        let (second, _a2, _b2) = open(3, true).unwrap();
        let (third, _a3, _b3) = open(4, false).expect("the idle one closed");
        assert!(first.evict.fired());
        assert!(!second.evict.fired(), "a busy connection is never closed");
        // Now one busy and one idle: the idle one goes again; with both busy, refused.
        let (_fourth, _a4, _b4) = open(5, true).unwrap();
        assert!(third.evict.fired());
        assert_eq!(open(6, false).unwrap_err(), Refused::ConnectionPool);
    }

    #[tokio::test]
    async fn trusted_sources_skip_the_shares_and_keep_a_reserve() {
        let mut l = limits(8, 1, 8, 1);
        l.trusted = vec!["127.0.0.1/32".parse().unwrap()];
        l.reserve = true;
        let a = Admission::new(l);
        let _api: Vec<_> = (0..3).map(|_| a.handshake(ip(1)).unwrap()).collect();
        // Untrusted addresses fill at most 8 - 8/4 = 6 of the rest.
        let others: Vec<_> = (2..7).map(|i| a.handshake(ip(i)).unwrap()).collect();
        assert_eq!(a.handshake(ip(7)).unwrap_err(), Refused::HandshakePool);
        assert!(others.iter().all(|t| !t.evict.fired()));
        // The pool is full (3 + 5): a trusted newcomer takes an untrusted handshake's place.
        let _more = a.handshake(ip(1)).unwrap();
        assert_eq!(others.iter().filter(|t| t.evict.fired()).count(), 1);
    }
}
