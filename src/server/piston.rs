//! How an IOI verdict travels through Piston's response shape, both ways.
//!
//! Piston's IOI package reports what its `run` script printed: the score on stdout, the feedback on
//! stderr (docs/judging.md#script-mode). The Python client turns a response back into `(score,
//! feedback)` with a few special cases (compilation error, hard time-out). [`ioi_response`] is what
//! the judge answers with; [`client_view`] is a faithful port of the client, so tests can prove
//! that every outcome comes back exactly as the judge meant it.

use super::{Response, Stage};
use crate::judge::CompileError;

/// The feedback the client substitutes when Piston killed the run at its hard limit.
pub const HARD_TIMEOUT_FEEDBACK: &str = "Time limit exceeded";
/// The signal Piston reports for a run killed at `run_timeout`.
pub const HARD_TIMEOUT_SIGNAL: &str = "SIGKILL";
/// Text the client treats as an overloaded worker (it retries the request): feedback must never
/// contain it.
pub const OVERLOADED_MARKER: &str = "Resource temporarily unavailable";

/// The result of one IOI request, as the judge knows it.
#[derive(Debug, Clone, PartialEq)]
pub enum IoiOutcome {
    /// The test was judged: a score in [0, 1] and its feedback (`Output is correct`,
    /// `Time limit exceeded`, a checker's message, ...). TLE and MLE against the problem's own
    /// limits are judged outcomes with score 0.
    Judged { score: f64, feedback: String },
    /// The submission did not compile: the compiler's exit code and stderr.
    CompileError(CompileError),
    /// The whole run outlived the request's `run_timeout` and was killed.
    HardTimeout,
}

impl crate::judge::verdicts::Weight for IoiOutcome {
    fn weight(&self) -> usize {
        std::mem::size_of::<IoiOutcome>()
            + match self {
                IoiOutcome::Judged { feedback, .. } => feedback.capacity(),
                IoiOutcome::CompileError(error) => error.stderr.capacity(),
                IoiOutcome::HardTimeout => 0,
            }
    }
}

/// The Piston response for an IOI outcome: score on `run.stdout`, feedback on `run.stderr`, exit
/// code 0; on a compilation error only a `compile` stage with the compiler's code and stderr; on
/// a hard time-out `run.signal = "SIGKILL"` and nothing on stdout.
pub fn ioi_response(outcome: &IoiOutcome) -> Response {
    let compiled = || Some(Stage::new(String::new(), String::new(), Some(0), None));
    match outcome {
        IoiOutcome::Judged { score, feedback } => Response {
            compile: compiled(),
            run: Some(Stage::new(
                format_score(*score),
                feedback.clone(),
                Some(0),
                None,
            )),
        },
        // The pipeline reads the code into its feedback: -1 for a compiler stopped by a limit.
        IoiOutcome::CompileError(error) => Response {
            compile: Some(Stage::new(
                String::new(),
                error.stderr.clone(),
                Some(error.reported_code()),
                None,
            )),
            run: None,
        },
        IoiOutcome::HardTimeout => Response {
            compile: compiled(),
            run: Some(Stage::new(
                String::new(),
                String::new(),
                None,
                Some(HARD_TIMEOUT_SIGNAL.to_string()),
            )),
        },
    }
}

/// The shortest text that parses back to the same `f64` (Python's `float()` included), so the
/// score survives the trip exactly: `1`, `0`, `0.5`, `0.3333333333333333`.
pub fn format_score(score: f64) -> String {
    if score.is_finite() {
        format!("{}", score + 0.0) // + 0.0 turns -0 into 0
    } else {
        "0".to_string()
    }
}

/// What the seed's Python client makes of a Piston response: `(score, feedback)`, or the error
/// it raises (and retries) for a response it cannot interpret. A port of `execute_ioi` and of
/// the overload check in `send_execute`, line for line.
pub fn client_view(response: &Response) -> Result<(String, String), String> {
    if let Some(compile) = &response.compile {
        if compile.code != Some(0) {
            return Ok((
                "0".to_string(),
                format!(
                    "Compilation error exit code {}\n{}",
                    python_str(compile.code),
                    compile.stderr
                ),
            ));
        }
    }
    let Some(run) = &response.run else {
        return Err("PistonError: response has no run stage".to_string());
    };
    if run.stderr.contains(OVERLOADED_MARKER) {
        return Err(format!("PistonError: Piston overloaded: {}", run.stderr));
    }
    if run.code == Some(1) && run.stderr.contains("MemoryError") {
        return Ok(("0".to_string(), "Memory limit exceeded".to_string()));
    }
    if !run.stdout.is_empty() {
        return Ok((run.stdout.clone(), run.stderr.clone()));
    }
    if run.signal.as_deref() == Some(HARD_TIMEOUT_SIGNAL) {
        return Ok(("0".to_string(), HARD_TIMEOUT_FEEDBACK.to_string()));
    }
    if run.code != Some(0) {
        return Err(format!(
            "PistonError: exit code={}, stderr={}, signal={}",
            python_str(run.code),
            run.stderr,
            run.signal.as_deref().unwrap_or("None")
        ));
    }
    Ok(("0".to_string(), "Unknown error".to_string()))
}

/// Python's `str()` of an optional exit code.
fn python_str(code: Option<i32>) -> String {
    code.map_or_else(|| "None".to_string(), |c| c.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(outcome: IoiOutcome) -> (String, String) {
        client_view(&ioi_response(&outcome)).expect("the client accepts every judge outcome")
    }

    fn judged(score: f64, feedback: &str) -> IoiOutcome {
        IoiOutcome::Judged {
            score,
            feedback: feedback.to_string(),
        }
    }

    #[test]
    fn judged_outcomes_come_back_as_score_and_feedback() {
        assert_eq!(
            view(judged(1.0, "Output is correct")),
            ("1".into(), "Output is correct".into())
        );
        assert_eq!(
            view(judged(0.0, "Output isn't correct")),
            ("0".into(), "Output isn't correct".into())
        );
        assert_eq!(
            view(judged(0.0, "Time limit exceeded")),
            ("0".into(), "Time limit exceeded".into())
        );
        assert_eq!(
            view(judged(0.0, "Memory limit exceeded")),
            ("0".into(), "Memory limit exceeded".into())
        );
        assert_eq!(
            view(judged(0.0, "Execution killed with signal 11")),
            ("0".into(), "Execution killed with signal 11".into())
        );
        let (score, feedback) = view(judged(1.0 / 3.0, "partial"));
        assert_eq!(score.parse::<f64>(), Ok(1.0 / 3.0), "the score is exact");
        assert_eq!(feedback, "partial");
    }

    #[test]
    fn a_compilation_error_carries_the_exit_code_and_stderr() {
        let outcome = IoiOutcome::CompileError(CompileError::exited(1, "a.cpp:1: error"));
        assert_eq!(
            view(outcome.clone()),
            (
                "0".into(),
                "Compilation error exit code 1\na.cpp:1: error".into()
            )
        );
        let json = serde_json::to_value(ioi_response(&outcome)).unwrap();
        assert_eq!(json["compile"]["code"], 1);
        assert!(
            json.get("run").is_none(),
            "Piston runs nothing after a failed compile: {json}"
        );
    }

    #[test]
    fn a_hard_timeout_is_sigkill_with_empty_stdout() {
        let response = ioi_response(&IoiOutcome::HardTimeout);
        let run = response.run.as_ref().unwrap();
        assert_eq!(
            (run.stdout.as_str(), run.signal.as_deref(), run.code),
            ("", Some("SIGKILL"), None)
        );
        assert_eq!(
            view(IoiOutcome::HardTimeout),
            ("0".into(), "Time limit exceeded".into())
        );
    }

    #[test]
    fn the_client_port_keeps_the_python_special_cases() {
        let run = |stdout: &str, stderr: &str, code, signal: Option<&str>| Response {
            compile: None,
            run: Some(Stage::new(
                stdout.into(),
                stderr.into(),
                code,
                signal.map(str::to_string),
            )),
        };
        assert_eq!(
            client_view(&run("", "MemoryError", Some(1), None)),
            Ok(("0".into(), "Memory limit exceeded".into()))
        );
        assert_eq!(
            client_view(&run("", "", Some(0), None)),
            Ok(("0".into(), "Unknown error".into()))
        );
        assert!(client_view(&run("", "boom", Some(2), None))
            .unwrap_err()
            .contains("exit code=2"));
        assert!(client_view(&run("1", OVERLOADED_MARKER, Some(0), None))
            .unwrap_err()
            .contains("overloaded"));
        let killed_compiler = Response {
            compile: Some(Stage::new(
                String::new(),
                "killed".into(),
                None,
                Some("SIGKILL".into()),
            )),
            run: None,
        };
        assert_eq!(
            client_view(&killed_compiler),
            Ok((
                "0".into(),
                "Compilation error exit code None\nkilled".into()
            ))
        );
    }

    #[test]
    fn scores_print_in_their_shortest_exact_form() {
        assert_eq!(format_score(1.0), "1");
        assert_eq!(format_score(0.0), "0");
        assert_eq!(format_score(-0.0), "0");
        assert_eq!(format_score(0.25), "0.25");
        assert_eq!(format_score(f64::NAN), "0");
    }
}
