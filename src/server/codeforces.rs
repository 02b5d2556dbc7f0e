//! The Codeforces contract (docs/piston-api.md#the-codeforces-contract): what open-r1's
//! `cf_scoring` sends as language `c++17` (or another C++ standard, or `cf_python3`) and what it
//! reads back.
//!
//! A request holds the program (`main.cpp` / `main.python`), the test (`input.txt`,
//! `correct_output.txt`), an optional `checker.py` and a `grader_config` text file of shell
//! assignments (`TIME_LIMIT` seconds, `MEMORY_LIMIT` MB, `INPUT_MODE` `stdio` or `file`). The
//! client counts a test as passed when `run.code == 0` and `run.stdout.strip() == "1"`, so the
//! answer to every request is a verdict, never the program's own output: that is what closes
//! the reward hack of a program printing `1`.
//!
//! This module holds the request's shape ([`CfJob`]), the normalisations and the comparison of
//! the Codeforces package's `run` script (re-implemented here, not shelled out: they are small
//! and the judge must not run bash on attacker output), and the answers ([`CfVerdict`]). Running
//! the program is in [`super::judged`].

use std::io::{BufRead, Read, Write};
use std::time::Duration;

use super::runtime::{CfLanguage, CONTRACT_FILES};
use super::{RequestError, Response, Stage};

/// The client's `run_timeout` is the time limit + 10 s; used when `TIME_LIMIT` is missing.
const CLIENT_EXTRA_SECONDS: f64 = 10.0;
/// Memory limit when neither `MEMORY_LIMIT` nor `run_memory_limit` gives one (Codeforces's
/// most common limit; the package itself would have run without any).
pub const DEFAULT_MEMORY_LIMIT: u64 = 256 << 20;

/// How the program reads its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputMode {
    /// stdin and stdout.
    Stdio,
    /// `input.txt` and `output.txt` in its working directory (old Codeforces problems).
    File,
}

/// One Codeforces program on one test.
#[derive(Debug, Clone, PartialEq)]
pub struct CfJob {
    pub language: CfLanguage,
    /// `main.cpp` / `main.python` (or the first file that is not part of the contract).
    pub source: Vec<u8>,
    /// `checker.py`, run as `python3 checker.py input correct_output output`.
    pub checker: Option<Vec<u8>>,
    pub input: Vec<u8>,
    pub expected_output: Vec<u8>,
    /// CPU seconds.
    pub time_limit: f64,
    /// Bytes.
    pub memory_limit: u64,
    pub input_mode: InputMode,
    /// Wall-clock bound of the run (the client sends the time limit + 10 s).
    pub run_timeout: Duration,
}

/// Builds the job from the request's files (`(name, content)`, names checked unique).
pub fn parse_job(
    language: CfLanguage,
    mut files: Vec<(String, Vec<u8>)>,
    run_timeout: Option<Duration>,
    run_memory_limit: Option<u64>,
) -> Result<CfJob, RequestError> {
    let mut take = |name: &str| {
        let at = files.iter().position(|(n, _)| n == name)?;
        Some(files.remove(at).1)
    };
    let expected_output =
        take("correct_output.txt").ok_or_else(|| {
            bad("no correct_output.txt among the files: a Codeforces request is judged against the \
             expected output (to run a program and see its output, use language c++ without \
             correct_output.txt, grader_config or checker.py)")
        })?;
    let input = take("input.txt")
        .ok_or_else(|| bad("no input.txt among the files: it must hold the test input"))?;
    let checker = take("checker.py");
    let config = match take("grader_config") {
        Some(text) => GraderConfig::parse(&String::from_utf8_lossy(&text))?,
        None => GraderConfig::default(),
    };
    let wanted = match language {
        CfLanguage::Cpp(_) => "main.cpp",
        CfLanguage::Python3 => "main.python",
    };
    let source = take(wanted)
        .or_else(|| {
            let at = files
                .iter()
                .position(|(n, _)| !CONTRACT_FILES.contains(&n.as_str()))?;
            Some(files.remove(at).1)
        })
        .ok_or_else(|| {
            bad(format!(
                "no {wanted} among the files: it must hold the program"
            ))
        })?;
    let from_timeout = run_timeout
        .map(|t| t.as_secs_f64() - CLIENT_EXTRA_SECONDS)
        .filter(|t| *t > 0.0);
    let time_limit = config.time_limit.or(from_timeout).ok_or_else(|| {
        bad(format!(
            "no time limit: grader_config has no TIME_LIMIT and run_timeout is not above \
             {CLIENT_EXTRA_SECONDS} s"
        ))
    })?;
    if let Some(bytes) = config.memory_limit {
        super::allowed_memory(bytes, "grader_config MEMORY_LIMIT")?;
    }
    let memory_limit = config
        .memory_limit
        .or(run_memory_limit)
        .unwrap_or(DEFAULT_MEMORY_LIMIT);
    Ok(CfJob {
        language,
        source,
        checker,
        input,
        expected_output,
        time_limit,
        memory_limit,
        input_mode: config.input_mode,
        run_timeout: run_timeout
            .unwrap_or_else(|| Duration::from_secs_f64(time_limit + CLIENT_EXTRA_SECONDS)),
    })
}

/// `grader_config`: lines `KEY=VALUE` (the package `source`s it in bash; quotes allowed).
#[derive(Debug, Clone, PartialEq)]
struct GraderConfig {
    time_limit: Option<f64>,
    memory_limit: Option<u64>,
    input_mode: InputMode,
}

impl Default for GraderConfig {
    fn default() -> Self {
        GraderConfig {
            time_limit: None,
            memory_limit: None,
            input_mode: InputMode::Stdio,
        }
    }
}

impl GraderConfig {
    fn parse(text: &str) -> Result<GraderConfig, RequestError> {
        let mut config = GraderConfig::default();
        for (row, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let line = line.strip_prefix("export ").unwrap_or(line);
            let Some((key, value)) = line.split_once('=') else {
                return Err(bad(format!(
                    "grader_config line {}: expected KEY=VALUE, got {line:?}",
                    row + 1
                )));
            };
            let value = value.trim().trim_matches(['"', '\'']);
            let positive = |what: &str| match value.parse::<f64>() {
                Ok(v) if v > 0.0 && v.is_finite() => Ok(v),
                _ => Err(bad(format!(
                    "grader_config line {}: {key} must be a positive number of {what}, got \
                     {value:?}",
                    row + 1
                ))),
            };
            match key.trim() {
                "TIME_LIMIT" => {
                    let seconds = positive("seconds")?;
                    let field = format!("grader_config line {} TIME_LIMIT", row + 1);
                    config.time_limit = Some(super::allowed_time_limit(seconds, &field)?)
                }
                "MEMORY_LIMIT" => {
                    config.memory_limit = Some((positive("megabytes")? * 1048576.0) as u64)
                }
                "INPUT_MODE" => {
                    config.input_mode = match value {
                        "file" => InputMode::File,
                        // The package treats anything but `file` as stdio.
                        _ => InputMode::Stdio,
                    }
                }
                // Other variables mean nothing to the package either.
                _ => {}
            }
        }
        Ok(config)
    }
}

/// How one Codeforces test ended: each becomes the answer the package's `run` script gives.
#[derive(Debug, Clone, PartialEq)]
pub enum CfVerdict {
    /// The program did not compile: the compiler's exit code (`None` when a limit killed it).
    CompileError { code: Option<i32>, stderr: String },
    /// Compared by the normalising diff or the checker. `how` is `diff` or `checker`.
    Judged {
        passed: bool,
        how: &'static str,
        note: String,
    },
    /// CPU time (or the wall clock) beyond the limit.
    TimeLimit { seconds: f64 },
    /// The cgroup's memory beyond the limit.
    MemoryLimit { megabytes: f64 },
    /// A non-zero exit, a signal (128 + its number, as bash reports it) or too much output.
    RuntimeError { code: i32, what: String },
}

impl CfVerdict {
    /// The Piston answer: a compile stage always (the client reads `compile.code` for every
    /// language), then `run.stdout` `1`/`0` and `run.code` as the package's script exits: 0
    /// when judged, 124 on TLE, 134 on MLE, the program's code on RE.
    pub fn response(&self) -> Response {
        let compiled = Some(Stage::new(String::new(), String::new(), Some(0), None));
        let run = |stdout: &str, stderr: String, code: i32| Response {
            compile: compiled.clone(),
            run: Some(Stage::new(stdout.to_string(), stderr, Some(code), None)),
        };
        match self {
            CfVerdict::CompileError { code, stderr } => Response {
                compile: Some(Stage::new(
                    String::new(),
                    stderr.clone(),
                    *code,
                    code.is_none().then(|| "SIGKILL".to_string()),
                )),
                run: None,
            },
            CfVerdict::Judged { passed, how, note } => {
                let mut stderr = if *passed {
                    format!("Output is correct ({how})")
                } else {
                    format!("Output isn't correct ({how})")
                };
                if !note.is_empty() {
                    stderr.push_str(": ");
                    stderr.push_str(note);
                }
                run(if *passed { "1\n" } else { "0\n" }, stderr + "\n", 0)
            }
            CfVerdict::TimeLimit { seconds } => {
                run("0\n", format!("Time limit exceeded ({seconds}s)\n"), 124)
            }
            CfVerdict::MemoryLimit { megabytes } => run(
                "0\n",
                format!("Memory limit exceeded ({megabytes}MB)\n"),
                134,
            ),
            CfVerdict::RuntimeError { code, what } => run("0\n", format!("{what}\n"), *code),
        }
    }
}

/// The input as the package gives it to the program: a carriage return before each line end
/// removed (`sed 's/\r$//'`).
pub fn normalize_input(input: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(input.len());
    for line in input.split_inclusive(|&b| b == b'\n') {
        let (body, newline) = match line.strip_suffix(b"\n") {
            Some(body) => (body, true),
            None => (line, false),
        };
        out.extend_from_slice(body.strip_suffix(b"\r").unwrap_or(body));
        if newline {
            out.push(b'\n');
        }
    }
    out
}

/// The expected output as the package hands it to the checker: carriage returns before line
/// ends removed, empty lines removed, one final newline (`echo "$(cat ...)" | sed ...`).
pub fn normalize_expected(expected: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(expected.len() + 1);
    for line in expected.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if !line.is_empty() {
            out.extend_from_slice(line);
            out.push(b'\n');
        }
    }
    out
}

/// Copies the program's output without its empty lines (`sed '/^$/d'`), as the package gives
/// it to the checker. Chunk by chunk, through a buffer: the cost is a pass over the bytes
/// whatever the shape of the lines (millions of one-character lines included).
pub fn copy_without_empty_lines(from: impl Read, to: impl std::io::Write) -> std::io::Result<()> {
    let mut reader = std::io::BufReader::with_capacity(1 << 16, from);
    let mut to = std::io::BufWriter::with_capacity(1 << 16, to);
    // Whether the next byte starts a line: a newline there ends an empty line.
    let mut line_start = true;
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return to.flush();
        }
        let mut kept_from = 0;
        for (at, &byte) in chunk.iter().enumerate() {
            if byte == b'\n' && line_start {
                to.write_all(&chunk[kept_from..at])?;
                kept_from = at + 1;
            }
            line_start = byte == b'\n';
        }
        to.write_all(&chunk[kept_from..])?;
        let read = chunk.len();
        reader.consume(read);
    }
}

/// The package's comparison without a checker: both sides normalised (`yes`/`no` as whole
/// words case-folded, every run of whitespace one space, trimmed) and compared with `diff -b`,
/// which amounts to comparing the whitespace-separated words. The output is streamed: a
/// program may write up to its output limit.
pub fn outputs_match(expected: &[u8], output: impl Read) -> std::io::Result<bool> {
    let mut expected_words = Words::new(expected);
    let mut output_words = Words::new(std::io::BufReader::with_capacity(1 << 16, output));
    loop {
        match (expected_words.next_word()?, output_words.next_word()?) {
            (None, None) => return Ok(true),
            (Some(a), Some(b)) if fold_yes_no(&a) == fold_yes_no(&b) => {}
            _ => return Ok(false),
        }
    }
}

/// `sed -E 's/\b(yes)\b/YES/ig; s/\b(no)\b/NO/ig'` on one word: every maximal run of word
/// characters (letters, digits, `_`) that is `yes` or `no` in any case becomes upper case.
fn fold_yes_no(word: &[u8]) -> Vec<u8> {
    let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut out = word.to_vec();
    let mut start = 0;
    while start < out.len() {
        if !is_word(out[start]) {
            start += 1;
            continue;
        }
        let end = (start..out.len())
            .find(|&i| !is_word(out[i]))
            .unwrap_or(out.len());
        let run = &mut out[start..end];
        if run.eq_ignore_ascii_case(b"yes") || run.eq_ignore_ascii_case(b"no") {
            run.make_ascii_uppercase();
        }
        start = end;
    }
    out
}

/// Whitespace-separated words of a stream (whitespace as `tr '[:space:]'`: space, \t, \n, \v,
/// \f, \r), scanned a buffer at a time.
struct Words<R> {
    reader: R,
}

impl<R: BufRead> Words<R> {
    fn new(reader: R) -> Self {
        Words { reader }
    }

    fn next_word(&mut self) -> std::io::Result<Option<Vec<u8>>> {
        let is_space = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r');
        let mut word = Vec::new();
        loop {
            let chunk = match self.reader.fill_buf() {
                Ok(chunk) => chunk,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if chunk.is_empty() {
                return Ok((!word.is_empty()).then_some(word));
            }
            if word.is_empty() {
                let spaces = chunk.iter().take_while(|b| is_space(b)).count();
                if spaces > 0 {
                    self.reader.consume(spaces);
                    continue;
                }
            }
            match chunk.iter().position(is_space) {
                Some(end) => {
                    word.extend_from_slice(&chunk[..end]);
                    self.reader.consume(end + 1);
                    return Ok(Some(word));
                }
                None => {
                    word.extend_from_slice(chunk);
                    let read = chunk.len();
                    self.reader.consume(read);
                }
            }
        }
    }
}

/// Whether a checker's stdout says the test passed: `1` or `100` once whitespace is removed.
pub fn checker_passed(stdout: &str) -> bool {
    let compact: String = stdout.chars().filter(|c| !c.is_whitespace()).collect();
    compact == "1" || compact == "100"
}

fn bad(message: impl Into<String>) -> RequestError {
    RequestError::BadRequest(message.into())
}

#[cfg(test)]
mod tests {
    use super::super::runtime::CppStandard;
    use super::*;

    fn files(list: &[(&str, &str)]) -> Vec<(String, Vec<u8>)> {
        list.iter()
            .map(|(n, c)| (n.to_string(), c.as_bytes().to_vec()))
            .collect()
    }

    const CPP17: CfLanguage = CfLanguage::Cpp(CppStandard::Cpp17);

    #[test]
    fn a_request_as_cf_scoring_sends_it_becomes_a_job() {
        let job = parse_job(
            CPP17,
            files(&[
                ("main.cpp", "int main(){}"),
                ("input.txt", "1 2\n"),
                ("correct_output.txt", "3\n"),
                (
                    "grader_config",
                    "TIME_LIMIT=2.5\nMEMORY_LIMIT=256\nINPUT_MODE=file",
                ),
            ]),
            Some(Duration::from_millis(12_500)),
            None,
        )
        .unwrap();
        assert_eq!(job.source, b"int main(){}");
        assert_eq!(job.input, b"1 2\n");
        assert_eq!(job.expected_output, b"3\n");
        assert_eq!(job.time_limit, 2.5);
        assert_eq!(job.memory_limit, 256 << 20);
        assert_eq!(job.input_mode, InputMode::File);
        assert_eq!(job.checker, None);
    }

    #[test]
    fn without_expected_output_a_codeforces_request_is_refused() {
        let Err(RequestError::BadRequest(message)) = parse_job(
            CPP17,
            files(&[("main.cpp", "x"), ("input.txt", "")]),
            None,
            None,
        ) else {
            panic!("expected a bad request")
        };
        assert!(message.starts_with("no correct_output.txt"), "{message}");
    }

    #[test]
    fn limits_fall_back_to_the_request_and_errors_name_the_line() {
        let job = parse_job(
            CfLanguage::Python3,
            files(&[
                ("main.python", "print(1)"),
                ("input.txt", ""),
                ("correct_output.txt", ""),
            ]),
            Some(Duration::from_secs(13)),
            Some(64 << 20),
        )
        .unwrap();
        assert_eq!((job.time_limit, job.memory_limit), (3.0, 64 << 20));
        assert_eq!(job.input_mode, InputMode::Stdio);
        let Err(RequestError::BadRequest(message)) = parse_job(
            CPP17,
            files(&[
                ("main.cpp", "x"),
                ("input.txt", ""),
                ("correct_output.txt", ""),
                ("grader_config", "TIME_LIMIT=2\nMEMORY_LIMIT=lots\n"),
            ]),
            None,
            None,
        ) else {
            panic!("expected a bad request")
        };
        assert_eq!(
            message,
            "grader_config line 2: MEMORY_LIMIT must be a positive number of megabytes, got \"lots\""
        );
    }

    #[test]
    fn a_memory_limit_above_the_servers_maximum_is_refused() {
        let Err(RequestError::BadRequest(message)) = parse_job(
            CPP17,
            files(&[
                ("main.cpp", "x"),
                ("input.txt", ""),
                ("correct_output.txt", ""),
                ("grader_config", "TIME_LIMIT=1\nMEMORY_LIMIT=65536\n"),
            ]),
            None,
            None,
        ) else {
            panic!("expected a bad request")
        };
        assert!(
            message.starts_with("grader_config MEMORY_LIMIT asks for 68719476736 bytes"),
            "{message}"
        );
    }

    #[test]
    fn a_time_limit_above_the_servers_maximum_is_refused() {
        let Err(RequestError::BadRequest(message)) = parse_job(
            CPP17,
            files(&[
                ("main.cpp", "x"),
                ("input.txt", ""),
                ("correct_output.txt", ""),
                ("grader_config", "MEMORY_LIMIT=256\nTIME_LIMIT=1e9\n"),
            ]),
            None,
            None,
        ) else {
            panic!("expected a bad request")
        };
        assert!(
            message.starts_with("grader_config line 2 TIME_LIMIT is 1000000000 s"),
            "{message}"
        );
    }

    #[test]
    fn the_comparison_normalises_as_the_package_does() {
        let check = |expected: &str, output: &str| {
            outputs_match(expected.as_bytes(), output.as_bytes()).unwrap()
        };
        assert!(check("3\n", "3"));
        assert!(check("1 2\r\n3\n\n", "  1\n2   3 \n\n\n"));
        assert!(check("YES\nno\n", "yes\nNo"));
        assert!(check("Yes, no.\n", "YES, NO."));
        assert!(check("", "\n \n"));
        assert!(!check("3\n", "1\n"));
        assert!(!check("3\n", "3 3"));
        assert!(!check("1 2", "12"));
        assert!(!check("yesno", "YESNO"), "yes/no only as whole words");
        assert!(!check("abc", "ABC"), "other words keep their case");
        // Words split across the reader's chunks.
        let mut long = vec![b' '; (1 << 16) - 2];
        long.extend(b"12 3\t\n");
        assert!(check("12 3", std::str::from_utf8(&long).unwrap()));
        let word = "7".repeat(200_000);
        assert!(check(&format!("{word} 1"), &format!("\n{word}\n1")));
        assert!(!check(&format!("{word}8 1"), &format!("{word} 81")));
    }

    #[test]
    fn inputs_and_expected_outputs_are_normalised_like_the_package() {
        assert_eq!(normalize_input(b"1\r\n2\r\n\r\n3\r"), b"1\n2\n\n3");
        assert_eq!(normalize_expected(b"1\r\n\r\n\n2"), b"1\n2\n");
        assert_eq!(normalize_expected(b"\n\n"), b"");
        let copy = |from: &[u8]| {
            let mut copied = Vec::new();
            copy_without_empty_lines(from, &mut copied).unwrap();
            copied
        };
        assert_eq!(copy(b"\n1\n\n\n2 \n"), b"1\n2 \n");
        assert_eq!(copy(b"1\n\n"), b"1\n");
        assert_eq!(
            copy(b"\n\n1"),
            b"1",
            "a last line without newline is kept as it is"
        );
        assert_eq!(
            copy(b"\r\n\n"),
            b"\r\n",
            "a carriage return is not an empty line"
        );
        // An empty line split across the reader's chunks.
        let mut long = vec![b'x'; (1 << 16) - 1];
        long.extend(b"\n\ny\n");
        let mut want = vec![b'x'; (1 << 16) - 1];
        want.extend(b"\ny\n");
        assert_eq!(copy(&long), want);
    }

    /// A writer that counts the writes it receives.
    struct CountingWriter(usize);

    impl std::io::Write for CountingWriter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += 1;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_checkers_copy_is_written_in_bulk_whatever_the_lines() {
        // A million short lines between empty ones: one write per line costs the server
        // seconds of its own CPU on a few megabytes.
        let output = b"1\n\n".repeat(1 << 20);
        let mut writes = CountingWriter(0);
        copy_without_empty_lines(&output[..], &mut writes).unwrap();
        assert!(
            writes.0 <= 128,
            "{} writes for {} bytes",
            writes.0,
            output.len()
        );
    }

    #[test]
    fn a_checker_passes_with_1_or_100() {
        assert!(checker_passed("1\n"));
        assert!(checker_passed(" 100 "));
        assert!(!checker_passed("0"));
        assert!(!checker_passed("1 1"));
        assert!(!checker_passed(""));
    }

    #[test]
    fn verdicts_answer_as_the_packages_run_script() {
        let passed = |r: &Response| {
            let run = r.run.as_ref().unwrap();
            r.compile.as_ref().unwrap().code == Some(0)
                && run.code == Some(0)
                && run.stdout.trim() == "1"
        };
        let ok = CfVerdict::Judged {
            passed: true,
            how: "diff",
            note: String::new(),
        }
        .response();
        assert!(passed(&ok));
        assert_eq!(
            ok.run.as_ref().unwrap().stderr,
            "Output is correct (diff)\n"
        );
        for failed in [
            CfVerdict::Judged {
                passed: false,
                how: "checker",
                note: String::new(),
            },
            CfVerdict::TimeLimit { seconds: 1.0 },
            CfVerdict::MemoryLimit { megabytes: 256.0 },
            CfVerdict::RuntimeError {
                code: 139,
                what: "Runtime error with exit code 139".into(),
            },
        ] {
            let response = failed.response();
            assert!(!passed(&response), "{failed:?}");
            assert!(response.run.unwrap().stdout.starts_with('0'));
        }
        assert_eq!(
            CfVerdict::TimeLimit { seconds: 2.0 }
                .response()
                .run
                .unwrap()
                .code,
            Some(124)
        );
        assert_eq!(
            CfVerdict::MemoryLimit { megabytes: 64.0 }
                .response()
                .run
                .unwrap()
                .code,
            Some(134)
        );
        let ce = CfVerdict::CompileError {
            code: Some(1),
            stderr: "error".into(),
        }
        .response();
        assert_eq!((ce.compile.unwrap().code, ce.run), (Some(1), None));
    }
}
