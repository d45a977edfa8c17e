//! Reads reuse the last read window of a log: every record must still be returned, with
//! its own bytes, whatever was read (and cached) before it was written. (Recent records
//! may also be served from the log's in-memory group buffers, so this checks the
//! interleaving end to end rather than the window's cut-back alone.)

#[path = "store_support.rs"]
mod support;

use jetcore::engine::Engine;
use jetcore::stream::{Error, ShardId, StoredMessage};
use support::{payload_for, run, small_config};

#[test]
fn reads_interleaved_with_writes_see_every_new_record() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_path_buf();
    run(move || async move {
        let engine = Engine::open(&path).await.expect("open");
        engine.create_stream(small_config("LOG", &["log.>"]), ShardId(0)).await.expect("create");
        for seq in 1..=400u64 {
            let ack = engine.publish("LOG", "log.a", b"", &payload_for(seq, 300)).await.expect("publish");
            assert_eq!(ack.seq, seq);
            // Read the newest and an older record after every write: the first read of
            // each pair caches a window that the next write extends past.
            for read_seq in [seq, seq / 2 + 1] {
                let message = engine.get("LOG", read_seq).await.expect("get");
                assert_eq!(message.seq, read_seq);
                assert_eq!(&message.payload[..], &payload_for(read_seq, 300)[..], "seq {read_seq}");
            }
        }
    });
}

/// A read continues from where the previous one ended when it moves forward. Every
/// direction and gap must still land on the right record: forward by one, forward past
/// deleted messages (their removal records sit between messages in the file), backward,
/// and across segment boundaries.
#[test]
fn reads_in_any_order_return_their_own_record() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_path_buf();
    run(move || async move {
        let engine = Engine::open(&path).await.expect("open");
        engine.create_stream(small_config("LOG", &["log.>"]), ShardId(0)).await.expect("create");
        const COUNT: u64 = 1_500; // ~450 KB of 300-byte payloads: several 64 KiB segments
        for seq in 1..=COUNT {
            engine.publish("LOG", "log.a", b"", &payload_for(seq, 300)).await.expect("publish");
        }
        let deleted = |seq: u64| seq % 7 == 3;
        for seq in (1..=COUNT).filter(|seq| deleted(*seq)) {
            assert!(engine.delete_message("LOG", seq).await.expect("delete"));
        }
        for seq in COUNT + 1..=COUNT + 100 {
            engine.publish("LOG", "log.b", b"", &payload_for(seq, 300)).await.expect("publish");
        }
        let forward = 1..=COUNT + 100;
        let backward = (1..=COUNT + 100).rev();
        let strided = (1..=COUNT + 100).step_by(13);
        let orders: Vec<Vec<u64>> = vec![forward.collect(), backward.collect(), strided.collect()];
        for order in orders {
            for seq in order {
                match engine.get("LOG", seq).await {
                    Ok(message) => {
                        assert!(!deleted(seq) || seq > COUNT, "seq {seq} was deleted but read back");
                        assert_eq!(message.seq, seq);
                        assert_eq!(&message.payload[..], &payload_for(seq, 300)[..], "seq {seq}");
                    }
                    Err(error) => assert!(deleted(seq) && seq <= COUNT, "seq {seq}: {error}"),
                }
            }
        }
    });
}

/// The non-waiting read (`get_now`, a consumer's forward path) either declines or returns
/// exactly the record asked for: forward through deleted messages (their removal records
/// sit in between), across segments, after writes that extend the cached window, and never
/// for a deleted sequence. Reading forward, it serves most records.
#[test]
fn reads_without_waiting_return_their_own_record_or_decline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_path_buf();
    run(move || async move {
        let engine = Engine::open(&path).await.expect("open");
        engine.create_stream(small_config("LOG", &["log.>"]), ShardId(0)).await.expect("create");
        const COUNT: u64 = 1_500;
        for seq in 1..=COUNT {
            engine.publish("LOG", "log.a", b"", &payload_for(seq, 300)).await.expect("publish");
        }
        let deleted = |seq: u64| seq % 7 == 3;
        for seq in (1..=COUNT).filter(|seq| deleted(*seq)) {
            assert!(engine.delete_message("LOG", seq).await.expect("delete"));
        }
        let mut served_now = 0;
        for seq in 1..=COUNT + 200 {
            if seq > COUNT {
                // Written after the window was cached.
                engine.publish("LOG", "log.b", b"", &payload_for(seq, 300)).await.expect("publish");
            }
            let message = match read_forward(&engine, "LOG", seq).await {
                Ok((message, now)) => {
                    served_now += u64::from(now);
                    message
                }
                Err(error) => {
                    assert!(deleted(seq) && seq <= COUNT, "seq {seq}: {error}");
                    continue;
                }
            };
            assert!(!deleted(seq) || seq > COUNT, "seq {seq} was deleted but read back");
            assert_eq!(message.seq, seq);
            assert_eq!(&message.payload[..], &payload_for(seq, 300)[..], "seq {seq}");
        }
        assert!(served_now > COUNT / 2, "forward reads mostly skip waiting: {served_now}");
    });
}

/// A forward reader past the middle of a big window has the next chunk read ahead of it.
/// Records of uneven sizes straddle the chunk boundaries, more are written while reads go
/// on (so a read-ahead may end past what was valid when it started), messages are deleted
/// in between, and reads jump back and forth: every read must still return its own bytes.
#[test]
fn read_ahead_across_chunks_returns_every_record() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_path_buf();
    run(move || async move {
        let engine = Engine::open(&path).await.expect("open");
        let mut config = jetcore::stream::StreamConfig::new("BIG", &["big.>"]);
        config.segment_size_bytes = 16 * 1024 * 1024;
        engine.create_stream(config, ShardId(0)).await.expect("create");
        let size = |seq: u64| 200 + (seq * 7919 % 3000) as usize;
        const COUNT: u64 = 4_000;
        // Concurrent publishes share groups, so records straddle block and chunk ends.
        // Their sequences follow the order the group takes them in, so each payload names
        // its index and `expected` maps sequences to payloads.
        let payloads: Vec<Vec<u8>> = (1..=COUNT).map(|index| payload_for(index, size(index))).collect();
        let mut expected = vec![Vec::new(); COUNT as usize + 1];
        for batch in payloads.chunks(100) {
            let publishes = batch.iter().map(|payload| engine.publish("BIG", "big.a", b"", payload));
            for (ack, payload) in futures::future::join_all(publishes).await.into_iter().zip(batch) {
                expected[ack.expect("publish").seq as usize] = payload.clone();
            }
        }
        let expected_for = |seq: u64| match expected.get(seq as usize) {
            Some(payload) if !payload.is_empty() => payload.clone(),
            _ => payload_for(seq, size(seq)),
        };
        let deleted = |seq: u64| seq % 97 == 5;
        for seq in (1..=COUNT).filter(|seq| deleted(*seq)) {
            assert!(engine.delete_message("BIG", seq).await.expect("delete"));
        }
        let mut last = COUNT;
        for pass in 0..2u64 {
            for seq in 1..=COUNT + 600 {
                if seq + pass * 300 > last && last < COUNT + 600 {
                    last += 1;
                    engine.publish("BIG", "big.b", b"", &payload_for(last, size(last))).await.expect("publish");
                }
                if seq > last {
                    break;
                }
                if seq % 1_000 == 0 {
                    // A jump back drops the current window (and its read-ahead).
                    let back = engine.get("BIG", seq / 3 + 1).await;
                    if let Ok(message) = back {
                        assert_eq!(&message.payload[..], &expected_for(message.seq)[..]);
                    }
                }
                let message = match read_forward(&engine, "BIG", seq).await {
                    Ok((message, _)) => message,
                    Err(error) => {
                        assert!(deleted(seq) && seq <= COUNT, "seq {seq}: {error}");
                        continue;
                    }
                };
                assert!(!deleted(seq) || seq > COUNT, "seq {seq} was deleted but read back");
                assert_eq!(message.seq, seq);
                assert_eq!(&message.payload[..], &expected_for(seq)[..], "pass {pass} seq {seq}");
            }
        }
    });
}

/// Reads `seq` as a consumer does: without waiting when it can (`get_now`; then `true`),
/// else through the awaiting read.
async fn read_forward(engine: &Engine, stream: &str, seq: u64) -> Result<(StoredMessage, bool), Error> {
    match engine.get_now(stream, seq) {
        Some(message) => Ok((message, true)),
        None => engine.get(stream, seq).await.map(|message| (message, false)),
    }
}
