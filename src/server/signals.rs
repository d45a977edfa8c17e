//! Signals, as nats-server handles them: SIGTERM and SIGINT shut down gracefully (a
//! second one exits at once), SIGUSR2 enters lame duck, SIGHUP reloads the configuration.
//!
//! The signals are blocked in every thread (`block` runs before any thread starts, and
//! threads inherit the mask) and one plain thread takes them with `sigwait`, so no code
//! runs in a signal handler and the shards never see a signal.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::control::Control;
use super::node::ServerIdentity;
use super::reload::Reloader;

const HANDLED: [libc::c_int; 4] = [libc::SIGTERM, libc::SIGINT, libc::SIGUSR2, libc::SIGHUP];

/// The blocked signal set; pass it to [`spawn_handler`].
pub struct Blocked(libc::sigset_t);

/// Blocks the handled signals in this thread and every thread it starts from now on.
pub fn block() -> std::io::Result<Blocked> {
    // SAFETY: sigset_t is plain data that sigemptyset initialises before any other use.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid sigset_t owned by this frame.
    unsafe { libc::sigemptyset(&mut set) };
    for signal in HANDLED {
        // SAFETY: as above; `signal` is a valid signal number.
        unsafe { libc::sigaddset(&mut set, signal) };
    }
    // SAFETY: `set` is initialised; a null old-set pointer is allowed.
    let error = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if error != 0 {
        return Err(std::io::Error::from_raw_os_error(error));
    }
    Ok(Blocked(set))
}

/// Starts the thread that takes the signals for the server's life.
pub fn spawn_handler(
    blocked: Blocked,
    control: Arc<Control>,
    identity: Arc<ServerIdentity>,
    reloader: Reloader,
) -> std::io::Result<()> {
    std::thread::Builder::new().name("jetcore-signals".into()).spawn(move || {
        let mut handler = Handler { control, identity, reloader, stopping: Arc::new(AtomicBool::new(false)) };
        loop {
            let mut signal: libc::c_int = 0;
            // SAFETY: `blocked.0` is an initialised set; `signal` is a valid out pointer.
            if unsafe { libc::sigwait(&blocked.0, &mut signal) } != 0 {
                continue;
            }
            handler.handle(signal);
        }
    })?;
    Ok(())
}

struct Handler {
    control: Arc<Control>,
    identity: Arc<ServerIdentity>,
    reloader: Reloader,
    /// A shutdown or lame duck is under way.
    stopping: Arc<AtomicBool>,
}

impl Handler {
    fn handle(&mut self, signal: libc::c_int) {
        match signal {
            libc::SIGTERM | libc::SIGINT => {
                if self.stopping.swap(true, Ordering::AcqRel) {
                    tracing::warn!("Second signal while shutting down: exiting now");
                    std::process::exit(1);
                }
                tracing::info!("Trapped {} signal", name(signal));
                let control = self.control.clone();
                self.run_then_exit(move || super::shutdown::shut_down(&control));
            }
            libc::SIGUSR2 => {
                if self.stopping.swap(true, Ordering::AcqRel) {
                    return;
                }
                let (control, identity) = (self.control.clone(), self.identity.clone());
                let (duration, grace) = self.reloader.lame_duck_timing();
                self.run_then_exit(move || {
                    super::shutdown::lame_duck(&control, &identity.connections, duration, grace)
                });
            }
            libc::SIGHUP => {
                tracing::info!("Trapped SIGHUP signal: reloading configuration");
                self.reloader.reload(&self.control);
            }
            _ => {}
        }
    }

    /// Runs a shutdown on its own thread (so a second signal is still heard), then exits.
    fn run_then_exit(&self, shut_down: impl FnOnce() -> bool + Send + 'static) {
        let spawned = std::thread::Builder::new().name("jetcore-shutdown".into()).spawn(move || {
            let clean = shut_down();
            tracing::info!("Server Exiting..");
            std::process::exit(if clean { 0 } else { 1 });
        });
        if let Err(error) = spawned {
            tracing::error!("cannot start the shutdown thread ({error}): exiting now");
            std::process::exit(1);
        }
    }
}

fn name(signal: libc::c_int) -> &'static str {
    match signal {
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGHUP => "SIGHUP",
        _ => "unknown",
    }
}

/// `--signal ldm=<pid>` and friends: the signal nats-server sends for each command.
pub fn for_command(command: &str) -> Option<libc::c_int> {
    match command {
        "ldm" => Some(libc::SIGUSR2),
        "term" => Some(libc::SIGTERM),
        "quit" => Some(libc::SIGINT),
        "stop" => Some(libc::SIGKILL),
        "reload" => Some(libc::SIGHUP),
        _ => None,
    }
}

/// Sends `signal` to `pid` (for `--signal`).
pub fn send(pid: i32, signal: libc::c_int) -> std::io::Result<()> {
    // SAFETY: kill has no memory-safety preconditions.
    if unsafe { libc::kill(pid, signal) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
