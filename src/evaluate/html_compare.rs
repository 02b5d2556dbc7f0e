//! The page comparing several result sets (models, settings, runs), `reports/comparison.html`,
//! written by `report A B ...` and by an `evaluate` of several datasets: per problem, side by
//! side, each set's score under the 50-submission rule (docs/results.md#round-robin-selection)
//! and with no limit, its best submission, its subtask solve rates and its distribution of total
//! scores; then the submissions found in several sets (the same id on the same problem) whose
//! verdicts differ, each with the tests that differ (with each set's checker message), the code
//! side by side where it changed, and a link to its row on each set's own page.
//!
//! As on the dataset's page, every text from the results is escaped, and no link leads anywhere
//! but to the page's own anchors or to a row of a set's page (`<set>/report.html#s<n>-<k>`, the
//! set's name percent-encoded).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::io::Write;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::html::{escape, mean, page_end, page_head, percent, status_legend, table};
use super::html_submissions::{grid_order, row_anchor};
use super::overview::{points, problems, ProblemOverview, ResultSet};
use super::plots::{self, Histogram};
use super::report_rows::{subtask_cells, JudgedSubmission};
use super::report_source::ResultsFiles;
use super::report_stats::{score_bins, subtask_rates};
use crate::score::Verdict;

/// Name of the comparison page inside `reports/`.
pub const COMPARISON_HTML: &str = "comparison.html";
/// Characters of a checker's message shown for a test that differs (the results file has all).
const MESSAGE_CHARS: usize = 300;
/// Rows of a side-by-side code diff shown at most.
const DIFF_ROWS: usize = 400;
/// Unchanged lines shown around each change of a code diff.
const DIFF_CONTEXT: usize = 3;
/// The longest one code diff may take; past it the diff is coarser (larger blocks).
const DIFF_DEADLINE: Duration = Duration::from_millis(200);
/// The longest all the code diffs of a page may take; past it the code is said to differ.
const DIFF_TIME: Duration = Duration::from_secs(20);
/// Characters of one line of code shown in a diff.
const DIFF_LINE_CHARS: usize = 200;
/// Bytes of the page given to the details of the differing submissions (their tests and code):
/// past it, the submissions that differ are still listed, without details.
const DETAILS_BYTES: usize = 32 << 20;

/// What the page may still spend on details: bytes, and time computing code diffs.
struct Budget {
    bytes: usize,
    diff_time: Duration,
}

/// One problem as each set has it (`None` where a set has no submission of it).
struct ProblemAcross<'a> {
    year: i64,
    problem_id: String,
    per_set: Vec<Option<(ProblemOverview, Vec<&'a JudgedSubmission>)>>,
    /// The problem's number on each set's own page (its anchors' first part).
    numbers: Vec<Option<usize>>,
}

/// The problems of every set, newest year first, then by id.
fn problems_across(sets: &[ResultSet]) -> Vec<ProblemAcross<'_>> {
    let mut by_key: BTreeMap<(std::cmp::Reverse<i64>, String), ProblemAcross> = BTreeMap::new();
    for (i, set) in sets.iter().enumerate() {
        for (number, (overview, subs)) in problems(&set.submissions).into_iter().enumerate() {
            let entry = by_key
                .entry((
                    std::cmp::Reverse(overview.year),
                    overview.problem_id.clone(),
                ))
                .or_insert_with(|| ProblemAcross {
                    year: overview.year,
                    problem_id: overview.problem_id.clone(),
                    per_set: (0..sets.len()).map(|_| None).collect(),
                    numbers: vec![None; sets.len()],
                });
            entry.per_set[i] = Some((overview, subs));
            entry.numbers[i] = Some(number);
        }
    }
    by_key.into_values().collect()
}

/// Writes the comparison of `sets` to `out`; `rows` reads rows again for the tests that differ.
pub fn write_comparison(
    out: &mut impl Write,
    sets: &[ResultSet],
    rows: &ResultsFiles,
) -> Result<()> {
    let context = || "cannot write the comparison page".to_string();
    let across = problems_across(sets);
    let mut page = page_head(&format!("ioi-run comparison of {} result sets", sets.len()));
    let _ = write!(
        page,
        "<h1>Comparison of {} result sets</h1>\n<p class=\"muted\">Per problem, each set's \
         scores side by side; below them, the submissions found in several sets (the same id) \
         whose verdicts differ.</p>\n",
        sets.len()
    );
    page.push_str(&sets_table(sets, &across));
    page.push_str(&status_legend());
    page.push_str(&difference_summary(sets, &across));
    out.write_all(page.as_bytes()).with_context(context)?;
    let mut budget = Budget {
        bytes: DETAILS_BYTES,
        diff_time: DIFF_TIME,
    };
    for (number, problem) in across.iter().enumerate() {
        let section = problem_section(number, problem, sets, rows, &mut budget)?;
        out.write_all(section.as_bytes()).with_context(context)?;
    }
    out.write_all(page_end().as_bytes()).with_context(context)?;
    Ok(())
}

/// Each set's file, size and yearly totals over the problems that are not practice.
fn sets_table(sets: &[ResultSet], across: &[ProblemAcross]) -> String {
    let mut years: Vec<i64> = across.iter().map(|p| p.year).collect();
    years.dedup();
    let mut headers: Vec<String> = ["Set", "File", "Submissions", "Compiling"]
        .map(String::from)
        .to_vec();
    for year in &years {
        let year = match year {
            0 => "no year".to_string(),
            y => y.to_string(),
        };
        headers.push(format!("{year}: 50 limit"));
        headers.push(format!("{year}: no limit"));
    }
    let rows: Vec<Vec<String>> = sets
        .iter()
        .enumerate()
        .map(|(i, set)| {
            let mut row = vec![
                format!("<b>{}</b>", escape(&set.name)),
                escape(&set.path.display().to_string()),
                set.submissions.len().to_string(),
                set.submissions
                    .iter()
                    .filter(|s| s.code_compiles)
                    .count()
                    .to_string(),
            ];
            for year in &years {
                let counted = || {
                    across
                        .iter()
                        .filter(|p| p.year == *year)
                        .filter_map(|p| p.per_set[i].as_ref())
                        .filter(|(o, _)| o.day.as_deref() != Some("practice"))
                };
                row.push(format!(
                    "{:.2}",
                    counted().map(|(o, _)| o.limit_50_score).sum::<f64>()
                ));
                row.push(format!(
                    "{:.2}",
                    counted().map(|(o, _)| o.no_limit_score).sum::<f64>()
                ));
            }
            row
        })
        .collect();
    let header_refs: Vec<&str> = headers.iter().map(String::as_str).collect();
    let mut numeric = vec![false, false, true, true];
    numeric.resize(headers.len(), true);
    table(&header_refs, &numeric, &rows)
}

/// The submissions of one problem found in several sets: their id and each set's copy.
fn shared<'a>(problem: &ProblemAcross<'a>) -> Vec<(&'a str, Vec<Option<&'a JudgedSubmission>>)> {
    let mut by_id: BTreeMap<&str, Vec<Option<&JudgedSubmission>>> = BTreeMap::new();
    let sets = problem.per_set.len();
    for (i, per_set) in problem.per_set.iter().enumerate() {
        let Some((_, subs)) = per_set else { continue };
        for s in subs {
            by_id
                .entry(s.id.as_str())
                .or_insert_with(|| vec![None; sets])[i] = Some(*s);
        }
    }
    by_id
        .into_iter()
        .filter(|(_, copies)| copies.iter().flatten().count() > 1)
        .collect()
}

/// Whether the copies of a submission have different verdicts.
fn differ(copies: &[Option<&JudgedSubmission>]) -> bool {
    let mut present = copies.iter().flatten();
    let first = present.next().map(|s| s.verdicts);
    present.any(|s| Some(s.verdicts) != first)
}

/// The change of one problem's submissions from the first set to the last, over those in both:
/// how many, the mean change of their total, and which gained, lost or kept points.
#[derive(Debug, Default, PartialEq)]
struct Change {
    both: usize,
    mean: f64,
    improved: Vec<String>,
    regressed: Vec<String>,
    unchanged: usize,
}

/// The change of `problem` from the first set to the last (see [`Change`]).
fn change(problem: &ProblemAcross) -> Change {
    let mut change = Change::default();
    let mut sum = 0.0;
    for (id, copies) in shared(problem) {
        let (Some(Some(first)), Some(Some(last))) = (copies.first(), copies.last()) else {
            continue;
        };
        let delta = last.total - first.total;
        change.both += 1;
        sum += delta;
        // Totals are sums of points rounded to the subtasks' precision: a hundredth is noise.
        match delta {
            d if d > 0.005 => change.improved.push(id.to_string()),
            d if d < -0.005 => change.regressed.push(id.to_string()),
            _ => change.unchanged += 1,
        }
    }
    if change.both > 0 {
        change.mean = sum / change.both as f64;
    }
    change
}

/// Per problem: how many submissions are in several sets, how many of them differ, and how
/// their totals changed from the first set to the last (with the ids that gained or lost).
fn difference_summary(sets: &[ResultSet], across: &[ProblemAcross]) -> String {
    let ids = |ids: &[String]| match ids.len() {
        0 => "0".to_string(),
        n => format!(
            "<b>{n}</b> <span class=\"muted\">{}</span>",
            escape(&ids.join(", "))
        ),
    };
    let rows: Vec<Vec<String>> = across
        .iter()
        .enumerate()
        .map(|(number, problem)| {
            let shared = shared(problem);
            let differing = shared.iter().filter(|(_, c)| differ(c)).count();
            let change = change(problem);
            vec![
                format!(
                    "<a href=\"#c{number}\">{}</a>",
                    escape(&problem_title(problem))
                ),
                shared.len().to_string(),
                match differing {
                    0 => "0".into(),
                    n => format!("<a href=\"#c{number}-differ\"><b>{n}</b></a>"),
                },
                match change.both {
                    0 => "-".into(),
                    _ => format!("{:+.2}", change.mean),
                },
                ids(&change.improved),
                ids(&change.regressed),
                change.unchanged.to_string(),
            ]
        })
        .collect();
    let (first, last) = (&sets[0].name, &sets[sets.len() - 1].name);
    format!(
        "<h2>Verdicts that differ</h2>\n<p class=\"muted\">Change: from {} to {}, over the \
         submissions in both, in points of the submission's total.</p>\n{}",
        escape(first),
        escape(last),
        table(
            &[
                "Problem",
                "In several sets",
                "Verdicts differ",
                "Mean change",
                "Improved",
                "Regressed",
                "Unchanged"
            ],
            &[false, true, true, true, false, false, true],
            &rows
        )
    )
}

fn problem_title(problem: &ProblemAcross) -> String {
    match problem.year {
        0 => problem.problem_id.clone(),
        year => format!("{year}: {}", problem.problem_id),
    }
}

/// A problem's section: scores, solve rates and distributions side by side, then the
/// submissions whose verdicts differ.
fn problem_section(
    number: usize,
    problem: &ProblemAcross,
    sets: &[ResultSet],
    rows: &ResultsFiles,
    budget: &mut Budget,
) -> Result<String> {
    let mut out = format!(
        "<section id=\"c{number}\"><h2>{}</h2>\n",
        escape(&problem_title(problem))
    );
    let score_rows: Vec<Vec<String>> = sets
        .iter()
        .zip(&problem.per_set)
        .map(|(set, per_set)| {
            let mut row = vec![format!("<b>{}</b>", escape(&set.name))];
            match per_set {
                Some((o, subs)) => row.extend([
                    o.submissions.to_string(),
                    o.compiling.to_string(),
                    format!("{:.2}", mean(subs.iter().map(|s| s.total))),
                    format!("{:.2}", o.best_submission),
                    format!("{:.2}", o.limit_50_score),
                    format!("{:.2}", o.no_limit_score),
                ]),
                None => row.extend((0..6).map(|_| "-".to_string())),
            }
            row
        })
        .collect();
    out.push_str(&table(
        &[
            "Set",
            "Submissions",
            "Compiling",
            "Mean score",
            "Best submission",
            "Score (50 limit)",
            "Score (no limit)",
        ],
        &[false, true, true, true, true, true, true],
        &score_rows,
    ));
    out.push_str(&solve_rates(problem, sets));
    out.push_str(&distributions(problem, sets)?);
    out.push_str(&differences(number, problem, sets, rows, budget)?);
    out.push_str("</section>\n");
    Ok(out)
}

/// Per subtask, each set's share of submissions solving it.
fn solve_rates(problem: &ProblemAcross, sets: &[ResultSet]) -> String {
    let rates: Vec<Option<Vec<super::report_stats::SubtaskRate>>> = problem
        .per_set
        .iter()
        .map(|p| p.as_ref().map(|(_, subs)| subtask_rates(subs)))
        .collect();
    let mut names: Vec<&str> = Vec::new();
    for rate in rates.iter().flatten().flatten() {
        if !names.contains(&rate.name.as_str()) {
            names.push(&rate.name);
        }
    }
    let rows: Vec<Vec<String>> = names
        .iter()
        .map(|name| {
            let mut row = vec![escape(name)];
            for set_rates in &rates {
                row.push(
                    match set_rates
                        .as_ref()
                        .and_then(|r| r.iter().find(|r| r.name == *name))
                    {
                        Some(r) => format!(
                            "{} ({}/{})",
                            percent(r.solved, r.submissions),
                            r.solved,
                            r.submissions
                        ),
                        None => "-".into(),
                    },
                );
            }
            row
        })
        .collect();
    let mut headers = vec!["Subtask solved".to_string()];
    headers.extend(sets.iter().map(|s| s.name.clone()));
    let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
    let mut numeric = vec![false];
    numeric.resize(headers.len(), true);
    table(&headers, &numeric, &rows)
}

/// Each set's histogram of total scores, on the same axes.
fn distributions(problem: &ProblemAcross, sets: &[ResultSet]) -> Result<String> {
    let max_points = problem
        .per_set
        .iter()
        .flatten()
        .map(|(_, subs)| {
            let rates = subtask_rates(subs);
            rates
                .iter()
                .map(|r| r.points)
                .sum::<f64>()
                .max(subs.iter().map(|s| s.total).fold(0.0, f64::max))
        })
        .fold(0.0, f64::max);
    let bins: Vec<Option<Vec<(f64, f64, usize)>>> = problem
        .per_set
        .iter()
        .map(|per_set| {
            per_set.as_ref().map(|(_, subs)| {
                let totals: Vec<f64> = subs.iter().map(|s| s.total).collect();
                score_bins(&totals, max_points)
            })
        })
        .collect();
    // One vertical axis for every set: bars of the same height are the same count.
    let most = bins
        .iter()
        .flatten()
        .flatten()
        .map(|b| b.2)
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for ((set, per_set), bins) in sets.iter().zip(&problem.per_set).zip(&bins) {
        let (Some((_, subs)), Some(bins)) = (per_set, bins) else {
            continue;
        };
        let _ = writeln!(
            out,
            "<figure><figcaption>{}: total score of {} submissions</figcaption>{}</figure>",
            escape(&set.name),
            subs.len(),
            plots::score_histogram(&Histogram {
                bins,
                max_points,
                most,
            })?
        );
    }
    Ok(out)
}

/// The submissions of the problem whose verdicts differ between sets, each with its subtasks
/// per set and the tests that differ.
fn differences(
    number: usize,
    problem: &ProblemAcross,
    sets: &[ResultSet],
    rows: &ResultsFiles,
    budget: &mut Budget,
) -> Result<String> {
    let shared = shared(problem);
    let differing: Vec<_> = shared.iter().filter(|(_, c)| differ(c)).collect();
    let mut out = format!(
        "<h3 id=\"c{number}-differ\">Verdicts that differ: {} of {} submissions in several \
         sets</h3>\n",
        differing.len(),
        shared.len()
    );
    if differing.is_empty() {
        return Ok(out);
    }
    out.push_str(
        "<table><tr><th>Submission</th><th>Set</th><th class=\"num\">Total</th>\
         <th>Subtasks</th></tr>\n",
    );
    let positions = grid_positions(problem);
    for (id, copies) in &differing {
        let present: Vec<(usize, &JudgedSubmission)> = copies
            .iter()
            .enumerate()
            .filter_map(|(i, c)| c.map(|c| (i, c)))
            .collect();
        for (k, (i, s)) in present.iter().enumerate() {
            out.push_str("<tr>");
            if k == 0 {
                let label = s
                    .label
                    .as_ref()
                    .map(|l| format!(" <span class=\"muted\">{}</span>", escape(l)))
                    .unwrap_or_default();
                let _ = write!(
                    out,
                    "<td rowspan=\"{}\"><b>{}</b>{label}</td>",
                    present.len() + 1,
                    escape(id)
                );
            }
            let _ = write!(
                out,
                "<td>{} {}</td><td class=\"num\">{}</td><td>",
                escape(&sets[*i].name),
                row_link(&positions, problem, *i, s, sets),
                points(s.total)
            );
            for cell in &s.subtasks {
                let _ = write!(
                    out,
                    "<span class=\"st st-{status}\" title=\"{title}\">{status}</span> ",
                    status = cell.status.as_str(),
                    title = escape(&format!("{}: {}", cell.name, cell.text)),
                );
            }
            out.push_str("</td></tr>\n");
        }
        let details = match budget.bytes > 0 {
            true => {
                let read = present
                    .iter()
                    .map(|(_, s)| rows.read(s.span))
                    .collect::<Result<Vec<_>>>()?;
                let details = format!(
                    "{}{}",
                    test_differences(&present, &read, sets)?,
                    code_differences(&present, &read, sets, &mut budget.diff_time)
                );
                budget.bytes = budget.bytes.saturating_sub(details.len());
                details
            }
            false => format!(
                "<p class=\"muted\">Its tests and code are left out: the page holds {} MiB of \
                 details at most. The results files have them all.</p>",
                DETAILS_BYTES >> 20
            ),
        };
        let _ = writeln!(out, "<tr><td colspan=\"3\">{details}</td></tr>");
    }
    out.push_str("</table>\n");
    Ok(out)
}

/// The tests whose status or score differ between the copies of a submission, as a table: a
/// test once, with every subtask it belongs to. A test runs once a judgement whatever subtasks
/// share it, so its outcome is the one it got where it was judged; a copy that judged it
/// nowhere (every subtask stopped early before it) tells nothing of it, and a test SKIPPED
/// by one copy and judged by another is no difference: the test that stopped that copy is.
fn test_differences(
    present: &[(usize, &JudgedSubmission)],
    read: &[crate::dataset::Row],
    sets: &[ResultSet],
) -> Result<String> {
    // per copy: status, score, time and message where it was judged.
    type Outcome = (Verdict, f64, Option<f64>, Option<String>);
    // test → (position of its first subtask, its subtasks, its outcome in each copy).
    type Copies = (usize, Vec<String>, Vec<Option<Outcome>>);
    let mut tests: HashMap<String, Copies> = HashMap::new();
    let mut order: HashMap<String, usize> = HashMap::new();
    for (k, row) in read.iter().enumerate() {
        for cell in subtask_cells(row)? {
            let next = order.len();
            let position = *order.entry(cell.name.clone()).or_insert(next);
            for test in cell.tests {
                let (first, subtasks, copies) = tests
                    .entry(test.name.clone())
                    .or_insert_with(|| (position, Vec::new(), vec![None; present.len()]));
                *first = (*first).min(position);
                if !subtasks.contains(&cell.name) {
                    subtasks.push(cell.name.clone());
                }
                let judged = !matches!(test.status, Verdict::Skipped);
                if judged && copies[k].is_none() {
                    copies[k] = Some((test.status, test.score, test.time, test.feedback));
                }
            }
        }
    }
    // Times always differ a little between runs: a test differs by its status and score.
    let verdict = |t: &Option<Outcome>| t.as_ref().map(|(status, score, ..)| (*status, *score));
    let mut differing: Vec<_> = tests
        .into_iter()
        .filter(|(_, (_, _, copies))| {
            let mut judged = copies.iter().filter_map(verdict);
            let first = judged.next();
            judged.any(|v| Some(v) != first)
        })
        .collect();
    differing.sort_by(|(a, (pa, ..)), (b, (pb, ..))| (pa, a).cmp(&(pb, b)));
    let outcome = |t: Option<Outcome>| match t {
        Some((status, score, time, message)) => format!(
            "<span class=\"st st-{0}\">{0}</span> {1}{2}{3}",
            status.as_str(),
            points(score),
            time.map(|t| format!(", {t:.3} s")).unwrap_or_default(),
            message
                .filter(|m| !m.trim().is_empty())
                .map(|m| format!("<div class=\"msg\">{}</div>", escape(&shortened(&m))))
                .unwrap_or_default()
        ),
        None => "not judged".into(),
    };
    let mut headers = vec!["Test".to_string(), "Subtasks".to_string()];
    headers.extend(present.iter().map(|(i, _)| sets[*i].name.clone()));
    let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
    let rows: Vec<Vec<String>> = differing
        .into_iter()
        .map(|(test, (_, subtasks, copies))| {
            let mut row = vec![escape(&test), escape(&subtasks.join(", "))];
            row.extend(copies.into_iter().map(outcome));
            row
        })
        .collect();
    Ok(format!(
        "<details open><summary>{} test result(s) differ</summary>{}</details>",
        rows.len(),
        table(&headers, &[], &rows)
    ))
}

/// `message` cut to [`MESSAGE_CHARS`] characters, saying so.
fn shortened(message: &str) -> String {
    shortened_to(message.trim_end(), MESSAGE_CHARS)
}

/// `text` cut to `chars` characters, `…` marking the cut.
fn shortened_to(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// A link to the copy `s` of set `i` in that set's own page: `<set>/report.html#s<problem>-<k>`,
/// the set's name percent-encoded (a name from a file name never becomes markup, a scheme or
/// another folder: every byte but letters, digits, `-` and `_` is encoded).
fn row_link(
    positions: &[HashMap<*const JudgedSubmission, usize>],
    problem: &ProblemAcross,
    i: usize,
    s: &JudgedSubmission,
    sets: &[ResultSet],
) -> String {
    let (Some(number), Some(&k)) = (problem.numbers[i], positions[i].get(&std::ptr::from_ref(s)))
    else {
        return String::new();
    };
    let folder: String = sets[i]
        .name
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    format!(
        "<a class=\"row\" href=\"{folder}/report.html#{}\">row</a>",
        row_anchor(number, k)
    )
}

/// Where each submission of the problem stands in each set's grid (its anchor's second part).
fn grid_positions(problem: &ProblemAcross) -> Vec<HashMap<*const JudgedSubmission, usize>> {
    problem
        .per_set
        .iter()
        .map(|per_set| match per_set {
            Some((_, subs)) => grid_order(subs)
                .into_iter()
                .enumerate()
                .map(|(k, s)| (std::ptr::from_ref(s), k))
                .collect(),
            None => HashMap::new(),
        })
        .collect()
}

/// The code of the copies side by side, each later copy against the first, when it differs: a
/// change of verdict with the same code is the judge's or the settings', one with new code may
/// be the code's.
fn code_differences(
    present: &[(usize, &JudgedSubmission)],
    read: &[crate::dataset::Row],
    sets: &[ResultSet],
    time_left: &mut Duration,
) -> String {
    let code = |row: &crate::dataset::Row| -> String {
        row.get("code")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let Some((first_set, _)) = present.first() else {
        return String::new();
    };
    let old = code(&read[0]);
    let mut out = String::new();
    for ((set, _), row) in present.iter().zip(read).skip(1) {
        let new = code(row);
        let (old_name, new_name) = (escape(&sets[*first_set].name), escape(&sets[*set].name));
        if old == new {
            let _ = write!(
                out,
                "<p class=\"muted\">The same code in {old_name} and {new_name}.</p>"
            );
            continue;
        }
        if time_left.is_zero() {
            let _ = write!(
                out,
                "<p class=\"muted\">The code differs between {old_name} and {new_name} (not \
                 shown: the page spends {} s on code diffs at most).</p>",
                DIFF_TIME.as_secs()
            );
            continue;
        }
        let started = Instant::now();
        let diff = similar::TextDiff::configure()
            .timeout(DIFF_DEADLINE.min(*time_left))
            .diff_lines(&old, &new);
        let (rendered, changed) = side_by_side(&diff, (&old_name, &new_name));
        *time_left = time_left.saturating_sub(started.elapsed());
        let _ = write!(
            out,
            "<details><summary>The code differs between {old_name} and {new_name}: {changed} \
             line(s)</summary>{rendered}</details>"
        );
    }
    out
}

/// A line diff as a table of two columns (line numbers beside each), changes and their
/// context only, at most [`DIFF_ROWS`] rows; and how many lines changed.
fn side_by_side(diff: &similar::TextDiff<'_, '_, '_, str>, names: (&str, &str)) -> (String, usize) {
    use similar::DiffTag;
    let (old, new) = (diff.old_slices(), diff.new_slices());
    let mut out = format!(
        "<table class=\"diff\"><tr><th></th><th>{}</th><th></th><th>{}</th></tr>",
        names.0, names.1
    );
    let mut shown = 0;
    let mut changed = 0;
    let line = |side: &[&str], at: Option<usize>, class: &str| match at {
        Some(at) => format!(
            "<td class=\"num\">{}</td><td class=\"{class}\">{}</td>",
            at + 1,
            escape(&shortened_to(
                side[at].trim_end_matches(['\n', '\r']),
                DIFF_LINE_CHARS
            ))
        ),
        None => "<td></td><td></td>".to_string(),
    };
    for (g, group) in diff.grouped_ops(DIFF_CONTEXT).iter().enumerate() {
        if g > 0 {
            out.push_str("<tr><td colspan=\"4\" class=\"muted\">⋯</td></tr>");
        }
        for op in group {
            let (tag, olds, news) = op.as_tag_tuple();
            if tag != DiffTag::Equal {
                changed += olds.len().max(news.len());
            }
            for k in 0..olds.len().max(news.len()) {
                if shown == DIFF_ROWS {
                    continue;
                }
                shown += 1;
                let at =
                    |range: &std::ops::Range<usize>| (k < range.len()).then(|| range.start + k);
                let (left, right) = match tag {
                    DiffTag::Equal => (line(old, at(&olds), ""), line(new, at(&news), "")),
                    _ => (line(old, at(&olds), "del"), line(new, at(&news), "ins")),
                };
                let _ = write!(out, "<tr>{left}{right}</tr>");
            }
        }
    }
    if shown == DIFF_ROWS {
        let _ = write!(
            out,
            "<tr><td colspan=\"4\" class=\"muted\">The first {DIFF_ROWS} rows are shown; the \
             results files hold both programs whole.</td></tr>"
        );
    }
    out.push_str("</table>");
    (out, changed)
}
