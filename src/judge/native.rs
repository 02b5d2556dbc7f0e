//! The native runner: Batch (docs/judging.md#batch) and Communication
//! (docs/judging.md#communication) tasks run directly in the sandbox, each program in its own box,
//! with the limits and verdicts of docs/judging.md#limits-and-verdicts.
//!
//! The solution never sees the expected output, the checker, the manager or other tests: its
//! box is a private tmpfs (counted as its memory), the input arrives on stdin, the program
//! binary is bind-mounted read-only, and its output goes through stdout to a file in a
//! root-only host folder it cannot reach. The judge therefore never opens a path the solution
//! could have replaced (a symlink to the expected output, a FIFO, a huge sparse file).

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use ioi_sandbox::{Bind, Limits, Outcome, RunSpec, Sandbox, Stdio, Termination};

use super::check::{self, CORRECT, WRONG};
use super::kept::{self, Kept};
use super::phases::{self, Phase};
use super::relay::{self, Relay, Tail, Transcript};
use super::stop;
use super::workdir::read_capped;
use super::{ProblemTools, ProcessRun, TestVerdict};
use crate::problem::{Communication, Problem, TaskType, TestCase, UserIo};
use crate::score::Verdict;

/// Where the program binary appears inside its box.
pub(crate) const PROGRAM: &str = "/sol/program";

/// Limits of a user process: CPU and memory from the problem, a wall clock a few times the
/// CPU limit (stops sleepers without penalising a loaded machine), unlimited stack.
pub(crate) fn solution_limits(problem: &Problem) -> Limits {
    let tl = problem.time_limit;
    Limits {
        cpu_time: Some(Duration::from_secs_f64(tl)),
        wall_time: Some(Duration::from_secs_f64(tl * 3.0 + 1.0)),
        memory: Some(problem.memory_limit),
        processes: Some(64),
        output_size: Some(1 << 30),
        open_files: Some(64),
        stack: None,
    }
}

/// Limits of trusted tools (checker, manager): generous, but bounded.
fn tool_limits(problem: &Problem, processes: usize) -> Limits {
    let cpu = (problem.time_limit * 2.0 * processes as f64 + 10.0).max(20.0);
    Limits {
        cpu_time: Some(Duration::from_secs_f64(cpu)),
        wall_time: Some(Duration::from_secs_f64(
            problem.time_limit * 3.0 + 1.0 + cpu,
        )),
        memory: Some(4 << 30),
        processes: Some(16),
        output_size: Some(1 << 30),
        open_files: Some(64),
        stack: None,
    }
}

/// The verdict of a user process that did not end normally (status and feedback), or `None`
/// when it exited 0. A run that ioi-run stopped itself is [`stop::Aborted`], never a verdict.
pub(crate) fn failure(outcome: &Outcome, limits: &Limits) -> Result<Option<(Verdict, String)>> {
    stop::check_outcome(outcome)?;
    Ok(Some(match outcome.status {
        Termination::Ok => return Ok(None),
        Termination::TimeLimit | Termination::WallTimeLimit => {
            (Verdict::TimeLimit, "Time limit exceeded".to_string())
        }
        Termination::MemoryLimit => (Verdict::MemoryLimit, "Memory limit exceeded".to_string()),
        Termination::OutputLimit => (
            Verdict::WrongAnswer,
            format!(
                "{WRONG}: output limit exceeded (more than {} bytes)",
                limits.output_size.unwrap_or(u64::MAX)
            ),
        ),
        Termination::Signaled => (
            Verdict::RuntimeError,
            format!(
                "Runtime error: killed by signal {}",
                signal_words(outcome.signal.unwrap_or(0))
            ),
        ),
        Termination::RuntimeError => (
            Verdict::RuntimeError,
            format!(
                "Runtime error: exit code {}",
                outcome.exit_code.unwrap_or(-1)
            ),
        ),
        Termination::InternalError => {
            return Err(crate::error::host(anyhow::anyhow!(
                "sandbox failure: {}",
                outcome.message
            )))
        }
    }))
}

/// A signal as ioi-run's messages name it, number and name: `11 (SIGSEGV)`.
pub fn signal_words(signal: i32) -> String {
    format!("{signal} ({})", ioi_sandbox::signal_name(signal))
}

/// The most a Batch solution may write: twice the expected output plus 64 MiB. Enough for any
/// right answer (a checker may accept outputs unlike the expected one, hence the margin),
/// and it bounds what the judge reads on the solution's behalf: a right answer followed by
/// a gigabyte of whitespace is stopped at the limit instead of costing seconds of white-diff.
pub fn output_limit(expected_bytes: u64) -> u64 {
    expected_bytes
        .saturating_mul(2)
        .saturating_add(OUTPUT_MARGIN)
}

/// See [`output_limit`].
pub const OUTPUT_MARGIN: u64 = 64 << 20;

/// A verdict decided from a score (checker, manager, white-diff) for a program that ended
/// normally: 0 is WA whatever the wording, 1 AC, anything else PA.
fn scored(score: f64, feedback: String, runs: &[Outcome]) -> TestVerdict {
    let status = if score == 0.0 {
        Verdict::WrongAnswer
    } else if score == 1.0 {
        Verdict::Accepted
    } else {
        Verdict::Partial
    };
    verdict(score, feedback, status, runs)
}

/// The verdict of a test whose user processes ended as `runs` (one for Batch).
fn verdict(score: f64, feedback: String, status: Verdict, runs: &[Outcome]) -> TestVerdict {
    let usage = combined_usage(runs);
    TestVerdict {
        score,
        feedback,
        time: usage.cpu_time,
        wall_time: usage.wall_time,
        memory: usage.memory,
        status: Some(status),
        runs: runs.iter().map(ProcessRun::of).collect(),
    }
}

/// What a run does for someone debugging it (`judge`): where a test's streams are kept, and
/// what the solution's processes find in their environment (a sanitizer's options under the
/// debug profile). The default keeps nothing and adds nothing.
#[derive(Debug, Clone, Default)]
pub struct Debugging {
    /// Every test's streams are copied here ([`kept`]); the solution's standard error is
    /// captured only then, and a Communication run is relayed only then: `--input`'s, and the
    /// second run [`replay`] makes of a judged test.
    pub keep_dir: Option<PathBuf>,
    /// Added to the environment of every user process.
    pub env: Vec<(String, String)>,
}

impl Debugging {
    /// Sets up a user process's spec: its environment, and its stderr to `stderr` when kept.
    fn prepare(&self, spec: &mut RunSpec, stderr: PathBuf) {
        spec.env.extend(self.env.iter().cloned());
        if self.keep_dir.is_some() {
            spec.stderr = Stdio::Path(stderr);
        }
    }

    /// Copies the streams of a test that has ended, each file (missing ones are empty) under
    /// its kind; files of one kind follow one another.
    fn keep(&self, test: &str, files: &[(Kept, &[PathBuf])]) -> Result<()> {
        let Some(dir) = &self.keep_dir else {
            return Ok(());
        };
        for (kind, paths) in files {
            let paths: Vec<&Path> = paths.iter().map(PathBuf::as_path).collect();
            kept::copy_all(&paths, dir, test, *kind)?;
        }
        Ok(())
    }
}

/// Batch: the solution reads the input on stdin, writes its output to a file; then the
/// checker, or white-diff, decides.
pub fn run_batch(
    sandbox: &Sandbox,
    problem: &Problem,
    tools: &ProblemTools,
    program: &Path,
    test: &TestCase,
    debugging: &Debugging,
) -> Result<TestVerdict> {
    let private = private_dir()?;
    let verdict = batch_verdict(sandbox, problem, tools, program, test, debugging, &private);
    let at = |name: &str| vec![private.path().join(name)];
    let kept = debugging.keep(
        &test.name,
        &[
            (Kept::Output, &at("output.txt")),
            (Kept::Stderr, &at("stderr.txt")),
            (
                Kept::Checker,
                &[
                    private.path().join("checker.out"),
                    private.path().join("checker.err"),
                ],
            ),
        ],
    );
    crate::scratch::remove_later(private);
    let verdict = verdict?;
    kept?;
    Ok(verdict)
}

/// Runs a Batch test in the root-only folder `private` and decides its verdict.
fn batch_verdict(
    sandbox: &Sandbox,
    problem: &Problem,
    tools: &ProblemTools,
    program: &Path,
    test: &TestCase,
    debugging: &Debugging,
    private: &tempfile::TempDir,
) -> Result<TestVerdict> {
    let output = private.path().join("output.txt");
    let mut spec = RunSpec::in_tmpfs(problem.memory_limit, [PROGRAM]);
    spec.binds.push(Bind::read_only(program, PROGRAM));
    spec.stdin = Stdio::Path(test.input.clone());
    spec.stdout = Stdio::Path(output.clone());
    debugging.prepare(&mut spec, private.path().join("stderr.txt"));
    spec.limits = solution_limits(problem);
    let expected_bytes = fs::metadata(&test.output)
        .with_context(|| format!("cannot read {}", test.output.display()))?
        .len();
    spec.limits.output_size = Some(output_limit(expected_bytes));
    let run = timed_run(sandbox, &spec);
    if let Some((status, feedback)) = failure(&run, &spec.limits)? {
        return Ok(verdict(0.0, feedback, status, std::slice::from_ref(&run)));
    }
    let decide = phases::now();
    let (score, feedback) = match &tools.checker {
        Some(checker) => run_checker(sandbox, problem, checker, test, private.path())?,
        None if check::white_diff(&test.output, &output)? => (1.0, CORRECT.to_string()),
        None => (0.0, WRONG.to_string()),
    };
    phases::since(Phase::Verdict, decide);
    Ok(scored(score, feedback, std::slice::from_ref(&run)))
}

/// `checker input.txt correct_output.txt contestant_output`, in its own box; `private` is the
/// test's root-only folder, holding the contestant's `output.txt`, where the checker's
/// stdout and stderr go too.
fn run_checker(
    sandbox: &Sandbox,
    problem: &Problem,
    checker: &Path,
    test: &TestCase,
    private: &Path,
) -> Result<(f64, String)> {
    let argv = [
        "/tools/checker",
        "/data/input.txt",
        "/data/correct_output.txt",
        "/data/contestant_output.txt",
    ];
    let mut spec = RunSpec::in_tmpfs(TOOL_BOX_BYTES, argv);
    spec.binds = vec![
        Bind::read_only(checker, "/tools/checker"),
        Bind::read_only(&test.input, "/data/input.txt"),
        Bind::read_only(&test.output, "/data/correct_output.txt"),
        Bind::read_only(private.join("output.txt"), "/data/contestant_output.txt"),
    ];
    spec.stdout = Stdio::Path(private.join("checker.out"));
    spec.stderr = Stdio::Path(private.join("checker.err"));
    spec.limits = tool_limits(problem, 1);
    let run = sandbox.run(&spec);
    stop::check_outcome(&run)?;
    let stdout = read_capped(&private.join("checker.out"))?;
    let stderr = read_capped(&private.join("checker.err"))?;
    match run.status {
        // testlib checkers may exit non-zero on WA while still printing the score.
        Termination::Ok | Termination::RuntimeError => {
            check::parse_verdict(&stdout, &stderr, "checker")
                .with_context(|| format!("checker on test {} ({})", test.name, run.message))
        }
        _ => bail!(
            "the checker failed on test {}: {} (stderr: {})",
            test.name,
            run.message,
            stderr.trim()
        ),
    }
}

/// Box size of trusted tools (their box is scratch space only).
const TOOL_BOX_BYTES: u64 = 256 << 20;

/// A root-only host folder (mode 0700) for outputs: no sandbox can reach it.
pub(crate) fn private_dir() -> Result<tempfile::TempDir> {
    crate::scratch::tempdir("out")
}

/// FIFOs of one Communication test: `fifo{i}/u{i}_to_m` and `fifo{i}/m_to_u{i}` per user,
/// which the manager and the users share; relayed ([`relay`]), the users have FIFOs of their
/// own under the same names in `user{i}/`.
struct Fifos {
    root: tempfile::TempDir,
    count: usize,
    relayed: bool,
}

impl Fifos {
    fn new(count: usize, relayed: bool) -> Result<Fifos> {
        use std::os::unix::fs::PermissionsExt;
        let root = crate::scratch::tempdir("fifos")?;
        fs::set_permissions(root.path(), fs::Permissions::from_mode(0o755))?;
        let fifos = Fifos {
            root,
            count,
            relayed,
        };
        for i in 0..count {
            for dir in [fifos.dir(i), fifos.user_dir(i)] {
                if dir.exists() {
                    continue;
                }
                fs::create_dir(&dir)?;
                fs::set_permissions(&dir, fs::Permissions::from_mode(0o755))?;
                for name in [to_manager_name(i), to_user_name(i)] {
                    let path = dir.join(name);
                    nix::unistd::mkfifo(&path, nix::sys::stat::Mode::from_bits_truncate(0o666))
                        .with_context(|| format!("cannot create the FIFO {}", path.display()))?;
                    // The umask may have removed bits: both sandboxes must open it.
                    fs::set_permissions(&path, fs::Permissions::from_mode(0o666))?;
                }
            }
        }
        Ok(fifos)
    }
    /// The manager's folder of user `i`'s FIFOs.
    fn dir(&self, i: usize) -> PathBuf {
        self.root.path().join(format!("fifo{i}"))
    }
    /// User `i`'s folder of FIFOs: the manager's, unless relayed.
    fn user_dir(&self, i: usize) -> PathBuf {
        match self.relayed {
            true => self.root.path().join(format!("user{i}")),
            false => self.dir(i),
        }
    }
    fn to_manager(&self, i: usize) -> PathBuf {
        self.dir(i).join(to_manager_name(i))
    }
    fn to_user(&self, i: usize) -> PathBuf {
        self.dir(i).join(to_user_name(i))
    }
    /// What the relay of user `i` copies between.
    fn sides(&self, i: usize) -> relay::Sides {
        relay::Sides {
            manager_to_user: self.to_user(i),
            user_to_manager: self.to_manager(i),
            process_to_user: self.user_dir(i).join(to_user_name(i)),
            process_to_manager: self.user_dir(i).join(to_manager_name(i)),
        }
    }

    /// Opens every FIFO of the first `count` users once for reading and once for writing,
    /// without blocking, and closes it again: a process blocked opening the other end returns
    /// (a blocked reader counts as one, so the non-blocking open for writing succeeds). The
    /// folders are root's, so the paths are the FIFOs created here; `O_NOFOLLOW` all the same.
    fn release(&self, count: usize) {
        use nix::fcntl::{open, OFlag};
        let flags = OFlag::O_NONBLOCK | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        for i in 0..count.min(self.count) {
            let dirs = [self.dir(i), self.user_dir(i)];
            let paths = dirs
                .iter()
                .flat_map(|d| [d.join(to_manager_name(i)), d.join(to_user_name(i))]);
            for path in paths.take(if self.relayed { 4 } else { 2 }) {
                for mode in [OFlag::O_RDONLY, OFlag::O_WRONLY] {
                    // ENXIO (no reader yet) is expected: nobody is blocked on that side.
                    drop(open(&path, flags | mode, nix::sys::stat::Mode::empty()));
                }
            }
        }
    }
}

/// The names of user `i`'s FIFOs.
fn to_manager_name(i: usize) -> String {
    format!("u{i}_to_m")
}
fn to_user_name(i: usize) -> String {
    format!("m_to_u{i}")
}

/// Communication: the manager and N user processes, each in its own sandbox, connected by
/// FIFOs. A user process that fails decides the verdict; otherwise the manager does.
pub fn run_communication(
    sandbox: &Sandbox,
    problem: &Problem,
    tools: &ProblemTools,
    program: &Path,
    test: &TestCase,
    cpu: Option<usize>,
    debugging: &Debugging,
) -> Result<TestVerdict> {
    let TaskType::Communication(params) = &problem.task else {
        bail!("{} is not a Communication task", problem.id)
    };
    let setup = phases::now();
    // Directly connected: a relay would add a wake-up to every message (see `replay`).
    let (conversation, user_stderr) = placed_conversation(
        (params, problem, tools, program),
        (&test.input, &solution_limits(problem)),
        (cpu, debugging),
        false,
    )?;
    phases::since(Phase::Setup, setup);
    let verdict = communication_verdict(sandbox, problem, tools, test, &conversation);
    let at = |name: &str| conversation.private.path().join(name);
    let kept = debugging.keep(
        &test.name,
        &[
            (Kept::Stderr, &user_stderr),
            (Kept::ManagerOut, &[at("manager.out")]),
            (Kept::ManagerErr, &[at("manager.err")]),
            (Kept::Output, &[at("output.txt")]),
            (Kept::Checker, &[at("checker.out"), at("checker.err")]),
        ],
    );
    let verdict = verdict.and_then(|v| kept.map(|()| v));
    let teardown = phases::now();
    crate::scratch::remove_later(conversation.fifos.root);
    crate::scratch::remove_later(conversation.private);
    phases::since(Phase::Teardown, teardown);
    verdict
}

/// The manager and user processes of a Communication run on `input`, the users with
/// `user_limits`, the manager with the task's, placed on `cpu` (or where the host puts them):
/// connected directly, or through a relay (`relayed`); with the files where the users'
/// standard errors go for `debugging` (see [`Conversation::debug_users`]).
fn placed_conversation(
    (params, problem, tools, program): (&Communication, &Problem, &ProblemTools, &Path),
    (input, user_limits): (&Path, &Limits),
    (cpu, debugging): (Option<usize>, &Debugging),
    relayed: bool,
) -> Result<(Conversation, Vec<PathBuf>)> {
    let Some(manager) = &tools.manager else {
        bail!("Communication task {} has no compiled manager", problem.id)
    };
    let mut conversation =
        Conversation::new(params, manager, program, input, user_limits, relayed)?;
    conversation.manager.limits = tool_limits(problem, conversation.users.len());
    for spec in std::iter::once(&mut conversation.manager).chain(&mut conversation.users) {
        spec.cpu = cpu;
    }
    let user_stderr = conversation.debug_users(debugging, params.user_io, cpu)?;
    Ok((conversation, user_stderr))
}

/// Runs a Communication test again with its conversation relayed ([`relay`]), for someone
/// debugging it, and keeps what was said under the test's name
/// (docs/debugging.md#the-conversation); nothing is judged, and none of the judged run's files
/// is replaced.
///
/// A test is judged with its processes connected directly, as `evaluate` and `serve` judge
/// it: a relay adds a wake-up of the judge to every message, and while the judge's thread waits
/// for a CPU the process waiting for its message is charged wall time (measured on a loaded
/// 2-core machine: a test of 10⁵ round trips took 1.2-2.6 s of wall time relayed against
/// 0.4-0.9 s direct, under a wall limit of 4 s). So the verdict and the times always come from
/// the direct run, and `judge` relays a second run of the tests it explains. A solution that
/// behaves the same on the same input says the same again; one that does not (randomness,
/// timing) may say something else, which the explanation says.
pub fn replay(
    sandbox: &Sandbox,
    problem: &Problem,
    tools: &ProblemTools,
    program: &Path,
    test: &TestCase,
    cpu: Option<usize>,
    debugging: &Debugging,
) -> Result<()> {
    let TaskType::Communication(params) = &problem.task else {
        return Ok(());
    };
    let (conversation, _) = placed_conversation(
        (params, problem, tools, program),
        (&test.input, &solution_limits(problem)),
        (cpu, debugging),
        true,
    )?;
    let ran = conversation.run(sandbox);
    let files = conversation.captured_files();
    let files: Vec<(Kept, &[PathBuf])> = files.iter().map(|(k, p)| (*k, p.as_slice())).collect();
    let kept = debugging.keep(&test.name, &files);
    crate::scratch::remove_later(conversation.fifos.root);
    crate::scratch::remove_later(conversation.private);
    let (manager_run, user_runs, _) = ran?;
    kept?;
    stop::check_outcome(&manager_run)?;
    for run in &user_runs {
        stop::check_outcome(run)?;
    }
    Ok(())
}

/// Runs a Communication test's conversation and decides its verdict.
fn communication_verdict(
    sandbox: &Sandbox,
    problem: &Problem,
    tools: &ProblemTools,
    test: &TestCase,
    conversation: &Conversation,
) -> Result<TestVerdict> {
    let (manager_run, user_runs, released) = conversation.run(sandbox)?;
    let Conversation {
        private,
        users: user_specs,
        ..
    } = conversation;
    let decide = phases::now();

    let usage = user_runs.as_slice();
    stop::check_outcome(&manager_run)?;
    for (run, spec) in user_runs.iter().zip(user_specs) {
        if let Some((status, feedback)) = failure(run, &spec.limits)? {
            return Ok(verdict(0.0, feedback, status, usage));
        }
    }
    if let Some(checker) = &tools.checker {
        let (score, feedback) =
            check_manager_output(sandbox, problem, checker, test, private, &manager_run)?;
        phases::since(Phase::Verdict, decide);
        return Ok(scored(score, feedback, usage));
    }
    let stdout = read_capped(&private.path().join("manager.out"))?;
    let stderr = read_capped(&private.path().join("manager.err"))?;
    let parsed = check::parse_verdict(&stdout, &stderr, "manager");
    phases::since(Phase::Verdict, decide);
    let stopped_talking = || {
        scored(
            0.0,
            format!("{WRONG}: the solution stopped communicating"),
            usage,
        )
    };
    match (manager_run.status, parsed) {
        // A manager killed after printing its verdict (e.g. SIGPIPE when the solution quit).
        (_, Ok((score, feedback))) => Ok(scored(score, feedback, usage)),
        (_, Err(_)) if manager_run.signal == Some(libc::SIGPIPE) => Ok(stopped_talking()),
        // Every user process had ended while the manager still waited on them: whatever the
        // manager made of the end of the conversation, the solution ended it.
        (_, Err(_)) if released => Ok(stopped_talking()),
        (_, Err(e)) => bail!(
            "the manager failed on test {}: {} ({e:#}; stderr: {})",
            test.name,
            manager_run.message,
            stderr.trim()
        ),
    }
}

/// Runs the manager and the user processes at once, each on its own thread, and returns their
/// outcomes, and whether the manager outlived every user process.
///
/// A process blocked opening a FIFO whose other side has already ended would wait until its
/// wall limit (a user that exits before opening its FIFOs leaves the manager blocked in
/// `open`). So once one side has ended for good, the judge opens and closes the other end of
/// every FIFO until the remaining side ends too: its `open` returns, its reads see end of file
/// and its writes a broken pipe, and it reaches its verdict at once.
///
/// Relayed, the relay runs beside them, and ends once they all have: a relay still blocked
/// opening a FIFO is released the same way.
fn converse(
    sandbox: &Sandbox,
    manager_spec: &RunSpec,
    user_specs: &[RunSpec],
    fifos: &Fifos,
    relay: Option<&Relay>,
) -> (Outcome, Vec<Outcome>, bool, Option<Captured>) {
    use std::sync::mpsc;
    std::thread::scope(|s| {
        let relaying = relay.map(|relay| (relay, s.spawn(|| relay.run())));
        // Each thread says when its run ended: `None` for the manager, `Some(i)` for user i.
        let (ended_tx, ended) = mpsc::channel::<Option<usize>>();
        let users: Vec<_> = user_specs
            .iter()
            .enumerate()
            .map(|(i, spec)| {
                let tx = ended_tx.clone();
                s.spawn(move || {
                    let run = timed_run(sandbox, spec);
                    let _ = tx.send(Some(i));
                    run
                })
            })
            .collect();
        let manager = {
            let tx = ended_tx.clone();
            s.spawn(move || {
                let run = timed_run(sandbox, manager_spec);
                let _ = tx.send(None);
                run
            })
        };
        drop(ended_tx);
        let (mut users_left, mut manager_left) = (user_specs.len(), true);
        let mut released = false;
        let mut first_end = None;
        while users_left > 0 || manager_left {
            let one_side_done = users_left == 0 || !manager_left;
            let event = if one_side_done {
                released |= users_left == 0;
                fifos.release(user_specs.len());
                ended.recv_timeout(Duration::from_millis(20))
            } else {
                ended
                    .recv()
                    .map_err(|_| mpsc::RecvTimeoutError::Disconnected)
            };
            if event.is_ok() && first_end.is_none() {
                first_end = Some(phases::now());
            }
            match event {
                Ok(Some(_)) => users_left -= 1,
                Ok(None) => manager_left = false,
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                // Every thread has ended (one panicked without reporting).
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        phases::since(Phase::LastProcess, first_end.flatten());
        let captured = relaying.and_then(|(relay, copying)| {
            relay.stop();
            while !copying.is_finished() {
                fifos.release(user_specs.len());
                std::thread::sleep(Duration::from_millis(5));
            }
            copying.join().ok()
        });
        let panicked = || Outcome::internal_error("a sandbox thread panicked");
        let manager_run = manager.join().unwrap_or_else(|_| panicked());
        let user_runs = users
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| panicked()))
            .collect();
        (manager_run, user_runs, released, captured)
    })
}

/// What a relay captured: the transcript, and each process's tails (to the manager, to the
/// process).
type Captured = (Transcript, Vec<(Tail, Tail)>);

/// `sandbox.run(spec)`, its run and the rest of the call recorded as phases when recording.
fn timed_run(sandbox: &Sandbox, spec: &RunSpec) -> Outcome {
    let start = phases::now();
    let run = sandbox.run(spec);
    if let Some(start) = start {
        let run_time = Duration::from_secs_f64(run.wall_time.max(0.0));
        phases::add(Phase::Run, run_time);
        phases::add(Phase::BoxAndReap, start.elapsed().saturating_sub(run_time));
    }
    run
}

/// The usage reported for a test: the largest CPU time, wall time and memory among the user
/// processes (each is limited separately); zero for none.
fn combined_usage(runs: &[Outcome]) -> Outcome {
    let Some((first, rest)) = runs.split_first() else {
        return Outcome::internal_error("no user process");
    };
    let mut usage = first.clone();
    for run in rest {
        usage.cpu_time = usage.cpu_time.max(run.cpu_time);
        usage.wall_time = usage.wall_time.max(run.wall_time);
        usage.memory = usage.memory.max(run.memory);
    }
    usage
}

/// What a solution did on an input of the user's (`judge --input`), where nothing is judged:
/// the outcome of each user process and, for Communication, the manager's. Its streams are in
/// the [`Debugging`]'s folder under the test name [`INPUT_RUN`].
pub struct InputRun {
    pub users: Vec<Outcome>,
    pub manager: Option<Outcome>,
    /// The limits the user processes ran under.
    pub limits: Limits,
}

/// The name an input of the user's is kept under.
pub const INPUT_RUN: &str = "input";

/// Runs `program` on `input` as a test of `problem` would run it (through the manager and its
/// FIFOs for Communication), with the problem's limits and no expected output.
pub fn run_input(
    sandbox: &Sandbox,
    problem: &Problem,
    tools: &ProblemTools,
    program: &Path,
    input: &Path,
    debugging: &Debugging,
) -> Result<InputRun> {
    let limits = solution_limits(problem);
    let crate::problem::TaskType::Communication(params) = &problem.task else {
        let private = private_dir()?;
        let mut spec = RunSpec::in_tmpfs(problem.memory_limit, [PROGRAM]);
        spec.binds.push(Bind::read_only(program, PROGRAM));
        spec.stdin = Stdio::Path(input.to_path_buf());
        spec.stdout = Stdio::Path(private.path().join("output.txt"));
        debugging.prepare(&mut spec, private.path().join("stderr.txt"));
        spec.limits = limits.clone();
        let run = sandbox.run(&spec);
        stop::check_outcome(&run)?;
        let at = |name: &str| vec![private.path().join(name)];
        let kept = debugging.keep(
            INPUT_RUN,
            &[
                (Kept::Output, &at("output.txt")),
                (Kept::Stderr, &at("stderr.txt")),
            ],
        );
        crate::scratch::remove_later(private);
        kept?;
        return Ok(InputRun {
            users: vec![run],
            manager: None,
            limits,
        });
    };
    // Nothing is judged: the conversation is relayed whenever streams are kept.
    let (conversation, user_stderr) = placed_conversation(
        (params, problem, tools, program),
        (input, &limits),
        (None, debugging),
        debugging.keep_dir.is_some(),
    )?;
    let ran = conversation.run(sandbox);
    let at = |name: &str| conversation.private.path().join(name);
    let mut files = vec![
        (Kept::Stderr, user_stderr),
        (Kept::ManagerOut, vec![at("manager.out")]),
        (Kept::ManagerErr, vec![at("manager.err")]),
    ];
    files.extend(conversation.captured_files());
    let files: Vec<(Kept, &[PathBuf])> = files.iter().map(|(k, p)| (*k, p.as_slice())).collect();
    let kept = debugging.keep(INPUT_RUN, &files);
    crate::scratch::remove_later(conversation.fifos.root);
    crate::scratch::remove_later(conversation.private);
    let (manager_run, user_runs, _) = ran?;
    kept?;
    stop::check_outcome(&manager_run)?;
    for run in &user_runs {
        stop::check_outcome(run)?;
    }
    Ok(InputRun {
        users: user_runs,
        manager: Some(manager_run),
        limits,
    })
}

/// A Communication task with a checker (TPS's `has_checker`, e.g. IOI 2022's `circuit`): the
/// manager's standard output is the output the checker judges against the expected one (the
/// model solution's manager output), as TPS does. The manager itself must have ended normally.
fn check_manager_output(
    sandbox: &Sandbox,
    problem: &Problem,
    checker: &Path,
    test: &TestCase,
    private: &tempfile::TempDir,
    manager_run: &Outcome,
) -> Result<(f64, String)> {
    if manager_run.status != Termination::Ok {
        bail!(
            "the manager failed on test {}: {} (stderr: {})",
            test.name,
            manager_run.message,
            read_capped(&private.path().join("manager.err"))?.trim()
        );
    }
    fs::rename(
        private.path().join("manager.out"),
        private.path().join("output.txt"),
    )?;
    run_checker(sandbox, problem, checker, test, private.path())
}

/// Runs the manager with `input` on stdin against N copies of `program`, every process with
/// `limits` (generous: this makes expected outputs, nothing is judged), and writes the
/// manager's standard output to `output`: how TPS makes the expected outputs of a
/// Communication task. Fails when any process does not end normally.
pub(crate) fn manager_output(
    sandbox: &Sandbox,
    params: &Communication,
    manager: &Path,
    program: &Path,
    input: &Path,
    output: &Path,
    limits: &Limits,
) -> Result<()> {
    let Conversation {
        fifos: _fifos,
        private,
        manager: mut manager_spec,
        users: user_specs,
        ..
    } = Conversation::new(params, manager, program, input, limits, false)?;
    manager_spec.limits = limits.clone();
    manager_spec.limits.memory = Some(limits.memory.unwrap_or(0).max(4 << 30));
    let (manager_run, user_runs) = std::thread::scope(|s| {
        let users: Vec<_> = user_specs
            .iter()
            .map(|spec| s.spawn(move || sandbox.run(spec)))
            .collect();
        let manager_run = sandbox.run(&manager_spec);
        let user_runs: Vec<Outcome> = users
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Outcome::internal_error("a user process thread panicked"))
            })
            .collect();
        (manager_run, user_runs)
    });
    for (i, run) in user_runs.iter().enumerate() {
        if run.status != Termination::Ok {
            bail!("user process {i}: {}", run.message);
        }
    }
    if manager_run.status != Termination::Ok {
        bail!(
            "the manager: {} (stderr: {})",
            manager_run.message,
            read_capped(&private.path().join("manager.err"))?.trim()
        );
    }
    fs::copy(private.path().join("manager.out"), output)
        .with_context(|| format!("cannot write {}", output.display()))?;
    Ok(())
}

/// What one Communication run needs, made in one place for the judge and for TPS's expected
/// outputs: its FIFOs, its root-only folder (the manager's output), the run specs, and, when
/// debugging, the relay that captures the conversation.
struct Conversation {
    fifos: Fifos,
    private: tempfile::TempDir,
    manager: RunSpec,
    users: Vec<RunSpec>,
    relay: Option<Relay>,
}

impl Conversation {
    /// Sets up the user processes for `debugging`; the paths their stderr goes to. Relayed,
    /// the relay is made here, on the test's `cpu`, and a fifo_io process's standard output
    /// goes to a pipe it drains.
    fn debug_users(
        &mut self,
        debugging: &Debugging,
        user_io: UserIo,
        cpu: Option<usize>,
    ) -> Result<Vec<PathBuf>> {
        let private = self.private.path().to_path_buf();
        let mut stdouts = Vec::new();
        let mut stderrs = Vec::new();
        for (i, spec) in self.users.iter_mut().enumerate() {
            let stderr = private.join(format!("u{i}.err"));
            debugging.prepare(spec, stderr.clone());
            stderrs.push(stderr);
            if self.fifos.relayed && user_io == UserIo::FifoIo {
                let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
                    .context("cannot create a pipe")?;
                spec.stdout = Stdio::Fd(std::sync::Arc::new(write));
                stdouts.push((i, read));
            }
        }
        if self.fifos.relayed {
            let sides = (0..self.users.len()).map(|i| self.fifos.sides(i)).collect();
            self.relay = Some(Relay::new(sides, stdouts, cpu)?);
        }
        Ok(stderrs)
    }

    /// Runs the conversation ([`converse`]); relayed, what the relay captured is written to
    /// the root-only folder ([`Conversation::captured_files`]).
    fn run(&self, sandbox: &Sandbox) -> Result<(Outcome, Vec<Outcome>, bool)> {
        let (manager_run, user_runs, released, captured) = converse(
            sandbox,
            &self.manager,
            &self.users,
            &self.fifos,
            self.relay.as_ref(),
        );
        if let Some((transcript, tails)) = captured {
            let at = |name: String| self.private.path().join(name);
            for (i, (to_manager, to_process)) in tails.iter().enumerate() {
                fs::write(at(to_manager_name(i)), to_manager.bytes())?;
                fs::write(at(to_user_name(i)), to_process.bytes())?;
            }
            for (i, talk) in transcript.processes.iter().enumerate() {
                if talk.unread_stdout_bytes > 0 {
                    fs::write(at(format!("u{i}.stdout")), &talk.unread_stdout_head)?;
                }
            }
            fs::write(
                at("conversation.json".into()),
                serde_json::to_vec(&transcript)?,
            )?;
        }
        Ok((manager_run, user_runs, released))
    }

    /// The files of the conversation to keep, by kind (none unless relayed).
    fn captured_files(&self) -> Vec<(Kept, Vec<PathBuf>)> {
        if self.relay.is_none() {
            return Vec::new();
        }
        let at = |name: String| vec![self.private.path().join(name)];
        let mut files = vec![(Kept::Conversation, at("conversation.json".into()))];
        for i in 0..self.users.len() {
            files.push((Kept::Sent(i), at(to_manager_name(i))));
            files.push((Kept::Received(i), at(to_user_name(i))));
            files.push((Kept::UnreadStdout(i), at(format!("u{i}.stdout"))));
        }
        files
    }

    /// The FIFOs, folder and specs of a run of `manager` against `program` on `input`, users
    /// with `user_limits` (see [`communication_specs`]); `relayed`: each user has FIFOs of its
    /// own, for a relay ([`Conversation::debug_users`]).
    fn new(
        params: &Communication,
        manager: &Path,
        program: &Path,
        input: &Path,
        user_limits: &Limits,
        relayed: bool,
    ) -> Result<Conversation> {
        let fifos = Fifos::new(params.num_processes.max(1), relayed)?;
        let private = private_dir()?;
        let (manager, users) = communication_specs(
            params,
            manager,
            program,
            input,
            private.path(),
            &fifos,
            user_limits,
        );
        Ok(Conversation {
            fifos,
            private,
            manager,
            users,
            relay: None,
        })
    }
}

/// The manager's and the user processes' run specs of a Communication test (docs/judging.md#communication), users
/// with `user_limits`; the manager's stdout and stderr go to `manager.out` / `manager.err` in
/// the root-only folder `private`. The manager and the users wait on one another, so they
/// share one wait group: while any of them waits for a CPU, none is charged wall time.
fn communication_specs(
    params: &Communication,
    manager: &Path,
    program: &Path,
    input: &Path,
    private: &Path,
    fifos: &Fifos,
    user_limits: &Limits,
) -> (RunSpec, Vec<RunSpec>) {
    let n = params.num_processes.max(1);
    let group = ioi_sandbox::WaitGroup::new();
    let mut manager_spec = RunSpec::in_tmpfs(TOOL_BOX_BYTES, ["/tools/manager".to_string()]);
    manager_spec.wait_group = Some(group.clone());
    manager_spec
        .binds
        .push(Bind::read_only(manager, "/tools/manager"));
    for i in 0..n {
        let inside = format!("/fifo{i}");
        manager_spec
            .binds
            .push(Bind::writable(fifos.dir(i), &inside));
        manager_spec.argv.push(format!("{inside}/u{i}_to_m"));
        manager_spec.argv.push(format!("{inside}/m_to_u{i}"));
    }
    manager_spec
        .argv
        .extend(params.manager_args.iter().cloned());
    manager_spec.stdin = Stdio::Path(input.to_path_buf());
    manager_spec.stdout = Stdio::Path(private.join("manager.out"));
    manager_spec.stderr = Stdio::Path(private.join("manager.err"));
    let user_specs = (0..n)
        .map(|i| {
            let memory = user_limits.memory.unwrap_or(4 << 30);
            let mut spec = RunSpec::in_tmpfs(memory, [PROGRAM.to_string()]);
            spec.binds.push(Bind::read_only(program, PROGRAM));
            match params.user_io {
                UserIo::StdIo => {
                    spec.stdin = Stdio::Existing(fifos.user_dir(i).join(to_user_name(i)));
                    spec.stdout = Stdio::Existing(fifos.user_dir(i).join(to_manager_name(i)));
                }
                UserIo::FifoIo => {
                    spec.binds.push(Bind::writable(fifos.user_dir(i), "/fifo"));
                    spec.argv.push(format!("/fifo/m_to_u{i}"));
                    spec.argv.push(format!("/fifo/u{i}_to_m"));
                }
            }
            if n > 1 {
                spec.argv.push(i.to_string());
            }
            spec.limits = user_limits.clone();
            spec.wait_group = Some(group.clone());
            spec
        })
        .collect();
    (manager_spec, user_specs)
}
