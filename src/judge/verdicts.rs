//! Answers from a judgement already made: an RL policy emits the same program many times, and
//! each copy after the first is answered with the first one's verdict, bit for bit.
//!
//! The key ([`VerdictKey`]) is a blake3 hash of everything a verdict depends on: the source as
//! compiled, byte for byte (no normalisation: a change in white space or line ends can change
//! the program, through `__LINE__`, a raw string or a line splice), the compiler and its
//! flags, the problem's content (grader files, tests, checker, manager), its limits and the
//! judge's settings. Every part is fed with its length, so no two different inputs give the
//! same bytes. A policy chooses only its source: it cannot make a key of another program,
//! problem or limit, and it cannot write an answer other than the verdict the judge gave its
//! own program. Only verdicts are kept (never a failure of the host, never an interrupted
//! run), in memory, for this process: nothing on disk for another process to plant.
//!
//! Copies judged at the same time share one judgement: the second waits for the first instead
//! of judging again.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Verdicts kept at most: far more than the distinct programs of a training batch.
pub const DEFAULT_CAPACITY: usize = 100_000;
/// Bytes the kept verdicts may take at most. A verdict is small (a score and a line of
/// feedback), but a checker's message or a compiler's diagnostics may reach 1 MiB: the bound in
/// bytes, not the count, is what keeps a server's memory flat over a training run.
pub const DEFAULT_BYTES: usize = 64 << 20;
/// What an entry costs beside its verdict's own bytes: the key twice (map and order), the
/// shared cell and the map's slot.
const ENTRY_BYTES: usize = 160;

/// The memory a kept verdict holds, for the cache's bound in bytes.
pub trait Weight {
    /// Bytes held, its own size included.
    fn weight(&self) -> usize;
}

/// What a verdict depends on, hashed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VerdictKey([u8; 32]);

/// Builds a [`VerdictKey`] part by part.
pub struct KeyBuilder(blake3::Hasher);

impl KeyBuilder {
    /// A key of `kind` (what is judged: a server test, an evaluated submission), for this
    /// version of ioi-run and this compiler.
    pub fn new(kind: &str) -> KeyBuilder {
        let mut builder = KeyBuilder(blake3::Hasher::new());
        builder
            .part(b"ioi-run verdicts")
            .part(env!("CARGO_PKG_VERSION").as_bytes())
            .part(kind.as_bytes())
            .part(super::compile::compiler_identity().as_bytes());
        builder
    }

    /// Adds one part, delimited by its length.
    pub fn part(&mut self, bytes: &[u8]) -> &mut KeyBuilder {
        self.0.update(&(bytes.len() as u64).to_le_bytes());
        self.0.update(bytes);
        self
    }

    /// Adds an optional part: absent and empty are different keys.
    pub fn optional(&mut self, bytes: Option<&[u8]>) -> &mut KeyBuilder {
        match bytes {
            None => self.part(b"none"),
            Some(bytes) => self.part(b"some").part(bytes),
        }
    }

    pub fn finish(&self) -> VerdictKey {
        VerdictKey(*self.0.finalize().as_bytes())
    }
}

/// One judgement, in progress or made, shared by every copy.
type Shared<V> = Arc<OnceLock<Option<V>>>;

/// Verdicts by key, bounded in count and in bytes (the oldest go first).
pub struct VerdictCache<V> {
    capacity: usize,
    max_bytes: usize,
    entries: Mutex<Entries<V>>,
    hits: AtomicU64,
}

struct Entries<V> {
    by_key: HashMap<VerdictKey, Entry<V>>,
    order: VecDeque<VerdictKey>,
    /// The bytes of every entry in `by_key`.
    bytes: usize,
}

/// A judgement and the bytes it is counted for (its verdict's once made).
struct Entry<V> {
    cell: Shared<V>,
    bytes: usize,
}

impl<V> Entries<V> {
    fn remove(&mut self, key: &VerdictKey) {
        if let Some(entry) = self.by_key.remove(key) {
            self.bytes -= entry.bytes;
        }
    }

    /// Drops the oldest entries until both bounds hold.
    fn evict(&mut self, capacity: usize, max_bytes: usize) {
        while self.by_key.len() > capacity || self.bytes > max_bytes {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            self.remove(&old);
        }
    }
}

impl<V: Clone + Weight> VerdictCache<V> {
    /// A cache of at most `capacity` verdicts and `max_bytes` bytes.
    pub fn new(capacity: usize, max_bytes: usize) -> VerdictCache<V> {
        VerdictCache {
            capacity: capacity.max(1),
            max_bytes,
            entries: Mutex::new(Entries {
                by_key: HashMap::new(),
                order: VecDeque::new(),
                bytes: 0,
            }),
            hits: AtomicU64::new(0),
        }
    }

    /// The bytes the kept verdicts take (judgements in progress at their entry's cost).
    pub fn bytes(&self) -> usize {
        self.entries.lock().map_or(0, |entries| entries.bytes)
    }

    /// How many answers came from the cache (or from a copy judged at the same time).
    pub fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }

    /// How many verdicts are kept (judgements in progress included); at most the capacity.
    pub fn len(&self) -> usize {
        self.entries
            .lock()
            .map_or(0, |entries| entries.by_key.len())
    }

    /// Whether no verdict is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The verdict of `key`: the one already made, or `judge`'s, which is kept when it is a
    /// verdict (`Ok`). A judgement that failed is not kept: its copies waiting for it judge
    /// for themselves.
    pub fn get_or_judge<E>(
        &self,
        key: VerdictKey,
        judge: impl FnOnce() -> Result<V, E>,
    ) -> Result<V, E> {
        let cell = self.cell(key);
        let mut judge = Some(judge);
        let mut failure = None;
        let answer = cell.get_or_init(|| {
            let judge = judge.take()?;
            match judge() {
                Ok(verdict) => Some(verdict),
                Err(e) => {
                    failure = Some(e);
                    None
                }
            }
        });
        if let Some(e) = failure {
            self.forget(key, &cell);
            return Err(e);
        }
        match (answer, judge) {
            // Judged by another copy, earlier or meanwhile.
            (Some(verdict), Some(_)) => {
                self.hits.fetch_add(1, Ordering::Relaxed);
                Ok(verdict.clone())
            }
            (Some(verdict), None) => {
                self.weigh(key, &cell, verdict.weight());
                Ok(verdict.clone())
            }
            // The copy this one waited for failed: this one is judged afresh, not kept.
            (None, Some(judge)) => judge(),
            (None, None) => unreachable!("a judgement that failed returned above"),
        }
    }

    fn cell(&self, key: VerdictKey) -> Shared<V> {
        let Ok(mut entries) = self.entries.lock() else {
            return Arc::default();
        };
        if let Some(entry) = entries.by_key.get(&key) {
            return Arc::clone(&entry.cell);
        }
        let cell: Shared<V> = Arc::default();
        let entry = Entry {
            cell: Arc::clone(&cell),
            bytes: ENTRY_BYTES,
        };
        entries.by_key.insert(key, entry);
        entries.bytes += ENTRY_BYTES;
        entries.order.push_back(key);
        entries.evict(self.capacity, self.max_bytes);
        cell
    }

    /// Counts the verdict just made in `cell` at its weight, then evicts what the bound in
    /// bytes no longer holds (this verdict too, when it alone is over the bound). An entry
    /// evicted while it was judged is not counted again.
    fn weigh(&self, key: VerdictKey, cell: &Shared<V>, weight: usize) {
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        let entries = &mut *entries;
        let Some(entry) = entries.by_key.get_mut(&key) else {
            return;
        };
        if !Arc::ptr_eq(&entry.cell, cell) {
            return;
        }
        entries.bytes += weight;
        entry.bytes += weight;
        entries.evict(self.capacity, self.max_bytes);
    }

    fn forget(&self, key: VerdictKey, cell: &Shared<V>) {
        if let Ok(mut entries) = self.entries.lock() {
            if entries
                .by_key
                .get(&key)
                .is_some_and(|entry| Arc::ptr_eq(&entry.cell, cell))
            {
                entries.remove(&key);
                entries.order.retain(|k| *k != key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(parts: &[&[u8]]) -> VerdictKey {
        let mut builder = KeyBuilder::new("test");
        for part in parts {
            builder.part(part);
        }
        builder.finish()
    }

    #[test]
    fn parts_are_delimited() {
        assert_ne!(key(&[b"ab", b"c"]), key(&[b"a", b"bc"]));
        assert_ne!(key(&[b"ab"]), key(&[b"ab", b""]));
        assert_eq!(key(&[b"ab", b"c"]), key(&[b"ab", b"c"]));
        let mut none = KeyBuilder::new("test");
        let mut empty = KeyBuilder::new("test");
        none.optional(None);
        empty.optional(Some(b""));
        assert_ne!(none.finish(), empty.finish());
    }

    #[test]
    fn a_verdict_is_judged_once_and_a_failure_is_not_kept() {
        let cache = VerdictCache::new(10, DEFAULT_BYTES);
        let runs = std::cell::Cell::new(0);
        let judge = |v: u32| {
            runs.set(runs.get() + 1);
            Ok::<u32, String>(v)
        };
        assert_eq!(cache.get_or_judge(key(&[b"a"]), || judge(1)), Ok(1));
        // The same key: the first verdict, whatever this judgement would say.
        assert_eq!(cache.get_or_judge(key(&[b"a"]), || judge(2)), Ok(1));
        assert_eq!((runs.get(), cache.hits()), (1, 1));
        // A failure is returned and forgotten: the next copy is judged.
        let failed: Result<u32, String> = cache.get_or_judge(key(&[b"b"]), || Err("host".into()));
        assert_eq!(failed, Err("host".to_string()));
        assert_eq!(cache.get_or_judge(key(&[b"b"]), || judge(3)), Ok(3));
        assert_eq!((runs.get(), cache.hits()), (2, 1));
    }

    impl Weight for u32 {
        fn weight(&self) -> usize {
            4
        }
    }

    impl Weight for usize {
        fn weight(&self) -> usize {
            8
        }
    }

    /// A verdict as heavy as its text.
    #[derive(Debug, Clone, PartialEq)]
    struct Message(String);

    impl Weight for Message {
        fn weight(&self) -> usize {
            self.0.capacity()
        }
    }

    #[test]
    fn the_bytes_kept_stay_under_the_bound_and_the_oldest_go_first() {
        let bound = 10 << 20;
        let cache = VerdictCache::new(DEFAULT_CAPACITY, bound);
        let verdict = |i: usize| Message(format!("{i:02}").repeat(1 << 19));
        for i in 0..30usize {
            let k = key(&[&i.to_le_bytes()]);
            cache.get_or_judge(k, || Ok::<_, ()>(verdict(i))).unwrap();
            assert!(cache.bytes() <= bound, "{} bytes after {i}", cache.bytes());
        }
        // Nine verdicts of 1 MiB and their entries fit in 10 MiB: the last nine are kept.
        assert_eq!(cache.len(), 9);
        let again = |i: usize| {
            cache.get_or_judge(key(&[&i.to_le_bytes()]), || {
                Ok::<_, ()>(Message("new".into()))
            })
        };
        assert_eq!(again(29), Ok(verdict(29)));
        assert_eq!(again(21), Ok(verdict(21)));
        assert_eq!(again(20), Ok(Message("new".into())));
        // A verdict over the bound on its own is answered and not kept.
        let huge = key(&[b"huge"]);
        let big = Message("x".repeat(bound + 1));
        assert_eq!(
            cache.get_or_judge(huge, || Ok::<_, ()>(big.clone())),
            Ok(big)
        );
        assert!(cache.bytes() <= bound);
        assert_eq!(
            cache.get_or_judge(huge, || Ok::<_, ()>(Message("y".into()))),
            Ok(Message("y".into()))
        );
    }

    #[test]
    fn the_oldest_verdicts_go_first() {
        let cache = VerdictCache::new(2, DEFAULT_BYTES);
        for (i, k) in [b"a", b"b", b"c"].iter().enumerate() {
            cache
                .get_or_judge(key(&[*k]), || Ok::<usize, ()>(i))
                .unwrap();
        }
        assert_eq!(
            cache.get_or_judge(key(&[b"a"]), || Ok::<usize, ()>(9)),
            Ok(9)
        );
        assert_eq!(
            cache.get_or_judge(key(&[b"c"]), || Ok::<usize, ()>(9)),
            Ok(2)
        );
    }
}
