//! `ioi-run sandbox`: run one command in the sandbox and print its outcome; a keeper runs it
//! when one listens (see `crate::keeper`), this process otherwise.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::output::outln;
use crate::keeper::{absolute, run_here, RequestLimits, RunRequest};
use anyhow::{bail, Context, Result};
use ioi_sandbox::RunSpec;

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

/// Runs the command: handed to a keeper when one takes it, else here, once `settle` has set
/// the process up for running boxes.
pub fn run(args: Args, settle: impl FnOnce()) -> Result<i32> {
    check_arguments(&args).map_err(crate::error::usage)?;
    let request = request(&args).map_err(crate::error::usage)?;
    let outcome = match crate::keeper::hand_over(&request) {
        Some(outcome) => outcome?,
        None => {
            settle();
            run_here(&request)?
        }
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
        ioi_sandbox::Termination::InternalError => crate::error::HOST,
        _ => crate::error::NO,
    })
}

/// Every mistake in the arguments that can be seen before anything runs: it is the caller's to
/// fix (a usage error), never an `internal_error` outcome of the run.
fn check_arguments(args: &Args) -> Result<()> {
    if args.json && args.stdout.is_none() {
        bail!(
            "--json prints the outcome on stdout, where the program's own output goes too: give \
             --stdout FILE for the program's output, or write the outcome with --meta FILE"
        );
    }
    if let Some(bytes) = args.memory.filter(|&b| b < ioi_sandbox::MIN_MEMORY_LIMIT) {
        bail!(
            "--memory {bytes}: give a memory limit of at least {} MiB (e.g. 256M): no program \
             starts in less",
            ioi_sandbox::MIN_MEMORY_LIMIT >> 20
        );
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
    let request = request(args)?;
    for (host, inside, _) in &request.binds {
        if !host.exists() {
            bail!(
                "--dir {}:{}: {} does not exist",
                host.display(),
                inside.display(),
                host.display()
            );
        }
    }
    let mut env = RunSpec::new("/", ["true"]).env;
    for (name, value) in &request.env {
        env.retain(|(k, _)| k != name);
        env.push((name.clone(), value.clone()));
    }
    let path = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_str())
        .unwrap_or("");
    find_program(
        &args.command[0],
        request.box_dir.as_deref(),
        &request.binds,
        path,
    )
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

fn parse_dir(spec: &str) -> Result<(PathBuf, PathBuf, bool)> {
    let parts: Vec<&str> = spec.split(':').collect();
    let (host, inside, writable) = match parts.as_slice() {
        [host, inside] | [host, inside, "ro"] => (host, inside, false),
        [host, inside, "rw"] => (host, inside, true),
        _ => bail!("--dir {spec:?}: expected HOST:INSIDE or HOST:INSIDE:rw"),
    };
    Ok((absolute(Path::new(host))?, PathBuf::from(inside), writable))
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
    binds: &[(PathBuf, PathBuf, bool)],
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
fn host_path(
    inside: &str,
    box_dir: Option<&std::path::Path>,
    binds: &[(PathBuf, PathBuf, bool)],
) -> Option<PathBuf> {
    let inside = std::path::Path::new(inside);
    let absolute = match inside.is_absolute() {
        true => inside.to_path_buf(),
        false => std::path::Path::new(ioi_sandbox::BOX_PATH).join(inside),
    };
    // The last bind over a path wins, as the last mount does.
    for (host, bind_inside, _) in binds.iter().rev() {
        if let Ok(rest) = absolute.strip_prefix(bind_inside) {
            return Some(host.join(rest));
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
