//! jetcore's storage engine as a log inside the program, with no network: append market
//! ticks with durable acks, 256 in flight so they share fdatasyncs (group commit), while a
//! tail task follows the stream as it grows; then reopen the directory and read from a
//! sequence in the middle.
//!
//! The engine lives on a glommio shard (`jetcore::shard::Runtime` starts one and checks
//! io_uring and locked memory first). A program on tokio or plain threads uses
//! `jetcore::engine::EngineHandle` instead (see the README).
//!
//! ```sh
//! cargo run --release --example embedded_log -- 10000
//! ```

use std::path::{Path, PathBuf};
use std::rc::Rc;

use futures::future::join_all;
use jetcore::engine::{Engine, StartPosition};
use jetcore::shard::{Runtime, ShardContext};
use jetcore::stream::{ShardId, StreamConfig};

const STREAM: &str = "TICKS";
const WINDOW: u64 = 256;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ticks: u64 = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(2000);
    let dir = tempfile::tempdir()?;
    let summary = run(dir.path(), ticks)?;
    println!("appended {} ticks, the tail saw {}", summary.appended, summary.tailed);
    println!("after reopening: {} ticks, read {} from the middle on", summary.stored, summary.read_from_middle);
    Ok(())
}

/// What a run saw; the integration test checks it.
#[derive(Debug, PartialEq, Eq)]
pub struct Summary {
    pub appended: u64,
    pub tailed: u64,
    pub stored: u64,
    pub read_from_middle: u64,
}

pub fn run(dir: &Path, ticks: u64) -> Result<Summary, Box<dyn std::error::Error>> {
    let dir: PathBuf = dir.to_path_buf();
    let runtime = Runtime::builder().shards(1).start(move |_: ShardContext<()>| {
        let dir = dir.clone();
        async move { on_shard(&dir, ticks).await.map_err(|error| error.to_string()) }
    })?;
    let mut outputs = runtime.join()?;
    Ok(outputs.remove(0)?)
}

async fn on_shard(dir: &Path, ticks: u64) -> Result<Summary, jetcore::stream::Error> {
    let engine = Rc::new(Engine::open(dir).await?);
    // The same configuration a client sends in $JS.API.STREAM.CREATE.
    engine.create_stream(StreamConfig::new(STREAM, &["ticks.>"]), ShardId(0)).await?;

    let follower = engine.clone();
    let tail = glommio::spawn_local(async move {
        let mut cursor = follower.cursor(STREAM, StartPosition::Sequence(1), None)?;
        let mut seen = 0;
        while seen < ticks {
            // Waits at the end of the stream until the next publish is durable.
            cursor.wait_next().await?;
            seen += 1;
        }
        Ok::<u64, jetcore::stream::Error>(seen)
    });

    let mut appended = 0;
    while appended < ticks {
        let window = WINDOW.min(ticks - appended);
        let publishes = (appended..appended + window).map(|tick| {
            let payload = format!("{{\"pair\":\"EURUSD\",\"bid\":1.{:04}}}", 800 + tick % 100);
            let engine = engine.clone();
            async move { engine.publish(STREAM, "ticks.eurusd", b"", payload.as_bytes()).await }
        });
        for ack in join_all(publishes).await {
            ack?; // Each resolves once its record is on disk (fdatasync).
        }
        appended += window;
    }
    let tailed = tail.await?;
    drop(engine);

    let engine = Engine::open(dir).await?;
    let stored = engine.state(STREAM)?.messages;
    let mut cursor = engine.cursor(STREAM, StartPosition::Sequence(ticks / 2 + 1), None)?;
    let mut read_from_middle = 0;
    while let Some(message) = cursor.next().await {
        message?;
        read_from_middle += 1;
    }
    engine.close().await?;
    Ok(Summary { appended, tailed, stored, read_from_middle })
}
