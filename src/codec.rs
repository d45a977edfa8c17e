//! A tiny binary writer/reader for checkpoints and packed records: fixed-width
//! little-endian fields.
//! The reader never panics on short or hostile input; it returns `None`.
//!
//! Below it: S2 compression (`s2_block`, `s2_frame`), nats-server's stream backup
//! archive (`archive`) and the store's checksum (`crc`), pure codecs over byte slices.

pub mod archive;
pub mod crc;
pub mod s2_block;
pub mod s2_frame;

/// Appends fields to a byte vector.
#[derive(Default)]
pub struct Writer {
    pub bytes: Vec<u8>,
}

impl Writer {
    pub fn u8(&mut self, value: u8) {
        self.bytes.push(value);
    }
    pub fn u32(&mut self, value: u32) {
        self.bytes.extend_from_slice(&value.to_le_bytes());
    }
    pub fn u64(&mut self, value: u64) {
        self.bytes.extend_from_slice(&value.to_le_bytes());
    }
    pub fn i64(&mut self, value: i64) {
        self.bytes.extend_from_slice(&value.to_le_bytes());
    }
    /// Length-prefixed bytes.
    pub fn blob(&mut self, value: &[u8]) {
        self.u32(value.len() as u32);
        self.bytes.extend_from_slice(value);
    }
}

/// Reads fields from a byte slice; every method returns `None` past the end.
pub struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes }
    }
    fn take(&mut self, len: usize) -> Option<&'a [u8]> {
        if self.bytes.len() < len {
            return None;
        }
        let (head, tail) = self.bytes.split_at(len);
        self.bytes = tail;
        Some(head)
    }
    pub fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    pub fn u32(&mut self) -> Option<u32> {
        self.take(4).map(|b| u32::from_le_bytes(b.try_into().expect("4")))
    }
    pub fn u64(&mut self) -> Option<u64> {
        self.take(8).map(|b| u64::from_le_bytes(b.try_into().expect("8")))
    }
    pub fn i64(&mut self) -> Option<i64> {
        self.take(8).map(|b| i64::from_le_bytes(b.try_into().expect("8")))
    }
    pub fn blob(&mut self) -> Option<&'a [u8]> {
        let len = self.u32()? as usize;
        self.take(len)
    }
    /// A count of items, each at least `item_bytes_min` long, bounded by what remains.
    pub fn count(&mut self, item_bytes_min: usize) -> Option<usize> {
        let count = self.u64()? as usize;
        (count.saturating_mul(item_bytes_min.max(1)) <= self.bytes.len()).then_some(count)
    }
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}
