//! The open-r1/ioi layout (docs/data.md#problems): problems as one row per subtask, in parquet or
//! JSON Lines. Their tests (the "open-r1/ioi-test-cases" layout) are loaded by [`load_tests`],
//! which lives in `testcases` and is re-exported here.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use serde_json::Value;

use super::cms::DEFAULT_SCORE_PRECISION;
use super::config::{self, TaskKind, GRADER_CONFIG_PATH};
pub use super::testcases::load_tests;
use super::{id_from_headers, GraderFile, Problem, Subtask, TaskType};
use crate::dataset::{files_under, kind, read_rows, Row};
use crate::name::{RelativePath, SafeName};

/// The problem columns ioi-run reads (the statement columns are skipped).
const PROBLEM_COLUMNS: &[&str] = &[
    "year",
    "id",
    "name",
    "day",
    "subtask",
    "score",
    "time_limit",
    "memory_limit",
    "score_precision",
    "task_type",
    "test_names",
    "grader_files",
];

/// What open-r1/ioi rows hold: the problems that load, and those that cannot be judged.
#[derive(Debug, Default)]
pub struct ProblemRows {
    /// Sorted by (year, id), subtasks sorted by name.
    pub problems: Vec<Problem>,
    /// Problems with a bad row (or rows that disagree), each with why.
    pub broken: Vec<BrokenProblem>,
}

/// A problem that cannot be judged because one of its rows is bad: judging it without that
/// row would score it on fewer subtasks, so every submission naming it is left out instead.
#[derive(Debug, Clone, PartialEq)]
pub struct BrokenProblem {
    /// `None` when the bad row's own `year` cannot be read: then every year of the id is out.
    pub year: Option<i64>,
    pub id: String,
    /// Every error found, each naming the file, the row (counted from 1) and the field.
    pub why: String,
}

impl BrokenProblem {
    /// Whether a submission for (year, id) names this problem (rows without a year, 0, match
    /// submissions of any year, as problems without a year do).
    pub fn covers(&self, year: i64, id: &str) -> bool {
        self.id == id && self.year.is_none_or(|y| y == year || y == 0)
    }

    /// `2024/nile`, or `nile` when the year is unknown or absent.
    pub fn label(&self) -> String {
        match self.year {
            Some(year) if year != 0 => format!("{year}/{}", self.id),
            _ => self.id.clone(),
        }
    }
}

impl ProblemRows {
    /// The broken problem a submission for (year, id) names, if any.
    pub fn broken_for(&self, year: i64, id: &str) -> Option<&BrokenProblem> {
        self.broken.iter().find(|b| b.covers(year, id))
    }
}

/// Loads problems from open-r1/ioi files (or folders of them), grouping the subtask rows of
/// each (year, id). One bad row does not refuse the set: its problem is returned as broken and
/// every other problem loads. Only a row whose problem cannot be told (unreadable, or without
/// an `id`) is an error, since any problem could then be missing a subtask.
pub fn load_problems(paths: &[PathBuf]) -> Result<ProblemRows> {
    let mut groups: BTreeMap<(i64, String), Vec<SubtaskRow>> = BTreeMap::new();
    let mut bad: BTreeMap<(Option<i64>, String), Vec<String>> = BTreeMap::new();
    // Said after the row's own error, which names the file, the row and the field.
    let unknown_problem = |e: anyhow::Error| {
        anyhow::anyhow!(
            "{e:#}; the problem this row belongs to cannot be told, so any problem could be \
             missing a subtask: fix or remove the row"
        )
    };
    let mut rows_seen = 0usize;
    for path in paths {
        for file in files_under(path)? {
            for row in read_rows(&file, Some(PROBLEM_COLUMNS))? {
                let row = row.map_err(unknown_problem)?;
                rows_seen += 1;
                let id = row.str("id").map_err(unknown_problem)?.to_lowercase();
                // An unreadable year leaves the id known: every year of it is out.
                let year = match row.get("year") {
                    None => Some(0),
                    Some(_) => row.int("year").ok(),
                };
                match (year, SubtaskRow::parse(&row)) {
                    (Some(year), Ok(parsed)) => groups.entry((year, id)).or_default().push(parsed),
                    (year, Err(e)) => bad.entry((year, id)).or_default().push(format!("{e:#}")),
                    (None, Ok(_)) => bail!("{}: field `year` is unreadable", row.location()),
                }
            }
        }
    }
    if rows_seen == 0 {
        bail!("no problem rows found in {}", list(paths));
    }
    let mut loaded = ProblemRows::default();
    for ((year, id), why) in bad {
        loaded.broken.push(BrokenProblem {
            year,
            id,
            why: why.join("; "),
        });
    }
    for ((year, id), rows) in groups {
        let has_bad_row = loaded
            .broken
            .iter()
            .any(|b| b.id == id && (b.year.is_none() || b.year == Some(year)));
        if has_bad_row {
            continue; // its bad row is already reported
        }
        match build_problem(rows) {
            Ok(problem) => loaded.problems.push(problem),
            Err(e) => loaded.broken.push(BrokenProblem {
                year: Some(year),
                id,
                why: format!("{e:#}"),
            }),
        }
    }
    Ok(loaded)
}

/// One open-r1/ioi row: one subtask of a problem, plus the problem's fields.
struct SubtaskRow {
    location: String,
    year: i64,
    id: String,
    name: String,
    day: String,
    subtask: Subtask,
    time_limit: Option<f64>,
    memory_limit: Option<u64>,
    task_kind: Option<TaskKind>,
    grader_files: Vec<GraderFile>,
}

impl SubtaskRow {
    fn parse(row: &Row) -> Result<SubtaskRow> {
        let location = row.location();
        let at = |field: &str| format!("{location}: field `{field}`");
        let score_precision = match row.get("score_precision") {
            None => DEFAULT_SCORE_PRECISION,
            Some(_) => u32::try_from(row.int("score_precision")?)
                .with_context(|| format!("{} must not be negative", at("score_precision")))?,
        };
        let test_names = match row.get("test_names") {
            Some(Value::Array(items)) => items
                .iter()
                .map(|t| match t {
                    Value::String(s) => Ok(s.clone()),
                    other => bail!(
                        "{} must hold strings, found {}",
                        at("test_names"),
                        kind(other)
                    ),
                })
                .collect::<Result<Vec<_>>>()?,
            Some(other) => bail!("{} must be a list, found {}", at("test_names"), kind(other)),
            None => bail!("{} is missing", at("test_names")),
        };
        let id = row.str("id")?.to_lowercase();
        // The id names the submission's source file, `graders/<id>.cpp`.
        SafeName::parse(&id).with_context(|| at("id"))?;
        Ok(SubtaskRow {
            year: row
                .get("year")
                .map(|_| row.int("year"))
                .transpose()?
                .unwrap_or(0),
            name: row
                .get("name")
                .map(|_| row.str("name"))
                .transpose()?
                .unwrap_or(&id)
                .to_string(),
            day: match row.get("day") {
                None => String::new(),
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
            },
            subtask: Subtask {
                name: row.str("subtask")?.to_string(),
                points: row.float("score")?,
                score_precision,
                test_names,
            },
            time_limit: row
                .get("time_limit")
                .map(|v| config::seconds(v, &at("time_limit")))
                .transpose()?,
            memory_limit: row
                .get("memory_limit")
                .map(|v| config::bytes(v, &at("memory_limit")))
                .transpose()?,
            task_kind: row
                .get("task_type")
                .map(|_| TaskKind::parse(row.str("task_type")?, &at("task_type")))
                .transpose()?,
            grader_files: grader_files(row.get("grader_files"), &at("grader_files"))?,
            id,
            location,
        })
    }
}

/// `grader_files`: a list of `[path, content]` pairs (or of `{path, content}` objects).
fn grader_files(value: Option<&Value>, at: &str) -> Result<Vec<GraderFile>> {
    let Some(value) = value else {
        return Ok(Vec::new());
    };
    let Value::Array(items) = value else {
        bail!(
            "{at} must be a list of [path, content] pairs, found {}",
            kind(value)
        );
    };
    items
        .iter()
        .map(|item| {
            let pair = match item {
                Value::Array(pair) if pair.len() == 2 => (&pair[0], &pair[1]),
                Value::Object(o) => match (o.get("path"), o.get("content")) {
                    (Some(p), Some(c)) => (p, c),
                    _ => bail!("{at}: an entry lacks `path` or `content`"),
                },
                other => bail!("{at} must hold [path, content] pairs, found {other}"),
            };
            match pair {
                (Value::String(path), Value::String(content)) => Ok(GraderFile {
                    path: RelativePath::parse(path)
                        .with_context(|| format!("{at}: a path is not a relative path"))?,
                    content: content.clone().into_bytes(),
                }),
                _ => bail!("{at}: paths and contents must be strings"),
            }
        })
        .collect()
}

fn build_problem(mut rows: Vec<SubtaskRow>) -> Result<Problem> {
    rows.sort_by(|a, b| a.subtask.name.cmp(&b.subtask.name));
    let first = &rows[0];
    for pair in rows.windows(2) {
        if pair[0].subtask.name == pair[1].subtask.name {
            bail!(
                "{}: subtask {} of problem {} appears again (first in {})",
                pair[1].location,
                pair[1].subtask.name,
                first.id,
                pair[0].location
            );
        }
    }
    for row in &rows[1..] {
        check_same(first, row)?;
    }
    let origin = format!("{}: grader file {GRADER_CONFIG_PATH}", first.location);
    let cfg = match first
        .grader_files
        .iter()
        .find(|f| f.path == GRADER_CONFIG_PATH)
    {
        Some(f) => Some(config::parse_config(
            &String::from_utf8_lossy(&f.content),
            &origin,
        )?),
        None => None,
    };
    let cfg = cfg.as_ref();
    let task = task_of(first, cfg, &origin)?;
    let time_limit = first
        .time_limit
        .or(cfg.and_then(|c| c.time_limit))
        .with_context(|| {
            format!(
                "{}: field `time_limit` is missing (and not in {GRADER_CONFIG_PATH})",
                first.location
            )
        })?;
    let memory_limit = first
        .memory_limit
        .or(cfg.and_then(|c| c.memory_limit))
        .with_context(|| {
            format!(
                "{}: field `memory_limit` is missing (and not in {GRADER_CONFIG_PATH})",
                first.location
            )
        })?;
    check_graders(first, &task)?;
    let mut rows = rows.into_iter();
    let first = rows.next().context("unreachable: empty problem group")?;
    let mut subtasks = vec![first.subtask];
    subtasks.extend(rows.map(|r| r.subtask));
    let mut problem = Problem {
        year: first.year,
        id: first.id,
        name: first.name,
        day: first.day,
        task,
        time_limit,
        memory_limit,
        subtasks,
        grader_files: first.grader_files,
    };
    config::ensure_grader_config(&mut problem);
    problem
        .check_bounds()
        .with_context(|| first.location.clone())?;
    Ok(problem)
}

/// The task type of a problem: the row's `task_type`, read with the grader configuration when
/// the problem has one (`origin` names it in errors).
fn task_of(first: &SubtaskRow, cfg: Option<&config::TaskConfig>, origin: &str) -> Result<TaskType> {
    match (cfg, first.task_kind) {
        (Some(cfg), kind) => cfg.task(kind),
        (None, Some(TaskKind::Batch)) => Some(TaskType::Batch),
        (None, Some(TaskKind::Communication)) => {
            config::parse_config("{}", origin)?.task(Some(TaskKind::Communication))
        }
        (None, None) => None,
    }
    .with_context(|| {
        format!(
            "{}: field `task_type` is missing (and not in {GRADER_CONFIG_PATH})",
            first.location
        )
    })
}

/// A problem's grader files must agree with it: the header names the problem's id, and a
/// Communication task has its manager.
fn check_graders(first: &SubtaskRow, task: &TaskType) -> Result<()> {
    if let Some(header_id) = id_from_headers(&first.grader_files) {
        if header_id != first.id {
            bail!(
                "{}: problem id {:?} disagrees with its header graders/{header_id}.h, which says \
                 {header_id:?}",
                first.location,
                first.id
            );
        }
    }
    if matches!(task, TaskType::Communication(_))
        && !first
            .grader_files
            .iter()
            .any(|f| f.path == "graders/manager.cpp")
    {
        bail!(
            "{}: problem {} is a Communication task but its grader_files lack graders/manager.cpp",
            first.location,
            first.id
        );
    }
    Ok(())
}

/// Rows of one problem must agree on everything but the subtask.
fn check_same(first: &SubtaskRow, row: &SubtaskRow) -> Result<()> {
    let differs = if first.time_limit != row.time_limit {
        Some("time_limit")
    } else if first.memory_limit != row.memory_limit {
        Some("memory_limit")
    } else if first.task_kind != row.task_kind {
        Some("task_type")
    } else if first.grader_files != row.grader_files {
        Some("grader_files")
    } else if first.name != row.name {
        Some("name")
    } else if first.day != row.day {
        Some("day")
    } else {
        None
    };
    match differs {
        Some(field) => bail!(
            "{}: field `{field}` of problem {} (year {}) differs from {}",
            row.location,
            row.id,
            row.year,
            first.location
        ),
        None => Ok(()),
    }
}

pub(crate) fn list(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use std::path::Path;

    use super::*;
    use crate::problem::config::GRADER_CONFIG_PATH;
    use crate::problem::{Communication, UserIo};

    fn write_jsonl(path: &Path, rows: &[Value]) {
        let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
        std::fs::write(path, text).unwrap();
    }

    fn row(id: &str, subtask: &str, tests: &[&str], graders: Value) -> Value {
        json!({
            "year": 2024, "id": id, "name": id.to_uppercase(), "day": "1", "subtask": subtask,
            "score": 10, "time_limit": 1.5, "memory_limit": 1073741824, "score_precision": 2,
            "task_type": "Batch", "test_names": tests, "grader_files": graders,
            "statement": "", "problem": "", "starting_code": "",
        })
    }

    fn batch_graders(id: &str) -> Value {
        json!([
            [format!("graders/{id}.h"), "int f();"],
            ["graders/grader.cpp", "int main(){}"]
        ])
    }

    fn load_err(rows: &[Value]) -> String {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.jsonl");
        write_jsonl(&path, rows);
        let loaded = load_problems(&[path]).unwrap();
        assert!(loaded.problems.is_empty(), "{loaded:?}");
        assert_eq!(loaded.broken.len(), 1, "{loaded:?}");
        loaded.broken[0].why.clone()
    }

    #[test]
    fn groups_rows_by_problem_and_sorts_subtasks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.jsonl");
        write_jsonl(
            &path,
            &[
                row("Nile", "01-N2", &["1-01", "0-01"], batch_graders("nile")),
                row("tree", "00-samples", &["0-01"], batch_graders("tree")),
                row("Nile", "00-samples", &["0-01"], batch_graders("nile")),
            ],
        );
        let problems = load_problems(&[path]).unwrap().problems;
        assert_eq!(problems.len(), 2);
        let nile = &problems[0];
        assert_eq!(
            (nile.year, nile.id.as_str(), nile.name.as_str()),
            (2024, "nile", "NILE")
        );
        assert_eq!(nile.task, TaskType::Batch);
        assert_eq!((nile.time_limit, nile.memory_limit), (1.5, 1 << 30));
        let names: Vec<_> = nile.subtasks.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["00-samples", "01-N2"]);
        assert_eq!(nile.subtasks[1].test_names, ["1-01", "0-01"]);
        assert_eq!(nile.compiled_graders().len(), 1);
        assert_eq!(problems[1].id, "tree");
    }

    #[test]
    fn communication_params_come_from_grader_config() {
        let config = r#"{"task_type": "Communication", "time_limit": 9, "memory_limit": 5000000,
            "task_type_params": "{\"num_processes\": 2, \"user_io\": \"fifo_io\", \"manager_args\": [\"-x\"]}"}"#;
        let graders = json!([
            ["graders/grader_config.json", config],
            ["graders/manager.cpp", "int main(){}"],
            ["graders/stub.cpp", ""],
            ["graders/xor.h", ""],
        ]);
        let mut r = row("xor", "00-samples", &["a"], graders);
        r["time_limit"] = Value::Null; // falls back to the config
        r["task_type"] = json!("Communication");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.jsonl");
        write_jsonl(&path, &[r]);
        let p = &load_problems(&[path]).unwrap().problems[0];
        assert_eq!(
            p.task,
            TaskType::Communication(Communication {
                num_processes: 2,
                user_io: UserIo::FifoIo,
                manager_args: vec!["-x".into()],
            })
        );
        assert_eq!(p.time_limit, 9.0);
        assert_eq!(p.memory_limit, 1 << 30, "the row's memory limit wins");
    }

    #[test]
    fn row_task_type_wins_over_config() {
        let graders = json!([
            [
                "graders/grader_config.json",
                r#"{"task_type": "Communication"}"#
            ],
            ["graders/x.h", ""],
        ]);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.jsonl");
        write_jsonl(&path, &[row("x", "00", &["a"], graders)]);
        let p = &load_problems(&[path]).unwrap().problems[0];
        assert_eq!(p.task, TaskType::Batch);
        // The stale config is rewritten so that script-mode graders agree with the row.
        let cfg = p.grader_file(GRADER_CONFIG_PATH).unwrap();
        let cfg = config::parse_config(std::str::from_utf8(&cfg.content).unwrap(), "g").unwrap();
        assert_eq!(cfg.task(None), Some(TaskType::Batch));
    }

    #[test]
    fn inconsistent_rows_name_file_row_and_field() {
        let mut second = row("nile", "01-N2", &["a"], batch_graders("nile"));
        second["time_limit"] = json!(3.0);
        let err = load_err(&[
            row("nile", "00-samples", &["a"], batch_graders("nile")),
            second,
        ]);
        assert!(
            err.contains("p.jsonl row 2") && err.contains("`time_limit`") && err.contains("row 1"),
            "{err}"
        );
    }

    #[test]
    fn duplicate_subtask_is_an_error() {
        let err = load_err(&[
            row("nile", "01-N2", &["a"], batch_graders("nile")),
            row("nile", "01-N2", &["a"], batch_graders("nile")),
        ]);
        assert!(
            err.contains("subtask 01-N2") && err.contains("again"),
            "{err}"
        );
    }

    #[test]
    fn id_must_agree_with_header() {
        let err = load_err(&[row("nile", "00", &["a"], batch_graders("river"))]);
        assert!(
            err.contains("\"nile\"") && err.contains("graders/river.h"),
            "{err}"
        );
    }

    #[test]
    fn communication_without_manager_is_an_error() {
        let mut r = row("nile", "00", &["a"], batch_graders("nile"));
        r["task_type"] = json!("Communication");
        let err = load_err(&[r]);
        assert!(
            err.contains("p.jsonl row 1") && err.contains("graders/manager.cpp"),
            "{err}"
        );
    }

    #[test]
    fn unsupported_task_type_names_the_row_and_field() {
        let mut r = row("nile", "00", &["a"], batch_graders("nile"));
        r["task_type"] = json!("OutputOnly");
        let err = load_err(&[r]);
        assert!(
            err.contains("p.jsonl row 1")
                && err.contains("`task_type`")
                && err.contains("OutputOnly"),
            "{err}"
        );
    }

    #[test]
    fn bad_grader_config_names_row_and_file() {
        let graders = json!([
            ["graders/grader_config.json", "{oops"],
            ["graders/nile.h", ""]
        ]);
        let err = load_err(&[row("nile", "00", &["a"], graders)]);
        assert!(
            err.contains("p.jsonl row 1") && err.contains("grader_config.json"),
            "{err}"
        );
    }

    #[test]
    fn a_bad_row_breaks_only_its_problem() {
        let mut bad = row("nile", "01-N2", &["a"], batch_graders("nile"));
        bad["score"] = json!("lots");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.jsonl");
        write_jsonl(
            &path,
            &[
                row("nile", "00-samples", &["a"], batch_graders("nile")),
                bad,
                row("tree", "00-samples", &["a"], batch_graders("tree")),
            ],
        );
        let loaded = load_problems(&[path]).unwrap();
        let ids: Vec<&str> = loaded.problems.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids, ["tree"], "nile is not judged on one subtask of two");
        assert_eq!(loaded.broken.len(), 1);
        let broken = &loaded.broken[0];
        assert_eq!((broken.year, broken.id.as_str()), (Some(2024), "nile"));
        assert!(
            broken.why.contains("p.jsonl row 2") && broken.why.contains("`score`"),
            "{}",
            broken.why
        );
        assert!(loaded.broken_for(2024, "nile").is_some());
        assert!(loaded.broken_for(2023, "nile").is_none());
        assert!(loaded.broken_for(2024, "tree").is_none());
    }

    #[test]
    fn an_unreadable_year_breaks_every_year_of_the_id() {
        let mut bad = row("nile", "01-N2", &["a"], batch_graders("nile"));
        bad["year"] = json!("twenty");
        let mut other_year = row("nile", "00", &["a"], batch_graders("nile"));
        other_year["year"] = json!(2023);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.jsonl");
        write_jsonl(
            &path,
            &[
                row("nile", "00", &["a"], batch_graders("nile")),
                other_year,
                bad,
            ],
        );
        let loaded = load_problems(&[path]).unwrap();
        assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
        assert_eq!(loaded.broken.len(), 1);
        assert!(loaded.broken_for(2023, "nile").is_some());
        assert!(
            loaded.broken[0].why.contains("`year`"),
            "{:?}",
            loaded.broken
        );
    }

    #[test]
    fn a_row_of_no_known_problem_refuses_the_set() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.jsonl");
        let good = row("nile", "00", &["a"], batch_graders("nile")).to_string();
        std::fs::write(&path, format!("{good}\n{{oops\n")).unwrap();
        let err = format!("{:#}", load_problems(&[path]).unwrap_err());
        assert!(
            err.contains("p.jsonl row 2") && err.contains("cannot be told"),
            "{err}"
        );
    }
}
