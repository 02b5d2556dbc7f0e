//! End-to-end: inputs written by others (open-r1 problem rows, TPS and CMS packages, Piston
//! requests) cannot reach outside the folder they belong to (docs/threat-model.md): a name, id,
//! path or link that would is an error naming the file, row or field, and nothing is written or
//! read outside.

use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::common;
use common::text;

fn write_jsonl(path: &Path, rows: &[Value]) {
    let lines: String = rows.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(path, lines).unwrap();
}

/// A one-subtask Batch problem row of open-r1/ioi, with these grader files.
fn problem_row(id: &str, grader_files: Value) -> Value {
    json!({"id": id, "year": 2030, "name": id, "day": "1", "subtask": "01-all", "score": 100,
           "test_names": ["1"], "task_type": "Batch", "time_limit": 1.0,
           "memory_limit": 268435456, "grader_files": grader_files})
}

fn judge_rows(work: &Path, problems: &[Value], id: &str) -> std::process::Output {
    let (rows, tests, solution) = (
        work.join("problems.jsonl"),
        work.join("tests.jsonl"),
        work.join("sol.cpp"),
    );
    write_jsonl(&rows, problems);
    write_jsonl(
        &tests,
        &[json!({"problem_id": id, "year": 2030, "test_name": "1",
                  "test_input": "1 2\n", "test_output": "3\n"})],
    );
    std::fs::write(&solution, "int main() { return 0; }\n").unwrap();
    common::bin(work)
        .args(["judge", "--json", "--problems"])
        .arg(&rows)
        .arg("--tests")
        .arg(&tests)
        .args(["--problem-id", id])
        .arg(&solution)
        .output()
        .unwrap()
}

/// An open-r1 row whose `grader_files` hold `../..` or absolute paths writes nothing there:
/// the problem is refused, naming the row and the field.
#[test]
fn open_r1_grader_files_cannot_name_a_file_outside_the_box() {
    let work = tempfile::tempdir().unwrap();
    let work = work.path();
    let target = work.join("escaped");
    let depth = "../".repeat(16);
    for path in [
        format!("{depth}{}", target.display()),
        target.display().to_string(),
        "graders/../../escaped".to_string(),
    ] {
        let graders = json!([["graders/evil.h", "int f();"], [path, "pwned"]]);
        let out = judge_rows(work, &[problem_row("evil", graders)], "evil");
        let stderr = text(&out.stderr);
        assert!(!out.status.success(), "{path}: {stderr}");
        assert!(
            stderr.contains("problems.jsonl row 1") && stderr.contains("`grader_files`"),
            "{path}: {stderr}"
        );
        assert!(!target.exists(), "{path} was written");
    }
}

/// A problem id that is a path (`../../x`) never becomes the submission's file name.
#[test]
fn open_r1_problem_ids_are_names() {
    let work = tempfile::tempdir().unwrap();
    let work = work.path();
    let graders = json!([["graders/x.h", "int f();"]]);
    let out = judge_rows(work, &[problem_row("../../x", graders)], "../../x");
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("`id`"), "{stderr}");
}

/// A copy of the fixture TPS package `sum` in `work`.
fn tps_copy(work: &Path) -> PathBuf {
    let dir = work.join("sum");
    let from = common::problem_dir("tps/sum");
    for entry in walkdir::WalkDir::new(&from) {
        let entry = entry.unwrap();
        let to = dir.join(entry.path().strip_prefix(&from).unwrap());
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&to).unwrap();
        } else {
            std::fs::copy(entry.path(), &to).unwrap();
        }
    }
    dir
}

fn tps_plan_error(dir: &Path, gen_data: &str) -> String {
    let package = ioi_run::problem::tps::TpsPackage::read(dir).unwrap();
    format!("{:#}", package.plan(gen_data).unwrap_err())
}

/// TPS `@testset ../../x` would name tests `../../x-01`, and `manual ../../../secret` would copy
/// a host file into a test: both are refused at their line of gen/data.
#[test]
fn tps_testsets_and_manual_files_stay_in_the_package() {
    let work = tempfile::tempdir().unwrap();
    let dir = tps_copy(work.path());
    let base = "@subtask samples\nmanual sample-1.in\n@subtask small\n@include samples\n\
                gen 5 10\n@subtask full\n@include small\ngen 6 10\n";
    let error = tps_plan_error(&dir, &format!("@testset ../../x\ngen 1 2\n{base}"));
    assert!(
        error.contains("line 1") && error.contains("../../x"),
        "{error}"
    );
    let error = tps_plan_error(
        &dir,
        &base.replace("manual sample-1.in", "manual ../../../root/secret"),
    );
    assert!(
        error.contains("line 2") && error.contains("manual"),
        "{error}"
    );
}

/// A directory open to everyone holding a file only root may read, as a host's secrets are.
fn root_only_file(work: &Path) -> PathBuf {
    let outside = work.join("host");
    std::fs::create_dir(&outside).unwrap();
    std::fs::set_permissions(work, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o755)).unwrap();
    let secret = outside.join("secret");
    std::fs::write(&secret, "4 5\n").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    secret
}

/// A link under gen/manual to a file only root may read is not read by the judge (as root).
#[test]
fn tps_manual_links_out_of_the_package_read_nothing_private() {
    if !common::is_root_or_skip("reading as root") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let dir = tps_copy(work.path());
    let secret = root_only_file(work.path());
    let manual = dir.join("gen/manual/sample-1.in");
    std::fs::remove_file(&manual).unwrap();
    symlink(&secret, &manual).unwrap();
    let base = "@subtask samples\nmanual sample-1.in\n@subtask small\n@include samples\n\
                gen 5 10\n@subtask full\n@include small\ngen 6 10\n";
    let error = tps_plan_error(&dir, base);
    assert!(
        error.contains("link out of its package") && error.contains("line 2"),
        "{error}"
    );
}

/// A CMS test input that links to a file only root may read is refused when the folder is
/// loaded: the sandbox (root) never opens it as a program's stdin.
#[test]
fn cms_test_links_to_private_host_files_are_refused() {
    if !common::is_root_or_skip("reading as root") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("sumpairs");
    let from = common::problem_dir("sumpairs");
    for entry in walkdir::WalkDir::new(&from) {
        let entry = entry.unwrap();
        let to = dir.join(entry.path().strip_prefix(&from).unwrap());
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&to).unwrap();
        } else {
            std::fs::copy(entry.path(), &to).unwrap();
        }
    }
    let secret = root_only_file(work.path());
    let input = dir.join("tests/01.in");
    std::fs::remove_file(&input).unwrap();
    symlink(&secret, &input).unwrap();
    let error = format!("{:#}", ioi_run::problem::cms::load_cms(&dir).unwrap_err());
    assert!(
        error.contains("link out of its package") && error.contains("01.in"),
        "{error}"
    );
    // A link inside the folder is followed as before.
    std::fs::remove_file(&input).unwrap();
    std::fs::copy(from.join("tests/01.in"), dir.join("tests/real-01")).unwrap();
    symlink("real-01", &input).unwrap();
    let (_, tests) = ioi_run::problem::cms::load_cms(&dir).unwrap();
    assert!(tests.get("01").is_some());
}

/// A copy of `tests/problems/sumpairs` in `work`.
fn sumpairs_copy(work: &Path) -> PathBuf {
    let dir = work.join("sumpairs");
    common::copy_dir(&common::problem_dir("sumpairs"), &dir);
    dir
}

/// A root-only folder (as `/root` is) holding `name` with `content`, beside the package.
fn root_only_folder(work: &Path, from: &Path) -> PathBuf {
    std::fs::set_permissions(work, std::fs::Permissions::from_mode(0o755)).unwrap();
    let private = work.join("private");
    common::copy_dir(from, &private);
    std::fs::write(private.join("secret.txt"), "ROOT-ONLY\n").unwrap();
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
    private
}

/// A CMS task folder whose `graders`, `checker`, `tests` or `subtasks` folder is itself a link
/// out of the package to a folder only root may read is refused: nothing of it reaches a
/// compile (an `#include` of it) or a program's stdin.
#[test]
fn cms_folders_that_link_to_private_host_folders_are_refused() {
    if !common::is_root_or_skip("reading as root") {
        return;
    }
    for folder in ["graders", "checker", "tests", "subtasks"] {
        let work = tempfile::tempdir().unwrap();
        let dir = sumpairs_copy(work.path());
        let private = root_only_folder(work.path(), &dir.join(folder));
        std::fs::remove_dir_all(dir.join(folder)).unwrap();
        symlink(&private, dir.join(folder)).unwrap();
        let error = format!("{:#}", ioi_run::problem::cms::load_cms(&dir).unwrap_err());
        assert!(
            error.contains("link out of its package") && error.contains(folder),
            "{folder}: {error}"
        );
        // The same folder open to everyone is read as before.
        std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o755)).unwrap();
        for entry in walkdir::WalkDir::new(&private) {
            let entry = entry.unwrap();
            std::fs::set_permissions(entry.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        ioi_run::problem::cms::load_cms(&dir).unwrap();
    }
}

/// A package file that is a FIFO, or a link to a device that never ends, is refused without
/// blocking or reading it.
#[test]
fn package_files_that_are_fifos_or_devices_are_refused() {
    let work = tempfile::tempdir().unwrap();
    for (name, make) in [("fifo", "fifo"), ("zero", "/dev/zero")] {
        let dir = sumpairs_copy(&work.path().join(name));
        let checker = dir.join("checker/checker.cpp");
        std::fs::remove_file(&checker).unwrap();
        match make {
            "fifo" => nix::unistd::mkfifo(&checker, nix::sys::stat::Mode::S_IRWXU).unwrap(),
            device => symlink(device, &checker).unwrap(),
        }
        let error = format!("{:#}", ioi_run::problem::cms::load_cms(&dir).unwrap_err());
        assert!(
            error.contains("checker.cpp") && error.contains("not a regular file"),
            "{name}: {error}"
        );
    }
}

/// Numbers no problem has are refused when a package is loaded, naming the field: a time
/// limit of 1e300 s (no duration: a worker would panic), a precision of four billion
/// decimals, 5e307 points a subtask (totals would be infinite and results unreadable).
#[test]
fn numbers_of_a_package_out_of_any_problem_s_bounds_are_refused() {
    let work = tempfile::tempdir().unwrap();
    let cases = [
        (
            "problem.json",
            "\"time_limit\": 1.0",
            "\"time_limit\": 1e300",
            "time_limit",
        ),
        (
            "problem.json",
            "\"score_precision\": 2",
            "\"score_precision\": 4294967295",
            "score_precision",
        ),
        (
            "subtasks/02-large.json",
            "\"score\": 60",
            "\"score\": 5e307",
            "points",
        ),
    ];
    for (file, from, to, field) in cases {
        let dir = sumpairs_copy(&work.path().join(field));
        let path = dir.join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(from), "{file}: {text}");
        std::fs::write(&path, text.replace(from, to)).unwrap();
        let error = format!("{:#}", ioi_run::problem::cms::load_cms(&dir).unwrap_err());
        assert!(error.contains(field), "{field}: {error}");
    }
}

/// A results row (anyone may have written it) giving 5e307 points is refused naming its row
/// and field: its totals would be infinite and the report's plots endless.
#[test]
fn a_results_row_with_points_out_of_bounds_is_refused() {
    let work = tempfile::tempdir().unwrap();
    let results = work.path().join("model.jsonl");
    let sub = json!({"problem": "nile", "subtask": "01", "score": 1.0, "weighted_score": 5e307,
                     "points": 5e307, "score_precision": 2, "status": "AC", "test_results": []});
    let row = json!({"uuid": "a", "problem_id": "nile", "year": 2024, "code": "x",
                     "code_compiles": true, "all_subtasks_points": 5e307,
                     "all_subtasks_results": [sub]});
    write_jsonl(&results, &[row]);
    let error = ioi_run::evaluate::reports::write_reports(
        std::slice::from_ref(&results),
        &work.path().join("out"),
        "uuid",
    )
    .unwrap_err();
    let error = format!("{error:#}");
    assert!(
        error.contains("model.jsonl row 1")
            && error.contains("weighted_score")
            && error.contains("from 0 to 1e9, not 5e307"),
        "{error}"
    );
}

/// A `cms_ioi` request naming a file with a newline (a forged log line) or a file inside
/// another file is a 400 naming the field, never a 500 or a path of the server.
#[test]
fn cms_ioi_requests_with_bad_names_are_client_errors() {
    use ioi_run::server::{parse_execute, RequestError};
    let request =
        |files: Value| json!({"language": "cms_ioi", "version": "*", "files": files}).to_string();
    let file = |name: &str| json!({"name": name, "content": "x"});
    for (files, field) in [
        (
            json!([
                file("graders/x.cpp"),
                file("graders/x.h"),
                file("a\nFORGED")
            ]),
            "files[2].name",
        ),
        (
            json!([
                file("graders/x.cpp"),
                file("graders/x.h"),
                file("d"),
                file("d/e")
            ]),
            "\"d\" is a file",
        ),
    ] {
        match parse_execute(request(files).as_bytes()) {
            Err(RequestError::BadRequest(message)) => {
                assert!(message.contains(field), "{message}");
                assert!(!message.contains('\n'), "{message:?}");
                assert!(!message.contains("/tmp"), "{message}");
            }
            other => panic!("expected a bad request, got {other:?}"),
        }
    }
}

/// A `cms_ioi` request whose grader configuration asks for thousands of user processes a test
/// is a 400 before anything runs: three thousand would hold a server's worker for minutes.
#[test]
fn cms_ioi_requests_for_too_many_processes_are_client_errors() {
    use ioi_run::server::{parse_execute, RequestError};
    let config =
        "{\"task_type\": \"Communication\", \"time_limit\": 1, \"memory_limit\": 268435456, \
                  \"task_type_parameters_Communication_num_processes\": 3000}";
    let files = json!([
        {"name": "graders/x.cpp", "content": "int main(){}"},
        {"name": "graders/x.h", "content": ""},
        {"name": "graders/manager.cpp", "content": "int main(){}"},
        {"name": "graders/grader_config.json", "content": config},
        {"name": "input.txt", "content": "1"},
    ]);
    let request = json!({"language": "cms_ioi", "version": "*", "files": files}).to_string();
    match parse_execute(request.as_bytes()) {
        Err(RequestError::BadRequest(message)) => {
            assert!(message.contains("`num_processes` is 3000"), "{message}");
        }
        other => panic!("expected a bad request, got {other:?}"),
    }
}

/// A request of thousands of tiny files is refused before its files are compared with one
/// another (each with each, that costs seconds of the server's CPU per request).
#[test]
fn requests_of_thousands_of_files_are_refused_up_front() {
    use ioi_run::server::{parse_execute, RequestError, MAX_REQUEST_FILES};
    let files: Vec<Value> = (0..=MAX_REQUEST_FILES)
        .map(|i| json!({"name": format!("d{i}/f"), "content": ""}))
        .collect();
    for language in ["cms_ioi", "c++"] {
        let request = json!({"language": language, "version": "*", "files": files}).to_string();
        match parse_execute(request.as_bytes()) {
            Err(RequestError::BadRequest(message)) => {
                assert!(message.contains("at most 1024"), "{message}");
            }
            other => panic!("expected a bad request, got {other:?}"),
        }
    }
}
