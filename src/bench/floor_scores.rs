//! How the floors of `bench judge --task` score a test, shared by the plain floor
//! ([`super::floor`]) and isolate's ([`super::isolate_floor`]): a checker's or manager's score,
//! white-diff without a checker, and the processes of a Communication test reaped when the test
//! ends early. Each floor imports this room; neither imports the other's scoring.

use std::path::Path;

use anyhow::Result;

use crate::judge::check;
use crate::problem::TestCase;

/// The score a checker or manager printed (`who` names it in errors).
pub(super) fn score_of(stdout: &[u8], stderr: &[u8], who: &str) -> Result<f64> {
    let (score, _) = check::parse_verdict(
        &String::from_utf8_lossy(stdout),
        &String::from_utf8_lossy(stderr),
        who,
    )?;
    Ok(score)
}

/// A test without a checker: 1 when `output` is the expected output but for white space.
pub(super) fn white_diff_score(test: &TestCase, output: &Path) -> Result<f64> {
    Ok(if check::white_diff(&test.output, output)? {
        1.0
    } else {
        0.0
    })
}

/// A process of a test, killed and reaped if the test ends before it is waited for (a user
/// process that cannot start leaves the manager blocked on its FIFOs otherwise).
pub(super) struct Started(Option<std::process::Child>);

impl Started {
    pub(super) fn new(child: std::process::Child) -> Started {
        Started(Some(child))
    }

    pub(super) fn take(mut self) -> std::process::Child {
        self.0.take().expect("a started process is taken once")
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A Communication test's end: every user process waited for, then the manager; its score,
/// 0 when a user process failed.
pub(super) fn manager_score(users: Vec<Started>, manager: Started) -> Result<f64> {
    let mut failed = false;
    for user in users {
        failed |= !user.take().wait()?.success();
    }
    let out = manager.take().wait_with_output()?;
    if failed {
        return Ok(0.0);
    }
    score_of(&out.stdout, &out.stderr, "manager")
}
