//! `judge --watch`: judge, then judge again each time the solution file is saved, until Ctrl-C
//! (docs/debugging.md#judging-on-every-save). The file's modification time and size are polled:
//! editors save by writing in place or by renaming a new file over the old one, and polling
//! sees both without a dependency (inotify loses a renamed-over file's watch).

use std::path::Path;
use std::time::{Duration, SystemTime};

use anyhow::Result;

/// How often the solution file is looked at.
const POLL: Duration = Duration::from_millis(300);

/// Runs `judge_once` now and after every change of the solution file; returns only on an error
/// that no edit of the solution can fix (the problem, the host) or when interrupted.
pub fn run(args: &super::Args, judge_once: impl Fn() -> Result<i32>) -> Result<i32> {
    let solution = &args.solution;
    loop {
        let seen = stamp(solution);
        match judge_once() {
            Ok(_) => {}
            // The solution itself may be what is wrong (empty, unreadable): wait for an edit.
            Err(e) if crate::error::exit_code(&e) == crate::error::USAGE => {
                eprintln!("error: {e:#}");
            }
            Err(e) => return Err(e),
        }
        eprintln!(
            "watching {} for changes (Ctrl-C to stop)",
            solution.display()
        );
        while stamp(solution) == seen {
            if crate::judge::stop::interrupting_signal().is_some() {
                return Ok(0);
            }
            std::thread::sleep(POLL);
        }
        clear_terminal();
        eprintln!("{} changed: judging again", solution.display());
    }
}

/// In a terminal, clears the screen so that the judgement about to start replaces the last one
/// instead of adding its thirty lines below it (the scrollback keeps them); elsewhere (a file, a
/// pipe, a dumb terminal) a blank line separates the two.
fn clear_terminal() {
    use std::io::{IsTerminal, Write};
    let dumb = std::env::var_os("TERM").is_none_or(|term| term == "dumb");
    let mut stderr = std::io::stderr();
    match stderr.is_terminal() && !dumb {
        // Cursor home, then erase the whole screen.
        true => {
            let _ = stderr.write_all(b"\x1b[H\x1b[2J");
        }
        false => {
            let _ = stderr.write_all(b"\n");
        }
    }
}

/// What tells one saved version of a file from the next: its modification time and size
/// (`None` while it does not exist, between an editor's remove and rename).
fn stamp(path: &Path) -> Option<(SystemTime, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}
