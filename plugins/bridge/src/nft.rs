//! The `nft` command, as the reference plugin uses it: rules go in as one atomic script on
//! stdin (`nft -f -`), and are read back as JSON (`nft -j list ...`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use cni_common::naming::AttachmentKey;
use cni_common::{Error, Result};
use serde_json::Value;

/// Where `nft` and `iptables` usually are, for runtimes that call plugins with a PATH without
/// sbin.
const FALLBACK_DIRS: &[&str] = &["/usr/sbin", "/sbin"];

/// The command `name` on PATH, else in sbin.
pub(crate) fn find_tool(name: &str) -> Option<PathBuf> {
    let in_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    in_path
        .into_iter()
        .chain(FALLBACK_DIRS.iter().map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn nft_binary() -> Result<PathBuf> {
    find_tool("nft").ok_or_else(|| {
        Error::system("the nft command (package nftables) is needed for macspoofchk and ipMasq")
    })
}

/// Runs `binary args`, with `stdin` written to it; its stdout, or an error with its stderr.
pub(crate) fn run(binary: &Path, args: &[&str], stdin: Option<&str>) -> Result<String> {
    let mut child = Command::new(binary)
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::wrap(format!("running {}", binary.display()), e))?;
    if let (Some(script), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(script.as_bytes())
            .map_err(|e| Error::wrap("writing the nft script", e))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| Error::wrap("waiting for nft", e))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(Error::system(format!(
            "nft {}: {}",
            args.join(" "),
            stderr.trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Whether the nft command is installed.
pub fn nft_available() -> bool {
    nft_binary().is_ok()
}

/// `nft -f -`: the whole script is one transaction; it applies completely or not at all.
pub fn nft_apply(script: &str) -> Result<()> {
    run(&nft_binary()?, &["-f", "-"], Some(script)).map(drop)
}

/// `nft -j list table <family> <table>`: the table's objects, or an empty list when the table
/// does not exist.
pub fn nft_list_table(family: &str, table: &str) -> Result<Vec<Value>> {
    let binary = nft_binary()?;
    // Listing a missing table is an error; listing the tables first would cost another exec.
    let out = match run(&binary, &["-j", "list", "table", family, table], None) {
        Ok(out) => out,
        Err(e) if e.msg().contains("No such file or directory") => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let doc: Value = serde_json::from_str(&out)
        .map_err(|e| Error::system(format!("nft -j list table {family} {table}: {e}")))?;
    Ok(doc
        .get("nftables")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default())
}

/// The elements of map `name` in a table listing: (key, jump target) pairs.
pub fn map_jumps(objects: &[Value], name: &str) -> Vec<(Value, String)> {
    objects
        .iter()
        .filter_map(|o| o.get("map"))
        .filter(|m| m.get("name").and_then(Value::as_str) == Some(name))
        .filter_map(|m| m.get("elem").and_then(Value::as_array))
        .flatten()
        .filter_map(|e| {
            let pair = e.as_array()?;
            let target = pair.get(1)?.get("jump")?.get("target")?.as_str()?;
            Some((pair.first()?.clone(), target.to_string()))
        })
        .collect()
}

/// The names of the chains in a table listing.
pub fn chain_names(objects: &[Value]) -> Vec<String> {
    objects
        .iter()
        .filter_map(|o| o.get("chain")?.get("name")?.as_str())
        .map(str::to_string)
        .collect()
}

/// A string for an nft script: quoted, and without the characters that would end it.
pub fn quoted(s: &str) -> String {
    let clean: String = s
        .chars()
        .filter(|c| !matches!(c, '"' | '\\' | '\n' | '\r' | ';' | '#'))
        .take(120)
        .collect();
    format!("\"{clean}\"")
}

/// A table of ours holding one chain per attachment, `att-<network hash>-<attachment hash>`,
/// reached through verdict maps whose elements jump to it.
pub struct AttachmentTable {
    pub family: &'static str,
    pub table: &'static str,
    /// The verdict maps, and whether their keys are strings (ifname) that need quotes.
    pub maps: &'static [(&'static str, bool)],
}

impl AttachmentTable {
    pub fn chain(&self, key: &AttachmentKey) -> String {
        format!("att-{key}")
    }

    /// Deletes, in one transaction, the chains of every attachment that `keep` refuses and the
    /// map elements leading to them; returns those attachments. Nothing to do when the table
    /// does not exist.
    pub fn remove_unless(
        &self,
        keep: impl Fn(&AttachmentKey) -> bool,
    ) -> Result<Vec<AttachmentKey>> {
        let objects = nft_list_table(self.family, self.table)?;
        let (family, table) = (self.family, self.table);
        let mut script = String::new();
        let mut removed = Vec::new();
        for name in chain_names(&objects) {
            let Some(key) = name.strip_prefix("att-").and_then(AttachmentKey::parse) else {
                continue;
            };
            if keep(&key) {
                continue;
            }
            for (map, quote) in self.maps {
                for (elem, target) in map_jumps(&objects, map) {
                    if target != name {
                        continue;
                    }
                    let Some(elem) = elem.as_str() else { continue };
                    let elem = if *quote {
                        quoted(elem)
                    } else {
                        elem.to_string()
                    };
                    script += &format!("delete element {family} {table} {map} {{ {elem} }}\n");
                }
            }
            script += &format!(
                "flush chain {family} {table} {name}\ndelete chain {family} {table} {name}\n"
            );
            removed.push(key);
        }
        if !script.is_empty() {
            nft_apply(&script)?;
        }
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn map_jumps_reads_keys_and_targets() {
        let objects = vec![
            json!({"map": {"name": "ports", "elem": [["veth1", {"jump": {"target": "att-a"}}]]}}),
            json!({"map": {"name": "other", "elem": [["veth2", {"jump": {"target": "att-b"}}]]}}),
            json!({"chain": {"name": "att-a"}}),
        ];
        assert_eq!(
            map_jumps(&objects, "ports"),
            vec![(json!("veth1"), "att-a".to_string())]
        );
        assert_eq!(chain_names(&objects), vec!["att-a".to_string()]);
    }

    #[test]
    fn quoted_strings_cannot_break_out_of_the_script() {
        assert_eq!(quoted("a\"; flush ruleset\n"), "\"a flush ruleset\"");
    }
}
