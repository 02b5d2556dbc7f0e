//! The map cannot drift from the house: every "**Must not depend on:**" rule of ARCHITECTURE.md
//! is checked against the `crate::` paths (and `ioi_sandbox::`) the room's files name. A room is
//! a folder under `src/` or a file directly in it; a rule names what it forbids in backticks:
//! rooms (`judge`, `evaluate`, ...), `ioi_sandbox` for the sandbox crate, or another crate the
//! manifest depends on (`clap`), found by its paths (`clap::`) and its `use`. The sandbox
//! crate's own rule (nothing of ioi-run) is its manifest: it has no dependency on the
//! application, which `cargo` enforces.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn project() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The rules of ARCHITECTURE.md: room → the rooms it must not use.
fn rules(map: &str) -> BTreeMap<String, Vec<String>> {
    let mut rules = BTreeMap::new();
    let mut room: Option<String> = None;
    let mut text = String::new();
    let mut flush = |room: &Option<String>, text: &str| {
        let Some(room) = room else { return };
        let Some(start) = text.find("**Must not depend on:**") else {
            return;
        };
        let rule = &text[start + "**Must not depend on:**".len()..];
        // The rule runs to the end of its sentence.
        let rule = rule.split(". ").next().unwrap_or(rule);
        let forbidden: Vec<String> = rule
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect();
        rules.insert(room.clone(), forbidden);
    };
    for line in map.lines() {
        if let Some(heading) = line.strip_prefix("### ") {
            flush(&room, &text);
            text.clear();
            room = heading
                .trim()
                .strip_prefix("`src/")
                .and_then(|r| r.strip_suffix('`'))
                .map(|r| r.trim_end_matches('/').trim_end_matches(".rs").to_string());
        } else if line.starts_with("## ") {
            flush(&room, &text);
            text.clear();
            room = None;
        } else {
            text.push_str(line);
            text.push(' ');
        }
    }
    flush(&room, &text);
    rules
}

/// The rooms a source file names: the first segment after each `crate::` (with `use
/// crate::{a::x, b}` spelled out), and `ioi_sandbox` when it uses the sandbox crate. Comment
/// lines are left out.
fn rooms_used(source: &str) -> Vec<(usize, String)> {
    let mut used = Vec::new();
    for (number, line) in source.lines().enumerate() {
        let code = line.trim_start();
        if code.starts_with("//") {
            continue;
        }
        let code = code.split(" //").next().unwrap_or(code);
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            let before = rest[..at].chars().last();
            rest = &rest[at + "crate::".len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue; // `ioi_crate::`, not `crate::`
            }
            if let Some(group) = rest.strip_prefix('{') {
                let end = group.find('}').unwrap_or(group.len());
                for item in group[..end].split(',') {
                    let name = item.trim().split("::").next().unwrap_or("").trim();
                    if !name.is_empty() {
                        used.push((number + 1, name.to_string()));
                    }
                }
            } else {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                used.push((number + 1, name));
            }
        }
        if code.contains("ioi_sandbox::") || code.contains("ioi_sandbox;") {
            used.push((number + 1, "ioi_sandbox".to_string()));
        }
    }
    used
}

/// The lines of a source file that name the external crate `name` (`name::...` or `use name`),
/// comment lines left out.
fn crate_used(source: &str, name: &str) -> Vec<usize> {
    let path = format!("{name}::");
    let mut lines = Vec::new();
    for (number, line) in source.lines().enumerate() {
        let code = line.trim_start();
        if code.starts_with("//") {
            continue;
        }
        let code = code.split(" //").next().unwrap_or(code);
        let named = code.match_indices(&path).any(|(at, _)| {
            !code[..at]
                .chars()
                .last()
                .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
        });
        let used =
            code.starts_with(&format!("use {name};")) || code.contains(&format!("use {path}"));
        if named || used {
            lines.push(number + 1);
        }
    }
    lines
}

/// Whether `name` is a room of `src/` (a folder or a file directly in it).
fn is_room(name: &str) -> bool {
    let src = project().join("src");
    src.join(name).is_dir() || src.join(format!("{name}.rs")).is_file()
}

/// The crates the root manifest depends on, with `-` spelled `_` as code names them.
fn dependencies() -> Vec<String> {
    let manifest = std::fs::read_to_string(project().join("Cargo.toml")).expect("Cargo.toml");
    let mut names = Vec::new();
    let mut inside = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            inside = line.ends_with("dependencies]");
        } else if inside {
            if let Some((name, _)) = line.split_once('=') {
                names.push(name.trim().replace('-', "_"));
            }
        }
    }
    names
}

/// The files of a room: `src/<room>/**.rs` or `src/<room>.rs`.
fn room_files(room: &str) -> Vec<PathBuf> {
    let folder = project().join("src").join(room);
    if folder.is_dir() {
        walkdir::WalkDir::new(folder)
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| e.path().extension().is_some_and(|x| x == "rs"))
            .map(|e| e.into_path())
            .collect()
    } else {
        vec![project().join("src").join(format!("{room}.rs"))]
    }
}

/// Every use that breaks a rule, as `file:line uses room`.
fn violations(rules: &BTreeMap<String, Vec<String>>) -> Vec<String> {
    let mut found = Vec::new();
    for (room, forbidden) in rules {
        for file in room_files(room) {
            let source = std::fs::read_to_string(&file)
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let shown = file.strip_prefix(project()).unwrap_or(&file).display();
            for (line, used) in rooms_used(&source) {
                if forbidden.contains(&used) {
                    found.push(format!(
                        "{shown}:{line} uses `{used}`, which `{room}` must not depend on"
                    ));
                }
            }
            for name in forbidden
                .iter()
                .filter(|n| *n != "ioi_sandbox" && !is_room(n))
            {
                for line in crate_used(&source, name) {
                    found.push(format!(
                        "{shown}:{line} uses the crate `{name}`, which `{room}` must not depend on"
                    ));
                }
            }
        }
    }
    found
}

fn map() -> String {
    std::fs::read_to_string(project().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md")
}

#[test]
fn no_room_uses_what_the_map_forbids_it() {
    let rules = rules(&map());
    // The rules the map states for the application's rooms, each naming what it forbids.
    for room in [
        "problem", "judge", "catalog", "evaluate", "server", "keeper", "fidelity", "slurm", "bench",
    ] {
        let forbidden = rules
            .get(room)
            .unwrap_or_else(|| panic!("ARCHITECTURE.md states no rule for `{room}`: {rules:?}"));
        assert!(!forbidden.is_empty(), "the rule of `{room}` names no room");
        for name in forbidden {
            assert!(
                name == "ioi_sandbox" || is_room(name) || dependencies().contains(name),
                "the rule of `{room}` names `{name}`, which is no room of src/ and no crate of \
                 Cargo.toml"
            );
        }
    }
    let found = violations(&rules);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_sandbox_crate_does_not_depend_on_the_application() {
    let manifest =
        std::fs::read_to_string(project().join("sandbox/Cargo.toml")).expect("sandbox/Cargo.toml");
    assert!(!manifest.contains("ioi-run"), "{manifest}");
}

/// The check itself: a forbidden `use` added to a room is found, in every spelling.
#[test]
fn a_forbidden_use_is_found() {
    let rules = rules(
        "### `src/problem/`\n\ntext.\n**Must not depend on:** `judge`, `ioi_sandbox`. More.\n\n## Next\n",
    );
    assert_eq!(
        rules.get("problem"),
        Some(&vec!["judge".to_string(), "ioi_sandbox".to_string()])
    );
    let source = "use crate::dataset::Row;\n// use crate::judge::x;\nuse crate::{score, judge::compile};\nfn f(l: crate::judge::Language) {}\nuse ioi_sandbox::Limits;\n";
    let used = rooms_used(source);
    assert_eq!(
        used,
        vec![
            (1, "dataset".to_string()),
            (3, "score".to_string()),
            (3, "judge".to_string()),
            (4, "judge".to_string()),
            (5, "ioi_sandbox".to_string()),
        ]
    );
    let source = "#[derive(clap::ValueEnum)]\n// clap::Parser\nuse clap::Args;\nuse ioi_clap::X;\nlet mclap::y;\n";
    assert_eq!(crate_used(source, "clap"), vec![1, 3]);
}

/// The judge's types are parsed by the command line, never the other way round: the rule that
/// keeps `clap` out of the rooms below `cli` holds where the command line's options meet the
/// judge's.
#[test]
fn the_rooms_below_the_command_line_do_not_parse_arguments() {
    let rules = rules(&map());
    for room in [
        "problem", "judge", "catalog", "evaluate", "server", "keeper", "fidelity", "slurm",
    ] {
        assert!(
            rules
                .get(room)
                .is_some_and(|f| f.iter().any(|n| n == "clap")),
            "ARCHITECTURE.md does not keep `clap` out of `{room}`"
        );
    }
}

/// The code map's sections: a room's heading (`### `src/judge/``) with the words its backticked
/// names hold (`host::costs` gives `host` and `costs`), and the whole code map's words for the
/// small pieces named outside a section of their own.
fn code_map(map: &str) -> (BTreeMap<String, Vec<String>>, Vec<String>) {
    let start = map
        .find("## Code map")
        .expect("ARCHITECTURE.md has a code map");
    let body = &map[start + "## Code map".len()..];
    let body = &body[..body.find("\n## ").unwrap_or(body.len())];
    let words = |text: &str| -> Vec<String> {
        text.split('`')
            .skip(1)
            .step_by(2)
            .flat_map(|name| {
                name.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .filter(|w| !w.is_empty())
            .collect()
    };
    let mut sections = BTreeMap::new();
    for section in body.split("\n### ").skip(1) {
        let (heading, text) = section.split_once('\n').unwrap_or((section, ""));
        if let Some(room) = heading
            .trim()
            .strip_prefix("`src/")
            .and_then(|r| r.strip_suffix('`'))
        {
            let room = room
                .trim_end_matches('/')
                .trim_end_matches(".rs")
                .to_string();
            sections.insert(room, words(text));
        }
    }
    (sections, words(body))
}

/// Every file and folder of `src/` the code map does not name: a room's files by their names in
/// its section, the files directly in `src/` by their paths anywhere in the code map.
fn unnamed_in_map(map: &str) -> Vec<String> {
    let (sections, everywhere) = code_map(map);
    let src = project().join("src");
    let mut missing = Vec::new();
    for entry in walkdir::WalkDir::new(&src)
        .min_depth(1)
        .into_iter()
        .filter_map(Result::ok)
    {
        let relative = entry.path().strip_prefix(&src).unwrap_or(entry.path());
        let parts: Vec<String> = relative
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        let named = match parts.as_slice() {
            [file] => {
                let stem = file.trim_end_matches(".rs");
                sections.contains_key(stem)
                    || everywhere
                        .iter()
                        .any(|w| w == &format!("src/{file}") || w == file)
            }
            [room, inside @ ..] => {
                let stem = |p: &String| {
                    p.trim_end_matches(".rs")
                        .trim_end_matches(".cpp")
                        .to_string()
                };
                let name = stem(inside.last().unwrap_or(room));
                let words = sections.get(room);
                // A room's `mod.rs` is the room; a `tests.rs` holds a module's unit tests.
                name == "mod"
                    || name == "tests"
                    || words.is_some_and(|w| {
                        w.contains(&name) || w.contains(inside.last().unwrap_or(room))
                    })
            }
            [] => true,
        };
        if !named {
            missing.push(format!("src/{}", parts.join("/")));
        }
    }
    missing
}

#[test]
fn the_code_map_names_every_file_of_src() {
    let missing = unnamed_in_map(&map());
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md's code map does not name:\n{}",
        missing.join("\n")
    );
}

/// The check itself: a file of a room that its section does not name is found.
#[test]
fn a_file_the_map_leaves_out_is_found() {
    let map =
        "## Code map\n\n### `src/judge/`\n\n`plan` decides, `schedule/` spreads.\n\n## Next\n";
    let (sections, _) = code_map(map);
    assert_eq!(
        sections.get("judge"),
        Some(&vec!["plan".to_string(), "schedule".to_string()])
    );
    let missing = unnamed_in_map(map);
    assert!(
        missing.contains(&"src/judge/native.rs".to_string()),
        "{missing:?}"
    );
    assert!(
        !missing.contains(&"src/judge/plan.rs".to_string()),
        "{missing:?}"
    );
    assert!(
        missing.contains(&"src/dataset.rs".to_string()),
        "{missing:?}"
    );
}

/// Every `IOI_RUN_*` variable a file of `dirs` names, with the first file naming it.
fn environment_variables(dirs: &[&str]) -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    for dir in dirs {
        for entry in walkdir::WalkDir::new(project().join(dir))
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file())
        {
            let Ok(text) = std::fs::read_to_string(entry.path()) else {
                continue; // not text
            };
            for (at, _) in text.match_indices("IOI_RUN_") {
                let name: String = text[at..]
                    .chars()
                    .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                    .collect();
                if name.len() > "IOI_RUN_".len() {
                    found.entry(name).or_insert_with(|| {
                        let path = entry.path();
                        path.strip_prefix(project())
                            .unwrap_or(path)
                            .display()
                            .to_string()
                    });
                }
            }
        }
    }
    found
}

/// The cross-cutting concerns of ARCHITECTURE.md name every environment variable the code,
/// the graders, the tests and the tools read, so that none is known only to its file.
#[test]
fn the_map_names_every_environment_variable() {
    let map = map();
    let found = environment_variables(&["src", "sandbox/src", "graders", "tests", "tools", ".ci"]);
    assert!(found.contains_key("IOI_RUN_LOG"), "{found:?}");
    let missing: Vec<String> = found
        .iter()
        .filter(|(name, _)| !map.contains(&format!("`{name}`")))
        .map(|(name, file)| format!("{name} (in {file})"))
        .collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md does not name:\n{}",
        missing.join("\n")
    );
}
