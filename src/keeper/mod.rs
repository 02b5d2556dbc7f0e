//! The keeper: a resident process (`ioi-run keeper`) that runs `ioi-run sandbox` commands
//! handed to it, so that a command pays neither for the sandbox's start (cgroups, seccomp, a
//! network namespace) nor for building its box: the sandbox's housekeeper builds boxes ahead of
//! need.
//!
//! A command connects to the keeper's unix socket and sends its run (a [`RunRequest`], host
//! paths already absolute in the command's working directory) with its stdout and stderr as
//! descriptors (SCM_RIGHTS); the keeper relays the program's output to them as the command
//! would, and answers with the outcome, which the command prints. Who may hand runs over: only
//! processes of the keeper's own uid (SO_PEERCRED), through a socket of mode 0600 in a folder
//! closed to others. A command that hangs up mid-run has its box killed; a keeper that dies
//! mid-run takes its boxes along, and the command reports that the outcome is unknown.
//!
//! `protocol` is the request and its wire format, `daemon` serves clients, `client` hands a
//! request to a keeper, `execute` runs a request in a sandbox (the keeper's, or the command's
//! own when no keeper takes it).
//!
//! The room is named after the command, its socket (`keeper.sock`) and [`SOCKET_ENV`], the
//! words a user knows it by. The sandbox crate's `ioi_sandbox::keeper` is another thing, the
//! caller's side of one run inside a `Sandbox`; no file here names it, and what this room
//! offers carries its role in its name: [`RunRequest`], [`serve`], [`hand_over`], [`execute()`].

mod client;
mod daemon;
mod execute;
mod protocol;

pub use client::hand_over;
pub use daemon::serve;
pub use execute::run_here;
pub use protocol::{absolute, RequestLimits, RunRequest};

/// Where a keeper listens unless told otherwise.
pub const DEFAULT_SOCKET: &str = "/run/ioi-run/keeper.sock";

/// Names the keeper's socket for `ioi-run sandbox`; set to an empty value, no keeper is asked.
pub const SOCKET_ENV: &str = "IOI_RUN_KEEPER";
