//! `debussy run` end to end with the real Claude Code CLI against the scripted model
//! server, in temporary git repositories: the main flows (`flows`), the handoff and the
//! compaction guard (`handoff`), the run's limits (`guards`), the agent's failures
//! (`failures`) and usage limits (`usage_limits`), the window from the first request
//! (`window`), stops at a safe point (`safe_stop`), escapes from the agent's process group
//! (`escape`), phases side by side (`parallel`) and debussy's binary replaced on disk
//! mid-run (`replaced`); [`kit`] holds what they share.

mod escape;
mod failures;
mod flows;
mod guards;
mod handoff;
mod kit;
mod parallel;
mod replaced;
mod safe_stop;
mod usage_limits;
mod window;
