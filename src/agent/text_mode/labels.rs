//! Splitting a text-mode reply into its labelled sections (`Thought:`, `Action:`, ...).
//!
//! A label is one of the known words followed by a colon, in any case, optionally
//! wrapped in markdown (`**Action:**`, `**Action**:`, `### Thought:`, `- Action:`),
//! with `Action Input` also accepted as `Action input`, `Action_Input` or `ActionInput`.
//! Labels are recognised in two places:
//!
//! - at the start of a line (after blanks and markdown marks): any case, and the short
//!   form `Input:` counts as `Action Input:`;
//! - in the middle of a line, for models that forget newlines: only capitalised
//!   (`Action:`, `ACTION:`; not `action:`, which is too common in prose), never the
//!   short `Input:`, not after `Final Answer:`, whose text is free prose, and
//!   `Observation:` only after an action (elsewhere it likely cites an earlier one).
//!
//! The value of `Action Input:` and `Final Answer:` may be JSON; when it starts with a
//! bracket or a code fence, the label search resumes after that JSON, so a label-like
//! word inside a JSON string (`{"query": "Observation:"}`) is not taken for a label.
//! The first `Observation:` ends the reply: what follows was invented by the model.

use super::json_repair::balanced_len;

/// The labels of the text format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Label {
    Thought,
    Action,
    ActionInput,
    FinalAnswer,
    Observation,
}

/// One labelled section: the label and the raw text after its colon, up to the next label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Section<'a> {
    pub label: Label,
    pub value: &'a str,
}

/// A reply split into sections.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Sections<'a> {
    /// Text before the first label.
    pub preamble: &'a str,
    /// The sections in order, up to (not including) the first `Observation:`.
    pub sections: Vec<Section<'a>>,
    /// Whether the reply went on with an `Observation:` of its own (ignored).
    pub invented_observation: bool,
}

/// How the words of a label are spelled, lower case; parts may be joined by blanks or `_`.
const SPELLINGS: &[(Label, &[&str])] = &[
    (Label::Thought, &["thought"]),
    (Label::Thought, &["thoughts"]),
    (Label::ActionInput, &["action", "input"]),
    (Label::Action, &["action"]),
    (Label::ActionInput, &["input"]),
    (Label::FinalAnswer, &["final", "answer"]),
    (Label::Observation, &["observation"]),
];

/// Markdown marks and blanks that may stand before a label on its line.
const LABEL_PREFIX: &[u8] = b" \t*_#>-";

/// A label found in the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct LabelMatch {
    label: Label,
    /// Where the label (with its markdown prefix) starts: the previous section ends here.
    start: usize,
    /// Where its value starts, just after the colon (and any closing markdown).
    value_start: usize,
}

/// Splits `text` (with `\n` line endings) into its sections.
pub(super) fn split_sections(text: &str) -> Sections<'_> {
    let mut sections = Vec::new();
    let mut preamble = text;
    let mut current: Option<(Label, usize)> = None;
    let mut after_final_answer = false;
    let mut invented_observation = false;
    loop {
        let search_from = match current {
            Some((Label::ActionInput | Label::FinalAnswer, value_start)) => {
                structured_end(text, value_start).unwrap_or(value_start)
            }
            Some((_, value_start)) => value_start,
            None => 0,
        };
        let rules = MidLineRules {
            after_final_answer,
            after_action: matches!(current, Some((Label::Action | Label::ActionInput, _))),
        };
        let next = find_label(text, search_from, rules);
        let end = next.map_or(text.len(), |found| found.start);
        match current {
            Some((label, value_start)) => sections.push(Section {
                label,
                value: &text[value_start..end],
            }),
            None => preamble = &text[..end],
        }
        let Some(found) = next else { break };
        if found.label == Label::Observation {
            invented_observation = true;
            break;
        }
        after_final_answer |= found.label == Label::FinalAnswer;
        current = Some((found.label, found.value_start));
    }
    Sections {
        preamble,
        sections,
        invented_observation,
    }
}

/// Where a JSON value or code fence at the start of `text[from..]` ends, if it starts with one.
fn structured_end(text: &str, from: usize) -> Option<usize> {
    let rest = &text[from..];
    let start = from + (rest.len() - rest.trim_start().len());
    let value = &text[start..];
    if let Some(after_fence) = value.strip_prefix("```") {
        let closing = after_fence.find("```")?;
        return Some(start + 3 + closing + 3);
    }
    let (skip, value) = match value.strip_prefix('`') {
        Some(inner) => (1, inner),
        None => (0, value),
    };
    match value.as_bytes().first() {
        Some(b'{' | b'[') => balanced_len(value).map(|len| start + skip + len),
        _ => None,
    }
}

/// What decides whether a capitalised label in the middle of a line counts.
#[derive(Debug, Clone, Copy)]
struct MidLineRules {
    /// A `Final Answer:` came before: its text is free prose, so no.
    after_final_answer: bool,
    /// The current section is an action: a mid-line `Observation:` counts only here, as
    /// elsewhere it more likely refers to an earlier observation ("the Observation: shows").
    after_action: bool,
}

/// The first acceptable label at or after `from`.
fn find_label(text: &str, from: usize, rules: MidLineRules) -> Option<LabelMatch> {
    let bytes = text.as_bytes();
    (from..bytes.len())
        .filter(|&i| {
            bytes[i].is_ascii_alphabetic() && (i == 0 || !bytes[i - 1].is_ascii_alphanumeric())
        })
        .find_map(|i| label_at(text, from, i, rules))
}

/// The label whose first word starts at `word_start`, if there is one and it is acceptable
/// there; its markdown prefix reaches back no further than `from`.
fn label_at(text: &str, from: usize, word_start: usize, rules: MidLineRules) -> Option<LabelMatch> {
    let bytes = text.as_bytes();
    let (label, short_input, value_start) = SPELLINGS.iter().find_map(|(label, parts)| {
        let value_start = match_spelling(bytes, word_start, parts)?;
        Some((*label, *parts == ["input"].as_slice(), value_start))
    })?;
    let prefix_start = word_start
        - bytes[..word_start]
            .iter()
            .rev()
            .take_while(|b| LABEL_PREFIX.contains(b))
            .count();
    let at_line_start = prefix_start == 0 || bytes[prefix_start - 1] == b'\n';
    // The prefix may reach into the closing markdown of the previous label (`Action:** Thought:`).
    let start = prefix_start.max(from);
    let capitalised = bytes[word_start].is_ascii_uppercase();
    let mid_line_ok = capitalised
        && !short_input
        && !rules.after_final_answer
        && (label != Label::Observation || rules.after_action);
    let acceptable = at_line_start || mid_line_ok;
    acceptable.then_some(LabelMatch {
        label,
        start,
        value_start,
    })
}

/// Matches the spelling `parts` at `at`, then the colon; returns where the value starts.
fn match_spelling(bytes: &[u8], at: usize, parts: &[&str]) -> Option<usize> {
    let mut i = at;
    for (index, part) in parts.iter().enumerate() {
        if index > 0 {
            i += count_while(&bytes[i..], |b| matches!(b, b' ' | b'\t' | b'_'));
        }
        let word = bytes.get(i..i + part.len())?;
        if !word.eq_ignore_ascii_case(part.as_bytes()) {
            return None;
        }
        i += part.len();
    }
    if bytes.get(i).is_some_and(|b| b.is_ascii_alphanumeric()) {
        return None;
    }
    i += count_while(&bytes[i..], |b| matches!(b, b' ' | b'\t' | b'*' | b'_'));
    if bytes.get(i) != Some(&b':') {
        return None;
    }
    i += 1;
    // Closing bold right after the colon, as in `**Action:**`.
    i += count_while(&bytes[i..], |b| matches!(b, b'*' | b'_'));
    Some(i)
}

fn count_while(bytes: &[u8], keep: impl Fn(u8) -> bool) -> usize {
    bytes.iter().take_while(|&&b| keep(b)).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(text: &str) -> Vec<(Label, &str)> {
        split_sections(text)
            .sections
            .iter()
            .map(|s| (s.label, s.value.trim()))
            .collect()
    }

    #[test]
    fn finds_labels_at_line_starts_in_any_case_and_markdown() {
        let text = "intro\n**Thought:** think\n## action: read_file\n- **Action input**: {}\n";
        let split = split_sections(text);
        assert_eq!(split.preamble, "intro\n");
        assert_eq!(
            labels(text),
            vec![
                (Label::Thought, "think"),
                (Label::Action, "read_file"),
                (Label::ActionInput, "{}"),
            ]
        );
    }

    #[test]
    fn mid_line_labels_must_be_capitalised() {
        assert_eq!(
            labels("Thought: take action: now Action: search Input: x"),
            vec![
                (Label::Thought, "take action: now"),
                (Label::Action, "search Input: x"),
            ]
        );
    }

    #[test]
    fn json_values_hide_label_like_words() {
        let text = "Action: search\nAction Input: {\"query\": \"Observation: x\nFinal Answer: y\"}\nObservation: made up\nThought: more";
        assert_eq!(
            labels(text),
            vec![
                (Label::Action, "search"),
                (
                    Label::ActionInput,
                    "{\"query\": \"Observation: x\nFinal Answer: y\"}"
                ),
            ]
        );
    }

    #[test]
    fn prose_after_final_answer_only_breaks_at_line_starts() {
        assert_eq!(
            labels("Final Answer: the Action: field is fine\nAction: search"),
            vec![
                (Label::FinalAnswer, "the Action: field is fine"),
                (Label::Action, "search"),
            ]
        );
    }

    #[test]
    fn mid_line_observation_ends_the_reply_only_after_an_action() {
        let text = "Thought: the Observation: was empty Action: list_files Observation: a";
        assert!(split_sections(text).invented_observation);
        assert_eq!(
            labels(text),
            vec![
                (Label::Thought, "the Observation: was empty"),
                (Label::Action, "list_files"),
            ]
        );
    }

    #[test]
    fn words_that_merely_start_like_labels_are_not_labels() {
        assert_eq!(
            labels("Actions: many\nInputs: none\nThoughtful: yes"),
            vec![]
        );
    }
}
