//! What `bench soak` ([`super::soak`]) reads of a running server from outside, by its pid: its
//! memory, descriptors and threads (`/proc/<pid>/`), and what it holds on the host: its run
//! cgroups, its scratch folders (and their bytes, on the tmpfs where programs write), mounts of
//! ioi-run's folders in its mount table, and its pins in the compile cache.

use std::path::{Path, PathBuf};

/// A sample taken while requests run: cheap enough to take every second or two.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sample {
    /// Seconds since the soak's first request.
    pub seconds: f64,
    /// Requests answered by then.
    pub done: usize,
    /// Resident memory, KiB (`VmRSS`).
    pub rss_kib: u64,
    pub fds: usize,
    pub threads: usize,
}

/// Takes a [`Sample`] of process `pid`.
pub(crate) fn sample(pid: u32, seconds: f64, done: usize) -> Sample {
    let status = status(pid);
    Sample {
        seconds,
        done,
        rss_kib: status_field(&status, "VmRSS:"),
        fds: fds(pid),
        threads: status_field(&status, "Threads:") as usize,
    }
}

/// What a server holds that must come back to what it held idle: a leak shows as a figure
/// that stays above it. `mounts` is shown, not checked: the mount table is the host's, which
/// other processes change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Holdings {
    pub rss_kib: u64,
    pub fds: usize,
    pub threads: usize,
    /// Run cgroup directories (every hierarchy counted).
    pub cgroups: usize,
    /// Scratch folders (`ioi-<kind>-<pid>-*`: boxes, outputs, FIFOs, requests).
    pub scratch_folders: usize,
    /// Bytes of the files in them.
    pub scratch_bytes: u64,
    /// Mounts in its mount table whose mount point is an ioi-run folder.
    pub ioi_mounts: usize,
    /// Lines of its mount table.
    pub mounts: usize,
    /// Its pins in the compile cache (`<cache>/.pins/<host>-<pid>-*/`).
    pub pins: usize,
}

impl Holdings {
    /// The checked figures, by name, as the report prints them.
    pub(crate) fn checked(&self) -> [(&'static str, u64); 7] {
        [
            ("fds", self.fds as u64),
            ("threads", self.threads as u64),
            ("cgroups", self.cgroups as u64),
            ("scratch folders", self.scratch_folders as u64),
            ("scratch bytes", self.scratch_bytes),
            ("ioi-run mounts", self.ioi_mounts as u64),
            ("compile cache pins", self.pins as u64),
        ]
    }

    /// The checked figures above those of `start`.
    pub(crate) fn above(&self, start: &Holdings) -> Vec<&'static str> {
        self.checked()
            .iter()
            .zip(start.checked())
            .filter(|((_, now), (_, then))| now > then)
            .map(|((name, _), _)| *name)
            .collect()
    }
}

/// What process `pid`, whose compile cache is `cache`, holds now.
pub(crate) fn holdings(pid: u32, cache: &Path) -> Holdings {
    let status = status(pid);
    let scratch = crate::scratch::folders_of(pid);
    let mountinfo = std::fs::read_to_string(format!("/proc/{pid}/mountinfo")).unwrap_or_default();
    Holdings {
        rss_kib: status_field(&status, "VmRSS:"),
        fds: fds(pid),
        threads: status_field(&status, "Threads:") as usize,
        cgroups: ioi_sandbox::cgroups_of(pid).len(),
        scratch_folders: scratch.len(),
        scratch_bytes: scratch.iter().map(|dir| bytes_under(dir)).sum(),
        ioi_mounts: mountinfo
            .lines()
            .filter_map(|line| line.split(' ').nth(4))
            .filter(|point| point.contains("/ioi-"))
            .count(),
        mounts: mountinfo.lines().count(),
        pins: pins(pid, cache),
    }
}

fn status(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default()
}

/// A number of `/proc/<pid>/status` (`VmRSS:` is in KiB); 0 when missing.
fn status_field(status: &str, name: &str) -> u64 {
    status
        .lines()
        .find_map(|line| line.strip_prefix(name))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |dir| dir.count())
}

/// Bytes of the regular files under `dir` (links not followed; what vanishes meanwhile is not
/// counted).
fn bytes_under(dir: &Path) -> u64 {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .filter(|entry| entry.file_type().is_file())
        .filter_map(|entry| entry.metadata().ok())
        .map(|meta| meta.len())
        .sum()
}

/// Files in the pin folders of process `pid` in the compile cache `cache`.
fn pins(pid: u32, cache: &Path) -> usize {
    let Ok(folders) = std::fs::read_dir(cache.join(".pins")) else {
        return 0;
    };
    let own = |name: &str| name.split('-').nth(1) == Some(&pid.to_string());
    folders
        .flatten()
        .filter(|folder| own(&folder.file_name().to_string_lossy()))
        .map(|folder| std::fs::read_dir(folder.path()).map_or(0, |d| d.count()))
        .sum()
}

/// The figure `name` of a Prometheus text page (the first sample of it, labels ignored); 0
/// when absent.
pub(crate) fn metric(page: &str, name: &str) -> f64 {
    page.lines()
        .filter(|line| !line.starts_with('#'))
        .find(|line| {
            line.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with(' ') || rest.starts_with('{'))
        })
        .and_then(|line| line.rsplit(' ').next()?.parse().ok())
        .unwrap_or(0.0)
}

/// The compile cache folder of `serve --cache-dir DIR`.
pub(crate) fn compile_cache(cache_dir: &Path) -> PathBuf {
    cache_dir.join("compile")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_sampled_and_a_metric_is_read() {
        let me = sample(std::process::id(), 0.0, 0);
        assert!(me.rss_kib > 0 && me.fds > 0 && me.threads > 0, "{me:?}");
        let page = "# TYPE x counter\nioi_run_x_total 3\nioi_run_y{a=\"b\"} 2.5\n";
        assert_eq!(metric(page, "ioi_run_x_total"), 3.0);
        assert_eq!(metric(page, "ioi_run_y"), 2.5);
        assert_eq!(metric(page, "ioi_run_x"), 0.0);
    }

    #[test]
    fn a_figure_above_its_start_is_named() {
        let start = Holdings {
            fds: 10,
            threads: 5,
            ..Holdings::default()
        };
        let end = Holdings {
            fds: 10,
            threads: 4,
            cgroups: 3,
            mounts: 99,
            ..Holdings::default()
        };
        assert_eq!(end.above(&start), ["cgroups"]);
    }
}
