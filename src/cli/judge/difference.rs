//! Where an output first differs from the expected one, as white-diff sees it
//! (docs/judging.md#batch): the line, the token inside that line, and the tokens around it.
//!
//! Both files are streamed through one small buffer each and compared token by token, so the
//! judge's memory and time stay small whatever a program printed: a right answer followed by
//! 64 MiB of newlines, or one line of a million numbers, costs a pass over the bytes and no
//! copy of the file. A token is compared byte by byte however long it is; only its first
//! [`TOKEN_CHARS`] characters are kept to be shown. The rules are white-diff's own
//! ([`crate::judge::check::white_diff`]), which decides the verdict: a test checks that both
//! agree on random files.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use serde::Serialize;

use crate::judge::check::is_space;
use crate::judge::kept;

/// Tokens shown on each side of the one that differs.
const AROUND: usize = 5;
/// Characters of one shown token.
const TOKEN_CHARS: usize = 40;
/// Bytes read at a time from each file.
const CHUNK: usize = 64 << 10;

/// The first difference: its line (from 1), the token inside that line (from 1), and each
/// side's tokens around it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Difference {
    pub line: usize,
    pub token: usize,
    /// The expected line around the difference (`…` where tokens are left out); `None` when
    /// the expected output ended before this line.
    pub expected: Option<String>,
    /// The solution's line around the difference; `None` when its output ended before it.
    pub yours: Option<String>,
    /// The expected token at the difference; `None` at the end of the line or of the output.
    pub expected_token: Option<String>,
    /// The solution's token at the difference; `None` at the end of its line or output.
    pub yours_token: Option<String>,
    /// The position a checker's message named (`701st numbers differ`: 701, counted over the
    /// whole output), when the difference is the checker's rather than white-diff's; `line` and
    /// `token` are then where that token is in the solution's output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checker_token: Option<usize>,
}

/// The first difference between `expected` and `yours` under white-diff's rules; `None` when
/// they match or cannot be read. At most [`kept::KEPT_BYTES`] of each are read.
pub fn first_difference(expected: &Path, yours: &Path) -> Option<Difference> {
    let open = |p: &Path| {
        File::open(p)
            .ok()
            .map(|f| Lexer::new(f.take(kept::KEPT_BYTES)))
    };
    compare(open(expected)?, open(yours)?).ok().flatten()
}

/// The difference a checker's message names by position, as testlib's comparers write it
/// (`701st numbers differ - expected: '5', found: '3'`; words, tokens, integers and doubles
/// alike): each output's token at that position, counted over the whole output, with the tokens
/// around it on its line. `None` when the message names no such position or a file cannot be
/// read.
pub fn at_checker_position(message: &str, expected: &Path, yours: &Path) -> Option<Difference> {
    let n = named_position(message)?;
    let at = |p: &Path| {
        let file = File::open(p).ok()?;
        nth_token(Lexer::new(file.take(kept::KEPT_BYTES)), n).ok()
    };
    let (expected_at, expected) = at(expected)?;
    let (yours_at, yours) = at(yours)?;
    // The same token on both sides: the checker compared another reading of the outputs (or
    // another answer); white-diff's difference says more.
    if expected.token.is_some() && expected.token == yours.token {
        return None;
    }
    Some(Difference {
        line: yours_at.line,
        token: yours_at.token + 1,
        expected: expected.line(&expected_at),
        yours: yours.line(&yours_at),
        expected_token: expected.token,
        yours_token: yours.token,
        checker_token: Some(n),
    })
}

/// `701` of a message holding `701st numbers differ` (or words, tokens, integers, doubles),
/// before anything it quotes: testlib quotes the tokens it compared, which the program wrote,
/// so a program printing "5th numbers differ" never names a position itself.
fn named_position(message: &str) -> Option<usize> {
    let own = message.split(['\'', '"']).next().unwrap_or_default();
    let words: Vec<&str> = own.split_whitespace().collect();
    words.windows(3).find_map(|w| {
        let kinds = ["numbers", "words", "tokens", "integers", "doubles"];
        if !kinds.contains(&w[1]) || !w[2].starts_with("differ") {
            return None;
        }
        let digits = w[0].trim_end_matches(|c: char| c.is_ascii_alphabetic());
        let suffix = &w[0][digits.len()..];
        match ["st", "nd", "rd", "th"].contains(&suffix) {
            true => digits.parse().ok().filter(|n| *n > 0),
            false => None,
        }
    })
}

/// Where the `n`th token of a file is (from 1, counted over the whole file) and that token
/// with what follows it on its line; a side without a token when the file has fewer.
fn nth_token<R: Read>(mut lexer: Lexer<R>, n: usize) -> io::Result<(Position, Side)> {
    let mut at = Position {
        line: 1,
        token: 0,
        before: VecDeque::new(),
    };
    let mut count = 0;
    loop {
        match lexer.next_item()? {
            Item::Newline => at.next_line(),
            Item::End => {
                let side = Side::read(&mut lexer, Item::End, None, &at)?;
                return Ok((at, side));
            }
            Item::Token => {
                let token = lexer.token()?;
                count += 1;
                if count == n {
                    let side = Side::read(&mut lexer, Item::Token, Some(token), &at)?;
                    return Ok((at, side));
                }
                at.shared(token.text());
            }
        }
    }
}

/// What comes next in a file once blanks are skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Item {
    /// A token starts (not consumed).
    Token,
    /// A line ended (consumed).
    Newline,
    /// The file ended.
    End,
}

/// A file read a byte at a time through a buffer of its own.
struct Lexer<R> {
    input: R,
    buffer: Box<[u8]>,
    at: usize,
    filled: usize,
}

impl<R: Read> Lexer<R> {
    fn new(input: R) -> Lexer<R> {
        Lexer {
            input,
            buffer: vec![0; CHUNK].into_boxed_slice(),
            at: 0,
            filled: 0,
        }
    }

    fn peek(&mut self) -> io::Result<Option<u8>> {
        if self.at == self.filled {
            self.filled = loop {
                match self.input.read(&mut self.buffer) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    read => break read?,
                }
            };
            self.at = 0;
            if self.filled == 0 {
                return Ok(None);
            }
        }
        Ok(Some(self.buffer[self.at]))
    }

    /// Skips blanks inside the line and says what follows.
    fn next_item(&mut self) -> io::Result<Item> {
        loop {
            match self.peek()? {
                None => return Ok(Item::End),
                Some(b'\n') => {
                    self.at += 1;
                    return Ok(Item::Newline);
                }
                Some(c) if is_space(&c) => self.at += 1,
                Some(_) => return Ok(Item::Token),
            }
        }
    }

    fn is_token_byte(&mut self) -> io::Result<Option<u8>> {
        Ok(self.peek()?.filter(|c| *c != b'\n' && !is_space(c)))
    }

    /// Consumes the token that starts here and keeps its head to be shown.
    fn token(&mut self) -> io::Result<Shown> {
        let mut shown = Shown::default();
        self.finish_token(&mut shown)?;
        Ok(shown)
    }

    /// Consumes the rest of the token this is in, adding it to `shown`.
    fn finish_token(&mut self, shown: &mut Shown) -> io::Result<()> {
        while let Some(c) = self.is_token_byte()? {
            shown.push(c);
            self.at += 1;
        }
        Ok(())
    }

    /// The tokens that follow on this line, at most `n` kept, and whether more followed.
    fn rest_of_line(&mut self, n: usize) -> io::Result<(Vec<String>, bool)> {
        let mut tokens = Vec::new();
        while self.next_item()? == Item::Token {
            let token = self.token()?;
            if tokens.len() == n {
                return Ok((tokens, true));
            }
            tokens.push(token.text());
        }
        Ok((tokens, false))
    }
}

/// The head of a token, as shown: its first bytes and whether there were more.
#[derive(Default)]
struct Shown {
    head: Vec<u8>,
    cut: bool,
}

impl Shown {
    fn push(&mut self, c: u8) {
        // Four bytes a character at most: enough for TOKEN_CHARS characters of UTF-8.
        match self.head.len() < TOKEN_CHARS * 4 {
            true => self.head.push(c),
            false => self.cut = true,
        }
    }

    fn text(&self) -> String {
        let text = String::from_utf8_lossy(&self.head);
        match self.cut || text.chars().count() > TOKEN_CHARS {
            true => format!(
                "{}…",
                text.chars().take(TOKEN_CHARS - 1).collect::<String>()
            ),
            false => text.into_owned(),
        }
    }
}

/// Where the comparison stands: the line, the tokens of it both sides share so far (the last
/// [`AROUND`] kept).
struct Position {
    line: usize,
    token: usize,
    before: VecDeque<String>,
}

impl Position {
    fn next_line(&mut self) {
        self.line += 1;
        self.token = 0;
        self.before.clear();
    }

    fn shared(&mut self, token: String) {
        self.token += 1;
        if self.before.len() == AROUND {
            self.before.pop_front();
        }
        self.before.push_back(token);
    }
}

/// One side at the difference: its token there (if any) and what follows it on the line.
struct Side {
    token: Option<String>,
    after: Vec<String>,
    more: bool,
    /// The side's output ended before this line had a token.
    absent: bool,
}

impl Side {
    fn read<R: Read>(
        lexer: &mut Lexer<R>,
        item: Item,
        token: Option<Shown>,
        at: &Position,
    ) -> io::Result<Side> {
        let (after, more) = match item {
            Item::Token => lexer.rest_of_line(AROUND)?,
            Item::Newline | Item::End => (Vec::new(), false),
        };
        Ok(Side {
            token: token.map(|t| t.text()),
            after,
            more,
            absent: item == Item::End && at.token == 0,
        })
    }

    fn line(&self, at: &Position) -> Option<String> {
        if self.absent {
            return None;
        }
        let mut parts: Vec<&str> = Vec::new();
        if at.token > at.before.len() {
            parts.push("…");
        }
        parts.extend(at.before.iter().map(String::as_str));
        parts.extend(self.token.as_deref());
        parts.extend(self.after.iter().map(String::as_str));
        if self.more {
            parts.push("…");
        }
        Some(parts.join(" "))
    }
}

fn compare<A: Read, B: Read>(mut a: Lexer<A>, mut b: Lexer<B>) -> io::Result<Option<Difference>> {
    let mut at = Position {
        line: 1,
        token: 0,
        before: VecDeque::new(),
    };
    loop {
        let (x, y) = (a.next_item()?, b.next_item()?);
        let (expected, yours) = match (x, y) {
            (Item::End, Item::End) => return Ok(None),
            (Item::Newline, Item::Newline) => {
                at.next_line();
                continue;
            }
            (Item::Token, Item::Token) => {
                let (mut ta, mut tb) = (Shown::default(), Shown::default());
                if same_token(&mut a, &mut b, &mut ta, &mut tb)? {
                    at.shared(ta.text());
                    continue;
                }
                // The rest of both tokens, to show them.
                a.finish_token(&mut ta)?;
                b.finish_token(&mut tb)?;
                (
                    Side::read(&mut a, x, Some(ta), &at)?,
                    Side::read(&mut b, y, Some(tb), &at)?,
                )
            }
            // One output ended: the other matches if nothing but empty lines follow (they are
            // ignored at the end), else it differs at its next token.
            (Item::End, Item::Newline) => return only_blank_lines(&mut at, b, true),
            (Item::Newline, Item::End) => return only_blank_lines(&mut at, a, false),
            (_, Item::Token) => {
                let token = b.token()?;
                (
                    Side::read(&mut a, x, None, &at)?,
                    Side::read(&mut b, y, Some(token), &at)?,
                )
            }
            (Item::Token, _) => {
                let token = a.token()?;
                (
                    Side::read(&mut a, x, Some(token), &at)?,
                    Side::read(&mut b, y, None, &at)?,
                )
            }
        };
        return Ok(Some(difference(&at, expected, yours)));
    }
}

/// Compares the tokens that start in `a` and `b` byte by byte, keeping their heads.
fn same_token<A: Read, B: Read>(
    a: &mut Lexer<A>,
    b: &mut Lexer<B>,
    ta: &mut Shown,
    tb: &mut Shown,
) -> io::Result<bool> {
    loop {
        let (x, y) = (a.is_token_byte()?, b.is_token_byte()?);
        if x != y {
            return Ok(false);
        }
        let Some(c) = x else {
            return Ok(true);
        };
        ta.push(c);
        tb.push(c);
        a.at += 1;
        b.at += 1;
    }
}

/// `longer` goes on after the other output ended at a line's end: equal when only empty lines
/// follow, else the difference is its next token (`expected_ended`: the expected output is the
/// one that ended).
fn only_blank_lines<R: Read>(
    at: &mut Position,
    mut longer: Lexer<R>,
    expected_ended: bool,
) -> io::Result<Option<Difference>> {
    at.next_line();
    loop {
        match longer.next_item()? {
            Item::End => return Ok(None),
            Item::Newline => at.next_line(),
            Item::Token => break,
        }
    }
    let token = longer.token()?;
    let present = Side::read(&mut longer, Item::Token, Some(token), at)?;
    let ended = Side {
        token: None,
        after: Vec::new(),
        more: false,
        absent: true,
    };
    Ok(Some(match expected_ended {
        true => difference(at, ended, present),
        false => difference(at, present, ended),
    }))
}

fn difference(at: &Position, expected: Side, yours: Side) -> Difference {
    Difference {
        line: at.line,
        token: at.token + 1,
        expected: expected.line(at),
        yours: yours.line(at),
        expected_token: expected.token.clone(),
        yours_token: yours.token.clone(),
        checker_token: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::check::white_diff;

    fn diff(expected: &str, yours: &str) -> Option<Difference> {
        compare(
            Lexer::new(expected.as_bytes()),
            Lexer::new(yours.as_bytes()),
        )
        .unwrap()
    }

    #[test]
    fn a_difference_names_its_line_its_token_and_the_tokens_around_it() {
        let expected: Vec<String> = (1..=1000).map(|n| n.to_string()).collect();
        let mut yours = expected.clone();
        yours[700] = "3".to_string();
        let d = diff(
            &format!("{}\n", expected.join(" ")),
            &format!("{}\n", yours.join(" ")),
        )
        .unwrap();
        assert_eq!((d.line, d.token), (1, 701));
        assert_eq!(d.expected_token.as_deref(), Some("701"));
        assert_eq!(d.yours_token.as_deref(), Some("3"));
        assert_eq!(
            d.expected.as_deref(),
            Some("… 696 697 698 699 700 701 702 703 704 705 706 …")
        );
        assert_eq!(
            d.yours.as_deref(),
            Some("… 696 697 698 699 700 3 702 703 704 705 706 …")
        );
    }

    /// A checker's "701st numbers differ" is found over the whole output, whatever its lines:
    /// the token there on each side and the tokens around it on its line.
    #[test]
    fn a_position_a_checker_names_is_shown_with_its_line_and_neighbours() {
        assert_eq!(
            named_position("wrong answer 701st numbers differ - expected: '5', found: '3'"),
            Some(701)
        );
        assert_eq!(named_position("2nd words differ - expected"), Some(2));
        assert_eq!(named_position("1st lines differ"), None, "not a token");
        assert_eq!(named_position("wrong answer 3 numbers differ"), None);
        assert_eq!(named_position("Output isn't correct"), None);
        // Words the program wrote, quoted by the checker, name nothing.
        assert_eq!(
            named_position(
                "wrong answer 1st lines differ - expected: '1', found: 'x 5th numbers differ'"
            ),
            None
        );
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: String| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        // 10 numbers a line: the 23rd is the third of line 3.
        let numbers = |wrong: bool| -> String {
            (1..=40)
                .map(|k| match (wrong && k == 23, k % 10) {
                    (true, _) => "99\n".to_string(),
                    (false, 0) => format!("{k}\n"),
                    _ => format!("{k} "),
                })
                .collect::<String>()
                .replace("99\n", "99 ")
        };
        let expected = write("expected", numbers(false));
        let yours = write("yours", numbers(true));
        let message = "wrong answer 23rd numbers differ - expected: '23', found: '99'";
        let d = at_checker_position(message, &expected, &yours).unwrap();
        assert_eq!((d.line, d.token, d.checker_token), (3, 3, Some(23)));
        assert_eq!(d.expected_token.as_deref(), Some("23"));
        assert_eq!(d.yours_token.as_deref(), Some("99"));
        assert_eq!(d.yours.as_deref(), Some("21 22 99 24 25 26 27 28 …"));
        // Beyond the end of the solution's output.
        let short = write("short", "1 2\n".to_string());
        let d = at_checker_position("3rd words differ", &expected, &short).unwrap();
        assert_eq!(
            (d.expected_token.as_deref(), d.yours_token),
            (Some("3"), None)
        );
        assert!(at_checker_position("Output isn't correct", &expected, &yours).is_none());
        // A position where both outputs agree is no lead.
        assert!(at_checker_position("2nd numbers differ", &expected, &yours).is_none());
    }

    #[test]
    fn short_lines_are_shown_whole_and_ends_are_named() {
        let d = diff("1\n2\n3\n", "1\n5\n3\n").unwrap();
        assert_eq!((d.line, d.token), (2, 1));
        assert_eq!(
            (d.expected.as_deref(), d.yours.as_deref()),
            (Some("2"), Some("5"))
        );
        // The solution's line ended early.
        let d = diff("1 2 3\n", "1 2\n").unwrap();
        assert_eq!((d.line, d.token), (1, 3));
        assert_eq!(
            (d.expected_token.as_deref(), d.yours_token),
            (Some("3"), None)
        );
        assert_eq!(d.yours.as_deref(), Some("1 2"));
        // The solution's output ended before the line.
        let d = diff("1\n2\n", "1\n").unwrap();
        assert_eq!((d.line, d.token, d.yours), (2, 1, None));
        assert_eq!(d.expected.as_deref(), Some("2"));
        // The expected output ended; empty lines in between are counted.
        let d = diff("1\n", "1\n\n\n7 8\n").unwrap();
        assert_eq!((d.line, d.token, d.expected), (4, 1, None));
        assert_eq!(d.yours.as_deref(), Some("7 8"));
        // A token split over two lines.
        let d = diff("1 2\n", "1\n2\n").unwrap();
        assert_eq!((d.line, d.token, d.yours_token), (1, 2, None));
    }

    #[test]
    fn white_space_and_trailing_empty_lines_are_not_differences() {
        assert_eq!(diff("1 2\n3\n\n", "1  2\r\n3"), None);
        assert_eq!(diff("1\n", "1\n\n\n \n\t\n"), None);
        assert_eq!(diff("", "\n\n"), None);
    }

    #[test]
    fn a_long_token_is_compared_whole_and_shown_cut() {
        let long = "x".repeat(100_000);
        let d = diff(&format!("{long}a\n"), &format!("{long}b\n")).unwrap();
        let shown = d.yours_token.unwrap();
        assert_eq!(shown.chars().count(), TOKEN_CHARS);
        assert!(shown.ends_with('…'));
        assert_eq!(diff(&format!("{long}\n"), &format!("{long}\n")), None);
    }

    /// The comparison agrees with white-diff, which gives the verdict, on random files.
    #[test]
    fn it_agrees_with_white_diff_on_random_files() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        let pieces = [
            "1", "2", "12", " ", "  ", "\t", "\r", "\n", "\n", "\x0b", "\x0c",
        ];
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut random = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        let mut differences = 0;
        for _ in 0..3000 {
            let mut file = || -> String {
                (0..random(9))
                    .map(|_| pieces[random(pieces.len())])
                    .collect()
            };
            let (x, y) = (file(), file());
            // Half the time the second file is a near copy of the first.
            let y = match random(2) {
                0 => x.replace('\t', " ").replace("\n\n", "\n \n"),
                _ => y,
            };
            std::fs::write(&a, &x).unwrap();
            std::fs::write(&b, &y).unwrap();
            let found = first_difference(&a, &b);
            differences += usize::from(found.is_some());
            assert_eq!(
                found.is_none(),
                white_diff(&a, &b).unwrap(),
                "{x:?} against {y:?}: {found:?}"
            );
        }
        assert!(differences > 100 && differences < 2900, "{differences}");
    }

    /// A right answer followed by the kept output's worth of newlines: one pass, a buffer.
    #[test]
    fn many_empty_lines_after_a_right_answer_are_no_difference() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, "42\n").unwrap();
        let mut yours = b"42\n".to_vec();
        yours.resize(8 << 20, b'\n');
        std::fs::write(&b, &yours).unwrap();
        assert_eq!(first_difference(&a, &b), None);
        yours.extend_from_slice(b"7\n");
        std::fs::write(&b, &yours).unwrap();
        let d = first_difference(&a, &b).unwrap();
        assert_eq!((d.line, d.token, d.expected), ((8 << 20) - 1, 1, None));
    }
}
