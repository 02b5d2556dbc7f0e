//! End-to-end: `ioi-run fidelity` judges every official solution of a CMS export with
//! categorised solutions and of a TPS package, reports which fit their package's expected
//! verdicts (exit status 1 when one deviates), and resumes from `judged.jsonl`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common;
use common::{bin, is_root_or_skip, text};

fn problems() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/problems")
}

/// The sumpairs fixture as a CMS export files official solutions: `solutions/<category>/`.
/// `int_overflow.cpp` (AC, AC, WA) is filed under `time_limit` on purpose: it deviates.
fn categorised_sumpairs(dest: &Path) {
    let source = problems().join("sumpairs");
    let status = std::process::Command::new("cp")
        .arg("-r")
        .arg(&source)
        .arg(dest)
        .status()
        .unwrap();
    assert!(status.success());
    let flat = dest.join("solutions");
    let categorised = dest.join("categorised");
    for (category, file) in [
        ("model_solution", "ac.cpp"),
        ("partially_correct", "ordered_pa.cpp"),
        ("runtime_error", "segv.cpp"),
        ("memory_limit", "mle.cpp"),
        ("time_limit", "burn_tle.cpp"),
        ("time_limit", "int_overflow.cpp"),
    ] {
        std::fs::create_dir_all(categorised.join(category)).unwrap();
        std::fs::copy(flat.join(file), categorised.join(category).join(file)).unwrap();
    }
    std::fs::remove_dir_all(&flat).unwrap();
    std::fs::rename(&categorised, &flat).unwrap();
}

fn run(work: &Path, packages: &Path, out: &Path) -> (Option<i32>, String, String) {
    let output = bin(work)
        .arg("fidelity")
        .arg(packages)
        .arg(problems().join("tps/sum"))
        .arg("-o")
        .arg(out)
        .args(["--jobs", "2"])
        .output()
        .unwrap();
    (
        output.status.code(),
        text(&output.stdout),
        text(&output.stderr),
    )
}

#[test]
fn fidelity_compares_every_official_solution_with_its_package_and_resumes() {
    if !is_root_or_skip("fidelity") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let packages = work.path().join("packages");
    std::fs::create_dir(&packages).unwrap();
    categorised_sumpairs(&packages.join("sumpairs"));
    let out = work.path().join("report");

    let (code, stdout, stderr) = run(work.path(), &packages, &out);
    assert_eq!(code, Some(1), "one solution deviates: {stdout}\n{stderr}");
    assert!(
        stdout.contains("9 of 10 official solutions fit"),
        "{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("| sumpairs | CMS | 6 | 5 | 1 | 0 |"),
        "{stdout}"
    );
    assert!(stdout.contains("| sum | TPS | 4 | 4 | 0 | 0 |"), "{stdout}");
    let md = std::fs::read_to_string(out.join("fidelity.md")).unwrap();
    assert!(
        md.contains(
            "- `sumpairs/solutions/time_limit/int_overflow.cpp` (expected `time_limit`)\n  - no \
             subtask is time_limit: `00-samples` AC"
        ),
        "{md}"
    );
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("fidelity.json")).unwrap()).unwrap();
    assert_eq!(
        (report["solutions"].as_u64(), report["fit"].as_u64()),
        (Some(10), Some(9))
    );
    let segv = report["packages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["solutions"].as_array().unwrap())
        .find(|s| s["solution"] == "solutions/runtime_error/segv.cpp")
        .expect("segv.cpp in the report");
    assert_eq!(segv["fits"], true);
    assert_eq!(segv["subtasks"][0]["status"], "RE");
    let judged = std::fs::read_to_string(out.join("judged.jsonl")).unwrap();
    assert_eq!(judged.lines().count(), 10);

    // Again: everything comes from judged.jsonl, nothing is judged.
    let (code, again, stderr) = run(work.path(), &packages, &out);
    assert_eq!(code, Some(1));
    assert!(!stderr.contains("judging"), "{stderr}");
    assert_eq!(again, stdout);
    let judged = std::fs::read_to_string(out.join("judged.jsonl")).unwrap();
    assert_eq!(judged.lines().count(), 10);
}

#[test]
fn a_folder_without_official_solutions_is_an_error_naming_it() {
    let work = tempfile::tempdir().unwrap();
    let empty = work.path().join("nothing-here");
    std::fs::create_dir(&empty).unwrap();
    let output = bin(work.path())
        .arg("fidelity")
        .arg(&empty)
        .arg("-o")
        .arg(work.path().join("report"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("nothing-here: no task folder with official solutions"),
        "{stderr}"
    );
}
