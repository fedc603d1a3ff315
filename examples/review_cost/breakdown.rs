//! Where a review's prompt tokens go (`REVIEW_COST_BREAKDOWN=1`, stderr): the
//! server's own count of every request, split into tool schemas, system
//! prompts, and the lines of the user messages by kind (added, context and
//! removed diff lines, their line-number prefixes, `@@` lines, file headers,
//! notes, the overview and the task prose). Splits are tokenized on their own,
//! so they add up to a little less or more than the total; the JSON framing
//! and that difference are the `framing` row.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::common::model_server::RecordedRequest;
use crate::common::model_server::prompt_cache::prompt_tokens;
use crate::scripted::message_text;

/// Tokens per kind of text, over all requests.
#[derive(Default)]
pub struct Breakdown {
    tokens: BTreeMap<&'static str, usize>,
    total: usize,
    requests: usize,
    planner: usize,
}

impl Breakdown {
    /// Splits every request of the run.
    pub fn of_requests(requests: &[RecordedRequest]) -> Breakdown {
        let mut out = Breakdown::default();
        for request in requests {
            out.add(&request.body);
        }
        out
    }

    fn add(&mut self, body: &Value) {
        let total = prompt_tokens(body).len();
        self.total += total;
        self.requests += 1;
        let mut parts = 0;
        let system = body["messages"]
            .as_array()
            .and_then(|m| m.first())
            .map(message_text)
            .unwrap_or_default();
        if system.contains("You are planning the review") {
            self.planner += total;
        }
        if !body["tools"].is_null() {
            parts += self.put("tools", &body["tools"].to_string());
        }
        for message in body["messages"].as_array().into_iter().flatten() {
            let text = message_text(message);
            match message["role"].as_str() {
                Some("system") => parts += self.put("system", &text),
                Some("user") => parts += self.user(&text),
                _ => parts += self.put("other messages", &message.to_string()),
            }
        }
        let framing = total as i64 - parts as i64;
        *self.tokens.entry("framing").or_default() =
            (*self.tokens.entry("framing").or_default() as i64 + framing).max(0) as usize;
    }

    /// Splits a user message's lines by kind; returns the tokens counted.
    fn user(&mut self, text: &str) -> usize {
        let mut kinds: BTreeMap<&'static str, String> = BTreeMap::new();
        let mut in_overview = false;
        for line in text.lines() {
            let kind = kind_of(line, &mut in_overview);
            let entry = kinds.entry(kind.0).or_default();
            entry.push_str(kind.1.unwrap_or(line));
            entry.push('\n');
            if let Some(number) = kind.2 {
                let numbers = kinds.entry("line numbers").or_default();
                numbers.push_str(number);
                numbers.push('\n');
            }
        }
        kinds.iter().map(|(kind, text)| self.put(kind, text)).sum()
    }

    fn put(&mut self, kind: &'static str, text: &str) -> usize {
        let tokens = count(text);
        *self.tokens.entry(kind).or_default() += tokens;
        tokens
    }

    /// Prints the table on stderr.
    pub fn print(&self, label: &str) {
        eprintln!(
            "{label}: {} requests, {} prompt tokens (planner call {})",
            self.requests, self.total, self.planner
        );
        for (kind, tokens) in &self.tokens {
            eprintln!(
                "  {kind:<16} {tokens:>8} {:>5.1}%",
                100.0 * *tokens as f64 / self.total.max(1) as f64
            );
        }
    }
}

/// The kind of a user-message line, the text counted for it (without its
/// number) and its line-number prefix.
fn kind_of<'a>(
    line: &'a str,
    in_overview: &mut bool,
) -> (&'static str, Option<&'a str>, Option<&'a str>) {
    if line.starts_with("--- a/") || line.starts_with("+++ b/") {
        *in_overview = false;
        return ("file headers", None, None);
    }
    if line.starts_with("@@") {
        return ("@@ lines", None, None);
    }
    if line.starts_with("The change touches") || line.starts_with("The whole change touches") {
        *in_overview = true;
    }
    if let Some((number, mark, rest)) = numbered(line) {
        let kind = match mark {
            '+' => "added",
            '-' => "removed",
            _ => "context",
        };
        return (kind, Some(rest), Some(number));
    }
    if line.trim_start().starts_with('[') {
        return ("notes", None, None);
    }
    if *in_overview && line.starts_with("- ") {
        return ("overview", None, None);
    }
    ("task prose", None, None)
}

/// `NNNNN +text` → (`NNNNN `, `+`, `text`).
fn numbered(line: &str) -> Option<(&str, char, &str)> {
    let trimmed = line.trim_start_matches(' ');
    let digits = trimmed.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let split = line.len() - trimmed.len() + digits + 1;
    let rest = line.get(split..)?;
    if line.as_bytes().get(split - 1) != Some(&b' ') {
        return None;
    }
    let mark = rest.chars().next().unwrap_or(' ');
    match mark {
        '+' | '-' | ' ' => Some((&line[..split], mark, &rest[1..])),
        _ => None,
    }
}

fn count(text: &str) -> usize {
    tiktoken_rs::o200k_base_singleton()
        .encode_ordinary(text)
        .len()
}
