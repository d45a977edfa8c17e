//! Purge (all, by wildcard filter, up to a sequence, keep N, filter + keep) and delete:
//! counts, resulting state, and the same state after a restart (purges replay exactly).

#[path = "store_support.rs"]
mod support;

use std::rc::Rc;

use jetcore::engine::Engine;
use jetcore::store::SimDisk;
use jetcore::stream::{Error, ManualClock, PurgeRequest, ShardId};
use support::{run, sim_engine, small_config};

/// Publishes 1..=12 alternating over orders.eu, orders.us, orders.eu.paris.
async fn fill(engine: &Engine) {
    engine.create_stream(small_config("P", &["orders.>"]), ShardId(0)).await.expect("create");
    let subjects = ["orders.eu", "orders.us", "orders.eu.paris"];
    for i in 0..12usize {
        engine.publish("P", subjects[i % 3], b"", i.to_string().as_bytes()).await.expect("publish");
    }
}

fn purge(filter: Option<&str>, up_to_seq: Option<u64>, keep: Option<u64>) -> PurgeRequest {
    PurgeRequest { filter: filter.map(str::to_string), up_to_seq, keep }
}

async fn check(request: PurgeRequest, expected_purged: u64, expected_live: &[u64]) {
    let (clock, disk) = (Rc::new(ManualClock::new(1)), SimDisk::new());
    let engine = sim_engine(&disk, &clock).await;
    fill(&engine).await;
    assert_eq!(engine.purge("P", request.clone()).await.expect("purge"), expected_purged, "{request:?}");
    let live = |engine: &Engine| {
        let stream = engine.stream("P").expect("stream");
        let mut seqs = Vec::new();
        let mut next = 1;
        while let Some(seq) = stream.next_seq(next, None) {
            seqs.push(seq);
            next = seq + 1;
        }
        seqs
    };
    assert_eq!(live(&engine), expected_live, "{request:?}");
    let before = engine.state("P").expect("state");
    drop(engine);
    let engine = sim_engine(&disk, &clock).await;
    assert_eq!(live(&engine), expected_live, "after restart: {request:?}");
    assert_eq!(engine.state("P").expect("state"), before);
}

#[test]
fn purge_variants() {
    run(|| async {
        check(purge(None, None, None), 12, &[]).await;
        check(purge(Some("orders.*"), None, None), 8, &[3, 6, 9, 12]).await;
        check(purge(Some("orders.eu.>"), None, None), 4, &[1, 2, 4, 5, 7, 8, 10, 11]).await;
        check(purge(None, Some(5), None), 4, &[5, 6, 7, 8, 9, 10, 11, 12]).await;
        check(purge(None, None, Some(3)), 9, &[10, 11, 12]).await;
        check(purge(Some("orders.eu"), None, Some(1)), 3, &[2, 3, 5, 6, 8, 9, 10, 11, 12]).await;
        check(purge(Some("orders.us"), Some(6), None), 2, &[1, 3, 4, 6, 7, 8, 9, 10, 11, 12]).await;
    });
}

#[test]
fn delete_one_message_and_read_around_it() {
    run(|| async {
        let (clock, disk) = (Rc::new(ManualClock::new(1)), SimDisk::new());
        let engine = sim_engine(&disk, &clock).await;
        fill(&engine).await;
        assert!(engine.delete_message("P", 5).await.expect("delete"));
        assert!(!engine.delete_message("P", 5).await.expect("second delete"));
        assert_eq!(engine.get("P", 5).await, Err(Error::NoMessageFound));
        let state = engine.state("P").expect("state");
        assert_eq!((state.messages, state.num_deleted), (11, 1));
        let stream = engine.stream("P").expect("stream");
        assert_eq!(stream.next_by_subject(5, Some("orders.us")).await.expect("next").seq, 8);
        assert_eq!(engine.get_last_by_subject("P", "orders.eu.*").await.expect("last").seq, 12);
        drop(engine);
        let engine = sim_engine(&disk, &clock).await;
        assert_eq!(engine.get("P", 5).await, Err(Error::NoMessageFound));
        assert_eq!(engine.state("P").expect("state").num_deleted, 1);
    });
}
