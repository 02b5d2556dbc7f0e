//! `ioi-run doctor`: checks the host and runs sandboxed self-tests, saying what to fix.

use std::time::Duration;

use super::output::outln;
use anyhow::Result;
use ioi_sandbox::host::costs::HostCosts;
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
    // Measured before the sandbox's self-tests start, on an otherwise idle process.
    let costs = ioi_sandbox::host::costs::measure();
    let checks = host_checks(costs.as_ref().ok());
    let mut timing = timing_checks();
    timing.extend(cost_checks(&costs));
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
        outln!("\nTiming stability and costs (warnings do not fail doctor; impact = how much verdicts near a time limit can change):");
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
fn host_checks(costs: Option<&HostCosts>) -> Vec<Check> {
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
    // Only `--compile-profile ioi` needs them, and checkers and managers start faster with
    // them: a warning, not a failure.
    let missing = crate::judge::compile::missing_static_archives();
    let mut statics = Check::new(
        "static linking",
        true,
        "libstdc++.a, libc.a, libm.a found (--compile-profile ioi; checkers and managers linked \
         statically)",
    );
    if !missing.is_empty() {
        statics.status = Status::Warn;
        statics.detail = format!(
            "g++ finds no {}: --compile-profile ioi (static linking) will give CE, and checkers \
             and managers are linked dynamically (about 1 ms more of every test); install the \
             static libraries of your g++ and libc (e.g. apt-get install libstdc++-12-dev \
             libc6-dev, or dnf install glibc-static libstdc++-static)",
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
            checks.push(speed_check(&sandbox, costs));
        }
        Err(e) => checks.push(Check::new("sandbox", false, format!("{e:#}"))),
    }
    checks
}

/// This host's speed against the reference workload, its costs beside computation, and the
/// time scale they suggest: a figure, not a failure (a slow host judges correctly with scaled
/// limits).
fn speed_check(sandbox: &Sandbox, costs: Option<&HostCosts>) -> Check {
    use crate::bench::speed;
    match speed::measure(sandbox) {
        Ok(s) => {
            let runs: Vec<String> = s.runs.iter().map(|r| format!("{r:.2}")).collect();
            let suggestion = speed::suggest(&s, costs);
            let held = match suggestion.held_by.is_empty() {
                true => String::new(),
                false => format!(
                    " (compute factor {:.2}, held at 1.00 by {})",
                    s.compute_factor(),
                    suggestion.held_by.join(", ")
                ),
            };
            Check::new(
                "speed",
                true,
                format!(
                    "reference workload {:.2} s CPU (runs {} s; the reference machine: {:.2} s); \
                     suggested --time-scale {:.2}{held}",
                    s.seconds,
                    runs.join(", "),
                    speed::REFERENCE_SECONDS,
                    suggestion.time_scale
                ),
            )
        }
        Err(e) => Check {
            status: Status::Warn,
            ..Check::new("speed", true, format!("not measured: {e:#}"))
        },
    }
}

/// What the host charges beside computation (see `ioi_sandbox::host::costs`): each a figure,
/// and a warning where it moves verdicts.
fn cost_checks(costs: &Result<HostCosts>) -> Vec<Check> {
    use crate::bench::speed::{micros, BARE_METAL_MEMORY_LOAD, BARE_METAL_PAGE_FAULT};
    let c = match costs {
        Ok(c) => c,
        Err(e) => {
            return vec![Check {
                status: Status::Unknown,
                ..Check::new("costs", true, format!("not measured: {e:#}"))
            }]
        }
    };
    let one = c.round_trip_one_cpu;
    let mut round_trip = Check::new(
        "pipe round trip",
        true,
        format!(
            "{} CPU ({} elapsed) on one CPU",
            micros(one.cpu),
            micros(one.wall)
        ),
    );
    if let Some(two) = c.round_trip_two_cpus {
        round_trip.detail += &format!(
            "; {} CPU ({} elapsed) across two",
            micros(two.cpu),
            micros(two.wall)
        );
        if let Some(ratio) = crate::bench::speed::crossing_penalty(c) {
            round_trip.status = Status::Warn;
            round_trip.why = Some(format!(
                "a wake-up across CPUs costs {ratio:.0} times one on the same CPU (a virtual \
                 machine's interrupts between vCPUs), charged as system time to the process \
                 that writes: ioi-run puts a Communication test's processes on one CPU \
                 (docs/judging.md#cpu-placement), so their verdicts are safe; other programs \
                 that talk across CPUs are not"
            ));
            round_trip.impact = Some(format!(
                "{} more CPU per round trip across CPUs: 10^5 round trips, {:.1} s",
                micros(two.cpu.saturating_sub(one.cpu)),
                two.cpu.saturating_sub(one.cpu).as_secs_f64() * 1e5
            ));
        }
    }
    let mut fault = Check::new(
        "page fault",
        true,
        format!("{} CPU per fresh 4 KiB page", micros(c.page_fault.cpu)),
    );
    if c.page_fault.cpu > BARE_METAL_PAGE_FAULT {
        fault.status = Status::Warn;
        fault.why = Some(format!(
            "over the {} of bare metal: a solution that touches 1 GiB of fresh memory spends \
             {:.1} s on page faults alone",
            micros(BARE_METAL_PAGE_FAULT),
            c.page_fault.cpu.as_secs_f64() * (1u64 << 18) as f64
        ));
        fault.impact = Some("high for memory-hungry solutions near the time limit".into());
    }
    let mut load = Check::new(
        "memory latency",
        true,
        format!(
            "{} per load missing every cache",
            micros(c.memory_load.wall)
        ),
    );
    if c.memory_load.wall > BARE_METAL_MEMORY_LOAD {
        load.status = Status::Warn;
        load.why = Some(format!(
            "over the {} of bare metal: pointer-chasing solutions run slower than at the contest",
            micros(BARE_METAL_MEMORY_LOAD)
        ));
        load.impact = Some("medium".into());
    }
    vec![round_trip, fault, load]
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
    // Whether a run works at all, not how fast: a limit no healthy host reaches, even a guest
    // kernel that charges its tasks the time its host took from it (user-mode Linux).
    let o = run_with(
        &["/bin/true"],
        Limits {
            cpu_time: Some(Duration::from_secs(10)),
            wall_time: Some(Duration::from_secs(30)),
            ..limits.clone()
        },
    );
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
