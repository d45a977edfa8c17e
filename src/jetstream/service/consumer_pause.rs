//! `CONSUMER.PAUSE.<s>.<c>` and `pause_until`: the wall-clock side of pausing. The
//! consumer's `pause_until` (config, persisted for durables) says until when; the state
//! machine gets the matching tick and delivers nothing before it (`consumer::pause`).

use super::consumer_store::{self, ConsumerRecord};
use super::{now_ns, StreamService};
use crate::consumer::Tick;
use crate::jetstream::consumer_api::{PauseBody, PauseRequest};
use crate::jetstream::errors::ApiError;
use crate::jetstream::request::decode_request;
use crate::jetstream::Timestamp;

impl StreamService {
    /// Pauses (or, without `pause_until`, resumes) a consumer; answers its pause state.
    pub(super) async fn pause_consumer(
        &self,
        stream_name: &str,
        name: &str,
        body: &[u8],
    ) -> Result<PauseBody, ApiError> {
        let request = decode_request::<PauseRequest>(body)?;
        let stream = self.stream_handle(stream_name)?;
        let id = self.consumers.find(stream_name, name).ok_or_else(ApiError::consumer_not_found)?;
        let mut stored = None;
        self.consumers.call(&stream, id, |entry, cx| {
            entry.config.pause_until = request.pause_until;
            entry.consumer.pause_advised(pause_tick(request.pause_until, cx.now), cx);
            if entry.persisted {
                stored = Some(ConsumerRecord {
                    name: entry.name.to_string(),
                    config: entry.config.clone(),
                    created_ns: entry.created_ns,
                });
            }
        });
        if let Some(stored) = stored {
            consumer_store::write_config(&*self.disk, stream.dir(), &stored)
                .await
                .map_err(|error| ApiError::consumer_create(error.to_string()))?;
        }
        let pause_remaining = remaining_nanos(request.pause_until);
        Ok(PauseBody {
            paused: pause_remaining > 0,
            pause_until: request.pause_until.unwrap_or(Timestamp::ZERO),
            pause_remaining,
        })
    }
}

/// Nanoseconds of pause left at this moment (0: not paused). A time past the `i64`
/// nanosecond range (after 2262) counts as paused for as long as that range allows.
pub(super) fn remaining_nanos(pause_until: Option<Timestamp>) -> i64 {
    let Some(until) = pause_until else { return 0 };
    let now = now_ns();
    if until <= Timestamp::from_unix_nanos(now) {
        return 0;
    }
    until.unix_nanos().map_or(i64::MAX, |until| until - now)
}

/// The tick at which a pause until `pause_until` ends, seen at tick `now`; `None` when
/// there is no pause or it is already over.
pub(super) fn pause_tick(pause_until: Option<Timestamp>, now: Tick) -> Option<Tick> {
    Some(remaining_nanos(pause_until)).filter(|nanos| *nanos > 0).map(|nanos| now.after_nanos(nanos))
}
