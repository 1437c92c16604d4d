//! What plugins leave on disk: host-local's leases, and files left under a state directory.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

/// Leases held by host-local in `<data_dir>/<network>`: each file named after an IP address,
/// with its content (container ID and ifname).
pub fn host_local_leases(data_dir: &Path, network: &str) -> Vec<(IpAddr, String)> {
    let dir = data_dir.join(network);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut leases: Vec<(IpAddr, String)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let ip: IpAddr = e.file_name().to_str()?.parse().ok()?;
            let content = std::fs::read_to_string(e.path()).unwrap_or_default();
            Some((ip, content))
        })
        .collect();
    leases.sort();
    leases
}

/// Files left in `dir` (recursively), as paths relative to it. Empty if `dir` does not exist.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(rel) = path.strip_prefix(dir) {
                found.push(rel.to_path_buf());
            }
        }
    }
    found.sort();
    found
}
