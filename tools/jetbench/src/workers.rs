//! Client worker threads: named, optionally pinned to CPUs, joined with their errors.

use std::thread::JoinHandle;

use crate::cli::CpuList;
use crate::error::{BenchError, Result};

/// Spawns and joins the worker threads of one run.
pub struct Workers<T> {
    handles: Vec<JoinHandle<Result<T>>>,
    cpus: Option<CpuList>,
    spawned: usize,
}

impl<T: Send + 'static> Workers<T> {
    pub fn new(cpus: Option<CpuList>) -> Self {
        Self { handles: Vec::new(), cpus, spawned: 0 }
    }

    /// Starts `work` on a thread named `name`, pinned to the next CPU of the list (if any).
    pub fn spawn(&mut self, name: String, work: impl FnOnce() -> Result<T> + Send + 'static) {
        let cpu = self.cpus.as_ref().map(|list| list.0[self.spawned % list.0.len()]);
        self.spawned += 1;
        let handle = std::thread::Builder::new()
            .name(name)
            .spawn(move || {
                if let Some(id) = cpu {
                    // Pinning is best effort: a CPU outside the allowed set leaves it unpinned.
                    core_affinity::set_for_current(core_affinity::CoreId { id });
                }
                work()
            })
            .expect("spawning a worker thread");
        self.handles.push(handle);
    }

    /// Waits for every worker; the first error wins, but all are joined first.
    pub fn join(self) -> Result<Vec<T>> {
        let mut results = Vec::with_capacity(self.handles.len());
        let mut first_error = None;
        for handle in self.handles {
            let name = handle.thread().name().unwrap_or("worker").to_string();
            match handle.join() {
                Ok(Ok(value)) => results.push(value),
                Ok(Err(error)) => {
                    first_error.get_or_insert(error);
                }
                Err(_) => {
                    first_error.get_or_insert(BenchError::WorkerPanicked(name));
                }
            }
        }
        match first_error {
            Some(error) => Err(error),
            None => Ok(results),
        }
    }
}
