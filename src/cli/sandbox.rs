//! `ioi-run sandbox`: run one command in the sandbox and print its outcome.

use std::path::PathBuf;
use std::time::Duration;

use super::output::outln;
use anyhow::{bail, Context, Result};
use ioi_sandbox::{Bind, Limits, RunSpec, Sandbox, SandboxOptions, Stdio};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// CPU time limit in seconds (user+sys, all threads).
    #[arg(long, value_parser = super::parse_seconds)]
    time: Option<Duration>,
    /// Wall-clock limit in seconds (default: 3 × --time + 1, or none).
    #[arg(long, value_parser = super::parse_seconds)]
    wall_time: Option<Duration>,
    /// Memory limit: bytes, or with a unit (256M, 2G).
    #[arg(long, value_parser = super::parse_size)]
    memory: Option<u64>,
    /// Maximum number of processes and threads.
    #[arg(long, default_value_t = 64)]
    processes: u64,
    /// Largest file the program may write: bytes or 64M.
    #[arg(long, value_parser = super::parse_size)]
    output_limit: Option<u64>,
    /// Extra directory: HOST:INSIDE (read-only) or HOST:INSIDE:rw.
    #[arg(long = "dir", value_name = "HOST:INSIDE[:rw]")]
    dirs: Vec<String>,
    /// Box directory mounted at /box (default: a fresh temporary directory).
    #[arg(long = "box")]
    box_dir: Option<PathBuf>,
    /// Read stdin from this host file.
    #[arg(long)]
    stdin: Option<PathBuf>,
    /// Write stdout to this host file (default: inherit the terminal's through a file).
    #[arg(long)]
    stdout: Option<PathBuf>,
    /// Write stderr to this host file.
    #[arg(long)]
    stderr: Option<PathBuf>,
    /// Environment variable NAME=VALUE for the program (the environment is otherwise empty
    /// but for PATH).
    #[arg(long = "env", value_name = "NAME=VALUE")]
    env: Vec<String>,
    /// Print the outcome as JSON.
    #[arg(long)]
    json: bool,
    /// The command and its arguments (after `--`).
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

pub fn run(args: Args) -> Result<i32> {
    crate::scratch::sweep_stale();
    let sandbox = Sandbox::new(SandboxOptions::default())
        .context("the sandbox cannot start on this host (try `ioi-run doctor`)")?;
    let temp_box;
    let box_dir = match &args.box_dir {
        Some(dir) => dir.clone(),
        None => {
            temp_box = crate::scratch::tempdir("box")?;
            let (uid, gid) = sandbox.box_owner();
            std::os::unix::fs::chown(temp_box.path(), Some(uid), Some(gid)).with_context(|| {
                format!(
                    "cannot give {} to the sandbox user",
                    temp_box.path().display()
                )
            })?;
            temp_box.path().to_path_buf()
        }
    };
    let mut spec = RunSpec::new(&box_dir, args.command.iter().cloned());
    for var in &args.env {
        let Some((k, v)) = var.split_once('=') else {
            bail!("--env {var:?}: expected NAME=VALUE")
        };
        spec.env.retain(|(name, _)| name != k);
        spec.env.push((k.to_string(), v.to_string()));
    }
    for dir in &args.dirs {
        spec.binds.push(parse_dir(dir)?);
    }
    spec.stdin = args.stdin.clone().map(Stdio::Path).unwrap_or(Stdio::Null);
    spec.stdout = args
        .stdout
        .clone()
        .map(Stdio::Path)
        .unwrap_or_else(|| inherit(1));
    spec.stderr = args
        .stderr
        .clone()
        .map(Stdio::Path)
        .unwrap_or_else(|| inherit(2));
    spec.limits = Limits {
        cpu_time: args.time,
        wall_time: args
            .wall_time
            .or(args.time.map(|t| t * 3 + Duration::from_secs(1))),
        memory: args.memory,
        processes: Some(args.processes),
        output_size: args.output_limit,
        ..Limits::default()
    };
    let outcome = sandbox.run(&spec);
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&outcome)?);
    } else {
        eprintln!(
            "status     {}",
            serde_json::to_value(outcome.status)?
                .as_str()
                .unwrap_or("?")
        );
        if let Some(code) = outcome.exit_code {
            eprintln!("exit code  {code}");
        }
        if let Some(sig) = outcome.signal {
            eprintln!("signal     {sig} ({})", ioi_sandbox::signal_name(sig));
        }
        eprintln!("cpu time   {:.3} s", outcome.cpu_time);
        eprintln!("wall time  {:.3} s", outcome.wall_time);
        eprintln!(
            "memory     {:.1} MiB",
            outcome.memory as f64 / (1 << 20) as f64
        );
        eprintln!("message    {}", outcome.message);
    }
    Ok(match outcome.status {
        ioi_sandbox::Status::Ok => 0,
        ioi_sandbox::Status::InternalError => 2,
        _ => 1,
    })
}

/// The caller's own stdout/stderr, shared with the program.
fn inherit(fd: i32) -> Stdio {
    use std::os::fd::{AsFd, OwnedFd};
    let dup = match fd {
        1 => std::io::stdout().as_fd().try_clone_to_owned(),
        _ => std::io::stderr().as_fd().try_clone_to_owned(),
    };
    dup.map(|d: OwnedFd| Stdio::Fd(std::sync::Arc::new(d)))
        .unwrap_or(Stdio::Null)
}

fn parse_dir(spec: &str) -> Result<Bind> {
    let parts: Vec<&str> = spec.split(':').collect();
    match parts.as_slice() {
        [host, inside] => Ok(Bind::read_only(host, inside)),
        [host, inside, "rw"] => Ok(Bind::writable(host, inside)),
        [host, inside, "ro"] => Ok(Bind::read_only(host, inside)),
        _ => bail!("--dir {spec:?}: expected HOST:INSIDE or HOST:INSIDE:rw"),
    }
}
