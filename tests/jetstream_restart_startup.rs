//! A restart over existing streams must come up every time. Two bugs (outside the
//! JetStream service) make it fail intermittently, so this is `#[ignore]`d until fixed;
//! run it with `cargo test --release --test jetstream_restart_startup -- --ignored`.
//! - Every shard reads every stream's `meta.json` to learn its placement, and each first
//!   `DmaDisk::open` in a directory writes, opens and removes the same
//!   `<stream dir>/.jetcore-iopoll-probe` (src/store/dma.rs `steer_iopoll_probe`): two
//!   shards race on it and one panics inside glommio (`dma_file.rs:132` unwrap of ENOENT);
//!   the other shards then wait forever for it to announce its streams. When the race
//!   instead lets glommio's IOPOLL probe read the file while another shard has just
//!   truncated it, IOPOLL is cached as supported, every later read in that shard fails
//!   with EOPNOTSUPP (os error 95) and its streams are logged "failed to open; left on
//!   disk untouched" and not served: after the restart they are "stream not found".
//!   (Tried locally: a per-thread probe file name removes both the panic and the
//!   EOPNOTSUPP; the hang below remains.)
//! - Even with `--shards 1` about one start in seven never reports its port: the shard is
//!   parked in io_uring with operations still in flight (seen in /proc/<pid>/fdinfo: the
//!   main ring 3 and the third ring 1 submitted-but-uncompleted), while opening segments.

mod common;

use std::time::{Duration, Instant};

use common::jetstream::{connect, publish, stream_config};
use common::TestServer;

/// Restarts this many times; each must be listening within `START_WAIT`.
const RESTARTS: usize = 12;
const START_WAIT: Duration = Duration::from_secs(5);

async fn restarts_always_come_up(shards: &str) {
    let mut server = TestServer::start(&["--shards", shards]);
    {
        let (_client, js) = connect(&server).await;
        for index in 0..8 {
            js.create_stream(stream_config(&format!("UP{index}"), &[&format!("up.{index}")])).await.expect("create");
            publish(&js, &format!("up.{index}"), "x").await;
        }
    }
    for restart in 1..=RESTARTS {
        let started = Instant::now();
        // `restart()` panics after 20 s without a port; a healthy start takes milliseconds.
        server.restart();
        assert!(started.elapsed() < START_WAIT, "restart {restart} took {:?}", started.elapsed());
        let (_client, js) = connect(&server).await;
        for index in 0..8 {
            let stream = js.get_stream(format!("UP{index}")).await;
            let stream = stream.unwrap_or_else(|e| panic!("restart {restart}: UP{index} not served: {e}"));
            assert_eq!(stream.cached_info().state.messages, 1);
        }
    }
}

#[tokio::test]
#[ignore = "bug: restarts over existing streams sometimes hang or panic (iopoll probe race, io_uring hang)"]
async fn restarts_with_two_shards_always_come_up() {
    restarts_always_come_up("2").await;
}

#[tokio::test]
#[ignore = "bug: restarts over existing streams sometimes hang (io_uring ops never complete)"]
async fn restarts_with_one_shard_always_come_up() {
    restarts_always_come_up("1").await;
}
