//! The HTML report of a dataset, `reports/<dataset>/report.html`: people compare models and
//! debug problems by looking, so next to the markdown tables it draws, per problem, the
//! distribution of total scores, how often each subtask is solved, and how close each test came
//! to the time and memory limits. One self-contained file (inline CSS and SVG, no script, no
//! link to anything online), built like the markdown reports from results rows alone.
//!
//! Every text that comes from a results file (ids, labels, problem, subtask and test names) is
//! untrusted: it is escaped here, and in the charts by `plotters-svg`.

use std::collections::HashMap;
use std::fmt::Write;

use anyhow::Result;

use super::plots::{self, Histogram, SolveRate, Usage};
use super::reports::{JudgedSubmission, ProblemOverview};
use crate::score::Verdict;

/// Name of the HTML report inside `reports/<dataset>/`.
pub const REPORT_HTML: &str = "report.html";

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

/// Per test (in order of first appearance), the time and memory its runs used. A test shared
/// by several subtasks counts once per submission.
pub fn test_usage(submissions: &[&JudgedSubmission]) -> Vec<TestUsage> {
    let mut usage: Vec<TestUsage> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for submission in submissions {
        let mut seen = std::collections::HashSet::new();
        for test in submission.subtasks.iter().flat_map(|s| &s.tests) {
            let Some(time) = test.time else { continue };
            if !seen.insert(test.name.as_str()) {
                continue;
            }
            let i = *index.entry(&test.name).or_insert_with(|| {
                usage.push(TestUsage {
                    name: test.name.clone(),
                    runs: 0,
                    min_time: f64::INFINITY,
                    max_time: 0.0,
                    min_memory: u64::MAX,
                    max_memory: 0,
                    time_limit_exceeded: 0,
                    memory_limit_exceeded: 0,
                });
                usage.len() - 1
            });
            let u = &mut usage[i];
            u.runs += 1;
            u.min_time = u.min_time.min(time);
            u.max_time = u.max_time.max(time);
            let memory = test.memory.unwrap_or(0);
            u.min_memory = u.min_memory.min(memory);
            u.max_memory = u.max_memory.max(memory);
            u.time_limit_exceeded += usize::from(test.status == Verdict::TimeLimit);
            u.memory_limit_exceeded += usize::from(test.status == Verdict::MemoryLimit);
        }
    }
    usage
}

/// `&`, `<`, `>`, `"` and `'` as entities: safe in text and in quoted attributes.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The anchor of a problem's section: its report's name without `.md`, letters, digits, `-`
/// and `_` only.
pub fn anchor(overview: &ProblemOverview) -> String {
    let name = overview.report_name();
    let stem = name.strip_suffix(".md").unwrap_or(&name);
    stem.chars()
        .map(
            |c| match c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                true => c,
                false => '_',
            },
        )
        .collect()
}

const STYLE: &str = "\
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:980px;color:#222;padding:0 1em}\
h1{margin-bottom:.2em}h2{margin-top:2em;border-bottom:1px solid #ccc}\
table{border-collapse:collapse;margin:.6em 0;font-size:14px}\
th,td{border:1px solid #ccc;padding:3px 8px;text-align:left}\
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}\
figure{margin:.5em 0;display:inline-block;vertical-align:top}\
figcaption{font-weight:600;margin-bottom:.3em}\
svg{max-width:100%;height:auto}.muted{color:#666}";

/// Seconds with three decimals.
fn seconds(x: f64) -> String {
    format!("{x:.3} s")
}

/// Bytes as MiB with one decimal.
fn mib(bytes: f64) -> String {
    format!("{:.1} MiB", bytes / (1u64 << 20) as f64)
}

fn percent(part: usize, whole: usize) -> String {
    match whole {
        0 => "-".into(),
        _ => format!("{:.1}%", 100.0 * part as f64 / whole as f64),
    }
}

/// A table; cells are already HTML, `numeric` marks right-aligned columns.
fn table(headers: &[&str], numeric: &[bool], rows: &[Vec<String>]) -> String {
    let class = |i: usize| match numeric.get(i) {
        Some(true) => " class=\"num\"",
        _ => "",
    };
    let mut out = String::from("<table><tr>");
    for (i, h) in headers.iter().enumerate() {
        let _ = write!(out, "<th{}>{}</th>", class(i), escape(h));
    }
    out.push_str("</tr>\n");
    for row in rows {
        out.push_str("<tr>");
        for (i, cell) in row.iter().enumerate() {
            let _ = write!(out, "<td{}>{cell}</td>", class(i));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    out
}

/// The whole page of one dataset: `problems` pairs each problem's overview with its
/// submissions, in the order of the markdown reports.
pub fn render_html(
    dataset: &str,
    problems: &[(ProblemOverview, Vec<&JudgedSubmission>)],
) -> Result<String> {
    let submissions: usize = problems.iter().map(|(o, _)| o.submissions).sum();
    let compiling: usize = problems.iter().map(|(o, _)| o.compiling).sum();
    let mut page = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>ioi-run report: {name}</title><style>{STYLE}</style></head>\n<body>\n\
         <h1>{name}</h1>\n<p class=\"muted\">{submissions} submissions on {count} problem{plural}, \
         {compiling} compiling. Tables: <a href=\"README.md\">README.md</a>.</p>\n",
        name = escape(dataset),
        count = problems.len(),
        plural = if problems.len() == 1 { "" } else { "s" },
    );
    let rows: Vec<Vec<String>> = problems
        .iter()
        .map(|(o, subs)| {
            vec![
                format!("<a href=\"#{}\">{}</a>", anchor(o), escape(&title(o))),
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
        &rows,
    ));
    for (overview, subs) in problems {
        page.push_str(&problem_section(overview, subs)?);
    }
    page.push_str("</body></html>\n");
    Ok(page)
}

fn title(o: &ProblemOverview) -> String {
    match o.year {
        0 => o.problem_id.clone(),
        year => format!("{year}: {}", o.problem_id),
    }
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    match n {
        0 => 0.0,
        n => sum / n as f64,
    }
}

fn problem_section(overview: &ProblemOverview, subs: &[&JudgedSubmission]) -> Result<String> {
    let rates = subtask_rates(subs);
    let max_points: f64 = rates
        .iter()
        .map(|r| r.points)
        .sum::<f64>()
        .max(subs.iter().map(|s| s.total).fold(0.0, f64::max));
    let totals: Vec<f64> = subs.iter().map(|s| s.total).collect();
    let bins = score_bins(&totals, max_points);
    let mut out = format!(
        "<section id=\"{id}\"><h2>{title}</h2>\n<p class=\"muted\">Table: <a href=\"{link}\">{md}</a>\
         </p>\n<figure><figcaption>Total score of {n} submissions</figcaption>{hist}</figure>\n",
        id = anchor(overview),
        title = escape(&title(overview)),
        md = escape(&overview.report_name()),
        link = escape(&overview.report_link()),
        n = subs.len(),
        hist = plots::score_histogram(&Histogram {
            bins: &bins,
            max_points,
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
    out.push_str(&usage_figures(subs)?);
    out.push_str("</section>\n");
    Ok(out)
}

/// The time and memory charts of a problem's tests and their table.
fn usage_figures(subs: &[&JudgedSubmission]) -> Result<String> {
    let usage = test_usage(subs);
    if usage.is_empty() {
        return Ok("<p class=\"muted\">No test of this problem has a measured time.</p>\n".into());
    }
    let time_limit = subs.iter().find_map(|s| s.time_limit);
    let memory_limit = subs.iter().find_map(|s| s.memory_limit);
    let limit_text = |limit: Option<String>| limit.unwrap_or_else(|| "unknown".into());
    let times: Vec<Usage> = usage
        .iter()
        .map(|u| Usage {
            name: &u.name,
            min: u.min_time,
            max: u.max_time,
            over_limit: u.time_limit_exceeded > 0,
        })
        .collect();
    let mem = |b: u64| b as f64 / (1u64 << 20) as f64;
    let memories: Vec<Usage> = usage
        .iter()
        .map(|u| Usage {
            name: &u.name,
            min: mem(u.min_memory),
            max: mem(u.max_memory),
            over_limit: u.memory_limit_exceeded > 0,
        })
        .collect();
    let mut out = format!(
        "<p class=\"muted\">Per test, over the submissions that ran it: a grey line from the \
         least to the most, a dot at the most (red when a run exceeded the limit), the limit as \
         a red line.</p>\n\
         <figure><figcaption>CPU time per test (limit: {})</figcaption>{}</figure>\n\
         <figure><figcaption>Peak memory per test (limit: {})</figcaption>{}</figure>\n",
        limit_text(time_limit.map(seconds)),
        plots::usage_against_limit(&times, time_limit, "CPU seconds")?,
        limit_text(memory_limit.map(|m| mib(m as f64))),
        plots::usage_against_limit(&memories, memory_limit.map(mem), "MiB")?,
    );
    let rows: Vec<Vec<String>> = usage
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
    let _ = writeln!(
        out,
        "<details><summary>Tests: time and memory of {} tests</summary>{}</details>",
        usage.len(),
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
    );
    Ok(out)
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
    fn escaping_leaves_no_markup() {
        assert_eq!(
            escape("<a href='x'>\"&\"</a>"),
            "&lt;a href=&#39;x&#39;&gt;&quot;&amp;&quot;&lt;/a&gt;"
        );
    }
}
