//! How a shaped context reports itself: JSON for `redline context --json`, text for humans.

use serde_json::json;

use super::shape::{ShapeStatus, ShapedContext};
use super::thousands;

impl ShapedContext {
    /// The machine-readable report (version 1):
    /// `{"version":1,"model":…,"encoding":…,"budget":…,"files":[{"path","old_path"?,"status","reason","tokens"}],
    /// "tokens":{"naive","shaped"},"changed_lines":{"total","shown"},
    /// "moves":{"blocks","lines","tokens","raw_tokens"}}`.
    pub fn to_json(&self, model: &str, encoding: &str, budget: usize) -> serde_json::Value {
        let files: Vec<serde_json::Value> = self
            .files
            .iter()
            .map(|f| {
                let mut entry = json!({
                    "path": f.path,
                    "status": f.status.as_str(),
                    "reason": f.reason,
                    "tokens": f.tokens,
                });
                // A renamed file names where it came from.
                if let (Some(old), Some(fields)) = (&f.old_path, entry.as_object_mut()) {
                    fields.insert("old_path".into(), json!(old));
                }
                entry
            })
            .collect();
        json!({
            "version": 1,
            "model": model,
            "encoding": encoding,
            "budget": budget,
            "files": files,
            "tokens": {"naive": self.naive_tokens, "shaped": self.shaped_tokens},
            "changed_lines": {"total": self.changed_lines_total, "shown": self.changed_lines_shown},
            "moves": {
                "blocks": self.moves.blocks,
                "lines": self.moves.lines,
                "tokens": self.moves.tokens,
                "raw_tokens": self.moves.raw_tokens,
            },
        })
    }

    /// Share of the naive prompt saved, in percent (0 when there was nothing to save).
    pub fn reduction_percent(&self) -> f64 {
        if self.naive_tokens == 0 {
            return 0.0;
        }
        100.0 * (1.0 - self.shaped_tokens as f64 / self.naive_tokens as f64)
    }

    /// A summary for humans: totals, then one line per file.
    pub fn render_text(&self) -> String {
        let count = |status| self.files.iter().filter(|f| f.status == status).count();
        let mut out = format!(
            "files: {} ({} shown, {} listed, {} excluded)\n",
            self.files.len(),
            count(ShapeStatus::Shown),
            count(ShapeStatus::Listed),
            count(ShapeStatus::Excluded)
        );
        out.push_str(&format!(
            "tokens: {} naive -> {} shaped ({:.1}% less)\n",
            thousands(self.naive_tokens),
            thousands(self.shaped_tokens),
            self.reduction_percent()
        ));
        out.push_str(&format!(
            "changed lines: {} of {} shown\n",
            thousands(self.changed_lines_shown),
            thousands(self.changed_lines_total)
        ));
        if self.moves.blocks > 0 {
            out.push_str(&format!(
                "moved code: {} blocks, {} lines, shown as moves in {} tokens ({} as plain diff lines)\n",
                thousands(self.moves.blocks),
                thousands(self.moves.lines),
                thousands(self.moves.tokens),
                thousands(self.moves.raw_tokens)
            ));
        }
        let width = self
            .files
            .iter()
            .map(|f| f.path.chars().count())
            .max()
            .unwrap_or(0);
        for file in &self.files {
            let renamed = file
                .old_path
                .as_deref()
                .map(|old| format!("  (renamed from {old})"))
                .unwrap_or_default();
            out.push_str(&format!(
                "  {:<8} {:<width$} {:>9} tokens{}{renamed}\n",
                file.status.as_str(),
                file.path,
                thousands(file.tokens),
                file.reason
                    .as_deref()
                    .map(|r| format!("  ({r})"))
                    .unwrap_or_default(),
            ));
        }
        out
    }
}
