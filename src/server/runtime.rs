//! The built-in runtimes (Piston's "installed packages") and how a request's
//! `{language, version}` selects one.

use serde_json::{json, Value};

/// A language the server executes. Both are built in: installing or removing them is a no-op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runtime {
    /// Piston's IOI package (`cms_ioi`): judge a submission on one test.
    CmsIoi,
    /// Plain C++17: compile and run a program.
    Cpp,
}

impl Runtime {
    pub const ALL: [Runtime; 2] = [Runtime::CmsIoi, Runtime::Cpp];

    pub fn language(self) -> &'static str {
        match self {
            Runtime::CmsIoi => "cms_ioi",
            Runtime::Cpp => "c++",
        }
    }

    pub fn version(self) -> &'static str {
        match self {
            Runtime::CmsIoi => "1.0.0",
            Runtime::Cpp => "17",
        }
    }

    pub fn aliases(self) -> &'static [&'static str] {
        match self {
            Runtime::CmsIoi => &["ioi"],
            Runtime::Cpp => &["cpp", "c++17", "g++"],
        }
    }

    /// The runtime a request names, as Piston resolves it: the language or one of its aliases,
    /// and a version that is `*`, exact, or a leading part of ours (`1`, `1.0`). Piston accepts
    /// any semver range; clients in practice send `*` or the exact version.
    pub fn find(language: &str, version: &str) -> Option<Runtime> {
        Runtime::ALL.into_iter().find(|rt| {
            (rt.language() == language || rt.aliases().contains(&language))
                && version_matches(rt.version(), version)
        })
    }

    /// The entry of `GET /api/v2/runtimes`.
    pub fn to_json(self) -> Value {
        json!({"language": self.language(), "version": self.version(), "aliases": self.aliases()})
    }

    /// The entry of `GET /api/v2/packages`.
    pub fn package_json(self) -> Value {
        json!({"language": self.language(), "language_version": self.version(), "installed": true})
    }
}

fn version_matches(ours: &str, requested: &str) -> bool {
    let requested = requested.trim().trim_start_matches(['^', '~', '=', 'v']);
    if matches!(requested, "" | "*" | "x" | "X" | "latest") {
        return true;
    }
    let requested = requested.trim_end_matches(".x").trim_end_matches(".*");
    ours == requested
        || ours
            .strip_prefix(requested)
            .is_some_and(|rest| rest.starts_with('.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn languages_and_aliases_resolve_with_wildcard_or_exact_versions() {
        assert_eq!(Runtime::find("cms_ioi", "*"), Some(Runtime::CmsIoi));
        assert_eq!(Runtime::find("cms_ioi", "1.0.0"), Some(Runtime::CmsIoi));
        assert_eq!(Runtime::find("ioi", "1"), Some(Runtime::CmsIoi));
        assert_eq!(Runtime::find("ioi", "1.x"), Some(Runtime::CmsIoi));
        assert_eq!(Runtime::find("cpp", "17"), Some(Runtime::Cpp));
        assert_eq!(Runtime::find("g++", "^17"), Some(Runtime::Cpp));
    }

    #[test]
    fn unknown_languages_and_versions_do_not_resolve() {
        assert_eq!(Runtime::find("python", "*"), None);
        assert_eq!(Runtime::find("cms_ioi", "2.0.0"), None);
        assert_eq!(Runtime::find("cms_ioi", "1.0.00"), None);
        assert_eq!(
            Runtime::find("c++", "1"),
            None,
            "17 does not start with the part `1`"
        );
    }
}
