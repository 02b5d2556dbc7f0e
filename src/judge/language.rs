//! The languages a submission may be written in: C++ (what IOI graders are written for) and C,
//! as CMS offers them (`C++17 / g++` and `C11 / gcc`). A language decides the compiler, the
//! flags, the submission's file name and which grader sources it is linked with; it is part of
//! every compile cache key, so the same text compiled as C and as C++ never shares an entry.

use anyhow::{bail, Result};

/// A submission's language.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    /// C++17 with g++ (the default everywhere).
    #[default]
    Cpp,
    /// C11 with gcc.
    C,
}

/// Flags of a C submission compile before the output and sources (CMS's `C11 / gcc`):
/// `-static` is added by the IOI profile, [`C_LIBS`] follow the sources.
pub const C_SUBMISSION_FLAGS: &[&str] = &["-DEVAL", "-std=gnu11", "-O2", "-pipe", "-s"];
/// The same, linked statically (the IOI profile, as CMS does).
pub const IOI_C_SUBMISSION_FLAGS: &[&str] =
    &["-DEVAL", "-std=gnu11", "-O2", "-pipe", "-static", "-s"];
/// The debug profile's flags for C (as [`super::compile::DEBUG_SUBMISSION_FLAGS`]).
pub const DEBUG_C_SUBMISSION_FLAGS: &[&str] = &[
    "-DEVAL",
    "-std=gnu11",
    "-g",
    "-O1",
    "-fno-omit-frame-pointer",
    "-fsanitize=address,undefined",
    "-fno-sanitize-recover=all",
    "-pipe",
];
/// Flags of a plain C program (the server's `c` language).
pub const C_PROGRAM_FLAGS: &[&str] = &["-std=gnu11", "-O2"];
/// Libraries a C program is linked with, after its sources: gcc, unlike g++, does not link
/// the maths library by itself.
pub const C_LIBS: &[&str] = &["-lm"];

impl Language {
    /// The language of a name as datasets and requests spell it: `c`, or `cpp`/`c++` and
    /// their versioned forms (`cpp17`, `c++17`, `cpp_ioi`...). Case is ignored.
    pub fn parse(name: &str) -> Result<Language> {
        let name = name.trim().to_ascii_lowercase();
        if matches!(name.as_str(), "c" | "c11" | "c17" | "gnu11" | "c11 / gcc") {
            return Ok(Language::C);
        }
        if name.starts_with("cpp") || name.starts_with("c++") || name.starts_with("cxx") {
            return Ok(Language::Cpp);
        }
        bail!("unknown language {name:?}: use `cpp` (C++17, the default) or `c` (C11)")
    }

    /// The language of a source file by its extension (`.c` is C, anything else C++).
    pub fn of_path(path: &std::path::Path) -> Language {
        match path.extension().and_then(|e| e.to_str()) {
            Some("c") => Language::C,
            _ => Language::Cpp,
        }
    }

    /// The name shown in results and messages (`cpp`, `c`).
    pub fn as_str(self) -> &'static str {
        match self {
            Language::Cpp => "cpp",
            Language::C => "c",
        }
    }

    /// The extension of a source file, with its dot.
    pub fn extension(self) -> &'static str {
        match self {
            Language::Cpp => ".cpp",
            Language::C => ".c",
        }
    }

    /// The compiler driver.
    pub fn compiler(self) -> &'static str {
        match self {
            Language::Cpp => "g++",
            Language::C => "gcc",
        }
    }

    /// Arguments after the sources.
    pub fn libs(self) -> &'static [&'static str] {
        match self {
            Language::Cpp => &[],
            Language::C => C_LIBS,
        }
    }

    /// The grader sources a submission in this language is linked with, in order: CMS's
    /// `graders/grader.<ext>` and `graders/stub.<ext>`.
    pub fn grader_paths(self) -> [&'static str; 2] {
        match self {
            Language::Cpp => ["graders/grader.cpp", "graders/stub.cpp"],
            Language::C => ["graders/grader.c", "graders/stub.c"],
        }
    }
}

impl std::fmt::Display for Language {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_extensions_choose_the_language() {
        for name in ["c", "C", " c11 "] {
            assert_eq!(Language::parse(name).unwrap(), Language::C, "{name}");
        }
        for name in ["cpp", "c++", "C++17", "cpp_ioi", "cpp17"] {
            assert_eq!(Language::parse(name).unwrap(), Language::Cpp, "{name}");
        }
        let err = Language::parse("python").unwrap_err().to_string();
        assert!(err.contains("\"python\"") && err.contains("`c`"), "{err}");
        assert_eq!(Language::of_path("a/sol.c".as_ref()), Language::C);
        assert_eq!(Language::of_path("a/sol.cpp".as_ref()), Language::Cpp);
        assert_eq!(Language::of_path("a/sol.cc".as_ref()), Language::Cpp);
    }
}
