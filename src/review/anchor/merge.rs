//! Merging duplicate findings.
//!
//! Models often report one problem twice (two steps noticing it, or a line and its
//! neighbour). Two anchored findings are duplicates when all of these hold:
//! - same path and side;
//! - their ranges overlap or are at most one line apart;
//! - same category;
//! - similar titles: at least [`SIMILAR_SHARE`] of the words of the shorter title also
//!   appear in the other (words lower-cased, trailing plural `s` dropped, filler words
//!   such as "the", "may", "in" ignored). Titles made only of filler words must be equal.
//!
//! The merged finding keeps the most severe finding's title (ties: the longer body), the
//! longest body of the two, and the union of the ranges when the union stays in one
//! hunk. A suggestion fixes the range: when either finding carries one, the merged
//! finding keeps that finding's range (and its suggestion) instead of the union.

use std::collections::BTreeSet;

use crate::review::diff::ChangeSet;
use crate::review::finding::Finding;

/// Share of the shorter title's words that must appear in the other title.
const SIMILAR_SHARE: f64 = 0.6;

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

/// Merges duplicates among `findings` (sorted by path then line), keeping first-seen order.
pub(super) fn merge_duplicates(findings: Vec<Finding>, changes: &ChangeSet) -> Vec<Finding> {
    let mut merged: Vec<Finding> = Vec::with_capacity(findings.len());
    for finding in findings {
        match merged.iter_mut().find(|kept| same_concern(kept, &finding)) {
            Some(kept) => {
                let combined = combine(kept.clone(), finding, changes);
                *kept = combined;
            }
            None => merged.push(finding),
        }
    }
    merged
}

fn same_concern(a: &Finding, b: &Finding) -> bool {
    a.path == b.path
        && a.side == b.side
        && a.category == b.category
        && near(a, b)
        && similar_titles(&a.title, &b.title)
}

/// Overlapping, or adjacent within one line.
fn near(a: &Finding, b: &Finding) -> bool {
    let (a, b) = (a.range(), b.range());
    *a.start() <= b.end().saturating_add(1) && *b.start() <= a.end().saturating_add(1)
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

fn combine(a: Finding, b: Finding, changes: &ChangeSet) -> Finding {
    let rank = |f: &Finding| (f.severity, f.body.len());
    let (mut kept, other) = if rank(&b) > rank(&a) { (b, a) } else { (a, b) };
    if other.body.len() > kept.body.len() {
        kept.body = other.body.clone();
    }
    if kept.suggestion.is_some() {
        return kept;
    }
    if other.suggestion.is_some() {
        kept.suggestion = other.suggestion;
        kept.start_line = other.start_line;
        kept.line = other.line;
        return kept;
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
    kept
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

    #[test]
    fn words_are_lowercased_and_singular() {
        assert_eq!(
            title_words("The Keys leak in Logs!"),
            ["key", "leak", "log"]
        );
        assert_eq!(title_words("class access"), ["class", "access"]);
    }
}
