//! A small in-process cache of line indexes, bounded by the bytes its entries hold.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use crate::read::LineIndex;

/// Recently written or read line indexes, by object path; oldest evicted first.
#[derive(Debug)]
pub(crate) struct IndexCache {
    budget: usize,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    entries: HashMap<String, Arc<LineIndex>>,
    order: VecDeque<String>,
    bytes: usize,
}

fn cost(index: &LineIndex) -> usize {
    index.len() * 8 + 64
}

impl IndexCache {
    /// A cache holding at most `budget` bytes of index entries (0 disables it).
    pub(crate) fn new(budget: usize) -> Self {
        Self {
            budget,
            state: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The index cached for `path`.
    pub(crate) fn get(&self, path: &str) -> Option<Arc<LineIndex>> {
        self.lock().entries.get(path).cloned()
    }

    /// Cache `index` for `path`, replacing any older entry.
    pub(crate) fn put(&self, path: &str, index: Arc<LineIndex>) {
        let size = cost(&index);
        if size > self.budget {
            self.remove(path);
            return;
        }
        let mut state = self.lock();
        if let Some(old) = state.entries.insert(path.to_owned(), index) {
            state.bytes -= cost(&old);
            state.order.retain(|p| p != path);
        }
        state.order.push_back(path.to_owned());
        state.bytes += size;
        while state.bytes > self.budget {
            let Some(oldest) = state.order.pop_front() else {
                break;
            };
            if let Some(old) = state.entries.remove(&oldest) {
                state.bytes -= cost(&old);
            }
        }
    }

    /// Forget `path`.
    pub(crate) fn remove(&self, path: &str) {
        let mut state = self.lock();
        if let Some(old) = state.entries.remove(path) {
            state.bytes -= cost(&old);
            state.order.retain(|p| p != path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_oldest_over_budget() {
        let cache = IndexCache::new(3 * (8 * 2 + 64));
        let index = Arc::new(LineIndex::build(b"a\nb\n"));
        for p in ["a", "b", "c", "d"] {
            cache.put(p, index.clone());
        }
        assert!(cache.get("a").is_none());
        assert!(cache.get("d").is_some());
        cache.put("b", index.clone());
        cache.put("e", index);
        assert!(cache.get("c").is_none());
        assert!(cache.get("b").is_some());
        cache.remove("b");
        assert!(cache.get("b").is_none());
    }
}
