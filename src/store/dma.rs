//! [`DmaDisk`]: the real disk, glommio `DmaFile` (O_DIRECT through io_uring).
//!
//! This is the only file in the crate that touches glommio's file API, so the runtime can be
//! swapped (DESIGN §4). Writes copy the caller's bytes into a DMA buffer allocated by the
//! file (alignment guaranteed); reads copy out of the read result.
//!
//! Pitfall found here (glommio 0.9.0): the first `DmaFile` opened on a block device runs a
//! probe read on the IOPOLL ring and caches the answer per device for the process. If that
//! first file is empty the read succeeds without reaching the device, so IOPOLL is wrongly
//! cached as supported and every later read of real data fails with EOPNOTSUPP (seen on
//! virtio ext4). So before the first open on a device we open a one-block probe file with
//! real content, which makes glommio's probe answer truthfully.

use std::cell::RefCell;
use std::collections::HashSet;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::rc::Rc;

use glommio::io::{DmaFile, OpenOptions};

use super::file::{owned, Disk, IoFuture, OpenMode, SegmentFile};
use crate::limits::DIRECT_IO_ALIGNMENT;

/// The O_DIRECT disk. Must be used from inside a glommio executor.
#[derive(Debug, Default, Clone, Copy)]
pub struct DmaDisk;

struct DmaSegmentFile {
    file: DmaFile,
}

fn aligned(value: u64) -> bool {
    value % DIRECT_IO_ALIGNMENT as u64 == 0
}

impl SegmentFile for DmaSegmentFile {
    fn read_at_aligned(&self, offset: u64, len: usize) -> IoFuture<'_, Vec<u8>> {
        assert!(
            aligned(offset) && aligned(len as u64),
            "unaligned read {offset}+{len}"
        );
        Box::pin(async move {
            let result = self.file.read_at_aligned(offset, len).await?;
            Ok(result.to_vec())
        })
    }

    fn write_at_aligned<'a>(&'a self, offset: u64, data: &'a [u8]) -> IoFuture<'a, ()> {
        assert!(
            aligned(offset) && aligned(data.len() as u64),
            "unaligned write {offset}"
        );
        Box::pin(async move {
            let mut buffer = self.file.alloc_dma_buffer(data.len());
            buffer.as_bytes_mut().copy_from_slice(data);
            let written = self.file.write_at(buffer, offset).await?;
            if written != data.len() {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "short direct write",
                ));
            }
            Ok(())
        })
    }

    fn fdatasync(&self) -> IoFuture<'_, ()> {
        Box::pin(async move { Ok(self.file.fdatasync().await?) })
    }

    fn allocate(&self, len: u64) -> IoFuture<'_, ()> {
        Box::pin(async move { Ok(self.file.pre_allocate(len, false).await?) })
    }

    fn truncate(&self, len: u64) -> IoFuture<'_, ()> {
        assert!(aligned(len), "unaligned truncate {len}");
        Box::pin(async move { Ok(self.file.truncate(len).await?) })
    }

    fn size(&self) -> IoFuture<'_, u64> {
        Box::pin(async move { Ok(self.file.file_size().await?) })
    }

    fn close(self: Rc<Self>) -> IoFuture<'static, ()> {
        Box::pin(async move {
            if let Ok(only) = Rc::try_unwrap(self) {
                only.file.close().await?;
            }
            Ok(())
        })
    }
}

thread_local! {
    /// Devices whose IOPOLL probe this thread has already steered (see module docs).
    static PROBED_DEVICES: RefCell<HashSet<u64>> = RefCell::new(HashSet::new());
}

const IOPOLL_PROBE_FILE_NAME: &str = ".jetcore-iopoll-probe";

/// Devices probed (or being probed) by any thread. glommio caches its probe answer per
/// device for the whole process, so the first probe on a device must finish before any
/// other thread opens a file there: a second shard opening a file on the same device
/// mid-probe was seen to hang both shards in io_uring at start. Held only for a lookup,
/// never across an `.await`.
static PROBES: std::sync::Mutex<ProbeTable> =
    std::sync::Mutex::new(ProbeTable { done: Vec::new(), running: Vec::new() });

struct ProbeTable {
    done: Vec<u64>,
    running: Vec<u64>,
}

/// What this thread must do about a device's probe.
enum ProbeTurn {
    Done,
    Mine,
    Wait,
}

fn probe_turn(device: u64) -> ProbeTurn {
    let mut table = PROBES.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if table.done.contains(&device) {
        ProbeTurn::Done
    } else if table.running.contains(&device) {
        ProbeTurn::Wait
    } else {
        table.running.push(device);
        ProbeTurn::Mine
    }
}

fn probe_finished(device: u64) {
    let mut table = PROBES.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    table.running.retain(|running| *running != device);
    table.done.push(device);
}

/// Makes glommio's per-device IOPOLL probe read real data (see module docs).
async fn steer_iopoll_probe(dir: &Path) -> io::Result<()> {
    let device = std::fs::metadata(dir)?.dev();
    if PROBED_DEVICES.with(|probed| probed.borrow().contains(&device)) {
        return Ok(());
    }
    loop {
        match probe_turn(device) {
            ProbeTurn::Done => break,
            ProbeTurn::Wait => glommio::timer::sleep(std::time::Duration::from_millis(1)).await,
            ProbeTurn::Mine => {
                let probed = probe_device(dir).await;
                probe_finished(device);
                probed?;
                break;
            }
        }
    }
    PROBED_DEVICES.with(|probed| probed.borrow_mut().insert(device));
    Ok(())
}

async fn probe_device(dir: &Path) -> io::Result<()> {
    let probe = dir.join(IOPOLL_PROBE_FILE_NAME);
    std::fs::write(&probe, vec![0xA5u8; DIRECT_IO_ALIGNMENT])?;
    let opened = DmaFile::open(&probe).await;
    let _ = std::fs::remove_file(&probe);
    opened?.close().await?;
    Ok(())
}

impl Disk for DmaDisk {
    fn open(&self, path: &Path, mode: OpenMode) -> IoFuture<'_, Rc<dyn SegmentFile>> {
        let path = owned(path);
        Box::pin(async move {
            steer_iopoll_probe(path.parent().unwrap_or(Path::new("."))).await?;
            let mut options = OpenOptions::new();
            options.read(true).write(true);
            if mode == OpenMode::Create {
                options.create(true).truncate(true);
            }
            let file = options.dma_open(&path).await?;
            Ok(Rc::new(DmaSegmentFile { file }) as Rc<dyn SegmentFile>)
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
            let directory = glommio::io::Directory::open(&path).await?;
            directory.sync().await?;
            directory.close().await?;
            Ok(())
        })
    }
}
