//! The command's side: hands a [`RunRequest`] to the keeper named by [`SOCKET_ENV`] (or at
//! [`DEFAULT_SOCKET`]) and takes its answer.

use std::os::unix::net::UnixStream;
use std::path::PathBuf;

use anyhow::Result;
use ioi_sandbox::Outcome;

use super::protocol::{send, Answer, RunRequest};
use super::{DEFAULT_SOCKET, SOCKET_ENV};

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
