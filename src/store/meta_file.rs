//! Small whole-file blobs (stream metadata, checkpoints) written atomically through the
//! [`Disk`] interface: write a temporary file, fdatasync it, rename it over the old one,
//! fsync the directory. A reader sees the old or the new content, never a mix; the content
//! carries a CRC32C so a damaged file is reported rather than trusted.

use std::path::Path;

use super::error::Error;
use super::file::{Disk, OpenMode};
use crate::codec::crc;
use crate::limits::{DIRECT_IO_ALIGNMENT, METADATA_FILE_BYTES_MAX};

const MAGIC: &[u8; 4] = b"JCMF";
const PREFIX_BYTES: usize = 16;

/// Rounds `value` up to the direct-I/O alignment.
pub fn align_up(value: u64) -> u64 {
    let alignment = DIRECT_IO_ALIGNMENT as u64;
    value.div_ceil(alignment) * alignment
}

/// Rounds `value` down to the direct-I/O alignment.
pub fn align_down(value: u64) -> u64 {
    value - value % DIRECT_IO_ALIGNMENT as u64
}

/// Whether [`write_replace`] waits for the disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// fdatasync the file and fsync its directory: survives power loss on return.
    Synced,
    /// Leave the new content in the page cache: it survives a crash of the process (the
    /// rename is atomic either way) but not a power loss until the kernel writes it back.
    Cached,
}

/// Atomically replaces `path` with `body`. Durable when this returns `Ok`. `crash_point`
/// names the failpoint between writing the replacement and renaming it into place
/// (`failpoint`'s list).
pub async fn write_atomic(disk: &dyn Disk, path: &Path, body: &[u8], crash_point: &'static str) -> Result<(), Error> {
    write_replace(disk, path, body, Durability::Synced, crash_point).await
}

/// Atomically replaces `path` with `body`, synced or not as `durability` says; see
/// [`write_atomic`] for `crash_point`.
pub async fn write_replace(
    disk: &dyn Disk,
    path: &Path,
    body: &[u8],
    durability: Durability,
    crash_point: &'static str,
) -> Result<(), Error> {
    let temporary = path.with_extension("tmp");
    let mut bytes = Vec::with_capacity(align_up((PREFIX_BYTES + body.len()) as u64) as usize);
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&(body.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&crc::crc32c(body).to_le_bytes());
    bytes.extend_from_slice(body);
    bytes.resize(align_up(bytes.len() as u64) as usize, 0);
    let file = disk.open(&temporary, OpenMode::Create).await.map_err(|e| Error::io("create", &temporary, &e))?;
    file.write_at_aligned(0, &bytes).await.map_err(|e| Error::io("write", &temporary, &e))?;
    if durability == Durability::Synced {
        file.fdatasync().await.map_err(|e| Error::io("fdatasync", &temporary, &e))?;
    }
    file.close().await.map_err(|e| Error::io("close", &temporary, &e))?;
    crate::failpoint::hit(crash_point);
    disk.rename(&temporary, path).await.map_err(|e| Error::io("rename", path, &e))?;
    crate::failpoint::hit("after_meta_rename");
    if durability == Durability::Cached {
        return Ok(());
    }
    let parent = path.parent().unwrap_or(Path::new("."));
    disk.fsync_dir(parent).await.map_err(|e| Error::io("fsync_dir", parent, &e))
}

/// Reads a blob written by [`write_atomic`]. `Ok(None)` when the file does not exist.
pub async fn read(disk: &dyn Disk, path: &Path) -> Result<Option<Vec<u8>>, Error> {
    let file = match disk.open(path, OpenMode::Existing).await {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(Error::io("open", path, &error)),
    };
    let size = file.size().await.map_err(|e| Error::io("size", path, &e))?;
    if size as usize > METADATA_FILE_BYTES_MAX {
        return Err(Error::BadMetadata { path: path.into(), reason: "file too large" });
    }
    let bytes = file.read_at_aligned(0, align_up(size) as usize).await.map_err(|e| Error::io("read", path, &e))?;
    file.close().await.map_err(|e| Error::io("close", path, &e))?;
    decode(bytes).map(Some).map_err(|reason| Error::BadMetadata { path: path.into(), reason })
}

/// The body of a file read whole. Cut out of the read buffer in place: a checkpoint can be
/// tens of MiB, and on a restart every fresh page touched costs (a copy would fault in the
/// checkpoint's size once more).
fn decode(mut bytes: Vec<u8>) -> Result<Vec<u8>, &'static str> {
    if bytes.len() < PREFIX_BYTES || &bytes[0..4] != MAGIC {
        return Err("bad magic");
    }
    let len = u64::from_le_bytes(bytes[4..12].try_into().expect("8 bytes")) as usize;
    let body = bytes.get(PREFIX_BYTES..PREFIX_BYTES.saturating_add(len)).ok_or("truncated")?;
    let crc = u32::from_le_bytes(bytes[12..16].try_into().expect("4 bytes"));
    if crc::crc32c(body) != crc {
        return Err("checksum mismatch");
    }
    bytes.truncate(PREFIX_BYTES + len);
    bytes.drain(..PREFIX_BYTES);
    Ok(bytes)
}
