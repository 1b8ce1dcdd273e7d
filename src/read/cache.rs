//! Opened spills kept between pages: a small in-process cache, bounded by the bytes it holds.
//!
//! An entry is never trusted on its own: every payload read it leads to is checked against the
//! payload version it records, and an entry found stale is dropped.

use std::sync::Arc;

use bytes::Bytes;
use quick_cache::sync::Cache;
use quick_cache::{OptionsBuilder, Weighter};

use super::line_index::{Header, Version};

/// What a page knows about a spill before reading its payload.
#[derive(Debug)]
pub(crate) struct Opened {
    /// The payload version every read of the payload is checked against.
    pub(super) payload: Version,
    /// Its index, whole, and the index's checked header; `None` for a spill too small to have
    /// one, which is read whole.
    pub(super) index: Option<(Header, Bytes)>,
}

/// An entry's weight: the index bytes it holds, and a little for the rest.
#[derive(Debug, Clone)]
struct Bytesize;

impl Weighter<String, Arc<Opened>> for Bytesize {
    fn weight(&self, _handle: &String, opened: &Arc<Opened>) -> u64 {
        64 + (opened.index.as_ref()).map_or(0, |(_, bytes)| bytes.len() as u64)
    }
}

/// Spills recently opened by a reader, by handle, in a byte-weighted cache
/// ([`quick_cache`]'s, of one shard, so that the whole budget can hold a large index; it keeps
/// nothing heavier than its budget).
#[derive(Debug)]
pub struct IndexCache(Option<Cache<String, Arc<Opened>, Bytesize>>);

impl IndexCache {
    /// A cache holding at most `budget` bytes (0 disables it).
    pub fn new(budget: usize) -> Self {
        let options = OptionsBuilder::new()
            .estimated_items_capacity(64)
            .weight_capacity(budget as u64)
            .shards(1)
            .build();
        Self(options.ok().map(|options| {
            Cache::with_options(options, Bytesize, Default::default(), Default::default())
        }))
    }

    /// The entry for `handle`.
    pub(crate) fn get(&self, handle: &str) -> Option<Arc<Opened>> {
        self.0.as_ref()?.get(handle)
    }

    /// Keep `opened` for `handle` if a later read can check it (its payload has a tag), replacing
    /// any older entry.
    pub(crate) fn put(&self, handle: &str, opened: Arc<Opened>) {
        match (&self.0, opened.payload.tag.is_some()) {
            (Some(entries), true) => entries.insert(handle.to_owned(), opened),
            _ => self.remove(handle),
        }
    }

    /// Keep the index just stored for `handle` (its encoded bytes) for `payload`; nothing if it
    /// is not an index of that payload. The cache holds the index whole and never reads the
    /// index object again.
    pub fn insert_stored(&self, handle: &str, index: &Bytes, payload: &Version) {
        match Header::decode(index, index.len() as u64) {
            Ok(header) if header.describes(payload) => {
                let index = Some((header, index.clone()));
                let payload = payload.clone();
                self.put(handle, Arc::new(Opened { payload, index }));
            }
            _ => self.remove(handle),
        }
    }

    /// Forget `handle`.
    pub fn remove(&self, handle: &str) {
        if let Some(entries) = &self.0 {
            entries.remove(handle);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::line_index::Index;

    #[test]
    fn holds_what_fits_its_budget() {
        let whole = || {
            Arc::new(Opened {
                payload: Version {
                    size: 1,
                    tag: Some("t".into()),
                },
                index: None,
            })
        };
        let cache = IndexCache::new(3 * 64);
        for h in ["a", "b", "c", "d", "e"] {
            cache.put(h, whole());
        }
        let held = ["a", "b", "c", "d", "e"]
            .iter()
            .filter(|h| cache.get(h).is_some());
        assert!((1..=3).contains(&held.count()));
        assert!(cache.get("e").is_some(), "the newest entry is kept");
        cache.remove("e");
        assert!(cache.get("e").is_none());
        // Nothing a later read cannot check: a payload without a tag.
        let payload = Version { size: 1, tag: None };
        cache.put(
            "u",
            Arc::new(Opened {
                payload,
                index: None,
            }),
        );
        assert!(cache.get("u").is_none());
        // Nothing heavier than the budget, which drops the entry it would replace.
        cache.put("d", whole());
        let bytes = Bytes::from(Index::build(b"x\n").encode(&"t".repeat(200)).unwrap());
        let header = Header::decode(&bytes, bytes.len() as u64).unwrap();
        let heavy = Opened {
            payload: whole().payload.clone(),
            index: Some((header, bytes)),
        };
        cache.put("d", Arc::new(heavy));
        assert!(cache.get("d").is_none());
        assert!(IndexCache::new(0).get("a").is_none());
    }
}
