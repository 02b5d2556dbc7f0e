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

/// The `--color` choice, set once at start.
static COLOR: std::sync::OnceLock<ColorChoice> = std::sync::OnceLock::new();

/// Records `--color` and applies it to indicatif's progress bars (through `console`).
pub fn set_color(choice: ColorChoice) {
    use std::io::IsTerminal;
    let _ = COLOR.set(choice);
    console::set_colors_enabled(choice.enabled(std::io::stdout().is_terminal()));
    console::set_colors_enabled_stderr(choice.enabled(std::io::stderr().is_terminal()));
}

/// Whether what goes to stdout may be coloured.
pub fn color_stdout() -> bool {
    use std::io::IsTerminal;
    COLOR
        .get()
        .copied()
        .unwrap_or(ColorChoice::Auto)
        .enabled(std::io::stdout().is_terminal())
}

/// The progress bars and spinners on screen, so that a message from another thread (the
/// Ctrl-C message) can clear them first and stand on its own line.
static BARS: std::sync::Mutex<Vec<indicatif::ProgressBar>> = std::sync::Mutex::new(Vec::new());

/// Registers `bar` as shown on screen (see [`clear_progress`]).
pub fn shown(bar: indicatif::ProgressBar) -> indicatif::ProgressBar {
    if let Ok(mut bars) = BARS.lock() {
        bars.push(bar.clone());
    }
    bar
}

/// Clears every registered bar from the screen for good: what is written next starts on a
/// line of its own, and no later update draws a bar again.
pub fn clear_progress() {
    if let Ok(bars) = BARS.lock() {
        for bar in bars.iter() {
            bar.finish_and_clear();
            bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
        }
    }
}

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

impl ColorChoice {
    /// Whether to colour a stream that is (`terminal`) or is not a terminal.
    pub fn enabled(self, terminal: bool) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
            }
        }
    }
}

/// `text` with every control character but tabs (and line breaks, when `lines`) shown as `?`.
/// Test names, feedback, messages, a program's stderr and a compiler's words come from
/// datasets, packages and submissions: an escape sequence in them would recolour the terminal,
/// set its title or move the cursor to print a line that `judge` never wrote.
pub fn printable(text: &str, lines: bool) -> String {
    text.chars()
        .map(
            |c| match c.is_control() && c != '\t' && !(lines && c == '\n') {
                true => '?',
                false => c,
            },
        )
        .collect()
}
