//! The one place that decides what a name from the input may be, when it becomes part of a path
//! (docs/data.md#names): a test name, a grader file's path, a problem id in a source or report
//! file name, a TPS testset. Every loader checks what it reads into these types, and every
//! writer that joins input to a folder takes them, so no name, id or archive entry reaches
//! outside the folder it belongs to, and none forges a log line.
//!
//! Hand-written: the rule is ours (a component grammar, not a URL or a shell word), and a
//! crate that cleans paths would change a name instead of refusing it.

use std::fmt;
use std::path::Path;

use thiserror::Error;

/// Longest name of one component, in bytes (Linux's `NAME_MAX`).
pub const MAX_NAME_BYTES: usize = 255;
/// Longest relative path, in bytes.
pub const MAX_PATH_BYTES: usize = 1024;

/// Why a name was refused; the message quotes the name (escaped) and the rule it breaks.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum NameError {
    #[error("a name must not be empty")]
    Empty,
    #[error("{0:?} is longer than {1} bytes")]
    TooLong(String, usize),
    #[error("{0:?} is `.` or `..`, which name no file of its own")]
    Dots(String),
    #[error("{0:?} holds a `/`: a name is one component of a path")]
    Slash(String),
    #[error("{0:?} holds a control character (a newline, a tab, NUL, ...)")]
    Control(String),
    #[error("{0:?} is absolute: a path must be relative to its folder")]
    Absolute(String),
    #[error("{0:?} has an empty component (`//` or a trailing `/`)")]
    EmptyComponent(String),
}

/// One component of a path: 1 to 255 bytes, not `.` or `..`, no `/`, no control character.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SafeName(String);

impl SafeName {
    /// Checks `name` against the grammar.
    pub fn parse(name: &str) -> Result<SafeName, NameError> {
        check_component(name, name)?;
        Ok(SafeName(name.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

fn check_component(component: &str, whole: &str) -> Result<(), NameError> {
    if component.is_empty() {
        return Err(if whole.is_empty() {
            NameError::Empty
        } else {
            NameError::EmptyComponent(whole.to_string())
        });
    }
    if component.len() > MAX_NAME_BYTES {
        return Err(NameError::TooLong(whole.to_string(), MAX_NAME_BYTES));
    }
    if component == "." || component == ".." {
        return Err(NameError::Dots(whole.to_string()));
    }
    if component.contains('/') {
        return Err(NameError::Slash(whole.to_string()));
    }
    if component.chars().any(char::is_control) {
        return Err(NameError::Control(whole.to_string()));
    }
    Ok(())
}

/// A relative path inside a folder: [`SafeName`] components joined by `/`, at most 1024 bytes.
/// Joined to any folder, it names a file below that folder (links aside: writers create every
/// folder on the way themselves).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RelativePath(String);

impl RelativePath {
    /// Checks `path` against the grammar.
    pub fn parse(path: &str) -> Result<RelativePath, NameError> {
        if path.is_empty() {
            return Err(NameError::Empty);
        }
        if path.len() > MAX_PATH_BYTES {
            return Err(NameError::TooLong(path.to_string(), MAX_PATH_BYTES));
        }
        if path.starts_with('/') {
            return Err(NameError::Absolute(path.to_string()));
        }
        for component in path.split('/') {
            check_component(component, path)?;
        }
        Ok(RelativePath(path.to_string()))
    }

    /// `folder/name`.
    pub fn join(folder: &str, name: &SafeName) -> Result<RelativePath, NameError> {
        RelativePath::parse(&format!("{folder}/{}", name.as_str()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn as_path(&self) -> &Path {
        Path::new(&self.0)
    }

    /// The path's components.
    pub fn components(&self) -> impl Iterator<Item = &str> {
        self.0.split('/')
    }
}

impl From<SafeName> for RelativePath {
    fn from(name: SafeName) -> RelativePath {
        RelativePath(name.0)
    }
}

macro_rules! as_text {
    ($t:ty) => {
        impl std::ops::Deref for $t {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }
        impl AsRef<str> for $t {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
        impl AsRef<Path> for $t {
            fn as_ref(&self) -> &Path {
                Path::new(&self.0)
            }
        }
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
        impl PartialEq<str> for $t {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }
        impl PartialEq<&str> for $t {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }
        impl PartialEq<String> for $t {
            fn eq(&self, other: &String) -> bool {
                &self.0 == other
            }
        }
        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.0)
            }
        }
        impl std::str::FromStr for $t {
            type Err = NameError;
            fn from_str(s: &str) -> Result<Self, NameError> {
                Self::parse(s)
            }
        }
    };
}
as_text!(SafeName);
as_text!(RelativePath);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_one_harmless_component() {
        for good in ["nile", "1-03", "sample-1", "a b", "x.in", "..x", "-o", "é"] {
            assert_eq!(SafeName::parse(good).unwrap().as_str(), good);
        }
        let bad = [
            ("", NameError::Empty),
            (".", NameError::Dots(".".into())),
            ("..", NameError::Dots("..".into())),
            ("../x", NameError::Slash("../x".into())),
            ("/abs", NameError::Slash("/abs".into())),
            ("a\nb", NameError::Control("a\nb".into())),
            ("a\0b", NameError::Control("a\0b".into())),
        ];
        for (name, error) in bad {
            assert_eq!(SafeName::parse(name), Err(error), "{name:?}");
        }
        assert!(matches!(
            SafeName::parse(&"x".repeat(256)),
            Err(NameError::TooLong(..))
        ));
    }

    #[test]
    fn relative_paths_stay_below_their_folder() {
        for good in ["graders/grader.cpp", "checker/checker.cpp", "a/b/c", "x"] {
            assert_eq!(RelativePath::parse(good).unwrap().as_str(), good);
        }
        for bad in [
            "",
            "/etc/cron.d/x",
            "../../../../etc/cron.d/x",
            "graders/../../x",
            "graders/./x",
            "graders//x",
            "graders/",
            "graders/x\n",
        ] {
            assert!(RelativePath::parse(bad).is_err(), "{bad:?} was accepted");
        }
        let path = RelativePath::join("graders", &SafeName::parse("nile.cpp").unwrap()).unwrap();
        assert_eq!(path, "graders/nile.cpp");
        assert!(RelativePath::join("graders", &SafeName::parse("..x").unwrap()).is_ok());
    }

    #[test]
    fn errors_quote_the_name_escaped() {
        let message = SafeName::parse("a\nFORGED line").unwrap_err().to_string();
        assert!(!message.contains('\n'), "{message}");
        assert!(message.contains("\\n"), "{message}");
    }
}
