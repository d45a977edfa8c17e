//! `jetcore`: the server binary. Accepts nats-server's flags (see `jetcore --help`).

use std::process::ExitCode;

use jetcore::server::{self, Command};

fn main() -> ExitCode {
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
