//! The follower's side of a mirror or source: what each link of a stream (its mirror,
//! or each of its sources) has copied, what to ask its origin next, and storing what
//! came back. The server's `source_pump` runs one task per link that asks the origin's
//! shard (`read_origin`) and hands the answer to `ingest_origin` here.
//!
//! Service docs: `origin_reads` (the origin's side), `followers` (retention on the
//! origin), this file (the following stream's side).
//!
//! Progress: a mirror's is its own last sequence (it stores the origin's sequences). A
//! source's is the last origin sequence it stored, carried in each copy's
//! `Nats-Stream-Source` header (nats-server's format: `<stream> <seq> <filter> <dest>
//! <subject> <ident>`), so a restart finds it in what was stored: nothing acknowledged
//! is copied twice, nothing is skipped. It is claimed before the copy is stored and
//! given back if the store fails, so two tasks of one link (an old one finishing while
//! an update started the next) never store the same message twice.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::time::Duration;

use super::followers::Followers;
use super::origin_reads::{OriginBatch, OriginRequest, OriginStart, OriginWatch};
use super::{now_ns, StreamService};
use crate::jetstream::errors::ApiError;
use crate::jetstream::stream_sources::{StreamSource, StreamSourceInfo};
use crate::protocol::headers::parse_header_block;
use crate::stream::{Appended, Keep, Origin, PendingAppend, PublishRequest, Stream};
use crate::subject::SubjectTransform;

/// The header a source stamps on each copy.
pub const STREAM_SOURCE_HEADER: &str = "Nats-Stream-Source";
/// Messages and bytes one origin read returns at most.
const ORIGIN_BATCH_MSGS_MAX: usize = 256;
const ORIGIN_BATCH_BYTES_MAX: usize = 4 * 1024 * 1024;
/// How long an origin read waits for a new message (a long poll).
const ORIGIN_WAIT: Duration = Duration::from_secs(2);

/// Per-shard state of following: links by stream, and the origins' append watch.
#[derive(Default)]
pub struct SourcingState {
    links: RefCell<HashMap<String, StreamLinks>>,
    generation: Cell<u64>,
    pub(super) watch: OriginWatch,
    pub(super) followers: Followers,
}

/// The links of one stream, valid for one `generation` of its config.
struct StreamLinks {
    generation: u64,
    links: Vec<Link>,
}

struct Link {
    config: StreamSource,
    /// The config's subject transforms, built (`None`: that entry maps nothing).
    transforms: Vec<Option<SubjectTransform>>,
    index_name: String,
    mirror: bool,
    /// Sources: the last origin sequence stored (or claimed). Mirrors use their last.
    copied: u64,
    /// Where the next read starts, once a read answered (0: not yet).
    next_seq: u64,
    lag: u64,
    last_contact_ns: Option<i64>,
    error: Option<ApiError>,
}

impl Link {
    fn new(config: &StreamSource, mirror: bool) -> Link {
        let error = config.consumer.as_ref().filter(|_| !mirror).map(|_| {
            ApiError::stream_invalid_config("sourcing through a pre-created consumer is not supported by jetcore yet")
        });
        let transforms = config
            .subject_transforms
            .iter()
            .map(|t| {
                let src = if t.src.is_empty() { ">" } else { t.src.as_str() };
                (!t.dest.is_empty()).then(|| SubjectTransform::new(src, &t.dest).ok()).flatten()
            })
            .collect();
        Link {
            config: config.clone(),
            transforms,
            index_name: config.index_name(),
            mirror,
            copied: 0,
            next_seq: 0,
            lag: 0,
            last_contact_ns: None,
            error,
        }
    }

    fn info(&self, now_ns: i64) -> StreamSourceInfo {
        StreamSourceInfo {
            name: self.config.name.clone(),
            external: self.config.external.clone(),
            lag: self.lag,
            seq: if self.mirror { 0 } else { self.copied },
            active: self.last_contact_ns.map_or(-1, |then| (now_ns - then).max(0)),
            error: self.error.clone(),
            filter_subject: self.config.filter_subject.clone(),
            subject_transforms: self.config.subject_transforms.clone(),
        }
    }
}

impl StreamService {
    /// (Re)reads stream `name`'s mirror and sources from its config and returns the new
    /// generation and how many links to follow (`None`: nothing to follow). Progress of
    /// links that stay is kept; new links recover theirs from what was stored.
    pub async fn prepare_sourcing(&self, name: &str) -> Option<(u64, usize)> {
        let record = self.record(name).ok()?;
        let stream = self.engine.stream(name).ok()?;
        let config = record.config;
        let mut links: Vec<Link> = match &config.mirror {
            Some(mirror) => vec![Link::new(mirror, true)],
            None => config.sources.iter().map(|source| Link::new(source, false)).collect(),
        };
        let generation = self.sourcing.generation.get() + 1;
        self.sourcing.generation.set(generation);
        let previous = self.sourcing.links.borrow_mut().remove(name);
        let mut unknown = Vec::new();
        for link in links.iter_mut() {
            let same = |old: &&Link| old.index_name == link.index_name && old.mirror == link.mirror;
            match previous.as_ref().and_then(|p| p.links.iter().find(same)) {
                Some(old) => {
                    (link.copied, link.next_seq, link.lag) = (old.copied, old.next_seq, old.lag);
                    link.last_contact_ns = old.last_contact_ns;
                }
                None if !link.mirror => unknown.push(link.index_name.clone()),
                None => {}
            }
        }
        if !unknown.is_empty() {
            let found = recover_progress(&stream, &unknown).await;
            for link in links.iter_mut() {
                if let Some(seq) = found.get(&link.index_name) {
                    link.copied = *seq;
                }
            }
        }
        let count = links.len();
        if count == 0 {
            return None;
        }
        // Deleted (and maybe created again) while progress was recovered: not ours now.
        if self.engine.stream(name).map_or(true, |now| now.created_ns() != stream.created_ns()) {
            return None;
        }
        let mut all = self.sourcing.links.borrow_mut();
        // A later update prepared while this one recovered progress: it wins.
        if all.get(name).is_some_and(|newer| newer.generation > generation) {
            return None;
        }
        all.insert(name.to_string(), StreamLinks { generation, links });
        Some((generation, count))
    }

    /// Stops following `name` (deleted): its link tasks end at their next step.
    pub(super) fn forget_sourcing(&self, name: &str) {
        self.sourcing.links.borrow_mut().remove(name);
        self.sourcing.followers.forget_origin(name);
        self.sourcing.watch.notify();
    }

    /// Wakes followers waiting on this shard's streams (a durable append happened).
    pub(super) fn origin_appended(&self) {
        self.sourcing.watch.notify();
    }

    /// What link `index` of `name` asks its origin next; `None` when the link is gone
    /// (the stream was deleted or its config changed) or cannot be followed.
    pub fn origin_request(&self, name: &str, generation: u64, index: usize) -> Option<OriginRequest> {
        let links = self.sourcing.links.borrow();
        let stream_links = links.get(name).filter(|links| links.generation == generation)?;
        let link = stream_links.links.get(index)?;
        if link.config.consumer.is_some() && !link.mirror {
            return None;
        }
        let last = self.engine.stream(name).ok()?.last_seq();
        let start = if link.mirror {
            match (last, link.config.opt_start_seq, link.config.opt_start_time) {
                (0, 0, Some(time)) => OriginStart::Time(time.unix_nanos().unwrap_or(0)),
                (0, start, _) => OriginStart::Seq(start.max(1)),
                (last, _, _) => OriginStart::Seq(last + 1),
            }
        } else if link.next_seq > 0 {
            OriginStart::Seq(link.next_seq.max(link.copied + 1))
        } else if link.copied > 0 {
            OriginStart::Seq(link.copied + 1)
        } else {
            match (link.config.opt_start_seq, link.config.opt_start_time) {
                (0, Some(time)) => OriginStart::Time(time.unix_nanos().unwrap_or(0)),
                (start, _) => OriginStart::Seq(start.max(1)),
            }
        };
        let filters = if !link.config.subject_transforms.is_empty() {
            let all = |src: &str| if src.is_empty() { ">".to_string() } else { src.to_string() };
            let filters: Vec<String> = link.config.subject_transforms.iter().map(|t| all(&t.src)).collect();
            if filters.iter().any(|filter| filter == ">") {
                Vec::new()
            } else {
                filters
            }
        } else if link.config.filter_subject.is_empty() {
            Vec::new()
        } else {
            vec![link.config.filter_subject.clone()]
        };
        Some(OriginRequest {
            stream: link.config.name.clone(),
            start,
            filters,
            max_msgs: ORIGIN_BATCH_MSGS_MAX,
            max_bytes: ORIGIN_BATCH_BYTES_MAX,
            wait: ORIGIN_WAIT,
            follower: format!("{name} {}", link.index_name),
            acked: if link.mirror { last } else { link.copied },
        })
    }

    /// Link `index`'s config and whether it is the mirror (`None`: the link is gone).
    /// The server follows links with `external` through the other JetStream's API.
    pub fn link_source(&self, name: &str, generation: u64, index: usize) -> Option<(StreamSource, bool)> {
        let links = self.sourcing.links.borrow();
        let stream_links = links.get(name).filter(|links| links.generation == generation)?;
        let link = stream_links.links.get(index)?;
        Some((link.config.clone(), link.mirror))
    }

    /// The origin was heard from (an external origin's heartbeat): shown in stream info.
    pub fn origin_contact(&self, name: &str, generation: u64, index: usize, lag: Option<u64>) {
        let now = now_ns();
        self.with_link(name, generation, index, |link| {
            link.last_contact_ns = Some(now);
            link.error = None;
            if let Some(lag) = lag {
                link.lag = lag;
            }
        });
    }

    /// The origin could not be read (it does not exist, for one): shown in stream info.
    pub fn origin_failed(&self, name: &str, generation: u64, index: usize, error: ApiError) {
        self.with_link(name, generation, index, |link| link.error = Some(error));
    }

    /// Stores what the origin answered, in order; each copy is visible to consumers and
    /// followers once durable. Stops early (without error) when the link went away.
    ///
    /// The batch's copies are appended without waiting, then settled in order: one group
    /// commit for the batch. Waiting for each copy to be durable cost an fdatasync per
    /// message, and a local mirror caught up at ~10 k msgs/s against nats-server's
    /// ~290 k (perf/mirror.md).
    pub async fn ingest_origin(
        &self,
        name: &str,
        generation: u64,
        index: usize,
        batch: OriginBatch,
    ) -> Result<(), ApiError> {
        let now = now_ns();
        self.with_link(name, generation, index, |link| {
            link.last_contact_ns = Some(now);
            link.error = None;
        });
        let stream = self.engine.stream(name).map_err(|_| ApiError::stream_not_found())?;
        let count = batch.messages.len();
        let mut unsettled = Vec::with_capacity(count);
        let mut outcome = Ok(());
        // The link's progress as this batch claimed it (sources): a failed copy rolls it
        // back only while nothing newer was claimed.
        let mut claimed = None;
        for (position, message) in batch.messages.iter().enumerate() {
            let Some((mirror, claimed_from, header)) = self.claim(name, generation, index, message.seq) else {
                break;
            };
            claimed = Some(message.seq);
            let subject = self.mapped_subject(name, generation, index, &message.subject);
            let headers = match &header {
                Some(value) => {
                    with_source_header(&message.headers, &format!("{value} {} {}", message.subject, batch.ident))
                }
                None => message.headers.to_vec(),
            };
            let origin = if mirror {
                Origin::Mirror { seq: message.seq, timestamp_ns: message.timestamp_ns }
            } else {
                Origin::Source
            };
            let request = PublishRequest {
                origin,
                captured: &subject,
                subject: &subject,
                headers: &headers,
                payload: &message.payload,
                keep: Keep::Store,
                at_ns: None,
            };
            let left = (count - position - 1) as u64;
            match stream.append_unsettled(request).await {
                Ok(Appended::Pending(pending)) => unsettled.push(Copy {
                    pending,
                    subject,
                    headers_len: headers.len(),
                    payload_len: message.payload.len(),
                    claimed_from,
                    left,
                }),
                Ok(Appended::Duplicate(_)) => {
                    self.with_link(name, generation, index, |link| link.lag = batch.pending + left);
                }
                Err(error) => {
                    self.with_link(name, generation, index, |link| {
                        if link.copied == message.seq {
                            link.copied = claimed_from;
                        }
                    });
                    claimed = Some(claimed_from);
                    // Not a counter (a source that is no counter stream): nats-server
                    // drops it and follows on, showing neither an error nor the copy.
                    if counter_refuses(&error) {
                        continue;
                    }
                    let error = super::convert::api_error(&error);
                    self.with_link(name, generation, index, |link| link.error = Some(error.clone()));
                    outcome = Err(error);
                    break;
                }
            }
        }
        for copy in unsettled {
            if let Err(error) = stream.settle(&copy.pending).await {
                // The log failed: this copy and every later one are lost.
                let error = super::convert::api_error(&error);
                self.with_link(name, generation, index, |link| {
                    if Some(link.copied) == claimed {
                        link.copied = copy.claimed_from;
                    }
                    link.error = Some(error.clone());
                });
                return Err(error);
            }
            self.consumers.stream_appended(
                &stream,
                copy.pending.seq,
                &copy.subject,
                copy.headers_len,
                copy.payload_len,
            );
            self.origin_appended();
            self.with_link(name, generation, index, |link| link.lag = batch.pending + copy.left);
        }
        outcome?;
        self.with_link(name, generation, index, |link| {
            link.next_seq = batch.next_seq;
            link.lag = batch.pending;
        });
        Ok(())
    }

    /// Claims origin sequence `seq` of a link: (mirror?, progress before, source header
    /// without ident). `None` when the link is gone or `seq` was already taken.
    fn claim(&self, name: &str, generation: u64, index: usize, seq: u64) -> Option<(bool, u64, Option<String>)> {
        let mut links = self.sourcing.links.borrow_mut();
        let stream_links = links.get_mut(name).filter(|links| links.generation == generation)?;
        let link = stream_links.links.get_mut(index)?;
        if link.mirror {
            return Some((true, 0, None));
        }
        if seq <= link.copied {
            return None;
        }
        let before = link.copied;
        link.copied = seq;
        Some((false, before, Some(source_header_value(&link.index_name, seq))))
    }

    /// `subject` as link `index` stores it: mapped by the first of its transforms whose
    /// source matches (nats-server's order), else unchanged.
    fn mapped_subject(&self, name: &str, generation: u64, index: usize, subject: &str) -> String {
        let mut mapped = None;
        self.with_link(name, generation, index, |link| {
            mapped = link.transforms.iter().flatten().find_map(|transform| transform.apply(subject));
        });
        mapped.unwrap_or_else(|| subject.to_string())
    }

    fn with_link(&self, name: &str, generation: u64, index: usize, change: impl FnOnce(&mut Link)) {
        let mut links = self.sourcing.links.borrow_mut();
        let link = links
            .get_mut(name)
            .filter(|links| links.generation == generation)
            .and_then(|links| links.links.get_mut(index));
        if let Some(link) = link {
            change(link);
        }
    }

    /// The `mirror` and `sources` of stream info, in the config's order: each from its
    /// link when followed, else as nats-server shows a new one (lag 0, never active).
    pub(super) fn source_infos(
        &self,
        name: &str,
        mirror: Option<&StreamSource>,
        sources: &[StreamSource],
    ) -> (Option<StreamSourceInfo>, Vec<StreamSourceInfo>) {
        let now = now_ns();
        let links = self.sourcing.links.borrow();
        let followed = links.get(name).map_or(&[][..], |stream_links| &stream_links.links[..]);
        let info = |config: &StreamSource, mirror: bool| {
            let index_name = config.index_name();
            match followed.iter().find(|link| link.index_name == index_name && link.mirror == mirror) {
                Some(link) => link.info(now),
                None => Link::new(config, mirror).info(now),
            }
        };
        (mirror.map(|config| info(config, true)), sources.iter().map(|config| info(config, false)).collect())
    }
}

/// A counter stream's refusal of a copy that is no counter increment: dropped, not
/// retried (it would be refused again, and stall the link).
/// A copy appended and not yet durable, with what its settling needs.
struct Copy {
    pending: PendingAppend,
    subject: String,
    headers_len: usize,
    payload_len: usize,
    /// The link's progress before this copy claimed its origin sequence.
    claimed_from: u64,
    /// Messages of the batch after this one.
    left: u64,
}

fn counter_refuses(error: &crate::stream::Error) -> bool {
    use crate::stream::Error as E;
    matches!(error, E::MessageCounterIncrementMissing | E::MessageCounterIncrementInvalid | E::MessageCounterBroken)
}

/// `<stream> <seq> <filter> <dest>` from a link's index name `<stream> <filter> <dest>`.
fn source_header_value(index_name: &str, seq: u64) -> String {
    match index_name.split_once(' ') {
        Some((stream, rest)) => format!("{stream} {seq} {rest}"),
        None => format!("{index_name} {seq}"),
    }
}

/// Parses a `Nats-Stream-Source` value: (index name, origin sequence).
fn parse_source_header(value: &str) -> Option<(String, u64)> {
    let mut tokens = value.split(' ');
    let stream = tokens.next()?;
    let seq = tokens.next()?.parse().ok()?;
    let filter = tokens.next()?;
    let destination = tokens.next()?;
    Some((format!("{stream} {filter} {destination}"), seq))
}

/// `headers` (a header block, possibly empty) without any `Nats-Stream-Source` and with
/// ours added last, as nats-server stamps a copy of a copy.
fn with_source_header(headers: &[u8], value: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(headers.len() + value.len() + 48);
    let mut lines = headers.split(|byte| *byte == b'\n').map(|line| line.strip_suffix(b"\r").unwrap_or(line));
    match lines.next().filter(|first| first.starts_with(b"NATS/1.0")) {
        Some(first) => out.extend_from_slice(first),
        None => out.extend_from_slice(b"NATS/1.0"),
    }
    out.extend_from_slice(b"\r\n");
    let prefix = format!("{STREAM_SOURCE_HEADER}:");
    for line in lines.filter(|line| !line.is_empty()) {
        if line.len() >= prefix.len() && line[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes()) {
            continue;
        }
        out.extend_from_slice(line);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(format!("{STREAM_SOURCE_HEADER}: {value}\r\n\r\n").as_bytes());
    out
}

/// The last origin sequence of each of `wanted` (index names) found in `stream`'s
/// copies, newest first, stopping once all are found.
async fn recover_progress(stream: &Stream, wanted: &[String]) -> HashMap<String, u64> {
    let mut found = HashMap::new();
    let first = stream.state_first_seq();
    let mut seq = stream.last_seq();
    while seq >= first && seq > 0 && found.len() < wanted.len() {
        if let Ok(message) = stream.get(seq).await {
            let value = parse_header_block(&message.headers)
                .ok()
                .and_then(|block| block.get_ignore_case(STREAM_SOURCE_HEADER.as_bytes()))
                .and_then(|value| std::str::from_utf8(value).ok())
                .and_then(parse_source_header);
            if let Some((index_name, origin_seq)) = value {
                if wanted.contains(&index_name) {
                    found.entry(index_name).or_insert(origin_seq);
                }
            }
        }
        seq -= 1;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_reads_back_as_its_index_name_and_sequence() {
        let value = format!("{} {}", source_header_value("ORDERS > >", 42), "orders.1 AbCdEfGh");
        assert_eq!(value, "ORDERS 42 > > orders.1 AbCdEfGh");
        assert_eq!(parse_source_header(&value), Some(("ORDERS > >".to_string(), 42)));
    }

    #[test]
    fn a_copy_of_a_copy_carries_one_source_header() {
        let first = with_source_header(b"", "A 1 > > x id");
        assert_eq!(first, b"NATS/1.0\r\nNats-Stream-Source: A 1 > > x id\r\n\r\n");
        let original = b"NATS/1.0\r\nNats-Msg-Id: m1\r\nNats-Stream-Source: A 1 > > x id\r\n\r\n";
        let second = with_source_header(original, "B 7 > > x id2");
        assert_eq!(second, b"NATS/1.0\r\nNats-Msg-Id: m1\r\nNats-Stream-Source: B 7 > > x id2\r\n\r\n".to_vec());
    }
}
