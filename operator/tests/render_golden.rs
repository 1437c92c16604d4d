#![allow(clippy::unwrap_used)]
//! Every example CR in `operator/examples/` rendered with the default settings, compared with
//! `operator/tests/golden/<name>.yaml`. The golden files are what `render` prints for users;
//! review them by eye when they change.
//!
//! `UPDATE_GOLDEN=1 cargo test -p network-addons-operator --test render_golden` rewrites them.

use std::fs;
use std::path::{Path, PathBuf};

use network_addons_operator::defaults::fill_defaults;
use network_addons_operator::render::{render, to_yaml};
use network_addons_operator::settings::Settings;
use network_addons_operator::spec::NetworkAddonsConfig;

/// The random MAC prefix the goldens are rendered with.
const PREFIX: [u8; 2] = [0x4a, 0xbe];

fn dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(name)
}

/// The example files, sorted, by stem.
fn examples() -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = fs::read_dir(dir("examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .map(|p| (p.file_stem().unwrap().to_string_lossy().into_owned(), p))
        .collect();
    out.sort();
    out
}

fn rendered(path: &Path) -> String {
    let text = fs::read_to_string(path).unwrap();
    let cr: NetworkAddonsConfig = serde_yaml::from_str(&text)
        .unwrap_or_else(|e| panic!("{} does not parse: {e}", path.display()));
    let applied = fill_defaults(&cr.spec, None, PREFIX);
    let objects = render(&applied, &Settings::defaults()).unwrap();
    to_yaml(&objects).unwrap()
}

/// The first differing line with a few lines of context from both sides.
fn first_difference(expected: &str, actual: &str) -> String {
    let e: Vec<&str> = expected.lines().collect();
    let a: Vec<&str> = actual.lines().collect();
    let at = e
        .iter()
        .zip(&a)
        .position(|(x, y)| x != y)
        .unwrap_or(e.len().min(a.len()));
    let from = at.saturating_sub(3);
    let mut out = format!(
        "first difference at line {} (golden has {} lines, render has {}):\n",
        at + 1,
        e.len(),
        a.len()
    );
    for i in from..(at + 4).min(e.len().max(a.len())) {
        match (e.get(i), a.get(i)) {
            (Some(x), Some(y)) if x == y => out.push_str(&format!("   {x}\n")),
            (x, y) => {
                if let Some(x) = x {
                    out.push_str(&format!(" - {x}\n"));
                }
                if let Some(y) = y {
                    out.push_str(&format!(" + {y}\n"));
                }
            }
        }
    }
    out
}

#[test]
fn examples_render_as_the_golden_files() {
    let update = std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1");
    let golden_dir = dir("tests/golden");
    let examples = examples();
    assert!(examples.len() >= 13, "examples missing: {examples:?}");

    let mut failures = Vec::new();
    for (name, path) in &examples {
        let actual = rendered(path);
        let golden = golden_dir.join(format!("{name}.yaml"));
        if update {
            fs::create_dir_all(&golden_dir).unwrap();
            fs::write(&golden, &actual).unwrap();
            continue;
        }
        match fs::read_to_string(&golden) {
            Ok(expected) if expected == actual => {}
            Ok(expected) => failures.push(format!(
                "{name}: render differs from {}\n{}",
                golden.display(),
                first_difference(&expected, &actual)
            )),
            Err(e) => failures.push(format!("{name}: cannot read {}: {e}", golden.display())),
        }
    }
    assert!(
        failures.is_empty(),
        "{}\nrerun with UPDATE_GOLDEN=1 to accept the new render, then review the diff",
        failures.join("\n")
    );
}

#[test]
fn every_golden_file_has_its_example() {
    let names: Vec<String> = examples().into_iter().map(|(n, _)| n).collect();
    for entry in fs::read_dir(dir("tests/golden")).unwrap() {
        let path = entry.unwrap().path();
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        assert!(
            names.contains(&stem),
            "{} has no example in operator/examples/",
            path.display()
        );
    }
}

#[test]
fn the_difference_report_points_at_the_first_changed_line() {
    let report = first_difference("a\nb\nc\n", "a\nx\nc\n");
    assert!(report.contains("line 2"), "{report}");
    assert!(report.contains(" - b\n + x"), "{report}");
    let report = first_difference("a\n", "a\nb\n");
    assert!(report.contains("line 2"), "{report}");
    assert!(report.contains(" + b"), "{report}");
}
