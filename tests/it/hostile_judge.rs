//! The judge against hostile submissions (interrupts, compile cache, FIFOs, the judge's
//! own resources) and verdicts that tell the truth (compile profiles, sources that are
//! not UTF-8, statuses), end to end through the binary.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use serde_json::Value;

use crate::common;
use common::{bin, is_root_or_skip, problem_dir, wait_until, Guard};
use std::ffi::OsStr;

/// Whether this test can run sandboxes (root); otherwise SKIPPED, or a failure under CI.
fn can_sandbox() -> bool {
    is_root_or_skip("the hostile judge tests")
}

fn judge_json(work: &Path, args: &[&str], problem: &Path, solution: &Path) -> Value {
    let args = args
        .iter()
        .map(OsStr::new)
        .chain([problem.as_os_str(), solution.as_os_str()]);
    common::judge_json(bin(work), args)
}

fn statuses(report: &Value) -> Vec<String> {
    report["subtasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["status"].as_str().unwrap().to_string())
        .collect()
}

/// The feedback of the first test of a report; for a submission that did not compile, the
/// compiler's messages, which `--json` gives once as `compile_error`.
fn first_feedback(report: &Value) -> String {
    match report["compile_error"].as_str() {
        Some(message) => message.to_string(),
        None => tests_of(report)[0]["feedback"]
            .as_str()
            .unwrap()
            .to_string(),
    }
}

fn tests_of(report: &Value) -> Vec<Value> {
    report["subtasks"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["tests"].as_array().unwrap().clone())
        .collect()
}

fn write_solution(work: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = work.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// wdiff's canonical solution (Pascal's triangle modulo 1000).
const WDIFF_BODY: &str = r#"
int main() {
    int n;
    if (scanf("%d", &n) != 1) return 1;
    std::vector<int> row{1};
    for (int r = 0; r < n; r++) {
        for (size_t i = 0; i < row.size(); i++) printf(i ? " %d" : "%d", row[i]);
        printf("\n");
        std::vector<int> next{1};
        for (size_t i = 0; i + 1 < row.size(); i++) next.push_back((row[i] + row[i + 1]) % 1000);
        next.push_back(1);
        row = next;
    }
}
"#;

fn wdiff_solution(prefix: &str) -> String {
    format!("#include <cstdio>\n#include <vector>\n#include <cstring>\n{prefix}\n{WDIFF_BODY}")
}

/// A few seconds of g++ CPU: constant evaluation the compiler must do.
const SLOW_COMPILE: &str = r#"
constexpr unsigned burn(unsigned s) {
    for (unsigned i = 0; i < 250000; i++) s = s * 1103515245u + 12345u;
    return s;
}
static_assert((burn(1) ^ burn(2) ^ burn(3)) != 7, "burn");
"#;

/// Processes whose parent chain reaches `ancestor`, with their argv.
fn descendants(ancestor: u32) -> Vec<(u32, Vec<String>)> {
    let parent = |pid: u32| -> Option<u32> {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("PPid:"))
            .and_then(|p| p.trim().parse().ok())
    };
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let mut p = pid;
        let mut hops = 0;
        let mut inside = false;
        while let Some(up) = parent(p) {
            if up == ancestor {
                inside = true;
                break;
            }
            if up <= 1 || hops > 20 {
                break;
            }
            p = up;
            hops += 1;
        }
        if inside {
            let argv = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let argv = argv
                .split(|b| *b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            found.push((pid, argv));
        }
    }
    found
}

/// Every `error.json` of a compile cache, as text.
fn cached_errors(cache: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(cache.join("compile")) else {
        return found;
    };
    for entry in entries.flatten() {
        if let Ok(text) = std::fs::read_to_string(entry.path().join("error.json")) {
            found.push(text);
        }
    }
    found
}

/// Ctrl-C (SIGINT to the whole process group, as a terminal sends it) while a
/// submission compiles and another one's test runs: nothing is saved, nothing cached, and the
/// next run judges both afresh.
#[test]
fn an_interrupt_is_never_a_verdict() {
    if !can_sandbox() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let work = work.path();
    let marker = format!("{}.{:04}", 7000 + std::process::id() % 2000, 77);
    let slow = wdiff_solution(SLOW_COMPILE);
    let sleeper = format!(
        "#include <unistd.h>\nint main() {{ execl(\"/bin/sleep\", \"/bin/sleep\", \"{marker}\", (char *)0); return 0; }}\n"
    );
    let rows = [("slow", slow), ("sleeper", sleeper)]
        .iter()
        .map(|(id, code)| {
            serde_json::json!({"uuid": id, "problem_id": "wdiff", "code": code}).to_string()
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(work.join("subs.jsonl"), rows + "\n").unwrap();
    let evaluate = |work: &Path| {
        let mut cmd = bin(work);
        cmd.arg("evaluate")
            .arg(work.join("subs.jsonl"))
            .arg(work.join("results"))
            .arg("--problems")
            .arg(problem_dir("wdiff"))
            .args(["--jobs", "2"]);
        cmd
    };
    let mut child = Guard(
        evaluate(work)
            .process_group(0)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let pid = child.0.id();
    wait_until(
        "the slow compile and the sleeper to run together",
        Duration::from_secs(300),
        || {
            let procs = descendants(pid);
            let compiling = procs
                .iter()
                .any(|(_, argv)| argv.first().is_some_and(|a| a.ends_with("cc1plus")));
            let sleeping = procs.iter().any(|(_, argv)| argv.contains(&marker));
            compiling && sleeping
        },
    );
    // What a terminal does on Ctrl-C: SIGINT to every process of the foreground group.
    nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let status = child.0.wait().unwrap();
    assert_eq!(
        status.code(),
        Some(130),
        "ioi-run should exit 130 on SIGINT"
    );
    let results = work.join("results/subs.jsonl");
    let saved = std::fs::read_to_string(&results).unwrap_or_default();
    assert!(
        saved.trim().is_empty(),
        "interrupted submissions were saved: {saved}"
    );
    assert_eq!(
        cached_errors(work),
        Vec::<String>::new(),
        "an interrupted compile was cached"
    );

    // The rerun judges both: the slow one compiles (AC), the sleeper reaches its wall limit.
    let out = evaluate(work).output().unwrap();
    assert!(
        out.status.success(),
        "rerun failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let saved = std::fs::read_to_string(&results).unwrap();
    let rows: Vec<Value> = saved
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2, "{saved}");
    assert!(!saved.contains("signal 2"), "{saved}");
    for row in &rows {
        let statuses: Vec<&str> = row["all_subtasks_results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["status"].as_str().unwrap())
            .collect();
        let want = match row["uuid"].as_str().unwrap() {
            "slow" => "AC",
            _ => "TLE",
        };
        assert_eq!(statuses, vec![want, want], "{row}");
        assert_eq!(row["compile_profile"], "reference");
    }
}

/// A compile killed from outside (the compiler proper, or the g++ driver) is
/// not a verdict: it is not cached, and the next compile of the same code runs the compiler.
#[test]
fn a_compile_killed_from_outside_is_not_cached() {
    if !can_sandbox() {
        return;
    }
    use ioi_run::judge::compile::{CompileCache, Compiled};
    let work = tempfile::tempdir().unwrap();
    let cache = CompileCache::new(work.path().join("compile"), 1 << 30).unwrap();
    let sandbox = ioi_sandbox::Sandbox::new(ioi_sandbox::SandboxOptions::default()).unwrap();
    let name = format!("killed_{}.cpp", std::process::id());
    let source = format!("{SLOW_COMPILE}\nint main() {{}}\n");
    let files: Vec<(&str, &[u8])> = vec![(name.as_str(), source.as_bytes())];
    for victim in ["cc1plus", "g++"] {
        let compiled = std::thread::scope(|s| {
            let compile =
                s.spawn(|| cache.program(&sandbox, &files, &name, ioi_run::judge::Language::Cpp));
            let me = std::process::id();
            let mut target = None;
            wait_until(
                &format!("{victim} to compile {name}"),
                Duration::from_secs(300),
                || {
                    target = descendants(me).into_iter().find(|(_, argv)| {
                        argv.first().is_some_and(|a| a.ends_with(victim))
                            && argv.iter().any(|a| a.contains(&name))
                    });
                    target.is_some() || compile.is_finished()
                },
            );
            let (pid, _) = target.expect("the compile ended before it could be killed");
            nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            )
            .unwrap();
            compile.join().unwrap().unwrap()
        });
        assert!(
            matches!(compiled, Compiled::Error { .. }),
            "killing {victim} should fail the compile"
        );
        assert_eq!(
            cached_errors(work.path()),
            Vec::<String>::new(),
            "the compile killed at {victim} was cached"
        );
    }
    let builds = cache.builds();
    let compiled = cache
        .program(&sandbox, &files, &name, ioi_run::judge::Language::Cpp)
        .unwrap();
    assert!(matches!(compiled, Compiled::Binary(_)), "{compiled:?}");
    assert_eq!(cache.builds(), builds + 1, "the compiler must run again");
}

/// In a fifo_io task, user processes that exit before opening their FIFOs
/// leave the manager blocked in `open`; the judge releases it and the solution gets a verdict.
#[test]
fn users_that_never_open_their_fifos_get_a_verdict() {
    if !can_sandbox() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let dir = problem_dir("relay");
    let report = judge_json(
        work.path(),
        &[],
        &dir,
        &dir.join("solutions/exit_before_open.cpp"),
    );
    assert_eq!(statuses(&report), vec!["WA", "WA"]);
    let first = &tests_of(&report)[0];
    assert_eq!(
        first["feedback"],
        "Output isn't correct: sender sent nothing"
    );
    assert_eq!(report["total"].as_f64(), Some(0.0));
}

/// A right answer followed by a flood of whitespace is stopped by the output
/// limit (twice the expected output plus 64 MiB), a clear WA.
#[test]
fn an_output_flood_is_stopped_at_the_output_limit() {
    if !can_sandbox() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let dir = problem_dir("wdiff");
    let report = judge_json(
        work.path(),
        &[],
        &dir,
        &dir.join("solutions/whitespace_flood.cpp"),
    );
    assert_eq!(statuses(&report), vec!["WA", "WA"]);
    let feedback = first_feedback(&report);
    assert!(
        feedback.starts_with("Output isn't correct: output limit exceeded (more than "),
        "{feedback}"
    );
}

/// A compiled program over `--max-program-size` is a CE saying so.
#[test]
fn a_program_over_the_size_cap_is_a_compilation_error() {
    if !can_sandbox() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    // 3 MiB of initialised data: in the file, unlike zeroed arrays.
    let code = wdiff_solution("static volatile char big[3 << 20] = {1};");
    let solution = write_solution(work.path(), "big.cpp", code.as_bytes());
    let dir = problem_dir("wdiff");
    let report = judge_json(work.path(), &["--max-program-size", "1M"], &dir, &solution);
    assert_eq!(statuses(&report), vec!["CE", "CE"]);
    let feedback = first_feedback(&report);
    assert!(
        feedback.contains("over the limit of 1048576 bytes"),
        "{feedback}"
    );
    // The same code under the default cap is a program (the cap is part of the cache key).
    let report = judge_json(work.path(), &[], &dir, &solution);
    assert_eq!(statuses(&report), vec!["AC", "AC"]);
}

/// Compiler diagnostics are read with a cap, and decoded lossily (a source in
/// Latin-1 quoted in an error keeps the whole message).
#[test]
fn compiler_diagnostics_are_capped_and_lossy() {
    if !can_sandbox() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let mut code = b"#error caf\xe9 is not UTF-8\n".to_vec();
    for i in 0..3000 {
        code.extend(format!("int v{i} = undeclared_{i};\n").as_bytes());
    }
    let solution = write_solution(work.path(), "flood.cpp", &code);
    let dir = problem_dir("wdiff");
    let report = judge_json(work.path(), &[], &dir, &solution);
    assert_eq!(statuses(&report), vec!["CE", "CE"]);
    let feedback = first_feedback(&report);
    assert!(
        feedback.contains("caf\u{fffd} is not UTF-8"),
        "{}",
        &feedback[..feedback.len().min(500)]
    );
    assert!(feedback.contains("undeclared_1"));
    assert!(feedback.ends_with("[compiler output truncated]"));
    assert!(feedback.len() < 70_000, "{} bytes", feedback.len());
}

/// A source that includes the host's account files gets a compile error that quotes none of
/// them: the compile box does not show them.
#[test]
fn a_compile_error_quotes_no_host_file() {
    if !can_sandbox() {
        return;
    }
    let host_lines: Vec<String> = ["/etc/passwd", "/etc/group"]
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .flat_map(|text| {
            text.lines()
                .map(str::trim)
                .filter(|l| l.len() > 4)
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        !host_lines.is_empty(),
        "the host has an /etc/passwd to protect"
    );
    let work = tempfile::tempdir().unwrap();
    let code = b"#include \"/etc/passwd\"\n#include \"../../../../../../../etc/group\"\n";
    let solution = write_solution(work.path(), "include.cpp", code);
    let report = judge_json(work.path(), &[], &problem_dir("wdiff"), &solution);
    assert_eq!(statuses(&report), vec!["CE", "CE"]);
    let feedback = first_feedback(&report);
    for line in &host_lines {
        assert!(
            !feedback.contains(line.as_str()),
            "quotes {line:?}:\n{feedback}"
        );
    }
}

/// A Latin-1 source with CRLF line ends compiles as g++ and CMS compile it.
#[test]
fn a_latin1_crlf_source_compiles() {
    if !can_sandbox() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let mut code = b"// R\xe9sultat : le triangle de Pascal, \xe0 la ligne\n".to_vec();
    code.extend(wdiff_solution("").as_bytes());
    let code: Vec<u8> = code
        .split(|b| *b == b'\n')
        .collect::<Vec<_>>()
        .join(&b"\r\n"[..]);
    assert!(std::str::from_utf8(&code).is_err());
    let solution = write_solution(work.path(), "latin1.cpp", &code);
    let dir = problem_dir("wdiff");
    let report = judge_json(work.path(), &[], &dir, &solution);
    assert_eq!(statuses(&report), vec!["AC", "AC"]);
}

/// `--compile-profile ioi` links statically (and works in the sandbox); the
/// profiles do not share cache entries.
#[test]
fn the_ioi_profile_links_statically() {
    if !can_sandbox() {
        return;
    }
    if !ioi_run::judge::compile::missing_static_archives().is_empty() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI needs the static libraries"
        );
        eprintln!("SKIPPED: no static libstdc++/libc archives");
        return;
    }
    let work = tempfile::tempdir().unwrap();
    // Right only when no dynamic loader is mapped, i.e. when statically linked.
    let check = r#"
static bool dynamic() {
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[512];
    bool found = false;
    while (maps && fgets(line, sizeof line, maps)) found |= strstr(line, "ld-linux") != nullptr;
    return found;
}
static int guard = dynamic() ? (printf("dynamic\n"), 0) : 0;
"#;
    let solution = write_solution(work.path(), "static.cpp", wdiff_solution(check).as_bytes());
    let dir = problem_dir("wdiff");
    let ioi = judge_json(work.path(), &["--compile-profile", "ioi"], &dir, &solution);
    assert_eq!(statuses(&ioi), vec!["AC", "AC"]);
    let reference = judge_json(work.path(), &[], &dir, &solution);
    assert_eq!(statuses(&reference), vec!["WA", "WA"]);
}

/// With the native runner a program that ended normally and was scored 0 is
/// WA whatever the checker's wording (testlib's "Wrong Answer" here); script mode keeps the
/// reference's text-derived label (RE). The feedback text is kept as it is.
#[test]
fn native_statuses_do_not_depend_on_the_checker_wording() {
    if !can_sandbox() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let problem = work.path().join("sumpairs");
    common::copy_dir(&problem_dir("sumpairs"), &problem);
    let checker = problem.join("checker/checker.cpp");
    let text = std::fs::read_to_string(&checker).unwrap();
    std::fs::write(
        &checker,
        text.replace("\"Output isn't correct", "\"Wrong Answer"),
    )
    .unwrap();
    let solution = problem.join("solutions/int_overflow.cpp");
    let native = judge_json(work.path(), &[], &problem, &solution);
    assert_eq!(statuses(&native), vec!["AC", "AC", "WA"]);
    let wrong: Vec<Value> = tests_of(&native)
        .into_iter()
        .filter(|t| t["status"] == "WA")
        .collect();
    assert!(!wrong.is_empty());
    for t in &wrong {
        assert_eq!(t["feedback"], "Wrong Answer", "{t}");
    }
    let scripts = judge_json(work.path(), &["--runner", "scripts"], &problem, &solution);
    assert_eq!(statuses(&scripts), vec!["AC", "AC", "RE"]);
}

/// Script mode chooses its own flags, so `--compile-profile ioi` with it is
/// refused with a clear message rather than ignored.
#[test]
fn the_ioi_profile_is_refused_in_script_mode() {
    let work = tempfile::tempdir().unwrap();
    let dir = problem_dir("wdiff");
    let out: Output = bin(work.path())
        .args(["judge", "--runner", "scripts", "--compile-profile", "ioi"])
        .arg(&dir)
        .arg(dir.join("solutions/ac.cpp"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("needs the native runner"), "{stderr}");
}

/// Ctrl-C, the mechanism itself: once ioi-run is stopping (the flag goes up before any
/// run is killed, as the interrupt handler does), a compile and a test that were killed are
/// errors recognised as aborted, never a CE or an RE, and nothing is cached.
#[test]
fn runs_stopped_by_ioi_run_are_aborted_never_verdicts() {
    if !can_sandbox() {
        return;
    }
    use ioi_run::judge::{stop, Build, Judge, JudgeOptions};
    let work = tempfile::tempdir().unwrap();
    let judge = Judge::new(JudgeOptions {
        cache_dir: work.path().join("compile"),
        ..JudgeOptions::default()
    })
    .unwrap();
    let (problem, tests) = ioi_run::problem::cms::load_cms(&problem_dir("wdiff")).unwrap();
    let loaded = judge.prepare(problem, tests).unwrap();
    let marker = format!("{}.{:04}", 7000 + std::process::id() % 2000, 78);
    let sleeper = format!(
        "#include <unistd.h>\nint main() {{ execl(\"/bin/sleep\", \"/bin/sleep\", \"{marker}\", (char *)0); return 0; }}\n"
    );
    let Build::Program(program) = judge
        .compile(&loaded, sleeper.as_bytes(), ioi_run::judge::Language::Cpp)
        .unwrap()
    else {
        panic!("the sleeper should compile");
    };
    let test = loaded.tests.get("01").expect("wdiff has test 01");
    let slow = wdiff_solution(SLOW_COMPILE);
    let me = std::process::id();
    let (compiled, verdict) = std::thread::scope(|s| {
        let compile =
            s.spawn(|| judge.compile(&loaded, slow.as_bytes(), ioi_run::judge::Language::Cpp));
        let run = s.spawn(|| judge.run_test(&loaded, &program, test));
        wait_until(
            "the slow compile and the sleeper to run together",
            Duration::from_secs(300),
            || {
                let procs = descendants(me);
                procs
                    .iter()
                    .any(|(_, argv)| argv.first().is_some_and(|a| a.ends_with("cc1plus")))
                    && procs.iter().any(|(_, argv)| argv.contains(&marker))
            },
        );
        // What the interrupt handler does: the flag first, then kill every run.
        stop::request();
        ioi_sandbox::abort_all();
        (compile.join().unwrap(), run.join().unwrap())
    });
    let compile_error = compiled.err().expect("a killed compile is not a build");
    assert!(stop::is_aborted(&compile_error), "{compile_error:#}");
    let run_error = verdict.expect_err("a killed run is not a verdict");
    assert!(stop::is_aborted(&run_error), "{run_error:#}");
    assert_eq!(cached_errors(work.path()), Vec::<String>::new());
    // Nothing new starts once stopping.
    assert!(stop::is_aborted(
        &judge
            .compile(&loaded, b"int main(){}", ioi_run::judge::Language::Cpp)
            .err()
            .unwrap()
    ));
}
