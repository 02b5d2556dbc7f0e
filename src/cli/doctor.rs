//! `ioi-run doctor`: checks the host and runs sandboxed self-tests, saying what to fix.

use std::time::Duration;

use super::output::outln;
use anyhow::Result;
use ioi_sandbox::{Limits, RunSpec, Sandbox, SandboxOptions, Stdio, Termination};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print the checks as one JSON document (for provisioning scripts): `{"can_judge",
    /// "checks": [{"name", "status", "detail"}], "timing": [...]}`; the exit code is the same.
    #[arg(long)]
    json: bool,
}

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
enum Status {
    Ok,
    /// Judging works, with a caveat.
    Warn,
    Fail,
    /// Could not be determined.
    Unknown,
}

impl Status {
    fn tag(self) -> &'static str {
        match self {
            Status::Ok => " ok ",
            Status::Warn => "warn",
            Status::Fail => "FAIL",
            Status::Unknown => " ?? ",
        }
    }
}

/// One line of the report.
#[derive(Debug, Clone, serde::Serialize)]
struct Check {
    name: String,
    status: Status,
    detail: String,
    /// For timing checks that are not good: why it matters, and how much.
    #[serde(skip_serializing_if = "Option::is_none")]
    why: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    impact: Option<String>,
}

impl Check {
    fn new(name: &str, ok: bool, detail: impl Into<String>) -> Check {
        Check {
            name: name.to_string(),
            status: if ok { Status::Ok } else { Status::Fail },
            detail: detail.into(),
            why: None,
            impact: None,
        }
    }
}

pub fn run(args: Args) -> Result<i32> {
    let checks = host_checks();
    let timing = timing_checks();
    let failures = checks.iter().filter(|c| c.status == Status::Fail).count();
    if args.json {
        let report = serde_json::json!({
            "can_judge": failures == 0,
            "checks": checks,
            "timing": timing,
        });
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        for check in &checks {
            outln!(
                "[{}] {:<18} {}",
                check.status.tag(),
                check.name,
                check.detail
            );
        }
        outln!("\nTiming stability (warnings do not fail doctor; impact = how much verdicts near a time limit can change):");
        for check in &timing {
            outln!(
                "[{}] {:<18} {}",
                check.status.tag(),
                check.name,
                check.detail
            );
            if let (Some(why), Some(impact)) = (&check.why, &check.impact) {
                outln!("       {:<18} why: {why} (impact: {impact})", "");
            }
        }
        if failures == 0 {
            outln!("\nThis host can judge.");
        } else {
            outln!("\n{failures} check(s) failed: fix them before judging.");
        }
    }
    Ok(if failures == 0 { 0 } else { 1 })
}

/// The host, the compiler, and the sandbox's self-tests: a failure means no judging here.
fn host_checks() -> Vec<Check> {
    let mut checks: Vec<Check> = ioi_sandbox::host::checks()
        .into_iter()
        .map(|c| Check::new(c.name, c.ok, c.detail))
        .collect();
    let gxx = std::process::Command::new("g++").arg("--version").output();
    checks.push(match gxx {
        Ok(out) if out.status.success() => {
            let first = String::from_utf8_lossy(&out.stdout)
                .lines()
                .next()
                .unwrap_or("")
                .to_string();
            Check::new("g++", true, first)
        }
        _ => Check::new(
            "g++",
            false,
            "g++ not found: install it (apt-get install g++)",
        ),
    });
    // Only `--compile-profile ioi` needs them: a warning, not a failure.
    let missing = crate::judge::compile::missing_static_archives();
    let mut statics = Check::new(
        "static linking",
        true,
        "libstdc++.a, libc.a, libm.a found (--compile-profile ioi)",
    );
    if !missing.is_empty() {
        statics.status = Status::Warn;
        statics.detail = format!(
            "g++ finds no {}: --compile-profile ioi (static linking) will give CE; install the \
             static libraries of your g++ and libc (e.g. apt-get install libstdc++-12-dev \
             libc6-dev)",
            missing.join(", ")
        );
    }
    checks.push(statics);
    match Sandbox::new(SandboxOptions::default()) {
        Ok(sandbox) => {
            checks.extend(
                self_tests(&sandbox)
                    .into_iter()
                    .map(|(name, ok, detail)| Check::new(name, ok, detail)),
            );
            checks.push(speed_check(&sandbox));
        }
        Err(e) => checks.push(Check::new("sandbox", false, format!("{e:#}"))),
    }
    checks
}

/// This host's speed against the reference workload, and the time scale it suggests: a
/// figure, not a failure (a slow host judges correctly with scaled limits).
fn speed_check(sandbox: &Sandbox) -> Check {
    use crate::bench::speed;
    match speed::measure(sandbox) {
        Ok(s) => {
            let runs: Vec<String> = s.runs.iter().map(|r| format!("{r:.2}")).collect();
            Check::new(
                "speed",
                true,
                format!(
                    "reference workload {:.2} s CPU (runs {} s; the reference machine: {:.2} s); \
                     suggested --time-scale {:.2}",
                    s.seconds,
                    runs.join(", "),
                    speed::REFERENCE_SECONDS,
                    s.suggested_time_scale()
                ),
            )
        }
        Err(e) => Check {
            status: Status::Warn,
            ..Check::new("speed", true, format!("not measured: {e:#}"))
        },
    }
}

/// What keeps CPU times comparable between runs: warnings, not failures (a laptop can judge,
/// with less stable verdicts near the time limits).
fn timing_checks() -> Vec<Check> {
    use ioi_sandbox::host::timing::{self, Advice};
    timing::checks()
        .into_iter()
        .map(|check| {
            let good = check.advice == Advice::Good;
            Check {
                name: check.name.to_string(),
                status: match check.advice {
                    Advice::Good => Status::Ok,
                    Advice::Warn => Status::Warn,
                    Advice::Unknown => Status::Unknown,
                },
                detail: check.detail.to_string(),
                why: (!good).then(|| check.why.to_string()),
                impact: (!good).then(|| check.impact.to_string()),
            }
        })
        .collect()
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
