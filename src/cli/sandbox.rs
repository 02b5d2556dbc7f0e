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
    let binds = check_arguments(&args).map_err(crate::error::usage)?;
    crate::scratch::sweep_stale();
    // One run: no box is built ahead (it would be built for nothing).
    let options = SandboxOptions {
        ready_boxes: 0,
        ..SandboxOptions::default()
    };
    let sandbox = Sandbox::new(options)
        .context("the sandbox cannot start on this host (try `ioi-run doctor`)")
        .map_err(crate::error::host)?;
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
    spec.env = environment(&args.env)?;
    spec.binds = binds;
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
        ioi_sandbox::Termination::InternalError => crate::error::HOST,
        _ => crate::error::NO,
    })
}

/// Every mistake in the arguments that can be seen before anything runs: it is the caller's to
/// fix (a usage error), never an `internal_error` outcome of the run. Returns the `--dir` binds.
fn check_arguments(args: &Args) -> Result<Vec<Bind>> {
    if args.json && args.stdout.is_none() {
        bail!(
            "--json prints the outcome on stdout, where the program's own output goes too: give \
             --stdout FILE for the program's output, or write the outcome with --meta FILE"
        );
    }
    if args.memory == Some(0) {
        bail!("--memory 0: give a memory limit of at least 1 byte (e.g. 256M)");
    }
    if args.processes == 0 {
        bail!("--processes 0: the program itself is a process; give at least 1");
    }
    if let Some(dir) = &args.box_dir {
        if dir.is_file() {
            bail!("--box {}: a file; the box is a folder", dir.display());
        }
        if !dir.is_dir() {
            bail!(
                "--box {}: no such folder (the box is a folder on this host, mounted at /box)",
                dir.display()
            );
        }
        std::fs::read_dir(dir)
            .with_context(|| format!("--box {}: cannot read the folder", dir.display()))?;
    }
    if let Some(stdin) = &args.stdin {
        std::fs::File::open(stdin)
            .with_context(|| format!("--stdin {}: cannot open the file", stdin.display()))?;
        if stdin.is_dir() {
            bail!("--stdin {}: a folder, not a file", stdin.display());
        }
    }
    for (flag, path) in [
        ("--stdout", &args.stdout),
        ("--stderr", &args.stderr),
        ("--meta", &args.meta),
    ] {
        if let Some(path) = path {
            writable_file(flag, path)?;
        }
    }
    let binds = args
        .dirs
        .iter()
        .map(|d| parse_dir(d))
        .collect::<Result<Vec<Bind>>>()?;
    for bind in &binds {
        if !bind.host.exists() {
            bail!(
                "--dir {}:{}: {} does not exist",
                bind.host.display(),
                bind.inside.display(),
                bind.host.display()
            );
        }
    }
    let env = environment(&args.env)?;
    let path = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_str())
        .unwrap_or("");
    find_program(&args.command[0], args.box_dir.as_deref(), &binds, path)?;
    Ok(binds)
}

/// A file the outcome or a stream can be written to: its folder must exist, and it must not be
/// a folder itself.
fn writable_file(flag: &str, path: &std::path::Path) -> Result<()> {
    if path.is_dir() {
        bail!("{flag} {}: a folder, not a file", path.display());
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => std::path::Path::new("."),
    };
    if !parent.is_dir() {
        bail!(
            "{flag} {}: no such folder {}",
            path.display(),
            parent.display()
        );
    }
    Ok(())
}

/// The program's environment: `PATH` and the `--env` variables.
fn environment(vars: &[String]) -> Result<Vec<(String, String)>> {
    let mut env = RunSpec::new("/", ["true"]).env;
    for var in vars {
        let Some((k, v)) = var.split_once('=') else {
            bail!("--env {var:?}: expected NAME=VALUE")
        };
        env.retain(|(name, _)| name != k);
        env.push((k.to_string(), v.to_string()));
    }
    Ok(env)
}

/// Folders of the host that every box sees at the same path (read-only).
const SYSTEM_DIRS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
];

/// Checks that `program` names an executable file the box will see: a path inside the box
/// (`./a.out` is in the box folder, the working folder), in a `--dir`, in the host's system
/// folders, or a name found in `PATH`. Without this, a typo would only show as the program's
/// exit code 127.
fn find_program(
    program: &str,
    box_dir: Option<&std::path::Path>,
    binds: &[Bind],
    path: &str,
) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let candidates: Vec<String> = if program.contains('/') {
        vec![program.to_string()]
    } else {
        path.split(':')
            .filter(|d| !d.is_empty())
            .map(|d| format!("{}/{program}", d.trim_end_matches('/')))
            .collect()
    };
    let mut not_executable = None;
    for inside in &candidates {
        let Some(host) = host_path(inside, box_dir, binds) else {
            continue;
        };
        match std::fs::metadata(&host) {
            Ok(m) if m.is_file() && m.permissions().mode() & 0o111 != 0 => return Ok(()),
            Ok(m) if m.is_file() => not_executable = Some(host),
            _ => {}
        }
    }
    if let Some(host) = not_executable {
        bail!(
            "{program}: {} is not executable (chmod +x it)",
            host.display()
        );
    }
    let where_ = match (program.contains('/'), box_dir) {
        (false, _) => format!("not found in PATH ({path}) as the box sees it"),
        (true, None) if !program.starts_with('/') || program.starts_with("/box/") => {
            "no such file: without --box the box is a fresh empty folder (give --box FOLDER, \
             e.g. --box . for the current folder)"
                .to_string()
        }
        (true, Some(dir)) if !program.starts_with('/') || program.starts_with("/box/") => {
            format!("no such file in the box folder {}", dir.display())
        }
        (true, _) => "no such file inside the box (it sees the box at /box, the host's /usr, \
                      /bin, /lib*, and the folders given with --dir)"
            .to_string(),
    };
    bail!("{program}: {where_}")
}

/// Where a path inside the box is on the host, or `None` when the box does not see it.
fn host_path(inside: &str, box_dir: Option<&std::path::Path>, binds: &[Bind]) -> Option<PathBuf> {
    let inside = std::path::Path::new(inside);
    let absolute = match inside.is_absolute() {
        true => inside.to_path_buf(),
        false => std::path::Path::new(ioi_sandbox::BOX_PATH).join(inside),
    };
    // The last bind over a path wins, as the last mount does.
    for bind in binds.iter().rev() {
        if let Ok(rest) = absolute.strip_prefix(&bind.inside) {
            return Some(bind.host.join(rest));
        }
    }
    if let Ok(rest) = absolute.strip_prefix(ioi_sandbox::BOX_PATH) {
        return box_dir.map(|dir| dir.join(rest));
    }
    SYSTEM_DIRS
        .iter()
        .any(|d| absolute.starts_with(d))
        .then_some(absolute)
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
