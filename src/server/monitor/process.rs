//! The process's own figures for `/varz`: resident memory and CPU use, read from Linux's
//! `/proc/self` (0 elsewhere or when unreadable).

use std::sync::Mutex;
use std::time::Instant;

/// The process's resident memory (`/proc/self/statm`), 0 when unknown.
pub fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|v| v.parse().ok()).unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let page_size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(0) as u64;
    pages * page_size
}

/// CPU time the process used so far (user and system), in seconds.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may hold spaces) start at field 3 (`state`);
    // utime and stime are fields 14 and 15.
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<u64> = after_name.split_whitespace().skip(11).take(2).filter_map(|v| v.parse().ok()).collect();
    // SAFETY: sysconf has no preconditions.
    let ticks_per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    fields.iter().sum::<u64>() as f64 / ticks_per_second
}

/// CPU use in percent of one core, as nats-server's `cpu`: measured between samples at
/// least `SAMPLE_INTERVAL` apart (nats-server samples once a second), so polling
/// `/varz` often shows the last full interval rather than noise.
pub struct CpuGauge {
    /// The last sample (when, CPU seconds) and the percentage it gave.
    state: Mutex<(Instant, f64, f64)>,
}

const SAMPLE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

impl CpuGauge {
    pub fn new() -> CpuGauge {
        CpuGauge { state: Mutex::new((Instant::now(), cpu_seconds(), 0.0)) }
    }

    pub fn percent(&self) -> f64 {
        let Ok(mut state) = self.state.lock() else { return 0.0 };
        let elapsed = state.0.elapsed();
        if elapsed >= SAMPLE_INTERVAL {
            let used = cpu_seconds();
            let percent = (used - state.1).max(0.0) / elapsed.as_secs_f64() * 100.0;
            *state = (Instant::now(), used, (percent * 100.0).round() / 100.0);
        }
        state.2
    }
}

impl Default for CpuGauge {
    fn default() -> Self {
        CpuGauge::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_and_memory_are_read() {
        let spin = Instant::now();
        while spin.elapsed() < std::time::Duration::from_millis(50) {
            std::hint::black_box(0u64);
        }
        assert!(cpu_seconds() > 0.0);
        assert!(resident_bytes() > 0);
    }
}
