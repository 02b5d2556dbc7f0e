//! The embedded demo: three small IOI-style problems (CMS folders) and a submissions file with
//! correct, partial, wrong, TLE, MLE, CE, runtime-error and no-code entries.

use std::path::Path;

use anyhow::{Context, Result};

include!(concat!(env!("OUT_DIR"), "/demo_files.rs"));

/// Writes the demo into `dir` (`problems/<id>/...` and `submissions.jsonl`).
pub fn extract(dir: &Path) -> Result<()> {
    for (rel, content) in DEMO_FILES {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&path, content)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn demo_holds_problems_and_submissions() {
        let dir = tempfile::tempdir().unwrap();
        super::extract(dir.path()).unwrap();
        assert!(dir.path().join("submissions.jsonl").is_file());
        let problems: Vec<_> = std::fs::read_dir(dir.path().join("problems"))
            .unwrap()
            .flatten()
            .collect();
        assert!(problems.len() >= 3);
        for p in problems {
            crate::problem::cms::load_cms(&p.path()).unwrap();
        }
    }
}
