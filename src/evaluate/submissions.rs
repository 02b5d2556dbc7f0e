//! Submissions to judge, loaded from datasets named on the command line (docs/data.md#submissions).
//!
//! A dataset is one local file, one folder (every parquet/jsonl under it, all splits), each match
//! of a glob, or a Hugging Face dataset (`org/name`, `org/prefix-*`) when the string names no
//! local path. Each dataset has a config name that names its results file, its parquet config
//! and its reports folder.
//!
//! Loading keeps every field of the original row (the results carry them all) and adds what the
//! judge needs: the code, extracted from the generation when needed, and the key that identifies
//! the submission across restarts.

use std::collections::HashMap;
use std::path::PathBuf;

use anyhow::{Context, Result};
use serde_json::{json, Map, Value};

use crate::catalog::DatasetSource;
use crate::dataset::{kind, read_rows_within, Row, RowBounds, RowPolicy};
use crate::judge::Language;

/// Year assumed for submissions without a `year` field (the reference pipeline's default).
pub const DEFAULT_YEAR: i64 = 2024;

/// How rows become submissions (the CLI's submission options).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubmissionOptions {
    /// Column holding the submission's identifier (`--id-column`, default `uuid`).
    pub id_column: String,
    /// Take the code from `generation` even when `code` is filled (`--always-extract-code`).
    pub always_extract_code: bool,
    /// Prepend the includes models often forget (`--add-includes`).
    pub add_includes: bool,
    /// Add a `messages` field formatted for SFT (`--add-messages-column`).
    pub add_messages_column: bool,
}

impl Default for SubmissionOptions {
    fn default() -> Self {
        SubmissionOptions {
            id_column: "uuid".to_string(),
            always_extract_code: false,
            add_includes: false,
            add_messages_column: false,
        }
    }
}

/// What identifies a submission within a dataset, in the results file as in the input: ids only
/// need to be unique per problem (the reference keys on year, problem and id too).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SubmissionKey {
    pub year: i64,
    /// Lowercase problem id.
    pub problem_id: String,
    pub id: String,
}

impl SubmissionKey {
    /// The key of a submission or results row; errors name the row and the missing field.
    pub fn of_row(row: &Row, id_column: &str) -> Result<SubmissionKey> {
        Ok(SubmissionKey {
            year: match row.get("year") {
                Some(_) => row.int("year")?,
                None => DEFAULT_YEAR,
            },
            problem_id: row.str("problem_id")?.to_lowercase(),
            id: id_value(row, id_column)?,
        })
    }
}

impl std::fmt::Display for SubmissionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}` of {} {}", self.id, self.year, self.problem_id)
    }
}

/// One submission to judge.
#[derive(Debug, Clone, PartialEq)]
pub struct Submission {
    /// Value of the id column (integers are written in decimal).
    pub id: String,
    /// Problem id, lowercased: the submission file is `graders/<problem_id>.cpp`.
    pub problem_id: String,
    pub year: i64,
    /// The subtask the model targeted (the row's `subtask` field).
    pub target_subtask: Option<String>,
    /// The code to judge, after extraction and `--add-includes`; `None` when there is none
    /// (such a submission is scored all SKIPPED).
    pub code: Option<String>,
    /// The code's language: the row's `language` field (`cpp` when missing or null), or C for
    /// a generation whose only code block is a ```` ```c ```` one.
    pub language: Language,
    /// Length of the model's reasoning, used to rank submissions in the round-robin selection.
    pub reasoning_length: i64,
    /// Every field of the original row, with `year` defaulted, `code` replaced by the code above
    /// and `messages` added when asked: the submission part of its results row.
    pub fields: Map<String, Value>,
    /// `file row N`, for messages.
    pub origin: String,
}

impl Submission {
    /// The key under which this submission is stored in the results file.
    pub fn key(&self) -> SubmissionKey {
        SubmissionKey {
            year: self.year,
            problem_id: self.problem_id.clone(),
            id: self.id.clone(),
        }
    }

    /// Builds a submission from one dataset row.
    pub fn from_row(row: &Row, options: &SubmissionOptions) -> Result<Submission> {
        let SubmissionKey {
            year,
            problem_id,
            id,
        } = SubmissionKey::of_row(row, &options.id_column)?;
        let target_subtask = optional_str(row, "subtask")?;
        if !row.fields.contains_key("code") && !row.fields.contains_key("generation") {
            return Err(row.error(
                Some("code"),
                "a submission needs a `code` or a `generation` field",
            ));
        }
        let generation = optional_str(row, "generation")?;
        let given = optional_str(row, "code")?.filter(|c| !c.is_empty());
        let stated = match row.get("language") {
            None | Some(Value::Null) => None,
            Some(_) => Some(
                Language::parse(row.str("language")?)
                    .map_err(|e| row.error(Some("language"), format!("field `language`: {e:#}")))?,
            ),
        };
        let (code, language) = match (given, options.always_extract_code) {
            (Some(code), false) => (Some(code), stated.unwrap_or_default()),
            _ => {
                let generation = generation.as_deref().unwrap_or_default();
                match stated {
                    Some(language) => (extract_code_in(generation, language), language),
                    None => match extract_code(generation) {
                        Some(code) => (Some(code), Language::Cpp),
                        None => match extract_code_in(generation, Language::C) {
                            Some(code) => (Some(code), Language::C),
                            None => (None, Language::Cpp),
                        },
                    },
                }
            }
        };
        let code = code.filter(|c| !c.is_empty()).map(|c| {
            match options.add_includes && language == Language::Cpp {
                true => add_includes(&c, &problem_id),
                false => c,
            }
        });

        let mut fields = row.fields.clone();
        fields.insert("year".into(), json!(year));
        fields.insert("code".into(), json!(code));
        if options.add_messages_column {
            let prompt = row.str("prompt")?;
            let generation = row.str("generation")?;
            fields.insert(
                "messages".into(),
                json!([
                    {"role": "user", "content": prompt},
                    {"role": "assistant", "content": generation.trim()},
                ]),
            );
        }
        Ok(Submission {
            id,
            problem_id,
            year,
            target_subtask,
            code,
            language,
            reasoning_length: reasoning_length(&row.fields),
            fields,
            origin: row.location(),
        })
    }
}

fn id_value(row: &Row, column: &str) -> Result<String> {
    match row.get(column) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Ok(n.to_string()),
        Some(other) => Err(row.error(
            Some(column),
            format!(
                "id field `{column}` must be a string or an integer, found {}",
                kind(other)
            ),
        )),
        None => Err(row.error(
            Some(column),
            format!("required field `{column}` is missing (choose the id column with --id-column)"),
        )),
    }
}

fn optional_str(row: &Row, field: &str) -> Result<Option<String>> {
    match row.get(field) {
        None => Ok(None),
        Some(_) => row.str(field).map(|s| Some(s.to_string())),
    }
}

/// The code of the last ```` ```cpp ```` block of a generation, exactly as the reference does:
/// the text after the last "```cpp\n" up to the next "```" (or the end, when the model was cut
/// off mid-block). `None` when there is no such block.
pub fn extract_code(generation: &str) -> Option<String> {
    extract_code_in(generation, Language::Cpp)
}

/// The code of the last block of `language` (```` ```cpp ```` or ```` ```c ````), as
/// [`extract_code`] does.
pub fn extract_code_in(generation: &str, language: Language) -> Option<String> {
    let opening = format!("```{}\n", language.as_str());
    let start = generation.rfind(&opening)? + opening.len();
    let block = &generation[start..];
    let end = block.find("```").unwrap_or(block.len());
    Some(block[..end].to_string())
}

/// Prepends what models often forget (`--add-includes`): `<bits/stdc++.h>`, the problem's header
/// unless already included, and `using namespace std;` unless the code says it or uses `std::`.
pub fn add_includes(code: &str, problem_id: &str) -> String {
    let mut header = String::from("#include <bits/stdc++.h>\n");
    let problem_header = format!("#include \"{problem_id}.h\"");
    if !code.contains(&problem_header) {
        header.push_str(&problem_header);
        header.push('\n');
    }
    if !code.contains("using namespace std;") && !code.contains("std::") {
        header.push_str("\nusing namespace std;\n\n");
    }
    header + code
}

/// Length of the reasoning behind a submission: `metadata.usage.output_tokens`, else
/// `metadata.usage.completion_tokens`, else the number of characters of `generation`, else 0.
pub fn reasoning_length(fields: &Map<String, Value>) -> i64 {
    let usage = fields.get("metadata").and_then(|m| m.get("usage"));
    let tokens = |name: &str| usage.and_then(|u| u.get(name)).and_then(as_count);
    tokens("output_tokens")
        .or_else(|| tokens("completion_tokens"))
        .or_else(|| {
            fields
                .get("generation")
                .and_then(Value::as_str)
                .map(|g| g.chars().count() as i64)
        })
        .unwrap_or(0)
}

fn as_count(v: &Value) -> Option<i64> {
    v.as_i64()
        .or_else(|| v.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
}

/// Reads every submission of `dataset`. Ids must be unique per year and problem. A bad row
/// (malformed, a field missing or of the wrong type, a duplicate id) goes to `rows`: skipped and
/// recorded there, or refusing the dataset.
pub fn load_dataset(
    dataset: &DatasetSource,
    options: &SubmissionOptions,
    rows: &RowPolicy,
) -> Result<Vec<Submission>> {
    load_submissions(&dataset.files, options, rows)
        .with_context(|| format!("cannot load the submissions of `{}`", dataset.origin))
}

/// Reads the submissions of some dataset files; a bad row, including a second row with the same
/// id (per year and problem), is skipped or refuses the files, as `rows` says.
pub fn load_submissions(
    files: &[PathBuf],
    options: &SubmissionOptions,
    rows: &RowPolicy,
) -> Result<Vec<Submission>> {
    let mut submissions = Vec::new();
    let mut seen: HashMap<SubmissionKey, String> = HashMap::new();
    for file in files {
        for row in
            read_rows_within(file, None, RowBounds::SUBMISSIONS).map_err(crate::error::bad_input)?
        {
            let read = row.and_then(|row| {
                let submission = Submission::from_row(&row, options)?;
                if let Some(first) = seen.get(&submission.key()) {
                    return Err(row.error(
                        Some(&options.id_column),
                        format!(
                            "duplicate submission {} (first at {first}); ids in `{}` must be \
                             unique per problem",
                            submission.key(),
                            options.id_column
                        ),
                    ));
                }
                Ok(submission)
            });
            match read {
                Ok(submission) => {
                    seen.insert(submission.key(), submission.origin.clone());
                    submissions.push(submission);
                }
                Err(e) => rows.skip_or_refuse(e)?,
            }
        }
    }
    Ok(submissions)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::resolve_datasets;
    use arrow::array::{ArrayRef, Int64Array, StringArray};
    use arrow::record_batch::RecordBatch;
    use std::path::Path;
    use std::sync::Arc;

    fn row(fields: Value) -> Row {
        Row {
            file: Arc::new(PathBuf::from("subs.jsonl")),
            index: 3,
            fields: fields.as_object().unwrap().clone(),
        }
    }

    fn options() -> SubmissionOptions {
        SubmissionOptions::default()
    }

    #[test]
    fn extraction_takes_the_last_cpp_block_like_the_reference() {
        let generation =
            "think\n```cpp\nint a;\n```\nmore\n```python\nx\n```\n```cpp\nint b;\n```\nbye";
        assert_eq!(extract_code(generation).as_deref(), Some("int b;\n"));
        // Cut off mid-block: the rest of the text.
        assert_eq!(extract_code("```cpp\nint c;").as_deref(), Some("int c;"));
        assert_eq!(extract_code("no code ```c++\nint d;\n```"), None);
    }

    #[test]
    fn code_comes_from_generation_only_when_empty_or_forced() {
        let fields = json!({"uuid": "u1", "problem_id": "Nile", "code": "",
                            "generation": "```cpp\nint x;\n```"});
        let s = Submission::from_row(&row(fields.clone()), &options()).unwrap();
        assert_eq!(s.code.as_deref(), Some("int x;\n"));
        assert_eq!(s.fields["code"], json!("int x;\n"));
        assert_eq!(s.problem_id, "nile");
        assert_eq!(s.year, 2024);
        assert_eq!(s.fields["year"], json!(2024));

        let mut given = fields.clone();
        given["code"] = json!("int given;");
        let s = Submission::from_row(&row(given.clone()), &options()).unwrap();
        assert_eq!(s.code.as_deref(), Some("int given;"));
        let forced = SubmissionOptions {
            always_extract_code: true,
            ..options()
        };
        let s = Submission::from_row(&row(given), &forced).unwrap();
        assert_eq!(s.code.as_deref(), Some("int x;\n"));

        let none = json!({"uuid": "u2", "problem_id": "nile", "generation": "I give up"});
        let s = Submission::from_row(&row(none), &options()).unwrap();
        assert_eq!(s.code, None);
        assert_eq!(s.fields["code"], Value::Null);
    }

    #[test]
    fn the_language_column_or_a_c_block_makes_the_code_c() {
        let c = Submission::from_row(
            &row(json!({"uuid": "a", "problem_id": "x", "language": "c",
                        "generation": "```cpp\nint a;\n```\n```c\nint b;\n```"})),
            &options(),
        )
        .unwrap();
        assert_eq!(
            (c.language, c.code.as_deref()),
            (Language::C, Some("int b;\n"))
        );
        let marked = Submission::from_row(
            &row(json!({"uuid": "b", "problem_id": "x", "generation": "```c\nint c;\n```"})),
            &options(),
        )
        .unwrap();
        assert_eq!(
            (marked.language, marked.code.as_deref()),
            (Language::C, Some("int c;\n"))
        );
        let default = Submission::from_row(
            &row(json!({"uuid": "c", "problem_id": "x", "language": null, "code": "int d;"})),
            &options(),
        )
        .unwrap();
        assert_eq!(default.language, Language::Cpp);
        let err = Submission::from_row(
            &row(json!({"uuid": "d", "problem_id": "x", "language": "rust", "code": "x"})),
            &options(),
        )
        .unwrap_err();
        let err = format!("{err:#}");
        assert!(
            err.contains("field `language`") && err.contains("\"rust\""),
            "{err}"
        );
    }

    #[test]
    fn add_includes_follows_the_three_rules() {
        assert_eq!(
            add_includes("int f() { return 1; }", "nile"),
            "#include <bits/stdc++.h>\n#include \"nile.h\"\n\nusing namespace std;\n\nint f() { return 1; }"
        );
        assert_eq!(
            add_includes("#include \"nile.h\"\nstd::vector<int> v;", "nile"),
            "#include <bits/stdc++.h>\n#include \"nile.h\"\nstd::vector<int> v;"
        );
        assert_eq!(
            add_includes("using namespace std;\nint x;", "tree"),
            "#include <bits/stdc++.h>\n#include \"tree.h\"\nusing namespace std;\nint x;"
        );
        let fields = json!({"uuid": "u", "problem_id": "Nile", "code": "int x;"});
        let with = SubmissionOptions {
            add_includes: true,
            ..options()
        };
        let s = Submission::from_row(&row(fields), &with).unwrap();
        assert!(s
            .code
            .unwrap()
            .starts_with("#include <bits/stdc++.h>\n#include \"nile.h\"\n"));
    }

    #[test]
    fn messages_and_reasoning_length() {
        let fields = json!({"uuid": 17, "problem_id": "nile", "prompt": "Solve",
                            "generation": "  héllo  ", "subtask": "01-a", "year": 2023});
        let with = SubmissionOptions {
            add_messages_column: true,
            ..options()
        };
        let s = Submission::from_row(&row(fields), &with).unwrap();
        assert_eq!(s.id, "17");
        assert_eq!(s.year, 2023);
        assert_eq!(s.target_subtask.as_deref(), Some("01-a"));
        assert_eq!(s.reasoning_length, 9, "characters, not bytes");
        assert_eq!(
            s.fields["messages"],
            json!([{"role": "user", "content": "Solve"},
                   {"role": "assistant", "content": "héllo"}])
        );
        let m = json!({"metadata": {"usage": {"completion_tokens": 40}}, "generation": "abc"});
        assert_eq!(reasoning_length(m.as_object().unwrap()), 40);
        let m = json!({"metadata": {"usage": {"output_tokens": 7, "completion_tokens": 40}}});
        assert_eq!(reasoning_length(m.as_object().unwrap()), 7);
        assert_eq!(reasoning_length(&Map::new()), 0);
    }

    #[test]
    fn missing_fields_are_named_with_file_and_row() {
        let err =
            Submission::from_row(&row(json!({"problem_id": "nile", "code": "x"})), &options())
                .unwrap_err()
                .to_string();
        assert!(
            err.contains("subs.jsonl row 4")
                && err.contains("`uuid`")
                && err.contains("--id-column"),
            "{err}"
        );
        let err = Submission::from_row(&row(json!({"uuid": "a", "code": "x"})), &options())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("subs.jsonl row 4") && err.contains("`problem_id`"),
            "{err}"
        );
        let err = Submission::from_row(&row(json!({"uuid": "a", "problem_id": "p"})), &options())
            .unwrap_err()
            .to_string();
        assert!(err.contains("`code` or a `generation`"), "{err}");
        let with = SubmissionOptions {
            add_messages_column: true,
            ..options()
        };
        let err = Submission::from_row(
            &row(json!({"uuid": "a", "problem_id": "p", "generation": "g"})),
            &with,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("`prompt`"), "{err}");
    }

    fn write_jsonl(path: &Path, rows: &[Value]) {
        let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
        std::fs::write(path, text).unwrap();
    }

    fn write_parquet(path: &Path, ids: &[&str], problems: &[&str]) {
        let batch = RecordBatch::try_from_iter(vec![
            (
                "uuid",
                Arc::new(StringArray::from(ids.to_vec())) as ArrayRef,
            ),
            (
                "problem_id",
                Arc::new(StringArray::from(problems.to_vec())) as ArrayRef,
            ),
            (
                "code",
                Arc::new(StringArray::from(vec!["int x;"; ids.len()])) as ArrayRef,
            ),
            (
                "year",
                Arc::new(Int64Array::from(vec![2024; ids.len()])) as ArrayRef,
            ),
        ])
        .unwrap();
        let file = std::fs::File::create(path).unwrap();
        let mut w = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
    }

    #[test]
    fn datasets_resolve_from_files_folders_and_globs() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write_jsonl(
            &root.join("model-a.jsonl"),
            &[json!({"uuid": "a1", "problem_id": "nile", "code": "int a;"})],
        );
        std::fs::create_dir_all(root.join("model-b/data")).unwrap();
        write_parquet(
            &root.join("model-b/data/train-0.parquet"),
            &["b1", "b2"],
            &["nile", "tree"],
        );
        write_parquet(
            &root.join("model-b/data/test-0.parquet"),
            &["b3"],
            &["nile"],
        );
        std::fs::write(root.join("notes.txt"), "not a dataset").unwrap();

        let list = format!(
            "{}, {}",
            root.join("model-a.jsonl").display(),
            root.join("model-b").display()
        );
        let sources = resolve_datasets(&list).unwrap();
        let names: Vec<_> = sources.iter().map(|s| s.config_name.as_str()).collect();
        assert_eq!(names, ["model-a", "model-b"]);
        let b = load_dataset(&sources[1], &options(), &RowPolicy::new(true)).unwrap();
        let ids: Vec<_> = b.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["b3", "b1", "b2"], "all splits, files in sorted order");
        assert_eq!(b[2].problem_id, "tree");

        let glob = format!("{}/model-*", root.display());
        let sources = resolve_datasets(&glob).unwrap();
        let names: Vec<_> = sources.iter().map(|s| s.config_name.as_str()).collect();
        assert_eq!(
            names,
            ["model-a", "model-b"],
            "each glob match is a dataset"
        );
        let a = load_dataset(&sources[0], &options(), &RowPolicy::new(true)).unwrap();
        assert_eq!(a[0].code.as_deref(), Some("int a;"));

        std::fs::create_dir(root.join("x")).unwrap();
        std::fs::copy(root.join("model-a.jsonl"), root.join("x/model-a.jsonl")).unwrap();
        let err = resolve_datasets(&format!(
            "{0}/model-a.jsonl,{0}/x/model-a.jsonl",
            root.display()
        ))
        .unwrap_err()
        .to_string();
        assert!(err.contains("would both be named `model-a`"), "{err}");
        let err = resolve_datasets(&root.join("nothing-*.jsonl").display().to_string())
            .unwrap_err()
            .to_string();
        assert!(err.contains("no such file"), "{err}");
    }

    #[test]
    fn duplicate_ids_name_both_rows_but_ids_may_repeat_across_problems() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("subs.jsonl");
        write_jsonl(
            &path,
            &[
                json!({"uuid": "same", "problem_id": "nile", "code": "a"}),
                json!({"uuid": "same", "problem_id": "tree", "code": "b"}),
                json!({"uuid": "same", "problem_id": "Nile", "code": "c"}),
            ],
        );
        let strict = RowPolicy::new(true);
        let err = load_submissions(std::slice::from_ref(&path), &options(), &strict)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("subs.jsonl row 3")
                && err.contains("subs.jsonl row 1")
                && err.contains("`same`"),
            "{err}"
        );
        assert_eq!(
            crate::error::class_of(
                &load_submissions(std::slice::from_ref(&path), &options(), &strict).unwrap_err()
            ),
            Some(crate::error::ErrorClass::BadInput)
        );
        // Without --strict the second row is skipped, and recorded with its field.
        let lenient = RowPolicy::new(false);
        let loaded = load_submissions(&[path], &options(), &lenient).unwrap();
        let kept: Vec<&str> = loaded.iter().map(|s| s.problem_id.as_str()).collect();
        assert_eq!(kept, ["nile", "tree"]);
        let skipped = lenient.skipped();
        assert_eq!(skipped.len(), 1);
        assert_eq!(skipped[0]["row"], 3);
        assert_eq!(skipped[0]["field"], "uuid");
    }

    #[test]
    fn a_bad_row_is_skipped_and_the_rest_loads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("subs.jsonl");
        // Row 3 is not UTF-8.
        let mut text = b"{\"uuid\": \"a\", \"problem_id\": \"nile\", \"code\": \"x\"}\n\
                         {\"uuid\": \n\xff\xfe\n"
            .to_vec();
        text.extend_from_slice(
            b"{\"uuid\": \"b\", \"problem_id\": 7, \"code\": \"x\"}\n\
              {\"uuid\": \"c\", \"problem_id\": \"nile\", \"code\": \"x\"}\n",
        );
        std::fs::write(&path, text).unwrap();
        let rows = RowPolicy::new(false);
        let loaded = load_submissions(&[path], &options(), &rows).unwrap();
        let ids: Vec<&str> = loaded.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["a", "c"]);
        let skipped: Vec<(i64, Value)> = rows
            .skipped()
            .iter()
            .map(|r| (r["row"].as_i64().unwrap(), r["field"].clone()))
            .collect();
        assert_eq!(
            skipped,
            [(2, Value::Null), (3, Value::Null), (4, json!("problem_id"))]
        );
    }
}
