//! `ioi-run slurm evaluate|serve` on a real Slurm cluster (`.ci/slurm-cluster.sh start`): the
//! jobs run the binary under test. Without a cluster (or root, which the sandbox needs) the
//! tests print `SKIPPED:` and pass, unless `CI` is set.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use crate::common;

const BIN: &str = env!("CARGO_BIN_EXE_ioi-run");
/// Only so that a broken cluster fails the test instead of hanging it: never a speed check.
const PATIENCE: Duration = Duration::from_secs(15 * 60);

/// Node states in which the node takes jobs. `completing` is a node that is still reaping the
/// job of another test (a cancelled shard): it is up, and Slurm schedules on it.
const UP_STATES: [&str; 4] = ["idle", "mixed", "allocated", "completing"];

/// Whether the cluster is up (and we are root); otherwise SKIPPED, or a failure under CI. A
/// node in a passing state (booting, not yet registered) is waited for, within a minute.
fn cluster_ready(test: &str) -> bool {
    let reason = if !nix::unistd::geteuid().is_root() {
        Some("needs root (the sandbox)".to_string())
    } else {
        node_down_reason(Duration::from_secs(60))
    };
    match reason {
        None => true,
        Some(reason) => {
            common::skip(&format!("{test}: {reason}"));
            false
        }
    }
}

/// Whether a line of `sinfo -h -o %T` names a state in which the node takes jobs. `%T` may end
/// a state with flags (`idle+`, `mixed*`): the base state decides.
fn some_node_up(states: &str) -> bool {
    states.lines().any(|s| {
        let base = s
            .trim()
            .trim_end_matches(|c: char| !c.is_ascii_alphabetic());
        UP_STATES.contains(&base)
    })
}

/// A node reaping another test's cancelled jobs is up; a drained or down one is not. Needs no
/// cluster.
#[test]
fn a_completing_node_is_up_and_a_drained_one_is_not() {
    for up in [
        "idle",
        "mixed\n",
        "allocated+",
        "completing",
        "down\ncompleting*",
    ] {
        assert!(some_node_up(up), "{up:?}");
    }
    for down in [
        "",
        "down",
        "drained",
        "draining",
        "down*\nfail",
        "not_responding",
    ] {
        assert!(!some_node_up(down), "{down:?}");
    }
}

/// None once some node is in an up state; otherwise why not, after `wait`.
fn node_down_reason(wait: Duration) -> Option<String> {
    let start = Instant::now();
    loop {
        let states = match Command::new("sinfo").args(["-h", "-o", "%T"]).output() {
            Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).to_string(),
            _ => return Some("no Slurm cluster (run .ci/slurm-cluster.sh start)".to_string()),
        };
        if some_node_up(&states) {
            return None;
        }
        if start.elapsed() >= wait {
            return Some(format!(
                "the Slurm node is not up (sinfo: {})",
                states.trim()
            ));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn run(args: &[&str], cwd: &Path) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("cannot run ioi-run")
}

fn ok(out: Output) -> String {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "ioi-run failed:\n{text}");
    text
}

/// Job ids printed by `slurm evaluate|serve` (`... job 12 ...`).
fn job_ids(text: &str) -> Vec<String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut ids: Vec<String> = Vec::new();
    for w in words.windows(2).filter(|w| w[0] == "job") {
        let id = w[1].trim_end_matches(',').to_string();
        if !id.is_empty() && id.chars().all(|c| c.is_ascii_digit()) && !ids.contains(&id) {
            ids.push(id);
        }
    }
    ids
}

/// Cancels its jobs when dropped, so that a failing test leaves nothing queued or running.
struct Jobs(Vec<String>);

impl Jobs {
    fn wait_gone(&self) {
        let start = Instant::now();
        while start.elapsed() < PATIENCE {
            let out = Command::new("squeue")
                .args(["-h", "-o", "%i", "-j", &self.0.join(",")])
                .output()
                .expect("squeue");
            if String::from_utf8_lossy(&out.stdout).trim().is_empty() {
                return;
            }
            std::thread::sleep(Duration::from_millis(300));
        }
        panic!("jobs {:?} still queued after {PATIENCE:?}", self.0);
    }

    fn cancel(&self) {
        if !self.0.is_empty() {
            let _ = Command::new("scancel").args(&self.0).status();
        }
    }
}

impl Drop for Jobs {
    fn drop(&mut self) {
        self.cancel();
        if !self.0.is_empty() {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.wait_gone()));
        }
    }
}

/// The demo's problems and a subset of its submissions. No TLE or MLE submission: they only
/// cost time, and a solution that grows its memory until it is killed may reach its CPU limit
/// first on a loaded machine (TLE instead of MLE), which is the judge's business, not the
/// sharding's.
fn demo_subset(dir: &Path) -> (PathBuf, PathBuf) {
    ok(run(&["evaluate", "--demo", "demo", "--dry-run"], dir));
    let input = dir.join("demo/demo-input");
    let text = std::fs::read_to_string(input.join("submissions.jsonl")).unwrap();
    let slow = [
        "91e2ae6a", "a1f04735", "a8831761", "a8c231a8", "c1b648f3", "1c2da029",
    ];
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !slow.iter().any(|s| l.contains(s)))
        .take(12)
        .collect();
    let subset = dir.join("model.jsonl");
    std::fs::write(&subset, lines.join("\n") + "\n").unwrap();
    (subset, input.join("problems"))
}

/// Results rows by id, without the fields that differ from run to run (timings).
fn without_timings(rows: Vec<Map<String, Value>>) -> BTreeMap<String, Value> {
    rows.into_iter()
        .map(|mut row| {
            if let Some(Value::Array(subtasks)) = row.get_mut("all_subtasks_results") {
                for subtask in subtasks {
                    if let Some(Value::Array(tests)) = subtask.get_mut("test_results") {
                        for test in tests {
                            if let Some(test) = test.as_object_mut() {
                                for field in ["time", "wall_time", "memory"] {
                                    test.remove(field);
                                }
                            }
                        }
                    }
                }
            }
            (
                row["uuid"].as_str().unwrap().to_string(),
                Value::Object(row),
            )
        })
        .collect()
}

fn jsonl_rows(path: &Path) -> Vec<Map<String, Value>> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn parquet_rows(path: &Path) -> Vec<Map<String, Value>> {
    ioi_run::dataset::read_rows(path, None)
        .unwrap()
        .map(|r| r.unwrap().fields)
        .collect()
}

/// The reports of a results folder, each as its sorted lines: tied submissions may be listed
/// in another order (the table keeps the results file's order among equal totals).
/// The markdown reports of an evaluation, lines sorted. The HTML report is left out: its plots
/// show each run's measured times, which differ between any two evaluations.
fn reports(dir: &Path) -> BTreeMap<String, Vec<String>> {
    let folder = dir.join("reports/model");
    std::fs::read_dir(&folder)
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "md"))
        .map(|e| {
            let mut lines: Vec<String> = std::fs::read_to_string(e.path())
                .unwrap()
                .lines()
                .map(String::from)
                .collect();
            lines.sort();
            (e.file_name().to_string_lossy().into_owned(), lines)
        })
        .collect()
}

fn shard_lines(local: &Path, k: u32) -> Vec<String> {
    std::fs::read_to_string(local.join(format!("model.shard-{k}-of-3.jsonl")))
        .map(|t| t.lines().map(String::from).collect())
        .unwrap_or_default()
}

#[test]
fn sharded_evaluation_survives_a_cancel_and_matches_one_evaluate() {
    if !cluster_ready("sharded_evaluation_survives_a_cancel_and_matches_one_evaluate") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (subset, problems) = demo_subset(dir.path());
    let (subset, problems) = (subset.to_str().unwrap(), problems.to_str().unwrap());
    let cache = dir.path().join("cache");
    let cache = cache.to_str().unwrap();
    let submit = || {
        ok(run(
            &[
                "slurm",
                "evaluate",
                subset,
                "sharded",
                "--problems",
                problems,
                "--shards",
                "3",
                "--cpus-per-task",
                "1",
                "--cache-dir",
                cache,
            ],
            dir.path(),
        ))
    };
    let local = dir.path().join("sharded");

    // First attempt: cancelled as soon as a shard has written a row.
    let jobs = Jobs(job_ids(&submit()));
    assert_eq!(jobs.0.len(), 2, "an array and a merge job");
    let start = Instant::now();
    while (0..3).all(|k| shard_lines(&local, k).is_empty()) {
        assert!(start.elapsed() < PATIENCE, "no shard wrote a row");
        std::thread::sleep(Duration::from_millis(100));
    }
    jobs.cancel();
    jobs.wait_gone();
    let before: Vec<Vec<String>> = (0..3).map(|k| shard_lines(&local, k)).collect();
    let judged_before: usize = before.iter().map(Vec::len).sum();
    assert!(
        judged_before < 12,
        "cancelled mid-way: {judged_before} of 12 judged"
    );
    assert!(
        !local.join("model.jsonl").exists(),
        "the merge job did not run"
    );

    // Merging now is refused, naming the shard that is missing or incomplete.
    let refused = run(&["merge", subset, "sharded"], dir.path());
    let message = String::from_utf8_lossy(&refused.stderr).to_string();
    assert!(!refused.status.success());
    assert!(
        message.contains("of dataset `model` is missing")
            || message.contains("of dataset `model` is incomplete"),
        "{message}"
    );

    // Submitting the same command again finishes the shards and merges.
    let again = Jobs(job_ids(&submit()));
    again.wait_gone();
    let merge_log = std::fs::read_to_string(local.join("slurm/logs/merge.log")).unwrap();
    assert!(merge_log.contains("merged 12 row(s)"), "{merge_log}");
    let mut seen = HashSet::new();
    for (k, old) in before.iter().enumerate() {
        let now = shard_lines(&local, k as u32);
        // Complete rows written before the cancel are kept as they were, in place.
        let complete: Vec<&String> = old
            .iter()
            .filter(|l| serde_json::from_str::<Value>(l).is_ok())
            .collect();
        for (a, b) in complete.iter().zip(&now) {
            assert_eq!(*a, b, "shard {k} lost or changed a row");
        }
        for line in &now {
            let row: Value = serde_json::from_str(line).unwrap();
            let id = row["uuid"].as_str().unwrap().to_string();
            assert!(seen.insert(id.clone()), "{id} written twice");
        }
    }
    assert_eq!(seen.len(), 12, "every submission judged once");

    // One evaluate on this box, same cache, gives the same results, parquet and reports.
    ok(run(
        &[
            "evaluate",
            subset,
            "one",
            "--problems",
            problems,
            "--jobs",
            "2",
            "--cache-dir",
            cache,
        ],
        dir.path(),
    ));
    let one = dir.path().join("one");
    assert_eq!(
        without_timings(jsonl_rows(&local.join("model.jsonl"))),
        without_timings(jsonl_rows(&one.join("model.jsonl")))
    );
    let parquet = "model/train-00000-of-00001.parquet";
    assert_eq!(
        without_timings(parquet_rows(&local.join(parquet))),
        without_timings(parquet_rows(&one.join(parquet)))
    );
    let (sharded_reports, one_reports) = (reports(&local), reports(&one));
    assert!(sharded_reports.len() >= 3, "{:?}", sharded_reports.keys());
    assert_eq!(sharded_reports, one_reports);
}

/// A free TCP port P with P+1 free too.
fn two_free_ports() -> u16 {
    for _ in 0..100 {
        let listener = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        if port < 65000 && std::net::TcpListener::bind(("0.0.0.0", port + 1)).is_ok() {
            return port;
        }
    }
    panic!("no two free ports");
}

/// open-r1's discovery (`PISTON_ENDPOINTS=slurm`): running jobs named `piston-worker-<port>`.
fn discover() -> Vec<String> {
    let out = Command::new("squeue")
        .args(["--format=%j %N %T", "--states=RUNNING", "--noheader"])
        .output()
        .expect("squeue");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let mut parts = line.split_whitespace();
            let (name, node) = (parts.next()?, parts.next()?);
            let port = name.strip_prefix("piston-worker-")?;
            port.parse::<u16>().ok()?;
            Some(format!("http://{node}:{port}/api/v2"))
        })
        .collect()
}

#[test]
fn slurm_serve_workers_are_found_and_answer() {
    if !cluster_ready("slurm_serve_workers_are_found_and_answer") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let port = two_free_ports();
    let text = ok(run(
        &[
            "slurm",
            "serve",
            "--workers",
            "2",
            "--port",
            &port.to_string(),
            "--cpus-per-task",
            "1",
            "--log-dir",
            dir.path().to_str().unwrap(),
        ],
        dir.path(),
    ));
    let jobs = Jobs(job_ids(&text));
    assert_eq!(jobs.0.len(), 2, "{text}");
    let ours: Vec<String> = [port, port + 1]
        .iter()
        .map(|p| format!(":{p}/api/v2"))
        .collect();
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(60))
        .build();
    let start = Instant::now();
    let endpoints = loop {
        let found: Vec<String> = discover()
            .into_iter()
            .filter(|e| ours.iter().any(|o| e.ends_with(o)))
            .collect();
        let answering = found.len() == 2
            && found
                .iter()
                .all(|e| agent.get(&format!("{e}/runtimes")).call().is_ok());
        if answering {
            break found;
        }
        assert!(
            start.elapsed() < PATIENCE,
            "workers not found: {:?}",
            discover()
        );
        std::thread::sleep(Duration::from_millis(300));
    };
    for endpoint in &endpoints {
        let runtimes: Value = agent
            .get(&format!("{endpoint}/runtimes"))
            .call()
            .unwrap()
            .into_json()
            .unwrap();
        assert!(
            runtimes
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["language"] == "cms_ioi"),
            "{runtimes}"
        );
        let request = json!({"language": "c++", "version": "*", "stdin": "20 22",
            "files": [{"name": "main.cpp", "content":
                "#include <cstdio>\nint main(){int a,b;scanf(\"%d %d\",&a,&b);printf(\"%d\",a+b);}"}]});
        let answer: Value = agent
            .post(&format!("{endpoint}/execute"))
            .send_json(request)
            .unwrap()
            .into_json()
            .unwrap();
        assert_eq!(answer["run"]["stdout"], "42", "{endpoint}: {answer}");
    }
    jobs.cancel();
    jobs.wait_gone();
}
