//! `ioi-run doctor`: checks the host and runs sandboxed self-tests, saying what to fix.

use std::time::Duration;

use super::output::outln;
use anyhow::Result;
use ioi_sandbox::{Limits, RunSpec, Sandbox, SandboxOptions, Stdio, Termination};

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> Result<i32> {
    let mut failures = 0;
    let mut report = |name: &str, ok: bool, detail: &str| -> Result<()> {
        outln!("[{}] {name:<18} {detail}", if ok { " ok " } else { "FAIL" });
        if !ok {
            failures += 1;
        }
        Ok(())
    };
    for check in ioi_sandbox::host::checks() {
        report(check.name, check.ok, &check.detail)?;
    }
    let gxx = std::process::Command::new("g++").arg("--version").output();
    match gxx {
        Ok(out) if out.status.success() => {
            let first = String::from_utf8_lossy(&out.stdout)
                .lines()
                .next()
                .unwrap_or("")
                .to_string();
            report("g++", true, &first)?
        }
        _ => report(
            "g++",
            false,
            "g++ not found: install it (apt-get install g++)",
        )?,
    }
    // Only `--compile-profile ioi` needs them: a warning, not a failure.
    let missing = crate::judge::compile::missing_static_archives();
    if missing.is_empty() {
        println!(
            "[ ok ] {:<18} libstdc++.a, libc.a, libm.a found (--compile-profile ioi)",
            "static linking"
        );
    } else {
        println!(
            "[warn] {:<18} g++ finds no {}: --compile-profile ioi (static linking) will give CE; \
             install the static libraries of your g++ and libc (e.g. apt-get install \
             libstdc++-12-dev libc6-dev)",
            "static linking",
            missing.join(", ")
        );
    }
    let sandbox = match Sandbox::new(SandboxOptions::default()) {
        Ok(s) => s,
        Err(e) => {
            report("sandbox", false, &format!("{e:#}"))?;
            return Ok(1);
        }
    };
    for (name, ok, detail) in self_tests(&sandbox) {
        report(name, ok, &detail)?;
    }
    speed_report(&sandbox);
    timing_report();
    if failures == 0 {
        outln!("\nThis host can judge.");
        Ok(0)
    } else {
        outln!("\n{failures} check(s) failed: fix them before judging.");
        Ok(1)
    }
}

/// This host's speed against the reference workload, and the time scale it suggests: a
/// figure, not a check (a slow host judges correctly with scaled limits).
fn speed_report(sandbox: &Sandbox) {
    use crate::bench::speed;
    match speed::measure(sandbox) {
        Ok(s) => {
            let runs: Vec<String> = s.runs.iter().map(|r| format!("{r:.2}")).collect();
            println!(
                "[ ok ] {:<18} reference workload {:.2} s CPU (runs {} s; the reference machine: \
                 {:.2} s)",
                "speed",
                s.seconds,
                runs.join(", "),
                speed::REFERENCE_SECONDS
            );
            println!(
                "       {:<18} suggested --time-scale {:.2}",
                "",
                s.suggested_time_scale()
            );
        }
        Err(e) => println!("[warn] {:<18} not measured: {e:#}", "speed"),
    }
}

/// What keeps CPU times comparable between runs: warnings, not failures (a laptop can judge,
/// with less stable verdicts near the time limits).
fn timing_report() {
    use ioi_sandbox::host::timing::{self, Advice};
    println!("\nTiming stability (warnings do not fail doctor; impact = how much verdicts near a time limit can change):");
    for check in timing::checks() {
        let tag = match check.advice {
            Advice::Good => " ok ",
            Advice::Warn => "warn",
            Advice::Unknown => " ?? ",
        };
        println!("[{tag}] {:<18} {}", check.name, check.detail);
        if check.advice != Advice::Good {
            println!(
                "       {:<18} why: {} (impact: {})",
                "", check.why, check.impact
            );
        }
    }
}

fn self_tests(sandbox: &Sandbox) -> Vec<(&'static str, bool, String)> {
    let Ok(dir) = tempfile::tempdir() else {
        return vec![(
            "self-test",
            false,
            "cannot create a temporary directory".into(),
        )];
    };
    let _ = sandbox.give_to_box(dir.path());
    let limits = Limits {
        cpu_time: Some(Duration::from_millis(500)),
        wall_time: Some(Duration::from_secs(3)),
        memory: Some(64 << 20),
        ..Limits::default()
    };
    let run_with = |argv: &[&str], limits: Limits| {
        let mut spec = RunSpec::new(dir.path(), argv.iter().copied());
        spec.limits = limits;
        spec.stdout = Stdio::Path(dir.path().join("out"));
        sandbox.run(&spec)
    };
    let run = |argv: &[&str]| run_with(argv, limits.clone());
    let mut out = Vec::new();
    let o = run(&["/bin/true"]);
    out.push((
        "run /bin/true",
        o.status == Termination::Ok,
        described(o.status, &o.message),
    ));
    let o = run(&["bash", "-c", "while :; do :; done"]);
    out.push((
        "CPU time limit",
        o.status == Termination::TimeLimit,
        format!("{} after {:.2} s CPU", word(o.status), o.cpu_time),
    ));
    // A generous CPU limit: the memory limit must stop it first, even where page faults are
    // slow (virtual machines, user-mode Linux).
    let o = run_with(
        &["bash", "-c", "a=x; while :; do a=$a$a; done"],
        Limits {
            cpu_time: Some(Duration::from_secs(20)),
            wall_time: Some(Duration::from_secs(60)),
            ..limits.clone()
        },
    );
    out.push((
        "memory limit",
        o.status == Termination::MemoryLimit,
        format!("{}, peak {} MiB", word(o.status), o.memory >> 20),
    ));
    let o = run(&["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/22"]);
    out.push((
        "no network",
        o.status != Termination::Ok,
        described(o.status, &o.message),
    ));
    out
}

/// The word `ioi-run sandbox` prints for a status (`ok`, `time_limit`, ...), not its Rust name.
fn word(status: Termination) -> String {
    serde_json::to_value(status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{status:?}"))
}

/// `word: message`, or only the word when the message says nothing more.
fn described(status: Termination, message: &str) -> String {
    let word = word(status);
    if message.is_empty() || message == word {
        word
    } else {
        format!("{word}: {message}")
    }
}
