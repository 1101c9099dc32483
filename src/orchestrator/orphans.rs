//! Before an interrupted run is resumed, make sure the agent its dead owner left behind
//! is not still working the tree: find its recorded process group and kill it.
//!
//! This is a minimal private check (`killpg(pgid, 0)` then SIGKILL); the process layer's
//! group helper should replace it once both live on the same branch.

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// What became of a recorded agent group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Leftover {
    /// No process of the group lives.
    Gone,
    /// The group lived and was killed.
    Killed,
    /// The group lives but could not be signalled (another user's, say).
    Unkillable(Errno),
}

/// Kill every process of group `pgid` if any lives. Never signals group 0 or 1 (this
/// process's own group, or init's), which a corrupt record could name.
pub(crate) fn kill_leftover_group(pgid: i32) -> Leftover {
    if pgid <= 1 || Pid::from_raw(pgid) == nix::unistd::getpgrp() {
        return Leftover::Gone;
    }
    let group = Pid::from_raw(pgid);
    match killpg(group, None) {
        Err(Errno::ESRCH) => Leftover::Gone,
        Err(errno) => Leftover::Unkillable(errno),
        Ok(()) => match killpg(group, Signal::SIGKILL) {
            Ok(()) | Err(Errno::ESRCH) => Leftover::Killed,
            Err(errno) => Leftover::Unkillable(errno),
        },
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::CommandExt;
    use std::process::Command;

    use super::*;

    #[test]
    fn a_live_group_is_killed_and_a_dead_one_is_gone() {
        let mut child = Command::new("sleep")
            .arg("60")
            .process_group(0)
            .spawn()
            .expect("spawn sleep");
        let pgid = i32::try_from(child.id()).expect("pid");
        assert_eq!(kill_leftover_group(pgid), Leftover::Killed);
        let status = child.wait().expect("wait");
        assert!(!status.success(), "sleep was killed");
        assert_eq!(kill_leftover_group(pgid), Leftover::Gone);
    }
}
