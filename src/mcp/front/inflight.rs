//! The proxy's bookkeeping of requests: those in flight to a child, those held while no
//! child is ready, and the child's own requests waiting for the client's answer.
//!
//! Pure data structures with no I/O and no clock of their own (instants are passed in),
//! owned by the dispatcher. Every client request is in exactly one place at a time —
//! buffered, in flight, or answered — which is how "answered exactly once" is kept.

use std::collections::hash_map::Entry as Slot;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::time::Instant;

use crate::mcp::jsonrpc::message::{Message, Method, RequestId};

/// Requests and notifications from the client held while no child is ready, in arrival
/// order, bounded in count and bytes.
#[derive(Debug)]
pub(crate) struct Buffer {
    queue: VecDeque<Held>,
    bytes: usize,
    max_count: usize,
    max_bytes: usize,
}

/// One held message.
#[derive(Debug)]
pub(crate) struct Held {
    /// The client's message, unchanged.
    pub(crate) message: Message,
    /// For requests: when to give up and answer with an error.
    pub(crate) deadline: Option<Instant>,
}

impl Buffer {
    /// An empty buffer holding at most `max_count` messages and `max_bytes` bytes.
    pub(crate) fn new(max_count: usize, max_bytes: usize) -> Self {
        Buffer {
            queue: VecDeque::new(),
            bytes: 0,
            max_count,
            max_bytes,
        }
    }

    /// Hold a message at the back. Gives it back when the buffer is full.
    pub(crate) fn push(&mut self, held: Held) -> Result<(), Box<Held>> {
        let size = held.message.bytes().len();
        if self.queue.len() >= self.max_count || self.bytes + size > self.max_bytes {
            return Err(Box::new(held));
        }
        self.bytes += size;
        self.queue.push_back(held);
        Ok(())
    }

    /// Put messages back at the front, in the given order, whatever the limits: they were
    /// accepted once (requests retried after their child went away).
    pub(crate) fn push_front_all(&mut self, held: Vec<Held>) {
        for item in held.into_iter().rev() {
            self.bytes += item.message.bytes().len();
            self.queue.push_front(item);
        }
    }

    /// Remove the held request with this id (the client cancelled it).
    pub(crate) fn remove_request(&mut self, id: &RequestId) -> Option<Held> {
        let at = self.queue.iter().position(|held| {
            matches!(held.message.kind(), crate::mcp::jsonrpc::message::Kind::Request { id: held_id, .. } if held_id == id)
        })?;
        let held = self.queue.remove(at)?;
        self.bytes -= held.message.bytes().len();
        Some(held)
    }

    /// Remove and return the requests whose deadline is at or before `now`.
    pub(crate) fn take_expired(&mut self, now: Instant) -> Vec<Held> {
        if !self
            .queue
            .iter()
            .any(|h| h.deadline.is_some_and(|d| d <= now))
        {
            return Vec::new();
        }
        let (expired, kept): (VecDeque<Held>, VecDeque<Held>) = self
            .queue
            .drain(..)
            .partition(|h| h.deadline.is_some_and(|d| d <= now));
        self.queue = kept;
        self.bytes = self.queue.iter().map(|h| h.message.bytes().len()).sum();
        expired.into()
    }

    /// The earliest deadline of a held request.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.queue.iter().filter_map(|h| h.deadline).min()
    }

    /// Take the oldest held message.
    pub(crate) fn pop_front(&mut self) -> Option<Held> {
        let held = self.queue.pop_front()?;
        self.bytes -= held.message.bytes().len();
        Some(held)
    }

    /// Take everything, in order.
    pub(crate) fn take_all(&mut self) -> Vec<Held> {
        self.bytes = 0;
        self.queue.drain(..).collect()
    }

    /// How many messages are held.
    pub(crate) fn len(&self) -> usize {
        self.queue.len()
    }
}

/// Who is waiting for the answer to a request the proxy sent a child.
#[derive(Debug)]
pub(crate) enum Origin {
    /// A client request, forwarded under the proxy's id.
    Client(ClientRequest),
    /// The `initialize` the proxy replays to a new child; its answer means ready.
    ReplayedInitialize,
    /// Session state the proxy replays (`logging/setLevel`, `resources/subscribe`): the
    /// answer is not the client's business.
    Replay,
    /// A list the front reads for itself, to serve while the server restarts and to
    /// tell the client when it changed.
    Learn(super::learned::Reading),
    /// A client's `subscriptions/listen`, open on this server under the front's id
    /// (by the client's id): never answered by a restart, opened again instead.
    Listen(RequestId),
    /// The `server/discover` the front sends a new server of a 2026-07-28 client: its
    /// answer means ready.
    Probe,
}

/// A client request in flight.
#[derive(Debug)]
pub(crate) struct ClientRequest {
    /// The client's id, normalised.
    pub(crate) id: RequestId,
    /// The method.
    pub(crate) method: Method,
    /// The client's message, sent again to the next server when this one never saw it,
    /// or went away before answering a request that has no side effects.
    pub(crate) message: Message,
    /// Whether it has no side effects (`ping`, `*/list`, `initialize`): asked again of
    /// the next server when this one goes away before answering.
    pub(crate) retryable: bool,
    /// The deadline it had when first held (none for the client's first `initialize`,
    /// which waits for a server to answer it).
    pub(crate) deadline: Option<Instant>,
    /// The client cancelled it: whatever happens, it gets no answer from the proxy.
    pub(crate) cancelled: bool,
    /// When the client gets an error if the server has not answered (none for the
    /// client's first `initialize`, bounded by the readiness timeout instead).
    pub(crate) answer_by: Option<Instant>,
}

impl ClientRequest {
    /// The client's id exactly as it wrote it, spliced back into the reply.
    pub(crate) fn raw_id(&self) -> &[u8] {
        self.message.raw_id().unwrap_or(b"null")
    }
}

/// One request in flight to a child.
#[derive(Debug)]
pub(crate) struct Entry {
    /// The child it was sent to.
    pub(crate) generation: u64,
    /// Who waits for the answer.
    pub(crate) origin: Origin,
}

/// A map keyed by ids the proxy allocates itself. No peer chooses them, so they need no
/// defence against keys picked to collide (SipHash's, which costs more than the rest of
/// a lookup): one multiplication spreads them.
pub(crate) type IdMap<V> = HashMap<u64, V, BuildHasherDefault<IdHasher>>;

/// The hasher of an [`IdMap`]: Fibonacci hashing of one integer.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.write_u64(u64::from(*byte));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// Requests in flight to children, keyed by the proxy's id (unique across generations).
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    entries: IdMap<Entry>,
    by_client_id: HashMap<RequestId, u64>,
    /// When each client request still awaited is due to be answered, earliest first:
    /// the front asks on every turn of its loop, with many requests in flight.
    due: BTreeSet<(Instant, u64)>,
}

impl InFlight {
    /// Record a request sent under `proxy_id`.
    pub(crate) fn insert(&mut self, proxy_id: u64, entry: Entry) {
        if let Origin::Client(request) = &entry.origin {
            self.by_client_id.insert(request.id.clone(), proxy_id);
            if let Some(by) = request.answer_by.filter(|_| !request.cancelled) {
                self.due.insert((by, proxy_id));
            }
        }
        if let Some(replaced) = self.entries.insert(proxy_id, entry) {
            self.forget(proxy_id, &replaced);
        }
    }

    /// Take the entry answered by a reply with `proxy_id` from child `generation`. A reply
    /// from another generation than the one the request went to is not an answer.
    pub(crate) fn take(&mut self, proxy_id: u64, generation: u64) -> Option<Entry> {
        let Slot::Occupied(slot) = self.entries.entry(proxy_id) else {
            return None;
        };
        if slot.get().generation != generation {
            return None;
        }
        let entry = slot.remove();
        self.forget(proxy_id, &entry);
        Some(entry)
    }

    /// The proxy id and generation of the client request with this id, if in flight.
    pub(crate) fn find_client(&mut self, id: &RequestId) -> Option<(u64, u64)> {
        let proxy_id = *self.by_client_id.get(id)?;
        let entry = self.entries.get(&proxy_id)?;
        Some((proxy_id, entry.generation))
    }

    /// Mark a client request as cancelled by the client.
    pub(crate) fn cancel(&mut self, proxy_id: u64) {
        if let Some(Entry {
            origin: Origin::Client(request),
            ..
        }) = self.entries.get_mut(&proxy_id)
        {
            request.cancelled = true;
            if let Some(by) = request.answer_by {
                self.due.remove(&(by, proxy_id));
            }
        }
    }

    /// The earliest time a client request in flight is due to be answered.
    pub(crate) fn next_answer_by(&self) -> Option<Instant> {
        self.due.first().map(|(by, _)| *by)
    }

    /// Take the client requests whose answer is overdue at `now`, oldest first.
    pub(crate) fn take_overdue(&mut self, now: Instant) -> Vec<(u64, Entry)> {
        self.take_where(|e| match &e.origin {
            Origin::Client(request) => request.answer_by.is_some_and(|by| by <= now),
            _ => false,
        })
    }

    /// Take every request in flight to `generation`, oldest first.
    pub(crate) fn take_generation(&mut self, generation: u64) -> Vec<(u64, Entry)> {
        self.take_where(|e| e.generation == generation)
    }

    fn take_where(&mut self, take: impl Fn(&Entry) -> bool) -> Vec<(u64, Entry)> {
        let mut ids: Vec<u64> = self
            .entries
            .iter()
            .filter(|(_, e)| take(e))
            .map(|(id, _)| *id)
            .collect();
        ids.sort_unstable();
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(entry) = self.entries.remove(&id) {
                self.forget(id, &entry);
                out.push((id, entry));
            }
        }
        out
    }

    /// How many client requests still awaited from `generation` (cancelled ones are not:
    /// a server need not answer them).
    #[cfg(test)]
    pub(crate) fn client_requests_to(&self, generation: u64) -> usize {
        self.entries
            .values()
            .filter(|e| {
                e.generation == generation
                    && matches!(&e.origin, Origin::Client(request) if !request.cancelled)
            })
            .count()
    }

    /// How many answers a draining server still owes: the client's requests (not
    /// cancelled) and the lists the front reads.
    pub(crate) fn awaited_from(&self, generation: u64) -> usize {
        self.entries
            .values()
            .filter(|e| e.generation == generation)
            .filter(|e| match &e.origin {
                Origin::Client(request) => !request.cancelled,
                Origin::Learn(_) => true,
                _ => false,
            })
            .count()
    }

    /// How many requests are in flight in all.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Drop what the indexes hold of the entry `proxy_id` taken out.
    fn forget(&mut self, proxy_id: u64, entry: &Entry) {
        if let Origin::Client(request) = &entry.origin {
            self.by_client_id.remove(&request.id);
            if let Some(by) = request.answer_by {
                self.due.remove(&(by, proxy_id));
            }
        }
    }
}

/// A request from a child to the client (sampling, roots, elicitation), forwarded under
/// the proxy's own id so that ids of different generations never meet.
#[derive(Debug)]
pub(crate) struct ServerRequest {
    /// The child that asked.
    pub(crate) generation: u64,
    /// The child's id, exactly as it wrote it.
    pub(crate) raw_id: Vec<u8>,
    /// The child's id, normalised (for its `notifications/cancelled`).
    pub(crate) id: RequestId,
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::mcp::jsonrpc::message::Parsed;

    fn msg(text: &str) -> Message {
        match Message::parse(text.as_bytes().to_vec()) {
            Parsed::Message(m) => m,
            other => panic!("{other:?}"),
        }
    }

    fn request(id: u32) -> Message {
        msg(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call"}}"#
        ))
    }

    /// Whether `buffer` takes request `id`, held with no deadline.
    fn takes(buffer: &mut Buffer, id: u32) -> bool {
        buffer
            .push(Held {
                message: request(id),
                deadline: None,
            })
            .is_ok()
    }

    #[test]
    fn buffer_is_bounded_in_count_and_bytes() {
        let mut b = Buffer::new(2, 1000);
        assert!(takes(&mut b, 1));
        assert!(takes(&mut b, 2));
        assert!(!takes(&mut b, 3), "a third message is over the count");
        let mut b = Buffer::new(10, 60);
        assert!(takes(&mut b, 1));
        assert!(!takes(&mut b, 2), "a second message is over the bytes");
        assert_eq!(b.len(), 1);
        assert_eq!(b.take_all().len(), 1);
        assert!(takes(&mut b, 2), "room again once taken out");
    }

    #[test]
    fn cancelled_and_expired_requests_leave_the_buffer() {
        let now = Instant::now();
        let mut b = Buffer::new(10, 10_000);
        for (id, secs) in [(1, 5), (2, 1), (3, 9)] {
            b.push(Held {
                message: request(id),
                deadline: Some(now + Duration::from_secs(secs)),
            })
            .expect("room");
        }
        b.push(Held {
            message: msg(r#"{"jsonrpc":"2.0","method":"notifications/x"}"#),
            deadline: None,
        })
        .expect("room");
        assert_eq!(b.next_deadline(), Some(now + Duration::from_secs(1)));
        assert!(b.remove_request(&RequestId::from_u64(3)).is_some());
        assert!(b.remove_request(&RequestId::from_u64(3)).is_none());
        let expired = b.take_expired(now + Duration::from_secs(5));
        assert_eq!(expired.len(), 2);
        assert_eq!(b.len(), 1);
        assert_eq!(b.next_deadline(), None);
    }

    #[test]
    fn retried_requests_go_back_in_front_in_order() {
        let mut b = Buffer::new(1, 10_000);
        b.push(Held {
            message: request(9),
            deadline: None,
        })
        .expect("room");
        b.push_front_all(vec![
            Held {
                message: request(1),
                deadline: None,
            },
            Held {
                message: request(2),
                deadline: None,
            },
        ]);
        let order: Vec<_> = b
            .take_all()
            .into_iter()
            .map(|h| h.message.raw_id().map(<[u8]>::to_vec))
            .collect();
        assert_eq!(
            order,
            vec![
                Some(b"1".to_vec()),
                Some(b"2".to_vec()),
                Some(b"9".to_vec())
            ]
        );
    }

    fn client_entry(generation: u64, id: u64) -> Entry {
        Entry {
            generation,
            origin: Origin::Client(ClientRequest {
                id: RequestId::from_u64(id),
                method: "tools/call".into(),
                message: request(u32::try_from(id).expect("small id")),
                retryable: false,
                deadline: None,
                cancelled: false,
                answer_by: None,
            }),
        }
    }

    #[test]
    fn overdue_client_requests_are_taken_and_others_kept() {
        let now = Instant::now();
        let mut f = InFlight::default();
        let mut due = client_entry(1, 7);
        if let Origin::Client(request) = &mut due.origin {
            request.answer_by = Some(now);
        }
        f.insert(100, due);
        f.insert(101, client_entry(1, 8));
        assert_eq!(f.next_answer_by(), Some(now));
        assert!(f.take_overdue(now - Duration::from_secs(1)).is_empty());
        let overdue = f.take_overdue(now);
        assert_eq!(overdue.iter().map(|(id, _)| *id).collect::<Vec<_>>(), [100]);
        assert_eq!(f.find_client(&RequestId::from_u64(7)), None);
        assert_eq!(f.next_answer_by(), None);
        assert!(f.take(101, 1).is_some());
    }

    #[test]
    fn the_next_answer_due_is_the_earliest_of_the_requests_still_awaited() {
        let now = Instant::now();
        let mut f = InFlight::default();
        for (proxy_id, id, after) in [(100, 7, 30), (101, 8, 10), (102, 9, 20), (103, 10, 40)] {
            let mut entry = client_entry(1, id);
            if let Origin::Client(request) = &mut entry.origin {
                request.answer_by = Some(now + Duration::from_secs(after));
            }
            f.insert(proxy_id, entry);
        }
        f.insert(104, client_entry(1, 11));
        let next = |f: &InFlight| f.next_answer_by().map(|by| (by - now).as_secs());
        assert_eq!(next(&f), Some(10));
        f.cancel(101);
        assert_eq!(next(&f), Some(20), "a cancelled request is not awaited");
        assert!(f.take(102, 1).is_some());
        assert_eq!(next(&f), Some(30), "an answered one neither");
        f.take_generation(1);
        assert_eq!(next(&f), None);
        assert_eq!(f.len(), 0);
    }

    #[test]
    fn replies_from_another_generation_do_not_match() {
        let mut f = InFlight::default();
        f.insert(100, client_entry(1, 7));
        assert!(f.take(100, 2).is_none());
        assert_eq!(f.find_client(&RequestId::from_u64(7)), Some((100, 1)));
        assert!(f.take(100, 1).is_some());
        assert!(f.take(100, 1).is_none());
        assert_eq!(f.find_client(&RequestId::from_u64(7)), None);
    }

    #[test]
    fn a_generation_is_taken_oldest_first() {
        let mut f = InFlight::default();
        f.insert(5, client_entry(1, 1));
        f.insert(3, client_entry(1, 2));
        f.insert(4, client_entry(2, 3));
        f.insert(
            9,
            Entry {
                generation: 1,
                origin: Origin::Replay,
            },
        );
        assert_eq!(f.client_requests_to(1), 2);
        f.cancel(5);
        assert_eq!(f.client_requests_to(1), 1);
        let taken: Vec<u64> = f.take_generation(1).into_iter().map(|(id, _)| id).collect();
        assert_eq!(taken, vec![3, 5, 9]);
        assert_eq!(f.len(), 1);
        assert_eq!(f.client_requests_to(1), 0);
    }
}
