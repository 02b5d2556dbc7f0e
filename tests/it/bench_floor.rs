//! `bench judge --task DIR --isolate PATH`: the floor with a sandbox per process runs every
//! test's processes through isolate's command line (here a stand-in that runs them plainly in
//! box folders and logs its calls), each process in a box of its own that is cleaned up, and
//! scores every test as ioi-run did (the benchmark stops otherwise).

use std::collections::BTreeMap;
use std::path::Path;

use crate::common;

/// The benchmark on `task` with the stand-in isolate, whose boxes go in `boxes`.
fn bench_command(work: &Path, boxes: &Path, task: &str) -> std::process::Command {
    let fake = common::project().join("tests/bench/fake-isolate.sh");
    let mut command = common::bin(work);
    command
        .env("FAKE_ISOLATE_ROOT", boxes)
        .args(["bench", "judge", "-j", "2", "--repeats", "1"])
        .args(["--reference-tests", "1", "--task"])
        .arg(common::problem_dir(task))
        .arg("--isolate")
        .arg(&fake);
    command
}

/// The box folders the stand-in left in `boxes` (its log aside).
fn boxes_left(boxes: &Path) -> Vec<String> {
    std::fs::read_dir(boxes)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name != "calls.log")
        .collect()
}

/// The stand-in's calls, in order: (action, box id).
fn calls(boxes: &Path) -> Vec<(String, u32)> {
    std::fs::read_to_string(boxes.join("calls.log"))
        .unwrap()
        .lines()
        .map(|line| {
            let (action, id) = line.split_once(' ').unwrap();
            (action.to_string(), id.parse().unwrap())
        })
        .collect()
}

/// Runs the benchmark on `task` with the stand-in isolate; returns its stdout and the calls,
/// after checking that no box is left.
fn bench_with_fake_isolate(task: &str) -> (String, Vec<(String, u32)>, tempfile::TempDir) {
    let work = tempfile::tempdir().unwrap();
    let boxes = work.path().join("boxes");
    std::fs::create_dir_all(&boxes).unwrap();
    let out = bench_command(work.path(), &boxes, task).output().unwrap();
    let stdout = common::ok(out);
    assert_eq!(
        boxes_left(&boxes),
        Vec::<String>::new(),
        "boxes left behind"
    );
    (stdout, calls(&boxes), work)
}

/// Every box initialised is run in exactly once (a process of its own, never run plainly
/// beside it) and cleaned up after; box ids are the 2 workers' own.
fn assert_each_box_run_once_and_cleaned(calls: &[(String, u32)]) {
    let mut open: BTreeMap<u32, usize> = BTreeMap::new();
    let mut inits = 0;
    for (action, id) in calls {
        assert!(
            (100..120).contains(id),
            "box {id} is outside the 2 workers' ids"
        );
        match action.as_str() {
            "init" => {
                assert!(
                    !open.contains_key(id),
                    "box {id} initialised twice: {calls:?}"
                );
                open.insert(*id, 0);
                inits += 1;
            }
            "run" => {
                let runs = open.get_mut(id).expect("a run in a box not initialised");
                *runs += 1;
                assert_eq!(*runs, 1, "box {id} reused: {calls:?}");
            }
            "cleanup" => {
                let runs = open.remove(id).expect("a box cleaned up twice");
                assert_eq!(runs, 1, "box {id} cleaned up without its run: {calls:?}");
            }
            other => panic!("unexpected call {other}"),
        }
    }
    assert!(open.is_empty(), "boxes never cleaned up: {open:?}");
    assert!(inits > 0, "isolate was never used");
}

fn ratio(stdout: &str) -> f64 {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("against the sandboxed floor: "))
        .unwrap_or_else(|| panic!("no sandboxed floor: {stdout}"));
    line["against the sandboxed floor: ".len()..]
        .split('x')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn a_batch_task_with_a_checker_runs_solution_and_checker_in_boxes_of_their_own() {
    if !common::is_root_or_skip("bench judge") {
        return;
    }
    let (stdout, calls, _work) = bench_with_fake_isolate("sumpairs");
    assert!(ratio(&stdout) > 0.0);
    assert_each_box_run_once_and_cleaned(&calls);
    // A solution box (role 0) and a checker box (role 1) per test.
    let inits = |role: u32| {
        calls
            .iter()
            .filter(|(a, id)| a == "init" && (id - 100) % 10 == role)
            .count()
    };
    assert!(inits(0) > 0 && inits(0) == inits(1), "{calls:?}");
    // Where the judgement's time went: its compile beside the floor's, and each test's one
    // process and its checker.
    let phase = |name: &str| {
        stdout
            .lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no {name:?} line: {stdout}"))
            .to_string()
    };
    let compile = phase("the submission's compile, in its box");
    assert!(compile.contains("the floor's plain g++"), "{compile}");
    assert!(compile
        .split_whitespace()
        .any(|w| w.parse::<f64>().is_ok_and(|ms| ms > 0.0)));
    for name in [
        "per process: the run",
        "per process: box taken/built",
        "verdict (manager output parsed / checker / diff)",
        "whole test (worker's view)",
    ] {
        assert!(phase(name).ends_with("(1.00 per test)"), "{}", phase(name));
    }
    assert!(!stdout.contains("FIFOs, private folder"), "{stdout}");
}

#[test]
fn a_communication_task_runs_manager_and_user_in_boxes_of_their_own() {
    if !common::is_root_or_skip("bench judge") {
        return;
    }
    let (stdout, calls, _work) = bench_with_fake_isolate("hops");
    assert!(ratio(&stdout) > 0.0);
    assert_each_box_run_once_and_cleaned(&calls);
    let runs = calls.iter().filter(|(a, _)| a == "run").count();
    let inits = calls.iter().filter(|(a, _)| a == "init").count();
    assert_eq!(runs, inits, "{calls:?}");
    assert!(
        calls
            .iter()
            .any(|(a, id)| a == "run" && (id - 100) % 10 == 1),
        "no user process box: {calls:?}"
    );
}

/// A user process's box that cannot be made ends the benchmark with isolate's error; the
/// manager already started in its box (blocked on its FIFOs) is killed, and every box made is
/// cleaned up.
#[test]
fn a_box_that_cannot_be_made_stops_the_floor_and_leaves_no_process_or_box() {
    if !common::is_root_or_skip("bench judge") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let boxes = work.path().join("boxes");
    std::fs::create_dir_all(&boxes).unwrap();
    let out = bench_command(work.path(), &boxes, "hops")
        .env("FAKE_ISOLATE_FAIL_INIT", "101 111")
        .output()
        .unwrap();
    let stderr = common::failed(out);
    assert!(stderr.contains("cannot be initialised"), "{stderr}");
    let calls = calls(&boxes);
    // A manager was running in its box when its user's box failed.
    assert!(
        calls
            .iter()
            .any(|(a, id)| a == "run" && (*id == 100 || *id == 110)),
        "{calls:?}"
    );
    assert_eq!(
        boxes_left(&boxes),
        Vec::<String>::new(),
        "boxes left behind: {calls:?}"
    );
    // No process is left working in a box (a manager waiting for its user for ever).
    let in_boxes: Vec<_> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path().join("cwd")).ok())
        .filter(|cwd| cwd.starts_with(&boxes))
        .collect();
    assert_eq!(in_boxes, Vec::<std::path::PathBuf>::new());
}

#[test]
fn a_missing_isolate_is_named() {
    let work = tempfile::tempdir().unwrap();
    let missing = Path::new("/nonexistent/isolate");
    let out = common::bin(work.path())
        .args(["bench", "judge", "--repeats", "1", "--task"])
        .arg(common::problem_dir("sumpairs"))
        .arg("--isolate")
        .arg(missing)
        .output()
        .unwrap();
    let stderr = common::failed(out);
    assert!(
        stderr.contains("--isolate /nonexistent/isolate: no such file"),
        "{stderr}"
    );
}
