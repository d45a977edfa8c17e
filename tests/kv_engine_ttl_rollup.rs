//! The engine's KV features on a simulated disk with a manual clock: per-message TTL
//! (`Nats-TTL`) expires at its deadline, also after a restart that replays the log and
//! after one that loads a checkpoint; rollups (`Nats-Rollup: sub|all`) remove what they
//! replace and stay removed after a restart; refusals carry nats-server's reasons.

#[path = "store_support.rs"]
mod support;

use std::rc::Rc;

use jetcore::store::SimDisk;
use jetcore::stream::{DiscardPolicy, Error, ManualClock, ShardId, StreamConfig};
use support::{run, sim_engine, small_config};

const SECOND: i64 = 1_000_000_000;

fn headers(pairs: &[(&str, &str)]) -> Vec<u8> {
    let mut block = b"NATS/1.0\r\n".to_vec();
    for (name, value) in pairs {
        block.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    block.extend_from_slice(b"\r\n");
    block
}

fn kv_config() -> StreamConfig {
    let mut config = small_config("KV", &["kv.>"]);
    config.allow_msg_ttl = true;
    config.allow_rollup = true;
    config
}

#[test]
fn ttl_expires_at_its_deadline_across_replay_and_checkpoint_restarts() {
    run(|| async {
        let (clock, disk) = (Rc::new(ManualClock::new(SECOND)), SimDisk::new());
        let engine = sim_engine(&disk, &clock).await;
        engine.create_stream(kv_config(), ShardId(0)).await.expect("create");
        let short = headers(&[("Nats-TTL", "2s")]);
        let long = headers(&[("Nats-TTL", "10")]);
        let never = headers(&[("Nats-TTL", "never")]);
        engine.publish("KV", "kv.short", &short, b"s").await.expect("publish");
        engine.publish("KV", "kv.long", &long, b"l").await.expect("publish");
        engine.publish("KV", "kv.never", &never, b"n").await.expect("publish");
        engine.publish("KV", "kv.plain", b"", b"p").await.expect("publish");

        clock.advance(SECOND);
        engine.tick().await.expect("tick");
        assert_eq!(engine.state("KV").expect("state").messages, 4, "nothing due after 1 s");
        drop(engine); // kill: the restart replays the log, rebuilding deadlines from headers

        clock.advance(2 * SECOND);
        let engine = sim_engine(&disk, &clock).await;
        engine.tick().await.expect("tick");
        let state = engine.state("KV").expect("state");
        assert_eq!((state.messages, state.first_seq), (3, 2), "kv.short expired");
        engine.checkpoint_all().await.expect("checkpoint");
        drop(engine); // this restart loads the checkpoint, deadlines included

        clock.advance(8 * SECOND);
        let engine = sim_engine(&disk, &clock).await;
        engine.tick().await.expect("tick");
        let state = engine.state("KV").expect("state");
        assert_eq!((state.messages, state.first_seq, state.last_seq), (2, 3, 4), "kv.long expired");
        assert_eq!(engine.stream("KV").expect("stream").get(3).await.expect("never stays").payload.as_ref(), b"n");
        drop(engine);
        let state = sim_engine(&disk, &clock).await.state("KV").expect("state");
        assert_eq!(state.messages, 2, "expiry is durable");
    });
}

#[test]
fn rollups_replace_earlier_messages_and_survive_restart() {
    run(|| async {
        let (clock, disk) = (Rc::new(ManualClock::new(SECOND)), SimDisk::new());
        let engine = sim_engine(&disk, &clock).await;
        engine.create_stream(kv_config(), ShardId(0)).await.expect("create");
        for subject in ["kv.a", "kv.b", "kv.a", "kv.c", "kv.a"] {
            engine.publish("KV", subject, b"", b"v").await.expect("publish");
        }
        let sub = headers(&[("KV-Operation", "PURGE"), ("Nats-Rollup", "sub")]);
        let ack = engine.publish("KV", "kv.a", &sub, b"").await.expect("rollup sub");
        assert_eq!(ack.seq, 6);
        let counts = engine.stream("KV").expect("stream").subject_counts(">");
        let counts: Vec<(String, u64)> = counts.into_iter().collect();
        assert_eq!(counts, vec![("kv.a".into(), 1), ("kv.b".into(), 1), ("kv.c".into(), 1)]);
        drop(engine);

        let engine = sim_engine(&disk, &clock).await;
        assert_eq!(engine.state("KV").expect("state").messages, 3, "rollup sub replayed");
        let all = headers(&[("Nats-Rollup", "ALL")]);
        engine.publish("KV", "kv.z", &all, b"only").await.expect("rollup all");
        let state = engine.state("KV").expect("state");
        assert_eq!((state.messages, state.first_seq, state.last_seq), (1, 7, 7));
        drop(engine);
        let state = sim_engine(&disk, &clock).await.state("KV").expect("state");
        assert_eq!((state.messages, state.first_seq, state.last_seq), (1, 7, 7), "rollup all replayed");
    });
}

#[test]
fn ttl_and_rollup_refusals() {
    run(|| async {
        let (clock, disk) = (Rc::new(ManualClock::new(SECOND)), SimDisk::new());
        let engine = sim_engine(&disk, &clock).await;
        engine.create_stream(small_config("PLAIN", &["plain.>"]), ShardId(0)).await.expect("create");
        engine.create_stream(kv_config(), ShardId(0)).await.expect("create");
        let ttl = headers(&[("Nats-TTL", "5s")]);
        assert_eq!(engine.publish("PLAIN", "plain.a", &ttl, b"x").await, Err(Error::MessageTtlDisabled));
        let rollup = headers(&[("Nats-Rollup", "sub")]);
        assert_eq!(engine.publish("PLAIN", "plain.a", &rollup, b"x").await, Err(Error::RollupNotPermitted));
        for value in ["0", "-1", "500ms", "soon"] {
            let bad = headers(&[("Nats-TTL", value)]);
            assert_eq!(engine.publish("KV", "kv.a", &bad, b"x").await, Err(Error::MessageTtlInvalid), "{value}");
        }
        let bad = headers(&[("Nats-Rollup", "bogus")]);
        assert_eq!(engine.publish("KV", "kv.a", &bad, b"x").await, Err(Error::RollupInvalid { value: "bogus".into() }));
        assert_eq!(engine.state("PLAIN").expect("state").messages + engine.state("KV").expect("state").messages, 0);
    });
}

#[test]
fn discard_new_per_subject_refuses_but_lets_a_rollup_replace() {
    run(|| async {
        let (clock, disk) = (Rc::new(ManualClock::new(SECOND)), SimDisk::new());
        let engine = sim_engine(&disk, &clock).await;
        let mut config = kv_config();
        config.discard = DiscardPolicy::New;
        config.max_msgs_per_subject = Some(1);
        config.discard_new_per_subject = true;
        engine.create_stream(config, ShardId(0)).await.expect("create");
        engine.publish("KV", "kv.a", b"", b"1").await.expect("first");
        assert_eq!(engine.publish("KV", "kv.a", b"", b"2").await, Err(Error::MaximumMessagesPerSubjectExceeded));
        let rollup = headers(&[("Nats-Rollup", "sub")]);
        let ack = engine.publish("KV", "kv.a", &rollup, b"3").await.expect("a rollup replaces");
        assert_eq!(ack.seq, 2);
        let state = engine.state("KV").expect("state");
        assert_eq!((state.messages, state.first_seq), (1, 2));
    });
}
