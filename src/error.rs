//! What kind of failure stopped a command, so that its exit code tells a script what to do next:
//! fix the command line, fix the data, or look at the host.
//!
//! Errors stay `anyhow` errors with their context; the place that knows what went wrong wraps
//! one in a [`Classified`] (through [`Classify::class`] or [`usage`], [`bad_input`], [`host`]),
//! which changes nothing in its message. `cli::main` finds the innermost class in the chain and
//! exits with its [`ErrorClass::exit_code`].

/// The kinds of failure a script can act on differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// The command line asks for something that cannot be done as given (a path that does not
    /// exist, a task folder where a dataset is expected, options that exclude each other).
    Usage,
    /// A data file or package is malformed (a dataset row, a problem, a test case, a task
    /// folder): the command is right, the data is not.
    BadInput,
    /// The host cannot do what the command needs (the sandbox cannot start, a cgroup or a
    /// namespace is refused, the compiler is missing, a sandboxed run failed).
    Host,
}

impl ErrorClass {
    /// The exit code of a command that failed this way (the table in docs/exit-codes.md).
    pub fn exit_code(self) -> i32 {
        match self {
            ErrorClass::Usage => USAGE,
            ErrorClass::BadInput => BAD_INPUT,
            ErrorClass::Host => HOST,
        }
    }
}

/// The command ran and the answer is no (a score below `--min-score`, a deviation, a row not
/// judged).
pub const NO: i32 = 1;
/// Usage error; clap's own code for a command line it cannot parse.
pub const USAGE: i32 = 2;
/// Bad input: a data file or a package.
pub const BAD_INPUT: i32 = 3;
/// The host or the sandbox failed.
pub const HOST: i32 = 4;
/// Any other failure (e.g. results that cannot be written).
pub const OTHER: i32 = 5;

/// An error with its class; displays exactly as the error it wraps, and its chain is the
/// wrapped error's chain.
#[derive(Debug)]
pub struct Classified {
    pub class: ErrorClass,
    source: anyhow::Error,
}

impl std::fmt::Display for Classified {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.source, f)
    }
}

impl std::error::Error for Classified {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.source()
    }
}

/// Wraps `error` in `class`.
pub fn classify(class: ErrorClass, error: anyhow::Error) -> anyhow::Error {
    anyhow::Error::new(Classified {
        class,
        source: error,
    })
}

/// A usage error.
pub fn usage(error: impl Into<anyhow::Error>) -> anyhow::Error {
    classify(ErrorClass::Usage, error.into())
}

/// A bad-input error.
pub fn bad_input(error: impl Into<anyhow::Error>) -> anyhow::Error {
    classify(ErrorClass::BadInput, error.into())
}

/// A host or sandbox failure.
pub fn host(error: impl Into<anyhow::Error>) -> anyhow::Error {
    classify(ErrorClass::Host, error.into())
}

/// `.class(ErrorClass::BadInput)` on a result.
pub trait Classify<T> {
    fn class(self, class: ErrorClass) -> anyhow::Result<T>;
}

impl<T, E: Into<anyhow::Error>> Classify<T> for Result<T, E> {
    fn class(self, class: ErrorClass) -> anyhow::Result<T> {
        self.map_err(|e| classify(class, e.into()))
    }
}

/// The innermost class in an error's chain, if any: the place closest to the failure knows
/// best (a sandbox failure while a task folder loads is the host's, not the folder's).
pub fn class_of(error: &anyhow::Error) -> Option<ErrorClass> {
    error.chain().find_map(|e| {
        e.downcast_ref::<Classified>()
            .map(|c| class_of(&c.source).unwrap_or(c.class))
    })
}

/// The exit code of a command that failed with `error`.
pub fn exit_code(error: &anyhow::Error) -> i32 {
    class_of(error).map_or(OTHER, ErrorClass::exit_code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::{anyhow, Context};

    #[test]
    fn a_class_changes_no_message_and_survives_context() {
        let inner: anyhow::Result<()> =
            Err(anyhow!("row 3: field `uuid` is missing")).context("cannot load subs.jsonl");
        let plain = format!("{:#}", inner.as_ref().unwrap_err());
        let classified = inner
            .class(ErrorClass::BadInput)
            .context("cannot evaluate `subs`")
            .unwrap_err();
        assert_eq!(
            format!("{classified:#}"),
            format!("cannot evaluate `subs`: {plain}")
        );
        assert_eq!(class_of(&classified), Some(ErrorClass::BadInput));
        assert_eq!(exit_code(&classified), BAD_INPUT);
    }

    #[test]
    fn the_innermost_class_wins_and_none_is_other() {
        let e = bad_input(host(anyhow!("sandbox failure")).context("loading task"));
        assert_eq!(exit_code(&e), HOST);
        assert_eq!(exit_code(&anyhow!("disk full")), OTHER);
        assert_eq!(exit_code(&bad_input(anyhow!("x"))), BAD_INPUT);
        assert_eq!(exit_code(&host(anyhow!("x"))), HOST);
    }
}
