//! How much work this shard has handled: one count per client operation and per mesh
//! envelope. The store asks whether anything but a group's own publishes happened since
//! its last write, before it makes that group durable with a call that blocks the
//! thread (`store/blocking_write.rs`).

use std::cell::Cell;

thread_local! {
    /// Without lazy initialisation: every client operation counts here.
    static WORK: Cell<u64> = const { Cell::new(0) };
}

/// One client operation or mesh envelope handled on this thread.
pub fn note() {
    WORK.with(|work| work.set(work.get().wrapping_add(1)));
}

/// Everything [`note`]d on this thread so far (wrapping).
pub fn count() -> u64 {
    WORK.with(Cell::get)
}
