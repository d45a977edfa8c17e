//! The bytes a message counts for: in `state.bytes`, in `max_bytes` and in every client
//! display. These are nats-server's figures, not the size of jetcore's own record, so a
//! stream holds as much under a `max_bytes` limit and reports the same bytes on both
//! servers. They depend on the storage kind, as nats-server's two stores count
//! differently (filestore.go `fileStoreMsgSize`, memstore.go `memStoreMsgSize`).

use super::config::StorageKind;

/// File store, per message: record length (4), sequence (8), timestamp (8), subject
/// length (2) and checksum (8).
const FILE_MESSAGE_OVERHEAD_BYTES: usize = 4 + 8 + 8 + 2 + 8;
/// File store, a message with headers also records the header block's length.
const FILE_HEADER_LENGTH_BYTES: usize = 4;
/// Memory store, per message: sequence (8) and timestamp (8).
const MEMORY_MESSAGE_OVERHEAD_BYTES: usize = 8 + 8;

/// Bytes a message of these parts counts for in a stream of `storage`.
pub fn stored_bytes(storage: StorageKind, subject_bytes: usize, header_bytes: usize, payload_bytes: usize) -> usize {
    let parts = subject_bytes + header_bytes + payload_bytes;
    match storage {
        StorageKind::File if header_bytes == 0 => FILE_MESSAGE_OVERHEAD_BYTES + parts,
        StorageKind::File => FILE_MESSAGE_OVERHEAD_BYTES + FILE_HEADER_LENGTH_BYTES + parts,
        StorageKind::Memory => MEMORY_MESSAGE_OVERHEAD_BYTES + parts,
    }
}

/// Headers and payload of a message that counts for `stored` bytes: the inverse of
/// [`stored_bytes`], except that a file-stored message with headers shows 4 more (the
/// stored figure does not say whether there were headers).
pub fn content_bytes(storage: StorageKind, stored: u32, subject_bytes: u32) -> u32 {
    let overhead = match storage {
        StorageKind::File => FILE_MESSAGE_OVERHEAD_BYTES,
        StorageKind::Memory => MEMORY_MESSAGE_OVERHEAD_BYTES,
    };
    stored.saturating_sub(overhead as u32 + subject_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_match_nats_server() {
        // Recorded from nats-server 2.15.1: subject `f.a`, payload `hello`, and the
        // header block `NATS/1.0\r\nX: yy\r\n\r\n` (19 bytes).
        assert_eq!(stored_bytes(StorageKind::File, 3, 0, 5), 38);
        assert_eq!(stored_bytes(StorageKind::Memory, 3, 0, 5), 24);
        assert_eq!(stored_bytes(StorageKind::File, 3, 19, 5), 61);
        assert_eq!(stored_bytes(StorageKind::Memory, 3, 19, 5), 43);
        assert_eq!(content_bytes(StorageKind::Memory, 43, 3), 24);
        assert_eq!(content_bytes(StorageKind::File, 38, 3), 5);
    }
}
