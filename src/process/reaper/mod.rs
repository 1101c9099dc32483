//! The reaper: a small process of debussy's own between debussy and each program it
//! runs, which owns everything the program starts and kills all of it when the program
//! ends or debussy dies.
//!
//! A process group is not enough for the rule that everything below debussy dies with
//! debussy: Claude Code runs each Bash tool command in a session of its own (`setsid`),
//! and agents start helpers and daemons that leave the group the same way. Such a
//! process survives a kill of the group and, once its parent is gone, is handed to init,
//! where nothing can tell it was ever the agent's.
//!
//! So each child is started as `debussy __reaper …` (the same executable, re-executed;
//! see [`run_if_reaper`]), which makes itself a child subreaper (`PR_SET_CHILD_SUBREAPER`)
//! before it starts the program. Every process the program starts, however it detaches,
//! is then handed to the reaper instead of init when its parent dies, and so stays
//! findable below it in `/proc`. The reaper holds one end of a socket whose other end
//! only debussy holds (close-on-exec, never inherited): when debussy dies — SIGKILL, an
//! abort, the OOM killer — the kernel closes debussy's end, the reaper reads end of file
//! and kills everything below it. When the program exits, the reaper gives what is left
//! the leak grace, then kills it and says what it was.
//!
//! A cgroup would contain the tree just as well, but a writable cgroup v2 is not there on
//! many machines debussy runs on (containers, hybrid hierarchies, no systemd delegation);
//! a subreaper needs only Linux 3.4 and `/proc`. See `docs/design/architecture.md`.

mod link;
mod program;
mod protocol;
mod serve;
mod tree;

pub(crate) use link::{LaunchError, Launched, Reports, Requests, launch};
pub(crate) use program::program;
pub use program::{run_if_reaper, set_program};
pub(crate) use protocol::{Report, Request, arguments};
