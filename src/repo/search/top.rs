//! [`TopMatches`]: the first `limit` matches by (path, line), kept with bounded
//! memory while every match is counted.

use super::{SearchMatch, SearchOutput};

/// One search thread's share of the results.
#[derive(Debug)]
pub(super) struct TopMatches {
    limit: usize,
    kept: Vec<SearchMatch>,
    total: u64,
    /// Once `limit` matches are kept, the largest of them: anything after it is only counted.
    worst: Option<(String, u64)>,
}

impl TopMatches {
    pub(super) fn new(limit: usize) -> Self {
        TopMatches {
            limit,
            kept: Vec::new(),
            total: 0,
            worst: None,
        }
    }

    /// Counts one match.
    pub(super) fn count(&mut self) {
        self.total += 1;
    }

    /// Whether a match at (`path`, `line`) could still be among the first `limit`.
    pub(super) fn admits(&self, path: &str, line: u64) -> bool {
        self.limit > 0
            && self.worst.as_ref().is_none_or(|(worst_path, worst_line)| {
                (path, line) < (worst_path.as_str(), *worst_line)
            })
    }

    /// Keeps a match; trims back to `limit` now and then so memory stays bounded.
    pub(super) fn push(&mut self, found: SearchMatch) {
        self.kept.push(found);
        if self.kept.len() >= self.limit.saturating_mul(2).max(1024) {
            self.compact();
        }
    }

    fn compact(&mut self) {
        sort(&mut self.kept);
        self.kept.truncate(self.limit);
        if self.kept.len() == self.limit {
            self.worst = self.kept.last().map(|m| (m.path.clone(), m.line));
        }
    }

    /// Joins the shares of all threads.
    pub(super) fn merge(parts: Vec<TopMatches>, limit: usize) -> SearchOutput {
        let total_matches = parts.iter().map(|p| p.total).sum();
        let mut matches: Vec<SearchMatch> = parts.into_iter().flat_map(|p| p.kept).collect();
        sort(&mut matches);
        matches.truncate(limit);
        SearchOutput {
            matches,
            total_matches,
        }
    }
}

fn sort(matches: &mut [SearchMatch]) {
    matches.sort_unstable_by(|a, b| (a.path.as_str(), a.line).cmp(&(b.path.as_str(), b.line)));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(path: &str, line: u64) -> SearchMatch {
        SearchMatch {
            path: path.into(),
            line,
            text: String::new(),
        }
    }

    #[test]
    fn keeps_the_first_matches_by_path_and_line_and_counts_all() {
        let mut a = TopMatches::new(3);
        let mut b = TopMatches::new(3);
        for i in (0..3000).rev() {
            let share = if i % 2 == 0 { &mut a } else { &mut b };
            share.count();
            let path = format!("f{:04}", i / 10);
            if share.admits(&path, i) {
                share.push(found(&path, i));
            }
        }
        let out = TopMatches::merge(vec![a, b], 3);
        assert_eq!(out.total_matches, 3000);
        let lines: Vec<u64> = out.matches.iter().map(|m| m.line).collect();
        assert_eq!(lines, vec![0, 1, 2]);
        assert!(out.is_truncated());
    }

    #[test]
    fn a_zero_limit_only_counts() {
        let mut top = TopMatches::new(0);
        top.count();
        assert!(!top.admits("a", 1));
        assert_eq!(TopMatches::merge(vec![top], 0).total_matches, 1);
    }
}
