//! The requests of `bench soak` ([`super::soak`]): what an RL training run sends a reward server,
//! request by request, each with the answer it must get.
//!
//! Requests come in groups of [`COPIES`], one group a prompt's completions: the same program
//! [`COPIES`] times, each copy on numbers of its own (for `cms_ioi`, copy `c` and copy `c + 4`
//! share a test, so half of them are answered by the verdict cache). Groups take their kind in
//! turn from [`CYCLE`]. A kind's programs come from a pool of [`POOL`] (compiled once, then cached)
//! and every [`FRESH_EVERY`]-th group of a kind brings a program never seen before, so the
//! compiler keeps running through the soak as it does in training. Honest programs compute a
//! sum whose answer is known here; some are wrong or partly right on purpose, so that a verdict
//! is checked both ways. One group in twenty is hostile.

use serde_json::{json, Value};

use crate::server::piston::client_view;
use crate::server::Response;

/// Requests of one group: one program, a prompt's completions.
pub(crate) const COPIES: usize = 8;
/// Distinct programs of a kind that groups reuse.
const POOL: usize = 8;
/// Every this many groups of a kind, a new program.
const FRESH_EVERY: usize = 16;

/// What a request is, for the latency figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Piston's plain `c++`: a+b from stdin.
    Cpp,
    /// The Codeforces contract in Python (`cf_python3`).
    CfPython,
    /// Piston's IOI package with a testlib checker, quiet or verbose.
    CmsIoi,
    /// SandboxFusion's `/run_code`, C++.
    RunCodeCpp,
    /// SandboxFusion's `/run_code`, Python.
    RunCodePython,
    /// A program that attacks the server (see [`HOSTILE`]).
    Hostile,
}

impl Kind {
    pub(crate) const ALL: [Kind; 6] = [
        Kind::Cpp,
        Kind::CfPython,
        Kind::CmsIoi,
        Kind::RunCodeCpp,
        Kind::RunCodePython,
        Kind::Hostile,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Cpp => "c++",
            Kind::CfPython => "cf_python3",
            Kind::CmsIoi => "cms_ioi",
            Kind::RunCodeCpp => "run_code cpp",
            Kind::RunCodePython => "run_code python",
            Kind::Hostile => "hostile",
        }
    }
}

/// The kinds of twenty groups in a row: C++ runs of cached programs most of all, as in training.
const CYCLE: [Kind; 20] = [
    Kind::Cpp,
    Kind::CmsIoi,
    Kind::RunCodeCpp,
    Kind::Cpp,
    Kind::CmsIoi,
    Kind::CfPython,
    Kind::Cpp,
    Kind::CmsIoi,
    Kind::RunCodePython,
    Kind::Hostile,
    Kind::Cpp,
    Kind::CmsIoi,
    Kind::RunCodeCpp,
    Kind::Cpp,
    Kind::CmsIoi,
    Kind::CfPython,
    Kind::Cpp,
    Kind::CmsIoi,
    Kind::RunCodeCpp,
    Kind::RunCodePython,
];

/// The share of each kind among the requests, in percent.
pub(crate) fn share(kind: Kind) -> f64 {
    100.0 * CYCLE.iter().filter(|&&k| k == kind).count() as f64 / CYCLE.len() as f64
}

/// Where a request goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// `POST /api/v2/execute`.
    Execute,
    /// `POST /run_code`.
    RunCode,
}

/// The answer a request must get.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Expect {
    /// Plain `c++`: compiled, exit code 0, no signal, exactly this on stdout.
    Stdout(String),
    /// `cf_python3`: `run.code` 0 and `run.stdout` `1` (passed) or `0`.
    Verdict(bool),
    /// `cms_ioi`, as the client reads it: this score and this feedback.
    Score {
        score: &'static str,
        feedback: String,
    },
    /// `/run_code`: status `Success` and exactly this on stdout.
    RunStdout(String),
    /// A hostile program: an answer (HTTP 200), whatever it says.
    Answered,
}

/// One request of the soak.
pub(crate) struct Request {
    pub kind: Kind,
    pub route: Route,
    pub body: String,
    pub expect: Expect,
}

impl Request {
    pub(crate) fn honest(&self) -> bool {
        self.expect != Expect::Answered
    }
}

/// Request `i` of the soak: always the same for the same `i`.
pub(crate) fn request(i: usize) -> Request {
    let group = i / COPIES;
    let copy = i % COPIES;
    let kind = CYCLE[group % CYCLE.len()];
    // The how-manieth group of its kind this is.
    let nth = (group / CYCLE.len()) * CYCLE.iter().filter(|&&k| k == kind).count()
        + CYCLE[..group % CYCLE.len()]
            .iter()
            .filter(|&&k| k == kind)
            .count();
    let program = match nth % FRESH_EVERY {
        0 => Program::Fresh(nth),
        _ => Program::Pooled(nth % POOL),
    };
    match kind {
        Kind::Cpp => plain_cpp(program, numbers(i as u64)),
        Kind::CfPython => cf_python(program, numbers(i as u64)),
        Kind::CmsIoi => cms_ioi(program, nth, numbers((group * 4 + copy % 4) as u64)),
        Kind::RunCodeCpp => run_code("cpp", &cpp_sum(program), numbers(i as u64)),
        Kind::RunCodePython => run_code("python", &python_sum(program), numbers(i as u64)),
        Kind::Hostile => hostile(program, nth),
    }
}

/// Which program of a kind a group sends.
#[derive(Debug, Clone, Copy)]
enum Program {
    /// One of the pool, compiled once for the whole soak.
    Pooled(usize),
    /// A program no group sent before (the `n`-th group of its kind).
    Fresh(usize),
}

impl Program {
    /// The comment that makes the source this program's own.
    fn tag(self) -> String {
        match self {
            Program::Pooled(k) => format!("// pooled program {k}\n"),
            Program::Fresh(n) => format!("// fresh program {n}\n"),
        }
    }

    fn variant(self) -> usize {
        match self {
            Program::Pooled(k) => k,
            Program::Fresh(n) => n / FRESH_EVERY,
        }
    }
}

/// Two numbers of request `seed` and their sum.
fn numbers(seed: u64) -> (i64, i64) {
    let mut state = 0x9e37_79b9_7f4a_7c15 ^ seed.wrapping_mul(0x2545_f491_4f6c_dd1d);
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % 2_000_000_000_000) as i64 - 1_000_000_000_000
    };
    (next(), next())
}

fn cpp_sum(program: Program) -> String {
    let body = match program.variant() % 3 {
        0 => "    long long a, b;\n    if (scanf(\"%lld %lld\", &a, &b) != 2) return 1;\n    printf(\"%lld\\n\", a + b);\n",
        1 => "    long long a, b;\n    if (scanf(\"%lld%lld\", &a, &b) != 2) return 1;\n    long long s = b;\n    s += a;\n    printf(\"%lld\\n\", s);\n",
        _ => "    long long x[2];\n    for (long long &v : x) if (scanf(\"%lld\", &v) != 1) return 1;\n    printf(\"%lld\\n\", x[0] + x[1]);\n",
    };
    format!(
        "#include <cstdio>\n{}int main() {{\n{body}}}\n",
        program.tag()
    )
}

fn python_sum(program: Program) -> String {
    format!(
        "{}a, b = map(int, input().split())\nprint(a + b)\n",
        program.tag().replace("//", "#")
    )
}

fn plain_cpp(program: Program, (a, b): (i64, i64)) -> Request {
    Request {
        kind: Kind::Cpp,
        route: Route::Execute,
        body: json!({"language": "c++", "version": "*", "stdin": format!("{a} {b}\n"),
                     "run_timeout": 3000, "run_memory_limit": 256 << 20,
                     "files": [{"name": "main.cpp", "content": cpp_sum(program)}]})
        .to_string(),
        expect: Expect::Stdout(format!("{}\n", a + b)),
    }
}

/// A Codeforces test in Python; one program in four subtracts, and must fail.
fn cf_python(program: Program, (a, b): (i64, i64)) -> Request {
    let wrong = program.variant() % 4 == 3;
    let code = match wrong {
        true => python_sum(program).replace("a + b", "a - b"),
        false => python_sum(program),
    };
    Request {
        kind: Kind::CfPython,
        route: Route::Execute,
        body: json!({"language": "cf_python3", "version": "*", "run_timeout": 12_000,
        "files": [
            {"name": "main.python", "content": code},
            {"name": "input.txt", "content": format!("{a} {b}\n")},
            {"name": "correct_output.txt", "content": format!("{}\n", a + b)},
            {"name": "grader_config",
             "content": "TIME_LIMIT=2\nMEMORY_LIMIT=256\nINPUT_MODE=stdio"},
        ]})
        .to_string(),
        expect: Expect::Verdict(!wrong),
    }
}

fn run_code(language: &str, code: &str, (a, b): (i64, i64)) -> Request {
    Request {
        kind: match language {
            "cpp" => Kind::RunCodeCpp,
            _ => Kind::RunCodePython,
        },
        route: Route::RunCode,
        body: json!({"code": code, "language": language, "stdin": format!("{a} {b}\n"),
                     "run_timeout": 10, "compile_timeout": 10, "memory_limit_MB": 256,
                     "files": {}, "fetch_files": []})
        .to_string(),
        expect: Expect::RunStdout(format!("{}\n", a + b)),
    }
}

const IOI_HEADER: &str = "long long add(long long a, long long b);\n";
const IOI_GRADER: &str = r#"#include "soak.h"
#include <cstdio>
int main() {
    long long a, b;
    if (scanf("%lld %lld", &a, &b) != 2) return 1;
    printf("%lld\n", add(a, b));
}
"#;
/// The part of testlib the checkers use, with CMS's convention: the score on stdout, the
/// message on stderr.
const TESTLIB: &str = r#"#pragma once
#include <cstdio>
#include <cstdlib>
[[noreturn]] inline void quit(double score, const char *message) {
    printf("%g\n", score);
    fprintf(stderr, "%s\n", message);
    exit(0);
}
struct InStream {
    FILE *file = nullptr;
    long long readLong() {
        long long x;
        if (file == nullptr || fscanf(file, "%lld", &x) != 1) quit(0, "Wrong answer: no number");
        return x;
    }
};
inline InStream inf, ans, ouf;
inline void registerTestlibCmd(int argc, char **argv) {
    if (argc < 4) exit(3);
    inf.file = fopen(argv[1], "r");
    ans.file = fopen(argv[2], "r");
    ouf.file = fopen(argv[3], "r");
}
"#;
/// Lines a verbose checker writes on stderr before its verdict (about 100 KiB).
const VERBOSE_LINES: usize = 2500;

fn checker(verbose: bool) -> String {
    let details = match verbose {
        true => format!(
            "    for (int k = 0; k < {VERBOSE_LINES}; k++)\n        fprintf(stderr, \"checker \
             detail %04d: expected %lld, found %lld\\n\", k, want, got);\n"
        ),
        false => String::new(),
    };
    format!(
        "#include \"testlib.h\"\nint main(int argc, char **argv) {{\n    \
         registerTestlibCmd(argc, argv);\n    long long want = ans.readLong(), got = \
         ouf.readLong();\n{details}    if (got == want) quit(1, \"Output is correct\");\n    \
         if (got == want + 1) quit(0.5, \"Off by one\");\n    quit(0, \"Wrong answer\");\n}}\n"
    )
}

/// What the checker says of `got` against `want`: score and feedback, as the client reads them.
fn checker_verdict(verbose: bool, want: i64, got: i64) -> (&'static str, String) {
    let (score, message) = match got - want {
        0 => ("1", "Output is correct"),
        1 => ("0.5", "Off by one"),
        _ => ("0", "Wrong answer"),
    };
    let mut feedback = String::new();
    if verbose {
        for k in 0..VERBOSE_LINES {
            feedback.push_str(&format!(
                "checker detail {k:04}: expected {want}, found {got}\n"
            ));
        }
    }
    feedback.push_str(message);
    (score, feedback)
}

/// An IOI Batch test with a checker; submissions right, one off (partial score) or wrong, and
/// the checker of one group in three writes about 100 KiB of details on stderr.
fn cms_ioi(program: Program, nth: usize, (a, b): (i64, i64)) -> Request {
    let verbose = nth.is_multiple_of(3);
    let (expression, got) = match program.variant() % 4 {
        0 | 1 => ("a + b", a + b),
        2 => ("a + b + 1", a + b + 1),
        _ => ("a - b", a - b),
    };
    let submission = format!(
        "#include \"soak.h\"\n{}long long add(long long a, long long b) {{ return {expression}; }}\n",
        program.tag()
    );
    let (score, feedback) = checker_verdict(verbose, a + b, got);
    let config = json!({"code": "soak", "task_type": "Batch", "time_limit": 1.0,
                        "memory_limit": 256 << 20});
    Request {
        kind: Kind::CmsIoi,
        route: Route::Execute,
        body: json!({"language": "cms_ioi", "version": "*", "run_timeout": 4000,
        "run_memory_limit": 256 << 20,
        "files": [
            {"name": "graders/soak.cpp", "content": submission},
            {"name": "input.txt", "content": format!("{a} {b}\n")},
            {"name": "correct_output.txt", "content": format!("{}\n", a + b)},
            {"name": "graders/soak.h", "content": IOI_HEADER},
            {"name": "graders/grader.cpp", "content": IOI_GRADER},
            {"name": "graders/grader_config.json", "content": config.to_string()},
            {"name": "checker/checker.cpp", "content": checker(verbose)},
            {"name": "checker/testlib.h", "content": TESTLIB},
        ]})
        .to_string(),
        expect: Expect::Score { score, feedback },
    }
}

/// The hostile programs, by what they do; each is sent with a short time limit.
const HOSTILE: &[(&str, &str)] = &[
    (
        "fork bomb",
        "#include <unistd.h>\nint main() { while (1) fork(); }\n",
    ),
    (
        "memory bomb",
        "#include <cstdlib>\n#include <cstring>\nint main() { while (1) { char *p = \
         (char *)malloc(1 << 20); if (p) memset(p, 1, 1 << 20); } }\n",
    ),
    (
        "output flood",
        "#include <cstdio>\nint main() { static char b[1 << 16]; for (int i = 0; i < 3200; i++) \
         fwrite(b, 1, sizeof b, stdout); }\n",
    ),
    (
        "sleeper",
        "#include <unistd.h>\nint main() { sleep(100); }\n",
    ),
    ("crash", "int main() { volatile int *p = 0; return *p; }\n"),
    ("compile error", ""),
];

/// Lines of the hostile compile error: each an error of g++, a few hundred KiB of messages.
const ERROR_LINES: usize = 3000;

fn compile_error_source() -> String {
    let mut source = String::from("struct S {};\n");
    for k in 0..ERROR_LINES {
        source.push_str(&format!("int f{k}() {{ S s; return s + {k}; }}\n"));
    }
    source.push_str("int main() {}\n");
    source
}

/// A hostile group: its program in turn from [`HOSTILE`], sent through Piston's `c++` or
/// `/run_code` in turn.
fn hostile(program: Program, nth: usize) -> Request {
    let (_, source) = HOSTILE[nth % HOSTILE.len()];
    let source = match source.is_empty() {
        true => compile_error_source(),
        false => source.to_string(),
    };
    let code = format!("{}{source}", program.tag());
    let (route, body) = match (nth / HOSTILE.len()) % 2 {
        0 => (
            Route::Execute,
            json!({"language": "c++", "version": "*", "stdin": "", "run_timeout": 500,
                   "run_memory_limit": 128 << 20,
                   "files": [{"name": "main.cpp", "content": code}]}),
        ),
        _ => (
            Route::RunCode,
            json!({"code": code, "language": "cpp", "stdin": "", "run_timeout": 0.5,
                   "compile_timeout": 20, "memory_limit_MB": 128, "files": {},
                   "fetch_files": []}),
        ),
    };
    Request {
        kind: Kind::Hostile,
        route,
        body: body.to_string(),
        expect: Expect::Answered,
    }
}

/// Whether `answer` (HTTP `status`, its body) is what `expect` asks; else why not.
pub(crate) fn check(expect: &Expect, status: u16, answer: &Value) -> Result<(), String> {
    if status != 200 {
        return Err(format!("HTTP {status}"));
    }
    let run = &answer["run"];
    let exact = match expect {
        Expect::Answered => true,
        Expect::Stdout(stdout) => {
            answer["compile"]["code"] == 0
                && run["code"] == 0
                && run["signal"].is_null()
                && run["stdout"] == stdout.as_str()
        }
        Expect::Verdict(passed) => {
            run["code"] == 0 && run["stdout"].as_str().map(str::trim) == Some(verdict(*passed))
        }
        Expect::RunStdout(stdout) => {
            answer["status"] == "Success" && answer["run_result"]["stdout"] == stdout.as_str()
        }
        Expect::Score { score, feedback } => {
            let response: Response = serde_json::from_value(answer.clone())
                .map_err(|e| format!("not a Piston response: {e}"))?;
            let (got_score, got_feedback) = client_view(&response)?;
            got_score == *score && got_feedback == *feedback
        }
    };
    match exact {
        true => Ok(()),
        false => Err("not the expected answer".to_string()),
    }
}

fn verdict(passed: bool) -> &'static str {
    match passed {
        true => "1",
        false => "0",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_send_one_program_and_the_mix_has_one_hostile_group_in_twenty() {
        let program = |i: usize| {
            let body: Value = serde_json::from_str(&request(i).body).unwrap();
            body["files"][0]["content"]
                .as_str()
                .or(body["code"].as_str())
                .unwrap()
                .to_string()
        };
        for group in 0..40 {
            let first = program(group * COPIES);
            for copy in 1..COPIES {
                assert_eq!(program(group * COPIES + copy), first, "group {group}");
            }
        }
        assert_eq!(share(Kind::Hostile), 5.0);
        let total: f64 = Kind::ALL.iter().map(|&k| share(k)).sum();
        assert_eq!(total, 100.0);
    }

    #[test]
    fn cms_ioi_copies_four_apart_are_the_same_request() {
        let first = (0..).find(|&i| request(i).kind == Kind::CmsIoi).unwrap();
        assert_eq!(request(first).body, request(first + 4).body);
        assert_ne!(request(first).body, request(first + 1).body);
    }

    #[test]
    fn an_answer_is_exact_or_wrong() {
        let plain = |stdout: &str| json!({"compile": {"code": 0}, "run": {"stdout": stdout, "code": 0, "signal": null}});
        let sum = Expect::Stdout("5\n".into());
        assert_eq!(check(&sum, 200, &plain("5\n")), Ok(()));
        assert!(check(&sum, 200, &plain("6\n")).is_err());
        assert!(check(&sum, 503, &plain("5\n")).is_err());
        let ioi = |score: &str, feedback: &str| {
            json!({"language": "cms_ioi", "version": "1.0.0",
                   "compile": {"stdout": "", "stderr": "", "code": 0, "signal": null, "output": ""},
                   "run": {"stdout": score, "stderr": feedback, "code": 0, "signal": null,
                           "output": ""}})
        };
        let half = Expect::Score {
            score: "0.5",
            feedback: "Off by one".into(),
        };
        assert_eq!(check(&half, 200, &ioi("0.5", "Off by one")), Ok(()));
        assert!(check(&half, 200, &ioi("0.5", "Off by two")).is_err());
        assert!(check(&half, 200, &ioi("1", "Off by one")).is_err());
        let run_code = Expect::RunStdout("5\n".into());
        let answer = json!({"status": "Success", "run_result": {"stdout": "5\n"}});
        assert_eq!(check(&run_code, 200, &answer), Ok(()));
        let failed = json!({"status": "Failed", "run_result": {"stdout": "5\n"}});
        assert!(check(&run_code, 200, &failed).is_err());
        assert_eq!(check(&Expect::Answered, 200, &Value::Null), Ok(()));
        assert!(check(&Expect::Answered, 0, &Value::Null).is_err());
    }

    #[test]
    fn the_expected_feedback_is_the_checkers_text() {
        let (score, feedback) = checker_verdict(true, 5, 6);
        assert_eq!(score, "0.5");
        assert!(feedback.starts_with("checker detail 0000: expected 5, found 6\n"));
        assert!(feedback.ends_with("\nOff by one"));
        // About 100 KiB with the soak's numbers of 13 digits.
        let (_, large) = checker_verdict(true, -999_999_999_999, 999_999_999_999);
        assert!(large.len() > 95 << 10, "{}", large.len());
        assert_eq!(
            checker_verdict(false, 5, 5),
            ("1", "Output is correct".into())
        );
    }
}
