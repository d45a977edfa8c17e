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
        Err(error) => {
            eprintln!("jetcore: {error}\n\n{}", server::options::USAGE);
            return ExitCode::from(2);
        }
    };
    if let Err(error) = init_logging(&options) {
        eprintln!("jetcore: {error}");
        return ExitCode::FAILURE;
    }
    match server::run(*options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!("{error}");
            eprintln!("jetcore: {error}");
            ExitCode::FAILURE
        }
    }
}

/// `-D` logs debug, `-V` trace; `-l FILE` appends to a file instead of stderr.
fn init_logging(options: &server::Options) -> std::io::Result<()> {
    let level = if options.trace {
        tracing::Level::TRACE
    } else if options.debug {
        tracing::Level::DEBUG
    } else {
        tracing::Level::INFO
    };
    let builder = tracing_subscriber::fmt().with_max_level(level).with_target(false);
    match &options.log_file {
        Some(path) => {
            let file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
            builder.with_ansi(false).with_writer(std::sync::Mutex::new(file)).init();
        }
        None => builder.with_writer(std::io::stderr).init(),
    }
    Ok(())
}

/// glibc's malloc serialises on its arenas when one shard frees what another allocated
/// (every cross-shard envelope does); mimalloc frees remote blocks without that contention.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
