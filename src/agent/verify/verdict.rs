//! The verifier's answer: a verdict (keep or drop, with a one-line reason) per finding id,
//! read from its `submit_verdicts` call or, leniently, from plain text.
//!
//! Rules (what the verifier writes is untrusted and often sloppy):
//! - ids are `F1`, `F2`, ... in any case, with or without spaces, brackets or Markdown
//!   emphasis; an id outside the batch is ignored;
//! - the first verdict for an id counts, later ones are ignored;
//! - the verdict is `keep` or `drop` in any case (`keep: true` / `drop: true` in a call too);
//!   anything else is no verdict for that id;
//! - in text, one line per finding: `F1: keep - reason`, where the separators are any of
//!   `:`, `-`, `--`, `–`, `—` (or none) with any spacing, and the line may be a list item;
//! - a drop without a reason gets "no reason given"; a reason is cut to one line of at
//!   most [`MAX_REASON_CHARS`] characters.
//!
//! Reading never fails on garbage: what cannot be read is simply no verdict, and a finding
//! without a verdict is kept (the stage marks it unverified).

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Value, json};

use crate::agent::finish::Finisher;
use crate::errors::ModelReplyError;
use crate::llm::ToolSpec;

/// The tool the verifier hands its verdicts in with.
pub(crate) const SUBMIT_VERDICTS: &str = "submit_verdicts";

/// Characters of a reason kept at most.
pub(crate) const MAX_REASON_CHARS: usize = 300;

/// What the verifier decided of one finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Post it.
    Keep,
    /// Post it nowhere.
    Drop,
}

impl Decision {
    /// `keep` or `drop`, as in events and the prompt.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Decision::Keep => "keep",
            Decision::Drop => "drop",
        }
    }

    fn parse(word: &str) -> Option<Decision> {
        match word.trim().to_ascii_lowercase().as_str() {
            "keep" | "kept" => Some(Decision::Keep),
            "drop" | "dropped" => Some(Decision::Drop),
            _ => None,
        }
    }
}

/// One verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Verdict {
    /// Keep or drop.
    pub(crate) decision: Decision,
    /// One line, possibly empty for a keep.
    pub(crate) reason: String,
}

/// The verdicts read from one answer, by finding number (1-based).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Verdicts(BTreeMap<usize, Verdict>);

impl Verdicts {
    /// The verdict on finding number `number`, if one was read.
    pub(crate) fn get(&self, number: usize) -> Option<&Verdict> {
        self.0.get(&number)
    }

    /// How many findings have a verdict.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether no verdict was read.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Adds a verdict unless the id is outside `1..=count` or already has one.
    fn add(&mut self, number: usize, count: usize, decision: Decision, reason: &str) {
        if number == 0 || number > count {
            return;
        }
        self.0.entry(number).or_insert_with(|| Verdict {
            decision,
            reason: clean_reason(decision, reason),
        });
    }
}

/// One line of at most [`MAX_REASON_CHARS`] characters; "no reason given" for a bare drop.
fn clean_reason(decision: Decision, reason: &str) -> String {
    let line = reason
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .trim_matches(|c: char| c == '*' || c == '_' || c.is_whitespace())
        .to_string();
    let line: String = line.chars().take(MAX_REASON_CHARS).collect();
    match (decision, line.is_empty()) {
        (Decision::Drop, true) => "no reason given".into(),
        _ => line,
    }
}

/// The number of an id such as `F3`, `f 3`, `[F3]` or `**F3**`.
fn id_number(id: &str) -> Option<usize> {
    let id = id
        .trim()
        .trim_matches(|c: char| "[]*_`#".contains(c))
        .trim();
    let rest = id.strip_prefix(['F', 'f'])?.trim_start();
    rest.parse().ok()
}

/// One verdict line: list marker, id (optionally with a parenthesised place), separators,
/// the word, separators, the reason.
static VERDICT_LINE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^[\s>*•#-]*(?:\d+[.)]\s*)?[\[*_`]*F\s*(\d+)[\]*_`]*\s*(?:\([^)\n]*\))?\s*[:.)–—-]*\s*[*_`]*\s*(keep|drop)\b[*_`]*\s*(?:--|[-–—:.,;])?\s*(.*)$",
    )
    .ok()
});

/// The verdicts of plain-text lines such as `F1: keep - reason`, for a batch of `count`.
pub(crate) fn parse_verdict_lines(text: &str, count: usize) -> Verdicts {
    let mut verdicts = Verdicts::default();
    let Some(line_rule) = VERDICT_LINE.as_ref() else {
        return verdicts;
    };
    for line in text.lines() {
        let Some(caps) = line_rule.captures(line) else {
            continue;
        };
        let number = caps.get(1).and_then(|m| m.as_str().parse().ok());
        let decision = caps.get(2).and_then(|m| Decision::parse(m.as_str()));
        if let (Some(number), Some(decision)) = (number, decision) {
            let reason = caps.get(3).map_or("", |m| m.as_str());
            verdicts.add(number, count, decision, reason);
        }
    }
    verdicts
}

/// The verdicts of `submit_verdicts` arguments (or of a JSON object found in text).
pub(crate) fn parse_verdict_args(args: &Value, count: usize) -> Verdicts {
    let mut verdicts = Verdicts::default();
    let list = ["verdicts", "findings", "results", "answers"]
        .iter()
        .find_map(|key| args.get(key));
    match list {
        Some(Value::Array(items)) => {
            for item in items {
                read_item(item, None, count, &mut verdicts);
            }
        }
        Some(Value::Object(map)) => read_map(map, count, &mut verdicts),
        _ => {
            if let Value::Object(map) = args {
                read_map(map, count, &mut verdicts);
            }
        }
    }
    verdicts
}

/// `{"F1": "keep - reason", "F2": {"verdict": "drop", "reason": "..."}}`.
fn read_map(map: &serde_json::Map<String, Value>, count: usize, verdicts: &mut Verdicts) {
    for (key, value) in map {
        if let Some(number) = id_number(key) {
            read_item(value, Some(number), count, verdicts);
        }
    }
}

/// One item: an object with an id (unless `number` is given), a verdict and a reason, or
/// a string `keep - reason`.
fn read_item(item: &Value, number: Option<usize>, count: usize, verdicts: &mut Verdicts) {
    if let (Value::String(text), Some(number)) = (item, number) {
        let line = format!("F{number}: {text}");
        if let Some(verdict) = parse_verdict_lines(&line, count).get(number) {
            verdicts.add(number, count, verdict.decision, &verdict.reason);
        }
        return;
    }
    let Value::Object(map) = item else { return };
    let text = |keys: &[&str]| {
        keys.iter()
            .find_map(|key| map.get(*key))
            .and_then(|v| match v {
                Value::String(s) => Some(s.clone()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            })
    };
    let number = number.or_else(|| {
        text(&["id", "finding", "finding_id", "ref"])
            .and_then(|id| id_number(&id).or_else(|| id.trim().parse().ok()))
    });
    let flag = |key: &str| map.get(key).and_then(Value::as_bool);
    let decision = text(&["verdict", "decision", "action", "result"])
        .and_then(|word| Decision::parse(&word))
        .or(match (flag("keep"), flag("drop")) {
            (Some(true), _) | (_, Some(false)) => Some(Decision::Keep),
            (Some(false), _) | (_, Some(true)) => Some(Decision::Drop),
            _ => None,
        });
    if let (Some(number), Some(decision)) = (number, decision) {
        let reason = text(&["reason", "why", "explanation", "rationale"]).unwrap_or_default();
        verdicts.add(number, count, decision, &reason);
    }
}

/// Ends a verification run with `submit_verdicts`, for a batch of `count` findings.
pub(crate) struct VerdictFinisher {
    /// Findings in the batch (ids `F1` to `F{count}`).
    pub(crate) count: usize,
}

impl Finisher for VerdictFinisher {
    type Output = Verdicts;

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: SUBMIT_VERDICTS.into(),
            description: "Hand in your verdicts and end: one per finding id (F1, F2, ...), each `keep` or `drop` with a one-line reason. Call it once.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "verdicts": {
                        "type": "array",
                        "description": "One verdict per finding id.",
                        "items": {
                            "type": "object",
                            "properties": {
                                "id": {"type": "string", "description": "The finding's id, e.g. `F1`."},
                                "verdict": {"type": "string", "enum": ["keep", "drop"]},
                                "reason": {"type": "string", "description": "One line: why it is kept or dropped."}
                            },
                            "required": ["id", "verdict", "reason"]
                        }
                    }
                },
                "required": ["verdicts"]
            }),
        }
    }

    fn parse_args(&self, args: &Value) -> Result<Verdicts, ModelReplyError> {
        let verdicts = parse_verdict_args(args, self.count);
        if verdicts.is_empty() {
            return Err(ModelReplyError::respond(format!(
                "no verdict could be read; give one per finding id F1 to F{}, each with `verdict` `keep` or `drop` and a one-line `reason`",
                self.count
            )));
        }
        Ok(verdicts)
    }

    fn parse_text(&self, text: &str) -> Option<Verdicts> {
        let lines = parse_verdict_lines(text, self.count);
        if !lines.is_empty() {
            return Some(lines);
        }
        let object = text
            .find('{')
            .zip(text.rfind('}'))
            .and_then(|(start, end)| text.get(start..=end))
            .and_then(|json| serde_json::from_str::<Value>(json).ok())?;
        Some(parse_verdict_args(&object, self.count)).filter(|v| !v.is_empty())
    }

    fn lenient_text(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decision(verdicts: &Verdicts, number: usize) -> Option<(Decision, &str)> {
        verdicts
            .get(number)
            .map(|v| (v.decision, v.reason.as_str()))
    }

    #[test]
    fn lines_are_read_with_any_dash_case_and_spacing() {
        let text = "Here are my verdicts:\n\
            F1: keep - the loop reads past the end\n\
            f2:DROP -- already checked in parse()\n\
            F3 — Keep — real race\n\
            - **F4**: drop – wording only\n\
            F5 : keep : fine\n\
            F6 drop\n\
            2. F7: Drop. speculative\n\
            F8 (src/a.rs:3): keep - yes\n\
            [F9] keep, shown by the test\n";
        let verdicts = parse_verdict_lines(text, 9);
        assert_eq!(verdicts.len(), 9, "{verdicts:?}");
        assert_eq!(
            decision(&verdicts, 1),
            Some((Decision::Keep, "the loop reads past the end"))
        );
        assert_eq!(
            decision(&verdicts, 2),
            Some((Decision::Drop, "already checked in parse()"))
        );
        assert_eq!(decision(&verdicts, 3), Some((Decision::Keep, "real race")));
        assert_eq!(
            decision(&verdicts, 4),
            Some((Decision::Drop, "wording only"))
        );
        assert_eq!(decision(&verdicts, 5), Some((Decision::Keep, "fine")));
        assert_eq!(
            decision(&verdicts, 6),
            Some((Decision::Drop, "no reason given"))
        );
        assert_eq!(
            decision(&verdicts, 7),
            Some((Decision::Drop, "speculative"))
        );
        assert_eq!(decision(&verdicts, 8), Some((Decision::Keep, "yes")));
        assert_eq!(
            decision(&verdicts, 9),
            Some((Decision::Keep, "shown by the test"))
        );
    }

    #[test]
    fn unknown_ids_duplicates_and_garbage_are_ignored() {
        let text = "F1: keep - first\nF1: drop - second\nF7: drop - not in the batch\n\
                    F0: drop - no such id\nF2: maybe - undecided\nnothing here\nFx: drop\n";
        let verdicts = parse_verdict_lines(text, 3);
        assert_eq!(verdicts.len(), 1, "{verdicts:?}");
        assert_eq!(decision(&verdicts, 1), Some((Decision::Keep, "first")));
        assert!(parse_verdict_lines("I keep thinking F1 is fine", 3).is_empty());
        assert!(parse_verdict_lines("", 3).is_empty());
    }

    #[test]
    fn calls_are_read_in_several_shapes() {
        let finisher = VerdictFinisher { count: 3 };
        let args = json!({"verdicts": [
            {"id": "F1", "verdict": "KEEP", "reason": "real"},
            {"id": "f2", "verdict": "drop", "reason": "speculative\nsecond line"},
            {"id": "F9", "verdict": "drop", "reason": "unknown id"},
            {"id": "F1", "verdict": "drop", "reason": "duplicate"}
        ]});
        let verdicts = finisher.parse_args(&args).unwrap();
        assert_eq!(verdicts.len(), 2);
        assert_eq!(decision(&verdicts, 1), Some((Decision::Keep, "real")));
        assert_eq!(
            decision(&verdicts, 2),
            Some((Decision::Drop, "speculative second line"))
        );
        let map = json!({"F1": "drop - style only", "F3": {"keep": true, "why": "shown"}});
        let verdicts = finisher.parse_args(&map).unwrap();
        assert_eq!(decision(&verdicts, 1), Some((Decision::Drop, "style only")));
        assert_eq!(decision(&verdicts, 3), Some((Decision::Keep, "shown")));
        let error = finisher
            .parse_args(&json!({"verdicts": "all good"}))
            .unwrap_err()
            .to_string();
        assert!(error.contains("F1 to F3"), "{error}");
        assert!(finisher.parse_args(&json!([1, 2])).is_err());
    }

    #[test]
    fn text_answers_may_be_lines_or_a_json_object() {
        let finisher = VerdictFinisher { count: 2 };
        let lines = finisher.parse_text("F2: drop - no caller").unwrap();
        assert_eq!(decision(&lines, 2), Some((Decision::Drop, "no caller")));
        let object = finisher
            .parse_text("```json\n{\"verdicts\": [{\"id\": \"F1\", \"verdict\": \"keep\", \"reason\": \"ok\"}]}\n```")
            .unwrap();
        assert_eq!(decision(&object, 1), Some((Decision::Keep, "ok")));
        assert_eq!(finisher.parse_text("Looks fine to me."), None);
        let long = format!("F1: drop - {}", "x".repeat(1000));
        let cut = finisher.parse_text(&long).unwrap();
        assert_eq!(cut.get(1).unwrap().reason.chars().count(), MAX_REASON_CHARS);
    }
}
