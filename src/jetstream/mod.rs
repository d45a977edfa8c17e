//! `$JS.API.*` wire types: request subjects, request and reply bodies, the error
//! catalogue, and the encodings nats-server 2.15 uses (DESIGN §6: this module holds no
//! business logic; stream and consumer state live in `stream` and `consumer`).
//!
//! Everything here is pure serde over byte slices and strings. The shapes were checked
//! against replies recorded from nats-server 2.15.1 (`tests/data/jsapi/tour.json`,
//! recorded by `tests/data/jsapi/record.py`); `tests/jetstream_wire_*.rs` keep them so.
//!
//! Wire conventions every type follows:
//! - durations are `i64` nanoseconds; timestamps are [`time::Timestamp`] (RFC 3339, UTC);
//! - optional fields are omitted exactly where Go's `omitempty` omits them;
//! - replies are encoded with [`responses::encode_reply`] (Go's HTML-safe escaping);
//! - request bodies are decoded leniently with [`request::decode_request`].

pub mod account;
pub mod api_level;
pub mod backup_api;
pub mod base64;
pub mod consumer_api;
pub mod consumer_config;
pub mod consumer_info;
pub mod consumer_settings;
pub mod defaults;
pub mod errors;
pub mod go_shapes;
pub mod metadata;
pub mod policies;
pub mod pub_ack;
pub mod request;
pub mod responses;
pub mod source_checks;
pub mod stream_api;
pub mod stream_config;
pub mod stream_info;
pub mod stream_sources;
pub mod stream_transforms;
pub mod subjects;
pub mod time;

pub use errors::ApiError;
pub use responses::{encode_reply, ResponseType};
pub use subjects::ApiRequest;
pub use time::Timestamp;
pub mod service;
