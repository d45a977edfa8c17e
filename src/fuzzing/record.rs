//! Fuzz target `record`: bytes read back from a segment file, as a record
//! ([`record::decode`]), as a segment image listed by [`record_spans`], and as the only
//! segment of a log opened by recovery ([`open_log`] over a [`SimDisk`]).
//!
//! Contract checked: nothing panics; a record that decodes re-encodes to the same bytes,
//! each of its proper prefixes is `Incomplete`, and flipping any bit of it is an error
//! (the CRC); recovery hands out only records that decode at their offset, in ascending
//! sequence, reports damage inside the file, and every message it replays reads back,
//! read in order and again in reverse order, while a message it did not replay does not.

use std::path::Path;
use std::rc::Rc;

use crate::limits::{DIRECT_IO_ALIGNMENT, SEGMENT_SIZE_BYTES_MIN};
use crate::store::record::{self, DecodeError, Record, StreamId};
use crate::store::scan::record_spans;
use crate::store::segment::segment_file_name;
use crate::store::{open_log, Disk, LogConfig, OpenMode, ScanEvent, SimDisk, SyncPolicy};

/// Bit flips tried per decoded record (spread over it), bounding the work per input.
const BIT_FLIPS_MAX: usize = 64;
/// Messages read back after recovery, bounding the work per input.
const READ_BACKS_MAX: usize = 16;

/// The target's whole check.
pub fn check(data: &[u8]) {
    let stream_id = stream_id_of(data);
    check_decode(data, stream_id);
    check_spans(data);
    futures_lite::future::block_on(check_recovery(data, stream_id));
}

/// The stream id of the record at the start of `data` (bytes 20..28), so the fuzzer
/// reaches the checks past the id; 0 when too short.
fn stream_id_of(data: &[u8]) -> StreamId {
    StreamId(data.get(20..28).map_or(0, |bytes| u64::from_le_bytes(bytes.try_into().expect("8 bytes"))))
}

fn check_decode(data: &[u8], stream_id: StreamId) {
    let (record, len) = match record::decode(data, stream_id) {
        Ok(decoded) => decoded,
        Err(DecodeError::Incomplete { needed }) => {
            assert!(needed > data.len(), "incomplete with {needed} of {} bytes", data.len());
            return;
        }
        Err(_) => return,
    };
    assert!(len <= data.len());
    let mut encoded = Vec::new();
    record::encode_into(&record, &mut encoded);
    assert_eq!(encoded, &data[..len], "decoded record re-encodes differently");
    for cut in 0..len {
        assert!(
            matches!(record::decode(&data[..cut], stream_id), Err(DecodeError::Incomplete { .. })),
            "prefix of {cut} bytes is not incomplete"
        );
    }
    let bits = len * 8;
    let step = bits.div_ceil(BIT_FLIPS_MAX).max(1);
    for bit in (0..bits).step_by(step).chain([bits - 1]) {
        encoded[bit / 8] ^= 1 << (bit % 8);
        assert!(record::decode(&encoded, stream_id).is_err(), "flip of bit {bit} undetected");
        encoded[bit / 8] ^= 1 << (bit % 8);
    }
}

fn check_spans(data: &[u8]) {
    let mut end = 0;
    for span in record_spans(data) {
        let offset = span.offset as usize;
        assert!(offset >= end && offset + span.len <= data.len(), "span {span:?}");
        end = offset + span.len;
    }
}

/// Recovery over `data` as segment 1 of a stream (padded to a whole block, as segments
/// are): no error on a healthy disk, and only valid records come out.
async fn check_recovery(data: &[u8], stream_id: StreamId) {
    let mut image = data.to_vec();
    image.resize(image.len().div_ceil(DIRECT_IO_ALIGNMENT).max(1) * DIRECT_IO_ALIGNMENT, 0);
    let disk = SimDisk::volatile();
    let dir = Path::new("/stream");
    let path = dir.join(segment_file_name(1));
    let file = disk.open(&path, OpenMode::Create).await.expect("create segment");
    file.write_at_aligned(0, &image).await.expect("write segment");
    file.close().await.expect("close segment");
    let config = LogConfig {
        dir: dir.to_path_buf(),
        stream_id,
        segment_size: SEGMENT_SIZE_BYTES_MIN,
        sync: SyncPolicy::Always,
        block_bytes: DIRECT_IO_ALIGNMENT as u64,
    };
    let mut messages = Vec::new();
    let mut visit = |event: ScanEvent<'_>| match event {
        ScanEvent::Record { record, offset } => {
            let at = &image[offset as usize..];
            assert_eq!(record::decode(at, stream_id).map(|(r, _)| r), Ok(record));
            if record.kind == record::RecordKind::Message {
                assert!(messages.last().is_none_or(|(seq, _)| *seq < record.seq));
                messages.push((record.seq, owned(&record)));
            }
        }
        ScanEvent::Damage { segment, bytes } => {
            assert_eq!(segment, 1);
            assert!(bytes.start < bytes.end && bytes.end <= image.len() as u64, "{bytes:?}");
        }
    };
    let disk: Rc<dyn Disk> = Rc::new(disk);
    let (log, report) = open_log(disk, config, None, &mut visit).await.expect("recovery on a healthy disk succeeds");
    let log = Rc::new(log);
    if let Some((segment, offset)) = report.truncated_tail {
        assert!(segment == 1 && offset <= image.len() as u64);
    }
    // Forward, each read goes on from the message before (a consumer); backward, each
    // starts from the sparse index and walks the records up to it (a get by sequence).
    let read_backs = &messages[..messages.len().min(READ_BACKS_MAX)];
    for (seq, (payload, subject)) in read_backs.iter().chain(read_backs.iter().rev()) {
        let read = log.read_message(*seq).await.expect("read back");
        let read = read.unwrap_or_else(|| panic!("recovered message {seq} does not read back"));
        assert_eq!((&read.payload[..], read.subject.as_bytes()), (&payload[..], &subject[..]));
    }
    // A sequence recovery did not replay is not found by a read either: both walk the
    // segment with the same walker.
    if let (Some((first, _)), Some((last, _))) = (messages.first(), messages.last()) {
        let skipped = (*first..=*last).filter(|seq| messages.binary_search_by_key(seq, |(s, _)| *s).is_err());
        for seq in skipped.take(READ_BACKS_MAX) {
            let read = log.read_message(seq).await;
            assert!(!matches!(read, Ok(Some(_))), "message {seq} reads back but recovery did not replay it");
        }
    }
    log.close().await.expect("close log");
}

fn owned(record: &Record<'_>) -> (Vec<u8>, Vec<u8>) {
    (record.payload.to_vec(), String::from_utf8_lossy(record.subject).into_owned().into_bytes())
}
