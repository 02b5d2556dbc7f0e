//! `ioi-run bench serve --api run-code`: SandboxFusion's `/run_code` as verl's code reward calls
//! it (docs/run-code-api.md).
//!
//! verl sends one request per test case, every test case of a completion at once, at most
//! `sandbox_fusion.max_concurrent` requests in flight over the batch. The batch here is
//! `completions` distinct C++ programs (a sum of the numbers on stdin, each made distinct by a
//! comment, as model completions are) × `test_cases` inputs, sent by `max_concurrent` clients
//! in completion order. Figures: the latency of one request (compile + run, then cached, and
//! Python), the batch's time and per-request latency when each program is compiled once (this
//! server), and when it is compiled per test case (each request's code made unique, which is
//! what SandboxFusion does for every request), with the gain of the first over the second.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use super::clients::send_all;
use crate::output::outln;
use crate::server::JudgeExecutor;

/// The shape of the verl-like batch.
#[derive(Debug, Clone)]
pub struct RunCodeBatch {
    /// Distinct programs (model completions).
    pub completions: usize,
    /// Test cases per program: one request each.
    pub test_cases: usize,
    /// Requests in flight at once (verl's `sandbox_fusion.max_concurrent`).
    pub max_concurrent: usize,
}

/// Numbers per test case: verl's test cases are small.
const NUMBERS: usize = 1000;
const CPP_SUM: &str = r#"#include <cstdio>
int main() {
    int n;
    long long s = 0, x;
    if (scanf("%d", &n) != 1) return 1;
    for (int i = 0; i < n; i++) { if (scanf("%lld", &x) != 1) return 1; s += x; }
    printf("%lld\n", s);
}
"#;
const PYTHON_SUM: &str =
    "import sys\nn, *xs = map(int, sys.stdin.read().split())\nprint(sum(xs[:n]))\n";

/// Test case `i`: its stdin and expected stdout.
fn test_case(i: usize) -> (String, String) {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15 ^ (i as u64).wrapping_mul(0x2545_f491_4f6c_dd1d);
    let mut sum: i64 = 0;
    let mut input = format!("{NUMBERS}\n");
    for _ in 0..NUMBERS {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let x = (state % 1_000_000) as i64;
        sum += x;
        input.push_str(&x.to_string());
        input.push(' ');
    }
    (input, format!("{sum}\n"))
}

/// The body verl's `call_sandbox_api` sends.
fn body(language: &str, code: &str, stdin: &str) -> String {
    json!({"compile_timeout": 10, "run_timeout": 10, "code": code, "stdin": stdin,
           "memory_limit_MB": 1024, "language": language, "files": {}, "fetch_files": []})
    .to_string()
}

/// One request; fails unless verl would count it as passed.
fn send(agent: &ureq::Agent, url: &str, body: &str, expected: &str) -> Result<()> {
    let reply = match agent
        .post(url)
        .set("Content-Type", "application/json")
        .send_string(body)
    {
        Ok(reply) => reply,
        Err(ureq::Error::Status(code, reply)) => {
            bail!("HTTP {code}: {}", reply.into_string().unwrap_or_default())
        }
        Err(e) => return Err(e).context("HTTP request failed"),
    };
    let value: Value = reply.into_json().context("the answer is not JSON")?;
    let stdout = value["run_result"]["stdout"].as_str().unwrap_or_default();
    if value["status"] != "Success" || stdout.trim_end() != expected.trim_end() {
        bail!("the benchmark program did not pass: {value}");
    }
    Ok(())
}

/// What one batch measured.
struct Batch {
    seconds: f64,
    median_ms: f64,
    p90_ms: f64,
    p99_ms: f64,
}

/// Sends `requests` (body, expected stdout) with `clients` clients in order.
fn batch(url: &str, requests: &[(String, String)], clients: usize) -> Result<Batch> {
    let (seconds, latencies) = send_all(
        requests,
        clients,
        Duration::from_secs(300),
        |agent, _, (body, expected)| send(agent, url, body, expected),
    )?;
    let ms = |q: f64| {
        let at = ((latencies.len() as f64 * q) as usize).min(latencies.len().saturating_sub(1));
        latencies.get(at).map_or(0.0, |d| d.as_secs_f64() * 1e3)
    };
    Ok(Batch {
        seconds,
        median_ms: ms(0.5),
        p90_ms: ms(0.9),
        p99_ms: ms(0.99),
    })
}

/// Measures `/run_code` at `url` and prints the figures.
pub fn measure(batch_shape: &RunCodeBatch, url: &str, executor: &JudgeExecutor) -> Result<()> {
    let builds = || executor.judge().cache().builds();
    let (input, output) = test_case(0);
    outln!(
        "\n/run_code (SandboxFusion, as verl calls it): test case of {NUMBERS} numbers on stdin"
    );
    let agent = ureq::AgentBuilder::new().build();
    let single = |language: &str, code: &str| -> Result<f64> {
        let t = Instant::now();
        send(&agent, url, &body(language, code, &input), &output)?;
        Ok(t.elapsed().as_secs_f64() * 1e3)
    };
    let cpp = format!("{CPP_SUM}// latency\n");
    let first = single("cpp", &cpp)?;
    let cached = single("cpp", &cpp)?;
    let python = single("python", PYTHON_SUM)?;
    outln!(
        "one request: cpp first (compile + run) {first:.0} ms, cpp cached {cached:.1} ms, \
         python {python:.1} ms"
    );

    let RunCodeBatch {
        completions,
        test_cases,
        max_concurrent,
    } = *batch_shape;
    let cases: Vec<(String, String)> = (0..test_cases).map(test_case).collect();
    let requests = |unique_per_case: bool| -> Vec<(String, String)> {
        let mut requests = Vec::with_capacity(completions * test_cases);
        for completion in 0..completions {
            for (case, (input, output)) in cases.iter().enumerate() {
                let code = match unique_per_case {
                    false => format!("{CPP_SUM}// completion {completion}\n"),
                    true => format!("{CPP_SUM}// completion {completion} case {case}\n"),
                };
                requests.push((body("cpp", &code, input), output.clone()));
            }
        }
        requests
    };
    outln!(
        "verl-like batch: {completions} C++ completions x {test_cases} test cases = {} requests, \
         {max_concurrent} in flight",
        completions * test_cases
    );
    outln!("compiled               batch s   req/s   median ms   p90 ms   p99 ms   compiles");
    let mut rows = Vec::new();
    for (label, unique) in [("once per program", false), ("per test case", true)] {
        let requests = requests(unique);
        let before = builds();
        let b = batch(url, &requests, max_concurrent)?;
        let compiles = builds() - before;
        outln!(
            "{label:<20} {:>9.2} {:>7.1} {:>11.1} {:>8.1} {:>8.1} {compiles:>10}",
            b.seconds,
            requests.len() as f64 / b.seconds,
            b.median_ms,
            b.p90_ms,
            b.p99_ms
        );
        rows.push(b.seconds);
    }
    outln!(
        "gain of compiling once per program: {:.1}x less time for the batch",
        rows[1] / rows[0]
    );
    Ok(())
}
