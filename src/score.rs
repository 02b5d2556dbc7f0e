//! Scores and statuses of tests and subtasks, with the exact semantics of the reference Python
//! pipeline (docs/judging.md#scores-and-statuses): a test's status is derived from its score and
//! feedback, a subtask's score is the minimum of its tests' scores rounded like Python's `round`,
//! and its status is the worst of its tests' statuses.

use serde::{Deserialize, Serialize};

/// Verdict of one test or one subtask. The declaration order is the "worst first" order of
/// docs/judging.md#scores-and-statuses, so `min()` over statuses gives the subtask status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Verdict {
    #[serde(rename = "CE")]
    CompilationError,
    #[serde(rename = "RE")]
    RuntimeError,
    #[serde(rename = "WA")]
    WrongAnswer,
    #[serde(rename = "MLE")]
    MemoryLimit,
    #[serde(rename = "TLE")]
    TimeLimit,
    #[serde(rename = "PA")]
    Partial,
    #[serde(rename = "AC")]
    Accepted,
    #[serde(rename = "SKIPPED")]
    Skipped,
}

impl Verdict {
    /// The short word used in results and reports (`AC`, `WA`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::CompilationError => "CE",
            Verdict::RuntimeError => "RE",
            Verdict::WrongAnswer => "WA",
            Verdict::MemoryLimit => "MLE",
            Verdict::TimeLimit => "TLE",
            Verdict::Partial => "PA",
            Verdict::Accepted => "AC",
            Verdict::Skipped => "SKIPPED",
        }
    }

    /// Parses the short word back (`AC`, `WA`, ...), as found in results files.
    pub fn parse(word: &str) -> Option<Verdict> {
        Some(match word {
            "CE" => Verdict::CompilationError,
            "RE" => Verdict::RuntimeError,
            "WA" => Verdict::WrongAnswer,
            "MLE" => Verdict::MemoryLimit,
            "TLE" => Verdict::TimeLimit,
            "PA" => Verdict::Partial,
            "AC" => Verdict::Accepted,
            "SKIPPED" => Verdict::Skipped,
            _ => return None,
        })
    }

    /// The status of a test that ran, derived from score and feedback exactly as the Python
    /// pipeline does (substring matches on the feedback when the score is 0).
    pub fn of_run(score: f64, feedback: &str) -> Verdict {
        if score == 0.0 {
            if feedback.contains("Compilation error") {
                Verdict::CompilationError
            } else if feedback.contains("Memory limit exceeded") {
                Verdict::MemoryLimit
            } else if feedback.contains("Time limit exceeded") {
                Verdict::TimeLimit
            } else if feedback.contains("Output isn't correct") {
                Verdict::WrongAnswer
            } else {
                Verdict::RuntimeError
            }
        } else if score == 1.0 {
            Verdict::Accepted
        } else {
            Verdict::Partial
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Result of one test of one submission. `time` is CPU seconds, `wall_time` seconds and
/// `memory` bytes; they are absent for tests that did not run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestResult {
    pub test_name: String,
    pub score: f64,
    pub status: Verdict,
    pub feedback: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_time: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<u64>,
}

impl TestResult {
    /// A test that was not run (early stop, or no code): score 0, status SKIPPED.
    pub fn skipped(test_name: &str) -> TestResult {
        TestResult {
            test_name: test_name.to_string(),
            score: 0.0,
            status: Verdict::Skipped,
            feedback: None,
            time: None,
            wall_time: None,
            memory: None,
        }
    }
}

/// Result of one subtask of one submission (docs/results.md#results-file, `all_subtasks_results`
/// items).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubtaskResult {
    pub problem: String,
    pub subtask: String,
    pub points: f64,
    pub score_precision: u32,
    pub test_results: Vec<TestResult>,
}

impl SubtaskResult {
    /// Minimum of the test scores rounded to `score_precision` (0 when there are no tests).
    pub fn score(&self) -> f64 {
        self.min_score()
            .map(|m| round_like_python(m, self.score_precision))
            .unwrap_or(0.0)
    }

    /// Minimum of the test scores times the points, rounded to `score_precision`.
    pub fn weighted_score(&self) -> f64 {
        self.min_score()
            .map(|m| round_like_python(m * self.points, self.score_precision))
            .unwrap_or(0.0)
    }

    /// Worst status of the tests (SKIPPED when there are none).
    pub fn status(&self) -> Verdict {
        self.test_results
            .iter()
            .map(|t| t.status)
            .min()
            .unwrap_or(Verdict::Skipped)
    }

    fn min_score(&self) -> Option<f64> {
        self.test_results.iter().map(|t| t.score).reduce(f64::min)
    }
}

/// Python's `round(x, ndigits)`: round half to even on the exact binary value. Rust's
/// formatting with a precision rounds the exact value the same way, so going through the
/// decimal string reproduces Python bit for bit.
pub fn round_like_python(x: f64, ndigits: u32) -> f64 {
    format!("{:.*}", ndigits as usize, x).parse().unwrap_or(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test(name: &str, score: f64, status: Verdict) -> TestResult {
        TestResult {
            score,
            status,
            ..TestResult::skipped(name)
        }
    }

    #[test]
    fn status_from_feedback_uses_substrings_like_python() {
        assert_eq!(
            Verdict::of_run(0.0, "Compilation error exit code 1\nx"),
            Verdict::CompilationError
        );
        assert_eq!(
            Verdict::of_run(0.0, "Time limit exceeded (2.1s)"),
            Verdict::TimeLimit
        );
        assert_eq!(
            Verdict::of_run(0.0, "Memory limit exceeded"),
            Verdict::MemoryLimit
        );
        assert_eq!(
            Verdict::of_run(0.0, "Output isn't correct"),
            Verdict::WrongAnswer
        );
        assert_eq!(
            Verdict::of_run(0.0, "Execution killed with signal 11"),
            Verdict::RuntimeError
        );
        assert_eq!(Verdict::of_run(1.0, "Output is correct"), Verdict::Accepted);
        assert_eq!(Verdict::of_run(0.5, "partial"), Verdict::Partial);
    }

    #[test]
    fn memory_is_checked_before_time_like_the_reference() {
        let feedback = "Memory limit exceeded (Time limit exceeded while cleaning up)";
        assert_eq!(Verdict::of_run(0.0, feedback), Verdict::MemoryLimit);
    }

    #[test]
    fn subtask_takes_min_score_and_worst_status() {
        let st = SubtaskResult {
            problem: "p".into(),
            subtask: "01".into(),
            points: 7.0,
            score_precision: 2,
            test_results: vec![
                test("a", 1.0, Verdict::Accepted),
                test("b", 0.3333333, Verdict::Partial),
                test("c", 0.0, Verdict::Skipped),
                test("d", 0.5, Verdict::Partial),
            ],
        };
        assert_eq!(st.score(), 0.0);
        assert_eq!(st.status(), Verdict::Partial);
        let st = SubtaskResult {
            test_results: st.test_results[..2].to_vec(),
            ..st
        };
        assert_eq!(st.score(), 0.33);
        assert_eq!(st.weighted_score(), 2.33);
    }

    #[test]
    fn status_order_is_the_spec_order() {
        use Verdict::*;
        let order = [
            CompilationError,
            RuntimeError,
            WrongAnswer,
            MemoryLimit,
            TimeLimit,
            Partial,
            Accepted,
            Skipped,
        ];
        assert!(order.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(
            order
                .iter()
                .map(|s| Verdict::parse(s.as_str()).unwrap())
                .collect::<Vec<_>>(),
            order
        );
    }

    #[test]
    fn rounding_is_half_even_on_the_binary_value() {
        // 0.125 is exact in binary: Python gives 0.12; 2.675 is 2.67499.. in binary: 2.67.
        assert_eq!(round_like_python(0.125, 2), 0.12);
        assert_eq!(round_like_python(0.375, 2), 0.38);
        assert_eq!(round_like_python(2.675, 2), 2.67);
        assert_eq!(round_like_python(16.5, 0), 16.0);
    }
}
