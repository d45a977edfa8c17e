//! The store directory belongs to one server: an exclusive `flock` on `jetcore.lock` in it,
//! held for the process's life.
//!
//! CONTRACT: `StoreLock::acquire` returns only if no other process holds the lock; the
//! lock file then holds this process's pid. The kernel drops the lock when the process
//! exits, however it exits (`kill -9` included), so a restart after a crash is never
//! blocked; a lock file left behind by a dead server is just a file. The descriptor is
//! close-on-exec, so no child process inherits the lock.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The lock file's name inside the store directory.
pub const LOCK_FILE_NAME: &str = "jetcore.lock";
const LOCK_FILE_MODE: u32 = 0o644;

/// Why the store directory cannot be this server's.
#[derive(Debug)]
pub enum StoreLockError {
    /// Another process holds the lock; its pid, if the lock file says.
    Held { store_dir: PathBuf, holder: Option<u32> },
    /// The lock file cannot be created, locked or written (read-only, not ours, not a dir).
    Unusable { store_dir: PathBuf, lock_file: PathBuf, error: std::io::Error },
}

/// Held for the server's lifetime; dropping it releases the store directory.
pub struct StoreLock {
    _file: File,
}

impl StoreLock {
    pub fn acquire(store_dir: &Path) -> Result<StoreLock, StoreLockError> {
        let lock_file = store_dir.join(LOCK_FILE_NAME);
        let unusable = |error| StoreLockError::Unusable {
            store_dir: store_dir.to_path_buf(),
            lock_file: lock_file.clone(),
            error,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(LOCK_FILE_MODE)
            .open(&lock_file)
            .map_err(unusable)?;
        // SAFETY: flock only reads the descriptor, which `file` keeps open.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let error = std::io::Error::last_os_error();
            if error.raw_os_error() != Some(libc::EWOULDBLOCK) {
                return Err(unusable(error));
            }
            let holder = read_pid(&mut file);
            return Err(StoreLockError::Held { store_dir: store_dir.to_path_buf(), holder });
        }
        write_pid(&mut file).map_err(unusable)?;
        Ok(StoreLock { _file: file })
    }
}

/// The holder's pid; `None` when the file is empty (the holder has not written it yet).
fn read_pid(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

fn write_pid(file: &mut File) -> std::io::Result<()> {
    file.set_len(0)?;
    file.rewind()?;
    writeln!(file, "{}", std::process::id())?;
    file.flush()
}

impl std::fmt::Display for StoreLockError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreLockError::Held { store_dir, holder: Some(pid) } => write!(
                f,
                "store directory {store_dir:?} is in use by another server (pid {pid}); \
                 one store directory serves one server at a time"
            ),
            StoreLockError::Held { store_dir, holder: None } => write!(
                f,
                "store directory {store_dir:?} is in use by another server; \
                 one store directory serves one server at a time"
            ),
            StoreLockError::Unusable { store_dir, lock_file, error } => {
                write!(f, "store directory {store_dir:?} cannot be used: cannot lock {lock_file:?}: {error}")
            }
        }
    }
}
