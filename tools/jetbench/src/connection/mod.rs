//! One client connection: TCP, the INFO/CONNECT/PING/PONG handshake, a batching writer and
//! an incremental reader. Blocking sockets, one owner thread: nothing here is shared.

mod reader;
mod writer;

pub use reader::{InboundReader, Wait};
pub use writer::OutboundWriter;

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use crate::error::{BenchError, Result};
use crate::limits::HANDSHAKE_TIMEOUT;
use crate::protocol::{Message, ServerOp};

/// What a message handler tells the reading loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    /// Stop reading after this message (the rest stays buffered for the next poll).
    Stop,
}

/// A connected, handshaken client connection.
pub struct Connection {
    pub reader: InboundReader,
    pub writer: OutboundWriter,
    /// PONGs received so far (flush round trips).
    pub pongs_received: u64,
}

/// The `nats://host:port` a benchmark talks to.
#[derive(Debug, Clone)]
pub struct ServerAddress {
    pub address: String,
}

impl ServerAddress {
    pub fn parse(url: &str) -> Result<Self> {
        let rest = url.strip_prefix("nats://").unwrap_or(url);
        let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
        let rest = rest.trim_end_matches('/');
        if rest.is_empty() {
            return Err(BenchError::InvalidUrl { url: url.into(), reason: "no host" });
        }
        let address = if rest.contains(':') { rest.to_string() } else { format!("{rest}:4222") };
        Ok(Self { address })
    }

    fn resolve(&self) -> Result<SocketAddr> {
        let connect_error = |source| BenchError::Connect { address: self.address.clone(), source };
        self.address
            .to_socket_addrs()
            .map_err(connect_error)?
            .next()
            .ok_or_else(|| BenchError::InvalidUrl { url: self.address.clone(), reason: "resolves to nothing" })
    }
}

impl Connection {
    /// Connects and completes the handshake: read INFO, send CONNECT + PING, await PONG.
    pub fn connect(server: &ServerAddress, name: &str) -> Result<Self> {
        let socket_address = server.resolve()?;
        let connect_error = |source| BenchError::Connect { address: server.address.clone(), source };
        let stream = TcpStream::connect_timeout(&socket_address, HANDSHAKE_TIMEOUT).map_err(connect_error)?;
        stream.set_nodelay(true)?;
        let mut connection = Self {
            reader: InboundReader::new(stream.try_clone()?),
            writer: OutboundWriter::new(stream),
            pongs_received: 0,
        };
        connection.handshake(name)?;
        Ok(connection)
    }

    fn handshake(&mut self, name: &str) -> Result<()> {
        let deadline = Instant::now() + HANDSHAKE_TIMEOUT;
        let mut info_seen = false;
        while !info_seen {
            let wait = Wait::Until(deadline);
            self.reader.poll(wait, |op| {
                info_seen |= matches!(op, ServerOp::Info(_));
                Ok(if info_seen { Flow::Stop } else { Flow::Continue })
            })?;
            if Instant::now() >= deadline && !info_seen {
                return Err(timeout("INFO", HANDSHAKE_TIMEOUT));
            }
        }
        let connect = serde_json::json!({
            "verbose": false, "pedantic": false, "tls_required": false, "name": name,
            "lang": "rust-jetbench", "version": env!("CARGO_PKG_VERSION"), "protocol": 1,
            "echo": true, "headers": true, "no_responders": true,
        });
        self.writer.raw(format!("CONNECT {connect}\r\n").as_bytes());
        self.flush_round_trip(HANDSHAKE_TIMEOUT)
    }

    /// Sends PING and reads until its PONG; every message before it goes to `on_message`.
    /// After this returns the server has processed everything this connection sent.
    pub fn flush_round_trip_with(
        &mut self,
        timeout_after: Duration,
        mut on_message: impl FnMut(&mut OutboundWriter, Message<'_>) -> Result<Flow>,
    ) -> Result<()> {
        self.writer.ping();
        self.writer.flush()?;
        let target = self.pongs_received + 1;
        let deadline = Instant::now() + timeout_after;
        while self.pongs_received < target {
            if Instant::now() >= deadline {
                return Err(timeout("PONG", timeout_after));
            }
            self.poll(Wait::Until(deadline), &mut on_message)?;
        }
        Ok(())
    }

    /// [`Self::flush_round_trip_with`] for connections that expect no messages.
    pub fn flush_round_trip(&mut self, timeout_after: Duration) -> Result<()> {
        self.flush_round_trip_with(timeout_after, |_, _| Ok(Flow::Continue))
    }

    /// Reads what is available (per `wait`), answers PINGs, counts PONGs, turns `-ERR` into an
    /// error and hands every message to `on_message` with the writer for replies. Returns the
    /// number of messages handled. The caller flushes the writer.
    pub fn poll(
        &mut self,
        wait: Wait,
        mut on_message: impl FnMut(&mut OutboundWriter, Message<'_>) -> Result<Flow>,
    ) -> Result<usize> {
        let writer = &mut self.writer;
        let pongs = &mut self.pongs_received;
        let mut messages = 0;
        self.reader.poll(wait, |op| match op {
            ServerOp::Msg(message) => {
                messages += 1;
                on_message(writer, message)
            }
            ServerOp::Ping => {
                writer.pong();
                Ok(Flow::Continue)
            }
            ServerOp::Pong => {
                *pongs += 1;
                Ok(Flow::Stop)
            }
            ServerOp::Err(text) => Err(BenchError::Server(String::from_utf8_lossy(text).into())),
            ServerOp::Info(_) | ServerOp::Ok => Ok(Flow::Continue),
        })?;
        Ok(messages)
    }
}

pub fn timeout(what: &str, after: Duration) -> BenchError {
    BenchError::Timeout { what: what.into(), after }
}

#[cfg(test)]
mod tests {
    use super::ServerAddress;

    #[test]
    fn urls_default_the_port_and_drop_credentials() {
        assert_eq!(ServerAddress::parse("nats://127.0.0.1:4333").unwrap().address, "127.0.0.1:4333");
        assert_eq!(ServerAddress::parse("localhost").unwrap().address, "localhost:4222");
        assert_eq!(ServerAddress::parse("nats://u:p@h:1/").unwrap().address, "h:1");
        assert!(ServerAddress::parse("nats://").is_err());
    }
}
