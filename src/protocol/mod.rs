//! NATS client protocol: parse what clients send, encode what the server sends.
//! Pure functions over byte slices; no I/O (DESIGN §6).
//!
//! CONTRACT (the server is written against this; keep these names):
//! - `parse(buf: &[u8], max_payload: usize) -> Result<Parsed<'_>, ParseError>` where
//!   `Parsed::Op { op: ClientOp<'_>, consumed: usize }` or `Parsed::Incomplete { needed: Option<usize> }`
//!   (`needed`: total buffer length required when known, so callers avoid rescans).
//! - `ClientOp::{Connect { json }, Pub { subject, reply, headers, payload }, Sub { subject, queue, sid },
//!   Unsub { sid, max }, Ping, Pong}`; slices borrow `buf`; `headers: Option<&[u8]>` is HPUB's header block.
//! - `ParseError::nats_text()` gives nats-server's `-ERR` text; `closes_connection()` tells whether nats-server closes.
//! - encoders append to a `Vec<u8>`/`BytesMut`: `encode_msg`, `encode_hmsg`, `encode_info`, `encode_err`.
//! - `headers` submodule: parse a header block (status, description, name/value pairs), look up a
//!   header by name, build blocks with a status line.
