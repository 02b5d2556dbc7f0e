//! Task configuration files: `graders/grader_config.json` (open-r1/ioi) and CMS `problem.json`.
//!
//! Both carry the task type and limits, and for Communication tasks the number of user
//! processes, the user I/O mode and extra manager arguments. In the wild those parameters are
//! spelled in several ways (docs/data.md#problems): flat top-level keys
//! `task_type_parameters_Communication_<param>`, or inside `task_type_params`, which is an
//! object or a JSON-encoded string whose keys are either the long or the short (`<param>`)
//! names. This module accepts all of them and turns them into one [`TaskConfig`].

use std::path::Path;

use anyhow::{bail, Context, Result};
use serde_json::{Map, Value};

use super::{Communication, Problem, TaskType, UserIo};
use crate::dataset::kind;

/// Where `graders/grader_config.json` lives among a problem's grader files.
pub const GRADER_CONFIG_PATH: &str = "graders/grader_config.json";

const LONG_PREFIX: &str = "task_type_parameters_Communication_";

/// The task types ioi-run judges; OutputOnly and TwoSteps are out of scope (docs/README.md#scope).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskKind {
    Batch,
    Communication,
}

impl TaskKind {
    /// Parses a `task_type` value; `origin` names the file and field for the error.
    pub fn parse(value: &str, origin: &str) -> Result<TaskKind> {
        match value.trim().to_ascii_lowercase().as_str() {
            "batch" => Ok(TaskKind::Batch),
            "communication" => Ok(TaskKind::Communication),
            _ => bail!(
                "{origin}: task type {value:?} is not supported (ioi-run judges Batch and \
                 Communication tasks; OutputOnly and TwoSteps are out of scope)"
            ),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TaskKind::Batch => "Batch",
            TaskKind::Communication => "Communication",
        }
    }

    pub fn of(task: &TaskType) -> TaskKind {
        match task {
            TaskType::Batch => TaskKind::Batch,
            TaskType::Communication(_) => TaskKind::Communication,
        }
    }
}

/// What a configuration file says. Every field is optional in the file; Communication
/// parameters default to one process with `std_io` and no manager arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskConfig {
    /// `code`: usually the problem id.
    pub code: Option<String>,
    pub name: Option<String>,
    pub task_kind: Option<TaskKind>,
    /// Parameters used when the task is (or is overridden to be) Communication.
    pub communication: Communication,
    /// Seconds.
    pub time_limit: Option<f64>,
    /// Bytes.
    pub memory_limit: Option<u64>,
}

impl TaskConfig {
    /// The task type this configuration describes, with `kind` (for example a dataset row's
    /// `task_type`) taking precedence over the file's own; `None` when neither says.
    pub fn task(&self, kind: Option<TaskKind>) -> Option<TaskType> {
        match kind.or(self.task_kind)? {
            TaskKind::Batch => Some(TaskType::Batch),
            TaskKind::Communication => Some(TaskType::Communication(self.communication.clone())),
        }
    }
}

/// Reads and parses a configuration file.
pub fn read_config(path: &Path) -> Result<TaskConfig> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    parse_config(&text, &path.display().to_string())
}

/// Parses the text of a configuration file; `origin` (a path, or a dataset row and grader file)
/// prefixes every error.
pub fn parse_config(text: &str, origin: &str) -> Result<TaskConfig> {
    let value: Value =
        serde_json::from_str(text).with_context(|| format!("{origin}: malformed JSON"))?;
    let Value::Object(top) = value else {
        bail!("{origin}: expected a JSON object, found {}", kind(&value));
    };
    let params = communication_params(&top, origin)?;
    Ok(TaskConfig {
        code: optional_string(&top, "code", origin)?,
        name: optional_string(&top, "name", origin)?,
        task_kind: optional_string(&top, "task_type", origin)?
            .map(|t| TaskKind::parse(&t, &format!("{origin}: field `task_type`")))
            .transpose()?,
        communication: communication(&params, origin)?,
        time_limit: top
            .get("time_limit")
            .filter(|v| !v.is_null())
            .map(|v| seconds(v, &format!("{origin}: field `time_limit`")))
            .transpose()?,
        memory_limit: top
            .get("memory_limit")
            .filter(|v| !v.is_null())
            .map(|v| bytes(v, &format!("{origin}: field `memory_limit`")))
            .transpose()?,
    })
}

/// Collects the Communication parameters under their short names, each with the field path it
/// came from (for errors). Flat top-level keys win over `task_type_params`.
fn communication_params(
    top: &Map<String, Value>,
    origin: &str,
) -> Result<Vec<(String, String, Value)>> {
    let mut params = Vec::new();
    for (key, value) in top {
        if let Some(short) = key.strip_prefix(LONG_PREFIX) {
            params.push((short.to_string(), key.clone(), value.clone()));
        }
    }
    let nested = match top.get("task_type_params") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(Value::String(s)) if s.trim().is_empty() => Map::new(),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(m)) => m,
            Ok(Value::Null) => Map::new(),
            Ok(other) => bail!(
                "{origin}: field `task_type_params` must encode a JSON object, found {}",
                kind(&other)
            ),
            Err(e) => bail!("{origin}: field `task_type_params` is not valid JSON: {e}"),
        },
        Some(other) => bail!(
            "{origin}: field `task_type_params` must be an object or a JSON string, found {}",
            kind(other)
        ),
    };
    for (key, value) in nested {
        // Parameters of other task types (`task_type_parameters_Batch_*`) are not ours.
        let short = match key.strip_prefix(LONG_PREFIX) {
            Some(short) => short.to_string(),
            None if key.starts_with("task_type_parameters_") => continue,
            None => key.clone(),
        };
        if !params.iter().any(|(s, _, _)| *s == short) {
            params.push((short, format!("task_type_params.{key}"), value));
        }
    }
    Ok(params)
}

fn communication(params: &[(String, String, Value)], origin: &str) -> Result<Communication> {
    let mut comm = Communication {
        num_processes: 1,
        user_io: UserIo::StdIo,
        manager_args: Vec::new(),
    };
    for (short, field, value) in params {
        let at = format!("{origin}: field `{field}`");
        if value.is_null() {
            continue;
        }
        match short.as_str() {
            "num_processes" => comm.num_processes = num_processes(value, &at)?,
            "user_io" => comm.user_io = user_io(value, &at)?,
            "manager_args" => comm.manager_args = manager_args(value, &at)?,
            _ => {}
        }
    }
    Ok(comm)
}

fn num_processes(value: &Value, at: &str) -> Result<usize> {
    match integer(value) {
        Some(n) if n >= 1 => Ok(n as usize),
        _ => bail!("{at} must be a positive integer, found {value}"),
    }
}

fn user_io(value: &Value, at: &str) -> Result<UserIo> {
    let Value::String(s) = value else {
        bail!("{at} must be \"std_io\" or \"fifo_io\", found {value}");
    };
    match s.trim().to_ascii_lowercase().as_str() {
        "std_io" | "stdio" | "std" => Ok(UserIo::StdIo),
        "fifo_io" | "fifo" => Ok(UserIo::FifoIo),
        _ => bail!("{at} must be \"std_io\" or \"fifo_io\", found {s:?}"),
    }
}

/// A list of strings (numbers accepted), or one string split on whitespace.
fn manager_args(value: &Value, at: &str) -> Result<Vec<String>> {
    match value {
        Value::String(s) => Ok(s.split_whitespace().map(str::to_string).collect()),
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::String(s) => Ok(s.clone()),
                Value::Number(n) => Ok(n.to_string()),
                other => bail!("{at} must hold strings, found {}", kind(other)),
            })
            .collect(),
        other => bail!("{at} must be a list of strings, found {}", kind(other)),
    }
}

fn optional_string(top: &Map<String, Value>, field: &str, origin: &str) -> Result<Option<String>> {
    match top.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => bail!(
            "{origin}: field `{field}` must be a string, found {}",
            kind(other)
        ),
    }
}

/// An integer, also when written as an integral float or a string.
pub(crate) fn integer(value: &Value) -> Option<i64> {
    match value {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// A time limit in seconds: a positive finite number (or numeric string).
pub(crate) fn seconds(value: &Value, at: &str) -> Result<f64> {
    let secs = match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    match secs {
        Some(s) if s.is_finite() && s > 0.0 => Ok(s),
        _ => bail!("{at} must be a positive number of seconds, found {value}"),
    }
}

/// A memory limit in bytes: a positive integer.
pub(crate) fn bytes(value: &Value, at: &str) -> Result<u64> {
    match integer(value) {
        Some(b) if b > 0 => {
            if b < 1 << 20 {
                tracing::warn!("{at} is {b} bytes; memory limits are in bytes, not MiB");
            }
            Ok(b as u64)
        }
        _ => bail!("{at} must be a positive integer number of bytes, found {value}"),
    }
}

/// A `graders/grader_config.json` describing `problem`, written with the flat Communication
/// keys, so that script-mode graders and the open-r1 loader see the problem's real task type.
pub fn grader_config_json(problem: &Problem) -> String {
    let mut top = Map::new();
    top.insert("code".into(), Value::from(problem.id.clone()));
    top.insert("name".into(), Value::from(problem.name.clone()));
    top.insert(
        "task_type".into(),
        Value::from(TaskKind::of(&problem.task).as_str()),
    );
    top.insert("time_limit".into(), Value::from(problem.time_limit));
    top.insert("memory_limit".into(), Value::from(problem.memory_limit));
    if let TaskType::Communication(comm) = &problem.task {
        let user_io = match comm.user_io {
            UserIo::StdIo => "std_io",
            UserIo::FifoIo => "fifo_io",
        };
        top.insert(
            format!("{LONG_PREFIX}num_processes"),
            Value::from(comm.num_processes),
        );
        top.insert(format!("{LONG_PREFIX}user_io"), Value::from(user_io));
        top.insert(
            format!("{LONG_PREFIX}manager_args"),
            Value::from(comm.manager_args.clone()),
        );
    }
    let mut text = serde_json::to_string_pretty(&Value::Object(top)).unwrap_or_default();
    text.push('\n');
    text
}

/// Makes `problem`'s `graders/grader_config.json` describe its task type: adds one when absent
/// and replaces one whose task type or Communication parameters disagree (limits are not
/// compared: dataset rows override them). Script-mode graders read the task type from this file,
/// and the open-r1 layout keeps Communication parameters only there.
pub fn ensure_grader_config(problem: &mut Problem) {
    let current = problem
        .grader_file(GRADER_CONFIG_PATH)
        .and_then(|f| parse_config(&String::from_utf8_lossy(&f.content), GRADER_CONFIG_PATH).ok());
    if current.is_some_and(|c| c.task(None).as_ref() == Some(&problem.task)) {
        return;
    }
    let content = grader_config_json(problem).into_bytes();
    problem
        .grader_files
        .retain(|f| f.path != GRADER_CONFIG_PATH);
    problem.grader_files.push(super::GraderFile {
        path: crate::name::RelativePath::parse(GRADER_CONFIG_PATH)
            .expect("the grader config's path is a relative path"),
        content,
    });
    problem.grader_files.sort_by(|a, b| a.path.cmp(&b.path));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comm(n: usize, io: UserIo, args: &[&str]) -> TaskType {
        TaskType::Communication(Communication {
            num_processes: n,
            user_io: io,
            manager_args: args.iter().map(|s| s.to_string()).collect(),
        })
    }

    #[test]
    fn batch_config_reads_limits() {
        let c = parse_config(
            r#"{"code": "nile", "task_type": "Batch", "time_limit": 2, "memory_limit": 2147483648, "task_type_params": "{}"}"#,
            "g.json",
        )
        .unwrap();
        assert_eq!(c.code.as_deref(), Some("nile"));
        assert_eq!(c.task(None), Some(TaskType::Batch));
        assert_eq!(c.time_limit, Some(2.0));
        assert_eq!(c.memory_limit, Some(2147483648));
    }

    #[test]
    fn flat_communication_keys() {
        let c = parse_config(
            r#"{"task_type": "Communication",
                "task_type_parameters_Communication_num_processes": 2,
                "task_type_parameters_Communication_user_io": "fifo_io",
                "task_type_parameters_Communication_manager_args": ["x", 3]}"#,
            "g.json",
        )
        .unwrap();
        assert_eq!(c.task(None), Some(comm(2, UserIo::FifoIo, &["x", "3"])));
    }

    #[test]
    fn task_type_params_as_object_with_long_keys() {
        let c = parse_config(
            r#"{"task_type": "Communication", "task_type_params":
                {"task_type_parameters_Communication_num_processes": 3,
                 "task_type_parameters_Communication_user_io": "std_io"}}"#,
            "g.json",
        )
        .unwrap();
        assert_eq!(c.task(None), Some(comm(3, UserIo::StdIo, &[])));
    }

    #[test]
    fn task_type_params_as_json_string_with_short_keys() {
        let c = parse_config(
            r#"{"task_type": "Communication", "task_type_params":
                "{\"num_processes\": \"2\", \"user_io\": \"fifo_io\", \"manager_args\": \"a b\"}"}"#,
            "g.json",
        )
        .unwrap();
        assert_eq!(c.task(None), Some(comm(2, UserIo::FifoIo, &["a", "b"])));
    }

    #[test]
    fn task_type_params_as_json_string_with_long_keys() {
        let c = parse_config(
            r#"{"task_type": "Communication", "task_type_params":
                "{\"task_type_parameters_Communication_num_processes\": 2, \"task_type_parameters_Batch_io\": \"x\"}"}"#,
            "g.json",
        )
        .unwrap();
        assert_eq!(c.task(None), Some(comm(2, UserIo::StdIo, &[])));
    }

    #[test]
    fn communication_defaults_and_row_override() {
        let c = parse_config(r#"{"task_type": "Batch"}"#, "g.json").unwrap();
        assert_eq!(
            c.task(Some(TaskKind::Communication)),
            Some(comm(1, UserIo::StdIo, &[]))
        );
        let empty = parse_config("{}", "g.json").unwrap();
        assert_eq!(empty.task(None), None);
        assert_eq!(empty.time_limit, None);
    }

    #[test]
    fn unknown_task_types_are_refused() {
        for t in ["OutputOnly", "TwoSteps"] {
            let err = parse_config(&format!(r#"{{"task_type": "{t}"}}"#), "p/problem.json")
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("p/problem.json") && err.contains("task_type") && err.contains(t),
                "{err}"
            );
        }
    }

    #[test]
    fn bad_values_name_file_and_field() {
        let cases = [
            (
                r#"{"task_type_parameters_Communication_user_io": "pipe"}"#,
                "task_type_parameters_Communication_user_io",
            ),
            (
                r#"{"task_type_params": "{\"num_processes\": 0}"}"#,
                "task_type_params.num_processes",
            ),
            (r#"{"task_type_params": "{oops"}"#, "task_type_params"),
            (r#"{"time_limit": "fast"}"#, "time_limit"),
            (r#"{"memory_limit": 1.5}"#, "memory_limit"),
        ];
        for (text, field) in cases {
            let err = format!("{:#}", parse_config(text, "cfg.json").unwrap_err());
            assert!(
                err.contains("cfg.json") && err.contains(&format!("`{field}`")),
                "{text}: {err}"
            );
        }
        let err = format!("{:#}", parse_config("{not json", "cfg.json").unwrap_err());
        assert!(
            err.contains("cfg.json") && err.contains("malformed JSON"),
            "{err}"
        );
    }

    #[test]
    fn generated_grader_config_parses_back() {
        let problem = Problem {
            year: 2024,
            id: "x".into(),
            name: "X".into(),
            day: "1".into(),
            task: comm(2, UserIo::FifoIo, &["--a"]),
            time_limit: 1.5,
            memory_limit: 1 << 30,
            subtasks: vec![],
            grader_files: vec![],
        };
        let c = parse_config(&grader_config_json(&problem), "gen").unwrap();
        assert_eq!(c.task(None), Some(problem.task.clone()));
        assert_eq!(c.time_limit, Some(1.5));
        assert_eq!(c.memory_limit, Some(1 << 30));
    }
}
