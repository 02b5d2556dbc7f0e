//! `sysinfo(2)` answered by the keeper, the same for every box of the same limits.
//!
//! The kernel's answer is the host's: free memory, the number of tasks, the loads. Two boxes
//! that run at once could signal through it (one forks or touches memory, the other reads),
//! and refusing the call is no way out: glibc uses the answer unchecked (`sysconf` of the
//! physical pages, which `qsort` sizes its buffer from). So the program's calls go to the
//! keeper instead, which answers what a box of these limits would see on any host: total
//! and free memory the run's memory limit ([`UNLIMITED_MEMORY`] without one), no swap, one
//! process, no load, no uptime, unit 1.
//!
//! How it works:
//! - the program's seccomp filter (see `crate::seccomp`) answers `sysinfo` with
//!   `SECCOMP_RET_USER_NOTIF`. Installed with `SECCOMP_FILTER_FLAG_NEW_LISTENER` (see
//!   [`install`]), it yields a descriptor on which the
//!   calls arrive; the program sends it to the keeper over a socket pair made before the
//!   init's clone (`SCM_RIGHTS`) and closes its own copy before `execve` (the program never
//!   holds the listener: it could answer its own calls). The init closes its end of the pair
//!   once the program is spawned, so that the keeper sees end-of-file if no listener came.
//! - the keeper polls the listener beside the init's report pipe. A call is answered by
//!   writing the answer into the caller's memory through `/proc/<tid>/mem` (the tid of the
//!   calling thread, of the program or of any descendant: the filter is inherited), opened,
//!   then checked still to be the caller's (`SECCOMP_IOCTL_NOTIF_ID_VALID`): the descriptor
//!   is bound to the process it was opened for, so a tid that died and was reused in between
//!   is never written to. A pointer the caller cannot write to (unmapped, the kernel's half,
//!   the end of a mapping) gets `EFAULT`, as from the kernel; memory the program mapped
//!   without write permission but privately is written the way a debugger writes (only the
//!   program's own copy changes).
//! - the listener lives as long as the keeper holds it, and the keeper holds it until the
//!   init is reaped, when no process of the box is left: the kernel's answer to a call whose
//!   listener is gone (`ENOSYS`) is never seen by the program. Until the keeper has received
//!   the listener, a call waits for it (the descriptor in flight keeps the listener alive).
//! - threads that call at once are queued by the kernel and answered one by one; a thread
//!   killed while it waits is dropped by the kernel (its answer fails with `ENOENT`).
//! - the keeper spends a bounded amount per call (six system calls), and beyond a burst it
//!   answers at most one call per [`PACE`] (the caller waits, its wall clock running), so a
//!   program that does nothing but call `sysinfo` costs the keeper a small fraction of a core
//!   for no longer than its wall limit; the limits are still checked on time, however fast
//!   calls come.

use std::ffi::c_int;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

use nix::poll::PollFlags;
use seccompiler::sock_filter;

use crate::seccomp::AUDIT_ARCH;

/// What a box without a memory limit sees as its total and free memory: 4 GiB.
pub const UNLIMITED_MEMORY: u64 = 4 << 30;

/// Size of the kernel's `struct sysinfo` on 64-bit architectures.
const SIZE: usize = 112;

/// The answer to every call of a run whose memory limit is `memory`: the kernel's
/// `struct sysinfo` (64-bit layout), with total and free memory the limit, everything else 0
/// but the process count (1) and the memory unit (1 byte).
fn answer(memory: Option<u64>) -> [u8; SIZE] {
    let memory = memory.unwrap_or(UNLIMITED_MEMORY).to_ne_bytes();
    // Offsets: uptime 0, loads 8..32, totalram 32, freeram 40, sharedram 48, bufferram 56,
    // totalswap 64, freeswap 72, procs 80 (16 bits), totalhigh 88, freehigh 96, mem_unit 104
    // (32 bits); the rest is padding.
    let mut bytes = [0u8; SIZE];
    bytes[32..40].copy_from_slice(&memory);
    bytes[40..48].copy_from_slice(&memory);
    bytes[80..82].copy_from_slice(&1u16.to_ne_bytes());
    bytes[104..108].copy_from_slice(&1u32.to_ne_bytes());
    bytes
}

/// In the program, last before `execve`: sets no_new_privs, installs the seccomp `filter`
/// with a listener for its notified calls and sends the listener to the keeper on `socket`,
/// keeping no copy. Raw system calls only (the program
/// shares the init's memory until it executes). Returns the errno of a failure.
pub(crate) fn install(filter: &[sock_filter], socket: c_int) -> Result<(), i32> {
    let errno = || nix::errno::Errno::last_raw().max(1);
    let program = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: prctl and seccomp on a program that lives as long as the call.
    let listener = unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(errno());
        }
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
            &program as *const libc::sock_fprog,
        )
    };
    if listener < 0 {
        return Err(errno());
    }
    let listener = listener as c_int;
    let sent = send_fd(socket, listener);
    // SAFETY: closing our own descriptors: the program must not hold the listener.
    unsafe {
        libc::close(listener);
        libc::close(socket);
    }
    sent
}

/// Sends `fd` with one byte on the unix socket `socket` (`SCM_RIGHTS`), without allocating.
fn send_fd(socket: c_int, fd: c_int) -> Result<(), i32> {
    // Room for one control message with one descriptor, aligned for `cmsghdr`.
    let mut control = [0u64; 4];
    let mut byte = [b's'];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    // SAFETY: the message and its control buffer live on this stack for the call; CMSG_*
    // stay within `control`, which is larger than CMSG_SPACE(sizeof(int)).
    unsafe {
        let space = libc::CMSG_SPACE(std::mem::size_of::<c_int>() as u32) as usize;
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<c_int>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<c_int>(), fd);
        if libc::sendmsg(socket, &msg, libc::MSG_NOSIGNAL) != 1 {
            return Err(nix::errno::Errno::last_raw().max(1));
        }
    }
    Ok(())
}

/// A socket pair for the listener: the keeper's end, and the end the init keeps for the
/// program. Close-on-exec both.
pub(crate) fn socket_pair() -> anyhow::Result<(OwnedFd, OwnedFd)> {
    let mut ends = [-1; 2];
    let kind = libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC;
    // SAFETY: socketpair into a local array; the descriptors are new and ours.
    unsafe {
        if libc::socketpair(libc::AF_UNIX, kind, 0, ends.as_mut_ptr()) != 0 {
            let e = std::io::Error::last_os_error();
            anyhow::bail!("cannot create a socket pair for the sysinfo listener: {e}");
        }
        Ok((OwnedFd::from_raw_fd(ends[0]), OwnedFd::from_raw_fd(ends[1])))
    }
}

/// The keeper's side of a run: waits for the listener on its socket, then answers calls.
pub(crate) struct Emulator {
    socket: Option<OwnedFd>,
    listener: Option<OwnedFd>,
    answer: [u8; SIZE],
    /// The next call is answered from this instant on (see [`PACE`]).
    next_answer: Instant,
}

/// Calls answered as fast as they come, before [`PACE`] applies: more than a program that
/// is not probing the keeper makes (the C library asks once per process at most).
const BURST: u32 = 256;
/// Beyond [`BURST`], calls are answered at most one per this on average: an answer costs the
/// keeper ~10-20 µs of CPU, so a program that calls `sysinfo` all the time costs the keeper
/// about a tenth of a core at most, while its own wall clock runs (measured with 4 threads
/// calling for 1.5 s, debug build: 5100 calls a second, 0.19 s of the keeper's CPU).
const PACE: Duration = Duration::from_micros(200);

impl Emulator {
    /// For a run whose memory limit is `memory`, its listener to come on `socket`.
    pub(crate) fn new(socket: OwnedFd, memory: Option<u64>) -> Emulator {
        let now = Instant::now();
        Emulator {
            socket: Some(socket),
            listener: None,
            answer: answer(memory),
            next_answer: now.checked_sub(PACE * BURST).unwrap_or(now),
        }
    }

    /// When a call waiting now would be answered, if that is later than `now`.
    pub(crate) fn paused_until(&self, now: Instant) -> Option<Instant> {
        (self.listener.is_some() && self.next_answer > now).then_some(self.next_answer)
    }

    /// The descriptor to poll for input at `now`: the socket until the listener came, then
    /// the listener unless calls are paused (see [`PACE`]); none once both are done with.
    pub(crate) fn fd(&self, now: Instant) -> Option<BorrowedFd<'_>> {
        if self.paused_until(now).is_some() {
            return None;
        }
        self.listener
            .as_ref()
            .or(self.socket.as_ref())
            .map(|fd| fd.as_fd())
    }

    /// Called when [`Emulator::fd`] polled with `events`: takes the listener, or answers one
    /// call.
    pub(crate) fn ready(&mut self, events: PollFlags) {
        if let Some(listener) = &self.listener {
            if events.contains(PollFlags::POLLIN) {
                self.answer_one(listener.as_raw_fd());
                // Unused answers of the past accumulate up to a burst, no more.
                let now = Instant::now();
                let floor = now.checked_sub(PACE * BURST).unwrap_or(now);
                self.next_answer = self.next_answer.max(floor) + PACE;
            } else if !events.is_empty() {
                // No process uses the filter any more (hang-up), or the descriptor failed:
                // nothing more can arrive.
                self.listener = None;
            }
        } else if let Some(socket) = self.socket.take() {
            // The listener, or end-of-file (the program failed before sending it): either
            // way the socket has served.
            self.listener = receive_fd(&socket);
        }
    }

    /// Receives one call and answers it.
    fn answer_one(&self, listener: c_int) {
        // SAFETY: zeroed plain structs (the kernel requires a zeroed request); ioctls on the
        // listener with pointers to them.
        unsafe {
            let mut call: libc::seccomp_notif = std::mem::zeroed();
            if libc::ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_RECV, &mut call) != 0 {
                // ENOENT: the caller was killed between the poll and now.
                return;
            }
            let error = match call.data.nr as libc::c_long == libc::SYS_sysinfo
                && call.data.arch == AUDIT_ARCH
            {
                true => self.write_answer(listener, &call),
                false => libc::ENOSYS,
            };
            let response = libc::seccomp_notif_resp {
                id: call.id,
                val: 0,
                error: -error,
                flags: 0,
            };
            // Fails (ENOENT) only when the caller was killed meanwhile: nothing to answer.
            libc::ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_SEND, &response);
        }
    }

    /// Writes the answer where the call points; returns 0 or the errno to answer.
    fn write_answer(&self, listener: c_int, call: &libc::seccomp_notif) -> i32 {
        let memory = match std::fs::OpenOptions::new()
            .write(true)
            .open(format!("/proc/{}/mem", call.pid))
        {
            Ok(file) => file,
            Err(e) => return e.raw_os_error().unwrap_or(libc::EFAULT),
        };
        // The caller still waits: the descriptor is its memory, not a reused tid's.
        // SAFETY: ioctl with a pointer to a local.
        if unsafe { libc::ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_ID_VALID, &call.id) } != 0 {
            return libc::ENOENT;
        }
        match memory.write_at(&self.answer, call.data.args[0]) {
            Ok(SIZE) => 0,
            _ => libc::EFAULT,
        }
    }
}

/// Receives one descriptor sent by [`send_fd`]; `None` at end-of-file or on a message without
/// one.
fn receive_fd(socket: &OwnedFd) -> Option<OwnedFd> {
    let mut control = [0u64; 4];
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    // SAFETY: as in `send_fd`; a descriptor found in the control message is new and ours.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        let flags = libc::MSG_CMSG_CLOEXEC | libc::MSG_DONTWAIT;
        if libc::recvmsg(socket.as_raw_fd(), &mut msg, flags) < 1 {
            return None;
        }
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if cmsg.is_null()
            || (*cmsg).cmsg_level != libc::SOL_SOCKET
            || (*cmsg).cmsg_type != libc::SCM_RIGHTS
        {
            return None;
        }
        let fd = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<c_int>());
        Some(OwnedFd::from_raw_fd(fd))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The answer has the layout of the C library's `struct sysinfo`: read back through it,
    /// it says what the module promises.
    #[test]
    fn the_answer_reads_back_as_the_documented_sysinfo() {
        assert_eq!(std::mem::size_of::<libc::sysinfo>(), SIZE);
        let bytes = answer(Some(256 << 20));
        // SAFETY: `libc::sysinfo` is plain data of exactly these many bytes.
        let info: libc::sysinfo = unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast()) };
        assert_eq!(info.totalram, 256 << 20);
        assert_eq!(info.freeram, 256 << 20);
        assert_eq!((info.totalswap, info.freeswap), (0, 0));
        assert_eq!((info.sharedram, info.bufferram), (0, 0));
        assert_eq!(info.procs, 1);
        assert_eq!(info.mem_unit, 1);
        assert_eq!((info.uptime, info.loads), (0, [0; 3]));
        assert_eq!((info.totalhigh, info.freehigh), (0, 0));
        // SAFETY: as above.
        let unlimited: libc::sysinfo =
            unsafe { std::ptr::read_unaligned(answer(None).as_ptr().cast()) };
        assert_eq!(unlimited.totalram, UNLIMITED_MEMORY);
    }

    /// A descriptor crosses the socket pair and arrives as a new descriptor of the same file;
    /// a closed peer gives none.
    #[test]
    fn a_descriptor_crosses_the_socket_pair() {
        let (keeper, program) = socket_pair().unwrap();
        let file = tempfile::tempfile().unwrap();
        file.write_at(b"x", 0).unwrap();
        // SAFETY: a descriptor number of our own, duplicated before `install`-like closing.
        let sent = unsafe { libc::dup(file.as_raw_fd()) };
        send_fd(program.as_raw_fd(), sent).unwrap();
        // SAFETY: closing the duplicate we made.
        unsafe { libc::close(sent) };
        let received = std::fs::File::from(receive_fd(&keeper).expect("a descriptor"));
        let mut byte = [0u8];
        received.read_at(&mut byte, 0).unwrap();
        assert_eq!(&byte, b"x");
        drop(program);
        assert!(receive_fd(&keeper).is_none());
    }
}
