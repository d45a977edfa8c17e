//! When a client's reader waits for its next request in a blocking call
//! (`shard::socket_wait`) instead of parking in glommio's reactor.
//!
//! A producer with one publish in flight sends its next publish 30–80 µs after its ack.
//! Parked in the reactor, the shard then pays a reactor turn between the client's bytes and
//! the code that reads them; blocked in `ppoll` on the socket, it does not. Measured
//! (perf/latency.md, "2026-12-06: the next request read by a blocking wait"): one-in-flight
//! publishes 1.10× at the median of 8 alternating pairs (faster in all 8), 4 500 → 5 640
//! per s in `perf/latency`'s medians, with less CPU per publish (117 → 89 µs).
//!
//! CONTRACT: the wait is taken only when nothing else on the shard can be kept waiting
//! much longer than `IO_YIELD_INTERVAL` (the longest the shard's long loops keep the
//! reactor waiting too, `shard::Yielder`):
//! - the connection is plain TCP and past CONNECT, and its shard serves at most
//!   `READ_WAIT_CONNECTIONS_MAX` others: their sockets are watched with its own, so their
//!   requests end the wait at once, as a connection arriving (the listener) and another
//!   shard's envelope (the doorbell) do;
//! - the shard's last durable write was a blocking one and the shard handled nothing
//!   since (`store/blocking_write.rs`, `idle_after_blocking`), and a reply went out since the
//!   last read and is written: the client's publish is acked and the shard has nothing
//!   else to do;
//! - the reactor had a turn within `IO_YIELD_INTERVAL` (for timers, the monitoring
//!   listener, and I/O the shard submitted: a zero-ahead write waits for a turn to reach
//!   the kernel);
//! - the shard holds no leaf link (their sockets are not polled) and is not stopping;
//! - each wait lasts at most `READ_WAIT_MAX` (5 ms, longer than the kernel's tick, so that
//!   the wait's timeout does not program the timer hardware: limits.rs); a client slower
//!   than that gets the reactor's read. So a client that stops sending can keep timers
//!   and the monitoring listener waiting up to `IO_YIELD_INTERVAL` + `READ_WAIT_MAX`; one
//!   that keeps sending, `IO_YIELD_INTERVAL` and its own pause.
//!
//! `JETCORE_READ_WAIT=off` turns it off (measurements).

use std::future::Future;
use std::os::fd::RawFd;
use std::sync::OnceLock;
use std::task::Poll;

use super::Client;
use crate::limits;
use crate::server::shard_ops::Phase;
use crate::shard::socket_wait::{self, Woken};

/// What a [`Client::read_waiting`] got.
pub(super) enum Waited {
    /// Bytes read into the buffer.
    Read(usize),
    /// The client closed the connection.
    Closed,
    /// Not taken, or the client did not send in time: read through the reactor.
    Declined,
}

/// Cooperative yields the reader grants the shard's woken tasks (the flusher that writes
/// the publish, the writer that sends its ack) before it looks whether all is done.
const YIELDS_FOR_THE_ACK: usize = 6;

fn enabled() -> bool {
    static ENABLED: OnceLock<bool> = OnceLock::new();
    *ENABLED.get_or_init(|| std::env::var("JETCORE_READ_WAIT").as_deref() != Ok("off"))
}

impl Client {
    /// Reads the client's next bytes into `buffer` with a blocking wait, when the shard
    /// has nothing else to serve (see the module's contract). `fd`: the plain socket
    /// (`None` for TLS).
    pub(super) async fn read_waiting(&mut self, fd: Option<RawFd>, buffer: &mut [u8]) -> Waited {
        let Some(fd) = fd else { return Waited::Declined };
        // Core traffic (no durable write on the shard) declines here, before any clock
        // read or yield.
        if !crate::jetstream::service::last_write_blocked() || !enabled() || !self.connected || buffer.is_empty() {
            return Waited::Declined;
        }
        // Leaf links (shard 0's) are not among the sockets polled; a stopping shard's
        // readers go through the reactor, where the stop reaches them.
        if self.node.leaf.get().is_some() || self.node.ops.phase() != Phase::Serving || socket_wait::turn_due() {
            return Waited::Declined;
        }
        if !self.node.ops.sockets_except(self.id, limits::READ_WAIT_CONNECTIONS_MAX, &mut self.other_sockets) {
            return Waited::Declined;
        }
        let mut yields = 0;
        while !self.answered_and_alone() {
            if yields == YIELDS_FOR_THE_ACK {
                return Waited::Declined;
            }
            futures_lite::future::yield_now().await;
            yields += 1;
        }
        let waited = match receive(fd, buffer) {
            Some(waited) => waited,
            None => match socket_wait::wait_readable(fd, &self.other_sockets, limits::READ_WAIT_MAX) {
                Ok(Woken::Readable) => receive(fd, buffer).unwrap_or(Waited::Declined),
                Ok(Woken::Other | Woken::TimedOut) | Err(_) => Waited::Declined,
            },
        };
        if let Waited::Read(_) = waited {
            let stats = &self.node.ops.stats;
            stats.blocking_reads.set(stats.blocking_reads.get() + 1);
        }
        waited
    }

    /// Whether a reply went out since the last read and is written, and the shard's last
    /// durable write blocked with nothing handled since: the client's publish is acked.
    fn answered_and_alone(&self) -> bool {
        self.outbound.chunks_taken() > self.chunks_at_read
            && self.outbound.pending_bytes() == 0
            && crate::jetstream::service::idle_after_blocking()
    }
}

/// A non-blocking read; `None`: nothing to read yet (or an error the reactor's read will
/// report).
fn receive(fd: RawFd, buffer: &mut [u8]) -> Option<Waited> {
    // SAFETY: `fd` is the connection's open socket; `buffer` is live and writable for its length.
    let read = unsafe { libc::recv(fd, buffer.as_mut_ptr().cast(), buffer.len(), libc::MSG_DONTWAIT) };
    match read {
        0 => Some(Waited::Closed),
        read if read > 0 => Some(Waited::Read(read as usize)),
        _ => None,
    }
}

/// Runs the reactor's read, noting a reactor turn when it had to wait (its task was
/// suspended and woken by a completion), so [`socket_wait::turn_due`] knows.
pub(super) async fn noting_turns<T>(read: impl Future<Output = T>) -> T {
    let mut read = std::pin::pin!(read);
    let mut suspended = false;
    let output = std::future::poll_fn(|cx| match read.as_mut().poll(cx) {
        Poll::Pending => {
            suspended = true;
            Poll::Pending
        }
        ready => ready,
    })
    .await;
    if suspended {
        socket_wait::note_turn();
    }
    output
}
