//! Serving clients: the keeper's socket (one keeper per socket, closed to others), the peer
//! check, the run slots, and one client's request, run and answer.

use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};

use anyhow::{bail, Context, Result};
use ioi_sandbox::{Sandbox, SandboxOptions};

use super::execute::{execute, make_spare_box};
use super::protocol::{receive_within, Answer, REQUEST_TIMEOUT};

/// Serves the clients of `socket` for ever, `jobs` runs at once (default: the cores).
pub fn serve(socket: &Path, jobs: Option<usize>) -> Result<()> {
    // The socket's folder and another keeper are the caller's to fix.
    let listener = listen(socket).map_err(crate::error::usage)?;
    crate::scratch::sweep_stale();
    let sandbox = Sandbox::new(SandboxOptions::default())
        .context("the sandbox cannot start on this host (try `ioi-run doctor`)")
        .map_err(crate::error::host)?;
    let jobs = jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    let slots = Slots::new(jobs.max(1));
    let owner = nix::unistd::geteuid().as_raw();
    tracing::info!(socket = %socket.display(), jobs, "keeper listening");
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
                    Ok((conn, _)) => serve_client(sandbox, slots, owner, conn),
                    // Out of descriptors, most often: a moment for runs to end.
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
                }
            });
        }
    });
    Ok(())
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
fn serve_client(sandbox: &Sandbox, slots: &Slots, owner: u32, mut conn: UnixStream) {
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
                match execute(sandbox, &request, out, err, caller, || drop(slot)) {
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
    make_spare_box(sandbox);
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
