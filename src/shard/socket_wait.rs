//! A blocking wait for one socket, for a shard that has nothing else to serve.
//!
//! glommio wakes a parked shard through io_uring: the socket's poll completes in the
//! kernel, the thread returns from `io_uring_enter`, and the executor cancels and re-arms
//! its preempt timers (more `io_uring_enter` calls) before the woken task runs. Counted on
//! this project's VM with one publish in flight: four `io_uring_enter` calls per turn, and
//! the turn sits between the client's bytes and the code that reads them
//! (perf/latency.md, "2026-12-06"). A thread blocked in `ppoll` on the socket is woken
//! straight into the code that reads it, as a plain blocking server's is.
//! [`wait_readable`] does that for a caller that knows the shard has nothing else to do
//! (`server/connection/read_wait.rs` says when).
//!
//! CONTRACT: while a wait blocks, the reactor does not run. What the shard could miss, and
//! the bounds:
//! - descriptors registered as [`Watched`] (the doorbell other shards ring, the client
//!   listener): their readiness ends the wait at once ([`Woken::Other`]), and the caller
//!   then lets the reactor run before it waits again ([`turn_due`] stays true until the
//!   caller sees a turn);
//! - everything else the reactor serves (timers, completions of I/O the shard submitted):
//!   each wait lasts at most its timeout, and [`turn_due`] asks for a reactor turn once
//!   `IO_YIELD_INTERVAL` has passed since the last one the caller saw ([`note_turn`]).
//!
//! A watched descriptor's readiness is seen even though glommio has an io_uring poll on the
//! same socket: that poll's completion runs as task work on this thread, after `ppoll`
//! returns, so the bytes are still unread when `ppoll` looks.

use std::cell::{Cell, RefCell};
use std::io;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use crate::limits;

/// What ended a [`wait_readable`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Woken {
    /// The socket waited for is readable (or closed, or in error: a read says which).
    Readable,
    /// A watched descriptor is ready, or a signal came: the reactor has work.
    Other,
    /// The timeout passed.
    TimedOut,
}

thread_local! {
    /// The shard's descriptors whose readiness is work for its reactor.
    static WATCHED: RefCell<Vec<RawFd>> = const { RefCell::new(Vec::new()) };
    /// The last reactor turn a caller saw; `None`: one is owed (a watched descriptor woke a wait).
    static LAST_TURN: Cell<Option<Instant>> = const { Cell::new(None) };
    /// The `ppoll` set, kept to spare an allocation per wait.
    static POLL_SET: RefCell<Vec<libc::pollfd>> = const { RefCell::new(Vec::new()) };
}

/// A descriptor of this shard whose readiness ends every wait, while this lives (drop it
/// before the descriptor closes).
pub struct Watched(RawFd);

impl Watched {
    pub fn new(fd: RawFd) -> Watched {
        WATCHED.with(|watched| watched.borrow_mut().push(fd));
        Watched(fd)
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        WATCHED.with(|watched| watched.borrow_mut().retain(|&fd| fd != self.0));
    }
}

/// The reactor ran since the caller last looked (its task was suspended and resumed).
pub fn note_turn() {
    LAST_TURN.with(|last| last.set(Some(Instant::now())));
}

/// Whether the reactor is owed a turn before the next wait: `IO_YIELD_INTERVAL` passed since
/// the last one noted, or a watched descriptor woke a wait since.
pub fn turn_due() -> bool {
    LAST_TURN.with(|last| last.get().is_none_or(|at| at.elapsed() >= limits::IO_YIELD_INTERVAL))
}

/// Blocks the thread until `fd` is readable, a watched descriptor or one of `also` is
/// ready, or `timeout` passes. A ready watched descriptor (or one of `also`) makes
/// [`turn_due`] true until [`note_turn`].
pub fn wait_readable(fd: RawFd, also: &[RawFd], timeout: Duration) -> io::Result<Woken> {
    POLL_SET.with(|set| {
        let mut set = set.borrow_mut();
        set.clear();
        let readable = |&fd: &RawFd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        set.push(readable(&fd));
        set.extend(also.iter().map(readable));
        WATCHED.with(|watched| set.extend(watched.borrow().iter().map(readable)));
        let timeout = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: `set` is a live array of `set.len()` pollfds; the timespec outlives the call.
        let ready = unsafe { libc::ppoll(set.as_mut_ptr(), set.len() as libc::nfds_t, &timeout, std::ptr::null()) };
        let woken = match ready {
            0 => Woken::TimedOut,
            -1 => match io::Error::last_os_error() {
                error if error.kind() == io::ErrorKind::Interrupted => Woken::Other,
                error => return Err(error),
            },
            _ if set[1..].iter().any(|watched| watched.revents != 0) => Woken::Other,
            _ => Woken::Readable,
        };
        if woken == Woken::Other {
            LAST_TURN.with(|last| last.set(None));
        }
        Ok(woken)
    })
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    use super::*;

    #[test]
    fn a_wait_ends_with_what_became_ready() {
        let (mut client, server) = UnixStream::pair().unwrap();
        let (mut ringer, doorbell) = UnixStream::pair().unwrap();
        let watched = Watched::new(doorbell.as_raw_fd());
        let short = Duration::from_millis(1);
        assert_eq!(wait_readable(server.as_raw_fd(), &[], short).unwrap(), Woken::TimedOut);
        std::thread::sleep(limits::IO_YIELD_INTERVAL);
        assert!(turn_due(), "no turn noted for an interval");

        note_turn();
        client.write_all(b"PUB").unwrap();
        assert_eq!(wait_readable(server.as_raw_fd(), &[], short).unwrap(), Woken::Readable);
        assert!(!turn_due());

        ringer.write_all(&[1]).unwrap();
        assert_eq!(wait_readable(server.as_raw_fd(), &[], short).unwrap(), Woken::Other);
        assert!(turn_due(), "a watched descriptor's readiness owes the reactor a turn");
        note_turn();
        assert!(!turn_due());

        drop(watched);
        assert_eq!(wait_readable(server.as_raw_fd(), &[], short).unwrap(), Woken::Readable);
        assert_eq!(wait_readable(server.as_raw_fd(), &[doorbell.as_raw_fd()], short).unwrap(), Woken::Other);
    }
}
