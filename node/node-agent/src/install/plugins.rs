//! Which plugins to install and under which names: the ones `--plugins` names, or every file
//! of the source directory, each name a plain file name and given once.

use std::fs;

use cni_common::node_policy::POLICY_FILE_NAME;

use super::Options;
use crate::error::{Context, Error, Result};

/// One binary to install: the name it gets in the destination directory, and the file in the
/// source directory it is a copy of. They differ for the second names some configs use for
/// the same plugin (`cnv-bridge`, a copy of `bridge`); every name is installed, recorded,
/// verified and protected on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plugin {
    pub name: String,
    pub source: String,
}

impl Plugin {
    /// A plugin installed under the name of its source.
    pub fn named(name: &str) -> Plugin {
        Plugin {
            name: name.to_string(),
            source: name.to_string(),
        }
    }

    /// `NAME` or `NAME=SOURCE`; both must be plain file names (see [`check_name`]).
    pub fn parse(s: &str) -> Result<Plugin> {
        let (name, source) = s.split_once('=').unwrap_or((s, s));
        check_name(name)?;
        check_name(source)?;
        Ok(Plugin {
            name: name.to_string(),
            source: source.to_string(),
        })
    }
}

/// A plugin name is a plain file name: letters, digits, `.`, `_`, `+`, `-`, not starting with
/// a dot (those are ours: temporary files, kept originals, the record).
pub fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 200
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '+' | '-'));
    if ok {
        Ok(())
    } else {
        Err(Error::msg(format!(
            "invalid plugin name {name:?}: expected a file name of letters, digits, '.', '_', '+', '-', not starting with '.'"
        )))
    }
}

/// The plugins to install: the ones named, or every file in `from`.
pub(super) fn plugin_list(opts: &Options) -> Result<Vec<Plugin>> {
    let plugins = match &opts.plugins {
        Some(plugins) => plugins.clone(),
        None => {
            let mut names = Vec::new();
            let listing = || format!("listing {}", opts.from.display());
            for entry in fs::read_dir(&opts.from).with_context(listing)? {
                let entry = entry.with_context(listing)?;
                let name = entry.file_name().to_string_lossy().into_owned();
                // The policy file beside a build's plugins is no plugin.
                if !name.starts_with('.') && name != POLICY_FILE_NAME && entry.path().is_file() {
                    names.push(name);
                }
            }
            names.sort();
            names.iter().map(|n| Plugin::named(n)).collect()
        }
    };
    if plugins.is_empty() {
        return Err(Error::msg(format!(
            "no plugins to install from {}",
            opts.from.display()
        )));
    }
    for (i, plugin) in plugins.iter().enumerate() {
        check_name(&plugin.name)?;
        check_name(&plugin.source)?;
        if plugins[..i].iter().any(|p| p.name == plugin.name) {
            return Err(Error::msg(format!(
                "{} is to be installed twice",
                plugin.name
            )));
        }
    }
    Ok(plugins)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plugin_is_a_name_or_a_name_and_its_source() {
        assert_eq!(Plugin::parse("bridge").ok(), Some(Plugin::named("bridge")));
        assert_eq!(
            Plugin::parse("cnv-bridge=bridge").ok(),
            Some(Plugin {
                name: "cnv-bridge".to_string(),
                source: "bridge".to_string(),
            })
        );
        for bad in [
            "=bridge",
            "cnv-bridge=",
            "a=b=c",
            "../x=bridge",
            "x=../bridge",
            ".x=y",
        ] {
            assert!(Plugin::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn plugin_names_are_plain_file_names() {
        for ok in ["bridge", "host-local", "a.b_c+d"] {
            check_name(ok).expect(ok);
        }
        for bad in ["", ".hidden", "../bridge", "a/b", "br idge", "x\0"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }
}
