//! `ioi-run bench evaluate`: dataset throughput on the demo scaled up, and ioi-run's own peak
//! memory while it streams a large (~1 GB) tests file.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use arrow::array::{ArrayRef, Int64Array, StringArray};
use arrow::record_batch::RecordBatch;
use serde_json::Value;

use crate::catalog::resolve_datasets;
use crate::catalog::Catalog;
use crate::evaluate::run::{self, EvaluateOptions};
use crate::evaluate::SubmissionOptions;
use crate::judge::schedule::{Progress, ScheduleOptions};
use crate::judge::{Judge, JudgeOptions};
use crate::output::outln;

/// CPU seconds of this process and every child it waited for (the sandboxes).
fn cpu_seconds() -> f64 {
    let usage = |who| {
        nix::sys::resource::getrusage(who).map(|u| {
            let t = |tv: nix::sys::time::TimeVal| tv.tv_sec() as f64 + tv.tv_usec() as f64 * 1e-6;
            t(u.user_time()) + t(u.system_time())
        })
    };
    usage(nix::sys::resource::UsageWho::RUSAGE_SELF).unwrap_or(0.0)
        + usage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN).unwrap_or(0.0)
}

/// Peak resident memory of this process since the last reset, in bytes.
fn peak_rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .map(|l| l.to_string())
        })
        .and_then(|l| {
            l.split_whitespace()
                .nth(1)
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}

/// Busy and total jiffies of the whole machine (`/proc/stat`'s first line), every process
/// included: on a shared machine, others' work counts too.
fn machine_jiffies() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let fields: Vec<u64> = stat
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .filter_map(|f| f.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal ...
    let idle = fields.get(3)? + fields.get(4).copied().unwrap_or(0);
    let total: u64 = fields.iter().take(8).sum();
    Some((total - idle, total))
}

/// One sample of the run.
#[derive(Debug, Clone, Copy)]
struct Sample {
    at: f64,
    /// CPU seconds of ioi-run and its reaped children.
    cpu: f64,
    machine: Option<(u64, u64)>,
    done: usize,
    active: usize,
    tests: usize,
    compiles: usize,
}

impl Sample {
    fn take(start: Instant, progress: &Progress) -> Sample {
        Sample {
            at: start.elapsed().as_secs_f64(),
            cpu: cpu_seconds(),
            machine: machine_jiffies(),
            done: progress.submissions_done.load(Ordering::Relaxed),
            active: progress.active.load(Ordering::Relaxed),
            tests: progress.tests_run.load(Ordering::Relaxed),
            compiles: progress.compiles.load(Ordering::Relaxed),
        }
    }
}

/// Cores busy between two samples: ours (ioi-run and the sandboxes it reaped, so a compile
/// counts when it ends) and the machine's (everyone's), as percentages of all cores.
fn busy(a: &Sample, b: &Sample, cores: usize) -> (f64, Option<f64>) {
    let wall = (b.at - a.at).max(1e-9);
    let ours = (b.cpu - a.cpu) / (wall * cores as f64) * 100.0;
    let machine = match (a.machine, b.machine) {
        (Some((busy0, total0)), Some((busy1, total1))) if total1 > total0 => {
            Some((busy1 - busy0) as f64 / (total1 - total0) as f64 * 100.0)
        }
        _ => None,
    };
    (ours, machine)
}

fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn options(datasets: &str, results: &Path, jobs: usize) -> Result<EvaluateOptions> {
    Ok(EvaluateOptions {
        datasets: resolve_datasets(datasets)?,
        results_dir: results.to_path_buf(),
        local_results_path: results.to_path_buf(),
        submissions: SubmissionOptions::default(),
        schedule: ScheduleOptions {
            jobs,
            batch_size: 1,
            selection: Default::default(),
            timeout: None,
        },
        override_existing: false,
        shard: None,
        settings: Default::default(),
        strict: true,
    })
}

/// The demo submissions repeated `n` times over, each with a distinct code (a comment), so
/// that every submission is really compiled, as in a model's dataset.
pub(super) fn scaled_demo(dir: &Path, n: usize) -> Result<std::path::PathBuf> {
    crate::evaluate::demo::extract(dir)?;
    let rows: Vec<serde_json::Map<String, Value>> =
        std::fs::read_to_string(dir.join("submissions.jsonl"))?
            .lines()
            .map(|l| {
                serde_json::from_str::<Value>(l)?
                    .as_object()
                    .cloned()
                    .context("row is an object")
            })
            .collect::<Result<_>>()?;
    let mut out = String::new();
    for i in 0..n {
        let mut row = rows[i % rows.len()].clone();
        row.insert("uuid".into(), Value::String(format!("bench-{i}")));
        let marker = format!("// variant {i}\n");
        if let Some(Value::String(code)) = row
            .get_mut("code")
            .filter(|c| c.as_str().is_some_and(|s| !s.is_empty()))
        {
            code.push_str(&marker);
        } else if let Some(Value::String(generation)) = row.get_mut("generation") {
            if let Some(pos) = generation.rfind("```cpp\n") {
                generation.insert_str(pos + 7, &marker);
            }
        }
        out.push_str(&Value::Object(row).to_string());
        out.push('\n');
    }
    let path = dir.join("scaled.jsonl");
    std::fs::write(&path, out)?;
    Ok(path)
}

pub fn run(submissions: usize, jobs: usize, tests_gb: f64, timeline: bool) -> Result<i32> {
    let root = tempfile::tempdir()?;
    let judge = Judge::new(JudgeOptions {
        cache_dir: root.path().join("cache"),
        ..JudgeOptions::default()
    })?;
    throughput(root.path(), &judge, submissions, jobs, timeline)?;
    streaming(root.path(), &judge, jobs, tests_gb)?;
    Ok(0)
}

/// The demo scaled to `submissions`, judged on `jobs` workers: throughput, CPU, where the
/// workers' time went, and (with `timeline`) the cores' use over time.
fn throughput(
    root: &Path,
    judge: &Judge,
    submissions: usize,
    jobs: usize,
    timeline: bool,
) -> Result<()> {
    let demo = root.join("demo");
    let subs = scaled_demo(&demo, submissions)?;
    let catalog = Catalog::load(&[demo.join("problems")], &[])?;
    let opts = options(&subs.to_string_lossy(), &root.join("results"), jobs)?;
    let progress = Progress::default();
    let (cpu0, start) = (cpu_seconds(), Instant::now());
    // Samples every 250 ms, to find when work stopped remaining (the last submission
    // admitted: from then on, the tail) and how busy the cores were before.
    let stop = AtomicBool::new(false);
    let (summary, samples) = std::thread::scope(|scope| {
        let sampler = scope.spawn(|| {
            let mut samples = vec![Sample::take(start, &progress)];
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(250));
                samples.push(Sample::take(start, &progress));
            }
            samples
        });
        let summary = run::evaluate(&opts, &catalog, judge, &progress, &|_| {});
        stop.store(true, Ordering::Relaxed);
        let mut samples = sampler.join().unwrap_or_default();
        samples.push(Sample::take(start, &progress));
        (summary, samples)
    });
    let summary = summary?;
    let (wall, cpu) = (start.elapsed().as_secs_f64(), cpu_seconds() - cpu0);
    let tests = progress
        .tests_run
        .load(std::sync::atomic::Ordering::Relaxed);
    outln!(
        "throughput: {} submissions (demo scaled, distinct code each), {jobs} workers",
        summary.judged
    );
    outln!(
        "  wall {wall:.1} s, {tests} tests run, {:.1} tests/s, {:.1} submissions/min",
        tests as f64 / wall,
        summary.judged as f64 / wall * 60.0
    );
    outln!(
        "  CPU utilisation {:.0}% of {jobs} cores (compiles included), {:.2} CPU s per submission",
        cpu / (wall * jobs as f64) * 100.0,
        cpu / summary.judged.max(1) as f64,
    );
    print_worker_time(&progress, wall, jobs)?;
    print_samples(&samples, summary.judged, wall, timeline)
}

/// Where the workers' time went: working, lent, and each reason for waiting.
fn print_worker_time(progress: &Progress, wall: f64, jobs: usize) -> Result<()> {
    let working = progress
        .working_nanos
        .load(std::sync::atomic::Ordering::Relaxed) as f64
        * 1e-9;
    outln!(
        "  workers busy {:.1}% of the time (loading, compiling, running; the rest is waiting for work)",
        working / (wall * jobs as f64) * 100.0
    );
    let idle = &progress.idle;
    let share = |nanos: &std::sync::atomic::AtomicU64| {
        nanos.load(Ordering::Relaxed) as f64 * 1e-9 / (wall * jobs as f64) * 100.0
    };
    outln!(
        "  of it, untimed work (loads, compiles) in the slot a Communication test's manager waits in: {:.1}% of worker time",
        share(&progress.lent_nanos)
    );
    outln!(
        "  workers waiting for work, share of worker time: a wide test waiting for slots {:.1}%, a problem loading {:.1}%, admission cap {:.1}%, other results {:.1}%, tail {:.1}%",
        share(&idle.wide_test),
        share(&idle.loading),
        share(&idle.admission_cap),
        share(&idle.other),
        share(&idle.tail),
    );
    Ok(())
}

/// How busy the cores were while work remained and in the tail, and with `timeline` every
/// second's sample; `total` submissions were judged.
fn print_samples(samples: &[Sample], total: usize, wall: f64, timeline: bool) -> Result<()> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    // Work remains until every submission has been admitted (then the last ones run out).
    let remains_until = samples
        .iter()
        .position(|s| s.done + s.active >= total)
        .unwrap_or(samples.len() - 1);
    let percent = |p: Option<f64>| p.map_or("unknown".to_string(), |p| format!("{p:.0}%"));
    if let (Some(first), Some(cut), Some(last)) =
        (samples.first(), samples.get(remains_until), samples.last())
    {
        let (ours, machine) = busy(first, cut, cores);
        outln!(
            "  while work remains ({:.1} s of {wall:.1} s): cores busy {ours:.0}% with ioi-run (sandboxes counted when reaped), machine {} (everyone; load average at the end {})",
            cut.at - first.at,
            percent(machine),
            super::scheduler::load_average(),
        );
        let (ours, machine) = busy(cut, last, cores);
        outln!(
            "  tail ({:.1} s, the last {} submissions): cores busy {ours:.0}% with ioi-run, machine {}",
            last.at - cut.at,
            total.saturating_sub(cut.done),
            percent(machine),
        );
    }
    if timeline {
        outln!("  timeline: seconds, cores busy (ioi-run, machine), done, active, compiles, tests");
        for pair in samples.windows(2).step_by(4) {
            let (ours, machine) = busy(&pair[0], &pair[1], cores);
            let s = pair[1];
            outln!(
                "    {:6.2}  {ours:4.0}% {:>5}  {:4} {:4} {:5} {:6}",
                s.at,
                percent(machine),
                s.done,
                s.active,
                s.compiles,
                s.tests
            );
        }
    }

    Ok(())
}

/// The peak memory of judging one submission of a problem whose tests sit in a tests file of
/// about `tests_gb` gigabytes, streamed.
fn streaming(root: &Path, judge: &Judge, jobs: usize, tests_gb: f64) -> Result<()> {
    let (problems, tests, judged_bytes) = big_tests(root, tests_gb)?;
    let file_size = std::fs::metadata(&tests)?.len();
    let catalog = Catalog::load(&[problems], &[tests])?;
    let subs = root.join("bigsum.jsonl");
    let code = "#include <cstdio>\nint main(){ long long s = 0, x; while (scanf(\"%lld\", &x) == 1) s += x; printf(\"%lld\\n\", s); }\n";
    std::fs::write(
        &subs,
        format!(
            "{}\n",
            serde_json::json!({"uuid": "big", "problem_id": "bigsum", "year": 2024, "code": code})
        ),
    )?;
    let opts = options(&subs.to_string_lossy(), &root.join("results-big"), jobs)?;
    reset_peak_rss();
    let before = peak_rss();
    let summary = run::evaluate(&opts, &catalog, judge, &Progress::default(), &|_| {})?;
    let peak = peak_rss();
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    outln!(
        "streaming: tests file {:.0} MiB on disk ({:.0} MiB of tests, {:.0} MiB for the judged problem), {} submission judged",
        mib(file_size),
        tests_gb * 1024.0,
        mib(judged_bytes),
        summary.judged
    );
    outln!(
        "  ioi-run peak resident memory {:.0} MiB (before: {:.0} MiB)",
        mib(peak),
        mib(before)
    );
    Ok(())
}

/// Writes problem rows for `bigsum` and `decoy`, and an open-r1/ioi-test-cases parquet of about
/// `gb` gigabytes where most bytes belong to the decoy problem.
fn big_tests(root: &Path, gb: f64) -> Result<(std::path::PathBuf, std::path::PathBuf, u64)> {
    let test_bytes: usize = 8 << 20;
    let total_tests = ((gb * (1u64 << 30) as f64) / test_bytes as f64)
        .ceil()
        .max(2.0) as usize;
    let judged_tests = 4.min(total_tests / 2).max(1);
    let mut loaded = Vec::new();
    for (id, count) in [
        ("bigsum", judged_tests),
        ("decoy", total_tests - judged_tests),
    ] {
        let dir = root.join("cms").join(id);
        let names: Vec<String> = (0..count).map(|i| format!("{i:03}")).collect();
        std::fs::create_dir_all(dir.join("tests"))?;
        std::fs::create_dir_all(dir.join("subtasks"))?;
        std::fs::create_dir_all(dir.join("graders"))?;
        std::fs::write(
            dir.join("problem.json"),
            r#"{"name": "Big", "time_limit": 2.0, "memory_limit": 268435456, "task_type": "Batch", "task_type_params": "{}", "score_precision": 2}"#,
        )?;
        std::fs::write(dir.join("graders").join(format!("{id}.h")), "\n")?;
        for n in &names {
            std::fs::write(dir.join("tests").join(format!("{n}.in")), "")?;
            std::fs::write(dir.join("tests").join(format!("{n}.out")), "")?;
        }
        let list = names
            .iter()
            .map(|n| format!("\"{n}\""))
            .collect::<Vec<_>>()
            .join(",");
        std::fs::write(
            dir.join("subtasks/01-all.json"),
            format!("{{\"score\": 100, \"testcases\": [{list}]}}"),
        )?;
        let (mut problem, tests) = crate::problem::cms::load_cms(&dir)?;
        problem.year = 2024;
        loaded.push((problem, tests));
    }
    let problems = root.join("problems.parquet");
    crate::problem::convert::write_openr1(&loaded, &problems, &root.join("small-tests.parquet"))?;

    // The big file, written one test per row group so that writing is bounded too.
    let tests_path = root.join("tests.parquet");
    let line: String = (0..test_bytes / 8)
        .map(|i| format!("{:07}\n", i % 9_999_999))
        .collect();
    let sum: u64 = (0..test_bytes / 8).map(|i| (i % 9_999_999) as u64).sum();
    let schema = Arc::new(arrow::datatypes::Schema::new(
        [
            "year",
            "day",
            "problem_name",
            "problem_id",
            "test_name",
            "test_input",
            "test_output",
        ]
        .iter()
        .map(|n| {
            arrow::datatypes::Field::new(
                *n,
                if *n == "year" {
                    arrow::datatypes::DataType::Int64
                } else {
                    arrow::datatypes::DataType::Utf8
                },
                false,
            )
        })
        .collect::<Vec<_>>(),
    ));
    let props = parquet::file::properties::WriterProperties::builder()
        .set_max_row_group_size(1)
        .build();
    let mut writer = parquet::arrow::ArrowWriter::try_new(
        std::fs::File::create(&tests_path)?,
        schema.clone(),
        Some(props),
    )?;
    let mut judged_bytes = 0u64;
    for (id, count) in [
        ("decoy", total_tests - judged_tests),
        ("bigsum", judged_tests),
    ] {
        for i in 0..count {
            let columns: Vec<ArrayRef> = vec![
                Arc::new(Int64Array::from(vec![2024])),
                Arc::new(StringArray::from(vec!["1"])),
                Arc::new(StringArray::from(vec![id])),
                Arc::new(StringArray::from(vec![id])),
                Arc::new(StringArray::from(vec![format!("{i:03}")])),
                Arc::new(StringArray::from(vec![line.as_str()])),
                Arc::new(StringArray::from(vec![format!("{sum}\n")])),
            ];
            writer.write(&RecordBatch::try_new(schema.clone(), columns)?)?;
            if id == "bigsum" {
                judged_bytes += line.len() as u64;
            }
        }
    }
    writer.close()?;
    Ok((problems, tests_path, judged_bytes))
}
