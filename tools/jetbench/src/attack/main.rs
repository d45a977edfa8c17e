//! attack: runs hostile inputs against jetcore and nats-server, one fresh server per
//! attack, while a second connection measures PING round trips and the server's RSS is
//! sampled. Prints one markdown table per server (for perf/limits.md).
//!
//! `attack --jetcore target/release/jetcore --nats-server .venv/bin/nats-server [--only NAME]`

mod attacks;
mod churn;
mod probe;
mod server;
mod wire;

use clap::Parser;

#[derive(Parser)]
struct Cli {
    /// jetcore binary.
    #[arg(long)]
    jetcore: Option<String>,
    /// nats-server binary.
    #[arg(long)]
    nats_server: Option<String>,
    /// Run only attacks whose name contains this.
    #[arg(long)]
    only: Option<String>,
    /// jetcore shards (default: the server's own default).
    #[arg(long)]
    shards: Option<u16>,
}

fn main() {
    let cli = Cli::parse();
    let mut servers = Vec::new();
    if let Some(binary) = &cli.jetcore {
        servers.push(server::Kind::Jetcore { binary: binary.clone(), shards: cli.shards });
    }
    if let Some(binary) = &cli.nats_server {
        servers.push(server::Kind::NatsServer { binary: binary.clone() });
    }
    let names: Vec<&str> =
        attacks::NAMES.iter().copied().filter(|n| cli.only.as_deref().is_none_or(|o| n.contains(o))).collect();
    println!("| attack | server | answer | PINGs | PING p50 µs | PING p99 µs | PING max µs | lost | RSS before MiB | RSS peak MiB |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for name in names {
        for kind in &servers {
            let running = match server::Running::start(kind) {
                Ok(running) => running,
                Err(error) => {
                    eprintln!("{}: cannot start: {error}", kind.label());
                    continue;
                }
            };
            let probe = probe::Probe::start(running.port, running.pid()).expect("probe connects");
            let outcome = attacks::run(name, running.port, running.pid());
            let measured = probe.finish();
            let answer = match outcome {
                Ok(text) => text,
                Err(text) => format!("FAILED: {text}"),
            };
            let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
            println!(
                "| {name} | {} | {} | {} | {} | {} | {} | {} | {:.0} | {:.0} |",
                kind.label(),
                answer.replace('|', "\\|").chars().take(300).collect::<String>(),
                measured.pings,
                measured.ping_p50_micros,
                measured.ping_p99_micros,
                measured.ping_max_micros,
                measured.pings_lost,
                mib(measured.rss_before_bytes),
                mib(measured.rss_peak_bytes),
            );
        }
    }
}
