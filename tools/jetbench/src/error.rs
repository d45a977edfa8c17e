//! The one error type of the load generator: every operating failure, with its context.

use std::io;
use std::time::Duration;

/// Why a benchmark could not run or finish.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("invalid url {url:?}: {reason}")]
    InvalidUrl { url: String, reason: &'static str },
    #[error("cannot connect to {address}: {source}")]
    Connect { address: String, source: io::Error },
    #[error("i/o error: {0}")]
    Io(#[from] io::Error),
    #[error("the server closed the connection")]
    ConnectionClosed,
    #[error("protocol error: {0}")]
    Protocol(#[from] crate::protocol::ProtocolError),
    #[error("server error: -ERR {0}")]
    Server(String),
    #[error("timed out after {after:?} waiting for {what}")]
    Timeout { what: String, after: Duration },
    #[error("JetStream API {subject}: {code} (err_code {err_code}): {description}")]
    JetStreamApi { subject: String, code: u16, err_code: u32, description: String },
    #[error("no responders for {subject} (is JetStream enabled?)")]
    NoResponders { subject: String },
    #[error("malformed JSON from {what}: {source}")]
    Json { what: String, source: serde_json::Error },
    #[error("invalid option: {0}")]
    InvalidOption(String),
    #[error("cannot write results to {path}: {source}")]
    Output { path: String, source: io::Error },
    #[error("prefill stored {stored} of {expected} messages ({failed} publish errors: {errors:?})")]
    PrefillIncomplete { stored: u64, expected: u64, failed: u64, errors: Vec<String> },
    #[error("cannot read the server's memory from {path}: {reason}")]
    ServerMemory { path: String, reason: String },
    #[error("worker thread panicked: {0}")]
    WorkerPanicked(String),
}

pub type Result<T> = std::result::Result<T, BenchError>;
