//! Files at a plugin's name that node-agent did not install (another installer's binary, a
//! symlink, an edited copy): refused, all named at once, unless `--replace-foreign`, which
//! keeps each as `.<name>.orig` for uninstall to put back.

use std::fs;
use std::path::Path;

use super::{Decision, Planned};
use crate::atomic;
use crate::error::{Context, Error, Result};
use crate::record::{self, Entry};

/// Fails, naming every foreign file and the flag, before anything is written.
pub(super) fn refuse_foreign(to: &Path, planned: &[Planned]) -> Result<()> {
    let mut refused = Vec::new();
    for plan in planned {
        let path = to.join(&plan.name);
        match &plan.decision {
            Decision::Refuse(why) => refused.push(format!(
                "{} {why}; pass --replace-foreign to replace it (it is kept as {} for uninstall to put back)",
                path.display(),
                record::original_name(&plan.name)
            )),
            Decision::Impossible(why) => {
                refused.push(format!("{} {why}; remove it first", path.display()))
            }
            _ => {}
        }
    }
    if refused.is_empty() {
        Ok(())
    } else {
        Err(Error::msg(format!(
            "refusing to replace files node-agent did not install, nothing was written: {}",
            refused.join("; ")
        )))
    }
}

/// Hard-links the file about to be replaced to `.<name>.orig` (through a temporary name, so an
/// older `.orig` is replaced atomically). The target stays in place until the rename over it,
/// so runtimes never find it missing. When the record already keeps an original, that one
/// stays: it is what was there before node-agent came.
pub(super) fn keep_original(
    to: &Path,
    name: &str,
    entry: Option<&Entry>,
) -> Result<Option<String>> {
    let orig = record::original_name(name);
    let orig_path = to.join(&orig);
    if entry.and_then(|e| e.original.as_ref()).is_some() && fs::symlink_metadata(&orig_path).is_ok()
    {
        return Ok(None);
    }
    let target = to.join(name);
    let temp = to.join(atomic::temp_name(&format!("{name}.orig")));
    atomic::remove_if_exists(&temp)?;
    // link(2) does not follow a symlink: a symlink is kept as the symlink it is.
    fs::hard_link(&target, &temp)
        .with_context(|| format!("linking {} to {}", target.display(), temp.display()))?;
    fs::rename(&temp, &orig_path)
        .with_context(|| format!("renaming {} to {}", temp.display(), orig_path.display()))?;
    Ok(Some(orig))
}
