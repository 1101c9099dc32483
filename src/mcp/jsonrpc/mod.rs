//! JSON-RPC as the front reads and writes it: single messages with their original bytes
//! (`message`), newline framing of the client's stream and the client's writer
//! (`framing`), and the ids of messages dropped for their size (`oversized`).

pub(crate) mod framing;
pub(crate) mod message;
pub(crate) mod oversized;
