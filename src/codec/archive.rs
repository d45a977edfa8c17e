//! nats-server 2.15's stream backup archive ("V2", magic `NATSARC1`), decompressed: the
//! magic, then entries of
//! `name_len uvarint | timestamp varint (zigzag) | sequence uvarint | header_size uvarint |
//! payload_size uvarint | name | headers | payload`.
//! A backup is `state.json`, one `consumers/<name>` entry per consumer, the messages in
//! ascending sequence (subject as the name), and a sentinel: an entry with an empty name
//! and every number zero. The whole is one S2 framed stream (`s2_frame`).
//!
//! `ArchiveReader` takes the framed bytes as they arrive and yields whole entries;
//! `ArchiveWriter` builds the framed bytes. Both are pure: no I/O.

use super::s2_block::{read_uvarint, write_uvarint};
use super::s2_frame::{self, FrameDecoder, FrameError, ENCODE_CHUNK_BYTES};

/// The first eight decompressed bytes of a V2 archive.
pub const MAGIC: &[u8; 8] = b"NATSARC1";
/// The longest entry name nats-server's reader accepts.
pub const NAME_BYTES_MAX: u64 = 1 << 20;
/// The name of the first entry.
pub const STATE_ENTRY: &str = "state.json";
/// The prefix of consumer entries.
pub const CONSUMER_PREFIX: &str = "consumers/";

/// One decoded entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub timestamp_ns: i64,
    pub sequence: u64,
    pub headers: Vec<u8>,
    pub payload: Vec<u8>,
}

impl Entry {
    /// The end-of-backup sentinel.
    pub fn sentinel() -> Entry {
        Entry { name: String::new(), timestamp_ns: 0, sequence: 0, headers: Vec::new(), payload: Vec::new() }
    }
    pub fn is_sentinel(&self) -> bool {
        self.borrowed().is_sentinel()
    }
}

/// Why an archive did not decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArchiveError {
    Frame(FrameError),
    /// The decompressed bytes do not begin with `NATSARC1` (e.g. a pre-2.15 tar backup).
    NotV2,
    /// An entry's numbers are malformed or its name is not UTF-8 or too long.
    BadEntry,
    /// An entry is larger than the caller allows.
    EntryTooLarge {
        bytes: u64,
        max: u64,
    },
}

impl std::fmt::Display for ArchiveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ArchiveError::Frame(error) => write!(f, "{error}"),
            ArchiveError::NotV2 => write!(
                f,
                "not a NATSARC1 archive (a backup made before nats-server 2.15, a tar of its block files, \
                 cannot be restored onto jetcore)"
            ),
            ArchiveError::BadEntry => write!(f, "invalid archive entry"),
            ArchiveError::EntryTooLarge { bytes, max } => write!(f, "archive entry of {bytes} bytes exceeds {max}"),
        }
    }
}

/// Decodes one entry at the start of `input`: `Ok(None)` when it has not all arrived.
/// Entries above `entry_bytes_max` (headers plus payload) are refused from their header.
pub fn decode_entry(input: &[u8], entry_bytes_max: u64) -> Result<Option<(Entry, usize)>, ArchiveError> {
    Ok(decode_parts(input, entry_bytes_max)?.map(|(parts, used)| (parts.owned(), used)))
}

/// [`decode_entry`], borrowing the entry's parts from `input`.
pub fn decode_parts(input: &[u8], entry_bytes_max: u64) -> Result<Option<(EntryParts<'_>, usize)>, ArchiveError> {
    let mut at = 0;
    let mut numbers = [0u64; 5];
    for number in numbers.iter_mut() {
        match read_uvarint(&input[at..]) {
            Some((value, used)) => {
                *number = value;
                at += used;
            }
            // Ten bytes that do not end a varint are bad; fewer may be incomplete.
            None if input.len() - at >= 10 => return Err(ArchiveError::BadEntry),
            None => return Ok(None),
        }
    }
    let [name_len, timestamp, sequence, header_size, payload_size] = numbers;
    if name_len > NAME_BYTES_MAX {
        return Err(ArchiveError::BadEntry);
    }
    let bytes = header_size.checked_add(payload_size).ok_or(ArchiveError::BadEntry)?;
    if bytes > entry_bytes_max {
        return Err(ArchiveError::EntryTooLarge { bytes, max: entry_bytes_max });
    }
    let total = at + name_len as usize + bytes as usize;
    if input.len() < total {
        return Ok(None);
    }
    let name_end = at + name_len as usize;
    let name = std::str::from_utf8(&input[at..name_end]).map_err(|_| ArchiveError::BadEntry)?;
    let headers_end = name_end + header_size as usize;
    let entry = EntryParts {
        name,
        timestamp_ns: zigzag_decode(timestamp),
        sequence,
        headers: &input[name_end..headers_end],
        payload: &input[headers_end..total],
    };
    Ok(Some((entry, total)))
}

/// Appends one entry's encoding (without the magic).
pub fn encode_entry(entry: &Entry, out: &mut Vec<u8>) {
    encode_parts(&entry.borrowed(), out);
}

/// An entry's parts borrowed from where they are stored (a message read from a segment),
/// so writing it copies each byte once, into the archive.
pub struct EntryParts<'a> {
    pub name: &'a str,
    pub timestamp_ns: i64,
    pub sequence: u64,
    pub headers: &'a [u8],
    pub payload: &'a [u8],
}

impl EntryParts<'_> {
    pub fn owned(&self) -> Entry {
        Entry {
            name: self.name.to_string(),
            timestamp_ns: self.timestamp_ns,
            sequence: self.sequence,
            headers: self.headers.to_vec(),
            payload: self.payload.to_vec(),
        }
    }

    /// True for the end-of-backup sentinel.
    pub fn is_sentinel(&self) -> bool {
        self.name.is_empty()
            && self.timestamp_ns == 0
            && self.sequence == 0
            && self.headers.is_empty()
            && self.payload.is_empty()
    }
}

impl Entry {
    fn borrowed(&self) -> EntryParts<'_> {
        EntryParts {
            name: &self.name,
            timestamp_ns: self.timestamp_ns,
            sequence: self.sequence,
            headers: &self.headers,
            payload: &self.payload,
        }
    }
}

fn encode_parts(entry: &EntryParts<'_>, out: &mut Vec<u8>) {
    write_uvarint(entry.name.len() as u64, out);
    write_uvarint(zigzag_encode(entry.timestamp_ns), out);
    write_uvarint(entry.sequence, out);
    write_uvarint(entry.headers.len() as u64, out);
    write_uvarint(entry.payload.len() as u64, out);
    out.extend_from_slice(entry.name.as_bytes());
    out.extend_from_slice(entry.headers);
    out.extend_from_slice(entry.payload);
}

fn zigzag_encode(value: i64) -> u64 {
    ((value << 1) ^ (value >> 63)) as u64
}

fn zigzag_decode(value: u64) -> i64 {
    ((value >> 1) as i64) ^ -((value & 1) as i64)
}

/// Reads a framed archive as its bytes arrive.
#[derive(Debug)]
pub struct ArchiveReader {
    frames: FrameDecoder,
    /// Framed bytes not yet a whole chunk.
    framed: Vec<u8>,
    /// Decompressed bytes; those before `plain_at` are read. Entries are read by moving
    /// `plain_at`, and the read bytes dropped at the next `push`: dropping them per entry
    /// moved the rest of the buffer each time, quadratic in a chunk's entries (a 1 MiB
    /// window of 1 KiB messages moved ~512 MiB).
    plain: Vec<u8>,
    plain_at: usize,
    magic_seen: bool,
    entry_bytes_max: u64,
    /// The framing error that stopped decoding, reported after the entries before it.
    failed: Option<ArchiveError>,
}

impl ArchiveReader {
    pub fn new(entry_bytes_max: u64) -> ArchiveReader {
        ArchiveReader {
            frames: FrameDecoder::new(),
            framed: Vec::new(),
            plain: Vec::new(),
            plain_at: 0,
            magic_seen: false,
            entry_bytes_max,
            failed: None,
        }
    }

    /// Takes more framed bytes. A framing error is kept and reported by `next_entry` once
    /// the entries before it are read, so the outcome does not depend on how bytes arrive.
    /// Whole chunks are decoded straight from `bytes`; only a chunk cut by the end of
    /// `bytes` is copied, to be completed by the next push with just the bytes it lacks.
    pub fn push(&mut self, mut bytes: &[u8]) {
        if self.failed.is_some() {
            return;
        }
        self.plain.drain(..self.plain_at);
        self.plain_at = 0;
        if !self.framed.is_empty() {
            let mut take = |wanted: usize, framed: &mut Vec<u8>| {
                let (head, rest) = bytes.split_at(wanted.saturating_sub(framed.len()).min(bytes.len()));
                framed.extend_from_slice(head);
                bytes = rest;
            };
            take(s2_frame::CHUNK_HEADER_BYTES, &mut self.framed);
            if let Some(whole) = FrameDecoder::chunk_len(&self.framed) {
                take(whole, &mut self.framed);
            }
            if !self.decode(None) || !self.framed.is_empty() {
                return;
            }
        }
        self.decode(Some(bytes));
    }

    /// Decodes the whole chunks of `bytes`, or of the chunk begun earlier (`None`), and
    /// keeps what is left over; false once decoding failed.
    fn decode(&mut self, bytes: Option<&[u8]>) -> bool {
        let input = bytes.unwrap_or(&self.framed);
        match self.frames.decode(input, &mut self.plain) {
            Ok(used) => {
                match bytes {
                    Some(bytes) => self.framed.extend_from_slice(&bytes[used..]),
                    None => drop(self.framed.drain(..used)),
                }
                true
            }
            Err(error) => {
                self.framed.clear();
                self.failed = Some(ArchiveError::Frame(error));
                false
            }
        }
    }

    /// The next whole entry, if it has arrived; an error once the good entries are read.
    pub fn next_entry(&mut self) -> Result<Option<Entry>, ArchiveError> {
        Ok(self.next_parts()?.map(|parts| parts.owned()))
    }

    /// [`ArchiveReader::next_entry`], borrowing the entry's parts from the reader.
    pub fn next_parts(&mut self) -> Result<Option<EntryParts<'_>>, ArchiveError> {
        let unread = &self.plain[self.plain_at..];
        if !self.magic_seen {
            if unread.len() < MAGIC.len() {
                return self.failed.clone().map_or(Ok(None), Err);
            }
            if &unread[..MAGIC.len()] != MAGIC {
                return Err(ArchiveError::NotV2);
            }
            self.plain_at += MAGIC.len();
            self.magic_seen = true;
        }
        match decode_parts(&self.plain[self.plain_at..], self.entry_bytes_max)? {
            Some((entry, used)) => {
                self.plain_at += used;
                Ok(Some(entry))
            }
            None => self.failed.clone().map_or(Ok(None), Err),
        }
    }

    /// True when no partial chunk or entry is waiting.
    pub fn is_drained(&self) -> bool {
        self.framed.is_empty() && self.plain_at == self.plain.len()
    }
}

/// Builds a framed archive: entries go into a buffer that is compressed a chunk at a time.
#[derive(Debug, Default)]
pub struct ArchiveWriter {
    plain: Vec<u8>,
    framed: Vec<u8>,
}

impl ArchiveWriter {
    /// Starts the stream: identifier chunk and magic.
    pub fn new() -> ArchiveWriter {
        let mut writer = ArchiveWriter::default();
        s2_frame::encode_identifier(&mut writer.framed);
        writer.plain.extend_from_slice(MAGIC);
        writer
    }

    pub fn write(&mut self, entry: &Entry) {
        self.write_parts(&entry.borrowed());
    }

    /// [`ArchiveWriter::write`] from borrowed parts.
    pub fn write_parts(&mut self, entry: &EntryParts<'_>) {
        encode_parts(entry, &mut self.plain);
        if self.plain.len() >= ENCODE_CHUNK_BYTES {
            let whole = self.plain.len() / ENCODE_CHUNK_BYTES * ENCODE_CHUNK_BYTES;
            s2_frame::encode_data(&self.plain[..whole], &mut self.framed);
            self.plain.drain(..whole);
        }
    }

    /// Framed bytes ready to send; the writer keeps the rest.
    pub fn take_framed(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.framed)
    }

    /// The framed bytes ready to send, in place: a sender splits its chunks off the front
    /// without copying them out first.
    pub fn framed_mut(&mut self) -> &mut Vec<u8> {
        &mut self.framed
    }

    /// How many framed bytes are ready to send.
    pub fn framed_len(&self) -> usize {
        self.framed.len()
    }

    /// Writes the sentinel and returns the last framed bytes.
    pub fn finish(mut self) -> Vec<u8> {
        self.write(&Entry::sentinel());
        s2_frame::encode_data(&self.plain, &mut self.framed);
        self.framed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECORDED: &[u8] = include_bytes!("../../tests/data/backup/nats-server-2.15.1-T.s2");

    fn read_all(bytes: &[u8], piece: usize) -> Result<Vec<Entry>, ArchiveError> {
        let mut reader = ArchiveReader::new(1 << 20);
        let mut entries = Vec::new();
        for part in bytes.chunks(piece) {
            reader.push(part);
            while let Some(entry) = reader.next_entry()? {
                entries.push(entry);
            }
        }
        Ok(entries)
    }

    #[test]
    fn a_nats_server_backup_reads_as_state_consumers_messages_sentinel() {
        let entries = read_all(RECORDED, 1024).expect("recorded backup reads");
        assert_eq!(entries[0].name, STATE_ENTRY);
        let state: serde_json::Value = serde_json::from_slice(&entries[0].payload).unwrap();
        assert_eq!(state["consumer_count"], 1);
        assert_eq!(entries[1].name, "consumers/C");
        let messages = &entries[2..entries.len() - 1];
        // 300 published, sequences 5, 6, 7, 100 and 300 deleted.
        assert_eq!(messages.len(), 295);
        assert_eq!(messages[0].sequence, 1);
        assert_eq!(messages[4].sequence, 8);
        assert_eq!(messages.last().unwrap().sequence, 299);
        assert_eq!(messages[0].name, "t.0");
        assert!(messages[0].headers.starts_with(b"NATS/1.0\r\nX-N: 0\r\n"));
        assert_eq!(messages[0].payload, b"payload 0 ");
        assert!(messages[1].headers.is_empty());
        assert!(messages[0].timestamp_ns > 1_700_000_000_000_000_000);
        assert!(entries.last().unwrap().is_sentinel());
    }

    #[test]
    fn written_archives_read_back() {
        let mut writer = ArchiveWriter::new();
        let mut expected = Vec::new();
        for seq in 1..2000u64 {
            let entry = Entry {
                name: format!("s.{}", seq % 5),
                timestamp_ns: seq as i64 * 1000 - 500_000,
                sequence: seq,
                headers: if seq % 2 == 0 { b"NATS/1.0\r\nA: b\r\n\r\n".to_vec() } else { Vec::new() },
                payload: format!("message {seq} ").repeat(seq as usize % 9).into_bytes(),
            };
            writer.write(&entry);
            expected.push(entry);
        }
        let mut framed = writer.take_framed();
        framed.extend(writer.finish());
        expected.push(Entry::sentinel());
        assert_eq!(read_all(&framed, 333).unwrap(), expected);
    }

    /// Reads `bytes` in pieces of `piece`: the entries before the first error, and it.
    /// (`fuzzing::backup_archive::read` does the same, but `codec` may not import it.)
    fn read_until_error(bytes: &[u8], piece: usize) -> (Vec<Entry>, Option<ArchiveError>) {
        let mut reader = ArchiveReader::new(1 << 20);
        let mut entries = Vec::new();
        for part in bytes.chunks(piece) {
            reader.push(part);
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

    #[test]
    fn a_damaged_chunk_stops_reading_at_the_same_entry_however_the_bytes_arrive() {
        let mut writer = ArchiveWriter::new();
        for seq in 1..20_000u64 {
            let payload = format!("message {seq} ").repeat(seq as usize % 7).into_bytes();
            writer.write(&Entry { name: "s.a".into(), timestamp_ns: 1, sequence: seq, headers: Vec::new(), payload });
        }
        let mut damaged = writer.take_framed();
        damaged.extend(writer.finish());
        let middle = damaged.len() / 2;
        damaged[middle] ^= 0x5a;
        let (whole, error) = read_until_error(&damaged, damaged.len());
        assert!(matches!(error, Some(ArchiveError::Frame(_))), "{error:?}");
        assert!(whole.len() > 1000 && whole.len() < 19_000, "{} entries before the damage", whole.len());
        for piece in [1, 3, 4, 5, 7, 333, 4096, 65_536] {
            assert_eq!(read_until_error(&damaged, piece), (whole.clone(), error.clone()), "pieces of {piece}");
        }
    }

    #[test]
    fn non_archives_and_oversized_entries_are_refused() {
        let mut framed = Vec::new();
        s2_frame::encode_identifier(&mut framed);
        s2_frame::encode_data(b"ustar tar header and more bytes", &mut framed);
        assert_eq!(read_all(&framed, 64), Err(ArchiveError::NotV2));
        assert!(ArchiveError::NotV2.to_string().contains("before nats-server 2.15"), "the refusal says why");
        let big = read_all(RECORDED, 4096).map(|_| ());
        assert!(big.is_ok());
        let mut reader = ArchiveReader::new(10);
        reader.push(RECORDED);
        let refused = reader.next_entry();
        assert!(matches!(refused, Err(ArchiveError::EntryTooLarge { .. })));
    }
}
