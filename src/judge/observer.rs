//! What the judge tells whoever watches it (the server's metrics, docs/serve.md): every compile
//! the compile cache answers, with its language, whether the cache had it, and how long the
//! answer took. Told as it happens, since a compile's time is known nowhere else; the watcher
//! only counts, and nothing it does changes a compile.

use std::time::Duration;

use super::Language;

/// Whether a compile was answered without the compiler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CacheUse {
    /// Found on disk, or shared with an identical compile in progress.
    Hit,
    /// The compiler ran.
    Miss,
}

impl CacheUse {
    pub const ALL: [CacheUse; 2] = [CacheUse::Hit, CacheUse::Miss];

    pub fn as_str(self) -> &'static str {
        match self {
            CacheUse::Hit => "hit",
            CacheUse::Miss => "miss",
        }
    }
}

/// Told of every compile the cache answered (programs and compilation errors alike; a compile
/// the host failed or ioi-run stopped is not an answer).
pub trait CompileObserver: Send + Sync {
    /// `took`: from the call to the answer, waiting for an identical compile included.
    fn compiled(&self, language: Language, cache: CacheUse, took: Duration);
}
