//! Opened spills kept between pages: a small in-process cache, bounded by the bytes it holds.
//!
//! An entry is never trusted on its own: every payload read it leads to is checked against the
//! payload version it records, and an entry found stale is dropped.

use std::sync::Arc;

use bytes::Bytes;
use quick_cache::sync::Cache;
use quick_cache::{OptionsBuilder, Weighter};

use super::line_index::{Header, IndexError, Version};

/// The first bytes of an index that opening a spill reads: the header and, for all but the
/// largest spills, every entry (512 KiB of entries cover 67 million lines of 2,048 to a block,
/// or 4 GiB of long lines at a checkpoint every 128 KiB). A smaller index is read whole.
pub(crate) const INDEX_PREFIX_BYTES: u64 = 512 << 10;

/// The largest index a cache keeps whole (that of a spill of at least 500 MB), so that later
/// pages of the spill read nothing but their payload bytes; of a larger one it keeps the first
/// [`INDEX_PREFIX_BYTES`].
pub(crate) const WHOLE_INDEX_BYTES: u64 = 4 << 20;

/// What a page knows about a spill before reading its payload.
#[derive(Debug)]
pub(crate) enum Opened {
    /// A spill too small to have an index: read whole.
    Whole(Version),
    /// A spill paged through its index.
    Indexed(IndexView),
}

impl Opened {
    /// What a cache keeps of this: only what later reads can check (a payload with a tag), and of
    /// an index up to [`WHOLE_INDEX_BYTES`] all that is held, of a larger one its first
    /// [`INDEX_PREFIX_BYTES`] when the rest can be read from the stored object.
    fn to_cache(&self) -> Option<Self> {
        let view = match self {
            Self::Whole(payload) => {
                return payload.tag.is_some().then(|| Self::Whole(payload.clone()));
            }
            Self::Indexed(view) => view,
        };
        view.payload.tag.as_ref()?;
        let kept = match view.object.size <= WHOLE_INDEX_BYTES {
            true => view.prefix.len(),
            false => view.prefix.len().min(INDEX_PREFIX_BYTES as usize),
        };
        let whole = kept as u64 == view.object.size;
        (whole || view.object.tag.is_some()).then(|| {
            Self::Indexed(IndexView {
                prefix: view.prefix.slice(..kept),
                ..view.clone()
            })
        })
    }
}

/// An index as a reader holds it.
#[derive(Debug, Clone)]
pub(crate) struct IndexView {
    /// Its checked header.
    pub(super) header: Header,
    /// The payload version it was opened for.
    pub(super) payload: Version,
    /// The index object's own version: later reads of its entries must come from that object.
    pub(super) object: Version,
    /// The object's first bytes (or all of them).
    pub(super) prefix: Bytes,
}

impl IndexView {
    /// The index whose first bytes are `prefix`, read from an object at `object`, for the payload
    /// at `payload`, if its header is well-formed (whether it describes that payload is
    /// [`Header::describes`]).
    pub(crate) fn new(
        prefix: Bytes,
        object: Version,
        payload: &Version,
    ) -> Result<Self, IndexError> {
        Ok(Self {
            header: Header::decode(&prefix, object.size)?,
            payload: payload.clone(),
            object,
            prefix,
        })
    }
}

/// An entry's weight: the index bytes it holds, and a little for the rest.
#[derive(Debug, Clone)]
struct Bytesize;

impl Weighter<String, Arc<Opened>> for Bytesize {
    fn weight(&self, _handle: &String, opened: &Arc<Opened>) -> u64 {
        match opened.as_ref() {
            Opened::Whole(_) => 64,
            Opened::Indexed(view) => 128 + view.prefix.len() as u64,
        }
    }
}

/// Spills recently opened by a reader, by handle, in a byte-weighted cache
/// ([`quick_cache`]'s, of one shard, so that the whole budget can hold a large index).
#[derive(Debug)]
pub struct IndexCache {
    budget: u64,
    /// `None` when the budget is 0.
    entries: Option<Cache<String, Arc<Opened>, Bytesize>>,
}

impl IndexCache {
    /// A cache holding at most `budget` bytes (0 disables it).
    pub fn new(budget: usize) -> Self {
        let budget = budget as u64;
        let options = OptionsBuilder::new()
            .estimated_items_capacity(64)
            .weight_capacity(budget)
            .shards(1)
            .build();
        let entries = options.ok().filter(|_| budget > 0).map(|options| {
            Cache::with_options(options, Bytesize, Default::default(), Default::default())
        });
        Self { budget, entries }
    }

    /// The entry for `handle`.
    pub(crate) fn get(&self, handle: &str) -> Option<Arc<Opened>> {
        self.entries.as_ref()?.get(handle)
    }

    /// Keep what can be kept of `opened` for `handle` (see [`Opened::to_cache`]), replacing any
    /// older entry.
    pub(crate) fn put(&self, handle: &str, opened: &Opened) {
        let Some(entries) = &self.entries else {
            return;
        };
        let kept = opened.to_cache().map(Arc::new);
        match kept.filter(|o| Bytesize.weight(&String::new(), o) <= self.budget) {
            Some(kept) => entries.insert(handle.to_owned(), kept),
            None => self.remove(handle),
        }
    }

    /// Keep the index just stored for `handle` (its encoded bytes, the index object's version)
    /// for `payload`; nothing if it is not an index of that payload.
    pub fn insert_stored(&self, handle: &str, index: &Bytes, object: Version, payload: &Version) {
        match IndexView::new(index.clone(), object, payload) {
            Ok(view) if view.header.describes(payload) => {
                self.put(handle, &Opened::Indexed(view));
            }
            _ => self.remove(handle),
        }
    }

    /// Forget `handle`.
    pub fn remove(&self, handle: &str) {
        if let Some(entries) = &self.entries {
            entries.remove(handle);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_what_fits_its_budget() {
        let whole = || {
            Opened::Whole(Version {
                size: 1,
                tag: Some("t".into()),
            })
        };
        let cache = IndexCache::new(3 * 64);
        for h in ["a", "b", "c", "d", "e"] {
            cache.put(h, &whole());
        }
        let held = ["a", "b", "c", "d", "e"]
            .iter()
            .filter(|h| cache.get(h).is_some());
        assert!((1..=3).contains(&held.count()));
        assert!(cache.get("e").is_some(), "the newest entry is kept");
        cache.remove("e");
        assert!(cache.get("e").is_none());
        // Nothing a later read cannot check: a payload without a tag.
        cache.put("u", &Opened::Whole(Version { size: 1, tag: None }));
        assert!(cache.get("u").is_none());
        assert!(IndexCache::new(0).get("a").is_none());
    }
}
