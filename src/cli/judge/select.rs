//! Which subtasks and tests `judge` runs: `--subtask` (a name, or its number as the table
//! prints it), `--test` (names or globs) and `--all-tests` (docs/debugging.md#choosing-tests).
//!
//! The names given become a [`plan::Selection`]: the judge's plan runs the chosen tests
//! whatever fails and reports them in their subtasks.

use anyhow::Result;

use crate::error::usage;
use crate::judge::plan;
use crate::problem::{Problem, Subtask};

/// What a `judge` run covers.
#[derive(Debug, Clone, PartialEq)]
pub struct Selection {
    /// The subtasks shown, by their full names, in the problem's order.
    pub subtasks: Vec<String>,
    /// Every test to run whatever fails, in order; `None` runs the reference's plan (early
    /// stop).
    pub tests: Option<Vec<String>>,
}

impl Selection {
    /// The selection of `problem` that `--subtask`, `--test` and `--all-tests` name.
    pub fn new(
        problem: &Problem,
        subtasks: &[String],
        tests: &[String],
        all_tests: bool,
    ) -> Result<Selection> {
        let mut chosen = Vec::new();
        for given in subtasks {
            let name = subtask_named(problem, given)?;
            if !chosen.contains(&name) {
                chosen.push(name);
            }
        }
        let chosen: Vec<&Subtask> = problem
            .subtasks
            .iter()
            .filter(|s| chosen.is_empty() || chosen.contains(&s.name))
            .collect();
        let patterns = tests
            .iter()
            .map(|t| {
                glob::Pattern::new(t)
                    .map_err(|e| usage(anyhow::anyhow!("--test {t:?} is not a glob pattern: {e}")))
            })
            .collect::<Result<Vec<_>>>()?;
        let mut run: Vec<String> = Vec::new();
        for name in chosen.iter().flat_map(|s| &s.test_names) {
            let wanted = patterns.is_empty() || patterns.iter().any(|p| p.matches(name));
            if wanted && !run.contains(name) {
                run.push(name.clone());
            }
        }
        for (pattern, given) in patterns.iter().zip(tests) {
            if !run.iter().any(|name| pattern.matches(name)) {
                let mut names: Vec<&str> = Vec::new();
                for name in chosen.iter().flat_map(|s| &s.test_names) {
                    if !names.contains(&name.as_str()) {
                        names.push(name);
                    }
                }
                return Err(usage(anyhow::anyhow!(
                    "--test {given:?} names no test of {} (its tests: {})",
                    match subtasks.is_empty() {
                        true => format!("problem {}", problem.id),
                        false => "the subtasks chosen".to_string(),
                    },
                    shortened(&names)
                )));
            }
        }
        let with_tests: Vec<String> = chosen
            .iter()
            .filter(|s| s.test_names.iter().any(|t| run.contains(t)))
            .map(|s| s.name.clone())
            .collect();
        Ok(Selection {
            subtasks: with_tests,
            tests: (all_tests || !tests.is_empty()).then_some(run),
        })
    }

    /// What the judge's plan covers of `problem`: the subtasks chosen (none named: every
    /// one), or the tests chosen in the subtasks that hold them.
    pub fn plan(&self, problem: &Problem) -> plan::Selection {
        let every = self.subtasks.len() == problem.subtasks.len();
        plan::Selection {
            subtasks: (self.tests.is_some() || !every).then(|| self.subtasks.clone()),
            tests: self.tests.clone(),
        }
    }

    /// Whether only some of a subtask's tests run (its score is then over those).
    pub fn is_partial(&self, problem: &Problem) -> bool {
        let Some(tests) = &self.tests else {
            return false;
        };
        problem
            .subtasks
            .iter()
            .filter(|s| self.subtasks.contains(&s.name))
            .any(|s| s.test_names.iter().any(|t| !tests.contains(t)))
    }
}

/// The full name of the subtask `given` names: its name (any case), or its number as the table
/// prints it (`03` or `3` for `03-full`).
pub fn subtask_named(problem: &Problem, given: &str) -> Result<String> {
    let names: Vec<&str> = problem.subtasks.iter().map(|s| s.name.as_str()).collect();
    if let Some(name) = names.iter().find(|n| n.eq_ignore_ascii_case(given)) {
        return Ok(name.to_string());
    }
    let number = |name: &str| -> Option<u64> {
        let digits = name.split('-').next()?;
        digits.parse().ok()
    };
    let by_number: Vec<&str> = match given.trim().parse::<u64>() {
        Ok(wanted) => names
            .iter()
            .copied()
            .filter(|n| number(n) == Some(wanted))
            .collect(),
        Err(_) => Vec::new(),
    };
    match by_number.as_slice() {
        [one] => Ok(one.to_string()),
        [] => Err(usage(anyhow::anyhow!(
            "problem {} has no subtask {given:?} (it has {})",
            problem.id,
            names.join(", ")
        ))),
        several => Err(usage(anyhow::anyhow!(
            "subtask {given:?} of problem {} is ambiguous ({}): give the full name",
            problem.id,
            several.join(", ")
        ))),
    }
}

/// At most 20 names, then how many more.
fn shortened(names: &[&str]) -> String {
    let mut names = names.to_vec();
    names.dedup();
    match names.len() > 20 {
        true => format!("{}, … {} more", names[..20].join(", "), names.len() - 20),
        false => names.join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::TaskType;
    use crate::score::{TestResult, Verdict};

    fn problem() -> Problem {
        let subtasks: Vec<(&str, Vec<String>)> = vec![
            ("00-samples", vec!["s1".into()]),
            ("01-small", vec!["s1".into(), "a1".into(), "a2".into()]),
            ("02-full", vec!["s1".into(), "a1".into(), "b1".into()]),
        ];
        crate::judge::fake::problem("p", TaskType::Batch, &subtasks)
    }

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_subtask_is_named_by_its_number_as_the_table_prints_it() {
        let p = problem();
        assert_eq!(subtask_named(&p, "01").unwrap(), "01-small");
        assert_eq!(subtask_named(&p, "2").unwrap(), "02-full");
        assert_eq!(subtask_named(&p, "02-FULL").unwrap(), "02-full");
        let err = subtask_named(&p, "07").unwrap_err().to_string();
        assert!(
            err.contains("no subtask \"07\"") && err.contains("01-small"),
            "{err}"
        );
    }

    #[test]
    fn tests_chosen_by_glob_run_once_each_in_order() {
        let p = problem();
        let s = Selection::new(&p, &[], &strings(&["a*"]), false).unwrap();
        assert_eq!(s.tests, Some(strings(&["a1", "a2"])));
        assert_eq!(s.subtasks, strings(&["01-small", "02-full"]));
        assert_eq!(
            s.plan(&p),
            plan::Selection {
                subtasks: Some(strings(&["01-small", "02-full"])),
                tests: Some(strings(&["a1", "a2"])),
            }
        );
        assert!(s.is_partial(&p));
    }

    #[test]
    fn a_test_pattern_that_matches_nothing_is_refused_with_the_names() {
        let err = Selection::new(&problem(), &[], &strings(&["zz*"]), false)
            .unwrap_err()
            .to_string();
        assert!(err.contains("names no test") && err.contains("b1"), "{err}");
    }

    #[test]
    fn all_tests_runs_every_test_of_the_subtasks_chosen() {
        let p = problem();
        let s = Selection::new(&p, &strings(&["1"]), &[], true).unwrap();
        assert_eq!(s.tests, Some(strings(&["s1", "a1", "a2"])));
        assert!(!s.is_partial(&p));
        let plan = plan::SubmissionPlan::new(&p, &s.plan(&p), 1);
        let reported = plan.uniform(|t| TestResult {
            score: 0.0,
            status: Verdict::WrongAnswer,
            ..TestResult::skipped(t)
        });
        assert_eq!(reported.len(), 1);
        assert_eq!(reported[0].subtask, "01-small");
        let statuses: Vec<Verdict> = reported[0].test_results.iter().map(|t| t.status).collect();
        assert_eq!(statuses, [Verdict::WrongAnswer; 3]);
    }

    #[test]
    fn without_tests_chosen_the_reference_plan_runs() {
        let p = problem();
        let s = Selection::new(&p, &strings(&["02"]), &[], false).unwrap();
        assert_eq!(s.tests, None);
        assert_eq!(
            s.plan(&p),
            plan::Selection {
                subtasks: Some(strings(&["02-full"])),
                tests: None,
            }
        );
        let all = Selection::new(&p, &[], &[], false).unwrap();
        assert_eq!(all.plan(&p), plan::Selection::default());
    }
}
