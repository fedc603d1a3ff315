//! The benchmark's own measurements, independent of Redline's statistics:
//! which reviewable changed lines the model was shown, what a simple
//! single-call reviewer would pay, and how much of the prompts was cached.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};

use redline::context::noise::noise_kind;
use redline::context::order::review_order_key;
use redline::repo::RepoView;
use redline::review::diff::{ChangeSet, FileStatus, LineKind};
use serde_json::{Value, json};

use crate::common::model_server::prompt_cache::prompt_tokens;
use crate::common::model_server::{RecordedRequest, ServedUsage};
use crate::scripted::message_text;

/// Token budget of the reference single-call reviewer.
pub const REFERENCE_BUDGET_TOKENS: usize = 32_000;

/// A reviewable changed line: an added, non-blank line of a file that is not noise.
#[derive(Debug, Clone)]
pub struct ReviewableLine {
    /// Its file.
    pub path: String,
    /// Its text.
    pub text: String,
}

/// The change's reviewable files (review order) and lines.
pub struct Reviewable {
    /// Paths of the non-noise, non-deleted changed files with a diff, in review order.
    pub paths: Vec<String>,
    /// Their added non-blank lines.
    pub lines: Vec<ReviewableLine>,
}

impl Reviewable {
    /// Classifies the change's files with Redline's noise rules (no config excludes).
    pub fn of(changes: &ChangeSet, view: &RepoView) -> Reviewable {
        let no_excludes = globset::GlobSet::empty();
        let mut files: Vec<_> = changes
            .files
            .iter()
            .filter(|f| f.status != FileStatus::Deleted && !f.hunks.is_empty())
            .filter(|f| {
                let head = view.read_text(&f.path).ok();
                let start = head.as_deref().map(|h| prefix(h, 4096));
                noise_kind(f, start, &no_excludes).is_none()
            })
            .collect();
        files.sort_by_key(|f| review_order_key(f));
        let lines = files
            .iter()
            .flat_map(|f| {
                f.hunks
                    .iter()
                    .flat_map(|h| &h.lines)
                    .filter(|l| l.kind == LineKind::Added && !l.text.trim().is_empty())
                    .map(|l| ReviewableLine {
                        path: f.path.clone(),
                        text: l.text.clone(),
                    })
            })
            .collect();
        Reviewable {
            paths: files.iter().map(|f| f.path.clone()).collect(),
            lines,
        }
    }
}

/// Head-side line texts shown to the model, per file.
#[derive(Default)]
pub struct Seen {
    lines: HashMap<String, HashSet<String>>,
    parsed: HashSet<u64>,
}

impl Seen {
    /// Everything the server received: every message's text, once per distinct text.
    pub fn of_requests(requests: &[RecordedRequest]) -> Seen {
        let mut seen = Seen::default();
        for request in requests {
            for message in request.body["messages"].as_array().into_iter().flatten() {
                seen.add_text(&message_text(message));
            }
        }
        seen
    }

    /// Whether `line` was shown under its own file.
    pub fn covers(&self, line: &ReviewableLine) -> bool {
        self.lines
            .get(&line.path)
            .is_some_and(|texts| texts.contains(line.text.trim_end()))
    }

    /// The share (0 to 1) of `lines` shown under their own file.
    pub fn coverage(&self, lines: &[ReviewableLine]) -> (usize, f64) {
        let covered = lines.iter().filter(|l| self.covers(l)).count();
        let share = if lines.is_empty() {
            1.0
        } else {
            covered as f64 / lines.len() as f64
        };
        (covered, share)
    }

    /// Reads file sections out of `text`: numbered diffs under `+++ b/PATH`,
    /// `read_file` windows under `PATH (lines a-b of n)`, and search hits
    /// `PATH:LINE: text`. A section ends at an empty line, a `#` heading or the
    /// next section header.
    pub fn add_text(&mut self, text: &str) {
        let mut hasher = DefaultHasher::new();
        text.hash(&mut hasher);
        if !self.parsed.insert(hasher.finish()) {
            return;
        }
        let mut current: Option<String> = None;
        for line in text.lines() {
            if let Some(path) = line.strip_prefix("+++ b/") {
                current = Some(path.to_string());
            } else if line.starts_with("--- a/") || line.is_empty() || line.starts_with('#') {
                current = None;
            } else if let Some(path) = read_file_header(line) {
                current = Some(path.to_string());
            } else if let Some(shown) = numbered_head_line(line) {
                if let Some(path) = &current {
                    self.insert(path, shown);
                }
            } else if let Some((path, shown)) = search_hit(line) {
                self.insert(path, shown);
            }
        }
    }

    fn insert(&mut self, path: &str, text: &str) {
        self.lines
            .entry(path.to_string())
            .or_default()
            .insert(text.trim_end().to_string());
    }
}

/// `PATH (lines a-b of n)`: the first line of a `read_file` result.
fn read_file_header(line: &str) -> Option<&str> {
    let (path, rest) = line.rsplit_once(" (lines ")?;
    let rest = rest.strip_suffix(')')?;
    let (range, total) = rest.split_once(" of ")?;
    let numeric = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let (a, b) = range.split_once('-')?;
    (numeric(a) && numeric(b) && numeric(total) && !path.contains(' ')).then_some(path)
}

/// The text of a head-side numbered line: `NNNNN +text`, `NNNNN  text`
/// (diffs) or `NNNNN | text` (`read_file`). Removed lines are not head lines.
fn numbered_head_line(line: &str) -> Option<&str> {
    let rest = line.trim_start_matches(' ');
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let rest = &rest[digits..];
    rest.strip_prefix(" | ")
        .or_else(|| rest.strip_prefix(" +"))
        .or_else(|| rest.strip_prefix("  "))
        .or_else(|| (rest == " |" || rest == " +" || rest == " ").then_some(""))
}

/// `PATH:LINE: text`: one search hit.
fn search_hit(line: &str) -> Option<(&str, &str)> {
    let (path, rest) = line.split_once(':')?;
    let (number, text) = rest.split_once(": ")?;
    let plausible = !path.is_empty()
        && !path.contains(' ')
        && !number.is_empty()
        && number.bytes().all(|b| b.is_ascii_digit());
    plausible.then_some((path, text))
}

/// The reference single-call reviewer: one request holding as many whole
/// files' diffs as fit in [`REFERENCE_BUDGET_TOKENS`], taken in review order
/// (a diff that does not fit is skipped, smaller later ones may still fit).
pub struct Reference {
    /// Tokens of its request, counted like the server counts.
    pub prompt_tokens: usize,
    /// Reviewable lines its request shows, counted like Redline's.
    pub covered: usize,
}

impl Reference {
    /// The reference for `changes` with reviewable files `reviewable`, for `model`.
    pub fn of(changes: &ChangeSet, reviewable: &Reviewable, model: &str) -> Reference {
        let request =
            |text: &str| json!({"model": model, "messages": [{"role": "user", "content": text}]});
        let mut included = String::new();
        let mut tokens = prompt_tokens(&request("")).len();
        for path in &reviewable.paths {
            let Some(file) = changes.file(path) else {
                continue;
            };
            let diff = file.render_numbered();
            let candidate = format!("{included}{diff}");
            let candidate_tokens = prompt_tokens(&request(&candidate)).len();
            if candidate_tokens <= REFERENCE_BUDGET_TOKENS {
                included = candidate;
                tokens = candidate_tokens;
            }
        }
        let mut seen = Seen::default();
        seen.add_text(&included);
        let (covered, _) = seen.coverage(&reviewable.lines);
        Reference {
            prompt_tokens: tokens,
            covered,
        }
    }
}

/// Cached prompt tokens and prompt tokens of every call after its conversation's
/// first. A conversation is identified by its first two messages (system, task).
pub fn later_calls_cache(requests: &[RecordedRequest], served: &[ServedUsage]) -> (u64, u64) {
    let mut started: HashSet<u64> = HashSet::new();
    let (mut cached, mut prompt) = (0, 0);
    for usage in served {
        let Some(request) = requests.get(usage.request) else {
            continue;
        };
        if !started.insert(conversation_key(&request.body)) {
            cached += usage.cached_tokens;
            prompt += usage.prompt_tokens;
        }
    }
    (cached, prompt)
}

fn conversation_key(body: &Value) -> u64 {
    let mut hasher = DefaultHasher::new();
    for message in body["messages"].as_array().into_iter().flatten().take(2) {
        message.to_string().hash(&mut hasher);
    }
    hasher.finish()
}

/// At most the first `bytes` bytes of `text`, cut on a character boundary.
fn prefix(text: &str, bytes: usize) -> &str {
    let mut end = bytes.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}
