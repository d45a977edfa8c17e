//! The one narrow file interface all storage I/O goes through (DESIGN §4).
//!
//! Two implementations: [`crate::store::DmaDisk`] (glommio `DmaFile`, O_DIRECT via io_uring,
//! the only place glommio file APIs are used) and [`crate::store::SimDisk`] (in memory, with
//! injectable crashes, torn sectors, bit flips and EIO/ENOSPC) so recovery is tested on
//! purpose. Offsets and lengths passed to `*_aligned` methods are multiples of
//! [`DIRECT_IO_ALIGNMENT`](crate::limits::DIRECT_IO_ALIGNMENT); that precondition is the
//! caller's, and the implementations assert it.

use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::rc::Rc;

use super::write_buffer::SealedBuffer;

/// Zeros for [`SegmentFile::write_zeros_aligned`], a chunk at a time.
static ZEROS: [u8; crate::limits::SPARE_ZERO_CHUNK_BYTES as usize] =
    [0; crate::limits::SPARE_ZERO_CHUNK_BYTES as usize];

/// A boxed single-threaded I/O future (the shard is single-threaded: no `Send`).
pub type IoFuture<'a, T> = Pin<Box<dyn Future<Output = io::Result<T>> + 'a>>;

/// An open file, shared (`Rc`) by the writer and readers of one shard.
pub trait SegmentFile {
    /// Reads up to `len` bytes at `offset` (fewer at end of file). Both aligned.
    fn read_at_aligned(&self, offset: u64, len: usize) -> IoFuture<'_, Vec<u8>>;
    /// Writes all of `data` at `offset`. Both aligned. Not durable until `fdatasync`.
    fn write_at_aligned<'a>(&'a self, offset: u64, data: &'a [u8]) -> IoFuture<'a, ()>;
    /// Writes all of `data` at `offset` (both aligned) and resolves only once those bytes,
    /// and what reading them back needs, are durable: `write_at_aligned` and `fdatasync`
    /// in one operation (the default is that pair). An error means the bytes' fate is
    /// unknown, and the next `fdatasync` syncs for real.
    fn write_durable_aligned<'a>(&'a self, offset: u64, data: &'a [u8]) -> IoFuture<'a, ()> {
        Box::pin(async move {
            self.write_at_aligned(offset, data).await?;
            self.fdatasync().await
        })
    }
    /// `write_at_aligned` for a sealed group, written from the group's own memory where
    /// the file can (no copy on the real disk).
    fn write_group<'a>(&'a self, offset: u64, data: &'a SealedBuffer) -> IoFuture<'a, ()> {
        self.write_at_aligned(offset, data)
    }
    /// `write_durable_aligned` for a sealed group, as `write_group` is for a plain write.
    fn write_group_durable<'a>(&'a self, offset: u64, data: &'a SealedBuffer) -> IoFuture<'a, ()> {
        self.write_durable_aligned(offset, data)
    }
    /// `write_group_durable` as one blocking system call on the calling thread, for
    /// files that have one (`None`: use the future). It stalls the shard for the disk's
    /// round trip; the log calls it only when the shard is idle (`store/blocking_write.rs`).
    fn write_group_blocking(&self, _offset: u64, _data: &SealedBuffer) -> Option<io::Result<()>> {
        None
    }
    /// Writes bytes that need never be durable (zero-ahead: zeros and never-written
    /// blocks read alike), so `fdatasync` need not cover them. Both aligned.
    fn write_ahead_aligned<'a>(&'a self, offset: u64, data: &'a [u8]) -> IoFuture<'a, ()> {
        self.write_at_aligned(offset, data)
    }
    /// Writes zeros over `len` bytes at `offset` (both aligned), bytes that need never be
    /// durable, as `write_ahead_aligned`'s. A real file has them all in flight at once,
    /// so the disk takes them as one stretch (`store/spare_segment.rs`).
    fn write_zeros_aligned(&self, offset: u64, len: u64) -> IoFuture<'_, ()> {
        Box::pin(async move {
            let mut from = offset;
            while from < offset + len {
                let to = (from + ZEROS.len() as u64).min(offset + len);
                self.write_ahead_aligned(from, &ZEROS[..(to - from) as usize]).await?;
                from = to;
            }
            Ok(())
        })
    }
    /// Makes every completed write durable. An error means the data's fate is unknown.
    fn fdatasync(&self) -> IoFuture<'_, ()>;
    /// Reserves blocks so the file is at least `len` bytes (zero-filled); ENOSPC surfaces here.
    fn allocate(&self, len: u64) -> IoFuture<'_, ()>;
    /// Sets the file length to `len` (aligned), discarding anything after it.
    fn truncate(&self, len: u64) -> IoFuture<'_, ()>;
    /// Current file length in bytes.
    fn size(&self) -> IoFuture<'_, u64>;
    /// Closes the file once the last `Rc` holder lets go (later holders close on drop).
    fn close(self: Rc<Self>) -> IoFuture<'static, ()>;
    /// Whether writing zeros ahead of the data makes later fdatasyncs cheaper (a real
    /// file: preallocated blocks are "unwritten" until first written, and converting
    /// them is metadata that each fdatasync must commit). Memory has no such cost.
    fn zero_ahead_pays(&self) -> bool {
        false
    }
    /// Whether `write_durable_aligned` is one operation of its own (a real file: an
    /// O_DSYNC write, no return to the shard and no io-wq worker between the write and
    /// the cache flush) rather than the default pair. The log then chooses between the
    /// two by what each has cost lately (`store/durable_choice.rs`).
    fn has_durable_write(&self) -> bool {
        false
    }
    /// Whether a one-block write lands whole or not at all when power fails. The tail
    /// block pair (`store/tail_block.rs`) rewrites the block holding the older copy of
    /// acknowledged records and relies on it; a file that may tear a block between
    /// sectors gets fresh blocks instead. The simulated disk tears a write's last sector
    /// only, which the walker takes for a torn copy.
    fn writes_blocks_whole(&self) -> bool {
        true
    }
    /// Whether a group bound for this file is encoded into the shard's registered I/O
    /// memory (a real file writes it from there, `write_group`); else into the heap.
    fn takes_registered_memory(&self) -> bool {
        false
    }
}

/// How [`Disk::open`] treats an existing or missing file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// Open an existing file; fail if missing.
    Existing,
    /// Create the file (truncating any previous content).
    Create,
}

/// Directory operations plus opening files. Durability of names needs `fsync_dir`.
pub trait Disk {
    /// Opens `path` for reading and writing.
    fn open(&self, path: &Path, mode: OpenMode) -> IoFuture<'_, Rc<dyn SegmentFile>>;
    /// Creates `path` and its parents.
    fn create_dir_all(&self, path: &Path) -> IoFuture<'_, ()>;
    /// Removes one file.
    fn remove_file(&self, path: &Path) -> IoFuture<'_, ()>;
    /// Removes a directory and everything below it.
    fn remove_dir_all(&self, path: &Path) -> IoFuture<'_, ()>;
    /// Renames `from` to `to`, replacing `to`.
    fn rename(&self, from: &Path, to: &Path) -> IoFuture<'_, ()>;
    /// Names (not paths) of the entries of directory `path`, sorted.
    fn list_dir(&self, path: &Path) -> IoFuture<'_, Vec<String>>;
    /// Makes creations, removals and renames inside directory `path` durable.
    fn fsync_dir(&self, path: &Path) -> IoFuture<'_, ()>;
    /// Granularity of writes: each group commit starts on a multiple of it. Files that are
    /// persisted use the direct-I/O alignment (the on-disk format assumes it); a purely
    /// in-memory disk may use less so small groups do not waste a block each.
    fn block_bytes(&self) -> u64 {
        crate::limits::DIRECT_IO_ALIGNMENT as u64
    }
}

/// Owned copy of a path, for futures that outlive the borrow.
pub(crate) fn owned(path: &Path) -> PathBuf {
    path.to_path_buf()
}
