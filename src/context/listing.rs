//! Lists of files named in the first message without their diff. Long lists
//! name the first files one by one and the rest by directory, so a change of
//! thousands of files still costs a bounded number of tokens to describe.

use super::thousands;

/// Files named one by one in each list; the rest are grouped by directory.
pub(crate) const LIST_CAP: usize = 40;

/// Directory groups shown per list; the rest are counted in one line.
pub(crate) const GROUP_CAP: usize = 20;

/// One file named in a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ListItem {
    /// The path.
    pub path: String,
    /// What is said in parentheses after the path.
    pub note: String,
    /// Added lines.
    pub additions: usize,
    /// Removed lines.
    pub deletions: usize,
    /// Tokens it would cost to see it.
    pub tokens: usize,
    /// Whether `tokens` was counted rather than estimated.
    pub exact: bool,
}

/// The lists that do not depend on the budget.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FixedItems {
    /// Deleted files.
    pub deleted: Vec<ListItem>,
    /// Noise.
    pub excluded: Vec<ListItem>,
    /// Renames and mode changes without content changes.
    pub other: Vec<ListItem>,
}

/// The list of files that did not fit, or nothing when all did.
pub(crate) fn render_over_budget(items: &[ListItem]) -> String {
    if items.is_empty() {
        return String::new();
    }
    format!(
        "\n## Not shown: over budget ({} files; open each with the `diff` tool)\n{}",
        items.len(),
        render_items(items)
    )
}

/// The deleted, noise and content-free lists (each only when not empty).
pub(crate) fn render_fixed(items: &FixedItems) -> String {
    let mut out = String::new();
    for (title, note, list) in [
        (
            "Deleted files",
            "`read_file` with `\"revision\": \"base\"` reads them as they were.\n",
            &items.deleted,
        ),
        (
            "Left out as noise (lockfiles, generated, vendored, minified, binary, snapshots, config excludes)",
            "",
            &items.excluded,
        ),
        ("Other changes", "", &items.other),
    ] {
        if !list.is_empty() {
            out.push_str(&format!(
                "\n## {title} ({})\n{note}{}",
                list.len(),
                render_items(list)
            ));
        }
    }
    out
}

fn render_items(items: &[ListItem]) -> String {
    let mut out = String::new();
    for item in items.iter().take(LIST_CAP) {
        out.push_str(&format!("- {} ({})\n", item.path, item.note));
    }
    let rest = items.get(LIST_CAP..).unwrap_or_default();
    let groups = group_by_directory(rest);
    for group in groups.iter().take(GROUP_CAP) {
        out.push_str(&format!(
            "- {} … {} more files (+{} -{}, {}{} tokens)\n",
            group.directory,
            group.files,
            group.additions,
            group.deletions,
            if group.exact { "" } else { "~" },
            thousands(group.tokens)
        ));
    }
    let hidden: usize = groups.iter().skip(GROUP_CAP).map(|g| g.files).sum();
    if hidden > 0 {
        out.push_str(&format!(
            "- … and {hidden} more files in other directories\n"
        ));
    }
    out
}

/// Files of one directory beyond the per-list cap.
struct Group {
    directory: String,
    files: usize,
    additions: usize,
    deletions: usize,
    tokens: usize,
    exact: bool,
}

/// Groups by the first two directory levels, in order of first appearance.
fn group_by_directory(items: &[ListItem]) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for item in items {
        let directory = directory_key(&item.path);
        let slot = *index.entry(directory.clone()).or_insert_with(|| {
            groups.push(Group {
                directory,
                files: 0,
                additions: 0,
                deletions: 0,
                tokens: 0,
                exact: true,
            });
            groups.len() - 1
        });
        if let Some(group) = groups.get_mut(slot) {
            group.files += 1;
            group.additions += item.additions;
            group.deletions += item.deletions;
            group.tokens += item.tokens;
            group.exact &= item.exact;
        }
    }
    groups
}

fn directory_key(path: &str) -> String {
    let parts: Vec<&str> = path.split('/').collect();
    match parts.len() {
        0 | 1 => "./".into(),
        2 => format!("{}/", parts[0]),
        _ => format!("{}/{}/", parts[0], parts[1]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(path: String) -> ListItem {
        ListItem {
            path,
            note: "+1 -0, 10 tokens".into(),
            additions: 1,
            deletions: 0,
            tokens: 10,
            exact: true,
        }
    }

    #[test]
    fn long_lists_group_the_rest_by_directory() {
        let mut items: Vec<ListItem> = (0..LIST_CAP)
            .map(|i| item(format!("src/f{i}.rs")))
            .collect();
        items.extend((0..100).map(|i| item(format!("gen/a/x{i}.rs"))));
        items.extend((0..5).map(|i| item(format!("top{i}.rs"))));
        let out = render_over_budget(&items);
        assert!(out.contains("(145 files;"));
        assert!(out.contains("- src/f0.rs (+1 -0, 10 tokens)\n"));
        assert!(out.contains("- gen/a/ … 100 more files (+100 -0, 1,000 tokens)\n"));
        assert!(out.contains("- ./ … 5 more files (+5 -0, 50 tokens)\n"));
        assert_eq!(out.lines().count(), 2 + LIST_CAP + 2);
        assert_eq!(render_over_budget(&[]), "");
    }

    #[test]
    fn groups_beyond_the_cap_are_counted() {
        let items: Vec<ListItem> = (0..LIST_CAP + GROUP_CAP + 3)
            .map(|i| item(format!("d{i}/f.rs")))
            .collect();
        let out = render_over_budget(&items);
        assert!(out.ends_with("- … and 3 more files in other directories\n"));
    }
}
