//! What the host charges for the operations that move verdicts beside raw computation: a pipe
//! round trip between two processes (on one CPU, and across two), a page fault on fresh
//! memory, and a load that misses every cache. Measured in this process, on threads of its own
//! (each pinned where the measurement needs it), with the CPU clocks the judge charges
//! (user + system time).
//!
//! A pipe round trip between threads costs what it costs between processes: the wake-up of the
//! reader, on its CPU, is the same path in the kernel.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use nix::sched::{sched_setaffinity, CpuSet};
use nix::unistd::Pid;

/// Round trips measured per placement.
pub const ROUND_TRIPS: u32 = 5_000;

/// The cost of one operation: CPU time charged (user + system, every thread taking part) and
/// elapsed time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cost {
    /// CPU time per operation.
    pub cpu: Duration,
    /// Elapsed time per operation.
    pub wall: Duration,
}

/// The costs of one host.
#[derive(Debug, Clone, PartialEq)]
pub struct HostCosts {
    /// A one-byte pipe round trip between two threads on one CPU.
    pub round_trip_one_cpu: Cost,
    /// The same across two CPUs; `None` with a single CPU allowed.
    pub round_trip_two_cpus: Option<Cost>,
    /// A first touch of an anonymous page (the fault and the zeroing of 4 KiB).
    pub page_fault: Cost,
    /// A dependent load from a buffer far larger than the caches (and than the TLB's reach).
    pub memory_load: Cost,
}

/// Measures every cost, on the first CPU (and the last) this process may use.
pub fn measure() -> Result<HostCosts> {
    let cpus = crate::affinity::allowed_cpus()?;
    let first = *cpus.first().context("no CPU allowed")?;
    let last = *cpus.last().context("no CPU allowed")?;
    Ok(HostCosts {
        round_trip_one_cpu: round_trip(first, first, ROUND_TRIPS)?,
        round_trip_two_cpus: match first != last {
            true => Some(round_trip(first, last, ROUND_TRIPS)?),
            false => None,
        },
        page_fault: on_cpu(first, || page_fault(16 << 20))??,
        memory_load: on_cpu(first, || memory_load(64 << 20, 2_000_000))??,
    })
}

/// Runs `f` on a thread of its own pinned to `cpu` (so that the caller's affinity is left as
/// it is).
fn on_cpu<T: Send>(cpu: usize, f: impl FnOnce() -> T + Send) -> Result<T> {
    std::thread::scope(|s| {
        s.spawn(|| -> Result<T> {
            pin_this_thread(cpu)?;
            Ok(f())
        })
        .join()
        .map_err(|_| anyhow::anyhow!("a measuring thread panicked"))?
    })
}

fn pin_this_thread(cpu: usize) -> Result<()> {
    let mut set = CpuSet::new();
    set.set(cpu).context("CPU beyond the largest CPU set")?;
    sched_setaffinity(Pid::from_raw(0), &set)
        .with_context(|| format!("cannot pin a thread to CPU {cpu}"))
}

/// The CPU time of the calling thread.
fn thread_cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec to write; the clock exists on every Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// `n` one-byte round trips between a thread on `a` and one on `b`, over a socket pair (a
/// pipe's wake-up path; one pair of descriptors for both directions).
fn round_trip(a: usize, b: usize, n: u32) -> Result<Cost> {
    let (mut left, mut right) = UnixStream::pair().context("socketpair")?;
    let start = Instant::now();
    let (cpu_a, cpu_b) = std::thread::scope(|s| {
        let echo = s.spawn(move || -> Result<Duration> {
            pin_this_thread(b)?;
            let before = thread_cpu();
            let mut byte = [0u8];
            for _ in 0..n {
                right.read_exact(&mut byte)?;
                right.write_all(&byte)?;
            }
            Ok(thread_cpu() - before)
        });
        let ask = s.spawn(move || -> Result<Duration> {
            pin_this_thread(a)?;
            let before = thread_cpu();
            let mut byte = [7u8];
            for _ in 0..n {
                left.write_all(&byte)?;
                left.read_exact(&mut byte)?;
            }
            Ok(thread_cpu() - before)
        });
        let joined = |h: std::thread::ScopedJoinHandle<'_, Result<Duration>>| {
            h.join()
                .map_err(|_| anyhow::anyhow!("a measuring thread panicked"))?
        };
        (joined(ask), joined(echo))
    });
    let wall = start.elapsed();
    Ok(Cost {
        cpu: (cpu_a? + cpu_b?) / n,
        wall: wall / n,
    })
}

/// First touches of the pages of a fresh anonymous mapping of `bytes`.
fn page_fault(bytes: usize) -> Result<Cost> {
    const PAGE: usize = 4096;
    let mut memory: Vec<u8> = Vec::with_capacity(bytes);
    let pages = bytes / PAGE;
    let base = memory.spare_capacity_mut().as_mut_ptr();
    let (before, start) = (thread_cpu(), Instant::now());
    for page in 0..pages {
        // SAFETY: within the capacity; a volatile write so that each page is really touched.
        unsafe { std::ptr::write_volatile(base.add(page * PAGE).cast::<u8>(), 1) };
    }
    let (cpu, wall) = (thread_cpu() - before, start.elapsed());
    if pages == 0 {
        bail!("no page to touch");
    }
    Ok(Cost {
        cpu: cpu / pages as u32,
        wall: wall / pages as u32,
    })
}

/// `loads` dependent loads along one random cycle through a buffer of `bytes` (touched first,
/// so that no page fault is counted).
fn memory_load(bytes: usize, loads: u32) -> Result<Cost> {
    // One slot per 64-byte line, so that every load is a line of its own.
    const STRIDE: usize = 8;
    let slots = bytes / std::mem::size_of::<usize>() / STRIDE;
    if slots < 2 {
        bail!("buffer too small");
    }
    let mut order: Vec<usize> = (0..slots).collect();
    // A fixed xorshift shuffle: deterministic, and random enough to defeat the prefetchers.
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in (1..slots).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        order.swap(i, (state % (i as u64 + 1)) as usize);
    }
    let mut next = vec![0usize; slots * STRIDE];
    for w in 0..slots {
        next[order[w] * STRIDE] = order[(w + 1) % slots] * STRIDE;
    }
    let (before, start) = (thread_cpu(), Instant::now());
    let mut at = 0;
    for _ in 0..loads {
        at = next[at];
    }
    let (cpu, wall) = (thread_cpu() - before, start.elapsed());
    std::hint::black_box(at);
    Ok(Cost {
        cpu: cpu / loads,
        wall: wall / loads,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The measurements run and give figures; what they are depends on the host, which no test
    /// asserts.
    #[test]
    fn every_cost_is_measured_and_a_round_trip_takes_cpu_time() {
        let cpu = crate::affinity::allowed_cpus().unwrap()[0];
        let one = round_trip(cpu, cpu, 100).unwrap();
        assert!(
            one.cpu > Duration::ZERO && one.wall > Duration::ZERO,
            "{one:?}"
        );
        assert!(page_fault(1 << 20).unwrap().wall > Duration::ZERO);
        assert!(memory_load(1 << 20, 1000).unwrap().wall > Duration::ZERO);
        assert!(page_fault(0).is_err());
    }
}
