//! Child processes for both of debussy's jobs: agent sessions and MCP servers.
//!
//! This module owns starting a program in its own process group, reading its stdout and
//! stderr as framed lines, writing to its stdin, stopping it gracefully and completely,
//! and saying how it ended. It does not decide what output means (`agent/`, `mcp/`) or
//! whether to start it again ([`crate::restart`]).
//!
//! # Theory of operation
//!
//! [`ProcessCommand::spawn`] starts the program below a **reaper** of its own
//! (`reaper/`): debussy's own executable, re-executed as `debussy __reaper`, which
//! makes itself a child subreaper, starts the program as the leader of a new process
//! group with the pipes debussy gave it, and answers on a socket. Then three tasks run
//! in debussy:
//!
//! - two **readers**, one per output pipe, that frame bytes into lines (capped at
//!   [`ProcessCommand::max_line_bytes`]) and send them as [`ProcessEvent`]s on one
//!   bounded channel, one batch per read ([`Events::recv`] hands them out one by one).
//!   Both pipes are always drained concurrently; a full channel holds a reader back, and
//!   with it the child (flow control, never a deadlock between the two pipes). If the
//!   receiver is dropped, readers keep draining and discard. With
//!   [`ProcessCommand::read_stdout_inline`] the stdout reader is no task: the owner's
//!   polling of [`Events::recv`] drives it (`inline`), which spares a proxy a task
//!   hand-off per line; the exit is still sent only after that reader has ended.
//! - one **supervisor** that owns the reaper's socket, and `select!`s over its reports
//!   (the program's exit), requests from handles (stop, kill, signal) and the stop
//!   ladder's timer. It is the only code that walks the [`StopLadder`]; it publishes the
//!   [`ProcessState`] on a watch channel, so any number of [`ChildControl`] clones can
//!   wait for the exit without owning the child.
//!
//! What the caller holds:
//!
//! - [`Child`]: the owner. Dropping it has the whole tree killed at once (SIGKILL) —
//!   whatever controls or writers still exist. It hands out the [`Events`] receiver, a
//!   [`StdinWriter`] and [`ChildControl`]s.
//! - [`ChildControl`]: a cheap, clonable remote: `stop`, `kill`, `signal`, `wait`,
//!   `state`, and the child's [`ProcessIdentity`]. It does not keep the child alive.
//! - [`StdinWriter`]: the stdin pipe, shared with the stop ladder (whose MCP variant
//!   closes it first).
//!
//! The reaper is the program's parent, so it reaps it and signals its group only while
//! the program is unreaped: a signal debussy asks for can never reach a process that
//! got the number later. When the program exits, the reaper reports the status (so
//! `wait`/`stop` return at once) and gives whatever is still below it the leak grace;
//! then it kills all of it — in the program's group or not — and reports it. A pipe that
//! still stays open after that (its descriptor was passed out of the tree) is abandoned.
//! A [`ProcessEvent::Leaked`] reports either, and [`ProcessEvent::Exited`] is always the
//! last event.
//!
//! Stopping (see [`stop`](StopLadder)): `stop()` walks the ladder — e.g. SIGINT, SIGTERM,
//! SIGKILL for agents; close stdin, SIGTERM, SIGKILL for MCP servers — each step
//! preceded by SIGCONT so a frozen child can die, each followed by its grace period
//! while the exit is awaited. `stop()` is idempotent: later calls wait for the same
//! stop. `kill()` cuts any ladder short with SIGKILL (the second Ctrl-C).
//!
//! No orphans, however debussy ends: everything below a program is below its reaper,
//! since a subreaper inherits the orphans of its descendants (a `setsid` tool command, a
//! double-forked daemon). The reaper kills all of it when the program ends, when the
//! [`Child`] is dropped, when the supervising task is dropped (runtime shutdown, a panic
//! unwinding: its socket closes), on [`kill_all_groups`], and when debussy dies without
//! running any code (SIGKILL, an abort): the kernel closes debussy's end of the socket,
//! which only debussy ever held, and the reaper reads end of file.
//!
//! A binary that starts children calls [`reaper::run_if_reaper`] first in `main`.

mod child;
mod command;
mod error;
mod event;
mod exit;
mod group;
mod identity;
mod inline;
mod leftover;
mod lines;
mod marked;
mod output;
mod own_exe;
pub(crate) mod procfs;
pub mod reaper;
mod role;
mod stdin;
mod stop;
mod supervise;

pub use child::{Child, ChildControl, Events, ProcessState};
pub(crate) use command::shell_quote;
pub use command::{ProcessCommand, StdinMode};
pub use error::ProcessError;
pub use event::{ExitReport, Leak, ProcessEvent, StopReport, Stream};
pub use exit::{ExitStatus, signal_name};
pub use group::{busy, kill_all_groups, live_groups};
pub use identity::{ProcessIdentity, start_time};
pub use leftover::{Leftover, RecordedGroup, kill_leftover_group};
pub use lines::{DEFAULT_MAX_LINE, LINE_EXCERPT_BYTES};
pub(crate) use lines::{Excerpt, Frame as LineFrame, LineFramer};
pub use marked::stop_marked;
pub use nix::sys::signal::Signal;
pub use output::{Finish, OUTPUT_LIMIT, Output, OutputSink};
pub use own_exe::own_executable;
pub use role::{Busy, Role};
pub use stdin::StdinWriter;
pub use stop::{StopAction, StopLadder, StopStep};

#[cfg(test)]
mod group_tests;
#[cfg(test)]
mod tests;
