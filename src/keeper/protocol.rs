//! The wire between `ioi-run sandbox` and a keeper: one [`RunRequest`] in, one
//! [`Answer`] back. A request is its length (4 bytes, little-endian) and its JSON, with the
//! client's stdout and stderr attached to the first bytes as descriptors (SCM_RIGHTS); the
//! answer is one JSON object, after which the keeper closes the connection. The keeper reads a
//! request of at most [`MAX_REQUEST`] bytes, whole within [`REQUEST_TIMEOUT`].

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use ioi_sandbox::Outcome;
use serde::{Deserialize, Serialize};

/// One `ioi-run sandbox` run as data: what the command line asks for, with every host path made
/// absolute in the caller's working directory, so that the run means the same whether the
/// command runs it itself or hands it to a keeper that lives elsewhere.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRequest {
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
    /// Host path, path inside, writable.
    pub binds: Vec<(PathBuf, PathBuf, bool)>,
    /// The box directory; `None`: a fresh temporary one.
    pub box_dir: Option<PathBuf>,
    pub stdin: Option<PathBuf>,
    /// `None`: relayed to the caller's stdout.
    pub stdout: Option<PathBuf>,
    /// `None`: relayed to the caller's stderr.
    pub stderr: Option<PathBuf>,
    pub limits: RequestLimits,
}

/// The limits `ioi-run sandbox` sets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestLimits {
    pub cpu_time: Option<Duration>,
    pub wall_time: Option<Duration>,
    pub memory: Option<u64>,
    pub processes: u64,
    pub output_size: Option<u64>,
}

/// `path` made absolute in this process's working directory (not resolved further: a symlink
/// is followed by whoever opens it, as it would be here).
pub fn absolute(path: &Path) -> Result<PathBuf> {
    std::path::absolute(path).with_context(|| format!("cannot resolve {}", path.display()))
}

/// The largest request a keeper reads (argv, environment and paths).
const MAX_REQUEST: usize = 1 << 20;

/// The longest a client may take to send its whole request once connected: a client that
/// sends nothing, or a byte now and then, holds one of the keeper's threads for no longer.
pub(super) const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// The keeper's answer to a request.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Answer {
    /// The run happened.
    Outcome(Outcome),
    /// The client may not hand runs over (another uid).
    Refused(String),
    /// The run could not start (a temporary folder, a FIFO).
    Failed(String),
}

/// [`receive`], failing when the whole request has not come within `timeout`: every read waits
/// only for what is left of it.
pub(super) fn receive_within(
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

/// Sends `request` with this process's stdout and stderr.
pub(super) fn send(conn: &UnixStream, request: &RunRequest) -> Result<()> {
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

/// The fuzzer of the integration tests, for the request decoder, which is private to the library.
#[cfg(test)]
#[allow(dead_code)]
#[path = "../../tests/it/common/fuzz.rs"]
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
            limits: RequestLimits {
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
