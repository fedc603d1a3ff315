//! Merging duplicate findings.
//!
//! Models often report one problem twice (two steps, plan tasks or reflection rounds
//! noticing it, or a line and its neighbour). Two anchored findings are duplicates when
//! they are on the same path and side, of the same category, and either
//! - their ranges overlap or are at most one line apart, and their titles are similar: at
//!   least [`SIMILAR_SHARE`] of the words of the shorter title also appear in the other
//!   (words lower-cased, trailing plural `s` dropped, filler words such as "the", "may",
//!   "in" ignored; titles made only of filler words must be equal); or
//! - their ranges overlap and they say the same thing in other words: of the meaningful
//!   words (three letters or more, filler ignored) of title and body together, at least
//!   [`MIN_SHARED_WORDS`] and at least [`SIMILAR_TEXT_SHARE`] of the smaller set are shared.
//!
//! The merged finding keeps the most severe finding's title (ties: the longer body), the
//! longest body of the two, and the union of the ranges when the union stays in one
//! hunk. A suggestion fixes the range: when either finding carries one, the merged
//! finding keeps that finding's range (and its suggestion) instead of the union. Each
//! duplicate merged away is returned (as it was reported) with the finding it went into,
//! for the report's `merged` list.

use std::collections::BTreeSet;

use crate::review::diff::ChangeSet;
use crate::review::finding::Finding;
use crate::review::verification::{FindingRef, MergedFinding};

/// Share of the shorter title's words that must appear in the other title.
const SIMILAR_SHARE: f64 = 0.6;
/// Share of the smaller set of meaningful words of title and body that must be shared.
const SIMILAR_TEXT_SHARE: f64 = 0.5;
/// Meaningful words of title and body two findings must share at least to say the same.
const MIN_SHARED_WORDS: usize = 3;

/// Words that say nothing about the concern.
const FILLER: &[&str] = &[
    "a",
    "an",
    "the",
    "of",
    "in",
    "on",
    "at",
    "to",
    "for",
    "from",
    "by",
    "with",
    "and",
    "or",
    "is",
    "are",
    "be",
    "been",
    "was",
    "may",
    "might",
    "can",
    "could",
    "should",
    "would",
    "will",
    "this",
    "that",
    "these",
    "those",
    "it",
    "its",
    "here",
    "there",
    "when",
    "if",
    "possible",
    "potential",
    "potentially",
    "likely",
];

/// Words of an explanation that say nothing about which problem it is.
const PROSE_FILLER: &[&str] = &[
    "not", "but", "than", "then", "which", "what", "also", "does", "doe", "only", "any", "all",
    "such", "into", "because", "instead", "without", "has", "have", "had", "was", "were", "being",
    "other", "more", "less", "very", "code", "line", "lines", "change", "function", "value", "use",
    "used", "using", "make", "makes", "consider", "fix",
];

/// Merges duplicates among `findings` (sorted by path then line), keeping first-seen order;
/// each duplicate merged away is returned with the finding it went into (as it ends up).
pub(super) fn merge_duplicates(
    findings: Vec<Finding>,
    changes: &ChangeSet,
) -> (Vec<Finding>, Vec<MergedFinding>) {
    let mut kept: Vec<Finding> = Vec::with_capacity(findings.len());
    let mut absorbed: Vec<(usize, Finding)> = Vec::new();
    for finding in findings {
        match kept.iter().position(|k| same_concern(k, &finding)) {
            Some(index) => {
                let (combined, other) = combine(kept[index].clone(), finding, changes);
                kept[index] = combined;
                absorbed.push((index, other));
            }
            None => kept.push(finding),
        }
    }
    let merged = absorbed
        .into_iter()
        .map(|(index, finding)| MergedFinding {
            finding,
            into: FindingRef::of(&kept[index]),
        })
        .collect();
    (kept, merged)
}

fn same_concern(a: &Finding, b: &Finding) -> bool {
    a.path == b.path
        && a.side == b.side
        && a.category == b.category
        && ((near(a, b) && similar_titles(&a.title, &b.title))
            || (overlap(a, b) && same_text(a, b)))
}

/// Overlapping, or adjacent within one line.
fn near(a: &Finding, b: &Finding) -> bool {
    let (a, b) = (a.range(), b.range());
    *a.start() <= b.end().saturating_add(1) && *b.start() <= a.end().saturating_add(1)
}

/// Sharing at least one line.
fn overlap(a: &Finding, b: &Finding) -> bool {
    let (a, b) = (a.range(), b.range());
    a.start() <= b.end() && b.start() <= a.end()
}

/// Title and body together say the same thing in other words.
fn same_text(a: &Finding, b: &Finding) -> bool {
    let words = |f: &Finding| -> BTreeSet<String> {
        title_words(&format!("{} {}", f.title, f.body))
            .into_iter()
            .filter(|w| w.chars().count() >= 3 && !PROSE_FILLER.contains(&w.as_str()))
            .collect()
    };
    let (a, b) = (words(a), words(b));
    let shared = a.intersection(&b).count();
    let smaller = a.len().min(b.len());
    shared >= MIN_SHARED_WORDS && shared as f64 >= SIMILAR_TEXT_SHARE * smaller as f64
}

fn similar_titles(a: &str, b: &str) -> bool {
    let a: BTreeSet<String> = title_words(a).into_iter().collect();
    let b: BTreeSet<String> = title_words(b).into_iter().collect();
    if a.is_empty() || b.is_empty() {
        return a == b;
    }
    let shared = a.intersection(&b).count();
    let shorter = a.len().min(b.len());
    shared as f64 >= SIMILAR_SHARE * shorter as f64
}

/// The meaningful words of a title, in order: lower-cased alphanumeric runs without a
/// trailing plural `s`, filler words removed.
pub(crate) fn title_words(title: &str) -> Vec<String> {
    title
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .filter(|word| !FILLER.contains(&word.as_str()))
        .map(|word| match word.strip_suffix('s') {
            Some(stem) if stem.chars().count() >= 3 && !stem.ends_with('s') => stem.to_string(),
            _ => word,
        })
        .collect()
}

/// The merged finding, and the duplicate as it was reported.
fn combine(a: Finding, b: Finding, changes: &ChangeSet) -> (Finding, Finding) {
    let rank = |f: &Finding| (f.severity, f.body.len());
    let (mut kept, other) = if rank(&b) > rank(&a) { (b, a) } else { (a, b) };
    if other.body.len() > kept.body.len() {
        kept.body = other.body.clone();
    }
    if kept.suggestion.is_some() {
        return (kept, other);
    }
    if other.suggestion.is_some() {
        kept.suggestion = other.suggestion.clone();
        kept.start_line = other.start_line;
        kept.line = other.line;
        return (kept, other);
    }
    let start = kept.start_line.min(other.start_line);
    let end = kept.line.max(other.line);
    let one_hunk = changes
        .file(&kept.path)
        .and_then(|file| file.hunk_at(kept.side, start))
        .is_some_and(|hunk| hunk.contains(kept.side, end));
    if one_hunk {
        kept.start_line = start;
        kept.line = end;
    }
    (kept, other)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_compare_by_meaningful_words() {
        assert!(similar_titles(
            "Possible null dereference",
            "Null pointer dereference of user"
        ));
        assert!(similar_titles(
            "Off-by-one in loop bound",
            "Loop bound is off by one"
        ));
        assert!(!similar_titles("Unused import", "Unused variable"));
        assert!(!similar_titles(
            "Unchecked index may panic",
            "Unwrap may panic"
        ));
        assert!(similar_titles("Missing tests", "missing test"));
        assert!(similar_titles("It is", "it is"));
        assert!(!similar_titles("It is", "Leaks the key"));
    }

    fn finding(line: u32, title: &str, body: &str) -> Finding {
        Finding {
            path: "a.rs".into(),
            line,
            start_line: line,
            side: crate::review::finding::Side::Right,
            severity: crate::review::finding::Severity::Major,
            category: crate::review::finding::Category::Bug,
            title: title.into(),
            body: body.into(),
            suggestion: None,
            rule: None,
            unverified: false,
        }
    }

    #[test]
    fn one_problem_in_other_words_on_the_same_lines_is_one_concern() {
        let first = finding(
            3,
            "Division by zero",
            "`x / 0` always panics: the divisor is the literal zero.",
        );
        let second = finding(
            3,
            "Every call of a() panics",
            "The divisor in `x / 0` is zero, so every call panics at runtime.",
        );
        assert!(!similar_titles(&first.title, &second.title));
        assert!(same_concern(&first, &second));
        // In other words but a line apart: not the same lines, not merged.
        assert!(!same_concern(
            &first,
            &finding(4, &second.title, &second.body)
        ));
        // Another problem on the same line shares too little.
        let other = finding(
            3,
            "Magic number",
            "Name the constant so readers know what the literal stands for.",
        );
        assert!(!same_concern(&first, &other));
    }

    #[test]
    fn words_are_lowercased_and_singular() {
        assert_eq!(
            title_words("The Keys leak in Logs!"),
            ["key", "leak", "log"]
        );
        assert_eq!(title_words("class access"), ["class", "access"]);
    }
}
