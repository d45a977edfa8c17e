//! jetcore as a leaf node (the spoke) of a nats-server hub (DESIGN §10,
//! `reference/leafnode.md`). Shard 0 owns every leaf link; the other shards reach it over
//! the mesh like any remote subscriber: the hub's `LS+` become subscriptions on shard 0
//! (flagged `leaf`), announced to the other shards as usual, and the router delivers a
//! message to a link as one `LMSG` (`forwarding`).
//!
//! - `config`: the `leafnodes { }` block.
//! - `wire`: the leaf protocol's bytes.
//! - `handshake`: INFO / CONNECT / the hub's second INFO.
//! - `interest`: what is advertised and what may cross.
//! - `forwarding`: messages both ways.
//! - `link`: one remote's connection, kept up with reconnects.

pub mod config;
pub mod forwarding;
pub mod handshake;
pub mod interest;
pub mod link;
pub mod wire;

use std::cell::RefCell;
use std::rc::Rc;

use bytes::Bytes;

use self::interest::{AdvertisedInterest, Advertisement, Crossing};
use super::node::Node;
use super::outbound::Outbound;

/// Shard 0's side of all leaf links: the local interest to advertise and the open links.
pub struct Spoke {
    pub crossing: Crossing,
    advertised: RefCell<AdvertisedInterest>,
    links: RefCell<Vec<Rc<link::LinkState>>>,
}

impl Spoke {
    pub fn new(node: &Node) -> Spoke {
        let domain = node.options.jetstream_domain.as_deref();
        Spoke {
            crossing: Crossing::new(node.options.jetstream, domain, &super::nkey::new_nonce()),
            advertised: RefCell::new(AdvertisedInterest::default()),
            links: RefCell::new(Vec::new()),
        }
    }

    /// Starts one task per configured remote on this shard (shard 0).
    pub fn start(node: &Rc<Node>) {
        let Some(settings) = node.options.leafnodes.clone() else { return };
        let Some(spoke) = node.leaf.get() else { return };
        for remote in settings.remotes {
            let (node, spoke) = (node.clone(), spoke.clone());
            let interval = settings.reconnect_interval;
            glommio::spawn_local(async move { link::run(node, spoke, remote, interval).await }).detach();
        }
    }

    /// A subscription was added or removed somewhere (a client's here, or a shard's
    /// announcement); `from_hub`: one a link made for the hub, never advertised back.
    pub fn interest_changed(&self, subject: &Bytes, queue: &Option<Bytes>, added: bool, from_hub: bool) {
        if from_hub || !self.crossing.crosses(subject) {
            return;
        }
        let Some(advertisement) = self.advertised.borrow_mut().change(subject, queue, added) else { return };
        for link in self.links.borrow().iter() {
            link.advertise(&advertisement);
        }
    }

    /// Adds an open link and sends it all current interest.
    pub(super) fn link_up(&self, link: Rc<link::LinkState>) {
        for subject in self.crossing.fixed_subjects() {
            let advertisement = Advertisement::Add { subject: Bytes::from(subject), queue: None };
            link.advertise(&advertisement);
        }
        for advertisement in self.advertised.borrow().all() {
            link.advertise(&advertisement);
        }
        self.links.borrow_mut().push(link);
    }

    pub(super) fn link_down(&self, outbound: &Rc<Outbound>) {
        self.links.borrow_mut().retain(|link| !Rc::ptr_eq(&link.outbound, outbound));
    }

    /// The open links, for `/leafz`.
    pub fn links(&self) -> Vec<Rc<link::LinkState>> {
        self.links.borrow().clone()
    }
}
