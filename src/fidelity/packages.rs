//! Finding official packages and what they expect of each of their solutions: TPS task folders
//! (`solutions.json` beside `solution/`) and CMS exports with categorised solutions
//! (`solutions/<category>/<file>`, as IOI 2024 publishes them). Reads files only.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::rules::{Expectation, Expected};
use crate::problem::tps::{is_tps, TpsPackage};

/// How deep below a given folder task folders are looked for (`year/day/task` at most; the
/// TPS tool's own sample tasks, deeper in an IOI 2022 checkout's `tps/`, stay out).
const MAX_DEPTH: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Tps,
    Cms,
}

/// An official solution and what its package expects of it.
#[derive(Debug, Clone, PartialEq)]
pub struct OfficialSolution {
    /// Path inside the task folder (`solution/x.cpp`, `solutions/correct/x.cpp`).
    pub file: String,
    pub expectation: Expectation,
}

/// A task folder with official solutions.
#[derive(Debug, Clone, PartialEq)]
pub struct Package {
    pub dir: PathBuf,
    /// The folder as shown in reports: its path below the folder the user gave, or its name.
    pub name: String,
    pub format: Format,
    /// C++ solutions, sorted by file.
    pub solutions: Vec<OfficialSolution>,
    /// Solutions not judged, with why (another language, a file that is missing).
    pub not_judged: Vec<(String, String)>,
}

/// Every package in `folders` (each a task folder, or a folder holding task folders), in path
/// order. A folder holding none is an error naming it.
pub fn discover(folders: &[PathBuf]) -> Result<Vec<Package>> {
    let mut packages = Vec::new();
    for folder in folders {
        if !folder.is_dir() {
            bail!("{}: no such folder", folder.display());
        }
        let before = packages.len();
        if is_task(folder) {
            packages.push(read_package(folder, &display_name(folder, None))?);
        } else {
            let mut walk = walkdir::WalkDir::new(folder)
                .min_depth(1)
                .max_depth(MAX_DEPTH)
                .sort_by_file_name()
                .into_iter();
            while let Some(entry) = walk.next() {
                let entry = entry.with_context(|| format!("cannot list {}", folder.display()))?;
                if !entry.file_type().is_dir() || !is_task(entry.path()) {
                    continue;
                }
                walk.skip_current_dir();
                if has_solutions(entry.path()) {
                    let name = display_name(entry.path(), Some(folder));
                    packages.push(read_package(entry.path(), &name)?);
                }
            }
        }
        if packages.len() == before {
            return Err(crate::error::usage(anyhow::anyhow!(
                "{}: no task folder with official solutions (a TPS folder with solutions.json, or \
                 a CMS export with solutions/<category>/)",
                folder.display()
            )));
        }
    }
    Ok(packages)
}

fn is_task(dir: &Path) -> bool {
    dir.join("problem.json").is_file()
}

fn has_solutions(dir: &Path) -> bool {
    dir.join("solutions.json").is_file() || dir.join("solutions").is_dir()
}

fn display_name(dir: &Path, root: Option<&Path>) -> String {
    let relative = root.and_then(|r| dir.strip_prefix(r).ok());
    match relative {
        Some(r) if !r.as_os_str().is_empty() => r.display().to_string(),
        _ => dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| dir.display().to_string()),
    }
}

/// Reads one task folder's solutions and expectations.
pub fn read_package(dir: &Path, name: &str) -> Result<Package> {
    let (format, listed) = if is_tps(dir) {
        (Format::Tps, tps_solutions(dir)?)
    } else {
        (Format::Cms, cms_solutions(dir)?)
    };
    let mut solutions = Vec::new();
    let mut not_judged = Vec::new();
    for solution in listed {
        if !is_cpp(&solution.file) {
            not_judged.push((solution.file, "only C++ is judged".to_string()));
        } else if !dir.join(&solution.file).is_file() {
            not_judged.push((solution.file, "the file is missing".to_string()));
        } else {
            solutions.push(solution);
        }
    }
    solutions.sort_by(|a, b| a.file.cmp(&b.file));
    not_judged.sort();
    Ok(Package {
        dir: dir.to_path_buf(),
        name: name.to_string(),
        format,
        solutions,
        not_judged,
    })
}

fn is_cpp(file: &str) -> bool {
    [".cpp", ".cc", ".cxx"].iter().any(|e| file.ends_with(e))
}

fn tps_solutions(dir: &Path) -> Result<Vec<OfficialSolution>> {
    let package = TpsPackage::read(dir)?;
    let json = dir.join("solutions.json");
    let parse = |name: &str, field: &str| -> Result<Expected> {
        Expected::parse(name).with_context(|| {
            format!(
                "{}: field `{field}`: unknown verdict {name:?} (known: {})",
                json.display(),
                Expected::all_names().join(", ")
            )
        })
    };
    package
        .solutions
        .iter()
        .map(|spec| {
            let verdict = parse(&spec.verdict, &format!("{}.verdict", spec.file))?;
            let except = spec
                .except
                .iter()
                .map(|(subtask, v)| {
                    Ok((
                        subtask.clone(),
                        parse(v, &format!("{}.except.{subtask}", spec.file))?,
                    ))
                })
                .collect::<Result<BTreeMap<_, _>>>()?;
            Ok(OfficialSolution {
                file: format!("solution/{}", spec.file),
                expectation: Expectation::PerSubtask { verdict, except },
            })
        })
        .collect()
}

fn cms_solutions(dir: &Path) -> Result<Vec<OfficialSolution>> {
    let root = dir.join("solutions");
    let mut solutions = Vec::new();
    for category in sorted_entries(&root)? {
        if !category.is_dir() {
            continue;
        }
        let name = category
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let expected = Expected::parse(&name).with_context(|| {
            format!(
                "{}: unknown solution category {name:?} (known: {})",
                category.display(),
                Expected::all_names().join(", ")
            )
        })?;
        for file in sorted_entries(&category)? {
            if file.is_file() {
                let file_name = file
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                solutions.push(OfficialSolution {
                    file: format!("solutions/{name}/{file_name}"),
                    expectation: Expectation::Category(expected),
                });
            }
        }
    }
    Ok(solutions)
}

fn sorted_entries(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut entries = std::fs::read_dir(dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<Vec<_>>>()
        .with_context(|| format!("cannot list {}", dir.display()))?;
    entries.sort();
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn cms_task(dir: &Path) {
        write(&dir.join("problem.json"), "{}");
        write(&dir.join("solutions/model_solution/a.cpp"), "");
        write(&dir.join("solutions/runtime_error/b.cpp"), "");
        write(&dir.join("solutions/incorrect/c.py"), "");
    }

    #[test]
    fn cms_categories_come_from_the_folder_names() {
        let tmp = tempfile::tempdir().unwrap();
        let task = tmp.path().join("day1/message");
        cms_task(&task);
        let packages = discover(&[tmp.path().to_path_buf()]).unwrap();
        assert_eq!(packages.len(), 1);
        let p = &packages[0];
        assert_eq!((p.name.as_str(), p.format), ("day1/message", Format::Cms));
        let files: Vec<(&str, &Expectation)> = p
            .solutions
            .iter()
            .map(|s| (s.file.as_str(), &s.expectation))
            .collect();
        assert_eq!(
            files,
            [
                (
                    "solutions/model_solution/a.cpp",
                    &Expectation::Category(Expected::ModelSolution)
                ),
                (
                    "solutions/runtime_error/b.cpp",
                    &Expectation::Category(Expected::RuntimeError)
                ),
            ]
        );
        assert_eq!(
            p.not_judged,
            [(
                "solutions/incorrect/c.py".to_string(),
                "only C++ is judged".to_string()
            )]
        );
    }

    #[test]
    fn an_unknown_category_is_an_error_naming_the_folder() {
        let tmp = tempfile::tempdir().unwrap();
        cms_task(tmp.path());
        write(&tmp.path().join("solutions/sometimes/d.cpp"), "");
        let err = format!("{:#}", discover(&[tmp.path().to_path_buf()]).unwrap_err());
        assert!(err.contains("solutions/sometimes"), "{err}");
        assert!(
            err.contains("unknown solution category \"sometimes\""),
            "{err}"
        );
    }

    #[test]
    fn a_folder_without_packages_is_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("empty")).unwrap();
        let err = format!("{:#}", discover(&[tmp.path().to_path_buf()]).unwrap_err());
        assert!(
            err.contains("no task folder with official solutions"),
            "{err}"
        );
    }
}
