//! jetbench: a load generator for NATS / JetStream servers (jetcore, nats-server, ...).
//! It speaks the client protocol itself over blocking sockets with large write batches, so
//! the client is not what limits the figures. See `jetbench --help` and perf/README.md.

mod cli;
mod connection;
mod error;
mod jetstream;
mod latency;
mod limits;
mod pacing;
mod progress;
mod protocol;
mod report;
mod scenario;
mod workers;

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::SystemTime;

use clap::Parser;

use cli::{Cli, Scenario};
use error::Result;
use progress::{Counters, Progress};
use report::Report;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            let _ = writeln!(std::io::stderr(), "jetbench: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run(mut cli: Cli) -> Result<()> {
    if cli.scenario == Scenario::Latency {
        // Record the defaults in the options so the results say what was run.
        cli.options.rate.get_or_insert(limits::DEFAULT_LATENCY_RATE);
        if cli.options.msgs.is_none() && cli.options.duration.is_none() {
            cli.options.duration = Some(limits::DEFAULT_LATENCY_DURATION);
        }
    }
    let counters = Arc::new(Counters::default());
    let context = scenario::Context::new(cli.options.clone(), counters.clone())?;
    let started = SystemTime::now();
    let outcome = {
        let _progress = Progress::start(cli.scenario.name(), counters, !cli.options.quiet);
        scenario::run(cli.scenario, &context)?
    };
    let report = Report::new(cli.scenario, cli.options, &outcome, started);
    print!("{}", report.summary());
    if let Some(path) = &report.options.json {
        report.write_json(path)?;
    }
    Ok(())
}
