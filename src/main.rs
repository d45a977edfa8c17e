//! `jetcore`: the server binary. Accepts nats-server's flags (see `jetcore --help`).

use std::process::ExitCode;

use jetcore::server::{self, Command};

fn main() -> ExitCode {
    jetcore::server::memory_release::set_release(release_freed_pages);
    let options = match server::parse_args(std::env::args().skip(1)) {
        Ok(Command::Run(options)) => options,
        Ok(Command::Help) => {
            print!("{}", server::options::USAGE);
            return ExitCode::SUCCESS;
        }
        Ok(Command::Version) => {
            println!("jetcore {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Ok(Command::Signal { command, pid }) => return send_signal(&command, pid),
        Err(error) => {
            eprintln!("jetcore: {error}\n\n{}", server::options::USAGE);
            return ExitCode::from(2);
        }
    };
    if let Err(error) = server::logging::init(&options) {
        eprintln!("jetcore: {error}");
        return ExitCode::FAILURE;
    }
    // The embedding entry, with the process's signals: SIGTERM's shutdown exits the process.
    let started = jetcore::ServerBuilder::from_options(*options).handle_signals(true).start();
    match started.and_then(jetcore::Server::wait) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!("{error}");
            eprintln!("jetcore: {error}");
            ExitCode::FAILURE
        }
    }
}

/// mimalloc asks for transparent huge pages on its arena (`MADV_HUGEPAGE`), so each touched
/// 2 MiB of heap counts whole in RSS and a page freed inside it is not given back: with
/// them, an idle 2-shard server starts at ~41 MiB instead of ~24 and a connect/close loop
/// leaves ~10 MiB more behind (perf/limits.md, 2026-12-02). The policy is set from a
/// constructor that runs before anything allocates (the runtime's first allocations in
/// `main` already fault in two huge pages); priority 101 runs it before unprioritised
/// constructors. A failure (an old kernel) only leaves the default.
#[used]
#[unsafe(link_section = ".init_array.00101")]
static DISABLE_TRANSPARENT_HUGE_PAGES: extern "C" fn() = disable_transparent_huge_pages;

extern "C" fn disable_transparent_huge_pages() {
    // SAFETY: prctl with integer arguments only; it changes this process's THP policy.
    unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
}

unsafe extern "C" {
    /// mimalloc's collection of the calling thread's heap; with `force` false it also
    /// returns the arena pages whose purge delay has passed (libmimalloc-sys links it).
    fn mi_collect(force: bool);
}

/// What a shard calls once its connections stop closing (`server::memory_release`).
fn release_freed_pages() {
    // SAFETY: mi_collect takes no pointers; it works on the calling thread's own heap.
    unsafe { mi_collect(false) };
}

/// `--signal COMMAND=PID`: what nats-server's `--signal` does, for a jetcore process.
fn send_signal(command: &str, pid: i32) -> ExitCode {
    let Some(signal) = server::signals::for_command(command) else { return ExitCode::from(2) };
    match server::signals::send(pid, signal) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("jetcore: cannot signal process {pid}: {error}");
            ExitCode::FAILURE
        }
    }
}

/// glibc's malloc serialises on its arenas when one shard frees what another allocated
/// (every cross-shard envelope does); mimalloc frees remote blocks without that contention.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
