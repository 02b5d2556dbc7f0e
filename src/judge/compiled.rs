//! What a compile produced: a program, or the error that says the code does not compile. The
//! compiler, the compile cache (which stores both) and the precompiled headers all speak these
//! types, so they sit below all three.

use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What a compile produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Compiled {
    /// The executable, in the cache.
    Binary(Executable),
    /// The compiler failed.
    Error(CompileError),
}

/// A compiled program's file. One handed out by the compile cache carries its pin, which keeps
/// the file on disk while any clone of this value lives, however the cache is trimmed meanwhile,
/// and removes it once the last clone is dropped: a process that runs for days holds the files
/// of the programs it is running, not of every program it ever ran.
#[derive(Clone)]
pub struct Executable {
    path: PathBuf,
    /// What keeps the file: the cache's pin (its drop removes the pin's link).
    _hold: Option<Arc<dyn std::any::Any + Send + Sync>>,
}

impl Executable {
    /// A program file nothing else removes (built outside the cache, or in a test).
    pub fn at(path: impl Into<PathBuf>) -> Executable {
        Executable {
            path: path.into(),
            _hold: None,
        }
    }

    /// A program file kept while `hold` lives.
    pub(crate) fn held(path: PathBuf, hold: Arc<dyn std::any::Any + Send + Sync>) -> Executable {
        Executable {
            path,
            _hold: Some(hold),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl std::ops::Deref for Executable {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for Executable {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<std::ffi::OsStr> for Executable {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.path.as_os_str()
    }
}

impl PartialEq for Executable {
    fn eq(&self, other: &Executable) -> bool {
        self.path == other.path
    }
}

impl Eq for Executable {}

impl std::fmt::Debug for Executable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.path.fmt(f)
    }
}

/// A compilation error, whoever compiled (the native judge, the scripts, a tool's build): how
/// the compiler ended and what it said. The one type for "the code does not compile".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileError {
    /// The compiler's exit code; `None` when a limit (time, memory, output) stopped it.
    pub exit_code: Option<i32>,
    /// Its diagnostics, capped and decoded lossily.
    pub stderr: String,
}

impl CompileError {
    /// A compiler that exited with `exit_code`.
    pub fn exited(exit_code: i32, stderr: impl Into<String>) -> CompileError {
        CompileError {
            exit_code: Some(exit_code),
            stderr: stderr.into(),
        }
    }

    /// A compiler stopped by a limit.
    pub fn stopped(stderr: impl Into<String>) -> CompileError {
        CompileError {
            exit_code: None,
            stderr: stderr.into(),
        }
    }

    /// The exit code as Piston and the Python pipeline report it: -1 for a stopped compiler.
    /// Only the wire formats (feedback, the IOI response) speak this way.
    pub fn reported_code(&self) -> i32 {
        self.exit_code.unwrap_or(-1)
    }

    /// The feedback the Python pipeline gives every test of a submission that does not compile.
    pub fn feedback(&self) -> String {
        format!(
            "Compilation error exit code {}\n{}",
            self.reported_code(),
            self.stderr
        )
    }
}

impl std::fmt::Display for CompileError {
    /// "does not compile (exit code N):" or "(stopped by a limit):", then the diagnostics.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.exit_code {
            Some(code) => write!(f, "does not compile (exit code {code}):\n{}", self.stderr),
            None => write!(f, "does not compile (stopped by a limit):\n{}", self.stderr),
        }
    }
}
