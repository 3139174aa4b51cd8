//! The connections being served: what phase each is in, and the cap on how many there are.
//!
//! A connection is **idle** (waiting for a request to start: just accepted, or its last
//! response fully sent), reading a **head** (bytes of a request arrived, the head is not
//! complete), or **busy** (the application has the request; its response is not fully
//! written yet). The phase gives the deadline that applies ([`ConnState::deadline`]), tells
//! hyper's own error answers from ours (hyper writes while no request of ours is in
//! progress, [`ConnState::phase`]), and picks the connection to close when the cap is
//! reached (the longest-idle one).
//!
//! "Fully written" is observed, not guessed: the application's response body is released
//! (hyper drops it at its end), and then the IO is flushed — hyper flushes the socket only
//! once its own write buffer is empty, so by then every byte of that response has left.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Idle,
    Head,
    Busy,
}

#[derive(Debug)]
struct Phases {
    phase: Phase,
    since: Instant,
    /// The response of the current request has been released by hyper.
    released: bool,
    /// Bytes of a further request arrived while busy (pipelining).
    read_while_busy: bool,
    /// The current request has a body that was not read to its end.
    body_unread: bool,
}

/// One connection's shared state (the IO wrapper, the service and the table all see it).
#[derive(Debug)]
pub struct ConnState {
    id: u64,
    phases: Mutex<Phases>,
    shed: Notify,
}

impl ConnState {
    pub fn new(id: u64, now: Instant) -> Self {
        Self {
            id,
            phases: Mutex::new(Phases {
                phase: Phase::Idle,
                since: now,
                released: false,
                read_while_busy: false,
                body_unread: false,
            }),
            shed: Notify::new(),
        }
    }

    pub fn phase(&self) -> Phase {
        self.lock().phase
    }

    /// Bytes arrived from the client.
    pub fn on_read(&self, now: Instant) {
        let mut p = self.lock();
        match p.phase {
            Phase::Idle => {
                p.phase = Phase::Head;
                p.since = now;
            }
            Phase::Head => {}
            Phase::Busy => p.read_while_busy = true,
        }
    }

    /// A complete request head reached the application; `has_body`: a body follows it.
    pub fn on_request(&self, now: Instant, has_body: bool) {
        let mut p = self.lock();
        p.phase = Phase::Busy;
        p.since = now;
        p.released = false;
        p.read_while_busy = false;
        p.body_unread = has_body;
    }

    /// Whether the current request's body has not been read to its end (the application
    /// answered without it, e.g. a refused credential).
    pub fn body_unread(&self) -> bool {
        self.lock().body_unread
    }

    /// The current request's body was read to its end.
    pub fn on_body_complete(&self) {
        self.lock().body_unread = false;
    }

    /// Whether the client may still be sending bytes of a request: a head is incomplete, a
    /// request is in progress, or the last one's body was not read to its end (e.g. refused
    /// from its `Content-Length`).
    pub fn client_may_be_sending(&self) -> bool {
        let p = self.lock();
        p.phase != Phase::Idle || p.body_unread
    }

    /// hyper is done with the response body of the current request.
    pub fn on_response_released(&self) {
        self.lock().released = true;
    }

    /// The IO was flushed: with the response released, it has been sent entirely.
    pub fn on_flushed(&self, now: Instant) {
        let mut p = self.lock();
        if p.phase == Phase::Busy && p.released {
            p.phase = if p.read_while_busy {
                Phase::Head
            } else {
                Phase::Idle
            };
            p.since = now;
            p.released = false;
            p.read_while_busy = false;
        }
    }

    /// When the current phase must end, and which phase that is; busy has no deadline (the
    /// body has its own, and handlers are bounded by their work).
    pub fn deadline(&self, idle: Duration, head: Duration) -> Option<(Instant, Phase)> {
        let p = self.lock();
        match p.phase {
            Phase::Idle => Some((p.since + idle, Phase::Idle)),
            Phase::Head => Some((p.since + head, Phase::Head)),
            Phase::Busy => None,
        }
    }

    fn idle_since(&self) -> Option<Instant> {
        let p = self.lock();
        (p.phase == Phase::Idle).then_some(p.since)
    }

    /// Asks the connection's task to close it (it is idle, so nothing is lost).
    pub fn shed(&self) {
        self.shed.notify_one();
    }

    /// Resolves once [`ConnState::shed`] was called (also if that happened before).
    pub async fn shed_requested(&self) {
        self.shed.notified().await;
    }

    fn lock(&self) -> MutexGuard<'_, Phases> {
        self.phases.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

pub enum Admission {
    /// Serve `conn`; close `displaced` (the longest-idle connection) to stay within the cap.
    Admitted {
        conn: Arc<ConnState>,
        displaced: Option<Arc<ConnState>>,
    },
    /// At the cap with no idle connection: refuse the new one.
    Full,
}

#[derive(Debug, Default)]
struct Table {
    next_id: u64,
    conns: HashMap<u64, Arc<ConnState>>,
}

#[derive(Debug)]
pub struct ConnTable {
    max: usize,
    table: Mutex<Table>,
}

impl ConnTable {
    pub fn new(max: usize) -> Self {
        Self {
            max: max.max(1),
            table: Mutex::new(Table::default()),
        }
    }

    pub fn len(&self) -> usize {
        self.lock().conns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Makes room for a new connection if the cap allows, displacing the longest-idle one.
    pub fn admit(&self, now: Instant) -> Admission {
        let mut t = self.lock();
        let mut displaced = None;
        if t.conns.len() >= self.max {
            let oldest = t
                .conns
                .values()
                .filter_map(|c| c.idle_since().map(|since| (since, c.id)))
                .min()
                .map(|(_, id)| id);
            match oldest.and_then(|id| t.conns.remove(&id)) {
                Some(victim) => displaced = Some(victim),
                None => return Admission::Full,
            }
        }
        let id = t.next_id;
        t.next_id += 1;
        let conn = Arc::new(ConnState::new(id, now));
        t.conns.insert(id, Arc::clone(&conn));
        Admission::Admitted { conn, displaced }
    }

    fn remove(&self, id: u64) {
        self.lock().conns.remove(&id);
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Takes its connection out of the table when the connection's task ends.
pub struct Leave {
    table: Arc<ConnTable>,
    conn: Arc<ConnState>,
}

impl Leave {
    pub fn new(table: Arc<ConnTable>, conn: Arc<ConnState>) -> Self {
        Self { table, conn }
    }
}

impl Drop for Leave {
    fn drop(&mut self) {
        self.table.remove(self.conn.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IDLE: Duration = Duration::from_secs(60);
    const HEAD: Duration = Duration::from_secs(10);

    #[test]
    fn phases_follow_a_request_and_its_response() {
        let t0 = Instant::now();
        let c = ConnState::new(0, t0);
        assert_eq!(c.deadline(IDLE, HEAD), Some((t0 + IDLE, Phase::Idle)));
        let t1 = t0 + Duration::from_secs(1);
        c.on_read(t1);
        assert_eq!(c.deadline(IDLE, HEAD), Some((t1 + HEAD, Phase::Head)));
        // More bytes of the same head do not extend its deadline.
        c.on_read(t1 + Duration::from_secs(5));
        assert_eq!(c.deadline(IDLE, HEAD), Some((t1 + HEAD, Phase::Head)));
        c.on_request(t1, false);
        assert_eq!(c.phase(), Phase::Busy);
        assert_eq!(c.deadline(IDLE, HEAD), None);
        // A flush before the response is released (e.g. `100 Continue`) keeps it busy.
        c.on_flushed(t1);
        assert_eq!(c.phase(), Phase::Busy);
        c.on_response_released();
        assert_eq!(c.phase(), Phase::Busy, "released but not yet flushed");
        let t2 = t1 + Duration::from_secs(2);
        c.on_flushed(t2);
        assert_eq!(c.deadline(IDLE, HEAD), Some((t2 + IDLE, Phase::Idle)));
        assert!(!c.client_may_be_sending());
    }

    #[test]
    fn an_unread_body_means_the_client_may_still_be_sending() {
        let t0 = Instant::now();
        let c = ConnState::new(0, t0);
        c.on_request(t0, true);
        c.on_response_released();
        c.on_flushed(t0);
        assert_eq!(c.phase(), Phase::Idle);
        assert!(c.client_may_be_sending());
        c.on_request(t0, true);
        c.on_body_complete();
        c.on_response_released();
        c.on_flushed(t0);
        assert!(!c.client_may_be_sending());
    }

    #[test]
    fn a_pipelined_request_continues_as_a_head() {
        let t0 = Instant::now();
        let c = ConnState::new(0, t0);
        c.on_read(t0);
        c.on_request(t0, false);
        c.on_read(t0);
        c.on_response_released();
        c.on_flushed(t0);
        assert_eq!(c.phase(), Phase::Head);
    }

    #[test]
    fn the_cap_displaces_the_longest_idle_connection_or_refuses() {
        let t0 = Instant::now();
        let table = Arc::new(ConnTable::new(2));
        let admitted = |a: Admission| match a {
            Admission::Admitted { conn, displaced } => (conn, displaced),
            Admission::Full => panic!("expected a connection to be admitted"),
        };
        let (first, none) = admitted(table.admit(t0));
        assert!(none.is_none());
        let (second, none) = admitted(table.admit(t0 + Duration::from_secs(1)));
        assert!(none.is_none());
        // Both idle: the older one goes.
        let (third, displaced) = admitted(table.admit(t0 + Duration::from_secs(2)));
        assert_eq!(displaced.map(|d| d.id), Some(first.id));
        assert_eq!(table.len(), 2);
        // Nobody idle (one reading a head, one busy): refused.
        second.on_read(t0);
        third.on_request(t0, false);
        assert!(matches!(table.admit(t0), Admission::Full));
        // A connection whose task ends makes room.
        drop(Leave::new(Arc::clone(&table), Arc::clone(&second)));
        assert_eq!(table.len(), 1);
        let (_fourth, displaced) = admitted(table.admit(t0));
        assert!(displaced.is_none());
    }
}
