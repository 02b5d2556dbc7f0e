//! The floor of a judgement with a sandbox per process, for `bench judge --task --isolate`:
//! each test's processes run in isolate (the IOI's sandbox), as CMS runs them, every process
//! in a box of its own, initialised before its run and cleaned up after. The same files and
//! pipes as the plain floor (`super::floor`), the same scores, over the same workers. It is what
//! any judge that gives each process a fresh sandbox pays at least, set beside what a judge
//! with no sandbox at all pays.

use std::path::Path;
use std::process::Stdio;

use anyhow::{ensure, Context, Result};

use super::floor_scores::{manager_score, score_of, white_diff_score, Started};
use super::isolate::{Isolate, IsolateBox};
use crate::judge::ProblemTools;
use crate::problem::{Communication, TaskType, TestCase, UserIo};

/// The first box id the floor uses; each worker takes [`BOXES_PER_WORKER`] after it.
const FIRST_BOX: u32 = 100;
/// Boxes of one worker: a solution and its checker, or a manager and its user processes.
const BOXES_PER_WORKER: u32 = 10;
/// isolate's boxes (`num_boxes` of its configuration).
const BOXES: u32 = 1000;

/// Checks that `workers` workers' boxes fit in isolate's, for a task of `processes` user
/// processes.
pub fn check_capacity(workers: usize, processes: usize) -> Result<()> {
    ensure!(
        (processes as u32) < BOXES_PER_WORKER,
        "--isolate: {processes} user processes need more than {BOXES_PER_WORKER} boxes a test"
    );
    ensure!(
        FIRST_BOX + workers as u32 * BOXES_PER_WORKER <= BOXES,
        "--isolate: {workers} workers need more than isolate's {BOXES} boxes"
    );
    Ok(())
}

/// A fresh box for process `role` of `worker`'s test.
fn fresh_box(isolate: &Isolate, worker: usize, role: u32) -> Result<IsolateBox<'_>> {
    isolate.init(FIRST_BOX + worker as u32 * BOXES_PER_WORKER + role)
}

/// Limits of every run: generous (the floor measures, it does not judge limits), with room for
/// a manager's threads.
fn limits() -> Vec<String> {
    [
        "--time=20",
        "--wall-time=60",
        "--processes=16",
        "--fsize=1048576",
    ]
    .map(String::from)
    .to_vec()
}

/// One test in isolate boxes: its score.
pub fn run_test(
    isolate: &Isolate,
    worker: usize,
    task: &TaskType,
    tools: &ProblemTools,
    program: &Path,
    test: &TestCase,
) -> Result<f64> {
    match task {
        TaskType::Batch => batch(isolate, worker, tools, program, test),
        TaskType::Communication(params) => {
            communication(isolate, worker, params, tools, program, test)
        }
    }
}

fn batch(
    isolate: &Isolate,
    worker: usize,
    tools: &ProblemTools,
    program: &Path,
    test: &TestCase,
) -> Result<f64> {
    let solution = fresh_box(isolate, worker, 0)?;
    solution.put(program, "program")?;
    solution.put(&test.input, "input.txt")?;
    let mut options = limits();
    options.extend(["--stdin=input.txt".into(), "--stdout=output.txt".into()]);
    let run = solution.run(&options, &["./program".into()])?;
    if !run.status.success() {
        return Ok(0.0);
    }
    let output = solution.dir.join("output.txt");
    match &tools.checker {
        Some(checker) => {
            let check = fresh_box(isolate, worker, 1)?;
            check.put(checker, "checker")?;
            check.put(&test.input, "input.txt")?;
            check.put(&test.output, "correct_output.txt")?;
            check.put(&output, "contestant_output.txt")?;
            drop(solution);
            let mut options = limits();
            options.extend(["--stdout=checker.out".into(), "--stderr=checker.err".into()]);
            let argv = [
                "./checker",
                "input.txt",
                "correct_output.txt",
                "contestant_output.txt",
            ]
            .map(String::from);
            check.run(&options, &argv)?;
            let read = |name: &str| std::fs::read(check.dir.join(name)).unwrap_or_default();
            score_of(&read("checker.out"), &read("checker.err"), "checker")
        }
        None => white_diff_score(test, &output),
    }
}

/// The manager and each user process in boxes of their own, the FIFOs in a folder bound into
/// every one of them at `/fifo`, as CMS binds them.
fn communication(
    isolate: &Isolate,
    worker: usize,
    params: &Communication,
    tools: &ProblemTools,
    program: &Path,
    test: &TestCase,
) -> Result<f64> {
    use std::os::unix::fs::PermissionsExt;
    let manager_path = tools.manager.as_ref().context("no manager")?;
    let n = params.num_processes.max(1);
    let fifos = tempfile::tempdir().context("cannot create the FIFOs' folder")?;
    std::fs::set_permissions(fifos.path(), std::fs::Permissions::from_mode(0o777))?;
    for i in 0..n {
        for name in [format!("u{i}_to_m"), format!("m_to_u{i}")] {
            let path = fifos.path().join(name);
            nix::unistd::mkfifo(&path, nix::sys::stat::Mode::from_bits_truncate(0o666))
                .with_context(|| format!("cannot make the FIFO {}", path.display()))?;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666))?;
        }
    }
    let bind = format!("--dir=/fifo={}:rw", fifos.path().display());
    let manager = fresh_box(isolate, worker, 0)?;
    manager.put(manager_path, "manager")?;
    manager.put(&test.input, "input.txt")?;
    let mut options = limits();
    options.extend([bind.clone(), "--stdin=input.txt".into()]);
    let mut argv = vec!["./manager".to_string()];
    for i in 0..n {
        argv.push(format!("/fifo/u{i}_to_m"));
        argv.push(format!("/fifo/m_to_u{i}"));
    }
    argv.extend(params.manager_args.iter().cloned());
    let manager_run = Started::new(
        manager
            .command(&options, &argv)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("cannot start the manager in isolate")?,
    );
    // Dropped in reverse: on an early end the processes are killed before their boxes go.
    let mut boxes = Vec::new();
    let mut users = Vec::new();
    for i in 0..n {
        let user = fresh_box(isolate, worker, 1 + i as u32)?;
        user.put(program, "program")?;
        let mut options = limits();
        options.push(bind.clone());
        let mut argv = vec!["./program".to_string()];
        match params.user_io {
            UserIo::StdIo => {
                options.push(format!("--stdin=/fifo/m_to_u{i}"));
                options.push(format!("--stdout=/fifo/u{i}_to_m"));
            }
            UserIo::FifoIo => {
                argv.push(format!("/fifo/m_to_u{i}"));
                argv.push(format!("/fifo/u{i}_to_m"));
            }
        }
        if n > 1 {
            argv.push(i.to_string());
        }
        users.push(Started::new(
            user.command(&options, &argv)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .context("cannot start a user process in isolate")?,
        ));
        boxes.push(user);
    }
    let score = manager_score(users, manager_run);
    drop(boxes);
    drop(manager);
    score
}
