//! A small, forgiving repair for the JSON argument objects that models write by hand.
//!
//! Without native tool calling a model types its tool arguments as text, and gets
//! JSON wrong in a few recurring ways. [`repair_object`] fixes exactly those in one
//! pass and leaves everything else for `serde_json` to judge:
//!
//! - single-quoted strings become double-quoted strings;
//! - a quote closes a string only when the next non-blank character could follow a
//!   string (`,` `:` `}` `]` `)` or the end), so apostrophes (`'don't'`) and stray
//!   inner quotes (`"use "x" here"`) stay inside the string and get escaped;
//! - raw control characters inside strings (a literal newline) are escaped, and a
//!   backslash that starts no valid escape (`C:\dir`) is kept as a literal backslash;
//! - a comma directly before `}` or `]` (a trailing comma) is dropped;
//! - a bare identifier where an object key is expected is quoted (`{path: "a"}`);
//! - Python's `True` / `False` / `None` become `true` / `false` / `null`;
//! - `=` outside strings becomes `:` (`path="a"`, as in keyword arguments);
//! - `//` and `/* */` comments outside strings are removed.
//!
//! Valid JSON is never rewritten: it is parsed as it is first. All the characters the
//! routine looks at are ASCII, and UTF-8 never uses ASCII bytes inside a multi-byte
//! character, so the scan works on bytes and copies everything else through untouched.

use serde_json::{Map, Value};

/// Why a text could not be turned into a JSON object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum RepairError {
    /// It is valid JSON, but not an object.
    #[error("it is {0}, not a JSON object")]
    NotAnObject(&'static str),
    /// It is not JSON, even after repair; the message is the parser's, on the original text.
    #[error("it is not valid JSON ({0})")]
    Invalid(String),
}

/// Parses `text` as a JSON object, repairing the usual hand-written mistakes first if needed.
pub(super) fn repair_object(text: &str) -> Result<Map<String, Value>, RepairError> {
    let value = match serde_json::from_str::<Value>(text) {
        Ok(value) => value,
        Err(original) => serde_json::from_str::<Value>(&repair(text))
            .map_err(|_| RepairError::Invalid(original.to_string()))?,
    };
    match value {
        Value::Object(map) => Ok(map),
        other => Err(RepairError::NotAnObject(kind_of(&other))),
    }
}

/// What kind of JSON value this is, with an article, for messages.
pub(super) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a bare string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The byte length of the bracketed value at the start of `text` (`{...}`, `[...]` or
/// `(...)`, brackets of all three kinds counted together, quoted strings skipped),
/// or `None` if `text` does not start with an opening bracket or never closes it.
pub(super) fn balanced_len(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    if !matches!(bytes.first(), Some(b'{' | b'[' | b'(')) {
        return None;
    }
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' | b'\'' => {
                i = scan_string(bytes, i).next;
                continue;
            }
            b'{' | b'[' | b'(' => depth += 1,
            b'}' | b']' | b')' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Where a quoted string ends.
struct StringSpan {
    /// Index just past the last content byte.
    content_end: usize,
    /// Index just past the closing quote (the end of the text if it never closes).
    next: usize,
}

/// Scans the string whose opening quote is at `open`.
fn scan_string(bytes: &[u8], open: usize) -> StringSpan {
    let quote = bytes[open];
    let mut i = open + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b if b == quote && closes_string(&bytes[i + 1..]) => {
                return StringSpan {
                    content_end: i,
                    next: i + 1,
                };
            }
            _ => i += 1,
        }
    }
    StringSpan {
        content_end: bytes.len(),
        next: bytes.len(),
    }
}

/// Whether a quote followed by `rest` can be a closing quote. In valid JSON every
/// closing quote passes this test, so it only changes the reading of broken input.
fn closes_string(rest: &[u8]) -> bool {
    rest.iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_none_or(|b| matches!(b, b',' | b':' | b'}' | b']' | b')'))
}

/// Rewrites `text` into what is hopefully valid JSON (see the module documentation).
fn repair(text: &str) -> String {
    let mut repairer = Repairer::new(text.as_bytes());
    repairer.run();
    // Only ASCII is inserted and whole multi-byte characters are copied, so this is
    // always valid UTF-8; the lossy conversion merely avoids an unreachable error path.
    String::from_utf8_lossy(&repairer.out).into_owned()
}

/// State of one repair pass.
struct Repairer<'a> {
    bytes: &'a [u8],
    out: Vec<u8>,
    /// Open brackets, innermost last.
    open: Vec<u8>,
    /// Whether the next token is an object key.
    expect_key: bool,
    /// A comma seen but not yet written: dropped if a closing bracket follows.
    pending_comma: bool,
}

impl<'a> Repairer<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Repairer {
            bytes,
            out: Vec::with_capacity(bytes.len() + 16),
            open: Vec::new(),
            expect_key: false,
            pending_comma: false,
        }
    }

    fn run(&mut self) {
        let mut i = 0;
        while i < self.bytes.len() {
            i = self.step(i);
        }
    }

    /// Handles the token at `i` and returns where the next one starts.
    fn step(&mut self, i: usize) -> usize {
        let byte = self.bytes[i];
        match byte {
            b'"' | b'\'' => {
                self.flush_comma();
                let span = scan_string(self.bytes, i);
                write_string(&mut self.out, &self.bytes[i + 1..span.content_end]);
                self.expect_key = false;
                return span.next;
            }
            b'{' | b'[' => {
                self.flush_comma();
                self.open.push(byte);
                self.expect_key = byte == b'{';
                self.out.push(byte);
            }
            b'}' | b']' => {
                self.pending_comma = false;
                self.open.pop();
                self.expect_key = false;
                self.out.push(byte);
            }
            b',' => {
                self.pending_comma = true;
                self.expect_key = self.open.last() == Some(&b'{');
            }
            b':' | b'=' => {
                self.flush_comma();
                self.expect_key = false;
                self.out.push(b':');
            }
            b'/' if self.bytes.get(i + 1) == Some(&b'/') => return self.skip_line_comment(i),
            b'/' if self.bytes.get(i + 1) == Some(&b'*') => return self.skip_block_comment(i),
            b if b.is_ascii_alphabetic() || b == b'_' || b == b'$' => return self.word(i),
            b if b.is_ascii_whitespace() => self.out.push(b),
            _ => {
                self.flush_comma();
                self.out.push(byte);
            }
        }
        i + 1
    }

    fn flush_comma(&mut self) {
        if self.pending_comma {
            self.out.push(b',');
            self.pending_comma = false;
        }
    }

    /// A bare word: a key to quote, a Python literal to translate, or anything else to keep.
    fn word(&mut self, start: usize) -> usize {
        let len = self.bytes[start..]
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'-'))
            .count();
        let word = &self.bytes[start..start + len];
        self.flush_comma();
        if self.expect_key {
            self.out.push(b'"');
            self.out.extend_from_slice(word);
            self.out.push(b'"');
            self.expect_key = false;
        } else {
            let literal: &[u8] = match word {
                b"True" => b"true",
                b"False" => b"false",
                b"None" => b"null",
                other => other,
            };
            self.out.extend_from_slice(literal);
        }
        start + len
    }

    fn skip_line_comment(&self, start: usize) -> usize {
        self.bytes[start..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(self.bytes.len(), |offset| start + offset)
    }

    fn skip_block_comment(&self, start: usize) -> usize {
        self.bytes[start + 2..]
            .windows(2)
            .position(|pair| pair == b"*/")
            .map_or(self.bytes.len(), |offset| start + 2 + offset + 2)
    }
}

/// Writes string content (without its quotes) as a double-quoted JSON string.
fn write_string(out: &mut Vec<u8>, content: &[u8]) {
    out.push(b'"');
    let mut i = 0;
    while i < content.len() {
        let byte = content[i];
        match byte {
            b'\\' => {
                match content.get(i + 1) {
                    Some(b'\'') => out.push(b'\''),
                    Some(
                        &next @ (b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' | b'u'),
                    ) => {
                        out.extend_from_slice(&[b'\\', next]);
                    }
                    // Not an escape JSON knows: the backslash was meant literally.
                    Some(_) | None => {
                        out.extend_from_slice(b"\\\\");
                        i += 1;
                        continue;
                    }
                }
                i += 2;
                continue;
            }
            b'"' => out.extend_from_slice(b"\\\""),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b if b < 0x20 => out.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
            b => out.push(b),
        }
        i += 1;
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn repaired(text: &str) -> Value {
        Value::Object(repair_object(text).unwrap_or_else(|e| panic!("{text}: {e}")))
    }

    #[test]
    fn valid_json_is_parsed_as_it_is() {
        assert_eq!(
            repaired(r#"{"path": "it's \"quoted\"", "n": 3}"#),
            json!({"path": "it's \"quoted\"", "n": 3})
        );
    }

    #[test]
    fn single_quotes_become_double_quotes() {
        assert_eq!(
            repaired("{'path': 'src/main.rs', 'start_line': 10}"),
            json!({"path": "src/main.rs", "start_line": 10})
        );
    }

    #[test]
    fn apostrophes_inside_single_quoted_strings_survive() {
        assert_eq!(
            repaired("{'query': 'don't panic', 'note': 'rock 'n' roll'}"),
            json!({"query": "don't panic", "note": "rock 'n' roll"})
        );
        assert_eq!(
            repaired(r"{'query': 'it\'s here'}"),
            json!({"query": "it's here"})
        );
    }

    #[test]
    fn double_quotes_inside_single_quoted_strings_are_escaped() {
        assert_eq!(
            repaired(r#"{'pattern': 'say "hi"'}"#),
            json!({"pattern": "say \"hi\""})
        );
    }

    #[test]
    fn stray_inner_double_quotes_are_escaped() {
        assert_eq!(
            repaired(r#"{"query": "use "unwrap" here"}"#),
            json!({"query": "use \"unwrap\" here"})
        );
    }

    #[test]
    fn trailing_commas_are_dropped_outside_strings_only() {
        assert_eq!(
            repaired("{\"paths\": [\"a\", \"b\",], \"x\": \"1,}\",\n}"),
            json!({"paths": ["a", "b"], "x": "1,}"})
        );
    }

    #[test]
    fn unquoted_keys_are_quoted_but_bare_values_are_not() {
        assert_eq!(
            repaired("{path: 'a.rs', start_line: 1, whole: True, limit: None}"),
            json!({"path": "a.rs", "start_line": 1, "whole": true, "limit": null})
        );
        assert!(matches!(
            repair_object("{path: src/main.rs}"),
            Err(RepairError::Invalid(_))
        ));
    }

    #[test]
    fn keyword_arguments_become_pairs() {
        assert_eq!(
            repaired(r#"{path="a.rs", start_line=3}"#),
            json!({"path": "a.rs", "start_line": 3})
        );
    }

    #[test]
    fn raw_newlines_and_stray_backslashes_in_strings_are_escaped() {
        assert_eq!(
            repaired("{'code': 'fn a() {\n\tb()\n}', 'dir': 'C:\\dir'}"),
            json!({"code": "fn a() {\n\tb()\n}", "dir": "C:\\dir"})
        );
    }

    #[test]
    fn comments_are_removed() {
        assert_eq!(
            repaired("{\n  // the file\n  \"path\": \"a\", /* why */ \"n\": 1\n}"),
            json!({"path": "a", "n": 1})
        );
    }

    #[test]
    fn non_ascii_text_is_kept() {
        assert_eq!(
            repaired("{'query': 'café “naïve” 日本',}"),
            json!({"query": "café “naïve” 日本"})
        );
    }

    #[test]
    fn non_objects_are_refused_with_their_kind() {
        assert_eq!(
            repair_object("\"src/main.rs\""),
            Err(RepairError::NotAnObject("a bare string"))
        );
        assert_eq!(
            repair_object("['a', 'b',]"),
            Err(RepairError::NotAnObject("an array"))
        );
        assert!(matches!(
            repair_object("{\"path\": "),
            Err(RepairError::Invalid(_))
        ));
    }

    #[test]
    fn balanced_len_skips_brackets_inside_strings() {
        let text = r#"{"q": "a } b", "r": ['x)', 'y']} trailing"#;
        let len = balanced_len(text);
        assert_eq!(len, Some(text.len() - " trailing".len()));
        assert_eq!(balanced_len("(({}))x"), Some(6));
        assert_eq!(balanced_len("{\"open\": 1"), None);
        assert_eq!(balanced_len("no bracket"), None);
    }
}
