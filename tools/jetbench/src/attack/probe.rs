//! While an attack runs: a second connection measures PING round trips, and the server's
//! resident memory is sampled, so each attack reports what it did to everyone else.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::wire::Wire;

/// Gap between two PINGs of the prober (it waits for each PONG first).
const PING_GAP: Duration = Duration::from_millis(2);
/// A PONG later than this counts as lost (the server stopped answering).
const PONG_WAIT_MAX: Duration = Duration::from_secs(5);

pub struct Measured {
    pub pings: u64,
    pub ping_p50_micros: u64,
    pub ping_p99_micros: u64,
    pub ping_max_micros: u64,
    /// PINGs that got no PONG within `PONG_WAIT_MAX` (or a closed prober).
    pub pings_lost: u64,
    pub rss_before_bytes: u64,
    pub rss_peak_bytes: u64,
}

pub struct Probe {
    stop: Arc<AtomicBool>,
    pinger: JoinHandle<(Histogram<u64>, u64)>,
    sampler: JoinHandle<u64>,
    rss_before_bytes: u64,
}

impl Probe {
    pub fn start(port: u16, pid: u32) -> std::io::Result<Probe> {
        let stop = Arc::new(AtomicBool::new(false));
        let mut wire = Wire::connect(port, PONG_WAIT_MAX)?;
        let rss_before_bytes = resident_bytes(pid);
        let pinger = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut histogram = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("histogram bounds");
                let mut lost = 0;
                while !stop.load(Ordering::Relaxed) {
                    let sent = Instant::now();
                    match wire.round_trip() {
                        Ok(_) => {
                            let _ = histogram.record(sent.elapsed().as_micros().max(1) as u64);
                        }
                        Err(_) => {
                            lost += 1;
                            break;
                        }
                    }
                    std::thread::sleep(PING_GAP);
                }
                (histogram, lost)
            })
        };
        let sampler = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut peak = 0;
                while !stop.load(Ordering::Relaxed) {
                    peak = peak.max(resident_bytes(pid));
                    std::thread::sleep(Duration::from_millis(5));
                }
                peak.max(resident_bytes(pid))
            })
        };
        Ok(Probe { stop, pinger, sampler, rss_before_bytes })
    }

    pub fn finish(self) -> Measured {
        self.stop.store(true, Ordering::Relaxed);
        let (histogram, pings_lost) = self.pinger.join().expect("pinger thread");
        let rss_peak_bytes = self.sampler.join().expect("sampler thread");
        Measured {
            pings: histogram.len(),
            ping_p50_micros: histogram.value_at_quantile(0.50),
            ping_p99_micros: histogram.value_at_quantile(0.99),
            ping_max_micros: histogram.max(),
            pings_lost,
            rss_before_bytes: self.rss_before_bytes,
            rss_peak_bytes,
        }
    }
}

/// VmRSS of a process (0 if it is gone).
pub fn resident_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|line| line.starts_with("VmRSS:"))
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|kib| kib.parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}
