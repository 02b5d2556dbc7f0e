//! The reference's choice of 50 submissions per problem, as a contestant limited to 50 submissions
//! would pick them (docs/results.md#round-robin-selection): cycle backwards over the subtasks, each
//! time sending the best remaining submission written for a subtask not solved yet, then fill up
//! with the best of the rest.
//!
//! Reproduced exactly, quirk included, so that scores match the reference: when a submission
//! fully solves subtask k, the reference adds the *integer* k to its set of solved subtasks, which
//! otherwise holds names. So solving never marks a subtask as solved by name (only the first
//! subtask is, from the start), but each position counts in the size of
//! `exhausted ∪ solved`, which ends the cycling once it reaches the number of subtasks.

use std::cmp::Ordering;
use std::collections::{HashSet, VecDeque};

use crate::score::Verdict;

/// At most this many submissions are selected.
pub const SUBMISSION_LIMIT: usize = 50;

/// What the selection needs to know about one judged submission.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// The subtask the submission was written for.
    pub target_subtask: Option<String>,
    /// Whether it had code at all.
    pub has_code: bool,
    /// Verdict of its first subtask (the samples); CE drops the submission.
    pub first_subtask_status: Verdict,
    /// Unweighted score of each subtask, in subtask order.
    pub subtask_scores: Vec<f64>,
    /// Length of the reasoning (tokens, else characters): the tie-breaker, longer first.
    pub reasoning_length: i64,
}

impl Candidate {
    fn first_score(&self) -> f64 {
        self.subtask_scores.first().copied().unwrap_or(0.0)
    }
}

/// An element of the reference's `solved_subtasks` set: a subtask name or, by its quirk, a
/// subtask position.
#[derive(Debug, PartialEq, Eq, Hash)]
enum Solved<'a> {
    Name(&'a str),
    Position(usize),
}

/// Indices (into `candidates`) of the selected submissions, in selection order. `subtasks` are
/// the problem's subtask names in order.
pub fn select(subtasks: &[String], candidates: &[Candidate]) -> Vec<usize> {
    // Groups by target subtask, in subtask order; submissions whose target is not a subtask go
    // to groups after them, which the cycling never visits but the fill step does.
    let mut groups: Vec<(Option<&str>, VecDeque<usize>)> = subtasks
        .iter()
        .map(|s| (Some(s.as_str()), VecDeque::new()))
        .collect();
    for (i, c) in candidates.iter().enumerate() {
        if !c.has_code || c.first_subtask_status == Verdict::CompilationError {
            continue;
        }
        let target = c.target_subtask.as_deref();
        match groups.iter_mut().find(|(name, _)| *name == target) {
            Some((_, group)) => group.push_back(i),
            None => groups.push((target, VecDeque::from([i]))),
        }
    }
    for (_, group) in &mut groups {
        group
            .make_contiguous()
            .sort_by(|&a, &b| descending(group_key(&candidates[a]), group_key(&candidates[b])));
    }

    let mut selected = Vec::new();
    if !subtasks.is_empty() {
        let mut exhausted: HashSet<&str> = subtasks
            .iter()
            .zip(&groups)
            .filter(|(_, (_, group))| group.is_empty())
            .map(|(name, _)| name.as_str())
            .collect();
        let mut solved: HashSet<Solved> = HashSet::from([Solved::Name(subtasks[0].as_str())]);
        let union_size = |exhausted: &HashSet<&str>, solved: &HashSet<Solved>| {
            solved.len()
                + exhausted
                    .iter()
                    .filter(|name| !solved.contains(&Solved::Name(name)))
                    .count()
        };
        let mut current = subtasks.len() - 1;
        while selected.len() < SUBMISSION_LIMIT && union_size(&exhausted, &solved) < subtasks.len()
        {
            let name = subtasks[current].as_str();
            if !solved.contains(&Solved::Name(name)) && !exhausted.contains(name) {
                let group = &mut groups[current].1;
                if let Some(pick) = group.pop_front() {
                    selected.push(pick);
                    for (k, &score) in candidates[pick].subtask_scores.iter().enumerate() {
                        if score == 1.0 {
                            solved.insert(Solved::Position(k));
                        }
                    }
                }
                if group.is_empty() {
                    exhausted.insert(name);
                }
            }
            current = (current + subtasks.len() - 1) % subtasks.len();
        }
    }

    let position = |c: &Candidate| {
        c.target_subtask
            .as_ref()
            .and_then(|t| subtasks.iter().position(|s| s == t))
            .unwrap_or(0)
    };
    let mut remaining: Vec<usize> = groups.into_iter().flat_map(|(_, g)| g).collect();
    remaining.sort_by(|&a, &b| {
        let (ca, cb) = (&candidates[a], &candidates[b]);
        descending(group_key(ca), group_key(cb)).then(position(cb).cmp(&position(ca)))
    });
    let room = SUBMISSION_LIMIT.saturating_sub(selected.len());
    selected.extend(remaining.into_iter().take(room));
    selected
}

fn group_key(c: &Candidate) -> (f64, i64) {
    (c.first_score(), c.reasoning_length)
}

/// Python's `sorted(..., reverse=True)` order on (float, int) keys: larger first; equal keys keep
/// their order because Rust's sorts are stable too.
fn descending(a: (f64, i64), b: (f64, i64)) -> Ordering {
    b.0.partial_cmp(&a.0)
        .unwrap_or(Ordering::Equal)
        .then(b.1.cmp(&a.1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("s{i}")).collect()
    }

    fn cand(target: &str, scores: &[f64], len: i64) -> Candidate {
        Candidate {
            target_subtask: Some(target.to_string()),
            has_code: true,
            first_subtask_status: if scores[0] == 1.0 {
                Verdict::Accepted
            } else {
                Verdict::WrongAnswer
            },
            subtask_scores: scores.to_vec(),
            reasoning_length: len,
        }
    }

    /// Four subtasks. X (for s3) solves positions 0 and 3; Y (for s2) solves position 2. After
    /// them `solved` = {s0, 0, 3, 2}: four elements, so the cycling stops although s1 was never
    /// tried. Z, the only submission for s1, ranks last in the fill and is left out. Without the
    /// quirk (names added, or positions ignored) the cycle would reach s1 and take Z third.
    #[test]
    fn integer_positions_end_the_cycle_early() {
        let mut c = vec![
            cand("s3", &[1.0, 0.0, 0.0, 1.0], 1000), // 0: X
            cand("s2", &[0.0, 0.0, 1.0, 0.0], 1),    // 1: Y
            cand("s1", &[0.0, 0.0, 0.0, 0.0], 1),    // 2: Z
        ];
        for _ in 0..57 {
            c.push(cand("s3", &[1.0, 0.0, 0.0, 0.0], 100)); // 3..60: fillers
        }
        let picked = select(&names(4), &c);
        let mut expected = vec![0, 1];
        expected.extend(3..51);
        assert_eq!(picked, expected);
        assert!(!picked.contains(&2));
    }

    /// s1 has no usable submission (one CE, one without code): exhausted from the start. The
    /// cycle goes s2 (B, the longer of two zero scores), s1 skipped, s0 skipped (solved), s2 (A,
    /// which empties the group: all three exhausted or solved), then the fill adds C.
    #[test]
    fn empty_groups_are_exhausted_and_skipped() {
        let mut ce = cand("s1", &[0.0, 0.0, 0.0], 50);
        ce.first_subtask_status = Verdict::CompilationError;
        let mut no_code = cand("s1", &[1.0, 1.0, 1.0], 50);
        no_code.has_code = false;
        let c = vec![
            cand("s2", &[0.0, 0.0, 0.0], 5), // 0: A
            cand("s2", &[0.0, 0.0, 0.0], 9), // 1: B
            cand("s0", &[1.0, 1.0, 1.0], 3), // 2: C
            ce,                              // 3
            no_code,                         // 4
        ];
        assert_eq!(select(&names(3), &c), vec![1, 0, 2]);
    }

    /// P solves everything: the cycle stops after it. The fill sorts the rest by first-subtask
    /// score, then length, then the target's position (unknown targets count as 0), larger first.
    #[test]
    fn fill_orders_by_score_length_then_target_position() {
        let c = vec![
            cand("s2", &[1.0, 1.0, 1.0], 10), // 0: P
            cand("s1", &[0.5, 0.0, 0.0], 7),  // 1: Q
            cand("s2", &[0.5, 0.0, 0.0], 7),  // 2: R
            cand("zz", &[0.5, 0.0, 0.0], 7),  // 3: T, target not a subtask
            cand("s1", &[1.0, 0.0, 0.0], 2),  // 4: U
        ];
        assert_eq!(select(&names(3), &c), vec![0, 4, 2, 1, 3]);
    }

    /// Cycling backwards over s2, s1 (s0 is solved from the start), taking the best of each
    /// group in turn until 50 are taken; nothing is left for the fill.
    #[test]
    fn the_cycle_alternates_and_stops_at_the_limit() {
        let mut c = Vec::new();
        for i in 0..30 {
            c.push(cand("s1", &[0.0, 0.0, 0.0], i)); // 0..30, best is 29
            c.push(cand("s2", &[0.0, 0.0, 0.0], i)); // 30.. interleaved
        }
        let picked = select(&names(3), &c);
        assert_eq!(picked.len(), SUBMISSION_LIMIT);
        // s2's longest (index 59, length 29) first, then s1's longest (index 58).
        assert_eq!(&picked[..4], &[59, 58, 57, 56]);
        assert_eq!(picked[49], 10);
    }

    #[test]
    fn no_subtasks_or_no_candidates() {
        assert!(select(&names(3), &[]).is_empty());
        let c = vec![cand("s0", &[1.0], 1)];
        assert_eq!(select(&[], &c), vec![0]);
    }
}
