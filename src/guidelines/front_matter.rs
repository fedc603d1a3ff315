//! The front matter of a rule file: an optional block between `---` lines at the top,
//! of which only the path globs are read (`paths:` for `.redline/rules/*.md`, `globs:`
//! for Cursor's `.mdc` rules) and Cursor's `alwaysApply`.
//!
//! Invariant: this is not a YAML parser; it reads the few shapes these files use
//! (`paths: ["src/**", "lib/*.rs"]`, `globs: src/**/*.ts, *.js`, a `- item` list on the
//! following lines) and leaves any other key alone. A file without front matter is
//! all body.

/// What the front matter says, and the text after it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct FrontMatter<'a> {
    /// Path globs the rule is limited to (empty: every file).
    pub globs: Vec<String>,
    /// Cursor's `alwaysApply: true`: the rule applies whatever its globs say.
    pub always: bool,
    /// The rule's text, front matter removed.
    pub body: &'a str,
}

/// Splits `text` into its front matter and body.
pub(crate) fn split(text: &str) -> FrontMatter<'_> {
    let whole = FrontMatter {
        body: text,
        ..FrontMatter::default()
    };
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return whole;
    };
    let mut offset = 0;
    let mut header_end = None;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            header_end = Some((offset, offset + line.len()));
            break;
        }
        offset += line.len();
    }
    let Some((header_len, body_start)) = header_end else {
        return whole;
    };
    let mut matter = read_header(&rest[..header_len]);
    matter.body = &rest[body_start..];
    matter
}

fn read_header(header: &str) -> FrontMatter<'static> {
    let mut matter = FrontMatter::default();
    let mut in_list = false;
    for line in header.lines() {
        let trimmed = line.trim();
        if in_list && let Some(item) = trimmed.strip_prefix('-') {
            push_globs(&mut matter.globs, item);
            continue;
        }
        in_list = false;
        let Some((key, value)) = trimmed.split_once(':') else {
            continue;
        };
        match key.trim() {
            "paths" | "globs" => {
                let value = value.trim();
                if value.is_empty() {
                    in_list = true;
                } else {
                    push_globs(&mut matter.globs, value);
                }
            }
            "alwaysApply" => matter.always = value.trim() == "true",
            _ => {}
        }
    }
    matter
}

/// Adds the globs of one value: a `[...]` list or a comma-separated scalar, quoted or not.
fn push_globs(globs: &mut Vec<String>, value: &str) {
    let value = value.trim();
    let value = value
        .strip_prefix('[')
        .and_then(|v| v.strip_suffix(']'))
        .unwrap_or(value);
    for item in value.split(',') {
        let item = item.trim().trim_matches(|c| c == '"' || c == '\'').trim();
        if !item.is_empty() {
            globs.push(item.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_inline_lists_scalars_and_item_lists() {
        let m = split("---\npaths: [\"src/**\", 'lib/*.rs']\n---\nUse anyhow.\n");
        assert_eq!(m.globs, ["src/**", "lib/*.rs"]);
        assert_eq!(m.body, "Use anyhow.\n");
        let m =
            split("---\ndescription: x\nglobs: src/**/*.ts, *.js\nalwaysApply: false\n---\nbody");
        assert_eq!(m.globs, ["src/**/*.ts", "*.js"]);
        assert!(!m.always);
        let m = split("---\npaths:\n  - \"a/**\"\n  - b.rs\nother: 1\n---\n");
        assert_eq!(m.globs, ["a/**", "b.rs"]);
        assert!(split("---\nalwaysApply: true\n---\nx").always);
    }

    #[test]
    fn without_a_closed_header_everything_is_body() {
        for text in [
            "no header",
            "---\npaths: [a]\nnever closed\n",
            "text\n---\npaths: [a]\n---\n",
        ] {
            let m = split(text);
            assert_eq!(m.body, text);
            assert!(m.globs.is_empty());
        }
    }
}
