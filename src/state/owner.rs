//! Which process owns a run, and whether it still lives: the owner is recorded as a
//! [`ProcessIdentity`] (pid and start time), so a pid the kernel gave to another process
//! after a crash is never taken for a live run.

pub use crate::process::ProcessIdentity as Owner;
