//! Job scripts: the `#SBATCH` header every job gets, bash quoting for the command it runs, and
//! Slurm's array syntax. Values come from the user's command line, and a script is bash: a
//! value is quoted, and one that could end its `#SBATCH` line is refused.

use std::path::Path;

use anyhow::{bail, Result};

use super::JobResources;

/// Quotes a word for bash (left as is when it needs no quoting).
pub fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./:=,@%+-".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

pub fn quote_all(words: &[String]) -> String {
    words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ")
}

/// The `#SBATCH` lines of a job named `job_name` whose output goes to `output`, run in `chdir`.
pub fn sbatch_header(
    job_name: &str,
    job: &JobResources,
    output: &Path,
    chdir: &Path,
) -> Result<String> {
    // A line break in a value would end the `#SBATCH` line and start a line of the script.
    let values = [
        job.mem.as_deref(),
        job.partition.as_deref(),
        job.time.as_deref(),
    ];
    for value in values
        .into_iter()
        .flatten()
        .chain(job.sbatch_args.iter().map(String::as_str))
    {
        if value.contains(['\n', '\r']) {
            bail!("slurm options cannot contain a line break: {value:?}");
        }
    }
    let mut lines = vec![
        "#!/bin/bash".to_string(),
        format!("#SBATCH --job-name={}", quote(job_name)),
        format!("#SBATCH --cpus-per-task={}", job.cpus_per_task),
        "#SBATCH --ntasks=1".to_string(),
        format!("#SBATCH --output={}", quote(&output.to_string_lossy())),
        // A shard submitted again appends to its log instead of erasing the first attempt's.
        "#SBATCH --open-mode=append".to_string(),
        format!("#SBATCH --chdir={}", quote(&chdir.to_string_lossy())),
    ];
    if let Some(mem) = &job.mem {
        lines.push(format!("#SBATCH --mem={}", quote(mem)));
    }
    if let Some(partition) = &job.partition {
        lines.push(format!("#SBATCH --partition={}", quote(partition)));
    }
    if let Some(time) = &job.time {
        lines.push(format!("#SBATCH --time={}", quote(time)));
    }
    for arg in &job.sbatch_args {
        lines.push(format!("#SBATCH {arg}"));
    }
    Ok(lines.join("\n") + "\n")
}

/// Slurm's array syntax for a sorted list of indices: `0-3,5,7-8`.
pub fn array_spec(indices: &[u32]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < indices.len() {
        let mut j = i;
        while j + 1 < indices.len() && indices[j + 1] == indices[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            indices[i].to_string()
        } else {
            format!("{}-{}", indices[i], indices[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_quoted_for_bash() {
        assert_eq!(quote("a/b.jsonl"), "a/b.jsonl");
        assert_eq!(quote("my model"), "'my model'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote("$(rm -rf /)"), "'$(rm -rf /)'");
        assert_eq!(quote(""), "''");
    }

    #[test]
    fn a_line_break_cannot_smuggle_a_command_into_the_script() {
        let job = JobResources {
            cpus_per_task: 1,
            mem: None,
            partition: None,
            time: None,
            sbatch_args: vec!["--qos=high\nrm -rf ~".into()],
        };
        let err = sbatch_header("x", &job, Path::new("log"), Path::new("/")).unwrap_err();
        assert!(err.to_string().contains("line break"), "{err}");
        let job = JobResources {
            sbatch_args: vec!["--qos=high".into()],
            ..job
        };
        let header = sbatch_header("x", &job, Path::new("log"), Path::new("/")).unwrap();
        assert!(
            header.lines().any(|l| l == "#SBATCH --qos=high"),
            "{header}"
        );
    }

    #[test]
    fn array_lists_are_compact() {
        assert_eq!(array_spec(&[0, 1, 2, 3]), "0-3");
        assert_eq!(array_spec(&[0, 2, 3, 5]), "0,2-3,5");
        assert_eq!(array_spec(&[4]), "4");
    }
}
