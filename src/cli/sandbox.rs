//! `ioi-run sandbox`: run one command in the sandbox and print its outcome; a keeper runs it
//! when one listens (see `keeper`), this process otherwise.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::output::outln;
use super::run_request::{absolute, execute, RequestLimits, RunRequest};
use anyhow::{bail, Context, Result};
use ioi_sandbox::{Sandbox, SandboxOptions};

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
    /// Write stdout to this host file (default: ioi-run's own stdout, relayed through a pipe:
    /// the program never holds the caller's terminal, and --output-limit applies).
    #[arg(long)]
    stdout: Option<PathBuf>,
    /// Write stderr to this host file.
    #[arg(long)]
    stderr: Option<PathBuf>,
    /// Environment variable NAME=VALUE for the program (the environment is otherwise empty
    /// but for PATH).
    #[arg(long = "env", value_name = "NAME=VALUE")]
    env: Vec<String>,
    /// Print the outcome as JSON on stdout. The program's stdout must then go to a file
    /// (`--stdout`), so that the two never mix; `--meta` is the other way.
    #[arg(long)]
    json: bool,
    /// Write the outcome as JSON to this host file (as isolate's `--meta`), apart from
    /// anything the program prints.
    #[arg(long, value_name = "FILE")]
    meta: Option<PathBuf>,
    /// The command and its arguments (after `--`).
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

pub fn run(args: Args) -> Result<i32> {
    if args.json && args.stdout.is_none() {
        anyhow::bail!(
            "--json prints the outcome on stdout, where the program's own output goes too: give \
             --stdout FILE for the program's output, or write the outcome with --meta FILE"
        );
    }
    let request = request(&args)?;
    let outcome = match super::keeper::hand_over(&request) {
        Some(outcome) => outcome?,
        None => run_here(&request)?,
    };
    if let Some(meta) = &args.meta {
        let text = serde_json::to_string_pretty(&outcome)? + "\n";
        std::fs::write(meta, text)
            .with_context(|| format!("cannot write the outcome to {}", meta.display()))?;
    }
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
        ioi_sandbox::Termination::Ok => 0,
        ioi_sandbox::Termination::InternalError => 2,
        _ => 1,
    })
}

/// The run the arguments ask for, host paths absolute here (a keeper has its own working
/// directory).
fn request(args: &Args) -> Result<RunRequest> {
    let absolute = |path: &Option<PathBuf>| path.as_deref().map(absolute).transpose();
    let mut env: Vec<(String, String)> = Vec::new();
    for var in &args.env {
        let Some((k, v)) = var.split_once('=') else {
            bail!("--env {var:?}: expected NAME=VALUE")
        };
        env.retain(|(name, _)| name != k);
        env.push((k.to_string(), v.to_string()));
    }
    let binds = args
        .dirs
        .iter()
        .map(|dir| parse_dir(dir))
        .collect::<Result<Vec<_>>>()?;
    Ok(RunRequest {
        argv: args.command.clone(),
        env,
        binds,
        box_dir: absolute(&args.box_dir)?,
        stdin: absolute(&args.stdin)?,
        stdout: absolute(&args.stdout)?,
        stderr: absolute(&args.stderr)?,
        limits: RequestLimits {
            cpu_time: args.time,
            wall_time: args
                .wall_time
                .or(args.time.map(|t| t * 3 + Duration::from_secs(1))),
            memory: args.memory,
            processes: args.processes,
            output_size: args.output_limit,
        },
    })
}

/// Runs `request` in a sandbox of this process, started for this run alone.
fn run_here(request: &RunRequest) -> Result<ioi_sandbox::Outcome> {
    crate::scratch::sweep_stale();
    // One run: no box is built ahead (it would be built for nothing).
    let options = SandboxOptions {
        ready_boxes: 0,
        ..SandboxOptions::default()
    };
    let sandbox = Sandbox::new(options)
        .context("the sandbox cannot start on this host (try `ioi-run doctor`)")?;
    let dup = |fd| nix::unistd::dup(unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) });
    let out = dup(1).context("cannot duplicate stdout")?;
    let err = dup(2).context("cannot duplicate stderr")?;
    execute(&sandbox, request, out, err, None)
}

fn parse_dir(spec: &str) -> Result<(PathBuf, PathBuf, bool)> {
    let parts: Vec<&str> = spec.split(':').collect();
    let (host, inside, writable) = match parts.as_slice() {
        [host, inside] | [host, inside, "ro"] => (host, inside, false),
        [host, inside, "rw"] => (host, inside, true),
        _ => bail!("--dir {spec:?}: expected HOST:INSIDE or HOST:INSIDE:rw"),
    };
    Ok((absolute(Path::new(host))?, PathBuf::from(inside), writable))
}
