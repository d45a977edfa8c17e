//! [`SimDisk`]: an in-memory disk for tests and for memory storage.
//!
//! Each file keeps the bytes the program sees (`current`) and the bytes that would survive
//! power loss (`durable`, updated by `fdatasync`). Names are durable only after `fsync_dir`.
//! Tests can crash the disk (dropping unsynced writes, or keeping them with the last sector
//! torn to garbage or old data), flip bits, cap capacity (ENOSPC), fail the N-th operation
//! of a kind with any errno, and make the N-th segment write go silently wrong: lost (it
//! reports success and never lands) or misdirected (it lands at another offset and the
//! intended range keeps its old bytes). All operations complete immediately.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::file::{owned, Disk, IoFuture, OpenMode, SegmentFile};

/// Group granularity of a volatile (memory storage) disk: nothing is ever read back by a
/// recovery scan, so groups need no block alignment.
const VOLATILE_BLOCK_BYTES: u64 = 8;

/// Sector size used when tearing the last write at a crash.
pub const SIM_SECTOR_BYTES: usize = 512;

/// Kinds of operation a fault can target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SimOp {
    Read,
    /// Any write to a file, zero-ahead writes included.
    Write,
    Sync,
    Allocate,
    /// A zero-ahead write (counted only; faults are injected through `Write`).
    WriteAhead,
}

/// What a crash does to writes that were not yet made durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashMode {
    /// Every unsynced write is lost.
    DropUnsynced,
    /// Unsynced writes land, except the last sector of the last write, which is torn.
    TearLastSector { garbage: bool },
}

#[derive(Debug, Clone, Copy)]
struct Fault {
    op: SimOp,
    remaining: u64,
    errno: i32,
    persistent: bool,
}

/// A write that reports success but does not do what was asked (reliability row 7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SilentWrite {
    /// Never lands.
    Lost,
    /// Lands `delta_bytes` away from its offset (clamped at 0); the intended range is untouched.
    Misdirected { delta_bytes: i64 },
}

#[derive(Debug, Clone, Copy)]
struct SilentFault {
    /// Counts down over writes to segment files; fires at 1.
    remaining: u64,
    kind: SilentWrite,
}

#[derive(Default)]
struct Inode {
    current: Vec<u8>,
    durable: Vec<u8>,
    last_write: Option<(usize, usize)>,
}

#[derive(Default)]
struct SimState {
    inodes: HashMap<u64, Inode>,
    names: BTreeMap<PathBuf, u64>,
    durable_names: BTreeMap<PathBuf, u64>,
    next_inode: u64,
    faults: Vec<Fault>,
    silent_faults: Vec<SilentFault>,
    capacity_bytes: Option<u64>,
    volatile: bool,
    garbage_seed: u64,
    op_counts: HashMap<SimOp, u64>,
    bytes_read: u64,
    sync_delay_polls: u32,
    /// Files say zero-ahead pays (as real files do).
    zero_ahead: bool,
    /// Zero-ahead writes wait while this is set.
    ahead_held: bool,
    /// Reads wait while this is set.
    reads_held: bool,
}

/// A simulated disk; clones share the same state.
#[derive(Clone, Default)]
pub struct SimDisk {
    state: Rc<RefCell<SimState>>,
}

struct SimFile {
    state: Rc<RefCell<SimState>>,
    inode: u64,
}

fn errno(code: i32) -> io::Error {
    io::Error::from_raw_os_error(code)
}

impl SimState {
    /// Applies fault injection to one operation; `Err` if it must fail.
    fn check_fault(&mut self, op: SimOp) -> io::Result<()> {
        *self.op_counts.entry(op).or_default() += 1;
        for fault in self.faults.iter_mut().filter(|fault| fault.op == op) {
            if fault.remaining > 1 {
                fault.remaining -= 1;
                continue;
            }
            let code = fault.errno;
            if !fault.persistent {
                fault.remaining = u64::MAX; // spent; removed below
            }
            self.faults.retain(|fault| fault.remaining != u64::MAX);
            return Err(errno(code));
        }
        Ok(())
    }

    /// Bytes of files that still have a name (removed files free their space).
    fn used_bytes(&self) -> u64 {
        let mut ids: Vec<u64> = self.names.values().copied().collect();
        ids.sort_unstable();
        ids.dedup();
        ids.iter().filter_map(|id| self.inodes.get(id)).map(|inode| inode.current.len() as u64).sum()
    }

    fn ensure_room(&self, growth: u64) -> io::Result<()> {
        match self.capacity_bytes {
            Some(capacity) if self.used_bytes() + growth > capacity => Err(errno(libc::ENOSPC)),
            _ => Ok(()),
        }
    }

    /// The silent fault that takes this write to inode `id`, if one is due. Only writes to
    /// segment files count.
    fn take_silent_fault(&mut self, id: u64) -> Option<SilentWrite> {
        if self.silent_faults.is_empty() {
            return None;
        }
        let is_segment =
            self.names.iter().any(|(path, inode)| *inode == id && path.extension().is_some_and(|e| e == "seg"));
        if !is_segment {
            return None;
        }
        let mut fired = None;
        for fault in &mut self.silent_faults {
            fault.remaining -= 1;
            if fault.remaining == 0 && fired.is_none() {
                fired = Some(fault.kind);
            }
        }
        self.silent_faults.retain(|fault| fault.remaining > 0);
        fired
    }

    fn inode(&mut self, id: u64) -> io::Result<&mut Inode> {
        self.inodes.get_mut(&id).ok_or_else(|| errno(libc::EBADF))
    }

    fn next_garbage(&mut self) -> u8 {
        self.garbage_seed = self.garbage_seed.wrapping_mul(6364136223846793005).wrapping_add(1);
        (self.garbage_seed >> 33) as u8
    }
}

impl SimDisk {
    /// A disk that tracks durability (for crash tests).
    pub fn new() -> SimDisk {
        SimDisk::default()
    }

    /// A disk with no durable copy: `fdatasync` is free. Used for memory storage.
    pub fn volatile() -> SimDisk {
        let disk = SimDisk::default();
        disk.state.borrow_mut().volatile = true;
        disk
    }

    /// Fails the `nth` (1-based, counted from now) operation of kind `op` with `errno`;
    /// `persistent` makes every later one fail too.
    pub fn fail_nth(&self, op: SimOp, nth: u64, errno: i32, persistent: bool) {
        assert!(nth >= 1);
        self.state.borrow_mut().faults.push(Fault { op, remaining: nth, errno, persistent });
    }

    /// Makes the `nth` (1-based, counted from now) write to a segment file (`*.seg`) go
    /// silently wrong as `kind`. Cleared by [`SimDisk::crash`] and [`SimDisk::clear_faults`].
    pub fn silent_write_nth(&self, nth: u64, kind: SilentWrite) {
        assert!(nth >= 1);
        self.state.borrow_mut().silent_faults.push(SilentFault { remaining: nth, kind });
    }

    /// Silent write faults armed and not yet fired.
    pub fn silent_faults_pending(&self) -> usize {
        self.state.borrow().silent_faults.len()
    }

    /// How many operations of kind `op` were attempted so far.
    pub fn op_count(&self, op: SimOp) -> u64 {
        self.state.borrow().op_counts.get(&op).copied().unwrap_or(0)
    }

    /// Bytes returned by reads so far.
    pub fn bytes_read(&self) -> u64 {
        self.state.borrow().bytes_read
    }

    /// Keeps every later fdatasync in flight for `polls` executor turns (a slow disk).
    pub fn set_sync_delay_polls(&self, polls: u32) {
        self.state.borrow_mut().sync_delay_polls = polls;
    }

    /// Makes files ask for zero-ahead writes (`SegmentFile::zero_ahead_pays`), as real
    /// files do; off by default.
    pub fn set_zero_ahead(&self, on: bool) {
        self.state.borrow_mut().zero_ahead = on;
    }

    /// Holds zero-ahead writes in flight (they complete once released): a slow disk
    /// still busy with the zeros.
    pub fn hold_zero_ahead_writes(&self, held: bool) {
        self.state.borrow_mut().ahead_held = held;
    }

    /// Holds reads in flight (they read and complete once released): a read that the
    /// disk serves only after writes submitted later.
    pub fn hold_reads(&self, held: bool) {
        self.state.borrow_mut().reads_held = held;
    }

    /// Removes all injected faults.
    pub fn clear_faults(&self) {
        let mut state = self.state.borrow_mut();
        state.faults.clear();
        state.silent_faults.clear();
    }

    /// Caps the total bytes of all files; growth beyond it fails with ENOSPC.
    pub fn set_capacity(&self, bytes: Option<u64>) {
        self.state.borrow_mut().capacity_bytes = bytes;
    }

    /// Total bytes currently held by all files.
    pub fn used_bytes(&self) -> u64 {
        self.state.borrow().used_bytes()
    }

    /// Simulates power loss: afterwards only durable names and bytes remain.
    pub fn crash(&self, mode: CrashMode) {
        let mut state = self.state.borrow_mut();
        let ids: Vec<u64> = state.inodes.keys().copied().collect();
        for id in ids {
            let tear: Vec<u8> = (0..SIM_SECTOR_BYTES).map(|_| state.next_garbage()).collect();
            let Some(inode) = state.inodes.get_mut(&id) else {
                continue;
            };
            match mode {
                CrashMode::DropUnsynced => inode.current = inode.durable.clone(),
                CrashMode::TearLastSector { garbage } => tear_last(inode, garbage, &tear),
            }
            inode.durable = inode.current.clone();
            inode.last_write = None;
        }
        state.names = state.durable_names.clone();
        let live: Vec<u64> = state.names.values().copied().collect();
        state.inodes.retain(|id, _| live.contains(id));
        state.faults.clear();
        state.silent_faults.clear();
    }

    /// Flips bit `bit` (0-7) of byte `offset` in `path`, in both durable and current bytes.
    pub fn flip_bit(&self, path: &Path, offset: usize, bit: u8) {
        let mut state = self.state.borrow_mut();
        let id = *state.names.get(path).expect("flip_bit: no such file");
        let inode = state.inodes.get_mut(&id).expect("inode");
        inode.current[offset] ^= 1 << bit;
        inode.durable[offset] ^= 1 << bit;
    }

    /// Cuts `path` to `len` bytes (both copies), like a file editor would.
    pub fn cut(&self, path: &Path, len: usize) {
        let mut state = self.state.borrow_mut();
        let id = *state.names.get(path).expect("cut: no such file");
        let inode = state.inodes.get_mut(&id).expect("inode");
        inode.current.truncate(len);
        inode.durable.truncate(len);
    }

    /// A copy of the current bytes of `path`.
    pub fn contents(&self, path: &Path) -> Option<Vec<u8>> {
        let state = self.state.borrow();
        let id = state.names.get(path)?;
        Some(state.inodes.get(id)?.current.clone())
    }

    /// Paths of all files, sorted.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.state.borrow().names.keys().cloned().collect()
    }
}

fn tear_last(inode: &mut Inode, garbage: bool, tear: &[u8]) {
    let Some((offset, len)) = inode.last_write else {
        return;
    };
    let end = offset + len;
    let start = end.saturating_sub(SIM_SECTOR_BYTES).max(offset);
    for position in start..end.min(inode.current.len()) {
        inode.current[position] =
            if garbage { tear[position - start] } else { inode.durable.get(position).copied().unwrap_or(0) };
    }
}

impl SimFile {
    fn with<T>(&self, op: Option<SimOp>, f: impl FnOnce(&mut SimState, u64) -> io::Result<T>) -> io::Result<T> {
        let mut state = self.state.borrow_mut();
        if let Some(op) = op {
            state.check_fault(op)?;
        }
        f(&mut state, self.inode)
    }
}

impl SegmentFile for SimFile {
    fn read_at_aligned(&self, offset: u64, len: usize) -> IoFuture<'_, Vec<u8>> {
        Box::pin(async move {
            while self.state.borrow().reads_held {
                futures_lite::future::yield_now().await;
            }
            self.with(Some(SimOp::Read), |state, id| {
                let bytes = &state.inode(id)?.current;
                let start = (offset as usize).min(bytes.len());
                let end = (start + len).min(bytes.len());
                let read = bytes[start..end].to_vec();
                state.bytes_read += read.len() as u64;
                Ok(read)
            })
        })
    }

    fn write_at_aligned<'a>(&'a self, offset: u64, data: &'a [u8]) -> IoFuture<'a, ()> {
        let result = self.with(Some(SimOp::Write), |state, id| {
            let offset = match state.take_silent_fault(id) {
                None => offset,
                Some(SilentWrite::Lost) => return Ok(()),
                Some(SilentWrite::Misdirected { delta_bytes }) => offset.saturating_add_signed(delta_bytes),
            };
            let end = offset as usize + data.len();
            let growth = end.saturating_sub(state.inode(id)?.current.len());
            state.ensure_room(growth as u64)?;
            let volatile = state.volatile;
            let inode = state.inode(id)?;
            if inode.current.len() < end {
                inode.current.resize(end, 0);
            }
            inode.current[offset as usize..end].copy_from_slice(data);
            if !volatile {
                inode.last_write = Some((offset as usize, data.len()));
            }
            Ok(())
        });
        Box::pin(async move { result })
    }

    fn write_ahead_aligned<'a>(&'a self, offset: u64, data: &'a [u8]) -> IoFuture<'a, ()> {
        Box::pin(async move {
            while self.state.borrow().ahead_held {
                futures_lite::future::yield_now().await;
            }
            *self.state.borrow_mut().op_counts.entry(SimOp::WriteAhead).or_default() += 1;
            self.write_at_aligned(offset, data).await
        })
    }

    fn zero_ahead_pays(&self) -> bool {
        self.state.borrow().zero_ahead
    }

    fn fdatasync(&self) -> IoFuture<'_, ()> {
        let delay = self.state.borrow().sync_delay_polls;
        Box::pin(async move {
            // A slow disk: the sync stays in flight for `delay` executor turns.
            for _ in 0..delay {
                futures_lite::future::yield_now().await;
            }
            self.with(Some(SimOp::Sync), |state, id| {
                if state.volatile {
                    return Ok(());
                }
                let inode = state.inode(id)?;
                inode.durable = inode.current.clone();
                inode.last_write = None;
                Ok(())
            })
        })
    }

    fn allocate(&self, len: u64) -> IoFuture<'_, ()> {
        let result = self.with(Some(SimOp::Allocate), |state, id| {
            let growth = (len as usize).saturating_sub(state.inode(id)?.current.len());
            state.ensure_room(growth as u64)?;
            let volatile = state.volatile;
            let inode = state.inode(id)?;
            if volatile {
                // Memory storage: reserve the segment's address space once, so writes
                // never reallocate and copy it (a stall in the publish path), but touch
                // no pages: untouched reserved pages cost no memory.
                inode.current.reserve_exact(growth);
                return Ok(());
            }
            if inode.current.len() < len as usize {
                inode.current.resize(len as usize, 0);
            }
            Ok(())
        });
        Box::pin(async move { result })
    }

    fn truncate(&self, len: u64) -> IoFuture<'_, ()> {
        let result = self.with(None, |state, id| {
            let inode = state.inode(id)?;
            inode.current.truncate(len as usize);
            Ok(())
        });
        Box::pin(async move { result })
    }

    fn size(&self) -> IoFuture<'_, u64> {
        let result = self.with(None, |state, id| Ok(state.inode(id)?.current.len() as u64));
        Box::pin(async move { result })
    }

    fn close(self: Rc<Self>) -> IoFuture<'static, ()> {
        Box::pin(async move { Ok(()) })
    }
}

impl SimDisk {
    fn open_now(&self, path: &Path, mode: OpenMode) -> io::Result<Rc<dyn SegmentFile>> {
        let mut state = self.state.borrow_mut();
        let existing = state.names.get(path).copied();
        let inode = match (existing, mode) {
            (Some(id), OpenMode::Existing) => id,
            (None, OpenMode::Existing) => return Err(errno(libc::ENOENT)),
            (Some(id), OpenMode::Create) => {
                state.inode(id)?.current.clear();
                id
            }
            (None, OpenMode::Create) => {
                state.next_inode += 1;
                let id = state.next_inode;
                state.inodes.insert(id, Inode::default());
                state.names.insert(owned(path), id);
                id
            }
        };
        Ok(Rc::new(SimFile { state: self.state.clone(), inode }))
    }

    fn rename_now(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut state = self.state.borrow_mut();
        let moved: Vec<(PathBuf, u64)> = state
            .names
            .iter()
            .filter(|(path, _)| path.starts_with(from))
            .map(|(path, id)| (path.clone(), *id))
            .collect();
        if moved.is_empty() {
            return Err(errno(libc::ENOENT));
        }
        for (path, id) in moved {
            state.names.remove(&path);
            let suffix = path.strip_prefix(from).map_err(|_| errno(libc::EINVAL))?;
            let target = if suffix.as_os_str().is_empty() { owned(to) } else { to.join(suffix) };
            state.names.insert(target, id);
        }
        Ok(())
    }

    fn list_now(&self, dir: &Path) -> Vec<String> {
        let state = self.state.borrow();
        let mut names: Vec<String> = state
            .names
            .keys()
            .filter_map(|path| path.strip_prefix(dir).ok())
            .filter_map(|rest| rest.iter().next())
            .map(|first| first.to_string_lossy().into_owned())
            .collect();
        names.dedup();
        names
    }

    /// Makes the current names directly or indirectly under `dir` durable.
    fn fsync_dir_now(&self, dir: &Path) {
        let mut state = self.state.borrow_mut();
        state.durable_names.retain(|path, _| !path.starts_with(dir));
        let current: Vec<(PathBuf, u64)> = state
            .names
            .iter()
            .filter(|(path, _)| path.starts_with(dir))
            .map(|(path, id)| (path.clone(), *id))
            .collect();
        state.durable_names.extend(current);
    }
}

impl Disk for SimDisk {
    fn open(&self, path: &Path, mode: OpenMode) -> IoFuture<'_, Rc<dyn SegmentFile>> {
        let result = self.open_now(path, mode);
        Box::pin(async move { result })
    }

    fn create_dir_all(&self, _path: &Path) -> IoFuture<'_, ()> {
        Box::pin(async move { Ok(()) })
    }

    fn remove_file(&self, path: &Path) -> IoFuture<'_, ()> {
        let removed = self.state.borrow_mut().names.remove(path);
        let result = removed.map(|_| ()).ok_or_else(|| errno(libc::ENOENT));
        Box::pin(async move { result })
    }

    fn remove_dir_all(&self, path: &Path) -> IoFuture<'_, ()> {
        self.state.borrow_mut().names.retain(|name, _| !name.starts_with(path));
        Box::pin(async move { Ok(()) })
    }

    fn rename(&self, from: &Path, to: &Path) -> IoFuture<'_, ()> {
        let result = self.rename_now(from, to);
        Box::pin(async move { result })
    }

    fn list_dir(&self, path: &Path) -> IoFuture<'_, Vec<String>> {
        let names = self.list_now(path);
        Box::pin(async move { Ok(names) })
    }

    fn fsync_dir(&self, path: &Path) -> IoFuture<'_, ()> {
        self.fsync_dir_now(path);
        Box::pin(async move { Ok(()) })
    }

    fn block_bytes(&self) -> u64 {
        if self.state.borrow().volatile {
            return VOLATILE_BLOCK_BYTES;
        }
        crate::limits::DIRECT_IO_ALIGNMENT as u64
    }
}
