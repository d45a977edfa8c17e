//! Consumers: the pure, deterministic state machine behind JetStream pull and push
//! consumers (DESIGN §5). Nothing here reads a clock, does I/O or writes sockets: the
//! shard passes ticks, a read-only view of the stream and of subscription interest, and
//! its one timer wheel in a [`Context`], and carries out the returned [`Effect`]s.
//!
//! How the shard drives a consumer:
//! - after a publish is durable: [`Consumer::on_stream_append`] for each consumer of
//!   the stream (it checks its filters);
//! - messages removed (limits, purge, delete): [`Consumer::on_stream_removed`];
//! - a message on `$JS.ACK.>`: parse with [`AckSubject::parse`], route by stream and
//!   consumer, then [`Consumer::on_ack`] (body after headers, and the reply subject);
//! - on each loop turn: `timers.advance(now, &mut expired)` and, for every expired
//!   [`TimerKey`], [`Consumer::on_timer`] of `key.consumer`;
//! - `$JS.API.CONSUMER.MSG.NEXT.<s>.<c>`: [`Consumer::on_pull_request`];
//! - the deliver subject gains or loses its last subscriber:
//!   [`Consumer::on_interest_change`]; a pull inbox loses its last subscriber:
//!   [`Consumer::on_reply_interest_lost`];
//! - a message on `$JS.FC.<s>.<c>.>`: [`Consumer::on_flow_control_reply`];
//! - `$JS.API.CONSUMER.PAUSE.<s>.<c>`: [`Consumer::pause`] (the shard turns the
//!   wall-clock `pause_until` into a tick);
//! - `$JS.API.CONSUMER.UNPIN.<s>.<c>`: [`Consumer::unpin`]; info: [`Consumer::pin`];
//! - consumer deleted: [`Consumer::delete`]; info: [`Consumer::counters`];
//! - [`Effect::StateChanged`]: persist [`Consumer::state`] (`ConsumerState::encode`);
//!   restart: [`Consumer::restore`].

pub mod ack;
mod ack_processing;
#[expect(clippy::module_inception, reason = "the consumer type lives in consumer::consumer")]
pub mod consumer;
pub mod effect;
mod inactivity;
mod pause;
pub mod pending;
pub mod pinning;
pub mod pull;
pub mod pull_request;
pub mod push;
mod replay;
mod reset;
pub mod sequence;
pub mod settings;
pub mod start_position;
pub mod state_codec;
pub mod stream_view;
pub mod timer_key;
pub mod timer_wheel;

pub use ack::{AckKind, AckNumbers, AckSubject, AckSubjectBuilder, AckSubjectError};
pub use consumer::{Consumer, Counters, RestoreError};
pub use effect::{Advisory, Context, DeleteReason, Delivery, Effect, StatusReply, UnpinReason};
pub use pending::{PendingEntry, PendingSet, Position};
pub use sequence::{ConsumerId, ConsumerSeq, DeliveryCount, RequestId, StreamSeq, Tick};
pub use state_codec::{ConsumerState, PendingRecord, StateDecodeError};
pub use stream_view::{AlwaysInterested, Filters, InterestView, MessageMeta, StreamView};
pub use timer_key::{ShardTimers, TimerKey, TimerKind};
pub use timer_wheel::{Expired, TimerId, TimerWheel};
