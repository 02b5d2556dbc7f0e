//! The container image in a real container engine: the `Dockerfile`'s runtime stage is built
//! with podman on a local Debian base (no image registry: `.ci/container-base.sh` builds the
//! base once with mmdebstrap), the binary under test is copied in, and the image then runs
//! `doctor`, judges a fixture with the compile cache in a volume, and serves one Codeforces
//! Python request to the host through a published port.
//!
//! The containers run without --privileged, with only what docs/container.md's `docker run` lines give.
//! podman runs with runc (Debian's default runtime, crun, refuses this kind of host's hybrid
//! cgroups) and with explicit file and process limits (podman's defaults exceed the hard
//! limits of some hosts, and the container then fails to start).

use crate::common;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use common::*;
use serde_json::{json, Value};

/// The base image `.ci/container-base.sh` prepares.
const BASE: &str = "localhost/ioi-run-base:bookworm";

/// `podman --runtime runc ARGS`.
fn podman<I, S>(args: I) -> Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let mut cmd = Command::new("podman");
    cmd.args(["--runtime", "runc"]).args(args);
    cmd
}

fn run(mut cmd: Command) -> Output {
    cmd.output().expect("podman runs")
}

/// What this test needs, or why it cannot run here.
fn missing_prerequisite() -> Option<String> {
    if !nix::unistd::geteuid().is_root() {
        return Some("the container test runs rootful podman (needs root)".into());
    }
    for tool in ["podman", "runc", "strip"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            return Some(format!(
                "`{tool}` is not installed (.ci/container-base.sh installs it)"
            ));
        }
    }
    let base = run(podman(["image", "exists", BASE]));
    if !base.status.success() {
        return Some(format!(
            "no base image {BASE} (.ci/container-base.sh builds it)"
        ));
    }
    None
}

/// An image tag removed when dropped, even when the test fails.
struct Image(String);

impl Drop for Image {
    fn drop(&mut self) {
        let _ = podman(["rmi", "--force", &self.0]).output();
    }
}

/// A container removed (killed first) when dropped, even when the test fails.
struct Container(String);

impl Drop for Container {
    fn drop(&mut self) {
        let _ = podman(["rm", "--force", "--time", "0", &self.0]).output();
    }
}

/// Builds the Dockerfile's runtime stage on the local base, then the test image: that stage
/// plus the binary under test (stripped: the debug binary is ~300 MB of symbols).
fn build_image(work: &Path) -> (Image, Image) {
    let id = std::process::id();
    let runtime = Image(format!("localhost/ioi-run-test-runtime:{id}"));
    let out = run(podman([
        "build",
        "--pull=never",
        "--build-arg",
        &format!("BASE={BASE}"),
        "--target",
        "runtime",
        "--tag",
        &runtime.0,
        "--file",
        &project().join("Dockerfile").to_string_lossy(),
        &project().to_string_lossy(),
    ]));
    ok(out);
    let context = work.join("context");
    std::fs::create_dir_all(&context).unwrap();
    let strip = Command::new("strip")
        .arg("-o")
        .arg(context.join("ioi-run"))
        .arg(env!("CARGO_BIN_EXE_ioi-run"))
        .output()
        .unwrap();
    ok(strip);
    std::fs::write(
        context.join("Containerfile"),
        format!("FROM {}\nCOPY ioi-run /usr/local/bin/ioi-run\n", runtime.0),
    )
    .unwrap();
    let image = Image(format!("localhost/ioi-run-test:{id}"));
    ok(run(podman([
        "build",
        "--pull=never",
        "--tag",
        &image.0,
        &context.to_string_lossy(),
    ])));
    (runtime, image)
}

/// The options of every `podman run` here: the least privileges docs/container.md gives (the
/// capability to create namespaces and mounts, /proc not masked, so that the sandbox can mount
/// a fresh one; see the module comment for the limits).
const RUN: [&str; 9] = [
    "run",
    "--cap-add",
    "SYS_ADMIN",
    "--security-opt",
    "unmask=/proc/*",
    "--ulimit",
    "nofile=1024:1024",
    "--ulimit",
    "nproc=1000:1000",
];

#[test]
fn the_image_builds_offline_and_runs_doctor_judge_and_serve() {
    if let Some(reason) = missing_prerequisite() {
        skip(&reason);
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let (_runtime, image) = build_image(work.path());

    // doctor, through the entrypoint's default command.
    let out = run(podman(RUN.iter().copied().chain(["--rm", &image.0])));
    let report = ok(out);
    assert!(report.contains("This host can judge."), "{report}");

    // A judge of a fixture, its problem mounted read-only and the compile cache in a volume.
    let cache = work.path().join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    let problem = problem_dir("sumpairs");
    let mounts = [
        "-v".to_string(),
        format!("{}:/problem:ro", problem.display()),
        "-v".to_string(),
        format!("{}:/cache", cache.display()),
    ];
    let out = run(podman(
        RUN.iter()
            .map(|s| s.to_string())
            .chain(["--rm".to_string()])
            .chain(mounts)
            .chain([image.0.clone(), "judge".into(), "--json".into()])
            .chain([
                "/problem".into(),
                "/problem/solutions/int_overflow.cpp".into(),
            ]),
    ));
    let verdicts: Value = serde_json::from_str(&ok(out)).expect("judge --json prints JSON");
    assert_eq!(
        subtask_statuses(&verdicts),
        [
            ("00-samples".to_string(), "AC".to_string()),
            ("01-small".to_string(), "AC".to_string()),
            ("02-large".to_string(), "WA".to_string()),
        ]
    );
    let compiled = walkdir::WalkDir::new(cache.join("ioi-run/compile"))
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .count();
    assert!(compiled > 0, "the compile cache volume holds no entry");

    // serve, answering a Codeforces Python request (python3 in the image) from the host.
    let container = Container(format!("ioi-run-test-serve-{}", std::process::id()));
    let out = run(podman(RUN.iter().copied().chain([
        "--detach",
        "--name",
        &container.0,
        "--publish",
        "127.0.0.1::2000",
        &image.0,
        "serve",
        "--host",
        "0.0.0.0",
    ])));
    ok(out);
    let port = ok(run(podman(["port", &container.0, "2000/tcp"])));
    let address = port.lines().next().unwrap_or_default().trim().to_string();
    assert!(address.starts_with("127.0.0.1:"), "podman port: {port}");
    let base = format!("http://{address}/api/v2");
    wait_until(
        "the server in the container",
        Duration::from_secs(120),
        || agent().get(&format!("{base}/runtimes")).call().is_ok(),
    );
    let request = json!({
        "language": "cf_python3", "version": "*",
        "files": [
            {"name": "main.python", "content": "a, b = map(int, input().split())\nprint(a + b)"},
            {"name": "input.txt", "content": "2 3\n"},
            {"name": "correct_output.txt", "content": "5\n"},
            {"name": "grader_config", "content": "TIME_LIMIT=1\nMEMORY_LIMIT=64\nINPUT_MODE=stdio"},
        ],
        "run_timeout": 11000,
    });
    let (status, answer) = post(&format!("{base}/execute"), &request.to_string());
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["run"]["stdout"], "1\n", "{answer}");

    // SIGTERM (podman stop) ends the server gracefully: exit status 0.
    ok(run(podman(["stop", "--time", "30", &container.0])));
    let code = ok(run(podman([
        "inspect",
        "--format",
        "{{.State.ExitCode}}",
        &container.0,
    ])));
    assert_eq!(code.trim(), "0", "the server's exit status");
}

/// The entrypoint runs ioi-run for each of its subcommands (else it runs the named program):
/// its list must name every subcommand `ioi-run --help` shows.
#[test]
fn the_entrypoint_knows_every_subcommand() {
    let help = ok(Command::new(env!("CARGO_BIN_EXE_ioi-run"))
        .arg("--help")
        .output()
        .unwrap());
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(commands.contains(&"serve"), "{help}");
    let script = std::fs::read_to_string(project().join("docker/entrypoint.sh")).unwrap();
    let pattern = script
        .lines()
        .find_map(|l| l.trim().strip_prefix("-*|"))
        .expect("the entrypoint's case of ioi-run subcommands");
    let known: Vec<&str> = pattern.trim_end_matches(')').split('|').collect();
    for command in commands {
        assert!(
            known.contains(&command),
            "docker/entrypoint.sh does not know `{command}`"
        );
    }
}
