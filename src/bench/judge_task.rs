//! `ioi-run bench judge --task DIR`: a real task folder's submission (its model solution by
//! default) judged as a new submission, again and again, with the problem's artifacts (the
//! manager, the checker) cached: the per-submission cost a judging fleet pays. Beside it, the
//! reference per-test workflow (the compile and run scripts in a fresh box for every test, as a
//! Piston worker does) on a few of the same tests, and where a Communication test's wall time
//! goes, phase by phase.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::judge::phases::{self, Phase};
use crate::judge::schedule::{self, Preloaded, Progress, ScheduleOptions, SubmissionJob};
use crate::judge::scripts::{self, ScriptBuild, Scripts};
use crate::judge::{Judge, JudgeOptions, Language};
use crate::output::outln;

use super::floor::{Floor, Processes};

/// What `bench judge --task` is asked for.
pub struct TaskBench<'a> {
    pub task: &'a Path,
    /// The submission; `None`: the task's model solution.
    pub solution: Option<&'a Path>,
    pub jobs: usize,
    /// Timed judgings of the submission, each a new submission.
    pub repeats: usize,
    /// Tests the reference per-test workflow is measured on (its time per test is then
    /// multiplied by the task's tests).
    pub reference_tests: usize,
    /// isolate (built by tools/build-isolate.sh): a second floor, each test's processes in a
    /// box of isolate's own.
    pub isolate: Option<&'a Path>,
}

/// The submission a task folder's own solutions offer: the first C++ file of
/// `solutions/model_solution`, else of `solutions/correct`, else of `solutions`.
fn model_solution(task: &Path) -> Result<PathBuf> {
    for dir in ["solutions/model_solution", "solutions/correct", "solutions"] {
        let Ok(entries) = std::fs::read_dir(task.join(dir)) else {
            continue;
        };
        let mut sources: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "cpp") && p.is_file())
            .collect();
        sources.sort();
        if let Some(first) = sources.into_iter().next() {
            return Ok(first);
        }
    }
    bail!(
        "{}: no solutions/model_solution/*.cpp, solutions/correct/*.cpp or solutions/*.cpp; \
         give one with --solution",
        task.display()
    )
}

/// One judging: the wall time of the compile and every test, and each test's score and CPU
/// time, by test name.
fn judge_once(judge: &Judge, task: &Path, code: &[u8], jobs: usize) -> Result<(f64, Scores)> {
    let (problem, test_set) = crate::problem::cms::load_cms(task)?;
    let source = Preloaded::new(judge.prepare(problem, test_set)?);
    let scores = Mutex::new(Scores::default());
    let failure = Mutex::new(None);
    let options = ScheduleOptions {
        jobs,
        batch_size: 1,
        selection: Default::default(),
        timeout: None,
    };
    let job = SubmissionJob {
        problem: "task".into(),
        code: Some(code.to_vec()),
        language: Language::Cpp,
    };
    let start = Instant::now();
    schedule::run(
        judge,
        &source,
        &[job],
        &options,
        &Progress::default(),
        &|f| match f.outcome {
            Ok(judged) => {
                if let Ok(mut scores) = scores.lock() {
                    for t in judged.results.iter().flat_map(|s| s.test_results.iter()) {
                        scores
                            .0
                            .push((t.test_name.clone(), t.score, t.time.unwrap_or(0.0)));
                    }
                }
            }
            Err(e) => {
                if let Ok(mut failure) = failure.lock() {
                    *failure = Some(format!("{e:#}"));
                }
            }
        },
    )?;
    let wall = start.elapsed().as_secs_f64();
    if let Some(e) = failure.into_inner().ok().flatten() {
        bail!("the submission could not be judged: {e}");
    }
    let mut scores = scores.into_inner().unwrap_or_default();
    scores.0.sort_by(|a, b| a.0.cmp(&b.0));
    scores.0.dedup_by(|a, b| a.0 == b.0);
    Ok((wall, scores))
}

/// Each test's (name, score, CPU seconds), by name.
#[derive(Default)]
struct Scores(Vec<(String, f64, f64)>);

impl Scores {
    fn verdicts(&self) -> Vec<(&str, f64)> {
        self.0.iter().map(|(n, s, _)| (n.as_str(), *s)).collect()
    }
    fn cpu(&self) -> f64 {
        self.0.iter().map(|t| t.2).sum()
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

pub fn run(bench: &TaskBench) -> Result<i32> {
    let solution = match bench.solution {
        Some(path) => path.to_path_buf(),
        None => model_solution(bench.task)?,
    };
    let code =
        std::fs::read(&solution).with_context(|| format!("cannot read {}", solution.display()))?;
    let isolate = bench
        .isolate
        .map(super::isolate::Isolate::new)
        .transpose()
        .map_err(crate::error::usage)?;
    let root = tempfile::tempdir()?;
    let judge = Judge::new(JudgeOptions {
        cache_dir: root.path().join("cache"),
        ..JudgeOptions::default()
    })?;
    // Each judging is a new submission: the code with a comment of its own, so that its compile
    // is never a cache hit. The first (untimed) compiles the problem's artifacts.
    let submission = |n: usize| {
        let mut code = code.clone();
        code.extend_from_slice(format!("\n// bench submission {n}\n").as_bytes());
        code
    };
    let (_, first) = judge_once(&judge, bench.task, &submission(0), bench.jobs)?;
    let tests = first.0.len();
    if tests == 0 {
        bail!("{}: the submission ran no test", bench.task.display());
    }
    let (problem, test_set) = crate::problem::cms::load_cms(bench.task)?;
    let loaded = judge.prepare(problem, test_set)?;
    let floor_tests: Vec<&crate::problem::TestCase> = first
        .0
        .iter()
        .filter_map(|t| loaded.tests.get(&t.0))
        .collect();
    if isolate.is_some() {
        let processes = match &loaded.problem.task {
            crate::problem::TaskType::Communication(c) => c.num_processes.max(1),
            crate::problem::TaskType::Batch => 1,
        };
        super::isolate_floor::check_capacity(bench.jobs, processes)?;
    }
    wait_for_header(&judge, &loaded.problem, &code);
    let built_before = judge.sandbox().boxes_built_on_demand();
    // The floor runs no test through the judge: the phases are ioi-run's alone.
    phases::enable();
    let paired = (1..=bench.repeats.max(1))
        .map(|n| {
            let (wall, scores) = judge_once(&judge, bench.task, &submission(n), bench.jobs)?;
            if scores.verdicts() != first.verdicts() {
                bail!("judging {n} gave other verdicts than the first");
            }
            let measure = |processes| {
                super::floor::measure(
                    &judge,
                    &loaded.problem,
                    &loaded.tools,
                    &submission(n),
                    &floor_tests,
                    &first.0,
                    bench.jobs,
                    processes,
                )
            };
            let floor = measure(Processes::Plain)?;
            let boxed = isolate
                .as_ref()
                .map(|isolate| measure(Processes::Isolate(isolate)))
                .transpose()?;
            Ok((wall, (floor, boxed)))
        })
        .collect::<Result<Vec<(f64, (Floor, Option<Floor>))>>>();
    phases::disable();
    // Paired and alternated: a judgement, then the floor of the same submission, so that the
    // machine's load weighs on both alike.
    let (walls, floors): (Vec<f64>, Vec<(Floor, Option<Floor>)>) = paired?.into_iter().unzip();
    let (floors, boxed): (Vec<Floor>, Vec<Option<Floor>>) = floors.into_iter().unzip();
    let boxed: Option<Vec<Floor>> = boxed.into_iter().collect();
    let built = judge.sandbox().boxes_built_on_demand() - built_before;
    let ours = median(walls.clone());
    let score: f64 = first.0.iter().map(|t| t.1).sum();

    outln!(
        "task {} ({tests} tests), submission {}: {score:.2} of {tests} tests' points, \
         solution CPU {:.1} ms per test",
        bench.task.display(),
        solution.display(),
        first.cpu() / tests as f64 * 1e3
    );
    outln!(
        "ioi-run, a new submission, problem artifacts cached, {} workers: median {ours:.3} s \
         of {} ({})",
        bench.jobs,
        walls.len(),
        walls
            .iter()
            .map(|w| format!("{w:.3}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let floor_compile = median(floors.iter().map(|f| f.compile).collect());
    print_phases(bench, tests, &walls, built, floor_compile)?;
    print_floor(
        &format!(
            "floor (plain g++ with the same flags, header and grader objects; each test's \
             processes started plainly, same pipes, {} workers)",
            bench.jobs
        ),
        "the floor",
        &walls,
        &floors,
    )?;
    if let Some(boxed) = &boxed {
        print_floor(
            &format!(
                "floor with a sandbox per process (the same plain g++; each test's processes \
                 in isolate boxes of their own, --init, --run, --cleanup each, as CMS runs \
                 them, {} workers)",
                bench.jobs
            ),
            "the sandboxed floor",
            &walls,
            boxed,
        )?;
    }

    // The reference: a fresh box per test, the compile script then the run script in it.
    let reference = reference_per_test(&judge, bench.task, &code, bench.reference_tests, &first)?;
    let one_worker = reference * tests as f64;
    let all_workers = one_worker / bench.jobs as f64;
    outln!(
        "reference per-test workflow (compile + run per test): {:.0} ms per test \
         (measured on {} tests): {one_worker:.1} s on 1 worker, {all_workers:.1} s on {}",
        reference * 1e3,
        bench.reference_tests.min(tests),
        bench.jobs
    );
    outln!(
        "ratio: {:.0}x the reference on {} workers ({:.0}x one worker)",
        all_workers / ours,
        bench.jobs,
        one_worker / ours
    );
    Ok(0)
}

/// Where a judgement's wall time goes: the submission's compile against the floor's
/// (`floor_compile`, seconds), then a test's phases, over the `walls` judgings of `tests`
/// tests (when the judge recorded them), and how many boxes were built on a run's path.
fn print_phases(
    bench: &TaskBench,
    tests: usize,
    walls: &[f64],
    built: u64,
    floor_compile: f64,
) -> Result<()> {
    let totals = phases::totals();
    let recorded = |phase: Phase| totals.iter().find(|t| t.0 == phase).map(|t| (t.1, t.2));
    let Some((_, tests_wall)) = recorded(Phase::Test).filter(|(count, _)| *count > 0) else {
        return Ok(());
    };
    let judgings = walls.len() as f64;
    let ours = median(walls.to_vec());
    let compile = recorded(Phase::Compile).map_or(Duration::ZERO, |(_, total)| total);
    outln!(
        "where a judgement's wall time goes (mean over {} judgings):",
        walls.len()
    );
    outln!(
        "  {:<58} {:>7.1} ms  (the floor's plain g++: {:.1} ms)",
        Phase::Compile.describe(),
        compile.as_secs_f64() * 1e3 / judgings,
        floor_compile * 1e3
    );
    outln!("  per test (ms per test):");
    let per_test = |d: Duration| d.as_secs_f64() * 1e3 / (tests as f64 * judgings);
    for (phase, count, total) in totals.iter().filter(|t| t.0 != Phase::Compile) {
        // A Batch test has no FIFOs and no second process.
        if *count == 0 {
            continue;
        }
        outln!(
            "    {:<56} {:>7.2} ms  ({:.2} per test)",
            phase.describe(),
            per_test(*total),
            *count as f64 / (tests as f64 * judgings)
        );
    }
    outln!(
        "    {:<56} {:>7.2} ms",
        "slots in neither a test nor the compile (waits), per test and worker",
        (ours * bench.jobs as f64 - (tests_wall + compile).as_secs_f64() / judgings) * 1e3
            / tests as f64
    );
    outln!(
        "    boxes built on a run's path: {:.2} per test",
        built as f64 / (tests as f64 * judgings)
    );
    Ok(())
}

/// A floor's figures (`described`: what it ran) and each judgement's ratio to the floor it was
/// paired with, printed as `against` it.
fn print_floor(described: &str, against: &str, walls: &[f64], floors: &[Floor]) -> Result<()> {
    let ratios: Vec<f64> = walls
        .iter()
        .zip(floors)
        .map(|(ours, floor)| ours / floor.total())
        .collect();
    outln!(
        "{described}: median {:.3} s (compile {:.3} s, tests {:.3} s)",
        median(floors.iter().map(Floor::total).collect()),
        median(floors.iter().map(|f| f.compile).collect()),
        median(floors.iter().map(|f| f.tests).collect()),
    );
    outln!(
        "against {against}: {:.2}x (median of {} paired runs: {})",
        median(ratios.clone()),
        ratios.len(),
        ratios
            .iter()
            .map(|r| format!("{r:.2}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    Ok(())
}

/// Waits (a bounded time) until the precompiled header `code` would use is built, so that the
/// timed judgements and the floor compile with it alike.
fn wait_for_header(judge: &Judge, problem: &crate::problem::Problem, code: &[u8]) {
    let headers: Vec<String> = problem
        .grader_files
        .iter()
        .filter_map(|f| f.path.strip_prefix("graders/"))
        .filter(|n| n.ends_with(".h") && !n.contains('/'))
        .map(str::to_string)
        .collect();
    let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
    let text = String::from_utf8_lossy(code);
    if crate::judge::pch::split(&text, &headers).is_none() {
        return;
    }
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(300) {
        let ready = judge
            .cache()
            .unsandboxed_submission(
                problem,
                code,
                crate::judge::compile::CompileProfile::Reference,
            )
            .is_some_and(|c| c.args.iter().any(|a| a == "-include"));
        if ready {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Seconds per test of the reference per-test workflow, on the first `count` tests.
/// Each must give the score ioi-run gave (`ours`): a baseline that judges otherwise is no
/// baseline.
fn reference_per_test(
    judge: &Judge,
    task: &Path,
    code: &[u8],
    count: usize,
    ours: &Scores,
) -> Result<f64> {
    let (problem, test_set) = crate::problem::cms::load_cms(task)?;
    let names: Vec<&String> = test_set.cases.keys().take(count.max(1)).collect();
    let start = Instant::now();
    for name in &names {
        let ScriptBuild::Box(compiled) =
            scripts::compile(judge.sandbox(), &Scripts::default(), &problem, code)?
        else {
            bail!("the submission did not compile with the reference compile script");
        };
        let verdict = scripts::run_test(
            judge.sandbox(),
            &problem,
            &compiled,
            &test_set.cases[name.as_str()],
            None,
        )?;
        let our_score = ours.0.iter().find(|t| &t.0 == *name).map(|t| t.1);
        if our_score.is_some_and(|s| s != verdict.score) {
            bail!(
                "the reference workflow scored test {name} {} ({}), ioi-run {}",
                verdict.score,
                verdict.feedback,
                our_score.unwrap_or(0.0)
            );
        }
    }
    Ok(start.elapsed().as_secs_f64() / names.len() as f64)
}
