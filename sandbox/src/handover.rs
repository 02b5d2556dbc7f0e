//! The hand-over of a run to a box built before the run was known.
//!
//! Every box is built in two parts. The init is cloned with what every run has in common (its
//! namespaces, cgroup, uid, the tmpfs root with the system files, `/dev` and `/proc`), and
//! then waits for its run: the keeper sends it a message with what is the run's own (the box
//! and the binds, `/tmp` and `/dev/shm`, the standard streams, resource limits, the working
//! directory, argv, environment). The first part may happen ahead of need, on the sandbox's
//! housekeeper thread, so that a run only pays for the second; a box is still used by one run
//! only, and nothing of a run outlives it.
//!
//! The init may not allocate (it shares the memory of a multi-threaded process), so the keeper reserves
//! an [`Inbox`] before the clone: room for the message and for what it decodes to. The init
//! reads into it and decodes without allocating (only pushes within reserved capacity), and
//! refuses a message that is malformed or too large for the room.

use std::ffi::{CStr, CString};

use crate::mounts::{CPtr, MountOp, MountStep};
use crate::rlimits::Rlimit;

/// Largest message (every path, argument and variable of one run, with their lengths).
const MESSAGE_CAPACITY: usize = 4 << 20;
/// Most run mount operations (the box, each bind with its parent directories, /tmp, /dev/shm).
const MOUNTS_CAPACITY: usize = 1024;
/// Most arguments, variables, or candidate paths of the program.
const STRINGS_CAPACITY: usize = 1 << 16;
/// Most resource limits.
const RLIMITS_CAPACITY: usize = 16;

/// How a standard stream is opened by the init.
#[derive(Debug)]
pub(crate) enum StdioPlan {
    /// Opened at this path before entering the new root (`/dev/null`, which tells nothing).
    Open {
        path: CString,
        flags: libc::c_int,
    },
    /// A host file, presented without its host path: bound at `target` (a placeholder under
    /// the new root) before `pivot_root`, opened from inside at `inside`, then unmounted and
    /// removed. `readlink /proc/self/fd/N` then shows nothing of the host. With `create`, the
    /// host file is created first (without truncating: `flags` truncate at the real open).
    Hidden {
        host: CString,
        create: bool,
        target: CString,
        inside: CString,
        flags: libc::c_int,
    },
    Fd(libc::c_int),
}

/// A standard stream as the init opens it: [`StdioPlan`] with pointers to prepared strings.
#[derive(Debug, Clone, Copy)]
pub(crate) enum StdioStep {
    Open {
        path: CPtr,
        flags: libc::c_int,
    },
    Hidden {
        host: CPtr,
        create: bool,
        target: CPtr,
        inside: CPtr,
        flags: libc::c_int,
    },
    Fd(libc::c_int),
}

/// What a run's message decodes to, in the init.
pub(crate) struct RunSteps {
    pub stdio: [StdioStep; 3],
    pub mounts: Vec<MountStep>,
    pub rlimits: Vec<Rlimit>,
    pub cwd: CPtr,
    /// Null-terminated, for `execve`.
    pub argv: Vec<CPtr>,
    /// Null-terminated, for `execve`.
    pub envp: Vec<CPtr>,
    pub exe_candidates: Vec<CPtr>,
}

/// Room for one run message and what it decodes to, reserved before the clone.
pub(crate) struct Inbox {
    bytes: Vec<u8>,
    pub run: RunSteps,
}

impl Inbox {
    /// Reserves the room (allocated; only the first pages of the message's room are written
    /// here, off the run's path: the rest costs nothing until a large message needs it).
    pub(crate) fn new() -> Inbox {
        let null = StdioStep::Fd(-1);
        let mut bytes = Vec::with_capacity(MESSAGE_CAPACITY);
        touch(bytes.spare_capacity_mut(), TOUCHED);
        Inbox {
            bytes,
            run: RunSteps {
                stdio: [null; 3],
                mounts: Vec::with_capacity(MOUNTS_CAPACITY),
                rlimits: Vec::with_capacity(RLIMITS_CAPACITY),
                cwd: std::ptr::null(),
                argv: Vec::with_capacity(STRINGS_CAPACITY + 1),
                envp: Vec::with_capacity(STRINGS_CAPACITY + 1),
                exe_candidates: Vec::with_capacity(STRINGS_CAPACITY),
            },
        }
    }

    /// Reads one message from `fd` and decodes it: async-signal-safe, no allocation. Returns
    /// the errno of a failed read, `EMSGSIZE` for a message larger than the room, `EPROTO` for
    /// one that does not decode.
    pub(crate) fn receive(&mut self, fd: libc::c_int) -> Result<(), i32> {
        let mut length = [0u8; 4];
        read_exact(fd, length.as_mut_ptr(), length.len())?;
        let length = u32::from_le_bytes(length) as usize;
        if length > self.bytes.capacity() {
            return Err(libc::EMSGSIZE);
        }
        self.bytes.clear();
        read_exact(fd, self.bytes.as_mut_ptr(), length)?;
        // SAFETY: `read_exact` initialised the first `length` bytes, within the capacity.
        unsafe { self.bytes.set_len(length) };
        self.decode().ok_or(libc::EPROTO)
    }

    fn decode(&mut self) -> Option<()> {
        let mut reader = Reader {
            bytes: &self.bytes,
            at: 0,
        };
        let run = &mut self.run;
        for slot in run.stdio.iter_mut() {
            *slot = match reader.u8()? {
                0 => StdioStep::Open {
                    flags: reader.i32()?,
                    path: reader.string()?,
                },
                1 => StdioStep::Hidden {
                    create: reader.u8()? != 0,
                    flags: reader.i32()?,
                    host: reader.string()?,
                    target: reader.string()?,
                    inside: reader.string()?,
                },
                2 => StdioStep::Fd(reader.i32()?),
                _ => return None,
            };
        }
        run.mounts.clear();
        for _ in 0..reader.u32()? {
            let step = match reader.u8()? {
                0 => MountStep::Mkdir {
                    path: reader.string()?,
                },
                1 => MountStep::Symlink {
                    target: reader.string()?,
                    path: reader.string()?,
                },
                2 => MountStep::Tmpfs {
                    path: reader.string()?,
                    data: reader.string()?,
                },
                3 => MountStep::Bind {
                    source: reader.string()?,
                    path: reader.string()?,
                    dir: reader.u8()? != 0,
                    flags: reader.u64()? as libc::c_ulong,
                },
                4 => MountStep::Proc {
                    path: reader.string()?,
                    data: reader.string()?,
                },
                _ => return None,
            };
            push(&mut run.mounts, step)?;
        }
        run.rlimits.clear();
        for _ in 0..reader.u32()? {
            let rlimit = Rlimit {
                resource: reader.u32()? as libc::__rlimit_resource_t,
                value: reader.u64()? as libc::rlim_t,
            };
            push(&mut run.rlimits, rlimit)?;
        }
        run.cwd = reader.string()?;
        for list in [&mut run.argv, &mut run.envp] {
            list.clear();
            for _ in 0..reader.u32()? {
                push(list, reader.string()?)?;
            }
            push(list, std::ptr::null())?;
        }
        run.exe_candidates.clear();
        for _ in 0..reader.u32()? {
            push(&mut run.exe_candidates, reader.string()?)?;
        }
        (reader.at == reader.bytes.len()).then_some(())
    }
}

/// How much of a room reserved for a child is written ahead: a page fault each 4 KiB (about
/// 10 µs on a VM) that a run does not pay on its path.
pub(crate) const TOUCHED: usize = 16 << 10;

/// Writes one byte in each page of the first `len` bytes of `room` (all of it when shorter),
/// so that those pages exist before a child uses them.
pub(crate) fn touch(room: &mut [std::mem::MaybeUninit<u8>], len: usize) {
    let len = len.min(room.len());
    for byte in room[..len].iter_mut().step_by(4096) {
        byte.write(0);
    }
}

/// Pushes within the reserved capacity only (a push beyond it would allocate).
fn push<T>(list: &mut Vec<T>, item: T) -> Option<()> {
    (list.len() < list.capacity()).then(|| list.push(item))
}

fn read_exact(fd: libc::c_int, to: *mut u8, length: usize) -> Result<(), i32> {
    let mut done = 0;
    while done < length {
        // SAFETY: reading into the `length` bytes at `to`, which the caller reserved.
        let n = unsafe { libc::read(fd, to.add(done).cast(), length - done) };
        match n {
            0 => return Err(libc::EPIPE),
            n if n < 0 => {
                let errno = nix::errno::Errno::last_raw();
                if errno != libc::EINTR {
                    return Err(errno);
                }
            }
            n => done += n as usize,
        }
    }
    Ok(())
}

/// Reads the message's fields in order; `None` past its end or on a malformed string.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let end = self.at.checked_add(n)?;
        let bytes = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(bytes)
    }

    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn i32(&mut self) -> Option<i32> {
        Some(i32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    /// A NUL-terminated string in place (its length counts the NUL, which must end it).
    fn string(&mut self) -> Option<CPtr> {
        let length = self.u32()? as usize;
        let bytes = self.take(length)?;
        (bytes.last() == Some(&0)).then(|| bytes.as_ptr().cast())
    }
}

/// What the keeper sends: the run's own part of the box.
pub(crate) struct RunParts {
    pub stdio: [StdioPlan; 3],
    pub mounts: Vec<MountOp>,
    pub rlimits: Vec<Rlimit>,
    pub cwd: CString,
    pub argv: Vec<CString>,
    pub env: Vec<CString>,
    /// argv[0] candidates: the literal path, or `dir/name` for each PATH directory.
    pub exe_candidates: Vec<CString>,
}

impl RunParts {
    /// The message, with its length in front.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut w = Writer(vec![0; 4]);
        for stdio in &self.stdio {
            match stdio {
                StdioPlan::Open { path, flags } => {
                    w.u8(0);
                    w.i32(*flags);
                    w.string(path);
                }
                StdioPlan::Hidden {
                    host,
                    create,
                    target,
                    inside,
                    flags,
                } => {
                    w.u8(1);
                    w.u8(u8::from(*create));
                    w.i32(*flags);
                    w.string(host);
                    w.string(target);
                    w.string(inside);
                }
                StdioPlan::Fd(fd) => {
                    w.u8(2);
                    w.i32(*fd);
                }
            }
        }
        w.u32(self.mounts.len());
        for op in &self.mounts {
            match op {
                MountOp::Mkdir { path } => {
                    w.u8(0);
                    w.string(path);
                }
                MountOp::Symlink { target, path } => {
                    w.u8(1);
                    w.string(target);
                    w.string(path);
                }
                MountOp::Tmpfs { path, data } => {
                    w.u8(2);
                    w.string(path);
                    w.string(data);
                }
                MountOp::Bind {
                    source,
                    path,
                    dir,
                    flags,
                } => {
                    w.u8(3);
                    w.string(source);
                    w.string(path);
                    w.u8(u8::from(*dir));
                    #[allow(clippy::useless_conversion)] // c_ulong is u32 on 32-bit hosts
                    w.u64(u64::from(*flags));
                }
                MountOp::Proc { path, data } => {
                    w.u8(4);
                    w.string(path);
                    w.string(data);
                }
            }
        }
        w.u32(self.rlimits.len());
        for r in &self.rlimits {
            w.u32(r.resource as usize);
            #[allow(clippy::useless_conversion)] // rlim_t is u32 on some hosts
            w.u64(u64::from(r.value));
        }
        w.string(&self.cwd);
        for list in [&self.argv, &self.env, &self.exe_candidates] {
            w.u32(list.len());
            for s in list {
                w.string(s);
            }
        }
        let length = (w.0.len() - 4) as u32;
        w.0[..4].copy_from_slice(&length.to_le_bytes());
        w.0
    }
}

struct Writer(Vec<u8>);

impl Writer {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }

    fn u32(&mut self, v: usize) {
        self.0.extend_from_slice(&(v as u32).to_le_bytes());
    }

    fn i32(&mut self, v: i32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    fn string(&mut self, s: &CStr) {
        let bytes = s.to_bytes_with_nul();
        self.u32(bytes.len());
        self.0.extend_from_slice(bytes);
    }
}

impl RunParts {
    /// Whether `message`, these parts encoded, fits the room of an [`Inbox`] (else the run
    /// cannot be handed over).
    pub(crate) fn fits(&self, message: &[u8]) -> bool {
        message.len() - 4 <= MESSAGE_CAPACITY
            && self.mounts.len() <= MOUNTS_CAPACITY
            && self.rlimits.len() <= RLIMITS_CAPACITY
            && self.argv.len() <= STRINGS_CAPACITY
            && self.env.len() <= STRINGS_CAPACITY
            && self.exe_candidates.len() <= STRINGS_CAPACITY
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(s: &str) -> CString {
        CString::new(s).unwrap()
    }

    /// # Safety
    /// `p` points to a NUL-terminated string that outlives the result.
    unsafe fn text<'a>(p: CPtr) -> &'a str {
        // SAFETY: as the caller promises.
        unsafe { CStr::from_ptr(p) }.to_str().unwrap()
    }

    fn sample() -> RunParts {
        RunParts {
            stdio: [
                StdioPlan::Open {
                    path: c("/dev/null"),
                    flags: libc::O_RDONLY,
                },
                StdioPlan::Hidden {
                    host: c("/tmp/out put"),
                    create: true,
                    target: c("/root/dev/.stdio1"),
                    inside: c("/dev/.stdio1"),
                    flags: libc::O_WRONLY | libc::O_TRUNC,
                },
                StdioPlan::Fd(7),
            ],
            mounts: vec![
                MountOp::Mkdir { path: c("/r/tmp") },
                MountOp::Symlink {
                    target: c("usr/bin"),
                    path: c("/r/bin"),
                },
                MountOp::Tmpfs {
                    path: c("/r/tmp"),
                    data: c("mode=1777,size=5"),
                },
                MountOp::Bind {
                    source: c("/host/box"),
                    path: c("/r/box"),
                    dir: true,
                    flags: libc::MS_BIND | libc::MS_RDONLY,
                },
                MountOp::Proc {
                    path: c("/r/proc"),
                    data: c("hidepid=invisible,subset=pid"),
                },
            ],
            rlimits: vec![Rlimit {
                resource: libc::RLIMIT_STACK,
                value: libc::RLIM_INFINITY,
            }],
            cwd: c("/box"),
            argv: vec![c("./prog"), c(""), c("ünïcode arg")],
            env: vec![c("PATH=/usr/bin")],
            exe_candidates: vec![c("./prog")],
        }
    }

    /// Sends `bytes` through a pipe into a fresh inbox, as the keeper does to the init.
    fn deliver(bytes: &[u8]) -> (Inbox, Result<(), i32>) {
        let (read, write) = nix::unistd::pipe().unwrap();
        let bytes = bytes.to_vec();
        let writer = std::thread::spawn(move || {
            let _ = nix::unistd::write(&write, &bytes);
        });
        let mut inbox = Inbox::new();
        let result = {
            use std::os::fd::AsRawFd;
            inbox.receive(read.as_raw_fd())
        };
        writer.join().unwrap();
        (inbox, result)
    }

    /// Everything the keeper sends arrives as it left, decoded in place without a single
    /// allocation (every list keeps its reserved buffer).
    #[test]
    fn a_run_crosses_over_unchanged_and_without_allocating() {
        let parts = sample();
        let bytes = parts.encode();
        let (read, write) = nix::unistd::pipe().unwrap();
        let mut inbox = Inbox::new();
        let before = (
            inbox.bytes.as_ptr(),
            inbox.run.mounts.as_ptr(),
            inbox.run.argv.as_ptr(),
            inbox.run.envp.as_ptr(),
        );
        let writer = std::thread::spawn(move || nix::unistd::write(&write, &bytes).unwrap());
        use std::os::fd::AsRawFd;
        assert_eq!(inbox.receive(read.as_raw_fd()), Ok(()));
        writer.join().unwrap();
        let after = (
            inbox.bytes.as_ptr(),
            inbox.run.mounts.as_ptr(),
            inbox.run.argv.as_ptr(),
            inbox.run.envp.as_ptr(),
        );
        assert_eq!(before, after, "a buffer was reallocated");
        let run = &inbox.run;
        // SAFETY: every pointer points into the inbox, alive for the whole test.
        unsafe {
            match run.stdio {
                [StdioStep::Open { path, flags }, StdioStep::Hidden {
                    host,
                    create,
                    target,
                    inside,
                    flags: out_flags,
                }, StdioStep::Fd(fd)] => {
                    assert_eq!((text(path), flags), ("/dev/null", libc::O_RDONLY));
                    assert_eq!(
                        (text(host), create, text(target), text(inside)),
                        ("/tmp/out put", true, "/root/dev/.stdio1", "/dev/.stdio1")
                    );
                    assert_eq!(out_flags, libc::O_WRONLY | libc::O_TRUNC);
                    assert_eq!(fd, 7);
                }
                other => panic!("stdio {other:?}"),
            }
            assert_eq!(run.mounts.len(), parts.mounts.len());
            for (got, sent) in run.mounts.iter().zip(&parts.mounts) {
                let expected = sent.step();
                let same = match (*got, expected) {
                    (MountStep::Mkdir { path: a }, MountStep::Mkdir { path: b }) => {
                        text(a) == text(b)
                    }
                    (
                        MountStep::Proc { path: a, data: b },
                        MountStep::Proc { path: x, data: y },
                    )
                    | (
                        MountStep::Symlink { target: a, path: b },
                        MountStep::Symlink { target: x, path: y },
                    )
                    | (
                        MountStep::Tmpfs { path: a, data: b },
                        MountStep::Tmpfs { path: x, data: y },
                    ) => text(a) == text(x) && text(b) == text(y),
                    (
                        MountStep::Bind {
                            source: a,
                            path: b,
                            dir: d1,
                            flags: f1,
                        },
                        MountStep::Bind {
                            source: x,
                            path: y,
                            dir: d2,
                            flags: f2,
                        },
                    ) => text(a) == text(x) && text(b) == text(y) && d1 == d2 && f1 == f2,
                    _ => false,
                };
                assert!(same, "{got:?} is not {sent:?}");
            }
            assert_eq!(run.rlimits.len(), 1);
            assert_eq!(run.rlimits[0].resource, libc::RLIMIT_STACK);
            assert_eq!(run.rlimits[0].value, libc::RLIM_INFINITY);
            assert_eq!(text(run.cwd), "/box");
            let strings = |list: &[CPtr]| -> Vec<String> {
                list.iter().map(|&p| text(p).to_string()).collect()
            };
            assert_eq!(run.argv.last(), Some(&std::ptr::null()));
            assert_eq!(run.envp.last(), Some(&std::ptr::null()));
            let argv = &run.argv[..run.argv.len() - 1];
            assert_eq!(strings(argv), ["./prog", "", "ünïcode arg"]);
            assert_eq!(strings(&run.envp[..run.envp.len() - 1]), ["PATH=/usr/bin"]);
            assert_eq!(strings(&run.exe_candidates), ["./prog"]);
        }
    }

    /// A message cut anywhere, or with a string whose terminator is not where its length says,
    /// or one byte too long, is refused; never read past, never half-used.
    #[test]
    fn a_damaged_message_is_refused() {
        let bytes = sample().encode();
        let body = &bytes[4..];
        for cut in 0..body.len() {
            let mut damaged = ((cut) as u32).to_le_bytes().to_vec();
            damaged.extend_from_slice(&body[..cut]);
            assert_eq!(deliver(&damaged).1, Err(libc::EPROTO), "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        let length = (longer.len() - 4) as u32;
        longer[..4].copy_from_slice(&length.to_le_bytes());
        assert_eq!(deliver(&longer).1, Err(libc::EPROTO));
        // "/dev/null" loses its terminator: the string then runs into the next field.
        let at = body.windows(10).position(|w| w == b"/dev/null\0").unwrap();
        let mut unterminated = bytes.clone();
        unterminated[4 + at + 9] = b'x';
        assert_eq!(deliver(&unterminated).1, Err(libc::EPROTO));
        // The sender stops before the end of what it announced.
        let (_, result) = deliver(&bytes[..bytes.len() - 3]);
        assert_eq!(result, Err(libc::EPIPE));
    }

    /// More than the room: refused before reading it; a list longer than its reserved capacity
    /// is refused rather than grown.
    #[test]
    fn a_message_larger_than_the_room_is_refused() {
        let too_long = ((MESSAGE_CAPACITY + 1) as u32).to_le_bytes();
        assert_eq!(deliver(&too_long).1, Err(libc::EMSGSIZE));
        let mut parts = sample();
        parts.mounts = (0..=MOUNTS_CAPACITY)
            .map(|_| MountOp::Mkdir { path: c("/r/x") })
            .collect();
        let bytes = parts.encode();
        assert!(!parts.fits(&bytes));
        assert_eq!(deliver(&bytes).1, Err(libc::EPROTO));
        let parts = sample();
        assert!(parts.fits(&parts.encode()));
    }
}
