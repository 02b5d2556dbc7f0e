//! `ioi-run bench soak`, short: a few hundred requests of the training-run mix through one
//! `serve` process. Its figures are read from what it prints: every honest answer exact, every
//! hostile request answered, and what the server holds (descriptors, threads, cgroups, scratch
//! folders and bytes, mounts) back at its start values once the requests are done. Nothing
//! here looks at a time.

use std::collections::BTreeMap;

use crate::common;
use common::is_root_or_skip;

/// The printed `name: start A, end B` lines, by name.
fn start_and_end(report: &str) -> BTreeMap<String, (u64, u64)> {
    report
        .lines()
        .filter_map(|line| {
            let (name, rest) = line.split_once(": start ")?;
            let (start, end) = rest.split_once(", end ")?;
            Some((name.to_string(), (start.parse().ok()?, end.parse().ok()?)))
        })
        .collect()
}

/// The value of the printed line `name: value`.
fn figure<'a>(report: &'a str, name: &str) -> &'a str {
    report
        .lines()
        .find_map(|line| line.strip_prefix(&format!("{name}: ")))
        .unwrap_or_else(|| panic!("no line {name:?} in:\n{report}"))
}

#[test]
fn a_short_soak_answers_exactly_and_gives_back_what_it_held() {
    if !is_root_or_skip("judging") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let out = common::bin(work.path())
        .args(["bench", "soak", "--requests", "400", "--clients", "16"])
        .arg("--cache-dir")
        .arg(work.path().join("serve-cache"))
        .output()
        .expect("ioi-run runs");
    let report = common::text(&out.stdout);
    assert!(
        out.status.success(),
        "bench soak failed:\n{report}\n{}",
        common::text(&out.stderr)
    );
    assert_eq!(figure(&report, "requests"), "400");
    assert_eq!(figure(&report, "wrong honest answers"), "0", "{report}");
    let honest: u64 = figure(&report, "honest answers").parse().unwrap();
    assert!(honest >= 360, "the mix is mostly honest: {report}");
    let hostile = figure(&report, "hostile requests answered");
    let (answered, of) = hostile.split_once(" of ").unwrap();
    assert_eq!(answered, of, "every hostile request answered: {report}");
    assert!(of.parse::<u64>().unwrap() > 0);

    let held = start_and_end(&report);
    for name in [
        "fds",
        "threads",
        "cgroups",
        "scratch folders",
        "scratch bytes",
        "ioi-run mounts",
        "compile cache pins",
    ] {
        let (start, end) = held
            .get(name)
            .unwrap_or_else(|| panic!("no {name} line in:\n{report}"));
        assert!(
            end <= start,
            "{name}: {end} at the end, {start} at the start:\n{report}"
        );
    }
    assert_eq!(figure(&report, "resources back to start"), "yes");
    assert_eq!(figure(&report, "serve's exit status after SIGTERM"), "0");
}
