//! The node policy of the machine the tests run on (what a node's administrator writes with
//! `node-agent --allow-*`): the tests keep state directories, private OVSDB sockets and ovs
//! flat files in their temp dirs, and reach one private OVSDB over TCP on loopback. The plugins
//! the tests run get it through `CNI_NODE_POLICY`, as a runtime's environment would name it.

use std::path::PathBuf;
use std::sync::OnceLock;

/// The variable the plugins read the policy file's path from.
pub const NODE_POLICY_ENV: &str = "CNI_NODE_POLICY";

/// The test machine's policy file, written once per process (atomically, so concurrent test
/// processes each see a whole one).
///
/// # Panics
/// If it cannot be written.
pub fn test_node_policy() -> &'static PathBuf {
    static POLICY: OnceLock<PathBuf> = OnceLock::new();
    POLICY.get_or_init(|| {
        let tmp = std::env::temp_dir();
        let policy = serde_json::json!({
            "stateDirs": [tmp],
            "ovsdbSocketDirs": [tmp],
            "configDirs": [tmp],
            "ovsdbEndpoints": ["tcp:127.0.0.1:6640"],
        });
        let path = tmp.join("cnit-node-policy.json");
        let part = tmp.join(format!("cnit-node-policy.json.{}", std::process::id()));
        std::fs::write(&part, policy.to_string())
            .and_then(|()| std::fs::rename(&part, &path))
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        path
    })
}
