#![allow(clippy::unwrap_used)]
//! Every example CR in `cluster/network-addons-operator/examples/` rendered with the default settings, compared with
//! its snapshot `cluster/network-addons-operator/tests/golden/<name>.snap`. The snapshots are what `render` prints for
//! users; a change shows as a diff to review with `cargo insta review` (or, without
//! cargo-insta, by reading the `.snap.new` files next to them).

use std::fs;
use std::path::{Path, PathBuf};

use network_addons_operator::cluster::ClusterInfo;
use network_addons_operator::defaults::fill_defaults;
use network_addons_operator::render::{render, to_yaml};
use network_addons_operator::settings::Settings;
use network_addons_operator::spec::NetworkAddonsConfig;

/// The random MAC prefix the snapshots are rendered with.
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
    let cr: NetworkAddonsConfig = serde_saphyr::from_str(&text)
        .unwrap_or_else(|e| panic!("{} does not parse: {e}", path.display()));
    let applied = fill_defaults(&cr.spec, None, PREFIX);
    let objects = render(
        &applied,
        &Settings::defaults(),
        &ClusterInfo::WITH_CERT_MANAGER,
    )
    .unwrap();
    to_yaml(&objects).unwrap()
}

#[test]
fn examples_render_as_their_snapshots() {
    let examples = examples();
    assert!(examples.len() >= 13, "examples missing: {examples:?}");
    for (name, path) in &examples {
        insta::with_settings!({
            snapshot_path => "golden",
            prepend_module_to_snapshot => false,
            omit_expression => true,
            input_file => path,
        }, {
            insta::assert_snapshot!(name.as_str(), rendered(path));
        });
    }
}

#[test]
fn every_snapshot_has_its_example() {
    let names: Vec<String> = examples().into_iter().map(|(n, _)| n).collect();
    for entry in fs::read_dir(dir("tests/golden")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "snap") {
            continue;
        }
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        assert!(
            names.contains(&stem),
            "{} has no example in cluster/network-addons-operator/examples/",
            path.display()
        );
    }
}
