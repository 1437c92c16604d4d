//! host-local's reservations: the suite checks that ADD really reserved an address in the
//! dataDir it gave the plugin, and that DEL and GC released it.

use std::path::{Path, PathBuf};

/// Files below `dir` (an IPAM dataDir) that record a reservation for
/// `container_id`: host-local writes one file per address holding the
/// container ID (and the ifname) as its content.
pub fn reservations(dir: &Path, container_id: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(content) = std::fs::read_to_string(&p) {
                if content.lines().next().map(str::trim) == Some(container_id) {
                    found.push(p);
                }
            }
        }
    }
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_are_the_files_whose_first_line_is_the_container_id() {
        let tmp = tempfile::tempdir().expect("a temp dir");
        let dir = tmp.path();
        let net = dir.join("mynet");
        assert!(std::fs::create_dir_all(&net).is_ok());
        assert!(std::fs::write(net.join("10.0.0.2"), "cid-1\r\nnet1").is_ok());
        assert!(std::fs::write(net.join("10.0.0.3"), "cid-2\r\nnet1").is_ok());
        assert!(std::fs::write(net.join("last_reserved_ip.0"), "10.0.0.3").is_ok());
        assert!(std::fs::write(net.join("lock"), "").is_ok());
        assert_eq!(reservations(dir, "cid-1"), vec![net.join("10.0.0.2")]);
        assert!(reservations(dir, "cid-3").is_empty());
    }
}
