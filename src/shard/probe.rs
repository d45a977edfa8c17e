//! Start-up probe: does io_uring work here, and is the locked-memory limit enough for glommio?
//!
//! CONTRACT: `check()` (or `check_for(shards, io_memory_bytes)`) returns `Ok` only if
//! (1) an io_uring can be created and completes a NOP, and (2) RLIMIT_MEMLOCK covers what
//! `shards` glommio executors will lock. It may raise RLIMIT_MEMLOCK for the whole process:
//! the soft limit up to the hard one (any user may), or both when privileged (root /
//! CAP_SYS_RESOURCE). Every `ProbeError` displays what is wrong and what to change.
//!
//! What glommio 0.9 needs (read from its source, `sys/uring.rs` `Reactor::new`):
//! - it refuses to start (an error, not a fallback) if the soft RLIMIT_MEMLOCK < 512 KiB;
//! - each executor allocates `io_memory` bytes (default 10 MiB, ours
//!   `limits::SHARD_IO_MEMORY_BYTES`) and registers that buffer with each of its three rings
//!   (main, latency, poll). The kernel charges each registration separately to the user's
//!   locked memory unless the process has CAP_IPC_LOCK (`tests/shard_memlock_accounting.rs`
//!   measures VmPin growing by exactly 3 x io_memory for one shard). If a registration fails, glommio logs
//!   a warning and runs with unregistered buffers (slower DMA I/O). We treat that as an error
//!   up front rather than a silent slowdown.

use std::fmt;
use std::io;

use io_uring::{opcode, IoUring};

use crate::limits;

/// Why jetcore cannot run its shards here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeError {
    /// `io_uring_setup` returned ENOSYS: the kernel has no io_uring (older than 5.1 or built
    /// without CONFIG_IO_URING).
    KernelLacksIoUring,
    /// io_uring exists but this process may not use it (EPERM / EACCES).
    IoUringBlocked {
        errno: i32,
        /// Content of /proc/sys/kernel/io_uring_disabled, if readable.
        sysctl_io_uring_disabled: Option<String>,
        /// `Seccomp:` mode from /proc/self/status (2 = filter), if readable.
        seccomp_mode: Option<u32>,
    },
    /// io_uring failed in another way at `step`.
    IoUringFailed { step: &'static str, message: String },
    /// RLIMIT_MEMLOCK is below what the shards need and we may not raise it.
    MemlockTooLow { soft_bytes: u64, hard_bytes: u64, required_bytes: u64, shards: usize },
    /// We were allowed to raise RLIMIT_MEMLOCK but setrlimit failed.
    MemlockRaiseFailed { required_bytes: u64, message: String },
}

/// Probes for the default configuration: one shard per available CPU, default I/O memory.
pub fn check() -> Result<(), ProbeError> {
    check_for(super::available_cpus().len(), limits::SHARD_IO_MEMORY_BYTES)
}

/// Probes for `shards` executors with `io_memory_bytes` of registered I/O memory each.
pub fn check_for(shards: usize, io_memory_bytes: usize) -> Result<(), ProbeError> {
    check_io_uring()?;
    let required_bytes = memlock_required_bytes(shards, io_memory_bytes, has_capability(CAP_IPC_LOCK));
    ensure_memlock(shards, required_bytes)
}

/// Bytes of RLIMIT_MEMLOCK that `shards` glommio executors need (see the module doc).
pub fn memlock_required_bytes(shards: usize, io_memory_bytes: usize, cap_ipc_lock: bool) -> u64 {
    let floor = limits::GLOMMIO_MEMLOCK_FLOOR_BYTES as u64;
    if cap_ipc_lock {
        return floor; // Registrations are not charged; glommio's own check remains.
    }
    let per_shard =
        limits::GLOMMIO_RINGS_PER_EXECUTOR as u64 * io_memory_bytes as u64 + limits::SHARD_MEMLOCK_MARGIN_BYTES as u64;
    floor.max(per_shard * shards as u64)
}

fn check_io_uring() -> Result<(), ProbeError> {
    let mut ring = IoUring::new(limits::PROBE_RING_ENTRIES).map_err(|error| classify(&error, "io_uring_setup"))?;
    let nop = opcode::Nop::new().build().user_data(PROBE_USER_DATA);
    // SAFETY: a NOP references no memory, so nothing must outlive the submission.
    unsafe { ring.submission().push(&nop) }
        .map_err(|_| failed("submission queue push", "queue full on a fresh ring"))?;
    ring.submit_and_wait(1).map_err(|error| classify(&error, "io_uring_enter"))?;
    let completion = ring.completion().next().ok_or_else(|| failed("completion", "no completion for NOP"))?;
    if completion.user_data() != PROBE_USER_DATA || completion.result() < 0 {
        let error = io::Error::from_raw_os_error(-completion.result());
        return Err(failed("NOP completion", &error.to_string()));
    }
    Ok(())
}

const PROBE_USER_DATA: u64 = 0x006a_6574_636f_7265; // "jetcore" in ASCII

fn failed(step: &'static str, message: &str) -> ProbeError {
    ProbeError::IoUringFailed { step, message: message.to_owned() }
}

fn classify(error: &io::Error, step: &'static str) -> ProbeError {
    let sysctl = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled").ok();
    classify_errno(error.raw_os_error(), step, &error.to_string(), sysctl, seccomp_mode())
}

/// Maps an io_uring syscall failure to a `ProbeError`; pure, so every branch is testable.
pub fn classify_errno(
    errno: Option<i32>,
    step: &'static str,
    message: &str,
    sysctl_io_uring_disabled: Option<String>,
    seccomp_mode: Option<u32>,
) -> ProbeError {
    match errno {
        Some(libc::ENOSYS) => ProbeError::KernelLacksIoUring,
        Some(errno @ (libc::EPERM | libc::EACCES)) => ProbeError::IoUringBlocked {
            errno,
            sysctl_io_uring_disabled: sysctl_io_uring_disabled.map(|value| value.trim().to_owned()),
            seccomp_mode,
        },
        _ => failed(step, message),
    }
}

fn ensure_memlock(shards: usize, required_bytes: u64) -> Result<(), ProbeError> {
    let (soft_bytes, hard_bytes) = memlock_limits()
        .map_err(|error| ProbeError::MemlockRaiseFailed { required_bytes, message: error.to_string() })?;
    if soft_bytes >= required_bytes {
        return Ok(());
    }
    let new_hard = if hard_bytes >= required_bytes {
        hard_bytes // Raising the soft limit up to the hard one needs no privilege.
    } else if has_capability(CAP_SYS_RESOURCE) {
        required_bytes
    } else {
        return Err(ProbeError::MemlockTooLow { soft_bytes, hard_bytes, required_bytes, shards });
    };
    set_memlock_limits(required_bytes, new_hard)
        .map_err(|error| ProbeError::MemlockRaiseFailed { required_bytes, message: error.to_string() })
}

/// (soft, hard) RLIMIT_MEMLOCK in bytes; `RLIM_INFINITY` reads as `u64::MAX`.
pub fn memlock_limits() -> io::Result<(u64, u64)> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `limit` is a valid, writable rlimit for the duration of the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut limit) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((limit.rlim_cur, limit.rlim_max))
}

fn set_memlock_limits(soft_bytes: u64, hard_bytes: u64) -> io::Result<()> {
    let limit = libc::rlimit { rlim_cur: soft_bytes, rlim_max: hard_bytes };
    // SAFETY: `limit` is a valid rlimit; setrlimit only reads it.
    if unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &limit) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

const CAP_IPC_LOCK: u32 = 14;
const CAP_SYS_RESOURCE: u32 = 24;

/// Whether the process has capability `bit` in its effective set (`CapEff` in /proc).
fn has_capability(bit: u32) -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status_field(&status, "CapEff:")
        .and_then(|hex| u64::from_str_radix(hex, 16).ok())
        .is_some_and(|mask| mask & (1 << bit) != 0)
}

fn seccomp_mode() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status_field(&status, "Seccomp:")?.parse().ok()
}

fn status_field<'a>(status: &'a str, name: &str) -> Option<&'a str> {
    status.lines().find_map(|line| line.strip_prefix(name)).map(str::trim)
}

const KIB: u64 = 1024;

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProbeError::KernelLacksIoUring => write!(
                f,
                "io_uring is not available: the kernel returned ENOSYS for io_uring_setup. \
                 jetcore needs Linux 5.8 or newer built with CONFIG_IO_URING=y"
            ),
            ProbeError::IoUringBlocked { errno, sysctl_io_uring_disabled, seccomp_mode } => {
                let name = if *errno == libc::EPERM { "EPERM" } else { "EACCES" };
                write!(f, "io_uring is blocked for this process ({name}). ")?;
                write_blocked_causes(f, sysctl_io_uring_disabled.as_deref(), *seccomp_mode)
            }
            ProbeError::IoUringFailed { step, message } => {
                write!(f, "io_uring does not work here: {step} failed: {message}")
            }
            ProbeError::MemlockTooLow { soft_bytes, hard_bytes, required_bytes, shards } => {
                let required_kib = required_bytes.div_ceil(KIB);
                write!(
                    f,
                    "the locked-memory limit (RLIMIT_MEMLOCK) is too small: soft {} KiB, hard {} KiB; \
                     {shards} shard(s) need {required_kib} KiB (each glommio executor registers its \
                     I/O memory with {} io_uring rings). Raise it before starting jetcore: \
                     `ulimit -l {required_kib}` (needs a hard limit at least that high, e.g. \
                     `memlock {required_kib}` in /etc/security/limits.conf), or systemd \
                     `LimitMEMLOCK={required_bytes}` (or `infinity`), or docker \
                     `--ulimit memlock={required_bytes}:{required_bytes}`; or run fewer shards \
                     (--shards) or grant CAP_IPC_LOCK",
                    soft_bytes / KIB,
                    hard_bytes / KIB,
                    limits::GLOMMIO_RINGS_PER_EXECUTOR,
                )
            }
            ProbeError::MemlockRaiseFailed { required_bytes, message } => write!(
                f,
                "could not raise the locked-memory limit (RLIMIT_MEMLOCK) to {} KiB: {message}",
                required_bytes.div_ceil(KIB)
            ),
        }
    }
}

fn write_blocked_causes(f: &mut fmt::Formatter<'_>, sysctl: Option<&str>, seccomp: Option<u32>) -> fmt::Result {
    match sysctl {
        Some("2") => write!(f, "The sysctl kernel.io_uring_disabled is 2: io_uring is disabled for all processes; set it to 0 (`sysctl -w kernel.io_uring_disabled=0`). ")?,
        Some("1") => write!(f, "The sysctl kernel.io_uring_disabled is 1: only processes with CAP_SYS_ADMIN or in the group kernel.io_uring_group may use io_uring; set it to 0 or add jetcore's user to that group. ")?,
        Some(value) => write!(f, "The sysctl kernel.io_uring_disabled is {value} (io_uring allowed by the kernel). ")?,
        None => write!(f, "The sysctl kernel.io_uring_disabled could not be read. ")?,
    }
    if seccomp == Some(2) {
        write!(f, "This process runs under a seccomp filter, ")?;
    } else {
        write!(f, "A seccomp filter may be the cause, ")?;
    }
    write!(
        f,
        "as in a container's default profile: with docker or podman run with \
         `--security-opt seccomp=unconfined`, or a profile that allows io_uring_setup, \
         io_uring_enter and io_uring_register"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enosys_means_kernel_lacks_io_uring() {
        let error = classify_errno(Some(libc::ENOSYS), "io_uring_setup", "x", None, None);
        assert_eq!(error, ProbeError::KernelLacksIoUring);
        assert!(error.to_string().contains("ENOSYS"));
    }

    #[test]
    fn sysctl_two_is_named_with_its_value() {
        let error = classify_errno(Some(libc::EPERM), "io_uring_setup", "x", Some("2\n".into()), Some(0));
        let text = error.to_string();
        assert!(text.contains("EPERM"), "{text}");
        assert!(text.contains("kernel.io_uring_disabled is 2"), "{text}");
        assert!(text.contains("sysctl -w kernel.io_uring_disabled=0"), "{text}");
    }

    #[test]
    fn sysctl_one_mentions_the_group() {
        let error = classify_errno(Some(libc::EACCES), "io_uring_setup", "x", Some("1".into()), None);
        let text = error.to_string();
        assert!(text.contains("EACCES") && text.contains("kernel.io_uring_group"), "{text}");
    }

    #[test]
    fn seccomp_filter_points_at_container_profile() {
        let error = classify_errno(Some(libc::EPERM), "io_uring_setup", "x", Some("0".into()), Some(2));
        let text = error.to_string();
        assert!(text.contains("is 0 (io_uring allowed"), "{text}");
        assert!(text.contains("runs under a seccomp filter"), "{text}");
        assert!(text.contains("--security-opt seccomp=unconfined"), "{text}");
        assert!(text.contains("io_uring_setup, io_uring_enter and io_uring_register"), "{text}");
    }

    #[test]
    fn other_errno_reports_step_and_message() {
        let error = classify_errno(Some(libc::ENOMEM), "io_uring_setup", "Cannot allocate memory", None, None);
        assert_eq!(error.to_string(), "io_uring does not work here: io_uring_setup failed: Cannot allocate memory");
    }

    #[test]
    fn memlock_message_names_ulimit_and_systemd_values() {
        let required_bytes = memlock_required_bytes(4, 8 << 20, false);
        let error = ProbeError::MemlockTooLow { soft_bytes: 64 * KIB, hard_bytes: 64 * KIB, required_bytes, shards: 4 };
        let text = error.to_string();
        let required_kib = required_bytes / KIB;
        assert!(text.contains(&format!("`ulimit -l {required_kib}`")), "{text}");
        assert!(text.contains(&format!("LimitMEMLOCK={required_bytes}")), "{text}");
        assert!(text.contains("soft 64 KiB, hard 64 KiB; 4 shard(s)"), "{text}");
    }

    #[test]
    fn memlock_requirement_scales_with_shards_unless_cap_ipc_lock() {
        let one = memlock_required_bytes(1, 8 << 20, false);
        assert_eq!(memlock_required_bytes(4, 8 << 20, false), 4 * one);
        assert!(one >= 3 * (8 << 20));
        assert_eq!(memlock_required_bytes(64, 8 << 20, true), limits::GLOMMIO_MEMLOCK_FLOOR_BYTES as u64);
    }

    #[test]
    fn probe_passes_on_this_machine() {
        check_for(2, limits::SHARD_IO_MEMORY_BYTES).unwrap_or_else(|error| panic!("{error}"));
        let (soft, _) = memlock_limits().unwrap();
        assert!(soft >= memlock_required_bytes(2, limits::SHARD_IO_MEMORY_BYTES, has_capability(CAP_IPC_LOCK)));
    }
}
