//! The figures `bench soak` ([`super::soak`]) prints: throughput, latency overall and per kind,
//! the answers, the server's memory through the soak (the median of the samples around 10 %,
//! 50 % and the end of the requests, so that one burst of bodies in flight does not stand for a
//! trend), and what it held before and after.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};

use super::soak::SoakOptions;
use super::soak_mix::Kind;
use super::soak_probe::{self, Holdings, Sample};
use crate::output::outln;

/// What the soak measured.
pub(crate) struct Measured {
    pub seconds: f64,
    /// Every request's kind and latency.
    pub latencies: Vec<(Kind, Duration)>,
    pub honest: usize,
    pub hostile: usize,
    /// Wrong honest answers.
    pub wrong: usize,
    /// The first [`SHOWN`] of them, described whole.
    pub wrong_shown: Vec<String>,
    /// Hostile requests without an answer.
    pub unanswered: usize,
    pub samples: Vec<Sample>,
}

/// Wrong answers (and the server's warnings) printed whole.
pub(crate) const SHOWN: usize = 3;

pub(crate) fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

/// The latency at quantile `q` of sorted latencies, in ms.
fn quantile(sorted: &[Duration], q: f64) -> f64 {
    let at = ((sorted.len() as f64 * q) as usize).min(sorted.len().saturating_sub(1));
    sorted.get(at).map_or(0.0, |d| d.as_secs_f64() * 1e3)
}

/// Prints what the soak measured (`metrics`: the server's `/metrics` page at its end), and what
/// the server held idle before it (`start`) and after it (`end`).
pub(crate) fn print(
    options: &SoakOptions,
    soak: &Measured,
    start: &Holdings,
    end: &Holdings,
    metrics: &str,
) -> Result<()> {
    outln!("requests: {}", soak.latencies.len());
    outln!("elapsed: {:.1} s", soak.seconds);
    outln!(
        "requests/s: {:.1}",
        soak.latencies.len() as f64 / soak.seconds.max(1e-9)
    );
    let mut all: Vec<Duration> = soak.latencies.iter().map(|(_, d)| *d).collect();
    all.sort();
    outln!("latency all: {}", latency_line(&all));
    for kind in Kind::ALL {
        let mut of_kind: Vec<Duration> = soak
            .latencies
            .iter()
            .filter(|(k, _)| *k == kind)
            .map(|(_, d)| *d)
            .collect();
        of_kind.sort();
        outln!("latency {}: {}", kind.name(), latency_line(&of_kind));
    }
    outln!("honest answers: {}", soak.honest);
    outln!("wrong honest answers: {}", soak.wrong);
    for wrong in &soak.wrong_shown {
        outln!("{wrong}");
    }
    outln!(
        "hostile requests answered: {} of {}",
        soak.hostile - soak.unanswered,
        soak.hostile
    );
    outln!(
        "compiles (compile cache misses): {}",
        soak_probe::metric(metrics, "ioi_run_compile_cache_misses_total")
    );
    outln!(
        "compile cache: {} entries, {:.1} MiB",
        soak_probe::metric(metrics, "ioi_run_compile_cache_entries"),
        soak_probe::metric(metrics, "ioi_run_compile_cache_bytes") / (1 << 20) as f64
    );
    outln!(
        "verdict cache hits: {}, verdicts kept: {} in {} bytes",
        soak_probe::metric(metrics, "ioi_run_verdict_cache_hits_total"),
        soak_probe::metric(metrics, "ioi_run_verdict_cache_entries"),
        soak_probe::metric(metrics, "ioi_run_verdict_cache_bytes")
    );
    rss_figures(options, soak)?;
    outln!("rss after settling: {}", mib(end.rss_kib));
    for ((name, then), (_, now)) in start.checked().iter().zip(end.checked()) {
        outln!("{name}: start {then}, end {now}");
    }
    outln!(
        "mount table lines (the host's, not checked): start {}, end {}",
        start.mounts,
        end.mounts
    );
    let above = end.above(start);
    outln!(
        "resources back to start: {}",
        match above.is_empty() {
            true => "yes".to_string(),
            false => format!("no ({})", above.join(", ")),
        }
    );
    Ok(())
}

fn latency_line(sorted: &[Duration]) -> String {
    format!(
        "p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms ({} requests)",
        quantile(sorted, 0.5),
        quantile(sorted, 0.99),
        quantile(sorted, 1.0),
        sorted.len()
    )
}

/// The median RSS of the samples taken while between `from` and `to` percent of the requests
/// had been answered (the sample nearest `to` when none was), and how many samples that is.
fn rss_between(samples: &[Sample], requests: usize, from: usize, to: usize) -> (u64, usize) {
    let (low, high) = (requests * from / 100, requests * to / 100);
    let mut rss: Vec<u64> = samples
        .iter()
        .filter(|s| s.done >= low && s.done <= high)
        .map(|s| s.rss_kib)
        .collect();
    if rss.is_empty() {
        let nearest = samples.iter().find(|s| s.done >= high).or(samples.last());
        return (nearest.map_or(0, |s| s.rss_kib), 1);
    }
    rss.sort_unstable();
    (rss[rss.len() / 2], rss.len())
}

/// RSS around 10 %, 50 % and the end of the requests, its largest sample, its growth over the
/// second half, and the most descriptors and threads sampled.
fn rss_figures(options: &SoakOptions, soak: &Measured) -> Result<()> {
    let samples = &soak.samples;
    if samples.is_empty() {
        outln!("rss: no sample");
        return Ok(());
    }
    outln!(
        "rss samples: {} (every {:.1} s)",
        samples.len(),
        options.sample_every.as_secs_f64()
    );
    let requests = options.requests;
    let mut at = Vec::new();
    for (label, from, to) in [("warm-up end", 5, 15), ("middle", 45, 55), ("end", 90, 100)] {
        let (rss, count) = rss_between(samples, requests, from, to);
        outln!(
            "rss at {label}: {} (median of {count} samples, {from}-{to} % of the requests)",
            mib(rss)
        );
        at.push(rss);
    }
    let max = samples.iter().map(|s| s.rss_kib).max().unwrap_or(0);
    outln!("rss max: {}", mib(max));
    let (middle, end) = (at[1] as f64, at[2] as f64);
    outln!(
        "rss growth over the second half: {:.1} % (target < 5 %)",
        100.0 * (end - middle) / middle.max(1.0)
    );
    let most = |f: fn(&Sample) -> usize| samples.iter().map(f).max().unwrap_or(0);
    outln!(
        "during the soak: fds at most {}, threads at most {}",
        most(|s| s.fds),
        most(|s| s.threads)
    );
    Ok(())
}

/// Writes every sample to `path` as CSV: seconds, requests answered, RSS (KiB), fds, threads.
pub(crate) fn write_samples(path: &Path, samples: &[Sample]) -> Result<()> {
    let mut text = String::from("seconds,answered,rss_kib,fds,threads\n");
    for s in samples {
        text.push_str(&format!(
            "{:.1},{},{},{},{}\n",
            s.seconds, s.done, s.rss_kib, s.fds, s.threads
        ));
    }
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rss_of_a_stretch_is_the_median_of_its_samples() {
        let sample = |done, rss_kib| Sample {
            seconds: 0.0,
            done,
            rss_kib,
            fds: 0,
            threads: 0,
        };
        let samples = [
            sample(0, 1),
            sample(45, 100),
            sample(50, 900),
            sample(55, 110),
            sample(99, 120),
        ];
        assert_eq!(rss_between(&samples, 100, 45, 55), (110, 3));
        // No sample in the stretch: the next one.
        assert_eq!(rss_between(&samples, 100, 5, 15), (100, 1));
        assert_eq!(rss_between(&samples, 100, 90, 100), (120, 1));
    }
}
