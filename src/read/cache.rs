//! Opened spills kept between pages: a small in-process cache, bounded by the bytes it holds.
//!
//! An entry is never trusted on its own: every payload read it leads to is checked against the
//! payload version it records, and an entry found stale is dropped.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use super::index::{Header, IndexError, Version};

/// The first bytes of an index a reader reads with the payload's first bytes: the header and,
/// for all but the largest spills, every entry, so that a first page needs no other index read
/// (512 KiB of entries cover 67 million lines of 2,048 to a block, or 4 GiB of long lines at a
/// checkpoint every 128 KiB). A smaller index is read whole by the same request.
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
    /// The payload version every read of this spill is checked against.
    fn payload(&self) -> &Version {
        match self {
            Self::Whole(version) => version,
            Self::Indexed(view) => &view.payload,
        }
    }

    /// What a cache keeps of this: only what later reads can check (a payload with a tag), and of
    /// an index held whole up to [`WHOLE_INDEX_BYTES`], otherwise only its first bytes, when the
    /// rest can be read from the stored object.
    fn to_cache(&self) -> Option<Self> {
        self.payload().tag.as_ref()?;
        match self {
            Self::Whole(version) => Some(Self::Whole(version.clone())),
            Self::Indexed(view) => {
                let whole = view.is_whole() && view.fits_cache_whole();
                let kept = match whole {
                    true => view.prefix.len(),
                    false => view.prefix.len().min(INDEX_PREFIX_BYTES as usize),
                };
                let stored = view.object.tag.is_some();
                (whole || stored).then(|| {
                    Self::Indexed(IndexView {
                        prefix: view.prefix.slice(..kept),
                        ..view.clone()
                    })
                })
            }
        }
    }

    fn cost(&self) -> usize {
        match self {
            Self::Whole(_) => 64,
            Self::Indexed(view) => 128 + view.prefix.len(),
        }
    }
}

/// An index as a reader holds it: its checked header, the payload version it describes, the
/// index object's own version (later reads of its entries must come from that same object), the
/// object's first bytes, and whether pages of the spill read their whole ranges at once.
#[derive(Debug, Clone)]
pub(crate) struct IndexView {
    pub(crate) header: Header,
    pub(crate) payload: Version,
    pub(crate) object: Version,
    pub(crate) prefix: Bytes,
    /// Set once a page of the spill needed more than its first read (long lines of multi-byte
    /// text): its later pages, through this view or the cache's copies of it, read their whole
    /// range in one round trip instead of two.
    pub(crate) reads_whole_ranges: Arc<AtomicBool>,
}

impl IndexView {
    /// The index whose first bytes are `prefix`, read from an object at `object`, if it is a
    /// well-formed index of the payload at `payload`.
    pub(crate) fn open(
        prefix: Bytes,
        object: Version,
        payload: &Version,
    ) -> Result<Self, IndexError> {
        let view = Self::built(prefix, object, payload)?;
        match view.header.describes(payload) {
            true => Ok(view),
            false => Err(IndexError::Inconsistent(
                "describes another payload version",
            )),
        }
    }

    /// The index whose first bytes are `prefix`, read from an object at `object`, taken at its
    /// word: the payload version it describes is the one its header names. Every payload read it
    /// leads to is checked against that version, as for any view.
    pub(crate) fn claimed(prefix: Bytes, object: Version) -> Result<Self, IndexError> {
        let header = Header::decode(&prefix, object.size)?;
        if header.tag().is_empty() {
            return Err(IndexError::Inconsistent("bound to no payload tag"));
        }
        let payload = Version {
            size: header.payload_len(),
            tag: Some(header.tag().to_owned()),
        };
        Ok(Self {
            header,
            payload,
            object,
            prefix,
            reads_whole_ranges: Arc::default(),
        })
    }

    /// Whether the whole index object is held.
    pub(crate) fn is_whole(&self) -> bool {
        self.prefix.len() as u64 == self.object.size
    }

    /// Whether a cache keeps this index whole (at most [`WHOLE_INDEX_BYTES`]).
    pub(crate) fn fits_cache_whole(&self) -> bool {
        self.object.size <= WHOLE_INDEX_BYTES
    }

    /// An index just built from the payload at `payload` (whole, in `index`), stored as the
    /// object at `object` (untagged if it could not be stored).
    pub(crate) fn built(
        index: Bytes,
        object: Version,
        payload: &Version,
    ) -> Result<Self, IndexError> {
        Ok(Self {
            header: Header::decode(&index, object.size)?,
            payload: payload.clone(),
            object,
            prefix: index,
            reads_whole_ranges: Arc::default(),
        })
    }
}

/// Spills recently opened by a reader, by handle; oldest evicted first.
#[derive(Debug)]
pub struct IndexCache {
    budget: usize,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    entries: HashMap<String, Arc<Opened>>,
    order: VecDeque<String>,
    bytes: usize,
}

impl IndexCache {
    /// A cache holding at most `budget` bytes (0 disables it).
    pub fn new(budget: usize) -> Self {
        Self {
            budget,
            state: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The entry for `handle`.
    pub(crate) fn get(&self, handle: &str) -> Option<Arc<Opened>> {
        self.lock().entries.get(handle).cloned()
    }

    /// Keep what can be kept of `opened` for `handle` (see [`Opened::to_cache`]), replacing any
    /// older entry.
    pub(crate) fn put(&self, handle: &str, opened: &Opened) {
        let Some(opened) = opened.to_cache().filter(|o| o.cost() <= self.budget) else {
            self.remove(handle);
            return;
        };
        let size = opened.cost();
        let mut state = self.lock();
        state.forget(handle);
        state.entries.insert(handle.to_owned(), Arc::new(opened));
        state.order.push_back(handle.to_owned());
        state.bytes += size;
        while state.bytes > self.budget {
            let Some(oldest) = state.order.pop_front() else {
                break;
            };
            if let Some(old) = state.entries.remove(&oldest) {
                state.bytes -= old.cost();
            }
        }
    }

    /// Keep the index just stored for `handle` (its encoded bytes, the index object's version)
    /// for `payload`; nothing if it is not an index of that payload.
    pub fn insert_stored(&self, handle: &str, index: &Bytes, object: Version, payload: &Version) {
        match IndexView::open(index.clone(), object, payload) {
            Ok(view) => self.put(handle, &Opened::Indexed(view)),
            Err(_) => self.remove(handle),
        }
    }

    /// Forget `handle`.
    pub fn remove(&self, handle: &str) {
        self.lock().forget(handle);
    }
}

impl State {
    /// Drop `handle`'s entry, if any, and its cost.
    fn forget(&mut self, handle: &str) {
        if let Some(old) = self.entries.remove(handle) {
            self.bytes -= old.cost();
            self.order.retain(|h| h != handle);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_oldest_over_budget() {
        let whole = || {
            Opened::Whole(Version {
                size: 1,
                tag: Some("t".into()),
            })
        };
        let cache = IndexCache::new(3 * 64);
        for h in ["a", "b", "c", "d"] {
            cache.put(h, &whole());
        }
        assert!(cache.get("a").is_none());
        assert!(cache.get("d").is_some());
        cache.put("b", &whole());
        cache.put("e", &whole());
        assert!(cache.get("c").is_none());
        assert!(cache.get("b").is_some());
        cache.remove("b");
        assert!(cache.get("b").is_none());
    }
}
