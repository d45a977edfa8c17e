//! The inbound half of a connection: one large buffer, filled by whole-socket reads and
//! parsed in place. Frames are handed out borrowed from the buffer, never copied.

use std::io;
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::time::Instant;

use super::Flow;
use crate::error::{BenchError, Result};
use crate::limits::{READ_BUFFER_CAPACITY_BYTES, READ_FRAME_MAX_BYTES};
use crate::protocol::{parse, Parsed, ServerOp};

/// How long a poll may wait for the first complete frame.
#[derive(Debug, Clone, Copy)]
pub enum Wait {
    /// Only what the kernel already holds.
    NoWait,
    /// Until at least one frame arrived or the instant passed.
    Until(Instant),
}

pub struct InboundReader {
    stream: TcpStream,
    buffer: Vec<u8>,
    start: usize,
    end: usize,
    /// Size of the incomplete frame at `start`, when its header said so.
    frame_size_needed: Option<usize>,
}

impl InboundReader {
    pub fn new(stream: TcpStream) -> Self {
        Self { stream, buffer: vec![0; READ_BUFFER_CAPACITY_BYTES], start: 0, end: 0, frame_size_needed: None }
    }

    /// Hands every buffered frame to `on_op`; if none was buffered, reads per `wait` first.
    /// Returns once at least one frame was handled, `on_op` said stop, or `wait` ran out.
    pub fn poll(&mut self, wait: Wait, mut on_op: impl FnMut(ServerOp<'_>) -> Result<Flow>) -> Result<()> {
        loop {
            let (frames, stopped) = self.drain(&mut on_op)?;
            if stopped || frames > 0 {
                return Ok(());
            }
            if !self.fill(wait)? {
                return Ok(());
            }
        }
    }

    fn drain(&mut self, on_op: &mut impl FnMut(ServerOp<'_>) -> Result<Flow>) -> Result<(usize, bool)> {
        let mut frames = 0;
        while self.start < self.end {
            match parse(&self.buffer[self.start..self.end])? {
                Parsed::Frame { op, consumed } => {
                    let flow = on_op(op)?;
                    self.start += consumed;
                    frames += 1;
                    if flow == Flow::Stop {
                        return Ok((frames, true));
                    }
                }
                Parsed::Incomplete { needed } => {
                    self.frame_size_needed = needed;
                    break;
                }
            }
        }
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        Ok((frames, false))
    }

    /// Reads once per `wait`. Returns false when nothing could be read in time.
    fn fill(&mut self, wait: Wait) -> Result<bool> {
        self.make_room()?;
        let free = &mut self.buffer[self.end..];
        let read = match wait {
            Wait::NoWait => match receive_now(&self.stream, free)? {
                Some(read) => read,
                None => return Ok(false),
            },
            Wait::Until(deadline) => {
                if !readable_before(&self.stream, deadline)? {
                    return Ok(false);
                }
                match receive_now(&self.stream, free)? {
                    Some(read) => read,
                    None => return Ok(false),
                }
            }
        };
        if read == 0 {
            return Err(BenchError::ConnectionClosed);
        }
        self.end += read;
        Ok(true)
    }

    /// Ensures free space after `end`: compacts, or grows for a frame larger than the buffer.
    fn make_room(&mut self) -> Result<()> {
        if self.end < self.buffer.len() {
            return Ok(());
        }
        if self.start > 0 {
            self.buffer.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            return Ok(());
        }
        let wanted = self.frame_size_needed.unwrap_or(0).max(self.buffer.len() * 2);
        if wanted > READ_FRAME_MAX_BYTES {
            return Err(BenchError::Io(io::Error::other(format!(
                "inbound frame of {wanted} bytes exceeds {READ_FRAME_MAX_BYTES}"
            ))));
        }
        self.buffer.resize(wanted, 0);
        Ok(())
    }
}

/// One non-blocking `recv`: `None` when nothing is there.
fn receive_now(stream: &TcpStream, free: &mut [u8]) -> io::Result<Option<usize>> {
    loop {
        // SAFETY: `free` is a valid, exclusively borrowed buffer of `free.len()` bytes and the
        // descriptor belongs to `stream`, which outlives the call.
        let read = unsafe { libc::recv(stream.as_raw_fd(), free.as_mut_ptr().cast(), free.len(), libc::MSG_DONTWAIT) };
        if read >= 0 {
            return Ok(Some(read as usize));
        }
        let error = io::Error::last_os_error();
        match error.kind() {
            io::ErrorKind::WouldBlock => return Ok(None),
            io::ErrorKind::Interrupted => continue,
            _ => return Err(error),
        }
    }
}

/// Waits with poll(2) until the socket is readable or `deadline` passed.
fn readable_before(stream: &TcpStream, deadline: Instant) -> io::Result<bool> {
    loop {
        let remaining = deadline.saturating_duration_since(Instant::now());
        let timeout_ms = remaining.as_millis().min(i32::MAX as u128) as i32;
        let mut descriptor = libc::pollfd { fd: stream.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd, count 1.
        let ready = unsafe { libc::poll(&mut descriptor, 1, timeout_ms) };
        if ready >= 0 {
            return Ok(ready > 0);
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};
    use std::time::{Duration, Instant};

    use super::*;

    const PATIENCE: Duration = Duration::from_secs(5);

    fn socket_pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let client = TcpStream::connect(listener.local_addr().expect("address")).expect("connect");
        let (server, _) = listener.accept().expect("accept");
        (server, client)
    }

    /// Collects the payload sizes of every MSG until `expected` arrived.
    fn read_payload_sizes(reader: &mut InboundReader, expected: usize) -> Vec<usize> {
        let mut sizes = Vec::new();
        let deadline = Instant::now() + PATIENCE;
        while sizes.len() < expected && Instant::now() < deadline {
            reader
                .poll(Wait::Until(deadline), |op| {
                    if let ServerOp::Msg(message) = op {
                        sizes.push(message.payload.len());
                    }
                    Ok(Flow::Continue)
                })
                .expect("poll");
        }
        sizes
    }

    #[test]
    fn frames_split_across_writes_are_reassembled() {
        let (mut server, client) = socket_pair();
        let mut reader = InboundReader::new(client);
        let frames = b"MSG a 1 3\r\nabc\r\nMSG b 1 5\r\nhello\r\n";
        for chunk in frames.chunks(4) {
            server.write_all(chunk).expect("write");
            server.flush().expect("flush");
            std::thread::sleep(Duration::from_millis(2));
        }
        assert_eq!(read_payload_sizes(&mut reader, 2), vec![3, 5]);
    }

    #[test]
    fn a_frame_larger_than_the_buffer_grows_it() {
        let (mut server, client) = socket_pair();
        let mut reader = InboundReader::new(client);
        let large = READ_BUFFER_CAPACITY_BYTES * 2 + 17;
        let writer = std::thread::spawn(move || {
            let mut bytes = format!("MSG big 1 {large}\r\n").into_bytes();
            bytes.resize(bytes.len() + large, b'x');
            bytes.extend_from_slice(b"\r\nMSG small 1 1\r\ny\r\n");
            server.write_all(&bytes).expect("write");
        });
        assert_eq!(read_payload_sizes(&mut reader, 2), vec![large, 1]);
        writer.join().expect("writer");
    }

    #[test]
    fn a_closed_connection_is_an_error() {
        let (server, client) = socket_pair();
        drop(server);
        let mut reader = InboundReader::new(client);
        let result = reader.poll(Wait::Until(Instant::now() + PATIENCE), |_| Ok(Flow::Continue));
        assert!(matches!(result, Err(BenchError::ConnectionClosed)), "{result:?}");
    }
}
