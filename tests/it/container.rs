//! The container image in a real container engine: the `Dockerfile`'s runtime stage is built
//! with podman on a local Debian base (no image registry: `.ci/container-base.sh` builds the
//! base once with mmdebstrap), the binary under test is copied in, and docs/container.md's
//! `docker` lines then run as written, `podman` for `docker` and the test's own names for the
//! image, volume, container and host port: `doctor`, a judge and an evaluation in a working
//! folder with the compile cache in a volume, and `serve` answering one Codeforces Python
//! request to the host through the published port, with its health check.
//!
//! podman runs with runc: Debian's default runtime, crun, refuses this kind of host's hybrid
//! cgroups.

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

/// A container removed (killed first) with its anonymous volumes when dropped, even when the
/// test fails.
struct Container(String);

impl Drop for Container {
    fn drop(&mut self) {
        let _ = podman(["rm", "--force", "--volumes", "--time", "0", &self.0]).output();
    }
}

/// Builds the Dockerfile's runtime stage on the local base, then the test image: that stage
/// plus the binary under test (stripped: the debug binary is ~300 MB of symbols).
fn build_image(work: &Path) -> (Image, Image) {
    let id = std::process::id();
    let runtime = Image(format!("localhost/ioi-run-test-runtime:{id}"));
    // Docker's image format: the OCI one has no HEALTHCHECK.
    let out = run(podman([
        "build",
        "--format",
        "docker",
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
        "--format",
        "docker",
        "--pull=never",
        "--tag",
        &image.0,
        &context.to_string_lossy(),
    ])));
    (runtime, image)
}

/// The `sh` block of docs/container.md that holds the `SANDBOX=` line: its commands, each with
/// its continuation lines joined.
fn documented_lines() -> Vec<String> {
    let doc = std::fs::read_to_string(project().join("docs/container.md")).unwrap();
    let block = doc
        .split("```sh\n")
        .skip(1)
        .filter_map(|rest| rest.split_once("\n```").map(|(block, _)| block))
        .find(|block| block.contains("SANDBOX="))
        .expect("docs/container.md has an `sh` block with the SANDBOX= line");
    block
        .replace("\\\n", " ")
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|l| !l.is_empty())
        .collect()
}

/// The README's container lines are docs/container.md's (which the container test runs), but
/// for `docker compose up -d`, which the test runs with podman-compose.
#[test]
fn the_readme_container_lines_are_the_documented_ones() {
    let readme = std::fs::read_to_string(project().join("README.md")).unwrap();
    let section = readme
        .split_once("### Run in a container\n```sh\n")
        .and_then(|(_, rest)| rest.split_once("\n```"))
        .map(|(block, _)| block)
        .expect("the README's `Run in a container` block");
    let documented = documented_lines();
    let lines: Vec<String> = section
        .replace("\\\n", " ")
        .lines()
        .map(|l| {
            l.split('#')
                .next()
                .unwrap()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|l| !l.is_empty())
        .collect();
    assert!(lines.iter().any(|l| l.starts_with("SANDBOX=")), "{lines:?}");
    for line in lines {
        assert!(
            documented.contains(&line) || line == "docker compose up -d",
            "README.md's `{line}` is not a line of docs/container.md"
        );
    }
}

/// The documented line that starts with `prefix` (one only).
fn line<'a>(lines: &'a [String], prefix: &str) -> &'a str {
    let found: Vec<&String> = lines.iter().filter(|l| l.starts_with(prefix)).collect();
    assert_eq!(
        found.len(),
        1,
        "docs/container.md: one line `{prefix}...`: {lines:?}"
    );
    found[0]
}

/// The options `$SANDBOX` stands for in the documented lines.
fn sandbox_options(lines: &[String]) -> Vec<String> {
    let assignment = line(lines, "SANDBOX=");
    assignment
        .trim_start_matches("SANDBOX=")
        .trim_matches('"')
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// The names a documented line uses, and what the test uses instead: its own image, volume and
/// container (the host's may hold real ones), and a free host port.
struct Names {
    image: String,
    volume: String,
    container: String,
    port: u16,
}

impl Names {
    /// `line` as the test runs it: `podman --runtime runc` for `docker`, the test's names for the
    /// documented ones; every other word as written.
    fn apply(&self, line: &str) -> String {
        let words: Vec<String> = line
            .split(' ')
            .map(|word| match word {
                "docker" => "podman --runtime runc".to_string(),
                "ioi-run" => self.image.clone(),
                "ioi-run-cache" => self.volume.clone(),
                "ioi-run-serve" => self.container.clone(),
                "2000:2000" => format!("127.0.0.1:{}:2000", self.port),
                _ => match word.strip_prefix("ioi-run-cache:") {
                    Some(rest) => format!("{}:{rest}", self.volume),
                    None => word.to_string(),
                },
            })
            .collect();
        words.join(" ")
    }
}

/// Runs the `SANDBOX=` line and then `line` with bash in `dir`, as a user pastes them.
fn shell(dir: &Path, sandbox: &str, line: &str) -> Output {
    Command::new("bash")
        .args(["-euc", &format!("{sandbox}\n{line}")])
        .current_dir(dir)
        .output()
        .expect("bash runs")
}

/// A named volume removed when dropped, even when the test fails.
struct Volume(String);

impl Drop for Volume {
    fn drop(&mut self) {
        let _ = podman(["volume", "rm", "--force", &self.0]).output();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The working folder of the documented `judge` and `evaluate` lines: `problem/` and
/// `solution.cpp` (a fixture scoring 40), `problems/` and `submissions.jsonl` (one accepted
/// submission).
fn working_folder(dir: &Path) {
    let fixture = problem_dir("sumpairs");
    for target in [dir.join("problem"), dir.join("problems/sumpairs")] {
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        ok(Command::new("cp")
            .arg("-r")
            .arg(&fixture)
            .arg(&target)
            .output()
            .unwrap());
    }
    std::fs::copy(
        fixture.join("solutions/int_overflow.cpp"),
        dir.join("solution.cpp"),
    )
    .unwrap();
    let code = std::fs::read_to_string(fixture.join("solutions/ac.cpp")).unwrap();
    let row = json!({"uuid": "ac", "problem_id": "sumpairs", "code": code});
    std::fs::write(dir.join("submissions.jsonl"), format!("{row}\n")).unwrap();
}

/// Whether `podman healthcheck run NAME` succeeds: the image's HEALTHCHECK passes when run.
fn healthy(container: &str) -> bool {
    podman(["healthcheck", "run", container])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn the_documented_lines_build_offline_and_run_doctor_judge_evaluate_and_serve() {
    if let Some(reason) = missing_prerequisite() {
        skip(&reason);
        return;
    }
    let lines = documented_lines();
    let sandbox = line(&lines, "SANDBOX=").to_string();
    // The image is built the test's way (offline, the binary under test), not by this line.
    assert_eq!(line(&lines, "docker build "), "docker build -t ioi-run .");
    let work = tempfile::tempdir().unwrap();
    let (_runtime, image) = build_image(work.path());
    let id = std::process::id();
    let names = Names {
        image: image.0.clone(),
        volume: format!("ioi-run-test-cache-{id}"),
        container: format!("ioi-run-test-serve-{id}"),
        port: free_port(),
    };
    let data = work.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    working_folder(&data);
    // Every documented line is one the test runs (or the build line and SANDBOX= above).
    let prefixes = [
        "docker build ",
        "SANDBOX=",
        "docker volume create ",
        "docker run --rm $SANDBOX ioi-run doctor",
        "docker run --rm $SANDBOX -v ioi-run-cache:/cache -v \"$PWD:/data\" ioi-run judge ",
        "docker run --rm $SANDBOX -v ioi-run-cache:/cache -v \"$PWD:/data\" ioi-run evaluate ",
        "docker run -d --name ioi-run-serve ",
    ];
    for documented in &lines {
        assert!(
            prefixes.iter().any(|p| documented.starts_with(p)),
            "docs/container.md's `{documented}` is not run by this test"
        );
    }
    let run = |prefix: &str| shell(&data, &sandbox, &names.apply(line(&lines, prefix)));

    let _volume = Volume(names.volume.clone());
    ok(run("docker volume create "));

    let report = ok(run("docker run --rm $SANDBOX ioi-run doctor"));
    assert!(report.contains("This host can judge."), "{report}");

    // The judge of solution.cpp (int_overflow: 40 points), the compile cache in the volume.
    let judged = ok(run(
        "docker run --rm $SANDBOX -v ioi-run-cache:/cache -v \"$PWD:/data\" ioi-run judge ",
    ));
    assert!(judged.contains("total 40/100"), "{judged}");
    let cached = ok(run_podman([
        "volume",
        "inspect",
        "--format",
        "{{.Mountpoint}}",
        &names.volume,
    ]));
    let compiled = walkdir::WalkDir::new(Path::new(cached.trim()).join("ioi-run/compile"))
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .count();
    assert!(compiled > 0, "the compile cache volume holds no entry");

    // The evaluation writes its results into the working folder on the host.
    ok(run(
        "docker run --rm $SANDBOX -v ioi-run-cache:/cache -v \"$PWD:/data\" ioi-run evaluate ",
    ));
    let results = std::fs::read_to_string(data.join("results/submissions.jsonl")).unwrap();
    let rows: Vec<Value> = results
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 1, "{results}");
    assert_eq!(rows[0]["uuid"], "ac");
    assert_eq!(rows[0]["all_subtasks_points"], 100.0);

    // serve, answering a Codeforces Python request (python3 in the image) from the host.
    let container = Container(names.container.clone());
    ok(run("docker run -d --name ioi-run-serve "));
    let base = format!("http://127.0.0.1:{}/api/v2", names.port);
    wait_until(
        "the server in the container",
        Duration::from_secs(120),
        || agent().get(&format!("{base}/runtimes")).call().is_ok(),
    );
    // The endpoint it prints is the published port's address on the host (`-p 2000:2000`).
    let logs = run_podman(["logs", &container.0]);
    let printed = text(&logs.stderr);
    assert!(
        printed
            .lines()
            .any(|l| l == "PISTON_ENDPOINTS=http://127.0.0.1:2000/api/v2"),
        "{printed}"
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

    // The image's HEALTHCHECK probes the server, and the engine records it.
    wait_until("a healthy server", Duration::from_secs(120), || {
        healthy(&container.0)
    });
    let health = ok(run_podman([
        "inspect",
        "--format",
        "{{.State.Health.Status}}",
        &container.0,
    ]));
    assert_eq!(health.trim(), "healthy");

    // SIGTERM (docker stop) ends the server gracefully: exit status 0.
    ok(run_podman(["stop", "--time", "30", &container.0]));
    let code = ok(run_podman([
        "inspect",
        "--format",
        "{{.State.ExitCode}}",
        &container.0,
    ]));
    assert_eq!(code.trim(), "0", "the server's exit status");

    // A server that answers nothing is unhealthy; a command other than serve is healthy while
    // it runs.
    let silent = Container(format!("ioi-run-test-silent-{id}"));
    let detached = |name: &str, command: &str| {
        let line = format!(
            "podman --runtime runc run -d $SANDBOX --name {name} --entrypoint bash {} -c '{command}'",
            image.0
        );
        ok(shell(&data, &sandbox, &line));
    };
    detached(&silent.0, "exec sleep 600");
    assert!(
        healthy(&silent.0),
        "a container that does not serve is unhealthy"
    );
    // PID 1 with the command line `ioi-run serve` and nothing listening.
    let deaf = Container(format!("ioi-run-test-deaf-{id}"));
    detached(
        &deaf.0,
        "cd /tmp && echo \"sleep 600\" > serve && exec -a ioi-run bash serve",
    );
    assert!(
        !healthy(&deaf.0),
        "a serve command without a server is healthy"
    );

    // Without --cap-add SYS_ADMIN, doctor names the missing capability to root.
    let without = sandbox.replace("--cap-add SYS_ADMIN ", "");
    assert_ne!(without, sandbox);
    let out = shell(
        &data,
        &without,
        &names.apply("docker run --rm $SANDBOX ioi-run doctor"),
    );
    let report = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(!out.status.success(), "{report}");
    assert!(
        report.contains("this process is root but lacks CAP_SYS_ADMIN: run the container with --cap-add SYS_ADMIN"),
        "{report}"
    );
    assert!(!report.contains("run ioi-run as root"), "{report}");

    // As a normal user (--user), doctor's cgroups check fails and says what to do, rather than
    // passing and leaving the sandbox's self-test to fail with a bare `Permission denied`.
    let out = shell(
        &data,
        &sandbox,
        &names.apply("docker run --rm --user 65534:65534 $SANDBOX ioi-run doctor --json"),
    );
    assert!(!out.status.success(), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).expect("doctor --json prints JSON");
    let cgroups = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "cgroups")
        .unwrap_or_else(|| panic!("no cgroups check: {report}"));
    assert_eq!(cgroups["status"], "fail", "{cgroups}");
    let detail = cgroups["detail"].as_str().unwrap();
    assert!(detail.contains("run ioi-run as root"), "{detail}");

    compose_serves(&image.0, work.path());
}

/// A compose project brought down, with its volume and network, when dropped.
struct ComposeProject {
    file: std::path::PathBuf,
    name: String,
}

impl ComposeProject {
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("podman-compose");
        cmd.arg("--podman-args=--runtime=runc")
            .args(["-p", &self.name, "-f"])
            .arg(&self.file)
            .args(args);
        cmd
    }
}

impl Drop for ComposeProject {
    fn drop(&mut self) {
        let _ = self.command(&["down", "--volumes"]).output();
        let _ = podman([
            "network",
            "rm",
            "--force",
            &format!("{}_default", self.name),
        ])
        .output();
        let _ = podman([
            "volume",
            "rm",
            "--force",
            &format!("{}_ioi-run-cache", self.name),
        ])
        .output();
    }
}

/// compose.yaml with podman-compose, the image and host port made the test's own: the server
/// answers through the published port, turns healthy, and carries the restart policy.
fn compose_serves(image: &str, work: &Path) {
    let installed = Command::new("podman-compose")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !installed {
        skip("podman-compose is not installed (.ci/container-base.sh installs it)");
        return;
    }
    let text = std::fs::read_to_string(project().join("compose.yaml")).unwrap();
    let port = free_port();
    let mut substituted = text.clone();
    for (from, to) in [
        ("    build: .\n", String::new()),
        ("    image: ioi-run\n", format!("    image: {image}\n")),
        ("\"2000:2000\"", format!("\"127.0.0.1:{port}:2000\"")),
    ] {
        assert!(substituted.contains(from), "compose.yaml has no `{from}`");
        substituted = substituted.replace(from, &to);
    }
    let dir = work.join("compose");
    std::fs::create_dir_all(&dir).unwrap();
    let project = ComposeProject {
        file: dir.join("compose.yaml"),
        name: format!("ioi-run-test-compose-{}", std::process::id()),
    };
    std::fs::write(&project.file, substituted).unwrap();
    ok(project.command(&["up", "-d"]).output().unwrap());
    let container = format!("{}_ioi-run_1", project.name);
    let base = format!("http://127.0.0.1:{port}/api/v2");
    wait_until(
        "the server of compose.yaml",
        Duration::from_secs(120),
        || agent().get(&format!("{base}/runtimes")).call().is_ok(),
    );
    wait_until("a healthy compose server", Duration::from_secs(120), || {
        healthy(&container)
    });
    let restart = ok(run_podman([
        "inspect",
        "--format",
        "{{.HostConfig.RestartPolicy.Name}}",
        &container,
    ]));
    assert_eq!(restart.trim(), "unless-stopped");
}

fn run_podman<const N: usize>(args: [&str; N]) -> Output {
    run(podman(args))
}

/// compose.yaml runs `serve` with what the documented lines give it: the same privileges and
/// limits, the cache volume, the published port and the command; plus the health check of the
/// Dockerfile and a restart policy.
#[test]
fn the_compose_file_carries_the_documented_options() {
    let parsed = Command::new("python3")
        .args([
            "-c",
            "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))",
        ])
        .arg(project().join("compose.yaml"))
        .output();
    let compose: Value = match parsed {
        Ok(out) if out.status.success() => serde_json::from_str(&text(&out.stdout)).unwrap(),
        _ => {
            skip("python3 with PyYAML (Debian: python3-yaml) reads compose.yaml");
            return;
        }
    };
    let service = &compose["services"]["ioi-run"];
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap_or_else(|| panic!("a list: {v}"))
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect()
    };
    let lines = documented_lines();
    let options = sandbox_options(&lines);
    let mut caps = Vec::new();
    let mut security = Vec::new();
    let mut ulimits = Vec::new();
    let mut shm = Vec::new();
    for pair in options.chunks(2) {
        match pair {
            [flag, value] if flag == "--cap-add" => caps.push(value.clone()),
            [flag, value] if flag == "--security-opt" => security.push(value.clone()),
            [flag, value] if flag == "--ulimit" => ulimits.push(value.clone()),
            [flag, value] if flag == "--shm-size" => shm.push(format!("{value}b")),
            _ => panic!("an option of SANDBOX the compose test does not know: {pair:?}"),
        }
    }
    assert_eq!(strings(&service["cap_add"]), caps);
    assert_eq!(strings(&service["security_opt"]), security);
    let compose_ulimits: Vec<String> = service["ulimits"]
        .as_object()
        .expect("ulimits")
        .iter()
        .map(|(name, limit)| format!("{name}={limit}:{limit}"))
        .collect();
    let mut sorted = ulimits.clone();
    sorted.sort();
    assert_eq!(compose_ulimits, sorted);
    let compose_shm: Vec<String> = service["shm_size"]
        .as_str()
        .into_iter()
        .map(str::to_string)
        .collect();
    assert_eq!(compose_shm, shm, "shm_size");

    let serve = line(&lines, "docker run -d --name ioi-run-serve ");
    let words: Vec<&str> = serve.split(' ').collect();
    let after = |flag: &str| {
        let at = words.iter().position(|w| *w == flag).expect(flag);
        words[at + 1].to_string()
    };
    assert_eq!(strings(&service["volumes"]), [after("-v")]);
    assert_eq!(strings(&service["ports"]), [after("-p")]);
    let image_at = words.iter().rposition(|w| *w == "ioi-run").unwrap();
    assert_eq!(strings(&service["command"]), words[image_at + 1..]);
    assert!(
        compose["volumes"]
            .as_object()
            .is_some_and(|v| v.contains_key("ioi-run-cache")),
        "{compose}"
    );

    let dockerfile = std::fs::read_to_string(project().join("Dockerfile")).unwrap();
    let probe = dockerfile
        .replace("\\\n", " ")
        .lines()
        .find_map(|l| l.strip_prefix("HEALTHCHECK ").map(str::to_string))
        .expect("the Dockerfile's HEALTHCHECK");
    let cmd: Vec<String> =
        serde_json::from_str(probe.split_once("CMD ").unwrap().1.trim()).unwrap();
    let test = strings(&service["healthcheck"]["test"]);
    assert_eq!(test[0], "CMD");
    assert_eq!(test[1..], cmd[..]);
    assert_eq!(service["restart"], "unless-stopped");
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

/// The health probe finds `serve` after ioi-run's own options, those with a value included
/// (`ioi-run --log-format json serve` is a server to probe, not a one-shot command that is
/// healthy while it runs), and knows every such option `ioi-run --help` shows.
#[test]
fn the_health_probe_finds_serve_after_the_global_options() {
    let python = Command::new("python3").arg("--version").output();
    if !python.is_ok_and(|o| o.status.success()) {
        skip("python3 is not installed (the image's health probe is a Python script)");
        return;
    }
    let script = project().join("docker/healthcheck.py");
    let probe = |args: &[&str]| -> String {
        let program = "import importlib.util, json, sys\n\
             spec = importlib.util.spec_from_file_location('healthcheck', sys.argv[1])\n\
             probe = importlib.util.module_from_spec(spec)\n\
             spec.loader.exec_module(probe)\n\
             print(probe.url_to_probe(json.loads(sys.argv[2])))";
        let out = ok(Command::new("python3")
            .arg("-c")
            .arg(program)
            .arg(&script)
            .arg(serde_json::to_string(args).unwrap())
            .output()
            .unwrap());
        out.trim().to_string()
    };
    let runtimes = |port: u16| format!("http://127.0.0.1:{port}/api/v2/runtimes");
    assert_eq!(
        probe(&["ioi-run", "--log-format", "json", "serve", "--port", "2100"]),
        runtimes(2100)
    );
    assert_eq!(
        probe(&[
            "/usr/local/bin/ioi-run",
            "--color",
            "never",
            "serve",
            "--host",
            "0.0.0.0"
        ]),
        runtimes(2000)
    );
    assert_eq!(
        probe(&["ioi-run", "--color=never", "serve", "--ports", "2001-2015"]),
        runtimes(2001)
    );
    assert_eq!(
        probe(&["ioi-run", "--log-format", "json", "doctor"]),
        "None"
    );
    assert_eq!(probe(&["ioi-run", "evaluate", "serve"]), "None");

    let help = ok(Command::new(env!("CARGO_BIN_EXE_ioi-run"))
        .arg("--help")
        .output()
        .unwrap());
    let with_a_value: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Options:"))
        .filter(|l| l.contains(" <"))
        .filter_map(|l| l.split_whitespace().find(|w| w.starts_with("--")))
        .collect();
    assert!(with_a_value.contains(&"--log-format"), "{help}");
    let source = std::fs::read_to_string(&script).unwrap();
    let known = source
        .lines()
        .find(|l| l.starts_with("GLOBAL_OPTIONS_WITH_A_VALUE = "))
        .expect("the probe's list of ioi-run's options with a value");
    for option in with_a_value {
        assert!(
            known.contains(&format!("\"{option}\"")),
            "docker/healthcheck.py does not skip the value of `{option}`"
        );
    }
}
