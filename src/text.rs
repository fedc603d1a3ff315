//! Small text helpers shared across modules.

mod logged;
pub(crate) mod posted;
pub(crate) mod urls;

pub(crate) use logged::{logged, one_line_message};

/// A commit id as people name it: its first 7 characters.
pub(crate) fn short_sha(sha: &str) -> &str {
    sha.get(..7).unwrap_or(sha)
}

/// The longest prefix of `text` that is at most `max_bytes` long and ends on a
/// character boundary (so cutting never splits a UTF-8 character).
pub(crate) fn prefix_at_char_boundary(text: &str, max_bytes: usize) -> &str {
    if text.len() <= max_bytes {
        return text;
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// One line of model text made safe inside Markdown on GitHub: no HTML (nor hidden
/// markers), no images, no `@` mentions.
pub(crate) fn escape_inline(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut previous = ' ';
    for (i, c) in text.char_indices() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '[' if previous == '!' => out.push_str("\\["),
            // A word joiner after `@` keeps the text and stops a mention (GitHub and
            // GitLab); text escaped already keeps its one joiner.
            '@' if !rest_starts_with_joiner(text, i) => out.push_str("@\u{2060}"),
            _ => out.push(c),
        }
        previous = c;
    }
    out
}

/// Whether the character after the one at byte `i` of `text` is a word joiner.
fn rest_starts_with_joiner(text: &str, i: usize) -> bool {
    text[i..].chars().nth(1) == Some('\u{2060}')
}

/// `text` as [`escape_inline`] wrote it, read back as the model wrote it (to compare a
/// posted title with a new finding's).
pub(crate) fn unescape_inline(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("!\\[", "![")
        .replace("@\u{2060}", "@")
}

/// Model-written Markdown made safe to post on GitHub: outside code, as
/// [`escape_inline`]; fenced blocks and `inline code` are kept as written (GitHub
/// renders no HTML, image or mention in them, and escaping would show).
pub(crate) fn escape_markdown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut open_fence: Option<(char, usize)> = None;
    for line in text.split_inclusive('\n') {
        let fence = fence_of(line);
        match (open_fence, fence) {
            (None, Some(found)) => {
                open_fence = Some(found);
                out.push_str(line);
            }
            (Some((c, n)), Some((c2, n2))) if c == c2 && n2 >= n => {
                open_fence = None;
                out.push_str(line);
            }
            (Some(_), _) => out.push_str(line),
            (None, None) => out.push_str(&escape_outside_code_spans(line)),
        }
    }
    out
}

/// The fence a line opens or closes (three or more `` ` `` or `~`), with its length.
fn fence_of(line: &str) -> Option<(char, usize)> {
    let trimmed = line.trim_start_matches(' ');
    let c = trimmed.chars().next().filter(|c| matches!(c, '`' | '~'))?;
    let n = trimmed.chars().take_while(|x| *x == c).count();
    (n >= 3).then_some((c, n))
}

/// `line` escaped except inside code spans (a run of backticks to the next run of as many).
fn escape_outside_code_spans(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(start) = rest.find('`') {
        let ticks = rest[start..].chars().take_while(|c| *c == '`').count();
        let after = &rest[start + ticks..];
        let fence = "`".repeat(ticks);
        let close = after.match_indices(&fence).find(|(i, _)| {
            !after[i + ticks..].starts_with('`') && (*i == 0 || !after[..*i].ends_with('`'))
        });
        out.push_str(&escape_inline(&rest[..start]));
        match close {
            Some((end, _)) => {
                out.push_str(&rest[start..start + ticks + end + ticks]);
                rest = &after[end + ticks..];
            }
            None => {
                out.push_str(&fence);
                rest = after;
            }
        }
    }
    out.push_str(&escape_inline(rest));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_splits_a_character() {
        assert_eq!(prefix_at_char_boundary("héllo", 2), "h");
        assert_eq!(prefix_at_char_boundary("héllo", 3), "hé");
        assert_eq!(prefix_at_char_boundary("abc", 10), "abc");
    }

    #[test]
    fn markdown_is_escaped_outside_code_only() {
        let text = "Ask @org/team or @alice ![x](https://evil.example/p.png) <img src=x>\n\
                    Use `Vec<u8>` and `` a`b<c> ``, not <b>.\n\
                    ```rust\nlet v: Vec<u8> = f(); // @bob\n```\n\
                    After @carol.\n";
        let escaped = escape_markdown(text);
        assert_eq!(
            escaped,
            "Ask @\u{2060}org/team or @\u{2060}alice !\\[x](https://evil.example/p.png) &lt;img src=x&gt;\n\
             Use `Vec<u8>` and `` a`b<c> ``, not &lt;b&gt;.\n\
             ```rust\nlet v: Vec<u8> = f(); // @bob\n```\n\
             After @\u{2060}carol.\n"
        );
        // A lone backtick is text, and what follows it is still escaped.
        assert_eq!(escape_markdown("a ` @x"), "a ` @\u{2060}x");
    }
}

/// The accepted name closest to `value` when it is close enough to be a slip
/// (`reac` for `react`, `modle` for `model`), else `None`.
pub(crate) fn closest<'a>(value: &str, accepted: &[&'a str]) -> Option<&'a str> {
    let value = value.trim().to_ascii_lowercase();
    accepted
        .iter()
        .map(|name| (strsim::jaro_winkler(&value, name), *name))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, name)| name)
}

/// `unknown WHAT `value`: did you mean `x`?` when one accepted name is close, else the
/// accepted names (`expected a, b or c`).
pub(crate) fn unknown_value(what: &str, value: &str, accepted: &[&str]) -> String {
    match closest(value, accepted) {
        Some(name) => format!("unknown {what} `{value}`: did you mean `{name}`?"),
        None => format!("unknown {what} `{value}` (expected {})", one_of(accepted)),
    }
}

/// `a, b or c`.
pub(crate) fn one_of(names: &[&str]) -> String {
    match names.split_last() {
        Some((last, [])) => (*last).to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

#[cfg(test)]
mod suggestion_tests {
    use super::*;

    #[test]
    fn a_slip_gets_the_closest_name_and_anything_else_the_list() {
        assert_eq!(
            closest("modle", &["provider", "model", "max_steps"]),
            Some("model")
        );
        assert_eq!(
            unknown_value("strategy", "reac", &["auto", "react", "plan", "reflect"]),
            "unknown strategy `reac`: did you mean `react`?"
        );
        assert_eq!(
            unknown_value("strategy", "zzz", &["auto", "react", "plan", "reflect"]),
            "unknown strategy `zzz` (expected auto, react, plan or reflect)"
        );
    }
}

/// `1 file`, `2 files`: a count with its noun in the right number.
pub(crate) fn count(n: usize, singular: &str, plural: &str) -> String {
    format!("{n} {}", if n == 1 { singular } else { plural })
}

#[cfg(test)]
mod count_tests {
    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(super::count(1, "file", "files"), "1 file");
        assert_eq!(super::count(0, "file", "files"), "0 files");
        assert_eq!(super::count(2, "task", "tasks"), "2 tasks");
    }
}
