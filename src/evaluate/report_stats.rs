//! The numbers the HTML report draws for each problem, gathered one submission at a time while
//! the results stream by (see `report_source`), so that no test of any submission has to stay in
//! memory: each subtask's solve rate, each test's least and most time and memory, and the time
//! and memory of every test run as a share of the problem's limit, counted in bins on a log
//! scale per status.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::report_rows::JudgedSubmission;
use crate::score::Verdict;

/// What the page shows of one subtask over a problem's submissions.
#[derive(Debug, Clone, PartialEq)]
pub struct SubtaskRate {
    pub name: String,
    pub points: f64,
    /// Submissions scoring the whole subtask.
    pub solved: usize,
    /// Submissions scoring part of it.
    pub partial: usize,
    pub submissions: usize,
}

/// Per subtask (in order), how many submissions solve it fully and partly.
pub fn subtask_rates(submissions: &[&JudgedSubmission]) -> Vec<SubtaskRate> {
    let mut rates: Vec<SubtaskRate> = Vec::new();
    for cell in submissions.iter().flat_map(|s| &s.subtasks) {
        let i = match rates.iter().position(|r| r.name == cell.name) {
            Some(i) => i,
            None => {
                rates.push(SubtaskRate {
                    name: cell.name.clone(),
                    points: cell.points,
                    solved: 0,
                    partial: 0,
                    submissions: 0,
                });
                rates.len() - 1
            }
        };
        let rate = &mut rates[i];
        rate.submissions += 1;
        if cell.score >= 1.0 {
            rate.solved += 1;
        } else if cell.score > 0.0 {
            rate.partial += 1;
        }
    }
    rates
}

/// Total scores in ten bins of equal width over `0..=max_points` (the last bin holds the
/// full score): `(low, high, submissions)`.
pub fn score_bins(totals: &[f64], max_points: f64) -> Vec<(f64, f64, usize)> {
    let width = max_points.max(1.0) / 10.0;
    let mut bins: Vec<(f64, f64, usize)> = (0..10)
        .map(|i| (i as f64 * width, (i + 1) as f64 * width, 0))
        .collect();
    for &total in totals {
        let i = ((total / width).floor().max(0.0) as usize).min(9);
        bins[i].2 += 1;
    }
    bins
}

/// What the page shows of one test over the submissions that ran it.
#[derive(Debug, Clone, PartialEq)]
pub struct TestUsage {
    pub name: String,
    /// Runs with a measured time.
    pub runs: usize,
    pub min_time: f64,
    pub max_time: f64,
    pub min_memory: u64,
    pub max_memory: u64,
    pub time_limit_exceeded: usize,
    pub memory_limit_exceeded: usize,
}

/// Bins of a [`Distribution`]: [`BINS_PER_DECADE`] per factor of ten from
/// 10^[`LOWEST_DECADE`] of the limit up to 10 times the limit; a use below the first bin counts
/// in it, one above the last in the last.
pub const BINS_PER_DECADE: usize = 5;
pub const LOWEST_DECADE: i32 = -4;
pub const BINS: usize = BINS_PER_DECADE * (1 - LOWEST_DECADE) as usize;

/// The bin of a use that is `ratio` times the limit.
pub fn bin_of(ratio: f64) -> usize {
    if ratio.is_nan() || ratio <= 0.0 {
        return 0;
    }
    let position = (ratio.log10() - LOWEST_DECADE as f64) * BINS_PER_DECADE as f64;
    (position.floor().max(0.0) as usize).min(BINS - 1)
}

/// The lower edge of bin `i`, as a share of the limit.
pub fn bin_low(i: usize) -> f64 {
    10f64.powf(LOWEST_DECADE as f64 + i as f64 / BINS_PER_DECADE as f64)
}

/// Test runs per status, counted by their use as a share of the limit.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Distribution {
    pub by_status: BTreeMap<Verdict, [usize; BINS]>,
}

impl Distribution {
    fn add(&mut self, status: Verdict, ratio: f64) {
        self.by_status.entry(status).or_insert([0; BINS])[bin_of(ratio)] += 1;
    }

    pub fn is_empty(&self) -> bool {
        self.by_status.is_empty()
    }
}

/// Everything the page draws of one problem's tests, gathered a submission at a time.
#[derive(Debug, Clone, Default)]
pub struct ProblemStats {
    pub usage: Vec<TestUsage>,
    index: HashMap<String, usize>,
    /// CPU time of every run with a measured time, as a share of the time limit (empty when
    /// no row says the limit).
    pub time: Distribution,
    pub memory: Distribution,
    pub time_limit: Option<f64>,
    pub memory_limit: Option<u64>,
}

impl ProblemStats {
    /// Counts the tests of one submission (a test shared by several subtasks counts once).
    pub fn add(&mut self, submission: &JudgedSubmission) {
        self.time_limit = self.time_limit.or(submission.time_limit);
        self.memory_limit = self.memory_limit.or(submission.memory_limit);
        let mut seen = HashSet::new();
        for test in submission.subtasks.iter().flat_map(|s| &s.tests) {
            let Some(time) = test.time else { continue };
            if !seen.insert(test.name.as_str()) {
                continue;
            }
            let i = match self.index.get(&test.name) {
                Some(&i) => i,
                None => {
                    self.index.insert(test.name.clone(), self.usage.len());
                    self.usage.push(TestUsage {
                        name: test.name.clone(),
                        runs: 0,
                        min_time: f64::INFINITY,
                        max_time: 0.0,
                        min_memory: u64::MAX,
                        max_memory: 0,
                        time_limit_exceeded: 0,
                        memory_limit_exceeded: 0,
                    });
                    self.usage.len() - 1
                }
            };
            let u = &mut self.usage[i];
            u.runs += 1;
            u.min_time = u.min_time.min(time);
            u.max_time = u.max_time.max(time);
            let memory = test.memory.unwrap_or(0);
            u.min_memory = u.min_memory.min(memory);
            u.max_memory = u.max_memory.max(memory);
            u.time_limit_exceeded += usize::from(test.status == Verdict::TimeLimit);
            u.memory_limit_exceeded += usize::from(test.status == Verdict::MemoryLimit);
            if let Some(limit) = submission.time_limit.filter(|l| *l > 0.0) {
                self.time.add(test.status, time / limit);
            }
            if let (Some(limit), Some(memory)) =
                (submission.memory_limit.filter(|l| *l > 0), test.memory)
            {
                self.memory.add(test.status, memory as f64 / limit as f64);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_fall_in_ten_bins_and_the_full_score_in_the_last() {
        let bins = score_bins(&[0.0, 9.99, 10.0, 55.0, 100.0, 100.0], 100.0);
        let counts: Vec<usize> = bins.iter().map(|b| b.2).collect();
        assert_eq!(counts, [2, 1, 0, 0, 0, 1, 0, 0, 0, 2]);
        assert_eq!((bins[9].0, bins[9].1), (90.0, 100.0));
    }

    #[test]
    fn shares_of_the_limit_fall_in_log_bins_and_the_ends_are_open() {
        assert_eq!(bin_of(0.0), 0);
        assert_eq!(bin_of(1e-9), 0);
        assert_eq!(bin_of(1e-4), 0);
        // The limit itself opens the bin of [1, 10^(1/5)).
        assert_eq!(bin_of(1.0), 4 * BINS_PER_DECADE);
        assert_eq!(bin_of(0.999), 4 * BINS_PER_DECADE - 1);
        assert_eq!(bin_of(1e6), BINS - 1);
        assert!((bin_low(4 * BINS_PER_DECADE) - 1.0).abs() < 1e-12);
    }
}
