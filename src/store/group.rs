//! Group commit building blocks: a [`Group`] of encoded records bound for one segment, and
//! a small waker list.
//!
//! A group's buffer (`store/write_buffer.rs`) is freed once the group is written: a stream
//! holds one only while it has appends waiting to be written, so an idle stream holds none.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use super::error::Error;
use super::file::SegmentFile;
use super::write_buffer::{GroupBuffer, SealedBuffer};

/// Tasks waiting for something; woken all at once.
#[derive(Default)]
pub struct WakerList {
    wakers: RefCell<Vec<Waker>>,
}

impl WakerList {
    /// Adds `waker`. No duplicate check: a group can have a thousand waiters, and a
    /// spurious second wake is harmless while an O(n) scan per registration is not.
    pub fn register(&self, waker: &Waker) {
        self.wakers.borrow_mut().push(waker.clone());
    }

    pub fn wake_all(&self) {
        let wakers = std::mem::take(&mut *self.wakers.borrow_mut());
        wakers.into_iter().for_each(Waker::wake);
    }

    /// Resolves the next time `wake_all` is called after the first poll.
    pub fn wait(&self) -> WakerWait<'_> {
        WakerWait { list: self, registered: false }
    }
}

pub struct WakerWait<'a> {
    list: &'a WakerList,
    registered: bool,
}

impl Future for WakerWait<'_> {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<()> {
        if self.registered {
            return Poll::Ready(());
        }
        self.list.register(context.waker());
        self.registered = true;
        Poll::Pending
    }
}

/// How a group carries a tail block (`store/tail_block.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Carry {
    /// Where the newest copy of the carried block was.
    pub from: u64,
    /// Bytes carried (the group's first).
    pub len: usize,
}

/// Records appended together and made durable by one write (and one fdatasync).
pub struct Group {
    pub segment_id: u64,
    pub path: PathBuf,
    pub file: Rc<dyn SegmentFile>,
    /// Aligned offset where the group starts (moved only before it is sealed, when a
    /// carrying group outgrows its block, `store/tail_block.rs`).
    offset: Cell<u64>,
    /// Encoded records; taken by the flush when the group is sealed.
    pub bytes: RefCell<GroupBuffer>,
    /// The sealed bytes, padded to alignment, while the write is in flight.
    pub sealed: RefCell<Option<SealedBuffer>>,
    /// Highest message sequence in the group (0 if it holds only other records).
    pub last_seq: Cell<u64>,
    /// Records encoded into the group (for the group-commit size metrics).
    pub records: Cell<u32>,
    /// Some record in the group waits to be durable before its ack, so under sync
    /// `always` its flush fdatasyncs. False while every record is a deferred one
    /// ([`super::log::SegmentLog::deferred`]): then the group completes once written, and
    /// whoever deferred it syncs later.
    pub needs_sync: Cell<bool>,
    /// Someone waits for the group to be durable ([`super::log::SegmentLog::wait_durable`]).
    /// A group of deferred records only is written once it is full, wanted, or followed
    /// by another group (`flush.rs`), so a restore writes whole groups.
    pub wanted: Cell<bool>,
    /// Takes no more appends (a checkpoint's cut ends here; appends after it start a new
    /// group on the next block boundary).
    closed: Cell<bool>,
    /// The group begins with a copy of the segment's tail block and stays within one
    /// block (`store/tail_block.rs`).
    pub carry: Cell<Option<Carry>>,
    /// Bytes of records in the group (carried ones included), without the seal's padding.
    pub content_len: Cell<usize>,
    /// The last record that starts on a block boundary (the group's start at first).
    pub block_record_start: Cell<u64>,
    /// The last purge record's offset: a tail block holding one is not carried.
    pub purge_at: Cell<Option<u64>>,
    outcome: RefCell<Option<Result<(), Error>>>,
    pub waiters: WakerList,
}

impl Group {
    pub fn new(segment_id: u64, path: PathBuf, file: Rc<dyn SegmentFile>, offset: u64, bytes: GroupBuffer) -> Group {
        Group {
            segment_id,
            path,
            file,
            offset: Cell::new(offset),
            bytes: RefCell::new(bytes),
            sealed: RefCell::new(None),
            last_seq: Cell::new(0),
            records: Cell::new(0),
            needs_sync: Cell::new(false),
            wanted: Cell::new(false),
            closed: Cell::new(false),
            carry: Cell::new(None),
            content_len: Cell::new(0),
            block_record_start: Cell::new(offset),
            purge_at: Cell::new(None),
            outcome: RefCell::new(None),
            waiters: WakerList::default(),
        }
    }

    /// This group, beginning with the carried copy of a tail block (already in its bytes).
    pub fn carrying(self, carry: Carry) -> Group {
        self.carry.set(Some(carry));
        self
    }

    pub fn offset(&self) -> u64 {
        self.offset.get()
    }

    /// Moves the group, not yet sealed, to `offset`.
    pub fn move_to(&self, offset: u64) {
        assert!(!self.is_sealed(), "moving a sealed group");
        self.offset.set(offset);
    }

    /// Whether the group may grow to `len` bytes: a carrying group stays within its block.
    pub fn fits(&self, len: usize, block_bytes: u64) -> bool {
        self.carry.get().is_none() || len as u64 <= block_bytes
    }

    /// Whether a checkpoint's cut closed the group.
    pub fn is_closed(&self) -> bool {
        self.closed.get()
    }

    pub fn is_sealed(&self) -> bool {
        self.sealed.borrow().is_some()
    }

    /// Whether appends may still join the group.
    pub fn takes_appends(&self) -> bool {
        !self.is_sealed() && !self.closed.get()
    }

    /// Lets no more appends join; the flush still writes the group as usual.
    pub fn close(&self) {
        self.closed.set(true);
    }

    pub fn outcome(&self) -> Option<Result<(), Error>> {
        self.outcome.borrow().clone()
    }

    /// Records the result and wakes every append waiting on this group.
    pub fn complete(&self, result: Result<(), Error>) {
        let mut outcome = self.outcome.borrow_mut();
        if outcome.is_none() {
            *outcome = Some(result);
        }
        drop(outcome);
        self.waiters.wake_all();
    }

    /// Bytes of the record at `offset` (within this group), if present.
    pub fn bytes_from(&self, offset: u64) -> Option<Vec<u8>> {
        let start = offset.checked_sub(self.offset())? as usize;
        if let Some(sealed) = self.sealed.borrow().as_ref() {
            return sealed.get(start..).map(<[u8]>::to_vec);
        }
        self.bytes.borrow().as_slice().get(start..).map(<[u8]>::to_vec)
    }
}
