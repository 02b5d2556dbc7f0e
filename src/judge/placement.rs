//! Where a test's processes run (docs/judging.md#cpu-placement).
//!
//! A Communication test's manager and user processes wake one another at every message. On one
//! CPU a wake-up is a context switch (about 2 µs a round trip); across the CPUs of a virtual
//! machine it is an interrupt through the hypervisor (about 25 µs measured on a 2-vCPU cloud
//! VM), charged to the writer as system time, so a task with 10⁵ round trips would be judged
//! a second slower than on the contest's bare-metal machine. The processes of one
//! Communication test therefore share one CPU, and the test takes one of the scheduler's
//! slots. The CPU is leased per test from a [`CpuPool`]: the one with the fewest placed tests
//! running, taking the CPUs in turn among equals, so that the tests of a full machine spread
//! over every core. Batch tests are not placed: the host's scheduler moves a lone process to
//! whatever core is free.

use std::sync::Mutex;

use crate::problem::TaskType;

/// How the processes of one Communication test are placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Placement {
    /// On one CPU, leased per test; the test takes one scheduler slot.
    #[default]
    SharedCpu,
    /// Wherever the host's scheduler puts them; the test takes a slot per process. Kept for
    /// `bench roundtrips`, which measures what sharing a CPU changes.
    Host,
}

impl Placement {
    /// The scheduler's slots one test of a `task` takes (the CPUs its processes may use at
    /// once), and of them those held for a process that mostly waits (a manager), which the
    /// scheduler lends to untimed work.
    pub fn test_slots(self, task: &TaskType) -> (usize, usize) {
        match (task, self) {
            (TaskType::Communication(c), Placement::Host) => (c.num_processes.max(1) + 1, 1),
            _ => (1, 0),
        }
    }

    /// The name `bench roundtrips` prints.
    pub fn as_str(self) -> &'static str {
        match self {
            Placement::SharedCpu => "shared-cpu",
            Placement::Host => "host",
        }
    }
}

/// The CPUs tests are placed on, and how many placed tests run on each.
#[derive(Debug)]
pub struct CpuPool {
    cpus: Vec<usize>,
    state: Mutex<PoolState>,
}

#[derive(Debug)]
struct PoolState {
    /// Placed tests running, by index into `cpus`.
    running: Vec<usize>,
    /// Where the search for the least busy CPU starts: past the last one leased.
    next: usize,
}

/// One CPU leased to one test, returned when dropped.
#[derive(Debug)]
pub struct CpuLease<'a> {
    pool: &'a CpuPool,
    index: usize,
}

impl CpuPool {
    /// A pool of `cpus` (never empty: with no CPU known, CPU 0).
    pub fn new(mut cpus: Vec<usize>) -> CpuPool {
        if cpus.is_empty() {
            cpus.push(0);
        }
        CpuPool {
            state: Mutex::new(PoolState {
                running: vec![0; cpus.len()],
                next: 0,
            }),
            cpus,
        }
    }

    /// The CPUs this process may run on.
    pub fn of_this_process() -> CpuPool {
        CpuPool::new(ioi_sandbox::allowed_cpus().unwrap_or_default())
    }

    /// Leases the CPU with the fewest placed tests, the first such CPU from the one after the
    /// last leased.
    pub fn lease(&self) -> CpuLease<'_> {
        let mut state = self.lock();
        let n = self.cpus.len();
        let start = state.next;
        let index = (0..n)
            .map(|k| (start + k) % n)
            .min_by_key(|&i| state.running[i])
            .unwrap_or(0);
        state.running[index] += 1;
        state.next = (index + 1) % n;
        CpuLease { pool: self, index }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, PoolState> {
        // Counts are updated in single statements: a panicking holder leaves them whole.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl CpuLease<'_> {
    /// The CPU leased.
    pub fn cpu(&self) -> usize {
        self.pool.cpus[self.index]
    }
}

impl Drop for CpuLease<'_> {
    fn drop(&mut self) {
        self.pool.lock().running[self.index] -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tests_take_the_cpus_in_turn_and_a_returned_cpu_is_taken_first() {
        let pool = CpuPool::new(vec![2, 5, 7]);
        let a = pool.lease();
        let b = pool.lease();
        assert_eq!((a.cpu(), b.cpu()), (2, 5));
        drop(a);
        // CPU 2 is free again and 7 was never taken: among equals, the turn goes on.
        let c = pool.lease();
        assert_eq!(c.cpu(), 7);
        let d = pool.lease();
        assert_eq!(d.cpu(), 2);
        // Every CPU holds one test: the next shares, still in turn.
        let e = pool.lease();
        assert_eq!(e.cpu(), 5);
        drop((b, c, d, e));
        let cpus: Vec<usize> = (0..6).map(|_| pool.lease().cpu()).collect();
        assert_eq!(cpus, [7, 2, 5, 7, 2, 5], "leases dropped at once rotate");
    }

    #[test]
    fn a_busy_cpu_is_passed_over_while_another_is_idle() {
        let pool = CpuPool::new(vec![0, 1]);
        let long = pool.lease();
        assert_eq!(long.cpu(), 0);
        for _ in 0..4 {
            assert_eq!(pool.lease().cpu(), 1, "CPU 0 runs a test");
        }
    }

    #[test]
    fn a_communication_test_on_one_cpu_takes_one_slot() {
        let two_users = TaskType::Communication(crate::problem::Communication {
            num_processes: 2,
            user_io: crate::problem::UserIo::FifoIo,
            manager_args: Vec::new(),
        });
        assert_eq!(Placement::SharedCpu.test_slots(&two_users), (1, 0));
        assert_eq!(Placement::Host.test_slots(&two_users), (3, 1));
        for placement in [Placement::SharedCpu, Placement::Host] {
            assert_eq!(placement.test_slots(&TaskType::Batch), (1, 0));
        }
    }

    #[test]
    fn a_pool_without_cpus_places_on_cpu_0() {
        assert_eq!(CpuPool::new(Vec::new()).lease().cpu(), 0);
    }
}
