//! isolate, the IOI's sandbox, as the benchmarks' anchor (`bench sandbox --isolate`, `bench
//! judge --task --isolate`): its command line, a box by id, built by `tools/build-isolate.sh`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use anyhow::{bail, ensure, Context, Result};

/// The isolate binary.
pub struct Isolate {
    path: PathBuf,
}

impl Isolate {
    pub fn new(path: &Path) -> Result<Isolate> {
        ensure!(
            path.is_file(),
            "--isolate {}: no such file (build it with tools/build-isolate.sh)",
            path.display()
        );
        Ok(Isolate {
            path: path.to_path_buf(),
        })
    }

    /// `isolate --box-id=ID ARGS...`, its output discarded (as a timed anchor runs it); an
    /// error unless it succeeds.
    pub fn call(&self, id: u32, args: &[&str]) -> Result<()> {
        let status = Command::new(&self.path)
            .arg(format!("--box-id={id}"))
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .with_context(|| format!("cannot run {}", self.path.display()))?;
        ensure!(
            status.success(),
            "{} --box-id={id} {}: {status} (built by tools/build-isolate.sh? its box root must \
             exist)",
            self.path.display(),
            args.join(" ")
        );
        Ok(())
    }

    /// Box `id` initialised (`--init`), cleaned up when dropped.
    pub fn init(&self, id: u32) -> Result<IsolateBox<'_>> {
        let out = Command::new(&self.path)
            .arg(format!("--box-id={id}"))
            .arg("--init")
            .stderr(Stdio::piped())
            .output()
            .with_context(|| format!("cannot run {}", self.path.display()))?;
        if !out.status.success() {
            bail!(
                "{} --box-id={id} --init: {} ({})",
                self.path.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        // isolate prints the box's root; its folder, `/box` inside, is `box/` in it.
        let root = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        Ok(IsolateBox {
            isolate: self,
            id,
            dir: root.join("box"),
        })
    }
}

/// One initialised box, cleaned up when dropped.
pub struct IsolateBox<'a> {
    isolate: &'a Isolate,
    id: u32,
    /// The box's folder on the host (`/box` inside).
    pub dir: PathBuf,
}

impl IsolateBox<'_> {
    /// `isolate --box-id=ID ARGS...` on this box, its output discarded.
    pub fn call(&self, args: &[&str]) -> Result<()> {
        self.isolate.call(self.id, args)
    }

    /// Copies `from` into the box as `name`.
    pub fn put(&self, from: &Path, name: &str) -> Result<()> {
        std::fs::copy(from, self.dir.join(name))
            .with_context(|| format!("cannot copy {} into an isolate box", from.display()))?;
        Ok(())
    }

    /// The command of a run in this box: `options`, then `argv` (paths inside the box).
    pub fn command(&self, options: &[String], argv: &[String]) -> Command {
        let mut command = Command::new(&self.isolate.path);
        command
            .arg(format!("--box-id={}", self.id))
            .args(options)
            .arg("--run")
            .arg("--")
            .args(argv);
        command
    }

    /// A run in this box, its output captured.
    pub fn run(&self, options: &[String], argv: &[String]) -> Result<Output> {
        self.command(options, argv)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .with_context(|| format!("cannot run {}", self.isolate.path.display()))
    }
}

impl Drop for IsolateBox<'_> {
    fn drop(&mut self) {
        let _ = self.isolate.call(self.id, &["--cleanup"]);
    }
}
