//! Outside load: busy loops that occupy the machine while a measurement or a test runs beside
//! them (`bench judge --outside-load`, and the tests that check verdicts and CPU times hold on
//! a busy machine).

use anyhow::{Context, Result};

/// Busy loops (`sh -c 'while :; do :; done'`), each a session of its own; killed by pid and
/// reaped when dropped, even when the test holding them fails.
pub struct BusyLoops(Vec<std::process::Child>);

impl BusyLoops {
    /// Starts `count` loops. On failure, those already started are stopped (dropped).
    pub fn start(count: usize) -> Result<BusyLoops> {
        use std::os::unix::process::CommandExt;
        let mut loops = BusyLoops(Vec::new());
        for _ in 0..count {
            let mut cmd = std::process::Command::new("sh");
            cmd.args(["-c", "while :; do :; done"]);
            // Each loop a session of its own, as independent work is: where the kernel groups
            // tasks by session (autogroup), each then takes a full share.
            // SAFETY: setsid is async-signal-safe and touches no memory.
            unsafe {
                cmd.pre_exec(|| {
                    nix::unistd::setsid()
                        .map(|_| ())
                        .map_err(std::io::Error::from)
                });
            }
            loops
                .0
                .push(cmd.spawn().context("cannot start a busy loop (sh)")?);
        }
        Ok(loops)
    }

    /// Process ids of the loops.
    pub fn pids(&self) -> Vec<u32> {
        self.0.iter().map(std::process::Child::id).collect()
    }
}

impl Drop for BusyLoops {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loops_run_while_held_and_are_gone_once_dropped() {
        let loops = BusyLoops::start(2).unwrap();
        let pids = loops.pids();
        assert_eq!(pids.len(), 2);
        for pid in &pids {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
            assert!(!stat.contains(") Z "), "{stat}");
        }
        drop(loops);
        for pid in &pids {
            // Killed and reaped: no process (not even a zombie) under that pid, unless the
            // kernel already gave the pid to a new process, which then has another start.
            let gone = std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
                .map_or(true, |c| !c.contains("while :; do :; done"));
            assert!(gone, "loop {pid} still runs");
        }
    }
}
