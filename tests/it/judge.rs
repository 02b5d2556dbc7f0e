//! End-to-end: `ioi-run judge` on the problems under tests/problems, with both runners, against
//! the verdicts recorded in each problem's expected.json.

use serde_json::Value;

use crate::common;
use common::{bin_shared_cache, failed, is_root_or_skip, problem_dir, subtask_statuses};

fn judge_json(args: &[&str]) -> Value {
    common::judge_json(bin_shared_cache(), args)
}

/// Judges every solution of a problem and compares with expected.json.
fn check_problem(name: &str, runner: &str) {
    if !is_root_or_skip("judging") {
        return;
    }
    let dir = problem_dir(name);
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("expected.json")).unwrap()).unwrap();
    let mut failures = Vec::new();
    let mut judged = 0;
    for (solution, want) in expected["solutions"].as_object().unwrap() {
        // The scripts run unsandboxed cheats with best-effort hiding only.
        if runner == "scripts" && want["sandbox_only"].as_bool() == Some(true) {
            continue;
        }
        // The scripts time a test by the wall clock, as the reference does: a solution that
        // holds its verdict under load only through the native wall credit (CPU-starved time
        // is not charged) would get TLE from them on a busy machine.
        if runner == "scripts" && want["needs_wall_credit"].as_bool() == Some(true) {
            continue;
        }
        let report = judge_json(&[
            "--runner",
            runner,
            dir.to_str().unwrap(),
            dir.join("solutions").join(solution).to_str().unwrap(),
        ]);
        judged += 1;
        let got = subtask_statuses(&report);
        let want_statuses: Vec<(String, String)> = want["subtasks"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
            .collect();
        let total = report["total"].as_f64().unwrap();
        if got != want_statuses || (total - want["total"].as_f64().unwrap()).abs() > 1e-9 {
            failures.push(format!(
                "{solution}: got {got:?} total {total}, expected {want_statuses:?} total {}",
                want["total"]
            ));
        }
    }
    assert!(
        judged >= 5,
        "expected.json of {name} lists too few solutions"
    );
    assert!(
        failures.is_empty(),
        "{name} with the {runner} runner:\n{}",
        failures.join("\n")
    );
}

#[test]
fn native_batch_with_grader_and_partial_checker() {
    check_problem("sumpairs", "native");
}

#[test]
fn native_batch_with_white_diff() {
    check_problem("wdiff", "native");
}

#[test]
fn native_communication_one_process_std_io() {
    check_problem("guess", "native");
}

#[test]
fn native_communication_two_processes_fifo_io() {
    check_problem("relay", "native");
}

#[test]
fn native_communication_round_trips_std_io() {
    check_problem("pingpong", "native");
}

#[test]
fn native_communication_round_trips_fifo_io() {
    check_problem("hops", "native");
}

#[test]
fn scripts_agree_on_batch() {
    check_problem("sumpairs", "scripts");
    check_problem("wdiff", "scripts");
}

#[test]
fn scripts_agree_on_communication() {
    check_problem("guess", "scripts");
    check_problem("relay", "scripts");
}

#[test]
fn verdicts_do_not_depend_on_parallelism() {
    if !is_root_or_skip("judging") {
        return;
    }
    let dir = problem_dir("sumpairs");
    for solution in ["int_overflow.cpp", "burn_tle.cpp"] {
        let sol = dir.join("solutions").join(solution);
        let strip = |mut v: Value| {
            for s in v["subtasks"].as_array_mut().unwrap() {
                for t in s["tests"].as_array_mut().unwrap() {
                    let t = t.as_object_mut().unwrap();
                    t.remove("time");
                    t.remove("wall_time");
                    t.remove("memory");
                }
            }
            v
        };
        let one = strip(judge_json(&[
            "--jobs",
            "1",
            dir.to_str().unwrap(),
            sol.to_str().unwrap(),
        ]));
        let many = strip(judge_json(&[
            "--jobs",
            "4",
            dir.to_str().unwrap(),
            sol.to_str().unwrap(),
        ]));
        assert_eq!(one, many, "{solution}: --jobs 1 and --jobs 4 differ");
        // The reference stops a subtask at its first 0: later tests are SKIPPED unless an
        // earlier subtask already ran them (shared tests keep their result).
        let subtasks = one["subtasks"].as_array().unwrap();
        let earlier: Vec<&str> = subtasks[..2]
            .iter()
            .flat_map(|s| {
                s["tests"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|t| t["test_name"].as_str().unwrap())
            })
            .collect();
        let large: Vec<(&str, &str)> = subtasks[2]["tests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["test_name"].as_str().unwrap(),
                    t["status"].as_str().unwrap(),
                )
            })
            .collect();
        let first_zero = large.iter().position(|(_, s)| *s != "AC").unwrap();
        for (name, status) in &large[first_zero + 1..] {
            assert!(
                *status == "SKIPPED" || earlier.contains(name),
                "{solution}: {large:?}"
            );
        }
        assert!(
            large[first_zero + 1..].iter().any(|(_, s)| *s == "SKIPPED"),
            "{solution}: {large:?}"
        );
    }
}

#[test]
fn compilation_error_feedback_matches_the_pipeline() {
    if !is_root_or_skip("judging") {
        return;
    }
    let dir = problem_dir("sumpairs");
    let report = judge_json(&[
        dir.to_str().unwrap(),
        dir.join("solutions/ce.cpp").to_str().unwrap(),
    ]);
    let feedback = report["compile_error"].as_str().unwrap();
    assert!(
        feedback.starts_with("Compilation error exit code 1\n"),
        "{feedback}"
    );
    for s in report["subtasks"].as_array().unwrap() {
        for t in s["tests"].as_array().unwrap() {
            assert_eq!(t["status"], "CE");
            assert!(feedback.contains("error"), "{feedback}");
        }
    }
}

#[test]
fn judging_from_the_parquet_layout_gives_the_same_result() {
    if !is_root_or_skip("judging") {
        return;
    }
    let dir = problem_dir("sumpairs");
    let out = tempfile::tempdir().unwrap();
    let (problems, tests) = (
        out.path().join("problems.parquet"),
        out.path().join("tests.parquet"),
    );
    let status = bin_shared_cache()
        .args([
            "convert",
            dir.to_str().unwrap(),
            "--year",
            "2024",
            "--problems-out",
        ])
        .arg(&problems)
        .arg("--tests-out")
        .arg(&tests)
        .status()
        .unwrap();
    assert!(status.success());
    let sol = dir.join("solutions/int_overflow.cpp");
    let from_parquet = judge_json(&[
        "--problems",
        problems.to_str().unwrap(),
        "--tests",
        tests.to_str().unwrap(),
        "--problem-id",
        "sumpairs",
        sol.to_str().unwrap(),
    ]);
    let from_folder = judge_json(&[dir.to_str().unwrap(), sol.to_str().unwrap()]);
    assert_eq!(
        subtask_statuses(&from_parquet),
        subtask_statuses(&from_folder)
    );
    assert_eq!(from_parquet["total"], 40.0);
}

#[test]
fn unknown_subtask_is_a_clear_error() {
    if !is_root_or_skip("judging") {
        return;
    }
    let dir = problem_dir("sumpairs");
    let out = bin_shared_cache()
        .args([
            "judge",
            "--subtask",
            "99-nope",
            dir.to_str().unwrap(),
            dir.join("solutions/ac.cpp").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let err = failed(out);
    assert!(
        err.contains("no subtask \"99-nope\"") && err.contains("01-small"),
        "{err}"
    );
}

/// Judges inline C++ source on a fixture problem (native runner).
fn judge_source(problem: &str, source: &str) -> Value {
    let dir = problem_dir(problem);
    let file = tempfile::Builder::new().suffix(".cpp").tempfile().unwrap();
    std::fs::write(file.path(), source).unwrap();
    judge_json(&[dir.to_str().unwrap(), file.path().to_str().unwrap()])
}

#[test]
fn a_symlink_planted_in_the_box_cannot_fake_the_output() {
    if !is_root_or_skip("judging") {
        return;
    }
    // Prints nothing and points /box/output.txt at what the judge might have open (the expected
    // output), at a FIFO and at /dev/zero: the judge never reads the box, so this is WA.
    let plant = r#"#include <unistd.h>
#include <initializer_list>
#include <sys/stat.h>
#include <vector>
static void plant() {
    for (const char *name : {"/box/output.txt", "/box/checker.out", "/box/.run-stdout"}) unlink(name);
    symlink("/proc/self/fd/5", "/box/output.txt");
    mkfifo("/box/checker.out", 0666);
    symlink("/dev/zero", "/box/.run-stdout");
}
"#;
    let with_main = format!("{plant}int main() {{ plant(); return 0; }}\n");
    let with_grader = format!("{plant}#include \"sumpairs.h\"\nlong long count_pairs(int, std::vector<int>) {{ plant(); return -1; }}\n");
    for (problem, source) in [("wdiff", with_main), ("sumpairs", with_grader)] {
        let report = judge_source(problem, &source);
        assert_eq!(report["total"], 0.0, "{problem}: {report}");
        let first = &report["subtasks"][0]["tests"][0];
        assert_eq!(first["status"], "WA", "{problem}: {first}");
    }
}

#[test]
fn the_submission_cannot_embed_the_checker_source() {
    if !is_root_or_skip("judging") {
        return;
    }
    // `.incbin` of the checker would leak it into the binary (and then the output).
    let attack = "#include \"sumpairs.h\"\nasm(\".incbin \\\"checker/checker.cpp\\\"\");\n#include <vector>\nlong long count_pairs(int T, std::vector<int> a) { return 0; }\n";
    let report = judge_source("sumpairs", attack);
    let test = &report["subtasks"][0]["tests"][0];
    assert_eq!(test["status"], "CE", "{test}");
    assert!(
        report["compile_error"]
            .as_str()
            .unwrap()
            .contains("checker/checker.cpp"),
        "{report}"
    );
}

/// A Communication test (a manager and two user processes at once) gives the same verdicts,
/// scores and feedback alone at `--jobs 1` as at full parallelism (`--jobs` = the cores, our own
/// scheduler filling them) beside busy loops on three times the cores, each in a session of its
/// own: the outside load under which no verdict may change. The time limit is CPU time:
/// `slow_ac.cpp` uses 0.6 s per test, and under that load may need more wall time than the wall
/// limit (3 × 1 s + 1 s). The sender waits for a CPU and is not charged for it; the manager and
/// the receiver, blocked on it, share its credit (`WaitGroup`); the elapsed-time bound
/// (`WALL_STRETCH` × the wall limit, 12 s) leaves each process a ninth of a core's share.
/// `parallel_burn_ac.cpp` computes in both user processes at once, on the one CPU the test's
/// processes share (docs/judging.md#cpu-placement): each waits for the other, credited too.
#[test]
fn communication_verdicts_and_cpu_times_hold_at_full_parallelism_beside_busy_loops() {
    /// The time limit of `relay`, in seconds (its problem.json).
    const TIME_LIMIT: f64 = 1.0;
    if !is_root_or_skip("judging") {
        return;
    }
    let dir = problem_dir("relay");
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let tests = |v: &Value| -> Vec<(String, String, f64)> {
        v["subtasks"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|s| s["tests"].as_array().unwrap().iter())
            .map(|t| {
                (
                    t["test_name"].as_str().unwrap().to_string(),
                    t["status"].as_str().unwrap().to_string(),
                    t["time"].as_f64().unwrap_or(0.0),
                )
            })
            .collect()
    };
    let strip = |mut v: Value| {
        for s in v["subtasks"].as_array_mut().unwrap() {
            for t in s["tests"].as_array_mut().unwrap() {
                let t = t.as_object_mut().unwrap();
                t.remove("time");
                t.remove("wall_time");
                t.remove("memory");
                // The explanation of a failing test quotes its times and says which limit
                // stopped it first, which load may change for a program over both.
                t.remove("diagnosis");
            }
        }
        v
    };
    for solution in [
        "slow_ac.cpp",
        "parallel_burn_ac.cpp",
        "decimal_pa.cpp",
        "sender_burn_tle.cpp",
    ] {
        let sol = dir.join("solutions").join(solution);
        let full = cores.to_string();
        let args = |jobs: &str| {
            vec![
                "--jobs".to_string(),
                jobs.to_string(),
                dir.to_str().unwrap().to_string(),
                sol.to_str().unwrap().to_string(),
            ]
        };
        let quiet_args = args("1");
        let quiet = judge_json(&quiet_args.iter().map(String::as_str).collect::<Vec<_>>());
        let loaded = {
            let _load = ioi_run::bench::load::BusyLoops::start(3 * cores).expect("sh runs");
            let loaded_args = args(&full);
            judge_json(&loaded_args.iter().map(String::as_str).collect::<Vec<_>>())
        };
        // Waiting for a CPU is not charged: the verdicts below are identical although the
        // loaded run takes several times the wall limit. Comparing the two CPU times would
        // depend on the load (cache effects); what load cannot change is that a test that is
        // not over time reports a CPU time within the limit, as its verdict says.
        for (name, status, time) in tests(&loaded) {
            if status != "TLE" && status != "SKIPPED" {
                assert!(
                    time <= TIME_LIMIT,
                    "{solution} test {name}: {status} with {time} s CPU over the {TIME_LIMIT} s limit"
                );
            }
        }
        if solution.ends_with("_ac.cpp") {
            assert_eq!(
                loaded["total"].as_f64(),
                Some(100.0),
                "{solution}: {loaded}"
            );
        }
        assert_eq!(
            strip(quiet),
            strip(loaded),
            "{solution}: verdicts differ between --jobs 1 alone and --jobs {full} under load"
        );
    }
}

/// Every process of a Communication test (the manager and both user processes of `together`)
/// may run on one CPU, the same for all, even one that asks for every CPU
/// (docs/judging.md#cpu-placement): the task's manager checks it and gives AC only then. Judged
/// at full parallelism, so that several tests hold CPUs at once.
#[test]
fn the_processes_of_a_communication_test_share_one_cpu() {
    if !is_root_or_skip("judging") {
        return;
    }
    let dir = problem_dir("together");
    let jobs = std::thread::available_parallelism().map_or(2, |n| n.get());
    for solution in ["ac.cpp", "widen_ac.cpp"] {
        let sol = dir.join("solutions").join(solution);
        let report = judge_json(&[
            "--jobs",
            &jobs.to_string(),
            dir.to_str().unwrap(),
            sol.to_str().unwrap(),
        ]);
        let test = &report["subtasks"][0]["tests"][0];
        assert_eq!(test["status"], "AC", "{solution}: {test}");
    }
}

/// Tests of up to 100 000 one-number round trips between the manager and the solution, over
/// `std_io` (`pingpong`) and `fifo_io` (`hops`, modelled on IOI 2020 `stations`), are AC at
/// full parallelism (`--jobs` = the cores) beside a busy loop on every core: the processes of
/// a Communication test share one CPU (docs/judging.md#cpu-placement), so a round trip costs a
/// context switch, not a wake-up across CPUs (ten times dearer on a virtual machine, which put
/// these solutions over their 1 s limit). Asserts verdicts, which load cannot change.
#[test]
fn round_trip_heavy_communication_is_ac_at_full_parallelism_beside_busy_loops() {
    if !is_root_or_skip("judging") {
        return;
    }
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let _load = ioi_run::bench::load::BusyLoops::start(cores).expect("sh runs");
    for problem in ["pingpong", "hops"] {
        let dir = problem_dir(problem);
        let sol = dir.join("solutions/ac.cpp");
        let jobs = cores.to_string();
        let report = judge_json(&[
            "--jobs",
            &jobs,
            dir.to_str().unwrap(),
            sol.to_str().unwrap(),
        ]);
        let statuses: Vec<String> = report["subtasks"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|s| s["tests"].as_array().unwrap().iter())
            .map(|t| format!("{}:{}", t["test_name"], t["status"]))
            .collect();
        assert!(
            statuses.iter().all(|s| s.ends_with(":\"AC\"")) && statuses.len() == 4,
            "{problem}: {statuses:?}"
        );
        assert_eq!(report["total"].as_f64(), Some(100.0), "{problem}: {report}");
    }
}

/// Prepended to a checker, makes it link only dynamically: a reference to the versioned
/// symbol `memcpy@GLIBC_2.2.5`, which no static C library defines (a host without the static
/// libraries fails the same way on every tool).
const LINKS_ONLY_DYNAMICALLY: &str = r#"#include <cstring>
__asm__(".symver memcpy,memcpy@GLIBC_2.2.5");
static void *(*volatile keep_memcpy)(void *, const void *, std::size_t) = std::memcpy;
"#;

/// Whether the ELF executable at `path` names a program interpreter (is dynamically linked).
fn has_interpreter(path: &std::path::Path) -> bool {
    let elf = std::fs::read(path).unwrap();
    assert_eq!(&elf[..4], b"\x7fELF", "{} is not ELF", path.display());
    let word = |at: usize, n: usize| {
        let mut bytes = [0u8; 8];
        bytes[..n].copy_from_slice(&elf[at..at + n]);
        u64::from_le_bytes(bytes) as usize
    };
    let (table, size, count) = (word(0x20, 8), word(0x36, 2), word(0x38, 2));
    (0..count).any(|i| word(table + i * size, 4) == 3) // PT_INTERP
}

/// The programs a judge left in its compile cache (each entry keeps its binary as `program`).
fn cached_programs(cache: &std::path::Path) -> Vec<std::path::PathBuf> {
    walkdir::WalkDir::new(cache)
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_file() && e.file_name() == "program")
        .map(|e| e.into_path())
        .collect()
}

/// A checker runs once per test: it is linked statically, as a manager is, so that it starts
/// without loading the C++ library; where the host cannot link it statically it is linked
/// dynamically, and the verdicts are the same.
#[test]
fn tools_are_linked_statically_where_the_host_can() {
    if !is_root_or_skip("judging") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let dynamic_only = work.path().join("problems/sumpairs");
    common::copy_dir(&problem_dir("sumpairs"), &dynamic_only);
    let checker = dynamic_only.join("checker/checker.cpp");
    let source = std::fs::read_to_string(&checker).unwrap();
    std::fs::write(&checker, format!("{LINKS_ONLY_DYNAMICALLY}{source}")).unwrap();
    for (name, dir, statically) in [
        ("as it is", problem_dir("sumpairs"), true),
        ("linking only dynamically", dynamic_only, false),
    ] {
        let judge_work = work.path().join(name);
        std::fs::create_dir_all(&judge_work).unwrap();
        let report = common::judge_json(
            common::bin(&judge_work),
            [dir.clone(), dir.join("solutions/ac.cpp")],
        );
        assert_eq!(report["total"].as_f64(), Some(100.0), "{name}: {report}");
        // The submission (dynamically linked: the reference profile) and the checker.
        let programs = cached_programs(&judge_work.join("cache"));
        assert_eq!(programs.len(), 2, "{name}: {programs:?}");
        let linked_statically = programs.iter().filter(|p| !has_interpreter(p)).count();
        assert_eq!(
            linked_statically,
            usize::from(statically),
            "{name}: {programs:?}"
        );
    }
}
