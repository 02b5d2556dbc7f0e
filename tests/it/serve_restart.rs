//! Restarts of `ioi-run serve` lose nothing. Killed (SIGKILL) in the middle of a batch, with
//! sleepers running and compiles in progress, the server's sandboxed processes die with it, and
//! the next server started on the same cache folder sweeps everything the dead one held on the
//! host (cgroups, scratch folders on disk and on the tmpfs, its pins and unfinished entries in
//! the compile cache); a cache entry cut short is never used; clients that retry get exact
//! answers from the new server. Stopped by SIGTERM, it refuses new connections, answers every
//! request in flight exactly, and exits 0.

use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::sys::signal::Signal;
use serde_json::{json, Value};

use crate::common;
use common::{is_root_or_skip, wait_until, ServeProcess};

/// a+b, with `TAG` (a comment) making the source a program of its own.
const SUM: &str = "#include <cstdio>\nTAG\nint main() { long long a, b; if (scanf(\"%lld %lld\", \
                   &a, &b) != 2) return 1; printf(\"%lld\\n\", a + b); }\n";
/// a+b whose compile takes a second or more of g++'s CPU (a loop evaluated at compile time).
const SLOW_SUM: &str = "#include <cstdio>\nTAG\nconstexpr int spin(int k) { int s = 0; for (int \
                        j = 0; j < 2; j++) for (int i = 0; i < 200000; i++) s += (i ^ j ^ k) & \
                        1; return s; }\nconstexpr int busy = spin(1);\nint main() { long long a, \
                        b; if (scanf(\"%lld %lld\", &a, &b) != 2) return 1; printf(\"%lld\\n\", \
                        a + b + busy * 0); }\n";
/// Sleeps for as many milliseconds as its third number, then prints the sum of the first two.
const SLEEPY_SUM: &str = "#include <cstdio>\n#include <unistd.h>\nint main() { long long a, b, \
                          ms; if (scanf(\"%lld %lld %lld\", &a, &b, &ms) != 3) return 1; \
                          usleep(ms * 1000); printf(\"%lld\\n\", a + b); }\n";
const SLEEPER: &str = "#include <unistd.h>\nint main() { sleep(100); }\n";

fn plain(source: &str, stdin: &str, args: &[&str], run_timeout_ms: u64) -> String {
    json!({"language": "c++", "version": "*", "stdin": stdin, "args": args,
           "run_timeout": run_timeout_ms, "run_memory_limit": 128 << 20,
           "files": [{"name": "main.cpp", "content": source}]})
    .to_string()
}

/// The answer to `body`, sent again while the server cannot be reached (it is being
/// restarted), for up to two minutes.
fn post_retrying(url: &str, body: &str) -> (u16, Value) {
    let agent = common::agent();
    for _ in 0..600 {
        match agent
            .post(url)
            .set("Content-Type", "application/json")
            .send_string(body)
        {
            Err(ureq::Error::Transport(_)) => std::thread::sleep(Duration::from_millis(200)),
            result => return common::answer(result),
        }
    }
    panic!("no server answered {url} for two minutes");
}

/// Whether `answer` is the exact a+b of a plain run.
fn exact(answer: &(u16, Value), sum: i64) -> bool {
    let (status, body) = answer;
    *status == 200
        && body["compile"]["code"] == 0
        && body["run"]["code"] == 0
        && body["run"]["stdout"] == format!("{sum}\n")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Processes whose arguments hold `marker`.
fn processes_with(marker: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid = e.file_name().to_string_lossy().parse::<u32>().ok()?;
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            let holds = cmdline.split(|&b| b == 0).any(|a| a == marker.as_bytes());
            holds.then_some(pid)
        })
        .collect()
}

/// The processes in the run cgroups of the server `pid`, with their command names.
fn processes_in_cgroups_of(pid: u32) -> Vec<(u32, String)> {
    let mut found = Vec::new();
    for cgroup in ioi_sandbox::cgroups_of(pid) {
        let procs = std::fs::read_to_string(cgroup.join("cgroup.procs")).unwrap_or_default();
        for member in procs.split_whitespace().filter_map(|p| p.parse().ok()) {
            let comm = std::fs::read_to_string(format!("/proc/{member}/comm")).unwrap_or_default();
            found.push((member, comm.trim().to_string()));
        }
    }
    found
}

/// The scratch folders of process `pid` (`ioi-<kind>-<pid>-…`) in the temporary folder and on
/// the tmpfs `/dev/shm`.
fn scratch_of(pid: u32) -> Vec<PathBuf> {
    common::scratch_folders_of(pid, &[std::env::temp_dir(), PathBuf::from("/dev/shm")])
}

/// What the server `pid` left in the compile cache `compile`: its pin folder, and the staging
/// and trash folders of entries it was writing or removing.
fn cache_leftovers_of(pid: u32, compile: &Path) -> Vec<PathBuf> {
    let infix = format!("-{pid}-");
    [compile.to_path_buf(), compile.join(".pins")]
        .iter()
        .filter_map(|dir| std::fs::read_dir(dir).ok())
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().contains(&infix))
        .collect()
}

/// Mounts of this mount namespace (the host's, which the server shared) on a folder of the
/// server `pid`.
fn mounts_of(pid: u32) -> Vec<String> {
    let infix = format!("-{pid}-");
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter(|line| line.contains(&infix))
        .map(str::to_string)
        .collect()
}

/// The compile cache's program entries (`<key>/` with a `program` file).
fn program_entries(compile: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(compile)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.join("program").is_file() && p.join("manifest.json").is_file())
                .collect()
        })
        .unwrap_or_default()
}

fn manifest_len(entry: &Path) -> u64 {
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(entry.join("manifest.json")).unwrap()).unwrap();
    manifest["len"].as_u64().unwrap()
}

#[test]
fn a_server_killed_mid_batch_leaves_nothing_the_next_start_does_not_sweep() {
    if !is_root_or_skip("judging") {
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    let compile = cache.path().join("compile");
    let port = free_port().to_string();
    let options = ["--port", &port, "-j", "4", "--max-queue", "32"];
    let first = ServeProcess::start_with(&options, cache.path(), "PISTON_ENDPOINTS");
    let dead = first.pid();
    let url = format!("{}/execute", first.announced);

    // A program compiled and stored whole before the kill, whose entry is then cut short.
    let before = program_entries(&compile);
    let known = SUM.replace("TAG", "// known");
    assert!(exact(
        &common::post(&url, &plain(&known, "2 3", &[], 3000)),
        5
    ));
    let stored: Vec<PathBuf> = program_entries(&compile)
        .into_iter()
        .filter(|e| !before.contains(e))
        .collect();
    assert!(!stored.is_empty(), "the program was stored in the cache");

    // The batch: two sleepers, and programs whose compiles take a while, each retried by its
    // client until a server answers.
    let marker = format!("serve-restart-{}", std::process::id());
    let sleepers: Vec<_> = (0..2)
        .map(|_| {
            let (url, body) = (url.clone(), plain(SLEEPER, "", &[&marker], 100_000));
            std::thread::spawn(move || {
                let _ = common::agent()
                    .post(&url)
                    .set("Content-Type", "application/json")
                    .send_string(&body);
            })
        })
        .collect();
    let honest: Vec<_> = (0..6i64)
        .map(|k| {
            let source = SLOW_SUM.replace("TAG", &format!("// batch program {k}"));
            let (a, b) = (1_000_000_007 * (k + 1), -31 * k);
            let body = plain(&source, &format!("{a} {b}\n"), &[], 5000);
            let url = url.clone();
            std::thread::spawn(move || (post_retrying(&url, &body), a + b))
        })
        .collect();
    wait_until("the sleepers to run", Duration::from_secs(120), || {
        processes_with(&marker).len() == 2
    });
    wait_until("a compile in progress", Duration::from_secs(120), || {
        processes_in_cgroups_of(dead)
            .iter()
            .any(|(_, comm)| comm == "cc1plus")
    });

    first.signal(Signal::SIGKILL);
    let (code, _) = first.wait();
    assert_eq!(code, None, "killed by a signal");
    // A torn entry, as a crash while writing one in place would leave.
    for entry in &stored {
        let program = entry.join("program");
        let whole = std::fs::read(&program).unwrap();
        std::fs::write(&program, &whole[..whole.len() / 2]).unwrap();
    }

    // Restarted at once, as a supervisor does.
    let second = ServeProcess::start_with(&options, cache.path(), "PISTON_ENDPOINTS");
    wait_until(
        "the sandboxed processes of the killed server to die",
        Duration::from_secs(30),
        || processes_with(&marker).is_empty(),
    );
    assert_eq!(
        processes_in_cgroups_of(dead),
        [],
        "processes left in the cgroups of the killed server"
    );
    assert_eq!(
        ioi_sandbox::cgroups_of(dead),
        Vec::<PathBuf>::new(),
        "cgroups of the killed server left after the next start"
    );
    assert_eq!(
        scratch_of(dead),
        Vec::<PathBuf>::new(),
        "scratch folders (boxes, outputs, FIFOs) of the killed server left"
    );
    assert_eq!(
        cache_leftovers_of(dead, &compile),
        Vec::<PathBuf>::new(),
        "pins or unfinished cache entries of the killed server left"
    );
    assert_eq!(mounts_of(dead), Vec::<String>::new());

    // Every client that retried got its exact answer, from the new server.
    for client in honest {
        let (answer, sum) = client.join().unwrap();
        assert!(exact(&answer, sum), "expected {sum}: {answer:?}");
    }
    for sleeper in sleepers {
        sleeper.join().unwrap();
    }
    // The cut entry was not used: compiled again, and stored whole.
    assert!(exact(
        &common::post(&url, &plain(&known, "40 2", &[], 3000)),
        42
    ));
    for entry in &stored {
        let len = std::fs::metadata(entry.join("program")).unwrap().len();
        assert_eq!(
            len,
            manifest_len(entry),
            "{} is whole again",
            entry.display()
        );
    }
    second.stop();
}

/// A gauge of the server's `/metrics` page.
fn metric(url: &str, name: &str) -> f64 {
    let page = common::agent()
        .get(url)
        .call()
        .unwrap()
        .into_string()
        .unwrap();
    page.lines()
        .find(|line| line.starts_with(&format!("{name} ")))
        .and_then(|line| line.rsplit(' ').next()?.parse().ok())
        .unwrap_or(0.0)
}

#[test]
fn sigterm_refuses_new_connections_answers_requests_in_flight_and_exits_0() {
    if !is_root_or_skip("judging") {
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    let port = free_port().to_string();
    let server = ServeProcess::start_with(
        &["--port", &port, "-j", "2", "--max-queue", "8"],
        cache.path(),
        "PISTON_ENDPOINTS",
    );
    let url = format!("{}/execute", server.announced);
    // Compiled before, so that the requests in flight are runs.
    assert!(exact(
        &common::post(&url, &plain(SLEEPY_SUM, "1 2 0", &[], 5000)),
        3
    ));
    // Two requests running (each sleeps 3 s), then two waiting behind them.
    let metrics = url.replace("/api/v2/execute", "/metrics");
    let send = |k: i64, ms: u64| {
        let stdin = format!("{} {} {ms}", k * 1000, 7 - k);
        let (url, body) = (url.clone(), plain(SLEEPY_SUM, &stdin, &[], 10_000));
        std::thread::spawn(move || (common::post(&url, &body), k * 1000 + 7 - k))
    };
    let mut in_flight = vec![send(0, 3000), send(1, 3000)];
    wait_until("two runs", Duration::from_secs(60), || {
        metric(&metrics, "ioi_run_executions_running") == 2.0
    });
    in_flight.extend([send(2, 0), send(3, 0)]);
    wait_until("two waiting", Duration::from_secs(60), || {
        metric(&metrics, "ioi_run_queue_depth") == 2.0
    });

    server.signal(Signal::SIGTERM);
    let address = format!("127.0.0.1:{port}");
    wait_until(
        "new connections to be refused",
        Duration::from_secs(10),
        || std::net::TcpStream::connect(&address).is_err(),
    );
    for client in in_flight {
        let (answer, sum) = client.join().unwrap();
        assert!(exact(&answer, sum), "expected {sum}: {answer:?}");
    }
    let (code, log) = server.wait();
    assert_eq!(code, Some(0), "exit status after SIGTERM; log:\n{log}");
}
