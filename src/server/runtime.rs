//! The built-in runtimes (Piston's "installed packages") and how a request's
//! `{language, version}` selects one.
//!
//! Three packages are served: Piston's IOI package (`cms_ioi`), public Piston's plain C++
//! (`c++` 10.2.0: compile a program and run it on stdin), and the Codeforces package open-r1's
//! `cf_scoring` uses (`c++17`, `cf_python3`, ...: judge a program on one test). `c++` belongs
//! to both plain C++ and the Codeforces package; which one a request means is decided by its
//! files (see [`Runtime::find`]), so that a Codeforces request is never run as a bare program
//! whose raw stdout the client would take for a verdict.

use serde_json::{json, Value};

/// A language the server executes. All are built in: installing or removing them is a no-op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runtime {
    /// Piston's IOI package (`cms_ioi`): judge a submission on one test.
    CmsIoi,
    /// Plain C++ (public Piston's gcc package): compile a program and run it.
    Cpp,
    /// Plain C (public Piston's gcc package): compile a program with gcc and run it.
    C,
    /// The Codeforces package: judge a C++ or Python program on one test
    /// (docs/piston-api.md#the-codeforces-contract).
    Codeforces(CfLanguage),
}

/// A language of the Codeforces package.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CfLanguage {
    /// C++ compiled with `g++ -DONLINE_JUDGE -O2 [-std=<standard>] -pipe -s`.
    Cpp(CppStandard),
    /// Python 3, run by the host's `python3` inside the box.
    Python3,
}

/// The C++ standards of the Codeforces package; `Default` is g++'s own (no `-std`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CppStandard {
    Default,
    Cpp0x,
    Cpp11,
    Cpp14,
    Cpp17,
    Cpp20,
}

impl CppStandard {
    /// The `-std=` flag, if any.
    pub fn flag(self) -> Option<&'static str> {
        match self {
            CppStandard::Default => None,
            CppStandard::Cpp0x => Some("-std=c++0x"),
            CppStandard::Cpp11 => Some("-std=c++11"),
            CppStandard::Cpp14 => Some("-std=c++14"),
            CppStandard::Cpp17 => Some("-std=c++17"),
            CppStandard::Cpp20 => Some("-std=c++20"),
        }
    }
}

/// Files whose presence makes a `c++` request a Codeforces one.
pub const CONTRACT_FILES: [&str; 3] = ["correct_output.txt", "grader_config", "checker.py"];

impl Runtime {
    pub const ALL: [Runtime; 10] = [
        Runtime::CmsIoi,
        Runtime::Cpp,
        Runtime::C,
        Runtime::Codeforces(CfLanguage::Cpp(CppStandard::Default)),
        Runtime::Codeforces(CfLanguage::Cpp(CppStandard::Cpp0x)),
        Runtime::Codeforces(CfLanguage::Cpp(CppStandard::Cpp11)),
        Runtime::Codeforces(CfLanguage::Cpp(CppStandard::Cpp14)),
        Runtime::Codeforces(CfLanguage::Cpp(CppStandard::Cpp17)),
        Runtime::Codeforces(CfLanguage::Cpp(CppStandard::Cpp20)),
        Runtime::Codeforces(CfLanguage::Python3),
    ];

    pub fn language(self) -> &'static str {
        use CppStandard::*;
        match self {
            Runtime::CmsIoi => "cms_ioi",
            Runtime::Cpp => "c++",
            Runtime::C => "c",
            Runtime::Codeforces(CfLanguage::Python3) => "python3",
            Runtime::Codeforces(CfLanguage::Cpp(standard)) => match standard {
                Default => "c++",
                Cpp0x => "c++0x",
                Cpp11 => "c++11",
                Cpp14 => "c++14",
                Cpp17 => "c++17",
                Cpp20 => "c++20",
            },
        }
    }

    /// The version reported, and the first one accepted.
    pub fn version(self) -> &'static str {
        self.versions()[0]
    }

    /// Versions a request may pin: our own, and the ones clients pinned on public Piston
    /// (its C++ is `10.2.0`; ours was `17` before).
    fn versions(self) -> &'static [&'static str] {
        match self {
            Runtime::CmsIoi | Runtime::Codeforces(_) => &["1.0.0"],
            Runtime::Cpp => &["10.2.0", "17"],
            Runtime::C => &["10.2.0"],
        }
    }

    /// The Piston package that provides the runtime (`runtime` in `GET /api/v2/runtimes`).
    fn package(self) -> &'static str {
        match self {
            Runtime::CmsIoi => "cms_ioi",
            Runtime::Cpp | Runtime::C => "gcc",
            Runtime::Codeforces(_) => "codeforces",
        }
    }

    pub fn aliases(self) -> &'static [&'static str] {
        use CppStandard::*;
        match self {
            Runtime::CmsIoi => &["ioi"],
            Runtime::Cpp => &["cpp", "g++"],
            Runtime::C => &["gcc"],
            Runtime::Codeforces(CfLanguage::Python3) => &["Python 3", "cf_python3"],
            Runtime::Codeforces(CfLanguage::Cpp(standard)) => match standard {
                Default => &["GNU C++", "cf_c++"],
                Cpp0x => &["GNU C++0x", "cf_c++0x"],
                Cpp11 => &["GNU C++11", "cf_c++11"],
                Cpp14 => &["C++14 (GCC 6-32)", "cf_c++14"],
                Cpp17 => &["C++17 (GCC 7-32)", "C++17 (GCC 9-64)", "cf_c++17"],
                Cpp20 => &["C++20 (GCC 11-64)", "C++20 (GCC 13-64)", "cf_c++20"],
            },
        }
    }

    fn answers_to(self, language: &str) -> bool {
        self.language() == language || self.aliases().contains(&language)
    }

    /// The runtime a request names, as Piston resolves it: the language or one of its aliases,
    /// and a version that is `*`, one of ours, or a leading part of one (`1`, `1.0`). `c++` is
    /// both plain C++ and the Codeforces package's default standard: a request for plain C++
    /// (any of its names and versions) that carries any of [`CONTRACT_FILES`]
    /// (`contract_shaped`) is a Codeforces one, so its expected output is compared and never
    /// shown to the program.
    pub fn find(language: &str, version: &str, contract_shaped: bool) -> Option<Runtime> {
        let found = Runtime::ALL.into_iter().find(|rt| {
            rt.answers_to(language) && rt.versions().iter().any(|v| version_matches(v, version))
        })?;
        // Whatever name or version selected plain C++, a request carrying the contract's files
        // is never run as a bare program next to its expected output.
        Some(match found {
            Runtime::Cpp if contract_shaped => {
                Runtime::Codeforces(CfLanguage::Cpp(CppStandard::Default))
            }
            other => other,
        })
    }

    /// The versions a request naming `language` may pin, to say so in an error.
    pub fn versions_of(language: &str) -> Vec<&'static str> {
        let mut versions: Vec<&'static str> = Runtime::ALL
            .into_iter()
            .filter(|rt| rt.answers_to(language))
            .flat_map(|rt| rt.versions().iter().copied())
            .collect();
        versions.dedup();
        versions
    }

    /// The entry of `GET /api/v2/runtimes`.
    pub fn to_json(self) -> Value {
        json!({"language": self.language(), "version": self.version(), "aliases": self.aliases(),
               "runtime": self.package()})
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

    const CF_CPP17: Runtime = Runtime::Codeforces(CfLanguage::Cpp(CppStandard::Cpp17));

    #[test]
    fn languages_and_aliases_resolve_with_wildcard_or_exact_versions() {
        assert_eq!(Runtime::find("cms_ioi", "*", false), Some(Runtime::CmsIoi));
        assert_eq!(
            Runtime::find("cms_ioi", "1.0.0", true),
            Some(Runtime::CmsIoi)
        );
        assert_eq!(Runtime::find("ioi", "1", false), Some(Runtime::CmsIoi));
        assert_eq!(Runtime::find("ioi", "1.x", false), Some(Runtime::CmsIoi));
        assert_eq!(Runtime::find("cpp", "17", false), Some(Runtime::Cpp));
        assert_eq!(Runtime::find("g++", "^17", false), Some(Runtime::Cpp));
        assert_eq!(
            Runtime::find("cf_python3", "*", true),
            Some(Runtime::Codeforces(CfLanguage::Python3))
        );
        assert_eq!(
            Runtime::find("C++17 (GCC 9-64)", "1.0.0", true),
            Some(CF_CPP17)
        );
    }

    #[test]
    fn public_pistons_cpp_version_is_accepted() {
        assert_eq!(Runtime::find("c++", "10.2.0", false), Some(Runtime::Cpp));
        assert_eq!(Runtime::find("cpp", "10", false), Some(Runtime::Cpp));
        assert_eq!(Runtime::Cpp.version(), "10.2.0");
    }

    #[test]
    fn a_cpp_request_carrying_the_codeforces_files_is_a_codeforces_request() {
        let default = Runtime::Codeforces(CfLanguage::Cpp(CppStandard::Default));
        assert_eq!(Runtime::find("c++", "*", true), Some(default));
        assert_eq!(Runtime::find("c++", "*", false), Some(Runtime::Cpp));
        assert_eq!(Runtime::find("c++", "10.2.0", true), Some(default));
        assert_eq!(Runtime::find("cpp", "*", true), Some(default));
        assert_eq!(Runtime::find("g++", "17", true), Some(default));
        // The Codeforces standards are never plain runs, whatever the files.
        assert_eq!(Runtime::find("c++17", "*", false), Some(CF_CPP17));
        assert_eq!(Runtime::find("c++17", "*", true), Some(CF_CPP17));
        assert_eq!(Runtime::find("cf_c++17", "*", false), Some(CF_CPP17));
    }

    #[test]
    fn unknown_languages_and_versions_do_not_resolve() {
        assert_eq!(Runtime::find("python", "*", true), None);
        assert_eq!(Runtime::find("cms_ioi", "2.0.0", false), None);
        assert_eq!(Runtime::find("cms_ioi", "1.0.00", false), None);
        assert_eq!(Runtime::find("c++17", "10.2.0", true), None);
        assert_eq!(
            Runtime::find("cpp", "1", false),
            None,
            "neither 10.2.0 nor 17 starts with the part `1`"
        );
        assert_eq!(Runtime::versions_of("c++"), vec!["10.2.0", "17", "1.0.0"]);
    }
}
