//! [`DmaDisk`]: the real disk, glommio `DmaFile` (O_DIRECT through io_uring).
//!
//! This file and `store/write_buffer.rs` (a group's memory) are where the store touches
//! glommio's file API, so the runtime can be swapped (DESIGN §4). A group is
//! written from its own DMA memory; other writes copy the caller's bytes into a DMA buffer
//! allocated by the file (alignment guaranteed); reads copy out of the read result.
//!
//! Pitfall found here (glommio 0.9.0): the first `DmaFile` opened on a block device runs a
//! probe read on the IOPOLL ring and caches the answer per device (per executor thread:
//! a thread that skipped its own probe because another thread had probed the device read
//! EOPNOTSUPP from every file, seen in tests/engine_restart.rs). If that
//! first file is empty the read succeeds without reaching the device, so IOPOLL is wrongly
//! cached as supported and every later read of real data fails with EOPNOTSUPP (seen on
//! virtio ext4). So before the first open on a device we open a one-block probe file with
//! real content, which makes glommio's probe answer truthfully.
//!
//! Pitfall two (glommio 0.9.0): `Directory::open` submits openat with a dirfd of -1
//! instead of AT_FDCWD. The kernel ignores the dirfd for an absolute path, so tests with
//! temporary directories never saw it; for a relative one (the server's default `./data`)
//! it fails with EBADF, and so every stream create failed in `fsync_dir`. `DmaFile` opens
//! are not affected (glommio makes their path absolute itself). `fsync_dir` makes its path
//! absolute, and the server resolves every user path at start-up (`Options::resolve_paths`).

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::task::Poll;

use glommio::io::{DmaBuffer, DmaFile, OpenOptions};

use super::file::{owned, Disk, IoFuture, OpenMode, SegmentFile};
use super::write_buffer::SealedBuffer;
use crate::limits::{DIRECT_IO_ALIGNMENT, SPARE_ZERO_CHUNK_BYTES};

/// The O_DIRECT disk. Must be used from inside a glommio executor.
#[derive(Debug, Default, Clone, Copy)]
pub struct DmaDisk;

struct DmaSegmentFile {
    file: DmaFile,
    path: PathBuf,
    /// The same file opened again with O_DSYNC, on its first durable write: a write
    /// through it is durable when it completes (on a disk without FUA the kernel follows
    /// the write with a cache flush before it posts the completion). One io_uring
    /// operation per durable group instead of a write, a return to the shard and an
    /// fdatasync on an io-wq worker; whether that is faster depends on the machine, and
    /// `store/durable_choice.rs` decides per group.
    durable: RefCell<Option<Rc<DmaFile>>>,
    /// Something since the last durability point that a durable write does not cover (a
    /// plain write, a preallocation, a truncation, an earlier process's writes): the next
    /// `fdatasync` must really sync.
    needs_sync: Cell<bool>,
    /// The device writes a block whole ([`writes_blocks_whole`]).
    whole_blocks: bool,
}

impl DmaSegmentFile {
    /// The O_DSYNC descriptor, opened on first use.
    async fn durable_file(&self) -> io::Result<Rc<DmaFile>> {
        if let Some(durable) = self.durable.borrow().as_ref() {
            return Ok(durable.clone());
        }
        let mut options = OpenOptions::new();
        options.read(true).write(true).custom_flags(libc::O_DSYNC);
        let opened = Rc::new(options.dma_open(&self.path).await?);
        // Writes never overlap (store/flush.rs), so no other open raced this one.
        *self.durable.borrow_mut() = Some(opened.clone());
        Ok(opened)
    }
}

fn aligned(value: u64) -> bool {
    value % DIRECT_IO_ALIGNMENT as u64 == 0
}

impl SegmentFile for DmaSegmentFile {
    fn read_at_aligned(&self, offset: u64, len: usize) -> IoFuture<'_, Vec<u8>> {
        assert!(aligned(offset) && aligned(len as u64), "unaligned read {offset}+{len}");
        Box::pin(async move {
            let result = self.file.read_at_aligned(offset, len).await?;
            let mut buffer = super::read_buffer::take(result.len());
            buffer.extend_from_slice(&result);
            Ok(buffer)
        })
    }

    fn write_at_aligned<'a>(&'a self, offset: u64, data: &'a [u8]) -> IoFuture<'a, ()> {
        assert!(aligned(offset) && aligned(data.len() as u64), "unaligned write {offset}");
        Box::pin(self.write_plain(offset, copied(&self.file, data)))
    }

    fn write_group<'a>(&'a self, offset: u64, data: &'a SealedBuffer) -> IoFuture<'a, ()> {
        assert!(aligned(offset) && aligned(data.len() as u64), "unaligned write {offset}");
        Box::pin(self.write_plain(offset, data.memory()))
    }

    fn write_durable_aligned<'a>(&'a self, offset: u64, data: &'a [u8]) -> IoFuture<'a, ()> {
        assert!(aligned(offset) && aligned(data.len() as u64), "unaligned write {offset}");
        Box::pin(self.write_durable(offset, copied(&self.file, data)))
    }

    fn write_group_durable<'a>(&'a self, offset: u64, data: &'a SealedBuffer) -> IoFuture<'a, ()> {
        assert!(aligned(offset) && aligned(data.len() as u64), "unaligned write {offset}");
        Box::pin(self.write_durable(offset, data.memory()))
    }

    fn write_group_blocking(&self, offset: u64, data: &SealedBuffer) -> Option<io::Result<()>> {
        assert!(aligned(offset) && aligned(data.len() as u64), "unaligned write {offset}");
        let written = write_blocking_dsync(&self.file, offset, data);
        if written.is_err() {
            self.needs_sync.set(true); // what reached the disk is unknown
        }
        Some(written)
    }

    fn write_ahead_aligned<'a>(&'a self, offset: u64, data: &'a [u8]) -> IoFuture<'a, ()> {
        assert!(aligned(offset) && aligned(data.len() as u64), "unaligned write {offset}");
        Box::pin(write_all(&self.file, offset, copied(&self.file, data)))
    }

    fn write_zeros_aligned(&self, offset: u64, len: u64) -> IoFuture<'_, ()> {
        assert!(aligned(offset) && aligned(len), "unaligned write {offset}");
        Box::pin(async move {
            let chunk = len.min(SPARE_ZERO_CHUNK_BYTES);
            let mut zeros = self.file.alloc_dma_buffer(chunk as usize);
            zeros.as_bytes_mut().fill(0);
            let zeros = Rc::new(zeros);
            let writes = (offset..offset + len).step_by(chunk as usize).map(|from| {
                let memory = match (offset + len - from).min(chunk) {
                    tail if tail < chunk => copied(&self.file, &zeros.as_bytes()[..tail as usize]),
                    _ => zeros.clone(),
                };
                Box::pin(write_all(&self.file, from, memory)) as IoFuture<'_, ()>
            });
            all_written(writes.collect()).await
        })
    }

    fn fdatasync(&self) -> IoFuture<'_, ()> {
        Box::pin(async move {
            if !self.needs_sync.get() {
                return Ok(()); // every write since the last sync was durable when it completed
            }
            self.needs_sync.set(false);
            let synced = self.file.fdatasync().await.map_err(io::Error::from);
            if synced.is_err() {
                self.needs_sync.set(true);
            }
            synced
        })
    }

    fn zero_ahead_pays(&self) -> bool {
        true
    }

    fn has_durable_write(&self) -> bool {
        true
    }

    fn writes_blocks_whole(&self) -> bool {
        self.whole_blocks
    }

    fn takes_registered_memory(&self) -> bool {
        true
    }

    fn allocate(&self, len: u64) -> IoFuture<'_, ()> {
        self.needs_sync.set(true);
        Box::pin(async move { Ok(self.file.pre_allocate(len, false).await?) })
    }

    fn truncate(&self, len: u64) -> IoFuture<'_, ()> {
        assert!(aligned(len), "unaligned truncate {len}");
        self.needs_sync.set(true);
        Box::pin(async move { Ok(self.file.truncate(len).await?) })
    }

    fn size(&self) -> IoFuture<'_, u64> {
        Box::pin(async move { Ok(self.file.file_size().await?) })
    }

    fn close(self: Rc<Self>) -> IoFuture<'static, ()> {
        Box::pin(async move {
            if let Ok(only) = Rc::try_unwrap(self) {
                if let Some(durable) = only.durable.take().and_then(|durable| Rc::try_unwrap(durable).ok()) {
                    durable.close().await?;
                }
                only.file.close().await?;
            }
            Ok(())
        })
    }
}

impl DmaSegmentFile {
    /// A write that `fdatasync` must cover.
    async fn write_plain(&self, offset: u64, memory: Rc<DmaBuffer>) -> io::Result<()> {
        self.needs_sync.set(true);
        let written = write_all(&self.file, offset, memory).await;
        // Again on completion: an fdatasync that ran while this write was in flight
        // (another group's, with two flushers) cleared the mark without covering it.
        self.needs_sync.set(true);
        written
    }

    /// A write through the O_DSYNC descriptor: durable when it completes.
    async fn write_durable(&self, offset: u64, memory: Rc<DmaBuffer>) -> io::Result<()> {
        let durable = self.durable_file().await?;
        let written = write_all(&durable, offset, memory).await;
        if written.is_err() {
            self.needs_sync.set(true); // what reached the disk is unknown
        }
        written
    }
}

/// `data` (aligned) in a DMA buffer of the file's own (alignment guaranteed).
fn copied(file: &DmaFile, data: &[u8]) -> Rc<DmaBuffer> {
    let mut buffer = file.alloc_dma_buffer(data.len());
    buffer.as_bytes_mut().copy_from_slice(data);
    Rc::new(buffer)
}

/// Writes all of `memory` (aligned) at `offset` through `file`.
async fn write_all(file: &DmaFile, offset: u64, memory: Rc<DmaBuffer>) -> io::Result<()> {
    let len = memory.len();
    if file.write_rc_at(memory, offset).await? != len {
        return Err(io::Error::new(io::ErrorKind::WriteZero, "short direct write"));
    }
    Ok(())
}

/// Waits for every one of `writes` (all in flight at once), then returns the first error.
/// A spare's zeros go to the disk together: one publish waits behind them, not one per
/// chunk (perf/latency.md, 2026-12-07).
async fn all_written(mut writes: Vec<IoFuture<'_, ()>>) -> std::io::Result<()> {
    let mut outcomes: Vec<Option<std::io::Result<()>>> = writes.iter().map(|_| None).collect();
    std::future::poll_fn(|context| {
        let mut pending = false;
        for (write, outcome) in writes.iter_mut().zip(outcomes.iter_mut()) {
            if outcome.is_none() {
                match write.as_mut().poll(context) {
                    Poll::Ready(result) => *outcome = Some(result),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    outcomes.into_iter().flatten().collect()
}

/// Writes all of `data` (a group's DMA memory: aligned) at `offset` with one blocking
/// `pwritev2(RWF_DSYNC)` on this thread: durable when it returns
/// (`store/blocking_write.rs` says when that pays).
fn write_blocking_dsync(file: &DmaFile, offset: u64, data: &SealedBuffer) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let vector = libc::iovec { iov_base: data.as_ptr().cast_mut().cast(), iov_len: data.len() };
    // SAFETY: the iovec points into `data`, alive for the call; the kernel only reads it.
    let written = unsafe { libc::pwritev2(file.as_raw_fd(), &vector, 1, offset as libc::off_t, libc::RWF_DSYNC) };
    if written < 0 {
        return Err(io::Error::last_os_error());
    }
    if written as usize != data.len() {
        return Err(io::Error::new(io::ErrorKind::WriteZero, "short direct write"));
    }
    Ok(())
}

thread_local! {
    /// Devices whose IOPOLL probe this thread has already steered (see module docs).
    static PROBED_DEVICES: RefCell<HashSet<u64>> = RefCell::new(HashSet::new());
    /// Per device, whether it writes a block whole ([`writes_blocks_whole`]).
    static WHOLE_BLOCK_DEVICES: RefCell<HashMap<u64, bool>> = RefCell::new(HashMap::new());
}

/// Whether the block device `device` (a directory's `st_dev`) writes a block of [`DIRECT_IO_ALIGNMENT`] bytes
/// whole or not at all when power fails: its physical sector is at least that large, as
/// sysfs says (`/sys/dev/block/MAJOR:MINOR`, or the disk a partition is on). A device
/// sysfs does not know (a network or stacked file system without an entry) counts as
/// not: the tail block pair, which rewrites blocks holding the older copy of
/// acknowledged records, is then not used (`store/tail_block.rs`).
///
/// `JETCORE_TAIL_BLOCKS=on` or `=off` overrides the answer, for a disk sysfs does not
/// describe (a container's overlay over a 4 KiB-sector disk, say) and for tests.
fn writes_blocks_whole(device: u64) -> bool {
    match std::env::var(TAIL_BLOCKS_ENV).as_deref() {
        Ok("on") => true,
        Ok("off") => false,
        _ => device_writes_blocks_whole(device),
    }
}

/// The environment variable that overrides [`writes_blocks_whole`].
pub const TAIL_BLOCKS_ENV: &str = "JETCORE_TAIL_BLOCKS";

/// [`writes_blocks_whole`] as the device says.
fn device_writes_blocks_whole(device: u64) -> bool {
    if let Some(whole) = WHOLE_BLOCK_DEVICES.with(|devices| devices.borrow().get(&device).copied()) {
        return whole;
    }
    let node = PathBuf::from(format!("/sys/dev/block/{}:{}", libc::major(device), libc::minor(device)));
    let sector = ["queue/physical_block_size", "../queue/physical_block_size"]
        .iter()
        .find_map(|file| std::fs::read_to_string(node.join(file)).ok()?.trim().parse::<u64>().ok());
    let whole = sector.is_some_and(|bytes| bytes >= DIRECT_IO_ALIGNMENT as u64);
    WHOLE_BLOCK_DEVICES.with(|devices| devices.borrow_mut().insert(device, whole));
    whole
}

const IOPOLL_PROBE_FILE_NAME: &str = ".jetcore-iopoll-probe";

/// Makes glommio's per-device IOPOLL probe read real data (see module docs); `device` is
/// `dir`'s.
async fn steer_iopoll_probe(dir: &Path, device: u64) -> io::Result<()> {
    if PROBED_DEVICES.with(|probed| probed.borrow().contains(&device)) {
        return Ok(());
    }
    // One probe file per thread: every shard probes for itself (glommio's answer is kept
    // per executor), and shards probing the same directory at once (each reads every
    // stream's metadata at start) must not remove each other's file, since glommio
    // unwraps a `statfs` of the path right after opening it (seen: ENOENT panic).
    let thread = format!("{:?}", std::thread::current().id());
    let thread: String = thread.chars().filter(char::is_ascii_digit).collect();
    let probe = dir.join(format!("{IOPOLL_PROBE_FILE_NAME}-{thread}"));
    std::fs::write(&probe, vec![0xA5u8; DIRECT_IO_ALIGNMENT])?;
    let opened = DmaFile::open(&probe).await;
    let _ = std::fs::remove_file(&probe);
    opened?.close().await?;
    PROBED_DEVICES.with(|probed| probed.borrow_mut().insert(device));
    Ok(())
}

impl Disk for DmaDisk {
    fn open(&self, path: &Path, mode: OpenMode) -> IoFuture<'_, Rc<dyn SegmentFile>> {
        let path = owned(path);
        Box::pin(async move {
            let dir = path.parent().unwrap_or(Path::new("."));
            let device = std::fs::metadata(dir)?.dev();
            steer_iopoll_probe(dir, device).await?;
            let whole_blocks = writes_blocks_whole(device);
            let mut options = OpenOptions::new();
            options.read(true).write(true);
            if mode == OpenMode::Create {
                options.create(true).truncate(true);
            }
            let file = options.dma_open(&path).await?;
            let durable = RefCell::new(None);
            let needs_sync = Cell::new(true);
            Ok(Rc::new(DmaSegmentFile { file, path, durable, needs_sync, whole_blocks }) as Rc<dyn SegmentFile>)
        })
    }

    fn create_dir_all(&self, path: &Path) -> IoFuture<'_, ()> {
        let path = owned(path);
        Box::pin(async move { std::fs::create_dir_all(path) })
    }

    fn remove_file(&self, path: &Path) -> IoFuture<'_, ()> {
        let path = owned(path);
        Box::pin(async move { Ok(glommio::io::remove(path).await?) })
    }

    fn remove_dir_all(&self, path: &Path) -> IoFuture<'_, ()> {
        let path = owned(path);
        Box::pin(async move { std::fs::remove_dir_all(path) })
    }

    fn rename(&self, from: &Path, to: &Path) -> IoFuture<'_, ()> {
        let (from, to) = (owned(from), owned(to));
        Box::pin(async move { Ok(glommio::io::rename(from, to).await?) })
    }

    fn list_dir(&self, path: &Path) -> IoFuture<'_, Vec<String>> {
        let path = owned(path);
        Box::pin(async move {
            let mut names = Vec::new();
            for entry in std::fs::read_dir(path)? {
                names.push(entry?.file_name().to_string_lossy().into_owned());
            }
            names.sort();
            Ok(names)
        })
    }

    fn fsync_dir(&self, path: &Path) -> IoFuture<'_, ()> {
        let path = owned(path);
        Box::pin(async move {
            // glommio 0.9's `Directory::open` calls openat(-1, path): the dirfd is ignored
            // for an absolute path, but a relative one fails with EBADF (its `DmaFile`
            // opens make the path absolute first; its `Directory` does not).
            let path = std::path::absolute(&path)?;
            let directory = glommio::io::Directory::open(&path).await?;
            directory.sync().await?;
            directory.close().await?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_system_without_a_block_device_does_not_write_blocks_whole() {
        // procfs has an anonymous device number, which sysfs has no entry for.
        let device = std::fs::metadata("/proc").expect("procfs").dev();
        assert!(!device_writes_blocks_whole(device));
    }
}
