//! Reads reuse the last read window of a log: every record must still be returned, with
//! its own bytes, whatever was read (and cached) before it was written. (Recent records
//! may also be served from the log's in-memory group buffers, so this checks the
//! interleaving end to end rather than the window's cut-back alone.)

#[path = "store_support.rs"]
mod support;

use jetcore::engine::Engine;
use jetcore::stream::ShardId;
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
            let message = match engine.get_now("LOG", seq) {
                Some(message) => {
                    served_now += 1;
                    message
                }
                None => match engine.get("LOG", seq).await {
                    Ok(message) => message,
                    Err(error) => {
                        assert!(deleted(seq) && seq <= COUNT, "seq {seq}: {error}");
                        continue;
                    }
                },
            };
            assert!(!deleted(seq) || seq > COUNT, "seq {seq} was deleted but read back");
            assert_eq!(message.seq, seq);
            assert_eq!(&message.payload[..], &payload_for(seq, 300)[..], "seq {seq}");
        }
        assert!(served_now > COUNT / 2, "forward reads mostly skip waiting: {served_now}");
    });
}
