//! [`GroupBuffer`]: a group's encoded records, held in memory the disk writes from as it
//! is, so a group reaches the disk with no copy between the encoding and the write.
//!
//! The memory is glommio's `DmaBuffer`, block-aligned. A group bound for a real file
//! takes it from the shard's registered I/O memory while that has room (which saves the
//! kernel pinning the pages per write; this needs the shard's executor, as every group
//! does); a group bound for memory storage takes ordinary heap memory, so memory streams
//! leave the registered memory to the disk. With `store/dma.rs` and the seam in
//! `store/file.rs`, this is where the store touches glommio's file API.
//!
//! A `DmaBuffer` is written whole (`write_rc_at` takes its length), and trimming it is
//! for good, so a sealed buffer is written once and freed; a group allocates its own.
//! The log sizes it from the group before (`SegmentLog::append`), so a steady stream of
//! windows grows none.

use std::ops::Deref;
use std::rc::Rc;

use glommio::io::DmaBuffer;

use crate::limits::DIRECT_IO_ALIGNMENT;

/// Records being encoded into a group: appended at the end, never moved but to grow.
#[derive(Default)]
pub struct GroupBuffer {
    memory: Option<DmaBuffer>,
    len: usize,
    /// From the shard's registered I/O memory (else the heap), growth included.
    registered: bool,
}

impl GroupBuffer {
    /// An empty buffer with room for `capacity` bytes (rounded up to a power of two, at
    /// least one block), in the shard's registered I/O memory if `registered`.
    pub fn with_capacity(capacity: usize, registered: bool) -> GroupBuffer {
        GroupBuffer { memory: Some(allocate(capacity, registered)), len: 0, registered }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn capacity(&self) -> usize {
        self.memory.as_ref().map_or(0, DmaBuffer::len)
    }

    pub fn as_slice(&self) -> &[u8] {
        self.memory.as_ref().map_or(&[], |memory| &memory.as_bytes()[..self.len])
    }

    /// Extends the buffer by `len` bytes and returns them for the caller to fill (their
    /// old contents are unspecified). Grows by doubling, copying what is there.
    pub fn extend(&mut self, len: usize) -> &mut [u8] {
        let start = self.len;
        let end = start + len;
        if self.memory.is_none() || end > self.capacity() {
            let mut grown = allocate(end.max(self.capacity() * 2), self.registered);
            grown.as_bytes_mut()[..start].copy_from_slice(self.as_slice());
            self.memory = Some(grown);
        }
        self.len = end;
        &mut self.memory.as_mut().expect("allocated above").as_bytes_mut()[start..end]
    }

    /// Drops the first `len` bytes, moving the rest to the front (a copy).
    pub fn drop_front(&mut self, len: usize) {
        let Some(memory) = self.memory.as_mut() else { return };
        memory.as_bytes_mut().copy_within(len..self.len, 0);
        self.len -= len;
    }

    /// Pads the records with zeros to a multiple of `block_bytes` and freezes them.
    pub fn seal(mut self, block_bytes: u64) -> SealedBuffer {
        let padded = (self.len as u64).div_ceil(block_bytes) * block_bytes;
        let padding = padded as usize - self.len;
        self.extend(padding).fill(0);
        let mut memory = self.memory.take().expect("extend allocates");
        memory.trim_to_size(self.len);
        SealedBuffer(Rc::new(memory))
    }
}

/// A sealed group's bytes, padded to a block: shared by the write in flight and the
/// reads that find their record still in the group.
#[derive(Clone)]
pub struct SealedBuffer(Rc<DmaBuffer>);

impl SealedBuffer {
    /// The memory itself, for a write that takes it without a copy (`store/dma.rs`).
    pub(super) fn memory(&self) -> Rc<DmaBuffer> {
        self.0.clone()
    }
}

impl Deref for SealedBuffer {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

/// A buffer of at least `capacity` bytes (a power of two, one block at least).
fn allocate(capacity: usize, registered: bool) -> DmaBuffer {
    let capacity = capacity.max(DIRECT_IO_ALIGNMENT).next_power_of_two();
    if registered {
        glommio::allocate_dma_buffer(capacity)
    } else {
        glommio::allocate_dma_buffer_global(capacity)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on_executor(test: impl FnOnce() + Send + 'static) {
        glommio::LocalExecutorBuilder::default()
            .spawn(|| async move { test() })
            .expect("executor")
            .join()
            .expect("join");
    }

    #[test]
    fn grows_keeping_what_was_written() {
        on_executor(|| {
            let mut buffer = GroupBuffer::with_capacity(100, true);
            assert_eq!(buffer.capacity(), DIRECT_IO_ALIGNMENT);
            let mut expected = Vec::new();
            for round in 0..3_000u32 {
                let bytes = round.to_le_bytes();
                buffer.extend(4).copy_from_slice(&bytes);
                expected.extend_from_slice(&bytes);
            }
            assert_eq!(buffer.as_slice(), &expected[..]);
            assert_eq!(buffer.capacity(), 16_384);
        });
    }

    #[test]
    fn seals_padded_with_zeros_to_the_block() {
        on_executor(|| {
            let mut buffer = GroupBuffer::with_capacity(8192, true);
            buffer.extend(5000).fill(7);
            let sealed = buffer.seal(4096);
            assert_eq!(sealed.len(), 8192);
            assert!(sealed[..5000].iter().all(|byte| *byte == 7));
            assert!(sealed[5000..].iter().all(|byte| *byte == 0));

            let mut exact = GroupBuffer::with_capacity(4096, false);
            exact.extend(4096).fill(1);
            assert_eq!(exact.seal(4096).len(), 4096);
            assert_eq!(GroupBuffer::with_capacity(0, true).seal(4096).len(), 0);
            assert_eq!(GroupBuffer::default().seal(8).len(), 0);
        });
    }

    #[test]
    fn a_fresh_buffer_is_dirty_memory_until_written() {
        // `extend` hands out memory that may hold anything: the seal's padding is zeroed
        // explicitly, never assumed.
        on_executor(|| {
            let mut first = GroupBuffer::with_capacity(4096, true);
            first.extend(4096).fill(0xAB);
            drop(first.seal(4096));
            let mut second = GroupBuffer::with_capacity(4096, true);
            second.extend(10).fill(1);
            let sealed = second.seal(4096);
            assert!(sealed[10..].iter().all(|byte| *byte == 0));
        });
    }
}
