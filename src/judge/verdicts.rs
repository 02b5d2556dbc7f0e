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

/// Verdicts kept by default: far more than the distinct programs of a training batch, a few
/// hundred bytes each.
pub const DEFAULT_CAPACITY: usize = 100_000;
/// Memory the kept verdicts may take by default, their text counted ([`Weight`]): a checker's
/// feedback can be a megabyte, and 100 000 of those would hold 100 GB. A few hundred bytes a
/// verdict, [`DEFAULT_CAPACITY`] of them fit.
pub const DEFAULT_MAX_BYTES: usize = 64 << 20;
/// What a kept verdict costs besides its text: its key, its cell and its slots in the maps.
const ENTRY_BYTES: usize = 256;

/// What a kept verdict holds in memory beyond its fixed size (its feedback, a compiler's
/// message), in bytes.
pub trait Weight {
    /// The bytes it holds besides its own size.
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

/// Verdicts by key, bounded in number and in bytes (the oldest go first).
pub struct VerdictCache<V> {
    capacity: usize,
    max_bytes: usize,
    entries: Mutex<Entries<V>>,
    hits: AtomicU64,
}

struct Entries<V> {
    /// Each judgement with the bytes it holds (counted once made).
    by_key: HashMap<VerdictKey, (Shared<V>, usize)>,
    order: VecDeque<VerdictKey>,
    /// The bytes of every verdict kept.
    bytes: usize,
}

impl<V> Entries<V> {
    /// Drops the oldest verdicts until at most `capacity` are kept in at most `max_bytes`.
    fn evict(&mut self, capacity: usize, max_bytes: usize) {
        while self.order.len() > capacity || self.bytes > max_bytes {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            if let Some((_, bytes)) = self.by_key.remove(&old) {
                self.bytes -= bytes;
            }
        }
    }
}

impl<V: Clone + Weight> VerdictCache<V> {
    /// At most `capacity` verdicts, in at most [`DEFAULT_MAX_BYTES`].
    pub fn new(capacity: usize) -> VerdictCache<V> {
        VerdictCache {
            capacity: capacity.max(1),
            max_bytes: DEFAULT_MAX_BYTES,
            entries: Mutex::new(Entries {
                by_key: HashMap::new(),
                order: VecDeque::new(),
                bytes: 0,
            }),
            hits: AtomicU64::new(0),
        }
    }

    /// Changes the bound in bytes.
    #[cfg(test)]
    fn with_max_bytes(mut self, max_bytes: usize) -> VerdictCache<V> {
        self.max_bytes = max_bytes;
        self
    }

    /// Bytes of the verdicts kept, as counted against the bound.
    #[cfg(test)]
    fn bytes(&self) -> usize {
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
        let mut made_here = false;
        let answer = cell.get_or_init(|| {
            let judge = judge.take()?;
            match judge() {
                Ok(verdict) => {
                    made_here = true;
                    Some(verdict)
                }
                Err(e) => {
                    failure = Some(e);
                    None
                }
            }
        });
        if let (true, Some(verdict)) = (made_here, answer) {
            self.weigh(key, &cell, ENTRY_BYTES + verdict.weight());
        }
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
            (Some(verdict), None) => Ok(verdict.clone()),
            // The copy this one waited for failed: this one is judged afresh, not kept.
            (None, Some(judge)) => judge(),
            (None, None) => unreachable!("a judgement that failed returned above"),
        }
    }

    fn cell(&self, key: VerdictKey) -> Shared<V> {
        let Ok(mut entries) = self.entries.lock() else {
            return Arc::default();
        };
        if let Some((cell, _)) = entries.by_key.get(&key) {
            return Arc::clone(cell);
        }
        let cell: Shared<V> = Arc::default();
        entries.by_key.insert(key, (Arc::clone(&cell), 0));
        entries.order.push_back(key);
        entries.evict(self.capacity, self.max_bytes);
        cell
    }

    /// Counts the bytes of the verdict just made in `cell` (unless it was dropped meanwhile),
    /// and drops the oldest verdicts beyond the bounds.
    fn weigh(&self, key: VerdictKey, cell: &Shared<V>, bytes: usize) {
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        let Some((kept, counted)) = entries.by_key.get_mut(&key) else {
            return;
        };
        if !Arc::ptr_eq(kept, cell) {
            return;
        }
        let before = std::mem::replace(counted, bytes);
        entries.bytes = entries.bytes - before + bytes;
        entries.evict(self.capacity, self.max_bytes);
    }

    fn forget(&self, key: VerdictKey, cell: &Shared<V>) {
        if let Ok(mut entries) = self.entries.lock() {
            if entries
                .by_key
                .get(&key)
                .is_some_and(|(c, _)| Arc::ptr_eq(c, cell))
            {
                if let Some((_, bytes)) = entries.by_key.remove(&key) {
                    entries.bytes -= bytes;
                }
                entries.order.retain(|k| *k != key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Weight for u32 {
        fn weight(&self) -> usize {
            0
        }
    }

    impl Weight for usize {
        fn weight(&self) -> usize {
            0
        }
    }

    impl Weight for String {
        fn weight(&self) -> usize {
            self.len()
        }
    }

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
        let cache = VerdictCache::new(10);
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

    #[test]
    fn the_oldest_verdicts_go_first() {
        let cache = VerdictCache::new(2);
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

    #[test]
    fn large_verdicts_are_bounded_by_their_bytes() {
        // Room for three verdicts of 1000 bytes.
        let cache = VerdictCache::new(100).with_max_bytes(3 * (ENTRY_BYTES + 1000));
        let large = |c: char| Ok::<String, ()>(c.to_string().repeat(1000));
        for k in ["a", "b", "c", "d"] {
            cache
                .get_or_judge(key(&[k.as_bytes()]), || large('x'))
                .unwrap();
        }
        assert_eq!(cache.len(), 3);
        assert_eq!(cache.bytes(), 3 * (ENTRY_BYTES + 1000));
        // The oldest went: judged again; the newest is still there.
        let again = cache.get_or_judge(key(&[b"a"]), || large('y')).unwrap();
        assert!(again.starts_with('y'));
        let kept = cache.get_or_judge(key(&[b"d"]), || large('z')).unwrap();
        assert!(kept.starts_with('x'));
        // A verdict larger than the whole bound is answered, not kept.
        let huge = cache
            .get_or_judge(key(&[b"huge"]), || Ok::<String, ()>("h".repeat(10_000)))
            .unwrap();
        assert_eq!(huge.len(), 10_000);
        assert!(cache.bytes() <= 3 * (ENTRY_BYTES + 1000));
        // A failure holds nothing.
        let failed = cache.get_or_judge(key(&[b"e"]), || Err::<String, ()>(()));
        assert_eq!(failed, Err(()));
        assert!(cache.bytes() <= 3 * (ENTRY_BYTES + 1000));
    }
}
