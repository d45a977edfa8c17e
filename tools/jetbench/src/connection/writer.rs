//! The outbound half of a connection: frames accumulate in one large buffer and go out in
//! few, large writes. Nothing is sent until [`OutboundWriter::flush`] or a threshold flush.

use std::io::Write;
use std::net::TcpStream;

use crate::error::Result;
use crate::limits::{WRITE_BUFFER_CAPACITY_BYTES, WRITE_FLUSH_THRESHOLD_BYTES};
use crate::protocol::{encode_hpub, encode_pub, encode_sub};

pub struct OutboundWriter {
    stream: TcpStream,
    buffer: Vec<u8>,
}

impl OutboundWriter {
    pub fn new(stream: TcpStream) -> Self {
        Self { stream, buffer: Vec::with_capacity(WRITE_BUFFER_CAPACITY_BYTES) }
    }

    /// Buffers a publish.
    pub fn publish(&mut self, subject: &[u8], reply: Option<&[u8]>, payload: &[u8]) {
        encode_pub(&mut self.buffer, subject, reply, payload);
    }

    /// Buffers a publish with a header block.
    pub fn publish_with_header(&mut self, subject: &[u8], reply: Option<&[u8]>, header: &[u8], payload: &[u8]) {
        encode_hpub(&mut self.buffer, subject, reply, header, payload);
    }

    /// Buffers a subscription.
    pub fn subscribe(&mut self, subject: &[u8], queue: Option<&[u8]>, sid: u64) {
        encode_sub(&mut self.buffer, subject, queue, sid);
    }

    /// Buffers pre-encoded protocol bytes (e.g. a whole PUB frame built once).
    pub fn raw(&mut self, frame: &[u8]) {
        self.buffer.extend_from_slice(frame);
    }

    pub fn ping(&mut self) {
        self.buffer.extend_from_slice(b"PING\r\n");
    }

    pub fn pong(&mut self) {
        self.buffer.extend_from_slice(b"PONG\r\n");
    }

    /// Flushes if the buffer has reached the batching threshold. Returns whether it wrote.
    pub fn flush_if_full(&mut self) -> Result<bool> {
        if self.buffer.len() < WRITE_FLUSH_THRESHOLD_BYTES {
            return Ok(false);
        }
        self.flush()?;
        Ok(true)
    }

    /// Writes everything buffered (blocking until the kernel took it).
    pub fn flush(&mut self) -> Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        self.stream.write_all(&self.buffer)?;
        self.buffer.clear();
        Ok(())
    }
}
