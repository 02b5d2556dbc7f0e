//! The fidelity report: a table per task for the terminal, and the same as markdown
//! (`fidelity.md`, for people) and JSON (`fidelity.json`, every subtask of every solution).
//! Deviations are listed with the test that decided them, so each can be explained.

use std::fmt::Write as _;

use serde_json::{json, Value};

use super::packages::{Format, OfficialSolution};
use super::rules::{compare, Deviation};
use super::run::{judged_subtasks, Judgement, PackageResults};
use super::{JudgedSolution, SubtaskOutcome};
use crate::score::Verdict;

/// The counts of one package.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    pub solutions: usize,
    pub fit: usize,
    pub deviate: usize,
    /// Could not be judged (the package did not load, a judge-side failure).
    pub failed: usize,
    /// Not C++, or missing.
    pub not_judged: usize,
}

impl Counts {
    fn add(&mut self, other: Counts) {
        self.solutions += other.solutions;
        self.fit += other.fit;
        self.deviate += other.deviate;
        self.failed += other.failed;
        self.not_judged += other.not_judged;
    }
}

/// The deviations of one solution; `None` when it have no result.
pub fn deviations(solution: &OfficialSolution, judgement: &Judgement) -> Option<Vec<Deviation>> {
    match judgement {
        Judgement::Judged(j) => Some(compare(&solution.expectation, &judged_subtasks(j))),
        Judgement::Failed(_) => None,
    }
}

pub fn counts(results: &PackageResults) -> Counts {
    let mut c = Counts {
        not_judged: results.package.not_judged.len(),
        ..Counts::default()
    };
    for (solution, judgement) in &results.solutions {
        c.solutions += 1;
        match deviations(solution, judgement) {
            Some(d) if d.is_empty() => c.fit += 1,
            Some(_) => c.deviate += 1,
            None => c.failed += 1,
        }
    }
    c
}

pub fn total(all: &[PackageResults]) -> Counts {
    let mut t = Counts::default();
    for r in all {
        t.add(counts(r));
    }
    t
}

fn format_name(format: Format) -> &'static str {
    match format {
        Format::Tps => "TPS",
        Format::Cms => "CMS",
    }
}

/// The summary table (markdown, which also reads well in a terminal).
pub fn table(all: &[PackageResults]) -> String {
    let mut out = String::new();
    out.push_str("| task | format | solutions | fit | deviate | not judged |\n");
    out.push_str("|---|---|---:|---:|---:|---:|\n");
    for r in all {
        let c = counts(r);
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            r.package.name,
            format_name(r.package.format),
            c.solutions,
            c.fit,
            c.deviate,
            c.failed + c.not_judged
        );
    }
    let t = total(all);
    let _ = writeln!(
        out,
        "| **total** | | {} | {} | {} | {} |",
        t.solutions,
        t.fit,
        t.deviate,
        t.failed + t.not_judged
    );
    out
}

/// One line per deviation of a solution, with the evidence.
fn deviation_lines(judged: &JudgedSolution, deviations: &[Deviation]) -> Vec<String> {
    deviations
        .iter()
        .map(|d| match &d.subtask {
            Some(name) => {
                let outcome = judged.subtasks.iter().find(|s| &s.subtask == name);
                let got = d.got.first().map(|v| v.as_str()).unwrap_or("?");
                format!(
                    "subtask `{name}`: expected {}, got {got}{}",
                    d.expected,
                    outcome
                        .map(|o| evidence(o, judged.time_limit))
                        .unwrap_or_default()
                )
            }
            None => {
                let each: Vec<String> = judged
                    .subtasks
                    .iter()
                    .map(|s| {
                        format!(
                            "`{}` {}{}",
                            s.subtask,
                            s.status.as_str(),
                            evidence(s, judged.time_limit)
                        )
                    })
                    .collect();
                format!("no subtask is {}: {}", d.expected, each.join("; "))
            }
        })
        .collect()
}

/// What decided a subtask: its deciding test, or its slowest time when accepted.
fn evidence(s: &SubtaskOutcome, time_limit: f64) -> String {
    match (&s.deciding_test, s.status) {
        (Some(t), _) => {
            let mut parts = vec![format!("test {}", t.test)];
            if let Some(time) = t.time {
                parts.push(format!("{time:.2} s of {time_limit} s"));
            }
            if let Some(wall) = t.wall_time {
                parts.push(format!("wall {wall:.2} s"));
            }
            if let Some(m) = t.memory {
                parts.push(format!("{:.0} MiB", m as f64 / (1 << 20) as f64));
            }
            if !t.feedback.is_empty() {
                parts.push(format!("\"{}\"", t.feedback.replace('|', "\\|")));
            }
            format!(" ({})", parts.join(", "))
        }
        (None, Verdict::Accepted) => s
            .max_time
            .map(|t| format!(" (slowest test {t:.2} s of {time_limit} s)"))
            .unwrap_or_default(),
        _ => String::new(),
    }
}

/// The markdown report.
pub fn markdown(all: &[PackageResults], profile: &str) -> String {
    let t = total(all);
    let mut out = String::new();
    let _ = writeln!(out, "# Fidelity report\n");
    let _ = writeln!(
        out,
        "{} of {} official solutions fit their package's expected verdicts (compile profile \
         `{profile}`); {} deviate, {} have no result (a judge-side failure, or not judged yet), \
         {} are not judged (not C++, or missing).\n",
        t.fit, t.solutions, t.deviate, t.failed, t.not_judged
    );
    out.push_str(&table(all));
    let mut deviating = String::new();
    let mut failed = String::new();
    for r in all {
        for (solution, judgement) in &r.solutions {
            let header = format!(
                "- `{}/{}` (expected `{}`)",
                r.package.name,
                solution.file,
                solution.expectation.describe()
            );
            match (judgement, deviations(solution, judgement)) {
                (Judgement::Judged(j), Some(d)) if !d.is_empty() => {
                    let _ = writeln!(deviating, "{header}");
                    for line in deviation_lines(j, &d) {
                        let _ = writeln!(deviating, "  - {line}");
                    }
                }
                (Judgement::Failed(why), _) => {
                    let _ = writeln!(failed, "{header}: {}", why.lines().next().unwrap_or(""));
                }
                _ => {}
            }
        }
    }
    if !deviating.is_empty() {
        let _ = writeln!(out, "\n## Deviations\n\n{deviating}");
    }
    if !failed.is_empty() {
        let _ = writeln!(out, "\n## Without a result\n\n{failed}");
    }
    let skipped: Vec<String> = all
        .iter()
        .flat_map(|r| {
            r.package
                .not_judged
                .iter()
                .map(move |(file, why)| format!("- `{}/{file}`: {why}", r.package.name))
        })
        .collect();
    if !skipped.is_empty() {
        let _ = writeln!(
            out,
            "\n## Not judged (not C++, or missing)\n\n{}",
            skipped.join("\n")
        );
    }
    out
}

/// The JSON report: every solution, its subtasks and deviations.
pub fn json(all: &[PackageResults], profile: &str) -> Value {
    let t = total(all);
    json!({
        "compile_profile": profile,
        "solutions": t.solutions,
        "fit": t.fit,
        "deviate": t.deviate,
        "failed": t.failed,
        "not_judged": t.not_judged,
        "packages": all.iter().map(|r| json!({
            "task": r.package.name,
            "dir": r.package.dir,
            "format": format_name(r.package.format),
            "solutions": r.solutions.iter().map(|(s, j)| solution_json(s, j)).collect::<Vec<_>>(),
            "not_judged": r.package.not_judged.iter()
                .map(|(file, why)| json!({"solution": file, "why": why}))
                .collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

fn solution_json(solution: &OfficialSolution, judgement: &Judgement) -> Value {
    let expected = solution.expectation.describe();
    match judgement {
        Judgement::Failed(why) => json!({
            "solution": solution.file, "expected": expected, "fits": Value::Null, "error": why,
        }),
        Judgement::Judged(j) => {
            let d = deviations(solution, judgement).unwrap_or_default();
            json!({
                "solution": solution.file,
                "expected": expected,
                "fits": d.is_empty(),
                "time_limit": j.time_limit,
                "subtasks": j.subtasks,
                "deviations": d.iter().map(|d| json!({
                    "subtask": d.subtask,
                    "expected": d.expected.as_str(),
                    "got": d.got.iter().map(|v| v.as_str()).collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fidelity::packages::Package;
    use crate::fidelity::rules::{Expectation, Expected};
    use crate::fidelity::DecidingTest;

    fn results() -> Vec<PackageResults> {
        let solution = |file: &str, e: Expected| OfficialSolution {
            file: file.into(),
            expectation: Expectation::Category(e),
        };
        let judged = |file: &str, status: Verdict, deciding: Option<DecidingTest>| {
            Judgement::Judged(JudgedSolution {
                task: "message".into(),
                solution: file.into(),
                source_hash: "h".into(),
                compile_profile: "ioi".into(),
                time_scale: 1.0,
                time_limit: 3.0,
                subtasks: vec![SubtaskOutcome {
                    subtask: "01-full".into(),
                    status,
                    score: 0.0,
                    max_time: Some(0.4),
                    deciding_test: deciding,
                }],
            })
        };
        let wa = DecidingTest {
            test: "1-03".into(),
            status: Verdict::WrongAnswer,
            feedback: "Output isn't correct".into(),
            time: Some(0.25),
            wall_time: Some(0.5),
            memory: Some(4 << 20),
        };
        vec![PackageResults {
            package: Package {
                dir: "/x/message".into(),
                name: "message".into(),
                format: Format::Cms,
                solutions: vec![],
                not_judged: vec![(
                    "solutions/correct/a.java".into(),
                    "only C++ is judged".into(),
                )],
            },
            solutions: vec![
                (
                    solution("solutions/model_solution/m.cpp", Expected::ModelSolution),
                    judged("m", Verdict::Accepted, None),
                ),
                (
                    solution("solutions/runtime_error/r.cpp", Expected::RuntimeError),
                    judged("r", Verdict::WrongAnswer, Some(wa)),
                ),
                (
                    solution("solutions/incorrect/x.cpp", Expected::Incorrect),
                    Judgement::Failed("the package could not be loaded".into()),
                ),
            ],
        }]
    }

    #[test]
    fn counts_split_fit_deviate_and_failed() {
        assert_eq!(
            total(&results()),
            Counts {
                solutions: 3,
                fit: 1,
                deviate: 1,
                failed: 1,
                not_judged: 1
            }
        );
    }

    #[test]
    fn the_markdown_names_each_deviation_with_its_deciding_test() {
        let md = markdown(&results(), "ioi");
        assert!(md.contains("1 of 3 official solutions fit"), "{md}");
        assert!(md.contains("| message | CMS | 3 | 1 | 1 | 2 |"), "{md}");
        assert!(
            md.contains(
                "- `message/solutions/runtime_error/r.cpp` (expected `runtime_error`)\n  - no \
                 subtask is runtime_error: `01-full` WA (test 1-03, 0.25 s of 3 s, wall 0.50 s, 4 MiB, \
                 \"Output isn't correct\")"
            ),
            "{md}"
        );
        assert!(
            md.contains("`message/solutions/correct/a.java`: only C++ is judged"),
            "{md}"
        );
        assert!(md.contains("`message/solutions/incorrect/x.cpp` (expected `incorrect`): the package could not be loaded"), "{md}");
    }

    #[test]
    fn the_json_marks_each_solution_fit_or_not() {
        let v = json(&results(), "ioi");
        let sols = &v["packages"][0]["solutions"];
        assert_eq!(sols[0]["fits"], true);
        assert_eq!(sols[1]["fits"], false);
        assert_eq!(sols[1]["deviations"][0]["got"][0], "WA");
        assert_eq!(sols[2]["fits"], Value::Null);
        assert_eq!(v["fit"], 1);
    }
}
