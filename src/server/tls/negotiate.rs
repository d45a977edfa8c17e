//! How a new client connection begins, in nats-server's orders: plaintext INFO (saying
//! `tls_required`) then the client's ClientHello; or, with `handshake_first`, the TLS
//! handshake first and INFO inside it (with `auto`, a client silent for the fallback
//! delay is sent the plaintext INFO after all). With `allow_non_tls`, the first byte
//! decides: 0x16 opens a TLS handshake, anything else is a plaintext client.

use futures_lite::AsyncWriteExt;
use glommio::net::TcpStream;

use super::context::TlsContext;
use super::handshake::{self, Established, HandshakeError};
use super::settings::HandshakeFirst;

/// The first byte of a TLS handshake record.
const TLS_HANDSHAKE_RECORD: u8 = 0x16;

pub struct Opening {
    /// `None`: a plaintext connection.
    pub established: Option<Established>,
    /// Whether INFO was written already (in plaintext); if not, the connection sends it
    /// as its first outbound bytes, encrypted when TLS was first.
    pub info_sent: bool,
}

/// Which INFO to send: `tls_first` says whether it is sent inside a TLS-first session.
pub trait InfoFor {
    fn info(&self, tls_first: bool) -> Vec<u8>;
}

impl<F: Fn(bool) -> Vec<u8>> InfoFor for F {
    fn info(&self, tls_first: bool) -> Vec<u8> {
        self(tls_first)
    }
}

pub async fn open(
    stream: &mut TcpStream,
    context: Option<&TlsContext>,
    allow_non_tls: bool,
    info: impl InfoFor,
) -> Result<Opening, HandshakeError> {
    let Some(context) = context else {
        return Ok(Opening { established: None, info_sent: false });
    };
    let tls_first = match context.settings.handshake_first {
        HandshakeFirst::Off => false,
        HandshakeFirst::Always => true,
        HandshakeFirst::Fallback(delay) => first_byte_within(stream, delay).await.is_some(),
    };
    if tls_first {
        let established = handshake::accept(stream, context).await?;
        return Ok(Opening { established: Some(established), info_sent: false });
    }
    stream.write_all(&info.info(false)).await.map_err(HandshakeError::Io)?;
    if allow_non_tls && first_byte_within(stream, context.settings.timeout).await != Some(TLS_HANDSHAKE_RECORD) {
        return Ok(Opening { established: None, info_sent: true });
    }
    let established = handshake::accept(stream, context).await?;
    Ok(Opening { established: Some(established), info_sent: true })
}

/// The first byte the client sent, left unread, if it sends one within `delay`.
async fn first_byte_within(stream: &TcpStream, delay: std::time::Duration) -> Option<u8> {
    let mut byte = [0u8; 1];
    let peeked = futures_lite::future::or(async { Some(stream.peek(&mut byte).await) }, async {
        glommio::timer::sleep(delay).await;
        None
    })
    .await;
    match peeked {
        Some(Ok(1)) => Some(byte[0]),
        _ => None,
    }
}

/// The connection's opening on `node` under its live options: `None` when the connection
/// is to be dropped (the handshake failed, was refused or timed out; logged here as
/// nats-server logs it).
pub async fn begin(
    node: &crate::server::node::Node,
    stream: &mut TcpStream,
    client_id: u64,
    client_ip: &str,
    auth: bool,
    nonce: Option<&str>,
) -> Option<Opening> {
    let live = node.ops.live_options();
    let info = |tls_first: bool| {
        let mut out = Vec::new();
        crate::server::info::encode_for_tls_client(&mut out, node, client_id, client_ip, auth, nonce, tls_first);
        out
    };
    match open(stream, live.tls_context.as_ref(), live.allow_non_tls, info).await {
        Ok(opening) => Some(opening),
        Err(error) => {
            tracing::debug!(client = client_id, %client_ip, "{error}");
            tracing::debug!(client = client_id, %client_ip, "Client connection closed: TLS Handshake Failure");
            let _ = stream.close().await;
            None
        }
    }
}
