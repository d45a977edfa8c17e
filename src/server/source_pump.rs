//! Following mirrors and sources: one task per link (a stream's mirror, or one of its
//! sources) on the shard that owns the following stream. It asks the shard that owns
//! the origin for the next durable messages (`ShardCall::ReadOrigin`, a long poll over
//! the mesh, or a direct call when the origin is local) and stores them through the
//! service. A missing origin is retried every `ORIGIN_RETRY` and shown in stream info.
//! Tasks end when their stream is deleted or its config changes (a new generation
//! starts new tasks); no state is shared with the origin's shard. Links to another
//! JetStream (`external`) are followed by `source_external` instead.

use std::rc::Rc;
use std::time::Duration;

use super::account::AccountId;
use super::envelope::{ShardCall, ShardReturn};
use super::node::Node;
use super::source_external::ExternalLink;
use crate::jetstream::errors::ApiError;
use crate::jetstream::service::StreamService;

/// Pause before asking again after an origin could not be read or a copy not stored.
const ORIGIN_RETRY: Duration = Duration::from_secs(1);

impl Node {
    /// (Re)starts following the mirror and sources of `account`'s stream `name`, owned
    /// here. Origins are streams of the same account.
    pub(super) fn follow_sources(self: &Rc<Self>, account: AccountId, name: &str) {
        let Some(service) = self.jetstream.get(account).cloned() else { return };
        let node = self.clone();
        let name = name.to_string();
        glommio::spawn_local(async move {
            let Some((generation, count)) = service.prepare_sourcing(&name).await else { return };
            for index in 0..count {
                let service = service.clone();
                let external = service.link_source(&name, generation, index).is_some_and(|(c, _)| c.external.is_some());
                if external {
                    let stream = name.clone();
                    let link = ExternalLink { node: node.clone(), account, service, stream, generation, index };
                    glommio::spawn_local(link.run()).detach();
                    continue;
                }
                let link = Link { node: node.clone(), account, service, stream: name.clone(), generation, index };
                glommio::spawn_local(link.run()).detach();
            }
        })
        .detach();
    }

    /// Follows every mirror and source of this shard's streams (at start).
    pub(super) fn follow_all_sources(self: &Rc<Self>) {
        let streams: Vec<(AccountId, String)> = self
            .jetstream
            .iter()
            .flat_map(|(account, service)| service.summaries().into_iter().map(move |s| (account, s.name)))
            .collect();
        for (account, name) in streams {
            self.follow_sources(account, &name);
        }
    }
}

struct Link {
    node: Rc<Node>,
    account: AccountId,
    service: Rc<StreamService>,
    stream: String,
    generation: u64,
    index: usize,
}

impl Link {
    async fn run(self) {
        let (stream, generation, index) = (self.stream.as_str(), self.generation, self.index);
        while let Some(request) = self.service.origin_request(stream, generation, index) {
            let owner = self.node.stream_owner(self.account, &request.stream);
            let reply = match owner {
                None => Err(ApiError::stream_not_found()),
                Some(owner) => {
                    match self.node.call(owner, ShardCall::ReadOrigin(self.account, Box::new(request))).await {
                        ShardReturn::Origin(reply) => *reply,
                        _ => Err(ApiError::stream_not_found()),
                    }
                }
            };
            let failed = match reply {
                Ok(batch) => self.service.ingest_origin(stream, generation, index, batch).await.is_err(),
                Err(error) => {
                    self.service.origin_failed(stream, generation, index, error);
                    true
                }
            };
            if failed {
                glommio::timer::sleep(ORIGIN_RETRY).await;
            }
        }
    }
}
