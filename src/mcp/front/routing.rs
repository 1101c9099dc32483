//! [`Routing`]: where every message in flight belongs. Client requests forwarded under
//! proxy ids, requests held while no server is ready, and the server's own requests to
//! the client, with the one allocator of proxy ids they all draw from.

use super::inflight::{Buffer, IdMap, InFlight, ServerRequest};

/// The proxy's routing tables and id allocators.
#[derive(Debug)]
pub(crate) struct Routing {
    /// Requests sent to the server, by proxy id, waiting for its answer.
    pub(crate) inflight: InFlight,
    /// Client messages held until a server is ready.
    pub(crate) buffer: Buffer,
    /// The server's requests to the client, by the id the client saw.
    pub(crate) server_requests: IdMap<ServerRequest>,
    last_proxy_id: u64,
    last_server_id: u64,
}

impl Routing {
    /// Empty tables holding at most `max_messages` / `max_bytes` while no server is ready.
    pub(crate) fn new(max_messages: usize, max_bytes: usize) -> Self {
        Routing {
            inflight: InFlight::default(),
            buffer: Buffer::new(max_messages, max_bytes),
            server_requests: IdMap::default(),
            last_proxy_id: 0,
            last_server_id: 0,
        }
    }

    /// A fresh id for a request the proxy sends the server: a client's request, a replayed
    /// handshake step, or a request of the proxy's own. Never reused in a supervisor's life,
    /// so an answer from an old server can never be taken for a new request's.
    pub(crate) fn proxy_id(&mut self) -> u64 {
        self.last_proxy_id += 1;
        self.last_proxy_id
    }

    /// A fresh id for a server request passed on to the client.
    pub(crate) fn server_id(&mut self) -> u64 {
        self.last_server_id += 1;
        self.last_server_id
    }
}
