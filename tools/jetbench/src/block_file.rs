//! The file a durable-write floor writes into: preallocated as jetcore preallocates its
//! segments and, for the written-blocks ways, zeroed and synced first, so every later
//! fdatasync is a cache flush; and the aligned block an O_DIRECT write takes. Shared by
//! `disk-floor` and the durable stand-in (`examples/durable_standin.rs`).

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// One write: jetcore pads a small group to one 4 KiB block.
pub const BLOCK_BYTES: usize = 4096;
/// The test file: large enough that a run never writes a block twice.
pub const FILE_BYTES: u64 = 256 * 1024 * 1024;
/// Zeros are written this much at a time when the file is prepared.
const ZERO_CHUNK_BYTES: usize = 1024 * 1024;

/// A zeroed, block-aligned buffer for O_DIRECT.
pub struct AlignedBlock {
    pub pointer: *mut u8,
    pub layout: Layout,
}

impl AlignedBlock {
    pub fn new(len: usize) -> AlignedBlock {
        let layout = Layout::from_size_align(len, BLOCK_BYTES).expect("block layout");
        // SAFETY: the layout has a non-zero size; a null result is handled below.
        let pointer = unsafe { alloc_zeroed(layout) };
        assert!(!pointer.is_null(), "out of memory");
        AlignedBlock { pointer, layout }
    }

    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: `pointer` owns `layout.size()` initialised bytes until drop.
        unsafe { std::slice::from_raw_parts_mut(self.pointer, self.layout.size()) }
    }

    /// Writes the first `len` bytes to `file` at `offset` with one `pwritev2(flags)`
    /// (`RWF_DSYNC`: durable when it returns); a short write is an error.
    pub fn write_at(&self, file: &File, len: usize, offset: u64, flags: libc::c_int) -> io::Result<()> {
        assert!(len <= self.layout.size(), "write of {len} bytes from a smaller buffer");
        let vector = libc::iovec { iov_base: self.pointer.cast(), iov_len: len };
        // SAFETY: one iovec over `len` initialised bytes of this buffer, live for the call.
        let written = unsafe { libc::pwritev2(file.as_raw_fd(), &vector, 1, offset as libc::off_t, flags) };
        check(written as libc::c_int, "pwritev2")?;
        if written as usize != len {
            return Err(io::Error::other("short write"));
        }
        Ok(())
    }
}

impl Drop for AlignedBlock {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.pointer, self.layout) }
    }
}

/// A system call's result as an `io::Result`, naming the call.
fn check(result: libc::c_int, what: &str) -> io::Result<()> {
    if result < 0 {
        let error = io::Error::last_os_error();
        return Err(io::Error::new(error.kind(), format!("{what}: {error}")));
    }
    Ok(())
}

/// Creates the test file (O_DIRECT), fallocated; with `written` zeroed and synced too.
pub fn prepare(path: &Path, written: bool) -> io::Result<File> {
    let _ = std::fs::remove_file(path);
    let file = OpenOptions::new().read(true).write(true).create(true).custom_flags(libc::O_DIRECT).open(path)?;
    // SAFETY: a valid descriptor; plain fallocate(2) with mode 0, as glommio's pre_allocate.
    check(unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, FILE_BYTES as libc::off_t) }, "fallocate")?;
    if written {
        let chunk = AlignedBlock::new(ZERO_CHUNK_BYTES);
        let mut offset = 0u64;
        while offset < FILE_BYTES {
            // SAFETY: the buffer is aligned and `chunk.layout.size()` bytes long.
            let written = unsafe {
                libc::pwrite(file.as_raw_fd(), chunk.pointer.cast(), chunk.layout.size(), offset as libc::off_t)
            };
            check(written as libc::c_int, "pwrite zeros")?;
            offset += chunk.layout.size() as u64;
        }
    }
    file.sync_all()?;
    Ok(file)
}
