//! A stream: configuration, sequences, dedupe, limits, purge and reads, on top of a
//! [`crate::store::SegmentLog`]; and its owner on the shard (`owner.rs`): the stream, the
//! rules its config sets for writes (`rules.rs`) and its publishes' acks in order. Knows
//! nothing of connections or other shards.
//! Memory storage runs the same logic over an in-memory disk.

mod batch;
pub(crate) mod checkpoint;
mod checkpointing;
pub mod clock;
pub mod config;
mod counter;
mod counting;
mod cron;
mod dedupe;
pub mod edit;
pub mod error;
mod expiry;
mod flags;
mod headers;
mod ingest;
mod legacy_file;
mod maintenance;
pub mod markers;
pub mod meta;
mod owner;
mod owners;
mod read;
pub mod record_cache;
mod relocate;
mod reopen;
mod replay;
mod rollup;
mod rules;
mod schedule;
mod schedule_time;
mod scheduler;
pub(crate) mod slot_file;
pub mod stored_size;
#[expect(clippy::module_inception, reason = "the Stream type lives in stream::stream like store::log")]
mod stream;
pub mod subject_match;
mod subjects;
mod table;
mod time_zone;
pub mod ttl;
mod tz_rule;
mod tzif;

pub use crate::shard::ShardId;
/// Whether the shard's streams just made a publish durable with a blocking write and
/// did nothing since (a client's reader may then wait in a blocking call).
pub use crate::store::blocking_write::{idle_after_blocking, last_write_blocked};
/// A stream's config carries its sync policy.
pub use crate::store::SyncPolicy;
pub use batch::BatchMessage;
pub use clock::{Clock, ManualClock, SystemClock};
pub use config::{ConfigError, DiscardPolicy, StorageKind, StreamConfig};
pub use edit::PurgeRequest;
pub use error::Error;
pub use ingest::{Origin, PublishRequest};
pub use markers::MarkerWritten;
pub use meta::StreamMeta;
pub use owner::{AckTicket, AppendedMessage, ClientMessage, Front, RepublishCopy, StreamOwner};
pub use owners::{OwnerKey, StreamOwners};
pub use read::{ForwardMessage, MessageSummary, StoredMessage, StreamState};
pub use replay::LostRange;
pub use rules::{RepublishRule, Retention, StreamRules};
pub use scheduler::FiredMessage;
pub use stream::{Appended, Keep, PendingAppend, PubAck, Stream, StreamContext};
pub use ttl::{parse_ttl, MessageTtl};
