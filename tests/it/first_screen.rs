//! End-to-end: what a newcomer meets first, from the README's first screen on. The README's
//! `curl` example is sent, as written there, to a real `ioi-run serve`; `judge` titles a problem
//! without saying its name twice.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use crate::common;
use common::text;

/// The shared harness's binary, with one compile cache for every test of this file.
fn bin(work: &Path) -> Command {
    let mut cmd = common::bin(work);
    cmd.env(
        "IOI_RUN_CACHE",
        Path::new(env!("CARGO_TARGET_TMPDIR")).join("first-screen-cache"),
    );
    cmd
}

fn can_judge() -> bool {
    common::is_root_or_skip("judging")
}

/// The JSON body of the README's `curl ... -d '...'` example.
fn readme_curl_body() -> String {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let start = readme
        .find("curl -s localhost:2000/api/v2/execute")
        .expect("the README shows one request by hand");
    let after = &readme[start..];
    let body_start = after.find("-d '").expect("curl -d '...'") + 4;
    let body_len = after[body_start..].find('\'').expect("closing quote");
    after[body_start..body_start + body_len].to_string()
}

#[test]
fn the_readme_curl_example_gets_the_answer_it_shows() {
    if !can_judge() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let mut child = bin(work.path())
        .args(["serve", "--ports", "0", "-j", "1"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let _server = common::Stopping(child);
    // The server says where it listens, on stderr:
    // `PISTON_ENDPOINTS=http://127.0.0.1:PORT/api/v2`. The rest of its log is read on (and
    // dropped) by a thread, so that the server never blocks on a full pipe.
    let mut lines = BufReader::new(stderr).lines();
    let endpoint = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| l.strip_prefix("PISTON_ENDPOINTS=").map(str::to_string))
        .expect("the server prints PISTON_ENDPOINTS");
    std::thread::spawn(move || lines.for_each(drop));
    let body = readme_curl_body();
    let answer: serde_json::Value = ureq::post(&format!("{endpoint}/execute"))
        .timeout(std::time::Duration::from_secs(300))
        .set("content-type", "application/json")
        .send_string(&body)
        .unwrap_or_else(|e| panic!("{e}: {body}"))
        .into_json()
        .unwrap();
    assert_eq!(answer["compile"]["code"], 0, "{answer}");
    assert_eq!(answer["run"]["code"], 0, "{answer}");
    assert_eq!(answer["run"]["stdout"], "5\n", "{answer}");
}

#[test]
fn judge_names_a_problem_once_when_its_id_is_its_name() {
    if !can_judge() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/problems/sumpairs");
    let out = bin(work.path())
        .arg("judge")
        .arg(&dir)
        .arg(dir.join("solutions/ac.cpp"))
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    let title = stdout.lines().next().unwrap_or_default();
    assert_eq!(
        title, "sumpairs, time limit 1 s, memory limit 256 MiB",
        "{stdout}"
    );
}

#[test]
fn the_readme_sandbox_example_runs_a_program_of_the_current_folder() {
    if !can_judge() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let folder = work.path().join("here");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join("hello.cpp"),
        "#include <cstdio>\nint main() { puts(\"hello\"); }\n",
    )
    .unwrap();
    let built = Command::new("g++")
        .arg("-o")
        .arg(folder.join("a.out"))
        .arg(folder.join("hello.cpp"))
        .status()
        .unwrap();
    assert!(built.success());
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let example = readme
        .lines()
        .find(|l| l.starts_with("ioi-run sandbox "))
        .expect("the README shows a sandbox command");
    let args: Vec<&str> = example.split_whitespace().skip(1).collect();
    let out = bin(work.path())
        .current_dir(&folder)
        .args(&args)
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "{example}: {stdout}{}",
        text(&out.stderr)
    );
    // The program's output alone on stdout; the outcome in the --meta file the example names.
    assert_eq!(stdout, "hello\n");
    let meta = args
        .windows(2)
        .find(|w| w[0] == "--meta")
        .map(|w| folder.join(w[1]))
        .expect("the README's example writes its outcome with --meta");
    let outcome = std::fs::read_to_string(&meta).unwrap();
    assert!(outcome.contains("\"status\": \"ok\""), "{outcome}");
}
