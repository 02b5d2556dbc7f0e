//! Command-line interface: parsing (clap derive) and dispatch to one module per subcommand.

mod bench;
mod convert;
mod doctor;
mod evaluate;
mod fidelity;
mod judge;
mod keeper;
mod merge;
mod report;
mod sandbox;
mod serve;
mod slurm;

use clap::{Parser, Subcommand};

use crate::judge::compile::CompileProfile;
use crate::output::{self, ColorChoice};

/// Judge C++ solutions to IOI problems natively, in a real sandbox, on every core.
#[derive(Debug, Parser)]
#[command(name = "ioi-run", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
    #[command(flatten)]
    globals: Globals,
}

/// The options every command takes.
#[derive(Debug, clap::Args)]
struct Globals {
    /// Colours in tables and logs: `auto` (only at a terminal, and never with `NO_COLOR` set),
    /// `always` or `never`.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    color: ColorChoice,
    /// Log lines on stderr as `text` or `json` (one object a line, for log collectors); `serve`
    /// writes one per request.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
}

// `ioi-run sandbox ...` parsed without the other commands' parsers. A script that hands runs to
// a keeper starts this command once per run, and building every command's arguments costs it
// more than handing the run over does (each page the parsers touch is a page fault).
#[derive(Debug, Parser)]
#[command(
    name = "ioi-run sandbox",
    bin_name = "ioi-run sandbox",
    about = "Run one command in the sandbox and print what happened"
)]
struct SandboxCli {
    #[command(flatten)]
    args: sandbox::Args,
    #[command(flatten)]
    globals: Globals,
}

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run one command in the sandbox and print what happened.
    Sandbox(sandbox::Args),
    /// Stay resident and run the `sandbox` commands of your uid handed to it on a unix socket,
    /// with boxes built ahead: a command then starts no sandbox of its own.
    Keeper(keeper::Args),
    /// Check that this host can run the sandbox, and run a few sandboxed self-tests.
    Doctor(doctor::Args),
    /// Judge one solution on one problem and show every test.
    Judge(judge::Args),
    /// Evaluate whole datasets of submissions (resumable), writing results and reports.
    Evaluate(evaluate::Args),
    /// Merge the shards of `evaluate --shard K/N` into one evaluation's results and reports.
    Merge(merge::Args),
    /// Write the markdown reports and the HTML report with plots from results JSONL files or
    /// results folders.
    Report(report::Args),
    /// Judge every official solution of official packages (TPS, CMS exports) and report how
    /// each subtask's verdict compares with the package's expected verdict.
    Fidelity(fidelity::Args),
    /// Convert CMS and TPS task folders to the open-r1/ioi parquet layout.
    Convert(convert::Args),
    /// Benchmarks that print figures.
    Bench(bench::Args),
    /// Run on a Slurm cluster: evaluate as a job array of shards, or serve a fleet of workers.
    Slurm(slurm::Args),
    /// Serve the Piston HTTP API (drop-in for Piston workers running the IOI or Codeforces
    /// package) and SandboxFusion's /run_code (verl's code rewards).
    Serve(serve::Args),
}

/// Parses the arguments, runs the subcommand and returns the exit code.
pub fn main() -> i32 {
    let (command, globals) = match std::env::args_os().nth(1) {
        Some(first) if first == "sandbox" => {
            let cli = SandboxCli::parse_from(std::env::args_os().skip(1));
            (Command::Sandbox(cli.args), cli.globals)
        }
        _ => {
            let cli = Cli::parse();
            (cli.command, cli.globals)
        }
    };
    // A sandbox command handed to a keeper only sends its run and prints the outcome: it sets
    // the process up (colours, logs, the interrupt handler) only when it runs the box itself
    // (handed over, an interrupt ends the command and the keeper kills the box on the hang-up).
    // The server shuts down gracefully on the interrupting signals itself (finishing in-flight
    // requests).
    if !matches!(command, Command::Sandbox(_)) {
        settle(&globals, matches!(command, Command::Serve(_)));
    }
    let _ = INTERRUPTED_NOTE.set(match command {
        Command::Evaluate(_) | Command::Slurm(_) => {
            " Results already written are kept; `evaluate` resumes where it stopped when run again."
        }
        Command::Fidelity(_) => " Solutions already judged are kept; run it again to go on.",
        _ => "",
    });
    let result = match command {
        Command::Sandbox(args) => sandbox::run(args, || settle(&globals, false)),
        Command::Keeper(args) => keeper::run(args),
        Command::Doctor(args) => doctor::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Judge(args) => judge::run(args),
        Command::Convert(args) => convert::run(args),
        Command::Fidelity(args) => fidelity::run(args),
        Command::Evaluate(args) => evaluate::run(args),
        Command::Report(args) => report::run(args),
        Command::Merge(args) => merge::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Slurm(args) => slurm::run(args),
    };
    // A judge still held (shared with a thread) leaves its tests' folders to the removals.
    crate::scratch::wait_for_removals();
    wait_if_interrupted();
    match result {
        Ok(code) => code,
        // The reader of our output went away (`| head`): it has what it wanted.
        Err(e) if output::is_broken_pipe(&e) => 0,
        Err(e) => {
            // Errors quote files, rows and packages: their text is shown, never obeyed.
            eprintln!("error: {}", output::printable(&format!("{e:#}"), true));
            crate::error::exit_code(&e)
        }
    }
}

/// Colours, logs and, except for a server, the interrupt handler.
fn settle(globals: &Globals, server: bool) {
    output::set_color(globals.color);
    init_logging(globals.log_format, globals.color, server);
    if !server {
        install_interrupt_handler();
    }
}

/// Warnings and errors on stderr (`IOI_RUN_LOG` picks others); a server also logs each request.
fn init_logging(format: LogFormat, color: ColorChoice, server: bool) {
    let default = if server {
        "warn,ioi_run::request=info"
    } else {
        "warn"
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("IOI_RUN_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    use std::io::IsTerminal;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let ansi = color.enabled(std::io::stderr().is_terminal());
    let _ = match format {
        // A server's log lines carry their time; a command's warnings read as its other
        // messages do (`warning: ...`).
        LogFormat::Text if server => builder.with_ansi(ansi).try_init(),
        LogFormat::Text => builder.with_ansi(ansi).event_format(PlainLine).try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .try_init(),
    };
}

/// A log line as a command's own messages look: `warning: ...`, `error: ...` (the target
/// too at the debug and trace levels, where it tells which room speaks).
struct PlainLine;

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for PlainLine
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        use tracing::Level;
        let level = *event.metadata().level();
        let (word, colour) = match level {
            Level::ERROR => ("error", "31"),
            Level::WARN => ("warning", "33"),
            Level::INFO => ("info", "32"),
            Level::DEBUG => ("debug", "34"),
            Level::TRACE => ("trace", "35"),
        };
        match writer.has_ansi_escapes() {
            true => write!(writer, "\x1b[{colour}m{word}\x1b[0m: ")?,
            false => write!(writer, "{word}: ")?,
        }
        if level >= Level::DEBUG {
            write!(writer, "{}: ", event.metadata().target())?;
        }
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}

/// What the interrupted command keeps, said after the interrupt (`evaluate` resumes; `judge`
/// has nothing to keep).
static INTERRUPTED_NOTE: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();

/// On SIGINT/SIGTERM/SIGHUP: kill every sandboxed run and remove its cgroup, then exit. The
/// sandbox's init processes also die with this process (parent-death signal), so even a
/// SIGKILL of ioi-run leaves no process behind. The judge's stop flag goes up first, in the
/// signal handler itself, so that no run killed on the way out becomes a verdict, a saved
/// result or a cached compile (`judge::stop`).
fn install_interrupt_handler() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    crate::judge::stop::register_signals(&[SIGINT, SIGTERM, SIGHUP]);
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        return;
    };
    std::thread::spawn(move || {
        if let Some(sig) = signals.forever().next() {
            crate::judge::stop::interrupted_by(sig);
            output::clear_progress();
            // Never `eprintln!` here: with stderr a closed pipe it panics, and the handler
            // would never reach the exit below.
            let _ = std::io::Write::write_fmt(
                &mut std::io::stderr(),
                format_args!(
                    "ioi-run: interrupted: stopping the sandboxed runs.{}\n",
                    INTERRUPTED_NOTE.get().copied().unwrap_or_default()
                ),
            );
            ioi_sandbox::abort_all();
            crate::scratch::remove_own();
            std::process::exit(128 + sig);
        }
    });
}

/// Once interrupted, the interrupt handler owns the exit: the main thread, whose runs were just
/// killed, must not exit first with their failure.
fn wait_if_interrupted() {
    if crate::judge::stop::interrupting_signal().is_some() {
        loop {
            std::thread::park();
        }
    }
}

/// Options shared by the commands that judge: parallelism, early stop, runner, cache.
#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// Parallel workers (default: the number of cores).
    #[arg(
        long,
        short = 'j',
        visible_alias = "max-concurrent-requests",
        alias = "max_concurrent_requests",
        value_parser = job_count
    )]
    pub jobs: Option<usize>,
    /// Tests of a subtask run in batches of this size; after a batch with a 0 the rest of the
    /// subtask is skipped (as in the reference pipeline).
    #[arg(long, default_value_t = 1, alias = "test_batch_size", value_parser = at_least_one)]
    pub test_batch_size: usize,
    /// How tests run: `native` (per-process CPU time and memory) or `scripts` (the Piston
    /// compile/run contract). In script mode `correct_output.txt` sits in the box next to the
    /// solution, as in the reference scripts: a solution can read the expected output. Use it
    /// to reproduce the reference pipeline, never to judge solutions that may cheat.
    #[arg(long, value_enum, default_value_t = RunnerKind::Native)]
    pub runner: RunnerKind,
    /// How submissions are compiled: `reference` (the reference pipeline's
    /// `g++ -DEVAL -std=gnu++17 -O2 -pipe -s`, dynamically linked) or `ioi` (CMS's flags as at
    /// IOI: the same with `-static`). Native runner only.
    #[arg(long, value_enum, default_value_t = CompileProfile::Reference)]
    pub compile_profile: CompileProfile,
    /// Multiply every time limit (CPU, and the wall limit derived from it) by this factor, for
    /// a host slower (> 1) or faster (< 1) than the contest's; from 0.1 to 100. Native runner
    /// only; recorded with the results.
    #[arg(long, default_value_t = 1.0, value_parser = parse_time_scale)]
    pub time_scale: f64,
    /// Your own `compile` script (implies --runner scripts).
    #[arg(long, requires = "run_script")]
    pub compile_script: Option<std::path::PathBuf>,
    /// Your own `run` script (implies --runner scripts).
    #[arg(long, requires = "compile_script")]
    pub run_script: Option<std::path::PathBuf>,
    #[command(flatten, next_help_heading = "Compile cache")]
    pub cache: CacheArgs,
}

/// The compile cache options of every command that compiles (`judge`, `evaluate`, `serve`).
#[derive(Debug, Clone, clap::Args)]
pub struct CacheArgs {
    /// Compile cache folder (default: $IOI_RUN_CACHE or ~/.cache/ioi-run).
    #[arg(long)]
    pub cache_dir: Option<std::path::PathBuf>,
    /// Largest compiled program accepted (bytes, or with K/M/G); a bigger one is a compilation
    /// error.
    #[arg(long, value_parser = parse_size, default_value = "256M")]
    pub max_program_size: u64,
}

impl CacheArgs {
    /// Sets the cache folder (`cache_dir/compile`) and the program size bound of `options`.
    pub fn apply(&self, options: &mut crate::judge::JudgeOptions) {
        if let Some(dir) = &self.cache_dir {
            options.cache_dir = dir.join("compile");
        }
        options.max_program_bytes = self.max_program_size;
    }
}

/// `--compile-profile`: the judge's profiles by their names, each with its purpose as its help.
/// The judge's type knows nothing of the command line; this is where the command line learns
/// to spell it.
impl clap::ValueEnum for CompileProfile {
    fn value_variants<'a>() -> &'a [Self] {
        &CompileProfile::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.as_str()).help(self.purpose()))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RunnerKind {
    Native,
    Scripts,
}

impl RunArgs {
    pub fn jobs(&self) -> usize {
        jobs_or_default(self.jobs)
    }

    pub fn judge_options(&self) -> anyhow::Result<crate::judge::JudgeOptions> {
        let mut options = crate::judge::JudgeOptions::default();
        self.cache.apply(&mut options);
        options.compile_profile = self.compile_profile;
        options.time_scale = self.time_scale;
        options.runner = match (&self.compile_script, &self.run_script, self.runner) {
            (Some(c), Some(r), _) => {
                crate::judge::Runner::Scripts(crate::judge::scripts::Scripts::read(c, r)?)
            }
            (_, _, RunnerKind::Scripts) => crate::judge::Runner::Scripts(Default::default()),
            _ => crate::judge::Runner::Native,
        };
        Ok(options)
    }
}

/// The number of parallel workers: `--jobs` when given (0 counts as 1), else one per core.
/// Every command that runs things in parallel takes its default from here.
pub fn jobs_or_default(jobs: Option<usize>) -> usize {
    jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    })
    .max(1)
}

/// The most parallel workers a command accepts: each worker is a thread with a sandboxed run,
/// and far more workers than cores only adds threads that wait (programs that sleep or block
/// still leave room for a few per core).
pub fn max_jobs() -> usize {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    (8 * cores).max(64)
}

/// A `--jobs` value: from 1 to [`max_jobs`].
pub fn job_count(text: &str) -> Result<usize, String> {
    let n = at_least_one(text)?;
    let max = max_jobs();
    if n > max {
        return Err(format!(
            "{n} workers is more than this host can use: at most {max} (8 per core, at least \
             64; this host has {} core(s))",
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        ));
    }
    Ok(n)
}

fn at_least_one(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "expected a whole number of at least 1, got {text:?}"
        )),
    }
}

/// Parses a size in bytes: `1048576`, `256K`, `256M`, `2G` (powers of 1024), `256MiB`, `1GB`.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("invalid size {text:?}: expected e.g. 268435456, 256M or 2G"))?;
    let multiplier: u64 = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "K" | "KB" | "KIB" => 1 << 10,
        "M" | "MB" | "MIB" => 1 << 20,
        "G" | "GB" | "GIB" => 1 << 30,
        other => {
            return Err(format!(
                "invalid size unit {other:?} in {text:?}: use K, M or G"
            ))
        }
    };
    Ok((value * multiplier as f64) as u64)
}

/// Parses a `--time-scale` factor, within [`crate::judge::TIME_SCALES`].
pub fn parse_time_scale(text: &str) -> Result<f64, String> {
    let range = crate::judge::TIME_SCALES;
    match text.trim().parse::<f64>() {
        Ok(v) if range.contains(&v) => Ok(v),
        _ => Err(format!(
            "expected a factor from {} to {} (1 keeps the problems' limits), got {text:?}",
            range.start(),
            range.end()
        )),
    }
}

/// Parses a duration in seconds (`1`, `0.5`).
pub fn parse_seconds(text: &str) -> Result<std::time::Duration, String> {
    let v: f64 = text
        .trim()
        .trim_end_matches('s')
        .parse()
        .map_err(|_| format!("invalid number of seconds {text:?}"))?;
    if !(v > 0.0 && v.is_finite()) {
        return Err(format!("seconds must be positive, got {text:?}"));
    }
    std::time::Duration::try_from_secs_f64(v)
        .map_err(|_| format!("{text:?} seconds is more than can be waited for"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_compile_profile_is_parsed_by_the_name_its_results_record() {
        use clap::ValueEnum;
        for profile in super::CompileProfile::ALL {
            let recorded = serde_json::to_value(profile).expect("a profile serializes");
            assert_eq!(recorded, profile.as_str());
            assert_eq!(
                super::CompileProfile::from_str(profile.as_str(), false),
                Ok(profile)
            );
        }
        assert!(super::CompileProfile::from_str("fast", false).is_err());
    }

    use super::*;

    #[test]
    fn the_sandbox_parser_alone_is_the_sandbox_command_of_the_whole_tree() {
        use clap::CommandFactory;
        let mut whole = Cli::command();
        whole.build();
        let mut within = whole.find_subcommand("sandbox").unwrap().clone();
        let mut alone = SandboxCli::command();
        // The same text (clap may list the global options in another place).
        let lines = |help: String| {
            let mut lines: Vec<String> = help.lines().map(str::to_string).collect();
            lines.sort();
            lines
        };
        assert_eq!(
            lines(alone.render_long_help().to_string()),
            lines(within.render_long_help().to_string())
        );
        assert_eq!(
            alone.render_usage().to_string(),
            within.render_usage().to_string()
        );
        let argv = [
            "--time",
            "1.5",
            "--memory",
            "64M",
            "--dir",
            "/usr:/opt",
            "--env",
            "A=1",
            "--color",
            "never",
            "--log-format",
            "json",
            "--",
            "/bin/echo",
            "x",
        ];
        let alone = SandboxCli::try_parse_from(["sandbox"].iter().chain(&argv)).unwrap();
        let whole = Cli::try_parse_from(["ioi-run", "sandbox"].iter().chain(&argv)).unwrap();
        let Command::Sandbox(args) = whole.command else {
            panic!("not the sandbox command: {:?}", whole.command)
        };
        assert_eq!(format!("{:?}", alone.args), format!("{args:?}"));
        assert_eq!(
            format!("{:?}", alone.globals),
            format!("{:?}", whole.globals)
        );
        // A mistake is reported the same way, naming the same command.
        let bad = ["--time", "x", "--", "/bin/true"];
        let alone = SandboxCli::try_parse_from(["sandbox"].iter().chain(&bad)).unwrap_err();
        let whole = Cli::try_parse_from(["ioi-run", "sandbox"].iter().chain(&bad)).unwrap_err();
        assert_eq!(alone.to_string(), whole.to_string());
    }

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_size("268435456"), Ok(268435456));
        assert_eq!(parse_size("256M"), Ok(256 << 20));
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("64KiB"), Ok(64 << 10));
        assert!(parse_size("12X").unwrap_err().contains("unit"));
        assert!(parse_size("M").is_err());
    }

    #[test]
    fn jobs_are_capped_with_a_clear_message() {
        assert_eq!(job_count("3"), Ok(3));
        assert_eq!(job_count(&max_jobs().to_string()), Ok(max_jobs()));
        let err = job_count("100000").unwrap_err();
        assert!(
            err.contains("100000 workers") && err.contains(&format!("at most {}", max_jobs())),
            "{err}"
        );
        assert!(job_count("0").unwrap_err().contains("at least 1"));
    }

    #[test]
    fn time_scales_are_bounded() {
        assert_eq!(parse_time_scale("1.5"), Ok(1.5));
        assert_eq!(parse_time_scale("0.1"), Ok(0.1));
        assert_eq!(parse_time_scale("100"), Ok(100.0));
        for bad in ["0", "-1", "0.05", "101", "inf", "NaN", "fast"] {
            let err = parse_time_scale(bad).unwrap_err();
            assert!(err.contains("from 0.1 to 100"), "{bad}: {err}");
        }
    }

    #[test]
    fn seconds_must_be_positive() {
        assert_eq!(
            parse_seconds("1.5"),
            Ok(std::time::Duration::from_millis(1500))
        );
        assert!(parse_seconds("0").is_err());
        assert!(parse_seconds("abc").is_err());
        assert!(parse_seconds("1e30").is_err());
    }
}
