//! Conf dirs and configs for the tests.

use std::collections::BTreeSet;
use std::fs;

use serde_json::json;

use super::Network;

pub(super) fn ours() -> BTreeSet<String> {
    [
        "bridge",
        "tuning",
        "ovs",
        "macvtap",
        "cnv-bridge",
        "cnv-tuning",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

pub(super) fn conf_dir(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, text) in files {
        let path = dir.path().join(name);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).expect("mkdir");
        }
        fs::write(path, text).expect("write");
    }
    dir
}

pub(super) fn bridge_list(name: &str) -> String {
    json!({"cniVersion": "1.0.0", "name": name, "plugins": [{"type": "bridge"}]}).to_string()
}

pub(super) fn names(networks: &[Network]) -> Vec<&str> {
    networks.iter().map(|n| n.name.as_str()).collect()
}
