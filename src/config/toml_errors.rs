//! TOML errors as `L:C: key: what`, without any value from the file: the error's own text
//! quotes the source line and serde's message quotes the value, and a config line may hold a
//! secret (a key pasted under the wrong name or into a wrong-typed setting), while errors are
//! printed and, by the App, posted.

/// A TOML error as `L:C: key: what` (to follow `FILE:`), without any value from the file: the
/// error's own text quotes the source line and serde's message quotes the value, and a
/// config line may hold a secret (a key pasted under the wrong name or into a wrong-typed
/// setting), while errors are printed and, by the App, posted.
pub(crate) fn toml_error(error: &toml::de::Error, text: &str) -> String {
    let message = without_values(error.message().trim_end());
    let Some(start) = error.span().map(|span| span.start.min(text.len())) else {
        return format!(" {message}");
    };
    let before = text.get(..start).unwrap_or_default();
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit('\n')
        .next()
        .unwrap_or_default()
        .chars()
        .count()
        + 1;
    // The key the line sets (what is left of `=`), when it reads as one of ours.
    let line_start = before.rfind('\n').map_or(0, |at| at + 1);
    let key = text[line_start..]
        .lines()
        .next()
        .and_then(|line| line.split_once('='))
        .map(|(key, _)| key.trim())
        .filter(|key| is_plain_name(key));
    let message = match unknown_key(&message) {
        Some((name, suggestion)) if key == Some(name.as_str()) => {
            format!("unknown key{suggestion}")
        }
        Some((name, suggestion)) => format!("unknown key `{name}`{suggestion}"),
        None => message,
    };
    match key {
        Some(key) => format!("{line}:{column}: {key}: {message}"),
        None => format!("{line}:{column}: {message}"),
    }
}

/// The name and a did-you-mean of serde's `unknown field `x`, expected one of …` (which
/// lists every key), or `None` for another message.
fn unknown_key(message: &str) -> Option<(String, String)> {
    let rest = message.strip_prefix("unknown field `")?;
    let (name, expected) = rest.split_once('`')?;
    let accepted: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    let suggestion = match crate::text::closest(name, &accepted) {
        Some(close) => format!(": did you mean `{close}`?"),
        None => " (the file `redline init` writes has every key)".to_string(),
    };
    Some((name.to_string(), suggestion))
}

/// Where `key` (dotted for a table's key: `reflection.max_rounds`) is set in `text`,
/// as `L:C` (1-based), or `None` when the text does not set it.
pub(crate) fn key_position(text: &str, key: &str) -> Option<String> {
    let document = toml::de::DeTable::parse(text).ok()?;
    let mut table = document.get_ref();
    let mut offset = None;
    for part in key.split('.') {
        let (name, value) = table
            .iter()
            .find(|(name, _)| name.get_ref().as_ref() == part)?;
        offset = Some(name.span().start);
        match value.get_ref() {
            toml::de::DeValue::Table(inner) => table = inner,
            _ => break,
        }
    }
    let before = text.get(..offset?)?;
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit('\n')
        .next()
        .unwrap_or_default()
        .chars()
        .count()
        + 1;
    Some(format!("{line}:{column}"))
}

/// `message` with every quoted value (`"…"`) blanked, and every backquoted one that is not a
/// plain name (a key or a variant such as `max_steps`, `react`).
fn without_values(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find(['"', '`']) {
        let quote = rest[at..].chars().next().unwrap_or('"');
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let Some(end) = after.find(quote) else {
            out.push(quote);
            out.push('…');
            return out;
        };
        let inner = &after[..end];
        let shown = if quote == '`' && is_plain_name(inner) {
            inner
        } else {
            "…"
        };
        out.push(quote);
        out.push_str(shown);
        out.push(quote);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// A setting's or variant's name: short, lower-case letters, digits, `_`, `-` and `.`.
fn is_plain_name(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 32
        && text.starts_with(|c: char| c.is_ascii_lowercase())
        && text
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '-' | '.'))
}

/// The 1-based line and column (in characters) of byte `offset` in `text`.
pub(crate) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset.min(text.len())).unwrap_or_default();
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit('\n')
        .next()
        .unwrap_or_default()
        .chars()
        .count()
        + 1;
    (line, column)
}

/// A TOML parser's message in plain words, without any value from the file: an unclosed
/// string is a `missing closing quote`; the parser's `expected …` lists are dropped.
pub(crate) fn syntax_message(message: &str) -> String {
    let message = message.trim_end();
    let (what, expected) = match message.split_once(", expected ") {
        Some((what, expected)) => (what, Some(expected)),
        None => (message, None),
    };
    let quote = expected.is_some_and(|e| e.contains('"') || e.contains('\''));
    if what.contains("string") && quote {
        return "missing closing quote (a string ends on its line, with the quote it starts with)"
            .into();
    }
    let plain = without_values(what);
    match expected.map(without_values) {
        Some(expected) if !expected.contains('…') => format!("{plain}: expected {expected}"),
        _ => plain,
    }
}
