//! Fuzz target `backup_archive`: bytes as an S2-framed `NATSARC1` stream backup, the
//! format a `$JS.API.STREAM.RESTORE` upload carries. The first byte picks where the input
//! is split in two pushes; the rest is the upload.
//!
//! Contract checked: nothing panics; feeding the bytes whole or split yields the same
//! entries and the same verdict; every entry read writes back to an archive that reads as
//! the same entries.

use crate::codec::archive::{ArchiveError, ArchiveReader, ArchiveWriter, Entry};

/// Entries above this are refused, as the restore refuses a message above its limit.
const ENTRY_BYTES_MAX: u64 = 1 << 20;

/// The target's whole check.
pub fn check(data: &[u8]) {
    let Some((split, upload)) = data.split_first() else {
        return;
    };
    let whole = read(&[upload]);
    let at = usize::from(*split).min(upload.len());
    let split = read(&[&upload[..at], &upload[at..]]);
    assert_eq!(whole, split, "the outcome depends on how the bytes arrive");
    let (entries, _) = whole;
    let mut writer = ArchiveWriter::new();
    for entry in entries.iter().filter(|entry| !entry.is_sentinel()) {
        writer.write(entry);
    }
    let mut framed = writer.take_framed();
    framed.extend(writer.finish());
    let (again, verdict) = read(&[&framed]);
    assert_eq!(verdict, None, "a written archive reads without error");
    let written: Vec<&Entry> = entries.iter().filter(|entry| !entry.is_sentinel()).collect();
    assert_eq!(again.len(), written.len() + 1);
    assert!(again.iter().zip(written).all(|(read, wrote)| read == wrote));
}

/// The entries read from the pieces in turn, and the error that stopped the reading.
pub fn read(pieces: &[&[u8]]) -> (Vec<Entry>, Option<ArchiveError>) {
    let mut reader = ArchiveReader::new(ENTRY_BYTES_MAX);
    let mut entries = Vec::new();
    for piece in pieces {
        reader.push(piece);
        loop {
            match reader.next_entry() {
                Ok(Some(entry)) => entries.push(entry),
                Ok(None) => break,
                Err(error) => return (entries, Some(error)),
            }
        }
    }
    (entries, None)
}
