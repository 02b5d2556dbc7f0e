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
    crate::scratch::sweep_stale();
    // One run: no box is built ahead (it would be built for nothing).
    let options = SandboxOptions {
        ready_boxes: 0,
        ..SandboxOptions::default()
    };
    let sandbox = Sandbox::new(options)
        .context("the sandbox cannot start on this host (try `ioi-run doctor`)")?;
    let temp_box;
    let box_dir = match &args.box_dir {
        Some(dir) => dir.clone(),
        None => {
            temp_box = crate::scratch::tempdir("box")?;
            sandbox.give_to_box(temp_box.path())?;
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
    let mut relays = Vec::new();
    spec.stdout = match &args.stdout {
        Some(path) => Stdio::Path(path.clone()),
        None => {
            let (stdio, relay) = relay(Stream::Stdout, args.output_limit)?;
            relays.push(relay);
            stdio
        }
    };
    spec.stderr = match &args.stderr {
        Some(path) => Stdio::Path(path.clone()),
        None => {
            let (stdio, relay) = relay(Stream::Stderr, args.output_limit)?;
            relays.push(relay);
            stdio
        }
    };
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
    let mut outcome = sandbox.run(&spec);
    // Our copies of the pipes' write ends go with the spec: the relays then see end-of-file.
    drop(spec);
    let mut over_limit = false;
    for relay in relays {
        over_limit |= relay.join().unwrap_or(false);
    }
    if over_limit && outcome.status != ioi_sandbox::Termination::InternalError {
        // The relay stopped reading past the limit: whatever happened to the program next
        // (SIGPIPE, most often) is the output limit's doing.
        outcome.status = ioi_sandbox::Termination::OutputLimit;
        outcome.message = format!(
            "output limit exceeded (more than {} bytes written to a standard stream)",
            args.output_limit.unwrap_or(0)
        );
    }
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

#[derive(Clone, Copy)]
enum Stream {
    Stdout,
    Stderr,
}

/// A pipe whose write end is given to the program, and a thread copying what comes out to
/// ioi-run's own `stream`. The program never holds the caller's descriptor (a terminal
/// would let it inject keystrokes into the caller's shell), and `limit` applies to what it
/// writes, which RLIMIT_FSIZE does not do for a pipe: past the limit the relay closes its end
/// (the program gets SIGPIPE or EPIPE) and returns true.
fn relay(stream: Stream, limit: Option<u64>) -> Result<(Stdio, std::thread::JoinHandle<bool>)> {
    use std::io::{Read, Write};
    let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
        .context("cannot create a pipe for the program's output")?;
    let handle = std::thread::spawn(move || {
        let mut from = std::fs::File::from(read);
        let mut buf = vec![0u8; 64 << 10];
        let mut seen = 0u64;
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) => return false,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => return false,
            };
            let allowed = limit.map_or(n as u64, |l| l.saturating_sub(seen).min(n as u64));
            let chunk = &buf[..allowed as usize];
            let written = match stream {
                Stream::Stdout => {
                    let mut out = std::io::stdout().lock();
                    out.write_all(chunk).and_then(|_| out.flush())
                }
                Stream::Stderr => std::io::stderr().lock().write_all(chunk),
            };
            seen += n as u64;
            if limit.is_some_and(|l| seen > l) {
                return true;
            }
            if written.is_err() {
                // Our reader went away (`| head`): the program sees the same broken pipe.
                return false;
            }
        }
    });
    Ok((Stdio::Fd(std::sync::Arc::new(write)), handle))
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
