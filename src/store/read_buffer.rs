//! Reused buffers for direct reads.
//!
//! A forward reader (a pull consumer draining a backlog, a recovery scan) reads 1 MiB
//! windows one after another, and the messages it hands out share the window's bytes.
//! Allocating each window fresh made the allocator return the freed megabyte to the
//! kernel and fault it back in, zeroed, for the next one: on this project's VM, runs of
//! pull consume that did so spent 18 % of their time in `clear_page_erms` and ran at half
//! the rate of runs that did not. Here a window's buffer goes back to a small per-thread
//! pool when the last message sharing it is dropped, and the next read takes it from
//! there, so the pages stay resident.
//!
//! The pool is per thread (a shard's reads take from their own shard's pool); a window
//! dropped on another thread feeds that thread's pool, or is freed when that one is full.

use std::cell::RefCell;

use bytes::Bytes;

/// Buffers kept per thread: enough for each reader's window plus its read-ahead, for a
/// few readers at once.
const POOLED_MAX: usize = 16;

/// Buffers bigger than this are not kept (a window joined across a chunk boundary, or a
/// read of an unusually large record).
const POOLED_CAPACITY_MAX: usize = 2 * crate::limits::RECOVERY_READ_BYTES;

thread_local! {
    static POOL: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// An empty buffer with room for at least `len` bytes, reused when a pooled one fits.
pub fn take(len: usize) -> Vec<u8> {
    let pooled = POOL
        .try_with(|pool| {
            let mut pool = pool.borrow_mut();
            // The smallest that fits, and not one far bigger than asked for: a small read
            // (a get by sequence) must not take a window's megabyte.
            let (index, _) = pool
                .iter()
                .enumerate()
                .filter(|(_, buffer)| buffer.capacity() >= len && buffer.capacity() / 4 <= len)
                .min_by_key(|(_, buffer)| buffer.capacity())?;
            Some(pool.swap_remove(index))
        })
        .ok()
        .flatten();
    match pooled {
        Some(mut buffer) => {
            buffer.clear();
            buffer
        }
        None => Vec::with_capacity(len),
    }
}

/// `buffer` as shared bytes whose storage returns to the pool once every clone and
/// slice of them is dropped.
pub fn share(buffer: Vec<u8>) -> Bytes {
    if buffer.capacity() > POOLED_CAPACITY_MAX {
        return Bytes::from(buffer);
    }
    Bytes::from_owner(Pooled(buffer))
}

/// A buffer that goes back to its thread's pool when dropped.
struct Pooled(Vec<u8>);

impl AsRef<[u8]> for Pooled {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        give(std::mem::take(&mut self.0));
    }
}

/// Returns a buffer no longer needed to this thread's pool (or frees it when the pool is
/// full, the buffer too big, or the thread shutting down).
pub fn give(buffer: Vec<u8>) {
    if buffer.capacity() > POOLED_CAPACITY_MAX || buffer.capacity() == 0 {
        return;
    }
    let _ = POOL.try_with(|pool| {
        let mut pool = pool.borrow_mut();
        if pool.len() < POOLED_MAX {
            pool.push(buffer);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_window_is_reused_by_the_next_read() {
        let mut first = take(4096);
        first.extend_from_slice(&[7; 4096]);
        let pointer = first.as_ptr();
        let shared = share(first);
        let message = shared.slice(100..200);
        drop(shared);
        // Still shared by the message: not reusable yet.
        let fresh = take(4096);
        assert_ne!(fresh.as_ptr(), pointer);
        assert_eq!(&message[..], &[7; 100][..]);
        drop(message);
        let second = take(4096);
        assert_eq!(second.as_ptr(), pointer);
        assert!(second.is_empty());
    }

    fn pooled() -> usize {
        POOL.with(|pool| pool.borrow().len())
    }

    #[test]
    fn oversized_buffers_are_not_kept() {
        let before = pooled();
        let mut big = take(POOLED_CAPACITY_MAX + 1);
        big.push(1);
        drop(share(big));
        assert_eq!(pooled(), before);
        let mut window = take(4096);
        window.push(1);
        drop(share(window));
        assert_eq!(pooled(), before + 1);
    }

    #[test]
    fn a_small_read_does_not_take_a_window_sized_buffer() {
        let mut window = take(1 << 20);
        window.push(1);
        let pointer = window.as_ptr();
        give(window);
        let small = take(4096);
        assert_ne!(small.as_ptr(), pointer);
        assert!(small.capacity() < 1 << 20);
        let reused = take(1 << 20);
        assert_eq!(reused.as_ptr(), pointer);
    }
}
