//! TLS on the client port, as nats-server does it: configuration, certificate loading,
//! the handshake over the shard's own socket, and the plain-or-TLS transport a connection
//! reads and writes through. rustls with the ring provider, no tokio.

pub mod context;
pub mod der;
pub mod distinguished_name;
pub mod handshake;
pub mod identity;
pub mod negotiate;
pub mod settings;
pub mod transport;

pub use context::{TlsContext, TlsError};
pub use settings::{HandshakeFirst, TlsSettings, TlsVersion};
