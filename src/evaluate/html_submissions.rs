//! The grid of a problem's submissions in the HTML report: one row per submission (sorted by
//! total, as the markdown table), one cell per subtask coloured by its status whose tooltip
//! gives its score, time and memory, and under each row its details, shown when the row is
//! clicked or is the page's target: every test's status, score, CPU time and memory against the
//! problem's limits and message, the compiler's output, and the code.
//!
//! The details come from the submission's row, read again here, so that only one row's tests
//! and code are in memory at a time. Every text of a row is escaped; long texts are cut (a
//! results file is untrusted and a page of 100 000 submissions must still open).

use std::fmt::Write as _;
use std::io::Write;

use anyhow::Result;
use serde_json::Value;

use super::html::{escape, mib, seconds};
use super::overview::points;
use super::report_rows::{subtask_cells, JudgedSubmission, SubtaskCell, TestMeasure};
use super::report_source::ResultsFiles;
use super::report_stats::ProblemStats;
use crate::score::Verdict;

/// The most of a submission's code the page shows.
const CODE_SHOWN: usize = 256 << 10;
/// The most of one test's message (or of the compiler's output) the page shows.
const MESSAGE_SHOWN: usize = 8 << 10;

/// The most the details of submissions (tests, compiler output, code) take in one page: a page
/// of a whole evaluation (100 000 submissions) must still open in a browser. Past it, a row
/// keeps its grid cells and says where its details are (the results file holds them all).
pub const DETAILS_SHOWN: usize = 96 << 20;

/// What is left of [`DETAILS_SHOWN`] for the rest of a page, and how many rows went without.
#[derive(Debug)]
pub struct DetailsBudget {
    left: usize,
    omitted: usize,
}

impl DetailsBudget {
    /// A page's budget of `bytes` of details.
    pub fn new(bytes: usize) -> DetailsBudget {
        DetailsBudget {
            left: bytes,
            omitted: 0,
        }
    }

    /// Whether the next row's details may still be written (then [`DetailsBudget::spend`] what
    /// they took); a row refused is counted as omitted.
    fn allows(&mut self) -> bool {
        if self.left == 0 {
            self.omitted += 1;
            return false;
        }
        true
    }

    fn spend(&mut self, bytes: usize) {
        self.left = self.left.saturating_sub(bytes);
    }

    /// Rows whose details the page left out.
    pub fn omitted(&self) -> usize {
        self.omitted
    }
}

/// The first `limit` bytes of `text` (cut at a character), and a note when it was cut.
fn cut(text: &str, limit: usize) -> (&str, Option<String>) {
    if text.len() <= limit {
        return (text, None);
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let note = format!("… (the first {end} of {} bytes)", text.len());
    (&text[..end], Some(note))
}

/// `used` as a percentage of `limit`, when both are known.
fn share(used: Option<f64>, limit: Option<f64>) -> Option<f64> {
    match (used, limit) {
        (Some(used), Some(limit)) if limit > 0.0 => Some(100.0 * used / limit),
        _ => None,
    }
}

/// `12.5%` (over 100% in the limit's colour), or nothing.
fn share_text(share: Option<f64>) -> String {
    match share {
        Some(p) if p > 100.0 => format!("<span class=\"over\">{p:.1}%</span>"),
        Some(p) => format!("{p:.1}%"),
        None => String::new(),
    }
}

/// A time (and its share of the limit), or `-`.
fn time_text(time: Option<f64>, limit: Option<f64>) -> String {
    match time {
        Some(t) => match share(Some(t), limit) {
            Some(p) => format!("{} ({})", seconds(t), share_text(Some(p))),
            None => seconds(t),
        },
        None => "-".into(),
    }
}

/// A memory (and its share of the limit), or `-`.
fn memory_text(memory: Option<u64>, limit: Option<u64>) -> String {
    match memory {
        Some(m) => match share(Some(m as f64), limit.map(|l| l as f64)) {
            Some(p) => format!("{} ({})", mib(m as f64), share_text(Some(p))),
            None => mib(m as f64),
        },
        None => "-".into(),
    }
}

/// Writes the grid of problem number `number`: its filter controls, its header and one body per
/// submission.
pub fn submission_grid(
    out: &mut impl Write,
    number: usize,
    subs: &[&JudgedSubmission],
    stats: &ProblemStats,
    rows: &ResultsFiles,
    budget: &mut DetailsBudget,
) -> Result<()> {
    let sorted = grid_order(subs);
    let subtasks = subtask_names(subs);
    let mut head = String::from(
        "<h3>Submissions</h3>\n<div class=\"controls\"><input class=\"q\" type=\"search\" \
         placeholder=\"filter by id or label\" aria-label=\"filter by id or label\">\
         <select class=\"f\" aria-label=\"status\"><option value=\"\">any status</option>",
    );
    for status in super::html::ALL_STATUSES {
        let _ = write!(
            head,
            "<option value=\"{0}\">a subtask {0}</option>",
            status.as_str()
        );
    }
    let _ = write!(
        head,
        "</select><span class=\"shown\">{}</span> of {} shown</div>\n\
         <table class=\"grid\"><thead><tr><th class=\"num\">#</th><th>Submission</th>\
         <th>Target</th><th class=\"num\">Total</th><th class=\"num\">Most time</th>\
         <th class=\"num\">Most memory</th>",
        sorted.len(),
        sorted.len()
    );
    for name in &subtasks {
        let _ = write!(head, "<th>{}</th>", escape(name));
    }
    head.push_str("</tr></thead>\n");
    out.write_all(head.as_bytes())?;
    let columns = 6 + subtasks.len();
    for (k, submission) in sorted.iter().enumerate() {
        let mut body = submission_row(number, k, submission, &subtasks, stats);
        let _ = write!(body, "<tr class=\"d\"><td colspan=\"{columns}\">");
        if budget.allows() {
            let start = body.len();
            let row = rows.read(submission.span)?;
            details(&mut body, &row, submission, stats)?;
            budget.spend(body.len() - start);
        } else {
            let _ = write!(
                body,
                "<p>The details of this submission are left out: the page holds {} MiB of \
                 details at most. The results file has them all.</p>",
                DETAILS_SHOWN >> 20
            );
        }
        body.push_str("</td></tr></tbody>\n");
        out.write_all(body.as_bytes())?;
    }
    out.write_all(b"</table>\n")?;
    Ok(())
}

/// A problem's submissions in the order of its grid: by total, highest first (ties as given).
pub(super) fn grid_order<'a>(subs: &[&'a JudgedSubmission]) -> Vec<&'a JudgedSubmission> {
    let mut sorted: Vec<&JudgedSubmission> = subs.to_vec();
    sorted.sort_by(|a, b| {
        b.total
            .partial_cmp(&a.total)
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    sorted
}

/// The anchor of the `k`th submission of the grid of problem `number` on a dataset's page.
pub(super) fn row_anchor(number: usize, k: usize) -> String {
    format!("s{number}-{k}")
}

/// Subtask names in order of first appearance.
fn subtask_names<'a>(subs: &[&'a JudgedSubmission]) -> Vec<&'a str> {
    let mut names: Vec<&str> = Vec::new();
    for cell in subs.iter().flat_map(|s| &s.subtasks) {
        if !names.contains(&cell.name.as_str()) {
            names.push(&cell.name);
        }
    }
    names
}

/// The opening of a submission's body and its row in the grid.
fn submission_row(
    number: usize,
    k: usize,
    s: &JudgedSubmission,
    subtasks: &[&str],
    stats: &ProblemStats,
) -> String {
    let anchor = row_anchor(number, k);
    let mut statuses: Vec<&str> = s.subtasks.iter().map(|c| c.status.as_str()).collect();
    statuses.sort_unstable();
    statuses.dedup();
    let mut out = format!(
        "<tbody class=\"s\" id=\"{anchor}\" data-s=\"{statuses}\"><tr class=\"r\">\
         <td class=\"num\" data-v=\"{rank}\">{rank}</td>\
         <td><a href=\"#{anchor}\">{id}</a>{label}</td><td>{target}</td>\
         <td class=\"num\" data-v=\"{total}\">{total_text}</td>\
         <td class=\"num\" data-v=\"{time}\">{time_text}</td>\
         <td class=\"num\" data-v=\"{memory}\">{memory_text}</td>",
        statuses = statuses.join(" "),
        rank = k + 1,
        id = escape(&s.id),
        label = match &s.label {
            Some(label) => format!(" <span class=\"muted\">{}</span>", escape(label)),
            None => String::new(),
        },
        target = escape(s.target_subtask.as_deref().unwrap_or("-")),
        total = s.total,
        total_text = points(s.total),
        time = s.max_time.unwrap_or(-1.0),
        time_text = time_text(s.max_time, stats.time_limit),
        memory = s.max_memory.map_or(-1.0, |m| m as f64),
        memory_text = memory_text(s.max_memory, stats.memory_limit),
    );
    for name in subtasks {
        match s.subtasks.iter().find(|c| c.name == *name) {
            Some(cell) => out.push_str(&subtask_cell(cell, stats)),
            None => out.push_str("<td data-v=\"-1\">-</td>"),
        }
    }
    out.push_str("</tr>\n");
    out
}

/// A subtask's cell: its weighted score and its status, coloured by status (the letters say it
/// without colour), with its numbers on hover.
fn subtask_cell(cell: &SubtaskCell, stats: &ProblemStats) -> String {
    let title = format!(
        "{}: {}; most time {}; most memory {}",
        cell.name,
        cell.text,
        strip_tags(&time_text(cell.max_time, stats.time_limit)),
        strip_tags(&memory_text(cell.max_memory, stats.memory_limit)),
    );
    format!(
        "<td class=\"st st-{status}\" data-v=\"{v}\" title=\"{title}\">{text}<small>{status}</small></td>",
        status = cell.status.as_str(),
        v = cell.weighted_score,
        title = escape(&title),
        text = points(cell.weighted_score),
    )
}

/// The text of our own markup (the share spans), for a tooltip.
fn strip_tags(html: &str) -> String {
    html.replace("<span class=\"over\">", "")
        .replace("</span>", "")
}

/// A submission's details: its tests, the compiler's output and its code.
fn details(
    out: &mut String,
    row: &crate::dataset::Row,
    s: &JudgedSubmission,
    stats: &ProblemStats,
) -> Result<()> {
    let cells = subtask_cells(row)?;
    let _ = write!(
        out,
        "<p><b>{id}</b>{label}: total <b>{total}</b>; target subtask {target}; {compiles}; \
         limits {time} CPU, {memory}.</p>\n<h4>Tests</h4>\n<table><tr><th>Subtask</th><th>Test</th>\
         <th>Status</th><th class=\"num\">Score</th><th class=\"num\">CPU time</th>\
         <th class=\"num\">Memory</th><th>Message</th></tr>\n",
        id = escape(&s.id),
        label = match &s.label {
            Some(label) => format!(" ({})", escape(label)),
            None => String::new(),
        },
        total = points(s.total),
        target = escape(s.target_subtask.as_deref().unwrap_or("none")),
        compiles = match (s.has_code, s.code_compiles) {
            (false, _) => "no code",
            (true, true) => "compiles",
            (true, false) => "does not compile",
        },
        time = stats.time_limit.map_or("unknown".into(), seconds),
        memory = stats
            .memory_limit
            .map_or("unknown".into(), |m| mib(m as f64)),
    );
    let mut compiler_output: Option<&str> = None;
    for cell in &cells {
        for test in &cell.tests {
            if test.status == Verdict::CompilationError && compiler_output.is_none() {
                compiler_output = test.feedback.as_deref();
            }
            test_row(out, cell, test, stats);
        }
        if cell.tests.is_empty() {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td colspan=\"6\" class=\"muted\">no test results</td></tr>",
                escape(&cell.name)
            );
        }
    }
    out.push_str("</table>\n<h4>Compiler output</h4>\n");
    match compiler_output {
        Some(text) => pre(out, text, MESSAGE_SHOWN),
        None if s.has_code => out.push_str("<p class=\"muted\">compiled without error</p>\n"),
        None => out.push_str("<p class=\"muted\">no code to compile</p>\n"),
    }
    out.push_str("<h4>Code</h4>\n");
    match row.get("code") {
        Some(Value::String(code)) if !code.is_empty() => pre(out, code, CODE_SHOWN),
        _ => out.push_str("<p class=\"muted\">no code</p>\n"),
    }
    Ok(())
}

/// One test's line in a submission's details.
fn test_row(out: &mut String, cell: &SubtaskCell, test: &TestMeasure, stats: &ProblemStats) {
    let message = match (&test.feedback, test.status) {
        (Some(text), Verdict::CompilationError) => {
            format!(
                "{} (the compiler's output is below)",
                escape(text.lines().next().unwrap_or(""))
            )
        }
        (Some(text), _) => {
            let (shown, note) = cut(text, MESSAGE_SHOWN);
            escape(shown) + &note.map(|n| escape(&n)).unwrap_or_default()
        }
        (None, _) => String::new(),
    };
    let _ = writeln!(
        out,
        "<tr><td>{subtask}</td><td>{name}</td><td class=\"st st-{status}\">{status}</td>\
         <td class=\"num\">{score}</td><td class=\"num\">{time}</td><td class=\"num\">{memory}</td>\
         <td>{message}</td></tr>",
        subtask = escape(&cell.name),
        name = escape(&test.name),
        status = test.status.as_str(),
        score = points(test.score),
        time = time_text(test.time, stats.time_limit),
        memory = memory_text(test.memory, stats.memory_limit),
    );
}

/// A text as preformatted, escaped and cut at `limit` bytes.
fn pre(out: &mut String, text: &str, limit: usize) {
    let (shown, note) = cut(text, limit);
    let _ = writeln!(out, "<pre>{}</pre>", escape(shown));
    if let Some(note) = note {
        let _ = writeln!(out, "<p class=\"muted\">{}</p>", escape(&note));
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_page_stops_writing_details_once_its_budget_is_spent() {
        let mut budget = super::DetailsBudget::new(100);
        assert!(budget.allows());
        budget.spend(60);
        assert!(budget.allows());
        budget.spend(60);
        assert!(!budget.allows());
        assert!(!budget.allows());
        assert_eq!(budget.omitted(), 2);
    }

    use super::*;

    #[test]
    fn long_texts_are_cut_at_a_character_and_say_so() {
        let (shown, note) = cut("ééé", 3);
        assert_eq!(shown, "é");
        assert_eq!(note.unwrap(), "… (the first 2 of 6 bytes)");
        assert_eq!(cut("abc", 3), ("abc", None));
    }

    #[test]
    fn shares_over_the_limit_stand_out() {
        assert_eq!(
            time_text(Some(1.5), Some(1.0)),
            "1.500 s (<span class=\"over\">150.0%</span>)"
        );
        assert_eq!(memory_text(Some(1 << 20), Some(4 << 20)), "1.0 MiB (25.0%)");
        assert_eq!(time_text(None, Some(1.0)), "-");
        assert_eq!(time_text(Some(0.25), None), "0.250 s");
    }
}
