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

use super::html_submissions::{submission_grid, DetailsBudget, DETAILS_SHOWN};
use super::plots::{self, Histogram, SolveRate, StatusCurve};
use super::report_source::ResultsFiles;
use super::report_stats::{bin_low, score_bins, subtask_rates, Distribution, ProblemStats};
use super::reports::{JudgedSubmission, ProblemOverview};
use crate::score::Verdict;

/// Name of the HTML report inside `reports/<dataset>/`.
pub const REPORT_HTML: &str = "report.html";

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

/// The page's style: readable type at normal zoom (15 px text, 14 px in tables and charts).
const STYLE: &str = "\
body{font:15px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}\
h1{margin-bottom:.2em}h2{margin-top:2em;border-bottom:1px solid #ccc}h4{margin:.8em 0 .3em}\
table{border-collapse:collapse;margin:.6em 0;font-size:14px}\
th,td{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}\
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}\
figure{margin:.5em 0;display:inline-block;vertical-align:top}\
figcaption{font-weight:600;margin-bottom:.3em}\
svg{max-width:100%;height:auto}.muted{color:#555}\
.st{text-align:center;font-weight:600;min-width:3em}\
.st-AC{background:#2e7d32;color:#fff}.st-PA{background:#f9a825;color:#222}\
.st-WA{background:#c62828;color:#fff}.st-TLE{background:#ef6c00;color:#fff}\
.st-MLE{background:#6a1b9a;color:#fff}.st-RE{background:#ad1457;color:#fff}\
.st-CE{background:#616161;color:#fff}.st-SKIPPED{background:#e0e0e0;color:#222}\
.legend i{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px;vertical-align:-1px}\
table.grid tr.r{cursor:pointer}table.grid tr.r:hover td{outline:1px solid #333}\
table.grid th{cursor:pointer;position:sticky;top:0;background:#f5f5f5}\
tr.d{display:none}tbody.open tr.d,tbody:target tr.d{display:table-row}\
tbody.s{scroll-margin-top:4em}tbody:target tr.r td{box-shadow:inset 0 2px #1565c0}\
tr.d>td{background:#fafafa;padding:.6em 1em}\
pre{background:#f4f4f4;border:1px solid #ddd;padding:.5em;max-height:28em;overflow:auto;\
font-size:13.5px;white-space:pre-wrap;word-break:break-all}\
.controls{margin:.6em 0}.controls input,.controls select{font:inherit;margin-right:.6em}\
.over{color:#c62828;font-weight:600}";

/// Sorting (click a column's header) and filtering (by text, by a status any subtask has) of
/// each problem's grid, and opening a submission by clicking its row. It reads the page's own
/// `data-` attributes and text and only moves, shows or hides rows: nothing from the results is
/// ever parsed as markup.
const SCRIPT: &str = r#"(function(){
function key(b,i){var c=b.rows[0].cells[i],v=c.getAttribute('data-v');return v===null?c.textContent.toLowerCase():parseFloat(v);}
document.querySelectorAll('section').forEach(function(sec){
var t=sec.querySelector('table.grid');if(!t)return;
var q=sec.querySelector('input.q'),s=sec.querySelector('select.f'),n=sec.querySelector('.shown');
function filter(){var x=q.value.toLowerCase(),w=s.value,k=0;
Array.prototype.forEach.call(t.tBodies,function(b){var ok=(!x||b.rows[0].textContent.toLowerCase().indexOf(x)>=0)&&(!w||(' '+b.getAttribute('data-s')+' ').indexOf(' '+w+' ')>=0);b.hidden=!ok;if(ok)k++;});n.textContent=k;}
q.addEventListener('input',filter);s.addEventListener('change',filter);
t.tHead.querySelectorAll('th').forEach(function(th,i){th.addEventListener('click',function(){
var up=th.getAttribute('data-dir')==='desc';th.setAttribute('data-dir',up?'asc':'desc');
var bs=Array.prototype.slice.call(t.tBodies);
bs.sort(function(a,b){var x=key(a,i),y=key(b,i);return (x<y?-1:x>y?1:0)*(up?1:-1);});
bs.forEach(function(b){t.appendChild(b);});});});
Array.prototype.forEach.call(t.tBodies,function(b){b.rows[0].addEventListener('click',function(e){
if(e.target.tagName!=='A')b.classList.toggle('open');});});
});})();"#;

/// The nonce that lets the page's own script run under its Content-Security-Policy: derived
/// from the script, so that the same results give the same page.
fn nonce() -> String {
    blake3::hash(SCRIPT.as_bytes()).to_hex()[..32].to_string()
}

/// The document's head and the start of its body: `title` is escaped here.
pub fn page_head(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; img-src data:; script-src 'nonce-{nonce}'\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <meta name=\"referrer\" content=\"no-referrer\">\
         <title>{title}</title><style>{STYLE}</style></head>\n<body>\n",
        nonce = nonce(),
        title = escape(title),
    )
}

/// The page's script and the end of the document.
pub fn page_end() -> String {
    format!(
        "<script nonce=\"{}\">{SCRIPT}</script>\n</body></html>\n",
        nonce()
    )
}

/// The statuses and their colours, as the grid and the charts show them.
pub fn status_legend() -> String {
    let mut out = String::from("<p class=\"legend\">Statuses:");
    for status in ALL_STATUSES {
        let _ = write!(out, "<span class=\"st-{0}\">{0}</span>", status.as_str());
    }
    out.push_str("</p>\n");
    out
}

/// Every status, best first, as the page lists them.
pub const ALL_STATUSES: [Verdict; 8] = [
    Verdict::Accepted,
    Verdict::Partial,
    Verdict::WrongAnswer,
    Verdict::TimeLimit,
    Verdict::MemoryLimit,
    Verdict::RuntimeError,
    Verdict::CompilationError,
    Verdict::Skipped,
];

/// Seconds with three decimals.
pub fn seconds(x: f64) -> String {
    format!("{x:.3} s")
}

/// Bytes as MiB with one decimal.
pub fn mib(bytes: f64) -> String {
    format!("{:.1} MiB", bytes / (1u64 << 20) as f64)
}

pub fn percent(part: usize, whole: usize) -> String {
    match whole {
        0 => "-".into(),
        _ => format!("{:.1}%", 100.0 * part as f64 / whole as f64),
    }
}

/// A table; cells are already HTML, `numeric` marks right-aligned columns.
pub fn table(headers: &[&str], numeric: &[bool], rows: &[Vec<String>]) -> String {
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

/// A problem's title: `2024: nile`, or the id alone without a year.
pub fn title(o: &ProblemOverview) -> String {
    match o.year {
        0 => o.problem_id.clone(),
        year => format!("{year}: {}", o.problem_id),
    }
}

pub fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    match n {
        0 => 0.0,
        n => sum / n as f64,
    }
}

/// The key of a problem's [`ProblemStats`].
pub fn stats_key(year: i64, problem_id: &str) -> (i64, String) {
    (year, problem_id.to_string())
}

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
        id = anchor(overview),
        title = escape(&title(overview)),
        n = subs.len(),
        compiling = overview.compiling,
        best = overview.best_submission,
        limit = overview.limit_50_score,
        all = overview.no_limit_score,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_leaves_no_markup() {
        assert_eq!(
            escape("<a href='x'>\"&\"</a>"),
            "&lt;a href=&#39;x&#39;&gt;&quot;&amp;&quot;&lt;/a&gt;"
        );
    }

    #[test]
    fn the_script_builds_no_markup_from_text() {
        for risky in [
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "eval",
            "href",
        ] {
            assert!(!SCRIPT.contains(risky), "{risky}");
        }
        assert!(page_head("x").contains(&format!("'nonce-{}'", nonce())));
        assert!(page_end().contains(&format!("<script nonce=\"{}\">", nonce())));
    }
}
