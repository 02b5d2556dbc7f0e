//! Precompiled headers (src/judge/pch.rs) give the same executables and the same compilation
//! errors as plain compiles, are really used, and are bypassed when they cannot be trusted.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ioi_run::judge::compile::{CompileCache, CompileProfile, Compiled, HeaderBuilder};
use ioi_run::judge::{Build, Judge, JudgeOptions, Program};
use ioi_run::problem::Problem;
use ioi_sandbox::{Sandbox, SandboxOptions};

use crate::common;
use common::skip;

/// The sandbox, or `None` (test skipped) when this machine cannot make one; under CI it must.
fn sandbox() -> Option<Sandbox> {
    match Sandbox::new(SandboxOptions::default()) {
        Ok(sandbox) => Some(sandbox),
        Err(e) => {
            skip(&format!("no sandbox on this machine: {e:#}"));
            None
        }
    }
}

fn orchard() -> Problem {
    let dir = common::project().join("demo/problems/orchard");
    ioi_run::problem::cms::load_cms(&dir).unwrap().0
}

const SOLUTION: &str = r#"#include "orchard.h"
#include <bits/stdc++.h>
using namespace std;

vector<long long> split_orchard(vector<int> A) {
    long long total = accumulate(A.begin(), A.end(), 0LL), left = 0, best = LLONG_MAX, at = 1;
    for (size_t k = 1; k < A.size(); k++) {
        left += A[k - 1];
        long long d = llabs(2 * left - total);
        if (d < best) best = d, at = k;
    }
    return {best, at};
}
"#;

/// `code` compiled by `cache` with the reference profile.
fn compile(cache: &CompileCache, sandbox: &Sandbox, problem: &Problem, code: &str) -> Compiled {
    cache
        .submission(
            sandbox,
            problem,
            code.as_bytes(),
            CompileProfile::Reference,
            ioi_run::judge::Language::Cpp,
        )
        .unwrap()
}

fn binary(compiled: Compiled) -> Vec<u8> {
    match compiled {
        Compiled::Binary(path) => std::fs::read(path).unwrap(),
        Compiled::Error(error) => panic!("{error}"),
    }
}

fn caches() -> (tempfile::TempDir, CompileCache, CompileCache) {
    let dir = tempfile::tempdir().unwrap();
    let plain = CompileCache::new(dir.path().join("plain"), 8 << 30)
        .unwrap()
        .without_pch();
    let fast = CompileCache::new(dir.path().join("fast"), 8 << 30).unwrap();
    (dir, plain, fast)
}

fn entries(cache: &CompileCache, prefix: &str) -> Vec<PathBuf> {
    std::fs::read_dir(cache.dir())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .collect()
}

#[test]
fn precompiled_headers_give_identical_binaries_and_errors() {
    let Some(sandbox) = sandbox() else { return };
    let problem = orchard();
    let (_dir, plain, fast) = caches();

    // Two distinct submissions with the same prefix: one header built, used twice, and the
    // executables are byte for byte those of the plain compile.
    let second = format!("{SOLUTION}// another submission\n");
    for code in [SOLUTION, second.as_str()] {
        let expected = binary(compile(&plain, &sandbox, &problem, code));
        let got = binary(compile(&fast, &sandbox, &problem, code));
        assert!(
            expected == got,
            "the precompiled header changed the executable"
        );
    }
    let stats = fast.pch_stats();
    assert_eq!(
        (stats.headers_built, stats.used, stats.fallbacks),
        (1, 2, 0)
    );
    // Used for real: the entry holds only the .gch, without its header, so a compile that
    // succeeded (with -Werror=invalid-pch) can only have read the precompiled one.
    let pch = entries(&fast, "pch-");
    assert_eq!(pch.len(), 1);
    assert!(pch[0].join("prefix.h.gch").is_file() && !pch[0].join("prefix.h").exists());
    assert_eq!(plain.pch_stats().used, 0);

    // A compilation error: the same exit code and message as the plain compile, from one run
    // of the compiler.
    let broken = SOLUTION.replace("return {best, at};", "return {best, at}");
    let expected = compile(&plain, &sandbox, &problem, &broken);
    let runs = fast.compiler_runs();
    let got = compile(&fast, &sandbox, &problem, &broken);
    assert!(matches!(expected, Compiled::Error { .. }));
    assert_eq!(expected, got);
    assert_eq!(
        fast.compiler_runs() - runs,
        1,
        "a compilation error compiled once"
    );
    assert_eq!(fast.pch_stats().fallbacks, 0);
    // An error inside a standard header names the includes that led there, which differ
    // through the precompiled header: the plain compile gives the message.
    let deep = SOLUTION.replace(
        "return {best, at};",
        "std::vector<std::mutex> m(2); auto n = m; return {best, at};",
    );
    let expected = compile(&plain, &sandbox, &problem, &deep);
    assert!(matches!(expected, Compiled::Error { .. }));
    assert_eq!(expected, compile(&fast, &sandbox, &problem, &deep));
    assert_eq!(fast.pch_stats().fallbacks, 1);

    // A definition before any standard include: nothing to precompile, but linked with the
    // grader objects built for the submissions above, and still the plain compile's executable.
    let vector_only = SOLUTION.replace(
        "#include <bits/stdc++.h>",
        "#define ORCHARD 1\n#include <vector>\n#include <numeric>\n#include <climits>\n#include <cstdlib>",
    );
    let expected = binary(compile(&plain, &sandbox, &problem, &vector_only));
    let got = binary(compile(&fast, &sandbox, &problem, &vector_only));
    assert!(expected == got, "the grader objects changed the executable");
    let stats = fast.pch_stats();
    assert_eq!((stats.used, stats.objects_only), (3, 1));
    assert_eq!(entries(&fast, "obj-").len(), 1, "one set of grader objects");
    assert_eq!(plain.pch_stats().objects_only, 0);
    // Its compilation error is the plain compile's, from one run of the compiler.
    let broken = vector_only.replace("return {best, at};", "return {best, at}");
    let expected = compile(&plain, &sandbox, &problem, &broken);
    assert!(matches!(expected, Compiled::Error { .. }));
    let runs = fast.compiler_runs();
    assert_eq!(expected, compile(&fast, &sandbox, &problem, &broken));
    assert_eq!(
        fast.compiler_runs() - runs,
        1,
        "a compilation error compiled once"
    );
    assert_eq!(fast.pch_stats().objects_only, 2);
}

#[test]
fn a_damaged_precompiled_header_is_never_trusted() {
    let Some(sandbox) = sandbox() else { return };
    let problem = orchard();
    let (_dir, plain, fast) = caches();
    binary(compile(&fast, &sandbox, &problem, SOLUTION));
    assert_eq!(fast.pch_stats().used, 1);

    // Replace the .gch with something g++ rejects: the next submission must still get the
    // plain compile's executable.
    let gch = entries(&fast, "pch-")[0].join("prefix.h.gch");
    std::fs::remove_file(&gch).unwrap();
    std::fs::write(&gch, b"gpch.013 not a real precompiled header").unwrap();
    let code = format!("{SOLUTION}// variant after damage\n");
    let expected = binary(compile(&plain, &sandbox, &problem, &code));
    let got = binary(compile(&fast, &sandbox, &problem, &code));
    assert!(expected == got);
    let stats = fast.pch_stats();
    assert_eq!((stats.used, stats.fallbacks), (1, 1));
}

#[test]
fn standard_includes_are_precompiled_too() {
    let Some(sandbox) = sandbox() else { return };
    let problem = orchard();
    let (_dir, plain, fast) = caches();
    let code = SOLUTION.replace(
        "#include <bits/stdc++.h>",
        "#include <vector>\n#include <numeric>\n#include <climits>\n#include <cstdlib>",
    );
    let expected = binary(compile(&plain, &sandbox, &problem, &code));
    assert!(expected == binary(compile(&fast, &sandbox, &problem, &code)));
    let stats = fast.pch_stats();
    assert_eq!((stats.headers_built, stats.used), (1, 1));
}

/// [`SOLUTION`] including `<bits/stdc++.h>` alone, without the problem's header.
fn stdcxx_only() -> &'static str {
    SOLUTION
        .strip_prefix("#include \"orchard.h\"\n")
        .expect("SOLUTION starts with the problem's header")
}

/// Whether every precompiled header of `cache` is complete, and how many there are.
fn headers_complete(cache: &CompileCache) -> Option<usize> {
    let pch = entries(cache, "pch-");
    pch.iter()
        .all(|p| p.join("complete").is_file())
        .then_some(pch.len())
}

#[test]
fn no_compile_waits_for_a_header_and_headers_of_standard_includes_serve_every_problem() {
    let Some(sandbox) = sandbox() else { return };
    let sandbox = Arc::new(sandbox);
    let problem = orchard();
    let (_dir, plain, fast) = caches();
    let fast = Arc::new(fast);
    let builder = HeaderBuilder::start(Arc::clone(&fast), Arc::clone(&sandbox)).unwrap();

    // The header is not ready: the compile goes on without it (the plain executable) and
    // hands it to the builder.
    let expected = binary(compile(&plain, &sandbox, &problem, stdcxx_only()));
    assert!(expected == binary(compile(&fast, &sandbox, &problem, stdcxx_only())));
    let stats = fast.pch_stats();
    assert_eq!((stats.used, stats.fallbacks), (0, 1));
    common::wait_until("the header built", Duration::from_secs(300), || {
        headers_complete(&fast) == Some(1)
    });

    // Ready: used, by this problem and by another one with other grader files.
    let code = format!("{}// another submission\n", stdcxx_only());
    let expected = binary(compile(&plain, &sandbox, &problem, &code));
    assert!(expected == binary(compile(&fast, &sandbox, &problem, &code)));
    let mut other = orchard();
    other.grader_files.push(ioi_run::problem::GraderFile {
        path: ioi_run::name::RelativePath::parse("graders/notes.txt").unwrap(),
        content: b"another problem".to_vec(),
    });
    let expected = binary(compile(&plain, &sandbox, &other, &code));
    assert!(expected == binary(compile(&fast, &sandbox, &other, &code)));
    let stats = fast.pch_stats();
    assert_eq!(
        (stats.headers_built, stats.used, stats.fallbacks),
        (1, 2, 1)
    );
    assert_eq!(
        entries(&fast, "pch-").len(),
        1,
        "one header for both problems"
    );
    drop(builder);
}

#[test]
fn headers_are_built_ahead_of_the_first_submission() {
    if sandbox().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let judge = Judge::new(JudgeOptions {
        cache_dir: dir.path().join("compile"),
        headers_ahead: true,
        ..JudgeOptions::default()
    })
    .unwrap();
    let (problem, tests) =
        ioi_run::problem::cms::load_cms(&common::project().join("demo/problems/orchard")).unwrap();
    let loaded = judge.prepare(problem, tests).unwrap();
    // `<bits/stdc++.h>` alone, and followed by the problem's header.
    common::wait_until("the headers built ahead", Duration::from_secs(600), || {
        headers_complete(judge.cache()) == Some(2)
    });
    let stdcxx_first = SOLUTION.replace(
        "#include \"orchard.h\"\n#include <bits/stdc++.h>",
        "#include <bits/stdc++.h>\n#include \"orchard.h\"",
    );
    for code in [stdcxx_first.as_str(), stdcxx_only()] {
        let build = judge
            .compile(&loaded, code.as_bytes(), ioi_run::judge::Language::Cpp)
            .unwrap();
        assert!(matches!(build, Build::Program(Program::Binary(_))));
    }
    let stats = judge.cache().pch_stats();
    assert_eq!(
        (stats.headers_built, stats.used, stats.fallbacks),
        (2, 2, 0)
    );
}
