//! The `$JS.API` requests a stream's owning shard answers, each turned into reply bytes.

use bytes::Bytes;

use super::{convert, StreamService, StreamSummary};
use crate::jetstream::errors::ApiError;
use crate::jetstream::request::decode_request;
use crate::jetstream::responses::{encode_reply, ResponseType};
use crate::jetstream::stream_api::{
    MessageSelector, MsgDeleteRequest, MsgGetBody, MsgGetRequest, PurgeBody, PurgeRequest,
    StoredMessage as WireMessage, StreamInfoRequest, SuccessBody,
};
use crate::jetstream::stream_config::StreamConfig as WireConfig;
use crate::jetstream::stream_info::{subjects_page, StreamCreateBody, StreamInfoBody};
use crate::jetstream::{ApiRequest, Timestamp};
use crate::stream::{self, StoredMessage};

/// How a request is answered.
#[derive(Debug)]
pub enum ApiReply {
    /// A JSON API response.
    Json(Vec<u8>),
    /// A message (direct get): its header block and payload.
    Message { headers: Vec<u8>, payload: Bytes },
    /// Several messages in order (a batched direct get, ending with its `204 EOB`).
    Batch(Vec<(Vec<u8>, Bytes)>),
    /// Nothing: nats-server does not answer this request.
    Silent,
}

impl ApiReply {
    /// True for a JSON answer that carries an `error` (nats-server counts these as API
    /// errors). Direct-get status messages are not API errors.
    pub fn is_error(&self) -> bool {
        match self {
            ApiReply::Json(payload) => crate::jetstream::responses::is_error_reply(payload),
            _ => false,
        }
    }
}

impl StreamService {
    /// Answers a request about a stream this shard owns.
    pub async fn handle(&self, request: ApiRequest<'_>, body: &[u8]) -> ApiReply {
        match request {
            ApiRequest::StreamInfo { stream } => ApiReply::Json(self.info_reply(stream, body)),
            ApiRequest::StreamPurge { stream } => {
                let reply = self.purge_reply(stream, body).await;
                self.streams_maybe_removed();
                ApiReply::Json(reply)
            }
            ApiRequest::StreamMsgGet { stream } => ApiReply::Json(self.get_reply(stream, body).await),
            ApiRequest::StreamMsgDelete { stream } => {
                let reply = self.delete_message_reply(stream, body).await;
                self.streams_maybe_removed();
                ApiReply::Json(reply)
            }
            ApiRequest::DirectGet { stream, last_by_subject } => self.direct_get(stream, last_by_subject, body).await,
            _ => ApiReply::Silent,
        }
    }

    /// STREAM.CREATE on the owner: the reply, and the catalog entry when it now exists.
    pub async fn create_reply(&self, config: WireConfig) -> (Vec<u8>, Option<StreamSummary>) {
        let outcome = self.create(config.clone()).await;
        let summary = outcome.is_ok().then(|| self.summary(&config));
        let body = outcome.map(|(info, did_create)| StreamCreateBody { info, did_create });
        (encode_reply(ResponseType::StreamCreate, &body), summary)
    }

    pub async fn update_reply(&self, config: WireConfig) -> (Vec<u8>, Option<StreamSummary>) {
        let outcome = self.update(config.clone()).await;
        let summary = outcome.is_ok().then(|| self.summary(&config));
        let body = outcome.map(|info| StreamCreateBody { info, did_create: false });
        (encode_reply(ResponseType::StreamUpdate, &body), summary)
    }

    /// STREAM.DELETE on the owner: the reply, and whether the stream is gone.
    pub async fn delete_reply(&self, name: &str) -> (Vec<u8>, bool) {
        let outcome = self.delete(name).await.map(|()| SuccessBody { success: true });
        let deleted = outcome.is_ok();
        (encode_reply(ResponseType::StreamDelete, &outcome), deleted)
    }

    fn info_reply(&self, name: &str, body: &[u8]) -> Vec<u8> {
        let outcome = decode_request::<StreamInfoRequest>(body).and_then(|request| {
            let filter = (!request.subjects_filter.is_empty()).then_some(request.subjects_filter.as_str());
            let mut info = self.info_with_subjects(name, true, filter)?;
            if request.deleted_details {
                info.state.deleted = self.engine.stream(name).map(|stream| stream.deleted_seqs()).unwrap_or_default();
            }
            let subjects = std::mem::take(&mut info.state.subjects);
            let offset = request.offset.max(0) as u64;
            let (page, paged) = subjects_page(subjects, offset, crate::limits::STREAM_INFO_SUBJECTS_MAX);
            info.state.subjects = page;
            Ok(StreamInfoBody { paged, info })
        });
        encode_reply(ResponseType::StreamInfo, &outcome)
    }

    async fn purge_reply(&self, name: &str, body: &[u8]) -> Vec<u8> {
        let outcome = async {
            let owner = self.owner(name).ok_or_else(ApiError::stream_not_found)?;
            owner.rules().check_purge().map_err(|e| convert::api_error(&e))?;
            let request = PurgeRequest::decode(body)?;
            let engine_request = stream::PurgeRequest {
                filter: (!request.filter.is_empty()).then_some(request.filter),
                up_to_seq: (request.seq > 0).then_some(request.seq),
                keep: (request.keep > 0).then_some(request.keep),
            };
            let purged = self.engine.purge(name, engine_request).await.map_err(|e| convert::api_error(&e))?;
            if let Ok(stream) = self.engine.stream(name) {
                self.consumers.stream_purged(&stream);
            }
            Ok(PurgeBody { success: true, purged })
        }
        .await;
        encode_reply(ResponseType::StreamPurge, &outcome)
    }

    async fn get_reply(&self, name: &str, body: &[u8]) -> Vec<u8> {
        let outcome = async {
            self.record(name)?;
            let request = MsgGetRequest::decode(body)?;
            let message = self.select(name, request.selector()?).await?;
            Ok(MsgGetBody { message: wire_message(&message) })
        }
        .await;
        encode_reply(ResponseType::StreamMsgGet, &outcome)
    }

    pub(super) async fn select(&self, name: &str, selector: MessageSelector<'_>) -> Result<StoredMessage, ApiError> {
        let stream = self.engine.stream(name).map_err(|e| convert::api_error(&e))?;
        let found = match selector {
            MessageSelector::Sequence(seq) => stream.get(seq).await,
            MessageSelector::LastBySubject(subject) => stream.get_last_by_subject(subject).await,
            MessageSelector::NextBySubject { subject, from_seq } => {
                stream.next_by_subject(from_seq.max(1), Some(subject)).await
            }
            MessageSelector::FirstAtOrAfter { time, subject } => {
                let from = stream.seq_at_time(time.unix_nanos().unwrap_or(0));
                stream.next_by_subject(from.max(1), subject).await
            }
        };
        found.map_err(|error| match error {
            stream::Error::NoMessageFound => ApiError::no_message_found(),
            other => convert::api_error(&other),
        })
    }

    async fn delete_message_reply(&self, name: &str, body: &[u8]) -> Vec<u8> {
        let outcome = async {
            let owner = self.owner(name).ok_or_else(ApiError::stream_not_found)?;
            owner.rules().check_delete().map_err(|e| convert::api_error(&e))?;
            let request = MsgDeleteRequest::decode(body)?;
            if is_empty_object(body) {
                // nats-server counts `{}` as an empty request, like no body at all.
                return Err(ApiError::bad_request());
            }
            // Outside first..=last nats-server answers from its store's lookup, not with 10043.
            let state = self.engine.state(name).map_err(|e| convert::api_error(&e))?;
            if request.seq == 0 || request.seq < state.first_seq {
                return Err(ApiError::stream_msg_delete_failed("no message found"));
            }
            if request.seq > state.last_seq {
                return Err(ApiError::stream_msg_delete_failed("stream store EOF"));
            }
            match self.engine.delete_message(name, request.seq).await {
                Ok(true) => Ok(SuccessBody { success: true }),
                Ok(false) => Err(ApiError::sequence_not_found(request.seq)),
                Err(error) => Err(convert::api_error(&error)),
            }
        }
        .await;
        encode_reply(ResponseType::StreamMsgDelete, &outcome)
    }
}

fn is_empty_object(body: &[u8]) -> bool {
    matches!(crate::jetstream::request::parse_body(body), Ok(Some(serde_json::Value::Object(map))) if map.is_empty())
}

fn wire_message(message: &StoredMessage) -> WireMessage {
    WireMessage {
        subject: message.subject.clone(),
        seq: message.seq,
        hdrs: message.headers.to_vec(),
        data: message.payload.to_vec(),
        time: Timestamp::from_unix_nanos(message.timestamp_ns),
    }
}
