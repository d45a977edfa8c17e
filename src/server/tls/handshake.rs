//! The server side of a TLS handshake, driven over the shard's own glommio socket
//! (no tokio): rustls consumes ciphertext we read and hands back ciphertext we write,
//! until the handshake is done. What the client sent after its Finished (CONNECT and PING
//! often ride in the same segment) stays in the session or in the returned leftover, for
//! the connection's reader.

use std::fmt;
use std::io;

use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::net::TcpStream;
use rustls::ServerConnection;

use super::context::TlsContext;
use super::der;
use crate::limits;

/// A finished handshake: the session and ciphertext read past the handshake, not yet
/// given to rustls.
pub struct Established {
    pub session: ServerConnection,
    pub leftover: Vec<u8>,
}

#[derive(Debug)]
pub enum HandshakeError {
    Timeout,
    Io(io::Error),
    /// The peer's bytes are not TLS, or the handshake failed (bad or missing certificate).
    Protocol(rustls::Error),
    /// The client's certificate is not among `pinned_certs`.
    NotPinned,
}

impl fmt::Display for HandshakeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandshakeError::Timeout => write!(f, "TLS handshake timeout"),
            HandshakeError::Io(error) => write!(f, "TLS handshake error: {error}"),
            HandshakeError::Protocol(error) => write!(f, "TLS handshake error: {error}"),
            HandshakeError::NotPinned => write!(f, "TLS handshake error: certificate not pinned"),
        }
    }
}

/// Runs the handshake, closing nothing: the caller closes the socket on an error. Gives
/// up after the configured `timeout`.
pub async fn accept(stream: &mut TcpStream, context: &TlsContext) -> Result<Established, HandshakeError> {
    let timeout = context.settings.timeout;
    let finished = futures_lite::future::or(async { Some(run(stream, context).await) }, async {
        glommio::timer::sleep(timeout).await;
        None
    })
    .await;
    let established = finished.unwrap_or(Err(HandshakeError::Timeout))?;
    if !context.settings.pinned_certs.is_empty() {
        let pinned = established
            .session
            .peer_certificates()
            .and_then(|chain| chain.first())
            .and_then(|certificate| der::public_key_info(certificate))
            .map(|key_info| hex_sha256(key_info))
            .is_some_and(|digest| context.settings.pinned_certs.contains(&digest));
        if !pinned {
            return Err(HandshakeError::NotPinned);
        }
    }
    Ok(established)
}

async fn run(stream: &mut TcpStream, context: &TlsContext) -> Result<Established, HandshakeError> {
    let mut session = ServerConnection::new(context.config.clone()).map_err(HandshakeError::Protocol)?;
    // The connection's writer encrypts whole outbound batches, whose size the outbound
    // queue bounds (max_pending); rustls' default 64 KiB cap would cut them short.
    session.set_buffer_limit(None);
    let mut incoming = vec![0u8; limits::TLS_READ_BUFFER_BYTES];
    let (mut start, mut end) = (0usize, 0usize);
    let mut outgoing = Vec::new();
    while session.is_handshaking() {
        if session.wants_write() {
            send_pending(stream, &mut session, &mut outgoing).await.map_err(HandshakeError::Io)?;
            continue;
        }
        if start == end {
            start = 0;
            end = stream.read(&mut incoming).await.map_err(HandshakeError::Io)?;
            if end == 0 {
                return Err(HandshakeError::Io(io::ErrorKind::UnexpectedEof.into()));
            }
        }
        start += session.read_tls(&mut &incoming[start..end]).map_err(HandshakeError::Io)?;
        let processed;
        (session, processed) = process_off_shard(session).await;
        if let Err(error) = processed {
            // rustls queued an alert that says why; the client deserves to read it.
            let _ = send_pending(stream, &mut session, &mut outgoing).await;
            return Err(HandshakeError::Protocol(error));
        }
    }
    // TLS 1.3 session tickets, or the last flight of TLS 1.2.
    send_pending(stream, &mut session, &mut outgoing).await.map_err(HandshakeError::Io)?;
    incoming.truncate(end);
    incoming.drain(..start);
    Ok(Established { session, leftover: incoming })
}

/// The handshake's crypto (key exchange, signature, certificate checks: a few hundred
/// microseconds a flight) runs on the shard's blocking thread, so a storm of handshakes
/// does not queue ahead of the shard's established connections. Only the handshake is
/// moved; records after it are small and stay on the shard.
async fn process_off_shard(mut session: ServerConnection) -> (ServerConnection, Result<(), rustls::Error>) {
    glommio::executor()
        .spawn_blocking(move || {
            let processed = session.process_new_packets().map(drop);
            (session, processed)
        })
        .await
}

async fn send_pending(
    stream: &mut TcpStream,
    session: &mut ServerConnection,
    outgoing: &mut Vec<u8>,
) -> io::Result<()> {
    outgoing.clear();
    while session.wants_write() {
        session.write_tls(outgoing)?;
    }
    if !outgoing.is_empty() {
        stream.write_all(outgoing).await?;
        stream.flush().await?;
    }
    Ok(())
}

fn hex_sha256(bytes: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    digest.as_ref().iter().map(|byte| format!("{byte:02x}")).collect()
}
