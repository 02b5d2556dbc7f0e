//! `serve` as a fleet: one job per worker, named `piston-worker-<port>` so that open-r1's
//! Piston client finds it (`squeue --format="%j %N %T" --states=RUNNING`) and calls
//! `http://<node>:<port>/api/v2`.

use std::path::Path;

use anyhow::{bail, Context, Result};

use super::script::{quote, quote_all, sbatch_header};
use super::JobResources;

/// One worker's job.
pub struct WorkerJob {
    pub name: String,
    pub script: String,
}

/// The jobs of `workers` servers; worker i listens on `base_port + i`. `serve_args` are the
/// user's `serve` options, passed on as they are, except that a worker is reachable from other
/// nodes unless the user chose `--host`, and uses its job's CPUs unless told how many.
pub fn worker_jobs(
    base_port: u16,
    workers: u16,
    serve_args: &[String],
    resources: &JobResources,
    log_dir: &Path,
    binary: &str,
    chdir: &Path,
) -> Result<Vec<WorkerJob>> {
    let has = |name: &str| {
        serve_args
            .iter()
            .any(|a| a == name || a.starts_with(&format!("{name}=")))
    };
    if has("--ports") {
        bail!("slurm serve: --ports cannot be used here: worker i listens on --port + i, the port its job name announces");
    }
    let mut common = serve_args.to_vec();
    if !has("--host") {
        common.extend(["--host".to_string(), "0.0.0.0".to_string()]);
    }
    let jobs = if has("--jobs")
        || has("--max-concurrent-requests")
        || serve_args.iter().any(|a| a.starts_with("-j"))
    {
        String::new()
    } else {
        " --jobs \"${SLURM_CPUS_PER_TASK:-1}\"".to_string()
    };
    (0..workers)
        .map(|i| {
            let port = base_port
                .checked_add(i)
                .with_context(|| format!("port {base_port}+{i} is beyond 65535"))?;
            let name = format!("piston-worker-{port}");
            let log = log_dir.join(format!("{name}-%j.log"));
            let mut script = sbatch_header(&name, resources, &log, chdir)?;
            script.push_str(&format!(
                "set -eu\nexec {} serve {} --port {port}{jobs}\n",
                quote(binary),
                quote_all(&common)
            ));
            Ok(WorkerJob { name, script })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resources() -> JobResources {
        JobResources {
            cpus_per_task: 2,
            mem: None,
            partition: None,
            time: None,
            sbatch_args: Vec::new(),
        }
    }

    #[test]
    fn workers_listen_on_consecutive_ports_reachable_from_other_nodes() {
        let args = vec!["--cache-dir".to_string(), "/shared/cache".to_string()];
        let jobs = worker_jobs(
            2000,
            2,
            &args,
            &resources(),
            Path::new("/logs"),
            "/bin/ioi-run",
            Path::new("/"),
        )
        .unwrap();
        let names: Vec<&str> = jobs.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(names, ["piston-worker-2000", "piston-worker-2001"]);
        assert!(
            jobs[1].script.ends_with(
                "exec /bin/ioi-run serve --cache-dir /shared/cache --host 0.0.0.0 --port 2001 --jobs \"${SLURM_CPUS_PER_TASK:-1}\"\n"
            ),
            "{}",
            jobs[1].script
        );
    }

    #[test]
    fn a_port_list_and_a_port_beyond_65535_are_refused() {
        let ports = vec!["--ports=1,2".to_string()];
        let err = worker_jobs(
            2000,
            1,
            &ports,
            &resources(),
            Path::new("/"),
            "x",
            Path::new("/"),
        );
        assert!(err.is_err_and(|e| e.to_string().contains("--ports")));
        let err = worker_jobs(
            65535,
            2,
            &[],
            &resources(),
            Path::new("/"),
            "x",
            Path::new("/"),
        );
        assert!(err.is_err_and(|e| e.to_string().contains("beyond 65535")));
    }
}
