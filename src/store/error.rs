//! `store::Error`: every way a storage operation can fail, with the data needed to act on it.

use std::io;
use std::path::PathBuf;

/// A storage failure. I/O errors carry the operation and file; damage carries its location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The disk is full (ENOSPC). Nothing was assigned or acknowledged.
    NoSpace { operation: &'static str, path: PathBuf },
    /// Any other I/O failure.
    Io { operation: &'static str, path: PathBuf, kind: io::ErrorKind, message: String },
    /// A write or fdatasync failed earlier; the log refuses all writes until it is reopened
    /// from disk (fail-stop: a failed fsync is never retried and trusted).
    Failed { cause: String },
    /// A metadata or checkpoint file failed its checksum or could not be decoded.
    BadMetadata { path: PathBuf, reason: &'static str },
    /// A record could not be read back where the index says it is.
    ChecksumMismatch { segment: u64, offset: u64 },
    /// The record does not fit in a segment.
    RecordTooLarge { bytes: usize, max: usize },
    /// The append was dropped before its group was written (its future was cancelled).
    Cancelled,
}

impl Error {
    /// Classifies an `io::Error` from `operation` on `path`.
    pub fn io(operation: &'static str, path: impl Into<PathBuf>, error: &io::Error) -> Error {
        let path = path.into();
        if error.raw_os_error() == Some(libc::ENOSPC) || error.kind() == io::ErrorKind::StorageFull {
            return Error::NoSpace { operation, path };
        }
        Error::Io { operation, path, kind: error.kind(), message: error.to_string() }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::NoSpace { operation, path } => {
                write!(f, "no space left on device ({operation} {})", path.display())
            }
            Error::Io { operation, path, message, .. } => {
                write!(f, "I/O error during {operation} on {}: {message}", path.display())
            }
            Error::Failed { cause } => write!(f, "stream storage failed (fail-stop): {cause}"),
            Error::BadMetadata { path, reason } => {
                write!(f, "bad metadata file {}: {reason}", path.display())
            }
            Error::ChecksumMismatch { segment, offset } => {
                write!(f, "checksum mismatch in segment {segment} at byte {offset}")
            }
            Error::RecordTooLarge { bytes, max } => {
                write!(f, "record of {bytes} bytes exceeds the maximum of {max}")
            }
            Error::Cancelled => write!(f, "append cancelled before it was written"),
        }
    }
}

impl std::error::Error for Error {}
