//! `ioi-run keeper`: stay resident and run the `ioi-run sandbox` commands of this uid handed to
//! it on a unix socket (the daemon is `crate::keeper`).

use std::path::PathBuf;

use anyhow::Result;

use crate::keeper::DEFAULT_SOCKET;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The unix socket to listen on (its folder is created closed to others).
    #[arg(long, default_value = DEFAULT_SOCKET)]
    socket: PathBuf,
    /// Runs at once; more clients wait (default: the cores).
    #[arg(long)]
    jobs: Option<usize>,
}

pub fn run(args: Args) -> Result<i32> {
    crate::keeper::serve(&args.socket, args.jobs)?;
    Ok(0)
}
