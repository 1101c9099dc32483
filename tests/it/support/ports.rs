//! TCP ports for the daemons the tests start, reserved for as long as a test needs one.
//!
//! A bridged daemon binds its port itself, again after every restart, so a test cannot
//! hand it a listener it holds. Asking the kernel for a free port and closing it races:
//! another test, or any outgoing connection's source port, can take the number before the
//! daemon binds it. A [`Port`] comes from below the kernel's ephemeral range, which the
//! kernel never picks for a connection's source or for `bind(0)`, and is held by a lock
//! file for its whole life, so no other test process is given it meanwhile. The lock
//! files stay when their holders are gone (removing one would race with another process
//! opening it): one small file per port ever used, in `$TMPDIR/debussy-test-ports/`.

use std::fs::{File, TryLockError};
use std::net::TcpListener;
use std::path::PathBuf;

/// Where the tests of every process on this machine record the ports they hold.
fn lock_dir() -> PathBuf {
    std::env::temp_dir().join("debussy-test-ports")
}

/// The ports a reservation may hand out: below the ephemeral range when there is room,
/// else above it.
fn candidates() -> std::ops::Range<u16> {
    let (low, high) = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|text| {
            let mut bounds = text.split_whitespace().map(str::parse::<u16>);
            Some((bounds.next()?.ok()?, bounds.next()?.ok()?))
        })
        .unwrap_or((32768, 60999));
    if low > 21_000 {
        20_000..low
    } else {
        high.saturating_add(1)..u16::MAX
    }
}

/// A port no other test holds and nothing listens on, kept until dropped.
#[derive(Debug)]
pub struct Port {
    number: u16,
    _held: File,
}

impl Port {
    /// Reserve a port; panics when every candidate is taken.
    pub fn reserve() -> Port {
        let dir = lock_dir();
        std::fs::create_dir_all(&dir).expect("the port lock directory");
        let range = candidates();
        let span = u32::from(range.end - range.start);
        let start = std::process::id() % span;
        for offset in 0..span {
            let number = range.start + u16::try_from((start + offset) % span).expect("in range");
            let file = File::create(dir.join(format!("{number}.lock"))).expect("a port lock");
            match file.try_lock() {
                Ok(()) => {}
                Err(TryLockError::WouldBlock) => continue,
                Err(TryLockError::Error(err)) => panic!("lock port {number}: {err}"),
            }
            if TcpListener::bind(("127.0.0.1", number)).is_ok() {
                return Port {
                    number,
                    _held: file,
                };
            }
        }
        panic!("no free port in {range:?}")
    }

    /// The port's number.
    pub fn number(&self) -> u16 {
        self.number
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_reservations_never_share_a_port_and_a_dropped_one_is_free_again() {
        let first = Port::reserve();
        let second = Port::reserve();
        assert_ne!(first.number(), second.number());
        let range = candidates();
        assert!(
            range.contains(&first.number()),
            "{first:?} outside {range:?}"
        );
        let number = first.number();
        drop(first);
        let file = File::create(lock_dir().join(format!("{number}.lock"))).expect("lock");
        assert!(
            file.try_lock().is_ok(),
            "port {number} is free once dropped"
        );
    }
}
