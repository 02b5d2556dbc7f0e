//! `ioi-run bench compile`: the demo's submissions compiled plainly and with the precompiled
//! header (src/judge/pch.rs), interleaved so that both see the same machine load, each with a
//! distinct code (a comment) so that nothing comes from the compile cache. The first round
//! includes building the precompiled headers (once per problem and include list); later rounds
//! show the steady state of a dataset.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use ioi_sandbox::{Sandbox, SandboxOptions};

use crate::evaluate::submissions::{load_submissions, SubmissionOptions};
use crate::judge::compile::{CompileCache, CompileProfile, Compiled};
use crate::output::outln;

/// CPU seconds of the processes this one waited for (the sandboxes and their compilers).
fn children_cpu() -> f64 {
    nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
        .map(|u| {
            let t = |tv: nix::sys::time::TimeVal| tv.tv_sec() as f64 + tv.tv_usec() as f64 * 1e-6;
            t(u.user_time()) + t(u.system_time())
        })
        .unwrap_or(0.0)
}

#[derive(Default)]
struct Tally {
    wall: Duration,
    cpu: f64,
    compiles: usize,
}

impl Tally {
    fn add(&mut self, f: impl FnOnce() -> Result<Compiled>) -> Result<Compiled> {
        let (cpu, start) = (children_cpu(), Instant::now());
        let compiled = f()?;
        self.wall += start.elapsed();
        self.cpu += children_cpu() - cpu;
        self.compiles += 1;
        Ok(compiled)
    }

    fn per_compile(&self) -> (f64, f64) {
        let n = self.compiles.max(1) as f64;
        (self.wall.as_secs_f64() / n * 1e3, self.cpu / n * 1e3)
    }
}

pub fn run(rounds: usize) -> Result<()> {
    let root = tempfile::tempdir()?;
    let demo = root.path().join("demo");
    crate::evaluate::demo::extract(&demo)?;
    let submissions = load_submissions(
        &[demo.join("submissions.jsonl")],
        &SubmissionOptions::default(),
        &crate::dataset::RowPolicy::new(true),
    )?;
    let mut problems = std::collections::HashMap::new();
    for s in &submissions {
        if !problems.contains_key(&s.problem_id) {
            let dir = demo.join("problems").join(&s.problem_id);
            let (problem, _) = crate::problem::cms::load_cms(&dir)
                .with_context(|| format!("demo problem {}", s.problem_id))?;
            problems.insert(s.problem_id.clone(), problem);
        }
    }
    let sandbox = Sandbox::new(SandboxOptions::default())?;
    let plain = CompileCache::new(root.path().join("plain"), 64 << 30)?.without_pch();
    let fast = CompileCache::new(root.path().join("pch"), 64 << 30)?;
    let with_code: Vec<_> = submissions.iter().filter(|s| s.code.is_some()).collect();
    let candidates = with_code
        .iter()
        .filter(|s| {
            s.code.as_deref().is_some_and(|c| {
                crate::judge::pch::split(c, &[&format!("{}.h", s.problem_id)]).is_some()
            })
        })
        .count();
    outln!(
        "compile: {} demo submissions with code ({candidates} start with includes of bits/stdc++.h and the problem header), {rounds} rounds, distinct code each, plain and precompiled interleaved",
        with_code.len()
    );
    for round in 0..rounds {
        let (mut slow, mut quick) = (Tally::default(), Tally::default());
        let built_before = fast.pch_stats().headers_built;
        for s in &with_code {
            let problem = &problems[&s.problem_id];
            let code = format!(
                "{}\n// bench round {round}\n",
                s.code.as_deref().unwrap_or("")
            );
            let a = slow.add(|| {
                plain.submission(
                    &sandbox,
                    problem,
                    code.as_bytes(),
                    CompileProfile::Reference,
                    crate::judge::Language::Cpp,
                )
            })?;
            let b = quick.add(|| {
                fast.submission(
                    &sandbox,
                    problem,
                    code.as_bytes(),
                    CompileProfile::Reference,
                    crate::judge::Language::Cpp,
                )
            })?;
            let same = match (&a, &b) {
                (Compiled::Binary(x), Compiled::Binary(y)) => {
                    std::fs::read(x)? == std::fs::read(y)?
                }
                (x, y) => x == y,
            };
            anyhow::ensure!(same, "submission {}: the two compiles differ", s.id);
        }
        let (sw, sc) = slow.per_compile();
        let (qw, qc) = quick.per_compile();
        outln!(
            "  round {}: plain {sw:.0} ms wall ({sc:.0} ms CPU) per submission; precompiled {qw:.0} ms wall ({qc:.0} ms CPU){}; {:.2}× wall, {:.2}× CPU; binaries and errors identical",
            round + 1,
            match fast.pch_stats().headers_built - built_before {
                0 => String::new(),
                n => format!(", including building {n} headers"),
            },
            sw / qw.max(1e-9),
            sc / qc.max(1e-9),
        );
    }
    let stats = fast.pch_stats();
    outln!(
        "  precompiled headers: {} built, used by {} compiles, {} fell back to the plain compile; \
         {} compiles with nothing to precompile linked the cached grader objects",
        stats.headers_built,
        stats.used,
        stats.fallbacks,
        stats.objects_only
    );
    Ok(())
}
