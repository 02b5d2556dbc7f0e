//! Running a [`RunRequest`]: in the keeper's sandbox, or in one the command starts for itself
//! when no keeper takes it, with the program's output relayed to the caller's streams under the
//! output limit.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use ioi_sandbox::{Bind, Limits, Outcome, RunSpec, Sandbox, SandboxOptions, Stdio, Termination};

use super::protocol::RunRequest;

/// Runs `request` in a sandbox of this process, started for this run alone, with this
/// process's stdout and stderr.
pub fn run_here(request: &RunRequest) -> Result<Outcome> {
    crate::scratch::sweep_stale();
    // One run: no box is built ahead (it would be built for nothing).
    let options = SandboxOptions {
        ready_boxes: 0,
        ..SandboxOptions::default()
    };
    let sandbox = Sandbox::new(options)
        .context("the sandbox cannot start on this host (try `ioi-run doctor`)")
        .map_err(crate::error::host)?;
    let dup = |fd| nix::unistd::dup(unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) });
    let out = dup(1).context("cannot duplicate stdout")?;
    let err = dup(2).context("cannot duplicate stderr")?;
    execute(&sandbox, request, out, err, None, || {})
}

/// Runs `request` in `sandbox`. `out` and `err` are the caller's stdout and stderr, where the
/// relays write; `caller`, when the run is a keeper's, is the connection whose hang-up kills it
/// and stops its relays. `run_over` is called once the box is gone, before the last of the
/// output is relayed.
pub fn execute(
    sandbox: &Sandbox,
    request: &RunRequest,
    out: OwnedFd,
    err: OwnedFd,
    caller: Option<Arc<OwnedFd>>,
    run_over: impl FnOnce(),
) -> Result<Outcome> {
    let mut temp_box = None;
    let box_dir = match &request.box_dir {
        Some(dir) => dir.clone(),
        None => temp_box.insert(fresh_box(sandbox)?).path().to_path_buf(),
    };
    let mut spec = RunSpec::new(&box_dir, request.argv.iter().cloned());
    for (name, value) in &request.env {
        spec.env.retain(|(k, _)| k != name);
        spec.env.push((name.clone(), value.clone()));
    }
    for (host, inside, writable) in &request.binds {
        spec.binds.push(match writable {
            true => Bind::writable(host, inside),
            false => Bind::read_only(host, inside),
        });
    }
    spec.stdin = request
        .stdin
        .clone()
        .map(Stdio::Path)
        .unwrap_or(Stdio::Null);
    let limit = request.limits.output_size;
    // The FIFOs' folder, made for the first stream relayed.
    let mut fifos = None;
    let mut relays = Vec::new();
    spec.stdout = match &request.stdout {
        Some(path) => Stdio::Path(path.clone()),
        None if discarded(&out, limit) => Stdio::Null,
        None => relay(
            fifo(&mut fifos, "stdout")?,
            out,
            limit,
            &caller,
            &mut relays,
        )?,
    };
    spec.stderr = match &request.stderr {
        Some(path) => Stdio::Path(path.clone()),
        None if discarded(&err, limit) => Stdio::Null,
        None => relay(
            fifo(&mut fifos, "stderr")?,
            err,
            limit,
            &caller,
            &mut relays,
        )?,
    };
    let limits = &request.limits;
    spec.limits = Limits {
        cpu_time: limits.cpu_time,
        wall_time: limits.wall_time,
        memory: limits.memory,
        processes: Some(limits.processes),
        output_size: limits.output_size,
        ..Limits::default()
    };
    spec.caller = caller;
    let mut outcome = sandbox.run(&spec);
    run_over();
    // Every process of the box is gone: once our own write ends close, the relays see
    // end-of-file after the last byte the program wrote.
    let mut over_limit = false;
    for (writer, handle) in relays {
        drop(writer);
        over_limit |= handle.join().unwrap_or(false);
    }
    // Removed off the caller's path (a keeper answers first; a command waits before it exits).
    for dir in temp_box.into_iter().chain(fifos) {
        crate::scratch::remove_later(dir);
    }
    if over_limit && outcome.status != Termination::InternalError {
        // The relay stopped reading past the limit: whatever happened to the program next
        // (SIGPIPE, most often) is the output limit's doing.
        outcome.status = Termination::OutputLimit;
        outcome.message = format!(
            "output limit exceeded (more than {} bytes written to a standard stream)",
            limit.unwrap_or(0)
        );
    }
    Ok(outcome)
}

/// A box folder made ahead by [`make_spare_box`], for the next run without `--box`.
static SPARE_BOX: std::sync::Mutex<Option<tempfile::TempDir>> = std::sync::Mutex::new(None);

/// Makes the box folder of the next run without `--box` now, off its path (a keeper does, once
/// it has answered a client).
pub(super) fn make_spare_box(sandbox: &Sandbox) {
    let Ok(mut spare) = SPARE_BOX.lock() else {
        return;
    };
    if spare.is_none() {
        *spare = new_box(sandbox).ok();
    }
}

/// A fresh temporary box folder, given to the sandbox user: the spare when there is one.
fn fresh_box(sandbox: &Sandbox) -> Result<tempfile::TempDir> {
    match SPARE_BOX.lock().ok().and_then(|mut spare| spare.take()) {
        Some(dir) => Ok(dir),
        None => new_box(sandbox),
    }
}

fn new_box(sandbox: &Sandbox) -> Result<tempfile::TempDir> {
    let dir = crate::scratch::tempdir("box")?;
    sandbox.give_to_box(dir.path())?;
    Ok(dir)
}

/// Whether the caller's stream `to` is `/dev/null` and no output limit is set: then the box
/// writes to its own `/dev/null` and nothing is relayed (with a limit, the relay still counts
/// the bytes, so that the limit is enforced whatever the caller does with them).
fn discarded(to: &OwnedFd, limit: Option<u64>) -> bool {
    // Linux's null device is character device 1:3 (Documentation/admin-guide/devices.txt).
    limit.is_none()
        && nix::sys::stat::fstat(to).is_ok_and(|stream| {
            stream.st_mode & libc::S_IFMT == libc::S_IFCHR && stream.st_rdev == libc::makedev(1, 3)
        })
}

/// The path of FIFO `name` in `folder`, made when it is the first.
fn fifo(folder: &mut Option<tempfile::TempDir>, name: &str) -> Result<PathBuf> {
    let folder = match folder {
        Some(folder) => folder,
        None => folder.insert(crate::scratch::tempdir("fifos")?),
    };
    Ok(folder.path().join(name))
}

/// A relay: its write end held until the run is over, and the thread copying to the caller.
type Relay = (OwnedFd, std::thread::JoinHandle<bool>);

/// A FIFO at `path` (in a folder private to this process) that the program writes to, and a
/// thread copying what comes out to `to`, the caller's stream. The program never holds the
/// caller's descriptor (a terminal would let it inject keystrokes into the caller's shell), and
/// `limit` applies to what it writes, which RLIMIT_FSIZE does not do for a FIFO: past the limit
/// the relay closes its end (the program gets SIGPIPE or EPIPE) and returns true. A FIFO, not a
/// pipe: the box opens it by name, so a box built ahead of the run serves it.
///
/// A keeper's relay also stops when its caller hangs up: a killed client whose stdout pipe
/// nobody reads must not hold the relay (and its client thread) for ever.
fn relay(
    path: PathBuf,
    to: OwnedFd,
    limit: Option<u64>,
    caller: &Option<Arc<OwnedFd>>,
    relays: &mut Vec<Relay>,
) -> Result<Stdio> {
    use nix::fcntl::{fcntl, open, FcntlArg, OFlag};
    use nix::sys::stat::Mode;
    nix::unistd::mkfifo(&path, Mode::from_bits_truncate(0o600))
        .with_context(|| format!("cannot create the FIFO {}", path.display()))?;
    // The read end first (a write end opens only once one exists), then a write end of our own:
    // the relay must not see end-of-file before the program opens the FIFO.
    let read = open(
        &path,
        OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .with_context(|| format!("cannot open the FIFO {}", path.display()))?;
    let write = open(&path, OFlag::O_WRONLY | OFlag::O_CLOEXEC, Mode::empty())
        .with_context(|| format!("cannot open the FIFO {}", path.display()))?;
    fcntl(&read, FcntlArg::F_SETFL(OFlag::empty())).context("cannot make the FIFO blocking")?;
    let caller = caller.clone();
    let handle = std::thread::spawn(move || {
        let mut from = std::fs::File::from(read);
        let mut to = Destination::new(to, caller);
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
            let written = to.write_all(&buf[..allowed as usize]);
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
    relays.push((write, handle));
    Ok(Stdio::Existing(path))
}

/// The caller's stream a relay writes to. A keeper's caller may die and leave its stdout pipe
/// to a reader that never reads: writes to a pipe or socket then wait, in pieces the stream
/// takes without blocking, until it is writable or the caller has hung up.
struct Destination {
    to: std::fs::File,
    /// The keeper's connection to the caller, when the stream may block (a pipe or socket).
    watch: Option<Arc<OwnedFd>>,
}

impl Destination {
    fn new(to: OwnedFd, caller: Option<Arc<OwnedFd>>) -> Destination {
        let blocks = nix::sys::stat::fstat(&to).is_ok_and(|stream| {
            matches!(
                stream.st_mode & libc::S_IFMT,
                libc::S_IFIFO | libc::S_IFSOCK
            )
        });
        Destination {
            to: std::fs::File::from(to),
            watch: caller.filter(|_| blocks),
        }
    }

    fn write_all(&mut self, mut bytes: &[u8]) -> std::io::Result<()> {
        let Some(watch) = &self.watch else {
            return self.to.write_all(bytes);
        };
        while !bytes.is_empty() {
            // libc's poll: nix drops every flag of an event it does not name (POLLRDHUP).
            let mut fds = [
                libc::pollfd {
                    fd: self.to.as_raw_fd(),
                    events: libc::POLLOUT,
                    revents: 0,
                },
                libc::pollfd {
                    fd: watch.as_raw_fd(),
                    events: libc::POLLRDHUP,
                    revents: 0,
                },
            ];
            // SAFETY: poll(2) on two descriptors this relay holds open, the array ours.
            if unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) } < 0 {
                let error = std::io::Error::last_os_error();
                if error.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(error);
            }
            if fds[1].revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0 {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::BrokenPipe,
                    "the caller hung up",
                ));
            }
            if fds[0].revents != 0 {
                // A pipe that polls writable takes PIPE_BUF bytes without blocking; an error
                // (the reader gone) is the write's to report.
                let n = self.to.write(&bytes[..bytes.len().min(libc::PIPE_BUF)])?;
                bytes = &bytes[n..];
            }
        }
        Ok(())
    }
}
