//! The node's conf dir, read as libcni and containerd read it: the files whose name ends in
//! `.conf`, `.conflist` or `.json` (what follows the name's last dot, so a file called `.conf`
//! counts too; directories do not), in byte order of their names. containerd loads the first
//! `max_conf_num` of them (one by default) and names the i-th network's interface `eth<i>`.
//!
//! Multus' own config (`00-multus.conf`, of type `multus-shim` or `multus`) sits first on a node
//! that runs it, and hands the runtime's interface to its `clusterNetwork`: a file of the same
//! directory, named by its path as Multus' daemon sees it (its `/host/etc/cni/net.d`). That
//! file's network is the one the runtime's sandboxes have at that place, so it counts there.

use std::collections::BTreeSet;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::config::{ours_in, Form, Parsed};
use super::files::{conf_files, read_object};
use super::{Network, Source, Unreadable};
use crate::error::Result;

/// The extensions libcni's runtimes read in a conf dir.
const CONF_EXTENSIONS: [&str; 3] = [".conf", ".conflist", ".json"];

/// The node's conflists in `dir` (*.conf, *.conflist, *.json, in the order libcni/containerd
/// sort them) that name one of `ours`, a Multus config standing for its cluster network. A
/// missing `dir` has none.
pub fn node_networks(dir: &Path, ours: &BTreeSet<String>) -> (Vec<Network>, Vec<Unreadable>) {
    let mut networks = Vec::new();
    let mut unreadable = Vec::new();
    let files = match conf_files(dir, &CONF_EXTENSIONS) {
        Ok(files) => files,
        Err(e) => {
            unreadable.push(Unreadable {
                source: dir.display().to_string(),
                why: format!("cannot list: {e}"),
            });
            return (networks, unreadable);
        }
    };
    // Files a Multus config delegates to, counted at Multus' place and not again at their own.
    let mut delegated = Vec::new();
    for (index, file) in files.iter().enumerate() {
        if delegated.contains(file) {
            continue;
        }
        let read =
            read_object(file).and_then(|object| match multus_cluster_network(&object, dir) {
                Some(cluster) => {
                    delegated.push(cluster.clone());
                    node_file(&cluster, ours).map(|parsed| (cluster, parsed))
                }
                None => parsed_file(file, &object, ours).map(|parsed| (file.clone(), parsed)),
            });
        let (file, parsed) = match read {
            Ok(read) => read,
            Err(why) => {
                unreadable.push(Unreadable {
                    source: file.display().to_string(),
                    why: why.report(),
                });
                continue;
            }
        };
        if let Some(Parsed { name, plugins }) = parsed {
            networks.push(Network {
                name,
                source: Source::NodeConflist { file, index },
                plugins,
            });
        }
    }
    (networks, unreadable)
}

/// The file of `dir` that a Multus config's `clusterNetwork` names by path (a network name or
/// a NetworkAttachmentDefinition is not a file of the node's, and is not followed).
fn multus_cluster_network(object: &Map<String, Value>, dir: &Path) -> Option<PathBuf> {
    let kind = object.get("type")?.as_str()?;
    if kind != "multus" && kind != "multus-shim" {
        return None;
    }
    let cluster = Path::new(object.get("clusterNetwork")?.as_str()?);
    if !cluster.is_absolute() {
        return None;
    }
    let file = dir.join(cluster.file_name()?);
    file.is_file().then_some(file)
}

/// One conf file of the node: a list when it ends in `.conflist`, else a single plugin.
fn node_file(file: &Path, ours: &BTreeSet<String>) -> Result<Option<Parsed>> {
    parsed_file(file, &read_object(file)?, ours)
}

/// [`node_file`] of a file already read.
fn parsed_file(
    file: &Path,
    object: &Map<String, Value>,
    ours: &BTreeSet<String>,
) -> Result<Option<Parsed>> {
    let form = if file.as_os_str().as_bytes().ends_with(b".conflist") {
        Form::List { dir: file.parent() }
    } else {
        Form::Single
    };
    ours_in(object, form, ours)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gc::networks::testing::{bridge_list, conf_dir, names, ours};

    /// Each network's place in the order the runtime loads the node's files.
    fn load_indexes(networks: &[Network]) -> Vec<usize> {
        networks
            .iter()
            .map(|n| match &n.source {
                Source::NodeConflist { index, .. } => *index,
                Source::Nad { .. } => usize::MAX,
            })
            .collect()
    }

    #[test]
    fn node_files_come_in_byte_order_of_their_names_with_their_load_index() {
        let dir = conf_dir(&[
            ("20-b.conflist", &bridge_list("b")),
            (
                "10-other.conflist",
                r#"{"name":"o","plugins":[{"type":"flannel"}]}"#,
            ),
            ("1-a.conflist", &bridge_list("a")),
            ("Z.conflist", &bridge_list("z")),
        ]);
        let (networks, unreadable) = node_networks(dir.path(), &ours());
        assert!(unreadable.is_empty(), "{unreadable:?}");
        assert_eq!(names(&networks), ["a", "b", "z"]);
        // 1-a, 10-other, 20-b, Z: the file not ours counts too.
        assert_eq!(load_indexes(&networks), [0, 2, 3]);
    }

    #[test]
    fn only_conf_conflist_and_json_files_are_read_and_directories_are_not() {
        let dir = conf_dir(&[
            (
                "a.conf",
                r#"{"cniVersion":"1.0.0","name":"a","type":"bridge"}"#,
            ),
            (
                "b.json",
                r#"{"cniVersion":"1.0.0","name":"b","type":"bridge"}"#,
            ),
            (
                ".conf",
                r#"{"cniVersion":"1.0.0","name":"dot","type":"bridge"}"#,
            ),
            ("c.conflist", &bridge_list("c")),
            ("d.conf.bak", r#"{"name":"d","type":"bridge"}"#),
            ("e.yaml", r#"{"name":"e","type":"bridge"}"#),
            ("sub.conf/x.conf", r#"{"name":"f","type":"bridge"}"#),
        ]);
        let (networks, unreadable) = node_networks(dir.path(), &ours());
        assert!(unreadable.is_empty(), "{unreadable:?}");
        assert_eq!(names(&networks), ["dot", "a", "b", "c"]);
    }

    const MULTUS_SHIM: &str = r#"{"cniVersion":"0.3.1","name":"multus-cni-network","type":"multus-shim","clusterNetwork":"/host/etc/cni/net.d/10-pods.conf"}"#;

    #[test]
    fn multus_first_serves_its_cluster_network_at_its_own_place() {
        let dir = conf_dir(&[
            ("00-multus.conf", MULTUS_SHIM),
            (
                "10-pods.conf",
                r#"{"cniVersion":"1.0.0","name":"pods","type":"bridge"}"#,
            ),
            ("20-b.conflist", &bridge_list("b")),
        ]);
        let (networks, unreadable) = node_networks(dir.path(), &ours());
        assert!(unreadable.is_empty(), "{unreadable:?}");
        assert_eq!(names(&networks), ["pods", "b"]);
        match &networks[0].source {
            Source::NodeConflist { file, index } => {
                assert_eq!(*index, 0);
                assert!(file.ends_with("10-pods.conf"));
            }
            Source::Nad { .. } => panic!("a node file"),
        }
    }

    #[test]
    fn multus_naming_a_network_by_name_or_a_missing_file_serves_nothing_of_its_own() {
        for cluster in ["pods", "/host/etc/cni/net.d/99-gone.conf"] {
            let multus = format!(
                r#"{{"name":"multus-cni-network","type":"multus-shim","clusterNetwork":"{cluster}"}}"#
            );
            let dir = conf_dir(&[
                ("00-multus.conf", &multus),
                (
                    "10-pods.conf",
                    r#"{"cniVersion":"1.0.0","name":"pods","type":"bridge"}"#,
                ),
            ]);
            let (networks, _) = node_networks(dir.path(), &ours());
            // The pod network stays at its own place, behind Multus.
            assert_eq!(load_indexes(&networks), [1], "{cluster}");
        }
    }

    #[test]
    fn a_missing_conf_dir_has_no_networks() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (networks, unreadable) = node_networks(&dir.path().join("absent"), &ours());
        assert!(networks.is_empty() && unreadable.is_empty());
    }

    #[test]
    fn a_file_that_is_not_json_is_unreadable() {
        let dir = conf_dir(&[("10.conflist", "{\"name\": \"blue\", ")]);
        let (networks, unreadable) = node_networks(dir.path(), &ours());
        assert!(networks.is_empty());
        assert_eq!(unreadable.len(), 1);
        assert!(unreadable[0].source.ends_with("10.conflist"));
        assert!(
            unreadable[0].why.starts_with("not JSON"),
            "{}",
            unreadable[0].why
        );
    }

    #[test]
    fn a_fifo_in_the_conf_dir_is_unreadable_without_blocking() {
        let dir = tempfile::tempdir().expect("temp dir");
        nix::unistd::mkfifo(&dir.path().join("10.conf"), nix::sys::stat::Mode::S_IRWXU)
            .expect("mkfifo");
        let (networks, unreadable) = node_networks(dir.path(), &ours());
        assert!(networks.is_empty());
        assert_eq!(unreadable[0].why, "not a regular file");
    }
}
