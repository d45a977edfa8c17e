//! Logging with tracing: `-D` logs debug, `-V` trace (both map onto one level, as
//! nats-server's flags do), `-l FILE` appends to a file instead of stderr. The level can
//! change while running (a reload), through a reload handle kept for the process.

use std::sync::OnceLock;

use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{reload, Registry};

use super::options::Options;

static LEVEL: OnceLock<reload::Handle<LevelFilter, Registry>> = OnceLock::new();

/// The level `options` asks for.
pub fn level_for(options: &Options) -> LevelFilter {
    if options.trace {
        LevelFilter::TRACE
    } else if options.debug {
        LevelFilter::DEBUG
    } else {
        LevelFilter::INFO
    }
}

/// Installs the process's logger. Call once, before the server starts.
pub fn init(options: &Options) -> std::io::Result<()> {
    let (filter, handle) = reload::Layer::new(level_for(options));
    let registry = tracing_subscriber::registry().with(filter);
    let format = tracing_subscriber::fmt::layer().with_target(false);
    match &options.log_file {
        Some(path) => {
            let file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
            let layer = format.with_ansi(false).with_writer(std::sync::Mutex::new(file));
            registry.with(layer).init();
        }
        None => registry.with(format.with_writer(std::io::stderr)).init(),
    }
    let _ = LEVEL.set(handle);
    Ok(())
}

/// Changes the level (after a reload). Does nothing when `init` was not called.
pub fn set_level(level: LevelFilter) {
    if let Some(handle) = LEVEL.get() {
        if let Err(error) = handle.modify(|current| *current = level) {
            tracing::warn!("cannot change the log level: {error}");
        }
    }
}
