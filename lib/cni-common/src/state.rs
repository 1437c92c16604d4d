//! Per-attachment state files (what ADD changed, for DEL to restore and GC to find).
//!
//! Files are replaced atomically (temp file, fsync, rename, fsync of the directory), so a crash
//! or a concurrent reader never sees half a file. State about a network namespace dies with the
//! machine anyway (the namespace does not survive a reboot), so [`StateDir::ephemeral`] keeps the
//! rename but skips the syncs: they cost more than the rest of a tuning ADD.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::{Code, Context, ContextAs, Error, Result};

/// `<containerID>_<ifname>.json`, the Go tuning plugin's naming for its backup files.
/// The suffix of a state file moved aside by [`StateDir::set_aside`].
pub const UNREADABLE: &str = ".unreadable";

pub fn attachment_file_name(container_id: &str, ifname: &str) -> String {
    format!("{container_id}_{ifname}.json")
}

/// A directory of state files, one per name.
#[derive(Debug, Clone)]
pub struct StateDir {
    dir: PathBuf,
    durable: bool,
}

impl StateDir {
    /// State that must survive a crash or a reboot: every write is synced to disk.
    pub fn new(dir: impl Into<PathBuf>) -> StateDir {
        StateDir {
            dir: dir.into(),
            durable: true,
        }
    }

    /// State about things that do not outlive the machine (a namespace's interface): replaced
    /// atomically by rename, not synced.
    pub fn ephemeral(dir: impl Into<PathBuf>) -> StateDir {
        StateDir {
            dir: dir.into(),
            durable: false,
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes `value` as JSON under `name`, replacing any previous file atomically.
    pub fn write<T: Serialize>(&self, name: &str, value: &T) -> Result<()> {
        let target = self.file(name)?;
        // A value that does not encode fails the write as the write's own failures do (5): it
        // is no JSON the plugin was given (6).
        let data = serde_json::to_vec(value)
            .with_context_as(Code::Io, || format!("encoding state {name}"))?;
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .with_context(|| format!("creating state directory {}", self.dir.display()))?;

        // Dot-prefixed, so list() never reports it; unique per process and call.
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let tmp = self
            .dir
            .join(format!(".{name}.tmp.{}.{n}", std::process::id()));
        let durable = self.durable;
        let result = write_file(&tmp, &data, durable)
            .and_then(|()| fs::rename(&tmp, &target))
            .and_then(|()| match durable {
                true => File::open(&self.dir)?.sync_all(),
                false => Ok(()),
            });
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result.with_context(|| format!("writing state file {}", target.display()))
    }

    /// Reads the state under `name`; `None` when there is none.
    pub fn read<T: DeserializeOwned>(&self, name: &str) -> Result<Option<T>> {
        let path = self.file(name)?;
        let data = match fs::read(&path) {
            Ok(d) => d,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(Error::wrap(
                    format!("reading state file {}", path.display()),
                    e,
                ))
            }
        };
        serde_json::from_slice(&data)
            .map(Some)
            .with_context(|| format!("state file {} is corrupt", path.display()))
    }

    /// Removes the state under `name`; succeeds when it is already gone.
    pub fn remove(&self, name: &str) -> Result<()> {
        let path = self.file(name)?;
        match fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(Error::wrap(
                format!("removing state file {}", path.display()),
                e,
            )),
            _ => Ok(()),
        }
    }

    /// Moves the state under `name` aside, to `<name>.unreadable`, and returns that name: for
    /// a file that cannot be read, kept for a person to look at instead of written over.
    pub fn set_aside(&self, name: &str) -> Result<String> {
        let aside = format!("{name}{UNREADABLE}");
        let (from, to) = (self.file(name)?, self.file(&aside)?);
        fs::rename(&from, &to).with_context(|| format!("moving {} aside", from.display()))?;
        Ok(aside)
    }

    /// Names of all state files, sorted; temp files are not included.
    pub fn list(&self) -> Result<Vec<String>> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => {
                return Err(Error::wrap(format!("listing {}", self.dir.display()), e));
            }
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.with_context(|| format!("listing {}", self.dir.display()))?;
            if let Some(name) = entry.file_name().to_str() {
                if valid_name(name) && entry.file_type().is_ok_and(|t| t.is_file()) {
                    names.push(name.to_string());
                }
            }
        }
        names.sort();
        Ok(names)
    }

    /// Names of the per-attachment files (`<containerID>_<ifname>.json`, and those set aside as
    /// unreadable), sorted: the only names a GC may consider, whatever else the directory holds.
    pub fn list_attachments(&self) -> Result<Vec<String>> {
        Ok(self
            .list()?
            .into_iter()
            .filter(|name| is_attachment_file_name(name))
            .collect())
    }

    /// Removes the temp files of writes that never finished (a crash between write and rename)
    /// older than `age`: only names [`StateDir::write`] makes. Returns how many went.
    pub fn sweep_temp_files(&self, age: Duration) -> Result<usize> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(Error::wrap(format!("listing {}", self.dir.display()), e)),
        };
        let mut swept = 0;
        for entry in entries.flatten() {
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            let stale = entry
                .metadata()
                .ok()
                .filter(|m| m.is_file())
                .and_then(|m| m.modified().ok())
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|elapsed| elapsed >= age);
            if is_temp_file_name(&name) && stale {
                fs::remove_file(entry.path())
                    .with_context(|| format!("removing {}", entry.path().display()))?;
                swept += 1;
            }
        }
        Ok(swept)
    }

    fn file(&self, name: &str) -> Result<PathBuf> {
        if !valid_name(name) {
            // Names are built from CNI_CONTAINERID and CNI_IFNAME.
            return Err(Error::invalid_env(format!(
                "invalid state file name {name:?}"
            )));
        }
        Ok(self.dir.join(name))
    }
}

/// `<containerID>_<ifname>.json`, or that name set aside as unreadable.
pub fn is_attachment_file_name(name: &str) -> bool {
    let name = name.strip_suffix(UNREADABLE).unwrap_or(name);
    valid_name(name)
        && name.strip_suffix(".json").is_some_and(|stem| {
            stem.split_once('_')
                .is_some_and(|(id, ifname)| !id.is_empty() && !ifname.is_empty())
        })
}

/// `.<name>.tmp.<pid>.<n>`, as [`StateDir::write`] names its temp files.
fn is_temp_file_name(name: &str) -> bool {
    let Some(rest) = name.strip_prefix('.') else {
        return false;
    };
    let mut parts = rest.rsplitn(4, '.');
    let (Some(n), Some(pid), Some("tmp"), Some(target)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let number = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    number(n) && number(pid) && is_attachment_file_name(target)
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && !name.starts_with('.') && !name.contains(['/', '\0'])
}

fn write_file(path: &Path, data: &[u8], sync: bool) -> io::Result<()> {
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(data)?;
    if sync {
        file.sync_all()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    /// A directory of its own, removed at the end of the test; `path` is where the state goes,
    /// which does not exist until something is written.
    struct TempDir {
        path: PathBuf,
        _removed_on_drop: tempfile::TempDir,
    }

    impl TempDir {
        fn new(tag: &str) -> TempDir {
            let dir = tempfile::Builder::new()
                .prefix(&format!("cni-common-state-{tag}-"))
                .tempdir()
                .expect("temp dir");
            TempDir {
                path: dir.path().join("state"),
                _removed_on_drop: dir,
            }
        }
    }

    #[test]
    fn file_name_is_container_id_and_ifname() {
        assert_eq!(attachment_file_name("abc123", "net1"), "abc123_net1.json");
    }

    #[test]
    fn round_trip_and_permissions() {
        let tmp = TempDir::new("roundtrip");
        let dir = StateDir::new(tmp.path.join("nested"));
        let mut v = BTreeMap::new();
        v.insert("mtu".to_string(), 1500);
        dir.write("c1_net1.json", &v).expect("write");
        assert_eq!(
            dir.read::<BTreeMap<String, i32>>("c1_net1.json")
                .expect("read"),
            Some(v)
        );

        let mode = |p: &Path| fs::metadata(p).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode(dir.dir()), 0o700);
        assert_eq!(mode(&dir.dir().join("c1_net1.json")), 0o600);

        // Overwrite replaces the whole content.
        dir.write("c1_net1.json", &vec![1, 2]).expect("overwrite");
        assert_eq!(
            dir.read::<Vec<i32>>("c1_net1.json").expect("read"),
            Some(vec![1, 2])
        );
    }

    #[test]
    fn absent_state_is_none_and_remove_is_idempotent() {
        let tmp = TempDir::new("absent");
        let dir = StateDir::new(&tmp.path);
        assert_eq!(dir.read::<i32>("x.json").expect("read"), None);
        assert_eq!(
            dir.list().expect("list of absent dir"),
            Vec::<String>::new()
        );
        dir.remove("x.json").expect("remove absent");
        dir.write("x.json", &1).expect("write");
        dir.remove("x.json").expect("remove");
        dir.remove("x.json").expect("remove again");
        assert_eq!(dir.read::<i32>("x.json").expect("read"), None);
    }

    #[test]
    fn corrupt_state_is_a_decoding_error() {
        let tmp = TempDir::new("corrupt");
        let dir = StateDir::new(&tmp.path);
        dir.write("c.json", &1).expect("write");
        fs::write(tmp.path.join("c.json"), b"{not json").expect("corrupt it");
        let err = dir.read::<i32>("c.json").expect_err("corrupt");
        assert_eq!(err.code(), Code::Decoding);
        assert!(err.msg().contains("is corrupt"), "{err}");
    }

    #[test]
    fn list_excludes_temp_files_and_is_sorted() {
        let tmp = TempDir::new("list");
        let dir = StateDir::new(&tmp.path);
        dir.write("b_net1.json", &1).expect("write");
        dir.write("a_net1.json", &2).expect("write");
        // A temp file left behind by a crash between write and rename.
        fs::write(tmp.path.join(".c_net1.json.tmp.1.0"), b"1").expect("stray temp");
        fs::create_dir(tmp.path.join("subdir")).expect("subdir");
        assert_eq!(
            dir.list().expect("list"),
            vec!["a_net1.json", "b_net1.json"]
        );
    }

    #[test]
    fn writes_leave_no_temp_files() {
        let tmp = TempDir::new("notemp");
        let dir = StateDir::new(&tmp.path);
        for i in 0..20 {
            dir.write("s.json", &i).expect("write");
        }
        let all: Vec<_> = fs::read_dir(&tmp.path)
            .expect("read_dir")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(all, vec!["s.json"]);
    }

    #[test]
    fn concurrent_writers_never_expose_a_partial_file() {
        let tmp = TempDir::new("concurrent");
        let dir = StateDir::new(&tmp.path);
        let big: Vec<u32> = (0..20_000).collect();
        dir.write("s.json", &big).expect("first write");
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    for _ in 0..20 {
                        dir.write("s.json", &big).expect("write");
                    }
                });
            }
            s.spawn(|| {
                for _ in 0..50 {
                    let got: Vec<u32> = dir.read("s.json").expect("read").expect("present");
                    assert_eq!(got.len(), big.len());
                    assert_eq!(dir.list().expect("list"), vec!["s.json"]);
                }
            });
        });
    }

    #[test]
    fn only_attachment_files_are_listed_as_attachments() {
        let tmp = TempDir::new("attachments");
        let dir = StateDir::new(&tmp.path);
        dir.write("c1_net1.json", &1).expect("write");
        fs::write(tmp.path.join("c2_net1.json.unreadable"), b"x").expect("aside");
        for other in [
            "passwd",
            "bridge",
            "10-net.conflist",
            "c3.json",
            "_net1.json",
            "c4_.json",
        ] {
            fs::write(tmp.path.join(other), b"x").expect("other file");
        }
        assert_eq!(
            dir.list_attachments().expect("list"),
            vec!["c1_net1.json", "c2_net1.json.unreadable"]
        );
    }

    #[test]
    fn old_temp_files_of_unfinished_writes_are_swept_and_nothing_else() {
        let tmp = TempDir::new("sweep");
        let dir = StateDir::new(&tmp.path);
        dir.write("c1_net1.json", &1).expect("write");
        let temp = tmp.path.join(".c2_net1.json.tmp.4242.7");
        let lookalike = tmp.path.join(".profile.tmp.1.1");
        fs::write(&temp, b"1").expect("temp");
        fs::write(&lookalike, b"1").expect("lookalike");
        assert_eq!(
            dir.sweep_temp_files(Duration::from_secs(3600))
                .expect("sweep"),
            0
        );
        assert!(
            temp.exists(),
            "a recent temp file may be a write in progress"
        );
        assert_eq!(dir.sweep_temp_files(Duration::ZERO).expect("sweep"), 1);
        assert!(!temp.exists());
        assert!(lookalike.exists(), "not a name this module makes");
        assert!(tmp.path.join("c1_net1.json").exists());
    }

    #[test]
    fn bad_names_are_rejected() {
        let dir = StateDir::new(std::env::temp_dir().join("cni-common-never-created"));
        for name in ["", ".hidden", "a/b", "../x", "/etc/passwd", "a\0b"] {
            assert!(dir.write(name, &1).is_err(), "{name:?}");
            assert!(dir.read::<i32>(name).is_err(), "{name:?}");
            assert!(dir.remove(name).is_err(), "{name:?}");
        }
        assert!(!dir.dir().exists());
    }
}
