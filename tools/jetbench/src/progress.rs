//! Shared counters and the once-a-second progress line on stderr.
//!
//! Workers add to the counters in batches (not per message) so the atomics stay off the hot
//! path; the line is therefore approximate by up to one batch per worker.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use crate::limits::PROGRESS_INTERVAL;

#[derive(Default)]
pub struct Counters {
    pub published: AtomicU64,
    pub received: AtomicU64,
}

impl Counters {
    pub fn add_published(&self, count: u64) {
        self.published.fetch_add(count, Ordering::Relaxed);
    }

    pub fn add_received(&self, count: u64) {
        self.received.fetch_add(count, Ordering::Relaxed);
    }
}

/// The progress printer; dropping it stops the line.
pub struct Progress {
    stop: Option<mpsc::Sender<()>>,
    printer: Option<JoinHandle<()>>,
}

impl Progress {
    pub fn start(scenario: &'static str, counters: Arc<Counters>, enabled: bool) -> Self {
        if !enabled {
            return Self { stop: None, printer: None };
        }
        let (stop, stopped) = mpsc::channel::<()>();
        let printer = std::thread::Builder::new()
            .name("jetbench-progress".into())
            .spawn(move || print_until_stopped(scenario, &counters, &stopped))
            .expect("spawning the progress thread");
        Self { stop: Some(stop), printer: Some(printer) }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(printer) = self.printer.take() {
            let _ = printer.join();
        }
    }
}

fn print_until_stopped(scenario: &str, counters: &Counters, stopped: &mpsc::Receiver<()>) {
    let start = Instant::now();
    let (mut last_published, mut last_received) = (0u64, 0u64);
    while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(PROGRESS_INTERVAL) {
        let published = counters.published.load(Ordering::Relaxed);
        let received = counters.received.load(Ordering::Relaxed);
        let seconds = PROGRESS_INTERVAL.as_secs_f64();
        let line = format!(
            "jetbench {scenario} [{:>4.0}s] published {published} ({:.0}/s) \
             received {received} ({:.0}/s)",
            start.elapsed().as_secs_f64(),
            (published - last_published) as f64 / seconds,
            (received - last_received) as f64 / seconds,
        );
        let _ = writeln!(std::io::stderr(), "{line}");
        (last_published, last_received) = (published, received);
    }
}
