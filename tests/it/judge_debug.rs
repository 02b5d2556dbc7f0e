//! End-to-end: debugging one solution with `ioi-run judge` (docs/debugging.md): why a test
//! failed (first difference, input, stderr, signal), `--test`, `--all-tests`, `--subtask` by
//! number, `--keep`, `--input`, the debug profile on a Batch and a Communication task, and
//! `--watch`. Fixtures: `tests/problems/sumpairs/debug/` and the fixture solutions.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::common;
use common::{bin_shared_cache, is_root_or_skip, judge_json, problem_dir, text, wait_until};

fn sumpairs() -> PathBuf {
    problem_dir("sumpairs")
}

fn debug_solution(name: &str) -> PathBuf {
    sumpairs().join("debug").join(name)
}

fn judge(args: &[&str]) -> Output {
    bin_shared_cache()
        .arg("judge")
        .args(args)
        .env_remove("COLUMNS")
        .output()
        .expect("ioi-run runs")
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Every test of a `--json` report, once, by name.
fn tests_of(report: &Value) -> Vec<Value> {
    let mut seen: Vec<Value> = Vec::new();
    for s in report["subtasks"].as_array().unwrap() {
        for t in s["tests"].as_array().unwrap() {
            if !seen.iter().any(|x| x["test_name"] == t["test_name"]) {
                seen.push(t.clone());
            }
        }
    }
    seen
}

fn test_named<'a>(tests: &'a [Value], name: &str) -> &'a Value {
    tests
        .iter()
        .find(|t| t["test_name"] == name)
        .unwrap_or_else(|| panic!("no test {name} in {tests:?}"))
}

#[test]
fn a_wrong_answer_shows_the_first_difference_the_input_and_stderr() {
    if !is_root_or_skip("judging") {
        return;
    }
    let dir = sumpairs();
    let solution = debug_solution("stderr_wa.cpp");
    let report = judge_json(bin_shared_cache(), [path(&dir), path(&solution)]);
    let tests = tests_of(&report);
    let d = &test_named(&tests, "01")["diagnosis"];
    assert_eq!(d["first_difference"]["line"], 1, "{d}");
    assert_eq!(d["first_difference"]["expected"], "2", "{d}");
    assert_eq!(d["first_difference"]["yours"], "3", "{d}");
    assert_eq!(d["input_head"][0], "5 6", "{d}");
    assert_eq!(d["stderr_head"][0], "debug: n=5 T=6", "{d}");
    // The existing fields are still there.
    assert_eq!(test_named(&tests, "01")["status"], "WA");

    let out = judge(&[path(&dir), path(&solution)]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("why test 01 (WA"), "{stdout}");
    assert!(
        stdout.contains("differs   line 1, token 1: expected \"2\", yours \"3\""),
        "{stdout}"
    );
    assert!(stdout.contains("expected  \"2\""), "{stdout}");
    assert!(stdout.contains("yours     \"3\""), "{stdout}");
    assert!(stdout.contains("| debug: n=5 T=6"), "{stdout}");
}

/// Pascal's triangle mod 1000 (the `wdiff` fixture's answer), with `TWIST` applied to each value.
fn pascal(twist: &str, tail: &str) -> String {
    format!(
        r#"#include <cstdio>
#include <cstring>
#include <vector>
int main() {{
    int n;
    if (scanf("%d", &n) != 1) return 1;
    std::vector<int> row{{1}};
    for (int r = 0; r < n; r++) {{
        for (size_t i = 0; i < row.size(); i++) {{
            int v = row[i];
            {twist}
            printf(i ? " %d" : "%d", v);
        }}
        printf("\n");
        std::vector<int> next{{1}};
        for (size_t i = 0; i + 1 < row.size(); i++) next.push_back((row[i] + row[i + 1]) % 1000);
        next.push_back(1);
        row = next;
    }}
    {tail}
}}
"#
    )
}

#[test]
fn a_difference_inside_a_long_line_names_its_token_and_the_tokens_around_it() {
    if !is_root_or_skip("judging") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let solution = work.path().join("token.cpp");
    // Test 04 has 200 lines; its last has 200 numbers, of which the 151st is wrong.
    std::fs::write(&solution, pascal("if (r == 199 && i == 150) v = -1;", "")).unwrap();
    let dir = problem_dir("wdiff");
    let args = [path(&dir), path(&solution), "--test", "04"];
    let report = judge_json(bin_shared_cache(), args);
    let tests = tests_of(&report);
    let d = &test_named(&tests, "04")["diagnosis"]["first_difference"];
    assert_eq!(
        (d["line"].as_u64(), d["token"].as_u64()),
        (Some(200), Some(151)),
        "{d}"
    );
    assert_eq!(d["yours_token"], "-1", "{d}");
    let expected = d["expected_token"].as_str().unwrap().to_string();
    assert!(expected.parse::<u32>().is_ok(), "{d}");
    let (theirs, yours) = (
        d["expected"].as_str().unwrap(),
        d["yours"].as_str().unwrap(),
    );
    assert!(theirs.starts_with("… ") && theirs.ends_with(" …"), "{d}");
    assert_eq!(theirs.split(' ').count(), 13, "five tokens each side: {d}");
    assert_eq!(
        theirs.replace(&format!(" {expected} "), " -1 "),
        yours,
        "{d}"
    );

    let out = judge(&args);
    let stdout = text(&out.stdout);
    let line = format!("differs   line 200, token 151: expected \"{expected}\", yours \"-1\"");
    assert!(stdout.contains(&line), "{stdout}");
}

/// Runs `command` with its standard output piped: what it printed, and its peak resident
/// memory, polled until it ends (a whole-tree figure from `wait4` would count the compiler
/// too).
fn output_and_peak_rss_kib(mut command: Command) -> (Output, u64) {
    let mut child = command.stdout(Stdio::piped()).spawn().unwrap();
    let peak = peak_rss_kib(&mut child);
    (child.wait_with_output().unwrap(), peak)
}

/// The peak resident memory of a running process, polled until it ends (a whole-tree figure
/// from `wait4` would count the compiler too).
fn peak_rss_kib(child: &mut std::process::Child) -> u64 {
    let status = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    while child.try_wait().unwrap().is_none() {
        let hwm = std::fs::read_to_string(&status)
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0);
        peak = peak.max(hwm);
        std::thread::sleep(Duration::from_millis(10));
    }
    peak
}

/// The judge's peak resident memory was measured (above zero) and stayed below `mib` MiB.
fn assert_peak_below(peak_kib: u64, mib: u64) {
    assert!(
        peak_kib > 0 && peak_kib < mib << 10,
        "the judge peaked at {peak_kib} KiB"
    );
}

#[test]
fn a_flood_of_newlines_after_the_right_answer_costs_the_judge_a_buffer() {
    if !is_root_or_skip("judging") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let solution = work.path().join("flood.cpp");
    let flood = "static char blank[1 << 20]; memset(blank, '\\n', sizeof blank); \
                 for (int i = 0; i < 1024; i++) fwrite(blank, 1, sizeof blank, stdout);";
    std::fs::write(&solution, pascal("", flood)).unwrap();
    let dir = problem_dir("wdiff");
    let mut command = bin_shared_cache();
    command.args(["judge", path(&dir), path(&solution), "--test", "01"]);
    let (out, peak) = output_and_peak_rss_kib(command);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("output limit exceeded"), "{stdout}");
    assert!(stdout.contains("why test 01 (WA"), "{stdout}");
    // The kept output is 64 MiB of newlines: explaining it must not hold it.
    assert_peak_below(peak, 256);
}

#[test]
fn input_streams_from_a_pipe_or_a_fifo_and_refuses_an_endless_one() {
    if !is_root_or_skip("judging") {
        return;
    }
    let dir = sumpairs();
    let solution = debug_solution("stderr_wa.cpp");
    // A FIFO given by name is read as it streams.
    let work = tempfile::tempdir().unwrap();
    let fifo = work.path().join("input.fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::write(fifo, b"3 4\n1 3 2\n"))
    };
    let out = judge(&[path(&dir), path(&solution), "--input", path(&fifo)]);
    writer.join().unwrap().unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("--- your output (1 line) ---\n2\n"),
        "{stdout}"
    );

    // Standard input that never ends: refused at the bound, with the judge's memory flat.
    let mut command = bin_shared_cache();
    command
        .args(["judge", path(&dir), path(&solution), "--input", "-"])
        .stdin(std::fs::File::open("/dev/zero").unwrap())
        .stderr(Stdio::piped());
    let (out, peak) = output_and_peak_rss_kib(command);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("standard input (--input -): more than 256 MiB"),
        "{stderr}"
    );
    assert_peak_below(peak, 64);
    // A folder is named as one.
    let out = judge(&[path(&dir), path(&solution), "--input", path(work.path())]);
    assert!(
        text(&out.stderr).contains("a folder, not an input file"),
        "{}",
        text(&out.stderr)
    );
}

/// `judge --input` with `input` on standard input: its stdout.
fn run_input(solution: &Path, input: &str, extra: &[&str]) -> String {
    use std::io::Write;
    let dir = sumpairs();
    let mut child = bin_shared_cache()
        .args(["judge", path(&dir), path(solution), "--input", "-"])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn input_gives_a_crash_its_cause_place_and_hint_and_names_the_grader_s_refusal() {
    if !is_root_or_skip("judging") {
        return;
    }
    let dir = sumpairs();
    let segv = dir.join("solutions/segv.cpp");
    let stdout = run_input(&segv, "3 4\n1 3 2\n", &[]);
    assert!(
        stdout.contains("  cause     invalid memory access"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  hint      judge again with `--compile-profile debug`"),
        "{stdout}"
    );
    // The debug profile names the line in the user's file, never the box's name of it.
    let stdout = run_input(&segv, "3 4\n1 3 2\n", &["--compile-profile", "debug"]);
    let place = format!("  where     {}:6", segv.display());
    assert!(stdout.contains(&place), "{stdout}");
    assert!(!stdout.contains("graders/sumpairs.cpp"), "{stdout}");
    // Input the grader cannot read: its refusal is named as the input's possible fault.
    let stdout = run_input(&dir.join("solutions/ac.cpp"), "not a number\n", &[]);
    assert!(
        stdout.contains("RE: Runtime error: exit code 1"),
        "{stdout}"
    );
    assert!(
        stdout.contains("an input the grader cannot read"),
        "{stdout}"
    );
}

#[test]
fn a_crash_names_its_signal_and_what_it_means() {
    if !is_root_or_skip("judging") {
        return;
    }
    let dir = sumpairs();
    let report = judge_json(
        bin_shared_cache(),
        [path(&dir), path(&dir.join("solutions/segv.cpp"))],
    );
    let t = test_named(&tests_of(&report), "01").clone();
    assert_eq!(
        t["feedback"], "Runtime error: killed by signal 11 (SIGSEGV)",
        "{t}"
    );
    assert_eq!(t["diagnosis"]["signal"], "SIGSEGV", "{t}");
    assert!(
        t["diagnosis"]["meaning"]
            .as_str()
            .unwrap()
            .contains("invalid memory access"),
        "{t}"
    );

    let report = judge_json(
        bin_shared_cache(),
        [path(&dir), path(&debug_solution("assert_re.cpp"))],
    );
    let t = test_named(&tests_of(&report), "01").clone();
    assert_eq!(t["diagnosis"]["signal"], "SIGABRT", "{t}");
    let meaning = t["diagnosis"]["meaning"].as_str().unwrap();
    assert!(
        meaning.contains("failed assertion") && meaning.contains("the target is negative"),
        "{t}"
    );
}

#[test]
fn all_tests_runs_every_test_and_test_picks_them_by_glob() {
    if !is_root_or_skip("judging") {
        return;
    }
    let dir = sumpairs();
    let solution = dir.join("solutions/int_overflow.cpp");
    // Early stop leaves 06 SKIPPED; --all-tests runs it.
    let report = judge_json(
        bin_shared_cache(),
        [path(&dir), path(&solution), "--all-tests"],
    );
    let tests = tests_of(&report);
    assert_eq!(tests.len(), 6, "{report}");
    assert!(tests.iter().all(|t| t["status"] != "SKIPPED"), "{report}");
    assert_eq!(test_named(&tests, "05")["status"], "WA");
    assert_eq!(test_named(&tests, "06")["status"], "AC");

    // A glob, and a subtask by the number the table prints.
    let report = judge_json(
        bin_shared_cache(),
        [
            path(&dir),
            path(&solution),
            "--test",
            "0[56]",
            "--subtask",
            "02",
        ],
    );
    let names: Vec<String> = tests_of(&report)
        .iter()
        .map(|t| t["test_name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["05", "06"], "{report}");
    assert_eq!(report["subtasks"][0]["subtask"], "02-large", "{report}");

    let out = judge(&[path(&dir), path(&solution), "--test", "9*"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("names no test"));
}

#[test]
fn keep_writes_every_test_s_files_named_by_test() {
    if !is_root_or_skip("judging") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let kept = work.path().join("kept");
    let dir = sumpairs();
    let out = judge(&[
        path(&dir),
        path(&debug_solution("stderr_wa.cpp")),
        "--keep",
        path(&kept),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let read = |name: &str| std::fs::read_to_string(kept.join(name)).unwrap();
    assert_eq!(read("01.in"), read_fixture(&dir.join("tests/01.in")));
    assert_eq!(read("01.ans"), read_fixture(&dir.join("tests/01.out")));
    assert_eq!(read("01.out"), "3\n");
    assert_eq!(read("01.err"), "debug: n=5 T=6\n");
    let verdict = read("01.verdict");
    assert!(
        verdict.contains("verdict   WA") && verdict.contains("score     0"),
        "{verdict}"
    );
    assert!(kept.join("01.checker").is_file());
    // Early stop: 02 to 04 of subtask 01 were not reported, so nothing of them is kept.
    assert!(!kept.join("02.out").exists() && !kept.join("02.verdict").exists());
}

#[test]
fn keep_into_a_used_folder_replaces_the_last_judgement_and_refuses_a_foreign_one() {
    if !is_root_or_skip("judging") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let kept = work.path().join("kept");
    let dir = sumpairs();
    let ac = dir.join("solutions/ac.cpp");
    let out = judge(&[path(&dir), path(&ac), "--all-tests", "--keep", path(&kept)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(kept.join("02.verdict").is_file());
    // A link named like a kept file is not the judge's to remove.
    std::os::unix::fs::symlink(&ac, kept.join("link.out")).unwrap();
    // The second judgement stops early: nothing of the first's 02 may stay beside it.
    let wa = debug_solution("stderr_wa.cpp");
    let out = judge(&[path(&dir), path(&wa), "--keep", path(&kept)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(std::fs::read_to_string(kept.join("01.verdict"))
        .unwrap()
        .contains("WA"));
    for name in ["02.verdict", "02.out", "02.in", "02.ans"] {
        assert!(
            !kept.join(name).exists(),
            "{name} of the first judgement is left"
        );
    }
    assert!(kept.join("link.out").symlink_metadata().is_ok());

    // A folder of someone else's files is refused, and nothing in it is touched.
    let foreign = work.path().join("mine");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("01.out"), "my notes").unwrap();
    let out = judge(&[path(&dir), path(&wa), "--keep", path(&foreign)]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("holds files ioi-run did not keep"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(foreign.join("01.out")).unwrap(),
        "my notes"
    );
}

#[test]
fn keep_keeps_a_test_judged_in_one_subtask_and_skipped_in_another() {
    if !is_root_or_skip("judging") {
        return;
    }
    // The demo's `scales`: test 03 is in subtasks 01, 02 and 03. This solution fails 02, so
    // subtask 01 stops before 03 (SKIPPED there), while 02 and 03 judge it (WA).
    let work = tempfile::tempdir().unwrap();
    let solution = work.path().join("scales.cpp");
    std::fs::write(
        &solution,
        "#include \"scales.h\"\n#include <bits/stdc++.h>\nusing namespace std;\n\
         int find_heavy(int N){vector<int> c(N);iota(c.begin(),c.end(),0);\
         while(c.size()>1){int k=c.size(),a=(k+2)/3;vector<int> L(c.begin(),c.begin()+a),\
         R(c.begin()+a,c.begin()+2*a),rest(c.begin()+2*a,c.end());int r=weigh(L,R);\
         if(r==1)c=R;else if(r==-1)c=L;else c=rest;}return c[0];}\n",
    )
    .unwrap();
    let kept = work.path().join("kept");
    let problem = Path::new(env!("CARGO_MANIFEST_DIR")).join("demo/problems/scales");
    let out = judge(&[
        path(&problem),
        path(&solution),
        "--keep",
        path(&kept),
        "--json",
    ]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let statuses: Vec<&Value> = report["subtasks"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["tests"].as_array().unwrap())
        .filter(|t| t["test_name"] == "03")
        .map(|t| &t["status"])
        .collect();
    assert_eq!(statuses, ["SKIPPED", "WA", "WA"], "{report}");
    let verdict = std::fs::read_to_string(kept.join("03.verdict")).unwrap();
    assert!(verdict.contains("verdict   WA"), "{verdict}");
    assert!(kept.join("03.manager.err").is_file() && kept.join("03.in").is_file());
    let screen = judge(&[path(&problem), path(&solution), "--keep", path(&kept)]);
    let screen = text(&screen.stdout) + &text(&screen.stderr);
    assert!(
        screen.contains(
            "03.{in,ans,err,manager.out,manager.err,verdict,conversation.json,u0_to_m,m_to_u0}"
        ),
        "the kept line names the files there are: {screen}"
    );
}

#[test]
fn escape_sequences_of_a_submission_never_reach_the_terminal() {
    if !is_root_or_skip("judging") {
        return;
    }
    // Its stderr sets the terminal's title, rings, and writes a line of its own over the
    // judge's: a model's way to show a reader "total 100/100" that `judge` never printed.
    let work = tempfile::tempdir().unwrap();
    let solution = work.path().join("sumpairs.cpp");
    std::fs::write(
        &solution,
        "#include \"sumpairs.h\"\n#include <cstdio>\n\
         long long count_pairs(int T, std::vector<int> a) {\n\
         fprintf(stderr, \"\\x1b]0;owned\\x07\\x1b[2K\\rtotal 100/100\\n\");\n\
         return -1; }\n",
    )
    .unwrap();
    let out = judge(&[path(&sumpairs()), path(&solution), "--color", "always"]);
    let screen = text(&out.stdout) + &text(&out.stderr);
    assert!(screen.contains("total 0/100"), "{screen}");
    assert!(screen.contains("?]0;owned??[2K?total 100/100"), "{screen}");
    for line in screen.lines() {
        // The judge's own colours are `ESC [ n m`; nothing else of an escape gets through.
        let mut rest = line;
        while let Some(at) = rest.find('\x1b') {
            rest = &rest[at + 1..];
            let code: String = rest.chars().take_while(|c| *c != 'm').collect();
            assert!(
                code.starts_with('[') && code[1..].chars().all(|c| c.is_ascii_digit() || c == ';'),
                "an escape the judge did not write: {line:?}"
            );
        }
        assert!(!line.contains('\x07') && !line.contains('\r'), "{line:?}");
    }
    // A package's error quotes its file names: shown, never obeyed.
    let package = work.path().join("sumpairs");
    common::copy_dir(&sumpairs(), &package);
    let subtask = package.join("subtasks/02-large.json");
    let json = std::fs::read_to_string(&subtask).unwrap();
    std::fs::remove_file(&subtask).unwrap();
    std::fs::write(
        package.join("subtasks/02-\x1b]0;owned\x07\x1b[2Jx.json"),
        json.replace("\"score\": 60", "\"score\": 2e6"),
    )
    .unwrap();
    let out = judge(&[path(&package), path(&solution)]);
    let error = text(&out.stderr);
    assert!(error.contains("?]0;owned??[2Jx"), "{error}");
    assert!(
        !error.contains('\x1b') && !error.contains('\x07'),
        "{error:?}"
    );
}

#[test]
fn a_solution_that_is_a_fifo_or_a_device_is_refused_unread() {
    let work = tempfile::tempdir().unwrap();
    let fifo = work.path().join("solution.cpp");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    for solution in [fifo.as_path(), Path::new("/dev/zero")] {
        let out = judge(&[path(&sumpairs()), path(solution)]);
        let error = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{error}");
        assert!(error.contains("not a regular file"), "{error}");
    }
}

fn read_fixture(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

#[test]
fn input_runs_the_solution_through_the_grader_and_the_manager() {
    if !is_root_or_skip("judging") {
        return;
    }
    let dir = sumpairs();
    let mut child = bin_shared_cache()
        .args(["judge", path(&dir), path(&debug_solution("stderr_wa.cpp"))])
        .args(["--input", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"3 4\n1 3 2\n").unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("ended normally"), "{stdout}");
    // One pair sums to 4; the solution answers one more, and says what it saw.
    assert!(
        stdout.contains("--- your output (1 line) ---\n2\n"),
        "{stdout}"
    );
    assert!(stdout.contains("debug: n=3 T=4"), "{stdout}");

    let relay = problem_dir("relay");
    let out = judge(&[
        path(&relay),
        path(&relay.join("solutions/off_by_one_wa.cpp")),
        "--input",
        path(&relay.join("tests/01.in")),
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("your process 1"), "{stdout}");
    assert!(
        stdout.contains("the manager's verdict: score 0"),
        "{stdout}"
    );
    // The run is relayed: what was said, in order.
    assert!(
        stdout.contains("0 ← 123456789\n0 → 4 21 205 91 7\n1 ← 4 21 205 91 7\n1 → 123456790\n"),
        "{stdout}"
    );
}

#[test]
fn the_debug_profile_names_the_line_on_a_batch_task() {
    if !is_root_or_skip("judging") {
        return;
    }
    let dir = sumpairs();
    let solution = debug_solution("oob.cpp");
    let report = judge_json(
        bin_shared_cache(),
        [path(&dir), path(&solution), "--compile-profile", "debug"],
    );
    let t = test_named(&tests_of(&report), "01").clone();
    assert_eq!(t["status"], "RE", "{t}");
    let location = t["diagnosis"]["location"].as_str().unwrap_or_default();
    assert!(location.contains("oob.cpp:9"), "{t}");
    let stderr = t["diagnosis"]["stderr_head"].to_string();
    assert!(stderr.contains("AddressSanitizer"), "{t}");
}

#[test]
fn the_debug_profile_names_the_line_on_a_communication_task() {
    if !is_root_or_skip("judging") {
        return;
    }
    let relay = problem_dir("relay");
    let solution = relay.join("solutions/receiver_segv.cpp");
    let report = judge_json(
        bin_shared_cache(),
        [path(&relay), path(&solution), "--compile-profile", "debug"],
    );
    let t = test_named(&tests_of(&report), "01").clone();
    assert_eq!(t["status"], "RE", "{t}");
    let location = t["diagnosis"]["location"].as_str().unwrap_or_default();
    assert!(location.contains("receiver_segv.cpp:11"), "{t}");
    let stderr = t["diagnosis"]["stderr_head"].to_string();
    assert!(
        stderr.contains("runtime error: store to null pointer"),
        "{t}"
    );
}

#[test]
fn what_cannot_be_judged_is_refused_up_front() {
    let work = tempfile::tempdir().unwrap();
    let dir = sumpairs();
    let empty = work.path().join("empty.cpp");
    std::fs::write(&empty, "\n  \n").unwrap();
    let c = work.path().join("sol.c");
    std::fs::write(&c, "int main(void) { return 0; }\n").unwrap();
    if !is_root_or_skip("judging") {
        return;
    }
    let out = judge(&[path(&dir), path(&empty)]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("is empty"));
    let out = judge(&[path(&dir), path(&c)]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("is a C file") && !stderr.contains("compiler"),
        "{stderr}"
    );
    // A task folder of 2024 asked for as 1999.
    let tasks = work.path().join("tasks");
    common::copy_dir(&dir, &tasks.join("sumpairs"));
    let config = tasks.join("sumpairs/problem.json");
    let mut json: Value = serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    json["year"] = 2024.into();
    std::fs::write(&config, json.to_string()).unwrap();
    let out = judge(&[
        "--problems",
        path(&tasks),
        "--problem-id",
        "sumpairs",
        "--year",
        "1999",
        path(&dir.join("solutions/ac.cpp")),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("of year 1999") && stderr.contains("it exists for 2024"),
        "{stderr}"
    );
}

#[test]
fn watch_judges_again_when_the_solution_is_saved() {
    if !is_root_or_skip("judging") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let dir = sumpairs();
    let solution = work.path().join("sol.cpp");
    std::fs::copy(dir.join("solutions/int_overflow.cpp"), &solution).unwrap();
    let stdout_path = work.path().join("stdout");
    let stderr_path = work.path().join("stderr");
    let mut child = bin_shared_cache()
        .args(["judge", path(&dir), path(&solution), "--watch"])
        .env_remove("COLUMNS")
        .stdout(std::fs::File::create(&stdout_path).unwrap())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap();
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    let guard = KillOnDrop(&mut child);
    wait_until("the first judging", Duration::from_secs(120), || {
        read(&stderr_path).contains("watching")
    });
    assert!(read(&stdout_path).contains("total 40/100"));
    std::fs::copy(dir.join("solutions/ac.cpp"), &solution).unwrap();
    wait_until("the second judging", Duration::from_secs(120), || {
        read(&stdout_path).contains("total 100/100")
    });
    let stderr = read(&stderr_path);
    assert!(stderr.contains("changed: judging again"));
    assert!(
        !stderr.contains('\x1b'),
        "no terminal, no escape sequence: {stderr:?}"
    );
    drop(guard);
}

/// In a terminal (a pseudo-terminal made by util-linux's `script`), each judgement after a save
/// clears the screen before it starts, so that it replaces the last one; Ctrl-C stops it.
#[test]
fn watch_in_a_terminal_redraws_each_judgement() {
    if !is_root_or_skip("judging") {
        return;
    }
    if Command::new("script").arg("--version").output().is_err() {
        common::skip("util-linux's script (a pseudo-terminal) is not installed");
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let dir = sumpairs();
    let solution = work.path().join("sol.cpp");
    std::fs::copy(dir.join("solutions/int_overflow.cpp"), &solution).unwrap();
    let screen = work.path().join("screen");
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("compile-cache");
    let command = format!(
        "IOI_RUN_CACHE={} {} judge {} {} --watch",
        path(&cache),
        env!("CARGO_BIN_EXE_ioi-run"),
        path(&dir),
        path(&solution)
    );
    let mut child = Command::new("script")
        .args(["-qfec", &command, "/dev/null"])
        .env("TERM", "xterm")
        .stdin(Stdio::piped())
        .stdout(std::fs::File::create(&screen).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let read = || std::fs::read_to_string(&screen).unwrap_or_default();
    let guard = KillOnDrop(&mut child);
    wait_until("the first judging", Duration::from_secs(120), || {
        read().contains("watching")
    });
    let first = read();
    assert!(first.contains("total 40/100"), "{first}");
    assert!(
        !first.contains("\x1b[2J"),
        "the first judgement clears nothing"
    );
    std::fs::copy(dir.join("solutions/ac.cpp"), &solution).unwrap();
    wait_until("the second judging", Duration::from_secs(120), || {
        read().contains("total 100/100")
    });
    let all = read();
    let clear = all.find("\x1b[H\x1b[2J").expect("the screen cleared");
    let again = all.find("changed: judging again").expect("said why");
    assert!(clear < again && again < all.find("total 100/100").unwrap());
    assert!(clear > all.find("total 40/100").unwrap());
    // Ctrl-C, typed into the terminal.
    use std::io::Write;
    guard.0.stdin.as_mut().unwrap().write_all(b"\x03").unwrap();
    wait_until("Ctrl-C to stop the judge", Duration::from_secs(30), || {
        read().contains("interrupted")
    });
    drop(guard);
}

/// Stops the child (by its pid) however the test ends, as Ctrl-C does: SIGINT, on which
/// ioi-run removes its cgroups and scratch folders; SIGKILL only if it is still there after
/// a liveness bound.
struct KillOnDrop<'a>(&'a mut std::process::Child);

impl Drop for KillOnDrop<'_> {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.0.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT);
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while std::time::Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn help_lists_the_debugging_options() {
    let out = Command::new(env!("CARGO_BIN_EXE_ioi-run"))
        .args(["judge", "--help"])
        .output()
        .unwrap();
    let help = text(&out.stdout);
    for option in [
        "--test <NAME>",
        "--all-tests",
        "--keep <DIR>",
        "--input <FILE>",
        "--watch",
    ] {
        assert!(help.contains(option), "{option} in {help}");
    }
    assert!(help.contains("debug"), "{help}");
}

#[test]
fn an_interrupted_judge_says_nothing_of_resuming() {
    if !is_root_or_skip("judging") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let dir = sumpairs();
    let stderr_path = work.path().join("stderr");
    let mut child = bin_shared_cache()
        .args([
            "judge",
            path(&dir),
            path(&dir.join("solutions/sleep_tle.cpp")),
        ])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap();
    let read = || std::fs::read_to_string(&stderr_path).unwrap_or_default();
    let guard = KillOnDrop(&mut child);
    // The line comes once the interrupt handler is in place.
    wait_until("judge to start", Duration::from_secs(60), || {
        read().contains("compiling")
    });
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(guard.0.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let status = guard.0.wait().unwrap();
    assert_eq!(status.code(), Some(128 + libc::SIGINT));
    let stderr = read();
    assert!(stderr.contains("ioi-run: interrupted"), "{stderr}");
    assert!(!stderr.contains("evaluate"), "{stderr}");
}

/// The lines of a test's conversation in a `--json` report, as `(process, direction, line)`.
fn conversation_lines(test: &Value) -> Vec<(u64, String, String)> {
    test["diagnosis"]["conversation"]["lines"]
        .as_array()
        .unwrap_or_else(|| panic!("no conversation in {test}"))
        .iter()
        .map(|l| {
            (
                l["process"].as_u64().unwrap(),
                l["direction"].as_str().unwrap().to_string(),
                l["line"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_failing_communication_test_shows_its_conversation_by_process_and_direction() {
    if !is_root_or_skip("judging") {
        return;
    }
    let relay = problem_dir("relay");
    let solution = relay.join("solutions/off_by_one_wa.cpp");
    let keep = tempfile::tempdir().unwrap();
    let report = judge_json(
        bin_shared_cache(),
        [
            path(&relay),
            path(&solution),
            "--test",
            "01",
            "--keep",
            path(keep.path()),
        ],
    );
    let tests = tests_of(&report);
    let test = test_named(&tests, "01");
    // The verdict is the judged run's, as `evaluate` gives it.
    assert_eq!(test["status"], "WA", "{test}");
    assert_eq!(test["score"], 0.0, "{test}");
    let owned = |(p, d, l): (u64, &str, &str)| (p, d.to_string(), l.to_string());
    assert_eq!(
        conversation_lines(test),
        [
            (0, "to_process", "123456789"),
            (0, "to_manager", "4 21 205 91 7"),
            (1, "to_process", "4 21 205 91 7"),
            (1, "to_manager", "123456790"),
        ]
        .map(owned)
    );
    let processes = &test["diagnosis"]["conversation"]["processes"];
    assert_eq!(processes[0]["sent_bytes"], 14, "{processes}");
    assert_eq!(processes[1]["received_bytes"], 14, "{processes}");
    // Kept per process and direction.
    let kept = |name: &str| std::fs::read_to_string(keep.path().join(name)).unwrap();
    assert_eq!(kept("01.u0_to_m"), "4 21 205 91 7\n");
    assert_eq!(kept("01.m_to_u0"), "123456789\n");
    assert_eq!(kept("01.m_to_u1"), "4 21 205 91 7\n");
    assert_eq!(kept("01.u1_to_m"), "123456790\n");

    let out = judge(&[path(&relay), path(&solution), "--test", "01"]);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("messages  process 0 sent 14 bytes, received 10; process 1 sent 10"),
        "{stdout}"
    );
    assert!(stdout.contains("| 0 ← 123456789\n"), "{stdout}");
    assert!(stdout.contains("| 1 → 123456790\n"), "{stdout}");
}

#[test]
fn a_communication_process_s_stdout_that_nobody_reads_is_named() {
    if !is_root_or_skip("judging") {
        return;
    }
    let relay = problem_dir("relay");
    let solution = relay.join("debug/stdout_wa.cpp");
    let keep = tempfile::tempdir().unwrap();
    let out = judge(&[
        path(&relay),
        path(&solution),
        "--test",
        "01",
        "--keep",
        path(keep.path()),
    ]);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(
            "unread    process 0 wrote 19 bytes to its stdout, which nobody reads (fifo_io: the \
             manager reads the FIFOs): \"encoding 123456789\\n\""
        ),
        "{stdout}"
    );
    assert_eq!(
        std::fs::read_to_string(keep.path().join("01.u0.stdout")).unwrap(),
        "encoding 123456789\n"
    );
    // Process 1 printed nothing: nothing is kept of it.
    assert!(!keep.path().join("01.u1.stdout").exists());
}

#[test]
fn the_stdout_hint_of_a_communication_test_needs_evidence() {
    if !is_root_or_skip("judging") {
        return;
    }
    let guess = problem_dir("guess");
    let hint_of = |solution: PathBuf, test: &str| {
        let report = judge_json(
            bin_shared_cache(),
            [path(&guess), path(&solution), "--test", test],
        );
        let tests = tests_of(&report);
        let t = test_named(&tests, test).clone();
        assert_eq!(t["status"], "WA", "{t}");
        assert!(t["diagnosis"]["conversation"].is_object(), "{t}");
        t["diagnosis"]["hint"].as_str().map(str::to_string)
    };
    // A debugging printf on the pipe: the manager cannot read it.
    let hint = hint_of(guess.join("debug/printf_wa.cpp"), "02").expect("a hint");
    assert!(hint.contains("protocol violation"), "{hint}");
    assert!(hint.contains("your standard output is the pipe"), "{hint}");
    // A plain wrong answer (the solution stops after one query): no word of stdout.
    assert_eq!(hint_of(guess.join("solutions/exit0_early.cpp"), "02"), None);
    // A wrong guess after a right protocol: none either.
    assert_eq!(hint_of(guess.join("debug/flood_wa.cpp"), "01"), None);
}

#[test]
fn a_conversation_flood_costs_the_judge_its_bounds_only() {
    if !is_root_or_skip("judging") {
        return;
    }
    let guess = problem_dir("guess");
    let keep = tempfile::tempdir().unwrap();
    // 128 MiB of spaces to the manager, which reads them all, then a wrong guess.
    let mut command = bin_shared_cache();
    command
        .args([
            "judge",
            path(&guess),
            path(&guess.join("debug/flood_wa.cpp")),
        ])
        .args(["--test", "02", "--json", "--keep", path(keep.path())]);
    let (out, peak) = output_and_peak_rss_kib(command);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tests = tests_of(&report);
    let conversation = &test_named(&tests, "02")["diagnosis"]["conversation"];
    let sent = conversation["processes"][0]["sent_bytes"].as_u64().unwrap();
    assert!(sent > 16 << 20, "{conversation}");
    // Kept: the last 64 KiB each way, and as much of the conversation in order.
    let size = |name: &str| std::fs::metadata(keep.path().join(name)).unwrap().len();
    assert_eq!(size("02.u0_to_m"), 64 << 10);
    assert!(size("02.conversation.json") < 256 << 10);
    assert!(conversation["earlier"].as_bool().unwrap(), "{conversation}");
    // Holding the flood would take 128 MiB.
    assert_peak_below(peak, 96);
}

/// The relay must not change how a conversation ends: every fixture solution of the
/// Communication tasks that ends at once (no TLE) run relayed (`--input`) ends as it does
/// judged directly: the same failure of a process, or the same words of the manager.
#[test]
fn a_relayed_communication_run_ends_as_the_judged_run() {
    if !is_root_or_skip("judging") {
        return;
    }
    let cases = [
        ("relay", "solutions/ac", "01"),
        ("relay", "solutions/decimal_pa", "01"),
        ("relay", "solutions/off_by_one_wa", "01"),
        ("relay", "solutions/receiver_segv", "01"),
        ("relay", "solutions/exit_before_open", "01"),
        ("guess", "solutions/linear_pa", "02"),
        ("guess", "solutions/exit0_early", "01"),
        ("guess", "solutions/exit3_early", "01"),
        // The manager quits while the program writes: SIGPIPE, relayed too.
        ("guess", "debug/burst_re", "02"),
        ("pingpong", "solutions/quit_wa", "02"),
        ("pingpong", "solutions/exit3_re", "02"),
        ("pingpong", "solutions/overflow_wa", "02"),
    ];
    for (problem, solution, test) in cases {
        let dir = problem_dir(problem);
        let solution = dir.join(format!("{solution}.cpp"));
        let report = judge_json(
            bin_shared_cache(),
            [path(&dir), path(&solution), "--test", test],
        );
        let tests = tests_of(&report);
        let judged = test_named(&tests, test);
        let feedback = judged["feedback"].as_str().unwrap();
        let input = dir.join(format!("tests/{test}.in"));
        let out = judge(&[path(&dir), path(&solution), "--input", path(&input)]);
        let relayed = text(&out.stdout);
        let expected = match judged["status"].as_str().unwrap() {
            "RE" | "TLE" | "MLE" => feedback.to_string(),
            _ => format!(
                "the manager's verdict: score {}, {feedback}",
                judged["score"].as_f64().unwrap()
            ),
        };
        assert!(
            relayed.contains(&expected),
            "{problem}/{}: judged {judged}, relayed:\n{relayed}",
            solution.display()
        );
    }
}
