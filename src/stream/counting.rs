//! A counter stream's side of a publish (`allow_msg_counter`, ADR-49; the arithmetic and
//! the header's format are `counter.rs`): what it stores for a client's increment or a
//! sourced counter message, from the subject's last total, which it reads from the log
//! when it does not know it.
//!
//! A client's `Nats-Incr` adds to the subject's total. A message that carries
//! `Nats-Stream-Source` (a copy from a source, or a client's message claiming to be one,
//! as nats-server reads it) carries its origin's total instead: the stream adds the
//! difference from that origin's previous total, stores that difference as `Nats-Incr`,
//! and records the origin's total in `Nats-Counter-Sources`. Every message of a subject
//! with sources carries them on, so its last message holds them across restarts.

use super::counter::{source_origin, CounterSources, KnownTotal, Total};
use super::error::Error;
use super::headers::{header_value, with_header_value, COUNTER_SOURCES, MESSAGE_INCREMENT, STREAM_SOURCE};
use super::ingest::{Origin, PublishRequest};
use super::stream::Stream;

/// What a counter stream stores for a message ([`Stream::counter_step`]).
pub(super) enum CounterStep {
    /// Not an increment on a counter stream: stored as it came (or refused later, as a
    /// client's message without `Nats-Incr` is, after dedupe).
    NotCounted,
    Counted(Counted),
    /// The subject's last message must be read to know its total.
    Unknown,
}

/// A counted message as the stream stores it.
pub(super) struct Counted {
    /// The subject's new total and sources.
    pub known: KnownTotal,
    /// `{"val":"<total>"}`.
    pub body: Vec<u8>,
    /// The headers stored, when they differ from those given (a sourced increment's
    /// difference, `Nats-Counter-Sources`).
    pub headers: Option<Vec<u8>>,
}

impl Counted {
    /// `request` with the body and headers stored in its place.
    pub fn request<'a>(&'a self, request: PublishRequest<'a>) -> PublishRequest<'a> {
        let headers = self.headers.as_deref().unwrap_or(request.headers);
        PublishRequest { payload: &self.body, headers, ..request }
    }
}

impl Stream {
    /// For an increment on a counter stream: what is stored, or `Unknown` when the
    /// subject's last message must be read first ([`Self::load_counter_total`]). A
    /// client's increment was checked (`check_message`); a sourced message without a
    /// valid `Nats-Incr`, or one whose body or the subject's last message is no counter,
    /// is refused, and so is a message that would be stored larger than the stream allows.
    pub(super) fn counter_step(&self, request: &PublishRequest<'_>) -> Result<CounterStep, Error> {
        let Some(increment) = self.increment_of(request)? else {
            return Ok(CounterStep::NotCounted);
        };
        match self.known_total(request.subject)? {
            Some(known) => self.count(request, increment, known).map(CounterStep::Counted),
            None => Ok(CounterStep::Unknown),
        }
    }

    /// The `Nats-Incr` of a message a counter stream counts (`None`: not counted).
    pub(super) fn increment_of(&self, request: &PublishRequest<'_>) -> Result<Option<Total>, Error> {
        if matches!(request.origin, Origin::Mirror { .. }) || !self.meta.borrow().config.allow_msg_counter {
            return Ok(None);
        }
        match header_value(request.headers, MESSAGE_INCREMENT).filter(|value| !value.is_empty()) {
            None if request.origin == Origin::Client => Ok(None),
            None => Err(Error::MessageCounterIncrementMissing),
            Some(text) => Total::parse(text).map(Some).ok_or(Error::MessageCounterIncrementInvalid),
        }
    }

    /// What is stored for `request`, counted with `increment` on top of `known`.
    pub(super) fn count(
        &self,
        request: &PublishRequest<'_>,
        increment: Total,
        known: KnownTotal,
    ) -> Result<Counted, Error> {
        let KnownTotal { total, mut sources } = known;
        let mut headers = None;
        let increment = match header_value(request.headers, STREAM_SOURCE) {
            Some(source) => {
                let sourced = Total::from_body(request.payload).ok_or(Error::MessageCounterBroken)?;
                let (stream, subject) = source_origin(source, request.subject);
                let difference = sourced.plus(&sources.replace(stream, subject, &sourced).negated());
                headers = Some(with_header_value(request.headers, MESSAGE_INCREMENT, &difference.to_string()));
                difference
            }
            None => increment,
        };
        if !sources.is_empty() {
            let given = headers.as_deref().unwrap_or(request.headers);
            headers = Some(with_header_value(given, COUNTER_SOURCES, &sources.header_value()));
        }
        let total = total.plus(&increment);
        let body = total.body();
        // As stored, not as sent: the total and the sources count toward the limit.
        let size = headers.as_ref().map_or(request.headers.len(), Vec::len) + body.len();
        let max = self.meta.borrow().config.message_bytes_max(request.subject.len());
        if size > max {
            return Err(Error::MessageSizeExceedsMaximum { size, max });
        }
        Ok(Counted { known: KnownTotal { total, sources }, body, headers })
    }

    /// What the subject's last message holds (nothing: zero); `None` when it is not in
    /// memory.
    pub(super) fn known_total(&self, subject: &str) -> Result<Option<KnownTotal>, Error> {
        let last = self.last_seq_of_subject(subject);
        if last == 0 {
            return Ok(Some(KnownTotal::default()));
        }
        if let Some(known) = self.counters.borrow().at(subject, last) {
            return Ok(Some(known.clone()));
        }
        let Some(message) = self.get_now(last) else {
            return Ok(None);
        };
        KnownTotal::of_message(&message.headers, &message.payload).ok_or(Error::MessageCounterBroken).map(Some)
    }

    /// Reads what a counter stream holds for `request`'s subject, if not known.
    pub(super) async fn load_counter_total(&self, request: &PublishRequest<'_>) -> Result<(), Error> {
        if !matches!(self.counter_step(request), Ok(CounterStep::Unknown)) {
            return Ok(());
        }
        let last = self.last_seq_of_subject(request.subject);
        let message = self.get(last).await?;
        let known = KnownTotal::of_message(&message.headers, &message.payload).ok_or(Error::MessageCounterBroken)?;
        self.counters.borrow_mut().record(request.subject, last, known);
        Ok(())
    }

    /// The last live sequence of the literal `subject` (0: none).
    pub(super) fn last_seq_of_subject(&self, subject: &str) -> u64 {
        let table = self.table.borrow();
        let id = table.subjects.id_of(subject);
        id.and_then(|id| table.subjects.entry(id)).map_or(0, |entry| entry.last_seq)
    }

    /// Remembers what `subject` holds as stored at `seq` with `headers`; returns the
    /// total as the pub ack shows it.
    pub(super) fn note_counter_total(&self, subject: &str, headers: &[u8], seq: u64, counted: &Counted) -> Box<str> {
        let text = counted.known.total.to_string().into_boxed_str();
        let mut counters = self.counters.borrow_mut();
        // A client's own `Nats-Counter-Sources` is stored as given when the subject has
        // none (nats-server's too), and read back as the subject's sources.
        let stored_sources = match header_value(headers, COUNTER_SOURCES).filter(|value| !value.is_empty()) {
            Some(_) if !counted.known.sources.is_empty() => Some(counted.known.sources.clone()),
            Some(value) => CounterSources::parse(value),
            None => Some(CounterSources::default()),
        };
        match stored_sources {
            Some(sources) => counters.record(subject, seq, KnownTotal { total: counted.known.total.clone(), sources }),
            // Broken: read again (and refused) on the next increment.
            None => counters.forget(subject),
        }
        let live_subjects = self.table.borrow().subjects.len();
        counters.prune(live_subjects, |subject, seq| self.last_seq_of_subject(subject) == seq);
        text
    }
}
