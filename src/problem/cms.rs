//! CMS task folders, as IOI organisers publish them (docs/data.md#cms-task-folders):
//!
//! ```text
//! problem.json            name, task_type, task_type_params, time_limit (s), memory_limit (bytes)
//! graders/                <id>.h, grader.cpp or stub.cpp, manager.cpp, testlib.h, ...
//! checker/checker.cpp     optional
//! tests/<name>.in/.out
//! subtasks/NN-name.json   {"score": S, "testcases": [...]}
//! ```
//!
//! The tests stay where they are: the returned [`TestSet`] points into the folder.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde_json::{Map, Value};

use super::config::{self, TaskConfig};
use super::{id_from_headers, GraderFile, Problem, Subtask, TaskType, TestCase, TestSet};
use crate::dataset::kind;
use crate::name::RelativePath;

/// Decimals of subtask scores when `problem.json` does not say.
pub const DEFAULT_SCORE_PRECISION: u32 = 2;

/// Loads a CMS task folder as a problem and its tests.
pub fn load_cms(dir: &Path) -> Result<(Problem, TestSet)> {
    let json_path = dir.join("problem.json");
    let (top, cfg) = read_problem_json(dir, &json_path)?;
    let at = |field: &str| format!("{}: field `{field}`", json_path.display());

    let mut grader_files = read_tree(dir, "graders")?;
    grader_files.extend(read_tree(dir, "checker")?);
    grader_files.sort_by(|a, b| a.path.cmp(&b.path));
    let id = id_from_headers(&grader_files).with_context(|| {
        format!(
            "{}: no header besides testlib.h, so the problem id (the name of `graders/<id>.h`) \
             is unknown",
            dir.join("graders").display()
        )
    })?;
    let task = cfg
        .task(None)
        .with_context(|| format!("{} is missing", at("task_type")))?;
    if matches!(task, TaskType::Communication(_))
        && !grader_files.iter().any(|f| f.path == "graders/manager.cpp")
    {
        bail!(
            "{}: the task is Communication but graders/manager.cpp is missing",
            dir.display()
        );
    }
    let score_precision = match top.get("score_precision").filter(|v| !v.is_null()) {
        None => DEFAULT_SCORE_PRECISION,
        Some(v) => config::integer(v)
            .and_then(|p| u32::try_from(p).ok())
            .with_context(|| format!("{} must be a non-negative integer", at("score_precision")))?,
    };
    let tests = read_test_folder(dir, &dir.join("tests"))?;
    let subtasks = read_subtasks(dir, score_precision, &tests)?;

    let mut problem = Problem {
        year: match top.get("year").filter(|v| !v.is_null()) {
            None => 0,
            Some(v) => {
                config::integer(v).with_context(|| format!("{} must be an integer", at("year")))?
            }
        },
        name: cfg
            .name
            .clone()
            .or_else(|| string_field(&top, "title"))
            .unwrap_or_else(|| id.clone()),
        day: match top.get("day") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
        },
        id,
        task,
        time_limit: cfg
            .time_limit
            .with_context(|| format!("{} is missing", at("time_limit")))?,
        memory_limit: cfg
            .memory_limit
            .with_context(|| format!("{} is missing", at("memory_limit")))?,
        subtasks,
        grader_files,
    };
    config::ensure_grader_config(&mut problem);
    problem
        .check_bounds()
        .with_context(|| format!("{}", dir.display()))?;
    Ok((
        problem,
        TestSet {
            cases: tests,
            _storage: None,
        },
    ))
}

fn read_problem_json(dir: &Path, path: &Path) -> Result<(Map<String, Value>, TaskConfig)> {
    let text = super::package::read_to_string(dir, path)?;
    let cfg = config::parse_config(&text, &path.display().to_string())?;
    // parse_config has already refused malformed JSON and non-objects.
    let top = match serde_json::from_str(&text) {
        Ok(Value::Object(top)) => top,
        _ => Map::new(),
    };
    Ok((top, cfg))
}

fn string_field(top: &Map<String, Value>, field: &str) -> Option<String> {
    top.get(field).and_then(Value::as_str).map(str::to_string)
}

/// Every file under `dir/sub`, sorted, as grader files with `sub/...` paths. A missing folder
/// gives nothing.
fn read_tree(dir: &Path, sub: &str) -> Result<Vec<GraderFile>> {
    let root = dir.join(sub);
    if !root.is_dir() {
        return Ok(Vec::new());
    }
    let mut files = Vec::new();
    for entry in walkdir::WalkDir::new(&root).sort_by_file_name() {
        let entry = entry.with_context(|| format!("cannot list {}", root.display()))?;
        // Folders are walked, links to folders are not; every other entry is read through
        // `package::read`, which follows a link to a file and refuses a FIFO or a device.
        let kind = entry.file_type();
        if kind.is_dir() || (kind.is_symlink() && entry.path().is_dir()) {
            continue;
        }
        let rel = entry
            .path()
            .strip_prefix(dir)
            .with_context(|| format!("{} is outside {}", entry.path().display(), dir.display()))?;
        let path = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        let path = RelativePath::parse(&path)
            .with_context(|| format!("{}: a file name breaks the rules", entry.path().display()))?;
        // Through `package::read`: `graders/` itself may be a link out of the package.
        let content = super::package::read(dir, entry.path())?;
        files.push(GraderFile { path, content });
    }
    Ok(files)
}

/// The tests of a folder of `<name>.in` + `<name>.out` files. An input without an output (or
/// the reverse) is an error; other files are ignored. `package` is the folder the tests belong
/// to (a task folder, whose `tests` may itself be a link out of it).
pub(crate) fn read_test_folder(package: &Path, dir: &Path) -> Result<BTreeMap<String, TestCase>> {
    let entries = std::fs::read_dir(dir)
        .with_context(|| format!("cannot list tests in {}", dir.display()))?;
    let mut inputs = BTreeMap::new();
    let mut outputs = BTreeMap::new();
    for entry in entries {
        let path: PathBuf = entry
            .with_context(|| format!("cannot list tests in {}", dir.display()))?
            .path();
        if !path.is_file() {
            continue;
        }
        let (Some(stem), Some(ext)) = (path.file_stem(), path.extension()) else {
            continue;
        };
        let (stem, ext) = (stem.to_owned(), ext.to_owned());
        // The sandbox opens a test input as root: a file reached through a link out of the
        // package (the file's or a folder's on its way) must be one anyone may read
        // (docs/data.md#links-in-packages).
        let path = super::package::check_readable(package, &path)?;
        let stem = stem.to_string_lossy().into_owned();
        match ext.to_str() {
            Some("in") => inputs.insert(stem, path),
            Some("out") => outputs.insert(stem, path),
            _ => None,
        };
    }
    if let Some(name) = outputs.keys().find(|n| !inputs.contains_key(*n)) {
        bail!(
            "{}: test {name:?} has {name}.out but no {name}.in",
            dir.display()
        );
    }
    inputs
        .into_iter()
        .map(|(name, input)| match outputs.remove(&name) {
            Some(output) => Ok((
                name.clone(),
                TestCase {
                    name,
                    input,
                    output,
                },
            )),
            None => bail!(
                "{}: test {name:?} has {name}.in but no {name}.out",
                dir.display()
            ),
        })
        .collect()
}

/// `subtasks/*.json`, sorted by file name; each subtask is named by its file stem.
fn read_subtasks(
    package: &Path,
    score_precision: u32,
    tests: &BTreeMap<String, TestCase>,
) -> Result<Vec<Subtask>> {
    let dir = &package.join("subtasks");
    let entries = std::fs::read_dir(dir)
        .with_context(|| format!("cannot list subtasks in {}", dir.display()))?;
    let mut files = Vec::new();
    for entry in entries {
        let path = entry
            .with_context(|| format!("cannot list subtasks in {}", dir.display()))?
            .path();
        if path.is_file() && path.extension().is_some_and(|e| e == "json") {
            files.push(path);
        }
    }
    files.sort();
    if files.is_empty() {
        bail!("{}: no subtask files (NN-name.json)", dir.display());
    }
    files
        .iter()
        .map(|path| read_subtask(package, path, score_precision, tests))
        .collect()
}

fn read_subtask(
    package: &Path,
    path: &Path,
    score_precision: u32,
    tests: &BTreeMap<String, TestCase>,
) -> Result<Subtask> {
    let text = super::package::read_to_string(package, path)?;
    let value: Value = serde_json::from_str(&text)
        .with_context(|| format!("{}: malformed JSON", path.display()))?;
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let points = match value.get("score") {
        Some(Value::Number(n)) => n.as_f64().unwrap_or(0.0),
        Some(other) => bail!(
            "{}: field `score` must be a number, found {}",
            path.display(),
            kind(other)
        ),
        None => bail!("{}: field `score` is missing", path.display()),
    };
    let Some(Value::Array(list)) = value.get("testcases") else {
        bail!(
            "{}: field `testcases` must be a list of test names",
            path.display()
        );
    };
    let mut test_names = Vec::with_capacity(list.len());
    for item in list {
        let Value::String(test) = item else {
            bail!(
                "{}: field `testcases` must hold strings, found {}",
                path.display(),
                kind(item)
            );
        };
        if !tests.contains_key(test) {
            bail!(
                "{}: subtask {name} names test {test:?}, which has no {test}.in/.out in tests/",
                path.display()
            );
        }
        test_names.push(test.clone());
    }
    Ok(Subtask {
        name,
        points,
        score_precision,
        test_names,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::problem::config::GRADER_CONFIG_PATH;
    use crate::problem::{Communication, UserIo};

    fn write(root: &Path, rel: &str, content: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    /// A small Batch CMS folder: problem `Nile`, two subtasks sharing a test, a checker.
    pub(crate) fn batch_fixture(root: &Path) {
        write(
            root,
            "problem.json",
            r#"{"name": "Nile", "time_limit": 2.0, "memory_limit": 2147483648,
                "task_type": "Batch", "task_type_params": "{}", "year": 2024, "day": "1"}"#,
        );
        write(root, "graders/Nile.h", "int f();\n");
        write(root, "graders/testlib.h", "// testlib\n");
        write(root, "graders/grader.cpp", "int main(){}\n");
        write(root, "checker/checker.cpp", "int main(){}\n");
        write(root, "tests/0-01.in", "1\n");
        write(root, "tests/0-01.out", "2\n");
        write(root, "tests/1-01.in", "3\n");
        write(root, "tests/1-01.out", "4\n");
        write(
            root,
            "subtasks/01-N2.json",
            r#"{"score": 30, "testcases": ["0-01", "1-01"]}"#,
        );
        write(
            root,
            "subtasks/00-samples.json",
            r#"{"score": 0, "testcases": ["0-01"]}"#,
        );
    }

    #[test]
    fn loads_a_batch_folder() {
        let dir = tempfile::tempdir().unwrap();
        batch_fixture(dir.path());
        let (p, tests) = load_cms(dir.path()).unwrap();
        assert_eq!(p.id, "nile");
        assert_eq!(p.name, "Nile");
        assert_eq!((p.year, p.day.as_str()), (2024, "1"));
        assert_eq!(p.task, TaskType::Batch);
        assert_eq!(p.time_limit, 2.0);
        assert_eq!(p.memory_limit, 2147483648);
        let names: Vec<_> = p.subtasks.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["00-samples", "01-N2"]);
        assert_eq!(p.subtasks[1].points, 30.0);
        assert_eq!(p.subtasks[1].score_precision, 2);
        assert_eq!(p.subtasks[1].test_names, ["0-01", "1-01"]);
        let paths: Vec<_> = p.grader_files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "checker/checker.cpp",
                "graders/Nile.h",
                "graders/grader.cpp",
                "graders/grader_config.json",
                "graders/testlib.h"
            ]
        );
        assert!(p.checker().is_some());
        let t = tests.get("1-01").unwrap();
        assert_eq!(std::fs::read_to_string(&t.input).unwrap(), "3\n");
        assert_eq!(std::fs::read_to_string(&t.output).unwrap(), "4\n");
        assert_eq!(tests.cases.len(), 2);
    }

    #[test]
    fn loads_communication_params_from_problem_json() {
        let dir = tempfile::tempdir().unwrap();
        batch_fixture(dir.path());
        write(
            dir.path(),
            "problem.json",
            r#"{"name": "Nile", "time_limit": 1, "memory_limit": 1073741824, "score_precision": 0,
                "task_type": "Communication",
                "task_type_params": "{\"task_type_parameters_Communication_num_processes\": 2, \"task_type_parameters_Communication_user_io\": \"fifo_io\"}"}"#,
        );
        write(dir.path(), "graders/manager.cpp", "int main(){}\n");
        let (p, _) = load_cms(dir.path()).unwrap();
        assert_eq!(
            p.task,
            TaskType::Communication(Communication {
                num_processes: 2,
                user_io: UserIo::FifoIo,
                manager_args: vec![],
            })
        );
        assert_eq!(p.subtasks[0].score_precision, 0);
        let generated = p.grader_file(GRADER_CONFIG_PATH).unwrap();
        let cfg =
            config::parse_config(std::str::from_utf8(&generated.content).unwrap(), "g").unwrap();
        assert_eq!(cfg.task(None), Some(p.task.clone()));
    }

    fn load_err(setup: impl FnOnce(&Path)) -> String {
        let dir = tempfile::tempdir().unwrap();
        batch_fixture(dir.path());
        setup(dir.path());
        format!("{:#}", load_cms(dir.path()).unwrap_err())
    }

    #[test]
    fn subtask_naming_a_missing_test() {
        let err = load_err(|d| {
            write(
                d,
                "subtasks/02-big.json",
                r#"{"score": 70, "testcases": ["2-05"]}"#,
            )
        });
        assert!(
            err.contains("02-big.json") && err.contains("subtask 02-big") && err.contains("2-05"),
            "{err}"
        );
    }

    #[test]
    fn no_header_means_no_id() {
        let err = load_err(|d| std::fs::remove_file(d.join("graders/Nile.h")).unwrap());
        assert!(
            err.contains("graders") && err.contains("problem id"),
            "{err}"
        );
    }

    #[test]
    fn communication_needs_a_manager() {
        let err = load_err(|d| {
            write(
                d,
                "problem.json",
                r#"{"time_limit": 1, "memory_limit": 1073741824, "task_type": "Communication"}"#,
            )
        });
        assert!(err.contains("graders/manager.cpp"), "{err}");
    }

    #[test]
    fn input_without_output() {
        let err = load_err(|d| write(d, "tests/2-01.in", "x"));
        assert!(
            err.contains("tests") && err.contains("2-01.in but no 2-01.out"),
            "{err}"
        );
    }

    #[test]
    fn malformed_json_names_the_file() {
        let err = load_err(|d| write(d, "subtasks/01-N2.json", "{\"score\": "));
        assert!(
            err.contains("01-N2.json") && err.contains("malformed JSON"),
            "{err}"
        );
        let err = load_err(|d| write(d, "problem.json", "{"));
        assert!(
            err.contains("problem.json") && err.contains("malformed JSON"),
            "{err}"
        );
    }

    #[test]
    fn missing_limit_names_the_field() {
        let err = load_err(|d| {
            write(
                d,
                "problem.json",
                r#"{"task_type": "Batch", "time_limit": 1}"#,
            )
        });
        assert!(
            err.contains("problem.json") && err.contains("`memory_limit`"),
            "{err}"
        );
    }

    #[test]
    fn output_only_is_refused() {
        let err = load_err(|d| {
            write(
                d,
                "problem.json",
                r#"{"task_type": "OutputOnly", "time_limit": 1, "memory_limit": 1073741824}"#,
            )
        });
        assert!(
            err.contains("problem.json") && err.contains("OutputOnly"),
            "{err}"
        );
    }
}
