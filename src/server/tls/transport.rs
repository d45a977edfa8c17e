//! A connection's two halves, plain or TLS. The reader and the writer tasks own separate
//! descriptors of one socket; with TLS they share the one rustls session (same thread,
//! `Rc<RefCell>`, borrowed only between awaits). Only the writer sends ciphertext, so
//! records leave in the order rustls made them: a record the reader's processing queues
//! (a KeyUpdate answer) goes out with the next outbound batch or the close.

use std::cell::RefCell;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::rc::Rc;
use std::time::Duration;

use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::net::TcpStream;
use rustls::ServerConnection;

use super::handshake::Established;
use crate::limits;

pub enum Reader {
    Plain(TcpStream),
    Tls(Box<TlsReader>),
}

pub struct TlsReader {
    stream: TcpStream,
    session: Rc<RefCell<ServerConnection>>,
    /// Ciphertext read from the socket; `start..end` not yet given to rustls.
    incoming: Vec<u8>,
    start: usize,
    end: usize,
}

pub enum Writer {
    Plain(TcpStream),
    Tls { stream: TcpStream, session: Rc<RefCell<ServerConnection>>, ciphertext: Vec<u8> },
}

/// The two halves over `reader` and `writer` (two descriptors of one socket).
pub fn split(reader: TcpStream, writer: TcpStream, established: Option<Established>) -> (Reader, Writer) {
    match established {
        None => (Reader::Plain(reader), Writer::Plain(writer)),
        Some(Established { session, leftover }) => {
            let session = Rc::new(RefCell::new(session));
            let end = leftover.len();
            let mut incoming = leftover;
            incoming.resize(end.max(limits::READ_BUFFER_BYTES_UNCONNECTED), 0);
            let reader = TlsReader { stream: reader, session: session.clone(), incoming, start: 0, end };
            (Reader::Tls(Box::new(reader)), Writer::Tls { stream: writer, session, ciphertext: Vec::new() })
        }
    }
}

impl Reader {
    /// Reads plaintext; 0 at the end of the stream (with or without the client's
    /// close_notify, which the writer answers when the connection closes).
    pub async fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        match self {
            Reader::Plain(stream) => stream.read(buffer).await,
            Reader::Tls(reader) => reader.read(buffer).await,
        }
    }

    pub fn is_tls(&self) -> bool {
        matches!(self, Reader::Tls(_))
    }

    /// The socket, when reads take plaintext straight from it (not TLS).
    pub fn plain_fd(&self) -> Option<RawFd> {
        (!self.is_tls()).then(|| self.raw_fd())
    }

    /// The socket read from (ciphertext, for TLS).
    pub fn raw_fd(&self) -> RawFd {
        match self {
            Reader::Plain(stream) => stream.as_raw_fd(),
            Reader::Tls(reader) => reader.stream.as_raw_fd(),
        }
    }
}

impl TlsReader {
    async fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        if buffer.is_empty() {
            return Ok(0);
        }
        loop {
            {
                let mut session = self.session.borrow_mut();
                // Plaintext first: the handshake's last read, or the previous one, may
                // have decrypted more than the caller took.
                match session.reader().read(buffer) {
                    Ok(read) => return Ok(read),
                    Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
                    Err(error) if error.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
                    Err(error) => return Err(error),
                }
                if self.start < self.end {
                    self.start += session.read_tls(&mut &self.incoming[self.start..self.end])?;
                    session.process_new_packets().map_err(|error| io::Error::new(io::ErrorKind::InvalidData, error))?;
                    continue;
                }
            }
            self.start = 0;
            self.end = self.stream.read(&mut self.incoming).await?;
            if self.end == self.incoming.len() && self.end < limits::TLS_READ_BUFFER_BYTES_MAX {
                self.incoming.resize(self.end * 2, 0);
            }
            if self.end == 0 {
                // Tell rustls the stream ended, then hand over what is still decrypted.
                let mut session = self.session.borrow_mut();
                let _ = session.read_tls(&mut io::empty());
                let _ = session.process_new_packets();
                return match session.reader().read(buffer) {
                    Ok(read) => Ok(read),
                    Err(_) => Ok(0),
                };
            }
        }
    }
}

impl Writer {
    /// Writes `bytes`; with TLS, the whole batch is encrypted into as few records as
    /// rustls makes, then written at once.
    pub async fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Writer::Plain(stream) => stream.write_all(bytes).await,
            Writer::Tls { stream, session, ciphertext } => {
                ciphertext.clear();
                {
                    let mut session = session.borrow_mut();
                    session.writer().write_all(bytes)?;
                    while session.wants_write() {
                        session.write_tls(ciphertext)?;
                    }
                }
                let written = stream.write_all(ciphertext).await;
                if ciphertext.capacity() > limits::TLS_CIPHERTEXT_KEEP_BYTES_MAX {
                    *ciphertext = Vec::new();
                }
                written
            }
        }
    }

    pub fn set_write_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        match self {
            Writer::Plain(stream) | Writer::Tls { stream, .. } => {
                stream.set_write_timeout(timeout).map_err(io::Error::from)
            }
        }
    }

    /// Before the socket closes: TLS says so with close_notify (also the answer to the
    /// client's own), plus any record the reader left queued.
    pub async fn finish(&mut self) {
        if let Writer::Tls { stream, session, ciphertext } = self {
            ciphertext.clear();
            {
                let mut session = session.borrow_mut();
                session.send_close_notify();
                while session.wants_write() {
                    if session.write_tls(ciphertext).is_err() {
                        break;
                    }
                }
            }
            let _ = stream.write_all(ciphertext).await;
        }
    }

    pub async fn close(self) {
        let (Writer::Plain(mut stream) | Writer::Tls { mut stream, .. }) = self;
        let _ = stream.close().await;
    }
}

impl AsRawFd for Writer {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Writer::Plain(stream) | Writer::Tls { stream, .. } => stream.as_raw_fd(),
        }
    }
}
