//! The client pool of the serve benchmarks (`bench serve`, Piston's and SandboxFusion's routes
//! alike): a fixed number of client threads, each with its own HTTP agent, taking the requests in
//! order and timing each one.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::Result;

/// Sends every item of `work` with `clients` client threads (client `k` has its own agent with
/// `timeout`), each taking the next item in order until none is left; returns the elapsed
/// seconds and every request's latency, sorted.
pub(crate) fn send_all<T: Sync>(
    work: &[T],
    clients: usize,
    timeout: Duration,
    send: impl Fn(&ureq::Agent, usize, &T) -> Result<()> + Sync,
) -> Result<(f64, Vec<Duration>)> {
    let next = AtomicUsize::new(0);
    let latencies = Mutex::new(Vec::with_capacity(work.len()));
    let start = Instant::now();
    std::thread::scope(|s| -> Result<()> {
        let workers: Vec<_> = (0..clients.max(1))
            .map(|client| {
                let (next, latencies, send) = (&next, &latencies, &send);
                s.spawn(move || -> Result<()> {
                    let agent = ureq::AgentBuilder::new().timeout(timeout).build();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = work.get(i) else {
                            return Ok(());
                        };
                        let t = Instant::now();
                        send(&agent, client, item)?;
                        if let Ok(mut l) = latencies.lock() {
                            l.push(t.elapsed());
                        }
                    }
                })
            })
            .collect();
        for worker in workers {
            worker
                .join()
                .map_err(|_| anyhow::anyhow!("a client thread panicked"))??;
        }
        Ok(())
    })?;
    let elapsed = start.elapsed().as_secs_f64();
    let mut latencies = latencies
        .into_inner()
        .map_err(|_| anyhow::anyhow!("latency lock poisoned"))?;
    latencies.sort();
    Ok((elapsed, latencies))
}
