//! Tests of TPS packages, made as TPS makes them: `gen/data.py` run to print `gen/data` (when
//! the package keeps only the script), every generator compiled and run with its arguments
//! (`manual` tests copied), `gen/input.header` / `input.footer` added and line ends made Unix
//! (TPS runs `dos2unix`), every input checked by the validators of its subtasks (C++ ones),
//! then the model solution of `solutions.json` run on every input, with the task's grader (or
//! against its manager), to write the expected output.
//!
//! Everything runs in the sandbox, and the result is cached by content in the compile cache
//! folder (`tps-tests-<hash>/`): the hash covers `problem.json`, the text of `gen/data`, every
//! file of `gen/` and the compiled generators, validators, model solution and manager, so a
//! change to any of them makes new tests while an unchanged package is generated once.

use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

use anyhow::{bail, Context, Result};
use ioi_sandbox::{Bind, Limits, RunSpec, Stdio, Termination};
use rayon::prelude::*;

use super::compile::{Compiled, Executable};
use super::native::{self, PROGRAM};
use super::Judge;
use crate::problem::tps::{GenCommand, GenData, GenPlan, GenTest, TpsPackage};
use crate::problem::{GraderFile, Problem, TaskType, TestCase, TestSet};

/// Marks a finished entry (a folder without it is ignored and made again).
const COMPLETE: &str = "complete";

/// Loads a task folder, TPS or CMS, with its tests (a TPS task's are generated, or found in
/// the cache).
pub fn load_task_folder(judge: &Judge, dir: &Path) -> Result<(Problem, TestSet)> {
    if crate::problem::tps::is_tps(dir) {
        load(judge, dir)
    } else {
        crate::problem::cms::load_cms(dir)
    }
}

/// Loads a TPS task folder: the problem and its tests (generated, or found in the cache).
pub fn load(judge: &Judge, dir: &Path) -> Result<(Problem, TestSet)> {
    let package = TpsPackage::read(dir)?;
    let gen_data = match &package.gen_data {
        GenData::Text(text) => text.clone(),
        GenData::Script(script) => run_data_py(judge, dir, script)?,
    };
    let (problem, plan) = package.plan(&gen_data)?;
    let tests = generate(judge, &package, &problem, &plan, &gen_data)
        .with_context(|| format!("cannot make the tests of the TPS task {}", dir.display()))?;
    Ok((problem, tests))
}

/// Compiled programs that make the tests.
struct Tools {
    /// Generator name → binary.
    generators: Vec<(String, Executable)>,
    /// Validator source file name (`validator.cpp`) → binary.
    validators: Vec<(String, Executable)>,
    model: Executable,
    manager: Option<Executable>,
}

fn generate(
    judge: &Judge,
    package: &TpsPackage,
    problem: &Problem,
    plan: &GenPlan,
    gen_data: &str,
) -> Result<TestSet> {
    let tools = compile_tools(judge, package, problem, plan)?;
    let key = cache_key(package, plan, gen_data, &tools)?;
    let entry = judge.cache().dir().join(format!("tps-tests-{key}"));
    if !entry.join(COMPLETE).is_file() {
        let staging = tempfile::Builder::new()
            .prefix(".staging-tps-")
            .tempdir_in(judge.cache().dir())
            .with_context(|| format!("cannot write to {}", judge.cache().dir().display()))?;
        make_tests(judge, package, problem, plan, &tools, staging.path())?;
        fs::write(staging.path().join(COMPLETE), b"")?;
        // Another process may have made the same entry meanwhile: either copy is right.
        if fs::rename(staging.path(), &entry).is_err() && !entry.join(COMPLETE).is_file() {
            bail!("cannot store {}", entry.display());
        }
        let _ = staging.keep();
    }
    // The cache keeps recently used entries.
    let _ = fs::File::open(&entry).and_then(|f| f.set_modified(SystemTime::now()));
    let cases = plan
        .tests
        .iter()
        .map(|t| {
            (
                t.name.to_string(),
                TestCase {
                    name: t.name.to_string(),
                    input: entry.join(format!("{}.in", t.name)),
                    output: entry.join(format!("{}.out", t.name)),
                },
            )
        })
        .collect();
    Ok(TestSet {
        cases,
        _storage: None,
    })
}

fn compile_tools(
    judge: &Judge,
    package: &TpsPackage,
    problem: &Problem,
    plan: &GenPlan,
) -> Result<Tools> {
    let sandbox = judge.sandbox();
    let mut names: Vec<&str> = plan
        .tests
        .iter()
        .filter_map(|t| match &t.command {
            GenCommand::Generator { program, .. } => Some(program.as_str()),
            GenCommand::Manual(_) => None,
        })
        .collect();
    names.sort_unstable();
    names.dedup();
    let generators = compile_makers(
        judge,
        &package.gen_files,
        &package.dir.join("gen"),
        "generator",
        names
            .into_iter()
            .map(|name| (name.to_string(), format!("{name}.cpp"))),
    )?;
    let validators = compile_makers(
        judge,
        &package.validator_files,
        &package.dir.join("validator"),
        "validator",
        validator_sources(package)
            .into_iter()
            .map(|source| (source.clone(), source)),
    )?;
    let model_path = package.solution_path(&package.model_solution);
    let code = crate::problem::package::read(&package.dir, &model_path)
        .with_context(|| format!("cannot read the model solution {}", model_path.display()))?;
    // The expected outputs come from the model solution built as submissions are.
    let model = match judge.cache().submission(
        sandbox,
        problem,
        &code,
        judge.compile_profile(),
        super::Language::of_path(&model_path),
    )? {
        Compiled::Binary(path) => path,
        Compiled::Error(error) => bail!("{}: the model solution {error}", model_path.display()),
    };
    let manager = match (&problem.task, problem.manager()) {
        (TaskType::Communication(_), Some(source)) => {
            match judge.cache().tool(sandbox, problem, source)? {
                Compiled::Binary(path) => Some(path),
                Compiled::Error(error) => bail!(
                    "{}: the manager {error}",
                    package.dir.join("grader/manager.cpp").display()
                ),
            }
        }
        _ => None,
    };
    Ok(Tools {
        generators,
        validators,
        model,
        manager,
    })
}

/// The content hash naming the cache entry.
fn cache_key(
    package: &TpsPackage,
    plan: &GenPlan,
    gen_data: &str,
    tools: &Tools,
) -> Result<String> {
    let mut h = blake3::Hasher::new();
    let mut part = |bytes: &[u8]| {
        h.update(&(bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    part(b"ioi-run tps tests v1");
    part(&package.problem_json);
    part(gen_data.as_bytes());
    for f in &package.gen_files {
        part(f.path.as_bytes());
        part(&f.content);
    }
    for test in &plan.tests {
        part(test.name.as_bytes());
        if let GenCommand::Manual(file) = &test.command {
            let path = package.dir.join("gen/manual").join(file);
            part(&crate::problem::package::read(&package.dir, &path)?);
        }
    }
    for (name, path) in tools.generators.iter().chain(&tools.validators) {
        part(name.as_bytes());
        part(&fs::read(path)?);
    }
    part(&fs::read(&tools.model)?);
    if let Some(manager) = &tools.manager {
        part(&fs::read(manager)?);
    }
    Ok(h.finalize().to_hex()[..32].to_string())
}

/// Limits of generators, `data.py` and the model solution while making tests: generous (TPS
/// sets none), since nothing is being judged, but a runaway program is still stopped.
fn maker_limits(memory: u64) -> Limits {
    Limits {
        cpu_time: Some(Duration::from_secs(300)),
        wall_time: Some(Duration::from_secs(900)),
        memory: Some(memory),
        processes: Some(64),
        output_size: Some(4 << 30),
        open_files: Some(64),
        stack: None,
    }
}

/// Scratch space of a generator's box.
const MAKER_BOX_BYTES: u64 = 256 << 20;

fn make_tests(
    judge: &Judge,
    package: &TpsPackage,
    problem: &Problem,
    plan: &GenPlan,
    tools: &Tools,
    out: &Path,
) -> Result<()> {
    let header = gen_file(package, "input.header");
    let footer = gen_file(package, "input.footer");
    plan.tests.par_iter().try_for_each(|test| {
        make_input(judge, package, tools, test, out, header, footer)
            .with_context(|| gen_data_line(package, test))
    })?;
    plan.tests.par_iter().try_for_each(|test| {
        validate(judge, package, plan, tools, test, out)
            .with_context(|| gen_data_line(package, test))
    })?;
    plan.tests.par_iter().try_for_each(|test| {
        make_output(judge, problem, tools, test, out).with_context(|| {
            format!(
                "test {}: the model solution {} failed",
                test.name, package.model_solution
            )
        })
    })
}

/// Where a test comes from, for errors: its name and its line of `gen/data`.
fn gen_data_line(package: &TpsPackage, test: &GenTest) -> String {
    format!(
        "test {} ({}: line {})",
        test.name,
        package.dir.join("gen/data").display(),
        test.line
    )
}

fn gen_file<'a>(package: &'a TpsPackage, name: &str) -> Option<&'a GraderFile> {
    package.gen_files.iter().find(|f| f.path == name)
}

fn make_input(
    judge: &Judge,
    package: &TpsPackage,
    tools: &Tools,
    test: &GenTest,
    out: &Path,
    header: Option<&GraderFile>,
    footer: Option<&GraderFile>,
) -> Result<()> {
    let raw = out.join(format!("{}.raw", test.name));
    match &test.command {
        GenCommand::Manual(file) => {
            let from = package.dir.join("gen/manual").join(file);
            let content = crate::problem::package::read(&package.dir, &from)?;
            fs::write(&raw, content).with_context(|| format!("cannot write {}", raw.display()))?;
        }
        GenCommand::Generator { program, args } => {
            let (_, binary) = tools
                .generators
                .iter()
                .find(|(name, _)| name == program)
                .context("generator not compiled")?;
            let stderr = out.join(format!("{}.gen-err", test.name));
            let stdout = Stdio::Path(raw.clone());
            if let Err(why) = run_maker(
                judge,
                (binary, "/gen/program"),
                args,
                Stdio::Null,
                stdout,
                &stderr,
            )? {
                bail!("generator {program} {}: {why}", args.join(" "));
            }
        }
    }
    // Streamed: a generator may print gigabytes, which are never held in memory.
    use std::io::Read;
    let empty: &[u8] = &[];
    let parts = header
        .map_or(empty, |h| &h.content[..])
        .chain(fs::File::open(&raw).with_context(|| format!("cannot read {}", raw.display()))?)
        .chain(footer.map_or(empty, |f| &f.content[..]));
    let path = out.join(format!("{}.in", test.name));
    let file =
        fs::File::create(&path).with_context(|| format!("cannot write {}", path.display()))?;
    dos2unix(parts, file).with_context(|| format!("cannot write {}", path.display()))?;
    fs::remove_file(&raw)?;
    Ok(())
}

/// Compiles the test makers (generators or validators) of `folder`, given as (name, source):
/// each one's name and program. A maker that does not compile is an error naming its file.
fn compile_makers(
    judge: &Judge,
    files: &[GraderFile],
    folder: &Path,
    what: &str,
    makers: impl IntoIterator<Item = (String, String)>,
) -> Result<Vec<(String, Executable)>> {
    let files: Vec<(&str, &[u8])> = files
        .iter()
        .map(|f| (f.path.as_str(), f.content.as_slice()))
        .collect();
    let mut programs = Vec::new();
    for (name, source) in makers {
        let language = super::Language::Cpp;
        match judge
            .cache()
            .program(judge.sandbox(), &files, &source, language)?
        {
            Compiled::Binary(path) => programs.push((name, path)),
            Compiled::Error(error) => {
                bail!("{}: the {what} {error}", folder.join(&source).display())
            }
        }
    }
    Ok(programs)
}

/// Runs a test maker (`binary`, seen in the box as `mount`, which is its `argv[0]`) with
/// `args`, the given stdin and stdout, in a box of its own; `Err` with its stderr when it does
/// not end well.
fn run_maker(
    judge: &Judge,
    (binary, mount): (&Path, &str),
    args: &[String],
    stdin: Stdio,
    stdout: Stdio,
    stderr: &Path,
) -> Result<std::result::Result<(), String>> {
    let mut argv = vec![mount.to_string()];
    argv.extend(args.iter().cloned());
    let mut spec = RunSpec::in_tmpfs(MAKER_BOX_BYTES, argv);
    spec.binds.push(Bind::read_only(binary, mount));
    spec.stdin = stdin;
    spec.stdout = stdout;
    spec.stderr = Stdio::Path(stderr.to_path_buf());
    spec.limits = maker_limits(4 << 30);
    let run = judge.sandbox().run(&spec);
    let message = super::workdir::read_capped(stderr)?;
    let _ = fs::remove_file(stderr);
    Ok(match run.status {
        Termination::Ok => Ok(()),
        _ => Err(format!("{} (stderr: {})", run.message, message.trim())),
    })
}

/// The C++ validators named by `subtasks.json` (file names in `validator/`). Validators in
/// other languages are left out, with a warning.
fn validator_sources(package: &TpsPackage) -> Vec<String> {
    let names: Vec<&str> = package.subtasks.iter().map(|s| s.name.as_str()).collect();
    let mut sources = Vec::new();
    for command in package.validator_commands(&names) {
        let Some(file) = shlex::split(&command).and_then(|w| w.into_iter().next()) else {
            continue;
        };
        if file.ends_with(".cpp") {
            if !sources.contains(&file) {
                sources.push(file);
            }
        } else {
            tracing::warn!(
                "{}: validator {command:?} is not run (only C++ validators are)",
                package.dir.display()
            );
        }
    }
    sources
}

/// Runs the validators of every subtask the test belongs to, as TPS's `gen` does: each must
/// accept the input (exit 0).
fn validate(
    judge: &Judge,
    package: &TpsPackage,
    plan: &GenPlan,
    tools: &Tools,
    test: &GenTest,
    out: &Path,
) -> Result<()> {
    let subtasks: Vec<&str> = plan
        .subtask_tests
        .iter()
        .filter(|(_, tests)| tests.iter().any(|t| test.name == *t))
        .map(|(name, _)| name.as_str())
        .collect();
    let input = out.join(format!("{}.in", test.name));
    for command in package.validator_commands(&subtasks) {
        let words = shlex::split(&command).unwrap_or_default();
        let Some((file, args)) = words.split_first() else {
            continue;
        };
        let Some((_, binary)) = tools.validators.iter().find(|(name, _)| name == file) else {
            continue;
        };
        let stderr = out.join(format!("{}.val-err", test.name));
        let stdin = Stdio::Path(input.clone());
        if let Err(why) = run_maker(
            judge,
            (binary, "/validator/program"),
            args,
            stdin,
            Stdio::Null,
            &stderr,
        )? {
            bail!(
                "the input is refused by the validator `{command}` (subtasks {}): {why}",
                subtasks.join(", ")
            );
        }
    }
    Ok(())
}

/// What `dos2unix` does to a file by default: CRLF becomes LF and a UTF-8 byte order mark
/// goes.
/// Streamed from `input` to `output`, in blocks.
fn dos2unix(mut input: impl std::io::Read, output: impl std::io::Write) -> std::io::Result<()> {
    use std::io::Write;
    let mut output = std::io::BufWriter::with_capacity(1 << 16, output);
    let mut block = vec![0u8; 1 << 16];
    // The first three bytes, however the reads split them, to drop a byte order mark.
    let mut start = 0;
    while start < 3 {
        match input.read(&mut block[start..])? {
            0 => break,
            n => start += n,
        }
    }
    let mut filled = start;
    let mut from = match block[..filled].starts_with(&[0xEF, 0xBB, 0xBF]) {
        true => 3,
        false => 0,
    };
    // A CR at the end of a block, waiting to see whether an LF follows.
    let mut held_cr = false;
    loop {
        let bytes = &block[from..filled];
        let mut rest = bytes;
        if held_cr && !rest.is_empty() {
            held_cr = false;
            if rest[0] != b'\n' {
                output.write_all(b"\r")?;
            }
        }
        while let Some(at) = rest.iter().position(|&b| b == b'\r') {
            output.write_all(&rest[..at])?;
            match rest.get(at + 1) {
                Some(b'\n') => {}
                Some(_) => output.write_all(b"\r")?,
                None => held_cr = true,
            }
            rest = &rest[at + 1..];
        }
        output.write_all(rest)?;
        from = 0;
        filled = input.read(&mut block)?;
        if filled == 0 {
            break;
        }
    }
    if held_cr {
        output.write_all(b"\r")?;
    }
    output.flush()
}

/// Runs the model solution on a test (with the grader, or against the manager) and keeps what
/// it printed (the manager's output for Communication) as the expected output.
fn make_output(
    judge: &Judge,
    problem: &Problem,
    tools: &Tools,
    test: &GenTest,
    out: &Path,
) -> Result<()> {
    let input = out.join(format!("{}.in", test.name));
    let output = out.join(format!("{}.out", test.name));
    let limits = maker_limits(problem.memory_limit);
    match &problem.task {
        TaskType::Batch => {
            let mut spec = RunSpec::in_tmpfs(problem.memory_limit, [PROGRAM]);
            spec.binds.push(Bind::read_only(&tools.model, PROGRAM));
            spec.stdin = Stdio::Path(input);
            spec.stdout = Stdio::Path(output);
            spec.limits = limits;
            let run = judge.sandbox().run(&spec);
            if run.status != Termination::Ok {
                bail!("{}", run.message);
            }
        }
        TaskType::Communication(params) => {
            let manager = tools.manager.as_ref().context("no manager")?;
            native::manager_output(
                judge.sandbox(),
                params,
                manager,
                &tools.model,
                &input,
                &output,
                &limits,
            )?;
        }
    }
    Ok(())
}

/// Runs `gen/data.py` with the host's `python3` in the sandbox; its output is `gen/data`.
fn run_data_py(judge: &Judge, dir: &Path, script: &[u8]) -> Result<String> {
    let scratch = crate::scratch::tempdir("out")?;
    let script_path = scratch.path().join("data.py");
    fs::write(&script_path, script)?;
    let mut spec = RunSpec::in_tmpfs(MAKER_BOX_BYTES, ["python3", "/gen/data.py"]);
    spec.binds
        .push(Bind::read_only(&script_path, "/gen/data.py"));
    let stdout = scratch.path().join("data");
    let stderr = scratch.path().join("data.err");
    spec.stdout = Stdio::Path(stdout.clone());
    spec.stderr = Stdio::Path(stderr.clone());
    spec.limits = maker_limits(1 << 30);
    // Its output, `gen/data`, is read whole: a few kilobytes in any package.
    spec.limits.output_size = Some(64 << 20);
    spec.limits.cpu_time = Some(Duration::from_secs(60));
    spec.limits.wall_time = Some(Duration::from_secs(300));
    let run = judge.sandbox().run(&spec);
    let origin = dir.join("gen/data.py");
    if run.status != Termination::Ok {
        bail!(
            "{}: python3 failed (it must be installed in the host's /usr): {} (stderr: {})",
            origin.display(),
            run.message,
            super::workdir::read_capped(&stderr)?.trim()
        );
    }
    String::from_utf8(fs::read(&stdout)?)
        .with_context(|| format!("{}: printed text that is not UTF-8", origin.display()))
}

#[cfg(test)]
mod tests {
    use super::dos2unix;

    #[test]
    fn dos2unix_like_the_tool() {
        let converted = |input: &[u8]| {
            let mut out = Vec::new();
            dos2unix(input, &mut out).unwrap();
            out
        };
        assert_eq!(converted(b"\xEF\xBB\xBF1 2\r\n3\r\n"), b"1 2\n3\n");
        assert_eq!(converted(b"a\rb\n"), b"a\rb\n");
        assert_eq!(converted(b"a\r"), b"a\r");
        assert_eq!(converted(b"\xEF\xBB"), b"\xEF\xBB");
        // A CR and its LF split between two reads, and a byte order mark split too.
        struct Trickle<'a>(&'a [u8]);
        impl std::io::Read for Trickle<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let n = self.0.len().min(buf.len()).min(2);
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let mut out = Vec::new();
        dos2unix(Trickle(b"\xEF\xBB\xBFa\r\nbc\r\r\nd\r"), &mut out).unwrap();
        assert_eq!(out, b"a\nbc\r\nd\r");
    }
}
