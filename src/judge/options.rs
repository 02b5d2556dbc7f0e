//! A judge's options, and the settings of them a result records: every option that can change
//! a verdict (the runner and its scripts, the compile profile with the compiler and its flags,
//! the program size bound, the time scale) is named here, so that `evaluate` records and
//! compares exactly what the judge was given (docs/evaluate.md, how the results were made).

use std::path::PathBuf;

use serde_json::{json, Map, Value};

use super::compile::{self, CompileProfile};
use super::{placement, scripts};

/// How tests are run.
#[derive(Debug, Clone)]
pub enum Runner {
    /// Natively: per-process CPU time and memory from the cgroup (the default).
    Native,
    /// Through `compile` and `run` scripts (docs/judging.md#script-mode).
    Scripts(scripts::Scripts),
}

/// Options of a [`Judge`].
#[derive(Debug, Clone)]
pub struct JudgeOptions {
    pub runner: Runner,
    pub cache_dir: PathBuf,
    /// Size bound of the compile cache, in bytes.
    pub cache_max_bytes: u64,
    /// Largest compiled program accepted; a bigger one is a compilation error.
    pub max_program_bytes: u64,
    /// How submissions are compiled (native runner).
    pub compile_profile: CompileProfile,
    /// Every time limit is multiplied by this factor (`--time-scale`): a host slower or faster
    /// than the contest's. The wall limits follow, being derived from the time limit.
    pub time_scale: f64,
    /// Where a Communication test's processes run.
    pub placement: placement::Placement,
    /// Every test's output, standard error and checker's or manager's words are copied to
    /// this folder, named by test ([`kept`]; native runner). `None` keeps nothing.
    pub keep_dir: Option<PathBuf>,
    /// Builds the precompiled headers most submissions start with (`<bits/stdc++.h>`, and
    /// followed by the problem's header) as soon as the judge starts
    /// and as each problem is prepared, on a thread of their own (long runs: `evaluate`,
    /// `serve`). Either way no compile waits for a header.
    pub headers_ahead: bool,
}

impl Default for JudgeOptions {
    fn default() -> Self {
        JudgeOptions {
            runner: Runner::Native,
            cache_dir: compile::default_cache_dir(),
            cache_max_bytes: 2 << 30,
            max_program_bytes: compile::DEFAULT_MAX_PROGRAM_BYTES,
            compile_profile: CompileProfile::Reference,
            time_scale: 1.0,
            placement: placement::Placement::SharedCpu,
            keep_dir: None,
            headers_ahead: false,
        }
    }
}

impl JudgeOptions {
    /// The settings of this judge that can change a verdict, in the order a results record
    /// lists them: the runner (`native`, `scripts (built in)`, or `scripts` and a hash of the
    /// pair given), the compile profile, the compiler, the flags of a submission compile, the
    /// program size bound and the time scale.
    pub fn recorded_settings(&self) -> Map<String, Value> {
        let (runner, flags) = match &self.runner {
            Runner::Native => (
                "native".to_string(),
                self.compile_profile.submission_flags().join(" "),
            ),
            // A script compiles with the flags it chooses.
            Runner::Scripts(scripts) => {
                (scripts.label(), "chosen by the compile script".to_string())
            }
        };
        let compiler = compile::compiler_identity()
            .lines()
            .next()
            .unwrap_or("g++ unknown")
            .to_string();
        let settings = json!({
            "runner": runner,
            "compile_profile": self.compile_profile.as_str(),
            "compiler": compiler,
            "compile_flags": flags,
            "max_program_size": self.max_program_bytes,
            "time_scale": self.time_scale,
        });
        settings.as_object().cloned().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn the_settings_name_the_runner_and_the_flags_it_compiles_with() {
        let native = JudgeOptions {
            compile_profile: CompileProfile::Ioi,
            time_scale: 2.0,
            ..JudgeOptions::default()
        }
        .recorded_settings();
        let names: Vec<&str> = native.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "runner",
                "compile_profile",
                "compiler",
                "compile_flags",
                "max_program_size",
                "time_scale"
            ]
        );
        assert_eq!(native["runner"], "native");
        assert_eq!(native["compile_profile"], "ioi");
        assert_eq!(
            native["compile_flags"],
            CompileProfile::Ioi.submission_flags().join(" ")
        );
        assert_eq!(native["time_scale"], 2.0);

        let built_in = JudgeOptions {
            runner: Runner::Scripts(scripts::Scripts::default()),
            ..JudgeOptions::default()
        }
        .recorded_settings();
        assert_eq!(built_in["runner"], "scripts (built in)");
        assert_eq!(built_in["compile_flags"], "chosen by the compile script");

        let dir = tempfile::tempdir().unwrap();
        let (compile, run) = (dir.path().join("compile"), dir.path().join("run"));
        std::fs::File::create(&compile)
            .and_then(|mut f| f.write_all(scripts::COMPILE_SCRIPT.as_bytes()))
            .unwrap();
        std::fs::write(&run, "#!/bin/sh\necho 1\n").unwrap();
        let given = JudgeOptions {
            runner: Runner::Scripts(scripts::Scripts::read(&compile, &run).unwrap()),
            ..JudgeOptions::default()
        }
        .recorded_settings();
        let mut hash = blake3::Hasher::new();
        hash.update(scripts::COMPILE_SCRIPT.as_bytes());
        hash.update(b"#!/bin/sh\necho 1\n");
        let expected = format!("scripts {}", &hash.finalize().to_hex()[..16]);
        assert_eq!(given["runner"], expected.as_str());
    }
}
