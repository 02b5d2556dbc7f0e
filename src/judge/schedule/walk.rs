//! The early-stop plan walked incrementally, for the scheduler's decisions.
//!
//! [`SubmissionPlan`](crate::judge::plan::SubmissionPlan) replays the reference's early stop from
//! the start over every known result; done on each result under the scheduler's lock, that cost
//! about 8 µs a decision (string hashing, allocations), which 256 workers finishing 1 ms tests
//! cannot afford. Here the same walk is kept as a cursor that only moves forward: tests are
//! numbered once per problem ([`IndexedPlan`]), a [`Walk`] remembers where it stands, and a
//! result moves it only when it completes the batch the walk waits on. Each position of the plan
//! is passed once per walk, so a decision costs O(1) amortised, whatever the plan's size.
//!
//! Two walks per submission: the exact one ([`Walk::record`], [`Walk::waiting_on`]) gives the
//! frontier (the batch certainly needed next), and an optimistic one
//! ([`Walk::next_speculative`]) gives, in order, the tests the replay would need if every unknown
//! test passed (speculation). A zero under a test the optimistic walk assumed passing makes that
//! walk restart from the exact one. The final results are still built by the full replay, once
//! per submission and outside the lock, so verdicts come from one piece of code.

use std::collections::HashMap;

use crate::judge::plan::SubmissionPlan;

/// A test of one problem, numbered in the order of first appearance in its planned subtasks.
pub type TestId = u32;

/// The planned subtasks of a problem with their tests numbered; shared by its submissions.
#[derive(Debug)]
pub struct IndexedPlan {
    /// Test names, by [`TestId`].
    names: Vec<String>,
    subtasks: Vec<Vec<TestId>>,
    batch_size: usize,
}

impl IndexedPlan {
    /// The units `plan` walks, with its batch size.
    pub fn new(plan: &SubmissionPlan) -> IndexedPlan {
        let mut ids: HashMap<&str, TestId> = HashMap::new();
        let mut names = Vec::new();
        let (units, batch_size) = plan.units();
        let subtasks = units
            .map(|tests| {
                tests
                    .iter()
                    .map(|t| {
                        *ids.entry(t.as_str()).or_insert_with(|| {
                            names.push(t.clone());
                            (names.len() - 1) as TestId
                        })
                    })
                    .collect()
            })
            .collect();
        IndexedPlan {
            names,
            subtasks,
            batch_size: batch_size.max(1),
        }
    }

    /// Number of distinct tests.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn name(&self, test: TestId) -> &str {
        &self.names[test as usize]
    }
}

/// What is known of one test's result for the walk: only whether it scored zero matters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Known {
    Unknown,
    Zero,
    NonZero,
}

/// A position in the reference's walk over the plan, with the walk's own cache of consumed
/// results (the reference reuses a test's result in later subtasks and skips a subtask whose
/// reused results hold a zero).
#[derive(Debug, Clone)]
pub struct Walk {
    /// Per test: `None` not consumed yet, `Some(zero)` consumed with that outcome.
    cache: Vec<Option<bool>>,
    /// Per test: consumed by the optimistic walk while unknown (assumed passing).
    assumed: Vec<bool>,
    /// The current subtask, `subtasks.len()` when the walk is complete.
    subtask: usize,
    /// The current subtask's tests not cached when it was entered (with repeats), in order;
    /// empty and `entered == false` before entering.
    uncached: Vec<TestId>,
    entered: bool,
    batch_start: usize,
    /// Next position to consume within the current batch (the optimistic walk consumes one
    /// test at a time; the exact walk a whole batch at once).
    next: usize,
    zero_in_batch: bool,
    /// The exact walk's frontier: per test, whether the current batch waits on it, and how
    /// many distinct tests it waits on.
    waiting: Vec<bool>,
    missing: usize,
}

impl Walk {
    /// A walk at the start of `plan`.
    pub fn new(plan: &IndexedPlan) -> Walk {
        Walk {
            cache: vec![None; plan.len()],
            assumed: vec![false; plan.len()],
            subtask: 0,
            uncached: Vec::new(),
            entered: false,
            batch_start: 0,
            next: 0,
            zero_in_batch: false,
            waiting: vec![false; plan.len()],
            missing: 0,
        }
    }

    /// Enters the current subtask if not yet done; `false` when the walk is complete.
    fn enter(&mut self, plan: &IndexedPlan) -> bool {
        while !self.entered {
            let Some(tests) = plan.subtasks.get(self.subtask) else {
                return false;
            };
            let failed_already = tests.iter().any(|&t| self.cache[t as usize] == Some(true));
            if failed_already {
                self.subtask += 1;
                continue;
            }
            self.uncached.clear();
            self.uncached.extend(
                tests
                    .iter()
                    .copied()
                    .filter(|&t| self.cache[t as usize].is_none()),
            );
            self.entered = true;
            self.batch_start = 0;
            self.next = 0;
            self.zero_in_batch = false;
        }
        true
    }

    fn batch_end(&self, plan: &IndexedPlan) -> usize {
        (self.batch_start + plan.batch_size).min(self.uncached.len())
    }

    /// Moves past a fully consumed batch: to the next batch, or the next subtask after a zero
    /// or at the subtask's end.
    fn close_batch(&mut self, plan: &IndexedPlan) {
        let end = self.batch_end(plan);
        if self.zero_in_batch || end == self.uncached.len() {
            self.subtask += 1;
            self.entered = false;
        } else {
            self.batch_start = end;
            self.next = end;
            self.zero_in_batch = false;
        }
    }

    fn consume(&mut self, test: TestId, zero: bool) {
        self.zero_in_batch |= zero;
        self.cache[test as usize] = Some(zero);
    }

    /// The exact walk: moves forward over known results and stops at the first batch with an
    /// unknown test. `Some(tests)` are that batch's unknown tests (distinct, in order), newly
    /// waited on; `None` when the walk is complete (every needed result is known).
    pub fn advance(
        &mut self,
        plan: &IndexedPlan,
        known: impl Fn(TestId) -> Known,
    ) -> Option<Vec<TestId>> {
        loop {
            if !self.enter(plan) {
                return None;
            }
            let batch = self.batch_start..self.batch_end(plan);
            let mut unknown = Vec::new();
            for &t in &self.uncached[batch.clone()] {
                if known(t) == Known::Unknown && !self.waiting[t as usize] {
                    self.waiting[t as usize] = true;
                    unknown.push(t);
                }
            }
            if !unknown.is_empty() {
                self.missing = unknown.len();
                return Some(unknown);
            }
            for i in batch {
                let t = self.uncached[i];
                self.consume(t, known(t) == Known::Zero);
            }
            self.close_batch(plan);
        }
    }

    /// Tells the exact walk that `test`'s result is now known (it must already be visible
    /// through `known`). Returns what [`Walk::advance`] returns when the result completed the
    /// batch the walk waited on, `Some(vec![])` when the walk still waits on the same batch.
    pub fn record(
        &mut self,
        plan: &IndexedPlan,
        test: TestId,
        known: impl Fn(TestId) -> Known,
    ) -> Option<Vec<TestId>> {
        if self.waiting[test as usize] {
            self.waiting[test as usize] = false;
            self.missing -= 1;
            if self.missing == 0 {
                return self.advance(plan, known);
            }
        }
        Some(Vec::new())
    }

    /// The optimistic walk: the next test the replay would need if every unknown test passed,
    /// skipping tests already known or in flight; `None` when there is none.
    pub fn next_speculative(
        &mut self,
        plan: &IndexedPlan,
        known: impl Fn(TestId) -> Known,
        in_flight: impl Fn(TestId) -> bool,
    ) -> Option<TestId> {
        loop {
            if !self.enter(plan) {
                return None;
            }
            if self.next < self.batch_end(plan) {
                let t = self.uncached[self.next];
                self.next += 1;
                let k = known(t);
                if k == Known::Unknown {
                    self.assumed[t as usize] = true;
                }
                self.consume(t, k == Known::Zero);
                if k == Known::Unknown && !in_flight(t) {
                    return Some(t);
                }
                continue;
            }
            self.close_batch(plan);
        }
    }

    /// Whether the optimistic walk took `test` as passing before its result was known (a zero
    /// there means the walk went the wrong way).
    pub fn assumed(&self, test: TestId) -> bool {
        self.assumed[test as usize]
    }

    /// Whether the walk has gone through the whole plan.
    #[cfg(test)]
    pub fn complete(&self, plan: &IndexedPlan) -> bool {
        self.subtask >= plan.subtasks.len()
    }

    /// A copy to start an optimistic walk from the exact walk's position. The exact walk
    /// consumes whole batches, so the copy is at a batch's start and consumes it one by one.
    pub fn restart_from(&mut self, exact: &Walk) {
        self.cache.clone_from(&exact.cache);
        self.assumed.iter_mut().for_each(|a| *a = false);
        self.subtask = exact.subtask;
        self.uncached.clone_from(&exact.uncached);
        self.entered = exact.entered;
        self.batch_start = exact.batch_start;
        self.next = exact.batch_start;
        self.zero_in_batch = false;
        self.waiting.iter_mut().for_each(|w| *w = false);
        self.missing = 0;
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::judge::fake;
    use crate::judge::plan::Selection;
    use crate::problem::TaskType;
    use crate::score::{TestResult, Verdict};

    fn result(name: &str, score: f64) -> TestResult {
        TestResult {
            score,
            status: Verdict::of_run(score, "x"),
            ..TestResult::skipped(name)
        }
    }

    fn distinct(list: Vec<String>) -> Vec<String> {
        let mut seen = std::collections::HashSet::new();
        list.into_iter()
            .filter(|t| seen.insert(t.clone()))
            .collect()
    }

    /// A small xorshift generator: the same random scripts every run.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    /// Random problems (shared and repeated tests), random true scores and a random order of
    /// results arriving (some speculative): after every result, the incremental walks give
    /// exactly what the full replay gives — the frontier, the completion, and the order of
    /// speculation.
    #[test]
    fn incremental_walks_equal_the_replay_on_random_scripts() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for round in 0..400 {
            let pool: Vec<String> = (0..1 + rng.next(12)).map(|i| format!("t{i}")).collect();
            let subtasks: Vec<(String, Vec<String>)> = (0..1 + rng.next(5))
                .map(|s| {
                    let tests = (0..1 + rng.next(7))
                        .map(|_| pool[rng.next(pool.len() as u64) as usize].clone())
                        .collect();
                    (format!("s{s}"), tests)
                })
                .collect();
            let refs: Vec<(&str, Vec<String>)> = subtasks
                .iter()
                .map(|(n, t)| (n.as_str(), t.clone()))
                .collect();
            let problem = fake::problem("p", TaskType::Batch, &refs);
            let batch = 1 + rng.next(3) as usize;
            let plan = SubmissionPlan::new(&problem, &Selection::default(), batch);
            let indexed = IndexedPlan::new(&plan);
            let truth: HashMap<String, f64> = pool
                .iter()
                .map(|t| (t.clone(), [0.0, 1.0, 1.0, 0.5][rng.next(4) as usize]))
                .collect();
            let id = |name: &str| (0..indexed.len()).find(|&i| indexed.name(i as TestId) == name);

            let mut known: HashMap<String, TestResult> = HashMap::new();
            let mut in_flight: Vec<bool> = vec![false; indexed.len()];
            let mut exact = Walk::new(&indexed);
            let mut spec = Walk::new(&indexed);
            let lookup =
                |known: &HashMap<String, TestResult>, t: TestId| match known.get(indexed.name(t)) {
                    None => Known::Unknown,
                    Some(r) if r.score == 0.0 => Known::Zero,
                    Some(_) => Known::NonZero,
                };
            let mut frontier = exact.advance(&indexed, |t| lookup(&known, t));
            for step in 0.. {
                let context = format!("round {round} step {step} batch {batch} {subtasks:?}");
                // The exact walk agrees with the replay's frontier.
                let expected = plan.frontier(&known).map(distinct);
                let waiting: Option<Vec<String>> = (!exact.complete(&indexed)).then(|| {
                    let mut names: Vec<String> = (0..indexed.len() as TestId)
                        .filter(|&t| exact.waiting[t as usize])
                        .map(|t| indexed.name(t).to_string())
                        .collect();
                    names.sort();
                    names
                });
                let mut sorted = expected.clone();
                if let Some(s) = sorted.as_mut() {
                    s.sort();
                }
                assert_eq!(waiting, sorted, "{context}");
                if let (Some(f), Some(e)) = (&frontier, &expected) {
                    if !f.is_empty() {
                        let names: Vec<String> =
                            f.iter().map(|&t| indexed.name(t).to_string()).collect();
                        assert_eq!(&names, e, "{context}");
                    }
                }
                // The optimistic walk agrees with the lookahead, minus what is in flight.
                let mut probe = spec.clone();
                let mut order = Vec::new();
                let mut flight = in_flight.clone();
                while let Some(t) =
                    probe.next_speculative(&indexed, |t| lookup(&known, t), |t| flight[t as usize])
                {
                    flight[t as usize] = true;
                    order.push(indexed.name(t).to_string());
                }
                let lookahead: Vec<String> = plan
                    .lookahead(&known)
                    .into_iter()
                    .filter(|t| id(t).is_some_and(|i| !in_flight[i]))
                    .collect();
                assert_eq!(order, lookahead, "{context}");
                if frontier.is_none() {
                    break;
                }
                // Either speculate one test, or a result arrives for one in flight or unknown.
                let unknown: Vec<TestId> = (0..indexed.len() as TestId)
                    .filter(|&t| !known.contains_key(indexed.name(t)))
                    .collect();
                if rng.next(3) == 0 {
                    if let Some(t) = spec.next_speculative(
                        &indexed,
                        |t| lookup(&known, t),
                        |t| in_flight[t as usize],
                    ) {
                        in_flight[t as usize] = true;
                        continue;
                    }
                }
                let t = unknown[rng.next(unknown.len() as u64) as usize];
                in_flight[t as usize] = false;
                let name = indexed.name(t).to_string();
                let score = truth[&name];
                known.insert(name.clone(), result(&name, score));
                frontier = exact.record(&indexed, t, |t| lookup(&known, t));
                if score == 0.0 && spec.assumed(t) {
                    spec.restart_from(&exact);
                }
            }
        }
    }
}
