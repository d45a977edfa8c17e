//! The stream owners of one shard, found by name (API requests) or by key. A publish finds
//! its owner by key: the key travels in the stream's catalog entry, which every shard
//! holds, so the subject's lookup in the catalog is the only lookup a publish makes; the
//! key is then an index here, checked by its generation.

use std::collections::HashMap;
use std::rc::Rc;

use super::owner::StreamOwner;
use crate::subject::TokenHashBuilder;

/// Where a stream's owner sits on its shard. A key outlives its stream harmlessly: a slot
/// taken again gets a new generation, so a stale key resolves to nothing, never to
/// another stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OwnerKey {
    slot: u32,
    generation: u32,
}

impl OwnerKey {
    /// A key that resolves to no owner (a stream served without one).
    pub const NONE: OwnerKey = OwnerKey { slot: u32::MAX, generation: 0 };
}

#[derive(Default)]
pub struct StreamOwners {
    by_name: HashMap<Rc<str>, OwnerKey, TokenHashBuilder>,
    slots: Vec<Slot>,
    /// Slots without an owner, taken again before the table grows.
    free: Vec<u32>,
}

struct Slot {
    generation: u32,
    owner: Option<Rc<StreamOwner>>,
}

impl StreamOwners {
    /// The owner `key` names, if it still exists.
    pub fn at(&self, key: OwnerKey) -> Option<&Rc<StreamOwner>> {
        let slot = self.slots.get(key.slot as usize)?;
        slot.owner.as_ref().filter(|_| slot.generation == key.generation)
    }

    pub fn get(&self, name: &str) -> Option<&Rc<StreamOwner>> {
        self.at(*self.by_name.get(name)?)
    }

    pub fn key_of(&self, name: &str) -> Option<OwnerKey> {
        self.by_name.get(name).copied()
    }

    /// Adds `owner`, or puts it in the place of the owner of the same name, which keeps
    /// its key (the stream's catalog entry still names it).
    pub fn insert(&mut self, owner: Rc<StreamOwner>) -> OwnerKey {
        if let Some(key) = self.key_of(owner.name()) {
            self.slots[key.slot as usize].owner = Some(owner);
            return key;
        }
        let key = match self.free.pop() {
            Some(slot) => {
                let entry = &mut self.slots[slot as usize];
                entry.generation = entry.generation.wrapping_add(1);
                entry.owner = Some(owner.clone());
                OwnerKey { slot, generation: entry.generation }
            }
            None => {
                let slot = u32::try_from(self.slots.len()).expect("fewer than 2^32 streams on a shard");
                assert!(slot != OwnerKey::NONE.slot, "the last slot stands for no owner");
                self.slots.push(Slot { generation: 0, owner: Some(owner.clone()) });
                OwnerKey { slot, generation: 0 }
            }
        };
        self.by_name.insert(owner.name().clone(), key);
        key
    }

    /// Removes the owner of stream `name`; its key resolves to nothing from now on.
    pub fn remove(&mut self, name: &str) -> Option<Rc<StreamOwner>> {
        let key = self.by_name.remove(name)?;
        let owner = self.slots[key.slot as usize].owner.take();
        self.free.push(key.slot);
        owner
    }
}
