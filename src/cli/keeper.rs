//! `ioi-run keeper`: a resident process that runs `ioi-run sandbox` commands handed to it, so
//! that a command pays neither for the sandbox's start (cgroups, seccomp, a network namespace)
//! nor for building its box: the keeper's housekeeper builds boxes ahead of need.
//!
//! A command connects to the keeper's unix socket and sends its run (a [`RunRequest`], host
//! paths already absolute in the command's working directory) with its stdout and stderr as
//! descriptors (SCM_RIGHTS); the keeper relays the program's output to them as the command
//! would, and answers with the outcome, which the command prints. Who may hand runs over: only
//! processes of the keeper's own uid (SO_PEERCRED), through a socket of mode 0600 in a folder
//! closed to others. A command that hangs up mid-run has its box killed; a keeper that dies
//! mid-run takes its boxes along, and the command reports that the outcome is unknown.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};

use anyhow::{bail, Context, Result};
use ioi_sandbox::{Outcome, Sandbox, SandboxOptions};
use serde::{Deserialize, Serialize};

use super::run_request::{self, RunRequest};

/// Where a keeper listens unless told otherwise.
pub const DEFAULT_SOCKET: &str = "/run/ioi-run/keeper.sock";

/// Names the keeper's socket for `ioi-run sandbox`; set to an empty value, no keeper is asked.
pub const SOCKET_ENV: &str = "IOI_RUN_KEEPER";

/// The largest request a keeper reads (argv, environment and paths).
const MAX_REQUEST: usize = 1 << 20;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The unix socket to listen on (its folder is created closed to others).
    #[arg(long, default_value = DEFAULT_SOCKET)]
    socket: PathBuf,
    /// Runs at once; more clients wait (default: the cores).
    #[arg(long)]
    jobs: Option<usize>,
}

/// The keeper's answer to a request.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Answer {
    /// The run happened.
    Outcome(Outcome),
    /// The client may not hand runs over (another uid).
    Refused(String),
    /// The run could not start (a temporary folder, a FIFO).
    Failed(String),
}

pub fn run(args: Args) -> Result<i32> {
    // The socket's folder and another keeper are the caller's to fix.
    let listener = listen(&args.socket).map_err(crate::error::usage)?;
    crate::scratch::sweep_stale();
    let sandbox = Sandbox::new(SandboxOptions::default())
        .context("the sandbox cannot start on this host (try `ioi-run doctor`)")
        .map_err(crate::error::host)?;
    let jobs = args.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    let slots = Slots::new(jobs.max(1));
    let owner = nix::unistd::geteuid().as_raw();
    tracing::info!(socket = %args.socket.display(), jobs, "keeper listening");
    // A fixed set of threads take the clients, each one at a time, and keep their stacks and
    // allocator arenas from one client to the next (a thread per client would fault both in
    // anew, about 50 page faults a run). Clients past them wait in the listen queue, as clients
    // past the slots wait for a slot.
    let threads = 2 * jobs.max(1) + 2;
    std::thread::scope(|scope| {
        for _ in 0..threads {
            let (listener, sandbox, slots) = (&listener, &sandbox, &slots);
            scope.spawn(move || loop {
                match listener.accept() {
                    Ok((conn, _)) => serve(sandbox, slots, owner, conn),
                    // Out of descriptors, most often: a moment for runs to end.
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
                }
            });
        }
    });
    Ok(0)
}

/// Binds the socket, refusing when another keeper holds it: the lock beside the socket is held
/// for the keeper's life, so a socket found without its lock is stale and replaced.
fn listen(socket: &Path) -> Result<UnixListener> {
    let dir = match socket.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    if !dir.exists() {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the keeper's folder {}", dir.display()))?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .with_context(|| format!("cannot close {} to others", dir.display()))?;
    }
    let meta =
        std::fs::metadata(dir).with_context(|| format!("cannot inspect {}", dir.display()))?;
    let me = nix::unistd::geteuid().as_raw();
    if std::os::unix::fs::MetadataExt::uid(&meta) != me || meta.permissions().mode() & 0o077 != 0 {
        bail!(
            "the keeper's folder {} must be yours and closed to others (chmod 700): anyone who \
             can replace its socket could answer `ioi-run sandbox` with false outcomes",
            dir.display()
        );
    }
    let mut lock_name = socket.file_name().unwrap_or_default().to_os_string();
    lock_name.push(".lock");
    let lock_path = dir.join(lock_name);
    let lock_file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&lock_path)
        .with_context(|| format!("cannot open {}", lock_path.display()))?;
    let mut lock =
        match nix::fcntl::Flock::lock(lock_file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
            Ok(lock) => lock,
            Err((mut file, _)) => {
                let mut pid = String::new();
                let _ = file.read_to_string(&mut pid);
                bail!(
                    "a keeper already serves {} (pid {}): stop it before starting another",
                    socket.display(),
                    pid.trim()
                );
            }
        };
    lock.set_len(0)?;
    write!(lock, "{}", std::process::id())?;
    // Held until the process exits.
    std::mem::forget(lock);
    match std::fs::remove_file(socket) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(e).with_context(|| format!("cannot remove {}", socket.display()))
        }
        _ => {}
    }
    let listener = UnixListener::bind(socket)
        .with_context(|| format!("cannot listen on {}", socket.display()))?;
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600))
        .with_context(|| format!("cannot restrict {} to its owner", socket.display()))?;
    Ok(listener)
}

/// Runs at once, bounded: a client past the bound waits for a slot.
struct Slots {
    free: Mutex<usize>,
    freed: Condvar,
}

impl Slots {
    fn new(n: usize) -> Slots {
        Slots {
            free: Mutex::new(n),
            freed: Condvar::new(),
        }
    }

    fn take(&self) -> SlotGuard<'_> {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        while *free == 0 {
            free = self.freed.wait(free).unwrap_or_else(|e| e.into_inner());
        }
        *free -= 1;
        SlotGuard(self)
    }
}

struct SlotGuard<'a>(&'a Slots);

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        *self.0.free.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.0.freed.notify_one();
    }
}

/// One client: its credentials, its request, its run, its answer.
fn serve(sandbox: &Sandbox, slots: &Slots, owner: u32, mut conn: UnixStream) {
    let answer = match check_peer(&conn, owner) {
        Err(e) => {
            tracing::warn!("{e:#}");
            Answer::Refused(format!("{e:#}"))
        }
        Ok(()) => match receive_within(&conn, REQUEST_TIMEOUT) {
            Err(e) => Answer::Failed(format!("{e:#}")),
            Ok((request, out, err)) => {
                let slot = slots.take();
                let caller = conn.try_clone().map(|c| Arc::new(OwnedFd::from(c))).ok();
                // The slot is free once the box is gone, while the rest of the output is relayed.
                match run_request::execute(sandbox, &request, out, err, caller, || drop(slot)) {
                    Ok(outcome) => Answer::Outcome(outcome),
                    Err(e) => Answer::Failed(format!("{e:#}")),
                }
            }
        },
    };
    if let Ok(bytes) = serde_json::to_vec(&answer) {
        // A client gone is no error of the keeper's: its box is already killed.
        let _ = conn.write_all(&bytes);
    }
    drop(conn);
    // The next run's box folder, now that this client has its answer.
    run_request::make_spare_box(sandbox);
}

/// Accepts only a peer of the keeper's own uid: a keeper run by root must not run boxes, open
/// host files or write where another user asks.
fn check_peer(conn: &UnixStream, owner: u32) -> Result<()> {
    let creds = nix::sys::socket::getsockopt(conn, nix::sys::socket::sockopt::PeerCredentials)
        .context("cannot read the client's credentials")?;
    if creds.uid() != owner {
        bail!(
            "refused a client of uid {} (pid {}): this keeper serves uid {owner} only",
            creds.uid(),
            creds.pid()
        );
    }
    Ok(())
}

/// The longest a client may take to send its whole request once connected: a client that
/// sends nothing, or a byte now and then, holds one of the keeper's threads for no longer.
const REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// [`receive`], failing when the whole request has not come within `timeout`: every read waits
/// only for what is left of it.
fn receive_within(
    conn: &UnixStream,
    timeout: std::time::Duration,
) -> Result<(RunRequest, OwnedFd, OwnedFd)> {
    let deadline = std::time::Instant::now() + timeout;
    let request = receive(conn, deadline);
    conn.set_read_timeout(None)?;
    request
}

/// Sets the read timeout of `conn` to what is left until `deadline`; an error once it passed.
fn until(conn: &UnixStream, deadline: std::time::Instant) -> Result<()> {
    let left = deadline.saturating_duration_since(std::time::Instant::now());
    if left.is_zero() {
        bail!("cannot read the request: it did not come whole within {REQUEST_TIMEOUT:?}");
    }
    conn.set_read_timeout(Some(left))
        .context("cannot set the request's deadline")
}

/// Reads a request: its length (4 bytes, little-endian) and its JSON, with the client's stdout
/// and stderr attached to the first bytes.
fn receive(
    conn: &UnixStream,
    deadline: std::time::Instant,
) -> Result<(RunRequest, OwnedFd, OwnedFd)> {
    use nix::sys::socket::{recvmsg, ControlMessageOwned, MsgFlags};
    until(conn, deadline)?;
    let mut buf = vec![0u8; 64 << 10];
    let mut cmsg = nix::cmsg_space!([RawFd; 2]);
    let (n, fds) = {
        let mut iov = [std::io::IoSliceMut::new(&mut buf)];
        let msg = recvmsg::<()>(
            conn.as_raw_fd(),
            &mut iov,
            Some(&mut cmsg),
            MsgFlags::MSG_CMSG_CLOEXEC,
        )
        .context("cannot read the request")?;
        let mut fds = Vec::new();
        for c in msg
            .cmsgs()
            .context("cannot read the request's descriptors")?
        {
            if let ControlMessageOwned::ScmRights(received) = c {
                // SAFETY: the kernel just installed these descriptors in our table for us.
                fds.extend(
                    received
                        .into_iter()
                        .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }),
                );
            }
        }
        (msg.bytes, fds)
    };
    let [out, err]: [OwnedFd; 2] = fds
        .try_into()
        .map_err(|_| anyhow::anyhow!("the request must come with two descriptors"))?;
    let mut bytes = buf[..n].to_vec();
    let mut conn = conn;
    while bytes.len() < 4 {
        until(conn, deadline)?;
        read_more(&mut conn, &mut bytes)?;
    }
    let len = u32::from_le_bytes(bytes[..4].try_into()?) as usize;
    if len > MAX_REQUEST {
        bail!("request of {len} bytes: at most {MAX_REQUEST}");
    }
    while bytes.len() < 4 + len {
        until(conn, deadline)?;
        read_more(&mut conn, &mut bytes)?;
    }
    let request = serde_json::from_slice(&bytes[4..4 + len]).context("unreadable request")?;
    Ok((request, out, err))
}

fn read_more(conn: &mut &UnixStream, bytes: &mut Vec<u8>) -> Result<()> {
    let mut chunk = [0u8; 64 << 10];
    let n = match conn.read(&mut chunk) {
        Ok(n) => n,
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            bail!("cannot read the request: it did not come whole within {REQUEST_TIMEOUT:?}")
        }
        Err(e) => return Err(e).context("cannot read the request"),
    };
    if n == 0 {
        bail!("the client hung up before its request was whole");
    }
    bytes.extend_from_slice(&chunk[..n]);
    Ok(())
}

/// The keeper's socket for this command, unless [`SOCKET_ENV`] is set empty.
fn socket_path() -> Option<PathBuf> {
    match std::env::var_os(SOCKET_ENV) {
        Some(path) if path.is_empty() => None,
        Some(path) => Some(PathBuf::from(path)),
        None => Some(PathBuf::from(DEFAULT_SOCKET)),
    }
}

/// Hands `request` to a keeper, with this process's stdout and stderr. `None` when no keeper
/// takes it (no socket, a stale one, a refusal): nothing ran, the caller runs it itself.
pub fn hand_over(request: &RunRequest) -> Option<Result<Outcome>> {
    let path = socket_path()?;
    let mut conn = UnixStream::connect(&path).ok()?;
    send(&conn, request).ok()?;
    // The answer is one JSON object, taken as soon as its last byte arrives (the keeper closes
    // the connection only after that, when its thread ends).
    let answer = serde_json::Deserializer::from_reader(std::io::BufReader::new(&mut conn))
        .into_iter::<Answer>()
        .next()
        .and_then(|answer| answer.ok());
    match answer {
        Some(Answer::Outcome(outcome)) => Some(Ok(outcome)),
        Some(Answer::Refused(_)) => None,
        Some(Answer::Failed(message)) => Some(Err(crate::error::host(anyhow::anyhow!(
            "the keeper at {} could not run the command: {message}",
            path.display()
        )))),
        None => Some(Err(crate::error::host(anyhow::anyhow!(
            "the keeper at {} stopped before the run ended: its outcome is unknown (the box \
             died with the keeper)",
            path.display()
        )))),
    }
}

fn send(conn: &UnixStream, request: &RunRequest) -> Result<()> {
    use nix::sys::socket::{sendmsg, ControlMessage, MsgFlags};
    let json = serde_json::to_vec(request)?;
    let mut bytes = (json.len() as u32).to_le_bytes().to_vec();
    bytes.extend_from_slice(&json);
    let fds = [1, 2];
    let sent = sendmsg::<()>(
        conn.as_raw_fd(),
        &[std::io::IoSlice::new(&bytes)],
        &[ControlMessage::ScmRights(&fds)],
        MsgFlags::empty(),
        None,
    )?;
    let mut conn = conn;
    conn.write_all(&bytes[sent..])?;
    Ok(())
}

/// The fuzzer of the integration tests, for the request decoder, which is private to the binary.
#[cfg(test)]
#[allow(dead_code)]
#[path = "../../tests/common/fuzz.rs"]
mod fuzz_engine;

#[cfg(test)]
mod tests {
    use super::*;
    use fuzz_engine as fuzz;

    /// Fuzz target of a keeper's request (docs/threat-model.md#fuzzing): any bytes, with the
    /// two descriptors, give a request or an error, never a panic or a wait past the deadline
    /// (the sender hangs up after its bytes).
    #[test]
    fn fuzz_keeper_requests() {
        use nix::sys::socket::{sendmsg, ControlMessage, MsgFlags};
        fuzz::run("keeper_request", |json| {
            let (a, b) = UnixStream::pair().unwrap();
            let mut bytes = (json.len() as u32).to_le_bytes().to_vec();
            bytes.extend_from_slice(json);
            let fds = [1, 2];
            let sent = sendmsg::<()>(
                a.as_raw_fd(),
                &[std::io::IoSlice::new(&bytes[..bytes.len().min(4096)])],
                &[ControlMessage::ScmRights(&fds)],
                MsgFlags::empty(),
                None,
            )
            .unwrap();
            let rest = bytes[sent..].to_vec();
            let sender = std::thread::spawn(move || {
                let mut a = a;
                let _ = a.write_all(&rest);
            });
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            let _ = receive(&b, deadline);
            drop(b);
            sender.join().unwrap();
        });
    }

    #[test]
    fn a_peer_of_another_uid_is_refused() {
        let (a, _b) = UnixStream::pair().unwrap();
        let me = nix::unistd::geteuid().as_raw();
        check_peer(&a, me).unwrap();
        let err = check_peer(&a, me.wrapping_add(1)).unwrap_err().to_string();
        assert!(
            err.contains(&format!("refused a client of uid {me}")),
            "{err}"
        );
    }

    #[test]
    fn a_request_crosses_the_socket_with_its_streams() {
        let (a, b) = UnixStream::pair().unwrap();
        let request = RunRequest {
            argv: vec!["/bin/echo".into(), "x".repeat(100_000)],
            env: vec![("A".into(), "1".into())],
            binds: vec![("/usr".into(), "/opt".into(), false)],
            box_dir: None,
            stdin: Some("/etc/hostname".into()),
            stdout: None,
            stderr: None,
            limits: run_request::RequestLimits {
                cpu_time: Some(std::time::Duration::from_millis(1500)),
                wall_time: None,
                memory: Some(64 << 20),
                processes: 8,
                output_size: None,
            },
        };
        let sender = std::thread::spawn(move || send(&a, &request).map(|_| request));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let (got, out, err) = receive(&b, deadline).unwrap();
        assert_eq!(got, sender.join().unwrap().unwrap());
        assert!(out.as_raw_fd() > 2 && err.as_raw_fd() > 2);
    }
}
