//! jetcore: a persistent message-streaming server and embeddable storage engine,
//! wire-compatible with NATS and NATS JetStream, built thread-per-core.
//!
//! Dependencies point one way (see DESIGN §6):
//! `server → jetstream → (consumer, stream) → store`, with `protocol`, `subject`
//! and `shard` below them as shared foundations.

pub mod calendar;
pub mod codec;
pub mod consumer;
pub mod engine;
pub mod failpoint;
#[doc(hidden)]
pub mod fuzzing;
pub mod jetstream;
pub mod limits;
pub mod protocol;
pub mod server;
pub mod shard;
pub mod store;
pub mod stream;
pub mod subject;

pub use engine::Engine;
pub use server::{Server, ServerBuilder};
