//! The runtime starts one executor per shard, hands each its identity and returns outputs in
//! shard order; bad shard counts are typed errors.

use jetcore::limits;
use jetcore::shard::{Runtime, RuntimeError, ShardContext, ShardId};

#[test]
fn each_shard_runs_once_and_join_returns_outputs_in_shard_order() {
    // Three shards on a two-CPU machine: placement wraps around the CPUs.
    let outputs = Runtime::builder()
        .shards(3)
        .start(|context: ShardContext<()>| async move { (context.id(), context.shard_count()) })
        .expect("runtime starts")
        .join()
        .expect("shards finish");
    assert_eq!(outputs, vec![(ShardId(0), 3), (ShardId(1), 3), (ShardId(2), 3)]);
}

#[test]
fn default_shard_count_is_one_per_available_cpu() {
    let handle = Runtime::builder()
        .start(|context: ShardContext<()>| async move { context.shard_count() })
        .expect("runtime starts");
    let cpus = jetcore::shard::available_cpus().len();
    assert_eq!(usize::from(handle.shard_count()), cpus);
    assert_eq!(handle.join().expect("shards finish"), vec![cpus as u16; cpus]);
}

#[test]
fn zero_or_too_many_shards_is_an_error() {
    for requested in [0, limits::SHARD_COUNT_MAX + 1] {
        let result = Runtime::builder().shards(requested).start(|_: ShardContext<()>| async {});
        match result {
            Err(RuntimeError::ShardCount { requested: got }) => {
                assert_eq!(got, usize::from(requested))
            }
            Err(other) => panic!("unexpected error {other}"),
            Ok(_) => panic!("{requested} shards accepted"),
        }
    }
}

#[test]
fn a_panicking_shard_is_reported_by_join() {
    let result = Runtime::builder()
        .shards(1)
        .start(|_: ShardContext<()>| async { panic!("shard main failed on purpose") })
        .expect("runtime starts")
        .join();
    assert!(matches!(result, Err(RuntimeError::Shard { shard: ShardId(0), .. })), "{result:?}");
}
