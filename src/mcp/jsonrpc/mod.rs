//! JSON-RPC as the front reads and writes it: single messages with their original bytes
//! (`message`) and their ids (`id`), newline framing of the client's stream (`framing`), the client's
//! write-through writer (`line_writer`), the ids of messages dropped for their size
//! (`oversized`), and the quick reading of a message's members (`scan`).

pub(crate) mod framing;
mod id;
pub(crate) mod line_writer;
pub(crate) mod message;
pub(crate) mod oversized;
mod scan;
