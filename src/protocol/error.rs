//! The one error type of the protocol parser, with nats-server's reply for each case.

use std::fmt;

/// A client operation, named in errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    Connect,
    Pub,
    Hpub,
    Sub,
    Unsub,
    Ping,
    Pong,
    Info,
    Ok,
    Err,
}

impl Operation {
    /// The operation's name as written on the wire (upper case).
    pub fn name(self) -> &'static str {
        match self {
            Operation::Connect => "CONNECT",
            Operation::Pub => "PUB",
            Operation::Hpub => "HPUB",
            Operation::Sub => "SUB",
            Operation::Unsub => "UNSUB",
            Operation::Ping => "PING",
            Operation::Pong => "PONG",
            Operation::Info => "INFO",
            Operation::Ok => "+OK",
            Operation::Err => "-ERR",
        }
    }
}

/// Why the bytes at the front of a buffer are not a valid client operation.
/// Every variant is fatal for the connection, as it is in nats-server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    /// The bytes at `offset` cannot continue any operation name (or the name is not
    /// followed by the whitespace it needs, or the buffer starts with whitespace).
    UnknownOperation { offset: usize },
    /// A control line (without its CR LF) is longer than `limit`
    /// (`CONTROL_LINE_BYTES_MAX`), whether or not its end has arrived.
    ControlLineTooLong { limit: usize },
    /// PUB size or HPUB total size exceeds the connection's max_payload.
    MaxPayloadExceeded { size: usize, max_payload: usize },
    /// Wrong number of arguments for the operation.
    ArgumentCount { operation: Operation, count: usize },
    /// A PUB size or HPUB total size that is missing, not decimal, or too long.
    InvalidSize { operation: Operation },
    /// An HPUB header size that is not decimal or too long.
    InvalidHeaderSize,
    /// HPUB header size larger than its total size.
    HeaderSizeExceedsTotal { header_size: usize, total_size: usize },
    /// The payload of a PUB/HPUB is not followed by CR LF.
    PayloadTerminator,
}

impl ParseError {
    /// The text nats-server writes inside `-ERR '...'` for this error. For the errors
    /// where nats-server closes without writing anything (see [`Self::nats_sends_err`]),
    /// this is `Unknown Protocol Operation`, the closest text it has.
    pub fn nats_text(&self) -> &'static str {
        match self {
            ParseError::ControlLineTooLong { .. } => "maximum control line exceeded",
            ParseError::MaxPayloadExceeded { .. } => "Maximum Payload Violation",
            ParseError::UnknownOperation { .. }
            | ParseError::ArgumentCount { .. }
            | ParseError::InvalidSize { .. }
            | ParseError::InvalidHeaderSize
            | ParseError::HeaderSizeExceedsTotal { .. }
            | ParseError::PayloadTerminator => "Unknown Protocol Operation",
        }
    }

    /// Whether nats-server writes an `-ERR` line before closing. It does not for
    /// malformed PUB/HPUB/SUB/UNSUB arguments: it logs the error and closes.
    pub fn nats_sends_err(&self) -> bool {
        matches!(
            self,
            ParseError::UnknownOperation { .. }
                | ParseError::ControlLineTooLong { .. }
                | ParseError::MaxPayloadExceeded { .. }
                | ParseError::PayloadTerminator
        )
    }

    /// Whether the connection must be closed: always, as in nats-server (the parser
    /// has lost its framing).
    pub fn closes_connection(&self) -> bool {
        true
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::UnknownOperation { offset } => {
                write!(formatter, "unknown protocol operation at byte {offset}")
            }
            ParseError::ControlLineTooLong { limit } => {
                write!(formatter, "control line longer than {limit} bytes")
            }
            ParseError::MaxPayloadExceeded { size, max_payload } => {
                write!(formatter, "payload of {size} bytes exceeds max_payload {max_payload}")
            }
            ParseError::ArgumentCount { operation, count } => {
                write!(formatter, "{} with {count} arguments", operation.name())
            }
            ParseError::InvalidSize { operation } => {
                write!(formatter, "{} with a bad or missing size", operation.name())
            }
            ParseError::InvalidHeaderSize => write!(formatter, "HPUB with a bad header size"),
            ParseError::HeaderSizeExceedsTotal { header_size, total_size } => {
                write!(formatter, "HPUB header size {header_size} larger than total size {total_size}")
            }
            ParseError::PayloadTerminator => {
                write!(formatter, "message payload not followed by CR LF")
            }
        }
    }
}

impl std::error::Error for ParseError {}
