//! The repository explains itself: every rule the code, scripts, tests and documents cite as
//! `docs/<page>.md#<heading>` is a heading of that page, and every relative link of the
//! documents leads to a file that exists. A rule moved or renamed in `docs/` without its
//! citations fails here.

use std::path::{Path, PathBuf};

const ROOTS: &[&str] = &[
    "src",
    "sandbox/src",
    "sandbox/tests",
    "tests",
    "graders",
    "demo",
    "docs",
    "tools",
    ".ci",
    "README.md",
    "ARCHITECTURE.md",
];

fn project() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The text files under [`ROOTS`], fixtures' large data left out.
fn files() -> Vec<PathBuf> {
    ROOTS
        .iter()
        .flat_map(|root| walkdir::WalkDir::new(project().join(root)))
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file() && e.metadata().is_ok_and(|m| m.len() < 1 << 20))
        .map(|e| e.into_path())
        .collect()
}

/// GitHub's anchor of a markdown heading.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a markdown file's headings.
fn anchors(page: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(page).unwrap_or_default();
    let mut in_code = false;
    text.lines()
        .filter(|line| {
            if line.starts_with("```") {
                in_code = !in_code;
            }
            !in_code && line.starts_with('#')
        })
        .map(|line| slug(line.trim_start_matches('#')))
        .collect()
}

/// Every `docs/<page>.md` or `docs/<page>.md#<anchor>` cited in `text`.
fn citations(text: &str) -> Vec<(String, Option<String>)> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("docs/") {
        let tail = &rest[at + 5..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || "-_.#".contains(c)))
            .unwrap_or(tail.len());
        let cited = tail[..end].trim_end_matches('.');
        if let Some((page, anchor)) = cited.split_once(".md") {
            let anchor = anchor.strip_prefix('#').map(str::to_string);
            found.push((format!("{page}.md"), anchor.filter(|a| !a.is_empty())));
        }
        rest = &tail[end..];
    }
    found
}

#[test]
fn every_cited_rule_is_a_heading_in_docs() {
    let mut wrong = Vec::new();
    let mut count = 0;
    for file in files() {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        for (page, anchor) in citations(&text) {
            count += 1;
            let path = project().join("docs").join(&page);
            let shown = file.strip_prefix(project()).unwrap_or(&file).display();
            if !path.is_file() {
                wrong.push(format!("{shown}: docs/{page} does not exist"));
            } else if let Some(anchor) = anchor {
                if !anchors(&path).contains(&anchor) {
                    wrong.push(format!("{shown}: docs/{page} has no heading #{anchor}"));
                }
            }
        }
    }
    assert!(count > 30, "only {count} citations of docs/ found");
    assert!(
        wrong.is_empty(),
        "citations that lead nowhere:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_rule_is_cited_from_outside_the_repository() {
    let outside = ["SPEC ", "\u{a7}"].concat();
    let shared = ["../", "shared/"].concat();
    let this_file = project().join("tests/it/docs.rs");
    let offenders: Vec<String> = files()
        .into_iter()
        .filter(|f| *f != this_file)
        .filter(|f| {
            std::fs::read_to_string(f).is_ok_and(|t| t.contains(&outside) || t.contains(&shared))
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        offenders.is_empty(),
        "files citing what the repository lacks: {offenders:?}"
    );
}

#[test]
fn relative_links_of_the_documents_lead_to_files() {
    let mut pages: Vec<PathBuf> = vec![
        project().join("README.md"),
        project().join("ARCHITECTURE.md"),
    ];
    pages.extend(
        files()
            .into_iter()
            .filter(|f| f.starts_with(project().join("docs"))),
    );
    let mut wrong = Vec::new();
    for page in pages {
        let text = std::fs::read_to_string(&page).expect("a document");
        for target in text.split("](").skip(1).filter_map(|t| t.split(')').next()) {
            if target.contains("://") || target.starts_with('#') || target.contains(' ') {
                continue;
            }
            let (file, anchor) = target.split_once('#').unwrap_or((target, ""));
            let path = page.parent().expect("a folder").join(file);
            if !path.exists() {
                wrong.push(format!("{}: {target}", page.display()));
            } else if !anchor.is_empty() && !anchors(&path).contains(&anchor.to_string()) {
                wrong.push(format!("{}: {target} (no such heading)", page.display()));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "links that lead nowhere:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn citations_and_slugs_are_read_as_github_does() {
    assert_eq!(slug(" Limits and verdicts"), "limits-and-verdicts");
    assert_eq!(slug(" The Codeforces contract"), "the-codeforces-contract");
    assert_eq!(
        citations("see docs/judging.md#limits-and-verdicts. And (docs/results.md)"),
        [
            (
                "judging.md".to_string(),
                Some("limits-and-verdicts".to_string())
            ),
            ("results.md".to_string(), None)
        ]
    );
}

/// Every test the threat model names as the proof of a claim (`path::test`) exists.
#[test]
fn every_test_the_threat_model_names_exists() {
    let page = std::fs::read_to_string(project().join("docs/threat-model.md")).unwrap();
    let mut named = 0;
    let mut missing = Vec::new();
    for cited in page.split('`').skip(1).step_by(2) {
        let Some((path, test)) = cited.split_once(".rs::") else {
            continue;
        };
        named += 1;
        let file = project().join(format!("{path}.rs"));
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        if !text.contains(&format!("fn {test}(")) {
            missing.push(cited.to_string());
        }
    }
    assert!(
        named >= 20,
        "only {named} tests named in docs/threat-model.md"
    );
    assert!(missing.is_empty(), "tests named but not found: {missing:?}");
}
