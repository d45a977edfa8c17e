//! A group that ends 1-3 bytes before a block boundary leaves padding shorter than a
//! record's length field. Recovery must read it as padding, not as a bad record: it used
//! to take the next group's first bytes as a length and report one damaged byte (e.g.
//! segment 1 bytes 4093..4096) after every unclean restart (found by the DST in
//! tests/store_crash_random.rs). Nothing may be reported lost and every message is served.

#[path = "store_support.rs"]
mod support;

use std::rc::Rc;

use jetcore::store::record::encoded_len;
use jetcore::store::{CrashMode, SimDisk};
use jetcore::stream::{ManualClock, ShardId};
use support::{payload_for, run, sim_engine, small_config};

const BLOCK: usize = 4096;

#[test]
fn padding_shorter_than_a_length_field_is_not_damage() {
    run(|| async {
        for short_by in 0..=5usize {
            let clock = Rc::new(ManualClock::new(1));
            let disk = SimDisk::new();
            let engine = sim_engine(&disk, &clock).await;
            engine.create_stream(small_config("P", &["p"]), ShardId(0)).await.expect("create");
            // One message per group (each publish awaits its ack), the first ending
            // `short_by` bytes before the first block boundary.
            let first_len = BLOCK - short_by - encoded_len(1, 0, 0);
            let payloads = [payload_for(1, first_len), payload_for(2, 100), payload_for(3, 200)];
            for (index, payload) in payloads.iter().enumerate() {
                let ack = engine.publish("P", "p", b"", payload).await.expect("publish");
                assert_eq!(ack.seq, index as u64 + 1);
            }
            drop(engine); // unclean stop: no checkpoint, recovery scans the segment
            disk.crash(CrashMode::DropUnsynced);
            let engine = sim_engine(&disk, &clock).await;
            let state = engine.state("P").expect("state");
            assert!(state.lost.is_empty(), "{short_by} bytes short: damage reported: {:?}", state.lost);
            assert_eq!(state.last_seq, 3, "{short_by} bytes short");
            for (index, payload) in payloads.iter().enumerate() {
                let message = engine.get("P", index as u64 + 1).await.expect("served");
                assert_eq!(&message.payload[..], &payload[..], "{short_by} bytes short");
            }
        }
    });
}

/// The other side of the same boundary: inside one group records run across block
/// boundaries, and one that starts 1-3 bytes before a boundary with a length whose low
/// byte is zero (2048 is `00 08 00 00`) is a record, not padding (a first fix of the
/// bug above got this wrong; the DST reported the acknowledged message as damaged).
#[test]
fn a_record_starting_just_before_a_boundary_with_a_zero_first_byte_is_kept() {
    run(|| async {
        for short_by in 1..=3usize {
            let clock = Rc::new(ManualClock::new(1));
            let disk = SimDisk::new();
            let engine = sim_engine(&disk, &clock).await;
            engine.create_stream(small_config("Q", &["q"]), ShardId(0)).await.expect("create");
            let first = payload_for(1, BLOCK - short_by - encoded_len(1, 0, 0));
            let second = payload_for(2, 2048 - encoded_len(1, 0, 0));
            // Published together, so both records go into one group, back to back.
            let (one, two) =
                futures::join!(engine.publish("Q", "q", b"", &first), engine.publish("Q", "q", b"", &second));
            assert_eq!((one.expect("publish").seq, two.expect("publish").seq), (1, 2));
            drop(engine);
            disk.crash(CrashMode::DropUnsynced);
            let engine = sim_engine(&disk, &clock).await;
            let state = engine.state("Q").expect("state");
            assert!(state.lost.is_empty(), "{short_by} bytes before: damage reported: {:?}", state.lost);
            let message = engine.get("Q", 2).await.expect("served");
            assert_eq!(&message.payload[..], &second[..], "{short_by} bytes before");
        }
    });
}

/// Reading on across short padding reads a window, not the rest of the segment: the 1-3
/// zero bytes before the boundary and the next group's first bytes read as a length of
/// gigabytes (`00 00 00 xx`), and the read path used to fetch everything up to the
/// segment's written end to check it (seen in pull-consumer profiles: single reads of
/// 8-60 MB of a 64 MiB segment).
#[test]
fn reading_across_short_padding_reads_no_more_than_a_window() {
    run(|| async {
        for short_by in 1..=3usize {
            let clock = Rc::new(ManualClock::new(1));
            let disk = SimDisk::new();
            let engine = sim_engine(&disk, &clock).await;
            let mut config = small_config("R", &["r"]);
            config.segment_size_bytes = 64 << 20;
            engine.create_stream(config, ShardId(0)).await.expect("create");
            let first_len = BLOCK - short_by - encoded_len(1, 0, 0);
            engine.publish("R", "r", b"", &payload_for(1, first_len)).await.expect("publish");
            // The next group's first record has a length whose low byte is not zero.
            engine.publish("R", "r", b"", &payload_for(2, 301)).await.expect("publish");
            // Then several windows' worth more.
            let body = payload_for(3, 64 * 1024);
            for _ in 0..10 {
                let publishes = (0..8).map(|_| engine.publish("R", "r", b"", &body));
                for ack in futures::future::join_all(publishes).await {
                    ack.expect("publish");
                }
            }
            engine.get("R", 1).await.expect("message 1");
            let before = disk.bytes_read();
            let message = engine.get("R", 2).await.expect("message 2");
            assert_eq!(&message.payload[..], &payload_for(2, 301)[..], "{short_by} bytes short");
            let read = disk.bytes_read() - before;
            // Before the fix: all of the segment after message 1 (~5 MB here) for 2 and 3
            // bytes short; now nothing (message 2 lies in the window already read) or, 1
            // byte short, at most a forward reader's 1 MiB window (`00 xx yy zz` is a
            // 94 KB record running past the window, which a reader going forward takes as
            // reading on).
            assert!(read <= 1 << 20, "{short_by} bytes short: reading message 2 read {read} bytes");
        }
    });
}
