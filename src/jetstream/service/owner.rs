//! This shard's stream owners ([`crate::stream::StreamOwner`]), one per stream it serves,
//! kept in step with each stream's wire config: the owner holds the config's rules in
//! the stream's own terms (`convert::stream_rules`).

use std::rc::Rc;

use super::{convert, StreamService};
use crate::jetstream::stream_config::StreamConfig as WireConfig;
use crate::stream::{OwnerKey, StreamOwner};

impl StreamService {
    /// The owner of stream `name`, if this shard serves it.
    pub(super) fn owner(&self, name: &str) -> Option<Rc<StreamOwner>> {
        self.owners.borrow().get(name).cloned()
    }

    /// The owner a catalog entry's key names, if it still exists.
    pub(super) fn owner_at(&self, key: OwnerKey) -> Option<Rc<StreamOwner>> {
        self.owners.borrow().at(key).cloned()
    }

    /// Creates the owner of a stream just opened or created, or brings an existing one
    /// up to date with a new config.
    pub(super) fn install_owner(&self, config: &WireConfig) {
        let Ok(stream) = self.engine.stream(&config.name) else { return };
        let rules = convert::stream_rules(config);
        let mut owners = self.owners.borrow_mut();
        if let Some(owner) = owners.get(&config.name).filter(|owner| Rc::ptr_eq(owner.stream(), &stream)) {
            owner.set_rules(rules);
            return;
        }
        owners.insert(Rc::new(StreamOwner::new(stream, rules)));
    }

    /// Forgets a deleted stream's owner. Acks already queued are still sent by its
    /// queue's task, which holds the owner.
    pub(super) fn remove_owner(&self, name: &str) {
        self.owners.borrow_mut().remove(name);
    }
}
