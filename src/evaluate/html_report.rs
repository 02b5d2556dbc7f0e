//! The HTML report of a dataset, `reports/<dataset>/report.html`: the page a researcher works
//! from. Per problem: the distribution of total scores, how often each subtask is solved, the
//! CPU time and memory of every test run as a share of the problem's limits (log scale, per
//! status), and a grid of submissions × subtasks coloured by status, each submission a row that
//! opens on its tests (status, time and memory against the limits, the checker's message), its
//! compiler output and its code (`html_submissions`).
//!
//! One self-contained file that works offline: inline CSS and SVG, a small inline script for
//! sorting and filtering the grid (a submission also opens without it, as the target of its
//! row's link), and a Content-Security-Policy that lets nothing else run or load. The page is
//! written a problem at a time, each submission's details read again from its row, so its size
//! in memory does not grow with the results.
//!
//! Every text that comes from a results file (ids, labels, code, messages, problem, subtask and
//! test names) is untrusted: it is escaped here, and in the charts by `plotters-svg`. No such
//! text ever becomes a link target, an attribute other than a quoted `title`, or markup: links
//! point only at the page's own anchors, made of letters, digits, `-` and `_`.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write;

use anyhow::{Context, Result};

use super::html::{
    escape, mean, mib, page_end, page_head, percent, seconds, status_legend, table, ALL_STATUSES,
};
use super::html_submissions::{submission_grid, DetailsBudget, DETAILS_SHOWN};
use super::overview::{stats_key, ProblemOverview};
use super::plots::{self, Histogram, SolveRate, StatusCurve};
use super::report_rows::JudgedSubmission;
use super::report_source::ResultsFiles;
use super::report_stats::{bin_low, score_bins, subtask_rates, Distribution, ProblemStats};

/// Name of the HTML report inside `reports/<dataset>/`.
pub const REPORT_HTML: &str = "report.html";

/// Writes the whole page of one dataset to `out`: `problems` pairs each problem's overview with
/// its submissions, in the order of the markdown reports; `stats` holds each problem's tests,
/// counted as the rows were read; `rows` reads each submission's row again for its details.
pub fn write_page(
    out: &mut impl Write,
    dataset: &str,
    problems: &[(ProblemOverview, Vec<&JudgedSubmission>)],
    stats: &HashMap<(i64, String), ProblemStats>,
    rows: &ResultsFiles,
) -> Result<()> {
    let submissions: usize = problems.iter().map(|(o, _)| o.submissions).sum();
    let compiling: usize = problems.iter().map(|(o, _)| o.compiling).sum();
    let mut page = page_head(&format!("ioi-run report: {dataset}"));
    let _ = write!(
        page,
        "<h1>{name}</h1>\n<p class=\"muted\">{submissions} submissions on {count} problem{plural}, \
         {compiling} compiling. Each problem lists its submissions below its charts: click a \
         row to open its tests, compiler output and code; click a column's header to sort.</p>\n",
        name = escape(dataset),
        count = problems.len(),
        plural = if problems.len() == 1 { "" } else { "s" },
    );
    let overview: Vec<Vec<String>> = problems
        .iter()
        .map(|(o, subs)| {
            vec![
                format!("<a href=\"#{}\">{}</a>", o.anchor(), escape(&o.title())),
                escape(o.day.as_deref().unwrap_or("-")),
                o.submissions.to_string(),
                o.compiling.to_string(),
                format!("{:.2}", mean(subs.iter().map(|s| s.total))),
                format!("{:.2}", o.best_submission),
                format!("{:.2}", o.limit_50_score),
                format!("{:.2}", o.no_limit_score),
            ]
        })
        .collect();
    page.push_str(&table(
        &[
            "Problem",
            "Day",
            "Submissions",
            "Compiling",
            "Mean score",
            "Best submission",
            "Score (50 limit)",
            "Score (no limit)",
        ],
        &[false, false, true, true, true, true, true, true],
        &overview,
    ));
    page.push_str(&status_legend());
    let context = || format!("cannot write the HTML report of {dataset}");
    out.write_all(page.as_bytes()).with_context(context)?;
    let empty = ProblemStats::default();
    let mut budget = DetailsBudget::new(DETAILS_SHOWN);
    for (number, (overview, subs)) in problems.iter().enumerate() {
        let problem_stats = stats
            .get(&stats_key(overview.year, &overview.problem_id))
            .unwrap_or(&empty);
        let section = problem_section(overview, subs, problem_stats)?;
        out.write_all(section.as_bytes()).with_context(context)?;
        submission_grid(out, number, subs, problem_stats, rows, &mut budget)
            .with_context(context)?;
        out.write_all(b"</section>\n").with_context(context)?;
    }
    if budget.omitted() > 0 {
        eprintln!(
            "warning: the HTML report of {dataset} leaves out the details of {} submissions \
             (a page keeps {} MiB of them; the results file has them all)",
            budget.omitted(),
            DETAILS_SHOWN >> 20
        );
    }
    out.write_all(page_end().as_bytes()).with_context(context)?;
    Ok(())
}

/// The charts and tables of a problem, before its grid of submissions.
fn problem_section(
    overview: &ProblemOverview,
    subs: &[&JudgedSubmission],
    stats: &ProblemStats,
) -> Result<String> {
    let rates = subtask_rates(subs);
    let max_points: f64 = rates
        .iter()
        .map(|r| r.points)
        .sum::<f64>()
        .max(subs.iter().map(|s| s.total).fold(0.0, f64::max));
    let totals: Vec<f64> = subs.iter().map(|s| s.total).collect();
    let bins = score_bins(&totals, max_points);
    let mut out = format!(
        "<section id=\"{id}\"><h2>{title}</h2>\n<p>{n} submissions, {compiling} compiling; best \
         submission <b>{best:.2}</b>; score with 50 submissions (round robin) <b>{limit:.2}</b>, \
         with no limit <b>{all:.2}</b>.</p>\n\
         <figure><figcaption>Total score of {n} submissions</figcaption>{hist}</figure>\n",
        id = overview.anchor(),
        title = escape(&overview.title()),
        n = subs.len(),
        compiling = overview.compiling,
        best = overview.best_submission,
        limit = overview.limit_50_score,
        all = overview.no_limit_score,
        hist = plots::score_histogram(&Histogram {
            bins: &bins,
            max_points,
            most: 0,
        })?,
    );
    let solve: Vec<SolveRate> = rates
        .iter()
        .map(|r| SolveRate {
            name: &r.name,
            solved: r.solved as f64 / r.submissions.max(1) as f64,
            partial: r.partial as f64 / r.submissions.max(1) as f64,
        })
        .collect();
    let _ = writeln!(
        out,
        "<figure><figcaption>Subtasks solved</figcaption>{}</figure>",
        plots::solve_rates(&solve)?
    );
    out.push_str(&usage_figures(stats)?);
    let rows: Vec<Vec<String>> = rates
        .iter()
        .map(|r| {
            vec![
                escape(&r.name),
                format!("{}", r.points),
                format!("{}/{}", r.solved, r.submissions),
                r.partial.to_string(),
                percent(r.solved, r.submissions),
            ]
        })
        .collect();
    out.push_str(&table(
        &["Subtask", "Points", "Solved", "Partly", "Solve rate"],
        &[false, true, true, true, true],
        &rows,
    ));
    let bins_rows: Vec<Vec<String>> = bins
        .iter()
        .map(|(low, high, n)| vec![format!("{low:.1} – {high:.1}"), n.to_string()])
        .collect();
    let _ = writeln!(
        out,
        "<details><summary>Score distribution</summary>{}</details>",
        table(&["Total score", "Submissions"], &[false, true], &bins_rows)
    );
    out.push_str(&usage_table(stats));
    Ok(out)
}

/// The curves of a distribution, one per status that has runs.
fn curves(distribution: &Distribution) -> Vec<StatusCurve<'_>> {
    ALL_STATUSES
        .iter()
        .filter_map(|status| {
            distribution
                .by_status
                .get(status)
                .map(|counts| StatusCurve {
                    status: status.as_str(),
                    color: plots::status_color(*status),
                    counts,
                })
        })
        .collect()
}

/// The time and memory of every test run as a share of the limits, per status.
fn usage_figures(stats: &ProblemStats) -> Result<String> {
    if stats.usage.is_empty() {
        return Ok("<p class=\"muted\">No test of this problem has a measured time.</p>\n".into());
    }
    let limit_text = |limit: Option<String>| limit.unwrap_or_else(|| "unknown".into());
    let mut out = String::from(
        "<p class=\"muted\">Every test run, counted by the share of the problem's limit it used \
         (log scale: 1% is a hundredth of the limit), one line per status; the limit is the red \
         line.</p>\n",
    );
    let figure = |caption: String, distribution: &Distribution, what: &str| -> Result<String> {
        Ok(match distribution.is_empty() {
            true => {
                format!("<p class=\"muted\">{caption}: the results do not say the limit.</p>\n")
            }
            false => format!(
                "<figure><figcaption>{caption}</figcaption>{}</figure>\n",
                plots::share_of_limit(&curves(distribution), bin_low, what)?
            ),
        })
    };
    out.push_str(&figure(
        format!(
            "CPU time per test (limit: {})",
            limit_text(stats.time_limit.map(seconds))
        ),
        &stats.time,
        "CPU time, share of the limit",
    )?);
    out.push_str(&figure(
        format!(
            "Peak memory per test (limit: {})",
            limit_text(stats.memory_limit.map(|m| mib(m as f64)))
        ),
        &stats.memory,
        "peak memory, share of the limit",
    )?);
    Ok(out)
}

/// Per test, the least and most time and memory over the submissions that ran it.
fn usage_table(stats: &ProblemStats) -> String {
    if stats.usage.is_empty() {
        return String::new();
    }
    let rows: Vec<Vec<String>> = stats
        .usage
        .iter()
        .map(|u| {
            vec![
                escape(&u.name),
                u.runs.to_string(),
                seconds(u.min_time),
                seconds(u.max_time),
                mib(u.max_memory as f64),
                u.time_limit_exceeded.to_string(),
                u.memory_limit_exceeded.to_string(),
            ]
        })
        .collect();
    format!(
        "<details><summary>Tests: time and memory of {} tests</summary>{}</details>\n",
        stats.usage.len(),
        table(
            &[
                "Test",
                "Runs",
                "Least time",
                "Most time",
                "Most memory",
                "TLE",
                "MLE"
            ],
            &[false, true, true, true, true, true, true],
            &rows
        )
    )
}
