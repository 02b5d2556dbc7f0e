//! The map cannot drift from the house: every "**Must not depend on:**" rule of ARCHITECTURE.md
//! is checked against the `crate::` paths (and `ioi_sandbox::`) the room's files name. A room is
//! a folder under `src/` or a file directly in it; a rule names the rooms it forbids in
//! backticks (`judge`, `evaluate`, ..., and `ioi_sandbox` for the sandbox crate). The sandbox
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
            for (line, used) in rooms_used(&source) {
                if forbidden.contains(&used) {
                    found.push(format!(
                        "{}:{line} uses `{used}`, which `{room}` must not depend on",
                        file.strip_prefix(project()).unwrap_or(&file).display()
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
        "problem", "judge", "evaluate", "server", "keeper", "fidelity", "slurm", "bench",
    ] {
        let forbidden = rules
            .get(room)
            .unwrap_or_else(|| panic!("ARCHITECTURE.md states no rule for `{room}`: {rules:?}"));
        assert!(!forbidden.is_empty(), "the rule of `{room}` names no room");
        for name in forbidden {
            assert!(
                name == "ioi_sandbox"
                    || !room_files(name).is_empty() && room_files(name)[0].exists(),
                "the rule of `{room}` names `{name}`, which is no room of src/"
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
}
