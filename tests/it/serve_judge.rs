//! The Piston-compatible server with the real judge: requests built exactly as the seed's Python
//! client builds them for the fixture problems under tests/problems, answers read back with the
//! port of the client (`client_view`), statuses derived as the pipeline derives them.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use ioi_run::problem::cms::load_cms;
use ioi_run::problem::config::ensure_grader_config;
use ioi_run::problem::Problem;
use ioi_run::score::Verdict;
use ioi_run::server::piston::client_view;
use ioi_run::server::{JudgeExecutor, Response};
use serde_json::{json, Value};

use crate::common;
use common::{is_root_or_skip, post, problem_dir, skip, TestServer};

/// The server with the real judge, room for 32 waiting requests.
fn start(executor: Arc<JudgeExecutor>) -> TestServer {
    TestServer::start(executor, |o| o.max_queue = 32)
}

/// Posts a request body to `execute`; the HTTP status and the JSON answer.
fn execute(server: &TestServer, body: &Value) -> (u16, Value) {
    post(&server.url("execute"), &body.to_string())
}

/// Posts an IOI request and reads the answer as the Python client does.
fn judge(server: &TestServer, body: &Value) -> (String, String) {
    let (status, answer) = execute(server, body);
    assert_eq!(status, 200, "{answer}");
    let response: Response = serde_json::from_value(answer).expect("a Piston response");
    client_view(&response).expect("the client understands the answer")
}

/// One executor for the tests that do not count compiles, so the fixtures' checkers and
/// managers compile once per run; its cache lives in Cargo's scratch folder.
fn shared_executor() -> Arc<JudgeExecutor> {
    static EXECUTOR: OnceLock<Arc<JudgeExecutor>> = OnceLock::new();
    EXECUTOR
        .get_or_init(|| {
            common::judge_executor(Path::new(env!("CARGO_TARGET_TMPDIR")).join("serve-judge-cache"))
        })
        .clone()
}

/// A fixture problem with its `graders/grader_config.json`, as dataset rows carry it.
fn fixture(name: &str) -> Problem {
    let (mut problem, _tests) = load_cms(&problem_dir(name)).expect("the fixture loads");
    ensure_grader_config(&mut problem);
    problem
}

fn solution(problem: &str, name: &str) -> String {
    let path = problem_dir(problem)
        .join("solutions")
        .join(format!("{name}.cpp"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn test_file(problem: &str, test: &str, ext: &str) -> String {
    let path = problem_dir(problem)
        .join("tests")
        .join(format!("{test}.{ext}"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The request the seed's client (`run_submission` + `send_execute`) sends for one test: the
/// submission, input.txt, correct_output.txt when not empty, every non-empty grader file;
/// `run_timeout = (time_limit + 3) * 1000`, `run_memory_limit` in bytes.
fn client_request(problem: &Problem, submission: &str, input: &str, output: &str) -> Value {
    let mut files = vec![
        json!({"name": format!("graders/{}.cpp", problem.id.to_lowercase()), "content": submission}),
        json!({"name": "input.txt", "content": input}),
    ];
    if !output.is_empty() {
        files.push(json!({"name": "correct_output.txt", "content": output}));
    }
    for file in &problem.grader_files {
        if !file.content.is_empty() {
            let content = String::from_utf8(file.content.clone()).expect("text grader file");
            files.push(json!({"name": file.path, "content": content}));
        }
    }
    json!({
        "files": files,
        "run_timeout": ((problem.time_limit + 3.0) * 1000.0).round() as u64,
        "run_memory_limit": problem.memory_limit,
        "language": "cms_ioi",
        "version": "*",
    })
}

/// Judges `solution` of `problem` on one of its tests through the server.
fn judge_fixture(server: &TestServer, problem: &str, name: &str, test: &str) -> (String, String) {
    let fixture = fixture(problem);
    let body = client_request(
        &fixture,
        &solution(problem, name),
        &test_file(problem, test, "in"),
        &test_file(problem, test, "out"),
    );
    judge(server, &body)
}

fn status(view: &(String, String)) -> Verdict {
    let score: f64 = view.0.parse().expect("a numeric score");
    Verdict::of_run(score, &view.1)
}

#[test]
fn batch_with_checker_every_verdict() {
    if !is_root_or_skip("judging through the server") {
        return;
    }
    let server = start(shared_executor());
    // (solution, test, status, score, feedback prefix)
    let cases = [
        ("ac", "06", Verdict::Accepted, "1", "Output is correct"),
        (
            "ordered_pa",
            "01",
            Verdict::Partial,
            "0.5",
            "Output is partially correct",
        ),
        (
            "int_overflow",
            "05",
            Verdict::WrongAnswer,
            "0",
            "Output isn't correct",
        ),
        (
            "burn_tle",
            "05",
            Verdict::TimeLimit,
            "0",
            "Time limit exceeded",
        ),
        (
            "mle",
            "01",
            Verdict::MemoryLimit,
            "0",
            "Memory limit exceeded",
        ),
        (
            "segv",
            "01",
            Verdict::RuntimeError,
            "0",
            "Runtime error: killed by signal 11 (SIGSEGV)",
        ),
        (
            "exit3",
            "01",
            Verdict::RuntimeError,
            "0",
            "Runtime error: exit code 3",
        ),
        (
            "ce",
            "01",
            Verdict::CompilationError,
            "0",
            "Compilation error exit code 1\n",
        ),
    ];
    for (name, test, want_status, want_score, want_feedback) in cases {
        let view = judge_fixture(&server, "sumpairs", name, test);
        assert_eq!(
            (status(&view), view.0.as_str()),
            (want_status, want_score),
            "sumpairs/{name} on {test}: {view:?}"
        );
        assert!(
            view.1.starts_with(want_feedback),
            "sumpairs/{name} on {test}: feedback {:?} should start with {want_feedback:?}",
            view.1
        );
    }
}

#[test]
fn a_sleeper_is_a_hard_timeout_that_the_client_reads_as_tle() {
    if !is_root_or_skip("judging through the server") {
        return;
    }
    let server = start(shared_executor());
    let fixture = fixture("sumpairs");
    let body = client_request(
        &fixture,
        &solution("sumpairs", "sleep_tle"),
        &test_file("sumpairs", "01", "in"),
        &test_file("sumpairs", "01", "out"),
    );
    let (code, answer) = execute(&server, &body);
    assert_eq!(code, 200, "{answer}");
    assert_eq!(
        (
            answer["run"]["signal"].as_str(),
            answer["run"]["stdout"].as_str()
        ),
        (Some("SIGKILL"), Some("")),
        "{answer}"
    );
    let response: Response = serde_json::from_value(answer).unwrap();
    let view = client_view(&response).unwrap();
    assert_eq!(view, ("0".into(), "Time limit exceeded".into()));
    assert_eq!(status(&view), Verdict::TimeLimit);
}

#[test]
fn communication_accepted_and_early_failure() {
    if !is_root_or_skip("judging through the server") {
        return;
    }
    let server = start(shared_executor());
    let ac = judge_fixture(&server, "guess", "ac", "01");
    assert_eq!(ac, ("1".into(), "Output is correct".into()));
    let early = judge_fixture(&server, "guess", "exit3_early", "01");
    assert_eq!(
        (status(&early), early.1.as_str()),
        (Verdict::RuntimeError, "Runtime error: exit code 3")
    );
}

#[test]
fn a_submission_sent_once_per_test_compiles_once() {
    if !is_root_or_skip("judging through the server") {
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    let executor = common::judge_executor(cache.path().to_path_buf());
    let server = start(executor.clone());
    let fixture = fixture("sumpairs");
    let submission = solution("sumpairs", "ac");
    let tests = ["01", "02", "03", "04", "05", "06"];
    let bodies: Vec<Value> = tests
        .iter()
        .map(|t| {
            client_request(
                &fixture,
                &submission,
                &test_file("sumpairs", t, "in"),
                &test_file("sumpairs", t, "out"),
            )
        })
        .collect();
    // Four clients at once, as a pipeline judging the tests in parallel would send them.
    std::thread::scope(|s| {
        let server = &server;
        let handles: Vec<_> = (0..4)
            .map(|k| {
                let bodies = &bodies;
                s.spawn(move || {
                    for body in bodies.iter().skip(k).step_by(4).chain(bodies.iter()) {
                        assert_eq!(judge(server, body).0, "1");
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
    });
    // 6 + 4 × 6 requests: the checker once and the submission once.
    assert_eq!(executor.judge().cache().builds(), 2);
}

#[test]
fn a_batch_request_without_expected_output_or_checker_is_a_400() {
    if !is_root_or_skip("judging through the server") {
        return;
    }
    let server = start(shared_executor());
    let fixture = fixture("wdiff");
    let body = client_request(
        &fixture,
        &solution("wdiff", "ac"),
        &test_file("wdiff", "01", "in"),
        "",
    );
    let (code, answer) = execute(&server, &body);
    assert_eq!(code, 400, "{answer}");
    assert!(
        answer["message"]
            .as_str()
            .unwrap()
            .contains("correct_output.txt"),
        "{answer}"
    );
}

#[test]
fn a_request_whose_checker_does_not_compile_is_a_400() {
    if !is_root_or_skip("judging through the server") {
        return;
    }
    let server = start(shared_executor());
    let mut fixture = fixture("sumpairs");
    for file in &mut fixture.grader_files {
        if file.path == "checker/checker.cpp" {
            file.content = b"this is not C++ at all".to_vec();
        }
    }
    let body = client_request(
        &fixture,
        &solution("sumpairs", "ac"),
        &test_file("sumpairs", "01", "in"),
        &test_file("sumpairs", "01", "out"),
    );
    let (code, answer) = execute(&server, &body);
    assert_eq!(
        code, 400,
        "the sender's checker is the sender's to fix: {answer}"
    );
    assert!(
        answer["message"].as_str().unwrap().contains("checker"),
        "{answer}"
    );
}

fn plain_request(source: &str, stdin: &str, run_timeout_ms: u64) -> Value {
    json!({
        "language": "c++",
        "version": "*",
        "files": [{"name": "main.cpp", "content": source}],
        "stdin": stdin,
        "run_timeout": run_timeout_ms,
        "run_memory_limit": 256 << 20,
    })
}

#[test]
fn plain_c_compiles_with_gcc_and_runs() {
    if !is_root_or_skip("judging through the server") {
        return;
    }
    let server = start(shared_executor());
    // `class` is no keyword and a character constant is an int in C only: gcc compiled it.
    let source = "#include <stdio.h>\n#include <math.h>\nint main(void) { int class = 0; \
                  if (scanf(\"%d\", &class) != 1) return 1; \
                  printf(\"%d %d\\n\", (int)sizeof('a'), (int)sqrt((double)class)); return 0; }\n";
    let mut request = plain_request(source, "49\n", 3000);
    request["language"] = json!("c");
    request["files"][0]["name"] = json!("main.c");
    let (code, answer) = execute(&server, &request);
    assert_eq!(code, 200, "{answer}");
    assert_eq!(answer["language"], "c", "{answer}");
    assert_eq!(answer["compile"]["code"], 0, "{answer}");
    assert_eq!(answer["run"]["stdout"], "4 7\n", "{answer}");
    // The same text as C++ does not compile.
    let mut as_cpp = plain_request(source, "49\n", 3000);
    as_cpp["files"][0]["name"] = json!("main.cpp");
    let (_, answer) = execute(&server, &as_cpp);
    assert_ne!(answer["compile"]["code"], 0, "{answer}");
}

#[test]
fn plain_cpp_compiles_and_runs_with_stdin() {
    if !is_root_or_skip("judging through the server") {
        return;
    }
    let server = start(shared_executor());
    let hello = "#include <iostream>\n#include <string>\nint main() { std::string name; \
                 std::cin >> name; std::cout << \"hello \" << name << std::endl; \
                 std::cerr << \"done\"; return 3; }\n";
    let (code, answer) = execute(&server, &plain_request(hello, "world\n", 3000));
    assert_eq!(code, 200, "{answer}");
    assert_eq!(answer["compile"]["code"], 0, "{answer}");
    let run = &answer["run"];
    assert_eq!(
        (
            run["stdout"].as_str(),
            run["stderr"].as_str(),
            run["code"].as_i64(),
            &run["signal"]
        ),
        (Some("hello world\n"), Some("done"), Some(3), &Value::Null),
        "{answer}"
    );
    assert_eq!(run["output"], "hello world\ndone");

    let spin = "int main() { volatile unsigned x = 0; for (;;) x++; }\n";
    let (_, answer) = execute(&server, &plain_request(spin, "", 300));
    assert_eq!(
        (
            answer["run"]["code"].clone(),
            answer["run"]["signal"].as_str()
        ),
        (Value::Null, Some("SIGKILL")),
        "{answer}"
    );

    let broken = "int main() { return }\n";
    let (code, answer) = execute(&server, &plain_request(broken, "", 1000));
    assert_eq!(code, 200, "{answer}");
    assert_eq!(answer["compile"]["code"], 1, "{answer}");
    assert!(
        answer["compile"]["stderr"]
            .as_str()
            .unwrap()
            .contains("error"),
        "{answer}"
    );
    assert!(answer.get("run").is_none(), "{answer}");
}

/// A Codeforces request as open-r1's `cf_scoring` builds it.
fn codeforces_request(
    language: &str,
    source: &str,
    input: &str,
    expected: &str,
    mode: &str,
) -> Value {
    let name = if language == "cf_python3" {
        "main.python"
    } else {
        "main.cpp"
    };
    json!({
        "language": language, "version": "*",
        "files": [
            {"name": name, "content": source},
            {"name": "input.txt", "content": input},
            {"name": "correct_output.txt", "content": expected},
            {"name": "grader_config", "content": format!("TIME_LIMIT=1\nMEMORY_LIMIT=64\nINPUT_MODE={mode}")},
        ],
        "run_timeout": 11000,
    })
}

/// Whether the client counts the test as passed (`run.code == 0`, `run.stdout` is `1`).
fn codeforces_passed(server: &TestServer, body: &Value) -> bool {
    let (status, answer) = execute(server, body);
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["compile"]["code"], 0, "{answer}");
    answer["run"]["code"] == 0 && answer["run"]["stdout"].as_str().map(str::trim) == Some("1")
}

#[test]
fn a_codeforces_program_printing_1_or_reading_the_expected_output_passes_nothing() {
    if !is_root_or_skip("judging through the server") {
        return;
    }
    let server = start(shared_executor());
    let sum = "#include <cstdio>\nint main(){long long a,b;scanf(\"%lld %lld\",&a,&b);printf(\"%lld\\n\",a+b);}";
    assert!(codeforces_passed(
        &server,
        &codeforces_request("c++17", sum, "2 3\n", "5\n", "stdio")
    ));
    // The reward hack of a bare run: its stdout "1" was taken for the verdict.
    let print1 = "#include <cstdio>\nint main(){puts(\"1\");}";
    assert!(!codeforces_passed(
        &server,
        &codeforces_request("c++17", print1, "2 3\n", "5\n", "stdio")
    ));
    assert!(!codeforces_passed(
        &server,
        &codeforces_request("c++", print1, "2 3\n", "5\n", "stdio")
    ));
    let copy = "#include <cstdio>\n#include <initializer_list>\nint main(){for(const char*p:{\"correct_output.txt\",\"/box/correct_output.txt\"})\
                if(FILE*f=fopen(p,\"r\")){int c;while((c=fgetc(f))!=EOF)putchar(c);return 0;}puts(\"none\");}";
    for mode in ["stdio", "file"] {
        let (_, answer) = execute(
            &server,
            &codeforces_request("c++17", copy, "2 3\n", "5\n", mode),
        );
        assert_eq!(answer["run"]["stdout"], "0\n", "{mode}: {answer}");
    }
}

#[test]
fn a_codeforces_python_program_runs_in_the_box_and_file_mode_uses_output_txt() {
    if !is_root_or_skip("judging through the server") {
        return;
    }
    if !std::path::Path::new("/usr/bin/python3").exists() {
        skip("no /usr/bin/python3");
        return;
    }
    let server = start(shared_executor());
    let sum = "a, b = map(int, input().split())\nprint(a + b)";
    assert!(codeforces_passed(
        &server,
        &codeforces_request("cf_python3", sum, "2 3\r\n", "5\r\n", "stdio")
    ));
    let wrong = "print(6)";
    assert!(!codeforces_passed(
        &server,
        &codeforces_request("cf_python3", wrong, "2 3\n", "5\n", "stdio")
    ));
    let file = "a, b = map(int, open('input.txt').read().split())\nopen('output.txt', 'w').write(str(a + b))";
    assert!(codeforces_passed(
        &server,
        &codeforces_request("cf_python3", file, "2 3\n", "5\n", "file")
    ));
    assert!(!codeforces_passed(
        &server,
        &codeforces_request("cf_python3", sum, "2 3\n", "5\n", "file")
    ));
}
