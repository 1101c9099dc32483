//! A process outside debussy that kills a child's process group if debussy dies first.
//!
//! Kill-on-drop and the [`super::GroupGuard`] cover every way debussy ends except the ones
//! that run no code: SIGKILL, an abort, the OOM killer. For those, each group gets a
//! watchdog: a tiny `/bin/sh` in a process group of its own (so the terminal's Ctrl-C does
//! not reach it) blocked reading a pipe whose only writer is debussy. When debussy cleans a
//! group up itself it writes one line first ("disarm"), so the watchdog exits without
//! signalling anything; when debussy dies, the kernel closes the pipe, the read sees end of
//! file with no line, and the watchdog sends SIGKILL to the group — grandchildren included,
//! which `PR_SET_PDEATHSIG` on the leader alone would miss.
//!
//! The pipe is close-on-exec in debussy, so no child inherits the writing end and keeps a
//! watchdog waiting after debussy is gone. The one window left is between the child's
//! spawn and its watchdog's, a few hundred microseconds.

use std::io::Write as _;
use std::process::{Child, ChildStdin, Command, Stdio};

use std::os::unix::process::CommandExt as _;

/// The watchdog's program: kill the group named by `$1` unless a line arrives first.
const SCRIPT: &str = r#"read -r line; [ -n "$line" ] || kill -s KILL -- "-$1""#;

/// A running watchdog for one process group. Dropping it disarms it.
#[derive(Debug)]
pub(crate) struct Watchdog {
    child: Option<Child>,
    pipe: Option<ChildStdin>,
}

impl Watchdog {
    /// Start a watchdog for the group `pgid`. `None` (logged) when `/bin/sh` cannot be
    /// started: the child still runs, guarded by everything but the watchdog.
    pub(crate) fn start(pgid: i32) -> Option<Watchdog> {
        let spawned = Command::new("/bin/sh")
            .args(["-c", SCRIPT, "debussy-watchdog", &pgid.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn();
        match spawned {
            Ok(mut child) => {
                let pipe = child.stdin.take();
                Some(Watchdog {
                    child: Some(child),
                    pipe,
                })
            }
            Err(err) => {
                tracing::warn!(pgid, error = %err, "could not start the watchdog that kills this process group if debussy dies");
                None
            }
        }
    }

    /// The watchdog's pid, for tests.
    #[cfg(test)]
    pub(crate) fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Tell the watchdog debussy is alive and the group is taken care of, then reap it on
    /// a short-lived thread (it exits at once). Idempotent.
    pub(crate) fn disarm(&mut self) {
        if let Some(mut pipe) = self.pipe.take() {
            // A pipe write of a few bytes never blocks; a failure means the watchdog is
            // gone already, which is what disarming wants.
            let _ = pipe.write_all(b"disarm\n");
        }
        if let Some(mut child) = self.child.take() {
            let reaped = std::thread::Builder::new()
                .name("debussy-watchdog-reaper".into())
                .spawn(move || {
                    let _ = child.wait();
                });
            if let Err(err) = reaped {
                tracing::debug!(error = %err, "could not start a thread to reap the watchdog");
            }
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.disarm();
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use nix::sys::signal::kill;
    use nix::unistd::Pid;

    use super::*;

    fn alive(pid: u32) -> bool {
        let path = format!("/proc/{pid}/stat");
        std::fs::read_to_string(path).is_ok_and(|stat| {
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .is_some_and(|state| state != "Z" && state != "X")
        })
    }

    fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !done() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn sleeper() -> Child {
        Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .expect("sleep")
    }

    #[test]
    fn a_disarmed_watchdog_leaves_the_group_alone_and_exits() {
        let mut target = sleeper();
        let pgid = i32::try_from(target.id()).expect("pid");
        let mut watchdog = Watchdog::start(pgid).expect("watchdog");
        let watchdog_pid = watchdog.pid().expect("pid");
        watchdog.disarm();
        wait_until("the watchdog to exit", || !alive(watchdog_pid));
        assert!(alive(target.id()), "a disarmed watchdog killed its group");
        target.kill().expect("kill");
        target.wait().expect("reap");
    }

    #[test]
    fn a_watchdog_whose_writer_vanishes_kills_the_group() {
        let mut target = sleeper();
        let pgid = i32::try_from(target.id()).expect("pid");
        let mut watchdog = Watchdog::start(pgid).expect("watchdog");
        // What debussy dying does: the pipe closes without the disarming line.
        drop(watchdog.pipe.take());
        let mut child = watchdog.child.take().expect("child");
        child.wait().expect("the watchdog exits");
        wait_until("the group to die", || {
            !alive(target.id()) || kill(Pid::from_raw(pgid), None).is_err()
        });
        target.wait().expect("reap");
    }
}
