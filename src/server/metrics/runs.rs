//! What the executor's program runs and compiles measured, as histograms filled when they
//! happen: CPU time and peak memory of every program run a request causes (the submission's
//! processes, one per user process of a test), by how the run ended and the request's
//! language, and the time of every compile, by language and whether the compile cache had it.
//!
//! Every label comes from a closed set: the outcome is the sandbox's [`Termination`](ioi_sandbox::Termination), the
//! language a runtime's or `/run_code` language's name (`&'static str`), the cache use a
//! [`CacheUse`]. A request cannot add a series.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use crate::judge::observer::{CacheUse, CompileObserver};
use crate::judge::{Language, ProcessRun};

/// Buckets of a run's CPU time: 1 ms to ~33 s, doubling (IOI limits are 0.5–10 s; a run
/// killed at its limit lands just above it).
pub fn run_seconds_buckets() -> impl Iterator<Item = f64> {
    exponential_buckets(0.001, 2.0, 16)
}

/// Buckets of a run's peak memory: 64 KiB to 4 GiB (the most a request may give a process),
/// doubling.
pub fn memory_bytes_buckets() -> impl Iterator<Item = f64> {
    exponential_buckets(64.0 * 1024.0, 2.0, 17)
}

/// Buckets of a compile's time: 1 ms (a cache hit) to ~66 s, doubling.
pub fn compile_seconds_buckets() -> impl Iterator<Item = f64> {
    exponential_buckets(0.001, 2.0, 17)
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RunLabels {
    language: &'static str,
    outcome: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CompileLabels {
    language: &'static str,
    cache: &'static str,
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

/// The histograms; clones share them (one is the compile cache's observer, one is registered).
#[derive(Clone)]
pub struct RunMetrics {
    cpu: Histograms<RunLabels>,
    memory: Histograms<RunLabels>,
    compile: Histograms<CompileLabels>,
}

impl Default for RunMetrics {
    fn default() -> Self {
        RunMetrics {
            cpu: Family::new_with_constructor(|| Histogram::new(run_seconds_buckets())),
            memory: Family::new_with_constructor(|| Histogram::new(memory_bytes_buckets())),
            compile: Family::new_with_constructor(|| Histogram::new(compile_seconds_buckets())),
        }
    }
}

impl RunMetrics {
    /// Counts the program runs `runs` of a request in `language`.
    pub fn record_runs(&self, language: &'static str, runs: &[ProcessRun]) {
        for run in runs {
            let labels = RunLabels {
                language,
                outcome: run.termination.as_str(),
            };
            self.cpu
                .get_or_create(&labels)
                .observe(run.cpu_time.max(0.0));
            self.memory
                .get_or_create(&labels)
                .observe(run.memory as f64);
        }
    }

    /// Counts one program run that ended as `outcome`.
    pub fn record_outcome(&self, language: &'static str, outcome: &ioi_sandbox::Outcome) {
        self.record_runs(language, &[ProcessRun::of(outcome)]);
    }

    pub(super) fn register(&self, registry: &mut Registry) {
        registry.register(
            "program_cpu_seconds",
            "CPU time of each program run, by language and how the run ended",
            self.cpu.clone(),
        );
        registry.register(
            "program_memory_bytes",
            "Peak memory of each program run, by language and how the run ended",
            self.memory.clone(),
        );
        registry.register(
            "compile_seconds",
            "Time of each compile, by language and whether the compile cache had it",
            self.compile.clone(),
        );
    }
}

impl CompileObserver for RunMetrics {
    fn compiled(&self, language: Language, cache: CacheUse, took: Duration) {
        self.compile
            .get_or_create(&CompileLabels {
                language: language_label(language),
                cache: cache.as_str(),
            })
            .observe(took.as_secs_f64());
    }
}

/// The `language` label of a compile.
fn language_label(language: Language) -> &'static str {
    match language {
        Language::Cpp => "cpp",
        Language::C => "c",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ioi_sandbox::Termination;
    use prometheus_client::encoding::text::encode;

    fn run(termination: Termination, cpu_time: f64, memory: u64) -> ProcessRun {
        ProcessRun {
            termination,
            cpu_time,
            memory,
        }
    }

    #[test]
    fn runs_are_counted_by_language_and_outcome_in_cumulative_buckets() {
        let metrics = RunMetrics::default();
        let mut registry = Registry::with_prefix("ioi_run");
        metrics.register(&mut registry);
        metrics.record_runs(
            "cms_ioi",
            &[
                run(Termination::Ok, 0.0015, 3 << 20),
                run(Termination::TimeLimit, 1.2, 5 << 20),
            ],
        );
        metrics.record_runs("cms_ioi", &[run(Termination::Ok, 0.5, 100 << 10)]);
        metrics.compiled(Language::C, CacheUse::Hit, Duration::from_millis(3));
        let mut text = String::new();
        encode(&mut text, &registry).unwrap();
        let ok = "language=\"cms_ioi\",outcome=\"ok\"";
        assert!(
            text.contains(&format!("ioi_run_program_cpu_seconds_count{{{ok}}} 2")),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "ioi_run_program_cpu_seconds_bucket{{le=\"0.002\",{ok}}} 1"
            )),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "ioi_run_program_memory_bytes_bucket{{le=\"131072.0\",{ok}}} 1"
            )),
            "{text}"
        );
        assert!(
            text.contains(
                "ioi_run_program_cpu_seconds_count{language=\"cms_ioi\",outcome=\"time_limit\"} 1"
            ),
            "{text}"
        );
        assert!(
            text.contains("ioi_run_compile_seconds_count{language=\"c\",cache=\"hit\"} 1"),
            "{text}"
        );
    }
}
