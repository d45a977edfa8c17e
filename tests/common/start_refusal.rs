//! Starts a jetcore that is expected to refuse to start: waits for it to exit and keeps
//! what it printed, so a test can check the message and that it never got to listen.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A hang guard, not a timing assertion: a refused start exits well within it.
const EXIT_WAIT: Duration = Duration::from_secs(30);

const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
const CAP_IPC_LOCK: u32 = 14;

#[repr(C)]
struct CapabilityHeader {
    version: u32,
    pid: i32,
}

#[repr(C)]
struct CapabilityData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

pub struct Refusal {
    pub code: Option<i32>,
    pub stderr: String,
}

impl Refusal {
    /// Exited non-zero and never said it was listening.
    pub fn assert_no_partial_start(&self) {
        assert_ne!(self.code, Some(0), "{}", self.stderr);
        assert!(self.code.is_some(), "killed by a signal: {}", self.stderr);
        assert!(!self.stderr.contains("Listening for client connections"), "{}", self.stderr);
        assert!(!self.stderr.contains("Server is ready"), "{}", self.stderr);
    }
}

/// Runs `jetcore ARGS` (as `uid`, when given, keeping only CAP_IPC_LOCK) until it
/// exits; panics if it is still running after `EXIT_WAIT` (it then started after all).
pub fn start_expecting_refusal(args: &[&str], uid: Option<u32>) -> Refusal {
    let mut command = Command::new(env!("CARGO_BIN_EXE_jetcore"));
    command.args(args).stdout(Stdio::null()).stderr(Stdio::piped());
    if let Some(uid) = uid {
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            command.pre_exec(move || {
                // Keep CAP_IPC_LOCK (locked memory for the shards' rings) across setuid;
                // nothing that overrides file permissions.
                if libc::prctl(libc::PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0
                    || libc::setgroups(0, std::ptr::null()) != 0
                    || libc::setgid(uid) != 0
                    || libc::setuid(uid) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                let header = CapabilityHeader { version: LINUX_CAPABILITY_VERSION_3, pid: 0 };
                let ipc_lock = 1u32 << CAP_IPC_LOCK;
                let data = [
                    CapabilityData { effective: ipc_lock, permitted: ipc_lock, inheritable: ipc_lock },
                    CapabilityData { effective: 0, permitted: 0, inheritable: 0 },
                ];
                let ambient = libc::PR_CAP_AMBIENT_RAISE as libc::c_ulong;
                if libc::syscall(libc::SYS_capset, &header, data.as_ptr()) != 0
                    || libc::prctl(libc::PR_CAP_AMBIENT, ambient, CAP_IPC_LOCK as libc::c_ulong, 0, 0) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let mut child = command.spawn().expect("start jetcore");
    let mut stderr_pipe = child.stderr.take().expect("stderr piped");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr_pipe.read_to_string(&mut text);
        text
    });
    let deadline = Instant::now() + EXIT_WAIT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for jetcore") {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("jetcore kept running: it started where it should have refused");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Refusal { code: status.code(), stderr: reader.join().expect("stderr reader") }
}

/// A listener on a free port that sets `SO_REUSEPORT`, as a program that shares its port
/// with its own workers does (nginx `reuseport`, any glommio program); `None` if the bind
/// is refused.
pub fn reuseport_listener(port: u16) -> Option<std::net::TcpListener> {
    use std::os::fd::FromRawFd;
    // SAFETY: plain socket calls on a descriptor this function owns until it returns it.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0, "socket");
        let one: libc::c_int = 1;
        let size = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_REUSEPORT, (&one as *const libc::c_int).cast(), size);
        let address = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: port.to_be(),
            sin_addr: libc::in_addr { s_addr: u32::from(std::net::Ipv4Addr::LOCALHOST).to_be() },
            sin_zero: [0; 8],
        };
        let length = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        if libc::bind(fd, (&address as *const libc::sockaddr_in).cast(), length) != 0 || libc::listen(fd, 16) != 0 {
            libc::close(fd);
            return None;
        }
        Some(std::net::TcpListener::from_raw_fd(fd))
    }
}
