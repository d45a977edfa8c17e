//! Limits on publish: discard old removes from the front, discard new refuses with the
//! limit's own error; per-subject, size and age limits; limits survive a restart.

#[path = "store_support.rs"]
mod support;

use std::rc::Rc;
use std::time::Duration;

use jetcore::store::SimDisk;
use jetcore::stream::{DiscardPolicy, Error, ManualClock, ShardId, StreamConfig};
use support::{run, sim_engine, small_config};

fn config(discard: DiscardPolicy) -> StreamConfig {
    let mut config = small_config("L", &["l.*"]);
    config.discard = discard;
    config
}

#[test]
fn discard_old_keeps_the_newest_max_msgs() {
    run(|| async {
        let (clock, disk) = (Rc::new(ManualClock::new(1)), SimDisk::new());
        let engine = sim_engine(&disk, &clock).await;
        let mut config = config(DiscardPolicy::Old);
        config.max_msgs = Some(10);
        engine.create_stream(config, ShardId(0)).await.expect("create");
        for _ in 0..25 {
            engine.publish("L", "l.a", b"", b"x").await.expect("publish");
        }
        let state = engine.state("L").expect("state");
        assert_eq!((state.messages, state.first_seq, state.last_seq), (10, 16, 25));
        drop(engine);
        let state = sim_engine(&disk, &clock).await.state("L").expect("state after restart");
        assert_eq!((state.messages, state.first_seq, state.last_seq), (10, 16, 25));
    });
}

#[test]
fn discard_new_refuses_with_the_limit_named() {
    run(|| async {
        let (clock, disk) = (Rc::new(ManualClock::new(1)), SimDisk::new());
        let engine = sim_engine(&disk, &clock).await;
        let mut by_count = config(DiscardPolicy::New);
        by_count.max_msgs = Some(2);
        engine.create_stream(by_count, ShardId(0)).await.expect("create");
        engine.publish("L", "l.a", b"", b"1").await.expect("publish");
        engine.publish("L", "l.a", b"", b"2").await.expect("publish");
        assert_eq!(engine.publish("L", "l.a", b"", b"3").await, Err(Error::MaximumMessagesExceeded));
        assert_eq!(Error::MaximumMessagesExceeded.to_string(), "maximum messages exceeded");

        let mut by_bytes = config(DiscardPolicy::New);
        by_bytes.name = "LB".into();
        by_bytes.subjects = vec!["lb".into()];
        by_bytes.max_bytes = Some(300);
        engine.create_stream(by_bytes, ShardId(0)).await.expect("create");
        engine.publish("LB", "lb", b"", &[0; 150]).await.expect("publish");
        assert_eq!(engine.publish("LB", "lb", b"", &[0; 150]).await, Err(Error::MaximumBytesExceeded));

        let mut per_subject = config(DiscardPolicy::New);
        per_subject.name = "LS".into();
        per_subject.subjects = vec!["ls.*".into()];
        per_subject.max_msgs_per_subject = Some(1);
        per_subject.discard_new_per_subject = true;
        engine.create_stream(per_subject, ShardId(0)).await.expect("create");
        engine.publish("LS", "ls.a", b"", b"1").await.expect("publish");
        engine.publish("LS", "ls.b", b"", b"1").await.expect("other subject fine");
        assert_eq!(engine.publish("LS", "ls.a", b"", b"2").await, Err(Error::MaximumMessagesPerSubjectExceeded));

        // Without discard_new_per_subject the subject's oldest message makes room (KV).
        let mut replace = config(DiscardPolicy::New);
        replace.name = "LR".into();
        replace.subjects = vec!["lr.*".into()];
        replace.max_msgs_per_subject = Some(1);
        replace.max_msgs = Some(2);
        engine.create_stream(replace, ShardId(0)).await.expect("create");
        engine.publish("LR", "lr.a", b"", b"1").await.expect("publish");
        engine.publish("LR", "lr.b", b"", b"1").await.expect("publish");
        let ack = engine.publish("LR", "lr.a", b"", b"2").await.expect("replaces lr.a");
        assert_eq!(ack.seq, 3);
        assert_eq!(engine.state("LR").expect("state").messages, 2);
        assert_eq!(engine.publish("LR", "lr.c", b"", b"1").await, Err(Error::MaximumMessagesExceeded));
    });
}

#[test]
fn per_subject_discard_old_and_message_size() {
    run(|| async {
        let (clock, disk) = (Rc::new(ManualClock::new(1)), SimDisk::new());
        let engine = sim_engine(&disk, &clock).await;
        let mut config = config(DiscardPolicy::Old);
        config.max_msgs_per_subject = Some(2);
        config.max_msg_size = Some(64);
        engine.create_stream(config, ShardId(0)).await.expect("create");
        for i in 0..5u8 {
            engine.publish("L", "l.a", b"", &[i]).await.expect("publish");
            engine.publish("L", "l.b", b"", &[i]).await.expect("publish");
        }
        let counts = engine.stream("L").expect("stream").subject_counts(">");
        assert_eq!(counts.values().copied().collect::<Vec<_>>(), vec![2, 2]);
        let last_a = engine.get_last_by_subject("L", "l.a").await.expect("last");
        assert_eq!((last_a.seq, &last_a.payload[..]), (9, &[4u8][..]));
        assert!(matches!(
            engine.publish("L", "l.a", b"", &[0; 65]).await,
            Err(Error::MessageSizeExceedsMaximum { size: 65, max: 64 })
        ));
        drop(engine);
        let engine = sim_engine(&disk, &clock).await;
        assert_eq!(engine.state("L").expect("state").messages, 4);
    });
}

#[test]
fn max_age_expires_old_messages() {
    run(|| async {
        let (clock, disk) = (Rc::new(ManualClock::new(1_000_000_000)), SimDisk::new());
        let engine = sim_engine(&disk, &clock).await;
        let mut config = config(DiscardPolicy::Old);
        config.max_age = Some(Duration::from_secs(10));
        config.duplicate_window = Duration::from_secs(1);
        engine.create_stream(config, ShardId(0)).await.expect("create");
        for _ in 0..3 {
            engine.publish("L", "l.a", b"", b"old").await.expect("publish");
        }
        clock.advance(Duration::from_secs(6).as_nanos() as i64);
        engine.publish("L", "l.a", b"", b"newer").await.expect("publish");
        clock.advance(Duration::from_secs(6).as_nanos() as i64);
        engine.tick().await.expect("tick");
        let state = engine.state("L").expect("state");
        assert_eq!((state.messages, state.first_seq), (1, 4));
    });
}
