//! The conversation of a Communication test, captured for someone debugging it (`judge`,
//! docs/debugging.md#the-conversation).
//!
//! The manager and the user processes talk through FIFOs the kernel connects directly: nothing
//! in between sees a byte. To show what they said, the judge relays every byte itself: each
//! user process gets FIFOs of its own, named as the manager's, and two threads of the judge
//! copy between the two sides, one a direction, keeping the last [`TAIL_BYTES`] of each
//! direction and the end of the conversation in the order the bytes passed. A fifo_io user
//! process's standard output, which nobody reads, goes into a pipe the judge drains, keeping
//! its first [`STDOUT_HEAD_BYTES`] and counting the rest. Everything kept is bounded, whatever
//! a program writes.
//!
//! A relay is only as faithful as its copies, so it keeps what the processes can observe:
//! - an `open` blocks until the relay has opened the other side: each relay thread opens the
//!   side it reads from first (blocking until its writer opens), then the side it writes to
//!   (blocking until its reader opens), so a process whose counterpart never opens its FIFO
//!   still blocks, at most one `open` later than on one FIFO;
//! - the end of file and a closed reader pass through: a writer's close ends the copy and
//!   closes the other side, and a reader gone (`POLLERR` on the side written to) closes the
//!   side read from, so the writer gets its `SIGPIPE` at its next write;
//! - a writer blocks after as many unread bytes as on one FIFO (64 KiB): the manager's FIFO
//!   holds 32 KiB, the user's 16 KiB, and a copy in flight at most [`CHUNK`];
//! - the relay runs in the judge, outside every process's cgroup, and on the test's CPU
//!   (docs/judging.md#cpu-placement) so that a message wakes it without an interrupt charged
//!   to the writer. Its wake-ups still cost the processes: measured on a loaded 2-core
//!   machine, a process of 10⁵ round trips was charged 0.23-0.32 s of CPU relayed against
//!   0.19-0.25 s direct.
//!
//! What it adds is latency: every message takes one more wake-up on the way, and the judge's
//! threads are not among the processes whose waits for a CPU the sandbox forgives. So no
//! verdict comes from a relayed run: tests are judged with their processes connected
//! directly, and `judge` relays a second run of the tests it explains
//! ([`super::native::replay`]) and of `--input` (where nothing is judged).

use std::collections::VecDeque;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::Mutex;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

/// The last bytes of each direction kept, per user process.
pub const TAIL_BYTES: usize = 64 << 10;
/// The first bytes kept of what a process wrote where nobody reads.
pub const STDOUT_HEAD_BYTES: usize = 4 << 10;
/// Bytes of the conversation kept in the order they passed (both directions, every process),
/// and the most turns they are cut into.
pub const TURN_BYTES: usize = 64 << 10;
const MAX_TURNS: usize = 4096;
/// One copy: the most a relay holds between its two FIFOs.
const CHUNK: usize = 16 << 10;
/// The capacity of the manager's FIFOs and of the user's, relayed: with [`CHUNK`], the 64 KiB
/// of one FIFO.
const MANAGER_PIPE: i32 = 32 << 10;
const USER_PIPE: i32 = 16 << 10;

/// Who wrote the bytes of a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// The user process, to the manager.
    ToManager,
    /// The manager, to the user process.
    ToProcess,
}

/// Bytes one side wrote without the other writing in between.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    pub process: usize,
    pub direction: Direction,
    /// The bytes, decoded lossily.
    pub text: String,
}

/// What one user process said and heard.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessTalk {
    /// Bytes it sent the manager, and bytes the manager sent it.
    pub sent_bytes: u64,
    pub received_bytes: u64,
    /// Bytes it wrote to its standard output where nobody reads it (fifo_io), and the first
    /// [`STDOUT_HEAD_BYTES`] of them, decoded lossily.
    pub unread_stdout_bytes: u64,
    pub unread_stdout_head: String,
}

/// A test's conversation as `judge` keeps it (`<test>.conversation.json`): every process's
/// counts, and the end of the conversation in the order it passed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Transcript {
    pub processes: Vec<ProcessTalk>,
    /// The last turns, at most [`TURN_BYTES`] of them, oldest first.
    pub turns: Vec<Turn>,
    /// Whether turns before these were left out.
    pub cut: bool,
}

/// The last bytes of a stream, and how many passed.
#[derive(Debug, Default)]
pub struct Tail {
    bytes: VecDeque<u8>,
    total: u64,
}

impl Tail {
    fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len() as u64;
        let chunk = &chunk[chunk.len().saturating_sub(TAIL_BYTES)..];
        let excess = (self.bytes.len() + chunk.len()).saturating_sub(TAIL_BYTES);
        self.bytes.drain(..excess);
        self.bytes.extend(chunk);
    }

    /// The bytes kept, oldest first.
    pub fn bytes(&self) -> Vec<u8> {
        self.bytes.iter().copied().collect()
    }
}

/// The turns of a conversation, the oldest dropped past [`TURN_BYTES`] or [`MAX_TURNS`].
#[derive(Debug, Default)]
struct Turns {
    turns: VecDeque<(usize, Direction, Vec<u8>)>,
    bytes: usize,
    cut: bool,
}

impl Turns {
    fn push(&mut self, process: usize, direction: Direction, chunk: &[u8]) {
        let chunk = &chunk[chunk.len().saturating_sub(TURN_BYTES)..];
        match self.turns.back_mut() {
            Some((p, d, bytes)) if *p == process && *d == direction => bytes.extend(chunk),
            _ => self.turns.push_back((process, direction, chunk.to_vec())),
        }
        self.bytes += chunk.len();
        while self.bytes > TURN_BYTES || self.turns.len() > MAX_TURNS {
            self.cut = true;
            let excess = self.bytes - TURN_BYTES.min(self.bytes);
            let Some(front) = self.turns.front_mut() else {
                break;
            };
            if excess > 0 && excess < front.2.len() {
                front.2.drain(..excess);
                self.bytes -= excess;
            } else if let Some(gone) = self.turns.pop_front() {
                self.bytes -= gone.2.len();
            }
        }
    }
}

/// One direction of one user process: the FIFO it is read from and the one it is written to.
struct Stream {
    process: usize,
    direction: Direction,
    from: PathBuf,
    to: PathBuf,
}

/// The relays of one test, ready to run beside its processes.
pub struct Relay {
    streams: Vec<Stream>,
    /// Read ends of the pipes that are user processes' unread standard output, by process.
    stdouts: Vec<(usize, OwnedFd)>,
    processes: usize,
    cpu: Option<usize>,
    /// Closed (dropped) when every process has ended: the drains read what is left and stop.
    stop: Mutex<Option<OwnedFd>>,
    stopped: OwnedFd,
}

/// The FIFOs of user process `process`: the manager's side and the process's own.
pub struct Sides {
    pub manager_to_user: PathBuf,
    pub user_to_manager: PathBuf,
    pub process_to_user: PathBuf,
    pub process_to_manager: PathBuf,
}

impl Relay {
    /// Relays for every process's [`Sides`]; `stdouts` are the read ends of the pipes given as
    /// the standard output of the processes whose output nobody reads.
    pub fn new(
        sides: Vec<Sides>,
        stdouts: Vec<(usize, OwnedFd)>,
        cpu: Option<usize>,
    ) -> Result<Relay> {
        let processes = sides.len();
        let mut streams = Vec::new();
        for (process, s) in sides.into_iter().enumerate() {
            streams.push(Stream {
                process,
                direction: Direction::ToProcess,
                from: s.manager_to_user,
                to: s.process_to_user,
            });
            streams.push(Stream {
                process,
                direction: Direction::ToManager,
                from: s.process_to_manager,
                to: s.user_to_manager,
            });
        }
        let (stopped, stop) =
            nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).context("cannot create a pipe")?;
        Ok(Relay {
            streams,
            stdouts,
            processes,
            cpu,
            stop: Mutex::new(Some(stop)),
            stopped,
        })
    }

    /// Says that every process has ended: the drains of standard output finish. Relays
    /// still blocked opening a FIFO are released by opening its other end (the caller's).
    pub fn stop(&self) {
        if let Ok(mut stop) = self.stop.lock() {
            stop.take();
        }
    }

    /// Copies every stream until it ends; the transcript, and each stream's tail (by process:
    /// to the manager, then to the process).
    pub fn run(&self) -> (Transcript, Vec<(Tail, Tail)>) {
        let turns = Mutex::new(Turns::default());
        let (tails, heads) = std::thread::scope(|s| {
            let copies: Vec<_> = self
                .streams
                .iter()
                .map(|stream| {
                    let turns = &turns;
                    s.spawn(move || {
                        pin(self.cpu);
                        copy(stream, turns)
                    })
                })
                .collect();
            let drains: Vec<_> = self
                .stdouts
                .iter()
                .map(|(process, fd)| {
                    s.spawn(move || {
                        pin(self.cpu);
                        (*process, drain(fd, &self.stopped))
                    })
                })
                .collect();
            let tails: Vec<Tail> = copies
                .into_iter()
                .map(|h| h.join().unwrap_or_default())
                .collect();
            let heads: Vec<(usize, (u64, Vec<u8>))> =
                drains.into_iter().filter_map(|h| h.join().ok()).collect();
            (tails, heads)
        });
        let mut processes = vec![ProcessTalk::default(); self.processes];
        let mut by_process: Vec<(Tail, Tail)> = Vec::new();
        let mut tails = tails.into_iter();
        for talk in processes.iter_mut() {
            let to_process = tails.next().unwrap_or_default();
            let to_manager = tails.next().unwrap_or_default();
            talk.received_bytes = to_process.total;
            talk.sent_bytes = to_manager.total;
            by_process.push((to_manager, to_process));
        }
        for (process, (total, head)) in heads {
            if let Some(talk) = processes.get_mut(process) {
                talk.unread_stdout_bytes = total;
                talk.unread_stdout_head = String::from_utf8_lossy(&head).into_owned();
            }
        }
        let turns = turns.into_inner().unwrap_or_default();
        let transcript = Transcript {
            processes,
            turns: turns
                .turns
                .into_iter()
                .map(|(process, direction, bytes)| Turn {
                    process,
                    direction,
                    text: String::from_utf8_lossy(&bytes).into_owned(),
                })
                .collect(),
            cut: turns.cut,
        };
        (transcript, by_process)
    }
}

/// Runs this thread on `cpu`, the test's, when it has one.
fn pin(cpu: Option<usize>) {
    let Some(cpu) = cpu else { return };
    // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET stays inside it for any cpu below
    // CPU_SETSIZE, and sched_setaffinity(0, ...) only changes this thread.
    unsafe {
        if cpu >= libc::CPU_SETSIZE as usize {
            return;
        }
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// Opens a FIFO of the test's folder (root's: `O_NOFOLLOW` all the same), blocking until its
/// other side opens as a process's own `open` would.
fn open_fifo(path: &PathBuf, write: bool) -> Option<File> {
    std::fs::OpenOptions::new()
        .read(!write)
        .write(write)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .ok()
}

fn set_pipe_size(file: &File, bytes: i32) {
    // SAFETY: F_SETPIPE_SZ on a descriptor we own; failure (data already above the size)
    // leaves the pipe as it was.
    unsafe {
        libc::fcntl(file.as_raw_fd(), libc::F_SETPIPE_SZ, bytes);
    }
}

/// Copies one stream until its writer closes or its reader goes, recording what passes; the
/// stream's tail.
fn copy(stream: &Stream, turns: &Mutex<Turns>) -> Tail {
    let mut tail = Tail::default();
    let Some(mut from) = open_fifo(&stream.from, false) else {
        return tail;
    };
    let Some(mut to) = open_fifo(&stream.to, true) else {
        return tail;
    };
    let (manager_side, user_side) = match stream.direction {
        Direction::ToProcess => (&from, &to),
        Direction::ToManager => (&to, &from),
    };
    set_pipe_size(manager_side, MANAGER_PIPE);
    set_pipe_size(user_side, USER_PIPE);
    let mut buffer = vec![0u8; CHUNK];
    // No events asked of `to`: poll reports POLLERR once its reader has gone.
    while let Some((readable, gone)) = poll_pair((&from, libc::POLLIN), (&to, 0), -1) {
        if gone & (libc::POLLERR | libc::POLLHUP) != 0 {
            break;
        }
        if readable == 0 {
            continue;
        }
        let n = match from.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        tail.push(&buffer[..n]);
        if let Ok(mut turns) = turns.lock() {
            turns.push(stream.process, stream.direction, &buffer[..n]);
        }
        if to.write_all(&buffer[..n]).is_err() {
            break;
        }
    }
    tail
}

/// Reads a pipe until `stopped` says its writers have all ended, keeping the first
/// [`STDOUT_HEAD_BYTES`]; the bytes read and those kept.
fn drain(fd: &OwnedFd, stopped: &OwnedFd) -> (u64, Vec<u8>) {
    let (mut total, mut head) = (0u64, Vec::new());
    let mut buffer = vec![0u8; CHUNK];
    let mut stopping = false;
    loop {
        // Once stopping, only what is already in the pipe is read.
        let timeout = if stopping { 0 } else { -1 };
        let Some((readable, stop)) =
            poll_pair((fd, libc::POLLIN), (stopped, libc::POLLIN), timeout)
        else {
            break;
        };
        if readable == 0 {
            stopping |= stop != 0;
            match stopping {
                true => break,
                false => continue,
            }
        }
        // SAFETY: reading into our buffer from a descriptor we own.
        let n = unsafe { libc::read(fd.as_raw_fd(), buffer.as_mut_ptr().cast(), buffer.len()) };
        if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        if n <= 0 {
            break;
        }
        let n = n as usize;
        total += n as u64;
        let room = STDOUT_HEAD_BYTES.saturating_sub(head.len());
        head.extend_from_slice(&buffer[..n.min(room)]);
    }
    (total, head)
}

/// Waits for `events` on two descriptors, at most `timeout` ms (-1: without end), again when
/// a signal interrupts it; the events seen on each, or `None` when `poll` fails.
fn poll_pair(
    (first, first_events): (&dyn AsRawFd, libc::c_short),
    (second, second_events): (&dyn AsRawFd, libc::c_short),
    timeout: libc::c_int,
) -> Option<(libc::c_short, libc::c_short)> {
    let pollfd = |fd: &dyn AsRawFd, events| libc::pollfd {
        fd: fd.as_raw_fd(),
        events,
        revents: 0,
    };
    let mut fds = [pollfd(first, first_events), pollfd(second, second_events)];
    loop {
        // SAFETY: two pollfds of descriptors open for the whole call.
        if unsafe { libc::poll(fds.as_mut_ptr(), 2, timeout) } >= 0 {
            return Some((fds[0].revents, fds[1].revents));
        }
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tail_keeps_the_last_bytes_and_counts_them_all() {
        let mut tail = Tail::default();
        for _ in 0..100 {
            tail.push(&[b'a'; 1000]);
        }
        tail.push(b"end");
        assert_eq!(tail.total, 100_003);
        let bytes = tail.bytes();
        assert_eq!(bytes.len(), TAIL_BYTES);
        assert!(bytes.ends_with(b"aend"));
        let mut big = Tail::default();
        big.push(&vec![b'x'; TAIL_BYTES * 3]);
        assert_eq!(big.bytes().len(), TAIL_BYTES);
    }

    #[test]
    fn turns_join_one_side_s_chunks_and_stay_bounded() {
        let mut turns = Turns::default();
        turns.push(0, Direction::ToProcess, b"10\n");
        turns.push(0, Direction::ToManager, b"? ");
        turns.push(0, Direction::ToManager, b"5\n");
        turns.push(1, Direction::ToManager, b"7\n");
        assert_eq!(turns.turns.len(), 3);
        assert_eq!(turns.turns[1].2, b"? 5\n");
        assert!(!turns.cut);
        // One byte a turn, both ways: bounded by the number of turns.
        for i in 0..3 * MAX_TURNS {
            let direction = match i % 2 {
                0 => Direction::ToProcess,
                _ => Direction::ToManager,
            };
            turns.push(0, direction, b"x");
        }
        assert_eq!(turns.turns.len(), MAX_TURNS);
        // A flood in one turn: bounded by bytes.
        turns.push(2, Direction::ToManager, &vec![b' '; 5 * TURN_BYTES]);
        turns.push(2, Direction::ToManager, b"last");
        assert!(turns.bytes <= TURN_BYTES);
        let total: usize = turns.turns.iter().map(|t| t.2.len()).sum();
        assert_eq!(total, turns.bytes);
        assert!(turns.turns.back().unwrap().2.ends_with(b"last"));
        assert!(turns.cut);
    }
}
