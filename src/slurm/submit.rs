//! `sbatch` itself: a job script handed over on stdin, the job id read back.

use std::io::Write;
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

/// Submits a script with `sbatch --parsable` (extra options first) and returns the job id.
pub fn submit(script: &str, options: &[String]) -> Result<String> {
    let mut child = Command::new("sbatch")
        .arg("--parsable")
        .args(options)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot run sbatch (is Slurm installed and on PATH?)")?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(script.as_bytes())
            .context("cannot give the job script to sbatch")?;
    }
    let out = child.wait_with_output().context("sbatch failed")?;
    if !out.status.success() {
        bail!(
            "sbatch {} failed: {}",
            options.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    job_id(&String::from_utf8_lossy(&out.stdout))
}

/// The job id of `sbatch --parsable`'s output (`id` or `id;cluster`).
fn job_id(text: &str) -> Result<String> {
    let id = text.trim().split(';').next().unwrap_or_default();
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit()) {
        bail!("sbatch printed no job id: {text:?}");
    }
    Ok(id.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_job_id_is_read_with_or_without_a_cluster() {
        assert_eq!(job_id("42\n").unwrap(), "42");
        assert_eq!(job_id("42;cluster\n").unwrap(), "42");
        assert!(job_id("Submitted batch job 42\n").is_err());
        assert!(job_id("").is_err());
    }
}
