//! The owner of one stream on this shard: the `Stream`, what its wire config decides on
//! the publish path, its compiled transforms, and the pub acks waiting for its group
//! commits. A publish resolves it once, by name, and everything after goes through it.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use super::publish::AckQueue;
use super::StreamService;
use crate::jetstream::policies::RetentionPolicy;
use crate::jetstream::stream_config::StreamConfig as WireConfig;
use crate::jetstream::stream_transforms::StreamTransforms;
use crate::stream::Stream;

pub(super) struct StreamOwner {
    pub name: Rc<str>,
    pub stream: Rc<Stream>,
    pub settings: Cell<PublishSettings>,
    /// The compiled `subject_transform` and `republish`, when the config has either.
    pub transforms: RefCell<Option<Rc<StreamTransforms>>>,
    pub acks: AckQueue,
}

/// What a stream's wire config decides for each publish.
#[derive(Clone, Copy, Debug)]
pub(super) struct PublishSettings {
    pub sealed: bool,
    /// A publish may replace earlier messages (per-subject limit or rollups): consumers'
    /// pending deliveries go out before it is appended.
    pub may_replace: bool,
    pub retention: RetentionPolicy,
    pub allow_atomic: bool,
    pub no_ack: bool,
}

impl PublishSettings {
    fn of(config: &WireConfig) -> PublishSettings {
        PublishSettings {
            sealed: config.sealed,
            may_replace: config.max_msgs_per_subject > 0 || config.allow_rollup_hdrs,
            retention: config.retention,
            allow_atomic: config.allow_atomic,
            no_ack: config.no_ack,
        }
    }
}

impl StreamService {
    /// The owner of stream `name`, if this shard serves it.
    pub(super) fn owner(&self, name: &str) -> Option<Rc<StreamOwner>> {
        self.owners.borrow().get(name).cloned()
    }

    /// Creates the owner of a stream just opened or created, or brings an existing one
    /// up to date with a new config.
    pub(super) fn install_owner(&self, config: &WireConfig) {
        let Ok(stream) = self.engine.stream(&config.name) else { return };
        let transforms = StreamTransforms::of(config);
        let transforms = (!transforms.is_empty()).then(|| Rc::new(transforms));
        let settings = PublishSettings::of(config);
        let mut owners = self.owners.borrow_mut();
        if let Some(owner) = owners.get(&config.name).filter(|owner| Rc::ptr_eq(&owner.stream, &stream)) {
            owner.settings.set(settings);
            *owner.transforms.borrow_mut() = transforms;
            return;
        }
        let owner = StreamOwner {
            name: config.name.as_str().into(),
            stream,
            settings: Cell::new(settings),
            transforms: RefCell::new(transforms),
            acks: AckQueue::default(),
        };
        owners.insert(config.name.clone(), Rc::new(owner));
    }

    /// Forgets a deleted stream's owner. Acks already queued are still sent by its
    /// queue's task, which holds the owner.
    pub(super) fn remove_owner(&self, name: &str) {
        self.owners.borrow_mut().remove(name);
    }
}
