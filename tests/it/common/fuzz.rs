//! A small mutation fuzzer on stable Rust, for every parser of untrusted input
//! (docs/threat-model.md#fuzzing). Each target starts from the seeds kept in `tests/fuzz/<target>/`
//! and runs a fixed number of inputs, each a seed mutated a few times (bytes flipped, inserted,
//! removed, repeated, or a token an attacker would try spliced in), from a fixed random seed, so
//! that a run is the same on every machine. A panic is a failure that prints the input (escaped)
//! and keeps it in the build folder; the target's own check (no file outside its folder, an error
//! that names what is at fault) runs on every input. `IOI_FUZZ_RUNS` sets the inputs per target
//! (the suite's default keeps all targets to a minute or two on two cores), `IOI_FUZZ_SEED` the
//! random seed.
//!
//! Not cargo-fuzz: it needs a nightly compiler, which the project's toolchain is not.

use std::path::{Path, PathBuf};

/// Inputs per target unless `IOI_FUZZ_RUNS` says otherwise.
pub const DEFAULT_RUNS: usize = 2000;

/// What an attacker puts in names, paths, numbers and JSON.
const TOKENS: &[&[u8]] = &[
    b"../",
    b"../../../../tmp/",
    b"/",
    b"/etc/passwd",
    b"\n",
    b"\r\n",
    b"\0",
    b"\"",
    b"\\",
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"null",
    b"true",
    b"-1",
    b"0",
    b"1e308",
    b"NaN",
    b"18446744073709551616",
    b"-9223372036854775809",
    b"0.000001",
    b"\xff\xfe",
    b"\xc3\x28",
    b"javascript:",
    b"%2e%2e%2f",
    b".",
    b"..",
    b" ",
    b"@",
    b"@subtask ",
    b"@testset ",
    b"@include ",
    b"manual ",
    b"\"name\"",
    b"\"path\"",
    b"\"content\"",
    b"\"graders/",
    b"\"files\"",
    b"\"language\"",
    b"\"version\"",
    b"\"encoding\": \"base64\"",
    b"'",
];

/// The seeds of a target: every file in `tests/fuzz/<target>/`, sorted by name.
pub fn seeds(target: &str) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz")
        .join(target);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("no seeds in {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    let seeds: Vec<Vec<u8>> = paths.iter().map(|p| std::fs::read(p).unwrap()).collect();
    assert!(!seeds.is_empty(), "no seeds in {}", dir.display());
    seeds
}

/// Runs `check` on every seed, then on mutated seeds, [`DEFAULT_RUNS`] inputs in all (or
/// `IOI_FUZZ_RUNS`); fails on the first panic, showing the input. Returns the inputs run.
pub fn run(target: &str, mut check: impl FnMut(&[u8])) -> usize {
    let seeds = seeds(target);
    let runs: usize = std::env::var("IOI_FUZZ_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_RUNS)
        .max(seeds.len());
    let seed: u64 = std::env::var("IOI_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_241_017);
    let mut rng = fastrand::Rng::with_seed(seed ^ hash(target));
    for i in 0..runs {
        let input = match seeds.get(i) {
            Some(seed) => seed.clone(),
            None => mutate(&mut rng, &seeds),
        };
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&input)));
        if outcome.is_err() {
            let kept = option_env!("CARGO_TARGET_TMPDIR")
                .map_or_else(std::env::temp_dir, PathBuf::from)
                .join(format!("fuzz-{target}-crash"));
            let _ = std::fs::write(&kept, &input);
            panic!(
                "fuzz target {target}: input {i} (kept in {}) failed: {:?}",
                kept.display(),
                String::from_utf8_lossy(&input)
            );
        }
    }
    eprintln!("fuzz target {target}: {runs} inputs, no failure (seed {seed})");
    runs
}

fn hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf29ce484222325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100000001b3)
    })
}

/// A seed changed one to eight times.
fn mutate(rng: &mut fastrand::Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut data = seeds[rng.usize(..seeds.len())].clone();
    for _ in 0..rng.usize(1..=8) {
        let at = rng.usize(..=data.len());
        match rng.u8(..7) {
            0 if !data.is_empty() => {
                let i = rng.usize(..data.len());
                data[i] ^= 1 << rng.u8(..8);
            }
            1 if !data.is_empty() => {
                let i = rng.usize(..data.len());
                data[i] = rng.u8(..);
            }
            2 => {
                let end = (at + rng.usize(..16)).min(data.len());
                data.drain(at..end);
            }
            3 if at < data.len() => {
                // A stretch repeated: long names, deep nesting.
                let end = (at + rng.usize(1..32)).min(data.len());
                let piece = data[at..end].to_vec();
                for _ in 0..rng.usize(1..64) {
                    data.splice(at..at, piece.iter().copied());
                }
            }
            4 => {
                // A stretch of another seed, for structure the grammar knows.
                let other = &seeds[rng.usize(..seeds.len())];
                let from = rng.usize(..=other.len());
                let end = (from + rng.usize(..64)).min(other.len());
                data.splice(at..at, other[from..end].iter().copied());
            }
            _ => {
                let token = TOKENS[rng.usize(..TOKENS.len())];
                data.splice(at..at, token.iter().copied());
            }
        }
    }
    data
}

/// Every file under `dir`, for checks that nothing was written outside a folder.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| !e.file_type().is_dir())
        .map(|e| e.path().to_path_buf())
        .collect();
    files.sort();
    files
}
