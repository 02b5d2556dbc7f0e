//! The verdict rules of the packages themselves: which subtask statuses each expected verdict
//! accepts, and how a package's expectation for a whole solution is checked.
//!
//! A TPS package (`solutions.json`) names a verdict per subtask (`verdict`, with `except`
//! overrides), and TPS's `invoke-all` checks each subtask against it with
//! `is_verdict_expected` (scripts/internal/invoke_util.py). TPS knows no memory-limit verdict:
//! an out-of-memory kill is a "Runtime Error" there, so `memory_limit` and `runtime_error`
//! both accept our MLE and RE. A CMS export (IOI 2024) files each solution under its
//! `solutions.json` verdict (`solutions/<verdict>/<file>`) and drops the `except` map, so the
//! subtasks the verdict was meant for are unknown: the category fits when its rule holds on at
//! least one subtask, except `model_solution`, which TPS requires to be correct everywhere.
//! Nothing here judges or reads files.

use std::collections::BTreeMap;
use std::fmt;

use crate::score::Verdict;

/// An expected verdict, as `solutions.json` and the CMS export's folder names spell it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Expected {
    ModelSolution,
    Correct,
    Incorrect,
    TimeLimit,
    MemoryLimit,
    RuntimeError,
    TimeLimitAndRuntimeError,
    PartiallyCorrect,
    Failed,
    /// IOI 2024's exports: the manager reports a protocol violation (scored 0).
    ProtocolViolation,
}

const NAMES: [(Expected, &str); 10] = [
    (Expected::ModelSolution, "model_solution"),
    (Expected::Correct, "correct"),
    (Expected::Incorrect, "incorrect"),
    (Expected::TimeLimit, "time_limit"),
    (Expected::MemoryLimit, "memory_limit"),
    (Expected::RuntimeError, "runtime_error"),
    (
        Expected::TimeLimitAndRuntimeError,
        "time_limit_and_runtime_error",
    ),
    (Expected::PartiallyCorrect, "partially_correct"),
    (Expected::Failed, "failed"),
    (Expected::ProtocolViolation, "protocol_violation"),
];

impl Expected {
    /// Parses a verdict name; `None` for a name no package format uses.
    pub fn parse(name: &str) -> Option<Expected> {
        NAMES.iter().find(|(_, n)| *n == name).map(|(e, _)| *e)
    }

    pub fn as_str(self) -> &'static str {
        NAMES
            .iter()
            .find(|(e, _)| *e == self)
            .map(|(_, n)| *n)
            .unwrap_or("?")
    }

    /// Every name [`Expected::parse`] accepts, for error messages.
    pub fn all_names() -> Vec<&'static str> {
        NAMES.iter().map(|(_, n)| *n).collect()
    }

    /// Whether a subtask judged `status` fits this verdict (TPS's `is_verdict_expected`, with
    /// our statuses for TPS's verdict words). A compilation error or a subtask that ran nothing
    /// fits no verdict: TPS reports a solution that does not compile as unmatched.
    pub fn accepts(self, status: Verdict) -> bool {
        use Verdict::*;
        match self {
            Expected::ModelSolution | Expected::Correct => status == Accepted,
            Expected::Incorrect | Expected::ProtocolViolation => status == WrongAnswer,
            Expected::TimeLimit => status == TimeLimit,
            Expected::MemoryLimit | Expected::RuntimeError => {
                matches!(status, MemoryLimit | RuntimeError)
            }
            Expected::TimeLimitAndRuntimeError => {
                matches!(status, TimeLimit | MemoryLimit | RuntimeError)
            }
            Expected::PartiallyCorrect => status == Partial,
            Expected::Failed => matches!(
                status,
                RuntimeError | WrongAnswer | MemoryLimit | TimeLimit | Partial
            ),
        }
    }
}

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a package expects of one solution.
#[derive(Debug, Clone, PartialEq)]
pub enum Expectation {
    /// TPS: a verdict for every subtask, with exceptions by subtask name (TPS names, without
    /// the `NN-` prefix of the CMS export).
    PerSubtask {
        verdict: Expected,
        except: BTreeMap<String, Expected>,
    },
    /// CMS export: one category for the whole solution.
    Category(Expected),
}

impl Expectation {
    /// The verdict as the package writes it (`correct`, `correct except full: incorrect`).
    pub fn describe(&self) -> String {
        match self {
            Expectation::Category(c) => c.to_string(),
            Expectation::PerSubtask { verdict, except } if except.is_empty() => verdict.to_string(),
            Expectation::PerSubtask { verdict, except } => {
                let list: Vec<String> = except.iter().map(|(s, v)| format!("{s}: {v}")).collect();
                format!("{verdict} except {}", list.join(", "))
            }
        }
    }
}

/// One subtask as judged, the input of the comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgedSubtask {
    /// As the problem names it (`02-full`).
    pub name: String,
    pub status: Verdict,
}

/// Where a solution's judged subtasks depart from its expectation.
#[derive(Debug, Clone, PartialEq)]
pub struct Deviation {
    /// The subtask at fault; `None` when the expectation is about the solution as a whole (a
    /// CMS category that holds on no subtask).
    pub subtask: Option<String>,
    pub expected: Expected,
    /// The statuses judged (one for a subtask, every subtask's for a whole solution).
    pub got: Vec<Verdict>,
}

/// `02-full` → `full`: the TPS name of a subtask of the CMS export's layout.
pub fn tps_subtask_name(name: &str) -> &str {
    match name.split_once('-') {
        Some((index, rest)) if !index.is_empty() && index.bytes().all(|b| b.is_ascii_digit()) => {
            rest
        }
        _ => name,
    }
}

/// The deviations of `judged` from `expectation`; empty when the solution fits. A subtask
/// that ran no test (SKIPPED) is not checked, as TPS skips a subtask without results.
pub fn compare(expectation: &Expectation, judged: &[JudgedSubtask]) -> Vec<Deviation> {
    match expectation {
        Expectation::PerSubtask { verdict, except } => judged
            .iter()
            .filter(|s| s.status != Verdict::Skipped)
            .filter_map(|s| {
                let expected = *except.get(tps_subtask_name(&s.name)).unwrap_or(verdict);
                (!expected.accepts(s.status)).then(|| Deviation {
                    subtask: Some(s.name.clone()),
                    expected,
                    got: vec![s.status],
                })
            })
            .collect(),
        Expectation::Category(Expected::ModelSolution) => judged
            .iter()
            .filter(|s| s.status != Verdict::Skipped && !Expected::ModelSolution.accepts(s.status))
            .map(|s| Deviation {
                subtask: Some(s.name.clone()),
                expected: Expected::ModelSolution,
                got: vec![s.status],
            })
            .collect(),
        Expectation::Category(category) => {
            if judged.iter().any(|s| category.accepts(s.status)) {
                Vec::new()
            } else {
                vec![Deviation {
                    subtask: None,
                    expected: *category,
                    got: judged.iter().map(|s| s.status).collect(),
                }]
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Verdict::*;

    fn judged(statuses: &[(&str, Verdict)]) -> Vec<JudgedSubtask> {
        statuses
            .iter()
            .map(|(name, status)| JudgedSubtask {
                name: name.to_string(),
                status: *status,
            })
            .collect()
    }

    fn tps(verdict: Expected, except: &[(&str, Expected)]) -> Expectation {
        Expectation::PerSubtask {
            verdict,
            except: except.iter().map(|(s, v)| (s.to_string(), *v)).collect(),
        }
    }

    #[test]
    fn every_name_parses_back() {
        for name in Expected::all_names() {
            assert_eq!(Expected::parse(name).map(Expected::as_str), Some(name));
        }
        assert_eq!(Expected::parse("wrong_answer"), None);
    }

    /// Each verdict against every status: the statuses that fit, as TPS's
    /// `is_verdict_expected` decides with MLE counted as its "Runtime Error".
    #[test]
    fn each_verdict_accepts_exactly_its_statuses() {
        let all = [
            CompilationError,
            RuntimeError,
            WrongAnswer,
            MemoryLimit,
            TimeLimit,
            Partial,
            Accepted,
            Skipped,
        ];
        let cases: [(Expected, &[Verdict]); 10] = [
            (Expected::ModelSolution, &[Accepted]),
            (Expected::Correct, &[Accepted]),
            (Expected::Incorrect, &[WrongAnswer]),
            (Expected::ProtocolViolation, &[WrongAnswer]),
            (Expected::TimeLimit, &[TimeLimit]),
            (Expected::MemoryLimit, &[MemoryLimit, RuntimeError]),
            (Expected::RuntimeError, &[MemoryLimit, RuntimeError]),
            (
                Expected::TimeLimitAndRuntimeError,
                &[TimeLimit, MemoryLimit, RuntimeError],
            ),
            (Expected::PartiallyCorrect, &[Partial]),
            (
                Expected::Failed,
                &[RuntimeError, WrongAnswer, MemoryLimit, TimeLimit, Partial],
            ),
        ];
        for (expected, fits) in cases {
            for status in all {
                assert_eq!(
                    expected.accepts(status),
                    fits.contains(&status),
                    "{expected} against {}",
                    status.as_str()
                );
            }
        }
    }

    #[test]
    fn tps_exceptions_override_the_verdict_by_subtask_name() {
        let spec = tps(Expected::Correct, &[("full", Expected::TimeLimit)]);
        let fits = judged(&[("00-samples", Accepted), ("01-full", TimeLimit)]);
        assert!(compare(&spec, &fits).is_empty());
        let deviates = judged(&[("00-samples", Accepted), ("01-full", Accepted)]);
        assert_eq!(
            compare(&spec, &deviates),
            vec![Deviation {
                subtask: Some("01-full".into()),
                expected: Expected::TimeLimit,
                got: vec![Accepted],
            }]
        );
    }

    #[test]
    fn tps_checks_every_subtask_not_only_one() {
        let spec = tps(Expected::Correct, &[]);
        let got = compare(
            &spec,
            &judged(&[
                ("00-samples", Accepted),
                ("01-a", WrongAnswer),
                ("02-b", TimeLimit),
            ]),
        );
        let subtasks: Vec<_> = got.iter().map(|d| d.subtask.clone().unwrap()).collect();
        assert_eq!(subtasks, ["01-a", "02-b"]);
    }

    #[test]
    fn tps_memory_limit_fits_an_out_of_memory_kill_or_a_crash_only() {
        let spec = tps(Expected::MemoryLimit, &[]);
        assert!(compare(
            &spec,
            &judged(&[("01-a", MemoryLimit), ("02-b", RuntimeError)])
        )
        .is_empty());
        assert_eq!(compare(&spec, &judged(&[("01-a", TimeLimit)])).len(), 1);
    }

    #[test]
    fn a_compilation_error_fits_nothing_not_even_failed() {
        let spec = tps(Expected::Failed, &[]);
        assert_eq!(
            compare(&spec, &judged(&[("01-a", CompilationError)])).len(),
            1
        );
        let category = Expectation::Category(Expected::Failed);
        assert_eq!(
            compare(&category, &judged(&[("01-a", CompilationError)])).len(),
            1
        );
    }

    #[test]
    fn a_cms_category_fits_when_it_holds_on_one_subtask() {
        // A subtask solution filed under `incorrect`: right on its subtask, wrong elsewhere.
        let category = Expectation::Category(Expected::Incorrect);
        assert!(compare(
            &category,
            &judged(&[("01-small", Accepted), ("02-full", WrongAnswer)])
        )
        .is_empty());
        let got = compare(
            &category,
            &judged(&[("01-small", Accepted), ("02-full", TimeLimit)]),
        );
        assert_eq!(
            got,
            vec![Deviation {
                subtask: None,
                expected: Expected::Incorrect,
                got: vec![Accepted, TimeLimit],
            }]
        );
    }

    #[test]
    fn a_cms_runtime_error_category_deviates_when_every_subtask_is_wrong() {
        let category = Expectation::Category(Expected::RuntimeError);
        assert!(compare(
            &category,
            &judged(&[("01-a", WrongAnswer), ("02-b", RuntimeError)])
        )
        .is_empty());
        assert_eq!(
            compare(
                &category,
                &judged(&[("01-a", WrongAnswer), ("02-b", WrongAnswer)])
            )
            .len(),
            1
        );
    }

    #[test]
    fn a_cms_model_solution_must_be_accepted_on_every_subtask() {
        let category = Expectation::Category(Expected::ModelSolution);
        assert!(compare(
            &category,
            &judged(&[("00-samples", Accepted), ("01-full", Accepted)])
        )
        .is_empty());
        let got = compare(
            &category,
            &judged(&[("00-samples", Accepted), ("01-full", TimeLimit)]),
        );
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].subtask.as_deref(), Some("01-full"));
    }

    #[test]
    fn subtask_names_lose_only_a_numeric_prefix() {
        assert_eq!(tps_subtask_name("02-full"), "full");
        assert_eq!(tps_subtask_name("full"), "full");
        assert_eq!(tps_subtask_name("x-full"), "x-full");
        assert_eq!(tps_subtask_name("03-N-small"), "N-small");
    }

    #[test]
    fn expectations_describe_themselves_as_the_package_writes_them() {
        let spec = tps(Expected::Correct, &[("full", Expected::Incorrect)]);
        assert_eq!(spec.describe(), "correct except full: incorrect");
        assert_eq!(
            Expectation::Category(Expected::TimeLimit).describe(),
            "time_limit"
        );
    }
}
