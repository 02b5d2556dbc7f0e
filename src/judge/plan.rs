//! Which tests a submission runs, with the reference pipeline's exact early-stop semantics
//! (docs/judging.md#scores-and-statuses), whatever the parallelism.
//!
//! The reference judges subtasks in order, the tests of a subtask in batches of
//! `test_batch_size`, stops a subtask after a batch containing a 0, reuses results of tests
//! shared with earlier subtasks, and runs nothing in a subtask whose reused results already
//! contain a 0. [`SubmissionPlan::replay`] replays exactly that over the results known so far:
//! either it completes, or it names the batch it needs next (the frontier). Running tests ahead
//! of the frontier is speculation: [`SubmissionPlan::lookahead`] lists, in order, the tests the
//! replay would need if every unknown test passed. Results the reference would not have
//! produced are never reported (they stay SKIPPED), so verdicts do not depend on `--jobs`.
//!
//! A [`Selection`] narrows the plan: to some subtasks (their early stop unchanged), or to some
//! tests, each run whatever the others score (`judge --test`, `--all-tests`): the plan then
//! walks one unit per chosen test (a single test never stops early, and no test is shared
//! between units) and reports each subtask with the results of its chosen tests.

use std::collections::{HashMap, HashSet};

use crate::problem::Problem;
use crate::score::{SubtaskResult, TestResult, Verdict};

/// What a plan covers of a problem.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Selection {
    /// Only these subtasks (`None`: every one).
    pub subtasks: Option<Vec<String>>,
    /// Only these tests, in this order, each run whatever the others score (`None`: the
    /// reference's early stop over every test of the subtasks).
    pub tests: Option<Vec<String>>,
}

impl Selection {
    fn covers(&self, subtask: &str) -> bool {
        self.subtasks
            .as_ref()
            .is_none_or(|names| names.iter().any(|n| n == subtask))
    }
}

/// The subtasks to judge for one submission, with the batch size.
#[derive(Debug, Clone)]
pub struct SubmissionPlan {
    problem_id: String,
    /// What the walk runs: the subtasks, or with tests chosen one unit per test.
    subtasks: Vec<PlannedSubtask>,
    /// With tests chosen, the subtasks reported, each with its chosen tests.
    reported: Option<Vec<PlannedSubtask>>,
    batch_size: usize,
}

#[derive(Debug, Clone)]
struct PlannedSubtask {
    name: String,
    points: f64,
    score_precision: u32,
    tests: Vec<String>,
}

/// The outcome of a replay.
#[derive(Debug, Clone, PartialEq)]
pub enum Replay {
    /// Every needed result is known: the subtask results.
    Done(Vec<SubtaskResult>),
    /// The unknown tests of the next batch to run.
    Need(Vec<String>),
}

impl SubmissionPlan {
    /// The plan of what `selection` covers of `problem`.
    pub fn new(problem: &Problem, selection: &Selection, batch_size: usize) -> SubmissionPlan {
        let planned = |s: &crate::problem::Subtask, tests: Vec<String>| PlannedSubtask {
            name: s.name.clone(),
            points: s.points,
            score_precision: s.score_precision,
            tests,
        };
        let chosen = problem
            .subtasks
            .iter()
            .filter(|s| selection.covers(&s.name));
        let (subtasks, reported) = match &selection.tests {
            None => (
                chosen.map(|s| planned(s, s.test_names.clone())).collect(),
                None,
            ),
            Some(tests) => {
                let units = tests
                    .iter()
                    .map(|t| PlannedSubtask {
                        name: t.clone(),
                        points: 0.0,
                        score_precision: 2,
                        tests: vec![t.clone()],
                    })
                    .collect();
                let reported = chosen
                    .filter(|s| s.test_names.iter().any(|t| tests.contains(t)))
                    .map(|s| {
                        let run = s.test_names.iter().filter(|t| tests.contains(t));
                        planned(s, run.cloned().collect())
                    })
                    .collect();
                (units, Some(reported))
            }
        };
        SubmissionPlan {
            problem_id: problem.id.clone(),
            subtasks,
            reported,
            batch_size: batch_size.max(1),
        }
    }

    /// The tests the walk runs, unit by unit (a subtask, or with tests chosen one test), and
    /// the batch size: what the scheduler's incremental walk follows.
    pub(crate) fn units(&self) -> (impl Iterator<Item = &[String]>, usize) {
        (
            self.subtasks.iter().map(|s| s.tests.as_slice()),
            self.batch_size,
        )
    }

    /// The subtasks reported, each with the tests it reports.
    fn reported(&self) -> &[PlannedSubtask] {
        self.reported.as_deref().unwrap_or(&self.subtasks)
    }

    /// Every test of every reported subtask given the same result (no code: SKIPPED; a
    /// compilation error: CE with its feedback).
    pub fn uniform(&self, make: impl Fn(&str) -> TestResult) -> Vec<SubtaskResult> {
        self.reported()
            .iter()
            .map(|s| self.subtask_result(s, s.tests.iter().map(|t| make(t)).collect()))
            .collect()
    }

    /// With tests chosen, the results of the units put back into the subtasks reported; a
    /// test without a result is SKIPPED.
    fn regroup(&self, results: Vec<SubtaskResult>) -> Vec<SubtaskResult> {
        let Some(reported) = &self.reported else {
            return results;
        };
        let by_test: HashMap<String, TestResult> = results
            .into_iter()
            .flat_map(|s| s.test_results)
            .map(|t| (t.test_name.clone(), t))
            .collect();
        reported
            .iter()
            .map(|s| {
                let tests = s.tests.iter().map(|t| {
                    by_test
                        .get(t)
                        .cloned()
                        .unwrap_or_else(|| TestResult::skipped(t))
                });
                self.subtask_result(s, tests.collect())
            })
            .collect()
    }

    fn subtask_result(&self, s: &PlannedSubtask, test_results: Vec<TestResult>) -> SubtaskResult {
        SubtaskResult {
            problem: self.problem_id.clone(),
            subtask: s.name.clone(),
            points: s.points,
            score_precision: s.score_precision,
            test_results,
        }
    }

    /// Replays the reference algorithm over `known` results.
    pub fn replay(&self, known: &HashMap<String, TestResult>) -> Replay {
        match self.walk(known) {
            Replay::Done(results) => Replay::Done(self.regroup(results)),
            need => need,
        }
    }

    /// The tests the replay would run, in order, if every unknown test passed: the frontier
    /// first, then what speculation may run ahead.
    pub fn lookahead(&self, known: &HashMap<String, TestResult>) -> Vec<String> {
        match self.scores_walk(known, true) {
            Ok(requested) => requested,
            Err(batch) => batch,
        }
    }

    /// The batch [`SubmissionPlan::replay`] would ask for, or `None` when it would complete;
    /// cheaper than the replay (no results are built), for the scheduler's frontier.
    pub fn frontier(&self, known: &HashMap<String, TestResult>) -> Option<Vec<String>> {
        self.scores_walk(known, false).err()
    }

    /// The replay's walk over scores alone: `Err(batch)` when a needed
    /// result is unknown (never when `optimistic`), else the tests requested on the way.
    fn scores_walk(
        &self,
        known: &HashMap<String, TestResult>,
        optimistic: bool,
    ) -> Result<Vec<String>, Vec<String>> {
        let mut cache: HashMap<&str, f64> = HashMap::new();
        let mut requested: Vec<String> = Vec::new();
        for subtask in &self.subtasks {
            let failed_already = subtask
                .tests
                .iter()
                .any(|t| cache.get(t.as_str()) == Some(&0.0));
            if failed_already {
                continue;
            }
            let uncached: Vec<&str> = subtask
                .tests
                .iter()
                .map(String::as_str)
                .filter(|t| !cache.contains_key(t))
                .collect();
            for batch in uncached.chunks(self.batch_size) {
                let mut zero = false;
                for &name in batch {
                    let score = match known.get(name) {
                        Some(r) => r.score,
                        None if optimistic => {
                            requested.push(name.to_string());
                            1.0
                        }
                        None => {
                            let mut missing: Vec<String> = batch
                                .iter()
                                .filter(|t| !known.contains_key(**t))
                                .map(|t| t.to_string())
                                .collect();
                            missing.dedup();
                            return Err(missing);
                        }
                    };
                    zero |= score == 0.0;
                    cache.insert(name, score);
                }
                if zero {
                    break;
                }
            }
        }
        let mut seen = HashSet::new();
        requested.retain(|t| seen.insert(t.clone()));
        Ok(requested)
    }

    fn walk(&self, known: &HashMap<String, TestResult>) -> Replay {
        let mut cache: HashMap<&str, TestResult> = HashMap::new();
        let mut results = Vec::with_capacity(self.subtasks.len());
        for subtask in &self.subtasks {
            let mut tests: Vec<TestResult> = subtask
                .tests
                .iter()
                .map(|t| {
                    cache
                        .get(t.as_str())
                        .cloned()
                        .unwrap_or_else(|| TestResult::skipped(t))
                })
                .collect();
            let failed_already = tests
                .iter()
                .any(|t| t.status != Verdict::Skipped && t.score == 0.0);
            if !failed_already {
                // Positions too: a name repeated in a subtask fills only its own slot.
                let uncached: Vec<(usize, &str)> = subtask
                    .tests
                    .iter()
                    .map(String::as_str)
                    .enumerate()
                    .filter(|(_, t)| !cache.contains_key(t))
                    .collect();
                for batch in uncached.chunks(self.batch_size) {
                    let mut batch_results = Vec::with_capacity(batch.len());
                    for &(_, name) in batch {
                        match known.get(name) {
                            Some(r) => batch_results.push(r.clone()),
                            None => {
                                let mut missing: Vec<String> = batch
                                    .iter()
                                    .filter(|(_, t)| !known.contains_key(*t))
                                    .map(|(_, t)| t.to_string())
                                    .collect();
                                missing.dedup();
                                return Replay::Need(missing);
                            }
                        }
                    }
                    let zero = batch_results.iter().any(|r| r.score == 0.0);
                    for (&(position, name), result) in batch.iter().zip(batch_results) {
                        tests[position] = result.clone();
                        cache.insert(name, result);
                    }
                    if zero {
                        break;
                    }
                }
            }
            results.push(self.subtask_result(subtask, tests));
        }
        Replay::Done(results)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::TaskType;

    fn problem(subtasks: &[(&str, &[&str])]) -> Problem {
        let subtasks: Vec<(&str, Vec<String>)> = subtasks
            .iter()
            .map(|(name, tests)| (*name, tests.iter().map(|t| t.to_string()).collect()))
            .collect();
        crate::judge::fake::problem("p", TaskType::Batch, &subtasks)
    }

    fn result(name: &str, score: f64) -> TestResult {
        let feedback = if score == 0.0 {
            "Output isn't correct"
        } else {
            "Output is correct"
        };
        TestResult {
            score,
            status: Verdict::of_run(score, feedback),
            feedback: Some(feedback.into()),
            ..TestResult::skipped(name)
        }
    }

    /// Drives the replay like a sequential judge with the given true scores, returning the
    /// tests in the order they were run and the final results.
    fn judge_sequentially(
        plan: &SubmissionPlan,
        truth: &HashMap<&str, f64>,
    ) -> (Vec<String>, Vec<SubtaskResult>) {
        let mut known = HashMap::new();
        let mut ran = Vec::new();
        loop {
            match plan.replay(&known) {
                Replay::Done(results) => return (ran, results),
                Replay::Need(batch) => {
                    for t in batch {
                        known.insert(t.clone(), result(&t, truth[t.as_str()]));
                        ran.push(t);
                    }
                }
            }
        }
    }

    #[test]
    fn stops_a_subtask_after_a_zero_and_reuses_shared_tests() {
        let p = problem(&[
            ("00-samples", &["s1"]),
            ("01-a", &["s1", "a1", "a2", "a3"]),
            ("02-b", &["a2", "b1"]),
        ]);
        let plan = SubmissionPlan::new(&p, &Selection::default(), 1);
        let truth = HashMap::from([
            ("s1", 1.0),
            ("a1", 0.0),
            ("a2", 1.0),
            ("a3", 1.0),
            ("b1", 1.0),
        ]);
        let (ran, results) = judge_sequentially(&plan, &truth);
        // s1 once (shared), a1 fails so a2/a3 are skipped in 01-a; 02-b runs a2 and b1.
        assert_eq!(ran, ["s1", "a1", "a2", "b1"]);
        let statuses: Vec<Vec<Verdict>> = results
            .iter()
            .map(|s| s.test_results.iter().map(|t| t.status).collect())
            .collect();
        use Verdict::*;
        assert_eq!(
            statuses,
            vec![
                vec![Accepted],
                vec![Accepted, WrongAnswer, Skipped, Skipped],
                vec![Accepted, Accepted]
            ]
        );
        assert_eq!(results[1].status(), WrongAnswer);
        assert_eq!(results[2].score(), 1.0);
    }

    #[test]
    fn a_cached_zero_stops_a_later_subtask_before_it_runs_anything() {
        let p = problem(&[("01", &["x", "y"]), ("02", &["z", "x"])]);
        let plan = SubmissionPlan::new(&p, &Selection::default(), 1);
        let truth = HashMap::from([("x", 0.0), ("y", 1.0), ("z", 1.0)]);
        let (ran, results) = judge_sequentially(&plan, &truth);
        assert_eq!(ran, ["x"]);
        assert_eq!(results[1].test_results[0].status, Verdict::Skipped);
        assert_eq!(results[1].test_results[1].status, Verdict::WrongAnswer);
    }

    #[test]
    fn a_name_repeated_in_a_subtask_fills_only_its_own_position() {
        let p = problem(&[("01", &["a", "b", "a"])]);
        let plan = SubmissionPlan::new(&p, &Selection::default(), 1);
        let truth = HashMap::from([("a", 0.5), ("b", 0.0)]);
        let (_, results) = judge_sequentially(&plan, &truth);
        let statuses: Vec<Verdict> = results[0].test_results.iter().map(|t| t.status).collect();
        assert_eq!(
            statuses,
            [Verdict::Partial, Verdict::WrongAnswer, Verdict::Skipped]
        );
    }

    #[test]
    fn batches_run_whole_before_stopping() {
        let p = problem(&[("01", &["a", "b", "c", "d", "e"])]);
        let plan = SubmissionPlan::new(&p, &Selection::default(), 2);
        let truth = HashMap::from([("a", 0.0), ("b", 1.0), ("c", 1.0), ("d", 1.0), ("e", 1.0)]);
        let (ran, results) = judge_sequentially(&plan, &truth);
        assert_eq!(ran, ["a", "b"]);
        assert_eq!(results[0].test_results[1].status, Verdict::Accepted);
        assert_eq!(results[0].test_results[2].status, Verdict::Skipped);
    }

    #[test]
    fn speculative_results_never_change_the_outcome() {
        // Knowing every result up front (as if all tests ran in parallel) gives the same
        // results as the sequential replay: the extra results are not reported.
        let p = problem(&[("01", &["t1", "t2"]), ("02", &["t3", "t1", "t4"])]);
        let plan = SubmissionPlan::new(&p, &Selection::default(), 1);
        let truth = HashMap::from([("t1", 1.0), ("t2", 0.0), ("t3", 0.0), ("t4", 0.5)]);
        let (_, sequential) = judge_sequentially(&plan, &truth);
        let everything: HashMap<String, TestResult> = truth
            .iter()
            .map(|(t, s)| (t.to_string(), result(t, *s)))
            .collect();
        assert_eq!(plan.replay(&everything), Replay::Done(sequential.clone()));
        assert_eq!(
            sequential[1].test_results[2].status,
            Verdict::Skipped,
            "t4 is after a zero in 02"
        );
    }

    #[test]
    fn lookahead_lists_the_optimistic_order_and_drops_dead_subtasks() {
        let p = problem(&[("01", &["a", "b"]), ("02", &["c", "a", "d"])]);
        let plan = SubmissionPlan::new(&p, &Selection::default(), 1);
        assert_eq!(plan.lookahead(&HashMap::new()), ["a", "b", "c", "d"]);
        let known = HashMap::from([("a".to_string(), result("a", 0.0))]);
        // 01 stops at a; 02 has a cached zero (a) and runs nothing.
        assert_eq!(plan.lookahead(&known), Vec::<String>::new());
        assert!(matches!(plan.replay(&known), Replay::Done(_)));
    }

    #[test]
    fn the_cheap_walks_agree_with_the_replay() {
        let p = problem(&[
            ("00", &["s1", "s2"]),
            ("01", &["s1", "a1", "a2", "a3", "a1"]),
            ("02", &["a2", "b1", "b2", "s2"]),
            ("03", &["b1", "c1", "c2", "c3", "c4"]),
        ]);
        let names = [
            "s1", "s2", "a1", "a2", "a3", "b1", "b2", "c1", "c2", "c3", "c4",
        ];
        for batch in [1, 2, 3] {
            let plan = SubmissionPlan::new(&p, &Selection::default(), batch);
            // Every subset of known results, with scores 0, 0.5 or 1 from the mask.
            for mask in 0u32..4096 {
                let known: HashMap<String, TestResult> = names
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| mask & (1 << i) != 0)
                    .map(|(i, t)| {
                        let score = [0.0, 1.0, 0.5, 1.0][(mask as usize >> (i % 5)) % 4];
                        (t.to_string(), result(t, score))
                    })
                    .collect();
                let replay = plan.replay(&known);
                match (plan.frontier(&known), &replay) {
                    (Some(a), Replay::Need(b)) => assert_eq!(&a, b),
                    (None, Replay::Done(_)) => {}
                    (a, b) => panic!("mask {mask}: frontier {a:?}, replay {b:?}"),
                }
                // The lookahead: what a sequential judge would run if every unknown passed.
                let mut optimistic = known.clone();
                let mut order = Vec::new();
                while let Replay::Need(batch) = plan.replay(&optimistic) {
                    for t in batch {
                        optimistic.insert(t.clone(), result(&t, 1.0));
                        order.push(t);
                    }
                }
                assert_eq!(plan.lookahead(&known), order, "mask {mask}");
            }
        }
    }

    #[test]
    fn chosen_tests_run_whatever_fails_and_are_reported_in_their_subtasks() {
        let p = problem(&[
            ("01", &["a", "b", "c"]),
            ("02", &["b", "d"]),
            ("03", &["e"]),
        ]);
        let chosen = Selection {
            subtasks: None,
            tests: Some(vec!["a".into(), "b".into(), "d".into()]),
        };
        let plan = SubmissionPlan::new(&p, &chosen, 1);
        // `a` fails: the reference would stop subtask 01 there, a chosen test runs anyway.
        let truth = HashMap::from([("a", 0.0), ("b", 1.0), ("d", 0.0)]);
        let (ran, results) = judge_sequentially(&plan, &truth);
        assert_eq!(ran, ["a", "b", "d"]);
        let shown: Vec<(&str, Vec<&str>)> = results
            .iter()
            .map(|s| {
                let tests = s.test_results.iter().map(|t| t.test_name.as_str());
                (s.subtask.as_str(), tests.collect())
            })
            .collect();
        assert_eq!(shown, [("01", vec!["a", "b"]), ("02", vec!["b", "d"])]);
        assert_eq!(results[0].test_results[1].score, 1.0);
        let skipped = plan.uniform(TestResult::skipped);
        assert_eq!(skipped.len(), 2, "subtask 03 has no chosen test");
    }

    #[test]
    fn subtask_filter_and_uniform_results() {
        let p = problem(&[("01", &["a"]), ("02", &["b"])]);
        let only = Selection {
            subtasks: Some(vec!["02".to_string()]),
            tests: None,
        };
        let plan = SubmissionPlan::new(&p, &only, 1);
        let ce = plan.uniform(|t| TestResult {
            feedback: Some("Compilation error exit code 1\nx".into()),
            status: Verdict::CompilationError,
            ..TestResult::skipped(t)
        });
        assert_eq!(ce.len(), 1);
        assert_eq!(ce[0].subtask, "02");
        assert_eq!(ce[0].status(), Verdict::CompilationError);
    }
}
