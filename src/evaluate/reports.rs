//! Markdown reports of a dataset's results (docs/results.md#reports), built from results rows alone
//! so that they can be regenerated from any results JSONL: `reports/<dataset>/<year>_<problem>.md`
//! per problem, and `reports/<dataset>/README.md` with the totals per year.
//!
//! Numbers follow the reference: a problem's score is, per subtask, the best weighted score over
//! a set of submissions, summed; "no limit" uses every submission, "50 limit" those chosen by
//! [`roundrobin::select`](super::roundrobin::select).

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::html_compare::{write_comparison, COMPARISON_HTML};
use super::html_report::{write_page, REPORT_HTML};
use super::overview::{points, problems, read_result_set, subtask_names, ProblemOverview};
use super::report_rows::JudgedSubmission;
use super::report_source::ResultsFiles;

/// One report file: its name within `reports/<dataset>/` and its markdown.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportFile {
    pub name: String,
    pub markdown: String,
}

/// The markdown reports of one dataset: one per problem (in the order of [`problems`]), then
/// the `README.md` overview.
pub fn render_reports(problems: &[(ProblemOverview, Vec<&JudgedSubmission>)]) -> Vec<ReportFile> {
    let mut files = Vec::new();
    for (overview, submissions) in problems {
        files.push(ReportFile {
            name: overview.report_name(),
            markdown: problem_report(overview, submissions),
        });
    }
    let overviews: Vec<ProblemOverview> = problems.iter().map(|(o, _)| o.clone()).collect();
    files.push(ReportFile {
        name: "README.md".into(),
        markdown: global_report(&overviews),
    });
    files
}

/// Text of a results file (an id, a problem, a subtask, a label) made inert in markdown: the
/// characters that could open a link or an image (`[`), raw HTML or an autolink (`<`, `:`,
/// `www.`) or a table cell (`|`) are escaped, and line breaks become spaces, so that a results file
/// written by anyone puts nothing but its text into a report. Emphasis (`_`, `*`) is left as
/// it is: it changes no more than how a word looks, and ids are full of underscores.
fn md_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (at, c) in text.char_indices() {
        // GFM links `www.` text without any mark: a zero-width space after `www` keeps the
        // text as it reads and unlinked.
        if c == '.' && at >= 3 && text.as_bytes()[at - 3..at].eq_ignore_ascii_case(b"www") {
            out.push('\u{200B}');
        }
        match c {
            '\\' | '[' | ']' | '<' | '>' | '|' | ':' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

fn problem_report(overview: &ProblemOverview, submissions: &[&JudgedSubmission]) -> String {
    let subtasks: Vec<String> = subtask_names(submissions);
    let subtask_headers: Vec<String> = subtasks.iter().map(|name| md_text(name)).collect();
    let mut headers = vec!["Submission", "Target subtask", "Total"];
    headers.extend(subtask_headers.iter().map(String::as_str));
    let mut right = vec![false, false, true];
    right.resize(headers.len(), false);
    let mut sorted: Vec<&JudgedSubmission> = submissions.to_vec();
    sorted.sort_by(|a, b| {
        b.total
            .partial_cmp(&a.total)
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let rows: Vec<Vec<String>> = sorted
        .iter()
        .map(|s| {
            let mut row = vec![
                match &s.label {
                    Some(label) => format!("{} ({})", md_text(&s.id), md_text(label)),
                    None => md_text(&s.id),
                },
                s.target_subtask
                    .as_deref()
                    .map_or_else(|| "-".into(), md_text),
                points(s.total),
            ];
            row.extend(subtasks.iter().map(|name| {
                s.subtasks
                    .iter()
                    .find(|c| &c.name == name)
                    // Made here of a status word and two numbers, all checked on reading.
                    .map_or_else(|| "-".into(), |c| c.text.clone())
            }));
            row
        })
        .collect();
    format!(
        "# {}: {}\n\n## Overview\n\
         - Number of submissions: **{}**\n\
         - Submissions compiling: **{}**\n\
         - Best individual submission: **{}/100**\n\n\
         - Score on this problem (no submission limit): **{:.2}/100**\n\
         - Score on this problem (limited to 50 submissions, round robin selection): **{:.2}/100**\n\n\
         Plots: [{html}]({html}#{anchor})\n\n\
         ## Submissions\n\n{}",
        overview.year,
        md_text(&overview.problem_id),
        overview.submissions,
        overview.compiling,
        points(overview.best_submission),
        overview.no_limit_score,
        overview.limit_50_score,
        markdown_table(&headers, &right, &rows),
        html = REPORT_HTML,
        anchor = overview.anchor(),
    )
}

fn global_report(overviews: &[ProblemOverview]) -> String {
    let mut out = format!(
        "# Global Overview\n\
         - Number of submissions: **{}**\n\
         - Submissions compiling: **{}**\n\
         - Plots: [{REPORT_HTML}]({REPORT_HTML})\n",
        overviews.iter().map(|o| o.submissions).sum::<usize>(),
        overviews.iter().map(|o| o.compiling).sum::<usize>(),
    );
    let headers = [
        "Day",
        "Problem",
        "#submissions",
        "#compiling",
        "Best individual",
        "Score (50 limit)",
        "Score (no limit)",
        "Full report",
    ];
    let right = [false, false, true, true, false, false, false, false];
    let mut years: Vec<i64> = overviews.iter().map(|o| o.year).collect();
    years.dedup();
    for year in years {
        let problems: Vec<&ProblemOverview> = overviews.iter().filter(|o| o.year == year).collect();
        let counted = || problems.iter().filter(|o| !o.is_practice());
        let rows: Vec<Vec<String>> = problems
            .iter()
            .map(|o| {
                vec![
                    o.day.as_deref().map_or_else(|| "-".into(), md_text),
                    md_text(&o.problem_id),
                    o.submissions.to_string(),
                    o.compiling.to_string(),
                    format!("{}/100", points(o.best_submission)),
                    format!("{:.2}/100", o.limit_50_score),
                    format!("{:.2}/100", o.no_limit_score),
                    format!("[link]({})", o.report_link()),
                ]
            })
            .collect();
        let title = match year {
            0 => "Problems without a year".to_string(),
            year => year.to_string(),
        };
        out.push_str(&format!(
            "\n# {title}\n\n\
             - Score (no submission limit): **{:.2}/600**\n\
             - Score (limited to 50 submissions, round robin selection): **{:.2}/600**\n\n{}",
            counted().map(|o| o.no_limit_score).sum::<f64>(),
            counted().map(|o| o.limit_50_score).sum::<f64>(),
            markdown_table(&headers, &right, &rows)
        ));
    }
    out
}

/// A pipe table with padded columns; `right` marks right-aligned (numeric) columns.
fn markdown_table(headers: &[&str], right: &[bool], rows: &[Vec<String>]) -> String {
    // Cells are markdown already: untrusted text in them went through `md_text`.
    let escape = |s: &str| s.replace('\n', " ");
    let headers: Vec<String> = headers.iter().map(|h| escape(h)).collect();
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| escape(c)).collect())
        .collect();
    let widths: Vec<usize> = (0..headers.len())
        .map(|i| {
            rows.iter()
                .map(|r| r[i].chars().count())
                .chain([headers[i].chars().count(), 3])
                .max()
                .unwrap_or(3)
        })
        .collect();
    let line = |cells: &[String]| {
        let padded: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let pad = " ".repeat(widths[i] - c.chars().count());
                match right[i] {
                    true => format!(" {pad}{c} "),
                    false => format!(" {c}{pad} "),
                }
            })
            .collect();
        format!("|{}|\n", padded.join("|"))
    };
    let mut out = line(&headers);
    let rules: Vec<String> = widths
        .iter()
        .zip(right)
        .map(|(w, r)| match r {
            true => format!("{}:", "-".repeat(w + 1)),
            false => format!(":{}", "-".repeat(w + 1)),
        })
        .collect();
    out.push_str(&format!("|{}|\n", rules.join("|")));
    for row in &rows {
        out.push_str(&line(row));
    }
    out
}

/// The name of each results file: its stem, or, when several files share a stem, their folder's
/// name and the stem (`run1-submissions`), numbered if that is still not enough.
pub fn dataset_names(paths: &[PathBuf]) -> Result<Vec<String>> {
    let stem = |path: &PathBuf| -> Result<String> {
        path.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .with_context(|| format!("{}: cannot name a dataset after it", path.display()))
    };
    let stems = paths.iter().map(stem).collect::<Result<Vec<_>>>()?;
    let mut names: Vec<String> = Vec::new();
    for (i, path) in paths.iter().enumerate() {
        let shared = stems.iter().filter(|s| **s == stems[i]).count() > 1;
        let mut name = match shared {
            false => stems[i].clone(),
            true => match path.canonicalize().ok().and_then(|p| {
                p.parent()
                    .and_then(|d| d.file_name())
                    .map(|d| d.to_string_lossy().into_owned())
            }) {
                Some(folder) => format!("{folder}-{}", stems[i]),
                None => stems[i].clone(),
            },
        };
        if names.contains(&name) {
            name = format!("{name}-{}", i + 1);
        }
        // The name is a folder of the reports, and a part of the comparison's links.
        if name.is_empty() || name == "." || name == ".." || name.contains('/') {
            bail!(
                "{}: cannot name a dataset {name:?} (its reports would be written outside \
                 their folder); rename the file",
                path.display()
            );
        }
        names.push(name);
    }
    Ok(names)
}

/// Writes the reports of each results JSONL to `<out_dir>/reports/<dataset>/` (see
/// [`dataset_names`]): the markdown reports, then `report.html`; with several results files,
/// also the page comparing them, `<out_dir>/reports/comparison.html`. Returns the files written.
pub fn write_reports(
    results_jsonl: &[PathBuf],
    out_dir: &Path,
    id_column: &str,
) -> Result<Vec<PathBuf>> {
    let names = dataset_names(results_jsonl)?;
    let mut files = ResultsFiles::new();
    let mut sets = Vec::new();
    for (path, name) in results_jsonl.iter().zip(names) {
        sets.push(read_result_set(&mut files, name, path, id_column)?);
    }
    let mut written = Vec::new();
    for set in &sets {
        let folder = out_dir.join("reports").join(&set.name);
        std::fs::create_dir_all(&folder)
            .with_context(|| format!("cannot create {}", folder.display()))?;
        let problems = problems(&set.submissions);
        for report in render_reports(&problems) {
            let path = folder.join(&report.name);
            std::fs::write(&path, &report.markdown)
                .with_context(|| format!("cannot write {}", path.display()))?;
            written.push(path);
        }
        let path = folder.join(REPORT_HTML);
        write_html(&path, |out| {
            write_page(out, &set.name, &problems, &set.stats, &files)
        })?;
        written.push(path);
    }
    if sets.len() > 1 {
        let path = out_dir.join("reports").join(COMPARISON_HTML);
        write_html(&path, |out| write_comparison(out, &sets, &files))?;
        written.push(path);
    }
    Ok(written)
}

/// Writes an HTML file through a buffer, by `write`.
fn write_html(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<std::fs::File>) -> Result<()>,
) -> Result<()> {
    let file =
        std::fs::File::create(path).with_context(|| format!("cannot write {}", path.display()))?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    write(&mut out)?;
    out.flush()
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::Row;
    use serde_json::{json, Value};
    use std::sync::Arc;

    fn sub(name: &str, score: f64, weighted: Value, points: Value, status: &str) -> Value {
        json!({"problem": "nile", "subtask": name, "score": score, "weighted_score": weighted,
               "points": points, "score_precision": 2, "status": status, "test_results": []})
    }

    fn result(id: &str, problem: &str, day: &str, target: Option<&str>, subs: Vec<Value>) -> Value {
        let total: f64 = subs
            .iter()
            .map(|s| s["weighted_score"].as_f64().unwrap())
            .sum();
        let ce = subs.iter().any(|s| s["status"] == "CE");
        json!({"uuid": id, "submission_id": id, "problem_id": problem, "year": 2024,
               "problem_day": day, "code": "int main;", "target_subtask": target,
               "code_compiles": !ce, "all_subtasks_points": total,
               "all_subtasks_results": subs, "generation": "x".repeat(id.len())})
    }

    fn fixture() -> Vec<Value> {
        vec![
            result(
                "a",
                "nile",
                "1",
                Some("01-small"),
                vec![
                    sub("00-samples", 1.0, json!(0.0), json!(0), "AC"),
                    sub("01-small", 1.0, json!(30.0), json!(30), "AC"),
                    sub("02-big", 0.0, json!(0.0), json!(70), "TLE"),
                ],
            ),
            result(
                "bb",
                "nile",
                "1",
                Some("02-big"),
                vec![
                    sub("00-samples", 1.0, json!(0.0), json!(0), "AC"),
                    sub("01-small", 0.0, json!(0.0), json!(30), "WA"),
                    sub("02-big", 0.5, json!(35.0), json!(70), "PA"),
                ],
            ),
            result(
                "c",
                "nile",
                "1",
                None,
                vec![
                    sub("00-samples", 0.0, json!(0.0), json!(0), "CE"),
                    sub("01-small", 0.0, json!(0.0), json!(30), "CE"),
                    sub("02-big", 0.0, json!(0.0), json!(70), "CE"),
                ],
            ),
            result(
                "p1",
                "hello",
                "practice",
                None,
                vec![sub("01-all", 1.0, json!(100.0), json!(100), "AC")],
            ),
        ]
    }

    /// A file's stem names its set (the folder stem too when stems repeat); a stem that would
    /// put the reports outside their folder is refused, naming the file.
    #[test]
    fn sets_are_named_after_their_files_and_never_after_dots() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a/model.jsonl");
        let b = dir.path().join("b/model.jsonl");
        for p in [&a, &b] {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "").unwrap();
        }
        assert_eq!(
            dataset_names(&[a.clone(), b, dir.path().join("c.jsonl")]).unwrap(),
            ["a-model", "b-model", "c"]
        );
        let dots = dir.path().join("...jsonl");
        let error = dataset_names(&[a, dots]).unwrap_err().to_string();
        assert!(
            error.contains("...jsonl") && error.contains("rename"),
            "{error}"
        );
    }

    #[test]
    fn problem_report_markdown() {
        let rows: Vec<JudgedSubmission> = fixture()
            .iter()
            .enumerate()
            .map(|(i, v)| {
                JudgedSubmission::from_row(
                    &Row {
                        file: Arc::new(PathBuf::from("r.jsonl")),
                        index: i,
                        fields: v.as_object().unwrap().clone(),
                    },
                    "uuid",
                )
                .unwrap()
            })
            .collect();
        let reports = render_reports(&problems(&rows));
        let names: Vec<_> = reports.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["2024_hello.md", "2024_nile.md", "README.md"]);
        let expected = "\
# 2024: nile

## Overview
- Number of submissions: **3**
- Submissions compiling: **2**
- Best individual submission: **35.0/100**

- Score on this problem (no submission limit): **65.00/100**
- Score on this problem (limited to 50 submissions, round robin selection): **65.00/100**

Plots: [report.html](report.html#2024_nile)

## Submissions

| Submission | Target subtask | Total | 00-samples | 01-small     | 02-big       |
|:-----------|:---------------|------:|:-----------|:-------------|:-------------|
| bb         | 02-big         |  35.0 | 0.0/0 (AC) | 0.0/30 (WA)  | 35.0/70 (PA) |
| a          | 01-small       |  30.0 | 0.0/0 (AC) | 30.0/30 (AC) | 0.0/70 (TLE) |
| c          | -              |   0.0 | 0.0/0 (CE) | 0.0/30 (CE)  | 0.0/70 (CE)  |
";
        assert_eq!(reports[1].markdown, expected);

        let expected = "\
# Global Overview
- Number of submissions: **4**
- Submissions compiling: **3**
- Plots: [report.html](report.html)

# 2024

- Score (no submission limit): **65.00/600**
- Score (limited to 50 submissions, round robin selection): **65.00/600**

| Day      | Problem | #submissions | #compiling | Best individual | Score (50 limit) | Score (no limit) | Full report           |
|:---------|:--------|-------------:|-----------:|:----------------|:-----------------|:-----------------|:----------------------|
| practice | hello   |            1 |          1 | 100.0/100       | 100.00/100       | 100.00/100       | [link](2024_hello.md) |
| 1        | nile    |            3 |          2 | 35.0/100        | 65.00/100        | 65.00/100        | [link](2024_nile.md)  |
";
        assert_eq!(reports[2].markdown, expected);
    }

    #[test]
    fn reports_are_written_from_results_files_and_bad_rows_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let results = dir.path().join("model-a.jsonl");
        let text: String = fixture().iter().map(|v| format!("{v}\n")).collect();
        std::fs::write(&results, text).unwrap();
        let written = write_reports(std::slice::from_ref(&results), dir.path(), "uuid").unwrap();
        let base = dir.path().join("reports/model-a");
        assert_eq!(
            written,
            [
                base.join("2024_hello.md"),
                base.join("2024_nile.md"),
                base.join("README.md"),
                base.join("report.html")
            ]
        );
        assert!(std::fs::read_to_string(&written[1])
            .unwrap()
            .starts_with("# 2024: nile\n"));

        let mut bad = fixture()[0].clone();
        bad["all_subtasks_results"][1]
            .as_object_mut()
            .unwrap()
            .remove("status");
        std::fs::write(&results, format!("{}\n{bad}\n", fixture()[1])).unwrap();
        let err = format!(
            "{:#}",
            write_reports(&[results], dir.path(), "uuid").unwrap_err()
        );
        assert!(
            err.contains("model-a.jsonl row 2")
                && err.contains("all_subtasks_results[1]")
                && err.contains("`status`"),
            "{err}"
        );
    }

    /// Problem ids from a results file written by others: none names a file outside the
    /// reports folder (with year 0 too) or becomes an active link in README.md or report.html.
    #[test]
    fn text_of_a_results_file_is_inert_in_the_markdown_reports() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let results = dir.path().join("model-a.jsonl");
        let hostile = [
            "[click](javascript:alert(1))",
            "![track](http://evil.example/x.png)",
            "<img src=x onerror=alert(1)>",
            "a\r\n# INJECTED HEADING",
            "cell|split",
            "www.evil.example/login",
        ];
        let text: String = hostile
            .iter()
            .enumerate()
            .map(|(i, id)| {
                let mut row = result(
                    id,
                    id,
                    "1",
                    Some(id),
                    vec![sub(id, 1.0, json!(1), json!(1), "AC")],
                );
                row["uuid"] = json!(format!("{id}{i}"));
                format!("{row}\n")
            })
            .collect();
        std::fs::write(&results, text).unwrap();
        let written = write_reports(std::slice::from_ref(&results), &out, "uuid").unwrap();
        for path in written
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
        {
            let markdown = std::fs::read_to_string(path).unwrap();
            // What a renderer acts on: the text with every escaped character taken out.
            let mut unescaped = String::new();
            let mut chars = markdown.chars();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => drop(chars.next()),
                    c => unescaped.push(c),
                }
            }
            for active in [
                "](javascript",
                "![",
                "<img",
                "](http",
                "\n# INJECTED",
                "www.evil",
            ] {
                assert!(
                    !unescaped.contains(active),
                    "{active} in {}:\n{markdown}",
                    path.display()
                );
            }
            // Every table row keeps its number of cells.
            let cells: Vec<usize> = markdown
                .lines()
                .filter(|l| l.starts_with('|'))
                .map(|l| l.replace("\\|", "").matches('|').count())
                .collect();
            assert!(
                cells.windows(2).all(|w| w[0] == w[1]),
                "{}:\n{markdown}",
                path.display()
            );
        }
    }

    #[test]
    fn hostile_problem_ids_stay_in_the_reports_folder_and_are_never_links_out() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let results = dir.path().join("model-a.jsonl");
        let absolute = dir.path().join("abs-escape").display().to_string();
        let ids = [
            "../../escape",
            absolute.as_str(),
            "javascript:alert(1)",
            ".hidden",
        ];
        let text: String = ids
            .iter()
            .enumerate()
            .map(|(i, id)| {
                let mut row = result(&format!("s{i}"), id, "1", None, Vec::new());
                row["year"] = json!(0);
                format!("{row}\n")
            })
            .collect();
        std::fs::write(&results, text).unwrap();
        let written = write_reports(std::slice::from_ref(&results), &out, "uuid").unwrap();
        let folder = out.join("reports/model-a");
        for path in &written {
            assert_eq!(path.parent(), Some(folder.as_path()), "{}", path.display());
        }
        assert_eq!(written.len(), ids.len() + 2, "{written:?}");
        let mut on_disk = Vec::new();
        for entry in walkdir::WalkDir::new(dir.path()).min_depth(1) {
            let entry = entry.unwrap();
            if entry.file_type().is_file() {
                on_disk.push(entry.path().to_path_buf());
            }
        }
        on_disk.retain(|p| p != &results);
        on_disk.sort();
        let mut expected = written.clone();
        expected.sort();
        assert_eq!(on_disk, expected, "files outside the reports folder");
        let readme = std::fs::read_to_string(folder.join("README.md")).unwrap();
        let html = std::fs::read_to_string(folder.join(REPORT_HTML)).unwrap();
        assert!(!readme.contains("](javascript:"), "{readme}");
        assert!(
            readme.contains("](./javascript%3Aalert%281%29.md)"),
            "{readme}"
        );
        assert!(
            !html.to_lowercase().contains("href=\"javascript:"),
            "{html}"
        );
        // The page links only to its own anchors: no input becomes a link target.
        for target in html.split("href=\"").skip(1) {
            assert!(
                target.starts_with('#'),
                "a link out of the page: {target:.60}"
            );
        }
    }
}
