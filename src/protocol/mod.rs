//! NATS client protocol: parse what clients send, encode what the server sends.
//! Pure functions over byte slices; no I/O (DESIGN §6, STYLE habit 5).
//!
//! Reading: [`parse`] looks at the front of a connection's read buffer and returns either
//! one complete operation borrowing that buffer ([`Parsed::Op`], with how many bytes it
//! used) or [`Parsed::Incomplete`] (nothing consumed; `needed` is the whole buffer length
//! required when it is already known, e.g. once a PUB control line has arrived). It never
//! allocates and never keeps state between calls: the caller drops `consumed` bytes and
//! calls again. Feeding a byte stream in any split gives the same operations and the same
//! error as feeding it whole (tested, and fuzzed).
//!
//! Writing: the `encode_*` functions append to any [`bytes::BufMut`] (`Vec<u8>` or
//! `BytesMut`); [`headers`] reads and writes header blocks (`NATS/1.0 ...`).
//!
//! Behaviour mirrored from nats-server (`server/parser.go`, `server/client.go`):
//! - operation names are case-insensitive; arguments are separated by runs of spaces or
//!   tabs; repeated and trailing whitespace is ignored;
//! - a control line ends at LF; one CR before it is dropped (bare LF is accepted, as
//!   nats-server accepts it); the payload of PUB/HPUB must be followed by exactly CR LF;
//! - `PING`, `PONG` and `+OK` ignore anything after the name up to LF (nats-server does);
//! - `INFO` and `-ERR` from a client are recognised ([`ClientOp::Info`], [`ClientOp::Err`]);
//!   nats-server ignores a client's INFO and closes the connection on a client's -ERR;
//! - sizes are 1 to [`SIZE_DIGITS_MAX`](crate::limits::SIZE_DIGITS_MAX) decimal digits;
//! - `UNSUB sid max` with a zero, non-numeric or over-long max means "remove now".

mod encode;
mod error;
pub mod go_duration;
pub mod go_json;
mod go_quote;
pub mod go_syntax;
pub mod headers;
mod info;
mod parse;

pub(crate) use encode::{decimal_width, push_decimal};
pub use encode::{
    encode_err, encode_hmsg, encode_info, encode_msg, encode_ok, encode_ping, encode_pong, OK, PING, PONG,
};
pub use error::{Operation, ParseError};
pub use go_quote::go_quote;
pub use info::{ConnectOptions, ServerInfo};
pub use parse::parse;

/// Result of [`parse`] on the front of a read buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed<'a> {
    /// One complete operation; it used the first `consumed` bytes of the buffer.
    Op { op: ClientOp<'a>, consumed: usize },
    /// More bytes are needed; nothing was consumed. `needed`, when known, is the total
    /// buffer length at which the next call will give `Op` or an error.
    Incomplete { needed: Option<usize> },
}

/// One operation sent by a client. Every slice borrows the parsed buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientOp<'a> {
    /// `CONNECT {json}`: the JSON text, unparsed (see [`ConnectOptions::from_json`]).
    Connect {
        json: &'a [u8],
    },
    /// `PUB` or `HPUB`. For HPUB `headers` is the header block (from `NATS/1.0` through
    /// its blank line) and `payload` the bytes after it; for PUB `headers` is `None`.
    Pub {
        subject: &'a [u8],
        reply: Option<&'a [u8]>,
        headers: Option<&'a [u8]>,
        payload: &'a [u8],
    },
    /// `SUB subject [queue] sid`.
    Sub {
        subject: &'a [u8],
        queue: Option<&'a [u8]>,
        sid: &'a [u8],
    },
    /// `UNSUB sid [max]`; `max` is `Some(n)` only for a valid `n > 0`.
    Unsub {
        sid: &'a [u8],
        max: Option<u64>,
    },
    Ping,
    Pong,
    /// `INFO {json}` sent by a client; nats-server ignores it for client connections.
    Info {
        json: &'a [u8],
    },
    /// `+OK` sent by a client; nats-server ignores it.
    Ok,
    /// `-ERR text` sent by a client; nats-server logs it and closes the connection
    /// without replying.
    Err {
        text: &'a [u8],
    },
}
