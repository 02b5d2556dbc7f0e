//! What makes CPU times comparable from run to run, checked as isolate's environment check
//! does: swap, SMT, frequency scaling and boost, transparent huge pages, ASLR, core_pattern,
//! asymmetric cores. None of them stops judging; each says why it matters, how much for the
//! stability of verdicts near a time limit, and what to change.
//!
//! Every check reads files under a root folder (`/` on the host) so that the tests can give it
//! a fake `/sys` and `/proc`.

use std::path::Path;

/// The state of one timing factor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Advice {
    /// Set as recommended.
    Good,
    /// Makes timings vary: change it on a judging host.
    Warn,
    /// The host does not expose it (typical of virtual machines and containers).
    Unknown,
}

/// How much a factor moves CPU times and therefore verdicts near the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Impact {
    /// A large effect on CPU times.
    High,
    /// A moderate effect.
    Medium,
    /// A small effect (a few per cent at most).
    Low,
}

impl std::fmt::Display for Impact {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Impact::High => "high",
            Impact::Medium => "medium",
            Impact::Low => "low",
        })
    }
}

/// One timing factor of the host.
#[derive(Debug, Clone)]
pub struct TimingCheck {
    /// The factor.
    pub name: &'static str,
    /// Its state on this host.
    pub advice: Advice,
    /// What was found (and the fix when it is not good).
    pub detail: String,
    /// Why it matters for timing.
    pub why: &'static str,
    /// How much it moves CPU times.
    pub impact: Impact,
}

/// Checks the host's timing factors.
pub fn checks() -> Vec<TimingCheck> {
    checks_in(Path::new("/"))
}

fn read(root: &Path, path: &str) -> Option<String> {
    std::fs::read_to_string(root.join(path.trim_start_matches('/')))
        .ok()
        .map(|s| s.trim().to_string())
}

/// The same checks with `/sys` and `/proc` under `root`.
pub fn checks_in(root: &Path) -> Vec<TimingCheck> {
    let cpus = cpu_dirs(root);
    vec![
        swap(root),
        smt(root),
        governor(root, &cpus),
        boost(root),
        asymmetric(root, &cpus),
        huge_pages(root),
        aslr(root),
        core_pattern(root),
    ]
}

/// The `cpuN` folders of `/sys/devices/system/cpu`, sorted by N.
fn cpu_dirs(root: &Path) -> Vec<String> {
    let dir = root.join("sys/devices/system/cpu");
    let mut cpus: Vec<(u32, String)> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    let n = name.strip_prefix("cpu")?.parse().ok()?;
                    Some((n, format!("/sys/devices/system/cpu/{name}")))
                })
                .collect()
        })
        .unwrap_or_default();
    cpus.sort();
    cpus.into_iter().map(|(_, d)| d).collect()
}

fn swap(root: &Path) -> TimingCheck {
    let total = read(root, "/proc/meminfo").and_then(|m| {
        m.lines()
            .find_map(|l| l.strip_prefix("SwapTotal:"))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
    });
    let (advice, detail) = match total {
        Some(0) => (Advice::Good, "no swap".to_string()),
        Some(kib) => (
            Advice::Warn,
            format!(
                "{} MiB of swap: runs themselves never swap (their cgroup forbids it), but a \
                 swapped-out judge or page cache costs time; `swapoff -a` on a judging host",
                kib >> 10
            ),
        ),
        None => (
            Advice::Unknown,
            "cannot read SwapTotal in /proc/meminfo".into(),
        ),
    };
    TimingCheck {
        name: "swap",
        advice,
        detail,
        why: "swapping stalls the machine unpredictably",
        impact: Impact::Medium,
    }
}

fn smt(root: &Path) -> TimingCheck {
    let (advice, detail) = match read(root, "/sys/devices/system/cpu/smt/active").as_deref() {
        Some("0") => (Advice::Good, "SMT (hyper-threading) is off".to_string()),
        Some("1") => (
            Advice::Warn,
            "SMT (hyper-threading) is on: turn it off (`echo off > \
             /sys/devices/system/cpu/smt/control`, or in the firmware), or judge with at most \
             one run per physical core (--jobs)"
                .to_string(),
        ),
        _ => (
            Advice::Unknown,
            "/sys/devices/system/cpu/smt/active is missing".into(),
        ),
    };
    TimingCheck {
        name: "SMT",
        advice,
        detail,
        why: "two hardware threads share one core: a run is up to ~30-50% slower when its \
              sibling is busy",
        impact: Impact::High,
    }
}

fn governor(root: &Path, cpus: &[String]) -> TimingCheck {
    let governors: Vec<String> = cpus
        .iter()
        .filter_map(|c| read(root, &format!("{c}/cpufreq/scaling_governor")))
        .collect();
    let (advice, detail) = if governors.is_empty() {
        (
            Advice::Unknown,
            "no cpufreq governor exposed (virtual machine, or scaling done by the firmware)"
                .to_string(),
        )
    } else if governors.iter().all(|g| g == "performance") {
        (Advice::Good, "governor performance on every CPU".into())
    } else {
        let mut kinds = governors.clone();
        kinds.sort();
        kinds.dedup();
        (
            Advice::Warn,
            format!(
                "governor {}: set performance (`cpupower frequency-set -g performance`)",
                kinds.join(", ")
            ),
        )
    };
    TimingCheck {
        name: "frequency scaling",
        advice,
        detail,
        why: "a CPU that lowers its clock when idle starts each run slow and speeds up during it",
        impact: Impact::High,
    }
}

fn boost(root: &Path) -> TimingCheck {
    let no_turbo = read(root, "/sys/devices/system/cpu/intel_pstate/no_turbo");
    let boost = read(root, "/sys/devices/system/cpu/cpufreq/boost");
    let (advice, detail) = match (no_turbo.as_deref(), boost.as_deref()) {
        (Some("1"), _) | (None, Some("0")) => (Advice::Good, "turbo/boost is off".to_string()),
        (Some(_), _) => (
            Advice::Warn,
            "Intel turbo is on: `echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo`".into(),
        ),
        (None, Some(_)) => (
            Advice::Warn,
            "boost is on: `echo 0 > /sys/devices/system/cpu/cpufreq/boost`".into(),
        ),
        (None, None) => (
            Advice::Unknown,
            "no boost control exposed (virtual machine, or boost fixed by the firmware)".into(),
        ),
    };
    TimingCheck {
        name: "turbo/boost",
        advice,
        detail,
        why: "the boosted clock depends on temperature and on how many cores are busy",
        impact: Impact::High,
    }
}

fn asymmetric(root: &Path, cpus: &[String]) -> TimingCheck {
    let capacity: Vec<u64> = cpus
        .iter()
        .filter_map(|c| read(root, &format!("{c}/cpu_capacity"))?.parse().ok())
        .collect();
    let max_freq: Vec<u64> = cpus
        .iter()
        .filter_map(|c| {
            read(root, &format!("{c}/cpufreq/cpuinfo_max_freq"))?
                .parse()
                .ok()
        })
        .collect();
    let hybrid = root.join("sys/devices/cpu_atom").exists();
    let differ = |v: &[u64]| v.iter().min() != v.iter().max();
    let (advice, detail) = if hybrid || differ(&capacity) || differ(&max_freq) {
        (
            Advice::Warn,
            format!(
                "cores of different kinds (capacities {:?}, max kHz {:?}{}): judge on one kind \
                 only (`taskset -c <fast cores> ioi-run ...`)",
                range(&capacity),
                range(&max_freq),
                if hybrid { ", Intel hybrid" } else { "" }
            ),
        )
    } else if capacity.is_empty() && max_freq.is_empty() {
        (
            Advice::Unknown,
            "neither cpu_capacity nor cpuinfo_max_freq is exposed".into(),
        )
    } else {
        (Advice::Good, format!("{} identical CPUs", cpus.len()))
    };
    TimingCheck {
        name: "asymmetric cores",
        advice,
        detail,
        why: "on big.LITTLE or P/E-core CPUs a run's time depends on which core it lands on",
        impact: Impact::High,
    }
}

fn range(v: &[u64]) -> (u64, u64) {
    (
        v.iter().copied().min().unwrap_or(0),
        v.iter().copied().max().unwrap_or(0),
    )
}

/// The selected value of a sysfs choice list such as `always [madvise] never`.
fn selected(text: &str) -> Option<&str> {
    let start = text.find('[')? + 1;
    let end = start + text[start..].find(']')?;
    Some(&text[start..end])
}

fn huge_pages(root: &Path) -> TimingCheck {
    let enabled = read(root, "/sys/kernel/mm/transparent_hugepage/enabled");
    let mode = enabled.as_deref().and_then(selected);
    let (advice, detail) = match mode {
        Some("never") | Some("madvise") => (
            Advice::Good,
            format!("transparent huge pages: {}", mode.unwrap_or("?")),
        ),
        Some(m) => (
            Advice::Warn,
            format!(
                "transparent huge pages: {m}: set never or madvise (`echo madvise > \
                 /sys/kernel/mm/transparent_hugepage/enabled`)"
            ),
        ),
        None => (Advice::Unknown, "transparent huge pages not exposed".into()),
    };
    TimingCheck {
        name: "huge pages",
        advice,
        detail,
        why: "with `always`, page faults and memory use change in 2 MiB steps and khugepaged \
              compacts memory in the background",
        impact: Impact::Medium,
    }
}

fn aslr(root: &Path) -> TimingCheck {
    let (advice, detail) = match read(root, "/proc/sys/kernel/randomize_va_space").as_deref() {
        Some("0") => (
            Advice::Good,
            "address space randomisation is off".to_string(),
        ),
        Some(v) => (
            Advice::Warn,
            format!(
                "kernel.randomize_va_space={v}: isolate recommends 0 on a dedicated judging \
                 host (this weakens the host's exploit hardening: keep it where the host does \
                 more than judge)"
            ),
        ),
        None => (
            Advice::Unknown,
            "/proc/sys/kernel/randomize_va_space is missing".into(),
        ),
    };
    TimingCheck {
        name: "ASLR",
        advice,
        detail,
        why: "random addresses change cache and alignment effects from run to run (a few %)",
        impact: Impact::Low,
    }
}

fn core_pattern(root: &Path) -> TimingCheck {
    let (advice, detail) = match read(root, "/proc/sys/kernel/core_pattern") {
        Some(p) if p.starts_with('|') => (
            Advice::Warn,
            format!(
                "core_pattern pipes to `{}`: a crashing submission starts that helper on the \
                 host, outside the sandbox's limits; set a plain pattern (`sysctl -w \
                 kernel.core_pattern=core`)",
                p.trim_start_matches('|')
                    .split_whitespace()
                    .next()
                    .unwrap_or("")
            ),
        ),
        Some(p) => (Advice::Good, format!("core_pattern `{p}` (no helper)")),
        None => (
            Advice::Unknown,
            "/proc/sys/kernel/core_pattern is missing".into(),
        ),
    };
    TimingCheck {
        name: "core_pattern",
        advice,
        detail,
        why: "a core-dump helper spends CPU and disk for every crash, slowing the runs beside it",
        impact: Impact::Medium,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake(files: &[(&str, &str)]) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        for (path, content) in files {
            let p = root.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, content).unwrap();
        }
        root
    }

    fn advice(checks: &[TimingCheck], name: &str) -> Advice {
        checks.iter().find(|c| c.name == name).unwrap().advice
    }

    #[test]
    fn a_noisy_host_gets_a_warning_for_each_factor() {
        let root = fake(&[
            ("proc/meminfo", "MemTotal: 100 kB\nSwapTotal: 2048000 kB\n"),
            ("sys/devices/system/cpu/smt/active", "1\n"),
            (
                "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
                "powersave\n",
            ),
            (
                "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor",
                "performance\n",
            ),
            (
                "sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq",
                "5000000\n",
            ),
            (
                "sys/devices/system/cpu/cpu1/cpufreq/cpuinfo_max_freq",
                "3800000\n",
            ),
            ("sys/devices/system/cpu/intel_pstate/no_turbo", "0\n"),
            (
                "sys/kernel/mm/transparent_hugepage/enabled",
                "[always] madvise never\n",
            ),
            ("proc/sys/kernel/randomize_va_space", "2\n"),
            (
                "proc/sys/kernel/core_pattern",
                "|/usr/lib/systemd/systemd-coredump %P\n",
            ),
        ]);
        let checks = checks_in(root.path());
        for c in &checks {
            assert_eq!(c.advice, Advice::Warn, "{c:?}");
        }
        assert_eq!(checks.len(), 8);
        let core = checks.iter().find(|c| c.name == "core_pattern").unwrap();
        assert!(core.detail.contains("systemd-coredump"), "{core:?}");
    }

    #[test]
    fn a_quiet_host_is_good_and_missing_files_are_unknown() {
        let root = fake(&[
            ("proc/meminfo", "SwapTotal:       0 kB\n"),
            ("sys/devices/system/cpu/smt/active", "0\n"),
            (
                "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
                "performance\n",
            ),
            ("sys/devices/system/cpu/cpu0/cpu_capacity", "1024\n"),
            ("sys/devices/system/cpu/cpu1/cpu_capacity", "1024\n"),
            ("sys/devices/system/cpu/cpufreq/boost", "0\n"),
            (
                "sys/kernel/mm/transparent_hugepage/enabled",
                "always [madvise] never\n",
            ),
            ("proc/sys/kernel/randomize_va_space", "0\n"),
            ("proc/sys/kernel/core_pattern", "core\n"),
        ]);
        for c in checks_in(root.path()) {
            assert_eq!(c.advice, Advice::Good, "{c:?}");
        }
        let empty = tempfile::tempdir().unwrap();
        let checks = checks_in(empty.path());
        for name in [
            "swap",
            "SMT",
            "frequency scaling",
            "turbo/boost",
            "asymmetric cores",
        ] {
            assert_eq!(advice(&checks, name), Advice::Unknown, "{name}");
        }
    }

    #[test]
    fn choice_lists() {
        assert_eq!(selected("always [madvise] never"), Some("madvise"));
        assert_eq!(selected("[never]"), Some("never"));
        assert_eq!(selected("never"), None);
    }
}
