//! What a compile produced: a program, or the error that says the code does not compile. The
//! compiler, the compile cache (which stores both) and the precompiled headers all speak these
//! types, so they sit below all three.

use std::path::PathBuf;

/// What a compile produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Compiled {
    /// The executable, in the cache.
    Binary(PathBuf),
    /// The compiler failed.
    Error(CompileError),
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
