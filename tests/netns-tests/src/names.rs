//! Names unique to the process and the call, for namespaces, directories and container IDs.

use std::sync::atomic::{AtomicU32, Ordering};

/// Prefix of every namespace, directory and container ID this harness creates.
pub const NAME_PREFIX: &str = "cnit";

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A name unique to this process and call: `cnit-<tag>-<pid>-<n>`, with the tag reduced by
/// [`clean_tag`]. Valid as a netns name, a directory name and a CNI container ID.
pub fn unique_name(tag: &str) -> String {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!(
        "{NAME_PREFIX}-{}-{}-{n}",
        clean_tag(tag),
        std::process::id()
    )
}

/// `tag` reduced to `[a-z0-9-]` and to 40 characters.
pub(crate) fn clean_tag(tag: &str) -> String {
    tag.chars()
        .take(40)
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_names_are_valid_and_distinct() {
        let a = unique_name("Some test/Name");
        let b = unique_name("Some test/Name");
        assert_ne!(a, b);
        assert!(a.starts_with("cnit-some-test-name-"), "{a}");
        assert!(a.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
    }
}
