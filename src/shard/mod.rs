//! Per-core runtime: pinned glommio executors, the cross-shard mesh, placement, probe.
//!
//! CONTRACT: `ShardId(u16)`; `probe::check() -> Result<(), ProbeError>` (Display says what to fix);
//! `Runtime::builder().shards(n).start(|ctx: ShardContext<E>| async move { .. })` runs one closure per
//! shard on its pinned LocalExecutor and `join()`s; `ShardContext` gives `id()`, `shard_count()` and the
//! mesh endpoint: `try_send(to, E) -> Result<(), E>`, `send(to, E).await` (waits for ring room),
//! `recv().await -> (ShardId, E)` and `try_recv()`; `placement::shard_for(name, shard_count) -> ShardId`.
