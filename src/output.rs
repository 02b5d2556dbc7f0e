//! Standard output that cannot panic. `println!` panics when stdout is a closed pipe
//! (`ioi-run report x.jsonl | head -0`); the commands write through [`outln!`] instead, which
//! returns the write error to the command. The error travels up like any other, and
//! [`crate::cli::main`] recognises a broken pipe and ends quietly with success, as ripgrep does:
//! the reader has all it wanted. Commands and benchmarks print through it alike.

/// `println!` that returns `std::io::Error` to the enclosing function (`?`) instead of panicking.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*)?
    }};
}
pub(crate) use outln;

/// Whether an error comes from writing to a pipe whose reader has gone away.
pub fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
